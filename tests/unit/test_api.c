/* SPDX-License-Identifier: MIT */
/*
 * test_api.c - the built-in schema generated from formats/api/ parses and
 * covers every domain, and the generated typed encoders record what the
 * description says (out-params at leave, buffers by their length argument
 * or the return value, sockaddrs, coalesced polling).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <unistd.h>

#include "nrr_api_gen.h"
#include "callfmt.h"
#include "../lib/check.h"

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

static void test_encoders(void)
{
	char path[] = "/tmp/nrr-api-XXXXXX";
	int fd = mkstemp(path);
	CHECK_FATAL(fd >= 0, "mkstemp");
	close(fd);
	unlink(path);
	nrr_writer *w;
	nrr_writer_opts o = { .schema = nrr_builtin_schema, .schema_len = nrr_builtin_schema_len };
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
	CHECK(nrr_cursor_next(c, &call) == NRR_EEOF, "end");
	nrr_cursor_close(c);
	nrr_reader_close(r);
	unlink(path);
}

int main(void)
{
	test_schema();
	test_encoders();
	return check_done("api");
}
