/* SPDX-License-Identifier: MIT */
/*
 * rsock.c - socket calls replayed on real sockets of this machine.
 *
 * Every listen address of the recording is bound on loopback with a port
 * the kernel picks, and published in the coordinator's table under its
 * recorded address ("sock"); a connect looks its recorded destination up
 * there (waiting for the listener when it has not listened yet).  After a
 * connect the connector publishes its live local address -> recorded local
 * address ("conn"), so that an accept can tell which recorded connection
 * the kernel handed it and keep the others for the accepts they belong to.
 * UNIX socket names get a prefix of this replay, so that concurrent
 * replays (and the recorded job) never meet.
 *
 * Sends write the recorded bytes; receives read as many bytes as were
 * recorded and compare them with the recording.  Answers that depend on
 * timing ("not ready": EAGAIN, a poll that timed out) are taken from the
 * trace; a ready answer is waited for.  A socket whose peer is not
 * replayed (--ranks, or a peer outside the trace) is served from the
 * trace: its calls return what they returned.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "callfmt.h"
#include "engine.h"
#include "nrr_hash.h"

#define MAX_PASSED_FDS 16

struct stash {            /* a connection accepted for a later accept, or a datagram */
	int lfd;              /* live listening / receiving socket */
	uint8_t key[NRR_XMAP_MAX];
	size_t klen;
	int live;             /* accepted socket */
	uint8_t *data;        /* datagram */
	size_t len;
	int fds[MAX_PASSED_FDS];
	int nfds;
};

struct rsock {
	struct nrr_rproc *p;
	pthread_mutex_t mu;
	struct stash *st;
	size_t nst, cap;
	char prefix[48];      /* of UNIX socket names */
	struct { int64_t rec; uint8_t name[NRR_XMAP_MAX]; size_t len; } *bound;  /* UNIX names bound */
	size_t nbound, bcap;
	/* what the recording's kernel took into a send buffer that the
	 * replay's has no room for yet: the pump writes it (send_buffered) */
	pthread_mutex_t qmu;
	pthread_cond_t qcv;     /* a queue emptied or failed */
	struct sendq *q;
	size_t nq, qcap;
	int qwake;              /* eventfd: the pump looks at its queues again */
	bool pumping;
	pthread_t pump;
};

struct sendq {
	int fd;
	uint8_t *b;
	size_t off, len, cap;
	int shut_after;         /* the program shut it down (how + 1): the pump does once written */
	bool close_after;       /* the program closed it: the pump closes it once written */
};

/* ------------------------------------------------------------ fd table */
void nrr_rfd_put(nrr_rproc *p, int64_t rec, int live)
{
	pthread_mutex_lock(&p->fdmu);
	size_t i;
	for (i = 0; i < p->nfds && p->fds[i].rec != rec; i++)
		;
	if (i == p->nfds) {
		if (!nrr_grow(&p->fds, p->nfds, &p->fdcap, sizeof(*p->fds))) {
			pthread_mutex_unlock(&p->fdmu);
			return;
		}
		p->nfds++;
	}
	p->fds[i].rec = rec;
	p->fds[i].live = live;
	pthread_mutex_unlock(&p->fdmu);
}

/* -1: unknown */
static int rfd_lookup(nrr_rproc *p, int64_t rec)
{
	int live = -1;
	pthread_mutex_lock(&p->fdmu);
	for (size_t i = 0; i < p->nfds; i++)
		if (p->fds[i].rec == rec) {
			live = p->fds[i].live;
			break;
		}
	pthread_mutex_unlock(&p->fdmu);
	return live;
}

int nrr_rfd_get(nrr_rproc *p, int64_t rec)
{
	int live = rfd_lookup(p, rec);
	return live >= 0 ? live : -1;
}

bool nrr_rfd_served(nrr_rproc *p, int64_t rec)
{
	return rfd_lookup(p, rec) == RFD_SERVED;
}

void nrr_rfd_del(nrr_rproc *p, int64_t rec)
{
	pthread_mutex_lock(&p->fdmu);
	for (size_t i = 0; i < p->nfds; i++)
		if (p->fds[i].rec == rec) {
			p->fds[i] = p->fds[--p->nfds];
			break;
		}
	pthread_mutex_unlock(&p->fdmu);
}

uint64_t nrr_rproc_wall(const nrr_rproc *p, uint64_t ts)
{
	return nrr_reader_wall(p->r, ts);
}

/* ------------------------------------------------------------ helpers */
bool rsock_handles(const nrr_fn_schema *fn)
{
	return fn && !strcmp(fn->domain, "socket");
}

int rsock_open(struct rsock **out, struct nrr_rproc *p)
{
	struct rsock *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->p = p;
	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_init(&s->qmu, NULL);
	pthread_cond_init(&s->qcv, NULL);
	s->qwake = -1;
	snprintf(s->prefix, sizeof(s->prefix), "nrr-%d.%u-", (int)getppid(), p->repeat);
	*out = s;
	return 0;
}

static int64_t argv_i(const nrr_call *c, const char *name, int64_t dflt)
{
	int i = nrr_arg_index(c, name);
	return i < 0 ? dflt : (int64_t)c->args[i].u;
}

/* The recorded descriptor @c works on (its argument of role fd:
 * sockfd, fd), or -1 */
static int64_t rec_fd(const nrr_call *c)
{
	const nrr_value *v = nrr_call_role_arg(c, NRR_ARG_FD);
	return v ? (int64_t)v->u : -1;
}

static bool rec_failed(const nrr_call *c)
{
	return c->result < 0;
}

/* A recorded failure is answered from the trace (inject errors / all);
 * with --inject none it runs. */
static bool answer_failure(struct rsock *s, const nrr_call *c)
{
	if (!rec_failed(c) || c->err == EINPROGRESS)
		return false;  /* a non-blocking connect under way (NCCL's): it must run */
	if (c->err == EAGAIN || c->err == EWOULDBLOCK || c->err == EINTR)
		return true;   /* "not ready": timing, never the environment */
	if (c->err == ECONNREFUSED && nrr_call_role(c) == NRR_ROLE_CONNECT)
		return true;   /* the listener was not up yet (the caller retries), or gone */
	return s->p->o->inject != NRR_INJECT_NONE;
}

/* ::ffff:127.0.0.1 */
static struct in6_addr mapped_loopback(void)
{
	struct in6_addr a = { 0 };
	a.s6_addr[10] = a.s6_addr[11] = 0xff;
	a.s6_addr[12] = 127;
	a.s6_addr[15] = 1;
	return a;
}

/* Was IPv6 socket @fd made IPv6-only (IPV6_V6ONLY, replayed)?  Then it
 * cannot have an IPv4 address. */
static bool v6_only(int fd)
{
	int on = 0;
	socklen_t l = sizeof(on);
	return getsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, &l) == 0 && on;
}

/* Is @sa an IPv6 address holding an IPv4 one (::ffff:a.b.c.d)? */
static bool v4_mapped(const uint8_t *sa, size_t len)
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	return len >= sizeof(struct sockaddr_in6) && sa[0] == AF_INET6 &&
	       !memcmp(sa + offsetof(struct sockaddr_in6, sin6_addr), pfx, sizeof(pfx));
}

size_t nrr_addr_key(const uint8_t *sa, size_t len, uint8_t *key)
{
	if (len >= sizeof(struct sockaddr_in) && sa[0] == AF_INET) {
		memcpy(key, sa, 8);
		return 8;
	}
	if (v4_mapped(sa, len)) {
		/* the IPv4 endpoint it is: a dual-stack socket's peer is the
		 * same connection whichever family either end used */
		struct sockaddr_in a = { .sin_family = AF_INET };
		memcpy(key, &a, 2);
		memcpy(key + 2, sa + 2, 2);
		memcpy(key + 4, sa + offsetof(struct sockaddr_in6, sin6_addr) + 12, 4);
		return 8;
	}
	if (len >= sizeof(struct sockaddr_in6) && sa[0] == AF_INET6) {
		memcpy(key, sa, 4);
		memcpy(key + 4, sa + 8, 16);
		return 20;
	}
	size_t n = len < NRR_XMAP_MAX ? len : NRR_XMAP_MAX;
	memcpy(key, sa, n);
	return n;
}

size_t nrr_listen_keys(const uint8_t *sa, size_t len, uint8_t keys[3][NRR_XMAP_MAX], size_t lens[3])
{
	size_t n = 0;
	lens[0] = nrr_addr_key(sa, len, keys[0]);
	if (!lens[0])
		return 0;
	n = 1;
	bool v4 = lens[0] == 8 && keys[0][0] == AF_INET, v6 = lens[0] == 20 && keys[0][0] == AF_INET6;
	if (!v4 && !v6)
		return n;
	static const uint8_t zero[16];
	if (v4 && memcmp(keys[0] + 4, zero, 4)) {       /* 0.0.0.0:port */
		memcpy(keys[n], keys[0], 4);
		memset(keys[n] + 4, 0, 4);
		lens[n++] = 8;
	}
	if (v4 || memcmp(keys[0] + 4, zero, 16)) {      /* [::]:port (dual-stack) */
		struct sockaddr_in6 a = { .sin6_family = AF_INET6 };
		memcpy(keys[n], &a, 2);
		memcpy(keys[n] + 2, keys[0] + 2, 2);
		memset(keys[n] + 4, 0, 16);
		lens[n++] = 20;
	}
	return n;
}

size_t nrr_conn_key(const uint8_t *a, size_t al, const uint8_t *b, size_t bl, uint8_t *key)
{
	if (al < 2 || bl < 2 || (a[0] != AF_INET && a[0] != AF_INET6) || (b[0] != AF_INET && b[0] != AF_INET6))
		return 0;
	size_t n = nrr_addr_key(a, al, key);
	return n + nrr_addr_key(b, bl, key + n);
}

static void addr_text(const uint8_t *sa, size_t len, char *buf, size_t blen)
{
	FILE *f = fmemopen(buf, blen, "w");
	if (!f) {
		snprintf(buf, blen, "?");
		return;
	}
	nrr_arg_schema a = { .fmt = NRR_FMT_SOCKADDR, .wire = NRR_WIRE_B };
	nrr_value v = { .p = sa, .len = (uint32_t)len, .total = (uint32_t)len };
	nrr_format_value(f, &a, &v);
	fclose(f);
}

/* The recorded UNIX socket name @sa under this replay's prefix. */
static socklen_t unix_map(struct rsock *s, const uint8_t *sa, size_t len, struct sockaddr_un *out)
{
	memset(out, 0, sizeof(*out));
	out->sun_family = AF_UNIX;
	size_t off = offsetof(struct sockaddr_un, sun_path);
	const char *name = len > off ? (const char *)sa + off : "";
	size_t nlen = len > off ? len - off : 0;
	if (nlen && name[0] == 0) {    /* abstract: skip the leading NUL */
		name++;
		nlen--;
	}
	while (nlen && name[nlen - 1] == 0)
		nlen--;
	size_t pl = strlen(s->prefix);
	size_t room = sizeof(out->sun_path) - 1 - pl;
	if (nlen > room) {             /* keep the end: where names differ */
		name += nlen - room;
		nlen = room;
	}
	/* abstract namespace: nothing is left on the file system */
	memcpy(out->sun_path + 1, s->prefix, pl);
	memcpy(out->sun_path + 1 + pl, name, nlen);
	return (socklen_t)(off + 1 + pl + nlen);
}

static bool xmap_has(const char *kind, const uint8_t *key, size_t klen)
{
	uint8_t v[NRR_XMAP_MAX];
	size_t vl = sizeof(v);
	return nrr_xmap_get(kind, key, klen, v, &vl, 0) == 0;
}

size_t nrr_unix_key(const uint8_t *sa, size_t len, const uint8_t **key)
{
	if (len <= 2)
		return 0;
	*key = sa + 2;
	return len - 2 < NRR_XMAP_MAX ? len - 2 : NRR_XMAP_MAX;
}

/* The key under which table @kind holds the listener of recorded
 * destination @sa (nrr_listen_keys), in @key.  @return its length, 0 when
 * none is there. */
static size_t listen_key(const char *kind, const uint8_t *sa, size_t len, uint8_t *key)
{
	uint8_t keys[3][NRR_XMAP_MAX];
	size_t lens[3], n = nrr_listen_keys(sa, len, keys, lens);
	for (size_t i = 0; i < n; i++)
		if (xmap_has(kind, keys[i], lens[i])) {
			memcpy(key, keys[i], lens[i]);
			return lens[i];
		}
	return 0;
}

/* Is the recorded UNIX name @sa bound by a replayed process? */
static bool unix_replayed(const uint8_t *sa, size_t len)
{
	const uint8_t *name;
	size_t n = nrr_unix_key(sa, len, &name);
	return !n || xmap_has("usel", name, n);
}

/* Wait until @fd is ready for @events. */
static void wait_fd(int fd, short events)
{
	struct pollfd pf = { .fd = fd, .events = events };
	while (poll(&pf, 1, 100) == 0 || (pf.revents == 0))
		;
}

static ssize_t write_all(int fd, const uint8_t *b, size_t n, int flags)
{
	size_t done = 0;
	while (done < n) {
		ssize_t w = send(fd, b + done, n - done, flags | MSG_NOSIGNAL);
		if (w < 0 && errno == ENOTSOCK)
			w = write(fd, b + done, n - done);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				wait_fd(fd, POLLOUT);
				continue;
			}
			return -1;
		}
		done += (size_t)w;
	}
	return (ssize_t)done;
}

/* ---- sends the recording's kernel buffered
 * A program's send on a non-blocking socket returns once the kernel has
 * the bytes in the socket's buffers, which on loopback grow to megabytes
 * as the reader keeps up.  How far they have grown depends on timing, and
 * a replayed send must not wait for room the recording had: NCCL's
 * bootstrap ring sends 2.5 MB to the next rank before reading from the
 * previous one, so every rank would wait in its send (with buffers of
 * 64 KB, every replay hung so), and a peer at its recorded end (which
 * waits for this process to get past the send, wait_exit_time) never reads
 * what the kernel took for it there (1 replay in 100 of rank_killed hung).
 * So what does not fit now is queued, in order, for the pump thread, and
 * the call returns as it did: the replay's own buffer stands in for the
 * kernel's.  A send after the peer reset the connection fails there, as
 * the kernel makes it; a close waits in the pump for its bytes, as the
 * kernel delivers them after a close; a worker leaves once its queues are
 * written or failed (rsock_flush). */
static struct sendq *sendq_find(struct rsock *s, int fd)
{
	for (size_t i = 0; i < s->nq; i++)
		if (s->q[i].fd == fd)
			return &s->q[i];
	return NULL;
}

/* Under qmu: write what the socket takes now of each queue; drop those
 * written or failed (closing those the program closed). */
static void pump_pass(struct rsock *s)
{
	bool gone = false;
	for (size_t i = 0; i < s->nq;) {
		struct sendq *q = &s->q[i];
		while (q->off < q->len) {
			ssize_t w = send(q->fd, q->b + q->off, q->len - q->off, MSG_DONTWAIT | MSG_NOSIGNAL);
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				break;
			/* an error (the peer reset it) drops the rest, as the
			 * kernel drops a reset connection's buffer; the
			 * socket keeps failing the program's next send */
			q->off = w < 0 ? q->len : q->off + (size_t)w;
		}
		if (q->off < q->len) {
			i++;
			continue;
		}
		if (q->shut_after)
			shutdown(q->fd, q->shut_after - 1);
		if (q->close_after)
			close(q->fd);
		free(q->b);
		s->q[i] = s->q[--s->nq];
		gone = true;
	}
	if (gone)
		pthread_cond_broadcast(&s->qcv);
}

static void *pump_main(void *arg)
{
	struct rsock *s = arg;
	struct pollfd *pf = NULL;
	size_t cap = 0;
	pthread_mutex_lock(&s->qmu);
	for (;;) {
		pump_pass(s);
		/* short of memory: the queues past cap are looked at once it grows */
		nrr_reserve(&pf, s->nq + 1, &cap, sizeof(*pf));
		if (!pf) {   /* (no memory yet: look again later) */
			pthread_mutex_unlock(&s->qmu);
			poll(NULL, 0, 100);
			pthread_mutex_lock(&s->qmu);
			continue;
		}
		size_t n = 0;
		pf[n++] = (struct pollfd){ .fd = s->qwake, .events = POLLIN };
		for (size_t i = 0; i < s->nq && n < cap; i++)
			pf[n++] = (struct pollfd){ .fd = s->q[i].fd, .events = POLLOUT };
		pthread_mutex_unlock(&s->qmu);
		/* (the timeout only bounds a look missed for want of memory) */
		if (poll(pf, n, 100) > 0 && (pf[0].revents & POLLIN)) {
			uint64_t v;
			(void)!read(s->qwake, &v, sizeof(v));
		}
		pthread_mutex_lock(&s->qmu);
	}
	return NULL;
}

/* Under qmu: queue @n bytes of @b after what @fd has queued. */
static int sendq_add(struct rsock *s, int fd, const uint8_t *b, size_t n)
{
	if (!s->pumping) {
		if (s->qwake < 0 && (s->qwake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
			return -1;
		if (pthread_create(&s->pump, NULL, pump_main, s) != 0) {
			errno = EAGAIN;
			return -1;
		}
		s->pumping = true;
	}
	struct sendq *q = sendq_find(s, fd);
	if (!q) {
		if (!nrr_grow(&s->q, s->nq, &s->qcap, sizeof(*s->q)))
			return -1;
		q = &s->q[s->nq++];
		*q = (struct sendq){ .fd = fd };
	}
	if (!nrr_reserve(&q->b, q->len + n, &q->cap, 1))
		return -1;
	memcpy(q->b + q->len, b, n);
	q->len += n;
	uint64_t one = 1;
	(void)!write(s->qwake, &one, sizeof(one));
	return 0;
}

static bool is_stream(int fd)
{
	int t = 0;
	socklen_t l = sizeof(t);
	return getsockopt(fd, SOL_SOCKET, SO_TYPE, &t, &l) == 0 && t == SOCK_STREAM;
}

/* Send all @n bytes of @b on @fd: now what the socket takes, the rest by
 * the pump.  @return n, or -1 (errno) when the socket fails the send. */
static ssize_t send_buffered(struct rsock *s, int fd, const uint8_t *b, size_t n, int flags)
{
	if ((flags & MSG_OOB) || !is_stream(fd))
		return write_all(fd, b, n, flags);
	pthread_mutex_lock(&s->qmu);
	size_t done = 0;
	if (!sendq_find(s, fd))
		while (done < n) {
			ssize_t w = send(fd, b + done, n - done, flags | MSG_DONTWAIT | MSG_NOSIGNAL);
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				break;
			if (w < 0) {
				int err = errno;
				pthread_mutex_unlock(&s->qmu);
				errno = err;
				return -1;
			}
			done += (size_t)w;
		}
	int r = done < n ? sendq_add(s, fd, b + done, n - done) : 0;
	int err = errno;
	pthread_mutex_unlock(&s->qmu);
	errno = err;
	return r < 0 ? -1 : (ssize_t)n;
}

/* Wait until what @fd has queued is written (or failed). */
static void sendq_wait(struct rsock *s, int fd)
{
	pthread_mutex_lock(&s->qmu);
	while (sendq_find(s, fd) != NULL)
		pthread_cond_wait(&s->qcv, &s->qmu);
	pthread_mutex_unlock(&s->qmu);
}

/* Shut @fd down (@how >= 0) or close it (@how < 0) once its queue is
 * written.  @return true when the pump will. */
static bool sendq_after(struct rsock *s, int fd, int how)
{
	pthread_mutex_lock(&s->qmu);
	struct sendq *q = sendq_find(s, fd);
	if (q && how >= 0)
		q->shut_after = how + 1;
	else if (q)
		q->close_after = true;
	pthread_mutex_unlock(&s->qmu);
	return q != NULL;
}

/* The worker's end: wait until every queue is written or failed.
 * Meanwhile what arrives on those sockets is read and dropped: the
 * process makes no more calls, so it never reads it, and a peer waiting
 * here too for this one to read would otherwise wait for ever.  A socket
 * that got any is reset when it closes, as the kernel resets one closed
 * with unread data. */
void rsock_flush(struct rsock *s)
{
	enum { MAXFD = 64 };
	uint8_t sink[16384];
	struct pollfd pf[MAXFD];
	int ended[MAXFD];   /* at end of stream or failed: not looked at again */
	size_t nended = 0;
	pthread_mutex_lock(&s->qmu);
	while (s->nq > 0) {
		size_t n = 0;
		for (size_t i = 0; i < s->nq && n < MAXFD; i++) {
			size_t e = 0;
			while (e < nended && ended[e] != s->q[i].fd)
				e++;
			if (e == nended)
				pf[n++] = (struct pollfd){ .fd = s->q[i].fd, .events = POLLIN };
		}
		pthread_mutex_unlock(&s->qmu);
		if (poll(pf, n, 10) > 0)
			for (size_t i = 0; i < n; i++) {
				if (!pf[i].revents)
					continue;
				ssize_t r;
				bool got = false;
				while ((r = recv(pf[i].fd, sink, sizeof(sink), MSG_DONTWAIT)) > 0)
					got = true;
				if (got)
					setsockopt(pf[i].fd, SOL_SOCKET, SO_LINGER, &(struct linger){ 1, 0 }, sizeof(struct linger));
				if ((r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) && nended < MAXFD)
					ended[nended++] = pf[i].fd;
			}
		pthread_mutex_lock(&s->qmu);
	}
	pthread_mutex_unlock(&s->qmu);
}

/* Read exactly @n bytes (fewer at end of stream). */
static ssize_t read_exact(int fd, uint8_t *b, size_t n, int flags)
{
	size_t done = 0;
	bool peek = flags & MSG_PEEK;
	while (done < n) {
		ssize_t r = peek ? recv(fd, b, n, flags) : recv(fd, b + done, n - done, flags);
		if (r < 0 && errno == ENOTSOCK)
			r = read(fd, b + done, n - done);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				wait_fd(fd, POLLIN);
				continue;
			}
			return done ? (ssize_t)done : -1;
		}
		if (r == 0)
			break;
		if (peek) {
			if ((size_t)r >= n)
				return r;
			wait_fd(fd, POLLIN);
			continue;
		}
		done += (size_t)r;
	}
	return (ssize_t)done;
}

/* The sock_info note the tracer wrote for recorded fd @fd with @role after unit @k. */
static const nrr_call *info_after(struct rstream *st, size_t k, int64_t fd, int role)
{
	for (size_t j = k + 1; j < st->n && j <= k + 64; j++) {
		const nrr_call *c = &st->u[j].c;
		if (st->u[j].kind != U_INFO)
			continue;
		if (argv_i(c, "fd", -1) == fd && argv_i(c, "role", -1) == role)
			return c;
	}
	return NULL;
}

enum { ROLE_LISTEN = 1, ROLE_CONNECT = 2, ROLE_ACCEPT = 3 };

/* Is recorded socket @fd (used by unit @k) connected to a process that was
 * killed outright?  Its trace lost what it did last (up to the tracer's
 * sync interval), so what it sent then is not there to be replayed.
 * @return the wall time until which its trace is whole (at least 1; 1 when
 * not known), or 0 when it was not killed. */
static const nrr_call *last_info(struct rstream *st, size_t k, int64_t fd);

static uint64_t peer_in(struct rstream *st, size_t k, int64_t fd, const char *conns, const char *listeners);

static uint64_t peer_killed(struct rstream *st, size_t k, int64_t fd)
{
	return peer_in(st, k, fd, "killc", "kill");
}

/* Did the peer of socket @fd end by itself (an exit) in the recording?
 * @return its end's wall time, or 0 (not ended, or not known). */
static uint64_t peer_gone(struct rstream *st, size_t k, int64_t fd)
{
	uint64_t end = peer_in(st, k, fd, "gonec", "gone");
	return end > 1 ? end : 0;
}

/* The wall time in table @conns (connections as the peer saw them) or,
 * for a connect whose accept the peer's trace lacks, @listeners, of the
 * peer of @fd at unit @k: at least 1 when listed, 0 when not. */
static uint64_t peer_in(struct rstream *st, size_t k, int64_t fd, const char *conns, const char *listeners)
{
	const nrr_call *best = last_info(st, k, fd);
	int pi = best ? nrr_arg_index(best, "peer") : -1, li = best ? nrr_arg_index(best, "local") : -1;
	if (pi < 0 || li < 0 || best->args[pi].len < 2)
		return 0;
	/* the connection as the killed end saw it (its local address is our
	 * peer): ports are reused, an address alone may be another process's */
	uint8_t key[2 * NRR_XMAP_MAX];
	size_t kl = nrr_conn_key(best->args[pi].p, best->args[pi].len, best->args[li].p, best->args[li].len, key);
	uint64_t end = 0;
	size_t vl = sizeof(end);
	if (kl && nrr_xmap_get(conns, key, kl, &end, &vl, 0) == 0)
		return end ? end : 1;
	/* a connection to a listener whose accept its trace lacks */
	vl = sizeof(end);
	kl = argv_i(best, "role", -1) == ROLE_CONNECT ? listen_key(listeners, best->args[pi].p, best->args[pi].len, key) : 0;
	if (kl && nrr_xmap_get(listeners, key, kl, &end, &vl, 0) == 0)
		return end ? end : 1;
	return 0;
}

/* The last sock_info for @fd before unit @k, in any thread (the socket
 * may have been made by another one).  Each thread's notes are looked up
 * in its index of them, from the last one it had begun by then (a scan of
 * all its units took 79 % of a replay whose peer was killed: every socket
 * call asks, and a proxy thread polls a million times). */
static const nrr_call *last_info(struct rstream *st, size_t k, int64_t fd)
{
	const nrr_call *best = NULL;
	uint64_t ts = st->u[k].c.ts;
	for (size_t i = 0; i < st->p->ns; i++) {
		const struct rstream *t = &st->p->s[i];
		/* notes whose unit began (at) by @ts */
		size_t lo = ts == UINT64_MAX ? t->ninfo : nrr_units_before(t->u, t->info, t->ninfo, ts + 1, false);
		for (size_t x = lo; x-- > 0;) {
			const nrr_call *c = &t->u[t->info[x]].c;
			if (c->ts > ts || argv_i(c, "fd", -1) != fd)
				continue;
			if (!best || c->ts > best->ts)
				best = c;
			break;
		}
	}
	return best;
}

/* Was unit @k on @fd recorded after the trace of a process killed outright
 * stops being whole, this one's or the peer's (nrr_proc_info.whole_wall)?
 * What it did from then on is partly lost (a thread's chunk written later
 * holds more, the running threads' last moments are gone), so the call is
 * not run: the connection is served from the trace from here on. */
static bool after_killed_peer(struct rstream *st, size_t k, int64_t fd)
{
	if (!st->p->pi->any_killed)
		return false;   /* (and no search of the socket's peer on every send) */
	uint64_t at = nrr_reader_wall(st->p->r, st->u[k].c.ts);
	if (nrr_proc_killed(st->p->pi) && at >= st->p->pi->whole_wall)
		return true;
	uint64_t end = peer_killed(st, k, fd);
	return end > 1 && at >= end;
}

/* Live fd of the recorded socket arg @name; RFD_SERVED; or -1 (res set). */
static int sock_fd(struct rsock *s, const nrr_call *c, nrr_rres *res)
{
	int64_t rec = rec_fd(c);
	int live = rfd_lookup(s->p, rec);
	if (live == -1) {
		res->status = NRR_R_UNSUPPORTED;
		res->result = c->result;
		snprintf(res->why, sizeof(res->why), "fd %" PRId64 " was not made by a recorded call (answered from the trace)", rec);
	}
	return live;
}

/* The live fd @c works on, or -1 when the call is settled already
 * (res set): an fd no recorded call made, a socket served from the trace,
 * a recorded failure answered from it. */
static int live_fd(struct rsock *s, const nrr_call *c, nrr_rres *res)
{
	int fd = sock_fd(s, c, res);
	if (fd == -1)
		return -1;
	if (fd == RFD_SERVED || answer_failure(s, c)) {
		nrr_rres_injected(res, c);
		return -1;
	}
	return fd;
}

/* From now on recorded socket @rec is served from the trace (its peer is
 * not replayed, or not there any more); @c is answered from it. */
static int serve(struct rsock *s, int64_t rec, const nrr_call *c, nrr_rres *res)
{
	nrr_rfd_put(s->p, rec, RFD_SERVED);
	return nrr_rres_injected(res, c);
}

/* Compare a live -1/errno or value result with the recorded one. */
static int check_result(nrr_rres *res, const nrr_call *c, long live, int err)
{
	res->result = live;
	bool rf = c->result < 0, lf = live < 0;
	if (rf == lf && (!rf || err == (int)c->err))
		return 0;
	if (rf)
		return nrr_rres_set(res, NRR_R_DIVERGED, "result: recorded -1 %s, replayed %ld", strerror((int)c->err), live);
	return nrr_rres_set(res, NRR_R_DIVERGED, "result: recorded %" PRId64 ", replayed -1 %s", c->result, strerror(err));
}

/* ------------------------------------------------------------ calls */
static int r_socket(struct rsock *s, const nrr_call *c, nrr_rres *res)
{
	if (answer_failure(s, c))
		return nrr_rres_injected(res, c);
	int fd = socket((int)argv_i(c, "domain", AF_INET), (int)argv_i(c, "type", SOCK_STREAM),
			(int)argv_i(c, "protocol", 0));
	if (fd >= 0)
		nrr_rfd_put(s->p, c->result, fd);
	return check_result(res, c, fd, errno);
}

static int r_socketpair(struct rsock *s, const nrr_call *c, nrr_rres *res)
{
	if (answer_failure(s, c))
		return nrr_rres_injected(res, c);
	int sv[2];
	int i = nrr_arg_index(c, "sv");
	int r = socketpair((int)argv_i(c, "domain", AF_UNIX), (int)argv_i(c, "type", SOCK_STREAM),
			   (int)argv_i(c, "protocol", 0), sv);
	if (r == 0 && i >= 0 && c->args[i].len >= 8) {
		int rec[2];
		memcpy(rec, c->args[i].p, 8);
		nrr_rfd_put(s->p, rec[0], sv[0]);
		nrr_rfd_put(s->p, rec[1], sv[1]);
	}
	return check_result(res, c, r, errno);
}

static int r_bind(struct rsock *s, const nrr_call *c, nrr_rres *res)
{
	int fd = live_fd(s, c, res);
	if (fd < 0)
		return 0;
	int i = nrr_arg_index(c, "addr");
	if (i < 0 || c->args[i].len < 2)
		return nrr_rres_injected(res, c);
	const uint8_t *sa = c->args[i].p;
	int r;
	if (sa[0] == AF_UNIX) {
		struct sockaddr_un un;
		socklen_t l = unix_map(s, sa, c->args[i].len, &un);
		r = bind(fd, (struct sockaddr *)&un, l);
		pthread_mutex_lock(&s->mu);
		const uint8_t *name;
		size_t n = nrr_unix_key(sa, c->args[i].len, &name);
		if (n && nrr_grow(&s->bound, s->nbound, &s->bcap, sizeof(*s->bound))) {
			s->bound[s->nbound].rec = rec_fd(c);
			s->bound[s->nbound].len = n;
			memcpy(s->bound[s->nbound].name, name, n);
			s->nbound++;
		}
		pthread_mutex_unlock(&s->mu);
		/* senders of datagrams to this name wait for it (r_sendmsg) */
		static const uint8_t one = 1;
		if (r == 0 && n)
			nrr_xmap_put("ubnd", name, n, &one, 1);
	} else if (sa[0] == AF_INET6) {
		/* a wildcard or IPv4 address on an IPv6 socket (dual-stack):
		 * IPv4 loopback, which IPv4 sockets reach too; else ::1 */
		struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
		static const uint8_t any[16];
		const uint8_t *ra = sa + offsetof(struct sockaddr_in6, sin6_addr);
		if (c->args[i].len >= sizeof(a) && (v4_mapped(sa, c->args[i].len) || !memcmp(ra, any, 16)) && !v6_only(fd))
			a.sin6_addr = mapped_loopback();
		r = bind(fd, (struct sockaddr *)&a, sizeof(a));
	} else {
		/* every host of the recording is this one: loopback, a free port */
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		r = bind(fd, (struct sockaddr *)&a, sizeof(a));
	}
	return check_result(res, c, r, errno);
}

static int r_listen(struct rsock *s, struct rstream *st, size_t k, nrr_rres *res)
{
	const nrr_call *c = &st->u[k].c;
	int fd = live_fd(s, c, res);
	if (fd < 0)
		return 0;
	int r = listen(fd, (int)argv_i(c, "backlog", 128));
	int err = errno;
	const nrr_call *info = info_after(st, k, rec_fd(c), ROLE_LISTEN);
	int li = info ? nrr_arg_index(info, "local") : -1;
	if (r == 0 && li >= 0) {
		uint8_t key[NRR_XMAP_MAX], live[128];
		size_t kl = nrr_addr_key(info->args[li].p, info->args[li].len, key);
		socklen_t ll = sizeof(live);
		if (getsockname(fd, (struct sockaddr *)live, &ll) == 0 && kl) {
			int pr = nrr_xmap_put("sock", key, kl, live, ll);
			if (pr < 0)
				return nrr_rres_set(res, NRR_R_DIVERGED, "cannot publish the listen address: %s (replay table full)", strerror(-pr));
		}
	}
	return check_result(res, c, r, err);
}

/* Convert live address @a (@len) to family @fam, an IPv4 one to its IPv6
 * form (::ffff:a.b.c.d) or back, when it can be.  @return its length. */
static socklen_t to_family(int fam, uint8_t *a, socklen_t len)
{
	if (fam == AF_INET6 && a[0] == AF_INET && len >= sizeof(struct sockaddr_in)) {
		struct sockaddr_in v4;
		memcpy(&v4, a, sizeof(v4));
		struct sockaddr_in6 v6 = { .sin6_family = AF_INET6, .sin6_port = v4.sin_port };
		v6.sin6_addr.s6_addr[10] = v6.sin6_addr.s6_addr[11] = 0xff;
		memcpy(&v6.sin6_addr.s6_addr[12], &v4.sin_addr, 4);
		memcpy(a, &v6, sizeof(v6));
		return sizeof(v6);
	}
	if (fam == AF_INET && v4_mapped(a, len)) {
		struct sockaddr_in6 v6;
		memcpy(&v6, a, sizeof(v6));
		struct sockaddr_in v4 = { .sin_family = AF_INET, .sin_port = v6.sin6_port };
		memcpy(&v4.sin_addr, &v6.sin6_addr.s6_addr[12], 4);
		memcpy(a, &v4, sizeof(v4));
		return sizeof(v4);
	}
	return len;
}

/* Bind @fd to a free loopback port if it is not bound, then publish
 * (live local, live peer) -> recorded local address. */
static int publish_conn(int fd, const uint8_t *peer, socklen_t plen, const uint8_t *rec, size_t rlen)
{
	uint8_t mine[128];
	socklen_t ml = sizeof(mine);
	if (getsockname(fd, (struct sockaddr *)mine, &ml) < 0)
		return -errno;
	if ((mine[0] == AF_INET && !((struct sockaddr_in *)mine)->sin_port) ||
	    (mine[0] == AF_INET6 && !((struct sockaddr_in6 *)mine)->sin6_port)) {
		struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
		if (v4_mapped(peer, plen) && !v6_only(fd))
			a6.sin6_addr = mapped_loopback();
		int b = mine[0] == AF_INET ? bind(fd, (struct sockaddr *)&a4, sizeof(a4)) : bind(fd, (struct sockaddr *)&a6, sizeof(a6));
		ml = sizeof(mine);
		if (b < 0 || getsockname(fd, (struct sockaddr *)mine, &ml) < 0)
			return -errno;
	}
	uint8_t key[2 * NRR_XMAP_MAX], val[NRR_XMAP_MAX];
	size_t kl = nrr_addr_key(mine, ml, key);
	kl += nrr_addr_key(peer, plen, key + kl);
	size_t vl = nrr_addr_key(rec, rlen, val);
	return nrr_xmap_put("conn", key, kl, val, vl);
}

/* Did the getsockopt(SO_ERROR) that followed the in-progress connect of
 * recorded fd @fd (unit @k) report an error? */
static bool connect_failed_later(struct rstream *st, size_t k, int64_t fd)
{
	for (size_t j = k + 1; j < st->n && j <= k + 64; j++) {
		const nrr_call *c = &st->u[j].c;
		if (!c->fn || rec_fd(c) != fd)
			continue;
		enum nrr_role r = nrr_call_role(c);
		if (r == NRR_ROLE_CLOSE || r == NRR_ROLE_SEND || r == NRR_ROLE_RECV)
			return false;
		int err;
		if (nrr_so_error(c, &err))
			return err != 0;
	}
	return false;
}

bool nrr_so_error(const nrr_call *c, int *err)
{
	if (!c->fn || strcmp(c->fn->name, "getsockopt") || argv_i(c, "level", -1) != SOL_SOCKET ||
	    argv_i(c, "optname", -1) != SO_ERROR)
		return false;
	int i = nrr_arg_index(c, "optval");
	*err = 0;
	if (c->result == 0 && i >= 0 && c->args[i].p && c->args[i].len >= sizeof(int))
		memcpy(err, c->args[i].p, sizeof(*err));
	return true;
}

static int r_connect(struct rsock *s, struct rstream *st, size_t k, nrr_rres *res)
{
	const nrr_call *c = &st->u[k].c;
	int64_t rec = rec_fd(c);
	int fd = live_fd(s, c, res);
	if (fd < 0)
		return 0;
	int i = nrr_arg_index(c, "addr");
	if (i < 0 || c->args[i].len < 2)
		return nrr_rres_injected(res, c);
	const uint8_t *sa = c->args[i].p;
	size_t salen = c->args[i].len;
	uint8_t live[128];
	socklen_t ll;
	if (sa[0] == AF_UNIX) {
		if (!unix_replayed(sa, salen)) {
			/* a daemon outside the trace (lttng-sessiond, nscd, …) */
			return serve(s, rec, c, res);
		}
		ll = unix_map(s, sa, salen, (struct sockaddr_un *)live);
	} else {
		uint8_t key[NRR_XMAP_MAX];
		size_t kl = listen_key("lsel", sa, salen, key);
		if (!kl) {
			/* nobody replayed listens there: the peer is served from the trace */
			return serve(s, rec, c, res);
		}
		size_t vl = sizeof(live);
		int g = nrr_xmap_get("sock", key, kl, live, &vl, s->p->o->timeout_s * 1000);
		if (g < 0) {
			char a[80];
			addr_text(sa, salen, a, sizeof(a));
			return nrr_rres_set(res, NRR_R_DIVERGED, "connect to %s: its listener (a replayed process) did not listen within %d s", a,
					s->p->o->timeout_s);
		}
		/* an IPv4 socket to a dual-stack listener, or the other way */
		ll = to_family(sa[0], live, (socklen_t)vl);
	}
	/* A non-blocking connect whose SO_ERROR then said it failed (refused:
	 * the peer was gone, or the fault switch sent it to a closed port)
	 * made no connection in the recording: none is made here either. */
	if (c->result < 0 && c->err == EINPROGRESS && connect_failed_later(st, k, rec)) {
		return serve(s, rec, c, res);
	}
	/* Say which recorded connection this is before it exists, under the
	 * live 4-tuple (never reused while the connection may wait in the
	 * listener's queue), so the accepting side can always look it up. */
	if (sa[0] != AF_UNIX) {
		const nrr_call *info = info_after(st, k, rec, ROLE_CONNECT);
		int li = info ? nrr_arg_index(info, "local") : -1;
		if (li >= 0) {
			int pe = publish_conn(fd, live, ll, info->args[li].p, info->args[li].len);
			if (pe < 0)
				return nrr_rres_set(res, NRR_R_DIVERGED, "cannot name the connection for its acceptor: %s", strerror(-pe));
		}
	}
	int r = connect(fd, (struct sockaddr *)live, ll);
	int err = errno;
	if (r < 0 && err == EINPROGRESS && c->result == 0) {
		/* recorded as immediate on a non-blocking socket: wait for it */
		wait_fd(fd, POLLOUT);
		socklen_t el = sizeof(err);
		getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
		r = err ? -1 : 0;
	}
	if (r < 0 && err == ECONNREFUSED && (c->result == 0 || c->err == EINPROGRESS) && sa[0] != AF_UNIX) {
		uint8_t key[NRR_XMAP_MAX];
		if (listen_key("kill", sa, salen, key)) {
			/* its listener was killed outright earlier here than there */
			return serve(s, rec, c, res);
		}
		uint64_t end = 0;
		size_t kl = listen_key("gone", sa, salen, key), vl = sizeof(end);
		if (kl && nrr_xmap_get("gone", key, kl, &end, &vl, 0) == 0 && end && nrr_reader_wall(s->p->r, c->ts) >= end) {
			/* recorded after its listener's process ended: the
			 * kernel still had the listening socket of the process
			 * being torn down there; here it was closed first (its
			 * worker leaves at its recorded end) */
			return serve(s, rec, c, res);
		}
	}
	if (c->result < 0 && c->err == EINPROGRESS && (r == 0 || err == EINPROGRESS)) {
		res->result = c->result;
		return 0;
	}
	return check_result(res, c, r, err);
}

static int take_stash(struct rsock *s, int lfd, const uint8_t *key, size_t klen)
{
	int live = -1;
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->nst; i++) {
		struct stash *t = &s->st[i];
		if (t->lfd == lfd && !t->data && t->klen == klen && !memcmp(t->key, key, klen)) {
			live = t->live;
			s->st[i] = s->st[--s->nst];
			break;
		}
	}
	pthread_mutex_unlock(&s->mu);
	return live;
}

/* A datagram received earlier for a later recvmsg on @lfd: from sender
 * @key when the recording named it, else the one whose first bytes are
 * @head.  @return true with *@out filled (its data is the caller's). */
static bool take_dgram(struct rsock *s, int lfd, const uint8_t *key, size_t klen, const uint8_t *head, size_t hlen,
		       size_t len, struct stash *out)
{
	bool found = false;
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->nst && !found; i++) {
		struct stash *t = &s->st[i];
		if (t->lfd != lfd || !t->data)
			continue;
		if (klen ? (t->klen == klen && !memcmp(t->key, key, klen))
			 : (t->len == len && !memcmp(t->data, head, hlen < len ? hlen : len))) {
			*out = *t;
			s->st[i] = s->st[--s->nst];
			found = true;
		}
	}
	pthread_mutex_unlock(&s->mu);
	return found;
}

/* Is something already taken off live socket @lfd waiting in the stash (a
 * datagram or a connection a later call wants)?  A poll must count it as
 * ready: the socket itself no longer is. */
static bool stashed(struct rsock *s, int lfd)
{
	bool yes = false;
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->nst && !yes; i++)
		yes = s->st[i].lfd == lfd;
	pthread_mutex_unlock(&s->mu);
	return yes;
}

static void put_stash(struct rsock *s, const struct stash *t)
{
	pthread_mutex_lock(&s->mu);
	if (nrr_grow(&s->st, s->nst, &s->cap, sizeof(*s->st)))
		s->st[s->nst++] = *t;
	pthread_mutex_unlock(&s->mu);
}

static int r_accept(struct rsock *s, struct rstream *st, size_t k, nrr_rres *res)
{
	const nrr_call *c = &st->u[k].c;
	int lfd = sock_fd(s, c, res);
	if (lfd == -1)
		return 0;
	if (answer_failure(s, c))
		return nrr_rres_injected(res, c);
	if (lfd == RFD_SERVED) {
		return serve(s, c->result, c, res);
	}
	const nrr_call *info = info_after(st, k, c->result, ROLE_ACCEPT);
	int pi = info ? nrr_arg_index(info, "peer") : -1;
	uint8_t want[NRR_XMAP_MAX];
	size_t wl = pi >= 0 ? nrr_addr_key(info->args[pi].p, info->args[pi].len, want) : 0;
	if (wl && !xmap_has("csel", want, wl)) {
		/* the connecting process is not replayed: served from the trace */
		return serve(s, c->result, c, res);
	}
	int fl = (int)argv_i(c, "flags", 0) | SOCK_CLOEXEC;
	int live = wl ? take_stash(s, lfd, want, wl) : -1;
	while (live < 0) {
		uint8_t sa[128];
		socklen_t sl = sizeof(sa);
		int a = accept4(lfd, (struct sockaddr *)sa, &sl, fl);
		if (a < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				wait_fd(lfd, POLLIN);
				continue;
			}
			return check_result(res, c, -1, errno);
		}
		if (!wl) {
			live = a;
			break;
		}
		/* which recorded connection is this? the connector said */
		uint8_t key[2 * NRR_XMAP_MAX], rec[NRR_XMAP_MAX], here[128];
		socklen_t hl = sizeof(here);
		getsockname(a, (struct sockaddr *)here, &hl);
		size_t kl = nrr_addr_key(sa, sl, key), rl = sizeof(rec);
		kl += nrr_addr_key(here, hl, key + kl);
		if (nrr_xmap_get("conn", key, kl, rec, &rl, s->p->o->timeout_s * 1000) < 0)
			return nrr_rres_set(res, NRR_R_DIVERGED, "accepted a connection no replayed process says it made");
		if (rl == wl && !memcmp(rec, want, wl)) {
			live = a;
			break;
		}
		struct stash t = { .lfd = lfd, .klen = rl, .live = a };
		memcpy(t.key, rec, rl);
		put_stash(s, &t);
	}
	nrr_rfd_put(s->p, c->result, live);
	res->result = c->result;
	return 0;
}

/* The bytes of a send or receive: buf, or the gathered iov of writev/readv. */
static int data_arg(const nrr_call *c)
{
	int i = nrr_arg_index(c, "buf");
	return i >= 0 ? i : nrr_arg_index(c, "iov");
}

static int r_send(struct rsock *s, struct rstream *st, size_t k, nrr_rres *res)
{
	const nrr_call *c = &st->u[k].c;
	int fd = live_fd(s, c, res);
	if (fd < 0)
		return 0;
	if (after_killed_peer(st, k, rec_fd(c)))
		return serve(s, rec_fd(c), c, res);
	int bi = data_arg(c);
	size_t n = (size_t)c->result, have = n;
	uint8_t *b = bi >= 0 ? nrr_arg_bytes(c, bi, &have) : calloc(1, n + 1);
	if (!b)
		return -ENOMEM;
	if (have < n) {
		uint8_t *nb = realloc(b, n);
		if (!nb) {
			free(b);
			return -ENOMEM;
		}
		memset(nb + have, 0, n - have);
		b = nb;
	}
	int flags = (int)argv_i(c, "flags", 0) & ~MSG_DONTWAIT;
	ssize_t w = send_buffered(s, fd, b, n, flags);
	int err = errno;
	free(b);
	if (w < 0 && peer_killed(st, k, rec_fd(c))) {
		/* the killed peer went earlier here than there (its last moments
		 * were lost with its trace) */
		return serve(s, rec_fd(c), c, res);
	}
	uint64_t gone;
	if (w < 0 && (err == ECONNRESET || err == EPIPE) && (gone = peer_gone(st, k, rec_fd(c))) &&
	    nrr_reader_wall(st->p->r, c->ts) >= gone) {
		/* recorded after the peer's exit: the kernel still took the
		 * bytes there; here the peer's socket was closed first */
		return serve(s, rec_fd(c), c, res);
	}
	if (w < 0)
		return nrr_rres_set(res, NRR_R_DIVERGED, "sent %zu bytes in the recording; here: -1 %s", n, strerror(err));
	res->result = w;
	return 0;
}

void rsock_send_inflight(struct rsock *s, const nrr_call *c)
{
	nrr_rres res = { 0 };
	int bi = data_arg(c);
	if (nrr_call_role(c) != NRR_ROLE_SEND || bi < 0)
		return;
	int fd = live_fd(s, c, &res);
	size_t have = 0;
	uint8_t *b = fd >= 0 ? nrr_arg_bytes(c, bi, &have) : NULL;
	size_t len = (size_t)argv_i(c, "len", argv_i(c, "count", 0));
	/* (a payload the tracer cut is not sent: its bytes are not known) */
	if (b && len && have == len)
		(void)!send(fd, b, have, MSG_DONTWAIT | MSG_NOSIGNAL);
	free(b);
}

static int r_recv(struct rsock *s, struct rstream *st, size_t k, nrr_rres *res)
{
	const nrr_call *c = &st->u[k].c;
	int fd = live_fd(s, c, res);
	if (fd < 0)
		return 0;
	if (after_killed_peer(st, k, rec_fd(c)))
		return serve(s, rec_fd(c), c, res);
	size_t n = (size_t)c->result;
	int flags = (int)argv_i(c, "flags", 0) & ~MSG_DONTWAIT;
	if (n == 0) {
		uint8_t one;
		ssize_t r = read_exact(fd, &one, 1, flags | MSG_PEEK);
		if (r == 0 || (r < 0 && errno == ECONNRESET)) {
			res->result = 0;
			return 0;
		}
		if (r < 0)
			return nrr_rres_set(res, NRR_R_DIVERGED, "recorded end of stream (0), replayed -1 %s", strerror(errno));
		return nrr_rres_set(res, NRR_R_DIVERGED, "recorded end of stream (0), replayed data (first byte %02x): the peer sent more than in the recording", one);
	}
	uint8_t *b = malloc(n);
	if (!b)
		return -ENOMEM;
	ssize_t r = read_exact(fd, b, n, flags);
	int err = errno;
	int bi = data_arg(c);
	if ((r < 0 || (size_t)r < n) && peer_killed(st, k, rec_fd(c))) {
		/* what the killed peer sent last was lost with its trace */
		free(b);
		return serve(s, rec_fd(c), c, res);
	}
	if (r < 0) {
		free(b);
		return nrr_rres_set(res, NRR_R_DIVERGED, "recorded %zu bytes, replayed -1 %s", n, strerror(err));
	}
	if ((size_t)r < n) {
		free(b);
		return nrr_rres_set(res, NRR_R_DIVERGED, "recorded %zu bytes, replayed %zd and then end of stream (the peer closed)", n, r);
	}
	if (bi >= 0) {
		/* A sender replays the bytes its trace kept (the first
		 * NCCLRR_PAYLOAD of each send) and zeros for the rest; a recv
		 * can span several sends (NCCL's large bootstrap messages
		 * arrive in pieces), so a zero here may stand for a byte the
		 * sender's trace did not keep: only other bytes compare. */
		size_t cmp = c->args[bi].len < n ? c->args[bi].len : n;
		for (size_t j = 0; j < cmp; j++)
			if (b[j] != c->args[bi].p[j] && b[j] != 0) {
				int d = nrr_rres_set(res, NRR_R_DIVERGED, "payload differs at byte %zu of %zu: recorded %02x, replayed %02x", j, n,
						 c->args[bi].p[j], b[j]);
				free(b);
				return d;
			}
	}
	free(b);
	res->result = r;
	return 0;
}

/* The recorded custom:msghdr arg of @c (callfmt's rule and decoder). */
static bool parse_msg(const nrr_call *c, nrr_msghdr_rec *m)
{
	const nrr_value *v = nrr_call_msghdr(c);
	return v && v->p && nrr_msghdr_decode(v, m) == 0;
}

size_t msg_name(const nrr_call *c, const uint8_t **name)
{
	nrr_msghdr_rec m;
	if (!parse_msg(c, &m) || !m.name)
		return 0;
	*name = m.name;
	return m.name_len;
}

/* a hash of the name (@nlen bytes, a key: abstract names run to 107
 * bytes) and up to NRR_DGRAM_HEAD first bytes */
static size_t dgram_key(const uint8_t *name, size_t nlen, const nrr_msghdr_rec *m, uint8_t key[NRR_XMAP_MAX])
{
	_Static_assert(8 + NRR_DGRAM_HEAD <= NRR_XMAP_MAX, "a datagram key fits the table");
	if (!nlen)
		return 0;
	uint64_t h = nrr_hash(name, nlen, NRR_HASH_INIT);
	memcpy(key, &h, 8);
	size_t n = m->head_len < NRR_DGRAM_HEAD ? m->head_len : NRR_DGRAM_HEAD;
	if (n)
		memcpy(key + 8, m->head, n);
	return 8 + n;
}

size_t nrr_dgram_key(const nrr_call *c, uint8_t key[NRR_XMAP_MAX])
{
	nrr_msghdr_rec m;
	const uint8_t *name;
	if (!parse_msg(c, &m) || !m.name || m.name_len < 2 || m.name[0] != AF_UNIX)
		return 0;
	size_t n = nrr_unix_key(m.name, m.name_len, &name);
	return dgram_key(name, n, &m, key);
}

static int r_sendmsg(struct rsock *s, const nrr_call *c, nrr_rres *res)
{
	int fd = live_fd(s, c, res);
	if (fd < 0)
		return 0;
	nrr_msghdr_rec m;
	if (!parse_msg(c, &m))
		return nrr_rres_injected(res, c);
	sendq_wait(s, fd);   /* (after what the pump still has of earlier sends) */
	size_t n = c->result > 0 ? (size_t)c->result : 0;
	uint8_t *data = calloc(1, n + 1);
	if (!data)
		return -ENOMEM;
	memcpy(data, m.head, m.head_len < n ? m.head_len : n);
	struct iovec iov = { .iov_base = data, .iov_len = n };
	union {
		char buf[CMSG_SPACE(sizeof(int) * MAX_PASSED_FDS)];
		struct cmsghdr align;
	} ctl;
	struct sockaddr_un un;
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (m.name_len >= 2 && m.name[0] == AF_UNIX) {
		if (!unix_replayed(m.name, m.name_len)) {   /* to a process not replayed */
			free(data);
			return nrr_rres_injected(res, c);
		}
		msg.msg_namelen = unix_map(s, m.name, m.name_len, &un);
		msg.msg_name = &un;
		/* the receiver binds in another process: wait for it, as a
		 * connect waits for its listener (a datagram sent before the bind
		 * is refused) */
		const uint8_t *key;
		size_t kl = nrr_unix_key(m.name, m.name_len, &key);
		uint8_t v[NRR_XMAP_MAX];
		size_t vl = sizeof(v);
		if (c->result >= 0 && kl &&
		    nrr_xmap_get("ubnd", key, kl, v, &vl, s->p->o->timeout_s * 1000) < 0) {
			free(data);
			return nrr_rres_set(res, NRR_R_DIVERGED, "sendmsg to a UNIX name no replayed process bound within %d s",
					    s->p->o->timeout_s);
		}
	}
	if (m.nfd) {
		memset(&ctl, 0, sizeof(ctl));
		msg.msg_control = ctl.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)m.nfd);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)m.nfd);
		for (int j = 0; j < (int)m.nfd; j++) {
			int live = nrr_rfd_get(s->p, m.fds[j]);
			if (live < 0) {
				free(data);
				return nrr_rres_set(res, NRR_R_DIVERGED, "passes fd %" PRId64 ", which the replay does not have (the call that made it failed or was not recorded)", m.fds[j]);
			}
			memcpy(CMSG_DATA(cm) + sizeof(int) * (size_t)j, &live, sizeof(int));
		}
	}
	ssize_t w;
	do
		w = sendmsg(fd, &msg, (int)argv_i(c, "flags", 0) | MSG_NOSIGNAL);
	while (w < 0 && errno == EINTR);
	int err = errno;
	free(data);
	/* the receiver bound its name (waited for above) and is gone: its
	 * process ended a moment earlier here than there (NCCL's failing rank
	 * exits while a peer's proxy request to it is on its way) */
	if (w < 0 && (err == ECONNREFUSED || err == ENOENT) && c->result >= 0 && msg.msg_name)
		return nrr_rres_injected(res, c);
	return check_result(res, c, (long)w, err);
}

/* Will a replayed process send the datagram recvmsg @m got on recorded fd
 * @rec (a socket bound to a UNIX name; any other: yes)?  No when no
 * replayed process sends to that name, or when this datagram (its first
 * bytes: the recorded one names no sender) was sent only by processes not
 * replayed (@m NULL: any datagram). */
static bool unix_sent_to(struct rsock *s, int64_t rec, const nrr_msghdr_rec *m)
{
	bool yes = true;
	pthread_mutex_lock(&s->mu);
	for (size_t i = s->nbound; i-- > 0;)
		if (s->bound[i].rec == rec) {
			yes = xmap_has("usnd", s->bound[i].name, s->bound[i].len);
			uint8_t key[NRR_XMAP_MAX];
			size_t kl = yes && m ? dgram_key(s->bound[i].name, s->bound[i].len, m, key) : 0;
			if (kl && xmap_has("dnot", key, kl) && !xmap_has("dsel", key, kl))
				yes = false;
			break;
		}
	pthread_mutex_unlock(&s->mu);
	return yes;
}

static int r_recvmsg(struct rsock *s, const nrr_call *c, nrr_rres *res)
{
	int fd = live_fd(s, c, res);
	if (fd < 0)
		return 0;
	nrr_msghdr_rec m;
	if (!parse_msg(c, &m))
		return nrr_rres_injected(res, c);
	struct sockaddr_un want;
	socklen_t wl = 0;
	if (m.name_len >= 2 && m.name[0] == AF_UNIX) {
		if (!unix_replayed(m.name, m.name_len)) {
			/* from a process not replayed: what it passed stays in the trace */
			for (int j = 0; j < (int)m.nfd; j++)
				nrr_rfd_put(s->p, m.fds[j], RFD_SERVED);
			return nrr_rres_injected(res, c);
		}
		wl = unix_map(s, m.name, m.name_len, &want);
	} else if (!unix_sent_to(s, rec_fd(c), &m)) {
		/* no replayed process sends this datagram to the name this
		 * socket is bound to */
		for (int j = 0; j < (int)m.nfd; j++)
			nrr_rfd_put(s->p, m.fds[j], RFD_SERVED);
		return nrr_rres_injected(res, c);
	}
	size_t n = c->result > 0 ? (size_t)c->result : 0;
	uint8_t *data = calloc(1, n + 1);
	if (!data)
		return -ENOMEM;
	int got[MAX_PASSED_FDS], ngot = 0;
	ssize_t r;
	struct stash early;
	if (take_dgram(s, fd, (const uint8_t *)&want, wl, m.head, m.head_len, n, &early)) {
		memcpy(data, early.data, early.len < n ? early.len : n);
		free(early.data);
		r = (ssize_t)early.len;
		ngot = early.nfds;
		memcpy(got, early.fds, sizeof(int) * (size_t)ngot);
		errno = 0;
		goto have;
	}
	for (;;) {
		struct iovec iov = { .iov_base = data, .iov_len = n ? n : 1 };
		union {
			char buf[CMSG_SPACE(sizeof(int) * MAX_PASSED_FDS)];
			struct cmsghdr align;
		} ctl;
		struct sockaddr_un from;
		struct msghdr msg = { .msg_name = &from, .msg_namelen = sizeof(from), .msg_iov = &iov, .msg_iovlen = 1,
				      .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf) };
		r = recvmsg(fd, &msg, ((int)argv_i(c, "flags", 0) & ~MSG_DONTWAIT) | MSG_CMSG_CLOEXEC);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			wait_fd(fd, POLLIN);
			continue;
		}
		ngot = 0;
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); r >= 0 && cm; cm = CMSG_NXTHDR(&msg, cm))
			if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
				for (size_t j = 0; j < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int) && ngot < MAX_PASSED_FDS; j++)
					memcpy(&got[ngot++], CMSG_DATA(cm) + j * sizeof(int), sizeof(int));
		/* a datagram from another sender than recorded: the one recorded
		 * comes later here; that one is for a later recvmsg */
		/* without a recorded sender name (NCCL's proxy socket passes
		 * none), the datagram is recognised by its recorded first bytes */
		bool other = wl ? msg.msg_namelen && (msg.msg_namelen != wl || memcmp(&from, &want, wl))
				: (size_t)r != n || memcmp(data, m.head, m.head_len < n ? m.head_len : n);
		if (r >= 0 && other) {
			struct stash t = { .lfd = fd, .len = (size_t)r, .nfds = ngot };
			t.klen = msg.msg_namelen < NRR_XMAP_MAX ? msg.msg_namelen : NRR_XMAP_MAX;
			memcpy(t.key, &from, t.klen);
			memcpy(t.fds, got, sizeof(int) * (size_t)ngot);
			t.data = malloc((size_t)r + 1);
			if (t.data)
				memcpy(t.data, data, (size_t)r);
			put_stash(s, &t);
			continue;
		}
		break;
	}
have:;
	int err = errno;
	if (r >= 0) {
		for (int j = 0; j < (int)m.nfd && j < ngot; j++)
			nrr_rfd_put(s->p, m.fds[j], got[j]);
		if (ngot != (int)m.nfd) {
			free(data);
			return nrr_rres_set(res, NRR_R_DIVERGED, "recorded %d passed fd(s), replayed %d", m.nfd, ngot);
		}
		size_t cmp = m.head_len < (size_t)r ? m.head_len : (size_t)r;
		if (memcmp(data, m.head, cmp)) {
			free(data);
			return nrr_rres_set(res, NRR_R_DIVERGED, "message bytes differ from the recording");
		}
	}
	free(data);
	return check_result(res, c, (long)r, err);
}

/* The datagram that made recorded fd @fd ready at poll @k of @st: the
 * recvmsg on it that follows (within a few calls), or NULL. */
static const nrr_msghdr_rec *next_dgram(struct rstream *st, size_t k, int fd, nrr_msghdr_rec *m)
{
	for (size_t j = k + 1; j < st->n && j <= k + 16; j++) {
		const nrr_call *c = &st->u[j].c;
		if (nrr_call_role(c) == NRR_ROLE_RECV && nrr_call_msghdr(c) && rec_fd(c) == fd)
			return parse_msg(c, m) ? m : NULL;
	}
	return NULL;
}

static int wait_ready(struct rsock *s, struct rstream *st, size_t k, const struct pollfd *rec, struct pollfd *live,
		      size_t n, nrr_rres *res);

static int r_poll(struct rsock *s, struct rstream *st, size_t k, nrr_rres *res)
{
	const nrr_call *c = &st->u[k].c;
	if (c->result <= 0)    /* a timeout ("not ready") or an error: timing */
		return nrr_rres_injected(res, c);
	int i = nrr_arg_index(c, "fds");
	if (i < 0 || !c->args[i].p)
		return nrr_rres_injected(res, c);
	size_t n = c->args[i].len / sizeof(struct pollfd);
	struct pollfd *rec = (struct pollfd *)malloc(n * sizeof(*rec) + 1), *live = calloc(n + 1, sizeof(*live));
	if (!rec || !live) {
		free(rec);
		free(live);
		return -ENOMEM;
	}
	memcpy(rec, c->args[i].p, n * sizeof(*rec));
	int ret = wait_ready(s, st, k, rec, live, n, res);
	free(rec);
	free(live);
	return ret;
}

/* Wait until every re-executed descriptor that was ready in the recording
 * (@rec: recorded fds, events and revents) is ready here; the answer is
 * the recorded one.  @live: room for @n pollfds. */
static int wait_ready(struct rsock *s, struct rstream *st, size_t k, const struct pollfd *rec, struct pollfd *live,
		      size_t n, nrr_rres *res)
{
	const nrr_call *c = &st->u[k].c;
	for (size_t j = 0; j < n; j++) {
		int l = rec[j].fd >= 0 ? rfd_lookup(s->p, rec[j].fd) : -1;
		/* a socket bound to a UNIX name whose datagram no replayed
		 * process sends (NCCL's proxy socket under --ranks) gets none
		 * here: its readiness is the trace's, as its recvmsg is */
		nrr_msghdr_rec m;
		if (l >= 0 && rec[j].revents && !unix_sent_to(s, rec[j].fd, next_dgram(st, k, rec[j].fd, &m)))
			l = -1;
		live[j].fd = l >= 0 ? l : -1;
		live[j].events = rec[j].events;
	}
	for (int r = 0;;) {
		/* a listener whose connection an accept took already (for a
		 * later accept: stashed) is ready without the kernel saying so */
		bool all = true;
		for (size_t j = 0; j < n; j++)
			if (live[j].fd >= 0 && rec[j].revents && !(r > 0 && live[j].revents) && !stashed(s, live[j].fd))
				all = false;
		if (all)
			break;
		r = poll(live, n, 100);
		if (r < 0 && errno != EINTR)
			return nrr_rres_set(res, NRR_R_DIVERGED, "%s: poll: -1 %s", c->fn->name, strerror(errno));
	}
	res->result = c->result;
	return 0;
}

/* Descriptors served from the trace from their creation: pipes and
 * eventfds (not traced: a call on one is recorded only when it copies one
 * over a traced descriptor), epoll instances (their answers are replayed
 * by epoll_wait). */
static int r_made_served(struct rsock *s, const nrr_call *c, nrr_rres *res)
{
	int i = nrr_arg_index(c, "pipefd");
	if (c->result >= 0 && i >= 0 && c->args[i].p && c->args[i].len >= 8) {
		int rec[2];
		memcpy(rec, c->args[i].p, 8);
		nrr_rfd_put(s->p, rec[0], RFD_SERVED);
		nrr_rfd_put(s->p, rec[1], RFD_SERVED);
	} else if (c->result >= 0 && i < 0) {
		nrr_rfd_put(s->p, c->result, RFD_SERVED);
	}
	return nrr_rres_injected(res, c);
}

/* dup, dup2, dup3: a copy of the live descriptor under the recorded number */
static int r_dup(struct rsock *s, const nrr_call *c, nrr_rres *res)
{
	int64_t old = argv_i(c, "oldfd", -1), nw = c->result;
	int live = rfd_lookup(s->p, old);
	if (c->result < 0 || live == -1 || live == RFD_SERVED) {
		if (c->result >= 0 && old != nw)
			nrr_rfd_put(s->p, nw, live == -1 ? RFD_SERVED : live);
		return nrr_rres_injected(res, c);
	}
	if (old == nw) {
		res->result = c->result;
		return 0;
	}
	int prev = rfd_lookup(s->p, nw);   /* copied over: closed */
	int d = fcntl(live, F_DUPFD_CLOEXEC, 0);
	if (d < 0)
		return check_result(res, c, d, errno);
	if (prev >= 0)
		close(prev);
	nrr_rfd_put(s->p, nw, d);
	res->result = c->result;
	return 0;
}

/* The live socket and the recorded messages of sendmmsg/recvmmsg @c:
 * @return their number, or -1 when the call is settled (res set: served
 * from the trace, or not every message was recorded). */
static int mmsg_call(struct rsock *s, const nrr_call *c, nrr_mmsg_rec *m, int *fd, nrr_rres *res)
{
	*fd = live_fd(s, c, res);
	if (*fd < 0)
		return -1;
	int i = nrr_arg_index(c, "msgvec");
	int n = i >= 0 ? nrr_mmsg_decode(&c->args[i], m, NRR_MMSG_MAX) : -1;
	if (n != c->result) {
		serve(s, rec_fd(c), c, res);
		return -1;
	}
	return n;
}

/* sendmmsg: each recorded message sent (its first bytes, zeros for the
 * rest) on a connected socket */
static int r_sendmmsg(struct rsock *s, struct rstream *st, size_t k, nrr_rres *res)
{
	const nrr_call *c = &st->u[k].c;
	nrr_mmsg_rec m[NRR_MMSG_MAX];
	int fd, n = mmsg_call(s, c, m, &fd, res);
	if (n < 0)
		return 0;
	for (int j = 0; j < n; j++)
		if (m[j].name_len)   /* a datagram to a named address: not re-executed */
			return serve(s, rec_fd(c), c, res);
	for (int j = 0; j < n; j++) {
		uint8_t *b = calloc(1, m[j].len + 1);
		if (!b)
			return -ENOMEM;
		memcpy(b, m[j].head, m[j].head_len < m[j].len ? m[j].head_len : m[j].len);
		ssize_t w = send_buffered(s, fd, b, m[j].len, (int)argv_i(c, "flags", 0) & ~MSG_DONTWAIT);
		int err = errno;
		free(b);
		if (w < 0)
			return nrr_rres_set(res, NRR_R_DIVERGED, "message %d of %d: sent %zu bytes in the recording; here: -1 %s", j + 1,
					    n, (size_t)m[j].len, strerror(err));
	}
	res->result = c->result;
	return 0;
}

/* recvmmsg: each recorded message received (as many bytes) and its first
 * bytes compared */
static int r_recvmmsg(struct rsock *s, struct rstream *st, size_t k, nrr_rres *res)
{
	const nrr_call *c = &st->u[k].c;
	nrr_mmsg_rec m[NRR_MMSG_MAX];
	int fd, n = mmsg_call(s, c, m, &fd, res);
	if (n < 0)
		return 0;
	int type = SOCK_STREAM;
	socklen_t tl = sizeof(type);
	getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl);
	int flags = (int)argv_i(c, "flags", 0) & ~(MSG_DONTWAIT | MSG_WAITFORONE);
	for (int j = 0; j < n; j++) {
		uint8_t *b = malloc(m[j].len + 1);
		if (!b)
			return -ENOMEM;
		ssize_t r;
		if (type == SOCK_STREAM) {
			r = read_exact(fd, b, m[j].len, flags);
		} else {
			wait_fd(fd, POLLIN);
			r = recv(fd, b, m[j].len + 1, flags);
		}
		int err = errno;
		bool same = r == (ssize_t)m[j].len && !memcmp(b, m[j].head, m[j].head_len < m[j].len ? m[j].head_len : m[j].len);
		free(b);
		if (r < 0)
			return nrr_rres_set(res, NRR_R_DIVERGED, "message %d of %d: recorded %zu bytes, replayed -1 %s", j + 1, n,
					    (size_t)m[j].len, strerror(err));
		if (!same)
			return nrr_rres_set(res, NRR_R_DIVERGED, "message %d of %d: recorded %zu bytes, replayed %zd or other bytes", j + 1,
					    n, (size_t)m[j].len, r);
	}
	res->result = c->result;
	return 0;
}

/* A call the tracer caught but the API description does not describe
 * touched this descriptor: what went over it is not in the trace. */
static int r_undescribed(struct rsock *s, struct rstream *st, size_t k, nrr_rres *res)
{
	const nrr_call *c = &st->u[k].c;
	int i = nrr_arg_index(c, "call");
	char call[64] = "?";
	if (i >= 0 && c->args[i].p)
		snprintf(call, sizeof(call), "%.*s", (int)c->args[i].len, (const char *)c->args[i].p);
	int64_t fd = rec_fd(c);
	if (!strcmp(call, "syscall(SYS_close)")) {
		/* a close moves no bytes: nothing is missing (PyTorch's
		 * TCPStore closes its sockets this way) */
		int live = rfd_lookup(s->p, fd);
		nrr_rfd_del(s->p, fd);
		if (live >= 0)
			close(live);
		res->result = 0;
		return 0;
	}
	nrr_report(s->p, "N %u %" PRIu64 " %" PRId64 " %s", st->index, c->seq, fd, call);
	res->status = NRR_R_UNSUPPORTED;
	snprintf(res->why, sizeof(res->why),
		 "%s on fd %" PRId64 " is not described in formats/api: its bytes are not in the trace; fd %" PRId64
		 " is served from the trace from here on",
		 call, fd, fd);
	int live = rfd_lookup(s->p, fd);
	const nrr_call *info = live >= 0 ? last_info(st, k, fd) : NULL;
	int li = info ? nrr_arg_index(info, "local") : -1;
	if (li >= 0 && info->args[li].len >= 2) {
		/* its peer's reads and sends on this connection are served from
		 * the trace from here on too, as a killed peer's are: the end of
		 * stream it meets here says so */
		uint8_t key[2 * NRR_XMAP_MAX];
		uint64_t end = 0;   /* (when it stops: not known) */
		int pi = nrr_arg_index(info, "peer");
		size_t kl = pi >= 0 ? nrr_conn_key(info->args[li].p, info->args[li].len, info->args[pi].p, info->args[pi].len, key) : 0;
		if (kl)
			nrr_xmap_put("killc", key, kl, &end, sizeof(end));
		shutdown(live, SHUT_RDWR);
	}
	if (live != -1)
		nrr_rfd_put(s->p, fd, RFD_SERVED);
	return 0;
}

static int r_close(struct rsock *s, const nrr_call *c, nrr_rres *res)
{
	int64_t rec = rec_fd(c);
	int fd = sock_fd(s, c, res);
	if (fd == -1)
		return 0;
	nrr_rfd_del(s->p, rec);
	if (fd == RFD_SERVED || answer_failure(s, c))
		return nrr_rres_injected(res, c);
	if (sendq_after(s, fd, -1))
		return check_result(res, c, 0, 0);
	int r = close(fd);
	return check_result(res, c, r, errno);
}

/* Calls on a socket whose result is all that is compared. */
static int r_simple(struct rsock *s, const nrr_call *c, nrr_rres *res)
{
	int fd = live_fd(s, c, res);
	if (fd < 0)
		return 0;
	const char *name = c->fn->name;
	long r = 0;
	uint8_t buf[256];
	socklen_t bl = sizeof(buf);
	if (!strcmp(name, "setsockopt")) {
		size_t n;
		int i = nrr_arg_index(c, "optval");
		uint8_t *v = i >= 0 ? nrr_arg_bytes(c, i, &n) : NULL;
		if (!v)
			return nrr_rres_injected(res, c);
		r = setsockopt(fd, (int)argv_i(c, "level", 0), (int)argv_i(c, "optname", 0), v, (socklen_t)n);
		free(v);
	} else if (!strcmp(name, "getsockopt")) {
		r = getsockopt(fd, (int)argv_i(c, "level", 0), (int)argv_i(c, "optname", 0), buf, &bl);
	} else if (!strcmp(name, "getsockname")) {
		r = getsockname(fd, (struct sockaddr *)buf, &bl);
	} else if (!strcmp(name, "getpeername")) {
		r = getpeername(fd, (struct sockaddr *)buf, &bl);
	} else if (!strcmp(name, "shutdown")) {
		int how = (int)argv_i(c, "how", SHUT_RDWR);
		r = sendq_after(s, fd, how) ? 0 : shutdown(fd, how);
	} else if (!strcmp(name, "fcntl") || !strcmp(name, "fcntl64")) {
		int cmd = (int)argv_i(c, "cmd", F_GETFL);
		r = fcntl(fd, cmd, (long)argv_i(c, "arg", 0));
		if ((cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) && r >= 0 && c->result >= 0)
			nrr_rfd_put(s->p, c->result, (int)r);   /* a copy, under its recorded number */
		if (c->result >= 0 && r >= 0) {    /* flags read back: compare only success */
			res->result = c->result;
			return 0;
		}
	} else {
		return nrr_rres_injected(res, c);
	}
	return check_result(res, c, r, errno);
}

int rsock_inflight_check(struct rsock *s, const nrr_call *c, char *why, size_t len)
{
	bool acc = nrr_call_role(c) == NRR_ROLE_ACCEPT;
	if (!acc && nrr_call_role(c) != NRR_ROLE_RECV)
		return 0;
	int fd = rfd_lookup(s->p, rec_fd(c));
	if (fd < 0)
		return 0;
	if (acc) {
		/* a connection a replayed process made by a recorded connect
		 * waited unaccepted in the recording too (its connect returned,
		 * this accept never did); any other is new */
		uint8_t sa[128], here[128];
		socklen_t sl = sizeof(sa), hl = sizeof(here);
		int a;
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		while (poll(&pf, 1, 0) == 1 && (pf.revents & POLLIN) &&
		       (a = accept4(fd, (struct sockaddr *)sa, &sl, SOCK_CLOEXEC)) >= 0) {
			uint8_t key[2 * NRR_XMAP_MAX], rec[NRR_XMAP_MAX];
			size_t rl = sizeof(rec);
			getsockname(a, (struct sockaddr *)here, &hl);
			size_t kl = nrr_addr_key(sa, sl, key);
			kl += nrr_addr_key(here, hl, key + kl);
			close(a);
			if (nrr_xmap_get("conn", key, kl, rec, &rl, 0) < 0) {
				snprintf(why, len, "blocked when the recording ended, but here a connection no replayed process recorded is waiting to be accepted");
				return 1;
			}
			sl = sizeof(sa);
			hl = sizeof(here);
		}
		return 0;
	}
	/* only bytes count: a peer that ended (end of stream) may have ended
	 * a moment earlier here than in the recording */
	uint8_t b;
	if (recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 1) {
		snprintf(why, len, "blocked when the recording ended, but here data arrived (first byte %02x) that the recording never received", b);
		return 1;
	}
	return 0;
}

int rsock_call(struct rsock *s, struct rstream *st, size_t k, nrr_rres *res)
{
	const nrr_call *c = &st->u[k].c;
	const char *n = c->fn->name;
	res->result = c->result;
	if (st->u[k].kind == U_INFO)
		return 0;
	if (!strcmp(n, "socket"))
		return r_socket(s, c, res);
	if (!strcmp(n, "socketpair"))
		return r_socketpair(s, c, res);
	if (!strcmp(n, "bind"))
		return r_bind(s, c, res);
	if (!strcmp(n, "listen"))
		return r_listen(s, st, k, res);
	if (!strcmp(n, "connect"))
		return r_connect(s, st, k, res);
	if (!strcmp(n, "accept") || !strcmp(n, "accept4"))
		return r_accept(s, st, k, res);
	if (!strcmp(n, "send") || !strcmp(n, "sendto"))
		return r_send(s, st, k, res);
	if (!strcmp(n, "write"))
		return r_send(s, st, k, res);
	if (!strcmp(n, "recv") || !strcmp(n, "recvfrom"))
		return r_recv(s, st, k, res);
	if (!strcmp(n, "read"))
		return r_recv(s, st, k, res);
	if (!strcmp(n, "sendmsg"))
		return r_sendmsg(s, c, res);
	if (!strcmp(n, "recvmsg"))
		return r_recvmsg(s, c, res);
	if (!strcmp(n, "poll") || !strcmp(n, "ppoll"))
		return r_poll(s, st, k, res);
	if (!strcmp(n, "writev"))
		return r_send(s, st, k, res);
	if (!strcmp(n, "readv"))
		return r_recv(s, st, k, res);
	if (!strcmp(n, "sendmmsg"))
		return r_sendmmsg(s, st, k, res);
	if (!strcmp(n, "recvmmsg"))
		return r_recvmmsg(s, st, k, res);
	/* Readiness over sets of descriptors, libevent's and launchers':
	 * answered from the trace; the receive, accept or send that follows
	 * waits for its peer itself. (Waiting here too, as poll does, stalled
	 * Open MPI's replay for seconds: a peer's send may be ordered after
	 * this call returns.) */
	if (!strcmp(n, "select") || !strcmp(n, "pselect") || !strcmp(n, "epoll_ctl") || !strcmp(n, "epoll_wait") ||
	    !strcmp(n, "epoll_pwait"))
		return nrr_rres_injected(res, c);
	if (!strcmp(n, "pipe") || !strcmp(n, "pipe2") || !strcmp(n, "eventfd") || !strcmp(n, "epoll_create") ||
	    !strcmp(n, "epoll_create1"))
		return r_made_served(s, c, res);
	if (!strcmp(n, "dup") || !strcmp(n, "dup2") || !strcmp(n, "dup3"))
		return r_dup(s, c, res);
	if (!strcmp(n, "fd_undescribed"))
		return r_undescribed(s, st, k, res);
	if (!strcmp(n, "close"))
		return r_close(s, c, res);
	/* what the machine's network looks like is the recording's answer
	 * (interfaces, name resolution): the replay box has other ones */
	if (!strcmp(n, "getifaddrs") || !strcmp(n, "freeifaddrs") || !strcmp(n, "getaddrinfo"))
		return nrr_rres_injected(res, c);
	return r_simple(s, c, res);
}
