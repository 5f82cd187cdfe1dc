/* SPDX-License-Identifier: MIT */
/*
 * test_api.c - the built-in schema generated from formats/api/ parses and
 * covers every domain, and the generated typed encoders record what the
 * description says (out-params at leave, buffers by their length argument
 * or the return value, sockaddrs, coalesced polling).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "nrr_api_gen.h"
#include "callfmt.h"
#include "ncclrr_config.h"
#include "../lib/check.h"
#if NCCLRR_HAVE_VERBS
#include <infiniband/verbs.h>
#endif

static unsigned count_domain(const nrr_schema *s, const char *dom)
{
	unsigned n = 0;
	for (uint32_t i = 1; i <= nrr_schema_nfns(s); i++)
		n += strcmp(nrr_schema_fn(s, i)->domain, dom) == 0;
	return n;
}

static const nrr_arg_schema *arg(const nrr_fn_schema *f, const char *name)
{
	for (unsigned i = 0; f && i < f->nargs; i++)
		if (strcmp(f->args[i].name, name) == 0)
			return &f->args[i];
	return NULL;
}

static void test_schema(void)
{
	const nrr_schema *s = nrr_builtin();
	CHECK_FATAL(s, "built-in schema parses");
	CHECK(nrr_schema_nfns(s) == NRR_FN_COUNT, "ids match the generated header");
	static const struct { const char *dom; unsigned min; } doms[] = {
		{ "cuda_driver", 100 }, { "cuda_runtime", 55 }, { "nvml", 20 }, { "verbs", 30 },
		{ "socket", 20 }, { "nccl", 35 }, { "net", 18 }, { "proxy", 2 },
	};
	for (size_t i = 0; i < sizeof(doms) / sizeof(doms[0]); i++)
		CHECK(count_domain(s, doms[i].dom) >= doms[i].min, "domain %s has %u functions", doms[i].dom, count_domain(s, doms[i].dom));

	const nrr_fn_schema *f = nrr_schema_fn_by_name(s, "cuMemImportFromShareableHandle");
	CHECK_FATAL(f && f->id == NRR_FN_cuMemImportFromShareableHandle, "cuMemImportFromShareableHandle");
	CHECK(f->ret == NRR_RET_CURESULT && strcmp(f->ret_table, "CUresult") == 0, "CUresult convention");
	CHECK(arg(f, "handle")->dir == NRR_DIR_OUT && arg(f, "handle")->hflags == NRR_HANDLE_CREATE, "handle is created");
	CHECK(arg(f, "osHandle")->fmt == NRR_FMT_FD, "osHandle is an fd");
	CHECK(arg(f, "shHandleType")->fmt == NRR_FMT_ENUM && strcmp(nrr_enum_name(arg(f, "shHandleType")->table, 1),
		"CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR") == 0, "handle type enum");
	CHECK(strcmp(nrr_enum_name(f->rtable, 1), "CUDA_ERROR_INVALID_VALUE") == 0 &&
	      strcmp(nrr_enum_name(f->rtable, 600), "CUDA_ERROR_NOT_READY") == 0, "CUresult values are the driver's");
	f = nrr_schema_fn_by_name(s, "ncclCommInitRank");
	CHECK(f && f->ret == NRR_RET_NCCL && (f->flags & NRR_FN_BLOCKING) && arg(f, "commId")->fmt == NRR_FMT_BYTES, "ncclCommInitRank");
	CHECK(strcmp(nrr_enum_name(f->rtable, 3), "ncclInternalError") == 0, "ncclResult_t values");
	f = nrr_schema_fn_by_name(s, "ibv_poll_cq");
	CHECK(f && (f->flags & NRR_FN_POLL) && f->ret == NRR_RET_INT, "ibv_poll_cq polls");
	f = nrr_schema_fn_by_name(s, "ncclNet_test");
	CHECK(f && (f->flags & NRR_FN_POLL) && arg(f, "done")->dir == NRR_DIR_OUT, "net test polls on done");
	f = nrr_schema_fn_by_name(s, "connect");
	CHECK(f && f->ret == NRR_RET_ERRNO && arg(f, "addr")->fmt == NRR_FMT_SOCKADDR, "connect");
	f = nrr_schema_fn_by_name(s, "ibv_reg_mr");
	CHECK(f && f->ret == NRR_RET_PTR && arg(f, "access")->fmt == NRR_FMT_FLAGS, "ibv_reg_mr");
	f = nrr_schema_fn_by_name(s, "ncclProxyRequest");
	CHECK(f && strcmp(nrr_enum_name(arg(f, "type")->table, 4), "ncclProxyMsgConnect") == 0, "proxy Connect");
	f = nrr_schema_fn_by_name(s, "ncclProxyResponse");
	CHECK(f && f->ret == NRR_RET_NCCL, "a proxy answer's result is its retcode");
	/* every enum/flags table an argument or a result names resolves */
	unsigned unresolved = 0, structs = 0;
	for (uint32_t i = 1; i <= nrr_schema_nfns(s); i++) {
		const nrr_fn_schema *g = nrr_schema_fn(s, i);
		if (g->ret_table && !g->rtable)
			unresolved++;
		for (unsigned k = 0; k < g->nargs; k++) {
			const nrr_arg_schema *x = &g->args[k];
			if ((x->fmt == NRR_FMT_ENUM || x->fmt == NRR_FMT_FLAGS) && (!x->kind || !x->table))
				unresolved++;
			if (x->fmt == NRR_FMT_HANDLE && !x->kind)
				unresolved++;
		}
	}
	CHECK(unresolved == 0, "%u enum tables / handle kinds unresolved", unresolved);
	f = nrr_schema_fn_by_name(s, "cuMemCreate");
	structs += f && arg(f, "prop")->fmt == NRR_FMT_BYTES && arg(f, "prop")->dir == NRR_DIR_IN;
	f = nrr_schema_fn_by_name(s, "cudaGetDeviceProperties_v2");
	structs += f && arg(f, "prop")->fmt == NRR_FMT_BYTES && arg(f, "prop")->dir == NRR_DIR_OUT;
	f = nrr_schema_fn_by_name(s, "ibv_query_port");
	structs += f && arg(f, "port_attr")->fmt == NRR_FMT_BYTES;
	CHECK(structs == 3, "structs recorded by content (%u of 3)", structs);
	CHECK(nrr_schema_fn_by_name(s, "ncclNet_setNetAttr") && nrr_schema_fn_by_name(s, "ncclNet_finalize"), "ncclNet v11 members");
	CHECK(nrr_schema_fn_by_name(s, "cuGetProcAddress_v2") && nrr_schema_fn_by_name(s, "cudaGetDriverEntryPoint") &&
	      nrr_schema_fn_by_name(s, "nvmlDeviceGetHandleByPciBusId_v2") && nrr_schema_fn_by_name(s, "ncclCommSplit") &&
	      nrr_schema_fn_by_name(s, "ibv_post_send") && nrr_schema_fn_by_name(s, "accept4") &&
	      nrr_schema_fn_by_name(s, "ncclNet_regMrDmaBuf") && nrr_schema_fn_by_name(s, "getifaddrs"), "coverage samples");
}

/* Make @path (a mkstemp template) a name no file has, for a writer to create. */
static void free_name(char *path)
{
	int fd = mkstemp(path);
	CHECK_FATAL(fd >= 0, "mkstemp");
	close(fd);
	unlink(path);
}

/* @lazy: the tracer's way (format 3.0), the schema written on first use */
static void test_encoders(bool lazy)
{
	char path[] = "/tmp/nrr-api-XXXXXX";
	free_name(path);
	nrr_writer *w;
	nrr_writer_opts o = { .schema = nrr_builtin_schema, .schema_len = nrr_builtin_schema_len };
	if (lazy)
		o = (nrr_writer_opts){ .schema_parts = &nrr_builtin_parts };
	CHECK_FATAL(nrr_writer_open(&w, path, &o) == 0, "open");
	nrr_tls *t = nrr_writer_thread(w);

	CUmemGenericAllocationHandle h = 0;
	nrr_rec_cuMemImportFromShareableHandle_enter(t, &h, (void *)(intptr_t)17, 1);
	h = 0x5555;   /* what a driver would have written */
	nrr_rec_cuMemImportFromShareableHandle_leave(t, 1, 0, &h, (void *)(intptr_t)17, 1);

	char buf[16] = "abcdefghij";
	nrr_rec_recv_enter(t, 5, buf, sizeof(buf), 0);
	nrr_rec_recv_leave(t, 4, 0, 5, buf, sizeof(buf), 0);   /* 4 bytes received */

	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(4242) };
	sa.sin_addr.s_addr = htonl(0x7f000001);
	nrr_rec_connect_enter(t, 9, (struct sockaddr *)&sa, sizeof(sa));
	nrr_rec_connect_leave(t, -1, 111, 9, (struct sockaddr *)&sa, sizeof(sa));

	for (int i = 0; i < 100; i++) {   /* empty polls coalesce into one record */
		nrr_rec_ibv_poll_cq_enter(t, (struct ibv_cq *)0x1234, 4, NULL);
		nrr_rec_ibv_poll_cq_leave(t, 0, 0, (struct ibv_cq *)0x1234, 4, NULL);
	}
	int done = 0;
	nrr_rec_ncclNet_test_enter(t, (void *)0x99, &done, NULL);
	nrr_rec_ncclNet_test_leave(t, 0, 0, (void *)0x99, &done, NULL);
	nrr_rec_ncclNet_test_enter(t, (void *)0x99, &done, NULL);
	nrr_rec_ncclNet_test_leave(t, 0, 0, (void *)0x99, &done, NULL);
	nrr_rec_cuDeviceGetPCIBusId_enter(t, NULL, 13, 0);
	char bus[13] = "0000:18:00.0";
	nrr_rec_cuDeviceGetPCIBusId_leave(t, 0, 0, bus, 13, 0);
	CUmemAllocationProp prop;
	memset(&prop, 0, sizeof(prop));
	prop.type = 1;
	prop.location.id = 3;
	nrr_rec_cuMemCreate_enter(t, &h, 1 << 21, &prop, 0);
	nrr_rec_cuMemCreate_leave(t, 0, 0, &h, 1 << 21, &prop, 0);
	/* the kernel reports 300 bytes: the encoder reads at most 128 */
	struct { struct sockaddr_in6 a; char pad[200]; } big;
	memset(&big, 0, sizeof(big));
	socklen_t salen = 300;
	nrr_rec_getsockname_enter(t, 3, (struct sockaddr *)&big, &salen);
	nrr_rec_getsockname_leave(t, 0, 0, 3, (struct sockaddr *)&big, &salen);
	/* a non-blocking socket's EAGAIN is "not ready" (poll=err:EAGAIN): 50 in a
	 * row are one record; another fd, or a real error, are not folded in */
	for (int i = 0; i < 50; i++) {
		nrr_rec_recv_enter(t, 5, buf, sizeof(buf), MSG_DONTWAIT);
		nrr_rec_recv_leave(t, -1, EAGAIN, 5, buf, sizeof(buf), MSG_DONTWAIT);
	}
	nrr_rec_recv_enter(t, 6, buf, sizeof(buf), MSG_DONTWAIT);
	nrr_rec_recv_leave(t, -1, EAGAIN, 6, buf, sizeof(buf), MSG_DONTWAIT);
	for (int i = 0; i < 2; i++) {
		nrr_rec_recv_enter(t, 6, buf, sizeof(buf), MSG_DONTWAIT);
		nrr_rec_recv_leave(t, -1, ECONNRESET, 6, buf, sizeof(buf), MSG_DONTWAIT);
	}
	CHECK_FATAL(nrr_writer_close(w) == 0, "close");

	nrr_reader *r;
	nrr_diag d;
	CHECK_FATAL(nrr_reader_open(&r, path, &d) == 0, "reopen: %s", d.msg);
	nrr_cursor *c;
	CHECK_FATAL(nrr_cursor_open(&c, r, 0) == 0, "cursor");
	const nrr_call *call;
	char line[512];
	FILE *mf;

	CHECK_FATAL(nrr_cursor_next(c, &call) == 0, "call 1");
	CHECK(call->result == 1 && call->args[0].u == 0x5555 && (int64_t)call->args[1].u == 17 && call->args[2].u == 1, "import args");
	mf = fmemopen(line, sizeof(line), "w");
	nrr_format_call(mf, call, 0, "h:1/1");
	fclose(mf);
	CHECK(strstr(line, "cuMemImportFromShareableHandle(handle=0x5555, osHandle=fd:17, shHandleType=CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) = CUDA_ERROR_INVALID_VALUE (1)"),
	      "dump line: %s", line);
	CHECK_FATAL(nrr_cursor_next(c, &call) == 0, "call 2");
	CHECK(call->result == 4 && call->args[1].total == 4 && memcmp(call->args[1].p, "abcd", 4) == 0 && call->args[2].u == 16, "recv records what was received");
	CHECK_FATAL(nrr_cursor_next(c, &call) == 0, "call 3");
	mf = fmemopen(line, sizeof(line), "w");
	nrr_format_call(mf, call, 0, "h:1/1");
	fclose(mf);
	CHECK(strstr(line, "connect(sockfd=9, addr=127.0.0.1:4242, addrlen=16) = -1 ECONNREFUSED"), "connect line: %s", line);
	CHECK(nrr_call_failed(call), "connect failed");
	CHECK_FATAL(nrr_cursor_next(c, &call) == 0, "call 4");
	CHECK(strcmp(call->fn->name, "ibv_poll_cq") == 0 && call->repeat == 99 && call->seq == 4, "100 polls in one record (repeat %llu)",
	      (unsigned long long)call->repeat);
	CHECK(!nrr_call_failed(call), "empty poll is not a failure");
	CHECK_FATAL(nrr_cursor_next(c, &call) == 0, "call 5");
	CHECK(strcmp(call->fn->name, "ncclNet_test") == 0 && call->repeat == 1 && call->seq == 104, "net test done=0 coalesced");
	CHECK_FATAL(nrr_cursor_next(c, &call) == 0, "call 6");
	CHECK(call->args[0].len == 12 && memcmp(call->args[0].p, "0000:18:00.0", 12) == 0, "out string");
	CHECK_FATAL(nrr_cursor_next(c, &call) == 0, "call 7");
	CHECK(strcmp(call->fn->name, "cuMemCreate") == 0 && call->args[2].total == 32 && call->args[2].len == 32 &&
	      call->args[2].p[0] == 1 && call->args[2].p[12] == 3, "cuMemCreate prop bytes");
	CHECK_FATAL(nrr_cursor_next(c, &call) == 0, "call 8");
	CHECK(strcmp(call->fn->name, "getsockname") == 0 && call->args[1].total == 128 && call->args[2].u == 300,
	      "getsockname: sockaddr capped at 128 (total %u)", (unsigned)call->args[1].total);
	CHECK_FATAL(nrr_cursor_next(c, &call) == 0, "call 9");
	CHECK(strcmp(call->fn->name, "recv") == 0 && call->args[0].u == 5 && call->repeat == 49 && call->err == EAGAIN,
	      "50 EAGAIN recv on fd 5 in one record (repeat %llu)", (unsigned long long)call->repeat);
	CHECK_FATAL(nrr_cursor_next(c, &call) == 0, "call 10");
	CHECK(strcmp(call->fn->name, "recv") == 0 && call->args[0].u == 6 && call->repeat == 0, "EAGAIN on fd 6: its own record");
	for (int i = 0; i < 2; i++) {
		CHECK_FATAL(nrr_cursor_next(c, &call) == 0, "call %d", 11 + i);
		CHECK(call->err == ECONNRESET && call->repeat == 0, "ECONNRESET %d is not coalesced (repeat %llu)", i,
		      (unsigned long long)call->repeat);
	}
	CHECK(nrr_cursor_next(c, &call) == NRR_EEOF, "end");
	nrr_cursor_close(c);
	/* written on first use: the 8 functions used, numbered in that order,
	 * with the tables they name (the result tables, the handle type) */
	const nrr_schema *s = nrr_reader_schema(r);
	if (lazy)
		CHECK(nrr_schema_nfns(s) == 8 && !strcmp(nrr_schema_fn(s, 1)->name, "cuMemImportFromShareableHandle") &&
			      !strcmp(nrr_schema_fn(s, 2)->name, "recv") && !strcmp(nrr_schema_fn(s, 8)->name, "getsockname") &&
			      !nrr_schema_fn_by_name(s, "cuInit"),
		      "lazy schema: %u functions in order of use", nrr_schema_nfns(s));
	else
		CHECK(nrr_schema_nfns(s) == NRR_FN_COUNT, "whole schema");
	nrr_reader_close(r);
	unlink(path);
}

/* Lazy schema under threads racing to first use the same functions, in
 * full mode with provisional tails and in ring mode (every dump rewrites
 * the data part, and each must describe every function again): every
 * call reads back under its name. */
struct lazy_arg {
	nrr_writer *w;
	int k;
};

static void *lazy_thread(void *arg)
{
	struct lazy_arg *a = arg;
	nrr_tls *t = nrr_writer_thread(a->w);
	for (int i = 0; i < 2000; i++) {
		int dev = 0, n = 0;
		if ((i + a->k) % 3 == 0) {
			nrr_rec_cuDeviceGetCount_enter(t, &n);
			n = 8;
			nrr_rec_cuDeviceGetCount_leave(t, 0, 0, &n);
		} else if ((i + a->k) % 3 == 1) {
			nrr_rec_cuDeviceGet_enter(t, &dev, i % 8);
			nrr_rec_cuDeviceGet_leave(t, 0, 0, &dev, i % 8);
		} else {
			nrr_rec_close_enter(t, 100 + i);
			nrr_rec_close_leave(t, -1, EBADF, 100 + i);
		}
		if (i == 1000 && a->k == 0)
			nrr_writer_dump(a->w, 2000);
	}
	return NULL;
}

static void test_lazy_threads(bool ring)
{
	char path[] = "/tmp/nrr-lazy-XXXXXX";
	free_name(path);
	nrr_writer *w;
	nrr_writer_opts o = { .schema_parts = &nrr_builtin_parts, .chunk_size = 4096, .sync_ns = 1000000,
			      .ring_bytes = ring ? 1 << 20 : 0 };
	CHECK_FATAL(nrr_writer_open(&w, path, &o) == 0, "open");
	pthread_t th[4];
	struct lazy_arg a[4];
	for (int i = 0; i < 4; i++) {
		a[i] = (struct lazy_arg){ w, i };
		pthread_create(&th[i], NULL, lazy_thread, &a[i]);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	CHECK_FATAL(nrr_writer_close(w) == 0, "close");
	nrr_reader *r;
	nrr_diag d;
	CHECK_FATAL(nrr_reader_open(&r, path, &d) == 0, "reopen (%s): %s", ring ? "ring" : "full", d.msg);
	const nrr_schema *s = nrr_reader_schema(r);
	CHECK(nrr_schema_nfns(s) == 3, "%s: 3 functions described once (%u)", ring ? "ring" : "full", nrr_schema_nfns(s));
	size_t calls = 0, bad = 0;
	for (uint32_t si = 0; si < nrr_reader_info(r)->nstreams; si++) {
		nrr_cursor *c;
		const nrr_call *call;
		CHECK_FATAL(nrr_cursor_open(&c, r, si) == 0, "cursor");
		while (nrr_cursor_next(c, &call) == 0) {
			calls++;
			const char *n = call->fn->name;
			bad += strcmp(n, "cuDeviceGetCount") && strcmp(n, "cuDeviceGet") && strcmp(n, "close");
		}
		nrr_cursor_close(c);
	}
	CHECK(bad == 0 && calls == 8000, "%s: %zu calls read back, %zu misnamed", ring ? "ring" : "full",
	      calls, bad);
	nrr_reader_close(r);
	unlink(path);
}

/* custom:msghdr keeps msg_name after the fds; records without it (older
 * tracers) still decode. */
static void test_msghdr(void)
{
	uint8_t buf[NRR_CUSTOM_MAX];
	struct sockaddr_un to = { .sun_family = AF_UNIX };
	memcpy(to.sun_path + 1, "ncclrr-conn-setup-x-4", 21);
	socklen_t tolen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + 21);
	char ch = 'f';
	struct iovec iov = { &ch, 1 };
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct msghdr m = { .msg_name = &to, .msg_namelen = tolen, .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	int xfd = 42;
	memcpy(CMSG_DATA(cm), &xfd, sizeof(int));

	size_t n = nrr_custom_msghdr(buf, &m, 0);   /* sendmsg: at enter */
	nrr_value v = { .p = buf, .len = (uint32_t)n, .total = (uint32_t)n };
	nrr_msghdr_rec r;
	CHECK_FATAL(nrr_msghdr_decode(&v, &r) == 0, "decode sendmsg");
	CHECK(r.len == 1 && r.head_len == 1 && r.head[0] == 'f' && r.nfd == 1 && r.fds[0] == 42, "data and fds");
	CHECK(r.has_name && r.name_len == tolen && memcmp(r.name, &to, tolen) == 0, "name kept (%u bytes)", r.name_len);

	/* recvmsg that failed: the kernel filled no name */
	n = nrr_custom_msghdr(buf, &m, -1);
	v.len = v.total = (uint32_t)n;
	CHECK(nrr_msghdr_decode(&v, &r) == 0 && r.has_name && r.name_len == 0 && !r.name, "failed recvmsg: no name");
	/* no msg_name */
	m.msg_name = NULL;
	m.msg_namelen = 0;
	n = nrr_custom_msghdr(buf, &m, 1);
	v.len = v.total = (uint32_t)n;
	CHECK(nrr_msghdr_decode(&v, &r) == 0 && r.has_name && r.name_len == 0, "NULL msg_name: length 0");
	/* an older record ends after the fds: still decodes, without a name */
	v.len = v.total = (uint32_t)n - 1;
	CHECK(nrr_msghdr_decode(&v, &r) == 0 && !r.has_name && r.nfd == 1 && r.fds[0] == 42, "old layout decodes");
	/* a name longer than what is stored is an error, not an overread */
	m.msg_name = &to;
	m.msg_namelen = tolen;
	n = nrr_custom_msghdr(buf, &m, 0);
	v.len = v.total = (uint32_t)n - 3;
	CHECK(nrr_msghdr_decode(&v, &r) == NRR_ETRUNC, "truncated name: NRR_ETRUNC");
	/* dump shows it decoded */
	const nrr_fn_schema *fn = nrr_schema_fn_by_name(nrr_builtin(), "sendmsg");
	CHECK_FATAL(fn != NULL, "sendmsg in the schema");
	nrr_call c;
	memset(&c, 0, sizeof(c));
	c.fn = fn;
	c.done = true;
	c.result = 1;
	c.present = 1u << 1;
	c.args[1].p = buf;
	c.args[1].len = c.args[1].total = (uint32_t)n;
	char line[512];
	FILE *mf = fmemopen(line, sizeof(line), "w");
	nrr_format_args(mf, &c);
	fclose(mf);
	CHECK(strstr(line, "msg={len=1, head=66, fds=[42], name=unix:@\"ncclrr-conn-setup-x-4\"}"), "dump: %s", line);
}

/* a post's work requests as the tracer writes them (custom:send_wr /
 * recv_wr) decode to what was posted (nrr_wr_decode: diff, replay) */
static void test_wr(void)
{
#if NCCLRR_HAVE_VERBS
	uint8_t buf[NRR_CUSTOM_MAX];
	struct ibv_sge s0[2] = { { 0x7f0000001000, 4096, 0x11 }, { 0x7f0000003000, 100, 0x12 } }, s1 = { 0x7f0000009000, 8, 0x13 };
	struct ibv_send_wr w1 = { .wr_id = 9, .sg_list = &s1, .num_sge = 1, .opcode = IBV_WR_SEND };
	struct ibv_send_wr w0 = { .wr_id = 8, .next = &w1, .sg_list = s0, .num_sge = 2, .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
				  .send_flags = IBV_SEND_SIGNALED, .imm_data = 77 };
	w0.wr.rdma.remote_addr = 0x5000;
	w0.wr.rdma.rkey = 0x99;
	size_t n = nrr_custom_send_wr(buf, &w0, 0);
	nrr_value v = { .p = buf, .len = (uint32_t)n, .total = (uint32_t)n };
	nrr_wr_rec w[NRR_ENTRIES_MAX];
	enum nrr_sges sges;
	CHECK_FATAL(nrr_wr_decode(&v, true, w, &sges) == 2 && sges == NRR_SGES_KEPT, "send_wr: 2 requests with their sges");
	CHECK(w[0].f[0] == 8 && w[0].f[1] == IBV_WR_RDMA_WRITE_WITH_IMM && w[0].f[3] == 77 && w[0].f[4] == 2 &&
	      w[0].f[5] == 4196 && w[0].f[6] == 0x5000 && w[0].f[7] == 0x99, "send_wr: the first request's fields");
	CHECK(w[0].nsge == 2 && w[0].sge[1].addr == 0x7f0000003000 && w[0].sge[1].len == 100 && w[0].sge[1].lkey == 0x12 &&
	      w[1].nsge == 1 && w[1].sge[0].lkey == 0x13, "send_wr: the sges");
	struct ibv_recv_wr r = { .wr_id = 5, .sg_list = &s1, .num_sge = 1 };
	n = nrr_custom_recv_wr(buf, &r, 0);
	v.len = v.total = (uint32_t)n;
	CHECK_FATAL(nrr_wr_decode(&v, false, w, &sges) == 1 && sges == NRR_SGES_KEPT && w[0].f[0] == 5 && w[0].f[2] == 8 &&
		    w[0].nsge == 1 && w[0].sge[0].addr == 0x7f0000009000, "recv_wr with its sge");
	v.len = v.total = 1 + 3;   /* count, then wr_id, num_sge, length: where an older trace ends */
	CHECK(nrr_wr_decode(&v, false, w, &sges) == 1 && sges == NRR_SGES_NONE && w[0].nsge == 0 && w[0].f[0] == 5,
	      "recv_wr before the trailer");
	CHECK(strstr(nrr_sges_why(sges), "before the sge trailer"), "why: %s", nrr_sges_why(sges));
	v.len = v.total = (uint32_t)n - 1;   /* the last sge cut */
	CHECK(nrr_wr_decode(&v, false, w, &sges) == 1 && sges == NRR_SGES_CUT && w[0].nsge == 0, "a cut trailer: no sges");
	/* too long for the trailer: the writer marks which limit (a chain
	 * length of 0, then why), the requests stay as they were */
	struct ibv_recv_wr chain[NRR_SGE_WRS + 1];
	for (int i = 0; i <= NRR_SGE_WRS; i++)
		chain[i] = (struct ibv_recv_wr){ .wr_id = 100 + (uint64_t)i, .sg_list = &s1, .num_sge = 1,
						 .next = i < NRR_SGE_WRS ? &chain[i + 1] : NULL };
	n = nrr_custom_recv_wr(buf, chain, 0);
	v.len = v.total = (uint32_t)n;
	CHECK(nrr_wr_decode(&v, false, w, &sges) == NRR_SGE_WRS + 1 && sges == NRR_SGES_MANY_WRS && w[0].nsge == 0 &&
	      w[NRR_SGE_WRS].f[0] == 100 + NRR_SGE_WRS && w[NRR_SGE_WRS].f[2] == 8, "a chain of %d requests", NRR_SGE_WRS + 1);
	CHECK(strstr(nrr_sges_why(sges), "longer than the 8 requests"), "why: %s", nrr_sges_why(sges));
	/* (a reader before the mark took it for a trailer of another chain:
	 * its length 0 is not the chain's, so the requests alone) */
	CHECK(n == 1 + (NRR_SGE_WRS + 1) * NRR_WR_RECV_FIELDS + 2 && buf[n - 2] == 0 && buf[n - 1] == NRR_SGES_MANY_WRS,
	      "the mark: chain length 0, then why");
	struct ibv_sge many[NRR_SGE_MAX + 1];
	for (int i = 0; i <= NRR_SGE_MAX; i++)
		many[i] = (struct ibv_sge){ 0x7f0000010000 + 0x1000 * (uint64_t)i, 16, 0x20 };
	struct ibv_send_wr wm = { .wr_id = 3, .sg_list = many, .num_sge = NRR_SGE_MAX + 1, .opcode = IBV_WR_SEND };
	n = nrr_custom_send_wr(buf, &wm, 0);
	v.len = v.total = (uint32_t)n;
	CHECK(nrr_wr_decode(&v, true, w, &sges) == 1 && sges == NRR_SGES_MANY_SGES && w[0].nsge == 0 &&
	      w[0].f[4] == NRR_SGE_MAX + 1 && w[0].f[5] == 16 * (NRR_SGE_MAX + 1), "a request of %d sges", NRR_SGE_MAX + 1);
	CHECK(strstr(nrr_sges_why(sges), "more than the 4 sges"), "why: %s", nrr_sges_why(sges));
#endif
}

int main(void)
{
	test_schema();
	test_encoders(false);
	test_encoders(true);
	test_lazy_threads(false);
	test_lazy_threads(true);
	test_msghdr();
	test_wr();
	return check_done("api");
}
