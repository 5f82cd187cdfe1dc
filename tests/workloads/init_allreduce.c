/* SPDX-License-Identifier: MIT */
/* init_allreduce - one communicator over the whole job, one AllReduce
 * (float sum, 1M elements), stream synchronize, then ncclCommAbort
 * (--end destroy: ncclCommFinalize + ncclCommDestroy; see wl_end_comm()).
 * usage: init_allreduce [--nonblocking] [--count N] [--end abort|destroy] [--stall-rank R]
 *                       [--pause SECONDS] [--watch SECONDS]
 * --stall-rank R: rank R sleeps until killed instead of calling the
 * AllReduce (the others wait in theirs: a hang for `ncclrr hang`).
 * --pause SECONDS: sleep that long after init, and again after making the
 * buffers and stream, before the AllReduce: a rank killed at its first
 * buffer allocation then dies after its tracer wrote its init out (a
 * SIGKILL loses the trace's last second), and its peers start their
 * AllReduce only after it is gone.
 * --watch SECONDS: after the stream synchronize, check
 * ncclCommGetAsyncError every 10 ms for that long before ending the
 * communicator, as a training framework's watchdog does: an error NCCL's
 * proxy met meanwhile (a completion error from a dead peer) is printed and
 * the rank exits 1 after ncclCommAbort. Kernels never run on the fake
 * cluster, so this is where the proxy's network errors surface.
 * Rank, world size and device come from RANK, WORLD_SIZE, LOCAL_RANK. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nccl_loader.h"

int main(int argc, char **argv)
{
	int nonblocking = 0;
	enum wl_end end = WL_END_ABORT;
	size_t count = 1 << 20;
	int stall = -1;
	double watch = 0, pause_s = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--nonblocking") == 0) {
			nonblocking = 1;
		} else if (strcmp(argv[i], "--count") == 0 && i + 1 < argc) {
			count = strtoull(argv[++i], NULL, 0);
		} else if (strcmp(argv[i], "--stall-rank") == 0 && i + 1 < argc) {
			stall = atoi(argv[++i]);
		} else if (strcmp(argv[i], "--pause") == 0 && i + 1 < argc) {
			pause_s = atof(argv[++i]);
		} else if (strcmp(argv[i], "--watch") == 0 && i + 1 < argc) {
			watch = atof(argv[++i]);
		} else if (strcmp(argv[i], "--end") == 0 && i + 1 < argc && wl_parse_end(argv[i + 1], &end) == 0) {
			i++;
		} else {
			fprintf(stderr, "usage: init_allreduce [--nonblocking] [--count N] [--end abort|destroy] [--stall-rank R] "
					"[--pause SECONDS] [--watch SECONDS]\n");
			return 2;
		}
	}
	struct wl_job job;
	struct wl_nccl nccl;
	struct wl_cuda cuda;
	if (wl_job_from_env(&job) < 0 || wl_nccl_open(&nccl) < 0 ||
	    wl_cuda_open(&cuda, job.local_rank) < 0)
		return 1;
	int r = job.rank;
	printf("rank %d: NCCL %d from %s, device %d, %s init\n", r, nccl.version, nccl.path,
	       job.local_rank, nonblocking ? "non-blocking" : "blocking");
	fflush(stdout);

	wl_ncclUniqueId id;
	if (wl_unique_id(&nccl, &job, &id) < 0)
		return 1;
	wl_ncclComm_t comm = NULL;
	if (nonblocking) {
		wl_ncclConfig_t cfg;
		wl_config_nonblocking(&nccl, &cfg);
		if (wl_check(&nccl, r, "ncclCommInitRankConfig",
			     nccl.CommInitRankConfig(&comm, job.nranks, id, r, &cfg), comm) < 0 ||
		    wl_wait_comm(&nccl, r, "ncclCommInitRankConfig", comm) < 0)
			return 1;
	} else if (wl_check(&nccl, r, "ncclCommInitRank",
			    nccl.CommInitRank(&comm, job.nranks, id, r), comm) < 0) {
		return 1;
	}
	printf("rank %d: init ok\n", r);
	fflush(stdout);

	unsigned long long sbuf = 0, rbuf = 0;
	void *stream = NULL;
	int rc;
	struct timespec pause_ts = { (time_t)pause_s, (long)((pause_s - (double)(time_t)pause_s) * 1e9) };
	if (pause_s > 0)
		nanosleep(&pause_ts, NULL);
	if ((rc = cuda.MemAlloc(&sbuf, count * sizeof(float))) != 0 ||
	    (rc = cuda.MemAlloc(&rbuf, count * sizeof(float))) != 0 ||
	    (rc = cuda.StreamCreate(&stream, 0)) != 0) {
		fprintf(stderr, "rank %d: buffers/stream: %s\n", r, wl_cuda_err(&cuda, rc));
		return 1;
	}
	if (pause_s > 0)
		nanosleep(&pause_ts, NULL);
	if (r == stall) {
		printf("rank %d: stalls before the AllReduce\n", r);
		fflush(stdout);
		for (;;)
			pause();
	}
	if (wl_check(&nccl, r, "ncclAllReduce",
		     nccl.AllReduce((void *)(uintptr_t)sbuf, (void *)(uintptr_t)rbuf, count,
				    wl_ncclFloat32, wl_ncclSum, comm, stream), comm) < 0)
		return 1;
	if (nonblocking && wl_wait_comm(&nccl, r, "ncclAllReduce", comm) < 0)
		return 1;
	if ((rc = cuda.StreamSynchronize(stream)) != 0) {
		fprintf(stderr, "rank %d: cuStreamSynchronize: %s\n", r, wl_cuda_err(&cuda, rc));
		return 1;
	}
	printf("rank %d: allreduce ok (%zu floats)\n", r, count);
	fflush(stdout);
	for (long t = 0; t < (long)(watch * 100); t++) {
		wl_ncclResult_t st = wl_ncclSuccess;
		if (wl_check(&nccl, r, "ncclCommGetAsyncError", nccl.CommGetAsyncError(comm, &st), comm) < 0)
			return 1;
		if (st != wl_ncclSuccess && st != wl_ncclInProgress) {
			printf("rank %d: asynchronous error after the AllReduce: %d (%s)\n", r, (int)st,
			       nccl.GetErrorString ? nccl.GetErrorString(st) : "?");
			fflush(stdout);
			nccl.CommAbort(comm);
			return 1;
		}
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}

	if (wl_end_comm(&nccl, r, "world", comm, end, nonblocking) < 0)
		return 1;
	if (cuda.StreamDestroy)
		cuda.StreamDestroy(stream);
	if (cuda.MemFree) {
		cuda.MemFree(sbuf);
		cuda.MemFree(rbuf);
	}
	printf("rank %d: done\n", r);
	return 0;
}
