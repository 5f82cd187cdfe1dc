/* SPDX-License-Identifier: MIT */
/* builtin.c - the schema generated from formats/api/, parsed once. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "nrt.h"

static nrr_schema *builtin;
static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;

static void builtin_parse(void)
{
	nrr_diag d;
	memset(&d, 0, sizeof(d));
	if (nrr_schema_parse(&builtin, nrr_builtin_schema, nrr_builtin_schema_len, &d) != 0) {
		fprintf(stderr, "ncclrr: built-in schema is invalid (build bug): %s\n", d.msg);
		builtin = NULL;
	}
}

const nrr_schema *nrr_builtin(void)
{
	pthread_once(&builtin_once, builtin_parse);
	return builtin;
}
