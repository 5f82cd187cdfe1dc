/* SPDX-License-Identifier: MIT */
/*
 * old_nccl - calls ncclCommInitRank of the NCCL it is linked with (the
 * stub of nccl_stub.c in the tests), so that the tracer learns that NCCL's
 * version and writes it, with whether it decodes its proxy RPCs, into the
 * trace's metadata (test_record.sh oldnccl).  Exit 0 when the call
 * returned (it fails: the stub makes no communicator).
 */
#include <stdio.h>
#include <string.h>

typedef struct { char internal[128]; } stub_uid;
int ncclCommInitRank(void **comm, int nranks, stub_uid id, int rank);

int main(void)
{
	stub_uid id;
	void *comm = NULL;
	memset(&id, 0, sizeof(id));
	int r = ncclCommInitRank(&comm, 1, id, 0);
	printf("ncclCommInitRank = %d\n", r);
	return r == 2 ? 0 : 1;
}
