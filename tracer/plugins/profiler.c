/* SPDX-License-Identifier: MIT */
/*
 * profiler.c - the ncclrr profiler plugin, libncclrr-profiler.so (NCCL
 * 2.23+; `ncclrr record` sets NCCL_PROFILER_PLUGIN to it).  Records the
 * events NCCL hands a profiler plugin into the process's trace, on the
 * tracer's timeline, as the calls of the `profiler` domain
 * (formats/api/profiler.api), and forwards every call to the user's
 * profiler plugin (NCCLRR_PROFILER_PLUGIN, the path the user had in
 * NCCL_PROFILER_PLUGIN), if any.
 *
 * Exports ncclProfiler_v1 .. ncclProfiler_v6 as indirect functions: with
 * a user profiler, a version it lacks resolves to NULL in dlsym, so NCCL
 * settles on a version both speak; without one, all six are there and
 * NCCL takes its newest.
 *
 * Recorded: Group, Coll, P2p, ProxyOp, ProxyStep (every version) and
 * GroupApi, CollApi, P2pApi (v5+): their start (with the descriptor's
 * fields), stop and state changes.  Other types (ProxyCtrl, KernelCh,
 * NetPlugin, KernelLaunch, CE) are only forwarded, when the user
 * profiler asks for them.
 *
 * Event handles: NCCL gets ncclrr's own event objects; each holds the
 * user profiler's handle and ncclrr's event number, and parent handles
 * in descriptors are mapped back to the user profiler's before they are
 * forwarded.  NCCL stops a collective before the proxy operations that
 * name it as parent start, so a stopped event is kept (in a ring of
 * RETIRED_MAX) before it is freed: a late child still finds its parent.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nccl_net_types.h"
#include "nrr_wrap_gen.h"   /* nrr_trace_ncclProfiler_*: exported by libncclrr-trace.so */

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
	for (int k = NRR_PROF_VERSION_MIN; k <= NRR_PROF_VERSION_MAX; k++) {
		char sym[32];
		snprintf(sym, sizeof(sym), "ncclProfiler_v%d", k);
		inner_tbl[k] = dlsym(inner_lib, sym);
		if (inner_tbl[k])
			inner_any = true;
	}
	if (!inner_any)
		snprintf(inner_err, sizeof(inner_err),
			 "ncclrr: Cannot forward to the profiler plugin: path=%s exports=none-of-ncclProfiler_v1..v%d "
			 "(events are recorded without it)", path, NRR_PROF_VERSION_MAX);
}

__attribute__((constructor)) static void inner_ctor(void)
{
	pthread_once(&inner_once, inner_load);
}

#define IN(K) ((const nrr_ncclProfiler_v##K *)inner_tbl[K])

/* A warning for the user: on stderr, as NCCL's own WARN lines go (the
 * plugin may run in any process; the tracer's log lines are NCCL's). */
static void pwarn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void pwarn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Why the user's profiler gets nothing: once per process on stderr (NCCL
 * shows its logger's WARN only with NCCL_DEBUG set), and to NCCL's
 * logger (v4+) for every communicator. */
static void inner_warn(nrr_nccl_logger logfn)
{
	static int told;
	if (!inner_err[0])
		return;
	if (!__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED))
		pwarn("%s", inner_err);
	if (logfn)
		logfn(NRR_NCCL_LOG_WARN, NRR_NCCL_INIT | NRR_NCCL_PROFILE, __FILE__, __LINE__, "%s", inner_err);
}

/* ------------------------------------------------------------ contexts and events */
struct pctx {
	void *inner_ctx;
	int inner_mask;    /* what the user's profiler asked for */
	bool inner_ok;     /* its init succeeded */
	int version;
};

#define EV_MAGIC 0x4e525250u /* "PRRN" */

struct pev {
	uint32_t magic;
	uint32_t type;
	uint64_t id;        /* ncclrr's event number, as recorded */
	void *inner;        /* the user profiler's handle, or NULL */
	bool recorded;
};

static uint64_t next_id;

#define RETIRED_MAX 4096
static pthread_mutex_t retired_mu = PTHREAD_MUTEX_INITIALIZER;
static struct pev *retired[RETIRED_MAX];
static unsigned retired_next;

static void ev_retire(struct pev *e)
{
	pthread_mutex_lock(&retired_mu);
	struct pev *old = retired[retired_next];
	retired[retired_next] = e;
	retired_next = (retired_next + 1) % RETIRED_MAX;
	pthread_mutex_unlock(&retired_mu);
	if (old) {
		old->magic = 0;
		free(old);
	}
}

/* Ours, when @p is a handle ncclrr gave NCCL in this process.  A ProxyOp's
 * parent lives in the rank's process (@pid), which may be another one. */
static const struct pev *ours(const void *p, pid_t pid)
{
	const struct pev *e = p;
	return p && pid == self_pid && e->magic == EV_MAGIC ? e : NULL;
}

/* The user profiler's handle for a parent handle NCCL gives back. */
static void *unwrap(void *p, pid_t pid)
{
	const struct pev *e = ours(p, pid);
	return e ? e->inner : p;
}

/* A descriptor of any version, as recorded. */
struct pdesc {
	uint64_t type;
	void *parent;
	pid_t parent_pid;
	int rank;
	uint64_t seq;
	const char *func, *datatype, *algo, *proto;
	size_t count;
	int root, peer, nch, depth, step;
	const nrr_prof_proxy_op *po;
};

#define REC(FN, ...) do { \
	nrr_trace_ncclProfiler_##FN##_enter(__VA_ARGS__); \
	nrr_trace_ncclProfiler_##FN##_leave(r, 0, __VA_ARGS__); \
} while (0)

static void record_start(const struct pdesc *d, uint64_t id, nrr_nccl_result r)
{
	const struct pev *pe = ours(d->parent, d->parent_pid);
	uint64_t parent = pe ? pe->id : 0;
	int type = (int)d->type;

	switch (d->type) {
	case NRR_PROF_GROUP:
	case NRR_PROF_GROUP_API:
		REC(groupStart, id, parent, d->rank, type, d->depth);
		break;
	case NRR_PROF_COLL:
	case NRR_PROF_COLL_API:
		REC(collStart, id, parent, d->rank, type, d->seq, d->func, d->count, d->datatype, d->root, d->nch, d->algo,
		    d->proto);
		break;
	case NRR_PROF_P2P:
	case NRR_PROF_P2P_API:
		REC(p2pStart, id, parent, d->rank, type, d->func, d->count, d->datatype, d->peer, d->nch);
		break;
	case NRR_PROF_PROXY_OP:
		REC(proxyOpStart, id, parent, d->rank, (int)d->po->pid, (int)d->po->channelId, d->po->peer, d->po->nSteps,
		    d->po->chunkSize, d->po->isSend);
		break;
	case NRR_PROF_PROXY_STEP:
		REC(proxyStepStart, id, parent, d->rank, d->step);
		break;
	default:
		break;
	}
}

/* Start an event: forward (when the user profiler wants @d's type), then
 * record.  @fwd calls the user profiler's startEvent with @arg, a copy of
 * the descriptor whose parent handles are mapped. */
static nrr_nccl_result ev_start(struct pctx *c, void **eHandle, const struct pdesc *d, uint64_t ours_mask,
				nrr_nccl_result (*fwd)(void *inner_ctx, void **h, void *arg), void *arg)
{
	void *ih = NULL;
	nrr_nccl_result r = NRR_NCCL_SUCCESS;

	if (c && c->inner_ok && (d->type & (uint64_t)c->inner_mask) && fwd)
		r = fwd(c->inner_ctx, &ih, arg);
	bool recorded = (d->type & ours_mask) != 0;
	struct pev *e = recorded || ih ? malloc(sizeof(*e)) : NULL;
	if (!e) {
		/* nothing to keep, or no memory: NCCL then gives no stop */
		if (recorded || ih)
			pwarn("ncclrr: profiler: out of memory: an event of type 0x%llx is lost",
			     (unsigned long long)d->type);
		*eHandle = NULL;
		return r;
	}
	e->magic = EV_MAGIC;
	e->type = (uint32_t)d->type;
	e->id = __atomic_add_fetch(&next_id, 1, __ATOMIC_RELAXED);
	e->inner = ih;
	e->recorded = recorded;
	if (recorded)
		record_start(d, e->id, r);
	*eHandle = e;
	return r;
}

static nrr_nccl_result ev_stop(struct pev *e, nrr_nccl_result (*stop)(void *))
{
	nrr_nccl_result r = NRR_NCCL_SUCCESS;
	if (!e)
		return r;
	if (e->inner && stop)
		r = stop(e->inner);
	if (e->recorded)
		REC(stop, e->id, (int)e->type);
	ev_retire(e);
	return r;
}

static void ev_state(const struct pev *e, int state, uint64_t value, nrr_nccl_result r)
{
	if (e && e->recorded)
		REC(state, e->id, (int)e->type, state, value);
}

/* Set up a context after the user profiler's init (if any) ran, and
 * record it. */
static void ctx_setup(struct pctx *c, int version, nrr_nccl_result ir, bool have_inner, int *mask, int ours_mask,
		      const char *commName, uint64_t commId, int nNodes, int nranks, int rank)
{
	nrr_nccl_result r = ir;
	c->version = version;
	c->inner_ok = have_inner && ir == NRR_NCCL_SUCCESS;
	c->inner_mask = c->inner_ok ? *mask : 0;
	if (have_inner && ir != NRR_NCCL_SUCCESS)
		pwarn("ncclrr: Cannot use the profiler plugin: init=%d (its events are lost; ncclrr records its own)", ir);
	*mask = c->inner_mask | ours_mask;
	REC(init, version, commName, commId, nNodes, nranks, rank, *mask, c->inner_mask);
}

static nrr_nccl_result ctx_finalize(struct pctx *c, nrr_nccl_result (*fin)(void *))
{
	nrr_nccl_result r = NRR_NCCL_SUCCESS;
	if (!c)
		return r;
	if (c->inner_ok && fin)
		r = fin(c->inner_ctx);
	REC(finalize, c->version);
	free(c);
	return r;
}

#define OURS_V14 (NRR_PROF_GROUP | NRR_PROF_COLL | NRR_PROF_P2P | NRR_PROF_PROXY_OP | NRR_PROF_PROXY_STEP)
#define OURS_V5 (OURS_V14 | NRR_PROF_GROUP_API | NRR_PROF_COLL_API | NRR_PROF_P2P_API)

/* ------------------------------------------------------------ descriptors of each version */
static void fill_common(struct pdesc *p, uint64_t type, void *parent, int rank, const nrr_prof_proxy_op *po)
{
	memset(p, 0, sizeof(*p));
	p->type = type;
	p->parent = parent;
	p->rank = rank;
	p->parent_pid = self_pid;
	if (type == NRR_PROF_PROXY_OP) {
		p->po = po;
		p->parent_pid = po->pid;
	}
}

static void fill_v1(struct pdesc *p, const nrr_prof_descr_v1 *d)
{
	fill_common(p, d->type, d->parentObj, d->rank, &d->proxyOp);
	if (d->type == NRR_PROF_COLL) {   /* v1 names func, type, algo, proto by code: not recorded */
		p->seq = d->coll.seqNumber;
		p->count = d->coll.count;
		p->root = d->coll.root;
		p->nch = d->coll.nMaxChannels;
	} else if (d->type == NRR_PROF_P2P) {
		p->count = d->p2p.count;
		p->peer = d->p2p.peer;
	} else if (d->type == NRR_PROF_PROXY_STEP) {
		p->step = d->proxyStep.step;
	}
}

/* v2 .. v6 spell coll/p2p alike; NCH: the channel count's member. */
#define FILL_COLL_P2P(p, d, NCH) do { \
	if ((d)->type == NRR_PROF_COLL) { \
		(p)->seq = (d)->coll.seqNumber; (p)->func = (d)->coll.func; (p)->count = (d)->coll.count; \
		(p)->datatype = (d)->coll.datatype; (p)->root = (d)->coll.root; (p)->nch = (d)->coll.NCH; \
		(p)->algo = (d)->coll.algo; (p)->proto = (d)->coll.proto; \
	} else if ((d)->type == NRR_PROF_P2P) { \
		(p)->func = (d)->p2p.func; (p)->count = (d)->p2p.count; (p)->datatype = (d)->p2p.datatype; \
		(p)->peer = (d)->p2p.peer; \
	} else if ((d)->type == NRR_PROF_PROXY_STEP) { \
		(p)->step = (d)->proxyStep.step; \
	} \
} while (0)

static void fill_v2(struct pdesc *p, const nrr_prof_descr_v2 *d)
{
	fill_common(p, d->type, d->parentObj, d->rank, &d->proxyOp);
	FILL_COLL_P2P(p, d, nMaxChannels);
}

static void fill_v3(struct pdesc *p, const nrr_prof_descr_v3 *d)
{
	fill_common(p, d->type, d->parentObj, d->rank, &d->proxyOp);
	FILL_COLL_P2P(p, d, nMaxChannels);
}

static void fill_v4(struct pdesc *p, const nrr_prof_descr_v4 *d)
{
	fill_common(p, d->type, d->parentObj, d->rank, &d->proxyOp);
	FILL_COLL_P2P(p, d, nChannels);
	if (d->type == NRR_PROF_P2P)
		p->nch = d->p2p.nChannels;
}

/* v5 and v6 add the API events */
#define FILL_V56(p, d) do { \
	fill_common(p, (d)->type, (d)->parentObj, (d)->rank, &(d)->proxyOp); \
	FILL_COLL_P2P(p, d, nChannels); \
	if ((d)->type == NRR_PROF_P2P) { \
		(p)->nch = (d)->p2p.nChannels; \
	} else if ((d)->type == NRR_PROF_GROUP_API) { \
		(p)->depth = (d)->groupApi.groupDepth; \
	} else if ((d)->type == NRR_PROF_COLL_API) { \
		(p)->func = (d)->collApi.func; (p)->count = (d)->collApi.count; \
		(p)->datatype = (d)->collApi.datatype; (p)->root = (d)->collApi.root; \
	} else if ((d)->type == NRR_PROF_P2P_API) { \
		(p)->func = (d)->p2pApi.func; (p)->count = (d)->p2pApi.count; (p)->datatype = (d)->p2pApi.datatype; \
	} \
} while (0)

static void fill_v5(struct pdesc *p, const nrr_prof_descr_v5 *d)
{
	FILL_V56(p, d);
}

static void fill_v6(struct pdesc *p, const nrr_prof_descr_v6 *d)
{
	FILL_V56(p, d);
}

/* The state's number: a proxy op's (v1-v3) or step's (v4+) transSize. */
static uint64_t state_value_v1(const struct pev *e, const nrr_prof_state_args_v1 *a)
{
	return a && e && e->type == NRR_PROF_PROXY_OP ? a->proxyOp.transSize : 0;
}

static uint64_t state_value_v4(const struct pev *e, const nrr_prof_state_args_v4 *a)
{
	return a && e && e->type == NRR_PROF_PROXY_STEP ? a->proxyStep.transSize : 0;
}
#define state_value_v2 state_value_v1
#define state_value_v3 state_value_v1
#define state_value_v5 state_value_v4
#define state_value_v6 state_value_v4

/* v5+ coll/p2p descriptors carry a second parent handle. */
#define UNWRAP_GROUP_1(c, d) (void)0
#define UNWRAP_GROUP_2(c, d) (void)0
#define UNWRAP_GROUP_3(c, d) (void)0
#define UNWRAP_GROUP_4(c, d) (void)0
#define UNWRAP_GROUP_5(c, d) do { \
	if ((d)->type == NRR_PROF_COLL) (c).coll.parentGroup = unwrap((d)->coll.parentGroup, self_pid); \
	else if ((d)->type == NRR_PROF_P2P) (c).p2p.parentGroup = unwrap((d)->p2p.parentGroup, self_pid); \
} while (0)
#define UNWRAP_GROUP_6 UNWRAP_GROUP_5

/* ------------------------------------------------------------ per version */
#define PROF_COMMON(K, OURS) \
static nrr_nccl_result p##K##_fwd_start(void *ictx, void **h, void *arg) \
{ \
	return IN(K)->startEvent(ictx, h, arg); \
} \
static nrr_nccl_result p##K##_fwd_stop(void *h) \
{ \
	return IN(K)->stopEvent(h); \
} \
static nrr_nccl_result p##K##_fwd_fin(void *ictx) \
{ \
	return IN(K)->finalize(ictx); \
} \
static nrr_nccl_result p##K##_stopEvent(void *eHandle) \
{ \
	return ev_stop(eHandle, IN(K) ? p##K##_fwd_stop : NULL); \
} \
static nrr_nccl_result p##K##_finalize(void *context) \
{ \
	return ctx_finalize(context, IN(K) ? p##K##_fwd_fin : NULL); \
} \
static nrr_nccl_result p##K##_start(void *context, void **eHandle, nrr_prof_descr_v##K *d) \
{ \
	struct pdesc pd; \
	fill_v##K(&pd, d); \
	nrr_prof_descr_v##K copy = *d; \
	copy.parentObj = unwrap(d->parentObj, pd.parent_pid); \
	UNWRAP_GROUP_##K(copy, d); \
	return ev_start(context, eHandle, &pd, OURS, IN(K) ? p##K##_fwd_start : NULL, &copy); \
} \
static nrr_nccl_result p##K##_record(void *eHandle, int state, nrr_prof_state_args_v##K *args) \
{ \
	struct pev *e = eHandle; \
	nrr_nccl_result r = NRR_NCCL_SUCCESS; \
	if (!e) \
		return r; \
	if (e->inner && IN(K)) \
		r = IN(K)->recordEventState(e->inner, state, args); \
	ev_state(e, state, state_value_v##K(e, args), r); \
	return r; \
}

/* One version: PARAMS is its init's parameter list, INNER the arguments
 * that pass them on, LOGFN NCCL's logger (v4+) or NULL, COMM the
 * communicator's (name, id, nodes, ranks, rank) as recorded. */
#define ARGS(...) __VA_ARGS__
#define PROF_VERSION(K, OURS, PARAMS, INNER, LOGFN, COMM) \
PROF_COMMON(K, OURS) \
static nrr_nccl_result p##K##_init PARAMS \
{ \
	struct pctx *c = calloc(1, sizeof(*c)); \
	if (!c) \
		return NRR_NCCL_SYSTEM_ERROR; \
	nrr_nccl_result ir = NRR_NCCL_SUCCESS; \
	if (IN(K)) \
		ir = IN(K)->init INNER; \
	else \
		inner_warn(LOGFN); \
	ctx_setup(c, K, ir, IN(K) != NULL, mask, OURS, ARGS COMM); \
	*context = c; \
	return NRR_NCCL_SUCCESS; \
} \
static nrr_ncclProfiler_v##K tbl_v##K = { "ncclrr", p##K##_init, p##K##_start, p##K##_stopEvent, p##K##_record, \
					   p##K##_finalize };

/* v1..v3: init(ctx, mask), no communicator details */
#define PROF_V13(K) \
PROF_VERSION(K, OURS_V14, (void **context, int *mask), (&c->inner_ctx, mask), NULL, (NULL, 0, 0, 0, -1))
/* v4: commHash after the name */
#define PROF_V4(K) \
PROF_VERSION(K, OURS_V14, (void **context, int *mask, const char *commName, uint64_t commHash, int nNodes, \
			   int nranks, int rank, nrr_nccl_logger logfn), \
	     (&c->inner_ctx, mask, commName, commHash, nNodes, nranks, rank, logfn), logfn, \
	     (commName, commHash, nNodes, nranks, rank))
/* v5, v6: commId first */
#define PROF_V56(K) \
PROF_VERSION(K, OURS_V5, (void **context, uint64_t commId, int *mask, const char *commName, int nNodes, \
			  int nranks, int rank, nrr_nccl_logger logfn), \
	     (&c->inner_ctx, commId, mask, commName, nNodes, nranks, rank, logfn), logfn, \
	     (commName, commId, nNodes, nranks, rank))

/* With a user profiler: only the versions it has, named as it is. */
#define EXPORT_PROF(K) \
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

PROF_V13(1)
EXPORT_PROF(1)
PROF_V13(2)
EXPORT_PROF(2)
PROF_V13(3)
EXPORT_PROF(3)
PROF_V4(4)
EXPORT_PROF(4)
PROF_V56(5)
EXPORT_PROF(5)
PROF_V56(6)
EXPORT_PROF(6)
