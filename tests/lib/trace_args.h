/* SPDX-License-Identifier: MIT */
/* trace_args.h - write synthetic calls through the writer API by argument
 * name (traces/make_sample.c, tests/bench/gen_trace.c): an argument list
 * is an array of struct av ended by END, and put_args() encodes the
 * schema's arguments of one direction in order, 0 / empty for those the
 * list does not name. */
#ifndef NCCLRR_TESTS_TRACE_ARGS_H
#define NCCLRR_TESTS_TRACE_ARGS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nrt.h"

/* An argument value: integer, or bytes when p != NULL. */
struct av {
	const char *name;
	uint64_t u;
	const void *p;
	size_t len;
};
#define U(n, v) ((struct av){ (n), (uint64_t)(v), NULL, 0 })
#define S(n, s) ((struct av){ (n), 0, (s), strlen(s) })
#define B(n, b, l) ((struct av){ (n), 0, (b), (l) })
#define END ((struct av){ NULL, 0, NULL, 0 })

/* The function @name of the built-in schema @s; a name missing from
 * formats/api/ ends program @prog with @status. */
static inline const nrr_fn_schema *fn_of_builtin(const nrr_schema *s, const char *name, const char *prog, int status)
{
	const nrr_fn_schema *f = nrr_schema_fn_by_name(s, name);
	if (!f) {
		fprintf(stderr, "%s: %s is not in the built-in schema (formats/api/)\n", prog, name);
		exit(status);
	}
	return f;
}

static inline uint8_t *put_args(uint8_t *p, const nrr_fn_schema *f, unsigned dir, const struct av *v)
{
	for (unsigned i = 0; i < f->nargs; i++) {
		const nrr_arg_schema *a = &f->args[i];
		if (!(a->dir & dir))
			continue;
		const struct av *hit = NULL;
		for (const struct av *x = v; x->name; x++)
			if (strcmp(x->name, a->name) == 0)
				hit = x;
		if (a->wire == NRR_WIRE_B)
			p = nrr_put_bytes(p, hit ? hit->p : NULL, hit ? hit->len : 0, NRR_BYTES_CAP_DEFAULT);
		else if (a->wire == NRR_WIRE_S)
			p = nrr_put_svar(p, hit ? (int64_t)hit->u : 0);
		else
			p = nrr_put_uvar(p, hit ? hit->u : 0);
	}
	return p;
}

#endif
