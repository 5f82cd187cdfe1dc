/* SPDX-License-Identifier: MIT */
/*
 * sock.c - which file descriptors are sockets, who owns them and what
 * they are for.
 *
 * The socket wrappers (formats/api/socket.api) record read, write, poll,
 * fcntl and close only on descriptors marked here by socket(),
 * socketpair() and accept().  A socket that learns its addresses (listen,
 * connect, accept) gets a `sock_info` event: local and peer address, the
 * thread that made it, and, once NCCL's connection handshake has gone by
 * (8 bytes of magic and 4 of ncclSocketType, sent by the connecting
 * side), what NCCL uses it for: bootstrap, proxy, NET/Socket, NET/IB
 * out-of-band or RAS.  That is how bootstrap, proxy and NET traffic are
 * told apart in a trace.
 *
 * On NCCL's proxy sockets (type proxy) the bytes are also decoded into
 * the RPCs they carry (NCCL 2.19-2.28 framing, from the asking side:
 * type, connection, reqSize, respSize, request, opId; from the proxy:
 * opId, result, respSize, answer): ncclProxyRequest and ncclProxyResponse
 * events, in the rank that asks and in the process whose proxy thread
 * answers.
 *
 * The table is lock-free: pages of 1024 entries made on first use.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/select.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nrr_wrap_gen.h"
#include "tracer_internal.h"

#define PAGE_BITS 10
#define PAGE_SIZE_FDS (1u << PAGE_BITS)
#define NPAGES 1024u  /* descriptors up to 1M are followed */

#define HANDSHAKE 12  /* NCCL: uint64 magic, then int type */

struct rpc;

struct sock_ent {
	_Atomic uint8_t is_sock;   /* traced: enum NRR_FD_* */
	_Atomic uint8_t watch;     /* an epoll instance that watches a traced descriptor */
	uint8_t role;       /* enum sock_role of socket.api */
	uint8_t type;       /* ncclSocketType once known; 0 unknown */
	uint8_t hs_len;     /* handshake bytes seen (HANDSHAKE: done looking) */
	uint8_t hs[HANDSHAKE];
	int32_t owner;      /* thread that created it */
	struct rpc *rpc;    /* proxy sockets: the RPC decoder */
};

#define RPC_KEEP 512          /* request/answer bytes kept per RPC */
#define RPC_MAX_SIZE (64u << 20)
#define RPC_TYPES 16          /* opId -> type, for the answers */
enum { MSG_CLOSE = 6, MSG_ABORT = 7, MSG_STOP = 8 };

/* one direction of a proxy socket */
struct rpc_dir {
	int stage;            /* field being read; -1: not NCCL framing, stop */
	uint32_t got;         /* bytes of the current field */
	uint8_t field[16];
	int32_t type, req_size, resp_size, res;
	uint64_t conn, op;
	uint8_t keep[RPC_KEEP];
	uint32_t kept, body;  /* body: bytes of the request/answer consumed */
};

struct rpc {
	struct rpc_dir ask, answer;   /* requests, answers */
	struct {
		uint64_t op;
		int type;
	} types[RPC_TYPES];
	unsigned ntypes;
};

static _Atomic(struct sock_ent *) pages[NPAGES];
static __thread pid_t t_tid __attribute__((tls_model("initial-exec")));

static pid_t my_tid(void)
{
	if (!t_tid)
		t_tid = (pid_t)syscall(SYS_gettid);
	return t_tid;
}

void nrr_trace_child_forked(void)
{
	t_tid = 0;
}

static struct sock_ent *ent(int fd, bool create)
{
	if (fd < 0 || (unsigned)fd >= NPAGES * PAGE_SIZE_FDS)
		return NULL;
	_Atomic(struct sock_ent *) *slot = &pages[(unsigned)fd >> PAGE_BITS];
	struct sock_ent *p = atomic_load_explicit(slot, memory_order_acquire);
	if (!p) {
		if (!create)
			return NULL;
		struct sock_ent *n = calloc(PAGE_SIZE_FDS, sizeof(*n));
		if (!n)
			return NULL;
		if (atomic_compare_exchange_strong(slot, &p, n))
			p = n;
		else
			free(n);
	}
	return &p[(unsigned)fd & (PAGE_SIZE_FDS - 1)];
}

bool nrr_sock_is(int fd)
{
	struct sock_ent *e = ent(fd, false);
	return e && atomic_load_explicit(&e->is_sock, memory_order_relaxed);
}

bool nrr_sock_any(const struct pollfd *fds, unsigned long nfds)
{
	for (unsigned long i = 0; fds && i < nfds; i++)
		if (nrr_sock_is(fds[i].fd))
			return true;
	return false;
}

static void mark_kind(int fd, int kind)
{
	struct sock_ent *e = ent(fd, true);
	if (!e)
		return;
	atomic_store_explicit(&e->watch, 0, memory_order_relaxed);
	e->role = 0;
	e->type = 0;
	e->hs_len = 0;
	free(e->rpc);   /* a descriptor closed behind our back (not through close) */
	e->rpc = NULL;
	e->owner = my_tid();
	atomic_store_explicit(&e->is_sock, (uint8_t)kind, memory_order_release);
}

static void mark(int fd)
{
	mark_kind(fd, NRR_FD_SOCKET);
}

bool nrr_sock_take(int fd)
{
	struct sock_ent *e = ent(fd, false);
	if (!e || !atomic_exchange(&e->is_sock, 0))
		return false;
	free(e->rpc);
	e->rpc = NULL;
	return true;
}

/* ---------------------------------------------------------- proxy RPCs */

static int rpc_type_of(struct rpc *r, uint64_t op)
{
	for (unsigned i = 0; i < RPC_TYPES; i++)
		if (r->types[i].op == op && r->types[i].type)
			return r->types[i].type;
	return 0;
}

/* Feed @n bytes to one direction's parser; emit each complete message. */
static void rpc_feed(int fd, struct rpc *r, bool asking, const uint8_t *p, size_t n)
{
	struct rpc_dir *d = asking ? &r->ask : &r->answer;
	/* asking: type(4) conn(8) reqSize(4) respSize(4) body opId(8);
	 * answering: opId(8) res(4) respSize(4) body */
	static const uint8_t ask_len[] = { 4, 8, 4, 4, 0, 8 }, ans_len[] = { 8, 4, 4, 0 };
	const uint8_t *len = asking ? ask_len : ans_len;
	int body_stage = asking ? 4 : 3, last = asking ? 5 : 3;
	for (;;) {
		if (d->stage < 0)
			return;
		bool at_body = d->stage == body_stage;
		uint32_t body_len = (uint32_t)(asking ? d->req_size : d->resp_size);
		if (!n && !(at_body && d->body == body_len))
			return;   /* an empty request or answer completes without more bytes */
		if (at_body) {
			uint32_t want = body_len - d->body;
			uint32_t k = n < want ? (uint32_t)n : want;
			uint32_t room = RPC_KEEP - d->kept;
			memcpy(d->keep + d->kept, p, k < room ? k : room);
			d->kept += k < room ? k : room;
			d->body += k;
			p += k;
			n -= k;
			if (d->body < body_len)
				return;
		} else {
			uint32_t k = (uint32_t)len[d->stage] - d->got;
			k = n < k ? (uint32_t)n : k;
			memcpy(d->field + d->got, p, k);
			d->got += k;
			p += k;
			n -= k;
			if (d->got < len[d->stage])
				return;
			d->got = 0;
			int32_t i32;
			uint64_t u64;
			memcpy(&i32, d->field, 4);
			memcpy(&u64, d->field, 8);
			if (asking) {
				switch (d->stage) {
				case 0:
					d->type = i32;
					if (i32 == MSG_STOP || i32 == MSG_CLOSE || i32 == MSG_ABORT) {   /* a bare command */
						nrr_trace_ncclProxyRequest_enter(fd, i32, 0, 0, NULL, 0, 0);
						nrr_trace_ncclProxyRequest_leave(0, fd, i32, 0, 0, NULL, 0, 0);
						continue;
					}
					if (i32 < 1 || i32 > 12)
						d->stage = -1;   /* not the framing we know */
					break;
				case 1: d->conn = u64; break;
				case 2: d->req_size = i32; break;
				case 3: d->resp_size = i32; break;
				case 5: d->op = u64; break;
				}
			} else {
				switch (d->stage) {
				case 0: d->op = u64; break;
				case 1: d->res = i32; break;
				case 2: d->resp_size = i32; break;
				}
			}
			if (d->stage < 0)
				return;
			if ((d->req_size < 0 || (uint32_t)d->req_size > RPC_MAX_SIZE) ||
			    (d->resp_size < 0 || (uint32_t)d->resp_size > RPC_MAX_SIZE)) {
				d->stage = -1;
				return;
			}
		}
		if (d->stage != last) {
			d->stage++;
			continue;
		}
		/* a whole message */
		if (asking) {
			nrr_trace_ncclProxyRequest_enter(fd, d->type, d->conn, d->op, d->keep, d->req_size, d->resp_size);
			nrr_trace_ncclProxyRequest_leave(0, fd, d->type, d->conn, d->op, d->keep, d->req_size, d->resp_size);
			r->types[r->ntypes++ % RPC_TYPES].op = d->op;
			r->types[(r->ntypes - 1) % RPC_TYPES].type = d->type;
		} else {
			int type = rpc_type_of(r, d->op);
			nrr_trace_ncclProxyResponse_enter(fd, type, d->op, d->keep, d->resp_size);
			nrr_trace_ncclProxyResponse_leave(d->res, 0, fd, type, d->op, d->keep, d->resp_size);
		}
		struct rpc_dir fresh = { 0 };
		*d = fresh;
	}
}

/* The NCCL versions whose proxy RPC framing rpc_feed() knows: 2.19 to
 * 2.28.  2.17 and 2.18 answer without the retcode (opId, respSize, body)
 * and 2.17 sends Init in a framing of its own; 2.12-2.16 ask synchronously
 * and answer with the bare response bytes.  Their proxy sockets' bytes
 * are recorded in their send/recv calls only. */
#define PROXY_DECODED_MIN 21900
#define PROXY_DECODED_MAX 22899

bool nrr_proxy_decodes(int v, char *why, size_t len)
{
	bool ok = v >= PROXY_DECODED_MIN && v <= PROXY_DECODED_MAX;
	if (why)
		snprintf(why, len, "%s: NCCL %d.%d.%d; decoded: NCCL %d.%d-%d.%d", ok ? "decoded" : "not decoded",
			 v / 10000, v / 100 % 100, v % 100, PROXY_DECODED_MIN / 10000, PROXY_DECODED_MIN / 100 % 100,
			 PROXY_DECODED_MAX / 10000, PROXY_DECODED_MAX / 100 % 100);
	return ok;
}

static bool nccl_proxy_version(void)
{
	int v = nrr_nccl_version();
	return v == 0 || nrr_proxy_decodes(v, NULL, 0);
}

void nrr_sock_mark(int fd, int kind)
{
	if (fd >= 0)
		mark_kind(fd, kind);
}

bool nrr_sock_fdset(int nfds, const fd_set *r, const fd_set *w, const fd_set *x)
{
	for (int fd = 0; fd < nfds && fd < FD_SETSIZE; fd++)
		if (((r && FD_ISSET(fd, r)) || (w && FD_ISSET(fd, w)) || (x && FD_ISSET(fd, x))) && nrr_sock_is(fd))
			return true;
	return false;
}

void nrr_sock_watch(int epfd, int ret)
{
	struct sock_ent *e = ent(epfd, false);
	if (ret == 0 && e && atomic_load_explicit(&e->is_sock, memory_order_relaxed) == NRR_FD_EPOLL)
		atomic_store_explicit(&e->watch, 1, memory_order_relaxed);
}

bool nrr_sock_watched(int epfd)
{
	struct sock_ent *e = ent(epfd, false);
	return e && atomic_load_explicit(&e->watch, memory_order_relaxed);
}

bool nrr_sock_dup_any(int oldfd, int newfd)
{
	if (oldfd != newfd)
		nrr_trace_protect_fd(newfd);
	return nrr_sock_is(oldfd) || nrr_sock_is(newfd);
}

/* @ret is a copy of @oldfd (dup, dup2, dup3, fcntl F_DUPFD): traced as
 * @oldfd is, with its role and type; one copied over a traced descriptor
 * that is not traced itself makes that one untraced. */
void nrr_sock_dup(int oldfd, int ret)
{
	if (ret < 0 || ret == oldfd)
		return;
	struct sock_ent *o = ent(oldfd, false);
	int kind = o ? atomic_load_explicit(&o->is_sock, memory_order_relaxed) : 0;
	if (!kind) {
		nrr_sock_take(ret);
		return;
	}
	mark_kind(ret, kind);
	struct sock_ent *e = ent(ret, false);
	if (e) {
		e->role = o->role;
		e->type = o->type;
		e->hs_len = HANDSHAKE;   /* the original looks for NCCL's handshake */
		e->owner = o->owner;
		atomic_store_explicit(&e->watch, atomic_load_explicit(&o->watch, memory_order_relaxed), memory_order_relaxed);
	}
}

void nrr_sock_fcntl(int fd, int cmd, int ret)
{
	if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)
		nrr_sock_dup(fd, ret);
}

/* ------------------------------------------- calls that are not described */

/* Of two descriptors a call moves bytes between, the traced socket (its
 * peer waits for them), else the traced one; -1 if neither is traced. */
static int pick(int a, int b)
{
	struct sock_ent *ea = ent(a, false), *eb = ent(b, false);
	int ka = ea ? atomic_load_explicit(&ea->is_sock, memory_order_relaxed) : 0;
	int kb = eb ? atomic_load_explicit(&eb->is_sock, memory_order_relaxed) : 0;
	if (ka == NRR_FD_SOCKET || (ka && kb != NRR_FD_SOCKET))
		return a;
	return kb ? b : -1;
}

static void undescribed(const char *call, int fd)
{
	nrr_trace_fd_undescribed_enter(call, fd);
	nrr_trace_fd_undescribed_leave(0, call, fd);
}

/* (not <sys/sendfile.h>: with 64-bit offsets it renames sendfile) */
NRR_HOOK ssize_t nrr_hook_sendfile(int out_fd, int in_fd, off_t *offset, size_t count) __asm__("sendfile");
NRR_HOOK ssize_t nrr_hook_sendfile64(int out_fd, int in_fd, off_t *offset, size_t count) __asm__("sendfile64");
/* The real function @name as @real (returning @ret, taking the rest), or
 * return -1 ENOSYS */
#define REAL_OR_ENOSYS(ret, name, ...)                                  \
	static ret (*real)(__VA_ARGS__);                                \
	if (!real)                                                      \
		real = (ret (*)(__VA_ARGS__))nrr_real_next(name);       \
	if (!real) {                                                    \
		errno = ENOSYS;                                         \
		return -1;                                              \
	}

ssize_t nrr_hook_sendfile(int out_fd, int in_fd, off_t *offset, size_t count)
{
	REAL_OR_ENOSYS(ssize_t, "sendfile", int, int, off_t *, size_t)
	int fd = pick(out_fd, in_fd);
	if (fd >= 0)
		undescribed("sendfile", fd);
	return real(out_fd, in_fd, offset, count);
}

ssize_t nrr_hook_sendfile64(int out_fd, int in_fd, off_t *offset, size_t count)
{
	return nrr_hook_sendfile(out_fd, in_fd, offset, count);
}

NRR_HOOK ssize_t splice(int fd_in, off_t *off_in, int fd_out, off_t *off_out, size_t len, unsigned int flags)
{
	REAL_OR_ENOSYS(ssize_t, "splice", int, off_t *, int, off_t *, size_t, unsigned int)
	int fd = pick(fd_out, fd_in);
	if (fd >= 0)
		undescribed("splice", fd);
	return real(fd_in, off_in, fd_out, off_out, len, flags);
}

/* close_range and closefrom (a daemon or a launcher's fork stub closing
 * everything it inherited; glibc's closefrom makes the system call itself)
 * close the ranges around the trace file's descriptor, and the sockets in
 * them are no longer traced. */
static long real_syscall3(long nr, long a, long b, long c)
{
	/* (the next syscall(), not ours: ours would come back here) */
	static long (*real)(long, ...);
	if (!real)
		real = (long (*)(long, ...))nrr_real_next("syscall");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	return real(nr, a, b, c);
}

static int real_close_range(unsigned first, unsigned last, int flags)
{
	return (int)real_syscall3(SYS_close_range, first, last, flags);
}

static int real_close_fd(int fd)
{
	return (int)real_syscall3(SYS_close, fd, 0, 0);
}

/* Under the LTTng backend lttng-ust holds descriptors of its own (its
 * session daemon's sockets, its buffers' shared memory); a program that
 * closes them makes lttng-ust abort at exit. liblttng-ust-fd.so, which
 * `ncclrr record --backend lttng` preloads, keeps close() off them, but
 * (2.13) not close_range or closefrom: a range is closed here one open
 * descriptor at a time through lttng-ust's own check. @return 0, or 1
 * when lttng-ust is not in this process (nothing was done). */
static int close_range_lttng(unsigned first, unsigned last)
{
	static int (*safe_close)(int, int (*)(int));
	static atomic_int looked;
	if (!atomic_load(&looked)) {
		safe_close = (int (*)(int, int (*)(int)))dlsym(RTLD_DEFAULT, "lttng_ust_safe_close_fd");
		atomic_store(&looked, 1);
	}
	if (!safe_close)
		return 1;
	int dfd = (int)real_syscall3(SYS_openat, AT_FDCWD, (long)"/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return 1;
	int own = nrr_trace_own_fd();
	char buf[4096] __attribute__((aligned(8)));
	long n;
	while ((n = real_syscall3(SYS_getdents64, dfd, (long)buf, sizeof(buf))) > 0)
		for (long off = 0; off < n;) {
			const struct { uint64_t ino; int64_t next; unsigned short reclen; unsigned char type; char name[]; }
				*d = (const void *)(buf + off);
			off += d->reclen;
			char *e;
			long fd = strtol(d->name, &e, 10);
			if (e == d->name || *e || fd == dfd || fd == own || fd < (long)first || fd > (long)last)
				continue;
			safe_close((int)fd, real_close_fd);
		}
	real_close_fd(dfd);
	return 0;
}

static int close_range_around(unsigned first, unsigned last, int flags)
{
	if (first > last) {
		errno = EINVAL;
		return -1;
	}
	int own = nrr_trace_own_fd();
	int rc = 0;
	if (!(flags & CLOSE_RANGE_CLOEXEC) && close_range_lttng(first, last) == 0)
		rc = 0;
	else if (own < 0 || (unsigned)own < first || (unsigned)own > last || (flags & CLOSE_RANGE_CLOEXEC))
		rc = real_close_range(first, last, flags);
	else {
		if ((unsigned)own > first)
			rc = real_close_range(first, (unsigned)own - 1, flags);
		if (rc == 0 && (unsigned)own < last)
			rc = real_close_range((unsigned)own + 1, last, flags);
	}
	if (rc == 0 && !(flags & CLOSE_RANGE_CLOEXEC)) {
		int saved = errno;
		for (unsigned fd = first; fd <= last && fd < NPAGES * PAGE_SIZE_FDS; fd++) {
			if (!atomic_load_explicit(&pages[fd >> PAGE_BITS], memory_order_acquire)) {
				fd |= PAGE_SIZE_FDS - 1;   /* no descriptor followed in this page */
				continue;
			}
			nrr_sock_take((int)fd);
		}
		errno = saved;
	}
	return rc;
}

NRR_HOOK int close_range(unsigned int first, unsigned int last, int flags)
{
	return close_range_around(first, last, flags);
}

NRR_HOOK void closefrom(int lowfd)
{
	if (lowfd < 0)
		lowfd = 0;
	if (close_range_around((unsigned)lowfd, ~0u, 0) == 0)
		return;
	/* no close_range in this kernel: every descriptor, one by one, through
	 * close() (which keeps the trace file's and forgets the sockets) */
	for (int fd = lowfd, top = (int)sysconf(_SC_OPEN_MAX); fd < top; fd++)
		close(fd);
}

/* syscall(SYS_x, fd, ...) of a described call bypasses its wrapper */
NRR_HOOK long syscall(long number, ...)
{
	va_list ap;
	va_start(ap, number);
	long a[6];
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	REAL_OR_ENOSYS(long, "syscall", long, ...)
	static const struct { long nr; const char *name; } fdcalls[] = {
		{ SYS_read, "syscall(SYS_read)" }, { SYS_write, "syscall(SYS_write)" },
		{ SYS_readv, "syscall(SYS_readv)" }, { SYS_writev, "syscall(SYS_writev)" },
		{ SYS_recvfrom, "syscall(SYS_recvfrom)" }, { SYS_sendto, "syscall(SYS_sendto)" },
		{ SYS_recvmsg, "syscall(SYS_recvmsg)" }, { SYS_sendmsg, "syscall(SYS_sendmsg)" },
		{ SYS_recvmmsg, "syscall(SYS_recvmmsg)" }, { SYS_sendmmsg, "syscall(SYS_sendmmsg)" },
		{ SYS_sendfile, "syscall(SYS_sendfile)" }, { SYS_splice, "syscall(SYS_splice)" },
		{ SYS_close, "syscall(SYS_close)" }, { SYS_shutdown, "syscall(SYS_shutdown)" },
	};
	/* the tracer's own descriptor is not the program's */
	if (number == SYS_close && a[0] >= 0 && a[0] <= INT32_MAX && nrr_trace_fd_guard((int)a[0])) {
		errno = EBADF;
		return -1;
	}
	if (number == SYS_close_range)
		return close_range_around((unsigned)a[0], (unsigned)a[1], (int)a[2]);
	for (size_t i = 0; i < sizeof(fdcalls) / sizeof(fdcalls[0]); i++)
		if (fdcalls[i].nr == number) {
			if (a[0] >= 0 && a[0] <= INT32_MAX && nrr_sock_is((int)a[0])) {
				int saved = errno;
				undescribed(fdcalls[i].name, (int)a[0]);
				errno = saved;
			}
			break;
		}
	return real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}

void nrr_sock_new(int fd)
{
	if (fd >= 0)
		mark(fd);
}

void nrr_sock_pair(int ret, const int *sv)
{
	if (ret == 0 && sv) {
		mark(sv[0]);
		mark(sv[1]);
	}
}

/* The sock_info event for @fd as the table knows it now. */
static void info(int fd, const struct sock_ent *e)
{
	struct sockaddr_storage l, p;
	socklen_t ll = sizeof(l), pl = sizeof(p);
	/* the kernel directly: getsockname/getpeername are traced functions */
	if (syscall(SYS_getsockname, fd, &l, &ll))
		ll = 0;
	if (syscall(SYS_getpeername, fd, &p, &pl))
		pl = 0;
	nrr_trace_sock_info_enter(fd, e->role, e->type, e->owner, (struct sockaddr *)&l, ll, (struct sockaddr *)&p, pl);
	nrr_trace_sock_info_leave(0, fd, e->role, e->type, e->owner, (struct sockaddr *)&l, ll, (struct sockaddr *)&p, pl);
}

void nrr_sock_note(int fd, int ret, int role)
{
	if (ret < 0)
		return;
	if (role == NRR_SOCK_ACCEPT)
		mark(fd);
	struct sock_ent *e = ent(fd, false);
	if (!e || !e->is_sock)
		return;
	e->role = (uint8_t)role;
	info(fd, e);
}

void nrr_sock_connect_done(int fd, int ret, int err)
{
	if (ret != 0 && err != EINPROGRESS)
		return;
	nrr_sock_note(fd, 0, NRR_SOCK_CONNECT);
}

/* Data went through @fd: look for NCCL's handshake in the first bytes
 * the connecting side sends (and the accepting side receives). */
void nrr_sock_data(int fd, const void *buf, long n, int sent)
{
	if (n <= 0 || !buf)
		return;
	struct sock_ent *e = ent(fd, false);
	if (!e || !e->is_sock)
		return;
	if (e->rpc) {   /* a proxy socket: requests go from the connecting side */
		rpc_feed(fd, e->rpc, (e->role == NRR_SOCK_CONNECT) == (sent != 0), buf, (size_t)n);
		return;
	}
	if (e->hs_len >= HANDSHAKE)
		return;
	if (!(e->role == NRR_SOCK_CONNECT && sent) && !(e->role == NRR_SOCK_ACCEPT && !sent))
		return;
	size_t k = (size_t)n < (size_t)(HANDSHAKE - e->hs_len) ? (size_t)n : (size_t)(HANDSHAKE - e->hs_len);
	memcpy(e->hs + e->hs_len, buf, k);
	e->hs_len = (uint8_t)(e->hs_len + k);
	if (e->hs_len < HANDSHAKE)
		return;
	int32_t type;
	memcpy(&type, e->hs + 8, sizeof(type));
	if (type >= 1 && type <= 5) {
		e->type = (uint8_t)type;
		info(fd, e);
		/* the magic is the communicator's (random per unique id), not a
		 * constant: the framing check in rpc_feed() is what rejects a
		 * socket that only looks like a proxy's */
		if (type == 2 && nccl_proxy_version())
			e->rpc = calloc(1, sizeof(*e->rpc));
		/* the rest of these bytes, if any, is the first message */
		if (e->rpc && (size_t)n > k)
			rpc_feed(fd, e->rpc, (e->role == NRR_SOCK_CONNECT) == (sent != 0), (const uint8_t *)buf + k,
				 (size_t)n - k);
	}
}
