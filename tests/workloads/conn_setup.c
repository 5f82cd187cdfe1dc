/* SPDX-License-Identifier: MIT */
/*
 * conn_setup - what NCCL's init and connection setup ask of a machine,
 * asked directly, rank by rank, under `ncclrr run`:
 *  1. the CUDA driver the way a statically linked CUDA runtime reaches it
 *     (dlopen libcuda.so.1, every entry point through cuGetProcAddress_v2),
 *     device discovery and attributes, a context, memory, streams, events
 *     and a cuMem VMM allocation exported as a POSIX fd;
 *  2. NVML by dlopen/dlsym, libibverbs by dlopen/dlvsym (as NCCL does);
 *  3. a bootstrap over TCP: rank 0 listens at NCCL_COMM_ID, every rank
 *     connects with NCCL's handshake (magic, then ncclSocketType 1) and the
 *     ranks' addresses are gathered and sent back;
 *  4. a ring of "proxy" connections (ncclSocketType 2): rank r asks rank
 *     r+1 for its buffer (a request with NCCL's proxy RPC framing); on the
 *     same host the proxy exports the buffer afresh, as NCCL's proxy does
 *     on GetFd, and the answer is that fd over a UNIX socket (SCM_RIGHTS),
 *     imported with cuMemImportFromShareableHandle and mapped, and the
 *     bytes written by the owner are checked; a failed export is answered
 *     with retcode 3, like NCCL's;
 *  5. NCCL itself, if found: ncclGetVersion, and a one-rank communicator
 *     that fails at its root's bind (see nccl_steps)
 *     (whatever NCCL answers is printed).
 * Every line printed is the same from run to run (no pids, ports or
 * addresses), so runs with and without the tracer can be compared.
 * Exit 0 when every step worked; 1 otherwise (the failing call is named).
 * A rank whose import fails still answers its peers, so the others end.
 *
 * usage: conn_setup [--no-nccl]
 * NCCL_SOCKET_IFNAME picks the interface whose IPv4 address this rank's
 * listener binds to, as NCCL's bootstrap does: a comma list of name
 * prefixes, '^' first to exclude them, '=' first to match names exactly;
 * unset, any interface but docker* and lo, then lo.  No match: "Bootstrap
 * : no socket interface found" and exit 1 before the bootstrap.
 * CONN_SETUP_STALL=R: rank R prints its pid on stderr and stops before the
 * bootstrap (a hang for the others: rank 0 waits in accept, the rest in
 * recv), until killed.
 * CONN_SETUP_DIE=R: rank R dies mid-connect: it makes its bootstrap socket
 * and calls abort() before connecting (rank 0: before listening), so the
 * others wait for it (rank 0 in accept, the rest in recv; if R is 0, the
 * rest retry their connect).
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "nccl_loader.h"

#define MAGIC 0x564ab9f2fc4b9d6cULL   /* NCCL_SOCKET_MAGIC */
enum { TYPE_BOOTSTRAP = 1, TYPE_PROXY = 2 };
enum { MSG_CONNECT = 4, MSG_GETFD = 9 };  /* ncclProxyMsgType */

static struct wl_job job;
static int failures;

#define FAIL(...)                                          \
	do {                                               \
		fprintf(stderr, "rank %d: ", job.rank);    \
		fprintf(stderr, __VA_ARGS__);              \
		fputc('\n', stderr);                       \
		failures++;                                \
	} while (0)

/* ------------------------------------------------------------ CUDA */

typedef int CUresult;
typedef struct {
	int type, requestedHandleTypes, loc_type, loc_id;
	void *win32;
	unsigned char flags[8];
} MemProp;                     /* CUmemAllocationProp, 32 bytes */
typedef struct {
	int loc_type, loc_id, flags;
} AccessDesc;                  /* CUmemAccessDesc, 12 bytes */

static struct {
	CUresult (*GetProcAddress)(const char *, void **, int, unsigned long long, int *);
	CUresult (*Init)(unsigned);
	CUresult (*DriverGetVersion)(int *);
	CUresult (*DeviceGetCount)(int *);
	CUresult (*DeviceGet)(int *, int);
	CUresult (*DeviceGetName)(char *, int, int);
	CUresult (*DeviceGetAttribute)(int *, int, int);
	CUresult (*DeviceGetPCIBusId)(char *, int, int);
	CUresult (*DeviceTotalMem)(size_t *, int);
	CUresult (*DevicePrimaryCtxRetain)(void **, int);
	CUresult (*CtxSetCurrent)(void *);
	CUresult (*MemAlloc)(unsigned long long *, size_t);
	CUresult (*MemFree)(unsigned long long);
	CUresult (*MemsetD32)(unsigned long long, unsigned, size_t);
	CUresult (*MemcpyDtoH)(void *, unsigned long long, size_t);
	CUresult (*StreamCreate)(void **, unsigned);
	CUresult (*StreamQuery)(void *);
	CUresult (*StreamSynchronize)(void *);
	CUresult (*StreamDestroy)(void *);
	CUresult (*EventCreate)(void **, unsigned);
	CUresult (*EventRecord)(void *, void *);
	CUresult (*EventQuery)(void *);
	CUresult (*EventDestroy)(void *);
	CUresult (*MemGetAllocationGranularity)(size_t *, const MemProp *, int);
	CUresult (*MemCreate)(unsigned long long *, size_t, const MemProp *, unsigned long long);
	CUresult (*MemAddressReserve)(unsigned long long *, size_t, size_t, unsigned long long, unsigned long long);
	CUresult (*MemMap)(unsigned long long, size_t, size_t, unsigned long long, unsigned long long);
	CUresult (*MemSetAccess)(unsigned long long, size_t, const AccessDesc *, size_t);
	CUresult (*MemUnmap)(unsigned long long, size_t);
	CUresult (*MemAddressFree)(unsigned long long, size_t);
	CUresult (*MemRelease)(unsigned long long);
	CUresult (*MemExportToShareableHandle)(void *, unsigned long long, int, unsigned long long);
	CUresult (*MemImportFromShareableHandle)(unsigned long long *, void *, int);
	CUresult (*GetErrorName)(CUresult, const char **);
} cu;

static const char *cuerr(CUresult rc)
{
	const char *n = NULL;
	if (!cu.GetErrorName || cu.GetErrorName(rc, &n) || !n)
		n = "?";
	return n;
}

#define CU(call)                                                                   \
	({                                                                         \
		CUresult rc_ = (call);                                             \
		if (rc_)                                                           \
			FAIL("%s failed: %s (%d)", #call, cuerr(rc_), rc_);        \
		rc_;                                                               \
	})

/* as the CUDA runtime does: every entry point by name and version */
static int cuda_resolve(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		FAIL("cannot open libcuda.so.1: %s", dlerror());
		return -1;
	}
	*(void **)&cu.GetProcAddress = dlsym(h, "cuGetProcAddress_v2");
	if (!cu.GetProcAddress) {
		FAIL("libcuda.so.1 has no cuGetProcAddress_v2");
		return -1;
	}
	static const struct {
		const char *name;
		int version;
		size_t off;
	} ep[] = {
#define EP(f, v) { "cu" #f, v, offsetof(__typeof__(cu), f) }
		EP(Init, 2000), EP(DriverGetVersion, 2020), EP(DeviceGetCount, 2000), EP(DeviceGet, 2000),
		EP(DeviceGetName, 2000), EP(DeviceGetAttribute, 2000), EP(DeviceGetPCIBusId, 4010),
		EP(DeviceTotalMem, 3020), EP(DevicePrimaryCtxRetain, 7000), EP(CtxSetCurrent, 4000),
		EP(MemAlloc, 3020), EP(MemFree, 3020), EP(MemsetD32, 3020), EP(MemcpyDtoH, 3020),
		EP(StreamCreate, 2000), EP(StreamQuery, 2000), EP(StreamSynchronize, 2000),
		EP(StreamDestroy, 4000), EP(EventCreate, 2000), EP(EventRecord, 2000), EP(EventQuery, 2000),
		EP(EventDestroy, 4000), EP(MemGetAllocationGranularity, 10020), EP(MemCreate, 10020),
		EP(MemAddressReserve, 10020), EP(MemMap, 10020), EP(MemSetAccess, 10020), EP(MemUnmap, 10020),
		EP(MemAddressFree, 10020), EP(MemRelease, 10020), EP(MemExportToShareableHandle, 10020),
		EP(MemImportFromShareableHandle, 10020), EP(GetErrorName, 6000),
#undef EP
	};
	for (size_t i = 0; i < sizeof(ep) / sizeof(ep[0]); i++) {
		int st = 0;
		void **slot = (void **)((char *)&cu + ep[i].off);
		if (cu.GetProcAddress(ep[i].name, slot, ep[i].version, 0, &st) || !*slot) {
			FAIL("cuGetProcAddress(%s, %d) failed", ep[i].name, ep[i].version);
			return -1;
		}
	}
	/* and one the driver does not have, as the runtime probes */
	void *none = NULL;
	int st = 0;
	if (cu.GetProcAddress("cuNoSuchFunction", &none, 12000, 0, &st) == 0)
		FAIL("cuGetProcAddress found cuNoSuchFunction");
	return 0;
}

static size_t granularity;   /* of cuMem allocations (the same on every rank) */

struct vmm {
	unsigned long long handle, va;
	size_t size;
	int fd;
};

static int cuda_steps(int dev, struct vmm *m, char *busid, size_t busid_len)
{
	int n = 0, d = 0, v = 0, attr = 0;
	char name[256];
	size_t total = 0;
	if (CU(cu.Init(0)) || CU(cu.DriverGetVersion(&v)) || CU(cu.DeviceGetCount(&n)))
		return -1;
	for (int i = 0; i < n; i++) {
		if (CU(cu.DeviceGet(&d, i)) || CU(cu.DeviceGetName(name, sizeof(name), d)) ||
		    CU(cu.DeviceTotalMem(&total, d)))
			return -1;
		/* compute capability, multiprocessors, PCI domain/bus/device, unified addressing */
		static const int attrs[] = { 75, 76, 16, 50, 33, 34, 41 };
		for (size_t a = 0; a < sizeof(attrs) / sizeof(attrs[0]); a++)
			if (CU(cu.DeviceGetAttribute(&attr, attrs[a], d)))
				return -1;
	}
	if (dev >= n) {
		FAIL("device %d of %d", dev, n);
		return -1;
	}
	void *ctx, *stream, *event;
	unsigned long long p;
	unsigned word = 0;
	if (CU(cu.DeviceGet(&d, dev)) || CU(cu.DeviceGetPCIBusId(busid, (int)busid_len, d)) ||
	    CU(cu.DevicePrimaryCtxRetain(&ctx, d)) || CU(cu.CtxSetCurrent(ctx)) || CU(cu.MemAlloc(&p, 1 << 20)) ||
	    CU(cu.StreamCreate(&stream, 1)) || CU(cu.EventCreate(&event, 2)) ||
	    CU(cu.MemsetD32(p, 0x5eed0000u + (unsigned)job.rank, 256)) || CU(cu.EventRecord(event, stream)) ||
	    CU(cu.StreamQuery(stream)) || CU(cu.EventQuery(event)) || CU(cu.StreamSynchronize(stream)) ||
	    CU(cu.MemcpyDtoH(&word, p + 64, sizeof(word))))
		return -1;
	if (word != 0x5eed0000u + (unsigned)job.rank)
		FAIL("device memory reads %#x, not what was set", word);
	if (CU(cu.EventDestroy(event)) || CU(cu.StreamDestroy(stream)) || CU(cu.MemFree(p)))
		return -1;

	/* a cuMem allocation the ring neighbour on this host imports */
	MemProp prop = { .type = 1, .requestedHandleTypes = 1, .loc_type = 1, .loc_id = d };
	AccessDesc acc = { .loc_type = 1, .loc_id = d, .flags = 3 };
	size_t gran = 0;
	if (CU(cu.MemGetAllocationGranularity(&gran, &prop, 0)))
		return -1;
	m->size = granularity = gran;
	if (CU(cu.MemCreate(&m->handle, m->size, &prop, 0)) || CU(cu.MemAddressReserve(&m->va, m->size, gran, 0, 0)) ||
	    CU(cu.MemMap(m->va, m->size, 0, m->handle, 0)) || CU(cu.MemSetAccess(m->va, m->size, &acc, 1)) ||
	    CU(cu.MemsetD32(m->va, 0xc0de0000u + (unsigned)job.rank, m->size / 4)) ||
	    CU(cu.MemExportToShareableHandle(&m->fd, m->handle, 1, 0)))
		return -1;
	printf("rank %d: cuda ok: %d devices, device %d current, cuMem buffer exported\n", job.rank, n, dev);
	return 0;
}

/* ------------------------------------------------------------ NVML, verbs */

static void nvml_steps(const char *busid)
{
	void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		FAIL("cannot open libnvidia-ml.so.1: %s", dlerror());
		return;
	}
	int (*init)(void) = (int (*)(void))dlsym(h, "nvmlInit_v2");
	int (*count)(unsigned *) = (int (*)(unsigned *))dlsym(h, "nvmlDeviceGetCount_v2");
	int (*bybus)(const char *, void **) = (int (*)(const char *, void **))dlsym(h, "nvmlDeviceGetHandleByPciBusId_v2");
	int (*index)(void *, unsigned *) = (int (*)(void *, unsigned *))dlsym(h, "nvmlDeviceGetIndex");
	int (*shutdown)(void) = (int (*)(void))dlsym(h, "nvmlShutdown");
	unsigned n = 0, idx = 0;
	void *dev = NULL;
	if (!init || !count || !bybus || !index || !shutdown) {
		FAIL("libnvidia-ml.so.1 lacks a function NCCL uses");
		return;
	}
	int rc;
	if ((rc = init()) || (rc = count(&n)) || (rc = bybus(busid, &dev)) || (rc = index(dev, &idx)) ||
	    (rc = shutdown()))
		FAIL("NVML failed: %d", rc);
	else
		printf("rank %d: nvml ok: %u devices, this one is index %u\n", job.rank, n, idx);
}

static void verbs_steps(void)
{
	void *h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		printf("rank %d: verbs: no libibverbs\n", job.rank);
		return;
	}
	void **(*list)(int *) = (void **(*)(int *))dlvsym(h, "ibv_get_device_list", "IBVERBS_1.1");
	void (*free_list)(void **) = (void (*)(void **))dlvsym(h, "ibv_free_device_list", "IBVERBS_1.1");
	int n = -1;
	void **l = list ? list(&n) : NULL;
	if (l && free_list)
		free_list(l);
	printf("rank %d: verbs ok: device list %s\n", job.rank, n > 0 ? "not empty" : "empty");
}

/* ------------------------------------------------------------ sockets */

struct peer {
	struct sockaddr_in proxy;   /* where this rank's proxy listens */
	int host;
};

/* all @n bytes, as NCCL's blocking ncclSocketSend/Recv move them */
static int xfer_all(int fd, void *p, size_t n, bool out)
{
	for (size_t done = 0; done < n;) {
		ssize_t k = out ? send(fd, (char *)p + done, n - done, MSG_NOSIGNAL) : recv(fd, (char *)p + done, n - done, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		done += (size_t)k;
	}
	return 0;
}

static int send_all(int fd, const void *p, size_t n)
{
	return xfer_all(fd, (void *)p, n, true);
}

static int recv_all(int fd, void *p, size_t n)
{
	return xfer_all(fd, p, n, false);
}

/* connect with NCCL's handshake; retried while the listener is not up */
static int nccl_connect(const struct sockaddr_in *a, int type)
{
	for (int tries = 0; tries < 3000; tries++) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -1;
		if (connect(fd, (const struct sockaddr *)a, sizeof(*a)) == 0) {
			uint64_t magic = MAGIC;
			if (send_all(fd, &magic, sizeof(magic)) || send_all(fd, &type, sizeof(type))) {
				close(fd);
				return -1;
			}
			return fd;
		}
		close(fd);
		if (errno != ECONNREFUSED)
			return -1;
		usleep(10000);
	}
	return -1;
}

static int nccl_accept(int lfd, int want_type)
{
	int fd = accept(lfd, NULL, NULL);
	uint64_t magic = 0;
	int type = 0;
	if (fd < 0 || recv_all(fd, &magic, sizeof(magic)) || recv_all(fd, &type, sizeof(type)) || magic != MAGIC ||
	    type != want_type) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* NCCL's listen backlog (its SOCKET_BACKLOG; the kernel caps it at
 * net.core.somaxconn): rank 0 of a 4096-rank job is sent 4095 connects
 * at once, and a connect the full queue drops comes back only after TCP's
 * backoff of 1, 2, 4, ... s */
#define BACKLOG 16384

static int listen_on(struct sockaddr_in *a)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	socklen_t len = sizeof(*a);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)a, sizeof(*a)) || listen(fd, BACKLOG) ||
	    getsockname(fd, (struct sockaddr *)a, &len)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* rank 0 gathers every rank's peer record and sends the table back */
static int bootstrap(struct peer *all, const struct peer *me)
{
	const char *id = getenv("NCCL_COMM_ID");
	char host[256];
	const char *colon = id ? strrchr(id, ':') : NULL;
	if (!colon || (size_t)(colon - id) >= sizeof(host)) {
		FAIL("NCCL_COMM_ID (host:port) is not set: run me under 'ncclrr run'");
		return -1;
	}
	memcpy(host, id, (size_t)(colon - id));
	host[colon - id] = '\0';
	struct sockaddr_in root = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1)) };
	const char *die = getenv("CONN_SETUP_DIE");
	if (die && *die && atoi(die) == job.rank) {
		fprintf(stderr, "rank %d: pid %d dies mid-connect\n", job.rank, (int)getpid());
		(void)socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		abort();
	}
	if (inet_pton(AF_INET, host, &root.sin_addr) != 1) {
		FAIL("NCCL_COMM_ID=%s: not an IPv4 address", id);
		return -1;
	}
	if (job.rank == 0) {
		int lfd = listen_on(&root);
		if (lfd < 0) {
			FAIL("bootstrap: cannot listen at %s: %s", id, strerror(errno));
			return -1;
		}
		int *fds = calloc((size_t)job.nranks, sizeof(int));
		all[0] = *me;
		int rc = 0;
		for (int i = 1; i < job.nranks && !rc; i++) {
			int fd = nccl_accept(lfd, TYPE_BOOTSTRAP), r = -1;
			struct peer p;
			if (fd < 0 || recv_all(fd, &r, sizeof(r)) || r <= 0 || r >= job.nranks ||
			    recv_all(fd, &p, sizeof(p)))
				rc = -1;
			else {
				fds[r] = fd;
				all[r] = p;
			}
		}
		for (int r = 1; r < job.nranks && !rc; r++)
			if (send_all(fds[r], all, sizeof(*all) * (size_t)job.nranks))
				rc = -1;
		for (int r = 1; r < job.nranks; r++)
			if (fds[r] > 0)
				close(fds[r]);
		free(fds);
		close(lfd);
		if (rc)
			FAIL("bootstrap: a rank did not check in");
		return rc;
	}
	int fd = nccl_connect(&root, TYPE_BOOTSTRAP);
	if (fd < 0 || send_all(fd, &job.rank, sizeof(job.rank)) || send_all(fd, me, sizeof(*me)) ||
	    recv_all(fd, all, sizeof(*all) * (size_t)job.nranks)) {
		FAIL("bootstrap: cannot reach rank 0 at %s", id);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* UNIX socket of a rank, in the abstract namespace, unique per job */
static socklen_t uds_addr(struct sockaddr_un *a, int rank)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	int n = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "ncclrr-conn-setup-%s-%d",
			 getenv("NCCL_COMM_ID"), rank);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

/* NCCL's proxy RPC framing, field by field as NCCL sends it: type,
 * connection, reqSize, respSize, the request, opId */
struct rpc {
	int type;
	uint64_t conn;
	int req_size, resp_size;
	int req;
	uint64_t op;
};

static int rpc_send(int fd, const struct rpc *q)
{
	return send_all(fd, &q->type, 4) || send_all(fd, &q->conn, 8) || send_all(fd, &q->req_size, 4) ||
	       send_all(fd, &q->resp_size, 4) || send_all(fd, &q->req, 4) || send_all(fd, &q->op, 8);
}

static int rpc_recv(int fd, struct rpc *q)
{
	return recv_all(fd, &q->type, 4) || recv_all(fd, &q->conn, 8) || recv_all(fd, &q->req_size, 4) ||
	       recv_all(fd, &q->resp_size, 4) || q->req_size != 4 || recv_all(fd, &q->req, 4) ||
	       recv_all(fd, &q->op, 8);
}

/* The proxy side: answer rank r-1's requests for this rank's buffer. */
static int serve(int lfd, int ufd, const struct vmm *m, const struct peer *all)
{
	int fd = nccl_accept(lfd, TYPE_PROXY);
	struct rpc q;
	if (fd < 0 || rpc_recv(fd, &q)) {
		FAIL("proxy: no request from rank %d", (job.rank + job.nranks - 1) % job.nranks);
		return -1;
	}
	int prev = (job.rank + job.nranks - 1) % job.nranks;
	int res = 0;
	int xfd = -1;
	if (q.type == MSG_GETFD && CU(cu.MemExportToShareableHandle(&xfd, m->handle, 1, 0))) {
		/* as NCCL's proxy does on GetFd: a fresh export for the asker */
		printf("rank %d: proxy: failed to execute operation GetFd from rank %d, retcode 3\n", job.rank, prev);
		res = 3;
	} else if (q.type == MSG_GETFD) {   /* same host: the fd goes over the UNIX socket */
		struct sockaddr_un to;
		socklen_t tolen = uds_addr(&to, prev);
		char c = 'f';
		struct iovec iov = { &c, 1 };
		char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
		struct msghdr msg = { .msg_name = &to, .msg_namelen = tolen, .msg_iov = &iov, .msg_iovlen = 1,
				      .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
		struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &xfd, sizeof(int));
		if (sendmsg(ufd, &msg, 0) != 1) {
			FAIL("proxy: sendmsg of the buffer's fd to rank %d: %s", prev, strerror(errno));
			res = 3;
		}
		close(xfd);
	}
	/* the response header: opId, result, respSize; then the peer's verdict */
	struct {
		uint64_t op;
		int res, resp_size;
	} resp = { q.op, res, 0 };
	int verdict = -1;
	if (send_all(fd, &resp, sizeof(resp)) || recv_all(fd, &verdict, sizeof(verdict)))
		verdict = -1;
	close(fd);
	if (verdict)
		printf("rank %d: rank %d could not use this rank's buffer\n", job.rank, prev);
	(void)all;
	return verdict;
}

/* The rank side: ask rank r+1's proxy for its buffer and check it. */
static int ask(const struct peer *all, int ufd)
{
	int next = (job.rank + 1) % job.nranks;
	bool local = all[next].host == all[job.rank].host;
	int fd = nccl_connect(&all[next].proxy, TYPE_PROXY);
	struct rpc q = { local ? MSG_GETFD : MSG_CONNECT, 0x1000u + (uint64_t)job.rank, sizeof(int), 0, next,
			 0x2000u + (uint64_t)job.rank };
	struct {
		uint64_t op;
		int res, resp_size;
	} resp;
	if (fd < 0 || rpc_send(fd, &q)) {
		FAIL("proxy: cannot reach rank %d", next);
		return -1;
	}
	int verdict = 0;
	int got = -1;
	if (recv_all(fd, &resp, sizeof(resp)) || resp.op != q.op) {
		FAIL("proxy: no answer from rank %d", next);
		close(fd);
		return -1;
	}
	if (local && !resp.res) {   /* the fd was sent before the answer */
		char c;
		struct iovec iov = { &c, 1 };
		char cbuf[CMSG_SPACE(sizeof(int))];
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
		if (recvmsg(ufd, &msg, 0) == 1 && CMSG_FIRSTHDR(&msg))
			memcpy(&got, CMSG_DATA(CMSG_FIRSTHDR(&msg)), sizeof(int));
	}
	if (resp.res) {
		FAIL("proxy: rank %d answered retcode %d", next, resp.res);
		verdict = -1;
	} else if (local) {
		unsigned long long h = 0, va = 0;
		size_t size = granularity;
		AccessDesc acc = { .loc_type = 1, .loc_id = job.local_rank, .flags = 3 };
		unsigned word = 0;
		if (got < 0 || CU(cu.MemImportFromShareableHandle(&h, (void *)(intptr_t)got, 1)) ||
		    CU(cu.MemAddressReserve(&va, size, size, 0, 0)) || CU(cu.MemMap(va, size, 0, h, 0)) ||
		    CU(cu.MemSetAccess(va, size, &acc, 1)) || CU(cu.MemcpyDtoH(&word, va + 128, sizeof(word)))) {
			verdict = -1;
		} else if (word != 0xc0de0000u + (unsigned)next) {
			FAIL("rank %d's buffer reads %#x here", next, word);
			verdict = -1;
		} else {
			cu.MemUnmap(va, size);
			cu.MemAddressFree(va, size);
			cu.MemRelease(h);
			printf("rank %d: imported rank %d's buffer over P2P (same host)\n", job.rank, next);
		}
		if (got >= 0)
			close(got);
	} else {
		printf("rank %d: connected to rank %d over the network (other host)\n", job.rank, next);
	}
	send_all(fd, &verdict, sizeof(verdict));
	close(fd);
	return verdict;
}

/* ------------------------------------------------------------ NCCL */

static void nccl_steps(void)
{
	struct wl_nccl n;
	if (wl_nccl_open(&n) < 0) {
		printf("rank %d: nccl: not found\n", job.rank);
		return;
	}
	printf("rank %d: nccl %d.%d.%d found\n", job.rank, n.version / 10000, n.version / 100 % 100, n.version % 100);
	/* A one-rank communicator whose root cannot bind: NCCL_COMM_ID names an
	 * address of no host (TEST-NET-1), so every rank's init takes NCCL's own
	 * bootstrap failure path (WARN "Call to bind failed", ncclSystemError),
	 * the same on every rank in every run.  With the job's NCCL_COMM_ID, each
	 * rank's NCCL would race the others for the job's root address, and a
	 * winner's init could succeed, or connect to another's root and hang. */
	setenv("NCCL_COMM_ID", "192.0.2.1:9", 1);
	wl_ncclUniqueId id;
	wl_ncclComm_t comm = NULL;
	wl_ncclResult_t rc = n.GetUniqueId(&id);
	if (rc == wl_ncclSuccess)
		rc = n.CommInitRank(&comm, 1, id, 0);
	printf("rank %d: nccl one-rank communicator: %s\n", job.rank, n.GetErrorString(rc));
	if (rc == wl_ncclSuccess)
		n.CommDestroy(comm);
}

/* does @name match the NCCL_SOCKET_IFNAME-style @list (after '^'/'=')? */
static bool if_listed(const char *name, const char *list, bool exact)
{
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ",");
		size_t k = strcspn(p, ":");  /* "eth0:port" names eth0 */
		if (k < n)
			n = k;
		if (n && (exact ? strlen(name) == n && !strncmp(name, p, n) : !strncmp(name, p, n)))
			return true;
		p += strcspn(p, ",");
		if (*p)
			p++;
	}
	return false;
}

/* the first up IPv4 interface that @spec selects; -1 if none */
static int if_pick(const char *spec, struct in_addr *addr)
{
	struct ifaddrs *ifs, *i;
	bool neg = spec[0] == '^', exact = spec[neg] == '=';
	const char *list = spec + neg + exact;
	int rc = -1;
	if (getifaddrs(&ifs))
		return -1;
	for (i = ifs; i && rc; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && (i->ifa_flags & IFF_UP) &&
		    if_listed(i->ifa_name, list, exact) != neg) {
			*addr = ((struct sockaddr_in *)i->ifa_addr)->sin_addr;
			rc = 0;
		}
	freeifaddrs(ifs);
	return rc;
}

int main(int argc, char **argv)
{
	bool use_nccl = !(argc > 1 && !strcmp(argv[1], "--no-nccl"));
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (wl_job_from_env(&job) < 0)
		return 2;
	const char *ifname = getenv("NCCL_SOCKET_IFNAME");
	struct in_addr ifaddr;
	if (ifname ? if_pick(ifname, &ifaddr) : (if_pick("^docker,lo", &ifaddr) && if_pick("lo", &ifaddr))) {
		fprintf(stderr, "rank %d: Bootstrap : no socket interface found\n", job.rank);
		return 1;
	}
	const char *h = getenv("NCCLRR_HOST");
	struct peer me = { .proxy = { .sin_family = AF_INET }, .host = h ? atoi(h) : 0 };
	char busid[64] = "";
	struct vmm m = { .fd = -1 };
	if (cuda_resolve() < 0 || cuda_steps(job.local_rank, &m, busid, sizeof(busid)) < 0)
		return 1;
	nvml_steps(busid);
	verbs_steps();

	me.proxy.sin_addr = ifaddr;
	int lfd = listen_on(&me.proxy);
	int ufd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un ua;
	socklen_t ualen = uds_addr(&ua, job.rank);
	if (lfd < 0 || ufd < 0 || bind(ufd, (struct sockaddr *)&ua, ualen)) {
		FAIL("cannot open this rank's sockets: %s", strerror(errno));
		return 1;
	}
	const char *stall = getenv("CONN_SETUP_STALL");
	if (stall && atoi(stall) == job.rank) {
		fprintf(stderr, "rank %d: pid %d stalls\n", job.rank, (int)getpid());
		for (;;)
			pause();
	}
	struct peer *all = calloc((size_t)job.nranks, sizeof(*all));
	if (!all || bootstrap(all, &me) < 0)
		return 1;
	printf("rank %d: bootstrap ok: %d ranks\n", job.rank, job.nranks);
	if (job.nranks > 1) {
		/* even ranks ask first, then serve; odd ranks the other way round */
		int a = 0, s = 0;
		if (job.rank % 2 == 0) {
			a = ask(all, ufd);
			s = serve(lfd, ufd, &m, all);
		} else {
			s = serve(lfd, ufd, &m, all);
			a = ask(all, ufd);
		}
		if (a == 0 && s == 0)
			printf("rank %d: ring connected\n", job.rank);
	}
	close(lfd);
	close(ufd);
	free(all);
	if (use_nccl)
		nccl_steps();
	if (failures)
		printf("rank %d: %d failure(s)\n", job.rank, failures);
	return failures ? 1 : 0;
}
