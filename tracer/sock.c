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
 * The table is lock-free: pages of 1024 entries made on first use.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
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

struct sock_ent {
	_Atomic uint8_t is_sock;
	uint8_t role;       /* enum sock_role of socket.api */
	uint8_t type;       /* ncclSocketType once known; 0 unknown */
	uint8_t hs_len;     /* handshake bytes seen (HANDSHAKE: done looking) */
	uint8_t hs[HANDSHAKE];
	int32_t owner;      /* thread that created it */
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

static void mark(int fd)
{
	struct sock_ent *e = ent(fd, true);
	if (!e)
		return;
	e->role = 0;
	e->type = 0;
	e->hs_len = 0;
	e->owner = my_tid();
	atomic_store_explicit(&e->is_sock, 1, memory_order_release);
}

bool nrr_sock_take(int fd)
{
	struct sock_ent *e = ent(fd, false);
	return e && atomic_exchange(&e->is_sock, 0);
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
	if (!e || !e->is_sock || e->hs_len >= HANDSHAKE)
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
	}
}
