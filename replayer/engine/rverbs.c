/* SPDX-License-Identifier: MIT */
/*
 * rverbs.c - what replaying verbs calls needs beyond rcuda.c's generic
 * dispatch: the verbs remap table (QP numbers, rkeys with the memory they
 * cover, GIDs), which crosses processes through the coordinator's table
 * (xmap.c), and the devices of ibv_get_device_list, which the trace does
 * not list (only the list's address is recorded).
 *
 * Keys of the cross-process table are the recorded address of the port
 * that owns the object (nrr_vaddr: its GID, or its LID for an RTR without
 * a GRH) followed by the recorded 32-bit number: QP numbers and rkeys are
 * unique per HCA, not per cluster.  An rkey's key also names its owner,
 * the replay process that published it: the ranks of one virtual host
 * share its NICs' GIDs and the fake fabric hands out the same rkeys in
 * every process, so (GID, rkey) alone named several ranks' regions and an
 * RDMA WRITE went to whichever published last (IBV_WC_REM_ACCESS_ERR on
 * another rank).  A QP number's value carries its owner, and a QP's RTR
 * keeps the owner of the QP it names: its RDMA accesses look rkeys up
 * under that owner.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "callfmt.h"
#include "ncclrr_config.h"
#include "replay_internal.h"
#if NCCLRR_HAVE_VERBS
#include <infiniband/verbs.h>
#endif

void nrr_vaddr_gid(nrr_vaddr *a, const uint8_t gid[16])
{
	a->kind = NRR_VADDR_GID;
	memcpy(a->b, gid, 16);
}

void nrr_vaddr_lid(nrr_vaddr *a, uint16_t lid)
{
	memset(a, 0, sizeof(*a));
	a->kind = NRR_VADDR_LID;
	memcpy(a->b, &lid, sizeof(lid));
}

uint16_t nrr_vaddr_lid_of(const nrr_vaddr *a)
{
	uint16_t lid;
	memcpy(&lid, a->b, sizeof(lid));
	return lid;
}

const char *nrr_vaddr_str(char *out, const nrr_vaddr *a)
{
	if (a->kind == NRR_VADDR_LID) {
		sprintf(out, "lid 0x%x", nrr_vaddr_lid_of(a));
		return out;
	}
	memcpy(out, "gid ", 4);
	for (int i = 0; i < 16; i++)
		sprintf(out + 4 + 2 * i, "%02x", a->b[i]);
	return out;
}

#define ADDR_LEN 17                /* kind + 16 bytes */
#define KEY_LEN (ADDR_LEN + 4)     /* address + number */

static void addr_key(uint8_t key[ADDR_LEN], const nrr_vaddr *a)
{
	key[0] = a->kind;
	memcpy(key + 1, a->b, 16);
}

static void key_of(uint8_t key[KEY_LEN], const nrr_vaddr *a, uint32_t num)
{
	addr_key(key, a);
	memcpy(key + ADDR_LEN, &num, 4);
}

/* value of a QP number: the live number and the process that owns it */
struct qpval {
	uint32_t live_qpn, owner;
};

int nrr_rverbs_put_qpn(const nrr_vaddr *rec, uint32_t rec_qpn, uint32_t live_qpn)
{
	uint8_t key[KEY_LEN];
	struct qpval v = { live_qpn, (uint32_t)getpid() };
	key_of(key, rec, rec_qpn);
	return nrr_xmap_put("vqpn", key, sizeof(key), &v, sizeof(v));
}

int nrr_rverbs_get_qpn(const nrr_vaddr *rec, uint32_t rec_qpn, uint32_t *live_qpn, uint32_t *owner, int timeout_ms)
{
	uint8_t key[KEY_LEN];
	struct qpval v;
	size_t vl = sizeof(v);
	key_of(key, rec, rec_qpn);
	int e = nrr_xmap_get("vqpn", key, sizeof(key), &v, &vl, timeout_ms);
	if (e < 0)
		return e;
	if (vl != sizeof(v))
		return -EPROTO;
	*live_qpn = v.live_qpn;
	if (owner)
		*owner = v.owner;
	return 0;
}

/* key of an rkey: the address and rkey (key_of), then the owner */
static void mr_key(uint8_t key[KEY_LEN + 4], const nrr_vaddr *a, uint32_t owner, uint32_t rkey)
{
	key_of(key, a, rkey);
	memcpy(key + KEY_LEN, &owner, 4);
}

/* value of an rkey: the live rkey and both bases of the region it covers */
struct mrval {
	uint32_t live_rkey;
	uint64_t rec_addr, len, live_addr;
};

int nrr_rverbs_put_mr(const nrr_vaddr *rec, uint32_t rec_rkey, uint64_t rec_addr, uint64_t len,
		      uint32_t live_rkey, uint64_t live_addr)
{
	uint8_t key[KEY_LEN + 4];
	struct mrval v = { live_rkey, rec_addr, len, live_addr };
	mr_key(key, rec, (uint32_t)getpid(), rec_rkey);
	return nrr_xmap_put("vmr", key, sizeof(key), &v, sizeof(v));
}

int nrr_rverbs_remote(const nrr_vaddr *rec, uint32_t owner, uint32_t rec_rkey, uint64_t rec_addr, uint64_t len,
		      uint32_t *live_rkey, uint64_t *live_addr, int timeout_ms)
{
	uint8_t key[KEY_LEN + 4];
	struct mrval v;
	size_t vl = sizeof(v);
	mr_key(key, rec, owner, rec_rkey);
	int e = nrr_xmap_get("vmr", key, sizeof(key), &v, &vl, timeout_ms);
	if (e < 0)
		return e;
	if (vl != sizeof(v))
		return -EPROTO;
	*live_rkey = v.live_rkey;
	*live_addr = v.live_addr + (rec_addr - v.rec_addr);   /* wraps below the base: still outside */
	/* the access must lie inside the region, as the HCA checks it */
	if (rec_addr < v.rec_addr || len > v.len || rec_addr - v.rec_addr > v.len - len)
		return -ERANGE;
	return 0;
}

int nrr_rverbs_put_addr(const nrr_vaddr *rec, const nrr_vaddr *live)
{
	uint8_t k[ADDR_LEN], v[ADDR_LEN];
	addr_key(k, rec);
	addr_key(v, live);
	return nrr_xmap_put("vaddr", k, sizeof(k), v, sizeof(v));
}

int nrr_rverbs_get_addr(const nrr_vaddr *rec, nrr_vaddr *live, int timeout_ms)
{
	uint8_t k[ADDR_LEN], v[ADDR_LEN];
	size_t vl = sizeof(v);
	addr_key(k, rec);
	int e = nrr_xmap_get("vaddr", k, sizeof(k), v, &vl, timeout_ms);
	if (e < 0)
		return e;
	if (vl != sizeof(v) || v[0] != rec->kind)
		return -EPROTO;
	live->kind = v[0];
	memcpy(live->b, v + 1, 16);
	return 0;
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
 * schema: the port's address (the GID ibv_query_gid answers, the LID of
 * ibv_query_port's attributes), and the objects whose recorded numbers
 * verbs.api's "result" lines carry (qp_num of a QP, rkey of an MR); a
 * trace from before those lines carries none. */
enum pub { PUB_NONE, PUB_ADDR, PUB_QP, PUB_MR };
static enum pub publishes(const nrr_fn_schema *fn)
{
	if (!fn || strcmp(fn->domain, "verbs"))
		return PUB_NONE;
	if (!strcmp(fn->name, "ibv_query_gid") || !strcmp(fn->name, "ibv_query_port"))
		return PUB_ADDR;
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
 * "result" lines of verbs.api).  Each is published under every recorded
 * address of the context that made it, which the process learns from its
 * own ibv_query_gid (the GID) and ibv_query_port (the LID of an InfiniBand
 * port), recorded output -> live output, also published as the address
 * remap: an object made before its context's address was queried (NCCL's
 * connect makes the QP, then queries the GID it sends) waits in this list
 * until then.  A peer then finds the live number under the recorded
 * address its RTR named (GID with a GRH, LID without) and the number it
 * was told over the (replayed) socket. */
enum { OBJ_QP, OBJ_MR };
enum stat { ST_QP = OBJ_QP, ST_MR = OBJ_MR, ST_RTR_REMAPPED, ST_RTR_UNKNOWN };   /* published; RTR destinations */
struct vobj {
	uint64_t ctx;              /* live struct ibv_context * */
	int kind;
	uint32_t rec, live;        /* qp_num or rkey */
	uint64_t rec_addr, len, live_addr;
	uint32_t rec_lkey, live_lkey;   /* an MR's: the local sges of a replayed post */
	bool has_lkey;                  /* traces before lkey was recorded lack it */
};
struct vknown {
	uint64_t ctx;
	nrr_vaddr rec;
};
static struct {
	pthread_mutex_t mu;
	struct vobj *obj;
	size_t nobj, cap;
	struct vknown addr[64];
	int naddr;
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

/* under g_v.mu */
static void publish(const struct vobj *o, const nrr_vaddr *a)
{
	int e = o->kind == OBJ_QP ? nrr_rverbs_put_qpn(a, o->rec, o->live)
				  : nrr_rverbs_put_mr(a, o->rec, o->rec_addr, o->len, o->live, o->live_addr);
	if (e == 0)
		g_v.stat[o->kind]++;
	if (debug()) {
		char gs[40];
		nrr_vaddr_str(gs, a);
		fprintf(stderr, "ncclrr replay: verbs: pid %d: %s %s 0x%x -> 0x%x under %s%s%s\n", (int)getpid(),
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
	for (int i = 0; i < g_v.naddr; i++)
		if (g_v.addr[i].ctx == o->ctx)
			publish(o, &g_v.addr[i].rec);
	pthread_mutex_unlock(&g_v.mu);
}

/* context @ctx's port has recorded address @rec, live @live */
static void addr_known(uint64_t ctx, const nrr_vaddr *rec, const nrr_vaddr *live)
{
	nrr_rverbs_put_addr(rec, live);
	pthread_mutex_lock(&g_v.mu);
	int i = 0;
	while (i < g_v.naddr && !(g_v.addr[i].ctx == ctx && !memcmp(&g_v.addr[i].rec, rec, sizeof(*rec))))
		i++;
	if (i == g_v.naddr && g_v.naddr < (int)(sizeof(g_v.addr) / sizeof(g_v.addr[0]))) {
		g_v.addr[i].ctx = ctx;
		g_v.addr[i].rec = *rec;
		g_v.naddr++;
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
	return fn && (!strcmp(fn->name, "ibv_create_qp") || !strcmp(fn->name, "ibv_modify_qp") ||
		      !strcmp(fn->name, "ibv_create_srq") || !strcmp(fn->name, "ibv_modify_srq") ||
		      !strcmp(fn->name, "ibv_query_srq"));
}

static const nrr_value *arg(const nrr_call *c, const char *name)
{
	for (uint16_t j = 0; j < c->fn->nargs; j++)
		if (!strcmp(c->fn->args[j].name, name) && (c->present >> j & 1))
			return &c->args[j];
	return NULL;
}

static void vsay(nrr_rres *res, int status, const char *f, va_list ap) __attribute__((format(printf, 3, 0)));
static void vsay(nrr_rres *res, int status, const char *f, va_list ap)
{
	res->status = status;
	vsnprintf(res->why, sizeof(res->why), f, ap);
}

static void say(nrr_rres *res, int status, const char *f, ...) __attribute__((format(printf, 3, 4)));
static void say(nrr_rres *res, int status, const char *f, ...)
{
	va_list ap;
	va_start(ap, f);
	vsay(res, status, f, ap);
	va_end(ap);
}

/* @r, the live result of a verb that returns 0 or an errno value (ibv_modify_qp,
 * ibv_post_send, ...), against the recorded one */
static int errno_result(nrr_rres *res, const nrr_call *c, int r)
{
	res->result = r;
	res->status = NRR_R_MATCH;
	if (r != c->result)
		say(res, NRR_R_DIVERGED, "result: recorded %" PRId64 " (%s), replayed %d (%s)", c->result,
		    c->result ? strerror((int)c->result) : "success", r, r ? strerror(r) : "success");
	return 0;
}

/* The verb @name of the loaded libibverbs, or NULL, said in @res */
static void *verb(nrr_rcuda *x, const char *name, nrr_rres *res)
{
	void *f = dlsym(nrr_rcuda_verbs_lib(x), name);
	if (!f)
		say(res, NRR_R_UNSUPPORTED, "%s: not in the loaded libibverbs", name);
	return f;
}

static void srq_user(uint64_t srq, const struct ibv_qp *qp);

/* @return false when the recorded bytes end early */
static bool uvars(const nrr_value *v, uint64_t *out, int n)
{
	const uint8_t *p = v->p, *end = v->p + v->len;
	for (int i = 0; i < n; i++)
		if (nrr_get_uvar(&p, end, &out[i]) < 0)
			return false;
	return true;
}

/* A replayed create returned @obj: the call's result; whether it made one
 * as the recording did (else DIVERGED, with errno); the recorded handle of
 * kind @kind bound to it.  @what names one ("a QP"). */
static bool made(nrr_rcuda *x, const nrr_call *c, nrr_rres *res, const char *kind, const char *what, void *obj)
{
	res->result = (int64_t)(uintptr_t)obj;
	res->status = NRR_R_MATCH;
	if (!obj != !c->result) {
		say(res, NRR_R_DIVERGED, "result: recorded %s, replayed %s (errno %d)", c->result ? what : "NULL",
		    obj ? what : "NULL", obj ? 0 : errno);
		return false;
	}
	if (obj)
		nrr_rcuda_bind(x, kind, (uint64_t)c->result, (uint64_t)(uintptr_t)obj);
	return true;
}

static int create_qp(nrr_rcuda *x, const nrr_call *c, nrr_rres *res)
{
	const nrr_value *pd = arg(c, "pd"), *ia = arg(c, "qp_init_attr");
	uint64_t f[8] = { 0 };   /* f[7], the SRQ, is not in traces written before it */
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
	uint64_t live_srq = 0;
	if (uvars(ia, f, 8) && f[7]) {
		live_srq = nrr_rcuda_handle(x, "srq", f[7], &known);
		if (!known) {
			say(res, NRR_R_DIVERGED, "in qp_init_attr: recorded srq 0x%" PRIx64 " was made by no replayed call", f[7]);
			return 0;
		}
	}
	struct ibv_qp_init_attr a = {
		.srq = (struct ibv_srq *)(uintptr_t)live_srq,
		.send_cq = (struct ibv_cq *)(uintptr_t)t_last_cq,
		.recv_cq = (struct ibv_cq *)(uintptr_t)t_last_cq,
		.qp_type = (enum ibv_qp_type)f[0],
		.cap = { .max_send_wr = (uint32_t)f[1], .max_recv_wr = (uint32_t)f[2], .max_send_sge = (uint32_t)f[3],
			 .max_recv_sge = (uint32_t)f[4], .max_inline_data = (uint32_t)f[5] },
		.sq_sig_all = (int)f[6],
	};
	struct ibv_qp *(*fn)(struct ibv_pd *, struct ibv_qp_init_attr *);
	*(void **)&fn = verb(x, "ibv_create_qp", res);
	if (!fn)
		return 0;
	struct ibv_qp *qp = fn((struct ibv_pd *)(uintptr_t)live_pd, &a);
	if (!made(x, c, res, "qp", "a QP", qp))
		return 0;
	if (qp) {
		if (live_srq)
			srq_user(live_srq, qp);
		const nrr_value *qn = arg(c, "qp_num");   /* traces before it was recorded lack it */
		if (qn) {
			struct vobj o = { .ctx = (uint64_t)(uintptr_t)qp->context, .kind = OBJ_QP,
					  .rec = (uint32_t)qn->u, .live = qp->qp_num };
			obj_made(&o);
		}
	}
	return 0;
}

static void qp_peer(uint64_t live_qp, const nrr_vaddr *peer, uint32_t owner);

/* The recorded address the address vector @ah names its peer by: the GID
 * of its GRH, else (InfiniBand without a GRH) its destination LID.
 * @return false when it names none (no GRH and LID 0: a RoCE port refuses
 * such an RTR) */
static bool ah_peer(const struct ibv_ah_attr *ah, nrr_vaddr *peer)
{
	if (ah->is_global)
		nrr_vaddr_gid(peer, ah->grh.dgid.raw);
	else if (ah->dlid)
		nrr_vaddr_lid(peer, ah->dlid);
	else
		return false;
	return true;
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
	/* the peer's QP number and address (GID or LID): live ones when their
	 * owner published them (a QP number the table does not know is passed
	 * as recorded: a trace's QP numbers of created QPs are not recorded,
	 * see README) */
	nrr_vaddr peer;
	uint32_t owner = 0;   /* the process of the peer's QP, when published */
	bool named = ah_peer(&a.ah_attr, &peer);
	if ((mask & IBV_QP_DEST_QPN) && named) {
		/* the peer published its QP before it sent the number this
		 * process was told, when that socket is replayed live; no wait:
		 * a 5 s wait for a peer whose message was answered from the
		 * trace stalled the proxy thread (memlock: replay 16 of 20 hung) */
		uint32_t lq, rq = a.dest_qp_num;
		int e = nrr_rverbs_get_qpn(&peer, rq, &lq, &owner, 0);
		if (e == 0)
			a.dest_qp_num = lq;
		pthread_mutex_lock(&g_v.mu);
		g_v.stat[e == 0 ? ST_RTR_REMAPPED : ST_RTR_UNKNOWN]++;
		pthread_mutex_unlock(&g_v.mu);
		if (debug()) {
			char gs[40];
			nrr_vaddr_str(gs, &peer);
			if (e == 0)
				fprintf(stderr, "ncclrr replay: verbs: pid %d: modify_qp dest_qp_num 0x%x -> 0x%x (remapped, %s)\n",
					(int)getpid(), rq, lq, gs);
			else
				fprintf(stderr, "ncclrr replay: verbs: pid %d: modify_qp dest_qp_num 0x%x as recorded (not published, %s)\n",
					(int)getpid(), rq, gs);
		}
	}
	nrr_vaddr live_peer;
	if ((mask & IBV_QP_AV) && named && nrr_rverbs_get_addr(&peer, &live_peer, 0) == 0) {
		if (live_peer.kind == NRR_VADDR_GID)
			memcpy(a.ah_attr.grh.dgid.raw, live_peer.b, 16);
		else
			a.ah_attr.dlid = nrr_vaddr_lid_of(&live_peer);
	}
	int (*fn)(struct ibv_qp *, struct ibv_qp_attr *, int);
	*(void **)&fn = verb(x, "ibv_modify_qp", res);
	if (!fn)
		return 0;
	int r = fn((struct ibv_qp *)(uintptr_t)live_qp, &a, mask);
	if (r == 0 && (mask & IBV_QP_AV) && named)
		qp_peer(live_qp, &peer, owner);
	return errno_result(res, c, r);
}

/* ---- shared receive queues: ibv_create_srq, ibv_modify_srq, ibv_query_srq
 * (their attributes are custom:srq_init_attr / custom:srq_attr: max_wr,
 * max_sge, srq_limit); ibv_destroy_srq is a plain handle call. */
static int srq_call(nrr_rcuda *x, const nrr_call *c, nrr_rres *res)
{
	const char *fname = c->fn->name;
	bool create = !strcmp(fname, "ibv_create_srq");
	const nrr_value *h = arg(c, create ? "pd" : "srq"), *at = arg(c, create ? "srq_init_attr" : "srq_attr");
	uint64_t f[3] = { 0 };
	/* a query's attributes are its answer: not needed to replay it */
	bool query = !strcmp(fname, "ibv_query_srq");
	if (!h || (!query && (!at || !uvars(at, f, 3)))) {
		say(res, NRR_R_UNSUPPORTED, "%s: arguments not recorded in full", fname);
		return 0;
	}
	bool known;
	uint64_t live = nrr_rcuda_handle(x, create ? "pd" : "srq", h->u, &known);
	if (!known) {
		say(res, NRR_R_DIVERGED, "in %s: recorded %s 0x%" PRIx64 " was made by no replayed call", create ? "pd" : "srq",
		    create ? "pd" : "srq", h->u);
		return 0;
	}
	struct ibv_srq_attr a = { .max_wr = (uint32_t)f[0], .max_sge = (uint32_t)f[1], .srq_limit = (uint32_t)f[2] };
	if (create) {
		struct ibv_srq *(*fn)(struct ibv_pd *, struct ibv_srq_init_attr *);
		*(void **)&fn = verb(x, fname, res);
		if (!fn)
			return 0;
		struct ibv_srq_init_attr ia = { .attr = a };
		made(x, c, res, "srq", "an SRQ", fn((struct ibv_pd *)(uintptr_t)live, &ia));
		return 0;
	}
	int r;
	if (query) {
		int (*fn)(struct ibv_srq *, struct ibv_srq_attr *);
		*(void **)&fn = verb(x, fname, res);
		if (!fn)
			return 0;
		r = fn((struct ibv_srq *)(uintptr_t)live, &a);
	} else {
		const nrr_value *mk = arg(c, "srq_attr_mask");
		int (*fn)(struct ibv_srq *, struct ibv_srq_attr *, int);
		*(void **)&fn = verb(x, fname, res);
		if (!fn)
			return 0;
		r = fn((struct ibv_srq *)(uintptr_t)live, &a, mk ? (int)mk->u : 0);
	}
	return errno_result(res, c, r);
}

/* ---- the data path: ibv_post_send, ibv_post_recv, ibv_post_srq_recv, ibv_poll_cq ----
 * Work requests are rebuilt from what custom:send_wr / custom:recv_wr
 * recorded (formats/api/README.md): wr_id, opcode, flags and immediate as
 * recorded; each local sge through the MR its recorded lkey names (live
 * lkey, live address at the same offset in the region); an RDMA WRITE/READ's
 * (remote address, rkey) through the table the peer published under the
 * GID this QP's RTR named.  What the trace does not keep (an older trace
 * without the sge trailer, a chain too long for it: nrr_sges_why(), an MR registered before lkeys were recorded, a
 * peer that published nothing) is answered from the trace, counted, and
 * the QP's CQs then answer their polls from the trace too: a completion of
 * a request that was not posted live never comes.
 *
 * A CQ polls live once a request was posted live on one of its QPs; its
 * live completions are queued, and each replayed poll takes as many as it
 * recorded (waiting up to POLL_WAIT_MS for them), matched by wr_id. */
#define POLL_WAIT_MS 10000   /* bound of a poll's wait: above the fake fabric's scaled retry timeouts */
#define REMOTE_WAIT_MS 2000  /* bound of a post's wait for the peer's MR (published at its ibv_reg_mr) */
#define MAX_DCQ 256
#define MAX_DQP 1024
enum cqstate { CQ_UNKNOWN, CQ_LIVE, CQ_TRACE };
enum dstat { D_POST_LIVE, D_POST_TRACE, D_WC_LIVE, D_POLL_TRACE, D_WAIT_GONE, D_WAIT_ENDED, D_WAIT_TIMEOUT, D_N };
struct dcq {
	uint64_t live;
	enum cqstate state;
	struct ibv_wc *q;
	size_t n, cap;
};
static struct {
	pthread_mutex_t mu;
	struct dcq cq[MAX_DCQ];
	int ncq;
	struct { uint64_t qp; nrr_vaddr peer; uint32_t owner; } qp[MAX_DQP];   /* the recorded peer of its RTR, its owner */
	int nqp;
	struct dsrq { uint64_t srq, cq; } srq[MAX_DQP];   /* a shared receive queue, a receive CQ of its QPs */
	int nsrq;
	unsigned stat[D_N];
	bool said[2];   /* first fallback reason said (posts, polls) */
} g_d = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* under g_d.mu; NULL when the table is full */
static struct dcq *dcq_of(uint64_t live)
{
	for (int i = 0; i < g_d.ncq; i++)
		if (g_d.cq[i].live == live)
			return &g_d.cq[i];
	if (g_d.ncq == MAX_DCQ)
		return NULL;
	struct dcq *d = &g_d.cq[g_d.ncq++];
	memset(d, 0, sizeof(*d));
	d->live = live;
	return d;
}

static void qp_peer(uint64_t live_qp, const nrr_vaddr *peer, uint32_t owner)
{
	pthread_mutex_lock(&g_d.mu);
	int i = 0;
	while (i < g_d.nqp && g_d.qp[i].qp != live_qp)
		i++;
	if (i < MAX_DQP) {
		g_d.qp[i].qp = live_qp;
		g_d.qp[i].peer = *peer;
		g_d.qp[i].owner = owner;
		if (i == g_d.nqp)
			g_d.nqp++;
	}
	pthread_mutex_unlock(&g_d.mu);
}

/* @owner: 0 when the peer's QP number was published by no process */
static bool qp_peer_of(uint64_t live_qp, nrr_vaddr *peer, uint32_t *owner)
{
	bool ok = false;
	pthread_mutex_lock(&g_d.mu);
	for (int i = 0; i < g_d.nqp && !ok; i++)
		if (g_d.qp[i].qp == live_qp) {
			*peer = g_d.qp[i].peer;
			*owner = g_d.qp[i].owner;
			ok = true;
		}
	pthread_mutex_unlock(&g_d.mu);
	return ok;
}

/* What a post goes to: a QP's receive or send queue, or a shared receive
 * queue (ibv_post_srq_recv), whose completions come on the receive CQs of
 * the QPs made with it (recorded by create_qp). */
struct wq {
	const struct ibv_qp *qp;
	const struct ibv_srq *srq;
};

/* The CQs of @w poll live (@live) or from the trace from now on: one
 * request answered from the trace makes them answer from the trace for
 * good (its completion will never come) */
static void wq_cqs(const struct wq *w, bool live)
{
	pthread_mutex_lock(&g_d.mu);
	const struct ibv_cq *cqs[2 + MAX_DQP];
	int n = 0;
	if (w->qp) {
		cqs[n++] = w->qp->send_cq;
		cqs[n++] = w->qp->recv_cq;
	}
	for (int i = 0; w->srq && i < g_d.nsrq; i++)
		if (g_d.srq[i].srq == (uint64_t)(uintptr_t)w->srq)
			cqs[n++] = (const struct ibv_cq *)(uintptr_t)g_d.srq[i].cq;
	for (int i = 0; i < n; i++) {
		struct dcq *d = cqs[i] ? dcq_of((uint64_t)(uintptr_t)cqs[i]) : NULL;
		if (d && (d->state == CQ_UNKNOWN || !live))
			d->state = live ? CQ_LIVE : CQ_TRACE;
	}
	pthread_mutex_unlock(&g_d.mu);
}

/* @qp was made with the shared receive queue @srq */
static void srq_user(uint64_t srq, const struct ibv_qp *qp)
{
	pthread_mutex_lock(&g_d.mu);
	if (g_d.nsrq < MAX_DQP)
		g_d.srq[g_d.nsrq++] = (struct dsrq){ srq, (uint64_t)(uintptr_t)qp->recv_cq };
	pthread_mutex_unlock(&g_d.mu);
}

/* The local object of context @ctx made by this process: the MR whose
 * recorded lkey is @rec (@kind OBJ_MR), or the QP whose recorded qp_num is
 * @rec (OBJ_QP); the newest one (numbers are reused after a destroy). */
static bool local_obj(uint64_t ctx, int kind, uint32_t rec, struct vobj *out)
{
	bool ok = false;
	pthread_mutex_lock(&g_v.mu);
	for (size_t k = g_v.nobj; k-- > 0 && !ok;) {
		const struct vobj *o = &g_v.obj[k];
		if (o->kind == kind && o->ctx == ctx && (kind == OBJ_MR ? o->has_lkey && o->rec_lkey == rec : o->rec == rec)) {
			*out = *o;
			ok = true;
		}
	}
	pthread_mutex_unlock(&g_v.mu);
	return ok;
}

/* the call (@which: 0 a post, 1 a poll) is answered from the trace:
 * counted; the first reason of each kind said with NCCLRR_DEBUG=verbs.  A
 * post's queue @w (NULL: none known) then has its CQs answer from the
 * trace for good (wq_cqs). */
static int from_trace(nrr_rres *res, int which, const struct wq *w, const char *f, ...)
	__attribute__((format(printf, 4, 5)));
static int from_trace(nrr_rres *res, int which, const struct wq *w, const char *f, ...)
{
	if (w)
		wq_cqs(w, false);
	va_list ap;
	va_start(ap, f);
	vsay(res, NRR_R_UNSUPPORTED, f, ap);
	va_end(ap);
	pthread_mutex_lock(&g_d.mu);
	g_d.stat[which ? D_POLL_TRACE : D_POST_TRACE]++;
	bool first = !g_d.said[which];
	g_d.said[which] = true;
	pthread_mutex_unlock(&g_d.mu);
	if (debug() && first)
		fprintf(stderr, "ncclrr replay: verbs: pid %d: data path answered from the trace: %s\n", (int)getpid(),
			res->why);
	return 0;
}

/* count a wait of worker.c's (@e: its return) as @which */
static void count_wait(int e, enum dstat which)
{
	if (!e)
		return;
	pthread_mutex_lock(&g_d.mu);
	g_d.stat[e < 0 ? D_WAIT_TIMEOUT : which]++;
	pthread_mutex_unlock(&g_d.mu);
}

/* Teardown: before a QP is destroyed, the peer that owns the QP at its
 * other end has finished what it had finished when the recorded destroy
 * began (its last RDMA WRITE into this process among them); before an MR
 * is deregistered, every peer of this process's QPs has.  Only peers
 * this process connected to, and only what they did earlier: no wait of
 * theirs waits for this one. */
void nrr_rverbs_before(nrr_rcuda *x, const nrr_call *c)
{
	if (!c->fn || strcmp(c->fn->domain, "verbs"))
		return;
	bool qp = !strcmp(c->fn->name, "ibv_destroy_qp");
	if (!qp && strcmp(c->fn->name, "ibv_dereg_mr"))
		return;
	uint64_t one = 0;
	if (qp) {
		const nrr_value *qa = arg(c, "qp");
		bool known;
		one = qa ? nrr_rcuda_handle(x, "qp", qa->u, &known) : 0;
		if (!one)
			return;
	}
	uint32_t owners[64];
	int n = 0;
	pthread_mutex_lock(&g_d.mu);
	for (int i = 0; i < g_d.nqp && n < 64; i++) {
		if ((one && g_d.qp[i].qp != one) || !g_d.qp[i].owner)
			continue;
		int j = 0;
		while (j < n && owners[j] != g_d.qp[i].owner)
			j++;
		if (j == n)
			owners[n++] = g_d.qp[i].owner;
	}
	pthread_mutex_unlock(&g_d.mu);
	for (int j = 0; j < n; j++)
		count_wait(nrr_wait_peer_ended(nrr_rcuda_proc(x), owners[j], c->ts), D_WAIT_ENDED);
}

/* One local sge, recorded (addr, length, lkey) -> live. */
static const char *map_sge(struct ibv_context *ctx, uint64_t addr, uint64_t len, uint64_t lkey, struct ibv_sge *out,
			   char *buf, size_t blen)
{
	struct vobj mr;
	if (!local_obj((uint64_t)(uintptr_t)ctx, OBJ_MR, (uint32_t)lkey, &mr)) {
		snprintf(buf, blen, "sge lkey 0x%" PRIx64 ": no replayed ibv_reg_mr recorded that lkey", lkey);
		return buf;
	}
	if (addr < mr.rec_addr || len > mr.len || addr - mr.rec_addr > mr.len - len) {
		snprintf(buf, blen, "sge 0x%" PRIx64 "+%" PRIu64 " lies outside its MR (lkey 0x%" PRIx64 ", 0x%" PRIx64
				    "+%" PRIu64 ")", addr, len, lkey, mr.rec_addr, mr.len);
		return buf;
	}
	out->addr = mr.live_addr + (addr - mr.rec_addr);
	out->length = (uint32_t)len;
	out->lkey = mr.live_lkey;
	return NULL;
}

static int post(nrr_rcuda *x, const nrr_call *c, nrr_rres *res, bool send)
{
	const char *fname = c->fn->name;
	/* ibv_post_srq_recv names an SRQ, the others a QP */
	const char *kind = arg(c, "srq") ? "srq" : "qp";
	const nrr_value *qa = arg(c, kind), *wa = arg(c, "wr");
	if (!qa || !wa || !wa->len)
		return from_trace(res, 0, NULL, "%s: work requests not recorded", fname);
	bool known;
	uint64_t live = nrr_rcuda_handle(x, kind, qa->u, &known);
	if (!known || !live)
		return from_trace(res, 0, NULL, "%s: recorded %s 0x%" PRIx64 " was made by no replayed call", fname, kind,
				  qa->u);
	struct ibv_qp *qp = kind[0] == 'q' ? (struct ibv_qp *)(uintptr_t)live : NULL;
	struct ibv_srq *srq = qp ? NULL : (struct ibv_srq *)(uintptr_t)live;
	const struct wq wq = { qp, srq };
	struct ibv_context *ctx = qp ? qp->context : srq->context;
	nrr_wr_rec w[NRR_ENTRIES_MAX];
	enum nrr_sges sges;
	int nw = nrr_wr_decode(wa, send, w, &sges);
	if (nw <= 0 || sges != NRR_SGES_KEPT) {
		enum nrr_sges why = nw <= 0 ? NRR_SGES_NONE : sges;
		return from_trace(res, 0, &wq, "%s: the trace keeps no scatter/gather list (%s%s%s)", fname,
				  nrr_sges_why(why), why == NRR_SGES_NONE ? " of custom:" : "",
				  why == NRR_SGES_NONE ? (send ? "send_wr" : "recv_wr") : "");
	}
	unsigned n = (unsigned)nw;
	struct ibv_send_wr sw[NRR_ENTRIES_MAX];
	struct ibv_recv_wr rw[NRR_ENTRIES_MAX];
	struct ibv_sge sg[NRR_ENTRIES_MAX][NRR_SGE_MAX];
	static uint8_t inl[4096];   /* inline data: its bytes are not recorded */
	memset(sw, 0, sizeof(sw));
	memset(rw, 0, sizeof(rw));
	char why[200];
	for (unsigned i = 0; i < n; i++) {
		const uint64_t *f = w[i].f;
		unsigned k = w[i].nsge;
		uint64_t tot = 0;
		bool inline_ = send && (f[2] & IBV_SEND_INLINE);
		for (unsigned j = 0; j < k; j++) {
			const nrr_sge_rec *e_ = &w[i].sge[j];
			tot += e_->len;
			const char *e = NULL;
			if (inline_)
				sg[i][j] = (struct ibv_sge){ (uint64_t)(uintptr_t)inl, (uint32_t)e_->len, 0 };
			else if (e_->len || e_->lkey)
				e = map_sge(ctx, e_->addr, e_->len, e_->lkey, &sg[i][j], why, sizeof(why));
			else
				sg[i][j] = (struct ibv_sge){ 0, 0, 0 };
			if (inline_ && tot > sizeof(inl))
				e = "inline data longer than 4096 bytes";
			if (e) {
				return from_trace(res, 0, &wq, "%s: work request %u (wr_id 0x%" PRIx64 "): %s", fname, i, f[0], e);
			}
		}
		if (!send) {
			rw[i] = (struct ibv_recv_wr){ .wr_id = f[0], .next = i + 1 < n ? &rw[i + 1] : NULL,
						      .sg_list = sg[i], .num_sge = (int)k };
			continue;
		}
		sw[i] = (struct ibv_send_wr){ .wr_id = f[0], .next = i + 1 < n ? &sw[i + 1] : NULL, .sg_list = sg[i],
					      .num_sge = (int)k, .opcode = (enum ibv_wr_opcode)f[1],
					      .send_flags = (unsigned)f[2], .imm_data = (uint32_t)f[3] };
		if (f[1] == IBV_WR_RDMA_WRITE || f[1] == IBV_WR_RDMA_WRITE_WITH_IMM || f[1] == IBV_WR_RDMA_READ) {
			nrr_vaddr peer;
			uint32_t lr, owner = 0;
			uint64_t la;
			int e = -ENOENT;
			if (qp_peer_of((uint64_t)(uintptr_t)qp, &peer, &owner))
				e = owner ? nrr_rverbs_remote(&peer, owner, (uint32_t)f[7], f[6], tot, &lr, &la, REMOTE_WAIT_MS)
					  : -ESRCH;
			/* outside the peer's region: posted so, the fabric refuses it
			 * (IBV_WC_REM_ACCESS_ERR) as the recorded HCA did */
			if (e < 0 && e != -ERANGE) {
				return from_trace(res, 0, &wq, "%s: work request %u (wr_id 0x%" PRIx64 "): remote 0x%" PRIx64 "+%" PRIu64
							  " rkey 0x%" PRIx64 ": %s", fname, i, f[0], f[6], tot, f[7],
						  e == -ENOENT ? "no replayed RTR of the QP named its peer (GID or LID)"
						  : e == -ESRCH ? "no replayed process published the QP its RTR named"
						  : "the peer published no such rkey within 2 s");
			}
			sw[i].wr.rdma.remote_addr = la;
			sw[i].wr.rdma.rkey = lr;
		}
	}
	/* a peer that was gone in the recording is gone here too before
	 * anything reaches it (completion error 12 of a dead peer) */
	nrr_vaddr peer;
	uint32_t owner = 0;
	if (send && qp_peer_of((uint64_t)(uintptr_t)qp, &peer, &owner) && owner)
		count_wait(nrr_wait_peer_gone(nrr_rcuda_proc(x), owner, c->ts), D_WAIT_GONE);
	int r;
	if (send) {
		struct ibv_send_wr *bad = NULL;
		r = ibv_post_send(qp, sw, &bad);
	} else {
		struct ibv_recv_wr *bad = NULL;
		r = qp ? ibv_post_recv(qp, rw, &bad) : ibv_post_srq_recv(srq, rw, &bad);
	}
	wq_cqs(&wq, r == 0);
	pthread_mutex_lock(&g_d.mu);
	g_d.stat[D_POST_LIVE] += r == 0 ? n : 0;
	pthread_mutex_unlock(&g_d.mu);
	return errno_result(res, c, r);
}

/* a status's name from the trace's schema (verbs.api's enum ibv_wc_status) */
static const nrr_enum_schema *g_wc_table;
static const char *wc_status(uint64_t st)
{
	const char *s = g_wc_table ? nrr_enum_name(g_wc_table, (int64_t)st) : NULL;
	return s ? s : "?";
}

/* Take the live completions of @d queued so far from its CQ. Under g_d.mu. */
static void drain(struct dcq *d)
{
	struct ibv_wc wc[16];
	int k;
	while ((k = ibv_poll_cq((struct ibv_cq *)(uintptr_t)d->live, 16, wc)) > 0) {
		if (d->n + (size_t)k > d->cap) {
			size_t m = d->cap ? 2 * d->cap : 64;
			while (m < d->n + (size_t)k)
				m *= 2;
			struct ibv_wc *q = realloc(d->q, m * sizeof(*q));
			if (!q)
				return;
			d->q = q;
			d->cap = m;
		}
		memcpy(d->q + d->n, wc, (size_t)k * sizeof(*wc));
		d->n += (size_t)k;
	}
}

static uint64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

/* Replay a poll of a live CQ: as many completions as it recorded, in the
 * order recorded, each the first queued one with its recorded wr_id and
 * from the live QP its recorded qp_num names (programs reuse one wr_id on
 * every QP of a CQ: ibv_srq_pingpong's 16), or with the wr_id alone where
 * the trace names no QP this process made; past the completions the trace
 * kept (NRR_WC_MAX, formats/callfmt.h), the oldest queued. */
static int poll_cq(nrr_rcuda *x, const nrr_call *c, nrr_rres *res)
{
	const nrr_value *ca = arg(c, "cq"), *wa = arg(c, "wc");
	bool known;
	uint64_t live = ca ? nrr_rcuda_handle(x, "cq", ca->u, &known) : 0;
	enum { F = 6 };
	uint64_t rec[NRR_WC_MAX][F];
	unsigned m = 0;
	if (wa && wa->len) {
		const uint8_t *p = wa->p, *end = wa->p + wa->len;
		m = *p++;
		for (unsigned i = 0; i < m && i < NRR_WC_MAX; i++)
			for (int k = 0; k < F; k++)
				if (nrr_get_uvar(&p, end, &rec[i][k]) < 0)
					m = i;   /* cut: compare what is whole */
		if (m > NRR_WC_MAX)
			m = NRR_WC_MAX;
	}
	int64_t want = c->result;
	g_wc_table = c->fn->fail_table;
	if (!live || want < 0 || (want > 0 && !wa))
		return from_trace(res, 1, NULL, "ibv_poll_cq: %s", !live ? "CQ not replayed" : want < 0 ? "recorded an error"
										   : "completions not recorded");
	/* the live qp_num of each recorded completion's QP (0: not known) */
	uint32_t lqp[NRR_WC_MAX] = { 0 };
	struct vobj qo;
	for (unsigned i = 0; i < m; i++)
		if (local_obj((uint64_t)(uintptr_t)((struct ibv_cq *)(uintptr_t)live)->context, OBJ_QP,
			      (uint32_t)rec[i][5], &qo))
			lqp[i] = qo.live;
	uint64_t deadline = now_ms() + POLL_WAIT_MS;
	struct ibv_wc got[NRR_WC_MAX];   /* the first ones, compared with those recorded */
	int64_t ngot = 0;
	pthread_mutex_lock(&g_d.mu);
	struct dcq *d = dcq_of(live);
	for (;;) {
		if (d)
			drain(d);
		if (!d || want == 0)
			break;
		/* take what is there, in recorded order */
		while (ngot < want) {
			size_t j = 0;
			if (ngot < (int64_t)m)
				while (j < d->n && (d->q[j].wr_id != rec[ngot][0] ||
						    (lqp[ngot] && d->q[j].qp_num != lqp[ngot])))
					j++;
			if (j >= d->n)
				break;
			if (ngot < NRR_WC_MAX)
				got[ngot] = d->q[j];
			ngot++;
			memmove(d->q + j, d->q + j + 1, (d->n - j - 1) * sizeof(*d->q));
			d->n--;
		}
		if (ngot == want || now_ms() >= deadline)
			break;
		pthread_mutex_unlock(&g_d.mu);
		struct timespec ts = { 0, 200000 };
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&g_d.mu);
	}
	g_d.stat[D_WC_LIVE] += (unsigned)ngot;
	size_t queued = d ? d->n : 0;
	pthread_mutex_unlock(&g_d.mu);
	res->result = want;
	res->status = NRR_R_MATCH;
	if (!d)
		return from_trace(res, 1, NULL, "ibv_poll_cq: more than %d CQs", MAX_DCQ);
	if (ngot < want) {
		if (ngot < (int64_t)m)
			say(res, NRR_R_DIVERGED, "wc[%" PRId64 "] of %" PRId64 " (wr_id 0x%" PRIx64 ", recorded %s (%" PRIu64
						 ")) did not complete within %d s (%zu other live completions queued)",
			    ngot, want, rec[ngot][0], wc_status(rec[ngot][1]), rec[ngot][1], POLL_WAIT_MS / 1000, queued);
		else
			say(res, NRR_R_DIVERGED, "wc[%" PRId64 "] of %" PRId64 " did not complete within %d s", ngot, want,
			    POLL_WAIT_MS / 1000);
		res->result = ngot;
		return 0;
	}
	for (int64_t i = 0; i < ngot && i < (int64_t)m; i++) {
		const struct ibv_wc *w = &got[i];
		const uint64_t *r = rec[i];
		if ((uint64_t)w->status != r[1]) {
			say(res, NRR_R_DIVERGED, "wc[%" PRId64 "] (wr_id 0x%" PRIx64 "): status recorded %s (%" PRIu64
						 "), replayed %s (%d)", i, r[0], wc_status(r[1]), r[1], wc_status(w->status),
			    (int)w->status);
			return 0;
		}
		if (w->status != IBV_WC_SUCCESS)   /* opcode and length are undefined in an error completion */
			continue;
		if ((uint64_t)w->opcode != r[2]) {
			say(res, NRR_R_DIVERGED, "wc[%" PRId64 "] (wr_id 0x%" PRIx64 "): opcode recorded %" PRIu64 ", replayed %d",
			    i, r[0], r[2], (int)w->opcode);
			return 0;
		}
		if (((w->opcode & IBV_WC_RECV) || w->opcode == IBV_WC_RDMA_READ) && (uint64_t)w->byte_len != r[3]) {
			say(res, NRR_R_DIVERGED, "wc[%" PRId64 "] (wr_id 0x%" PRIx64 "): byte_len recorded %" PRIu64 ", replayed %u",
			    i, r[0], r[3], w->byte_len);
			return 0;
		}
	}
	return 0;
}

bool nrr_rverbs_data_path(nrr_rcuda *x, const nrr_call *c)
{
	enum nrr_role r = nrr_call_role(c);
	if (r == NRR_ROLE_WR_SEND || r == NRR_ROLE_WR_RECV)
		return c->result == 0;   /* a post that failed is replayed as before (injected with --inject errors) */
	if (nrr_call_role(c) != NRR_ROLE_CQ_POLL)
		return false;
	const nrr_value *ca = arg(c, "cq");
	bool known;
	uint64_t live = ca ? nrr_rcuda_handle(x, "cq", ca->u, &known) : 0;
	if (!live)
		return false;
	pthread_mutex_lock(&g_d.mu);
	bool on = false;
	for (int i = 0; i < g_d.ncq; i++)
		if (g_d.cq[i].live == live) {
			on = g_d.cq[i].state == CQ_LIVE;
			/* rcuda.c answers it from the trace, as before the data path ran */
			g_d.stat[D_POLL_TRACE] += g_d.cq[i].state == CQ_TRACE;
			break;
		}
	pthread_mutex_unlock(&g_d.mu);
	return on;
}

/* The address a replayed ibv_query_gid or ibv_query_port @c tells: the
 * GID (ibv_query_gid(context, port_num, index, gid)), or the LID of an
 * InfiniBand port (ibv_query_port(context, port_num, port_attr): a RoCE
 * port's LID is 0, an RTR there needs a GRH); recorded in @rec, live (what
 * the call wrote at its out pointer in @slot) in @lv.  The recorded port
 * attributes are laid out as formats/api/types.api's nrr_ibv_port_attr,
 * which formats/api/custom.c checks against struct ibv_port_attr. */
static bool port_addr(const nrr_call *c, const uint64_t *slot, nrr_vaddr *rec, nrr_vaddr *lv)
{
	bool gid = !strcmp(c->fn->name, "ibv_query_gid");
	const char *out = gid ? "gid" : "port_attr";
	const nrr_value *v = arg(c, out);
	int io = arg_index(c->fn, out);
	const uint8_t *l = io >= 0 ? (const uint8_t *)(uintptr_t)slot[io] : NULL;
	if (!v || !l || arg_index(c->fn, "context") < 0)
		return false;
	if (gid) {
		if (v->len != 16)
			return false;
		nrr_vaddr_gid(rec, v->p);
		nrr_vaddr_gid(lv, l);
		return true;
	}
	const struct ibv_port_attr *pa = (const struct ibv_port_attr *)l;
	uint16_t rl;
	if (v->len < offsetof(struct ibv_port_attr, link_layer) + 1 ||
	    v->p[offsetof(struct ibv_port_attr, link_layer)] == IBV_LINK_LAYER_ETHERNET ||
	    pa->link_layer == IBV_LINK_LAYER_ETHERNET)
		return false;
	memcpy(&rl, v->p + offsetof(struct ibv_port_attr, lid), sizeof(rl));
	if (!rl || !pa->lid)
		return false;
	nrr_vaddr_lid(rec, rl);
	nrr_vaddr_lid(lv, pa->lid);
	return true;
}

void nrr_rverbs_done(nrr_rcuda *x, const nrr_call *c, const uint64_t *slot, int64_t live)
{
	(void)x;
	switch (publishes(c->fn)) {
	case PUB_ADDR: {
		nrr_vaddr rec, lv;
		if (port_addr(c, slot, &rec, &lv))
			addr_known(slot[arg_index(c->fn, "context")], &rec, &lv);
		return;
	}
	case PUB_MR: {
		/* the remote address a peer names: the iova of an iova registration
		 * (ibv_reg_mr_iova2(pd, addr, length, iova, access),
		 * ibv_reg_dmabuf_mr(pd, offset, length, iova, fd, access)), else addr */
		int iv = arg_index(c->fn, "iova");
		const nrr_value *rk = arg(c, "rkey"), *ln = arg(c, "length"), *lk = arg(c, "lkey");
		const nrr_value *ad = arg(c, iv >= 0 ? "iova" : "addr");
		const struct ibv_mr *mr = (const struct ibv_mr *)(uintptr_t)live;
		if (!rk || !ln || !ad || !mr)
			return;
		struct vobj o = { .ctx = (uint64_t)(uintptr_t)mr->context, .kind = OBJ_MR, .rec = (uint32_t)rk->u,
				  .live = mr->rkey, .rec_addr = ad->u, .len = ln->u,
				  .live_addr = iv >= 0 ? slot[iv] : (uint64_t)(uintptr_t)mr->addr,
				  .rec_lkey = lk ? (uint32_t)lk->u : 0, .live_lkey = mr->lkey, .has_lkey = lk != NULL };
		obj_made(&o);
		return;
	}
	default:   /* a QP publishes in create_qp, which makes it */
		return;
	}
}

void nrr_rverbs_report(void)
{
	pthread_mutex_lock(&g_d.mu);
	unsigned d[D_N];
	memcpy(d, g_d.stat, sizeof(d));
	pthread_mutex_unlock(&g_d.mu);
	if (debug() && (d[D_POST_LIVE] || d[D_POST_TRACE] || d[D_WC_LIVE] || d[D_POLL_TRACE]))
		fprintf(stderr, "ncclrr replay: verbs: pid %d: data path: %u posts live, %u answered from the trace; "
				"%u completions live, %u polls answered from the trace\n", (int)getpid(), d[D_POST_LIVE],
			d[D_POST_TRACE], d[D_WC_LIVE], d[D_POLL_TRACE]);
	if (debug() && (d[D_WAIT_GONE] || d[D_WAIT_ENDED] || d[D_WAIT_TIMEOUT]))
		fprintf(stderr, "ncclrr replay: verbs: pid %d: order: %u posts waited for a peer gone in the recording, %u "
				"teardowns for a peer's earlier calls, %u waits gave up after 10 s\n", (int)getpid(),
			d[D_WAIT_GONE], d[D_WAIT_ENDED], d[D_WAIT_TIMEOUT]);
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
	if (strstr(c->fn->name, "_srq") && nrr_rverbs_owns(c->fn))
		return srq_call(x, c, res);
	enum nrr_role r = nrr_call_role(c);
	if (r == NRR_ROLE_WR_SEND || r == NRR_ROLE_WR_RECV)
		return post(x, c, res, r == NRR_ROLE_WR_SEND);
	if (r == NRR_ROLE_CQ_POLL)
		return poll_cq(x, c, res);
	return modify_qp(x, c, res);
}
#else
void nrr_rverbs_before(nrr_rcuda *x, const nrr_call *c)
{
	(void)x;
	(void)c;
}

bool nrr_rverbs_data_path(nrr_rcuda *x, const nrr_call *c)
{
	(void)x;
	(void)c;
	return false;
}

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
