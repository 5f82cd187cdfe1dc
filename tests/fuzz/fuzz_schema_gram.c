/* SPDX-License-Identifier: MIT */
/* fuzz_schema_gram.c - schema text generated from FORMAT.md's grammar by
 * the input's choices (gram.h): tables and symbols from small pools, so
 * that duplicates, missing tables, out-of-order ids, edge numbers, long
 * tokens and many entries come often; then parsed.  What the parser takes
 * must hold together: ids 1..n in order, every function found by its name,
 * every enum/flags argument and enum result with its table. */
#include "nrt.h"
#include "driver.h"
#include "gram.h"

static const char *const tables[] = { "T0", "T1", "CUresult" };
static const char *const bad_tables[] = { "T9", "T0 ", "" };
static const char *const syms[] = { "A", "B", "CUDA_SUCCESS" };
static const char *const bad_syms[] = { "A ", "" };
static const char *const names[] = { "f", "cuInit", "send" };
static const char *const bad_names[] = { "f ", "" };
static const char *const domains[] = { "cuda_driver", "socket", "nccl", "proxy", "dom" };
static const char *const bad_domains[] = { "" };
static const char *const rets[] = { "void", "curesult", "cudart", "nccl", "nvml", "errno", "poserr", "ptr", "int" };
static const char *const bad_rets[] = { "float", "" };
static const char *const attrs[] = { "blocking", "poll", "sem=role:connect,notready:ret:600|7,transient:err:4|11",
				      "sem=role:later,arg:fd:p0,notready:out:p0:0" };
static const char *const bad_attrs[] = { "junk", "", "sem=notready:ret:x", "sem=arg:fd:nosuch", "sem=transient:ret:1|2|3|4|5",
					 "sem=notready:out:p0" };
static const char *const dirs[] = { "in", "out", "inout" };
static const char *const bad_dirs[] = { "sideways" };
static const char *const fmts[] = { "u", "i", "x", "bool", "enum", "flags", "handle", "fd", "str", "bytes", "sockaddr" };
static const char *const bad_fmts[] = { "float", "" };

/* A table name: mostly E<k> of the @ne made so far, else one of a pool
 * (clashes, unknown names, stray spaces). */
static void emit_table(struct gram *g, unsigned ne)
{
	if (ne && pick(g, 8))
		emit(g, "E%u", pick(g, ne));
	else
		emit(g, "%s", GOOD_OR_BAD(g, tables, bad_tables));
}

static void gen_enum(struct gram *g, unsigned k)
{
	emit(g, "enum ");
	if (pick(g, 16) == 15)
		emit(g, "%s", GOOD_OR_BAD(g, tables, bad_tables));   /* a clash, or bad */
	else
		emit(g, "E%u", k);
	emit(g, "%s\n", pick(g, 3) == 2 ? " flags" : pick(g, 32) == 31 ? " junk" : "");
	unsigned nv = pick(g, 8) == 7 ? 64 + pick(g, 256) * 4 : pick(g, 6);
	for (unsigned v = 0; v < nv; v++) {
		emit(g, "v ");
		if (pick(g, 16) == 15)
			emit_number(g);
		else
			emit(g, "%u", v);
		if (pick(g, 16) == 15)
			emit(g, " %s\n", GOOD_OR_BAD(g, syms, bad_syms));   /* a clash, or bad */
		else
			emit(g, " S%u\n", v);
	}
}

static void gen_fn(struct gram *g, unsigned id, unsigned ne)
{
	unsigned wrong = pick(g, 32) == 31;   /* an id out of order */
	emit(g, "fn %u ", wrong ? id + 1 + pick(g, 3) : id);
	if (pick(g, 16) == 15)
		emit(g, "%s", GOOD_OR_BAD(g, names, bad_names));   /* a clash, or bad */
	else
		emit(g, "f%u", id);
	emit(g, " %s %s", GOOD_OR_BAD(g, domains, bad_domains), GOOD_OR_BAD(g, rets, bad_rets));
	if (pick(g, 3) == 2) {
		emit(g, ":");
		emit_table(g, ne);
	}
	for (unsigned a = pick(g, 3); a > 0; a--)
		emit(g, " %s", GOOD_OR_BAD(g, attrs, bad_attrs));
	if (pick(g, 32) == 31)
		emit_run(g, 'Z', 300 + pick(g, 256) * 16);   /* a long token */
	emit(g, "\n");
	for (unsigned a = pick(g, 7); a > 0; a--) {
		const char *f = GOOD_OR_BAD(g, fmts, bad_fmts);
		emit(g, "a %s p%u %s", GOOD_OR_BAD(g, dirs, bad_dirs), a, f);
		if (!strcmp(f, "enum") || !strcmp(f, "flags") || !strcmp(f, "handle") || pick(g, 16) == 15) {
			emit(g, ":");
			emit_table(g, ne);
		}
		if (pick(g, 4) == 3)
			emit(g, " %s", pick(g, 2) ? "create" : "consume");
		emit(g, "\n");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gram g = { .p = data, .n = size };
	emit(&g, "%s\n", pick(&g, 64) == 63 ? "ncclrr-schema 2" : "ncclrr-schema 1");
	unsigned ne = pick(&g, 5);
	for (unsigned e = 0; e < ne; e++)
		gen_enum(&g, e);
	unsigned nf = pick(&g, 8) == 7 ? 100 + pick(&g, 256) : pick(&g, 6);
	for (unsigned f = 1; f <= nf; f++) {
		gen_fn(&g, f, ne);
		if (pick(&g, 64) == 63)
			gen_enum(&g, ne++);   /* an enum after a fn */
	}
	if (pick(&g, 32) != 31)
		emit(&g, "end\n");
	damage(&g);

	nrr_schema *s;
	nrr_diag d;
	if (nrr_schema_parse(&s, g.out ? g.out : "", g.len, &d) == 0) {
		uint32_t n = nrr_schema_nfns(s);
		for (uint32_t i = 1; i <= n; i++) {
			const nrr_fn_schema *f = nrr_schema_fn(s, i);
			REQUIRE(f && f->id == i && f->name);
			const nrr_fn_schema *byname = nrr_schema_fn_by_name(s, f->name);
			REQUIRE(byname && !strcmp(byname->name, f->name));
			REQUIRE(!f->ret_table || f->rtable);
			nrr_enum_name(f->rtable, 0);
			/* call semantics (sem=): roles in range, parameters it has */
			REQUIRE(f->role < NRR_ROLE_N && f->notready_arg < (int)f->nargs);
			for (unsigned r = 0; r < NRR_ARGROLE_N; r++)
				REQUIRE(f->arg[r] >= -1 && f->arg[r] < (int)f->nargs);
			REQUIRE(f->notready.nret <= NRR_SEM_MAXV && f->notready.nerr <= NRR_SEM_MAXV &&
				f->transient.nret <= NRR_SEM_MAXV && f->transient.nerr <= NRR_SEM_MAXV);
			for (unsigned a = 0; a < f->nargs; a++) {
				const nrr_arg_schema *as = &f->args[a];
				REQUIRE(as->name);
				REQUIRE(as->fmt != NRR_FMT_ENUM || as->table);
				nrr_enum_name(as->table, 1);
			}
		}
		REQUIRE(!nrr_schema_fn(s, n + 1));
		nrr_schema_free(s);
	} else {
		REQUIRE(d.msg[0]);   /* a refusal says why */
	}
	free(g.out);
	return 0;
}
