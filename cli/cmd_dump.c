/* SPDX-License-Identifier: MIT */
/* cmd_dump.c - `ncclrr dump`: one line per recorded call, in time order. */
#include <errno.h>
#include <stdint.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "callfmt.h"
#include "cmds.h"
#include "inputs.h"
#include "progress.h"

const char cmd_dump_usage[] =
	"Usage: ncclrr dump [OPTIONS] FILE|DIR...\n"
	"\n"
	"Print one line per recorded call of the traces (every .nrt file of a DIR),\n"
	"all threads and processes merged in time order:\n"
	"  TIME HOST:PID/TID #SEQ name(arg=value, ...) = RESULT DURATION\n"
	"TIME is seconds since the earliest trace started. Calls that contain other\n"
	"calls print an '<unfinished ...>' line and a '<... resumed>' line; calls\n"
	"that never returned are marked '<in flight at end of trace>'. Identical\n"
	"polling answers show as '[+N identical, TIME]'. NCCL's proxy RPCs are\n"
	"decoded (ncclProxyRequest, ncclProxyResponse) for NCCL 2.19 to 2.28; for a\n"
	"trace of another NCCL a note on stderr says they are not (metadata proxy_rpc).\n"
	"\n"
	"Options:\n"
	NRR_SELECT_USAGE
	"  --meta             print each file's metadata first\n"
	NRR_USAGE_STRICT
	"  -h, --help         this text\n"
	"      --version      print the version\n"
	"\n"
	"Exit status: 0 success, 2 bad usage or unreadable trace,\n"
	NRR_USAGE_EXIT_SKIPPED;


/* Traces whose NCCL's proxy RPCs the tracer does not decode (metadata
 * proxy_rpc, written by the tracer with the versions it decodes): one
 * line per NCCL version, on stderr. */
static void proxy_note(struct nrr_inputs *in)
{
	for (size_t i = 0; i < in->n; i++) {
		char v[128];
		const char *p = nrr_reader_meta(in->r[i], "proxy_rpc");
		if (!p || strncmp(p, "not decoded", 11) != 0)
			continue;
		snprintf(v, sizeof(v), "%s", p);   /* (nrr_reader_meta answers in one buffer) */
		size_t n = 0;
		bool first = true;
		for (size_t j = 0; j < in->n && first; j++) {
			const char *q = nrr_reader_meta(in->r[j], "proxy_rpc");
			bool same = q && !strcmp(q, v);
			first = !(same && j < i);
			n += same && j >= i;
		}
		if (first)
			fprintf(stderr, "ncclrr dump: note: NCCL's proxy RPCs are %s (%zu file%s, first %s): no ncclProxyRequest/"
				"ncclProxyResponse lines; their bytes are in the proxy sockets' send/recv calls\n",
				v, n, n == 1 ? "" : "s", nrr_reader_path(in->r[i]));
	}
}

/* "host:pid/tid " prefixes of dump lines, made once per thread: a table
 * keyed by (reader, tid), open addressing, grown at half full. */
struct who_cache {
	struct who_ent { uint64_t key; char *s; size_t len; } *e;   /* key 0: empty */
	size_t cap, n;
};

static void who_free(struct who_cache *w)
{
	for (size_t i = 0; i < w->cap; i++)
		free(w->e[i].s);
	free(w->e);
}

static size_t who_slot(const struct who_cache *w, uint64_t key)
{
	size_t i = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & (w->cap - 1);
	while (w->e[i].key && w->e[i].key != key)
		i = (i + 1) & (w->cap - 1);
	return i;
}

/* @return "who/tid" of reader @ri's thread @tid (its length in *@len), or
 * NULL when out of memory. */
static const char *who_get(struct who_cache *w, const struct nrr_inputs *in, size_t ri, uint32_t tid, size_t *len)
{
	uint64_t key = ((uint64_t)(ri + 1) << 32) | tid;
	if (w->cap) {
		struct who_ent *e = &w->e[who_slot(w, key)];
		if (e->key == key) {
			*len = e->len;
			return e->s;
		}
	}
	if (2 * (w->n + 1) > w->cap) {
		struct who_cache g = { calloc(w->cap ? 2 * w->cap : 64, sizeof(*g.e)), w->cap ? 2 * w->cap : 64, w->n };
		if (!g.e)
			return NULL;
		for (size_t i = 0; i < w->cap; i++)
			if (w->e[i].key)
				g.e[who_slot(&g, w->e[i].key)] = w->e[i];
		free(w->e);
		*w = g;
	}
	struct who_ent *e = &w->e[who_slot(w, key)];
	size_t wl = strlen(in->who[ri]);
	char t[32], *s = malloc(wl + 1 + sizeof(t));
	if (!s)
		return NULL;
	nrr_out o;   /* the tid */
	nrr_out_init(&o, NULL, t, sizeof(t));
	nrr_out_u64(&o, tid);
	memcpy(s, in->who[ri], wl);
	s[wl] = '/';
	memcpy(s + wl + 1, t, o.n);
	*e = (struct who_ent){ key, s, wl + 1 + o.n };
	w->n++;
	*len = e->len;
	return s;
}

int cmd_dump(int argc, char **argv)
{
	static const struct option opts[] = {
		NRR_SELECT_OPTIONS,
		{ "meta", no_argument, NULL, 'm' },
		{ NULL, 0, NULL, 0 },
	};
	struct nrr_select sel;
	bool meta = false;
	int c, taken;
	nrr_select_init(&sel);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		taken = nrr_select_option(&sel, "dump", c, optarg);
		if (taken == 1)
			continue;
		if (taken)
			return taken;
		switch (c) {
		case 'm': meta = true; break;
		default:
			return nrr_cli_opt_error("dump", c, argv[optind - 1]);
		}
	}

	struct nrr_inputs in;
	if (nrr_inputs_open(&in, "dump", argv + optind, argc - optind, sel.ranks))
		return NRR_EXIT_USAGE;
	if (nrr_select_resolve(&sel, &in)) {
		nrr_inputs_close(&in);
		return NRR_EXIT_USAGE;
	}
	if (meta) {
		for (size_t i = 0; i < in.n; i++) {
			size_t len;
			const char *t = nrr_reader_meta_text(in.r[i], &len);
			printf("# %s\n", nrr_reader_path(in.r[i]));
			const char *p = t, *end = t + len;
			while (p < end) {
				const char *nl = memchr(p, '\n', (size_t)(end - p));
				size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
				printf("#   %.*s\n", (int)n, p);
				p += n + 1;
			}
		}
	}
	proxy_note(&in);
	nrr_merge *m;
	int rc = nrr_merge_open(&m, in.r, in.n);
	if (rc) {
		fprintf(stderr, "ncclrr dump: %s\n", nrr_strerror(rc));
		nrr_inputs_close(&in);
		return NRR_EXIT_USAGE;
	}
	const nrr_call *call;
	size_t ri;
	struct who_cache wc = { 0 };
	static char obuf[1 << 18];
	nrr_out o;
	fflush(stdout);   /* --meta's lines first */
	nrr_out_init_fd(&o, STDOUT_FILENO, obuf, sizeof(obuf));
	struct nrr_progress prog;
	nrr_progress_init(&prog, &in);
	while ((rc = nrr_merge_next(m, &call, &ri)) == 0) {
		nrr_progress_note(&prog, ri, call);
		if (!nrr_select_call(&in, ri, call))
			continue;   /* past --to: other streams may still be earlier */
		int64_t t = nrr_inputs_time(&in, ri, nrr_call_key(call));
		size_t wl;
		const char *who = who_get(&wc, &in, ri, call->tid, &wl);
		if (!who) {
			o.err = ENOMEM;
			break;
		}
		nrr_out_call(&o, call, t, who, wl);
		nrr_out_putc(&o, '\n');
		if (o.err)
			break;
	}
	nrr_out_flush(&o);
	who_free(&wc);
	nrr_progress_end(&prog);
	int ret = NRR_EXIT_OK;
	if (rc != NRR_EEOF && rc != 0) {
		fflush(stdout);
		nrr_print_diag("dump", nrr_merge_diag(m));
		ret = NRR_EXIT_USAGE;
	}
	nrr_merge_close(m);
	nrr_inputs_close(&in);
	if ((o.err || fflush(stdout) == EOF) && (o.err ? o.err : errno) != EPIPE) {
		fprintf(stderr, "ncclrr dump: cannot write output: %s\n", strerror(o.err ? o.err : errno));
		ret = NRR_EXIT_USAGE;
	}
	return ret;
}
