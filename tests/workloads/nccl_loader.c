/* SPDX-License-Identifier: MIT */
/* nccl_loader.c - find and open NCCL and the CUDA driver at run time. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nccl_loader.h"

#define LOAD(lib, dst, name) do { \
	*(void **)(&(dst)) = dlsym((lib), (name)); \
	if (!(dst)) { \
		fprintf(stderr, "workload: symbol %s not found: %s\n", (name), dlerror()); \
		return -1; \
	} \
} while (0)

static void *try_open(const char *path, char *used, size_t size, char *why, size_t wsize)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	if (h) {
		snprintf(used, size, "%s", path);
	} else {
		size_t l = strlen(why);
		snprintf(why + l, wsize - l, "\n  %s: %s", path, dlerror());
	}
	return h;
}

int wl_nccl_open(struct wl_nccl *n)
{
	memset(n, 0, sizeof(*n));
	char why[4096] = "";
	const char *env = getenv("NCCLRR_NCCL");
	if (env && *env) {
		n->handle = try_open(env, n->path, sizeof(n->path), why, sizeof(why));
	} else {
		n->handle = try_open("libnccl.so.2", n->path, sizeof(n->path), why, sizeof(why));
		if (!n->handle) {
			glob_t g;
			if (glob("/usr/local/cuda*/lib*/libnccl.so.2", 0, NULL, &g) == 0) {
				for (size_t i = 0; i < g.gl_pathc && !n->handle; i++)
					n->handle = try_open(g.gl_pathv[i], n->path, sizeof(n->path), why, sizeof(why));
				globfree(&g);
			}
		}
	}
	if (!n->handle) {
		fprintf(stderr, "workload: cannot open NCCL (set NCCLRR_NCCL to libnccl.so.2):%s\n", why);
		return -1;
	}
	LOAD(n->handle, n->GetVersion, "ncclGetVersion");
	LOAD(n->handle, n->GetUniqueId, "ncclGetUniqueId");
	LOAD(n->handle, n->CommInitRank, "ncclCommInitRank");
	LOAD(n->handle, n->CommInitRankConfig, "ncclCommInitRankConfig");
	LOAD(n->handle, n->CommSplit, "ncclCommSplit");
	LOAD(n->handle, n->CommGetAsyncError, "ncclCommGetAsyncError");
	LOAD(n->handle, n->CommFinalize, "ncclCommFinalize");
	LOAD(n->handle, n->CommDestroy, "ncclCommDestroy");
	LOAD(n->handle, n->CommAbort, "ncclCommAbort");
	LOAD(n->handle, n->CommCount, "ncclCommCount");
	LOAD(n->handle, n->CommUserRank, "ncclCommUserRank");
	LOAD(n->handle, n->AllReduce, "ncclAllReduce");
	LOAD(n->handle, n->GetErrorString, "ncclGetErrorString");
	LOAD(n->handle, n->GetLastError, "ncclGetLastError");
	if (n->GetVersion(&n->version) != wl_ncclSuccess)
		n->version = 0;
	return 0;
}

int wl_cuda_open(struct wl_cuda *c, int dev)
{
	memset(c, 0, sizeof(*c));
	c->handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	if (!c->handle) {
		fprintf(stderr, "workload: cannot open libcuda.so.1: %s\n", dlerror());
		return -1;
	}
	LOAD(c->handle, c->Init, "cuInit");
	LOAD(c->handle, c->DeviceGet, "cuDeviceGet");
	LOAD(c->handle, c->DeviceGetCount, "cuDeviceGetCount");
	LOAD(c->handle, c->DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
	LOAD(c->handle, c->CtxSetCurrent, "cuCtxSetCurrent");
	LOAD(c->handle, c->MemAlloc, "cuMemAlloc_v2");
	*(void **)(&c->MemFree) = dlsym(c->handle, "cuMemFree_v2");
	LOAD(c->handle, c->StreamCreate, "cuStreamCreate");
	LOAD(c->handle, c->StreamSynchronize, "cuStreamSynchronize");
	*(void **)(&c->StreamDestroy) = dlsym(c->handle, "cuStreamDestroy_v2");
	*(void **)(&c->GetErrorName) = dlsym(c->handle, "cuGetErrorName");
	int rc, cnt = 0, d;
	void *ctx;
	if ((rc = c->Init(0)) != 0) {
		fprintf(stderr, "workload: cuInit failed: %s\n", wl_cuda_err(c, rc));
		return -1;
	}
	if ((rc = c->DeviceGetCount(&cnt)) != 0 || dev >= cnt) {
		fprintf(stderr, "workload: device %d of %d: %s\n", dev, cnt,
			rc ? wl_cuda_err(c, rc) : "no such device");
		return -1;
	}
	if ((rc = c->DeviceGet(&d, dev)) != 0 || (rc = c->DevicePrimaryCtxRetain(&ctx, d)) != 0 ||
	    (rc = c->CtxSetCurrent(ctx)) != 0) {
		fprintf(stderr, "workload: cannot make device %d current: %s\n", dev, wl_cuda_err(c, rc));
		return -1;
	}
	return 0;
}

const char *wl_cuda_err(const struct wl_cuda *c, int rc)
{
	static __thread char buf[96];
	const char *name = NULL;
	if (!c->GetErrorName || c->GetErrorName(rc, &name) != 0 || !name)
		name = "?";
	snprintf(buf, sizeof(buf), "%s (%d)", name, rc);
	return buf;
}

static int env_int(const char *a, const char *b, int *out)
{
	const char *v = getenv(a);
	if (!v && b)
		v = getenv(b);
	if (!v)
		return -1;
	char *end;
	long x = strtol(v, &end, 10);
	if (end == v || *end || x < 0)
		return -1;
	*out = (int)x;
	return 0;
}

int wl_job_from_env(struct wl_job *j)
{
	if (env_int("RANK", "NCCLRR_RANK", &j->rank) < 0 ||
	    env_int("WORLD_SIZE", "NCCLRR_NRANKS", &j->nranks) < 0) {
		fprintf(stderr, "workload: RANK and WORLD_SIZE must be set (run me under 'ncclrr run')\n");
		return -1;
	}
	if (env_int("LOCAL_RANK", "NCCLRR_LOCAL_RANK", &j->local_rank) < 0)
		j->local_rank = 0;
	if (env_int("LOCAL_WORLD_SIZE", "NCCLRR_LOCAL_SIZE", &j->local_size) < 0)
		j->local_size = j->nranks;
	if (j->rank >= j->nranks || j->local_size <= 0 || j->nranks % j->local_size) {
		fprintf(stderr, "workload: inconsistent RANK=%d WORLD_SIZE=%d LOCAL_WORLD_SIZE=%d\n",
			j->rank, j->nranks, j->local_size);
		return -1;
	}
	return 0;
}

/* Like a framework, rank 0 makes the id (ncclGetUniqueId opens the bootstrap
 * root) and hands it to the others out of band, here through a file in
 * NCCLRR_ID_DIR (ncclrr run sets it). With only NCCL_COMM_ID, every rank
 * races rank 0's root, which NCCL before 2.24 loses now and then
 * (FAKE_CUDA.md, "bootstrap race"); WL_USE_COMM_ID=1 asks for that race. */
int wl_unique_id(const struct wl_nccl *n, const struct wl_job *j, wl_ncclUniqueId *id)
{
	const char *dir = getenv("NCCLRR_ID_DIR");
	const char *race = getenv("WL_USE_COMM_ID");
	if (dir && *dir && !(race && *race == '1') && getenv("NCCL_COMM_ID"))
		unsetenv("NCCL_COMM_ID"); /* before NCCL reads it */
	if (getenv("NCCL_COMM_ID") || !dir) {
		if (!getenv("NCCL_COMM_ID") && j->nranks > 1) {
			fprintf(stderr, "rank %d: neither NCCL_COMM_ID nor NCCLRR_ID_DIR is set: "
				"the ranks cannot share a unique id\n", j->rank);
			return -1;
		}
		return wl_check(n, j->rank, "ncclGetUniqueId", n->GetUniqueId(id), NULL);
	}
	char path[4096], tmp[4200];
	snprintf(path, sizeof(path), "%s/nccl.id", dir);
	if (j->rank == 0) {
		if (wl_check(n, 0, "ncclGetUniqueId", n->GetUniqueId(id), NULL) < 0)
			return -1;
		snprintf(tmp, sizeof(tmp), "%s.tmp", path);
		FILE *f = fopen(tmp, "wb");
		if (!f || fwrite(id, sizeof(*id), 1, f) != 1 || fclose(f) != 0 || rename(tmp, path) < 0) {
			fprintf(stderr, "rank 0: cannot write %s: %s\n", path, strerror(errno));
			return -1;
		}
		return 0;
	}
	for (int tries = 0; tries < 6000; tries++) {
		FILE *f = fopen(path, "rb");
		if (f) {
			size_t got = fread(id, sizeof(*id), 1, f);
			fclose(f);
			if (got == 1)
				return 0;
		}
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	fprintf(stderr, "rank %d: no unique id in %s after 60 s\n", j->rank, path);
	return -1;
}

int wl_check(const struct wl_nccl *n, int rank, const char *what, wl_ncclResult_t rc,
	     wl_ncclComm_t comm)
{
	if (rc == wl_ncclSuccess || rc == wl_ncclInProgress)
		return 0;
	const char *last = n->GetLastError ? n->GetLastError(comm) : NULL;
	fprintf(stderr, "rank %d: %s failed: %s (%d)%s%s\n", rank, what,
		n->GetErrorString ? n->GetErrorString(rc) : "?", rc,
		last && *last ? " - " : "", last && *last ? last : "");
	return -1;
}

int wl_parse_end(const char *word, enum wl_end *end)
{
	if (strcmp(word, "abort") == 0)
		*end = WL_END_ABORT;
	else if (strcmp(word, "destroy") == 0)
		*end = WL_END_DESTROY;
	else
		return -1;
	return 0;
}

int wl_end_comm(const struct wl_nccl *n, int rank, const char *name, wl_ncclComm_t comm, enum wl_end end,
		int nonblocking)
{
	if (end == WL_END_ABORT) {
		if (wl_check(n, rank, "ncclCommAbort", n->CommAbort(comm), NULL) < 0)
			return -1;
		printf("rank %d: %s comm aborted\n", rank, name);
	} else {
		if (wl_check(n, rank, "ncclCommFinalize", n->CommFinalize(comm), comm) < 0)
			return -1;
		if (nonblocking && wl_wait_comm(n, rank, "ncclCommFinalize", comm) < 0)
			return -1;
		if (wl_check(n, rank, "ncclCommDestroy", n->CommDestroy(comm), NULL) < 0)
			return -1;
		printf("rank %d: %s comm destroyed\n", rank, name);
	}
	fflush(stdout);
	return 0;
}

int wl_wait_comm(const struct wl_nccl *n, int rank, const char *what, wl_ncclComm_t comm)
{
	for (;;) {
		wl_ncclResult_t st = wl_ncclInProgress;
		wl_ncclResult_t rc = n->CommGetAsyncError(comm, &st);
		if (wl_check(n, rank, "ncclCommGetAsyncError", rc, comm) < 0)
			return -1;
		if (st != wl_ncclInProgress)
			return wl_check(n, rank, what, st, comm);
		struct timespec ts = { 0, 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
}

void wl_config_nonblocking(const struct wl_nccl *n, wl_ncclConfig_t *cfg)
{
	cfg->size = sizeof(*cfg);
	cfg->magic = WL_NCCL_CONFIG_MAGIC;
	/* the struct matches 2.28; tell an older NCCL its own version so it
	 * reads only the fields it knows */
	cfg->version = n->version > 0 && n->version < 22809 ? (unsigned)n->version : 22809u;
	cfg->blocking = 0;
	cfg->cgaClusterSize = cfg->minCTAs = cfg->maxCTAs = WL_NCCL_CONFIG_UNDEF_INT;
	cfg->netName = NULL;
	cfg->splitShare = cfg->trafficClass = WL_NCCL_CONFIG_UNDEF_INT;
	cfg->commName = NULL;
	cfg->collnetEnable = cfg->CTAPolicy = cfg->shrinkShare = cfg->nvlsCTAs =
		cfg->nChannelsPerNetPeer = cfg->nvlinkCentricSched = WL_NCCL_CONFIG_UNDEF_INT;
}
