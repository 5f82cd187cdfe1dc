/* SPDX-License-Identifier: MIT */
/*
 * net_ib.c - libnccl-net-ncclrr-ib.so: ncclrr's own verbs transport with
 * ncclNet semantics (ncclNetPlugin_v8, as transport/socket), for the
 * replayer and as a net plugin of its own (NCCL_NET_PLUGIN=ncclrr-ib).
 *
 * Devices: the ports 1 of ibv_get_device_list's devices that are ACTIVE.
 * listen() opens a TCP socket on NCCLRR_NET_IB_ADDR (an IPv4 address;
 * default 127.0.0.1) and puts its address in the handle; connect() and
 * accept() exchange the QP's address (LID, QPN, GID, MTU) over it, then
 * bring one RC QP per comm to RTS. Nothing blocks: connect and accept return
 * a NULL comm until the exchange is through.
 *
 * The protocol, receiver-driven, in order on each comm:
 *  - irecv posts a zero-SGE receive, then SENDs a clear-to-send (CTS:
 *    address, rkey, size, tag of its buffer) into one of the sender's
 *    MAX_REQS pre-posted CTS slots;
 *  - the sender matches CTSes with its isends in posting order, checks the
 *    tag and that the message fits, and RDMA WRITEs the payload with
 *    immediate (the immediate is the size; a 0-byte message is a SEND with
 *    immediate, no rkey needed);
 *  - the receiver's receive completes with the size.
 * A message longer than the posted receive, or of another tag, is an error.
 * Host and GPU memory (NCCL_NET_PTR_HOST, _CUDA: ibv_reg_mr; _DMABUF:
 * ibv_reg_dmabuf_mr) on the comm's device; iflush asks for nothing (no
 * RDMA READ flush of GPU memory: see replayer/README.md); isend/irecv
 * with a NULL mhandle register the buffer for that request and deregister
 * it when the request is retired.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net_common.h"

#define HANDLE_MAGIC 0x6e726962u   /* "nrib" */
#define MAX_REQS 32
#define MAX_DEVS 16
#define PORT 1

static nrr_nccl_logger logf_;
#define LOG(level, ...)                                                                          \
	do {                                                                                     \
		if (logf_)                                                                       \
			logf_(level, NRR_NCCL_NET, __FILE__, __LINE__, __VA_ARGS__);             \
	} while (0)
#define WARN(...) LOG(NRR_NCCL_LOG_WARN, __VA_ARGS__)

/* one device: its name, and (per process: a forked child opens its own) the
 * context and PD every comm on it shares */
struct dev {
	char name[IBV_SYSFS_NAME_MAX];
	uint64_t guid;
	struct ibv_port_attr port;
	pid_t pid;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
};
static struct dev devs[MAX_DEVS];
static int ndevs;
static pthread_mutex_t dev_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sockaddr_in listen_addr;
static int gid_index;

/* the QP's address, sent over the TCP socket both ways */
struct qp_info {
	uint32_t magic, qpn;
	uint16_t lid;
	uint8_t mtu, link_layer;
	uint8_t gid[16];
};

/* what connect() finds in the 128-byte handle listen() filled */
struct handle {
	uint32_t magic;
	struct sockaddr_in addr;
	void *pending;   /* the connecting comm between connect() calls */
};
_Static_assert(sizeof(struct handle) <= NRR_NET_HANDLE_MAXSIZE, "handle too big");

/* a clear-to-send: where the receiver wants the next message */
struct cts {
	uint64_t addr;
	uint32_t rkey, size;
	int32_t tag, seq;
};

struct req {
	struct comm *c;
	int send, done, matched;
	int reported;            /* test() said done: retire when at the head */
	char *data;
	uint32_t size;
	int tag;
	struct ibv_mr *own_mr;   /* registered for this request (NULL mhandle) */
	struct ibv_mr *mr;
};

/* wr_id: kind in the top bits, slot below */
enum { WR_CTS_RECV = 1, WR_CTS_SEND, WR_DATA, WR_DATA_RECV };
#define WR(kind, i) ((uint64_t)(kind) << 32 | (uint32_t)(i))

struct comm {
	int fd;
	int dev;
	int state;                 /* exchange progress, below */
	struct qp_info mine, peer;
	uint32_t io_off;           /* bytes of the qp_info (or ack) moved */
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *cts_mr;     /* over cts_in and cts_out */
	struct cts cts_in[MAX_REQS], cts_out[MAX_REQS];
	uint64_t cts_arrived, cts_used;   /* sender: CTSes received, consumed */
	struct req reqs[MAX_REQS];        /* in posting order: a ring */
	int head, count;
	int failed;
};

struct listen_comm {
	int fd, dev;
	struct comm *accepting;
};

enum { ST_SEND_INFO = 1, ST_RECV_INFO, ST_ACK, ST_READY };

static nrr_nccl_result sys_error(const char *what)
{
	WARN("NET/ncclrr-ib: %s: %s", what, strerror(errno));
	return NRR_NCCL_SYSTEM_ERROR;
}

static nrr_nccl_result verbs_error(const char *call, int err, const char *dev)
{
	WARN("NET/ncclrr-ib: %s on %s failed: %s", call, dev, strerror(err));
	return NRR_NCCL_SYSTEM_ERROR;
}

static nrr_nccl_result i_init(nrr_nccl_logger log)
{
	logf_ = log;
	const char *a;
	if (net_addr_from_env("NCCLRR_NET_IB_ADDR", &listen_addr, &a)) {
		WARN("NET/ncclrr-ib: NCCLRR_NET_IB_ADDR=%s is not an IPv4 address", a);
		return NRR_NCCL_INVALID_ARGUMENT;
	}
	const char *g = getenv("NCCLRR_NET_IB_GID_INDEX");
	gid_index = g && *g ? atoi(g) : 0;
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	if (!list) {
		WARN("NET/ncclrr-ib: ibv_get_device_list: %s", strerror(errno));
		return NRR_NCCL_SYSTEM_ERROR;
	}
	ndevs = 0;
	for (int i = 0; i < n && ndevs < MAX_DEVS; i++) {
		struct ibv_context *ctx = ibv_open_device(list[i]);
		if (!ctx)
			continue;
		struct dev *d = &devs[ndevs];
		if (ibv_query_port(ctx, PORT, &d->port) == 0 && d->port.state == IBV_PORT_ACTIVE) {
			snprintf(d->name, sizeof(d->name), "%s", ibv_get_device_name(list[i]));
			d->guid = ibv_get_device_guid(list[i]);
			ndevs++;
		}
		ibv_close_device(ctx);
	}
	ibv_free_device_list(list);
	LOG(NRR_NCCL_LOG_INFO, "NET/ncclrr-ib: %d device(s), listening on %s", ndevs, a);
	return NRR_NCCL_SUCCESS;
}

static nrr_nccl_result i_devices(int *ndev)
{
	*ndev = ndevs;
	return NRR_NCCL_SUCCESS;
}

static nrr_nccl_result i_getProperties(int dev, void *p)
{
	if (dev < 0 || dev >= ndevs)
		return NRR_NCCL_INVALID_ARGUMENT;
	/* Gb/s a lane by active_speed (verbs.h encoding), times the width */
	static const struct { int code, mbps; } speeds[] = { { 1, 2500 }, { 2, 5000 }, { 4, 10000 }, { 8, 10000 },
							     { 16, 14000 }, { 32, 25000 }, { 64, 50000 }, { 128, 100000 } };
	int lane = 10000, width = devs[dev].port.active_width == 2 ? 4 : devs[dev].port.active_width == 4 ? 8
							      : devs[dev].port.active_width == 8 ? 12 : 1;
	for (size_t i = 0; i < sizeof(speeds) / sizeof(speeds[0]); i++)
		if (speeds[i].code == devs[dev].port.active_speed)
			lane = speeds[i].mbps;
	*(struct net_props_v8 *)p = (struct net_props_v8){ .name = devs[dev].name, .guid = devs[dev].guid,
						   .ptrSupport = NET_PTR_HOST | NET_PTR_CUDA | NET_PTR_DMABUF, .speed = lane * width, .port = PORT,
						   .maxComms = 65536, .maxRecvs = 1 };
	return NRR_NCCL_SUCCESS;
}

/* the device's context and PD in this process, opened at first use */
static struct dev *dev_open(int dev)
{
	struct dev *d = &devs[dev];
	pthread_mutex_lock(&dev_lock);
	if (!d->ctx || d->pid != getpid()) {
		int n = 0;
		struct ibv_device **list = ibv_get_device_list(&n);
		d->ctx = NULL;
		for (int i = 0; list && i < n; i++)
			if (!strcmp(ibv_get_device_name(list[i]), d->name))
				d->ctx = ibv_open_device(list[i]);
		if (list)
			ibv_free_device_list(list);
		d->pd = d->ctx ? ibv_alloc_pd(d->ctx) : NULL;
		if (!d->pd) {
			WARN("NET/ncclrr-ib: cannot open %s: %s", d->name, strerror(errno ? errno : ENODEV));
			if (d->ctx)
				ibv_close_device(d->ctx);
			d->ctx = NULL;
		}
		d->pid = getpid();
	}
	pthread_mutex_unlock(&dev_lock);
	return d->pd ? d : NULL;
}

static nrr_nccl_result i_listen(int dev, void *opaque, void **listenComm)
{
	struct handle *h = opaque;
	struct sockaddr_in a;
	if (dev < 0 || dev >= ndevs)
		return NRR_NCCL_INVALID_ARGUMENT;
	int fd = net_listen_socket(&listen_addr, &a);
	if (fd < 0)
		return sys_error("listen");
	struct listen_comm *l = calloc(1, sizeof(*l));
	if (!l) {
		close(fd);
		return NRR_NCCL_SYSTEM_ERROR;
	}
	l->fd = fd;
	l->dev = dev;
	memset(opaque, 0, NRR_NET_HANDLE_MAXSIZE);
	h->magic = HANDLE_MAGIC;
	h->addr = a;
	*listenComm = l;
	return NRR_NCCL_SUCCESS;
}

static int post_cts_recv(struct comm *c, int slot)
{
	struct ibv_sge sge = { (uintptr_t)&c->cts_in[slot], sizeof(struct cts), c->cts_mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = WR(WR_CTS_RECV, slot), .sg_list = &sge, .num_sge = 1 }, *bad;
	return ibv_post_recv(c->qp, &wr, &bad);
}

/* CQ, QP (to INIT), the CTS region; fills c->mine */
static nrr_nccl_result qp_create(struct comm *c, int is_send)
{
	struct dev *d = dev_open(c->dev);
	if (!d)
		return NRR_NCCL_SYSTEM_ERROR;
	if (!(c->cq = ibv_create_cq(d->ctx, 4 * MAX_REQS, NULL, NULL, 0)))
		return verbs_error("ibv_create_cq", errno, d->name);
	struct ibv_qp_init_attr ia = { .send_cq = c->cq, .recv_cq = c->cq, .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 2 * MAX_REQS, .max_recv_wr = MAX_REQS,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	if (!(c->qp = ibv_create_qp(d->pd, &ia)))
		return verbs_error("ibv_create_qp", errno, d->name);
	if (!(c->cts_mr = ibv_reg_mr(d->pd, c->cts_in, sizeof(c->cts_in) + sizeof(c->cts_out),
				     IBV_ACCESS_LOCAL_WRITE)))
		return verbs_error("ibv_reg_mr", errno, d->name);
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = PORT,
				  .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE };
	int rc = ibv_modify_qp(c->qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (rc)
		return verbs_error("ibv_modify_qp(INIT)", rc, d->name);
	if (is_send)
		for (int i = 0; i < MAX_REQS; i++)
			if ((rc = post_cts_recv(c, i)))
				return verbs_error("ibv_post_recv", rc, d->name);
	union ibv_gid gid;
	memset(&gid, 0, sizeof(gid));
	if (d->port.link_layer == IBV_LINK_LAYER_ETHERNET && (rc = ibv_query_gid(d->ctx, PORT, gid_index, &gid)))
		return verbs_error("ibv_query_gid", rc ? rc : errno, d->name);
	c->mine = (struct qp_info){ .magic = HANDLE_MAGIC, .qpn = c->qp->qp_num, .lid = d->port.lid,
				    .mtu = (uint8_t)d->port.active_mtu, .link_layer = d->port.link_layer };
	memcpy(c->mine.gid, gid.raw, 16);
	return NRR_NCCL_SUCCESS;
}

/* RTR towards c->peer, then RTS */
static nrr_nccl_result qp_connect(struct comm *c)
{
	struct dev *d = &devs[c->dev];
	if (c->peer.magic != HANDLE_MAGIC) {
		WARN("NET/ncclrr-ib: the peer is not ncclrr-ib (magic %#x)", c->peer.magic);
		return NRR_NCCL_REMOTE_ERROR;
	}
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_RTR,
				  .path_mtu = c->peer.mtu < c->mine.mtu ? c->peer.mtu : c->mine.mtu,
				  .dest_qp_num = c->peer.qpn, .rq_psn = 0, .max_dest_rd_atomic = 1,
				  .min_rnr_timer = 12 };
	qa.ah_attr.dlid = c->peer.lid;
	qa.ah_attr.port_num = PORT;
	if (c->mine.link_layer == IBV_LINK_LAYER_ETHERNET) {
		qa.ah_attr.is_global = 1;
		memcpy(qa.ah_attr.grh.dgid.raw, c->peer.gid, 16);
		qa.ah_attr.grh.sgid_index = (uint8_t)gid_index;
		qa.ah_attr.grh.hop_limit = 255;
	}
	int rc = ibv_modify_qp(c->qp, &qa,
			       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (rc)
		return verbs_error("ibv_modify_qp(RTR)", rc, d->name);
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTS;
	qa.timeout = 20;
	qa.retry_cnt = 7;
	qa.rnr_retry = 7;
	qa.sq_psn = 0;
	qa.max_rd_atomic = 1;
	rc = ibv_modify_qp(c->qp, &qa,
			   IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				   IBV_QP_MAX_QP_RD_ATOMIC);
	return rc ? verbs_error("ibv_modify_qp(RTS)", rc, d->name) : NRR_NCCL_SUCCESS;
}

/* move @len bytes of @buf from c->io_off; 1 when all went (or came), 0 not yet, -1 error */
static int xfer(struct comm *c, void *buf, uint32_t len, int send_it)
{
	while (c->io_off < len) {
		ssize_t n = send_it ? send(c->fd, (char *)buf + c->io_off, len - c->io_off, MSG_DONTWAIT | MSG_NOSIGNAL)
				    : recv(c->fd, (char *)buf + c->io_off, len - c->io_off, MSG_DONTWAIT);
		if (n > 0)
			c->io_off += (uint32_t)n;
		else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return 0;
		else {
			if (n == 0)
				errno = ECONNRESET;
			return -1;
		}
	}
	c->io_off = 0;
	return 1;
}

static void comm_free(struct comm *c)
{
	if (!c)
		return;
	for (int i = 0; i < MAX_REQS; i++)
		if (c->reqs[i].own_mr)
			ibv_dereg_mr(c->reqs[i].own_mr);
	if (c->qp)
		ibv_destroy_qp(c->qp);
	if (c->cts_mr)
		ibv_dereg_mr(c->cts_mr);
	if (c->cq)
		ibv_destroy_cq(c->cq);
	if (c->fd >= 0)
		close(c->fd);
	free(c);
}

static struct comm *comm_new(int fd, int dev)
{
	struct comm *c = calloc(1, sizeof(*c));
	if (c) {
		c->fd = fd;
		c->dev = dev;
	}
	return c;
}

/*
 * The exchange. Connect: send mine, read the peer's, RTR/RTS, send a 4-byte
 * ack. Accept: read the peer's, make the QP, RTR/RTS, send mine, read the
 * ack — so the acceptor's first CTS finds the sender's QP ready.
 * 1: done, 0: not yet, <0: error (an nccl result, negated)
 */
static int exchange(struct comm *c, int is_send)
{
	uint32_t ack = HANDLE_MAGIC;
	nrr_nccl_result r;
	int x;
	for (;;) {
		switch (c->state) {
		case ST_SEND_INFO:
			if ((x = xfer(c, &c->mine, sizeof(c->mine), 1)) <= 0)
				return x < 0 ? -(int)sys_error("send of the QP address") : 0;
			c->state = is_send ? ST_RECV_INFO : ST_ACK;
			break;
		case ST_RECV_INFO:
			if ((x = xfer(c, &c->peer, sizeof(c->peer), 0)) <= 0)
				return x < 0 ? -(int)sys_error("receive of the peer's QP address") : 0;
			if (is_send) {
				if ((r = qp_connect(c)))
					return -(int)r;
				c->state = ST_ACK;
			} else {
				/* the acceptor makes its QP now */
				if ((r = qp_create(c, 0)) || (r = qp_connect(c)))
					return -(int)r;
				c->state = ST_SEND_INFO;
			}
			break;
		case ST_ACK:
			if ((x = xfer(c, &ack, sizeof(ack), is_send)) <= 0)
				return x < 0 ? -(int)sys_error("QP ready ack") : 0;
			c->state = ST_READY;
			LOG(NRR_NCCL_LOG_INFO, "NET/ncclrr-ib: %s QP %u (LID %u) connected to QP %u (LID %u), %s side",
			    devs[c->dev].name, c->mine.qpn, c->mine.lid, c->peer.qpn, c->peer.lid,
			    is_send ? "send" : "receive");
			return 1;
		default:
			return 1;
		}
	}
}

static nrr_nccl_result i_connect(int dev, void *opaque, void **sendComm, void **sendDevComm)
{
	struct handle *h = opaque;
	*sendComm = NULL;
	if (sendDevComm)
		*sendDevComm = NULL;   /* host transport: no device handle */
	if (h->magic != HANDLE_MAGIC) {
		WARN("NET/ncclrr-ib: connect: not a handle of ours (magic %#x)", h->magic);
		return NRR_NCCL_INVALID_ARGUMENT;
	}
	if (dev < 0 || dev >= ndevs)
		return NRR_NCCL_INVALID_ARGUMENT;
	struct comm *c = h->pending;
	if (!c) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || net_nonblock(fd)) {
			if (fd >= 0)
				close(fd);
			return sys_error("connect: socket");
		}
		if (!(c = comm_new(fd, dev))) {
			close(fd);
			return NRR_NCCL_SYSTEM_ERROR;
		}
		if (connect(fd, (struct sockaddr *)&h->addr, sizeof(h->addr)) != 0 && errno != EINPROGRESS) {
			comm_free(c);
			return sys_error("connect");
		}
		nrr_nccl_result r = qp_create(c, 1);
		if (r) {
			comm_free(c);
			return r;
		}
		c->state = ST_SEND_INFO;
		h->pending = c;
		return NRR_NCCL_SUCCESS;
	}
	int x = exchange(c, 1);
	if (x < 0) {
		h->pending = NULL;
		comm_free(c);
		return (nrr_nccl_result)-x;
	}
	if (x == 1) {
		h->pending = NULL;
		*sendComm = c;
	}
	return NRR_NCCL_SUCCESS;
}

static nrr_nccl_result i_accept(void *listenComm, void **recvComm, void **recvDevComm)
{
	struct listen_comm *l = listenComm;
	*recvComm = NULL;
	if (recvDevComm)
		*recvDevComm = NULL;
	if (!l->accepting) {
		int fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? NRR_NCCL_SUCCESS
											   : sys_error("accept");
		if (net_nonblock(fd) || !(l->accepting = comm_new(fd, l->dev))) {
			close(fd);
			return NRR_NCCL_SYSTEM_ERROR;
		}
		l->accepting->state = ST_RECV_INFO;
	}
	int x = exchange(l->accepting, 0);
	if (x < 0) {
		comm_free(l->accepting);
		l->accepting = NULL;
		return (nrr_nccl_result)-x;
	}
	if (x == 1) {
		*recvComm = l->accepting;
		l->accepting = NULL;
	}
	return NRR_NCCL_SUCCESS;
}

static struct ibv_mr *reg(struct comm *c, void *data, size_t size)
{
	struct dev *d = dev_open(c->dev);
	if (!d)
		return NULL;
	struct ibv_mr *mr = ibv_reg_mr(d->pd, data, size, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!mr)
		verbs_error("ibv_reg_mr", errno, d->name);
	return mr;
}

/* an mhandle: the MR and the range it was asked for (a dma-buf MR's addr
 * is its IOVA, which need not be the buffer's address) */
struct mhandle {
	struct ibv_mr *mr;
	char *base;
	size_t size;
};

static nrr_nccl_result mhandle_new(struct ibv_mr *mr, void *data, size_t size, void **mhandle)
{
	struct mhandle *m = mr ? malloc(sizeof(*m)) : NULL;
	if (!m) {
		if (mr)
			ibv_dereg_mr(mr);
		return NRR_NCCL_SYSTEM_ERROR;
	}
	*m = (struct mhandle){ mr, data, size };
	*mhandle = m;
	return NRR_NCCL_SUCCESS;
}

static nrr_nccl_result i_regMr(void *comm, void *data, size_t size, int type, void **mhandle)
{
	*mhandle = NULL;
	if (type != NET_PTR_HOST && type != NET_PTR_CUDA)
		return NRR_NCCL_INVALID_ARGUMENT;
	return size ? mhandle_new(reg(comm, data, size), data, size, mhandle) : NRR_NCCL_SUCCESS;
}

/* GPU memory by its dma-buf fd (no pinning: the HCA, or the fake driver's
 * memfd, maps it) */
static nrr_nccl_result i_regMrDmaBuf(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
				     void **mhandle)
{
	struct comm *c = comm;
	struct dev *d = dev_open(c->dev);
	*mhandle = NULL;
	if (!d)
		return NRR_NCCL_SYSTEM_ERROR;
	struct ibv_mr *mr = ibv_reg_dmabuf_mr(d->pd, offset, size, (uintptr_t)data, fd,
					      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!mr)
		return verbs_error("ibv_reg_dmabuf_mr", errno, d->name);
	return mhandle_new(mr, data, size, mhandle);
}

static nrr_nccl_result i_deregMr(void *comm, void *mhandle)
{
	struct mhandle *m = mhandle;
	if (!m)
		return NRR_NCCL_SUCCESS;
	int rc = ibv_dereg_mr(m->mr);
	free(m);
	if (rc) {
		errno = rc;
		return sys_error("ibv_dereg_mr");
	}
	return NRR_NCCL_SUCCESS;
}

/* the MR of [data, data+size): the caller's when it covers the buffer,
 * else one of the request's own */
static int req_mr(struct req *r, void *mhandle)
{
	struct mhandle *m = mhandle;
	if (!r->size)
		return 0;
	if (m && r->data >= m->base && r->data + r->size <= m->base + m->size) {
		r->mr = m->mr;
		return 0;
	}
	r->mr = r->own_mr = reg(r->c, r->data, r->size);
	return r->mr ? 0 : -1;
}

static struct req *post(struct comm *c, int send_it, void *data, int size, int tag, void *mhandle, int *err)
{
	*err = 0;
	if (c->count == MAX_REQS)
		return NULL;   /* NCCL retries */
	struct req *r = &c->reqs[(c->head + c->count) % MAX_REQS];
	*r = (struct req){ .c = c, .send = send_it, .data = data, .size = (uint32_t)size, .tag = tag };
	if (req_mr(r, mhandle)) {
		*err = 1;
		return NULL;
	}
	c->count++;
	return r;
}

static nrr_nccl_result fail(struct comm *c, const char *what, int err)
{
	c->failed = 1;
	WARN("NET/ncclrr-ib: %s on %s (QP %u to %u): %s", what, devs[c->dev].name, c->mine.qpn, c->peer.qpn,
	     strerror(err));
	return NRR_NCCL_SYSTEM_ERROR;
}

/* sender: write the oldest unmatched isends whose CTS came */
static nrr_nccl_result match_sends(struct comm *c)
{
	for (int k = 0; k < c->count && c->cts_used < c->cts_arrived; k++) {
		int i = (c->head + k) % MAX_REQS;
		struct req *r = &c->reqs[i];
		if (r->matched)
			continue;
		int slot = (int)(c->cts_used % MAX_REQS);
		struct cts cts = c->cts_in[slot];
		c->cts_used++;
		int rc = post_cts_recv(c, slot);
		if (rc)
			return fail(c, "ibv_post_recv", rc);
		if (cts.tag != r->tag) {
			WARN("NET/ncclrr-ib: the posted receive wants tag %d, the send has tag %d", cts.tag, r->tag);
			return NRR_NCCL_INVALID_USAGE;
		}
		if (r->size > cts.size) {
			WARN("NET/ncclrr-ib: message of %u bytes, the posted receive holds %u", r->size, cts.size);
			return NRR_NCCL_INVALID_USAGE;
		}
		struct ibv_sge sge = { (uintptr_t)r->data, r->size, r->mr ? r->mr->lkey : 0 };
		struct ibv_send_wr wr = { .wr_id = WR(WR_DATA, i), .sg_list = &sge, .num_sge = r->size ? 1 : 0,
					  .opcode = r->size ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_SEND_WITH_IMM,
					  .send_flags = IBV_SEND_SIGNALED, .imm_data = htonl(r->size) },
				   *bad;
		wr.wr.rdma.remote_addr = cts.addr;
		wr.wr.rdma.rkey = cts.rkey;
		if ((rc = ibv_post_send(c->qp, &wr, &bad)))
			return fail(c, "ibv_post_send(RDMA_WRITE_WITH_IMM)", rc);
		r->matched = 1;
	}
	return NRR_NCCL_SUCCESS;
}

/* the oldest receive request not done yet */
static struct req *oldest_recv(struct comm *c)
{
	for (int k = 0; k < c->count; k++) {
		struct req *r = &c->reqs[(c->head + k) % MAX_REQS];
		if (!r->done)
			return r;
	}
	return NULL;
}

static nrr_nccl_result progress(struct comm *c)
{
	struct ibv_wc wc[16];
	int n;
	if (c->failed)
		return NRR_NCCL_SYSTEM_ERROR;
	while ((n = ibv_poll_cq(c->cq, 16, wc)) > 0) {
		for (int k = 0; k < n; k++) {
			if (wc[k].status != IBV_WC_SUCCESS) {
				c->failed = 1;
				WARN("NET/ncclrr-ib: completion error on %s (QP %u to %u): %s (%d), vendor error %u",
				     devs[c->dev].name, c->mine.qpn, c->peer.qpn, ibv_wc_status_str(wc[k].status),
				     (int)wc[k].status, wc[k].vendor_err);
				return NRR_NCCL_REMOTE_ERROR;
			}
			uint32_t kind = (uint32_t)(wc[k].wr_id >> 32), i = (uint32_t)wc[k].wr_id;
			if (kind == WR_CTS_RECV)
				c->cts_arrived++;
			else if (kind == WR_DATA && i < MAX_REQS)
				c->reqs[i].done = 1;
			else if (kind == WR_DATA_RECV) {
				struct req *r = oldest_recv(c);
				if (!r) {
					c->failed = 1;
					WARN("NET/ncclrr-ib: a message came with no receive posted");
					return NRR_NCCL_INTERNAL_ERROR;
				}
				r->size = ntohl(wc[k].imm_data);
				r->done = 1;
			}
		}
	}
	if (n < 0)
		return fail(c, "ibv_poll_cq", EIO);
	return match_sends(c);
}

static nrr_nccl_result i_isend(void *sendComm, void *data, int size, int tag, void *mhandle, void **request)
{
	int err;
	*request = post(sendComm, 1, data, size, tag, mhandle, &err);
	return err ? NRR_NCCL_SYSTEM_ERROR : NRR_NCCL_SUCCESS;
}

static nrr_nccl_result i_irecv(void *recvComm, int n, void **data, int *sizes, int *tags, void **mhandles,
			       void **request)
{
	struct comm *c = recvComm;
	int err;
	*request = NULL;
	if (n != 1) {
		WARN("NET/ncclrr-ib: irecv of %d buffers; this transport receives one at a time (maxRecvs 1)", n);
		return NRR_NCCL_INVALID_ARGUMENT;
	}
	struct req *r = post(c, 0, data[0], sizes[0], tags[0], mhandles ? mhandles[0] : NULL, &err);
	if (!r)
		return err ? NRR_NCCL_SYSTEM_ERROR : NRR_NCCL_SUCCESS;
	int i = (int)(r - c->reqs);
	struct ibv_recv_wr rwr = { .wr_id = WR(WR_DATA_RECV, i) }, *rbad;
	int rc = ibv_post_recv(c->qp, &rwr, &rbad);
	if (rc)
		return fail(c, "ibv_post_recv", rc);
	c->cts_out[i] = (struct cts){ .addr = (uintptr_t)r->data, .rkey = r->mr ? r->mr->rkey : 0,
				      .size = r->size, .tag = r->tag };
	struct ibv_sge sge = { (uintptr_t)&c->cts_out[i], sizeof(struct cts), c->cts_mr->lkey };
	struct ibv_send_wr wr = { .wr_id = WR(WR_CTS_SEND, i), .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
			   *bad;
	if ((rc = ibv_post_send(c->qp, &wr, &bad)))
		return fail(c, "ibv_post_send(SEND)", rc);
	*request = r;
	return NRR_NCCL_SUCCESS;
}

static nrr_nccl_result i_iflush(void *recvComm, int n, void **data, int *sizes, void **mhandles, void **request)
{
	*request = NULL;   /* host memory: nothing to flush */
	return NRR_NCCL_SUCCESS;
}

static nrr_nccl_result i_test(void *request, int *done, int *size)
{
	struct req *r = request;
	struct comm *c = r->c;
	nrr_nccl_result rc = progress(c);
	if (rc)
		return rc;
	*done = r->done;
	if (!r->done)
		return NRR_NCCL_SUCCESS;
	if (size)
		*size = (int)r->size;
	r->reported = 1;
	/* retire the requests at the head that test() reported, in order */
	while (c->count && c->reqs[c->head].reported) {
		struct req *h = &c->reqs[c->head];
		if (h->own_mr)
			ibv_dereg_mr(h->own_mr);
		h->own_mr = NULL;
		h->reported = h->done = 0;
		c->head = (c->head + 1) % MAX_REQS;
		c->count--;
	}
	return NRR_NCCL_SUCCESS;
}

static nrr_nccl_result close_comm(void *comm)
{
	comm_free(comm);
	return NRR_NCCL_SUCCESS;
}

static nrr_nccl_result i_closeListen(void *listenComm)
{
	struct listen_comm *l = listenComm;
	if (l) {
		comm_free(l->accepting);
		close(l->fd);
		free(l);
	}
	return NRR_NCCL_SUCCESS;
}

NET_EXPORT const nrr_ncclNet_v8 ncclNetPlugin_v8 = {
	"ncclrr-ib", i_init, i_devices, i_getProperties, i_listen, i_connect, i_accept,
	i_regMr, i_regMrDmaBuf, i_deregMr, i_isend, i_irecv, i_iflush, i_test,
	close_comm, close_comm, i_closeListen, net_getDeviceMr, net_irecvConsumed,
};
