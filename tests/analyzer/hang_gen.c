/* SPDX-License-Identifier: MIT */
/*
 * hang_gen - writes the traces of a hung job that no workload here makes,
 * with the format library and the built-in schema, for `ncclrr hang`'s
 * tests (tests/analyzer/test_hang.sh):
 *   cycle N:      ranks 0..N-1, rank i blocked in recv on a connection to
 *                 rank (i+1)%N: a cycle, nothing outside it;
 *   scale N K:    a bootstrap of N ranks at 127.0.0.1:29500: rank 0 in
 *                 accept, every other rank connected and in recv, except
 *                 rank K, alive with nothing in flight (never connected);
 *   mixed:        5 ranks: rank 0 asked rank 1's proxy for an fd
 *                 (ncclProxyRequest GetFd, opId 0x42) and waits in recv for
 *                 the answer; rank 1 is stuck in cuStreamSynchronize; rank 2
 *                 polls ibv_poll_cq ("not ready") 1000 times up to the end;
 *                 rank 3 exited 0 (end=exit 0); rank 4 spins on a
 *                 non-blocking recv (EAGAIN, 500 times) from rank 1.
 *   unseen SEND:  for `ncclrr replay`'s check of calls in flight at the
 *                 end: rank 1 connects to rank 0's listener (and with
 *                 SEND=1 sends 4 bytes), rank 0 accepts and is blocked in
 *                 recv on that connection when its trace ends, so with
 *                 SEND=1 the replay finds data there the recording never
 *                 received (a trace that cannot be true: the divergence).
 *   mpi FAULT:    a job launched by mpirun, helpers and benign failures
 *                 included, healthy (0) or failing (1): see mpi() below
 *                 (hang, diff and replay's recorded failure);
 *   threads FAIL NAMED: one rank whose NCCL and helper threads neither
 *                 their creation order nor their first calls pair (diff).
 *   probes N:     for `ncclrr export`'s noise folding: 2 ranks, each
 *                 probing the driver as the CUDA runtime does (N
 *                 cuGetProcAddress calls, every other one
 *                 CUDA_ERROR_NOT_FOUND), then connecting (rank 0: 3
 *                 refused, then through); rank 1's cuMemAlloc then fails
 *                 for real (CUDA_ERROR_OUT_OF_MEMORY), 50 ms after the
 *                 probes.
 * Every file but mpi's: metadata host, pid, rank, env.NCCLRR_NRANKS,
 * env.NCCL_COMM_ID; no `end` key (the processes were still running when
 * written).
 * usage: hang_gen DIR cycle N | hang_gen DIR scale N K | hang_gen DIR mixed | hang_gen DIR unseen SEND |
 *        hang_gen DIR mpi FAULT | hang_gen DIR threads FAIL NAMED
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nrt.h"

struct val {
	const char *name;
	int64_t i;
	const void *p;
	size_t len;
};

/* Record an ENTER of @fname with the in-args found in @v (others zero). */
static void enter(nrr_tls *t, const char *fname, const struct val *v, size_t nv)
{
	const nrr_fn_schema *fn = nrr_schema_fn_by_name(nrr_builtin(), fname);
	if (!fn) {
		fprintf(stderr, "hang_gen: no %s in the schema\n", fname);
		exit(2);
	}
	uint8_t *p = nrr_enter_begin(t, fn->id, 512);
	for (unsigned a = 0; a < fn->nargs; a++) {
		const nrr_arg_schema *as = &fn->args[a];
		if (!(as->dir & NRR_DIR_IN))
			continue;
		const struct val *x = NULL;
		for (size_t k = 0; k < nv; k++)
			if (!strcmp(v[k].name, as->name))
				x = &v[k];
		if (as->wire == NRR_WIRE_B)
			p = nrr_put_bytes(p, x ? x->p : "", x ? x->len : 0, 256);
		else if (as->wire == NRR_WIRE_S)
			p = nrr_put_svar(p, x ? x->i : 0);
		else
			p = nrr_put_uvar(p, x ? (uint64_t)x->i : 0);
	}
	nrr_enter_end(t, p);
}

/* LEAVE of the innermost open call, out-args zero / empty. */
static void leave(nrr_tls *t, const char *fname, int64_t result)
{
	bool notready = !strcmp(fname, "ibv_poll_cq") && result == 0;
	const nrr_fn_schema *fn = nrr_schema_fn_by_name(nrr_builtin(), fname);
	uint8_t *p = nrr_leave_begin(t, result, 0, 256);
	for (unsigned a = 0; a < fn->nargs; a++) {
		const nrr_arg_schema *as = &fn->args[a];
		if (!(as->dir & NRR_DIR_OUT))
			continue;
		if (as->wire == NRR_WIRE_B)
			p = nrr_put_bytes(p, "", 0, 0);
		else
			p = nrr_put_uvar(p, 0);
	}
	nrr_leave_end(t, p, notready);
}

static struct sockaddr_in addr(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	return a;
}

/* sock_info(fd, role, type, tid, local, peer) as the tracer records it */
static void sock_info(nrr_tls *t, int fd, int role, int type, int lport, int pport)
{
	struct sockaddr_in l = addr(lport), p = addr(pport);
	struct val v[] = { { "fd", fd, NULL, 0 }, { "role", role, NULL, 0 }, { "type", type, NULL, 0 },
			   { "owner_tid", 1, NULL, 0 }, { "local", 0, &l, sizeof(l) },
			   { "peer", 0, &p, pport ? sizeof(p) : 0 } };
	enter(t, "sock_info", v, 6);
	leave(t, "sock_info", 0);
}

static void blocked(nrr_tls *t, const char *fname, int fd)
{
	struct val v[] = { { "sockfd", fd, NULL, 0 }, { "len", 320, NULL, 0 } };
	enter(t, fname, v, 2);   /* never returns */
}

static nrr_writer *open_file(const char *path, const char *meta, int len)
{
	nrr_writer_opts o = { .schema = nrr_builtin_schema, .schema_len = nrr_builtin_schema_len, .meta = meta,
			      .meta_len = (size_t)len };
	nrr_writer *w;
	if (nrr_writer_open(&w, path, &o)) {
		fprintf(stderr, "hang_gen: cannot create %s\n", path);
		exit(2);
	}
	return w;
}

static nrr_writer *open_rank(const char *dir, int rank, int n)
{
	char path[4096], meta[512];
	snprintf(path, sizeof(path), "%s/gen-%05d.nrt", dir, rank);
	int len = snprintf(meta, sizeof(meta), "host=gen\npid=%d\nrank=%d\nenv.NCCLRR_NRANKS=%d\nenv.NCCL_COMM_ID=127.0.0.1:29500\n",
			   1000 + rank, rank, n);
	return open_file(path, meta, len);
}

static int mixed(const char *dir)
{
	for (int r = 0; r < 5; r++) {
		nrr_writer *w = open_rank(dir, r, 5);
		nrr_tls *t = nrr_writer_thread(w);
		if (r == 0) {
			sock_info(t, 9, 2, 2, 21000, 31001);
			uint64_t req = 7;
			struct val v[] = { { "fd", 9, NULL, 0 }, { "type", 9, NULL, 0 }, { "opId", 0x42, NULL, 0 },
					   { "req", 0, &req, sizeof(req) } };
			enter(t, "ncclProxyRequest", v, 4);
			leave(t, "ncclProxyRequest", 0);
			blocked(t, "recv", 9);
		} else if (r == 1) {
			sock_info(t, 6, 1, 0, 31001, 0);
			sock_info(t, 12, 3, 2, 31001, 21000);
			sock_info(t, 13, 3, 3, 31001, 22004);
			struct val v[] = { { "hStream", 0x5000, NULL, 0 } };
			enter(t, "cuStreamSynchronize", v, 1);
		} else if (r == 2) {
			struct val v[] = { { "cq", 0x7000, NULL, 0 }, { "num_entries", 4, NULL, 0 } };
			for (int i = 0; i < 1000; i++) {
				enter(t, "ibv_poll_cq", v, 2);
				leave(t, "ibv_poll_cq", 0);
			}
		} else if (r == 3) {
			struct val v[] = { { "domain", 2, NULL, 0 } };
			enter(t, "socket", v, 1);
			leave(t, "socket", 7);
			nrr_writer_set_end(w, "exit 0", false);
		} else {
			sock_info(t, 8, 2, 3, 22004, 31001);
			struct val v[] = { { "sockfd", 8, NULL, 0 }, { "len", 64, NULL, 0 } };
			for (int i = 0; i < 500; i++) {
				enter(t, "recv", v, 2);
				uint8_t *p = nrr_leave_begin(t, -1, EAGAIN, 64);
				p = nrr_put_bytes(p, "", 0, 0);
				nrr_leave_end(t, p, false);
			}
		}
		if (nrr_writer_close(w)) {
			fprintf(stderr, "hang_gen: cannot write rank %d\n", r);
			return 2;
		}
	}
	return 0;
}

static void call(nrr_tls *t, const char *fname, const struct val *v, size_t nv, int64_t result)
{
	enter(t, fname, v, nv);
	leave(t, fname, result);
}

static int unseen(const char *dir, bool send)
{
	nrr_writer *w0 = open_rank(dir, 0, 2), *w1 = open_rank(dir, 1, 2);
	nrr_tls *t0 = nrr_writer_thread(w0), *t1 = nrr_writer_thread(w1);
	struct sockaddr_in any = addr(0), root = addr(29600);
	struct val sk[] = { { "domain", 2, NULL, 0 }, { "type", 1, NULL, 0 } };
	struct val bind_[] = { { "sockfd", 5, NULL, 0 }, { "addr", 0, &any, sizeof(any) }, { "addrlen", 16, NULL, 0 } };
	struct val listen_[] = { { "sockfd", 5, NULL, 0 }, { "backlog", 16, NULL, 0 } };
	call(t0, "socket", sk, 2, 5);
	call(t0, "bind", bind_, 3, 0);
	call(t0, "listen", listen_, 2, 0);
	sock_info(t0, 5, 1, 0, 29600, 0);
	struct val conn[] = { { "sockfd", 5, NULL, 0 }, { "addr", 0, &root, sizeof(root) }, { "addrlen", 16, NULL, 0 } };
	call(t1, "socket", sk, 2, 5);
	call(t1, "connect", conn, 3, 0);
	sock_info(t1, 5, 2, 0, 40001, 29600);
	if (send) {
		struct val v[] = { { "sockfd", 5, NULL, 0 }, { "buf", 0, "abcd", 4 }, { "len", 4, NULL, 0 } };
		call(t1, "send", v, 3, 4);
	}
	struct val acc[] = { { "sockfd", 5, NULL, 0 } };
	call(t0, "accept", acc, 1, 6);
	sock_info(t0, 6, 3, 0, 29600, 40001);
	blocked(t0, "recv", 6);
	nrr_writer_set_end(w1, "exit 0", false);
	if (nrr_writer_close(w1) || nrr_writer_close(w0)) {   /* rank 0 ends last, still in recv */
		fprintf(stderr, "hang_gen: cannot write the traces\n");
		return 2;
	}
	return 0;
}

/* LEAVE of the innermost open call with errno @err (out-args empty). */
static void leave_err(nrr_tls *t, const char *fname, int64_t result, int err)
{
	const nrr_fn_schema *fn = nrr_schema_fn_by_name(nrr_builtin(), fname);
	uint8_t *p = nrr_leave_begin(t, result, err, 256);
	for (unsigned a = 0; a < fn->nargs; a++) {
		if (!(fn->args[a].dir & NRR_DIR_OUT))
			continue;
		p = fn->args[a].wire == NRR_WIRE_B ? nrr_put_bytes(p, "", 0, 0) : nrr_put_uvar(p, 0);
	}
	nrr_leave_end(t, p, false);
}

static void call_err(nrr_tls *t, const char *fname, const struct val *v, size_t nv, int64_t result, int err)
{
	enter(t, fname, v, nv);
	leave_err(t, fname, result, err);
}

/* A process of the launched job: a rank (@rank >= 0) or a helper without one. */
static nrr_writer *open_proc(const char *dir, int pid, int rank, int n, const char *exe)
{
	char path[4096], meta[512], rk[32] = "";
	if (rank >= 0)
		snprintf(rk, sizeof(rk), "rank=%d\n", rank);
	snprintf(path, sizeof(path), "%s/gen-%d.nrt", dir, pid);
	int len = snprintf(meta, sizeof(meta), "host=gen\npid=%d\n%sexe=%s\nenv.OMPI_COMM_WORLD_SIZE=%d\n", pid, rk, exe, n);
	return open_file(path, meta, len);
}

static void pause_ms(int ms)
{
	struct timespec ts = { 0, ms * 1000000L };
	nanosleep(&ts, NULL);
}

/* What every rank of a real NCCL job fails at and a healthy run fails at
 * too (nrr_call_benign()): verbs absent, a port probed, NVML's fabric
 * query unsupported, a non-blocking recv with nothing there. */
static void rank_noise(nrr_tls *t)
{
	struct sockaddr_in a = addr(29700);
	struct val nd[] = { { "num_devices", 0, NULL, 0 } };
	struct val bd[] = { { "sockfd", 5, NULL, 0 }, { "addr", 0, &a, sizeof(a) }, { "addrlen", 16, NULL, 0 } };
	struct val nv[] = { { "device", 0x100, NULL, 0 } };
	struct val rv[] = { { "sockfd", 5, NULL, 0 }, { "len", 16, NULL, 0 } };
	call_err(t, "ibv_get_device_list", nd, 1, 0, ENOSYS);
	call_err(t, "bind", bd, 3, -1, EADDRINUSE);
	call(t, "bind", bd, 3, 0);
	call(t, "nvmlDeviceGetGpuFabricInfoV", nv, 1, 3 /* NVML_ERROR_NOT_SUPPORTED */);
	call_err(t, "recv", rv, 2, -1, EAGAIN);
}

static int close_w(nrr_writer *w, const char *end)
{
	if (end)
		nrr_writer_set_end(w, end, false);
	if (nrr_writer_close(w)) {
		fprintf(stderr, "hang_gen: cannot write a trace\n");
		return 2;
	}
	return 0;
}

/* mpi FAULT: a 4-rank job as `ncclrr record -- mpirun -np 4 ...` records
 * it: the launcher (no rank; it probes for servers that are not there,
 * as hwloc probes X displays: a UNIX socket, ENOENT, and a TCP port,
 * ECONNREFUSED), two fork stubs (they close
 * inherited fds and exec; the second has rank 1's variables, and when
 * FAULT one more close, EBADF), and ranks 0-3 with the failures every healthy
 * rank has too (rank_noise()).  FAULT=0: every rank and the launcher exit 0.
 * FAULT=1: rank 3's trace stops first with no end (mpirun SIGKILLs it when
 * it stops the job: its last second is lost); rank 2 then fails 14
 * different calls, then cudaIpcOpenMemHandle inside ncclCommInitRank =
 * ncclInternalError, and exits 1; then mpirun stops the job: ranks 0 and 1
 * end by SIGTERM, rank 0 blocked in recv on its own socketpair, rank 1 in
 * recv on a connection to an address no trace has; the launcher exits 1. */
static int mpi(const char *dir, bool fault)
{
	int rc = 0;
	nrr_writer *lw = open_proc(dir, 900, -1, 4, "/usr/bin/orterun");
	nrr_tls *lt = nrr_writer_thread(lw);
	uint8_t un[20] = { 1, 0, '/', 't', 'm', 'p', '/', 'p', 'm', 'i', 'x' };
	struct val uc[] = { { "sockfd", 7, NULL, 0 }, { "addr", 0, un, sizeof(un) }, { "addrlen", sizeof(un), NULL, 0 } };
	struct sockaddr_in x11 = addr(6000);
	struct val xc[] = { { "sockfd", 8, NULL, 0 }, { "addr", 0, &x11, sizeof(x11) }, { "addrlen", 16, NULL, 0 } };
	call_err(lt, "connect", uc, 3, -1, ENOENT);
	call_err(lt, "connect", xc, 3, -1, ECONNREFUSED);
	for (int k = 0; k < 2; k++) {
		/* the second stub has rank 1's variables already */
		nrr_writer *w = open_proc(dir, 901 + k, k ? 1 : -1, 4, "/usr/bin/orterun");
		nrr_tls *t = nrr_writer_thread(w);
		for (int fd = 15; fd < 18 + (fault ? k : 0); fd++) {
			struct val v[] = { { "fd", fd, NULL, 0 } };
			call_err(t, "close", v, 1, fd < 18 ? 0 : -1, fd < 18 ? 0 : EBADF);
		}
		rc |= close_w(w, "exec");
	}
	nrr_writer *rw[4];
	nrr_tls *rt[4];
	for (int r = 0; r < 4; r++) {
		rw[r] = open_proc(dir, 1000 + r, r, 4, "/opt/job/init_allreduce");
		rt[r] = nrr_writer_thread(rw[r]);
		rank_noise(rt[r]);
	}
	struct val da[] = { { "attrib", 16, NULL, 0 }, { "dev", 0, NULL, 0 } };
	struct val ci[] = { { "nranks", 4, NULL, 0 }, { "rank", 2, NULL, 0 } };
	struct val ip[] = { { "flags", 1, NULL, 0 } };
	if (!fault) {
		for (int r = 0; r < 4; r++) {
			call(rt[r], "cuDeviceGetAttribute", da, 2, 0);
			rc |= close_w(rw[r], "exit 0");
		}
		return rc | close_w(lw, "exit 0");
	}
	rc |= close_w(rw[3], NULL);
	pause_ms(100);
	for (int i = 0; i < 14; i++) {
		struct val v[] = { { "attrib", 16 + i, NULL, 0 }, { "dev", 0, NULL, 0 } };
		if (i % 2)
			call(rt[2], "cuCtxGetDevice", NULL, 0, 201 /* CUDA_ERROR_INVALID_CONTEXT */);
		else
			call(rt[2], "cuDeviceGetAttribute", v, 2, 1 /* CUDA_ERROR_INVALID_VALUE */);
	}
	enter(rt[2], "ncclCommInitRank", ci, 2);
	call(rt[2], "cudaIpcOpenMemHandle", ip, 1, 1 /* cudaErrorInvalidValue */);
	leave(rt[2], "ncclCommInitRank", 3 /* ncclInternalError */);
	rc |= close_w(rw[2], "exit 1");
	pause_ms(100);
	/* rank 0 waits on its own socketpair (as a launcher's library does):
	 * no wait on another process */
	int32_t sv[2] = { 20, 21 };
	struct val sp[] = { { "domain", 1, NULL, 0 }, { "type", 1, NULL, 0 } };
	enter(rt[0], "socketpair", sp, 2);
	uint8_t *q = nrr_leave_begin(rt[0], 0, 0, 64);
	q = nrr_put_bytes(q, sv, sizeof(sv), 64);
	nrr_leave_end(rt[0], q, false);
	blocked(rt[0], "recv", 20);
	sock_info(rt[1], 8, 2, 1, 40001, 45555);
	blocked(rt[1], "recv", 8);
	rc |= close_w(rw[0], "signal SIGTERM");
	rc |= close_w(rw[1], "signal SIGTERM");
	return rc | close_w(lw, "exit 1");
}

/* threads FAIL NAMED: for diff's thread pairing, one rank 0 with a main
 * thread, a helper thread that only makes socket calls (a launcher's
 * progress thread) and an NCCL thread (accept, recv, then
 * cudaIpcOpenMemHandle: = cudaErrorInvalidValue when FAIL).  The healthy
 * run (FAIL=0) starts the helper first (tid 1101) then the NCCL thread
 * (1102); the failing one the NCCL thread first (2101) then the helper
 * (2102), and each thread's first calls come in another order, so neither
 * their creation order nor their first calls pair them.  NAMED=1: the
 * helper makes a CUDA call too (both are NCCL threads) and the threads
 * are named "NCCL Service  0" and "NCCL Progress 0" (metadata
 * thread.TID): only the names pair them. */
static int threads(const char *dir, bool fail, bool named)
{
	nrr_writer *w = open_proc(dir, 1000, 0, 1, "/opt/job/init_allreduce");
	nrr_tls *m = nrr_writer_thread(w);
	char line[80];
	int n = snprintf(line, sizeof(line), "thread.%d=init_allreduce\n", (int)getpid());
	nrr_writer_add_meta(w, line, (size_t)n);
	struct val ci[] = { { "flags", 0, NULL, 0 } };
	call(m, "cuInit", ci, 1, 0);
	uint32_t base = fail ? 2100 : 1100;
	nrr_tls *nc = NULL, *hp = NULL;
	if (fail)
		nc = nrr_writer_stream(w, base + 1), hp = nrr_writer_stream(w, base + 2);
	else
		hp = nrr_writer_stream(w, base + 1), nc = nrr_writer_stream(w, base + 2);
	if (named) {
		n = snprintf(line, sizeof(line), "thread.%u=NCCL Service  0\nthread.%u=NCCL Progress 0\n",
			     fail ? base + 1 : base + 2, fail ? base + 2 : base + 1);
		nrr_writer_add_meta(w, line, (size_t)n);
		call(hp, "cuCtxGetDevice", NULL, 0, 0);   /* a CUDA thread too: only the names tell them apart */
	}
	struct val sd[] = { { "sockfd", 9, NULL, 0 }, { "buf", 0, "abcd", 4 }, { "len", 4, NULL, 0 } };
	struct val rv[] = { { "sockfd", 9, NULL, 0 }, { "len", 4, NULL, 0 } };
	struct val ac[] = { { "sockfd", 5, NULL, 0 } };
	struct val rn[] = { { "sockfd", 7, NULL, 0 }, { "len", 16, NULL, 0 } };
	struct val ip[] = { { "flags", 1, NULL, 0 } };
	for (int k = 0; k < 2; k++) {
		bool nccl_now = fail ? k == 0 : k == 1;
		if (nccl_now && !fail) {
			call(nc, "accept", ac, 1, 7);
			call(nc, "recv", rn, 2, 16);
		} else if (nccl_now) {
			call(nc, "recv", rn, 2, 16);
			call(nc, "accept", ac, 1, 7);
		} else if (!fail) {
			call(hp, "send", sd, 3, 4);
			call(hp, "recv", rv, 2, 4);
		} else {
			call(hp, "recv", rv, 2, 4);
			call(hp, "send", sd, 3, 4);
		}
	}
	call(nc, "cudaIpcOpenMemHandle", ip, 1, fail ? 1 /* cudaErrorInvalidValue */ : 0);
	return close_w(w, fail ? "exit 1" : "exit 0");
}

/* hostile: metadata and times no real run has: rank 0 says
 * nranks=1000000000, another process is rank 2147483647, and a third's
 * calls are at 2^63 ns and after (a manual clock) */
static int hostile(const char *dir)
{
	char path[4096];
	static const char m0[] = "host=gen\npid=1000\nrank=0\nnranks=1000000000\n";
	static const char m1[] = "host=gen\npid=1001\nrank=2147483647\n";
	static const char m2[] = "host=gen\npid=1002\nrank=1\n";
	const char *metas[3] = { m0, m1, m2 };
	struct val v[] = { { "domain", 2, NULL, 0 } };
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/gen-%d.nrt", dir, i);
		nrr_writer_opts o = { .schema = nrr_builtin_schema, .schema_len = nrr_builtin_schema_len,
				      .meta = metas[i], .meta_len = strlen(metas[i]), .manual_clock = i == 2 };
		nrr_writer *w;
		if (nrr_writer_open(&w, path, &o)) {
			fprintf(stderr, "hang_gen: cannot create %s\n", path);
			return 2;
		}
		nrr_tls *t = nrr_writer_thread(w);
		if (i == 2)
			nrr_tls_set_time(t, 1ull << 63);
		call(t, "socket", v, 1, 7);
		if (i == 2) {
			nrr_tls_set_time(t, UINT64_MAX - 10);
			call(t, "socket", v, 1, 8);
		}
		nrr_writer_set_end(w, "exit 0", false);
		if (nrr_writer_close(w)) {
			fprintf(stderr, "hang_gen: cannot write %s\n", path);
			return 2;
		}
	}
	return 0;
}

/* hostile_env: one rank whose metadata names files (its executable and
 * NCCL's topology file as /dev/zero: read, they would never end),
 * libraries and a loader variable (a trace is data: no command opens or
 * loads any of them), with a CUDA call (replay looks for its cluster) and a connect to
 * a non-loopback address (replay never connects there) */
static int hostile_env(const char *dir)
{
	char path[4096];
	static const char meta[] = "host=gen\npid=1000\nrank=0\nexe=/dev/zero\nenv.NCCL_TOPO_FILE=/dev/zero\n"
				   "env.NCCLRR_TOPO=../../../../../../etc/passwd\nenv.NCCLRR_HOST=0\n"
				   "env.LD_AUDIT=/tmp/ncclrr-evil.so\nenv.LD_PRELOAD=/tmp/ncclrr-evil.so\n"
				   "env.NCCLRR_NET_PLUGIN=/tmp/ncclrr-evil.so\nenv.NCCL_NET_PLUGIN=/tmp/ncclrr-evil.so\n";
	snprintf(path, sizeof(path), "%s/gen-0.nrt", dir);
	nrr_writer *w = open_file(path, meta, (int)strlen(meta));
	nrr_tls *t = nrr_writer_thread(w);
	struct val init[] = { { "Flags", 0, NULL, 0 } };
	call(t, "cuInit", init, 1, 0);
	struct val sv[] = { { "domain", 2, NULL, 0 }, { "type", 1, NULL, 0 } };
	call(t, "socket", sv, 2, 7);
	struct sockaddr_in far = { .sin_family = AF_INET, .sin_port = htons(29500) };
	inet_pton(AF_INET, "10.1.2.3", &far.sin_addr);
	struct val cv[] = { { "sockfd", 7, NULL, 0 }, { "addr", 0, &far, sizeof(far) }, { "addrlen", sizeof(far), NULL, 0 } };
	call(t, "connect", cv, 3, 0);
	return close_w(w, "exit 0");
}

/* killed_retry: a 4-rank job; rank 1 is killed outright (no end) after
 * connects that were refused and retried and a stream polled: its last
 * call whose count a rerun reaches too is cuMemAlloc_v2 #1 (the connects
 * after a refused one, and the polls, are counted by timing) */
static int killed_retry(const char *dir)
{
	nrr_writer *w[4];
	struct val init[] = { { "Flags", 0, NULL, 0 } };
	for (int r = 0; r < 4; r++) {
		w[r] = open_rank(dir, r, 4);
		call(nrr_writer_thread(w[r]), "cuInit", init, 1, 0);
	}
	nrr_tls *t = nrr_writer_thread(w[1]);
	struct sockaddr_in a = addr(29500);
	struct val cv[] = { { "sockfd", 7, NULL, 0 }, { "addr", 0, &a, sizeof(a) }, { "addrlen", sizeof(a), NULL, 0 } };
	call(t, "connect", cv, 3, 0);
	struct val mv[] = { { "bytesize", 4096, NULL, 0 } };
	call(t, "cuMemAlloc_v2", mv, 1, 0);
	call_err(t, "connect", cv, 3, -1, ECONNREFUSED);
	/* in progress, then SO_ERROR says refused */
	call_err(t, "connect", cv, 3, -1, EINPROGRESS);
	struct val gv[] = { { "sockfd", 7, NULL, 0 }, { "level", SOL_SOCKET, NULL, 0 }, { "optname", SO_ERROR, NULL, 0 } };
	enter(t, "getsockopt", gv, 3);
	int refused = ECONNREFUSED;
	uint8_t *p = nrr_leave_begin(t, 0, 0, 64);
	p = nrr_put_bytes(p, &refused, sizeof(refused), 64);
	p = nrr_put_uvar(p, sizeof(refused));
	nrr_leave_end(t, p, false);
	call(t, "connect", cv, 3, 0);
	struct val qv[] = { { "hStream", 0x1000, NULL, 0 } };
	call(t, "cuStreamQuery", qv, 1, 0);
	int rc = close_w(w[1], NULL);
	for (int r = 0; r < 4; r++)
		if (r != 1 && !rc)
			rc = close_w(w[r], "exit 0");
	return rc;
}

static int probes(const char *dir, int n)
{
	for (int r = 0; r < 2; r++) {
		nrr_writer *w = open_rank(dir, r, 2);
		nrr_tls *t = nrr_writer_thread(w);
		for (int i = 0; i < n; i++) {
			char sym[32];
			int len = snprintf(sym, sizeof(sym), "cuSym%d", i);
			struct val v[] = { { "symbol", 0, sym, (size_t)len + 1 }, { "cudaVersion", 12040, NULL, 0 } };
			enter(t, "cuGetProcAddress", v, 2);
			leave(t, "cuGetProcAddress", i % 2 ? 0 : 500 /* CUDA_ERROR_NOT_FOUND */);
		}
		struct val c[] = { { "sockfd", 7, NULL, 0 } };
		for (int i = 0; i < (r == 0 ? 4 : 1); i++) {
			enter(t, "connect", c, 1);
			uint8_t *p = nrr_leave_begin(t, i < 3 && r == 0 ? -1 : 0, i < 3 && r == 0 ? ECONNREFUSED : 0, 16);
			nrr_leave_end(t, p, false);
		}
		struct timespec ts = { 0, 50 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		struct val m[] = { { "bytesize", 1 << 20, NULL, 0 } };
		enter(t, "cuMemAlloc_v2", m, 1);
		leave(t, "cuMemAlloc_v2", r == 1 ? 2 /* CUDA_ERROR_OUT_OF_MEMORY */ : 0);
		if (nrr_writer_close(w)) {
			fprintf(stderr, "hang_gen: cannot write %s\n", dir);
			return 2;
		}
	}
	return 0;
}

/* nocall: rank 0 calls cuInit and exits 0; rank 1's trace holds no call
 * at all and no end (a process killed before its first call reached the
 * file), only the end_ts of its last write. */
static int nocall(const char *dir)
{
	nrr_writer *w0 = open_rank(dir, 0, 2), *w1 = open_rank(dir, 1, 2);
	struct val init[] = { { "Flags", 0, NULL, 0 } };
	call(nrr_writer_thread(w0), "cuInit", init, 1, 0);
	int rc = close_w(w1, NULL);
	return rc ? rc : close_w(w0, "exit 0");
}

/* nocall_after: rank 0's cuInit fails and it exits 1; rank 1's file holds
 * its start and nothing else, no tail (mpirun's SIGKILL cut short the one
 * tail of a rank that started last): when it died is unknown */
static int nocall_after(const char *dir)
{
	nrr_writer *w0 = open_rank(dir, 0, 2), *w1 = open_rank(dir, 1, 2);
	struct val init[] = { { "Flags", 0, NULL, 0 } };
	call(nrr_writer_thread(w0), "cuInit", init, 1, 100);   /* CUDA_ERROR_NO_DEVICE */
	nrr_writer_abandon(w1);
	return close_w(w0, "exit 1");
}

/* stopped: a 4-rank job `ncclrr run --timeout 3.3` stopped (the launcher's
 * trace, end exit 124).  Rank 1's cuMemAlloc_v2 fails and it exits 1 at
 * once; rank 2 then prints NCCL's error trail (a connect to rank 1, gone,
 * refused until it gave up) and is killed at the stop before its init
 * returns; rank 3's recv fails, it prints a WARN and its ncclCommInitRank
 * returns ncclRemoteError only after the stop (its peers killed under
 * it); ranks 0, 2 and 3 end by SIGTERM. */
static int stopped(const char *dir)
{
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	char path[4096];
	static const char lmeta[] = "host=gen\npid=999\nargv=ncclrr run --topo c.xml --timeout 3.3 -- prog\n";
	snprintf(path, sizeof(path), "%s/gen-999.nrt", dir);
	nrr_writer *l = open_file(path, lmeta, (int)sizeof(lmeta) - 1), *w[4];
	struct val init[] = { { "Flags", 0, NULL, 0 } };
	for (int r = 0; r < 4; r++) {
		w[r] = open_rank(dir, r, 4);
		call(nrr_writer_thread(w[r]), "cuInit", init, 1, 0);
	}
	struct val mv[] = { { "bytesize", 1 << 20, NULL, 0 } };
	call(nrr_writer_thread(w[1]), "cuMemAlloc_v2", mv, 1, 2);   /* CUDA_ERROR_OUT_OF_MEMORY */
	int rc = close_w(w[1], "exit 1");
	pause_ms(50);
	static const char warn[] = "gen:1002:1002 [2] misc/socket.cc:484 NCCL WARN socketStartConnect: exceeded retries (20000)";
	static const char trail[] = "gen:1002:1002 [2] NCCL INFO misc/socket.cc:567 -> 6";
	nrr_log(nrr_writer_thread(w[2]), 2, warn, sizeof(warn) - 1);
	nrr_log(nrr_writer_thread(w[2]), 3, trail, sizeof(trail) - 1);
	/* past the stop, 3.3 s after the launcher's start */
	for (;;) {
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >= 3400)
			break;
		pause_ms(20);
	}
	struct val rv[] = { { "sockfd", 9, NULL, 0 }, { "len", 16, NULL, 0 } };
	call_err(nrr_writer_thread(w[3]), "recv", rv, 2, -1, ECONNRESET);
	static const char w3[] = "gen:1003:1003 [3] misc/socket.cc:49 NCCL WARN socketProgress: Connection reset by peer";
	nrr_log(nrr_writer_thread(w[3]), 2, w3, sizeof(w3) - 1);
	call(nrr_writer_thread(w[3]), "ncclCommInitRank", NULL, 0, 6);   /* ncclRemoteError */
	for (int r = 0; r < 4; r++)
		if (r != 1 && !rc)
			rc = close_w(w[r], "signal SIGTERM");
	return rc ? rc : close_w(l, "exit 124");
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[2], "probes"))
		return probes(argv[1], atoi(argv[3]));
	if (argc == 3 && !strcmp(argv[2], "nocall"))
		return nocall(argv[1]);
	if (argc == 3 && !strcmp(argv[2], "nocall_after"))
		return nocall_after(argv[1]);
	if (argc == 3 && !strcmp(argv[2], "stopped"))
		return stopped(argv[1]);
	if (argc == 3 && !strcmp(argv[2], "killed_retry"))
		return killed_retry(argv[1]);
	if (argc == 3 && !strcmp(argv[2], "hostile"))
		return hostile(argv[1]);
	if (argc == 3 && !strcmp(argv[2], "hostile_env"))
		return hostile_env(argv[1]);
	if (argc == 5 && !strcmp(argv[2], "threads"))
		return threads(argv[1], atoi(argv[3]) != 0, atoi(argv[4]) != 0);
	if (argc == 4 && !strcmp(argv[2], "mpi"))
		return mpi(argv[1], atoi(argv[3]) != 0);
	if (argc == 3 && !strcmp(argv[2], "mixed"))
		return mixed(argv[1]);
	if (argc == 4 && !strcmp(argv[2], "unseen"))
		return unseen(argv[1], atoi(argv[3]) != 0);
	if (argc < 4) {
		fprintf(stderr, "usage: hang_gen DIR cycle N | hang_gen DIR scale N K | hang_gen DIR mixed | hang_gen DIR unseen SEND | hang_gen DIR mpi FAULT | hang_gen DIR threads FAIL NAMED | hang_gen DIR hostile | hang_gen DIR hostile_env | hang_gen DIR killed_retry | hang_gen DIR nocall | hang_gen DIR nocall_after | hang_gen DIR stopped\n");
		return 2;
	}
	const char *dir = argv[1];
	int n = atoi(argv[3]), k = argc > 4 ? atoi(argv[4]) : -1;
	bool cycle = !strcmp(argv[2], "cycle");
	if (n < 2 || (!cycle && (k <= 0 || k >= n))) {
		fprintf(stderr, "hang_gen: bad arguments\n");
		return 2;
	}
	for (int i = 0; i < n; i++) {
		int r = cycle || i < k ? i : i + 1 < n ? i + 1 : k;   /* scale: rank K is written last */
		nrr_writer *w = open_rank(dir, r, n);
		nrr_tls *t = nrr_writer_thread(w);
		if (cycle) {
			/* connected to the next rank (port 30000+next), accepted the previous one */
			sock_info(t, 10, 2, 2, 20000 + r, 30000 + (r + 1) % n);
			int prev = (r + n - 1) % n;
			sock_info(t, 11, 3, 2, 30000 + r, 20000 + prev);
			blocked(t, "recv", 10);
		} else if (r == 0) {
			sock_info(t, 5, 1, 0, 29500, 0);
			for (int j = 1; j < n; j++)
				if (j != k)
					sock_info(t, 100 + j, 3, 1, 29500, 40000 + j);
			blocked(t, "accept", 5);
		} else if (r != k) {
			sock_info(t, 8, 2, 1, 40000 + r, 29500);
			blocked(t, "recv", 8);
		} else {
			struct val v[] = { { "domain", 2, NULL, 0 } };
			enter(t, "socket", v, 1);
			leave(t, "socket", 7);
		}
		if (nrr_writer_close(w)) {
			fprintf(stderr, "hang_gen: cannot write rank %d\n", r);
			return 2;
		}
	}
	return 0;
}
