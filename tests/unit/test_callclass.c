/* SPDX-License-Identifier: MIT */
/* test_callclass.c - call semantics (formats/api/'s role=, arg=, poll=,
 * notready=, transient=, conv lines) as the schema carries them and as
 * nrr_call_class() / nrr_call_role() / nrr_fn_arg() read them: over the
 * built-in schema, over the same schema without its sem= attributes (a
 * trace written before they existed: the built-in description fills them
 * in), over a golden trace of traces/ recorded before, and over bad sem=
 * text.
 * usage: test_callclass OLD_TRACE.nrt */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "ncclrr_config.h"
#include "nrr_api_gen.h"
#include "callfmt.h"
#include "nrt_internal.h"
#include "../lib/check.h"
#if NCCLRR_HAVE_VERBS
#include <infiniband/verbs.h>
#endif

static const nrr_fn_schema *fn_of(const nrr_schema *s, const char *name)
{
	const nrr_fn_schema *fn = nrr_schema_fn_by_name(s, name);
	CHECK_FATAL(fn, "%s is described", name);
	return fn;
}

/* a finished call of @fn answering @result / @err */
static nrr_call call_of(const nrr_fn_schema *fn, int64_t result, int err)
{
	nrr_call c;
	memset(&c, 0, sizeof(c));
	c.kind = NRR_CALL;
	c.phase = NRR_PHASE_CALL;
	c.done = true;
	c.fn = fn;
	c.result = result;
	c.err = err;
	return c;
}

static enum nrr_call_class cls(const nrr_schema *s, const char *name, int64_t result, int err)
{
	nrr_call c = call_of(fn_of(s, name), result, err);
	return nrr_call_class(&c);
}

static int arg_idx(const nrr_fn_schema *fn, const char *name)
{
	for (int i = 0; i < fn->nargs; i++)
		if (!strcmp(fn->args[i].name, name))
			return i;
	return -1;
}

/* ibv_poll_cq's wc as custom:wc records it: a count, then 6 fields a
 * completion (wr_id, status, opcode, byte_len, imm_data, qp_num) */
static size_t wc_bytes(uint8_t *b, const unsigned *status, unsigned n)
{
	uint8_t *p = b + 1;
	b[0] = (uint8_t)n;
	for (unsigned i = 0; i < n; i++) {
		p = nrr_put_uvar(p, 1000 + i);
		p = nrr_put_uvar(p, status[i]);
		p = nrr_put_uvar(p, 1);
		p = nrr_put_uvar(p, 0);
		p = nrr_put_uvar(p, 0);
		p = nrr_put_uvar(p, 0x29be91);
	}
	return (size_t)(p - b);
}

/* a poll of @fn returning @n completions of these statuses: its class,
 * and its result as printed into @text */
static enum nrr_call_class poll_cls(const nrr_fn_schema *fn, const unsigned *status, unsigned n, char *text, size_t len)
{
	uint8_t b[NRR_CUSTOM_MAX];
	int w = arg_idx(fn, "wc");
	CHECK_FATAL(w >= 0, "ibv_poll_cq has wc");
	nrr_call c = call_of(fn, n, 0);
	c.present = 1u << w;
	c.args[w].p = b;
	c.args[w].len = c.args[w].total = (uint32_t)wc_bytes(b, status, n);
	FILE *f = fmemopen(text, len, "w");
	nrr_format_result(f, &c);
	fclose(f);
	return nrr_call_class(&c);
}

/* a completion with an error status fails the poll that returned it
 * (failed= on ibv_poll_cq's wc), named by its status */
static void check_poll_cq(const nrr_schema *s, const char *what)
{
	const nrr_fn_schema *fn = fn_of(s, "ibv_poll_cq");
	char text[160];
	CHECK(fn->fail_arg == arg_idx(fn, "wc") && fn->fail_field == 1 && fn->fail_nfields == 6 && fn->fail_table &&
	      !strcmp(fn->fail_table->name, "ibv_wc_status"), "%s: ibv_poll_cq's failed=", what);
	static const unsigned ok[] = { 0, 0 }, retry[] = { 12, 5, 5, 5 }, late[] = { 0, 0, 13 };
	CHECK(poll_cls(fn, ok, 0, text, sizeof(text)) == NRR_CLASS_NOT_READY && !strcmp(text, "0"), "%s: empty poll: %s", what, text);
	CHECK(poll_cls(fn, ok, 2, text, sizeof(text)) == NRR_CLASS_OK && !strcmp(text, "2"), "%s: 2 good: %s", what, text);
	CHECK(poll_cls(fn, retry, 1, text, sizeof(text)) == NRR_CLASS_FAILED &&
	      !strcmp(text, "1 [wc[0] IBV_WC_RETRY_EXC_ERR (12)]"), "%s: status 12: %s", what, text);
	CHECK(poll_cls(fn, retry, 4, text, sizeof(text)) == NRR_CLASS_FAILED &&
	      !strcmp(text, "4 [wc[0] IBV_WC_RETRY_EXC_ERR (12), +3 failed]"), "%s: 12 and flushes: %s", what, text);
	CHECK(poll_cls(fn, late, 3, text, sizeof(text)) == NRR_CLASS_FAILED &&
	      !strcmp(text, "3 [wc[2] IBV_WC_RNR_RETRY_EXC_ERR (13)]"), "%s: the third: %s", what, text);
	/* a record cut inside an entry: what was read of it */
	uint8_t b[64];
	nrr_call c = call_of(fn, 3, 0);
	int w = arg_idx(fn, "wc");
	c.present = 1u << w;
	c.args[w].p = b;
	c.args[w].len = (uint32_t)wc_bytes(b, late, 3) - 8;
	CHECK(nrr_call_class(&c) == NRR_CLASS_OK, "%s: cut before the failed entry's status", what);
	c.present = 0;
	CHECK(nrr_call_class(&c) == NRR_CLASS_OK, "%s: wc not recorded", what);
}

/* the classes and roles the description declares, checked on @s */
static void check_semantics(const nrr_schema *s, const char *what)
{
	/* results by return convention and by the functions' own */
	CHECK(cls(s, "cuStreamQuery", 600, 0) == NRR_CLASS_NOT_READY, "%s: cuStreamQuery NOT_READY", what);
	CHECK(cls(s, "cuMemAlloc_v2", 600, 0) == NRR_CLASS_NOT_READY, "%s: curesult 600 (conv line)", what);
	CHECK(cls(s, "cuMemAlloc_v2", 2, 0) == NRR_CLASS_FAILED, "%s: CUDA_ERROR_OUT_OF_MEMORY", what);
	CHECK(cls(s, "cuMemAlloc_v2", 0, 0) == NRR_CLASS_OK, "%s: CUDA_SUCCESS", what);
	CHECK(cls(s, "cudaEventQuery", 600, 0) == NRR_CLASS_NOT_READY, "%s: cudaErrorNotReady", what);
	CHECK(cls(s, "ncclCommInitRank", 7, 0) == NRR_CLASS_NOT_READY, "%s: ncclInProgress", what);
	CHECK(cls(s, "ncclCommInitRank", 3, 0) == NRR_CLASS_FAILED, "%s: ncclInternalError", what);
	CHECK(cls(s, "nvmlInit_v2", 3, 0) == NRR_CLASS_FAILED, "%s: nvml has no not-ready", what);
	CHECK(cls(s, "recv", -1, EAGAIN) == NRR_CLASS_NOT_READY, "%s: recv EAGAIN (poll=err:)", what);
	CHECK(cls(s, "recv", -1, EINTR) == NRR_CLASS_TRANSIENT, "%s: recv EINTR", what);
	CHECK(cls(s, "recv", -1, ECONNRESET) == NRR_CLASS_FAILED, "%s: recv ECONNRESET", what);
	CHECK(cls(s, "recv", 0, 0) == NRR_CLASS_OK, "%s: recv 0 is an end of file", what);
	CHECK(cls(s, "connect", -1, EINPROGRESS) == NRR_CLASS_TRANSIENT, "%s: connect EINPROGRESS", what);
	CHECK(cls(s, "connect", -1, EAGAIN) == NRR_CLASS_TRANSIENT, "%s: connect EAGAIN is no poll answer", what);
	CHECK(cls(s, "connect", -1, ECONNREFUSED) == NRR_CLASS_FAILED, "%s: connect refused", what);
	CHECK(cls(s, "poll", 0, 0) == NRR_CLASS_NOT_READY, "%s: poll 0 (poll=ret:0)", what);
	CHECK(cls(s, "poll", 1, 0) == NRR_CLASS_OK, "%s: poll 1", what);
	CHECK(cls(s, "ibv_poll_cq", 0, 0) == NRR_CLASS_NOT_READY, "%s: ibv_poll_cq 0", what);
	CHECK(cls(s, "ibv_modify_qp", EBUSY, 0) == NRR_CLASS_TRANSIENT, "%s: poserr EBUSY", what);
	CHECK(cls(s, "ibv_modify_qp", EINVAL, 0) == NRR_CLASS_FAILED, "%s: poserr EINVAL", what);
	CHECK(cls(s, "ibv_reg_mr", 0, EAGAIN) == NRR_CLASS_FAILED, "%s: NULL with EAGAIN fails (ptr)", what);
	CHECK(cls(s, "ibv_query_gid", -1, EINTR) == NRR_CLASS_TRANSIENT, "%s: errno verbs EINTR", what);
	/* replay --rerun asks whether a process opened a NIC by this role */
	CHECK(fn_of(s, "ibv_open_device")->role == NRR_ROLE_DEV_OPEN, "%s: ibv_open_device role=dev_open", what);

	/* a not-ready out value: ncclNet_test's done == 0 */
	const nrr_fn_schema *t = fn_of(s, "ncclNet_test");
	int d = arg_idx(t, "done");
	CHECK_FATAL(d >= 0, "ncclNet_test has done");
	CHECK(t->notready_arg == d, "%s: ncclNet_test notready=out:done", what);
	nrr_call c = call_of(t, 0, 0);
	c.present = 1u << d;
	c.args[d].u = 0;
	CHECK(nrr_call_class(&c) == NRR_CLASS_NOT_READY, "%s: done == 0", what);
	c.args[d].u = 1;
	CHECK(nrr_call_class(&c) == NRR_CLASS_OK, "%s: done == 1", what);
	c.present = 0;
	CHECK(nrr_call_class(&c) == NRR_CLASS_OK, "%s: done not recorded", what);
	c = call_of(t, 0, 0);
	c.done = false;
	CHECK(nrr_call_class(&c) == NRR_CLASS_OK && !nrr_call_failed(&c), "%s: a call in flight", what);

	/* unread=: fcntl's arg is not read for F_GETFL, read for F_SETFL */
	const nrr_fn_schema *fc = fn_of(s, "fcntl");
	int ci = arg_idx(fc, "cmd"), ai = arg_idx(fc, "arg");
	CHECK_FATAL(ci >= 0 && ai >= 0, "fcntl has cmd and arg");
	c = call_of(fc, 0, 0);
	c.present = 1u << ci | 1u << ai;
	c.args[ci].u = F_GETFL;
	CHECK(nrr_call_arg_unread(&c, (uint16_t)ai) && !nrr_call_arg_unread(&c, (uint16_t)ci), "%s: F_GETFL's arg", what);
	c.args[ci].u = F_SETFL;
	CHECK(!nrr_call_arg_unread(&c, (uint16_t)ai), "%s: F_SETFL reads arg", what);
	c.present = 1u << ai;
	CHECK(!nrr_call_arg_unread(&c, (uint16_t)ai), "%s: cmd not recorded", what);
	c = call_of(fn_of(s, "recv"), 0, 0);
	CHECK(!nrr_call_arg_unread(&c, 0), "%s: recv has no unread= rule", what);
	/* fault: the verbs the fake counts, by name */
	CHECK(nrr_fn_fault("ibv_modify_qp") && nrr_fn_fault("ibv_get_device_list") && !nrr_fn_fault("ibv_post_send") &&
	      !nrr_fn_fault("ibv_poll_cq") && !nrr_fn_fault("connect") && !nrr_fn_fault(NULL), "fault= table");

	/* roles of calls and of their arguments */
	static const struct { const char *fn; enum nrr_role role; const char *fd, *addr; } roles[] = {
		{ "connect", NRR_ROLE_CONNECT, "sockfd", "addr" },
		{ "accept4", NRR_ROLE_ACCEPT, "sockfd", "addr" },
		{ "recvmsg", NRR_ROLE_RECV, "sockfd", NULL },
		{ "read", NRR_ROLE_RECV, "fd", NULL },
		{ "writev", NRR_ROLE_SEND, "fd", NULL },
		{ "sendmmsg", NRR_ROLE_SEND, "sockfd", NULL },
		{ "ppoll", NRR_ROLE_POLL, NULL, NULL },
		{ "select", NRR_ROLE_NONE, NULL, NULL },
		{ "epoll_ctl", NRR_ROLE_SOCK_SETUP, "fd", NULL },
		{ "listen", NRR_ROLE_NONE, "sockfd", NULL },
		{ "close", NRR_ROLE_CLOSE, "fd", NULL },
		{ "socketpair", NRR_ROLE_SOCK_PAIR, NULL, NULL },
		{ "ncclProxyRequest", NRR_ROLE_PROXY_REQ, "fd", NULL },
		{ "ncclProxyResponse", NRR_ROLE_PROXY_RESP, "fd", NULL },
		{ "ibv_poll_cq", NRR_ROLE_CQ_POLL, NULL, NULL },
		{ "ibv_post_send", NRR_ROLE_WR_SEND, NULL, NULL },
		{ "ibv_post_recv", NRR_ROLE_WR_RECV, NULL, NULL },
		{ "ncclNet_test", NRR_ROLE_NET_TEST, NULL, NULL },
		{ "cudaDeviceSynchronize", NRR_ROLE_SYNC, NULL, NULL },
		{ "cuEventQuery", NRR_ROLE_SYNC, NULL, NULL },
		{ "cuMemAlloc_v2", NRR_ROLE_NONE, NULL, NULL },
	};
	for (size_t i = 0; i < sizeof(roles) / sizeof(roles[0]); i++) {
		const nrr_fn_schema *fn = fn_of(s, roles[i].fn);
		nrr_call rc = call_of(fn, 0, 0);
		CHECK(nrr_call_role(&rc) == roles[i].role, "%s: role of %s: %u", what, roles[i].fn, fn->role);
		CHECK(nrr_fn_arg(fn, NRR_ARG_FD) == (roles[i].fd ? arg_idx(fn, roles[i].fd) : -1),
		      "%s: fd of %s", what, roles[i].fn);
		CHECK(nrr_fn_arg(fn, NRR_ARG_ADDR) == (roles[i].addr ? arg_idx(fn, roles[i].addr) : -1),
		      "%s: addr of %s", what, roles[i].fn);
	}
	const nrr_fn_schema *pr = fn_of(s, "ncclProxyResponse");
	CHECK(nrr_fn_arg(pr, NRR_ARG_ID) == arg_idx(pr, "opId"), "%s: the proxy answer's id", what);
	const nrr_fn_schema *sp = fn_of(s, "socketpair");
	CHECK(nrr_fn_arg(sp, NRR_ARG_FDS) == arg_idx(sp, "sv"), "%s: socketpair's pair", what);
	const nrr_fn_schema *pp = fn_of(s, "pipe2");
	CHECK(nrr_fn_arg(pp, NRR_ARG_FDS) == arg_idx(pp, "pipefd"), "%s: pipe2's pair", what);
	/* this end's own address: what bind names and getsockname learns, not
	 * the peer's that getpeername, connect and accept name */
	static const struct { const char *fn; bool local; } locals[] = {
		{ "bind", true }, { "getsockname", true }, { "getpeername", false }, { "connect", false }, { "accept", false },
	};
	for (size_t i = 0; i < sizeof(locals) / sizeof(locals[0]); i++) {
		const nrr_fn_schema *fn = fn_of(s, locals[i].fn);
		CHECK(nrr_fn_arg(fn, NRR_ARG_LOCAL) == (locals[i].local ? arg_idx(fn, "addr") : -1), "%s: local of %s", what,
		      locals[i].fn);
	}
	check_poll_cq(s, what);
}

/* the semantics fields of two descriptions of one function agree */
static bool same_sem(const nrr_fn_schema *a, const nrr_fn_schema *b)
{
	return a->role == b->role && !memcmp(a->arg, b->arg, sizeof(a->arg)) &&
	       !memcmp(&a->notready, &b->notready, sizeof(a->notready)) &&
	       !memcmp(&a->transient, &b->transient, sizeof(a->transient)) && a->notready_arg == b->notready_arg &&
	       a->notready_out == b->notready_out && a->fail_arg == b->fail_arg && a->fail_field == b->fail_field &&
	       a->fail_nfields == b->fail_nfields && !a->fail_table == !b->fail_table &&
	       (!a->fail_table || !strcmp(a->fail_table->name, b->fail_table->name)) && a->runid == b->runid &&
	       a->runid_arg == b->runid_arg && a->runid_nfields == b->runid_nfields && a->runid_fields == b->runid_fields;
}

/* bit of @fn's parameter @name, 0 when the schema lacks it (a trace
 * recorded before ibv_create_qp's qp_num, ibv_reg_mr's keys) */
static uint32_t arg_bit(const nrr_fn_schema *fn, const char *name)
{
	int i = arg_idx(fn, name);
	return i >= 0 ? 1u << i : 0;
}

/* the numbers each run chooses anew (runid): QP numbers and memory keys,
 * as parameters and as fields of custom-encoded structs */
static void check_runid(const nrr_schema *s, const char *what)
{
	const nrr_fn_schema *f = fn_of(s, "ibv_create_qp");
	CHECK(f->runid == arg_bit(f, "qp_num") && f->runid_arg == -1, "%s: ibv_create_qp runid qp_num", what);
	f = fn_of(s, "ibv_reg_mr");
	CHECK(f->runid == (arg_bit(f, "lkey") | arg_bit(f, "rkey")), "%s: ibv_reg_mr runid lkey, rkey", what);
	f = fn_of(s, "ibv_modify_qp");
	CHECK(f->runid == 0 && f->runid_arg == arg_idx(f, "attr") && f->runid_nfields == 0 && f->runid_fields == 1u << 1,
	      "%s: ibv_modify_qp runid attr field 1 (dest_qp_num)", what);
	f = fn_of(s, "ibv_poll_cq");
	CHECK(f->runid_arg == arg_idx(f, "wc") && f->runid_nfields == 6 && f->runid_fields == 1u << 5,
	      "%s: ibv_poll_cq runid wc field 5 of 6 (qp_num)", what);
	f = fn_of(s, "ibv_post_send");
	CHECK(f->runid_arg == arg_idx(f, "wr") && f->runid_nfields == 8 && f->runid_fields == (1u | 1u << 6 | 1u << 7),
	      "%s: ibv_post_send runid wr fields 0, 6, 7 of 8 (wr_id, remote_addr, rkey)", what);
	f = fn_of(s, "ibv_post_recv");
	CHECK(f->runid_arg == arg_idx(f, "wr") && f->runid_nfields == 3 && f->runid_fields == 1u,
	      "%s: ibv_post_recv runid wr field 0 of 3 (wr_id)", what);
	f = fn_of(s, "ibv_query_gid");
	CHECK(f->runid == 0 && f->runid_arg == -1, "%s: no runid where none is declared", what);
}

/* @text without its " sem=..." attributes: a schema as written before them */
static char *strip_sem(const char *text, size_t len, size_t *outlen)
{
	char *o = malloc(len + 1);
	size_t n = 0;
	for (size_t i = 0; i < len;) {
		if (text[i] == ' ' && i + 5 < len && !memcmp(text + i, " sem=", 5)) {
			while (i < len && text[i] != '\n' && !(text[i] == ' ' && memcmp(text + i, " sem=", 5)))
				i++;
			continue;
		}
		o[n++] = text[i++];
	}
	*outlen = n;
	return o;
}

static char *schema_with(const char *fnline)
{
	char *t = malloc(4096);
	snprintf(t, 4096, "ncclrr-schema 1\n%s\na in sockfd fd\na out out x\nend\n", fnline);
	return t;
}

static int parse_err(const char *fnline, nrr_diag *d, nrr_schema **s)
{
	char *t = schema_with(fnline);
	memset(d, 0, sizeof(*d));
	int rc = nrr_schema_parse(s, t, strlen(t), d);
	free(t);
	return rc;
}

/* NCCL's dma-buf probe (benign=probe:err:...:fd=-1 on ibv_reg_dmabuf_mr):
 * a NULL answer with @err for a registration of @fd */
static const char *dmabuf_benign(const nrr_schema *s, int64_t fd, int err, bool record_fd)
{
	const nrr_fn_schema *fn = fn_of(s, "ibv_reg_dmabuf_mr");
	nrr_call c = call_of(fn, 0, err);
	int a = arg_idx(fn, "fd");
	CHECK_FATAL(a >= 0, "ibv_reg_dmabuf_mr records fd");
	c.args[a].u = (uint64_t)fd;
	if (record_fd)
		c.present |= 1u << a;
	return nrr_call_benign(&c);
}

static void check_dmabuf_probe(const nrr_schema *s, const char *what)
{
	CHECK(dmabuf_benign(s, -1, EINVAL, true), "%s: dma-buf probe fd -1 EINVAL is benign", what);
	CHECK(dmabuf_benign(s, -1, EOPNOTSUPP, true), "%s: dma-buf probe fd -1 EOPNOTSUPP is benign", what);
	CHECK(dmabuf_benign(s, -1, EPROTONOSUPPORT, true) && dmabuf_benign(s, -1, EBADF, true),
	      "%s: dma-buf probe fd -1 EPROTONOSUPPORT, EBADF are benign", what);
	CHECK(!dmabuf_benign(s, 7, EINVAL, true), "%s: dma-buf fd 7 EINVAL is a real failure", what);
	CHECK(!dmabuf_benign(s, 0, EOPNOTSUPP, true), "%s: dma-buf fd 0 EOPNOTSUPP is a real failure", what);
	CHECK(!dmabuf_benign(s, -1, ENOMEM, true), "%s: dma-buf fd -1 ENOMEM is a real failure", what);
	CHECK(!dmabuf_benign(s, -1, EINVAL, false), "%s: dma-buf without a recorded fd is not the probe", what);
}

int main(int argc, char **argv)
{
	nrr_diag d = { 0 };
	nrr_schema *s = NULL;
	CHECK_FATAL(!nrr_schema_parse(&s, nrr_builtin_schema, nrr_builtin_schema_len, &d), "built-in schema: %s", d.msg);
	check_semantics(s, "built-in");
	check_dmabuf_probe(s, "built-in");
	check_runid(s, "built-in");
	CHECK(fn_of(s, "ibv_create_qp")->runid && fn_of(s, "ibv_reg_mr")->runid, "built-in: qp_num, lkey, rkey recorded");

	/* every function's semantics come with its schema lines */
	uint32_t with = 0;
	for (uint32_t i = 1; i <= nrr_schema_nfns(s); i++)
		with += nrr_schema_fn(s, i)->sem != NULL;
	CHECK(with > 250, "sem= on %u of %u functions", with, nrr_schema_nfns(s));

	/* an older schema: the same semantics from the built-in description */
	size_t olen;
	char *old = strip_sem(nrr_builtin_schema, nrr_builtin_schema_len, &olen);
	CHECK(olen < nrr_builtin_schema_len && !memmem(old, olen, "sem=", 4), "stripped %zu bytes", nrr_builtin_schema_len - olen);
	nrr_schema *o = NULL;
	CHECK_FATAL(!nrr_schema_parse(&o, old, olen, &d), "old-style schema: %s", d.msg);
	check_semantics(o, "without sem=");
	check_dmabuf_probe(o, "without sem=");
	check_runid(o, "without sem=");
	uint32_t same = 0;
	for (uint32_t i = 1; i <= nrr_schema_nfns(s); i++)
		same += same_sem(nrr_schema_fn(s, i), nrr_schema_fn(o, i));
	CHECK(same == nrr_schema_nfns(s), "fallback = carried for %u of %u functions", same, nrr_schema_nfns(s));
	nrr_schema_free(o);
	free(old);

	/* a function this build does not describe: its convention's */
	CHECK_FATAL(!parse_err("fn 1 frobnicate socket errno", &d, &o), "unknown fn: %s", d.msg);
	nrr_call c = call_of(nrr_schema_fn(o, 1), -1, EINTR);
	CHECK(nrr_call_class(&c) == NRR_CLASS_TRANSIENT, "conv errno: EINTR");
	c.err = EPIPE;
	CHECK(nrr_call_class(&c) == NRR_CLASS_FAILED, "conv errno: EPIPE");
	CHECK(nrr_fn_arg(nrr_schema_fn(o, 1), NRR_ARG_FD) == -1, "no fd role without a description");
	nrr_schema_free(o);

	/* the trace's own sem= wins over the built-in one, and a later
	 * version's items, roles and argument roles are skipped */
	CHECK_FATAL(!parse_err("fn 1 recv socket errno blocking poll sem=role:send,arg:fd:sockfd,later:x:y,"
			       "role:teleport,arg:thing:out,notready:err:4",
			       &d, &o), "own sem=: %s", d.msg);
	const nrr_fn_schema *f = nrr_schema_fn(o, 1);
	CHECK(f->role == NRR_ROLE_SEND && f->arg[NRR_ARG_FD] == 0, "own role and fd");
	c = call_of(f, -1, EINTR);
	CHECK(nrr_call_class(&c) == NRR_CLASS_NOT_READY, "own notready");
	c.err = EAGAIN;
	CHECK(nrr_call_class(&c) == NRR_CLASS_FAILED, "no built-in transient beside the trace's own");
	nrr_schema_free(o);

	/* runid: items: the trace's own, a bad one named, and a field of a
	 * parameter recorded otherwise is none in the built-in fallback */
	CHECK_FATAL(!parse_err("fn 1 ibv_modify_qp verbs poserr sem=runid:attr:1|3\na in qp handle:qp\n"
			       "a in attr bytes\na in attr_mask u", &d, &o), "own runid: %s", d.msg);
	f = nrr_schema_fn(o, 1);
	CHECK(f->runid_arg == 1 && f->runid_fields == 0xa && f->runid_nfields == 0, "own runid:attr:1|3");
	nrr_schema_free(o);
	CHECK(parse_err("fn 1 ibv_modify_qp verbs poserr sem=runid:attr:x\na in attr bytes", &d, &o) &&
	      strstr(d.msg, "runid:attr:x"), "a bad runid item is named: %s", d.msg);
	CHECK(parse_err("fn 1 ibv_modify_qp verbs poserr sem=runid:attr:3/2\na in attr bytes", &d, &o),
	      "a runid field beyond its entry is an error");
	CHECK(parse_err("fn 1 ibv_modify_qp verbs poserr sem=runid:attr\na in attr bytes", &d, &o),
	      "runid on bytes without fields is an error");
	CHECK_FATAL(!parse_err("fn 1 ibv_modify_qp verbs poserr sem=transient:err:11\na in attr x", &d, &o),
		    "old runid: %s", d.msg);
	CHECK(nrr_schema_fn(o, 1)->runid_arg == -1 && nrr_schema_fn(o, 1)->runid == 0,
	      "a parameter recorded otherwise takes no built-in runid fields");
	nrr_schema_free(o);

	/* a sem= written before the function had a role (dev_open came
	 * after sem=): the built-in role, beside the trace's own items */
	CHECK_FATAL(!parse_err("fn 1 ibv_open_device verbs ptr sem=transient:err:4", &d, &o), "sem= without role: %s", d.msg);
	f = nrr_schema_fn(o, 1);
	c = call_of(f, 0, EINTR);
	CHECK(f->role == NRR_ROLE_DEV_OPEN && nrr_call_class(&c) == NRR_CLASS_TRANSIENT, "sem= without role: built-in role");
	nrr_schema_free(o);
	/* a sem= written before an argument role the build gives the
	 * function (local came after sem=): the built-in one, beside the
	 * trace's own */
	CHECK_FATAL(!parse_err("fn 1 bind socket errno sem=role:sock_setup,arg:fd:sockfd,arg:addr:addr\na in sockfd i\n"
			       "a in addr x\na in addrlen u",
			       &d, &o),
		    "sem= without arg:local: %s", d.msg);
	f = nrr_schema_fn(o, 1);
	CHECK(nrr_fn_arg(f, NRR_ARG_LOCAL) == 1 && nrr_fn_arg(f, NRR_ARG_ADDR) == 1 && nrr_fn_arg(f, NRR_ARG_FD) == 0,
	      "sem= without arg:local: the built-in argument role");
	nrr_schema_free(o);
	/* ...and a role this reader does not know stays none */
	CHECK_FATAL(!parse_err("fn 1 ibv_open_device verbs ptr sem=role:teleport", &d, &o), "unknown role: %s", d.msg);
	CHECK(nrr_schema_fn(o, 1)->role == NRR_ROLE_NONE, "a later version's role is not replaced");
	nrr_schema_free(o);

	/* a trace whose sem= was written before failed= (traces/nccl_ib):
	 * the built-in failed: item and table, as its wc is recorded the same */
	static const char pre_failed[] = "ncclrr-schema 1\nfn 1 ibv_poll_cq verbs int blocking poll "
					 "sem=role:cq_poll,notready:ret:0\na in cq handle:cq\na in num_entries i\n"
					 "a out wc bytes\nend\n";
	CHECK_FATAL(!nrr_schema_parse(&o, pre_failed, strlen(pre_failed), &d), "sem= before failed=: %s", d.msg);
	check_poll_cq(o, "sem= before failed=");
	nrr_schema_free(o);
	/* ...but not when it records wc otherwise: no failed: then */
	static const char wc_addr[] = "ncclrr-schema 1\nfn 1 ibv_poll_cq verbs int sem=role:cq_poll\na out wc x\nend\n";
	CHECK_FATAL(!nrr_schema_parse(&o, wc_addr, strlen(wc_addr), &d), "wc as an address: %s", d.msg);
	CHECK(nrr_schema_fn(o, 1)->fail_arg == -1, "wc as an address: no failed=");
	nrr_schema_free(o);
	/* a trace's own failed: item, its table from the trace */
	static const char own_failed[] = "ncclrr-schema 1\nenum st\nv 0 OK\nv 7 BAD\n"
					 "fn 1 poll_things verbs int sem=failed:out:ents:0/2:st\na out ents bytes\nend\n";
	CHECK_FATAL(!nrr_schema_parse(&o, own_failed, strlen(own_failed), &d), "own failed: %s", d.msg);
	f = nrr_schema_fn(o, 1);
	CHECK(f->fail_arg == 0 && f->fail_field == 0 && f->fail_nfields == 2 && f->fail_table &&
	      !strcmp(f->fail_table->name, "st"), "own failed: item");
	uint8_t eb[8] = { 2, 0, 5, 7, 6 }, *ep = eb;
	c = call_of(f, 2, 0);
	c.present = 1;
	c.args[0].p = ep;
	c.args[0].len = 5;
	char text[80];
	FILE *tf = fmemopen(text, sizeof(text), "w");
	nrr_format_result(tf, &c);
	fclose(tf);
	CHECK(nrr_call_class(&c) == NRR_CLASS_FAILED && !strcmp(text, "2 [ents[1] BAD (7)]"), "own failed: %s", text);
	nrr_schema_free(o);
	static const char *const bad_failed[] = { "failed:out:cq:1/6:ibv_wc_status", "failed:out:wc:6/6:ibv_wc_status",
						  "failed:in:wc:1/6:ibv_wc_status", "failed:out:wc:1/6:", "failed:out:wc:1",
						  "failed:out:nosuch:1/6:ibv_wc_status", "failed:out:wc:1/17:t" };
	for (size_t i = 0; i < sizeof(bad_failed) / sizeof(bad_failed[0]); i++) {
		char t[400];
		snprintf(t, sizeof(t), "ncclrr-schema 1\nfn 1 ibv_poll_cq verbs int sem=%s\na in cq handle:cq\n"
			 "a out wc bytes\nend\n", bad_failed[i]);
		int rc = nrr_schema_parse(&o, t, strlen(t), &d);
		CHECK(rc == NRR_ESCHEMA && strstr(d.msg, "line 2") && strstr(d.msg, bad_failed[i]), "bad %s: rc %d: %s",
		      bad_failed[i], rc, d.msg);
		if (!rc)
			nrr_schema_free(o);
	}
#if NCCLRR_HAVE_VERBS
	/* the tracer's encoder and failed=1/6 agree */
	{
		struct ibv_wc wc[2];
		uint8_t wb[NRR_CUSTOM_MAX];
		memset(wc, 0, sizeof(wc));
		wc[1].status = IBV_WC_RETRY_EXC_ERR;
		wc[1].wr_id = 77;
		wc[1].opcode = IBV_WC_RDMA_WRITE;
		const nrr_fn_schema *pf = fn_of(s, "ibv_poll_cq");
		int w = arg_idx(pf, "wc");
		c = call_of(pf, 2, 0);
		c.present = 1u << w;
		c.args[w].p = wb;
		c.args[w].len = (uint32_t)nrr_custom_wc(wb, wc, 2);
		unsigned at = 9;
		int64_t st = 0;
		CHECK(nrr_call_entry_errors(&c, &at, &st) == 1 && at == 1 && st == IBV_WC_RETRY_EXC_ERR,
		      "nrr_custom_wc: entry %u status %lld", at, (long long)st);
	}
#endif

	/* bad sem= text: an error naming the line, the function, the item */
	static const char *const bad[] = { "notready:ret:x", "notready:ret:", "arg:fd:nosuch", "notready:out:nosuch:0",
					   "transient:maybe:4", "role", "notready:ret:1|2|3|4|5" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char line[200];
		snprintf(line, sizeof(line), "fn 1 recv socket errno sem=%s", bad[i]);
		int rc = parse_err(line, &d, &o);
		CHECK(rc == NRR_ESCHEMA && strstr(d.msg, "line 2") && strstr(d.msg, "recv") && strstr(d.msg, bad[i]) &&
			      strstr(d.msg, "Call semantics"),
		      "bad sem=%s: rc %d: %s", bad[i], rc, d.msg);
		if (!rc)
			nrr_schema_free(o);
	}

	/* a golden trace recorded before sem= existed reads with the
	 * built-in semantics */
	if (argc > 1) {
		nrr_reader *r = NULL;
		CHECK_FATAL(!nrr_reader_open(&r, argv[1], &d), "%s: %s", argv[1], d.msg);
		const nrr_schema *rs = nrr_reader_schema(r);
		uint32_t n = 0, nsem = 0;
		for (uint32_t i = 1; i <= nrr_schema_nfns(rs); i++) {
			const nrr_fn_schema *fn = nrr_schema_fn(rs, i);
			const nrr_fn_schema *b = nrr_schema_fn_by_name(s, fn->name);
			n++;
			nsem += b && fn->role == b->role && fn->arg[NRR_ARG_FD] == b->arg[NRR_ARG_FD] &&
				!memcmp(&fn->notready, &b->notready, sizeof(fn->notready));
		}
		CHECK(n > 10 && nsem == n, "%s: %u of %u functions as described", argv[1], nsem, n);
		const nrr_fn_schema *cn = nrr_schema_fn_by_name(rs, "connect");
		CHECK(cn && cn->role == NRR_ROLE_CONNECT && nrr_fn_arg(cn, NRR_ARG_FD) == 0, "old trace's connect");
		nrr_reader_close(r);
	}
	/* a golden trace recorded before failed= (rank 4 of the first
	 * recording of traces/nccl_ib/retry_exc, tests/unit/data/): its first failed poll is the one whose
	 * completion carries IBV_WC_RETRY_EXC_ERR, and no poll before it fails */
	if (argc > 2) {
		nrr_reader *r = NULL;
		CHECK_FATAL(!nrr_reader_open(&r, argv[2], &d), "%s: %s", argv[2], d.msg);
		uint64_t first = 0, npoll = 0, nfailed = 0, nprobe = 0, nprobe_benign = 0;
		char ftext[160] = "";
		for (uint32_t st = 0; st < nrr_reader_info(r)->nstreams; st++) {
			nrr_cursor *cur;
			const nrr_call *call;
			CHECK_FATAL(!nrr_cursor_open(&cur, r, st), "cursor %u", st);
			while (nrr_cursor_next(cur, &call) == 0) {
				if (call->kind == NRR_CALL && call->done && !strcmp(call->fn->name, "ibv_reg_dmabuf_mr") &&
				    nrr_call_failed(call)) {
					nprobe++;
					nprobe_benign += nrr_call_benign(call) != NULL;
				}
				if (call->kind != NRR_CALL || !call->done || strcmp(call->fn->name, "ibv_poll_cq"))
					continue;
				npoll++;
				if (nrr_call_failed(call) && !nfailed++) {
					first = call->seq;
					FILE *tf2 = fmemopen(ftext, sizeof(ftext), "w");
					nrr_format_result(tf2, call);
					fclose(tf2);
				}
			}
			nrr_cursor_close(cur);
		}
		CHECK(npoll > 1000 && nfailed == 8 && first == 8430 && !strcmp(ftext, "4 [wc[0] IBV_WC_RETRY_EXC_ERR (12), +3 failed]"),
		      "%s: %llu polls, %llu failed, first #%llu = %s", argv[2], (unsigned long long)npoll,
		      (unsigned long long)nfailed, (unsigned long long)first, ftext);
		/* NCCL's dma-buf probe (fd -1, EINVAL from the fake) in a trace
		 * recorded before benign=...:fd=-1: benign by the build's rule */
		CHECK(nprobe >= 1 && nprobe_benign == nprobe, "%s: %llu of %llu failed ibv_reg_dmabuf_mr benign (the probe)",
		      argv[2], (unsigned long long)nprobe_benign, (unsigned long long)nprobe);
		/* recorded before role=dev_open: its ibv_open_device has it */
		const nrr_fn_schema *od = nrr_schema_fn_by_name(nrr_reader_schema(r), "ibv_open_device");
		CHECK(od && od->role == NRR_ROLE_DEV_OPEN, "%s: ibv_open_device role=dev_open", argv[2]);
		/* ...and before wr_send / wr_recv: its posts have them */
		const nrr_fn_schema *ps = nrr_schema_fn_by_name(nrr_reader_schema(r), "ibv_post_send");
		const nrr_fn_schema *pv = nrr_schema_fn_by_name(nrr_reader_schema(r), "ibv_post_recv");
		CHECK(ps && ps->role == NRR_ROLE_WR_SEND && pv && pv->role == NRR_ROLE_WR_RECV, "%s: the posts' roles", argv[2]);
		/* recorded before runid: its QP numbers and keys are per-run */
		check_runid(nrr_reader_schema(r), argv[2]);
		nrr_reader_close(r);
	}
	nrr_schema_free(s);
	return check_done("callclass");
}
