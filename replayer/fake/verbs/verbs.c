/* SPDX-License-Identifier: MIT */
/*
 * verbs.c - the fake libibverbs' entry points: contexts, PDs, MRs, CQs,
 * completion channels, async events, QPs and their state machine, and the
 * data path the inline helpers of <infiniband/verbs.h> reach through the
 * context's ops table. The wire between processes is verbs_fabric.c.
 */
#include "verbs_internal.h"

#include <endian.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

const char fake_lib_what[] = "verbs calls (errno names such as ENOMEM)";

int fake_lib_owns(const char *api)
{
	return strncmp(api, "ibv_", 4) == 0;
}

int fake_lib_error_code(const char *name)
{
	return fake_errno_by_name(name);
}

pthread_mutex_t nv_lock = PTHREAD_MUTEX_INITIALIZER;

static struct nv_context *ctx_of(struct ibv_context *c)
{
	return (struct nv_context *)((char *)c - offsetof(struct nv_context, vctx.context));
}

/* ---- async events -------------------------------------------------------- */
void nv_async_event(struct ibv_context *c, enum ibv_event_type t, struct ibv_qp *qp, struct ibv_srq *srq)
{
	struct nv_context *x = ctx_of(c);
	if (x->nevents == x->capevents) {
		int nc = x->capevents ? x->capevents * 2 : 16;
		struct ibv_async_event *ne = realloc(x->events, (size_t)nc * sizeof(*ne));
		if (!ne)
			return;
		x->events = ne;
		x->capevents = nc;
	}
	struct ibv_async_event *e = &x->events[x->nevents++];
	memset(e, 0, sizeof(*e));
	e->event_type = t;
	if (qp)
		e->element.qp = qp;
	else if (srq)
		e->element.srq = srq;
	else
		e->element.port_num = 1;
	uint64_t one = 1;
	if (write(x->async_fd, &one, sizeof(one)) < 0)
		FAKE_DBG("libibverbs: async event fd: %m");
}

FAKE_EXPORT int ibv_get_async_event(struct ibv_context *c, struct ibv_async_event *ev)
{
	if (!fake_handle_live(c) || !ev)
		return errno = EINVAL, -1;
	struct nv_context *x = ctx_of(c);
	uint64_t v;
	if (read(x->async_fd, &v, sizeof(v)) != sizeof(v))
		return -1;
	pthread_mutex_lock(&nv_lock);
	if (!x->nevents) {
		pthread_mutex_unlock(&nv_lock);
		return errno = EAGAIN, -1;
	}
	*ev = x->events[0];
	memmove(x->events, x->events + 1, (size_t)(x->nevents - 1) * sizeof(*ev));
	x->nevents--;
	pthread_mutex_unlock(&nv_lock);
	return 0;
}

FAKE_EXPORT void ibv_ack_async_event(struct ibv_async_event *ev)
{
	(void)ev;
}

/* ---- ops of the context -------------------------------------------------- */
static int op_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
static int op_req_notify_cq(struct ibv_cq *cq, int solicited_only);
static int op_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
static int op_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);

static int op_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);

static int op_query_port(struct ibv_context *c, uint8_t port, struct ibv_port_attr *attr, size_t len)
{
	if (!fake_handle_live(c) || !attr)
		return EINVAL;
	if (port != 1)
		return EINVAL;
	struct ibv_port_attr p;
	nv_fill_port_attr(ctx_of(c)->dev, &p);
	memset(attr, 0, len);
	memcpy(attr, &p, len < sizeof(p) ? len : sizeof(p));
	return 0;
}

static int op_query_device_ex(struct ibv_context *c, const struct ibv_query_device_ex_input *in,
			      struct ibv_device_attr_ex *attr, size_t len)
{
	(void)in;
	if (!fake_handle_live(c) || !attr)
		return EINVAL;
	struct ibv_device_attr_ex a;
	memset(&a, 0, sizeof(a));
	nv_fill_device_attr(ctx_of(c)->dev, &a.orig_attr);
	a.max_dm_size = 0;
	a.raw_packet_caps = 0;
	a.phys_port_cnt_ex = 1;
	memset(attr, 0, len);
	memcpy(attr, &a, len < sizeof(a) ? len : sizeof(a));
	return 0;
}

FAKE_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	NV_COUNT_PTR(ibv_open_device);
	struct nv_device *d = nv_device(device);
	if (!d) {
		errno = ENODEV;
		return NULL;
	}
	struct nv_context *x = calloc(1, sizeof(*x));
	if (!x) {
		errno = ENOMEM;
		return NULL;
	}
	x->dev = d;
	x->async_fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	int cfd = eventfd(0, EFD_CLOEXEC);
	if (x->async_fd < 0 || cfd < 0) {
		int e = errno;
		if (x->async_fd >= 0)
			close(x->async_fd);
		if (cfd >= 0)
			close(cfd);
		free(x);
		errno = e;
		return NULL;
	}
	struct ibv_context *c = &x->vctx.context;
	c->device = device;
	c->cmd_fd = cfd;
	c->async_fd = x->async_fd;
	c->num_comp_vectors = 8;
	c->abi_compat = __VERBS_ABI_IS_EXTENDED;
	pthread_mutex_init(&c->mutex, NULL);
	c->ops.poll_cq = op_poll_cq;
	c->ops.req_notify_cq = op_req_notify_cq;
	c->ops.post_send = op_post_send;
	c->ops.post_recv = op_post_recv;
	c->ops.post_srq_recv = op_post_srq_recv;
	x->vctx.sz = sizeof(x->vctx);
	x->vctx.query_port = op_query_port;
	x->vctx.query_device_ex = op_query_device_ex;
	if (fake_handle_add(c) < 0) {
		close(x->async_fd);
		close(cfd);
		free(x);
		errno = ENOMEM;
		return NULL;
	}
	return c;
}

FAKE_EXPORT int ibv_close_device(struct ibv_context *c)
{
	if (!fake_handle_del(c))
		return EINVAL;
	struct nv_context *x = ctx_of(c);
	close(x->async_fd);
	close(c->cmd_fd);
	free(x->events);
	free(x);
	return 0;
}

FAKE_EXPORT int ibv_query_device(struct ibv_context *c, struct ibv_device_attr *attr)
{
	NV_COUNT_INT(ibv_query_device);
	if (!fake_handle_live(c) || !attr)
		return EINVAL;
	nv_fill_device_attr(ctx_of(c)->dev, attr);
	return 0;
}

/* The exported ibv_query_port is the compat entry (<verbs.h> reaches
 * vctx->query_port first); its struct is the old, shorter port_attr. */
struct _compat_ibv_port_attr {
	enum ibv_port_state state;
	enum ibv_mtu max_mtu, active_mtu;
	int gid_tbl_len;
	uint32_t port_cap_flags, max_msg_sz, bad_pkey_cntr, qkey_viol_cntr;
	uint16_t pkey_tbl_len, lid, sm_lid;
	uint8_t lmc, max_vl_num, sm_sl, subnet_timeout, init_type_reply, active_width, active_speed,
		phys_state, link_layer, flags;
};

FAKE_EXPORT int ibv_query_port(struct ibv_context *c, uint8_t port, struct _compat_ibv_port_attr *attr)
{
	NV_COUNT_INT(ibv_query_port);
	return op_query_port(c, port, (struct ibv_port_attr *)attr, sizeof(*attr));
}

FAKE_EXPORT int ibv_query_gid(struct ibv_context *c, uint8_t port, int index, union ibv_gid *gid)
{
	NV_COUNT_INT(ibv_query_gid);
	if (!fake_handle_live(c) || !gid || port != 1)
		return -1;
	const struct nv_addr *a = &ctx_of(c)->dev->addr;
	if (index < 0 || index >= a->ngids)
		return -1;
	*gid = a->gid[index];
	return 0;
}

/* libibverbs' private helper that ibv_devinfo links against */
enum nv_gid_type_sysfs { NV_GID_TYPE_SYSFS_IB_ROCE_V1, NV_GID_TYPE_SYSFS_ROCE_V2 };
FAKE_EXPORT int ibv_query_gid_type(struct ibv_context *c, uint8_t port, unsigned index,
				   enum nv_gid_type_sysfs *type)
{
	if (!fake_handle_live(c) || !type || port != 1)
		return -1;
	const struct nv_addr *a = &ctx_of(c)->dev->addr;
	if ((int)index >= a->ngids)
		return errno = EINVAL, -1;
	*type = a->roce_v2[index] ? NV_GID_TYPE_SYSFS_ROCE_V2 : NV_GID_TYPE_SYSFS_IB_ROCE_V1;
	return 0;
}

FAKE_EXPORT int ibv_query_pkey(struct ibv_context *c, uint8_t port, int index, __be16 *pkey)
{
	if (!fake_handle_live(c) || !pkey || port != 1 || index != 0)
		return -1;
	*pkey = htobe16(0xffff);
	return 0;
}

FAKE_EXPORT int ibv_get_pkey_index(struct ibv_context *c, uint8_t port, __be16 pkey)
{
	if (!fake_handle_live(c) || port != 1 || (be16toh(pkey) & 0x7fff) != 0x7fff)
		return -1;
	return 0;
}

/* ---- PDs and MRs --------------------------------------------------------- */
FAKE_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *c)
{
	NV_COUNT_PTR(ibv_alloc_pd);
	if (!fake_handle_live(c)) {
		errno = EINVAL;
		return NULL;
	}
	static uint32_t next_pdn = 1;
	struct ibv_pd *pd = calloc(1, sizeof(*pd));
	if (!pd || fake_handle_add(pd) < 0) {
		free(pd);
		errno = ENOMEM;
		return NULL;
	}
	pd->context = c;
	pthread_mutex_lock(&nv_lock);
	pd->handle = next_pdn++;
	pthread_mutex_unlock(&nv_lock);
	return pd;
}

FAKE_EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
	if (!fake_handle_del(pd))
		return EINVAL;
	free(pd);
	return 0;
}

static struct nv_mr *g_mrs;
static size_t g_pinned;
static uint32_t g_next_key = 0x100;

struct nv_mr *nv_mr_find(uint32_t key, int remote)
{
	for (struct nv_mr *m = g_mrs; m; m = m->next)
		if ((remote ? m->mr.rkey : m->mr.lkey) == key)
			return m;
	return NULL;
}

void *nv_mr_ptr(struct nv_mr *m, struct ibv_pd *pd, uint64_t addr, uint64_t len, unsigned access)
{
	if (!m || m->mr.pd != pd || (m->access & access) != access)
		return NULL;
	if (addr < m->iova || len > m->mr.length || addr - m->iova > m->mr.length - len)
		return NULL;
	return (char *)m->mr.addr + (addr - m->iova);
}

static size_t page_span(const void *addr, size_t len)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)addr & ~(pg - 1);
	uintptr_t e = ((uintptr_t)addr + len + pg - 1) & ~(pg - 1);
	return e - a;
}

static int mapped(const void *addr, size_t len)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	void *a = (void *)((uintptr_t)addr & ~(pg - 1));
	size_t span = page_span(addr, len);
	size_t npages = span / pg;
	unsigned char vec[256];
	/* mincore says ENOMEM for a range with an unmapped page */
	for (size_t off = 0; off < npages; off += sizeof(vec)) {
		size_t n = npages - off < sizeof(vec) ? npages - off : sizeof(vec);
		if (mincore((char *)a + off * pg, n * pg, vec) < 0 && errno == ENOMEM)
			return 0;
	}
	return 1;
}

/* The RLIMIT_MEMLOCK registrations count against: the process's own,
 * or its virtual host's memlock= when `ncclrr run` could not give it that
 * (NCCLRR_MEMLOCK, with NCCLRR_MEMLOCK_GIVEN what it got instead:
 * nrr_launch_memlock) and the process kept what it got (one that lowered
 * its limit, `ulimit -l`, gets its own, as on a real host). */
static rlim_t memlock_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_MEMLOCK, &rl) < 0)
		return RLIM_INFINITY;
	const char *virt = getenv("NCCLRR_MEMLOCK"), *given = getenv("NCCLRR_MEMLOCK_GIVEN");
	if (!virt || !given)
		return rl.rlim_cur;
	rlim_t g = strcmp(given, "unlimited") == 0 ? RLIM_INFINITY : (rlim_t)strtoull(given, NULL, 10);
	if (rl.rlim_cur != g)
		return rl.rlim_cur;
	return strcmp(virt, "unlimited") == 0 ? RLIM_INFINITY : (rlim_t)strtoull(virt, NULL, 10);
}

static struct ibv_mr *reg_mr(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova, unsigned access,
			     int count_memlock)
{
	if (!fake_handle_live(pd) || len == 0) {
		errno = EINVAL;
		return NULL;
	}
	/* the kernel's rule: remote write or atomic needs local write */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE)) {
		errno = EINVAL;
		return NULL;
	}
	if (!addr || !mapped(addr, len)) {
		errno = EFAULT;
		return NULL;
	}
	size_t pinned = count_memlock ? page_span(addr, len) : 0;
	rlim_t limit = memlock_limit();
	pthread_mutex_lock(&nv_lock);
	/* pinned pages count against RLIMIT_MEMLOCK; enforced for root too
	 * (a real kernel lets CAP_IPC_LOCK past, which would hide the limit
	 * from tests that run as root) */
	if (limit != RLIM_INFINITY && g_pinned + pinned > limit) {
		pthread_mutex_unlock(&nv_lock);
		FAKE_DBG("libibverbs: ibv_reg_mr of %zu bytes: %zu pinned already, RLIMIT_MEMLOCK %llu",
			 len, g_pinned, (unsigned long long)limit);
		errno = ENOMEM;
		return NULL;
	}
	struct nv_mr *m = calloc(1, sizeof(*m));
	if (!m || fake_handle_add(&m->mr) < 0) {
		pthread_mutex_unlock(&nv_lock);
		free(m);
		errno = ENOMEM;
		return NULL;
	}
	g_pinned += pinned;
	m->pinned = pinned;
	m->mr.context = pd->context;
	m->mr.pd = pd;
	m->mr.addr = addr;
	m->mr.length = len;
	m->mr.handle = g_next_key;
	m->mr.lkey = g_next_key;
	m->mr.rkey = g_next_key ^ 0x5a000000u;
	g_next_key += 0x100;
	m->iova = iova;
	m->access = access;
	m->next = g_mrs;
	g_mrs = m;
	pthread_mutex_unlock(&nv_lock);
	return &m->mr;
}

FAKE_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	NV_COUNT_PTR(ibv_reg_mr);
	return reg_mr(pd, addr, len, (uintptr_t)addr, (unsigned)access, 1);
}

FAKE_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
					    unsigned access)
{
	NV_COUNT_PTR(ibv_reg_mr_iova2);
	return reg_mr(pd, addr, len, iova, access, 1);
}

FAKE_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
					   int access)
{
	NV_COUNT_PTR_NAMED("ibv_reg_mr_iova");
	return reg_mr(pd, addr, len, iova, (unsigned)access, 1);
}

/* GPUDirect RDMA: the fake CUDA driver's dma-buf fd
 * (cuMemGetHandleForAddressRange) is a dup of the memfd behind the device
 * allocation, so mapping it shares the device memory's pages: what a peer
 * writes into this MR is in the GPU buffer. Device memory is not counted
 * against RLIMIT_MEMLOCK (a kernel does not count dma-buf pages either). */
FAKE_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
					     uint64_t iova, int fd, int access)
{
	NV_COUNT_PTR(ibv_reg_dmabuf_mr);
	struct stat st;
	if (!fake_handle_live(pd) || length == 0) {
		errno = EINVAL;
		return NULL;
	}
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || offset > (uint64_t)st.st_size ||
	    length > (uint64_t)st.st_size - offset) {
		FAKE_DBG("libibverbs: ibv_reg_dmabuf_mr: fd %d is no dma-buf of the fake CUDA driver "
			 "covering [%llu, +%zu)", fd, (unsigned long long)offset, length);
		errno = EINVAL;
		return NULL;
	}
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	uint64_t base = offset & ~(uint64_t)(pg - 1);
	size_t maplen = (size_t)(offset - base) + length;
	char *map = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)base);
	if (map == MAP_FAILED)
		return NULL;
	struct ibv_mr *mr = reg_mr(pd, map + (offset - base), length, iova, (unsigned)access, 0);
	if (!mr) {
		int e = errno;
		munmap(map, maplen);
		errno = e;
		return NULL;
	}
	struct nv_mr *m = (struct nv_mr *)mr;
	m->map = map;
	m->maplen = maplen;
	return mr;
}

FAKE_EXPORT int ibv_dereg_mr(struct ibv_mr *mr)
{
	NV_COUNT_INT(ibv_dereg_mr);
	if (!fake_handle_del(mr))
		return EINVAL;
	pthread_mutex_lock(&nv_lock);
	for (struct nv_mr **pp = &g_mrs; *pp; pp = &(*pp)->next) {
		if (&(*pp)->mr == mr) {
			struct nv_mr *m = *pp;
			*pp = m->next;
			g_pinned -= m->pinned;
			if (m->map)
				munmap(m->map, m->maplen);
			free(m);
			break;
		}
	}
	pthread_mutex_unlock(&nv_lock);
	return 0;
}

static int g_fork_init;
FAKE_EXPORT int ibv_fork_init(void)
{
	/* registered memory is the process's own memory: a fork copies it as
	 * it copies any other page; nothing to protect */
	g_fork_init = 1;
	return 0;
}

FAKE_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return g_fork_init ? IBV_FORK_ENABLED : IBV_FORK_DISABLED;
}

/* ---- completion channels and CQs ----------------------------------------- */
FAKE_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *c)
{
	NV_COUNT_PTR(ibv_create_comp_channel);
	if (!fake_handle_live(c)) {
		errno = EINVAL;
		return NULL;
	}
	struct nv_channel *ch = calloc(1, sizeof(*ch));
	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	ch->ch.context = c;
	ch->ch.fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	if (ch->ch.fd < 0 || fake_handle_add(&ch->ch) < 0) {
		int e = ch->ch.fd < 0 ? errno : ENOMEM;
		if (ch->ch.fd >= 0)
			close(ch->ch.fd);
		free(ch);
		errno = e;
		return NULL;
	}
	return &ch->ch;
}

FAKE_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	pthread_mutex_lock(&nv_lock);
	if (!fake_handle_live(ch) || ch->refcnt) {
		int busy = fake_handle_live(ch);
		pthread_mutex_unlock(&nv_lock);
		return busy ? EBUSY : EINVAL;
	}
	fake_handle_del(ch);
	pthread_mutex_unlock(&nv_lock);
	close(ch->fd);
	free(ch);
	return 0;
}

FAKE_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *c, int cqe, void *cq_context,
					 struct ibv_comp_channel *channel, int comp_vector)
{
	NV_COUNT_PTR(ibv_create_cq);
	if (!fake_handle_live(c) || cqe < 1 || cqe > NV_MAX_CQE || comp_vector < 0 ||
	    comp_vector >= c->num_comp_vectors || (channel && !fake_handle_live(channel))) {
		errno = EINVAL;
		return NULL;
	}
	struct nv_cq *q = calloc(1, sizeof(*q));
	if (q)
		q->ring = calloc((size_t)cqe + 1, sizeof(*q->ring));
	if (!q || !q->ring || fake_handle_add(&q->cq) < 0) {
		if (q)
			free(q->ring);
		free(q);
		errno = ENOMEM;
		return NULL;
	}
	q->cap = cqe + 1;
	q->cq.context = c;
	q->cq.channel = channel;
	q->cq.cq_context = cq_context;
	q->cq.cqe = cqe;
	pthread_mutex_init(&q->cq.mutex, NULL);
	pthread_cond_init(&q->cq.cond, NULL);
	if (channel) {
		pthread_mutex_lock(&nv_lock);
		channel->refcnt++;
		pthread_mutex_unlock(&nv_lock);
	}
	return &q->cq;
}

FAKE_EXPORT int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	if (!fake_handle_live(cq) || cqe < 1 || cqe > NV_MAX_CQE)
		return EINVAL;
	struct nv_cq *q = (struct nv_cq *)cq;
	pthread_mutex_lock(&nv_lock);
	if (cqe < q->count) {
		pthread_mutex_unlock(&nv_lock);
		return EINVAL;
	}
	struct ibv_wc *r = calloc((size_t)cqe + 1, sizeof(*r));
	if (!r) {
		pthread_mutex_unlock(&nv_lock);
		return ENOMEM;
	}
	for (int i = 0; i < q->count; i++)
		r[i] = q->ring[(q->head + i) % q->cap];
	free(q->ring);
	q->ring = r;
	q->head = 0;
	q->cap = cqe + 1;
	cq->cqe = cqe;
	pthread_mutex_unlock(&nv_lock);
	return 0;
}

static int cq_in_use(struct ibv_cq *cq);

FAKE_EXPORT int ibv_destroy_cq(struct ibv_cq *cq)
{
	NV_COUNT_INT(ibv_destroy_cq);
	pthread_mutex_lock(&nv_lock);
	if (!fake_handle_live(cq)) {
		pthread_mutex_unlock(&nv_lock);
		return EINVAL;
	}
	if (cq_in_use(cq)) {
		pthread_mutex_unlock(&nv_lock);
		return EBUSY;
	}
	fake_handle_del(cq);
	struct nv_cq *q = (struct nv_cq *)cq;
	if (cq->channel) {
		struct nv_channel *ch = (struct nv_channel *)cq->channel;
		for (struct nv_cq **pp = &ch->ev_head; *pp; pp = &(*pp)->ev_next)
			if (*pp == q) {
				*pp = q->ev_next;
				break;
			}
		ch->ev_tail = NULL;
		for (struct nv_cq *e = ch->ev_head; e; e = e->ev_next)
			ch->ev_tail = e;
		cq->channel->refcnt--;
	}
	pthread_mutex_unlock(&nv_lock);
	free(q->ring);
	free(q);
	return 0;
}

void nv_cq_add(struct nv_cq *q, const struct ibv_wc *wc)
{
	if (q->count == q->cap - 1) {
		/* overrun: the HCA raises CQ_ERR and the CQ is lost */
		nv_async_event(q->cq.context, IBV_EVENT_CQ_ERR, NULL, NULL);
		return;
	}
	q->ring[(q->head + q->count) % q->cap] = *wc;
	__atomic_store_n(&q->count, q->count + 1, __ATOMIC_RELEASE);
	int solicited = (wc->wc_flags & IBV_WC_WITH_IMM) || wc->status != IBV_WC_SUCCESS ||
			(wc->opcode & IBV_WC_RECV);
	if (q->armed && (!q->solicited_only || solicited) && q->cq.channel) {
		q->armed = 0;
		struct nv_channel *ch = (struct nv_channel *)q->cq.channel;
		if (!q->pending_event) {
			q->pending_event = 1;
			q->ev_next = NULL;
			if (ch->ev_tail)
				ch->ev_tail->ev_next = q;
			else
				ch->ev_head = q;
			ch->ev_tail = q;
		}
		uint64_t one = 1;
		if (write(ch->ch.fd, &one, sizeof(one)) < 0)
			FAKE_DBG("libibverbs: completion channel fd: %m");
	}
}

static int op_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct nv_cq *q = (struct nv_cq *)cq;
	if (n < 0 || (n && !wc))
		return -1;
	/* a program that spins on an empty CQ must not keep the progress
	 * threads (this process's and its peers', which do the HCA's work)
	 * from the lock or the CPU: on a loaded machine two spinning ranks
	 * took 12 ms per ibv_rc_pingpong round trip without the yield */
	if (!__atomic_load_n(&q->count, __ATOMIC_ACQUIRE)) {
		sched_yield();
		return 0;
	}
	pthread_mutex_lock(&nv_lock);
	int k = 0;
	while (k < n && q->count) {
		wc[k++] = q->ring[q->head];
		q->head = (q->head + 1) % q->cap;
		__atomic_store_n(&q->count, q->count - 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&nv_lock);
	return k;
}

static int op_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	struct nv_cq *q = (struct nv_cq *)cq;
	/* a CQ without a channel may be armed too (mlx5 arms it); nothing
	 * will be told */
	pthread_mutex_lock(&nv_lock);
	q->armed = 1;
	q->solicited_only = solicited_only;
	pthread_mutex_unlock(&nv_lock);
	return 0;
}

FAKE_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	if (!fake_handle_live(channel) || !cq || !cq_context)
		return errno = EINVAL, -1;
	struct nv_channel *ch = (struct nv_channel *)channel;
	uint64_t v;
	if (read(channel->fd, &v, sizeof(v)) != sizeof(v))
		return -1;
	pthread_mutex_lock(&nv_lock);
	struct nv_cq *q = ch->ev_head;
	if (!q) {
		/* its CQ was destroyed since */
		pthread_mutex_unlock(&nv_lock);
		return errno = EAGAIN, -1;
	}
	ch->ev_head = q->ev_next;
	if (!ch->ev_head)
		ch->ev_tail = NULL;
	q->pending_event = 0;
	*cq = &q->cq;
	*cq_context = q->cq.cq_context;
	pthread_mutex_unlock(&nv_lock);
	return 0;
}

FAKE_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	if (!fake_handle_live(cq))
		return;
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_signal(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}

/* ---- QPs ----------------------------------------------------------------- */
struct nv_qp *nv_qps;

static int cq_in_use(struct ibv_cq *cq)
{
	for (struct nv_qp *q = nv_qps; q; q = q->next)
		if (q->qp.send_cq == cq || q->qp.recv_cq == cq)
			return 1;
	return 0;
}

int nv_qp_register(struct nv_qp *q)
{
	q->next = nv_qps;
	nv_qps = q;
	return 0;
}

void nv_qp_unregister(struct nv_qp *q)
{
	for (struct nv_qp **pp = &nv_qps; *pp; pp = &(*pp)->next)
		if (*pp == q) {
			*pp = q->next;
			return;
		}
}

FAKE_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *ia)
{
	NV_COUNT_PTR(ibv_create_qp);
	if (!fake_handle_live(pd) || !ia || !fake_handle_live(ia->send_cq) ||
	    !fake_handle_live(ia->recv_cq) || (ia->srq && !fake_handle_live(ia->srq))) {
		errno = EINVAL;
		return NULL;
	}
	if (ia->qp_type != IBV_QPT_RC) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (ia->cap.max_send_wr > NV_MAX_WR || ia->cap.max_recv_wr > NV_MAX_WR ||
	    ia->cap.max_send_sge > NV_MAX_SGE || ia->cap.max_recv_sge > NV_MAX_SGE ||
	    ia->cap.max_inline_data > NV_MAX_INLINE) {
		errno = EINVAL;
		return NULL;
	}
	struct nv_qp *q = calloc(1, sizeof(*q));
	if (!q || fake_handle_add(&q->qp) < 0) {
		free(q);
		errno = ENOMEM;
		return NULL;
	}
	struct nv_context *x = ctx_of(pd->context);
	q->qp.context = pd->context;
	q->qp.qp_context = ia->qp_context;
	q->qp.pd = pd;
	q->qp.send_cq = ia->send_cq;
	q->qp.recv_cq = ia->recv_cq;
	q->qp.qp_type = IBV_QPT_RC;
	q->qp.state = IBV_QPS_RESET;
	q->qp.events_completed = 0;
	pthread_mutex_init(&q->qp.mutex, NULL);
	pthread_cond_init(&q->qp.cond, NULL);
	q->cap = ia->cap;
	if (q->cap.max_send_sge == 0)
		q->cap.max_send_sge = 1;
	if (q->cap.max_recv_sge == 0)
		q->cap.max_recv_sge = 1;
	if (ia->srq) {
		/* no receive queue of its own (op_post_recv) */
		q->srq = (struct nv_srq *)ia->srq;
		q->cap.max_recv_wr = 0;
		q->cap.max_recv_sge = 0;
	}
	q->cap.max_inline_data = NV_MAX_INLINE;
	ia->cap = q->cap;
	q->sq_sig_all = ia->sq_sig_all;
	q->lfd = -1;
	pthread_mutex_lock(&nv_lock);
	/* the SRQ is counted under the lock its ibv_destroy_srq checks */
	int rc = q->srq && !fake_handle_live(&q->srq->srq) ? EINVAL : nv_fabric_listen(q, x->dev->addr.lid);
	if (rc == 0) {
		nv_qp_register(q);
		if (q->srq)
			q->srq->users++;
	}
	pthread_mutex_unlock(&nv_lock);
	if (rc) {
		fake_handle_del(&q->qp);
		free(q);
		errno = rc;
		return NULL;
	}
	return &q->qp;
}

FAKE_EXPORT int ibv_destroy_qp(struct ibv_qp *qp)
{
	NV_COUNT_INT(ibv_destroy_qp);
	if (!fake_handle_del(qp))
		return EINVAL;
	struct nv_qp *q = (struct nv_qp *)qp;
	pthread_mutex_lock(&nv_lock);
	nv_qp_unregister(q);
	nv_fabric_close_qp(q, 0);
	nv_qp_drain(q, 0, NULL, IBV_WC_SUCCESS);
	if (q->srq)
		q->srq->users--;
	pthread_mutex_unlock(&nv_lock);
	nv_fabric_kick();
	free(q);
	return 0;
}

/* The attribute masks of each RC transition (IB spec 11.2.4.2, as mlx5
 * checks them): what must be given, and what may be. */
struct qp_trans {
	enum ibv_qp_state from, to;
	int required, optional;
};
#define REQ_INIT (IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)
#define REQ_RTR (IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | \
		 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)
#define REQ_RTS (IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | \
		 IBV_QP_MAX_QP_RD_ATOMIC)
static const struct qp_trans transitions[] = {
	{ IBV_QPS_RESET, IBV_QPS_INIT, REQ_INIT, 0 },
	{ IBV_QPS_INIT, IBV_QPS_INIT, 0, REQ_INIT },
	{ IBV_QPS_INIT, IBV_QPS_RTR, REQ_RTR, IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX },
	{ IBV_QPS_RTR, IBV_QPS_RTS, REQ_RTS,
	  IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER |
		  IBV_QP_PATH_MIG_STATE },
	{ IBV_QPS_RTS, IBV_QPS_RTS, 0,
	  IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE |
		  IBV_QP_MIN_RNR_TIMER },
};

/* the values an HCA takes: one port, the default P_Key, IB's field widths */
static int attrs_in_range(const struct ibv_qp_attr *a, int mask)
{
	const struct {
		int bit;
		unsigned value, max;
	} f[] = {
		{ IBV_QP_PORT, a->port_num, 1 },
		{ IBV_QP_PKEY_INDEX, a->pkey_index, 0 },
		{ IBV_QP_TIMEOUT, a->timeout, 31 },
		{ IBV_QP_RETRY_CNT, a->retry_cnt, 7 },
		{ IBV_QP_RNR_RETRY, a->rnr_retry, 7 },
		{ IBV_QP_MIN_RNR_TIMER, a->min_rnr_timer, 31 },
		{ IBV_QP_MAX_QP_RD_ATOMIC, a->max_rd_atomic, 16 },
		{ IBV_QP_MAX_DEST_RD_ATOMIC, a->max_dest_rd_atomic, 16 },
	};
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if ((mask & f[i].bit) && f[i].value > f[i].max)
			return 0;
	if ((mask & IBV_QP_PORT) && a->port_num == 0)
		return 0;
	return 1;
}

static int check_rtr(struct nv_qp *q, const struct ibv_qp_attr *a)
{
	const struct nv_device *d = ctx_of(q->qp.context)->dev;
	const struct ibv_ah_attr *ah = &a->ah_attr;
	if (ah->port_num != 1 && ah->port_num != 0) {
		FAKE_DBG("libibverbs: modify_qp RTR: port %d", ah->port_num);
		return EINVAL;
	}
	if (a->path_mtu < IBV_MTU_256 || a->path_mtu > nv_mtu_enum(d->addr.mtu)) {
		FAKE_DBG("libibverbs: modify_qp RTR: path MTU %d above the port's %d", a->path_mtu,
			 nv_mtu_enum(d->addr.mtu));
		return EINVAL;
	}
	if (a->dest_qp_num > NV_MAX_QPN)
		return EINVAL;
	if (d->addr.ethernet && !ah->is_global) {
		FAKE_DBG("libibverbs: modify_qp RTR: RoCE needs a GRH (is_global)");
		return EINVAL;
	}
	if (ah->is_global && ah->grh.sgid_index >= d->addr.ngids) {
		FAKE_DBG("libibverbs: modify_qp RTR: sgid_index %d of %d", ah->grh.sgid_index,
			 d->addr.ngids);
		return EINVAL;
	}
	if (!ah->is_global && ah->dlid == 0)
		return EINVAL;
	const struct nv_addr *peer = nv_resolve(ah, d->addr.ethernet);
	if (!peer) {
		FAKE_DBG("libibverbs: modify_qp RTR: no NIC of the cluster has that %s",
			 ah->is_global ? "GID" : "LID");
		return d->addr.ethernet ? ENETUNREACH : EINVAL;
	}
	if (d->addr.ethernet && ah->grh.sgid_index == 1 &&
	    memcmp(ah->grh.dgid.raw, peer->gid[1].raw, 16) != 0) {
		/* a RoCE v2 source with a v1 destination: no route */
		return ENETUNREACH;
	}
	q->peer = peer;
	return 0;
}

FAKE_EXPORT int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	NV_COUNT_INT(ibv_modify_qp);
	if (!fake_handle_live(qp) || !a)
		return EINVAL;
	struct nv_qp *q = (struct nv_qp *)qp;
	pthread_mutex_lock(&nv_lock);
	enum ibv_qp_state cur = qp->state;
	enum ibv_qp_state to = (mask & IBV_QP_STATE) ? a->qp_state : cur;
	int rc = 0;
	if ((mask & IBV_QP_CUR_STATE) && a->cur_qp_state != cur) {
		rc = EINVAL;
		goto out;
	}
	if (to == IBV_QPS_RESET || to == IBV_QPS_ERR) {
		if (mask & ~(IBV_QP_STATE | IBV_QP_CUR_STATE)) {
			rc = EINVAL;
			goto out;
		}
		if (to == IBV_QPS_ERR) {
			nv_qp_error(q, NULL, IBV_WC_WR_FLUSH_ERR);
		} else {
			nv_fabric_close_qp(q, 1);
			nv_qp_drain(q, 0, NULL, IBV_WC_SUCCESS);
			memset(&q->attr, 0, sizeof(q->attr));
			q->peer = NULL;
			q->comm_est = 0;
			q->expect_seq = 0;
			q->next_seq = 0;
			q->resend_ns = 0;
		}
		qp->state = to;
		goto out;
	}
	const struct qp_trans *t = NULL;
	for (size_t i = 0; i < sizeof(transitions) / sizeof(transitions[0]); i++)
		if (transitions[i].from == cur && transitions[i].to == to)
			t = &transitions[i];
	int given = mask & ~IBV_QP_STATE;
	if (!t || (given & t->required) != t->required ||
	    (given & ~(t->required | t->optional | IBV_QP_CUR_STATE))) {
		FAKE_DBG("libibverbs: modify_qp %d -> %d with mask 0x%x: %s", cur, to, mask,
			 !t ? "not a transition of an RC QP" : "required or extra attributes");
		rc = EINVAL;
		goto out;
	}
	if (!attrs_in_range(a, mask)) {
		rc = EINVAL;
		goto out;
	}
	if (to == IBV_QPS_RTR && (rc = check_rtr(q, a)) != 0)
		goto out;
	/* keep what was given */
	if (mask & IBV_QP_ACCESS_FLAGS)
		q->attr.qp_access_flags = a->qp_access_flags;
	if (mask & IBV_QP_PORT)
		q->attr.port_num = a->port_num;
	if (mask & IBV_QP_AV)
		q->attr.ah_attr = a->ah_attr;
	if (mask & IBV_QP_PATH_MTU)
		q->attr.path_mtu = a->path_mtu;
	if (mask & IBV_QP_DEST_QPN)
		q->attr.dest_qp_num = a->dest_qp_num;
	if (mask & IBV_QP_RQ_PSN)
		q->attr.rq_psn = a->rq_psn;
	if (mask & IBV_QP_SQ_PSN)
		q->attr.sq_psn = a->sq_psn;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		q->attr.max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		q->attr.max_rd_atomic = a->max_rd_atomic;
	if (mask & IBV_QP_MIN_RNR_TIMER)
		q->attr.min_rnr_timer = a->min_rnr_timer;
	if (mask & IBV_QP_TIMEOUT)
		q->attr.timeout = a->timeout;
	if (mask & IBV_QP_RETRY_CNT)
		q->attr.retry_cnt = a->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY)
		q->attr.rnr_retry = a->rnr_retry;
	qp->state = to;
	if (to == IBV_QPS_RTS && cur == IBV_QPS_RTR) {
		q->retries_left = q->attr.retry_cnt;
		q->rnr_left = q->attr.rnr_retry;
	}
out:
	pthread_mutex_unlock(&nv_lock);
	if (rc == 0)
		nv_fabric_kick();
	return rc;
}

FAKE_EXPORT int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask, struct ibv_qp_init_attr *ia)
{
	NV_COUNT_INT(ibv_query_qp);
	(void)mask;
	if (!fake_handle_live(qp) || !a || !ia)
		return EINVAL;
	struct nv_qp *q = (struct nv_qp *)qp;
	pthread_mutex_lock(&nv_lock);
	*a = q->attr;
	a->qp_state = qp->state;
	a->cur_qp_state = qp->state;
	a->cap = q->cap;
	memset(ia, 0, sizeof(*ia));
	ia->qp_context = qp->qp_context;
	ia->send_cq = qp->send_cq;
	ia->recv_cq = qp->recv_cq;
	ia->srq = q->srq ? &q->srq->srq : NULL;
	ia->cap = q->cap;
	ia->qp_type = qp->qp_type;
	ia->sq_sig_all = q->sq_sig_all;
	pthread_mutex_unlock(&nv_lock);
	return 0;
}

FAKE_EXPORT int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	NV_COUNT_INT(ibv_query_ece);
	if (!fake_handle_live(qp) || !ece)
		return EINVAL;
	/* no enhanced connection options: vendor Mellanox, none enabled */
	memset(ece, 0, sizeof(*ece));
	ece->vendor_id = 0x02c9;
	return 0;
}

FAKE_EXPORT int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	NV_COUNT_INT(ibv_set_ece);
	if (!fake_handle_live(qp) || !ece || ece->comp_mask)
		return EINVAL;
	if (qp->state != IBV_QPS_INIT && qp->state != IBV_QPS_RESET)
		return EINVAL;
	/* options this HCA does not have cannot be switched on */
	return ece->options ? EOPNOTSUPP : 0;
}

FAKE_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	/* QPs are not created with ibv_create_qp_ex: none is extended */
	(void)qp;
	errno = EOPNOTSUPP;
	return NULL;
}

/* ---- the data path ------------------------------------------------------- */
static enum ibv_wc_opcode send_wc_opcode(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM: return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ: return IBV_WC_RDMA_READ;
	default: return IBV_WC_SEND;
	}
}

void nv_complete_send(struct nv_qp *q, struct nv_swr *w, enum ibv_wc_status st)
{
	if (st == IBV_WC_SUCCESS && !w->signaled)
		return;
	struct ibv_wc wc;
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = w->wr_id;
	wc.status = st;
	wc.opcode = send_wc_opcode(w->opcode);
	wc.qp_num = q->qp.qp_num;
	if (w->opcode == IBV_WR_RDMA_READ)
		wc.byte_len = (uint32_t)w->len;
	nv_cq_add((struct nv_cq *)q->qp.send_cq, &wc);
}

void nv_complete_recv(struct nv_qp *q, struct nv_rwr *r, enum ibv_wc_status st, enum ibv_wc_opcode op,
		      uint32_t len, uint32_t imm, int with_imm)
{
	struct ibv_wc wc;
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = r->wr_id;
	wc.status = st;
	wc.opcode = op;
	wc.byte_len = len;
	wc.qp_num = q->qp.qp_num;
	wc.src_qp = q->attr.dest_qp_num;
	wc.slid = q->peer && !q->peer->ethernet ? q->peer->lid : 0;
	if (with_imm) {
		wc.wc_flags = IBV_WC_WITH_IMM;
		wc.imm_data = imm;
	}
	if (q->attr.ah_attr.is_global)
		wc.wc_flags |= IBV_WC_GRH;
	nv_cq_add((struct nv_cq *)q->qp.recv_cq, &wc);
}

static int op_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct nv_qp *q = (struct nv_qp *)qp;
	int rc = 0;
	pthread_mutex_lock(&nv_lock);
	for (; wr; wr = wr->next) {
		if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_ERR && qp->state != IBV_QPS_SQD &&
		    qp->state != IBV_QPS_SQE) {
			rc = EINVAL;
			break;
		}
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > q->cap.max_send_sge) {
			rc = EINVAL;
			break;
		}
		if ((uint32_t)q->sq_count >= q->cap.max_send_wr) {
			rc = ENOMEM;
			break;
		}
		switch (wr->opcode) {
		case IBV_WR_SEND:
		case IBV_WR_SEND_WITH_IMM:
		case IBV_WR_RDMA_WRITE:
		case IBV_WR_RDMA_WRITE_WITH_IMM:
		case IBV_WR_RDMA_READ:
			break;
		default:
			rc = EINVAL;
			break;
		}
		if (rc)
			break;
		uint64_t len = 0;
		for (int i = 0; i < wr->num_sge; i++)
			len += wr->sg_list[i].length;
		if ((wr->send_flags & IBV_SEND_INLINE) && len > q->cap.max_inline_data) {
			rc = EINVAL;
			break;
		}
		struct nv_swr *w = calloc(1, sizeof(*w));
		if (!w || (wr->opcode != IBV_WR_RDMA_READ && !(w->data = malloc(len ? len : 1)))) {
			free(w);
			rc = ENOMEM;
			break;
		}
		w->wr_id = wr->wr_id;
		w->opcode = wr->opcode;
		w->signaled = q->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
		w->solicited = !!(wr->send_flags & IBV_SEND_SOLICITED);
		w->imm = wr->imm_data;
		w->len = len;
		if (wr->opcode != IBV_WR_SEND && wr->opcode != IBV_WR_SEND_WITH_IMM) {
			w->raddr = wr->wr.rdma.remote_addr;
			w->rkey = wr->wr.rdma.rkey;
		}
		uint64_t off = 0;
		for (int i = 0; i < wr->num_sge; i++) {
			const struct ibv_sge *s = &wr->sg_list[i];
			void *p;
			if (wr->opcode == IBV_WR_RDMA_READ) {
				p = nv_mr_ptr(nv_mr_find(s->lkey, 0), qp->pd, s->addr, s->length,
					      IBV_ACCESS_LOCAL_WRITE);
				w->sge[w->nsge++] = *s;
			} else if (wr->send_flags & IBV_SEND_INLINE) {
				p = (void *)(uintptr_t)s->addr;
			} else {
				p = s->length ? nv_mr_ptr(nv_mr_find(s->lkey, 0), qp->pd, s->addr, s->length, 0)
					      : (void *)1;
			}
			if (!p && s->length)
				w->local_err = IBV_WC_LOC_PROT_ERR;
			else if (w->data && s->length)
				memcpy(w->data + off, p, s->length);
			off += s->length;
		}
		if (qp->state == IBV_QPS_ERR) {
			nv_complete_send(q, w, IBV_WC_WR_FLUSH_ERR);
			free(w->data);
			free(w);
			continue;
		}
		w->seq = q->next_seq++;
		if (q->sq_tail)
			q->sq_tail->next = w;
		else
			q->sq_head = w;
		q->sq_tail = w;
		q->sq_count++;
	}
	if (rc && bad)
		*bad = wr;
	pthread_mutex_unlock(&nv_lock);
	nv_fabric_kick();
	return rc;
}

/* One receive request for a queue of @max_wr requests of @max_sge
 * entries each, copied, or an errno as the provider gives it: EINVAL for
 * too many entries, ENOMEM when the queue is full. */
static int rwr_new(const struct nv_rq *rq, uint32_t max_wr, uint32_t max_sge, const struct ibv_recv_wr *wr,
		   struct nv_rwr **out)
{
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge)
		return EINVAL;
	if ((uint32_t)rq->count >= max_wr)
		return ENOMEM;
	struct nv_rwr *r = calloc(1, sizeof(*r));
	if (!r)
		return ENOMEM;
	r->wr_id = wr->wr_id;
	r->nsge = wr->num_sge;
	memcpy(r->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(*r->sge));
	*out = r;
	return 0;
}

static void rq_push(struct nv_rq *rq, struct nv_rwr *r)
{
	if (rq->tail)
		rq->tail->next = r;
	else
		rq->head = r;
	rq->tail = r;
	rq->count++;
}

static int op_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct nv_qp *q = (struct nv_qp *)qp;
	int rc = 0;
	pthread_mutex_lock(&nv_lock);
	for (; wr; wr = wr->next) {
		if (qp->state == IBV_QPS_RESET) {
			rc = EINVAL;
			break;
		}
		if (q->srq) {   /* its receive queue is the SRQ: a full one of 0, as mlx5 finds it */
			rc = ENOMEM;
			break;
		}
		struct nv_rwr *r;
		rc = rwr_new(&q->rq, q->cap.max_recv_wr, q->cap.max_recv_sge, wr, &r);
		if (rc)
			break;
		if (qp->state == IBV_QPS_ERR) {
			nv_complete_recv(q, r, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, 0, 0, 0);
			free(r);
			continue;
		}
		rq_push(&q->rq, r);
	}
	if (rc && bad)
		*bad = wr;
	pthread_mutex_unlock(&nv_lock);
	if (!rc)
		nv_fabric_kick();
	return rc;
}

/* ---- shared receive queues ------------------------------------------------ */
static int op_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	if (!fake_handle_live(srq)) {
		if (bad)
			*bad = wr;
		return EINVAL;
	}
	struct nv_srq *s = (struct nv_srq *)srq;
	int rc = 0;
	pthread_mutex_lock(&nv_lock);
	for (; wr; wr = wr->next) {
		struct nv_rwr *r;
		rc = rwr_new(&s->rq, s->attr.max_wr, s->attr.max_sge, wr, &r);
		if (rc)
			break;
		rq_push(&s->rq, r);
	}
	if (rc && bad)
		*bad = wr;
	pthread_mutex_unlock(&nv_lock);
	if (!rc)
		nv_fabric_kick();
	return rc;
}

FAKE_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *ia)
{
	NV_COUNT_PTR(ibv_create_srq);
	if (!fake_handle_live(pd) || !ia) {
		errno = EINVAL;
		return NULL;
	}
	if (ia->attr.max_wr == 0 || ia->attr.max_wr > NV_MAX_WR || ia->attr.max_sge > NV_MAX_SGE) {
		errno = EINVAL;
		return NULL;
	}
	struct nv_srq *s = calloc(1, sizeof(*s));
	if (!s || fake_handle_add(&s->srq) < 0) {
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	s->srq.context = pd->context;
	s->srq.srq_context = ia->srq_context;
	s->srq.pd = pd;
	s->srq.events_completed = 0;
	pthread_mutex_init(&s->srq.mutex, NULL);
	pthread_cond_init(&s->srq.cond, NULL);
	/* what the queue holds, given back as a provider does; a limit is
	 * armed only by ibv_modify_srq */
	s->attr.max_wr = ia->attr.max_wr;
	s->attr.max_sge = ia->attr.max_sge ? ia->attr.max_sge : 1;
	s->attr.srq_limit = 0;
	ia->attr = s->attr;
	return &s->srq;
}

FAKE_EXPORT int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	NV_COUNT_INT(ibv_modify_srq);
	if (!fake_handle_live(srq) || !attr)
		return EINVAL;
	/* resizing (IBV_SRQ_MAX_WR) is refused, as by mlx5 */
	if (mask & ~IBV_SRQ_LIMIT || !(mask & IBV_SRQ_LIMIT))
		return EINVAL;
	struct nv_srq *s = (struct nv_srq *)srq;
	int rc = 0;
	pthread_mutex_lock(&nv_lock);
	if (attr->srq_limit > s->attr.max_wr)
		rc = EINVAL;
	else
		s->attr.srq_limit = attr->srq_limit;
	pthread_mutex_unlock(&nv_lock);
	return rc;
}

FAKE_EXPORT int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	NV_COUNT_INT(ibv_query_srq);
	if (!fake_handle_live(srq) || !attr)
		return EINVAL;
	pthread_mutex_lock(&nv_lock);
	*attr = ((struct nv_srq *)srq)->attr;
	pthread_mutex_unlock(&nv_lock);
	return 0;
}

FAKE_EXPORT int ibv_destroy_srq(struct ibv_srq *srq)
{
	NV_COUNT_INT(ibv_destroy_srq);
	if (!fake_handle_live(srq))
		return EINVAL;
	struct nv_srq *s = (struct nv_srq *)srq;
	/* under the lock ibv_create_qp counts its users with */
	pthread_mutex_lock(&nv_lock);
	int rc = s->users > 0 ? EBUSY : fake_handle_del(srq) ? 0 : EINVAL;
	pthread_mutex_unlock(&nv_lock);
	if (rc)
		return rc;
	while (s->rq.head) {
		struct nv_rwr *r = s->rq.head;
		s->rq.head = r->next;
		free(r);
	}
	free(s);
	return 0;
}

/* ---- strings --------------------------------------------------------------- */
FAKE_EXPORT const char *ibv_wc_status_str(enum ibv_wc_status s)
{
	static const char *const str[] = {
		[IBV_WC_SUCCESS] = "success",
		[IBV_WC_LOC_LEN_ERR] = "local length error",
		[IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
		[IBV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
		[IBV_WC_LOC_PROT_ERR] = "local protection error",
		[IBV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
		[IBV_WC_MW_BIND_ERR] = "memory management operation error",
		[IBV_WC_BAD_RESP_ERR] = "bad response error",
		[IBV_WC_LOC_ACCESS_ERR] = "local access error",
		[IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
		[IBV_WC_REM_ACCESS_ERR] = "remote access error",
		[IBV_WC_REM_OP_ERR] = "remote operation error",
		[IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
		[IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
		[IBV_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
		[IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
		[IBV_WC_REM_ABORT_ERR] = "aborted error",
		[IBV_WC_INV_EECN_ERR] = "invalid EE context number",
		[IBV_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
		[IBV_WC_FATAL_ERR] = "fatal error",
		[IBV_WC_RESP_TIMEOUT_ERR] = "response timeout error",
		[IBV_WC_GENERAL_ERR] = "general error",
		[IBV_WC_TM_ERR] = "TM error",
		[IBV_WC_TM_RNDV_INCOMPLETE] = "TM software rendezvous",
	};
	if ((unsigned)s < sizeof(str) / sizeof(str[0]) && str[s])
		return str[s];
	return "unknown";
}

FAKE_EXPORT const char *ibv_event_type_str(enum ibv_event_type e)
{
	static const char *const str[] = {
		[IBV_EVENT_CQ_ERR] = "CQ error",
		[IBV_EVENT_QP_FATAL] = "local work queue catastrophic error",
		[IBV_EVENT_QP_REQ_ERR] = "invalid request local work queue error",
		[IBV_EVENT_QP_ACCESS_ERR] = "local access violation work queue error",
		[IBV_EVENT_COMM_EST] = "communication established",
		[IBV_EVENT_SQ_DRAINED] = "send queue drained",
		[IBV_EVENT_PATH_MIG] = "path migrated",
		[IBV_EVENT_PATH_MIG_ERR] = "path migration request error",
		[IBV_EVENT_DEVICE_FATAL] = "local catastrophic error",
		[IBV_EVENT_PORT_ACTIVE] = "port active",
		[IBV_EVENT_PORT_ERR] = "port error",
		[IBV_EVENT_LID_CHANGE] = "LID change",
		[IBV_EVENT_PKEY_CHANGE] = "P_Key change",
		[IBV_EVENT_SM_CHANGE] = "SM change",
		[IBV_EVENT_SRQ_ERR] = "SRQ catastrophic error",
		[IBV_EVENT_SRQ_LIMIT_REACHED] = "SRQ limit reached",
		[IBV_EVENT_QP_LAST_WQE_REACHED] = "last WQE reached",
		[IBV_EVENT_CLIENT_REREGISTER] = "client reregistration",
		[IBV_EVENT_GID_CHANGE] = "GID table change",
		[IBV_EVENT_WQ_FATAL] = "WQ fatal",
	};
	if ((unsigned)e < sizeof(str) / sizeof(str[0]) && str[e])
		return str[e];
	return "unknown";
}

FAKE_EXPORT const char *ibv_node_type_str(enum ibv_node_type t)
{
	switch (t) {
	case IBV_NODE_CA: return "InfiniBand channel adapter";
	case IBV_NODE_SWITCH: return "InfiniBand switch";
	case IBV_NODE_ROUTER: return "InfiniBand router";
	case IBV_NODE_RNIC: return "iWARP NIC";
	default: return "unknown";
	}
}

FAKE_EXPORT const char *ibv_port_state_str(enum ibv_port_state s)
{
	switch (s) {
	case IBV_PORT_NOP: return "PORT_NOP";
	case IBV_PORT_DOWN: return "PORT_DOWN";
	case IBV_PORT_INIT: return "PORT_INIT";
	case IBV_PORT_ARMED: return "PORT_ARMED";
	case IBV_PORT_ACTIVE: return "PORT_ACTIVE";
	case IBV_PORT_ACTIVE_DEFER: return "PORT_ACTIVE_DEFER";
	default: return "invalid state";
	}
}
