/* SPDX-License-Identifier: MIT */
/*
 * fake_socket.c - the fake cluster's fault switch for socket calls
 * (libncclrr-fake-socket.so).
 *
 * `ncclrr run` preloads this library into a rank whose environment has
 * NCCLRR_FAULT (after any LD_PRELOAD already there, so a tracer preloaded
 * by `ncclrr record` stays in front and records what the program asked and
 * what it got). It defines connect() only; every other rule of
 * NCCLRR_FAULT belongs to the fake CUDA driver, runtime or NVML.
 *
 * A rule for `connect` (grammar and counting in fake_common.c) applies to
 * connect() on an AF_INET / AF_INET6 socket; UNIX-domain connects pass
 * through, uncounted. The error is an errno name (strerrorname_np) or a
 * number:
 *  - ECONNREFUSED is made by the kernel, not answered: the socket is
 *    connected to a loopback port that is bound but has no listener (as
 *    if the peer's port were closed or a firewall rejected it with a TCP
 *    reset), so what follows is the kernel's and the program's own: a
 *    non-blocking connect says EINPROGRESS and SO_ERROR then ECONNREFUSED,
 *    a blocking one ECONNREFUSED, and a connect() retried on the same
 *    socket ECONNABORTED (Linux);
 *  - any other errno is answered: -1 with that errno, nothing is called.
 * The helper socket is made with raw system calls, so that a tracer in
 * front of this library never sees it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fake_common.h"

const char fake_lib_what[] = "socket calls (errno names such as ECONNREFUSED)";

int fake_lib_owns(const char *api)
{
	return strcmp(api, "connect") == 0;
}

int fake_lib_error_code(const char *name)
{
	return fake_errno_by_name(name);
}

typedef int connect_fn(int, const struct sockaddr *, socklen_t);

static connect_fn *real_connect(void)
{
	static connect_fn *fn;
	connect_fn *f = __atomic_load_n(&fn, __ATOMIC_ACQUIRE);
	if (!f) {
		f = (connect_fn *)dlsym(RTLD_NEXT, "connect");
		if (!f) {
			fake_log("libncclrr-fake-socket: cannot find the next connect() (dlsym: %s); "
				 "remove it from LD_PRELOAD", dlerror());
			abort();
		}
		__atomic_store_n(&fn, f, __ATOMIC_RELEASE);
	}
	return f;
}

/* Connect @fd to a loopback port of @family that is bound and has no
 * listener, so that the kernel refuses it. @return connect's result. */
static int refused_connect(int fd, int family)
{
	union {
		struct sockaddr sa;
		struct sockaddr_in in;
		struct sockaddr_in6 in6;
	} a;
	memset(&a, 0, sizeof(a));
	socklen_t len;
	if (family == AF_INET6) {
		a.in6.sin6_family = AF_INET6;
		a.in6.sin6_addr = in6addr_loopback;
		len = sizeof(a.in6);
	} else {
		a.in.sin_family = AF_INET;
		a.in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(a.in);
	}
	long tmp = syscall(SYS_socket, family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	socklen_t alen = len;
	if (tmp < 0 || syscall(SYS_bind, (int)tmp, &a.sa, len) < 0 ||
	    syscall(SYS_getsockname, (int)tmp, &a.sa, &alen) < 0) {
		int e = errno;
		fake_log("libncclrr-fake-socket: cannot make a closed loopback port to refuse connect(fd %d) "
			 "(socket/bind: %s); answering ECONNREFUSED instead", fd, strerror(e));
		if (tmp >= 0)
			syscall(SYS_close, (int)tmp);
		errno = ECONNREFUSED;
		return -1;
	}
	int rc = real_connect()(fd, &a.sa, len);
	int saved = errno;
	if (rc < 0 && saved == EINPROGRESS) {
		/* keep the port bound until the kernel's reset has come back */
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		struct timespec ts = { .tv_sec = 1 };
		syscall(SYS_ppoll, &p, 1, &ts, NULL, (size_t)8);
	}
	syscall(SYS_close, (int)tmp);
	errno = saved;
	return rc;
}

FAKE_EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	if (!addr || len < sizeof(sa_family_t) || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
		return real_connect()(fd, addr, len);
	int saved = errno;
	static struct fake_api api = { .name = "connect" };
	int inj = fake_enter(&api);
	errno = saved;
	if (!inj)
		return real_connect()(fd, addr, len);
	if (inj == ECONNREFUSED)
		return refused_connect(fd, addr->sa_family);
	errno = inj;
	return -1;
}
