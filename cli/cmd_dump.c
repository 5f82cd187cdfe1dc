/* SPDX-License-Identifier: MIT */
/* cmd_dump.c - `ncclrr dump`: one line per recorded call, in time order. */
#include <errno.h>
#include <stdint.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

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
	int rc = nrr_inputs_open(&in, "dump", argv + optind, argc - optind, sel.ranks);
	if (rc)
		return rc;
	if ((rc = nrr_select_resolve(&sel, &in))) {
		nrr_inputs_close(&in);
		return rc;
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
	rc = nrr_merge_open(&m, in.r, in.n);
	if (rc) {
		fprintf(stderr, "ncclrr dump: %s\n", nrr_strerror(rc));
		nrr_inputs_close(&in);
		return NRR_EXIT_USAGE;
	}
	const nrr_call *call;
	size_t ri;
	char who[300];
	static char obuf[1 << 16];
	nrr_out o;
	nrr_out_init(&o, stdout, obuf, sizeof(obuf));
	struct nrr_progress prog;
	nrr_progress_init(&prog, &in);
	while ((rc = nrr_merge_next(m, &call, &ri)) == 0) {
		nrr_progress_note(&prog, ri, call);
		if (!nrr_select_call(&in, ri, call))
			continue;   /* past --to: other streams may still be earlier */
		int64_t t = nrr_inputs_time(&in, ri, nrr_call_key(call));
		size_t wl = strlen(in.who[ri]);
		if (wl > sizeof(who) - 12)
			wl = sizeof(who) - 12;
		memcpy(who, in.who[ri], wl);
		who[wl] = '/';
		nrr_out o2;   /* the tid, into who */
		nrr_out_init(&o2, NULL, who + wl + 1, 11);
		nrr_out_u64(&o2, call->tid);
		who[wl + 1 + o2.n] = 0;
		nrr_out_call(&o, call, t, who);
		nrr_out_putc(&o, '\n');
		if (o.err)
			break;
	}
	nrr_out_flush(&o);
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
