/* SPDX-License-Identifier: MIT */
/*
 * prof_drive - loads the profiler plugin NCCL_PROFILER_PLUGIN names, as
 * NCCL 2.23+ does (dlopen, then ncclProfiler_v6 down to _v4, the newest
 * the plugin exports), and makes one AllReduce's worth of calls: group
 * (and, v5+, GroupApi and CollApi) events, a Coll stopped before the
 * proxy operation that names it as parent starts (as NCCL does), a proxy
 * step with a state change, the stops, finalize.  Prints what it did
 * (tests/integration/test_profiler.sh plugin).
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nccl_net_types.h"

static void logfn(int level, unsigned long flags, const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "nccl-log[%d]: ", level);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	(void)flags, (void)file, (void)line;
}

#define CHECK(x) do { nrr_nccl_result r_ = (x); if (r_) { fprintf(stderr, "prof_drive: %s = %d\n", #x, r_); exit(1); } } while (0)

/* One AllReduce for descriptor type D of table T (v4 has no API events). */
#define DRIVE(T, D, INIT, APIB) do { \
	void *ctx = NULL; \
	int mask = 0; \
	CHECK(INIT); \
	printf("prof_drive: %s mask=0x%x\n", (T)->name, (unsigned)mask); \
	void *gapi = NULL, *capi = NULL, *grp = NULL, *coll = NULL, *op = NULL, *st = NULL; \
	D d; \
	APIB(T); \
	memset(&d, 0, sizeof(d)); d.type = NRR_PROF_GROUP; d.rank = 0; \
	CHECK((T)->startEvent(ctx, &grp, &d)); \
	memset(&d, 0, sizeof(d)); d.type = NRR_PROF_COLL; d.parentObj = grp; d.rank = 0; \
	d.coll.seqNumber = 7; d.coll.func = "AllReduce"; d.coll.count = 1024; d.coll.datatype = "ncclFloat32"; \
	d.coll.nChannels = 2; d.coll.algo = "RING"; d.coll.proto = "SIMPLE"; \
	CHECK((T)->startEvent(ctx, &coll, &d)); \
	CHECK((T)->stopEvent(coll)); \
	memset(&d, 0, sizeof(d)); d.type = NRR_PROF_PROXY_OP; d.parentObj = coll; d.rank = 0; \
	d.proxyOp.pid = getpid(); d.proxyOp.channelId = 1; d.proxyOp.peer = 1; d.proxyOp.nSteps = 2; \
	d.proxyOp.chunkSize = 4096; d.proxyOp.isSend = 1; \
	CHECK((T)->startEvent(ctx, &op, &d)); \
	memset(&d, 0, sizeof(d)); d.type = NRR_PROF_PROXY_STEP; d.parentObj = op; d.rank = 0; d.proxyStep.step = 0; \
	CHECK((T)->startEvent(ctx, &st, &d)); \
	nrr_prof_state_args_v4 a = { .proxyStep = { .transSize = 4096 } }; \
	CHECK((T)->recordEventState(st, 9 /* ProxyStepSendWait */, (void *)&a)); \
	CHECK((T)->stopEvent(st)); \
	CHECK((T)->stopEvent(op)); \
	CHECK((T)->stopEvent(grp)); \
	if (gapi) \
		CHECK((T)->stopEvent(gapi)); \
	CHECK((T)->finalize(ctx)); \
	printf("prof_drive: done\n"); \
} while (0)

/* v5+: ncclGroupStart's GroupApi and the ncclAllReduce call's CollApi */
#define API_EVENTS(T) do { \
	memset(&d, 0, sizeof(d)); d.type = NRR_PROF_GROUP_API; d.rank = 0; d.groupApi.groupDepth = 1; \
	CHECK((T)->startEvent(ctx, &gapi, &d)); \
	memset(&d, 0, sizeof(d)); d.type = NRR_PROF_COLL_API; d.parentObj = gapi; d.rank = 0; \
	d.collApi.func = "AllReduce"; d.collApi.count = 1024; d.collApi.datatype = "ncclFloat32"; \
	CHECK((T)->startEvent(ctx, &capi, &d)); \
	CHECK((T)->stopEvent(capi)); \
} while (0)
#define NO_API(T) (void)(T), (void)capi

int main(void)
{
	const char *path = getenv("NCCL_PROFILER_PLUGIN");
	void *lib = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
	if (!lib) {
		fprintf(stderr, "prof_drive: cannot load NCCL_PROFILER_PLUGIN=%s: %s\n", path ? path : "(unset)", dlerror());
		return 2;
	}
	const nrr_ncclProfiler_v6 *p6 = dlsym(lib, "ncclProfiler_v6");
	const nrr_ncclProfiler_v5 *p5 = dlsym(lib, "ncclProfiler_v5");
	const nrr_ncclProfiler_v4 *p4 = dlsym(lib, "ncclProfiler_v4");
	if (p6) {
		printf("prof_drive: using v6\n");
		DRIVE(p6, nrr_prof_descr_v6, p6->init(&ctx, 0x1234, &mask, "drive", 1, 2, 0, logfn), API_EVENTS);
	} else if (p5) {
		printf("prof_drive: using v5\n");
		DRIVE(p5, nrr_prof_descr_v5, p5->init(&ctx, 0x1234, &mask, "drive", 1, 2, 0, logfn), API_EVENTS);
	} else if (p4) {
		printf("prof_drive: using v4\n");
		DRIVE(p4, nrr_prof_descr_v4, p4->init(&ctx, &mask, "drive", 0x1234, 1, 2, 0, logfn), NO_API);
	} else {
		fprintf(stderr, "prof_drive: %s exports none of ncclProfiler_v4..v6\n", path);
		return 2;
	}
	return 0;
}
