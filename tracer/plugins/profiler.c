/* SPDX-License-Identifier: MIT */
/*
 * profiler.c - the ncclrr profiler plugin (NCCL 2.23+): records NCCL's
 * proxy events as log lines on the tracer's timeline and forwards every
 * call to the user's profiler plugin (NCCLRR_PROFILER_PLUGIN, a path set
 * by `ncclrr record`), if any.
 *
 * Built once per profiler API version as libncclrr-profiler-vN.so
 * (-DNRR_PROF_MAX=N) exporting ncclProfiler_v1 .. ncclProfiler_vN as
 * indirect functions, like the net wrapper (net_wrap.c): a version the
 * user's profiler lacks resolves to NULL in dlsym.
 *
 * Recorded: ProxyOp, ProxyCtrl and NetPlugin events (v3+), one line per
 * start and stop with the event's fields ("profiler ProxyOp start rank=0
 * channel=3 peer=8 nSteps=4 chunkSize=524288 isSend=1 pid=…"), ProxyCtrl
 * state changes and NetPlugin updates at TRACE level.
 *
 * Event handles: NCCL gets ncclrr's own event objects; each holds the
 * user profiler's handle, and parent handles in descriptors are mapped
 * back to the user profiler's before they are forwarded.  The user
 * profiler gets only the event types it asked for in init.  Without a
 * user profiler, init succeeds and asks NCCL only for the event types
 * ncclrr records.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nccl_net_types.h"
#include "trace.h"

#ifndef NRR_PROF_MAX
#error "build with -DNRR_PROF_MAX=N (1..5)"
#endif
#if NRR_PROF_MAX < NRR_PROF_VERSION_MIN || NRR_PROF_MAX > NRR_PROF_VERSION_MAX
#error "NRR_PROF_MAX must be 1..5"
#endif

#define NRR_EXPORT __attribute__((visibility("default")))

/* ------------------------------------------------------------ the inner profiler */
static pthread_once_t inner_once = PTHREAD_ONCE_INIT;
static void *inner_lib;
static const void *inner_tbl[NRR_PROF_VERSION_MAX + 1];
static bool inner_any;
static char inner_err[768];
static pid_t self_pid;

static void after_fork(void)
{
	self_pid = getpid();
}

static void inner_load(void)
{
	const char *path = getenv("NCCLRR_PROFILER_PLUGIN");

	self_pid = getpid();
	pthread_atfork(NULL, NULL, after_fork);
	if (!path || !*path)
		return;
	inner_lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!inner_lib) {
		const char *e = dlerror();
		snprintf(inner_err, sizeof(inner_err),
			 "ncclrr: Cannot load the profiler plugin to forward to: path=%s error=%s "
			 "(check NCCLRR_PROFILER_PLUGIN; events are recorded without it)", path, e ? e : "unknown");
		return;
	}
	for (int k = NRR_PROF_VERSION_MIN; k <= NRR_PROF_MAX; k++) {
		char sym[32];
		snprintf(sym, sizeof(sym), "ncclProfiler_v%d", k);
		inner_tbl[k] = dlsym(inner_lib, sym);
		if (inner_tbl[k])
			inner_any = true;
	}
	if (!inner_any)
		snprintf(inner_err, sizeof(inner_err),
			 "ncclrr: Cannot forward to the profiler plugin: path=%s exports=none-of-ncclProfiler_v1..v%d "
			 "(events are recorded without it)", path, NRR_PROF_MAX);
}

__attribute__((constructor)) static void inner_ctor(void)
{
	pthread_once(&inner_once, inner_load);
}

#define IN(K) ((const nrr_ncclProfiler_v##K *)inner_tbl[K])

/* ------------------------------------------------------------ log lines */
static void plog(unsigned level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void plog(unsigned level, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(buf))
		n = (int)sizeof(buf) - 1;
	nrr_trace_log(level, buf, (size_t)n);
}

/* ------------------------------------------------------------ contexts and events */
struct pctx {
	void *inner_ctx;
	int inner_mask;    /* what the user's profiler asked for */
	bool inner_ok;     /* its init succeeded */
};

#define EV_MAGIC 0x4e525250u /* "PRRN" */

struct pev {
	uint32_t magic;
	uint32_t type;
	void *inner;        /* the user profiler's handle, or NULL */
	bool logged;        /* an event type ncclrr records */
	char what[224];     /* "ProxyOp rank=… channel=…" */
};

static const char *type_name(uint64_t t)
{
	switch (t) {
	case NRR_PROF_PROXY_OP: return "ProxyOp";
	case NRR_PROF_PROXY_CTRL: return "ProxyCtrl";
	case NRR_PROF_NET_PLUGIN: return "NetPlugin";
	default: return "event";
	}
}

static const char *ctrl_state_name(int s)
{
	switch (s) {
	case NRR_PROF_STATE_PROXY_CTRL_IDLE: return "Idle";
	case NRR_PROF_STATE_PROXY_CTRL_ACTIVE: return "Active";
	case NRR_PROF_STATE_PROXY_CTRL_SLEEP: return "Sleep";
	case NRR_PROF_STATE_PROXY_CTRL_WAKEUP: return "Wakeup";
	case NRR_PROF_STATE_PROXY_CTRL_APPEND: return "Append";
	case NRR_PROF_STATE_PROXY_CTRL_APPEND_END: return "AppendEnd";
	default: return NULL;
	}
}

/* The user profiler's handle for a parent handle NCCL gives back to us.
 * A ProxyOp's parent lives in the rank's process (@pid), which may be
 * another one: then it is passed on untouched, as NCCL would. */
static void *unwrap(void *p, pid_t pid)
{
	if (!p || pid != self_pid)
		return p;
	struct pev *e = p;
	return e->magic == EV_MAGIC ? e->inner : p;
}

static void describe_net(char *buf, size_t len, int rank, const nrr_prof_net_plugin *np)
{
	uint32_t id = (uint32_t)np->id;
	int n = snprintf(buf, len, "NetPlugin rank=%d id=0x%llx", rank, (unsigned long long)np->id);
	if (n < 0 || (size_t)n >= len)
		return;
	if ((id & NRR_PROF_NET_TYPE_MASK) == NRR_PROF_NET_TYPE_IB && (id & NRR_PROF_NET_VER_MASK) == 1 && np->data) {
		const nrr_prof_net_ib_v1 *d = np->data;
		snprintf(buf + n, len - (size_t)n, " net=ib qp device=%d wr_id=%llu opcode=%d qpNum=%d length=%zu",
			 d->qp.device, (unsigned long long)d->qp.wr_id, d->qp.opcode, d->qp.qpNum, d->qp.length);
	} else if ((id & NRR_PROF_NET_TYPE_MASK) == NRR_PROF_NET_TYPE_SOCK && (id & NRR_PROF_NET_VER_MASK) == 1 && np->data) {
		const nrr_prof_net_sock_v1 *d = np->data;
		snprintf(buf + n, len - (size_t)n, " net=sock fd=%d op=%d length=%zu", d->sock.fd, d->sock.op, d->sock.length);
	} else {
		snprintf(buf + n, len - (size_t)n, " data=%p", np->data);
	}
}

/* Start an event: forward (when the user profiler wants @type), then
 * record.  @fwd calls the user profiler's startEvent with a descriptor
 * whose parent handles are mapped; it returns its result. */
static nrr_nccl_result ev_start(struct pctx *c, void **eHandle, uint64_t type, int rank, int ours,
				const nrr_prof_proxy_op *po, const nrr_prof_net_plugin *np,
				nrr_nccl_result (*fwd)(void *inner_ctx, void **h, void *arg), void *arg)
{
	void *ih = NULL;
	nrr_nccl_result r = NRR_NCCL_SUCCESS;

	if (c && c->inner_ok && (type & (uint64_t)c->inner_mask) && fwd)
		r = fwd(c->inner_ctx, &ih, arg);
	bool logged = (type & (uint64_t)ours) != 0;
	if (!logged && !ih) {
		*eHandle = NULL;
		return r;
	}
	struct pev *e = malloc(sizeof(*e));
	if (!e) {
		/* cannot wrap: hand NCCL the user's handle unwrapped is not
		 * possible either (stop would not know it), so drop it */
		*eHandle = NULL;
		return r;
	}
	e->magic = EV_MAGIC;
	e->type = (uint32_t)type;
	e->inner = ih;
	e->logged = logged;
	e->what[0] = 0;
	if (logged) {
		if (type == NRR_PROF_PROXY_OP && po)
			snprintf(e->what, sizeof(e->what), "ProxyOp rank=%d channel=%u peer=%d nSteps=%d chunkSize=%d isSend=%d pid=%d",
				 rank, (unsigned)po->channelId, po->peer, po->nSteps, po->chunkSize, po->isSend, (int)po->pid);
		else if (type == NRR_PROF_NET_PLUGIN && np)
			describe_net(e->what, sizeof(e->what), rank, np);
		else
			snprintf(e->what, sizeof(e->what), "%s rank=%d", type_name(type), rank);
		char *sp = strchr(e->what, ' ');
		size_t tl = sp ? (size_t)(sp - e->what) : strlen(e->what);
		plog(NRR_NCCL_LOG_INFO, "profiler %.*s start%s", (int)tl, e->what, sp ? sp : "");
	}
	*eHandle = e;
	return r;
}

static void ev_log_stop(const struct pev *e)
{
	const char *sp = strchr(e->what, ' ');
	size_t tl = sp ? (size_t)(sp - e->what) : strlen(e->what);
	plog(NRR_NCCL_LOG_INFO, "profiler %.*s stop%s", (int)tl, e->what, sp ? sp : "");
}

/* State changes ncclrr records: ProxyCtrl states, NetPlugin updates, the
 * v4+ ProxyOp in-progress mark. @append: ProxyCtrl appendedProxyOps or -1. */
static void ev_log_state(const struct pev *e, int state, int append)
{
	if (!e->logged)
		return;
	const char *sp = strchr(e->what, ' ');
	size_t tl = sp ? (size_t)(sp - e->what) : strlen(e->what);
	const char *cs = ctrl_state_name(state);
	if (e->type == NRR_PROF_PROXY_CTRL && cs) {
		if (append >= 0 && (state == NRR_PROF_STATE_PROXY_CTRL_APPEND || state == NRR_PROF_STATE_PROXY_CTRL_APPEND_END))
			plog(NRR_NCCL_LOG_TRACE, "profiler %.*s state=%s appendedProxyOps=%d%s", (int)tl, e->what, cs, append, sp ? sp : "");
		else
			plog(NRR_NCCL_LOG_TRACE, "profiler %.*s state=%s%s", (int)tl, e->what, cs, sp ? sp : "");
	} else if (e->type == NRR_PROF_NET_PLUGIN && state == NRR_PROF_STATE_NET_PLUGIN_UPDATE) {
		plog(NRR_NCCL_LOG_TRACE, "profiler %.*s update%s", (int)tl, e->what, sp ? sp : "");
	} else if (e->type == NRR_PROF_PROXY_OP && state == NRR_PROF_STATE_PROXY_OP_IN_PROGRESS_V4) {
		plog(NRR_NCCL_LOG_TRACE, "profiler %.*s state=InProgress%s", (int)tl, e->what, sp ? sp : "");
	}
}

/* Set up a context after the user profiler's init (if any) ran. */
static void ctx_setup(struct pctx *c, int version, nrr_nccl_result ir, bool have_inner, int *mask, int ours)
{
	c->inner_ok = have_inner && ir == NRR_NCCL_SUCCESS;
	c->inner_mask = c->inner_ok ? *mask : 0;
	if (have_inner && ir != NRR_NCCL_SUCCESS)
		plog(NRR_NCCL_LOG_WARN, "ncclrr: Cannot use the profiler plugin: init=%d (its events are lost; ncclrr records its own)", ir);
	*mask = c->inner_mask | ours;
	plog(NRR_NCCL_LOG_INFO, "profiler init v%d inner=%s innerMask=0x%x mask=0x%x", version,
	     c->inner_ok ? "yes" : "none", (unsigned)c->inner_mask, (unsigned)*mask);
}

#define OURS_V12 (NRR_PROF_PROXY_OP | NRR_PROF_PROXY_CTRL)
#define OURS_V3 (NRR_PROF_PROXY_OP | NRR_PROF_PROXY_CTRL | NRR_PROF_NET_PLUGIN)

/* ------------------------------------------------------------ per version */
/* stopEvent / finalize / recordEventState are alike apart from types. */
#define NRR_PROF_COMMON(K, OURS) \
static nrr_nccl_result p##K##_fwd_start(void *ictx, void **h, void *arg) \
{ \
	return IN(K)->startEvent(ictx, h, arg); \
} \
static nrr_nccl_result p##K##_stopEvent(void *eHandle) \
{ \
	struct pev *e = eHandle; \
	nrr_nccl_result r = NRR_NCCL_SUCCESS; \
	if (!e) \
		return r; \
	if (e->inner && IN(K)) \
		r = IN(K)->stopEvent(e->inner); \
	if (e->logged) \
		ev_log_stop(e); \
	e->magic = 0; \
	free(e); \
	return r; \
} \
static nrr_nccl_result p##K##_finalize(void *context) \
{ \
	struct pctx *c = context; \
	nrr_nccl_result r = NRR_NCCL_SUCCESS; \
	if (!c) \
		return r; \
	if (c->inner_ok && IN(K)) \
		r = IN(K)->finalize(c->inner_ctx); \
	plog(NRR_NCCL_LOG_INFO, "profiler finalize v%d", K); \
	free(c); \
	return r; \
} \
static nrr_nccl_result p##K##_start(void *context, void **eHandle, nrr_prof_descr_v##K *d) \
{ \
	nrr_prof_descr_v##K copy = *d; \
	copy.parentObj = unwrap(d->parentObj, d->type == NRR_PROF_PROXY_OP ? d->proxyOp.pid : self_pid); \
	NRR_PROF_UNWRAP_EXTRA_##K(copy, d); \
	return ev_start(context, eHandle, d->type, d->rank, OURS, \
			d->type == NRR_PROF_PROXY_OP ? &d->proxyOp : NULL, NRR_PROF_NP_##K(d), \
			IN(K) ? p##K##_fwd_start : NULL, &copy); \
}

/* v5 coll/p2p descriptors carry a second parent handle. */
#define NRR_PROF_UNWRAP_EXTRA_1(c, d) (void)0
#define NRR_PROF_UNWRAP_EXTRA_2(c, d) (void)0
#define NRR_PROF_UNWRAP_EXTRA_3(c, d) (void)0
#define NRR_PROF_UNWRAP_EXTRA_4(c, d) (void)0
#define NRR_PROF_UNWRAP_EXTRA_5(c, d) do { \
	if ((d)->type == NRR_PROF_COLL) (c).coll.parentGroup = unwrap((d)->coll.parentGroup, self_pid); \
	else if ((d)->type == NRR_PROF_P2P) (c).p2p.parentGroup = unwrap((d)->p2p.parentGroup, self_pid); \
} while (0)
#define NRR_PROF_NP_1(d) NULL
#define NRR_PROF_NP_2(d) NULL
#define NRR_PROF_NP_3(d) ((d)->type == NRR_PROF_NET_PLUGIN ? &(d)->netPlugin : NULL)
#define NRR_PROF_NP_4 NRR_PROF_NP_3
#define NRR_PROF_NP_5 NRR_PROF_NP_3

/* v1..v3: init(ctx, mask); state args with proxyOp/proxyCtrl */
#define NRR_PROF_V13(K, OURS) \
NRR_PROF_COMMON(K, OURS) \
static nrr_nccl_result p##K##_init(void **context, int *mask) \
{ \
	struct pctx *c = calloc(1, sizeof(*c)); \
	if (!c) \
		return NRR_NCCL_SYSTEM_ERROR; \
	nrr_nccl_result ir = NRR_NCCL_SUCCESS; \
	if (IN(K)) \
		ir = IN(K)->init(&c->inner_ctx, mask); \
	else if (inner_err[0]) \
		plog(NRR_NCCL_LOG_WARN, "%s", inner_err); \
	ctx_setup(c, K, ir, IN(K) != NULL, mask, OURS); \
	*context = c; \
	return NRR_NCCL_SUCCESS; \
} \
static nrr_nccl_result p##K##_record(void *eHandle, int state, nrr_prof_state_args_v##K *args) \
{ \
	struct pev *e = eHandle; \
	nrr_nccl_result r = NRR_NCCL_SUCCESS; \
	if (!e) \
		return r; \
	if (e->inner && IN(K)) \
		r = IN(K)->recordEventState(e->inner, state, args); \
	ev_log_state(e, state, args && e->type == NRR_PROF_PROXY_CTRL ? args->proxyCtrl.appendedProxyOps : -1); \
	return r; \
} \
static nrr_ncclProfiler_v##K tbl_v##K = { "ncclrr", p##K##_init, p##K##_start, p##K##_stopEvent, p##K##_record, p##K##_finalize };

#define NRR_PROF_RECORD_V45(K) \
static nrr_nccl_result p##K##_record(void *eHandle, int state, nrr_prof_state_args_v##K *args) \
{ \
	struct pev *e = eHandle; \
	nrr_nccl_result r = NRR_NCCL_SUCCESS; \
	if (!e) \
		return r; \
	if (e->inner && IN(K)) \
		r = IN(K)->recordEventState(e->inner, state, args); \
	ev_log_state(e, state, args && e->type == NRR_PROF_PROXY_CTRL ? args->proxyCtrl.appendedProxyOps : -1); \
	return r; \
}

#define NRR_EXPORT_PROF(K) \
static void (*resolve_prof_v##K(void))(void) \
{ \
	pthread_once(&inner_once, inner_load); \
	if (IN(K)) { \
		tbl_v##K.name = IN(K)->name; \
		return (void (*)(void))(void *)&tbl_v##K; \
	} \
	if (inner_any) \
		return NULL; \
	return (void (*)(void))(void *)&tbl_v##K; \
} \
NRR_EXPORT void ncclProfiler_v##K(void) __attribute__((ifunc("resolve_prof_v" #K)));

NRR_PROF_V13(1, OURS_V12)
NRR_EXPORT_PROF(1)
#if NRR_PROF_MAX >= 2
NRR_PROF_V13(2, OURS_V12)
NRR_EXPORT_PROF(2)
#endif
#if NRR_PROF_MAX >= 3
NRR_PROF_V13(3, OURS_V3)
NRR_EXPORT_PROF(3)
#endif

#if NRR_PROF_MAX >= 4
NRR_PROF_COMMON(4, OURS_V3)
NRR_PROF_RECORD_V45(4)
static nrr_nccl_result p4_init(void **context, int *mask, const char *commName, uint64_t commHash, int nNodes,
			       int nranks, int rank, nrr_nccl_logger logfn)
{
	struct pctx *c = calloc(1, sizeof(*c));
	if (!c)
		return NRR_NCCL_SYSTEM_ERROR;
	nrr_nccl_result ir = NRR_NCCL_SUCCESS;
	if (IN(4))
		ir = IN(4)->init(&c->inner_ctx, mask, commName, commHash, nNodes, nranks, rank, logfn);
	else if (inner_err[0] && logfn)
		logfn(NRR_NCCL_LOG_WARN, NRR_NCCL_INIT | NRR_NCCL_PROFILE, __FILE__, __LINE__, "%s", inner_err);
	ctx_setup(c, 4, ir, IN(4) != NULL, mask, OURS_V3);
	plog(NRR_NCCL_LOG_INFO, "profiler comm commName=%s commHash=0x%llx nNodes=%d nranks=%d rank=%d",
	     commName ? commName : "", (unsigned long long)commHash, nNodes, nranks, rank);
	*context = c;
	return NRR_NCCL_SUCCESS;
}
static nrr_ncclProfiler_v4 tbl_v4 = { "ncclrr", p4_init, p4_start, p4_stopEvent, p4_record, p4_finalize };
NRR_EXPORT_PROF(4)
#endif

#if NRR_PROF_MAX >= 5
NRR_PROF_COMMON(5, OURS_V3)
NRR_PROF_RECORD_V45(5)
static nrr_nccl_result p5_init(void **context, uint64_t commId, int *mask, const char *commName, int nNodes,
			       int nranks, int rank, nrr_nccl_logger logfn)
{
	struct pctx *c = calloc(1, sizeof(*c));
	if (!c)
		return NRR_NCCL_SYSTEM_ERROR;
	nrr_nccl_result ir = NRR_NCCL_SUCCESS;
	if (IN(5))
		ir = IN(5)->init(&c->inner_ctx, commId, mask, commName, nNodes, nranks, rank, logfn);
	else if (inner_err[0] && logfn)
		logfn(NRR_NCCL_LOG_WARN, NRR_NCCL_INIT | NRR_NCCL_PROFILE, __FILE__, __LINE__, "%s", inner_err);
	ctx_setup(c, 5, ir, IN(5) != NULL, mask, OURS_V3);
	plog(NRR_NCCL_LOG_INFO, "profiler comm commName=%s commId=0x%llx nNodes=%d nranks=%d rank=%d",
	     commName ? commName : "", (unsigned long long)commId, nNodes, nranks, rank);
	*context = c;
	return NRR_NCCL_SUCCESS;
}
static nrr_ncclProfiler_v5 tbl_v5 = { "ncclrr", p5_init, p5_start, p5_stopEvent, p5_record, p5_finalize };
NRR_EXPORT_PROF(5)
#endif

NRR_EXPORT const int ncclrr_profiler_wrapper_version = NRR_PROF_MAX;
