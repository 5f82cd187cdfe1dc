/* SPDX-License-Identifier: MIT */
/*
 * net_common.h - what ncclrr's ncclNet v8 transports (socket/, ib/) share:
 * the v8 properties struct, the listening TCP socket a handle names (the
 * socket transport's data path, the verbs transport's QP exchange), and the
 * v8 entries neither implements. Header-only: each plugin is one module.
 */
#ifndef NCCLRR_NET_COMMON_H
#define NCCLRR_NET_COMMON_H

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nccl_net_types.h"

#define NET_EXPORT __attribute__((visibility("default")))

/* ncclNetProperties_v8_t */
struct net_props_v8 {
	char *name, *pciPath;
	uint64_t guid;
	int ptrSupport, regIsGlobal, speed, port;
	float latency;
	int maxComms, maxRecvs, netDeviceType, netDeviceVersion;
};

/* NCCL_PTR_HOST, NCCL_PTR_CUDA, NCCL_PTR_DMABUF */
enum { NET_PTR_HOST = 1, NET_PTR_CUDA = 2, NET_PTR_DMABUF = 4 };

/* non-blocking, no Nagle; -1 with errno on failure */
static inline int net_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* the IPv4 address in $VAR (default 127.0.0.1) into *a; the text in *text;
 * -1 when it is not an IPv4 address */
static inline int net_addr_from_env(const char *var, struct sockaddr_in *a, const char **text)
{
	const char *v = getenv(var);
	*text = v && *v ? v : "127.0.0.1";
	a->sin_family = AF_INET;
	return inet_pton(AF_INET, *text, &a->sin_addr) == 1 ? 0 : -1;
}

/* a non-blocking listening TCP socket on *a (port 0: any), its address in
 * *bound; -1 with errno on failure */
static inline int net_listen_socket(const struct sockaddr_in *a, struct sockaddr_in *bound)
{
	socklen_t len = sizeof(*bound);
	*bound = *a;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (const struct sockaddr *)a, sizeof(*a)) || listen(fd, 1024) ||
	    getsockname(fd, (struct sockaddr *)bound, &len) || net_nonblock(fd)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* v7+ entries for device-side (netDeviceType) plugins, which these are not */
static inline nrr_nccl_result net_getDeviceMr(void *comm, void *mhandle, void **dptr)
{
	return NRR_NCCL_INVALID_USAGE;
}

static inline nrr_nccl_result net_irecvConsumed(void *recvComm, int n, void *request)
{
	return NRR_NCCL_SUCCESS;
}

#endif
