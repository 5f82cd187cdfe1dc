/* SPDX-License-Identifier: MIT */
/*
 * verbs_fabric.c - RC QPs between processes of this machine, no daemon.
 *
 * Each QP listens on a UNIX stream socket named by its address, the
 * rendezvous: DIR/v<LID>.<QPN>, DIR being $NCCLRR_VERBS_DIR, else the
 * run's NCCLRR_ID_DIR (set by `ncclrr run`), else /tmp/ncclrr-verbs-<uid>.
 * bind() is the QPN allocator: a QPN whose name exists is taken, so QPNs
 * are unique per NIC across the processes sharing it. A requester connects
 * to its destination's socket and sends requests; the responder's progress
 * thread answers on the same connection (ACK, RNR NAK, NAK with an error,
 * or READ data) and writes into its own registered memory.
 *
 * The requester is stop-and-wait: one request of a QP in flight at a time,
 * which keeps RC ordering through RNR and retransmission. A request with no
 * answer within the QP's timeout is sent again, retry_cnt times, then
 * completes with IBV_WC_RETRY_EXC_ERR; the time of one try is
 * max(NCCLRR_VERBS_MIN_TIMEOUT_MS (200), 4.096 us * 2^timeout /
 * NCCLRR_VERBS_TIME_SCALE (16)). Packets for a QP that is not in RTR/RTS,
 * or that is connected to another QP, are dropped as an HCA drops them.
 */
#include "verbs_internal.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define NV_MAGIC 0x6e727276u /* "nrrv" */

/* The fabric is the NICs' hardware: its own sockets, polls and wake-ups
 * go to the kernel directly, not through libc, so that a tracer
 * interposing libc (ncclrr record) sees none of them, as it sees none of
 * a real HCA's traffic.  (Until 2026-11-27 they were recorded: the
 * progress thread's polls and the rendezvous sockets inside verbs calls;
 * traces of that time still hold them, and replay answers them from the
 * trace.) */
static int nic_socket(int domain, int type, int proto) { return (int)syscall(SYS_socket, domain, type, proto); }
static int nic_bind(int fd, const struct sockaddr *a, socklen_t l) { return (int)syscall(SYS_bind, fd, a, l); }
static int nic_listen(int fd, int backlog) { return (int)syscall(SYS_listen, fd, backlog); }
static int nic_accept4(int fd, int flags) { return (int)syscall(SYS_accept4, fd, NULL, NULL, flags); }
static int nic_connect(int fd, const struct sockaddr *a, socklen_t l) { return (int)syscall(SYS_connect, fd, a, l); }
static ssize_t nic_send(int fd, const void *b, size_t n, int flags) { return syscall(SYS_sendto, fd, b, n, flags, NULL, 0); }
static ssize_t nic_recv(int fd, void *b, size_t n, int flags) { return syscall(SYS_recvfrom, fd, b, n, flags, NULL, NULL); }
static ssize_t nic_read(int fd, void *b, size_t n) { return syscall(SYS_read, fd, b, n); }
static ssize_t nic_write(int fd, const void *b, size_t n) { return syscall(SYS_write, fd, b, n); }
static int nic_close(int fd) { return (int)syscall(SYS_close, fd); }
static int nic_eventfd(unsigned init, int flags) { return (int)syscall(SYS_eventfd2, init, flags); }
static int nic_poll(struct pollfd *p, nfds_t n, int timeout_ms)
{
	struct timespec ts = { timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L };
	return (int)syscall(SYS_ppoll, p, n, timeout_ms < 0 ? NULL : &ts, NULL, (size_t)(_NSIG / 8));
}

enum { PKT_REQ = 1, PKT_RESP = 2 };
enum { RESP_ACK, RESP_RNR, RESP_REM_ACCESS, RESP_REM_INV, RESP_REM_OP };

struct nv_pkt {
	uint32_t magic;
	uint8_t type, op, status, rnr;
	uint32_t src_qpn, dst_qpn, seq, imm, rkey, flags;
	uint64_t raddr, len;
};


static struct nv_conn *g_conns;
static int g_wake = -1;
static unsigned g_epoch;
static char g_dir[80];
static uint32_t g_next_qpn;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static long env_long(const char *name, long def, long lo)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return def;
	char *end;
	long x = strtol(v, &end, 10);
	if (*end || x < lo) {
		fake_log("libibverbs: %s=%s is not an integer >= %ld; using %ld", name, v, lo, def);
		return def;
	}
	return x;
}

static uint64_t try_ns(const struct nv_qp *q)
{
	static long scale = -1, floor_ms = -1;
	if (scale < 0) {
		scale = env_long("NCCLRR_VERBS_TIME_SCALE", 16, 1);
		floor_ms = env_long("NCCLRR_VERBS_MIN_TIMEOUT_MS", 200, 1);
	}
	uint64_t ns = (4096ull << q->attr.timeout) / (uint64_t)scale;
	uint64_t fl = (uint64_t)floor_ms * 1000000ull;
	return ns > fl ? ns : fl;
}

/* IB's RNR timer encoding (min_rnr_timer), in microseconds */
static const uint32_t rnr_us[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920,
	2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440, 81920, 122880,
	163840, 245760, 327680, 491520,
};

static int rendezvous_dir(void)
{
	if (g_dir[0])
		return 0;
	const char *d = getenv("NCCLRR_VERBS_DIR");
	if (!d || !*d)
		d = getenv("NCCLRR_ID_DIR");
	char def[64];
	if (!d || !*d) {
		snprintf(def, sizeof(def), "/tmp/ncclrr-verbs-%u", (unsigned)getuid());
		d = def;
	}
	if (strlen(d) + 24 > sizeof(((struct sockaddr_un *)0)->sun_path) || strlen(d) >= sizeof(g_dir)) {
		fake_log("libibverbs: rendezvous directory %s is too long for a socket name; "
			 "set NCCLRR_VERBS_DIR to a shorter one", d);
		return ENAMETOOLONG;
	}
	if (mkdir(d, 0700) < 0 && errno != EEXIST) {
		int e = errno;
		fake_log("libibverbs: cannot make the rendezvous directory %s: %s; set NCCLRR_VERBS_DIR "
			 "to a directory of yours", d, strerror(e));
		return e;
	}
	snprintf(g_dir, sizeof(g_dir), "%s", d);
	return 0;
}

static void *progress(void *arg);

/* fork: the child has no progress thread and none of the parent's QPs is
 * its own (as with an HCA, the parent's resources are not usable in the
 * child); it starts its fabric afresh when it creates a QP */
static void fork_prepare(void)
{
	pthread_mutex_lock(&nv_lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&nv_lock);
}

static void fork_child(void)
{
	pthread_mutex_init(&nv_lock, NULL);
	for (struct nv_conn *c = g_conns; c; c = c->next)
		if (c->fd >= 0)
			nic_close(c->fd);
	g_conns = NULL;
	for (struct nv_qp *q = nv_qps; q; q = q->next)
		if (q->lfd >= 0)
			nic_close(q->lfd);
	nv_qps = NULL;
	if (g_wake >= 0)
		nic_close(g_wake);
	g_wake = -1;
	g_next_qpn = 0;
}

static int start_thread(void)
{
	static int atfork;
	if (!atfork && pthread_atfork(fork_prepare, fork_parent, fork_child) == 0)
		atfork = 1;
	if (g_wake >= 0)
		return 0;
	g_wake = nic_eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (g_wake < 0)
		return errno;
	pthread_t t;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	/* the NIC's thread takes no signal: a SIGTERM for the process must
	 * reach the program's threads (a rank blocked in recv dies of it, as
	 * it would with a real HCA), not a handler run here while the
	 * program goes on */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&t, &at, progress, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&at);
	if (rc) {
		nic_close(g_wake);
		g_wake = -1;
		return rc;
	}
	return 0;
}

static void qp_sockaddr(struct sockaddr_un *sa, uint16_t lid, uint32_t qpn)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/v%u.%u", g_dir, lid, qpn);
}

int nv_fabric_listen(struct nv_qp *q, uint16_t lid)
{
	int rc = rendezvous_dir();
	if (rc)
		return rc;
	if ((rc = start_thread()) != 0)
		return rc;
	if (!g_next_qpn)
		g_next_qpn = 0x100 + (((uint32_t)getpid() * 2654435761u) >> 12) % 0xf00000;
	int fd = nic_socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	for (int tries = 0; tries < 65536; tries++) {
		uint32_t qpn = g_next_qpn++;
		if (g_next_qpn > NV_MAX_QPN)
			g_next_qpn = 0x100;
		struct sockaddr_un sa;
		qp_sockaddr(&sa, lid, qpn);
		if (nic_bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			if (nic_listen(fd, 64) < 0) {
				rc = errno;
				unlink(sa.sun_path);
				nic_close(fd);
				return rc;
			}
			q->lfd = fd;
			q->qp.qp_num = qpn;
			snprintf(q->path, sizeof(q->path), "%s", sa.sun_path);
			return 0;
		}
		if (errno != EADDRINUSE) {
			rc = errno;
			fake_log("libibverbs: cannot bind %s: %m", sa.sun_path);
			nic_close(fd);
			return rc;
		}
	}
	nic_close(fd);
	return ENOSPC;
}

void nv_fabric_kick(void)
{
	uint64_t one = 1;
	if (g_wake >= 0 && nic_write(g_wake, &one, sizeof(one)) < 0)
		FAKE_DBG("libibverbs: wake: %m");
}

static void conn_kill(struct nv_conn *c)
{
	if (c->fd >= 0)
		nic_close(c->fd);
	c->fd = -1;
	if (c->qp && c->qp->out == c)
		c->qp->out = NULL;
	c->qp = NULL;
}

void nv_fabric_close_qp(struct nv_qp *q, int keep_listening)
{
	for (struct nv_conn *c = g_conns; c; c = c->next)
		if (c->qp == q)
			conn_kill(c);
	if (q->lfd >= 0 && !keep_listening) {
		nic_close(q->lfd);
		unlink(q->path);
		q->lfd = -1;
	}
	q->out = NULL;
	q->inflight = 0;
	g_epoch++;
}

static struct nv_conn *conn_new(int fd, struct nv_qp *q, int outgoing)
{
	struct nv_conn *c = calloc(1, sizeof(*c));
	if (!c) {
		nic_close(fd);
		return NULL;
	}
	c->fd = fd;
	c->qp = q;
	c->outgoing = outgoing;
	c->next = g_conns;
	g_conns = c;
	return c;
}

static int conn_flush(struct nv_conn *c)
{
	while (c->fd >= 0 && c->outoff < c->outlen) {
		ssize_t n = nic_send(c->fd, c->out + c->outoff, c->outlen - c->outoff, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			conn_kill(c);
			return -1;
		}
		c->outoff += (size_t)n;
	}
	if (c->outoff == c->outlen)
		c->outoff = c->outlen = 0;
	return 0;
}

/* *@buf holds at least @need bytes (doubling); -1 when out of memory */
static int grow(uint8_t **buf, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	size_t nc = *cap ? *cap : 65536;
	while (nc < need)
		nc *= 2;
	uint8_t *nb = realloc(*buf, nc);
	if (!nb)
		return -1;
	*buf = nb;
	*cap = nc;
	return 0;
}

static void conn_send(struct nv_conn *c, const struct nv_pkt *h, const void *payload, size_t len)
{
	if (c->fd < 0)
		return;
	if (grow(&c->out, &c->outcap, c->outlen + sizeof(*h) + len) < 0) {
		conn_kill(c);
		return;
	}
	memcpy(c->out + c->outlen, h, sizeof(*h));
	if (len)
		memcpy(c->out + c->outlen + sizeof(*h), payload, len);
	c->outlen += sizeof(*h) + len;
	conn_flush(c);
}

static struct nv_conn *conn_open(struct nv_qp *q)
{
	int fd = nic_socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return NULL;
	struct sockaddr_un sa;
	qp_sockaddr(&sa, q->peer->lid, q->attr.dest_qp_num);
	if (nic_connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		FAKE_DBG("libibverbs: QP %u: connect %s: %m", q->qp.qp_num, sa.sun_path);
		nic_close(fd);
		return NULL;
	}
	return conn_new(fd, q, 1);
}

/* ---- errors and completions ---------------------------------------------- */
void nv_qp_drain(struct nv_qp *q, int complete, struct nv_swr *failed, enum ibv_wc_status st)
{
	q->inflight = 0;
	while (q->sq_head) {
		struct nv_swr *w = q->sq_head;
		q->sq_head = w->next;
		if (complete)
			nv_complete_send(q, w, w == failed ? st : IBV_WC_WR_FLUSH_ERR);
		free(w->data);
		free(w);
	}
	q->sq_tail = NULL;
	q->sq_count = 0;
	/* an SRQ's receives are not the QP's: they stay for its other QPs */
	while (q->rq.head) {
		struct nv_rwr *r = q->rq.head;
		q->rq.head = r->next;
		if (complete)
			nv_complete_recv(q, r, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, 0, 0, 0);
		free(r);
	}
	q->rq.tail = NULL;
	q->rq.count = 0;
}

void nv_qp_error(struct nv_qp *q, struct nv_swr *failed, enum ibv_wc_status st)
{
	q->qp.state = IBV_QPS_ERR;
	nv_qp_drain(q, 1, failed, st);
}

static void sq_pop(struct nv_qp *q, enum ibv_wc_status st)
{
	struct nv_swr *w = q->sq_head;
	q->sq_head = w->next;
	if (!q->sq_head)
		q->sq_tail = NULL;
	q->sq_count--;
	nv_complete_send(q, w, st);
	free(w->data);
	free(w);
}

struct nv_rwr *nv_rq_peek(struct nv_qp *q)
{
	return q->srq ? q->srq->rq.head : q->rq.head;
}

struct nv_rwr *nv_rq_pop(struct nv_qp *q)
{
	struct nv_rq *rq = q->srq ? &q->srq->rq : &q->rq;
	struct nv_rwr *r = rq->head;
	if (!r)
		return NULL;
	rq->head = r->next;
	if (!rq->head)
		rq->tail = NULL;
	rq->count--;
	/* the limit event fires once per arming (ibv_modify_srq IBV_SRQ_LIMIT) */
	struct nv_srq *s = q->srq;
	if (s && s->attr.srq_limit && (uint32_t)rq->count < s->attr.srq_limit) {
		s->attr.srq_limit = 0;
		nv_async_event(s->srq.context, IBV_EVENT_SRQ_LIMIT_REACHED, NULL, &s->srq);
	}
	return r;
}

/* @len bytes of @data into the SGEs (local keys of @pd, local write):
 * LOC_LEN_ERR when they hold less, LOC_PROT_ERR for a bad key or range */
static enum ibv_wc_status scatter(struct ibv_pd *pd, const struct ibv_sge *sge, int nsge, const uint8_t *data,
				  uint64_t len)
{
	uint64_t room = 0;
	for (int i = 0; i < nsge; i++)
		room += sge[i].length;
	if (room < len)
		return IBV_WC_LOC_LEN_ERR;
	uint64_t off = 0;
	for (int i = 0; i < nsge && off < len; i++) {
		uint64_t n = len - off < sge[i].length ? len - off : sge[i].length;
		void *p = nv_mr_ptr(nv_mr_find(sge[i].lkey, 0), pd, sge[i].addr, n, IBV_ACCESS_LOCAL_WRITE);
		if (!p)
			return IBV_WC_LOC_PROT_ERR;
		memcpy(p, data + off, n);
		off += n;
	}
	return IBV_WC_SUCCESS;
}

/* ---- responder ------------------------------------------------------------- */
static void respond(struct nv_conn *c, const struct nv_pkt *req, int status, uint8_t rnr, const void *data,
		    uint64_t len)
{
	struct nv_pkt h = { .magic = NV_MAGIC, .type = PKT_RESP, .op = req->op, .status = (uint8_t)status,
			    .rnr = rnr, .src_qpn = req->dst_qpn, .dst_qpn = req->src_qpn, .seq = req->seq,
			    .len = len };
	conn_send(c, &h, data, (size_t)len);
}

static void on_req(struct nv_conn *c, const struct nv_pkt *h, const uint8_t *payload)
{
	struct nv_qp *q = c->qp;
	if (!q || (q->qp.state != IBV_QPS_RTR && q->qp.state != IBV_QPS_RTS) ||
	    h->dst_qpn != q->qp.qp_num || h->src_qpn != q->attr.dest_qp_num)
		return; /* dropped: the requester times out */
	if (!q->comm_est && q->qp.state == IBV_QPS_RTR) {
		q->comm_est = 1;
		nv_async_event(q->qp.context, IBV_EVENT_COMM_EST, &q->qp, NULL);
	}
	int32_t d = (int32_t)(h->seq - q->expect_seq);
	if (d > 0)
		return;
	int dup = d < 0;
	struct ibv_pd *pd = q->qp.pd;
	if (h->op == IBV_WR_RDMA_READ) {
		void *p = h->len ? nv_mr_ptr(nv_mr_find(h->rkey, 1), pd, h->raddr, h->len, IBV_ACCESS_REMOTE_READ)
				 : (void *)1;
		if (!p || !(q->attr.qp_access_flags & IBV_ACCESS_REMOTE_READ)) {
			respond(c, h, RESP_REM_ACCESS, 0, NULL, 0);
			return;
		}
		respond(c, h, RESP_ACK, 0, h->len ? p : NULL, h->len);
		if (!dup)
			q->expect_seq++;
		return;
	}
	if (dup) {
		respond(c, h, RESP_ACK, 0, NULL, 0);
		return;
	}
	int needs_recv = h->op != IBV_WR_RDMA_WRITE;
	if (needs_recv && !nv_rq_peek(q)) {
		respond(c, h, RESP_RNR, q->attr.min_rnr_timer, NULL, 0);
		return;
	}
	if (h->op == IBV_WR_RDMA_WRITE || h->op == IBV_WR_RDMA_WRITE_WITH_IMM) {
		if (h->len) {
			void *p = nv_mr_ptr(nv_mr_find(h->rkey, 1), pd, h->raddr, h->len, IBV_ACCESS_REMOTE_WRITE);
			if (!p || !(q->attr.qp_access_flags & IBV_ACCESS_REMOTE_WRITE)) {
				respond(c, h, RESP_REM_ACCESS, 0, NULL, 0);
				return;
			}
			memcpy(p, payload, h->len);
		}
		if (needs_recv) {
			struct nv_rwr *r = nv_rq_pop(q);
			nv_complete_recv(q, r, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM, (uint32_t)h->len, h->imm, 1);
			free(r);
		}
	} else {
		struct nv_rwr *r = nv_rq_pop(q);
		enum ibv_wc_status st = scatter(pd, r->sge, r->nsge, payload, h->len);
		nv_complete_recv(q, r, st, IBV_WC_RECV, (uint32_t)h->len, h->imm, h->op == IBV_WR_SEND_WITH_IMM);
		free(r);
		if (st != IBV_WC_SUCCESS) {
			respond(c, h, st == IBV_WC_LOC_LEN_ERR ? RESP_REM_INV : RESP_REM_OP, 0, NULL, 0);
			nv_qp_error(q, NULL, IBV_WC_WR_FLUSH_ERR);
			return;
		}
	}
	q->expect_seq++;
	respond(c, h, RESP_ACK, 0, NULL, 0);
}

/* ---- requester ------------------------------------------------------------- */
static void on_resp(struct nv_conn *c, const struct nv_pkt *h, const uint8_t *payload, uint64_t now)
{
	struct nv_qp *q = c->qp;
	if (!q || q->qp.state != IBV_QPS_RTS || !q->inflight || !q->sq_head || q->sq_head->seq != h->seq)
		return;
	struct nv_swr *w = q->sq_head;
	q->inflight = 0;
	switch (h->status) {
	case RESP_ACK: {
		enum ibv_wc_status st = IBV_WC_SUCCESS;
		if (w->opcode == IBV_WR_RDMA_READ)
			st = scatter(q->qp.pd, w->sge, w->nsge, payload, h->len);
		if (st != IBV_WC_SUCCESS) {
			nv_qp_error(q, w, st);
			return;
		}
		q->retries_left = q->attr.retry_cnt;
		q->rnr_left = q->attr.rnr_retry;
		sq_pop(q, IBV_WC_SUCCESS);
		return;
	}
	case RESP_RNR:
		if (q->attr.rnr_retry != 7 && q->rnr_left-- <= 0) {
			nv_qp_error(q, w, IBV_WC_RNR_RETRY_EXC_ERR);
			return;
		}
		q->resend_ns = now + (uint64_t)rnr_us[h->rnr & 31] * 1000ull;
		return;
	case RESP_REM_ACCESS:
		nv_qp_error(q, w, IBV_WC_REM_ACCESS_ERR);
		return;
	case RESP_REM_INV:
		nv_qp_error(q, w, IBV_WC_REM_INV_REQ_ERR);
		return;
	default:
		nv_qp_error(q, w, IBV_WC_REM_OP_ERR);
		return;
	}
}

static void qp_engine(struct nv_qp *q, uint64_t now, uint64_t *next)
{
	if (q->qp.state != IBV_QPS_RTS || !q->sq_head)
		return;
	struct nv_swr *w = q->sq_head;
	if (q->inflight) {
		if (!q->deadline_ns)
			return; /* timeout 0: wait for ever */
		if (now < q->deadline_ns) {
			if (q->deadline_ns < *next)
				*next = q->deadline_ns;
			return;
		}
		if (q->retries_left-- <= 0) {
			nv_qp_error(q, w, IBV_WC_RETRY_EXC_ERR);
			return;
		}
		FAKE_DBG("libibverbs: QP %u: no answer to request %u, sent again (%d retries left)",
			 q->qp.qp_num, w->seq, q->retries_left);
		/* sent again on the same connection while it lives: an answer
		 * on its way still counts (the responder answers a repeat too) */
		q->inflight = 0;
	}
	if (now < q->resend_ns) {
		if (q->resend_ns < *next)
			*next = q->resend_ns;
		return;
	}
	if (w->local_err) {
		nv_qp_error(q, w, w->local_err);
		return;
	}
	if (!q->out)
		q->out = conn_open(q);
	if (q->out) {
		struct nv_pkt h = { .magic = NV_MAGIC, .type = PKT_REQ, .op = (uint8_t)w->opcode,
				    .src_qpn = q->qp.qp_num, .dst_qpn = q->attr.dest_qp_num, .seq = w->seq,
				    .imm = w->imm, .rkey = w->rkey, .raddr = w->raddr, .len = w->len,
				    .flags = (uint32_t)w->solicited };
		conn_send(q->out, &h, w->data, w->opcode == IBV_WR_RDMA_READ ? 0 : (size_t)w->len);
	}
	q->inflight = 1;
	q->deadline_ns = q->attr.timeout ? now + try_ns(q) : 0;
	if (q->deadline_ns && q->deadline_ns < *next)
		*next = q->deadline_ns;
}

/* read what is there; act on each whole packet */
static void conn_read(struct nv_conn *c, uint64_t now)
{
	int gone = 0;
	for (;;) {
		if (grow(&c->in, &c->incap, c->inlen + 65536) < 0) {
			conn_kill(c);
			return;
		}
		ssize_t n = nic_recv(c->fd, c->in + c->inlen, c->incap - c->inlen, 0);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			gone = 1; /* the peer is gone, after what it sent last */
			break;
		}
		if (n < 0)
			break;
		c->inlen += (size_t)n;
	}
	size_t off = 0;
	while (c->fd >= 0 && c->inlen - off >= sizeof(struct nv_pkt)) {
		struct nv_pkt h;
		memcpy(&h, c->in + off, sizeof(h));
		if (h.magic != NV_MAGIC || h.len > (1ull << 32)) {
			fake_log("libibverbs: QP %u (%s): a connection sent bytes that are no packet of the fake "
				 "fabric (magic 0x%08x, length %llu, at byte %llu of what it sent); is another "
				 "program using that socket? Connection closed",
				 c->qp ? c->qp->qp.qp_num : 0, c->qp ? c->qp->path : "?", h.magic,
				 (unsigned long long)h.len, (unsigned long long)(c->inpos + off));
			conn_kill(c);
			return;
		}
		uint64_t plen = (h.type == PKT_REQ && h.op != IBV_WR_RDMA_READ) ||
					(h.type == PKT_RESP && h.status == RESP_ACK && h.op == IBV_WR_RDMA_READ)
				? h.len
				: 0;
		if (c->inlen - off < sizeof(h) + plen) {
			if (grow(&c->in, &c->incap, sizeof(h) + plen) < 0)
				conn_kill(c);
			break;
		}
		const uint8_t *payload = c->in + off + sizeof(h);
		if (h.type == PKT_REQ && !c->outgoing)
			on_req(c, &h, payload);
		else if (h.type == PKT_RESP && c->outgoing)
			on_resp(c, &h, payload, now);
		off += sizeof(h) + plen;
	}
	if (off) {
		memmove(c->in, c->in + off, c->inlen - off);
		c->inlen -= off;
		c->inpos += off;
	}
	if (gone && c->fd >= 0)
		conn_kill(c);
}

enum { EV_WAKE, EV_LISTEN, EV_CONN };
struct ev {
	int kind;
	void *obj;
};

static void *progress(void *arg)
{
	(void)arg;
	struct pollfd *pfd = NULL;
	struct ev *evs = NULL;
	size_t cap = 0;
	pthread_mutex_lock(&nv_lock);
	for (;;) {
		/* free dead connections */
		for (struct nv_conn **pp = &g_conns; *pp;) {
			struct nv_conn *c = *pp;
			if (c->fd < 0) {
				*pp = c->next;
				free(c->in);
				free(c->out);
				free(c);
			} else {
				pp = &c->next;
			}
		}
		uint64_t now = now_ns();
		uint64_t next = UINT64_MAX;
		for (struct nv_qp *q = nv_qps; q; q = q->next)
			qp_engine(q, now, &next);
		size_t n = 1;
		for (struct nv_qp *q = nv_qps; q; q = q->next)
			n++;
		for (struct nv_conn *c = g_conns; c; c = c->next)
			n++;
		if (n > cap) {
			cap = n * 2;
			pfd = realloc(pfd, cap * sizeof(*pfd));
			evs = realloc(evs, cap * sizeof(*evs));
			if (!pfd || !evs) {
				fake_log("libibverbs: progress thread out of memory");
				abort();
			}
		}
		n = 0;
		pfd[n] = (struct pollfd){ .fd = g_wake, .events = POLLIN };
		evs[n++] = (struct ev){ EV_WAKE, NULL };
		for (struct nv_qp *q = nv_qps; q; q = q->next)
			if (q->lfd >= 0) {
				pfd[n] = (struct pollfd){ .fd = q->lfd, .events = POLLIN };
				evs[n++] = (struct ev){ EV_LISTEN, q };
			}
		for (struct nv_conn *c = g_conns; c; c = c->next)
			if (c->fd >= 0) {
				pfd[n] = (struct pollfd){ .fd = c->fd,
							  .events = POLLIN | (c->outlen > c->outoff ? POLLOUT : 0) };
				evs[n++] = (struct ev){ EV_CONN, c };
			}
		int timeout = -1;
		if (next != UINT64_MAX)
			timeout = next <= now ? 0 : (int)((next - now) / 1000000ull) + 1;
		unsigned epoch = g_epoch;
		pthread_mutex_unlock(&nv_lock);
		int r = nic_poll(pfd, n, timeout);
		pthread_mutex_lock(&nv_lock);
		if (r <= 0 || epoch != g_epoch)
			continue; /* a QP went away meanwhile: its entries may be stale */
		now = now_ns();
		for (size_t i = 0; i < n; i++) {
			if (!pfd[i].revents)
				continue;
			if (evs[i].kind == EV_WAKE) {
				uint64_t v;
				if (nic_read(g_wake, &v, sizeof(v)) < 0 && errno != EAGAIN)
					FAKE_DBG("libibverbs: wake read: %m");
			} else if (evs[i].kind == EV_LISTEN) {
				struct nv_qp *q = evs[i].obj;
				int fd = nic_accept4(q->lfd, SOCK_NONBLOCK | SOCK_CLOEXEC);
				if (fd >= 0)
					conn_new(fd, q, 0);
			} else {
				struct nv_conn *c = evs[i].obj;
				if (c->fd < 0)
					continue;
				if (pfd[i].revents & POLLOUT)
					conn_flush(c);
				if (c->fd >= 0 && (pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
					conn_read(c, now);
			}
		}
	}
	return NULL;
}
