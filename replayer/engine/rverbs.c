/* SPDX-License-Identifier: MIT */
/*
 * rverbs.c - what replaying verbs calls needs beyond rcuda.c's generic
 * dispatch: the verbs remap table (QP numbers, rkeys with the memory they
 * cover, GIDs), which crosses processes through the coordinator's table
 * (xmap.c), and the devices of ibv_get_device_list, which the trace does
 * not list (only the list's address is recorded).
 *
 * Keys of the cross-process table are the recorded GID of the port that
 * owns the object (16 bytes) followed by the recorded 32-bit number: QP
 * numbers and rkeys are unique per HCA, not per cluster (the fake fabric
 * hands out the same rkeys in every process).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ncclrr_config.h"
#include "replay_internal.h"
#if NCCLRR_HAVE_VERBS
#include <infiniband/verbs.h>
#endif

#define KEY_LEN 20   /* GID + number */

static void key_of(uint8_t key[KEY_LEN], const uint8_t gid[16], uint32_t num)
{
	memcpy(key, gid, 16);
	memcpy(key + 16, &num, 4);
}

int nrr_rverbs_put_qpn(const uint8_t rec_gid[16], uint32_t rec_qpn, uint32_t live_qpn)
{
	uint8_t key[KEY_LEN];
	key_of(key, rec_gid, rec_qpn);
	return nrr_xmap_put("vqpn", key, sizeof(key), &live_qpn, sizeof(live_qpn));
}

int nrr_rverbs_get_qpn(const uint8_t rec_gid[16], uint32_t rec_qpn, uint32_t *live_qpn, int timeout_ms)
{
	uint8_t key[KEY_LEN];
	uint32_t v = 0;
	size_t vl = sizeof(v);
	key_of(key, rec_gid, rec_qpn);
	int e = nrr_xmap_get("vqpn", key, sizeof(key), &v, &vl, timeout_ms);
	if (e < 0)
		return e;
	if (vl != sizeof(v))
		return -EPROTO;
	*live_qpn = v;
	return 0;
}

/* value of an rkey: the live rkey and both bases of the region it covers */
struct mrval {
	uint32_t live_rkey;
	uint64_t rec_addr, len, live_addr;
};

int nrr_rverbs_put_mr(const uint8_t rec_gid[16], uint32_t rec_rkey, uint64_t rec_addr, uint64_t len,
		      uint32_t live_rkey, uint64_t live_addr)
{
	uint8_t key[KEY_LEN];
	struct mrval v = { live_rkey, rec_addr, len, live_addr };
	key_of(key, rec_gid, rec_rkey);
	return nrr_xmap_put("vmr", key, sizeof(key), &v, sizeof(v));
}

int nrr_rverbs_remote(const uint8_t rec_gid[16], uint32_t rec_rkey, uint64_t rec_addr, uint64_t len,
		      uint32_t *live_rkey, uint64_t *live_addr, int timeout_ms)
{
	uint8_t key[KEY_LEN];
	struct mrval v;
	size_t vl = sizeof(v);
	key_of(key, rec_gid, rec_rkey);
	int e = nrr_xmap_get("vmr", key, sizeof(key), &v, &vl, timeout_ms);
	if (e < 0)
		return e;
	if (vl != sizeof(v))
		return -EPROTO;
	/* the access must lie inside the region, as the HCA checks it */
	if (rec_addr < v.rec_addr || len > v.len || rec_addr - v.rec_addr > v.len - len)
		return -ERANGE;
	*live_rkey = v.live_rkey;
	*live_addr = v.live_addr + (rec_addr - v.rec_addr);
	return 0;
}

int nrr_rverbs_put_gid(const uint8_t rec_gid[16], const uint8_t live_gid[16])
{
	return nrr_xmap_put("vgid", rec_gid, 16, live_gid, 16);
}

int nrr_rverbs_get_gid(const uint8_t rec_gid[16], uint8_t live_gid[16], int timeout_ms)
{
	size_t vl = 16;
	int e = nrr_xmap_get("vgid", rec_gid, 16, live_gid, &vl, timeout_ms);
	return e < 0 ? e : vl == 16 ? 0 : -EPROTO;
}

/* The index of @fn's argument @name, or -1.  A parameter's index is its
 * place in the prototype (the "result" fields come after them). */
static int arg_index(const nrr_fn_schema *fn, const char *name)
{
	for (uint16_t j = 0; j < fn->nargs; j++)
		if (!strcmp(fn->args[j].name, name))
			return j;
	return -1;
}

/* What a successful call of @fn puts into the remap table, read from its
 * schema: the GID ibv_query_gid answers, and the objects whose recorded
 * numbers verbs.api's "result" lines carry (qp_num of a QP, rkey of an
 * MR); a trace from before those lines carries none. */
enum pub { PUB_NONE, PUB_GID, PUB_QP, PUB_MR };
static enum pub publishes(const nrr_fn_schema *fn)
{
	if (!fn || strcmp(fn->domain, "verbs"))
		return PUB_NONE;
	if (!strcmp(fn->name, "ibv_query_gid"))
		return PUB_GID;
	if (arg_index(fn, "qp_num") >= 0)
		return PUB_QP;
	return arg_index(fn, "rkey") >= 0 ? PUB_MR : PUB_NONE;
}

bool nrr_rverbs_publishes(const nrr_fn_schema *fn)
{
	return publishes(fn) != PUB_NONE;
}

/* ---- devices of this process ----
 * A program opens the entries of ibv_get_device_list's answer, whose
 * addresses the trace does not keep.  Recorded devices are given the live
 * devices in the order they are first used (NCCL opens them in list order);
 * the outputs of the ibv_query_device / ibv_query_port calls that follow are
 * compared, so a wrong pairing shows as a divergence there. */
static struct {
	pthread_mutex_t mu;
	struct ibv_device **live;
	int nlive;
	uint64_t rec[64];
	int nrec;
} g_dev = { .mu = PTHREAD_MUTEX_INITIALIZER };

uint64_t nrr_rverbs_ibdev(void *verbs_lib, uint64_t rec)
{
	uint64_t live = 0;
	if (!verbs_lib || !rec)
		return 0;
	pthread_mutex_lock(&g_dev.mu);
	if (!g_dev.live) {
		struct ibv_device **(*list)(int *);
		*(void **)&list = dlsym(verbs_lib, "ibv_get_device_list");
		if (list)
			g_dev.live = list(&g_dev.nlive);   /* kept: its entries stay valid */
		if (!g_dev.live)
			g_dev.nlive = 0;
	}
	int i = 0;
	while (i < g_dev.nrec && g_dev.rec[i] != rec)
		i++;
	if (i == g_dev.nrec && g_dev.nrec < (int)(sizeof(g_dev.rec) / sizeof(g_dev.rec[0])))
		g_dev.rec[g_dev.nrec++] = rec;
	if (i < g_dev.nrec && i < g_dev.nlive)
		live = (uint64_t)(uintptr_t)g_dev.live[i];
	pthread_mutex_unlock(&g_dev.mu);
	return live;
}

/* ---- what this process's verbs calls made, published into the table ----
 * The tracer records a created QP's qp_num and an MR's lkey/rkey (the
 * "result" lines of verbs.api).  Each is published under the recorded GID
 * of the context that made it, which the process learns from its own
 * ibv_query_gid (recorded output -> live output, also published as the GID
 * remap): an object made before its context's GID was queried (NCCL's
 * connect makes the QP, then queries the GID it sends) waits in this list
 * until then.  A peer then finds the live number under the recorded GID and
 * number it was told over the (replayed) socket. */
enum { OBJ_QP, OBJ_MR };
enum stat { ST_QP = OBJ_QP, ST_MR = OBJ_MR, ST_RTR_REMAPPED, ST_RTR_UNKNOWN };   /* published; RTR destinations */
struct vobj {
	uint64_t ctx;              /* live struct ibv_context * */
	int kind;
	uint32_t rec, live;        /* qp_num or rkey */
	uint64_t rec_addr, len, live_addr;
};
struct vgid {
	uint64_t ctx;
	uint8_t rec[16];
};
static struct {
	pthread_mutex_t mu;
	struct vobj *obj;
	size_t nobj, cap;
	struct vgid gid[64];
	int ngid;
	unsigned stat[4];  /* by enum stat */
} g_v = { .mu = PTHREAD_MUTEX_INITIALIZER };

bool nrr_debug_topic(const char *topic)
{
	const char *e = getenv("NCCLRR_DEBUG");
	return e && (strstr(e, topic) || !strcmp(e, "all"));
}

static int debug_on = -1;

static bool debug(void)
{
	if (debug_on < 0)
		debug_on = nrr_debug_topic("verbs");
	return debug_on;
}

static void gid_str(char *out, const uint8_t g[16])
{
	for (int i = 0; i < 16; i++)
		sprintf(out + 2 * i, "%02x", g[i]);
}

/* under g_v.mu */
static void publish(const struct vobj *o, const uint8_t gid[16])
{
	int e = o->kind == OBJ_QP ? nrr_rverbs_put_qpn(gid, o->rec, o->live)
				  : nrr_rverbs_put_mr(gid, o->rec, o->rec_addr, o->len, o->live, o->live_addr);
	if (e == 0)
		g_v.stat[o->kind]++;
	if (debug()) {
		char gs[33];
		gid_str(gs, gid);
		fprintf(stderr, "ncclrr replay: verbs: pid %d: %s %s 0x%x -> 0x%x under gid %s%s%s\n", (int)getpid(),
			e ? "cannot publish" : "published", o->kind == OBJ_QP ? "qp_num" : "rkey", o->rec, o->live, gs,
			e ? ": " : "", e ? strerror(-e) : "");
	}
}

static void obj_made(const struct vobj *o)
{
	pthread_mutex_lock(&g_v.mu);
	if (g_v.nobj == g_v.cap) {
		size_t n = g_v.cap ? 2 * g_v.cap : 64;
		struct vobj *p = realloc(g_v.obj, n * sizeof(*p));
		if (p) {
			g_v.obj = p;
			g_v.cap = n;
		}
	}
	if (g_v.nobj < g_v.cap)
		g_v.obj[g_v.nobj++] = *o;
	for (int i = 0; i < g_v.ngid; i++)
		if (g_v.gid[i].ctx == o->ctx)
			publish(o, g_v.gid[i].rec);
	pthread_mutex_unlock(&g_v.mu);
}

static void gid_known(uint64_t ctx, const uint8_t rec[16], const uint8_t live[16])
{
	nrr_rverbs_put_gid(rec, live);
	pthread_mutex_lock(&g_v.mu);
	int i = 0;
	while (i < g_v.ngid && !(g_v.gid[i].ctx == ctx && !memcmp(g_v.gid[i].rec, rec, 16)))
		i++;
	if (i == g_v.ngid && g_v.ngid < (int)(sizeof(g_v.gid) / sizeof(g_v.gid[0]))) {
		g_v.gid[i].ctx = ctx;
		memcpy(g_v.gid[i].rec, rec, 16);
		g_v.ngid++;
		for (size_t k = 0; k < g_v.nobj; k++)
			if (g_v.obj[k].ctx == ctx)
				publish(&g_v.obj[k], rec);
	}
	pthread_mutex_unlock(&g_v.mu);
}

/* ---- QP creation and state changes ----
 * Their attributes are recorded by custom encoders (formats/api/custom.c,
 * layout in formats/api/README.md), not as C structs: rcuda.c's generic
 * dispatch cannot pass them, so they are rebuilt here. */
static __thread uint64_t t_last_cq;   /* live CQ this thread made last */

void nrr_rverbs_cq_made(uint64_t live)
{
	t_last_cq = live;
}

#if NCCLRR_HAVE_VERBS
bool nrr_rverbs_owns(const nrr_fn_schema *fn)
{
	return fn && (!strcmp(fn->name, "ibv_create_qp") || !strcmp(fn->name, "ibv_modify_qp"));
}

static const nrr_value *arg(const nrr_call *c, const char *name)
{
	for (uint16_t j = 0; j < c->fn->nargs; j++)
		if (!strcmp(c->fn->args[j].name, name) && (c->present >> j & 1))
			return &c->args[j];
	return NULL;
}

static void say(nrr_rres *res, int status, const char *f, ...) __attribute__((format(printf, 3, 4)));
static void say(nrr_rres *res, int status, const char *f, ...)
{
	va_list ap;
	res->status = status;
	va_start(ap, f);
	vsnprintf(res->why, sizeof(res->why), f, ap);
	va_end(ap);
}

/* @return false when the recorded bytes end early */
static bool uvars(const nrr_value *v, uint64_t *out, int n)
{
	const uint8_t *p = v->p, *end = v->p + v->len;
	for (int i = 0; i < n; i++)
		if (nrr_get_uvar(&p, end, &out[i]) < 0)
			return false;
	return true;
}

static int create_qp(nrr_rcuda *x, const nrr_call *c, nrr_rres *res)
{
	const nrr_value *pd = arg(c, "pd"), *ia = arg(c, "qp_init_attr");
	uint64_t f[7];
	if (!pd || !ia || !uvars(ia, f, 7)) {
		say(res, NRR_R_UNSUPPORTED, "ibv_create_qp: qp_init_attr not recorded in full");
		return 0;
	}
	bool known;
	uint64_t live_pd = nrr_rcuda_handle(x, "pd", pd->u, &known);
	if (!known) {
		say(res, NRR_R_DIVERGED, "in pd: recorded pd 0x%" PRIx64 " was made by no replayed call", pd->u);
		return 0;
	}
	/* the CQs are not recorded: the CQ this thread made last, which is
	 * how NCCL's net_ib.cc (and most programs) make a QP */
	if (!t_last_cq) {
		say(res, NRR_R_UNSUPPORTED, "ibv_create_qp: no CQ made by this thread before it (the trace does not "
					    "record send_cq/recv_cq)");
		return 0;
	}
	struct ibv_qp_init_attr a = {
		.send_cq = (struct ibv_cq *)(uintptr_t)t_last_cq,
		.recv_cq = (struct ibv_cq *)(uintptr_t)t_last_cq,
		.qp_type = (enum ibv_qp_type)f[0],
		.cap = { .max_send_wr = (uint32_t)f[1], .max_recv_wr = (uint32_t)f[2], .max_send_sge = (uint32_t)f[3],
			 .max_recv_sge = (uint32_t)f[4], .max_inline_data = (uint32_t)f[5] },
		.sq_sig_all = (int)f[6],
	};
	struct ibv_qp *(*fn)(struct ibv_pd *, struct ibv_qp_init_attr *);
	*(void **)&fn = dlsym(nrr_rcuda_verbs_lib(x), "ibv_create_qp");
	if (!fn) {
		say(res, NRR_R_UNSUPPORTED, "ibv_create_qp: not in the loaded libibverbs");
		return 0;
	}
	struct ibv_qp *qp = fn((struct ibv_pd *)(uintptr_t)live_pd, &a);
	res->result = (int64_t)(uintptr_t)qp;
	res->status = NRR_R_MATCH;
	if (!qp != !c->result) {
		say(res, NRR_R_DIVERGED, "result: recorded %s, replayed %s (errno %d)", c->result ? "a QP" : "NULL",
		    qp ? "a QP" : "NULL", qp ? 0 : errno);
		return 0;
	}
	if (qp) {
		nrr_rcuda_bind(x, "qp", (uint64_t)c->result, (uint64_t)(uintptr_t)qp);
		const nrr_value *qn = arg(c, "qp_num");   /* traces before it was recorded lack it */
		if (qn) {
			struct vobj o = { .ctx = (uint64_t)(uintptr_t)qp->context, .kind = OBJ_QP,
					  .rec = (uint32_t)qn->u, .live = qp->qp_num };
			obj_made(&o);
		}
	}
	return 0;
}

static int modify_qp(nrr_rcuda *x, const nrr_call *c, nrr_rres *res)
{
	const nrr_value *qp = arg(c, "qp"), *at = arg(c, "attr"), *mk = arg(c, "attr_mask");
	if (!qp || !at || !mk) {
		say(res, NRR_R_UNSUPPORTED, "ibv_modify_qp: arguments not recorded");
		return 0;
	}
	/* qp_state dest_qp_num rq_psn sq_psn path_mtu dlid port_num sgid_index
	 * is_global dgid[16] timeout retry_cnt rnr_retry max_rd_atomic
	 * qp_access_flags */
	uint64_t f[9], g[5];
	const uint8_t *p = at->p, *end = at->p + at->len;
	bool ok = true;
	for (int i = 0; i < 9 && ok; i++)
		ok = nrr_get_uvar(&p, end, &f[i]) == 0;
	uint8_t dgid[16];
	if (ok && end - p >= 16) {
		memcpy(dgid, p, 16);
		p += 16;
	} else {
		ok = false;
	}
	for (int i = 0; i < 5 && ok; i++)
		ok = nrr_get_uvar(&p, end, &g[i]) == 0;
	if (!ok) {
		say(res, NRR_R_UNSUPPORTED, "ibv_modify_qp: attr not recorded in full (%u bytes)", at->len);
		return 0;
	}
	bool known;
	uint64_t live_qp = nrr_rcuda_handle(x, "qp", qp->u, &known);
	if (!known) {
		say(res, NRR_R_DIVERGED, "in qp: recorded qp 0x%" PRIx64 " was made by no replayed call", qp->u);
		return 0;
	}
	int mask = (int)mk->u;
	/* not recorded by the encoder: pkey_index, min_rnr_timer,
	 * max_dest_rd_atomic, the GRH's flow label, hop limit and traffic
	 * class, sl: the values NCCL's net_ib.cc gives them */
	struct ibv_qp_attr a = {
		.qp_state = (enum ibv_qp_state)f[0],
		.dest_qp_num = (uint32_t)f[1],
		.rq_psn = (uint32_t)f[2],
		.sq_psn = (uint32_t)f[3],
		.path_mtu = (enum ibv_mtu)f[4],
		.port_num = f[6] ? (uint8_t)f[6] : 1,
		.timeout = (uint8_t)g[0],
		.retry_cnt = (uint8_t)g[1],
		.rnr_retry = (uint8_t)g[2],
		.max_rd_atomic = (uint8_t)g[3],
		.qp_access_flags = (unsigned)g[4],
		.min_rnr_timer = 12,
		.max_dest_rd_atomic = 1,
	};
	a.ah_attr.dlid = (uint16_t)f[5];
	a.ah_attr.port_num = (uint8_t)f[6];
	a.ah_attr.is_global = (uint8_t)f[8];
	a.ah_attr.grh.sgid_index = (uint8_t)f[7];
	a.ah_attr.grh.hop_limit = 255;
	memcpy(a.ah_attr.grh.dgid.raw, dgid, 16);
	/* the peer's QP number, GID: live ones when their owner published them
	 * (a QP number the table does not know is passed as recorded: a
	 * trace's QP numbers of created QPs are not recorded, see README) */
	if ((mask & IBV_QP_DEST_QPN) && a.ah_attr.is_global) {
		/* the peer published its QP before it sent the number this
		 * process was told, when that socket is replayed live; no wait:
		 * a 5 s wait for a peer whose message was answered from the
		 * trace stalled the proxy thread (memlock: replay 16 of 20 hung) */
		uint32_t lq, rq = a.dest_qp_num;
		int e = nrr_rverbs_get_qpn(dgid, rq, &lq, 0);
		if (e == 0)
			a.dest_qp_num = lq;
		pthread_mutex_lock(&g_v.mu);
		g_v.stat[e == 0 ? ST_RTR_REMAPPED : ST_RTR_UNKNOWN]++;
		pthread_mutex_unlock(&g_v.mu);
		if (debug()) {
			char gs[33];
			gid_str(gs, dgid);
			if (e == 0)
				fprintf(stderr, "ncclrr replay: verbs: pid %d: modify_qp dest_qp_num 0x%x -> 0x%x (remapped, gid %s)\n",
					(int)getpid(), rq, lq, gs);
			else
				fprintf(stderr, "ncclrr replay: verbs: pid %d: modify_qp dest_qp_num 0x%x as recorded (not published, gid %s)\n",
					(int)getpid(), rq, gs);
		}
	}
	if ((mask & IBV_QP_AV) && a.ah_attr.is_global) {
		uint8_t lg[16];
		if (nrr_rverbs_get_gid(dgid, lg, 0) == 0)
			memcpy(a.ah_attr.grh.dgid.raw, lg, 16);
	}
	int (*fn)(struct ibv_qp *, struct ibv_qp_attr *, int);
	*(void **)&fn = dlsym(nrr_rcuda_verbs_lib(x), "ibv_modify_qp");
	if (!fn) {
		say(res, NRR_R_UNSUPPORTED, "ibv_modify_qp: not in the loaded libibverbs");
		return 0;
	}
	int r = fn((struct ibv_qp *)(uintptr_t)live_qp, &a, mask);
	res->result = r;
	res->status = NRR_R_MATCH;
	if (r != c->result)
		say(res, NRR_R_DIVERGED, "result: recorded %" PRId64 " (%s), replayed %d (%s)", c->result,
		    c->result ? strerror((int)c->result) : "success", r, r ? strerror(r) : "success");
	return 0;
}

void nrr_rverbs_done(nrr_rcuda *x, const nrr_call *c, const uint64_t *slot, int64_t live)
{
	(void)x;
	switch (publishes(c->fn)) {
	case PUB_GID: {
		/* ibv_query_gid(context, port_num, index, gid) */
		const nrr_value *g = arg(c, "gid");
		int ig = arg_index(c->fn, "gid"), ic = arg_index(c->fn, "context");
		const uint8_t *lg = ig >= 0 ? (const uint8_t *)(uintptr_t)slot[ig] : NULL;
		if (g && g->len == 16 && lg && ic >= 0)
			gid_known(slot[ic], g->p, lg);
		return;
	}
	case PUB_MR: {
		/* the remote address a peer names: the iova of an iova registration
		 * (ibv_reg_mr_iova2(pd, addr, length, iova, access),
		 * ibv_reg_dmabuf_mr(pd, offset, length, iova, fd, access)), else addr */
		int iv = arg_index(c->fn, "iova");
		const nrr_value *rk = arg(c, "rkey"), *ln = arg(c, "length");
		const nrr_value *ad = arg(c, iv >= 0 ? "iova" : "addr");
		const struct ibv_mr *mr = (const struct ibv_mr *)(uintptr_t)live;
		if (!rk || !ln || !ad || !mr)
			return;
		struct vobj o = { .ctx = (uint64_t)(uintptr_t)mr->context, .kind = OBJ_MR, .rec = (uint32_t)rk->u,
				  .live = mr->rkey, .rec_addr = ad->u, .len = ln->u,
				  .live_addr = iv >= 0 ? slot[iv] : (uint64_t)(uintptr_t)mr->addr };
		obj_made(&o);
		return;
	}
	default:   /* a QP publishes in create_qp, which makes it */
		return;
	}
}

void nrr_rverbs_report(void)
{
	if (!debug() || !(g_v.nobj || g_v.stat[ST_RTR_REMAPPED] || g_v.stat[ST_RTR_UNKNOWN]))
		return;
	pthread_mutex_lock(&g_v.mu);
	fprintf(stderr, "ncclrr replay: verbs: pid %d: remap table: %u qp_num and %u rkey published, %u RTR dest_qp_num "
			"remapped, %u not found\n", (int)getpid(), g_v.stat[ST_QP], g_v.stat[ST_MR], g_v.stat[ST_RTR_REMAPPED],
		g_v.stat[ST_RTR_UNKNOWN]);
	pthread_mutex_unlock(&g_v.mu);
}

int nrr_rverbs_call(nrr_rcuda *x, const nrr_call *c, nrr_rres *res)
{
	if (!nrr_rcuda_verbs_lib(x)) {
		say(res, NRR_R_UNSUPPORTED, "%s: no libibverbs loaded", c->fn->name);
		return 0;
	}
	if (!strcmp(c->fn->name, "ibv_create_qp"))
		return create_qp(x, c, res);
	return modify_qp(x, c, res);
}
#else
bool nrr_rverbs_owns(const nrr_fn_schema *fn)
{
	(void)fn;
	return false;
}

int nrr_rverbs_call(nrr_rcuda *x, const nrr_call *c, nrr_rres *res)
{
	(void)x;
	(void)c;
	(void)res;
	return -ENOSYS;
}

void nrr_rverbs_done(nrr_rcuda *x, const nrr_call *c, const uint64_t *slot, int64_t live)
{
	(void)x;
	(void)c;
	(void)slot;
	(void)live;
}

void nrr_rverbs_report(void)
{
}
#endif
