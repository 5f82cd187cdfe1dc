/* SPDX-License-Identifier: MIT */
/* tp_dp - the communicators of a tensor x data parallel job: a global one,
 * ncclCommSplit into tensor-parallel groups (one per host, color = host)
 * and data-parallel groups across hosts (color = local rank), an AllReduce
 * on each, then ncclCommAbort of all three (--end destroy: ncclCommFinalize
 * + ncclCommDestroy; see wl_end_comm()).
 * usage: tp_dp [--nonblocking] [--count N] [--end abort|destroy]
 * Needs RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE (ncclrr run sets them). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_loader.h"

static struct wl_nccl nccl;
static struct wl_cuda cuda;
static int nonblocking;

static int allreduce(int r, const char *name, wl_ncclComm_t comm, size_t count,
		     unsigned long long buf, void *stream)
{
	if (wl_check(&nccl, r, "ncclAllReduce",
		     nccl.AllReduce((void *)(uintptr_t)buf, (void *)(uintptr_t)buf, count,
				    wl_ncclFloat32, wl_ncclSum, comm, stream), comm) < 0)
		return -1;
	if (nonblocking && wl_wait_comm(&nccl, r, "ncclAllReduce", comm) < 0)
		return -1;
	int rc = cuda.StreamSynchronize(stream);
	if (rc != 0) {
		fprintf(stderr, "rank %d: cuStreamSynchronize after %s AllReduce: %s\n", r, name,
			wl_cuda_err(&cuda, rc));
		return -1;
	}
	int n = 0, me = 0;
	nccl.CommCount(comm, &n);
	nccl.CommUserRank(comm, &me);
	printf("rank %d: %s allreduce ok (rank %d of %d)\n", r, name, me, n);
	fflush(stdout);
	return 0;
}

static int split(int r, const char *name, wl_ncclComm_t parent, int color, int key,
		 wl_ncclComm_t *out)
{
	wl_ncclConfig_t cfg;
	if (nonblocking)
		wl_config_nonblocking(&nccl, &cfg);
	if (wl_check(&nccl, r, "ncclCommSplit",
		     nccl.CommSplit(parent, color, key, out, nonblocking ? &cfg : NULL), parent) < 0)
		return -1;
	if (nonblocking && wl_wait_comm(&nccl, r, "ncclCommSplit", *out) < 0)
		return -1;
	printf("rank %d: %s split ok (color %d)\n", r, name, color);
	fflush(stdout);
	return 0;
}

static enum wl_end end = WL_END_ABORT;

static int teardown(int r, const char *name, wl_ncclComm_t comm)
{
	return wl_end_comm(&nccl, r, name, comm, end, nonblocking);
}

int main(int argc, char **argv)
{
	size_t count = 1 << 20;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--nonblocking") == 0) {
			nonblocking = 1;
		} else if (strcmp(argv[i], "--count") == 0 && i + 1 < argc) {
			count = strtoull(argv[++i], NULL, 0);
		} else if (strcmp(argv[i], "--end") == 0 && i + 1 < argc && wl_parse_end(argv[i + 1], &end) == 0) {
			i++;
		} else {
			fprintf(stderr, "usage: tp_dp [--nonblocking] [--count N] [--end abort|destroy]\n");
			return 2;
		}
	}
	struct wl_job job;
	if (wl_job_from_env(&job) < 0 || wl_nccl_open(&nccl) < 0 ||
	    wl_cuda_open(&cuda, job.local_rank) < 0)
		return 1;
	int r = job.rank;
	int host = r / job.local_size;
	printf("rank %d: NCCL %d, host %d, device %d, %d hosts x %d ranks, %s init\n", r,
	       nccl.version, host, job.local_rank, job.nranks / job.local_size, job.local_size,
	       nonblocking ? "non-blocking" : "blocking");
	fflush(stdout);

	wl_ncclUniqueId id;
	if (wl_unique_id(&nccl, &job, &id) < 0)
		return 1;
	wl_ncclComm_t world = NULL, tp = NULL, dp = NULL;
	if (nonblocking) {
		wl_ncclConfig_t cfg;
		wl_config_nonblocking(&nccl, &cfg);
		if (wl_check(&nccl, r, "ncclCommInitRankConfig",
			     nccl.CommInitRankConfig(&world, job.nranks, id, r, &cfg), world) < 0 ||
		    wl_wait_comm(&nccl, r, "ncclCommInitRankConfig", world) < 0)
			return 1;
	} else if (wl_check(&nccl, r, "ncclCommInitRank",
			    nccl.CommInitRank(&world, job.nranks, id, r), world) < 0) {
		return 1;
	}
	printf("rank %d: init ok\n", r);
	fflush(stdout);
	if (split(r, "tp", world, host, job.local_rank, &tp) < 0 ||
	    split(r, "dp", world, job.local_rank, host, &dp) < 0)
		return 1;

	unsigned long long buf = 0;
	void *stream = NULL;
	int rc;
	if ((rc = cuda.MemAlloc(&buf, count * sizeof(float))) != 0 ||
	    (rc = cuda.StreamCreate(&stream, 0)) != 0) {
		fprintf(stderr, "rank %d: buffer/stream: %s\n", r, wl_cuda_err(&cuda, rc));
		return 1;
	}
	if (allreduce(r, "global", world, count, buf, stream) < 0 ||
	    allreduce(r, "tp", tp, count, buf, stream) < 0 ||
	    allreduce(r, "dp", dp, count, buf, stream) < 0)
		return 1;
	if (teardown(r, "dp", dp) < 0 || teardown(r, "tp", tp) < 0 ||
	    teardown(r, "global", world) < 0)
		return 1;
	if (cuda.StreamDestroy)
		cuda.StreamDestroy(stream);
	if (cuda.MemFree)
		cuda.MemFree(buf);
	printf("rank %d: done\n", r);
	return 0;
}
