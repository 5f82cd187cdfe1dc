/* SPDX-License-Identifier: MIT */
/*
 * prof_user - a user's profiler plugin speaking ncclProfiler_v4 only, for
 * ncclrr's to forward to (test_profiler.sh plugin).  It asks for Group,
 * Coll and ProxyOp events, hands out its own handles and prints every
 * call, with the parent it was given, so the test sees that only what it
 * asked for reaches it and that parents are its own handles.
 */
#include <stdio.h>
#include <stdlib.h>

#include "nccl_net_types.h"

struct uev { int type; };

static nrr_nccl_result u_init(void **context, int *mask, const char *commName, uint64_t commHash, int nNodes, int nranks,
			      int rank, nrr_nccl_logger logfn)
{
	static int ctx;
	*context = &ctx;
	*mask = NRR_PROF_GROUP | NRR_PROF_COLL | NRR_PROF_PROXY_OP;
	printf("user: init comm=%s rank=%d\n", commName ? commName : "", rank);
	(void)commHash, (void)nNodes, (void)nranks, (void)logfn;
	return NRR_NCCL_SUCCESS;
}

static struct uev *own[64];
static int nown;

static const char *whose(void *p)
{
	if (!p)
		return "none";
	for (int i = 0; i < nown; i++)
		if (own[i] == p)
			return "mine";
	return "foreign";
}

static nrr_nccl_result u_start(void *context, void **eHandle, nrr_prof_descr_v4 *d)
{
	struct uev *e = malloc(sizeof(*e));
	e->type = d->type;
	if (nown < 64)
		own[nown++] = e;
	printf("user: start type=%d parent=%s\n", d->type, whose(d->parentObj));
	*eHandle = e;
	(void)context;
	return NRR_NCCL_SUCCESS;
}

static nrr_nccl_result u_stop(void *eHandle)
{
	printf("user: stop %s type=%d\n", whose(eHandle), eHandle ? ((struct uev *)eHandle)->type : -1);
	return NRR_NCCL_SUCCESS;
}

static nrr_nccl_result u_record(void *eHandle, int state, nrr_prof_state_args_v4 *a)
{
	printf("user: state %d\n", state);
	(void)eHandle, (void)a;
	return NRR_NCCL_SUCCESS;
}

static nrr_nccl_result u_finalize(void *context)
{
	printf("user: finalize\n");
	(void)context;
	return NRR_NCCL_SUCCESS;
}

__attribute__((visibility("default"))) const nrr_ncclProfiler_v4 ncclProfiler_v4 = {
	"user-v4", u_init, u_start, u_stop, u_record, u_finalize,
};
