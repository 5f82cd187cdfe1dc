/* SPDX-License-Identifier: MIT */
/*
 * lt_otherbuild.c - an LTTng provider of another build: it exports
 * nrr_lt_ops_get() as libncclrr-trace-lttng.so does, but its table was
 * generated from another API description (another NRR_LT_OPS_ABI).  The
 * tracer must refuse it by name instead of calling through a table whose
 * members it cannot trust (tests/integration/test_record.sh, case lttng).
 */
#include "nrr_lt_ops_gen.h"

static const struct nrr_lt_ops other = { .abi = NRR_LT_OPS_ABI ^ 0x5a5a5a5au };

__attribute__((visibility("default"))) const struct nrr_lt_ops *nrr_lt_ops_get(void)
{
	return &other;
}
