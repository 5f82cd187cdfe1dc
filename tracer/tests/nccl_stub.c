/* SPDX-License-Identifier: MIT */
/*
 * nccl_stub - a stand-in for libnccl.so.2 of any version, for the tracer's
 * test of NCCL versions whose proxy RPCs it does not decode
 * (test_record.sh oldnccl): ncclGetVersion answers $NCCL_STUB_VERSION
 * (an NCCL_VERSION_CODE, e.g. 21806 for 2.18.6) and ncclCommInitRank
 * fails at once with ncclSystemError (2).  Nothing else of NCCL.
 */
#include <stdlib.h>

typedef struct { char internal[128]; } stub_uid;

int ncclGetVersion(int *version);
int ncclCommInitRank(void **comm, int nranks, stub_uid id, int rank);

int ncclGetVersion(int *version)
{
	const char *v = getenv("NCCL_STUB_VERSION");
	*version = v ? atoi(v) : 21806;
	return 0;
}

int ncclCommInitRank(void **comm, int nranks, stub_uid id, int rank)
{
	(void)nranks, (void)id, (void)rank;
	*comm = NULL;
	return 2;
}
