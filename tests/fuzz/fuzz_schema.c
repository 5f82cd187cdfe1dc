/* SPDX-License-Identifier: MIT */
/* fuzz_schema.c - schema text: parse, then use every table it built. */
#include "nrt.h"
#include "driver.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	nrr_schema *s;
	nrr_diag d;
	if (nrr_schema_parse(&s, (const char *)data, size, &d))
		return 0;
	for (uint32_t i = 1; i <= nrr_schema_nfns(s); i++) {
		const nrr_fn_schema *f = nrr_schema_fn(s, i);
		nrr_enum_name(f->rtable, 0);
		for (unsigned a = 0; a < f->nargs; a++)
			nrr_enum_name(f->args[a].table, 1);
		nrr_schema_fn_by_name(s, f->name);
	}
	nrr_schema_free(s);
	return 0;
}
