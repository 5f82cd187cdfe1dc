/* SPDX-License-Identifier: MIT */
/*
 * net_socket.c - libnccl-net-ncclrr-socket.so: ncclrr's own socket
 * transport with ncclNet semantics (ncclNetPlugin_v8, which NCCL 2.20 to
 * 2.28 load), for the replayer and as a net plugin of its own
 * (NCCL_NET_PLUGIN=ncclrr-socket).
 *
 * One device, on NCCLRR_NET_SOCKET_ADDR (an IPv4 address; default
 * 127.0.0.1). Nothing blocks: connect and accept return a NULL comm until
 * the connection (and its 8-byte hello) is through; isend/irecv queue
 * requests that test() moves forward with non-blocking send/recv. A
 * message is a header (tag, size) and the payload; receives match in
 * order, and a message longer than the posted receive is an error. Host
 * memory only (NCCL_PTR_HOST); regMr registers nothing.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net_common.h"

#define HANDLE_MAGIC 0x6e72736fu   /* "nrso" */
#define MAX_REQS 32

static nrr_nccl_logger logf_;
#define LOG(level, ...)                                                                          \
	do {                                                                                     \
		if (logf_)                                                                       \
			logf_(level, NRR_NCCL_NET, __FILE__, __LINE__, __VA_ARGS__);             \
	} while (0)
#define WARN(...) LOG(NRR_NCCL_LOG_WARN, __VA_ARGS__)

/* what connect() finds in the 128-byte handle listen() filled */
struct handle {
	uint32_t magic;
	struct sockaddr_in addr;
	void *pending;   /* the connecting comm between connect() calls */
};
_Static_assert(sizeof(struct handle) <= NRR_NET_HANDLE_MAXSIZE, "handle too big");

struct req {
	struct comm *c;
	int used, send, done;
	char *data;
	uint32_t size, off;         /* payload bytes, moved so far */
	uint32_t hdr[2], hoff;      /* tag, size; header bytes moved */
	int tag;
};

struct comm {
	int fd;
	int connected;              /* connect: TCP up; 2: hello sent */
	uint64_t hello;
	uint32_t hello_off;
	struct req reqs[MAX_REQS];  /* in posting order: a ring */
	int head, count;
};

struct listen_comm {
	int fd;
	struct comm *accepting;     /* accepted, hello not read yet */
};

static struct sockaddr_in dev_addr;

static nrr_nccl_result sys_error(const char *what)
{
	WARN("NET/ncclrr-socket: %s: %s", what, strerror(errno));
	return NRR_NCCL_SYSTEM_ERROR;
}

static nrr_nccl_result s_init(nrr_nccl_logger log)
{
	logf_ = log;
	const char *a;
	if (net_addr_from_env("NCCLRR_NET_SOCKET_ADDR", &dev_addr, &a)) {
		WARN("NET/ncclrr-socket: NCCLRR_NET_SOCKET_ADDR=%s is not an IPv4 address", a);
		return NRR_NCCL_INVALID_ARGUMENT;
	}
	LOG(NRR_NCCL_LOG_INFO, "NET/ncclrr-socket: one device on %s", a);
	return NRR_NCCL_SUCCESS;
}

static nrr_nccl_result s_devices(int *ndev)
{
	*ndev = 1;
	return NRR_NCCL_SUCCESS;
}

static nrr_nccl_result s_getProperties(int dev, void *p)
{
	if (dev != 0)
		return NRR_NCCL_INVALID_ARGUMENT;
	static char name[] = "ncclrr-socket";
	*(struct net_props_v8 *)p = (struct net_props_v8){ .name = name, .guid = 0x6e7272, .ptrSupport = NET_PTR_HOST,
						   .speed = 10000, .maxComms = 65536, .maxRecvs = 1 };
	return NRR_NCCL_SUCCESS;
}

static nrr_nccl_result s_listen(int dev, void *opaque, void **listenComm)
{
	struct handle *h = opaque;
	struct sockaddr_in a;
	if (dev != 0)
		return NRR_NCCL_INVALID_ARGUMENT;
	int fd = net_listen_socket(&dev_addr, &a);
	if (fd < 0)
		return sys_error("listen");
	struct listen_comm *l = calloc(1, sizeof(*l));
	if (!l) {
		close(fd);
		return NRR_NCCL_SYSTEM_ERROR;
	}
	l->fd = fd;
	memset(opaque, 0, NRR_NET_HANDLE_MAXSIZE);
	h->magic = HANDLE_MAGIC;
	h->addr = a;
	*listenComm = l;
	return NRR_NCCL_SUCCESS;
}

static struct comm *comm_new(int fd)
{
	struct comm *c = calloc(1, sizeof(*c));
	if (c)
		c->fd = fd;
	return c;
}

/* move the hello along; 1 when all of it went (or came), 0 not yet, -1 error */
static int hello(struct comm *c, int send_it)
{
	while (c->hello_off < sizeof(c->hello)) {
		ssize_t n = send_it ? send(c->fd, (char *)&c->hello + c->hello_off, sizeof(c->hello) - c->hello_off,
					   MSG_DONTWAIT | MSG_NOSIGNAL)
				    : recv(c->fd, (char *)&c->hello + c->hello_off, sizeof(c->hello) - c->hello_off,
					   MSG_DONTWAIT);
		if (n > 0)
			c->hello_off += (uint32_t)n;
		else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return 0;
		else
			return -1;
	}
	return 1;
}

static nrr_nccl_result s_connect(int dev, void *opaque, void **sendComm, void **sendDevComm)
{
	struct handle *h = opaque;
	*sendComm = NULL;
	if (h->magic != HANDLE_MAGIC) {
		WARN("NET/ncclrr-socket: connect: not a handle of ours (magic %#x)", h->magic);
		return NRR_NCCL_INVALID_ARGUMENT;
	}
	struct comm *c = h->pending;
	if (!c) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || net_nonblock(fd))
			return sys_error("connect: socket");
		if (!(c = comm_new(fd))) {
			close(fd);
			return NRR_NCCL_SYSTEM_ERROR;
		}
		c->hello = (uint64_t)HANDLE_MAGIC << 32 | (uint32_t)getpid();
		h->pending = c;
		if (connect(fd, (struct sockaddr *)&h->addr, sizeof(h->addr)) == 0)
			c->connected = 1;
		else if (errno != EINPROGRESS)
			return sys_error("connect");
		return NRR_NCCL_SUCCESS;
	}
	if (!c->connected) {
		int err = 0;
		socklen_t len = sizeof(err);
		struct sockaddr_in peer;
		socklen_t plen = sizeof(peer);
		if (getpeername(c->fd, (struct sockaddr *)&peer, &plen) != 0) {
			if (errno != ENOTCONN)
				return sys_error("connect: getpeername");
			getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
			if (err && err != EINPROGRESS && err != EALREADY) {
				errno = err;
				return sys_error("connect");
			}
			return NRR_NCCL_SUCCESS;   /* not yet */
		}
		c->connected = 1;
	}
	int r = hello(c, 1);
	if (r < 0)
		return sys_error("connect: hello");
	if (r == 1) {
		h->pending = NULL;
		*sendComm = c;
	}
	return NRR_NCCL_SUCCESS;
}

static nrr_nccl_result s_accept(void *listenComm, void **recvComm, void **recvDevComm)
{
	struct listen_comm *l = listenComm;
	*recvComm = NULL;
	if (!l->accepting) {
		int fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? NRR_NCCL_SUCCESS
											   : sys_error("accept");
		if (net_nonblock(fd) || !(l->accepting = comm_new(fd))) {
			close(fd);
			return NRR_NCCL_SYSTEM_ERROR;
		}
	}
	int r = hello(l->accepting, 0);
	if (r < 0)
		return sys_error("accept: hello");
	if (r == 1) {
		if (l->accepting->hello >> 32 != HANDLE_MAGIC) {
			WARN("NET/ncclrr-socket: accept: the peer is not ncclrr-socket");
			return NRR_NCCL_REMOTE_ERROR;
		}
		*recvComm = l->accepting;
		l->accepting = NULL;
	}
	return NRR_NCCL_SUCCESS;
}

static nrr_nccl_result s_regMr(void *comm, void *data, size_t size, int type, void **mhandle)
{
	if (type != 1)
		return NRR_NCCL_INVALID_ARGUMENT;   /* host memory only */
	*mhandle = data;
	return NRR_NCCL_SUCCESS;
}

static nrr_nccl_result s_regMrDmaBuf(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
				     void **mhandle)
{
	return NRR_NCCL_INVALID_USAGE;
}

static nrr_nccl_result s_deregMr(void *comm, void *mhandle)
{
	return NRR_NCCL_SUCCESS;
}

static struct req *post(struct comm *c, int send_it, void *data, int size, int tag)
{
	if (c->count == MAX_REQS)
		return NULL;   /* NCCL retries */
	struct req *r = &c->reqs[(c->head + c->count) % MAX_REQS];
	*r = (struct req){ .c = c, .used = 1, .send = send_it, .data = data, .size = (uint32_t)size, .tag = tag };
	r->hdr[0] = (uint32_t)tag;
	r->hdr[1] = (uint32_t)size;
	c->count++;
	return r;
}

/* move the oldest requests of @c as far as the socket allows; <0: error */
static int progress(struct comm *c)
{
	while (c->count) {
		struct req *r = &c->reqs[c->head];
		if (r->done)
			return 0;   /* waits for its test() before the next goes */
		ssize_t n;
		if (r->hoff < sizeof(r->hdr)) {
			n = r->send ? send(c->fd, (char *)r->hdr + r->hoff, sizeof(r->hdr) - r->hoff, MSG_DONTWAIT | MSG_NOSIGNAL)
				    : recv(c->fd, (char *)r->hdr + r->hoff, sizeof(r->hdr) - r->hoff, MSG_DONTWAIT);
		} else {
			if (!r->send && r->hoff == sizeof(r->hdr) && r->off == 0) {
				if ((int)r->hdr[0] != r->tag) {
					WARN("NET/ncclrr-socket: message tag %d, the posted receive wants tag %d",
					     (int)r->hdr[0], r->tag);
					return -EPROTO;
				}
				if (r->hdr[1] > r->size) {
					WARN("NET/ncclrr-socket: message of %u bytes, the posted receive holds %u", r->hdr[1],
					     r->size);
					return -EMSGSIZE;
				}
				r->size = r->hdr[1];
			}
			if (r->off == r->size) {
				r->done = 1;
				return 0;
			}
			n = r->send ? send(c->fd, r->data + r->off, r->size - r->off, MSG_DONTWAIT | MSG_NOSIGNAL)
				    : recv(c->fd, r->data + r->off, r->size - r->off, MSG_DONTWAIT);
		}
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return 0;
		if (n <= 0)
			return n == 0 ? -ECONNRESET : -errno;
		if (r->hoff < sizeof(r->hdr))
			r->hoff += (uint32_t)n;
		else
			r->off += (uint32_t)n;
		if (r->hoff == sizeof(r->hdr) && r->off == r->size && (r->send || r->size == r->hdr[1]))
			r->done = 1;
	}
	return 0;
}

static nrr_nccl_result s_isend(void *sendComm, void *data, int size, int tag, void *mhandle, void **request)
{
	*request = post(sendComm, 1, data, size, tag);
	return NRR_NCCL_SUCCESS;
}

static nrr_nccl_result s_irecv(void *recvComm, int n, void **data, int *sizes, int *tags, void **mhandles,
			       void **request)
{
	if (n != 1) {
		WARN("NET/ncclrr-socket: irecv of %d buffers; this transport receives one at a time (maxRecvs 1)", n);
		return NRR_NCCL_INVALID_ARGUMENT;
	}
	*request = post(recvComm, 0, data[0], sizes[0], tags[0]);
	return NRR_NCCL_SUCCESS;
}

static nrr_nccl_result s_iflush(void *recvComm, int n, void **data, int *sizes, void **mhandles, void **request)
{
	*request = NULL;   /* host memory: nothing to flush */
	return NRR_NCCL_SUCCESS;
}

static nrr_nccl_result s_test(void *request, int *done, int *size)
{
	struct req *r = request;
	struct comm *c = r->c;
	int rc = progress(c);
	if (rc < 0) {
		errno = -rc;
		return sys_error(r->send ? "send" : "recv");
	}
	*done = r->done;
	if (!r->done)
		return NRR_NCCL_SUCCESS;
	if (size)
		*size = (int)r->size;
	if (r == &c->reqs[c->head]) {   /* completed in order: retire it */
		r->used = 0;
		c->head = (c->head + 1) % MAX_REQS;
		c->count--;
	}
	return NRR_NCCL_SUCCESS;
}

static nrr_nccl_result close_comm(void *comm)
{
	struct comm *c = comm;
	if (c) {
		close(c->fd);
		free(c);
	}
	return NRR_NCCL_SUCCESS;
}

static nrr_nccl_result s_closeListen(void *listenComm)
{
	struct listen_comm *l = listenComm;
	if (l) {
		close_comm(l->accepting);
		close(l->fd);
		free(l);
	}
	return NRR_NCCL_SUCCESS;
}

NET_EXPORT const nrr_ncclNet_v8 ncclNetPlugin_v8 = {
	"ncclrr-socket", s_init, s_devices, s_getProperties, s_listen, s_connect, s_accept,
	s_regMr, s_regMrDmaBuf, s_deregMr, s_isend, s_irecv, s_iflush, s_test,
	close_comm, close_comm, s_closeListen, net_getDeviceMr, net_irecvConsumed,
};
