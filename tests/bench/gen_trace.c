/* SPDX-License-Identifier: MIT */
/*
 * gen_trace.c - write a pair of synthetic multi-rank runs for the analyzer
 * benchmark (bench_analyzer.sh): DIR_A and DIR_B, one .nrt file per rank,
 * each with a main thread and a proxy thread.  Per iteration the main
 * thread does a driver attribute query, a socket send and recv with a
 * payload, a stream polled until ready (coalesced not-ready answers), a
 * cuMem import, and a socket poll; the proxy thread polls a CQ and
 * receives.  The two runs differ in what a diff must ignore (pids,
 * pointers, handles, fds, ports, timestamps) and, in B only, in one late
 * call (unless MODE is "same"): rank NRANKS/2 fails its
 * cuMemImportFromShareableHandle at 90% of the iterations.  B also has
 * what a diff must tolerate: on odd iterations the attribute query and the
 * send come in the other order, every 50th iteration's connection is
 * refused once and retried, and polls take a different number of tries.
 * Calls are encoded from the built-in schema by name.
 *
 * usage: gen_trace DIR_A DIR_B NRANKS ITERATIONS [late|same]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <netinet/in.h>

#include "nrt.h"
#include "trace_args.h"

#define A(...) ((struct av[]){ __VA_ARGS__, END })
#define NONE ((struct av[]){ END })

static const nrr_schema *schema;

struct gen {
	nrr_tls *t;
	uint64_t clock;
};

static void call(struct gen *g, const char *name, int64_t result, int err, const struct av *in, const struct av *out,
		 uint64_t dur, bool notready)
{
	const nrr_fn_schema *f = fn_of_builtin(schema, name, "gen_trace", 2);
	g->clock += 150;
	nrr_tls_set_time(g->t, g->clock);
	uint8_t *p = nrr_enter_begin(g->t, f->id, 8192);
	nrr_enter_end(g->t, put_args(p, f, NRR_DIR_IN, in));
	g->clock += dur;
	nrr_tls_set_time(g->t, g->clock);
	p = nrr_leave_begin(g->t, result, (uint32_t)err, 8192);
	nrr_leave_end(g->t, put_args(p, f, NRR_DIR_OUT, out), notready);
}

static int write_rank(const char *dir, bool b, int rank, int nranks, long iters, bool fail)
{
	char path[4096], meta[512];
	uint32_t pid = (b ? 20000u : 10000u) + (uint32_t)rank;
	snprintf(path, sizeof(path), "%s/gen-%05u.nrt", dir, pid);
	int ml = snprintf(meta, sizeof(meta), "host=node%d\npid=%u\nrank=%d\nnranks=%d\nexe=/opt/bench/gen_app\n"
			  "argv=gen_app --iters %ld\nenv.NCCL_SOCKET_IFNAME=lo\n", rank / 8, pid, rank, nranks, iters);
	nrr_writer_opts o = {
		.schema = nrr_builtin_schema,
		.schema_len = nrr_builtin_schema_len,
		.meta = meta,
		.meta_len = (size_t)ml,
		.manual_clock = true,
		.mono_ns = 1000,
		.wall_ns = 1700000000000000000ull + (b ? 5000000000ull : 0),
		.pid = pid,
	};
	nrr_writer *w;
	int rc = nrr_writer_open(&w, path, &o);
	if (rc) {
		fprintf(stderr, "gen_trace: cannot create %s: %s\n", path, strerror(-rc));
		return 1;
	}
	struct gen m = { nrr_writer_stream(w, pid), 2000 }, px = { nrr_writer_stream(w, pid + 1000), 2100 };
	if (!m.t || !px.t)
		return 1;
	uint64_t ptr = (b ? 0x7f3000000000ull : 0x7f9000000000ull) + ((uint64_t)rank << 24);
	long fail_at = fail && b && rank == nranks / 2 ? iters * 9 / 10 : -1;
	uint8_t payload[1024];
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7 + rank + (b ? 1 : 0));
	int fd = b ? 40 : 30;
	struct sockaddr_in peer = { .sin_family = AF_INET, .sin_port = htons((uint16_t)(b ? 41000 : 52000)),
				    .sin_addr.s_addr = htonl(0x7f000001) };
	for (long it = 0; it < iters; it++) {
		size_t plen = 64 + (size_t)(it % 4) * 128;
		payload[0] = (uint8_t)it;   /* contents vary, as a real payload's do */
		if (it % 50 == 0) {   /* a connection; B's first try is refused */
			int tries = b ? 2 : 1;
			for (int k = 0; k < tries; k++) {
				bool refused = k + 1 < tries;
				call(&m, "socket", fd + 4 + k, 0, A(U("domain", AF_INET), U("type", 1), U("protocol", 0)), NONE,
				     3000, false);
				call(&m, "connect", refused ? -1 : 0, refused ? ECONNREFUSED : 0,
				     A(U("sockfd", fd + 4 + k), B("addr", &peer, sizeof(peer)), U("addrlen", sizeof(peer))), NONE,
				     20000, false);
				if (refused)
					call(&m, "close", 0, 0, A(U("fd", fd + 4 + k)), NONE, 1000, false);
			}
		}
		bool swap = b && (it & 1);
		if (!swap)
			call(&m, "cuDeviceGetAttribute", 0, 0, A(U("attrib", 16), U("dev", rank % 8)), A(U("pi", 132)), 40, false);
		call(&m, "send", (int64_t)plen, 0, A(U("sockfd", fd), B("buf", payload, plen), U("len", plen), U("flags", 0x4000)),
		     NONE, 3000, false);
		if (swap)
			call(&m, "cuDeviceGetAttribute", 0, 0, A(U("attrib", 16), U("dev", rank % 8)), A(U("pi", 132)), 40, false);
		call(&m, "recv", (int64_t)plen, 0, A(U("sockfd", fd + 1), U("len", plen), U("flags", 0)),
		     A(B("buf", payload, plen)), 5000, false);
		uint64_t stream = ptr + 0x1000;
		int polls = 3 + (int)((it + (b ? 1 : 0)) % 5);   /* how long a poll takes differs */
		for (int k = 0; k < polls; k++)
			call(&m, "cuStreamQuery", 600, 0, A(U("hStream", stream)), NONE, 80, true);
		call(&m, "cuStreamQuery", 0, 0, A(U("hStream", stream)), NONE, 80, false);
		int res = it == fail_at ? 1 : 0;
		call(&m, "cuMemImportFromShareableHandle", res, 0,
		     A(U("osHandle", fd + 2), U("shHandleType", 1)), A(U("handle", res ? 0 : ptr + 0x2000 + (uint64_t)it)),
		     900, false);
		struct { int fd; short ev, rev; } pfd = { fd, 1, 0 };
		call(&m, "poll", 0, 0, A(B("fds", &pfd, 8), U("nfds", 1), U("timeout", 100)), A(B("fds", &pfd, 8)), 500, true);
		pfd.rev = 1;
		call(&m, "poll", 1, 0, A(B("fds", &pfd, 8), U("nfds", 1), U("timeout", 100)), A(B("fds", &pfd, 8)), 500, false);
		/* the proxy thread */
		for (int k = 0; k < 4 + (int)(it % 3); k++)
			call(&px, "ibv_poll_cq", 0, 0, A(U("cq", ptr + 0x3000), U("num_entries", 4)), NONE, 60, true);
		call(&px, "recv", 64, 0, A(U("sockfd", fd + 3), U("len", 64), U("flags", 0)), A(B("buf", payload, 64)), 2000,
		     false);
	}
	rc = nrr_writer_close(w);
	if (rc) {
		fprintf(stderr, "gen_trace: writing %s: %s\n", path, strerror(-rc));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 5 && !(argc == 6 && (strcmp(argv[5], "late") == 0 || strcmp(argv[5], "same") == 0))) {
		fprintf(stderr, "usage: gen_trace DIR_A DIR_B NRANKS ITERATIONS [late|same]\n");
		return 2;
	}
	bool fail = argc == 5 || strcmp(argv[5], "late") == 0;
	int nranks = atoi(argv[3]);
	long iters = atol(argv[4]);
	if (nranks < 1 || iters < 1) {
		fprintf(stderr, "gen_trace: NRANKS and ITERATIONS must be positive\n");
		return 2;
	}
	schema = nrr_builtin();
	if (!schema)
		return 1;
	for (int d = 0; d < 2; d++) {
		if (mkdir(argv[1 + d], 0755) && errno != EEXIST) {
			fprintf(stderr, "gen_trace: mkdir %s: %s\n", argv[1 + d], strerror(errno));
			return 1;
		}
		for (int r = 0; r < nranks; r++)
			if (write_rank(argv[1 + d], d == 1, r, nranks, iters, fail))
				return 1;
	}
	return 0;
}
