/* SPDX-License-Identifier: MIT */
/*
 * rnet.c - ncclNet plugin calls (domain "net") replayed against a live
 * ncclNet plugin: ncclrr's own transport of the kind recorded (the traced
 * plugin, metadata env.NCCLRR_NET_PLUGIN, was ncclrr's IB one: its verbs
 * transport libnccl-net-ncclrr-ib.so over the fake verbs; otherwise its
 * socket transport libnccl-net-ncclrr-socket.so), unless `ncclrr replay
 * --net-plugin PATH` names another one.  The plugin is loaded only when
 * the trace has net calls; tables v6 .. v11 are accepted.
 *
 * What the environment decided comes from the trace: the devices and their
 * properties (the recorded NICs are not this machine's; live device 0 is
 * used), and every "not ready" answer (a connect or accept that gave no
 * comm yet, an isend/irecv without a free slot, a test that was not done).
 * A "not ready" connect, accept or test still calls the plugin once, so
 * that the live connection moves forward as the recorded one did (a comm
 * or completion it gives early is kept for the recorded ready call); a
 * ready one is called until the plugin says ready.
 *
 * Handles exchanged out of band: listen publishes recorded handle bytes
 * -> live handle bytes in the coordinator's table ("nethdl"); connect
 * looks its recorded handle up there.  Plugins keep connect state in the
 * caller's handle buffer (ncclrr-socket and NCCL's IB transport do), so a
 * connection in progress keeps one live handle buffer, found again by the
 * recorded bytes that differ least from the last ones seen.
 *
 * Payloads are not recorded: isend/irecv use scratch buffers of the
 * recorded sizes (inside the registered scratch region when the recorded
 * mhandle is known), and a completed test compares the sizes.
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "engine.h"
#include "nccl_net_types.h"
#include "nrr_launch.h"

/* ncclrr's own transports: the file, where the build tree has it, and
 * what a user calls it (NCCL_NET_PLUGIN=NAME loads libnccl-net-NAME.so) */
static const struct transport {
	const char *name, *file, *build_dir, *what;
} transports[] = {
	{ "ncclrr-socket", "libnccl-net-ncclrr-socket.so", "../replayer/transport/socket", "ncclrr's socket net plugin" },
	{ "ncclrr-ib", "libnccl-net-ncclrr-ib.so", "../replayer/transport/ib", "ncclrr's IB net plugin" },
};
#define HMAX NRR_NET_HANDLE_MAXSIZE
#define MAX_RECVS 8

enum obj_kind { O_LISTEN = 1, O_SEND, O_RECV, O_MR, O_REQ };

struct obj {                  /* recorded pointer -> live one */
	uint8_t kind;
	bool served;          /* made by a call answered from the trace: its users are too */
	uint64_t rec;
	void *live;
	void *early;          /* O_LISTEN: a comm a not-ready accept got */
	uint8_t *buf;         /* O_MR: scratch region; O_REQ: scratch buffers to free */
	size_t size;
	int n;                /* O_REQ: buffers */
	uint8_t *bufs[MAX_RECVS];
	bool done;            /* O_REQ: the live request completed at a not-ready test */
	int sizes[MAX_RECVS];
};

struct conn {                 /* a connect in progress */
	uint8_t rec[HMAX];    /* the last recorded handle bytes */
	uint8_t live[HMAX];   /* the live handle buffer the plugin keeps its state in */
	uint8_t mask[HMAX];   /* bytes the live plugin has changed in it */
	uint32_t stream;
	void *early;          /* a comm a not-ready connect got */
};

struct rnet {
	struct nrr_rproc *p;
	pthread_mutex_t mu;
	void *dl;
	int ver;
	union {
		const nrr_ncclNet_v6 *v6;
		const nrr_ncclNet_v7 *v7;
		const nrr_ncclNet_v8 *v8;
		const nrr_ncclNet_v9 *v9;
		const nrr_ncclNet_v10 *v10;
		const nrr_ncclNet_v11 *v11;
	} t;
	char path[4096];
	bool inited;
	int init_rc;
	void *ctx;            /* v11: the one live context */
	struct obj *o;
	size_t no, ocap;
	struct conn *cn;
	size_t ncn, cncap;
};

bool rnet_handles(const nrr_fn_schema *fn)
{
	return fn && !strcmp(fn->domain, "net");
}

/* ------------------------------------------------------------ loading */
static void quiet_logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...)
{
	(void)flags;
	if (!getenv("NCCL_DEBUG"))
		return;
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "ncclrr replay: net plugin [%d] %s:%d ", level, file, line);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* The transport a trace's net calls replay through: the one of ncclrr's
 * whose name the traced plugin has (a path or NCCL's short name), else the
 * socket one. */
static const struct transport *recorded_transport(nrr_reader *r)
{
	const char *rec = nrr_reader_meta(r, "env.NCCLRR_NET_PLUGIN");
	const char *base = rec ? strrchr(rec, '/') : NULL;
	base = base ? base + 1 : rec;
	for (size_t i = 0; base && i < sizeof(transports) / sizeof(transports[0]); i++)
		if (!strcmp(base, transports[i].name) || !strcmp(base, transports[i].file))
			return &transports[i];
	return &transports[0];
}

static int find_plugin(const struct nrr_rproc *p, char *buf, size_t size, char *err, size_t errlen)
{
	const struct nrr_replay_opts *o = p->o;
	if (o->net_plugin && *o->net_plugin) {
		snprintf(buf, size, "%s", o->net_plugin);
		return 0;
	}
	const char *env = getenv("NCCLRR_NET_PLUGIN_REPLAY");
	struct stat sb;
	if (env && *env && stat(env, &sb) == 0 && S_ISREG(sb.st_mode)) {
		snprintf(buf, size, "%s", env);
		return 0;
	}
	/* the build tree (build/cli/ncclrr), then installed (bin/ncclrr, lib*) */
	const struct transport *t = recorded_transport(p->r);
	const char *const rel[] = { t->build_dir, NRR_PKGLIBDIR, NULL };
	char dir[4096];
	int r = nrr_find_near_exe("NCCLRR_NET_PLUGIN_REPLAY", t->file, rel, t->what, dir, sizeof(dir), err, errlen);
	if (r < 0)
		return r;
	if ((size_t)snprintf(buf, size, "%s/%s", dir, t->file) >= size) {
		snprintf(err, errlen, "net plugin path too long: %s/%s", dir, t->file);
		return -ENAMETOOLONG;
	}
	return 0;
}

static bool has_net_calls(const struct nrr_rproc *p)
{
	for (size_t i = 0; i < p->ns; i++)
		for (size_t k = 0; k < p->s[i].n; k++)
			if (p->s[i].u[k].kind == U_EXEC && rnet_handles(p->s[i].u[k].c.fn))
				return true;
	return false;
}

int rnet_open(struct rnet **out, struct nrr_rproc *p, char *err, size_t errlen)
{
	*out = NULL;
	if (!has_net_calls(p))
		return 0;
	struct rnet *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->p = p;
	pthread_mutex_init(&s->mu, NULL);
	int r = find_plugin(p, s->path, sizeof(s->path), err, errlen);
	if (r < 0) {
		free(s);
		return r;
	}
	s->dl = dlopen(s->path, RTLD_NOW | RTLD_LOCAL);
	if (!s->dl) {
		snprintf(err, errlen, "Cannot load the net plugin %s: %s (--net-plugin PATH names another)", s->path, dlerror());
		free(s);
		return -ENOENT;
	}
	static const char *const sym[] = { NULL, NULL, NULL, NULL, NULL, NULL, "ncclNetPlugin_v6", "ncclNetPlugin_v7",
					   "ncclNetPlugin_v8", "ncclNetPlugin_v9", "ncclNetPlugin_v10", "ncclNetPlugin_v11" };
	for (int v = NRR_NET_VERSION_MAX; v >= NRR_NET_VERSION_MIN && !s->ver; v--) {
		const void *t = dlsym(s->dl, sym[v]);
		if (t) {
			s->ver = v;
			s->t.v6 = t;
		}
	}
	if (!s->ver) {
		snprintf(err, errlen, "Cannot use %s as a net plugin: it has no ncclNetPlugin_v6 .. _v11 table", s->path);
		dlclose(s->dl);
		free(s);
		return -ENOENT;
	}
	const char *rec = nrr_reader_meta(p->r, "env.NCCLRR_NET_PLUGIN");
	if (nrr_debug_topic("net"))
		fprintf(stderr, "ncclrr replay: %s: ncclNet calls through %s (v%d; recorded with %s)\n",
			p->pi->who, s->path, s->ver, rec && *rec ? rec : "an unnamed plugin");
	*out = s;
	return 0;
}

void rnet_close(struct rnet *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->no; i++) {
		free(s->o[i].buf);
		for (int j = 0; j < s->o[i].n; j++)
			free(s->o[i].bufs[j]);
	}
	free(s->o);
	free(s->cn);
	/* the plugin stays loaded: its threads and sockets go with the process */
	free(s);
}

/* ------------------------------------------------------------ the table, by version */
static int p_init(struct rnet *s)
{
	switch (s->ver) {
	case 6: return s->t.v6->init(quiet_logger);
	case 7: return s->t.v7->init(quiet_logger);
	case 8: return s->t.v8->init(quiet_logger);
	case 9: return s->t.v9->init(quiet_logger);
	case 10: return s->t.v10->init(quiet_logger, NULL);
	default: return s->t.v11->init(&s->ctx, 0, NULL, quiet_logger, NULL);
	}
}

static int p_listen(struct rnet *s, void *handle, void **comm)
{
	return s->ver >= 11 ? s->t.v11->listen(s->ctx, 0, handle, comm) : s->t.v6->listen(0, handle, comm);
}

static int p_connect(struct rnet *s, void *handle, void **comm)
{
	void *dev = NULL;
	nrr_ncclNetCommConfig cfg = { 0 };
	switch (s->ver) {
	case 6: return s->t.v6->connect(0, handle, comm);
	case 10: return s->t.v10->connect(0, &cfg, handle, comm, &dev);
	case 11: return s->t.v11->connect(s->ctx, 0, handle, comm, &dev);
	default: return s->t.v7->connect(0, handle, comm, &dev);
	}
}

static int p_accept(struct rnet *s, void *lc, void **comm)
{
	void *dev = NULL;
	return s->ver == 6 ? s->t.v6->accept(lc, comm) : s->t.v7->accept(lc, comm, &dev);
}

static int p_regmr(struct rnet *s, void *comm, void *data, size_t size, void **mh)
{
	if (s->ver <= 7)
		return size > INT32_MAX ? NRR_NCCL_INVALID_ARGUMENT : s->t.v6->regMr(comm, data, (int)size, 1, mh);
	return s->t.v8->regMr(comm, data, size, 1, mh);   /* NCCL_PTR_HOST: scratch is host memory */
}

static int p_isend(struct rnet *s, void *comm, void *data, size_t size, int tag, void *mh, void **req)
{
	if (s->ver <= 8)
		return size > INT32_MAX ? NRR_NCCL_INVALID_ARGUMENT : s->t.v6->isend(comm, data, (int)size, tag, mh, req);
	if (s->ver == 9)
		return s->t.v9->isend(comm, data, size, tag, mh, req);
	return s->t.v10->isend(comm, data, size, tag, mh, NULL, req);
}

static int p_irecv(struct rnet *s, void *comm, int n, void **data, const size_t *sizes, int *tags, void **req)
{
	void *mh[MAX_RECVS] = { 0 }, *ph[MAX_RECVS] = { 0 };
	if (s->ver <= 8) {
		int isz[MAX_RECVS];
		for (int i = 0; i < n; i++) {
			if (sizes[i] > INT32_MAX)
				return NRR_NCCL_INVALID_ARGUMENT;
			isz[i] = (int)sizes[i];
		}
		return s->t.v6->irecv(comm, n, data, isz, tags, mh, req);
	}
	size_t sz[MAX_RECVS];
	memcpy(sz, sizes, sizeof(size_t) * (size_t)n);
	if (s->ver == 9)
		return s->t.v9->irecv(comm, n, data, sz, tags, mh, req);
	return s->t.v10->irecv(comm, n, data, sz, tags, mh, ph, req);
}

/* Members at the same place in every version. */
#define P(s, m) ((s)->t.v6->m)

/* ------------------------------------------------------------ helpers */
static int64_t arg_i(const nrr_call *c, const char *name, int64_t dflt)
{
	int i = nrr_arg_index(c, name);
	return i < 0 ? dflt : (int64_t)c->args[i].u;
}


static const char *nccl_name(int64_t r)
{
	static const char *const n[] = { "ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError",
					 "ncclInternalError", "ncclInvalidArgument", "ncclInvalidUsage",
					 "ncclRemoteError", "ncclInProgress" };
	return r >= 0 && r < 8 ? n[r] : "ncclResult?";
}

/* Compare the live ncclResult_t with the recorded one. @return true when they agree. */
static bool check_result(nrr_rres *res, const nrr_call *c, int live)
{
	res->result = live;
	if (live == c->result)
		return true;
	nrr_rres_set(res, NRR_R_DIVERGED, "result: recorded %s (%" PRId64 "), replayed %s (%d)", nccl_name(c->result), c->result,
		 nccl_name(live), live);
	return false;
}

/* Under s->mu. */
static struct obj *obj_find(struct rnet *s, int kind, uint64_t rec)
{
	for (size_t i = s->no; i-- > 0;)
		if (s->o[i].rec == rec && (s->o[i].kind == kind || (kind == 0 && (s->o[i].kind == O_SEND || s->o[i].kind == O_RECV))))
			return &s->o[i];
	return NULL;
}

static void obj_free(struct obj *o)
{
	free(o->buf);
	for (int j = 0; j < o->n; j++)
		free(o->bufs[j]);
}

/* Under s->mu: a new mapping for @rec (an old one of the same kind, whose
 * recorded pointer the program has reused, is dropped). */
static struct obj *obj_put(struct rnet *s, int kind, uint64_t rec, void *live)
{
	struct obj *o = obj_find(s, kind, rec);
	if (o) {
		obj_free(o);
	} else {
		if (!nrr_grow(&s->o, s->no, &s->ocap, sizeof(*s->o)))
			return NULL;
		o = &s->o[s->no++];
	}
	memset(o, 0, sizeof(*o));
	o->kind = (uint8_t)kind;
	o->rec = rec;
	o->live = live;
	return o;
}

static void obj_del(struct rnet *s, struct obj *o)
{
	obj_free(o);
	*o = s->o[--s->no];
}

/* The live object recorded arg @name stands for: NULL with *@o NULL when
 * it is unknown (res set: unsupported), *@o->served when it is served from
 * the trace (res set: injected). */
static struct obj *lookup(struct rnet *s, const nrr_call *c, const char *name, int kind, nrr_rres *res)
{
	uint64_t rec = (uint64_t)arg_i(c, name, 0);
	struct obj *o = obj_find(s, kind, rec);
	if (!o) {
		nrr_rres_set(res, NRR_R_UNSUPPORTED, "%s=%#" PRIx64 " was not made by a replayed call (answered from the trace)", name, rec);
		return NULL;
	}
	if (o->served) {
		nrr_rres_injected(res, c);
		return NULL;
	}
	return o;
}

static void mark_served(struct rnet *s, int kind, const nrr_call *c, const char *name)
{
	uint64_t rec = (uint64_t)arg_i(c, name, 0);
	if (!rec)
		return;
	struct obj *o = obj_put(s, kind, rec, NULL);
	if (o)
		o->served = true;
}

/* A recorded failure is answered from the trace, unless --inject none. */
static bool answer_failure(struct rnet *s, const nrr_call *c)
{
	return c->result != 0 && s->p->o->inject != NRR_INJECT_NONE;
}

/* Between two live tries of a call that was ready in the recording:
 * yield at first, then sleep 50 us (the peer may be a while). */
static void pause_a_little(unsigned *tries)
{
	if ((*tries)++ < 200) {
		sched_yield();
		return;
	}
	struct timespec t = { 0, 50000L };
	nanosleep(&t, NULL);
}

/* ------------------------------------------------------------ calls */
/* Under s->mu.  Live init once per process: the recorded process may have
 * inherited an initialised plugin (fork) and never called init itself. */
static int ensure_init(struct rnet *s)
{
	if (!s->inited) {
		s->inited = true;
		s->init_rc = p_init(s);
	}
	return s->init_rc;
}

static int r_init(struct rnet *s, const nrr_call *c, nrr_rres *res)
{
	if (answer_failure(s, c))
		return nrr_rres_injected(res, c);
	bool first = !s->inited;
	int r = ensure_init(s);
	if (!first)       /* later inits (v11: one per communicator) share the live one */
		return nrr_rres_injected(res, c);
	check_result(res, c, r);
	return 0;
}

static int r_listen(struct rnet *s, const nrr_call *c, nrr_rres *res)
{
	if (answer_failure(s, c)) {
		mark_served(s, O_LISTEN, c, "listenComm");
		return nrr_rres_injected(res, c);
	}
	int hi = nrr_arg_index(c, "handle");
	if (hi < 0)
		return nrr_rres_set(res, NRR_R_UNSUPPORTED, "the handle listen gave was not recorded");
	if (ensure_init(s))
		return nrr_rres_set(res, NRR_R_DIVERGED, "the live plugin's init failed (%s): nothing can listen", nccl_name(s->init_rc));
	uint8_t live[HMAX] = { 0 };
	void *lc = NULL;
	int r = p_listen(s, live, &lc);
	if (!check_result(res, c, r))
		return 0;
	size_t rl;
	uint8_t *rec = nrr_arg_bytes(c, hi, &rl);
	if (!rec)
		return -ENOMEM;
	int pr = nrr_xmap_put("nethdl", rec, rl < HMAX ? rl : HMAX, live, HMAX);
	free(rec);
	if (pr < 0)
		return nrr_rres_set(res, NRR_R_DIVERGED, "cannot publish the listen handle: %s (replay table full)", strerror(-pr));
	if (!obj_put(s, O_LISTEN, (uint64_t)arg_i(c, "listenComm", 0), lc))
		return -ENOMEM;
	return 0;
}

/* Under s->mu: the connect in progress of stream @stream whose handle is
 * @rec, or was before the plugin wrote its state into it: equal outside
 * the bytes the live plugin changed in its own handle buffer; with
 * @written, also equal outside bytes that were 0 in the last recorded
 * handle (where a plugin keeps its state, first NULL).  Matches are
 * unique or none. */
static struct conn *conn_find(struct rnet *s, const uint8_t *rec, uint32_t stream, bool written)
{
	struct conn *hit = NULL;
	for (size_t i = 0; i < s->ncn; i++) {
		struct conn *cn = &s->cn[i];
		if (cn->stream != stream)
			continue;
		size_t j;
		for (j = 0; j < HMAX && (cn->mask[j] || cn->rec[j] == rec[j] || (written && !cn->rec[j])); j++)
			;
		if (j == HMAX) {
			if (hit)
				return NULL;
			hit = cn;
		}
	}
	if (hit && written)    /* what the recorded plugin wrote: state from now on */
		for (size_t j = 0; j < HMAX; j++)
			hit->mask[j] |= hit->rec[j] != rec[j];
	return hit;
}

static int r_connect(struct rnet *s, struct rstream *st, const nrr_call *c, nrr_rres *res)
{
	if (answer_failure(s, c)) {
		mark_served(s, O_SEND, c, "sendComm");
		return nrr_rres_injected(res, c);
	}
	int hi = nrr_arg_index(c, "handle");
	if (hi < 0)
		return nrr_rres_set(res, NRR_R_UNSUPPORTED, "the handle connect was given was not recorded");
	uint8_t rec[HMAX] = { 0 };
	memcpy(rec, c->args[hi].p, c->args[hi].len < HMAX ? c->args[hi].len : HMAX);
	bool ready = arg_i(c, "sendComm", 0) != 0;
	struct conn *cn = conn_find(s, rec, st->index, false);
	uint8_t live[HMAX];
	size_t vl = sizeof(live);
	int g = -1;
	if (!cn) {   /* a new connect: its handle is one a listen gave */
		g = nrr_xmap_get("nethdl", rec, HMAX, live, &vl, 0);
		if (g < 0)   /* or a connect in progress whose handle the recorded plugin wrote into */
			cn = conn_find(s, rec, st->index, true);
	}
	if (!cn && g < 0) {
		/* the listener may not have listened yet: wait (without the lock) */
		pthread_mutex_unlock(&s->mu);
		g = nrr_xmap_get("nethdl", rec, HMAX, live, &vl, s->p->o->timeout_s * 1000);
		pthread_mutex_lock(&s->mu);
		if (g < 0) {
			mark_served(s, O_SEND, c, "sendComm");
			return nrr_rres_set(res, NRR_R_UNSUPPORTED, "no replayed process listened on this handle (answered from the trace)");
		}
	}
	if (!cn) {
		if (!nrr_grow(&s->cn, s->ncn, &s->cncap, sizeof(*s->cn)))
			return -ENOMEM;
		cn = &s->cn[s->ncn++];
		memset(cn, 0, sizeof(*cn));
		memcpy(cn->live, live, vl < HMAX ? vl : HMAX);
		cn->stream = st->index;
	}
	memcpy(cn->rec, rec, HMAX);
	if (ensure_init(s))
		return nrr_rres_set(res, NRR_R_DIVERGED, "the live plugin's init failed (%s): nothing can connect", nccl_name(s->init_rc));
	void *comm = cn->early;
	cn->early = NULL;
	int r = 0;
	unsigned tries = 0;
	/* not ready: one live try, its comm kept; ready: try until it comes */
	while (!comm) {
		uint8_t before[HMAX];
		memcpy(before, cn->live, HMAX);
		r = p_connect(s, cn->live, &comm);
		for (size_t j = 0; j < HMAX; j++)
			cn->mask[j] |= before[j] != cn->live[j];
		if (r || !ready)
			break;
		pthread_mutex_unlock(&s->mu);
		pause_a_little(&tries);
		pthread_mutex_lock(&s->mu);
		if (!(cn = conn_find(s, rec, st->index, false)))   /* the table may have moved */
			return nrr_rres_set(res, NRR_R_DIVERGED, "lost the connect in progress");
	}
	if (r) {
		check_result(res, c, r);
		return 0;
	}
	if (!ready) {
		cn->early = comm;
		return nrr_rres_injected(res, c);
	}
	*cn = s->cn[--s->ncn];
	if (!comm)
		return nrr_rres_set(res, NRR_R_DIVERGED, "stopped before the live connect was ready");
	if (!obj_put(s, O_SEND, (uint64_t)arg_i(c, "sendComm", 0), comm))
		return -ENOMEM;
	check_result(res, c, 0);
	return 0;
}

static int r_accept(struct rnet *s, const nrr_call *c, nrr_rres *res)
{
	struct obj *lo = lookup(s, c, "listenComm", O_LISTEN, res);
	if (!lo) {
		if (res->status == NRR_R_INJECTED)
			mark_served(s, O_RECV, c, "recvComm");
		return 0;
	}
	if (answer_failure(s, c)) {
		mark_served(s, O_RECV, c, "recvComm");
		return nrr_rres_injected(res, c);
	}
	uint64_t lrec = lo->rec;
	bool ready = arg_i(c, "recvComm", 0) != 0;
	void *comm = lo->early;
	unsigned tries = 0;
	lo->early = NULL;
	int r = 0;
	while (!comm) {
		lo = obj_find(s, O_LISTEN, lrec);
		if (!lo)
			return nrr_rres_set(res, NRR_R_DIVERGED, "the listen comm was closed while accepting");
		r = p_accept(s, lo->live, &comm);
		if (r || !ready)
			break;
		pthread_mutex_unlock(&s->mu);
		pause_a_little(&tries);
		pthread_mutex_lock(&s->mu);
	}
	if (r) {
		check_result(res, c, r);
		return 0;
	}
	if (!ready) {
		lo = obj_find(s, O_LISTEN, lrec);
		if (lo)
			lo->early = comm;
		return nrr_rres_injected(res, c);
	}
	if (!comm)
		return nrr_rres_set(res, NRR_R_DIVERGED, "stopped before the live accept was ready");
	if (!obj_put(s, O_RECV, (uint64_t)arg_i(c, "recvComm", 0), comm))
		return -ENOMEM;
	check_result(res, c, 0);
	return 0;
}

static int r_regmr(struct rnet *s, const nrr_call *c, nrr_rres *res)
{
	struct obj *co = lookup(s, c, "comm", 0, res);
	if (!co) {
		if (res->status == NRR_R_INJECTED)
			mark_served(s, O_MR, c, "mhandle");
		return 0;
	}
	if (answer_failure(s, c)) {
		mark_served(s, O_MR, c, "mhandle");
		return nrr_rres_injected(res, c);
	}
	size_t size = (size_t)arg_i(c, "size", 0);
	uint8_t *buf = calloc(1, size ? size : 1);
	if (!buf)
		return nrr_rres_set(res, NRR_R_UNSUPPORTED, "cannot allocate a scratch region of the recorded %zu bytes", size);
	void *mh = NULL;
	int r = p_regmr(s, co->live, buf, size, &mh);
	if (!check_result(res, c, r)) {
		free(buf);
		return 0;
	}
	struct obj *o = obj_put(s, O_MR, (uint64_t)arg_i(c, "mhandle", 0), mh);
	if (!o) {
		free(buf);
		return -ENOMEM;
	}
	o->buf = buf;
	o->size = size;
	return 0;
}

static int r_deregmr(struct rnet *s, const nrr_call *c, nrr_rres *res)
{
	struct obj *co = lookup(s, c, "comm", 0, res);
	if (!co)
		return 0;
	void *comm = co->live;
	struct obj *mo = lookup(s, c, "mhandle", O_MR, res);
	if (!mo)
		return 0;
	if (answer_failure(s, c))
		return nrr_rres_injected(res, c);
	int r = P(s, deregMr)(comm, mo->live);
	if (r == 0)
		obj_del(s, mo);
	check_result(res, c, r);
	return 0;
}

/* A buffer for @size bytes: inside the scratch region of recorded mhandle
 * @mo when it fits (a plugin such as IB sends only from registered memory),
 * else a new one, returned in *@own to be freed with the request. */
static uint8_t *scratch(struct obj *mo, size_t size, uint8_t **own)
{
	*own = NULL;
	if (mo && mo->buf && size <= mo->size)
		return mo->buf;
	*own = calloc(1, size ? size : 1);
	return *own;
}

static int r_isend(struct rnet *s, const nrr_call *c, nrr_rres *res)
{
	struct obj *co = lookup(s, c, "sendComm", O_SEND, res);
	if (!co) {
		if (res->status == NRR_R_INJECTED)
			mark_served(s, O_REQ, c, "request");
		return 0;
	}
	uint64_t rreq = (uint64_t)arg_i(c, "request", 0);
	if (!rreq)                   /* no free slot: timing */
		return nrr_rres_injected(res, c);
	if (answer_failure(s, c))
		return nrr_rres_injected(res, c);
	uint64_t rmh = (uint64_t)arg_i(c, "mhandle", 0);
	struct obj *mo = rmh ? obj_find(s, O_MR, rmh) : NULL;
	size_t size = (size_t)arg_i(c, "size", 0);
	uint8_t *own;
	uint8_t *buf = scratch(mo, size, &own);
	if (!buf)
		return nrr_rres_set(res, NRR_R_UNSUPPORTED, "cannot allocate a scratch buffer of the recorded %zu bytes", size);
	void *req = NULL;
	int r;
	unsigned tries = 0;
	for (;;) {
		co = obj_find(s, O_SEND, (uint64_t)arg_i(c, "sendComm", 0));
		mo = rmh ? obj_find(s, O_MR, rmh) : NULL;
		if (!co) {
			free(own);
			return nrr_rres_set(res, NRR_R_DIVERGED, "the send comm was closed while posting");
		}
		r = p_isend(s, co->live, buf, size, (int)arg_i(c, "tag", 0), mo && !mo->served ? mo->live : NULL, &req);
		if (r || req)
			break;
		pthread_mutex_unlock(&s->mu);
		pause_a_little(&tries);
		pthread_mutex_lock(&s->mu);
	}
	if (!check_result(res, c, r) || !req) {
		free(own);
		return req ? 0 : nrr_rres_set(res, NRR_R_DIVERGED, "stopped before the live isend had a slot");
	}
	struct obj *o = obj_put(s, O_REQ, rreq, req);
	if (!o) {
		free(own);
		return -ENOMEM;
	}
	o->n = own ? 1 : 0;
	o->bufs[0] = own;
	return 0;
}

static int r_irecv(struct rnet *s, const nrr_call *c, nrr_rres *res)
{
	struct obj *co = lookup(s, c, "recvComm", O_RECV, res);
	if (!co) {
		if (res->status == NRR_R_INJECTED)
			mark_served(s, O_REQ, c, "request");
		return 0;
	}
	uint64_t rreq = (uint64_t)arg_i(c, "request", 0);
	if (!rreq)
		return nrr_rres_injected(res, c);
	if (answer_failure(s, c))
		return nrr_rres_injected(res, c);
	int n = (int)arg_i(c, "n", 1);
	int si = nrr_arg_index(c, "sizes"), ti = nrr_arg_index(c, "tags");
	if (n < 1 || n > MAX_RECVS)
		return nrr_rres_set(res, NRR_R_UNSUPPORTED, "irecv of %d buffers (this replayer posts 1 to %d)", n, MAX_RECVS);
	if (si < 0 || c->args[si].len < (size_t)n * 8)
		return nrr_rres_set(res, NRR_R_UNSUPPORTED, "the receive sizes were not recorded");
	size_t sizes[MAX_RECVS];
	int tags[MAX_RECVS] = { 0 };
	memcpy(sizes, c->args[si].p, (size_t)n * 8);
	if (ti >= 0 && c->args[ti].len >= (size_t)n * 4)
		memcpy(tags, c->args[ti].p, (size_t)n * 4);
	uint8_t *bufs[MAX_RECVS];
	for (int j = 0; j < n; j++) {
		bufs[j] = calloc(1, sizes[j] ? sizes[j] : 1);
		if (!bufs[j]) {
			while (j-- > 0)
				free(bufs[j]);
			return nrr_rres_set(res, NRR_R_UNSUPPORTED, "cannot allocate receive buffers of the recorded sizes");
		}
	}
	void *req = NULL;
	int r;
	unsigned tries = 0;
	for (;;) {
		co = obj_find(s, O_RECV, (uint64_t)arg_i(c, "recvComm", 0));
		if (!co) {
			r = -1;
			break;
		}
		r = p_irecv(s, co->live, n, (void **)bufs, sizes, tags, &req);
		if (r || req)
			break;
		pthread_mutex_unlock(&s->mu);
		pause_a_little(&tries);
		pthread_mutex_lock(&s->mu);
	}
	struct obj *o = r == 0 && req ? obj_put(s, O_REQ, rreq, req) : NULL;
	if (!o) {
		for (int j = 0; j < n; j++)
			free(bufs[j]);
		if (r < 0)
			return nrr_rres_set(res, NRR_R_DIVERGED, "the receive comm was closed while posting");
		if (r > 0) {
			check_result(res, c, r);
			return 0;
		}
		return req ? -ENOMEM : nrr_rres_set(res, NRR_R_DIVERGED, "stopped before the live irecv had a slot");
	}
	o->n = n;
	memcpy(o->bufs, bufs, sizeof(bufs[0]) * (size_t)n);
	return 0;
}

static int r_test(struct rnet *s, const nrr_call *c, nrr_rres *res)
{
	struct obj *o = lookup(s, c, "request", O_REQ, res);
	if (!o)
		return 0;
	if (answer_failure(s, c))
		return nrr_rres_injected(res, c);
	uint64_t rreq = o->rec;
	bool rdone = arg_i(c, "done", 0) != 0;
	int done = o->done, r = 0;
	unsigned tries = 0;
	int sizes[MAX_RECVS];
	memcpy(sizes, o->sizes, sizeof(sizes));
	/* not done: one live test (it moves the transfer forward), kept when it completes */
	while (!done) {
		for (int j = 0; j < MAX_RECVS; j++)
			sizes[j] = -1;
		r = P(s, test)(o->live, &done, sizes);
		if (r || !rdone || done)
			break;
		pthread_mutex_unlock(&s->mu);
		pause_a_little(&tries);
		pthread_mutex_lock(&s->mu);
		o = obj_find(s, O_REQ, rreq);
		if (!o)
			return nrr_rres_set(res, NRR_R_DIVERGED, "the request went while testing it");
	}
	if (r) {
		check_result(res, c, r);
		return 0;
	}
	if (!rdone) {
		if (done) {
			o->done = true;
			memcpy(o->sizes, sizes, sizeof(sizes));
		}
		return nrr_rres_injected(res, c);
	}
	if (!done)
		return nrr_rres_set(res, NRR_R_DIVERGED, "stopped before the live request was done");
	int64_t rsize = arg_i(c, "sizes", -1);
	obj_del(s, o);
	if (rsize != sizes[0])
		return nrr_rres_set(res, NRR_R_DIVERGED, "size: recorded %" PRId64 ", replayed %d", rsize, sizes[0]);
	res->result = 0;
	return 0;
}

static int r_close(struct rnet *s, const nrr_call *c, const char *name, int kind, nrr_rres *res)
{
	struct obj *o = lookup(s, c, name, kind, res);
	if (!o) {
		if (res->status == NRR_R_INJECTED) {
			o = obj_find(s, kind, (uint64_t)arg_i(c, name, 0));
			if (o)
				obj_del(s, o);
		}
		return 0;
	}
	if (answer_failure(s, c))
		return nrr_rres_injected(res, c);
	int r = kind == O_SEND ? P(s, closeSend)(o->live) : kind == O_RECV ? P(s, closeRecv)(o->live) : P(s, closeListen)(o->live);
	if (r == 0) {
		o = obj_find(s, kind, (uint64_t)arg_i(c, name, 0));
		if (o)
			obj_del(s, o);
	}
	check_result(res, c, r);
	return 0;
}

int rnet_call(struct rnet *s, struct rstream *st, size_t k, nrr_rres *res)
{
	const nrr_call *c = &st->u[k].c;
	const char *n = c->fn->name;
	res->result = c->result;
	if (!s)
		return nrr_rres_set(res, NRR_R_UNSUPPORTED, "no net plugin is loaded");
	if (!strncmp(n, "ncclNet_", 8))
		n += 8;
	pthread_mutex_lock(&s->mu);
	int ret;
	if (!strcmp(n, "init"))
		ret = r_init(s, c, res);
	else if (!strcmp(n, "listen"))
		ret = r_listen(s, c, res);
	else if (!strcmp(n, "connect"))
		ret = r_connect(s, st, c, res);
	else if (!strcmp(n, "accept"))
		ret = r_accept(s, c, res);
	else if (!strcmp(n, "regMr") || !strcmp(n, "regMrDmaBuf"))   /* host scratch either way */
		ret = r_regmr(s, c, res);
	else if (!strcmp(n, "deregMr"))
		ret = r_deregmr(s, c, res);
	else if (!strcmp(n, "isend"))
		ret = r_isend(s, c, res);
	else if (!strcmp(n, "irecv"))
		ret = r_irecv(s, c, res);
	else if (!strcmp(n, "test"))
		ret = r_test(s, c, res);
	else if (!strcmp(n, "closeSend"))
		ret = r_close(s, c, "sendComm", O_SEND, res);
	else if (!strcmp(n, "closeRecv"))
		ret = r_close(s, c, "recvComm", O_RECV, res);
	else if (!strcmp(n, "closeListen"))
		ret = r_close(s, c, "listenComm", O_LISTEN, res);
	else if (!strcmp(n, "iflush")) {
		/* GPU memory made visible to the GPU: nothing to do for host scratch */
		mark_served(s, O_REQ, c, "request");
		ret = nrr_rres_injected(res, c);
	} else {
		/* devices, getProperties, makeVDevice: this machine's NICs are not
		 * the recorded ones; finalize, setNetAttr, getDeviceMr,
		 * irecvConsumed: the live plugin keeps its own state */
		ret = nrr_rres_injected(res, c);
	}
	pthread_mutex_unlock(&s->mu);
	return ret;
}
