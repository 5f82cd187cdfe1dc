/* SPDX-License-Identifier: MIT */
/*
 * net_pingpong - drive an ncclNet v8 plugin the way NCCL's proxy does:
 * listen, hand the handle to a peer process, connect/accept until they
 * return a comm, then isend/irecv with test() polling, and close.  The
 * child sends MSGS messages (1 B .. 1 MiB, each a known pattern), the
 * parent receives and checks them, then the roles swap for one message.
 *
 * usage: net_pingpong PLUGIN   (a path, or a name as NCCL_NET_PLUGIN
 *                               takes it: "ncclrr-socket" opens
 *                               libnccl-net-ncclrr-socket.so; "-": the
 *                               value of NCCL_NET_PLUGIN, as NCCL would)
 * The processes fork before the plugin's init, each initializes it, and the
 * listen handle goes to the child through a pipe.  NET_PINGPONG_CHILD_HOST=N
 * gives the child NCCLRR_HOST=N: on the fake runtime, the two ends are then
 * on two virtual hosts (each with that host's NICs).
 * Exit 0 when every byte arrived as sent.
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nccl_net_types.h"

static const nrr_ncclNet_v8 *net;
static const int sizes[] = { 1, 100, 4096, 65536, 1 << 20, 0, 12345 };
#define MSGS ((int)(sizeof(sizes) / sizeof(sizes[0])))

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...)
{
	if (level > NRR_NCCL_LOG_WARN && !getenv("NET_PINGPONG_VERBOSE"))
		return;
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "net_pingpong[%d] %s:%d ", (int)getpid(), file, line);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

#define CHECK(call)                                                                          \
	do {                                                                                 \
		nrr_nccl_result r_ = (call);                                                 \
		if (r_) {                                                                    \
			fprintf(stderr, "net_pingpong[%d]: %s = %d\n", (int)getpid(), #call, r_); \
			exit(1);                                                             \
		}                                                                            \
	} while (0)

static void fill(char *p, int n, int k)
{
	for (int i = 0; i < n; i++)
		p[i] = (char)(i * 7 + k);
}

/* post, then test until done (as NCCL's proxy progress loop does) */
static int wait_req(void *req)
{
	int done = 0, size = -1;
	while (!done)
		CHECK(net->test(req, &done, &size));
	return size;
}

static void *post_send(void *comm, void *data, int size, int tag, void *mh)
{
	void *req = NULL;
	while (!req)
		CHECK(net->isend(comm, data, size, tag, mh, &req));
	return req;
}

static void *post_recv(void *comm, void *data, int size, int tag, void *mh)
{
	void *req = NULL;
	while (!req)
		CHECK(net->irecv(comm, 1, &data, &size, &tag, &mh, &req));
	return req;
}

static void *open_plugin(const char *name)
{
	char buf[512];
	void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!h && !strchr(name, '/')) {
		snprintf(buf, sizeof(buf), "libnccl-net-%s.so", name);
		h = dlopen(buf, RTLD_NOW | RTLD_LOCAL);
	}
	if (!h)
		fprintf(stderr, "net_pingpong: cannot open %s: %s\n", name, dlerror());
	return h;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: net_pingpong PLUGIN\n");
		return 2;
	}
	const char *name = strcmp(argv[1], "-") ? argv[1] : getenv("NCCL_NET_PLUGIN");
	if (!name) {
		fprintf(stderr, "net_pingpong: NCCL_NET_PLUGIN is not set\n");
		return 2;
	}
	void *h = open_plugin(name);
	if (!h || !(net = dlsym(h, "ncclNetPlugin_v8"))) {
		fprintf(stderr, "net_pingpong: %s has no ncclNetPlugin_v8\n", name);
		return 2;
	}
	char handle[NRR_NET_HANDLE_MAXSIZE];
	void *lcomm = NULL, *mine = NULL;
	char *buf = malloc(1 << 20), *want = malloc(1 << 20);
	int fails = 0, pfd[2];
	if (pipe(pfd)) {
		perror("net_pingpong: pipe");
		return 2;
	}
	pid_t parent = getpid(), child = fork();
	/* the sender dies with its receiver: it would else poll connect to a
	 * listener that is gone, forever (an orphan spinning on a CPU) */
	if (child == 0 && (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent))
		_exit(1);
	close(child == 0 ? pfd[1] : pfd[0]);
	const char *host = getenv("NET_PINGPONG_CHILD_HOST");
	if (child == 0 && host)
		setenv("NCCLRR_HOST", host, 1);
	CHECK(net->init(logger));
	int ndev = 0;
	char props[256];
	CHECK(net->devices(&ndev));
	if (ndev < 1) {
		fprintf(stderr, "net_pingpong[%d]: the plugin has no device\n", (int)getpid());
		return 1;
	}
	CHECK(net->getProperties(0, props));
	if (child != 0) {
		CHECK(net->listen(0, handle, &lcomm));
		if (write(pfd[1], handle, sizeof(handle)) != (ssize_t)sizeof(handle))
			perror("net_pingpong: write");
	}
	if (child == 0) {   /* the sender: connects to the parent's handle */
		void *scomm = NULL, *dev = NULL, *mh = NULL;
		if (read(pfd[0], handle, sizeof(handle)) != (ssize_t)sizeof(handle)) {
			fprintf(stderr, "net_pingpong: the parent sent no handle\n");
			_exit(1);
		}
		while (!scomm)
			CHECK(net->connect(0, handle, &scomm, &dev));
		CHECK(net->regMr(scomm, buf, 1 << 20, 1, &mh));
		usleep(100000);   /* the receiver polls a while for the first message */
		for (int k = 0; k < MSGS; k++) {
			fill(buf, sizes[k], k);
			wait_req(post_send(scomm, buf, sizes[k], k, mh));
		}
		/* and one back: accept the parent's connection on our own listener */
		char h2[NRR_NET_HANDLE_MAXSIZE];
		void *l2 = NULL, *rcomm = NULL;
		CHECK(net->listen(0, h2, &l2));
		wait_req(post_send(scomm, h2, sizeof(h2), 99, mh));
		while (!rcomm)
			CHECK(net->accept(l2, &rcomm, &dev));
		int got = wait_req(post_recv(rcomm, buf, 1 << 20, 7, NULL));
		fill(want, got, 77);
		int bad = got != 3000 || memcmp(buf, want, (size_t)got);
		CHECK(net->deregMr(scomm, mh));
		CHECK(net->closeRecv(rcomm));
		CHECK(net->closeListen(l2));
		CHECK(net->closeSend(scomm));
		free(buf);
		free(want);
		_exit(bad);
	}
	void *rcomm = NULL, *dev = NULL;
	while (!rcomm)
		CHECK(net->accept(lcomm, &rcomm, &dev));
	for (int k = 0; k < MSGS; k++) {
		int got = wait_req(post_recv(rcomm, buf, 1 << 20, k, NULL));
		fill(want, sizes[k], k);
		if (got != sizes[k] || memcmp(buf, want, (size_t)got)) {
			fprintf(stderr, "net_pingpong: message %d: %d bytes, want %d (or other bytes)\n", k, got, sizes[k]);
			fails++;
		}
	}
	char h2[NRR_NET_HANDLE_MAXSIZE];
	wait_req(post_recv(rcomm, h2, sizeof(h2), 99, NULL));
	while (!mine)
		CHECK(net->connect(0, h2, &mine, &dev));
	fill(buf, 3000, 77);
	wait_req(post_send(mine, buf, 3000, 7, NULL));
	int st = 0;
	waitpid(child, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "net_pingpong: the sender failed (status %#x)\n", st);
		fails++;
	}
	CHECK(net->closeSend(mine));
	CHECK(net->closeRecv(rcomm));
	CHECK(net->closeListen(lcomm));
	printf("net_pingpong: %d messages (1 B to 1 MiB) and one back: %s\n", MSGS, fails ? "FAILED" : "ok");
	free(buf);
	free(want);
	return fails ? 1 : 0;
}
