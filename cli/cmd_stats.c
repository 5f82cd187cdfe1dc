/* SPDX-License-Identifier: MIT */
/* cmd_stats.c - `ncclrr stats`: per rank and per API call counts and time. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "callfmt.h"
#include "cmds.h"
#include "inputs.h"
#include "progress.h"

const char cmd_stats_usage[] =
	"Usage: ncclrr stats [OPTIONS] FILE|DIR...\n"
	"\n"
	"For each traced process (rank) and each API: calls (identical polling\n"
	"answers included), errors, time inside the call, how many calls were\n"
	"coalesced in the trace (into a repeat count, or as a repetition of a\n"
	"sequence of calls), and calls still in flight at the end.\n"
	"Sorted by time inside, longest first; a TOTAL block sums all processes.\n"
	"\n"
	"Options:\n"
	"  --rank R[,R...]  only the processes of these ranks (metadata 'rank')\n"
	"  --top N          at most N APIs per process (default: all)\n"
	NRR_USAGE_STRICT
	"  -h, --help       this text\n"
	"      --version    print the version\n"
	"\n"
	"Exit status: 0 success, 2 bad usage or unreadable trace,\n"
	NRR_USAGE_EXIT_SKIPPED;

struct api_stat {
	const char *name;
	const char *domain;
	uint64_t calls, errors, ns, coalesced, inflight;
};

static int cmp_stat(const void *a, const void *b)
{
	const struct api_stat *x = a, *y = b;
	if (x->ns != y->ns)
		return x->ns < y->ns ? 1 : -1;
	if (x->calls != y->calls)
		return x->calls < y->calls ? 1 : -1;
	return strcmp(x->name ? x->name : "", y->name ? y->name : "");
}

static void account(struct api_stat *s, const nrr_call *c)
{
	if (c->phase == NRR_PHASE_ENTER)
		return;
	if (c->phase == NRR_PHASE_INFLIGHT) {
		s->inflight++;
		return;
	}
	s->calls += 1 + c->repeat;
	s->coalesced += c->repeat + (c->cycled ? 1 : 0);
	s->ns += c->dur + c->repeat_ns;
	if (nrr_call_failed(c))
		s->errors++;
}

static void print_table(const char *title, struct api_stat *st, size_t n, size_t top)
{
	size_t used = 0;
	uint64_t calls = 0, errors = 0, ns = 0;
	for (size_t i = 0; i < n; i++)
		if (st[i].calls || st[i].inflight)
			st[used++] = st[i];
	qsort(st, used, sizeof(*st), cmp_stat);
	for (size_t i = 0; i < used; i++) {
		calls += st[i].calls;
		errors += st[i].errors;
		ns += st[i].ns;
	}
	printf("%s: %llu calls, %llu errors, %.6f s inside traced calls\n", title,
	       (unsigned long long)calls, (unsigned long long)errors, ns / 1e9);
	printf("  %-40s %-12s %12s %8s %14s %12s %9s\n", "api", "domain", "calls", "errors", "time", "coalesced", "inflight");
	for (size_t i = 0; i < used && (!top || i < top); i++) {
		char t[32];
		FILE *f = fmemopen(t, sizeof(t), "w");
		if (f) {
			nrr_format_dur(f, st[i].ns);
			fclose(f);
		} else {
			t[0] = 0;
		}
		printf("  %-40s %-12s %12llu %8llu %14s %12llu %9llu\n", st[i].name, st[i].domain,
		       (unsigned long long)st[i].calls, (unsigned long long)st[i].errors, t,
		       (unsigned long long)st[i].coalesced, (unsigned long long)st[i].inflight);
	}
	putchar('\n');
}

/* Merge per-file tables into the total by API name. */
static int add_total(struct api_stat **tot, size_t *ntot, const struct api_stat *s)
{
	for (size_t i = 0; i < *ntot; i++) {
		if (strcmp((*tot)[i].name, s->name) == 0) {
			(*tot)[i].calls += s->calls;
			(*tot)[i].errors += s->errors;
			(*tot)[i].ns += s->ns;
			(*tot)[i].coalesced += s->coalesced;
			(*tot)[i].inflight += s->inflight;
			return 0;
		}
	}
	struct api_stat *x = realloc(*tot, (*ntot + 1) * sizeof(*x));
	if (!x)
		return -1;
	*tot = x;
	x[(*ntot)++] = *s;
	return 0;
}

int cmd_stats(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rank", required_argument, NULL, 'r' },
		{ "top", required_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	const char *ranks = NULL;
	size_t top = 0;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		switch (c) {
		case 'r': ranks = optarg; break;
		case 'n': {
			char *e;
			long v = strtol(optarg, &e, 10);
			if (*e || v <= 0)
				return nrr_cli_usage_error("stats", "--top wants a positive number, got '%s'", optarg);
			top = (size_t)v;
			break;
		}
		default:
			return nrr_cli_opt_error("stats", c, argv[optind - 1]);
		}
	}
	struct nrr_inputs in;
	if (nrr_inputs_open(&in, "stats", argv + optind, argc - optind, ranks))
		return NRR_EXIT_USAGE;
	int ret = NRR_EXIT_OK;
	struct api_stat *tot = NULL;
	size_t ntot = 0;
	struct nrr_progress prog;
	nrr_progress_init(&prog, &in);
	for (size_t i = 0; i < in.n && ret == NRR_EXIT_OK; i++) {
		const nrr_schema *s = nrr_reader_schema(in.r[i]);
		uint32_t nf = nrr_schema_nfns(s);
		struct api_stat *st = calloc(nf + 2, sizeof(*st));
		if (!st) {
			ret = NRR_EXIT_USAGE;
			break;
		}
		for (uint32_t f = 1; f <= nf; f++) {
			st[f].name = nrr_schema_fn(s, f)->name;
			st[f].domain = nrr_schema_fn(s, f)->domain;
		}
		st[0].name = "(log lines)";
		st[0].domain = "log";
		nrr_merge *m;
		int rc = nrr_merge_open(&m, &in.r[i], 1);
		if (rc) {
			free(st);
			ret = NRR_EXIT_USAGE;
			break;
		}
		const nrr_call *call;
		while ((rc = nrr_merge_next(m, &call, NULL)) == 0) {
			nrr_progress_note(&prog, i, call);
			if (call->kind == NRR_CALL_LOG)
				st[0].calls++;
			else
				account(&st[call->fn->id], call);
		}
		if (rc != NRR_EEOF) {
			nrr_print_diag("stats", nrr_merge_diag(m));
			ret = NRR_EXIT_USAGE;
		}
		nrr_merge_close(m);
		for (uint32_t f = 0; f <= nf && ret == NRR_EXIT_OK; f++)
			if ((st[f].calls || st[f].inflight) && add_total(&tot, &ntot, &st[f]))
				ret = NRR_EXIT_USAGE;
		char title[700];
		snprintf(title, sizeof(title), "rank %s (%s, %s, %u threads)", in.rank[i] ? in.rank[i] : "?",
			 in.who[i], nrr_reader_path(in.r[i]), nrr_reader_info(in.r[i])->nstreams);
		print_table(title, st, nf + 1, top);
		free(st);
	}
	nrr_progress_end(&prog);
	if (ret == NRR_EXIT_OK && in.n > 1)
		print_table("TOTAL", tot, ntot, top);
	free(tot);
	nrr_inputs_close(&in);
	return ret;
}
