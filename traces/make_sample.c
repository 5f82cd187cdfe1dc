/* SPDX-License-Identifier: MIT */
/*
 * make_sample.c - write traces/sample_init.nrt, the golden trace for
 * `dump` and `stats`: one process (rank 0 on node0) going through an
 * NCCL-like init in which importing a peer's cuMem handle fails, with a
 * proxy thread polling.  It encodes calls generically from the built-in
 * schema (by function and argument name), so it also checks that every
 * name it uses exists in formats/api/.
 *
 * Run by hand after a deliberate format or API change:
 *   build/traces/make_sample traces/sample_init.nrt
 *   build/cli/ncclrr dump traces/sample_init.nrt > traces/sample_init.dump
 *   build/cli/ncclrr stats traces/sample_init.nrt > traces/sample_init.stats
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "nrt.h"
#include "trace_args.h"

static const nrr_schema *schema;

static void check_names(const nrr_fn_schema *f, const struct av *v)
{
	for (const struct av *x = v; x->name; x++) {
		unsigned i;
		for (i = 0; i < f->nargs; i++)
			if (strcmp(f->args[i].name, x->name) == 0)
				break;
		if (i == f->nargs) {
			fprintf(stderr, "make_sample: %s has no argument '%s' in formats/api/\n", f->name, x->name);
			exit(1);
		}
	}
}

static void spin(long ns)
{
	struct timespec ts = { 0, ns };
	nanosleep(&ts, NULL);
}

static void enter(nrr_tls *t, const char *name, struct av *in)
{
	const nrr_fn_schema *f = fn_of_builtin(schema, name, "make_sample", 1);
	check_names(f, in);
	uint8_t *p = nrr_enter_begin(t, f->id, 8192);
	nrr_enter_end(t, put_args(p, f, NRR_DIR_IN, in));
}

static void leave(nrr_tls *t, const char *name, int64_t result, int err, struct av *out, bool notready)
{
	const nrr_fn_schema *f = fn_of_builtin(schema, name, "make_sample", 1);
	check_names(f, out);
	uint8_t *p = nrr_leave_begin(t, result, (uint32_t)err, 8192);
	nrr_leave_end(t, put_args(p, f, NRR_DIR_OUT, out), notready);
}

/* A call without nested calls. */
static void call(nrr_tls *t, const char *name, int64_t result, int err, struct av *in, struct av *out)
{
	enter(t, name, in);
	spin(2000);
	leave(t, name, result, err, out, false);
}

#define A(...) ((struct av[]){ __VA_ARGS__, END })
#define NONE ((struct av[]){ END })

static nrr_writer *w;

static void *proxy_thread(void *arg)
{
	nrr_tls *t = nrr_writer_thread(w);
	(void)arg;
	static const char msg[] = "NCCL INFO [Proxy Service] Device 0 CPU core 3";
	nrr_log(t, 3, msg, sizeof(msg) - 1);
	struct pollfd_like { int fd; short events, revents; } pfd = { 21, 1, 0 };
	for (int i = 0; i < 50; i++) {   /* 50 identical empty polls coalesce */
		enter(t, "ibv_poll_cq", A(U("cq", 0x55d0c0de1000ull), U("num_entries", 4)));
		leave(t, "ibv_poll_cq", 0, 0, NONE, true);
	}
	enter(t, "poll", A(B("fds", &pfd, sizeof(pfd)), U("nfds", 1), U("timeout", 500)));
	pfd.revents = 1;
	spin(2000);
	leave(t, "poll", 1, 0, A(B("fds", &pfd, sizeof(pfd))), false);
	call(t, "recv", 64, 0, A(U("sockfd", 21), U("len", 64), U("flags", 0)), A(B("buf", "ncclProxyConnect", 16)));
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: make_sample OUT.nrt\n");
		return 2;
	}
	schema = nrr_builtin();
	if (!schema)
		return 1;
	static const char meta[] = "host=node0\nrank=0\nnranks=2\nargv=./init_allreduce\nnccl_version=22809\n"
				   "env.NCCL_SOCKET_IFNAME=lo\nenv.NCCL_DEBUG=INFO\n";
	nrr_writer_opts o = { .schema = nrr_builtin_schema, .schema_len = nrr_builtin_schema_len,
			      .meta = meta, .meta_len = sizeof(meta) - 1 };
	unlink(argv[1]);
	int rc = nrr_writer_open(&w, argv[1], &o);
	if (rc) {
		fprintf(stderr, "make_sample: cannot create %s: %s\n", argv[1], nrr_strerror(rc));
		return 1;
	}
	nrr_tls *t = nrr_writer_thread(w);
	uint8_t uid[128] = { 2, 0, 0x9c, 0x40, 127, 0, 0, 1 };
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(40000) };
	sa.sin_addr.s_addr = htonl(0x7f000001);

	call(t, "ncclGetVersion", 0, 0, NONE, A(U("version", 22809)));
	call(t, "ncclGetUniqueId", 0, 0, NONE, A(B("uniqueId", uid, sizeof(uid))));
	enter(t, "ncclCommInitRank", A(U("nranks", 2), B("commId", uid, sizeof(uid)), U("rank", 0)));
	call(t, "cuInit", 0, 0, A(U("Flags", 0)), NONE);
	call(t, "cuDriverGetVersion", 0, 0, NONE, A(U("driverVersion", 13000)));
	call(t, "cuDeviceGetCount", 0, 0, NONE, A(U("count", 8)));
	static const int attrs[] = { 75, 76, 16, 50, 33, 34, 41 };
	static const int vals[] = { 9, 0, 132, 0, 0x18, 0, 1 };
	for (unsigned i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++)
		call(t, "cuDeviceGetAttribute", 0, 0, A(U("attrib", attrs[i]), U("dev", 0)), A(U("pi", vals[i])));
	call(t, "cuDeviceGetPCIBusId", 0, 0, A(U("len", 64), U("dev", 0)), A(S("pciBusId", "0000:18:00.0")));
	call(t, "nvmlInit_v2", 0, 0, NONE, NONE);
	call(t, "nvmlDeviceGetHandleByPciBusId_v2", 0, 0, A(S("pciBusId", "0000:18:00.0")), A(U("device", 0x7f3a00001000ull)));
	call(t, "socket", 17, 0, A(U("domain", AF_INET), U("type", 1), U("protocol", 0)), NONE);
	call(t, "connect", -1, ECONNREFUSED, A(U("sockfd", 17), B("addr", &sa, sizeof(sa)), U("addrlen", sizeof(sa))), NONE);
	spin(200000);
	call(t, "connect", 0, 0, A(U("sockfd", 17), B("addr", &sa, sizeof(sa)), U("addrlen", sizeof(sa))), NONE);
	call(t, "send", 8, 0, A(U("sockfd", 17), B("buf", "\x00\x00\x00\x00\x02\x00\x00\x00", 8), U("len", 8), U("flags", 0)), NONE);
	nrr_log(t, 3, "NCCL INFO Bootstrap : Using lo:127.0.0.1<0>", strlen("NCCL INFO Bootstrap : Using lo:127.0.0.1<0>"));
	pthread_t pt;
	pthread_create(&pt, NULL, proxy_thread, NULL);
	pthread_join(pt, NULL);
	call(t, "cuMemGetAllocationGranularity", 0, 0, A(U("option", 0)), A(U("granularity", 2097152)));
	call(t, "cuMemCreate", 0, 0, A(U("size", 2097152), U("flags", 0)), A(U("handle", 0x5600000010ull)));
	call(t, "cuMemAddressReserve", 0, 0, A(U("size", 2097152), U("alignment", 0), U("addr", 0), U("flags", 0)), A(U("ptr", 0x7f2e00000000ull)));
	call(t, "cuMemMap", 0, 0, A(U("ptr", 0x7f2e00000000ull), U("size", 2097152), U("offset", 0), U("handle", 0x5600000010ull), U("flags", 0)), NONE);
	call(t, "cuMemExportToShareableHandle", 0, 0, A(U("handle", 0x5600000010ull), U("handleType", 1), U("flags", 0)), A(U("shareableHandle", 23)));
	for (int i = 0; i < 6; i++) {
		enter(t, "cuStreamQuery", A(U("hStream", 0x5611aa000010ull)));
		leave(t, "cuStreamQuery", 600, 0, NONE, true);
	}
	call(t, "cuStreamQuery", 0, 0, A(U("hStream", 0x5611aa000010ull)), NONE);
	call(t, "cuMemImportFromShareableHandle", 1, 0, A(U("osHandle", 24), U("shHandleType", 1)), NONE);
	nrr_log(t, 2, "NCCL WARN Cuda failure 1 'invalid argument'", strlen("NCCL WARN Cuda failure 1 'invalid argument'"));
	nrr_log(t, 2, "NCCL INFO transport/p2p.cc:1035 -> 1", strlen("NCCL INFO transport/p2p.cc:1035 -> 1"));
	nrr_log(t, 2, "NCCL INFO transport.cc:168 -> 1", strlen("NCCL INFO transport.cc:168 -> 1"));
	leave(t, "ncclCommInitRank", 3, 0, A(U("comm", 0)), false);
	call(t, "ncclGetErrorString", 0x7f3a1c2f0e40ll, 0, A(U("result", 3)), NONE);
	/* the program then blocks in a barrier: in flight at the end */
	enter(t, "recv", A(U("sockfd", 17), U("len", 4), U("flags", 0)));
	rc = nrr_writer_close(w);
	if (rc) {
		fprintf(stderr, "make_sample: cannot finish %s: %s\n", argv[1], nrr_strerror(rc));
		return 1;
	}
	return 0;
}
