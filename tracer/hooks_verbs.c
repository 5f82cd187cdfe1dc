/* SPDX-License-Identifier: MIT */
/*
 * hooks_verbs.c - the verbs data path.
 *
 * ibv_post_send, ibv_post_recv, ibv_post_srq_recv and ibv_poll_cq are
 * static inline functions of <infiniband/verbs.h> that call through
 * context->ops: no symbol to wrap.  When ibv_open_device (wrapped)
 * returns a context, its four ops
 * are replaced by the hooks below, which record the call and go on to the
 * provider's function; ibv_close_device forgets the context.
 *
 * ibv_query_port is a macro of the same header too: it calls the extended
 * context's query_port (struct verbs_context) when the library sets one,
 * the exported ibv_query_port (wrapped like any symbol) only when not.
 * Programs built against it (ibv_rc_pingpong, ibv_devinfo) thus never
 * reach the symbol, and the port's LID, which an RTR without a GRH names
 * and replay keys the peer's objects by (replayer/engine/rverbs.c), would
 * not be in their traces: that op is hooked as well.  The exported entry
 * does not go through it (rdma-core's calls the provider's op, the fake
 * one its own function), so a call is recorded once either way.
 */
#include <errno.h>
#include <link.h>
#include <stdatomic.h>
#include <string.h>

#include "nrr_wrap_gen.h"
#include "tracer_internal.h"

#if NCCLRR_HAVE_VERBS
#include <infiniband/verbs.h>

#define NCTX 64
static struct vctx {
	_Atomic(struct ibv_context *) ctx;
	int (*poll_cq)(struct ibv_cq *, int, struct ibv_wc *);
	int (*post_send)(struct ibv_qp *, struct ibv_send_wr *, struct ibv_send_wr **);
	int (*post_recv)(struct ibv_qp *, struct ibv_recv_wr *, struct ibv_recv_wr **);
	int (*post_srq_recv)(struct ibv_srq *, struct ibv_recv_wr *, struct ibv_recv_wr **);
	int (*query_port)(struct ibv_context *, uint8_t, struct ibv_port_attr *, size_t);
} ctxs[NCTX];

static struct vctx *find(const struct ibv_context *c)
{
	for (int i = 0; i < NCTX; i++)
		if (atomic_load_explicit(&ctxs[i].ctx, memory_order_acquire) == c)
			return &ctxs[i];
	return NULL;
}

static int hook_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct vctx *v = find(cq->context);
	if (!v)
		return ENOSYS;   /* cannot happen: the hook is only installed with its entry */
	nrr_trace_ibv_poll_cq_enter(cq, n, wc);
	int r = v->poll_cq(cq, n, wc);
	int err = errno;
	nrr_trace_ibv_poll_cq_leave(r, err, cq, n, wc);
	errno = err;
	return r;
}

static int hook_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct vctx *v = find(qp->context);
	if (!v)
		return ENOSYS;
	nrr_trace_ibv_post_send_enter(qp, wr, bad);
	int r = v->post_send(qp, wr, bad);
	int err = errno;
	nrr_trace_ibv_post_send_leave(r, err, qp, wr, bad);
	errno = err;
	return r;
}

static int hook_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct vctx *v = find(qp->context);
	if (!v)
		return ENOSYS;
	nrr_trace_ibv_post_recv_enter(qp, wr, bad);
	int r = v->post_recv(qp, wr, bad);
	int err = errno;
	nrr_trace_ibv_post_recv_leave(r, err, qp, wr, bad);
	errno = err;
	return r;
}

static int hook_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct vctx *v = find(srq->context);
	if (!v)
		return ENOSYS;
	nrr_trace_ibv_post_srq_recv_enter(srq, wr, bad);
	int r = v->post_srq_recv(srq, wr, bad);
	int err = errno;
	nrr_trace_ibv_post_srq_recv_leave(r, err, srq, wr, bad);
	errno = err;
	return r;
}

static int hook_query_port(struct ibv_context *c, uint8_t port, struct ibv_port_attr *attr, size_t len)
{
	struct vctx *v = find(c);
	if (!v)
		return ENOSYS;
	/* the record reads the attributes as this header lays them out: a
	 * caller's shorter struct is passed on unrecorded */
	if (len < sizeof(*attr))
		return v->query_port(c, port, attr, len);
	nrr_trace_ibv_query_port_enter(c, port, attr);
	int r = v->query_port(c, port, attr, len);
	int err = errno;
	nrr_trace_ibv_query_port_leave(r, err, c, port, attr);
	errno = err;
	return r;
}

/* libibverbs' version, from the file the loader mapped
 * (libibverbs.so.1.14.44.0 -> 1.14.44.0) */
static int verbs_file(struct dl_phdr_info *info, size_t size, void *data)
{
	const char *n = info->dlpi_name ? strstr(info->dlpi_name, "libibverbs.so.") : NULL;
	if (!n)
		return 0;
	nrr_trace_meta("verbs_library=%s", info->dlpi_name);
	return 1;
}

void nrr_verbs_listed(void)
{
	static _Atomic int done;
	if (nrr_trace_backend != NRR_BACKEND_OFF && !atomic_exchange(&done, 1))
		dl_iterate_phdr(verbs_file, NULL);
}

void nrr_verbs_opened(struct ibv_context *c)
{
	if (!c || nrr_trace_backend == NRR_BACKEND_OFF || find(c))
		return;
	for (int i = 0; i < NCTX; i++) {
		struct ibv_context *expected = NULL;
		/* claim a free slot, then keep the provider's ops, then hook: no
		 * call reaches a hook before its slot is complete */
		if (!atomic_compare_exchange_strong(&ctxs[i].ctx, &expected, c))
			continue;
		ctxs[i].poll_cq = c->ops.poll_cq;
		ctxs[i].post_send = c->ops.post_send;
		ctxs[i].post_recv = c->ops.post_recv;
		ctxs[i].post_srq_recv = c->ops.post_srq_recv;
		if (c->ops.poll_cq)
			c->ops.poll_cq = hook_poll_cq;
		if (c->ops.post_send)
			c->ops.post_send = hook_post_send;
		if (c->ops.post_recv)
			c->ops.post_recv = hook_post_recv;
		if (c->ops.post_srq_recv)
			c->ops.post_srq_recv = hook_post_srq_recv;
		struct verbs_context *vc = verbs_get_ctx_op(c, query_port);
		ctxs[i].query_port = vc ? vc->query_port : NULL;
		if (vc)
			vc->query_port = hook_query_port;
		return;
	}
	nrr_trace_meta("note=more than %d verbs contexts: data path of the others not recorded", NCTX);
}

void nrr_verbs_closed(struct ibv_context *c, int ret)
{
	struct vctx *v = ret == 0 ? find(c) : NULL;
	if (v)
		atomic_store(&v->ctx, NULL);
}
#else
void nrr_verbs_listed(void)
{
}

void nrr_verbs_opened(struct ibv_context *c)
{
}

void nrr_verbs_closed(struct ibv_context *c, int ret)
{
}
#endif
