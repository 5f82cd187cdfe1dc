/* SPDX-License-Identifier: MIT */
/* mpi_allreduce - an MPI program as users write them: MPI_Init, rank 0's
 * ncclGetUniqueId shared with MPI_Bcast, ncclCommInitRank over
 * MPI_COMM_WORLD, one AllReduce, ncclCommAbort, MPI_Finalize.  A failing
 * NCCL call ends the job with MPI_Abort, as most MPI programs do.
 * usage: mpirun -np N [ncclrr run --topo FILE --] mpi_allreduce [--count N]
 * The GPU is LOCAL_RANK when the launcher sets it (ncclrr run's wrapper
 * mode does, from the fake cluster's layout), else the rank among those of
 * MPI_COMM_TYPE_SHARED. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_loader.h"

static void die(int rank, const char *what, int rc, const struct wl_nccl *n, wl_ncclComm_t comm)
{
	fprintf(stderr, "rank %d: %s failed: %s (%d)%s%s\n", rank, what, n->GetErrorString(rc), rc,
		n->GetLastError ? " - " : "", n->GetLastError ? n->GetLastError(comm) : "");
	fflush(stderr);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	size_t count = 1 << 20;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--count") == 0 && i + 1 < argc) {
			count = strtoull(argv[++i], NULL, 0);
		} else {
			fprintf(stderr, "usage: mpi_allreduce [--count N]\n");
			MPI_Finalize();
			return 2;
		}
	}
	int rank, size, local;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	const char *lr = getenv("LOCAL_RANK");
	if (lr && *lr) {
		local = atoi(lr);
	} else {
		MPI_Comm node;
		MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
		MPI_Comm_rank(node, &local);
		MPI_Comm_free(&node);
	}

	struct wl_nccl nccl;
	struct wl_cuda cuda;
	if (wl_nccl_open(&nccl) < 0 || wl_cuda_open(&cuda, local) < 0)
		MPI_Abort(MPI_COMM_WORLD, 1);
	printf("rank %d of %d: NCCL %d, device %d\n", rank, size, nccl.version, local);
	fflush(stdout);

	wl_ncclUniqueId id;
	int rc = 0;
	if (rank == 0 && (rc = nccl.GetUniqueId(&id)) != wl_ncclSuccess)
		die(rank, "ncclGetUniqueId", rc, &nccl, NULL);
	MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
	wl_ncclComm_t comm = NULL;
	if ((rc = nccl.CommInitRank(&comm, size, id, rank)) != wl_ncclSuccess)
		die(rank, "ncclCommInitRank", rc, &nccl, comm);
	printf("rank %d: init ok\n", rank);
	fflush(stdout);

	unsigned long long sbuf = 0, rbuf = 0;
	void *stream = NULL;
	if ((rc = cuda.MemAlloc(&sbuf, count * sizeof(float))) != 0 ||
	    (rc = cuda.MemAlloc(&rbuf, count * sizeof(float))) != 0 ||
	    (rc = cuda.StreamCreate(&stream, 0)) != 0) {
		fprintf(stderr, "rank %d: buffers/stream: %s\n", rank, wl_cuda_err(&cuda, rc));
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	if ((rc = nccl.AllReduce((void *)(uintptr_t)sbuf, (void *)(uintptr_t)rbuf, count, wl_ncclFloat32,
				 wl_ncclSum, comm, stream)) != wl_ncclSuccess)
		die(rank, "ncclAllReduce", rc, &nccl, comm);
	if ((rc = cuda.StreamSynchronize(stream)) != 0) {
		fprintf(stderr, "rank %d: cuStreamSynchronize: %s\n", rank, wl_cuda_err(&cuda, rc));
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	printf("rank %d: allreduce ok (%zu floats)\n", rank, count);
	fflush(stdout);
	MPI_Barrier(MPI_COMM_WORLD);
	/* abort, not destroy: on the fake cluster kernels never run, and after
	 * a collective over NET ncclCommFinalize would wait for them (see
	 * wl_end_comm) */
	nccl.CommAbort(comm);
	cuda.StreamDestroy(stream);
	cuda.MemFree(sbuf);
	cuda.MemFree(rbuf);
	printf("rank %d: done\n", rank);
	MPI_Finalize();
	return 0;
}
