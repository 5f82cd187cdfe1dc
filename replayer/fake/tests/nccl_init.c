/* SPDX-License-Identifier: MIT */
/*
 * nccl_init.c - drive the real NCCL on the fake CUDA driver.
 *
 *   nccl_init NRANKS [NHOSTS] [--allreduce]
 *
 * Forks NRANKS processes placed on NHOSTS virtual hosts (rank r on host
 * r / (NRANKS/NHOSTS), device r % (NRANKS/NHOSTS)). Rank 0 gets the unique
 * id and hands it to the others through a pipe. Each rank makes its device
 * current with the driver API, runs ncclCommInitRank (and, with
 * --allreduce, one AllReduce), then ncclCommDestroy. With NCCLRR_TOPO set,
 * each host's NCCL topology file is written with the topo library and
 * passed as NCCL_TOPO_FILE; NCCL_HOSTID differs per host.
 *
 * NCCL is dlopen'ed ($NCCLRR_NCCL, else libnccl.so.2, else the CUDA
 * install); exit 77 when none is found. No CUDA or NCCL headers needed.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nrr_topo.h"

typedef struct {
	char internal[128];
} ncclUniqueId;
typedef void *ncclComm_t;
typedef int ncclResult_t;

static const char *nccl_candidates[] = {
	"libnccl.so.2",
	"/usr/local/cuda/lib/libnccl.so.2",
	"/usr/local/cuda-13.0/lib/libnccl.so.2",
	"/usr/local/cuda/lib64/libnccl.so.2",
	"/usr/lib/x86_64-linux-gnu/libnccl.so.2",
};

static const char *find_nccl(void)
{
	const char *e = getenv("NCCLRR_NCCL");
	if (e && *e)
		return access(e, R_OK) == 0 ? e : NULL;
	for (size_t i = 0; i < sizeof(nccl_candidates) / sizeof(nccl_candidates[0]); i++) {
		const char *c = nccl_candidates[i];
		if (c[0] != '/') {
			void *h = dlopen(c, RTLD_LAZY | RTLD_LOCAL);
			if (h) {
				dlclose(h);
				return c;
			}
		} else if (access(c, R_OK) == 0) {
			return c;
		}
	}
	return NULL;
}

#define LOAD(h, var, name) do { \
	*(void **)&var = dlsym(h, name); \
	if (!var) { fprintf(stderr, "rank %d: %s not found: %s\n", rank, name, dlerror()); return 2; } \
} while (0)

static int run_rank(const char *nccl, int rank, int nranks, int dev, int idfd_r, int idfd_w, int allreduce)
{
	void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	if (!cu) {
		fprintf(stderr, "rank %d: cannot load libcuda.so.1: %s\n", rank, dlerror());
		return 2;
	}
	int (*cuInit)(unsigned);
	int (*cuDeviceGet)(int *, int);
	int (*cuDevicePrimaryCtxRetain)(void **, int);
	int (*cuCtxSetCurrent)(void *);
	int (*cuStreamCreate)(void **, unsigned);
	int (*cuStreamSynchronize)(void *);
	int (*cuMemAlloc)(unsigned long long *, size_t);
	LOAD(cu, cuInit, "cuInit");
	LOAD(cu, cuDeviceGet, "cuDeviceGet");
	LOAD(cu, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
	LOAD(cu, cuCtxSetCurrent, "cuCtxSetCurrent");
	LOAD(cu, cuStreamCreate, "cuStreamCreate");
	LOAD(cu, cuStreamSynchronize, "cuStreamSynchronize");
	LOAD(cu, cuMemAlloc, "cuMemAlloc_v2");
	int d = -1;
	void *ctx = NULL;
	int rc = cuInit(0);
	if (!rc)
		rc = cuDeviceGet(&d, dev);
	if (!rc)
		rc = cuDevicePrimaryCtxRetain(&ctx, d);
	if (!rc)
		rc = cuCtxSetCurrent(ctx);
	if (rc) {
		fprintf(stderr, "rank %d: cannot make device %d current: CUresult %d\n", rank, dev, rc);
		return 2;
	}

	void *h = dlopen(nccl, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "rank %d: cannot load %s: %s\n", rank, nccl, dlerror());
		return 2;
	}
	ncclResult_t (*ncclGetUniqueId)(ncclUniqueId *);
	ncclResult_t (*ncclCommInitRank)(ncclComm_t *, int, ncclUniqueId, int);
	ncclResult_t (*ncclCommDestroy)(ncclComm_t);
	const char *(*ncclGetErrorString)(ncclResult_t);
	ncclResult_t (*ncclAllReduce)(const void *, void *, size_t, int, int, ncclComm_t, void *);
	LOAD(h, ncclGetUniqueId, "ncclGetUniqueId");
	LOAD(h, ncclCommInitRank, "ncclCommInitRank");
	LOAD(h, ncclCommDestroy, "ncclCommDestroy");
	LOAD(h, ncclGetErrorString, "ncclGetErrorString");
	LOAD(h, ncclAllReduce, "ncclAllReduce");

	ncclUniqueId id;
	if (rank == 0) {
		ncclResult_t r = ncclGetUniqueId(&id);
		if (r) {
			fprintf(stderr, "rank 0: ncclGetUniqueId: %s\n", ncclGetErrorString(r));
			return 1;
		}
		for (int i = 1; i < nranks; i++)
			if (write(idfd_w, &id, sizeof(id)) != (ssize_t)sizeof(id)) {
				perror("rank 0: write id");
				return 1;
			}
	} else {
		size_t got = 0;
		while (got < sizeof(id)) {
			ssize_t n = read(idfd_r, (char *)&id + got, sizeof(id) - got);
			if (n <= 0) {
				fprintf(stderr, "rank %d: no unique id from rank 0\n", rank);
				return 1;
			}
			got += (size_t)n;
		}
	}
	close(idfd_r);
	close(idfd_w);

	ncclComm_t comm = NULL;
	ncclResult_t r = ncclCommInitRank(&comm, nranks, id, rank);
	if (r) {
		fprintf(stderr, "rank %d: ncclCommInitRank: %s\n", rank, ncclGetErrorString(r));
		return 1;
	}
	printf("rank %d: ncclCommInitRank ok\n", rank);
	fflush(stdout);
	if (allreduce) {
		void *s = NULL;
		unsigned long long buf = 0;
		if (cuStreamCreate(&s, 0) || cuMemAlloc(&buf, 1 << 20)) {
			fprintf(stderr, "rank %d: stream/buffer\n", rank);
			return 1;
		}
		r = ncclAllReduce((void *)(uintptr_t)buf, (void *)(uintptr_t)buf, 1 << 18, 7 /* float */, 0 /* sum */,
				  comm, s);
		if (r) {
			fprintf(stderr, "rank %d: ncclAllReduce: %s\n", rank, ncclGetErrorString(r));
			return 1;
		}
		cuStreamSynchronize(s);
		printf("rank %d: ncclAllReduce enqueued\n", rank);
		fflush(stdout);
	}
	r = ncclCommDestroy(comm);
	if (r) {
		fprintf(stderr, "rank %d: ncclCommDestroy: %s\n", rank, ncclGetErrorString(r));
		return 1;
	}
	printf("rank %d: done\n", rank);
	fflush(stdout);
	return 0;
}

static pid_t *pids;
static int npids;

static void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "nccl_init: timeout, killing the ranks\n";
	ssize_t w = write(2, msg, sizeof(msg) - 1);
	(void)w;
	for (int i = 0; i < npids; i++)
		if (pids[i] > 0)
			kill(pids[i], SIGKILL);
}

int main(int argc, char **argv)
{
	int nranks = argc > 1 ? atoi(argv[1]) : 1;
	int nhosts = argc > 2 ? atoi(argv[2]) : 1;
	int allreduce = argc > 3 && strcmp(argv[3], "--allreduce") == 0;
	if (nranks < 1 || nhosts < 1 || nranks % nhosts) {
		fprintf(stderr, "usage: nccl_init NRANKS [NHOSTS] [--allreduce] (NRANKS a multiple of NHOSTS)\n");
		return 2;
	}
	const char *nccl = find_nccl();
	if (!nccl) {
		printf("SKIP: no libnccl.so.2 found (set NCCLRR_NCCL to its path)\n");
		return 77;
	}
	int per_host = nranks / nhosts;

	/* per-host NCCL topology files from the cluster file */
	char dir[] = "/tmp/nccl_init.XXXXXX";
	const char *topo = getenv("NCCLRR_TOPO");
	nrr_topo *t = NULL;
	if (topo && *topo) {
		char err[512];
		if (nrr_topo_load(topo, &t, err, sizeof(err)) < 0) {
			fprintf(stderr, "nccl_init: %s\n", err);
			return 2;
		}
		if (nhosts > t->nhosts || per_host > nrr_topo_gpus_per_host(t)) {
			fprintf(stderr, "nccl_init: %s has %d hosts x %d GPUs\n", topo, t->nhosts,
				nrr_topo_gpus_per_host(t));
			return 2;
		}
		if (!mkdtemp(dir)) {
			perror("mkdtemp");
			return 2;
		}
		for (int hst = 0; hst < nhosts; hst++) {
			char path[256];
			snprintf(path, sizeof(path), "%s/host%d.xml", dir, hst);
			if (nrr_topo_write_host_xml(t, hst, path, err, sizeof(err)) < 0) {
				fprintf(stderr, "nccl_init: %s\n", err);
				return 2;
			}
		}
	}

	int idpipe[2];
	if (pipe(idpipe) < 0) {
		perror("pipe");
		return 2;
	}
	fflush(stdout);
	pids = calloc((size_t)nranks, sizeof(*pids));
	npids = nranks;
	for (int r = 0; r < nranks; r++) {
		pid_t p = fork();
		if (p < 0) {
			perror("fork");
			return 2;
		}
		if (p == 0) {
			int hst = r / per_host, local = r % per_host;
			char v[512];
			snprintf(v, sizeof(v), "%d", r);
			setenv("NCCLRR_RANK", v, 1);
			snprintf(v, sizeof(v), "%d", local);
			setenv("NCCLRR_LOCAL_RANK", v, 1);
			snprintf(v, sizeof(v), "%d", hst);
			setenv("NCCLRR_HOST", v, 1);
			if (nhosts > 1) {
				snprintf(v, sizeof(v), "%s-node%d", t ? t->name : "fake", hst);
				setenv("NCCL_HOSTID", v, 1);
			}
			if (t) {
				snprintf(v, sizeof(v), "%s/host%d.xml", dir, hst);
				setenv("NCCL_TOPO_FILE", v, 1);
			}
			int rc = run_rank(nccl, r, nranks, local, idpipe[0], idpipe[1], allreduce);
			fflush(NULL);
			_exit(rc);
		}
		pids[r] = p;
	}
	close(idpipe[0]);
	close(idpipe[1]);
	signal(SIGALRM, on_alarm);
	const char *to = getenv("NCCL_INIT_TIMEOUT");
	alarm(to ? (unsigned)atoi(to) : 120);
	int failed = 0;
	for (int i = 0; i < nranks; i++) {
		int st;
		while (waitpid(pids[i], &st, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			failed++;
			if (WIFSIGNALED(st))
				fprintf(stderr, "nccl_init: rank %d killed by signal %d\n", i, WTERMSIG(st));
			else
				fprintf(stderr, "nccl_init: rank %d exited %d\n", i, WEXITSTATUS(st));
		}
	}
	if (t) {
		for (int hst = 0; hst < nhosts; hst++) {
			char path[256];
			snprintf(path, sizeof(path), "%s/host%d.xml", dir, hst);
			unlink(path);
		}
		rmdir(dir);
		nrr_topo_free(t);
	}
	printf("nccl_init: %d of %d ranks succeeded\n", nranks - failed, nranks);
	return failed ? 1 : 0;
}
