/* SPDX-License-Identifier: MIT */
/*
 * test_fake_cuda.c - the fake CUDA driver and NVML through their ABI (dlopen
 * + dlsym, as a program or the CUDA runtime would): entry-point lookup,
 * devices and bus ids from the topology, contexts, memory that really
 * copies, cuMem VMM export/import and legacy IPC between two processes,
 * dma-buf handles, streams/events, launches, error names, the fault switch,
 * the stats file, and handles the fake never gave out (garbage, stale,
 * freed, of another type), which must be errors and not crashes.
 *
 *   test_fake_cuda FAKE_LIBDIR TOPO_DIR     (the test re-executes itself
 *                                           for the second process)
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

static void *cu, *nv;
static const char *self_exe, *libdir, *topodir;

static void *sym(void *h, const char *name)
{
	void *p = dlsym(h, name);
	CHECK_FATAL(p != NULL, "symbol %s: %s", name, dlerror());
	return p;
}

#define F(type, name) type name = (type)sym(cu, #name)

typedef CUresult (*fn_i)(unsigned);
typedef CUresult (*fn_pi)(int *);
typedef CUresult (*fn_pii)(int *, int);
typedef CUresult (*fn_attr)(int *, int, int);
typedef CUresult (*fn_bus)(char *, int, int);
typedef CUresult (*fn_uuid)(unsigned char *, int);
typedef CUresult (*fn_retain)(void **, int);
typedef CUresult (*fn_p)(void *);
typedef CUresult (*fn_pp)(void **);
typedef CUresult (*fn_alloc)(CUdeviceptr *, size_t);
typedef CUresult (*fn_free)(CUdeviceptr);
typedef CUresult (*fn_htod)(CUdeviceptr, const void *, size_t);
typedef CUresult (*fn_dtoh)(void *, CUdeviceptr, size_t);
typedef CUresult (*fn_d32)(CUdeviceptr, unsigned, size_t);
typedef CUresult (*fn_ptrattr)(void *, int, CUdeviceptr);
typedef CUresult (*fn_range)(CUdeviceptr *, size_t *, CUdeviceptr);
typedef CUresult (*fn_gpa)(const char *, void **, int, unsigned long long, int *);
typedef CUresult (*fn_name)(CUresult, const char **);

static void drv_init(void)
{
	F(fn_i, cuInit);
	F(fn_retain, cuDevicePrimaryCtxRetain);
	F(fn_p, cuCtxSetCurrent);
	void *ctx = NULL;
	CHECK_FATAL(cuInit(0) == 0, "cuInit");
	CHECK_FATAL(cuDevicePrimaryCtxRetain(&ctx, 0) == 0 && ctx, "retain");
	CHECK_FATAL(cuCtxSetCurrent(ctx) == 0, "set current");
}

static void test_proc_address(void)
{
	F(fn_gpa, cuGetProcAddress_v2);
	void *p = NULL;
	int st = -1;
	CHECK(cuGetProcAddress_v2("cuMemAlloc", &p, 3020, 0, &st) == 0 && st == 0, "cuMemAlloc@3020");
	CHECK(p == sym(cu, "cuMemAlloc_v2"), "cuMemAlloc@3020 is cuMemAlloc_v2");
	CHECK(cuGetProcAddress_v2("cuGetProcAddress", &p, 11030, 0, &st) == 0 && p == sym(cu, "cuGetProcAddress"),
	      "cuGetProcAddress@11030 is the 4-argument form");
	CHECK(cuGetProcAddress_v2("cuGetProcAddress", &p, 13000, 0, &st) == 0 && p == sym(cu, "cuGetProcAddress_v2"),
	      "cuGetProcAddress@13000 is _v2");
	CHECK(cuGetProcAddress_v2("cuCtxCreate", &p, 11040, 0, &st) == 0 && p == sym(cu, "cuCtxCreate_v3"),
	      "cuCtxCreate@11040 is _v3");
	CHECK(cuGetProcAddress_v2("cuCtxCreate", &p, 13000, 2, &st) == 0 && p == sym(cu, "cuCtxCreate_v4"),
	      "cuCtxCreate@13000 is _v4");
	CHECK(cuGetProcAddress_v2("cuCtxGetDevice", &p, 12080, 0, &st) == 0 && p == sym(cu, "cuCtxGetDevice"),
	      "cuCtxGetDevice@12080 is the 1-argument form");
	CHECK(cuGetProcAddress_v2("cuStreamGetCaptureInfo", &p, 12030, 0, &st) == 0 &&
	      p == sym(cu, "cuStreamGetCaptureInfo_v3"), "capture info v3");
	CHECK(cuGetProcAddress_v2("cuNoSuchThing", &p, 13000, 0, &st) == 500 && st == 1 && p == NULL, "missing: %d", st);
	CHECK(cuGetProcAddress_v2("cuMemCreate", &p, 9000, 0, &st) == 500 && st == 2, "too old: %d", st);
	p = &p;
	CHECK(cuGetProcAddress_v2("", &p, 0, 0, &st) == 0 && st == 0 && p == NULL, "empty probe: %d", st);
	int v = 0;
	F(fn_pi, cuDriverGetVersion);
	CHECK(cuDriverGetVersion(&v) == 0 && v >= 13000, "driver version %d", v);
}

static void test_errors(void)
{
	F(fn_name, cuGetErrorName);
	F(fn_name, cuGetErrorString);
	const char *s = NULL;
	CHECK(cuGetErrorName(500, &s) == 0 && strcmp(s, "CUDA_ERROR_NOT_FOUND") == 0, "name 500");
	CHECK(cuGetErrorString(500, &s) == 0 && strcmp(s, "named symbol not found") == 0, "string 500");
	CHECK(cuGetErrorName(1, &s) == 0 && strcmp(s, "CUDA_ERROR_INVALID_VALUE") == 0, "name 1");
	CHECK(cuGetErrorName(801, &s) == 0 && strcmp(s, "CUDA_ERROR_NOT_SUPPORTED") == 0, "name 801");
	CHECK(cuGetErrorName(12345, &s) == 1 && s == NULL, "unknown code");
}

/* devices of the default topology (8 GPUs, domain 0) */
static void test_devices(int expect_domain)
{
	F(fn_pi, cuDeviceGetCount);
	F(fn_attr, cuDeviceGetAttribute);
	F(fn_bus, cuDeviceGetPCIBusId);
	F(fn_uuid, cuDeviceGetUuid_v2);
	int n = 0;
	CHECK(cuDeviceGetCount(&n) == 0 && n == 8, "count %d", n);
	unsigned char u0[16], u1[16];
	CHECK(cuDeviceGetUuid_v2(u0, 0) == 0 && cuDeviceGetUuid_v2(u1, 1) == 0 && memcmp(u0, u1, 16), "uuids");
	static const int buses[8] = { 0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb };
	for (int d = 0; d < n; d++) {
		char b[32], want[32];
		snprintf(want, sizeof(want), "%08X:%02X:00.0", expect_domain, buses[d]);
		CHECK(cuDeviceGetPCIBusId(b, sizeof(b), d) == 0 && strcmp(b, want) == 0, "busid %s want %s", b, want);
		int dom = -1, bus = -1, dv = -1, ma = 0, mi = -1;
		cuDeviceGetAttribute(&dom, 50, d);
		cuDeviceGetAttribute(&bus, 33, d);
		cuDeviceGetAttribute(&dv, 34, d);
		cuDeviceGetAttribute(&ma, 75, d);
		cuDeviceGetAttribute(&mi, 76, d);
		CHECK(dom == expect_domain && bus == buses[d] && dv == 0, "attrs 50/33/34: %d %d %d", dom, bus, dv);
		CHECK(ma == 9 && mi == 0, "cc %d.%d", ma, mi);
	}
	int v;
	CHECK(cuDeviceGetAttribute(&v, 102, 0) == 0 && v == 1, "VMM supported");
	CHECK(cuDeviceGetAttribute(&v, 132, 0) == 0 && v == 0, "multicast not supported");
	CHECK(cuDeviceGetAttribute(&v, 9999, 0) == 1, "unknown attribute");
	CHECK(cuDeviceGetAttribute(&v, 16, 8) == 101, "invalid device");
}

static void test_memory(void)
{
	F(fn_alloc, cuMemAlloc_v2);
	F(fn_free, cuMemFree_v2);
	F(fn_htod, cuMemcpyHtoD_v2);
	F(fn_dtoh, cuMemcpyDtoH_v2);
	F(fn_d32, cuMemsetD32_v2);
	F(fn_ptrattr, cuPointerGetAttribute);
	F(fn_range, cuMemGetAddressRange_v2);
	CUdeviceptr d = 0;
	CHECK(cuMemAlloc_v2(&d, 10000) == 0 && d, "alloc");
	CHECK(cuMemsetD32_v2(d, 0xdeadbeef, 2500) == 0, "memset");
	uint32_t buf[2500];
	CHECK(cuMemcpyDtoH_v2(buf, d, sizeof(buf)) == 0 && buf[0] == 0xdeadbeef && buf[2499] == 0xdeadbeef, "memset copied");
	for (int i = 0; i < 2500; i++)
		buf[i] = (uint32_t)i;
	CHECK(cuMemcpyHtoD_v2(d, buf, sizeof(buf)) == 0, "htod");
	CHECK(((uint32_t *)(uintptr_t)d)[1234] == 1234, "device memory is host memory");
	unsigned mt = 0;
	int ord = -1;
	CHECK(cuPointerGetAttribute(&mt, 2, d + 100) == 0 && mt == 2, "memory type device: %u", mt);
	CHECK(cuPointerGetAttribute(&ord, 9, d) == 0 && ord == 0, "device ordinal %d", ord);
	CUdeviceptr base = 0;
	size_t size = 0;
	CHECK(cuMemGetAddressRange_v2(&base, &size, d + 5000) == 0 && base == d && size == 10000, "range");
	int local = 0;
	CHECK(cuPointerGetAttribute(&mt, 2, (CUdeviceptr)(uintptr_t)&local) == 1, "unknown pointer");
	/* out of bounds, as a driver answers it: CUDA_ERROR_INVALID_VALUE, and
	 * nothing written (a trace's cuMemsetD32 at 0x800 into 2 MiB with N =
	 * 524288 made the replay worker SEGV) */
	CUdeviceptr big = 0;
	CHECK(cuMemAlloc_v2(&big, 2 << 20) == 0 && big, "alloc 2 MiB");
	CHECK(cuMemsetD32_v2(big + 0x800, 1, 524288) == 1, "memset past the end");
	CHECK(cuMemsetD32_v2(big, 7, 524288) == 0, "memset of the whole");
	CHECK(cuMemsetD32_v2(big + 4, 7, SIZE_MAX / 2) == 1, "memset of an overflowing count");
	CHECK(cuMemcpyHtoD_v2(d + 9000, buf, sizeof(buf)) == 1, "htod past the end");
	CHECK(cuMemcpyDtoH_v2(buf, d + 9999, 2) == 1, "dtoh past the end");
	CHECK(cuMemcpyDtoH_v2(buf, d + 9998, 2) == 0, "dtoh of the last bytes");
	CHECK(cuMemcpyHtoD_v2((CUdeviceptr)(uintptr_t)buf, buf, 8) == 1, "htod to a host pointer");
	CHECK(cuMemsetD32_v2((CUdeviceptr)0x1000, 0, 4) == 1, "memset of no allocation");
	CUresult (*cuMemcpy)(CUdeviceptr, CUdeviceptr, size_t) = sym(cu, "cuMemcpy");
	CHECK(cuMemcpy((CUdeviceptr)(uintptr_t)buf, d, 16) == 0, "unified copy to host memory");
	CHECK(cuMemcpy(big + (2 << 20) - 8, d, 16) == 1, "unified copy past the end");
	CHECK(cuMemFree_v2(big) == 0, "free 2 MiB");
	CHECK(cuMemFree_v2(d) == 0, "free");
	CHECK(cuMemFree_v2(d) == 1, "double free");

	void *h = NULL;
	CUdeviceptr hd = 0;
	CUresult (*cuMemHostAlloc)(void **, size_t, unsigned) = sym(cu, "cuMemHostAlloc");
	CUresult (*cuMemHostGetDevicePointer_v2)(CUdeviceptr *, void *, unsigned) = sym(cu, "cuMemHostGetDevicePointer_v2");
	CHECK(cuMemHostAlloc(&h, 4096, 2) == 0 && h, "host alloc");
	CHECK(cuMemHostGetDevicePointer_v2(&hd, h, 0) == 0 && hd == (CUdeviceptr)(uintptr_t)h, "host dev ptr");
	CHECK(cuPointerGetAttribute(&mt, 2, hd) == 0 && mt == 1, "memory type host");
}

/* stream-ordered pools, as NCCL 2.23+ makes one per communicator */
static void test_pools(void)
{
	CUresult (*cuMemPoolCreate)(void **, const void *) = sym(cu, "cuMemPoolCreate");
	CUresult (*cuMemPoolDestroy)(void *) = sym(cu, "cuMemPoolDestroy");
	CUresult (*cuMemPoolSetAttribute)(void *, int, void *) = sym(cu, "cuMemPoolSetAttribute");
	CUresult (*cuMemPoolGetAttribute)(void *, int, void *) = sym(cu, "cuMemPoolGetAttribute");
	CUresult (*cuMemAllocFromPoolAsync)(CUdeviceptr *, size_t, void *, void *) = sym(cu, "cuMemAllocFromPoolAsync");
	CUresult (*cuMemAllocAsync)(CUdeviceptr *, size_t, void *) = sym(cu, "cuMemAllocAsync");
	CUresult (*cuMemFreeAsync)(CUdeviceptr, void *) = sym(cu, "cuMemFreeAsync");
	CUresult (*cuDeviceGetDefaultMemPool)(void **, int) = sym(cu, "cuDeviceGetDefaultMemPool");
	struct {
		int alloc_type, handle_types, loc_type, loc_id;
		void *win32;
		size_t max_size;
		unsigned short usage;
		unsigned char reserved[54];
	} props = { .alloc_type = 1, .loc_type = 1, .loc_id = 0 };
	void *pool = NULL, *dflt = NULL;
	CHECK(cuMemPoolCreate(&pool, &props) == 0 && pool, "pool create");
	uint64_t v = ~(uint64_t)0, got = 0;
	CHECK(cuMemPoolSetAttribute(pool, 4, &v) == 0, "release threshold");
	CHECK(cuMemPoolGetAttribute(pool, 4, &got) == 0 && got == v, "release threshold read back");
	CUdeviceptr d = 0;
	CHECK(cuMemAllocFromPoolAsync(&d, 5000, pool, NULL) == 0 && d, "alloc from pool");
	CHECK(cuMemPoolGetAttribute(pool, 7, &got) == 0 && got == 5000, "used bytes %llu", (unsigned long long)got);
	((char *)(uintptr_t)d)[4999] = 1;
	CHECK(cuMemFreeAsync(d, NULL) == 0, "free to pool");
	CHECK(cuMemPoolGetAttribute(pool, 7, &got) == 0 && got == 0, "used bytes after free");
	CHECK(cuMemPoolGetAttribute(pool, 8, &got) == 0 && got == 5000, "high-water mark");
	CHECK(cuMemPoolSetAttribute(pool, 7, &v) == 1, "used bytes are read-only");
	CHECK(cuMemAllocFromPoolAsync(&d, 64, pool, (void *)0x1234) == 400, "bad stream");
	CHECK(cuMemAllocFromPoolAsync(&d, 64, (void *)&props, NULL) == 1, "not a pool");
	CHECK(cuMemAllocFromPoolAsync(&d, 4096, pool, NULL) == 0, "alloc before destroy");
	CHECK(cuMemPoolDestroy(pool) == 0, "destroy with a live allocation");
	CHECK(cuMemFreeAsync(d, NULL) == 0, "the allocation outlives its pool");
	CHECK(cuMemPoolDestroy(pool) == 1, "double destroy");
	props.loc_id = 99;
	CHECK(cuMemPoolCreate(&pool, &props) == 101, "pool on no device");
	props.loc_id = 0;
	props.alloc_type = 0;
	CHECK(cuMemPoolCreate(&pool, &props) == 1, "invalid allocation type");
	CHECK(cuDeviceGetDefaultMemPool(&dflt, 0) == 0 && dflt, "default pool");
	CHECK(cuMemPoolDestroy(dflt) == 1, "the default pool cannot be destroyed");
	CHECK(cuMemAllocAsync(&d, 100, NULL) == 0, "async alloc");
	CHECK(cuMemPoolGetAttribute(dflt, 7, &got) == 0 && got == 100, "async alloc from the default pool");
	CHECK(cuMemFreeAsync(d, NULL) == 0, "async free");
}

static void test_streams(void)
{
	CUresult (*cuStreamCreate)(void **, unsigned) = sym(cu, "cuStreamCreate");
	CUresult (*cuEventCreate)(void **, unsigned) = sym(cu, "cuEventCreate");
	CUresult (*cuEventRecord)(void *, void *) = sym(cu, "cuEventRecord");
	CUresult (*cuEventQuery)(void *) = sym(cu, "cuEventQuery");
	CUresult (*cuEventElapsedTime)(float *, void *, void *) = sym(cu, "cuEventElapsedTime");
	CUresult (*cuStreamSynchronize)(void *) = sym(cu, "cuStreamSynchronize");
	CUresult (*cuStreamQuery)(void *) = sym(cu, "cuStreamQuery");
	void *s = NULL, *e1 = NULL, *e2 = NULL;
	CHECK(cuStreamCreate(&s, 1) == 0 && s, "stream");
	CHECK(cuEventCreate(&e1, 0) == 0 && cuEventCreate(&e2, 0) == 0, "events");
	CHECK(cuEventRecord(e1, s) == 0 && cuEventRecord(e2, s) == 0, "record");
	CHECK(cuEventQuery(e2) == 0 && cuStreamQuery(s) == 0 && cuStreamSynchronize(s) == 0, "complete at once");
	float ms = -1;
	CHECK(cuEventElapsedTime(&ms, e1, e2) == 0 && ms >= 0, "elapsed %f", ms);

	CUresult (*cuModuleLoadData)(void **, const void *) = sym(cu, "cuModuleLoadData");
	CUresult (*cuModuleGetFunction)(void **, void *, const char *) = sym(cu, "cuModuleGetFunction");
	CUresult (*cuLaunchKernel)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
				   void **, void **) = sym(cu, "cuLaunchKernel");
	static const char image[] = "not a real fatbin";
	void *m = NULL, *f = NULL, *f2 = NULL;
	CHECK(cuModuleLoadData(&m, image) == 0 && m, "module");
	CHECK(cuModuleGetFunction(&f, m, "kern") == 0 && cuModuleGetFunction(&f2, m, "kern") == 0 && f == f2, "function");
	CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL) == 0, "launch (not executed)");
	CUresult (*cuEventDestroy)(void *) = sym(cu, "cuEventDestroy_v2");
	CUresult (*cuStreamDestroy)(void *) = sym(cu, "cuStreamDestroy_v2");
	CUresult (*cuModuleUnload)(void *) = sym(cu, "cuModuleUnload");
	CHECK(cuEventDestroy(e1) == 0 && cuEventDestroy(e2) == 0 && cuStreamDestroy(s) == 0 && cuModuleUnload(m) == 0,
	      "destroyed");
}

/* ---- two processes -------------------------------------------------------- */
static int run_child(const char *mode, const char *arg, char *out, size_t outlen, char **env_extra)
{
	int p[2];
	CHECK_FATAL(pipe(p) == 0, "pipe");
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[0]);
		for (char **e = env_extra; e && *e; e++)
			putenv(*e);
		execl(self_exe, self_exe, libdir, topodir, mode, arg, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	size_t n = 0;
	ssize_t r;
	while (n + 1 < outlen && (r = read(p[0], out + n, outlen - 1 - n)) > 0)
		n += (size_t)r;
	out[n] = 0;
	close(p[0]);
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

typedef struct {
	int type, handletypes;
	struct {
		int type, id;
	} loc;
	void *win32;
	unsigned char flags[8];
} Prop;

typedef struct {
	struct {
		int type, id;
	} loc;
	int flags;
} Access;

static void test_vmm_and_ipc(void)
{
	CUresult (*cuMemCreate)(unsigned long long *, size_t, const Prop *, unsigned long long) = sym(cu, "cuMemCreate");
	CUresult (*cuMemGetAllocationGranularity)(size_t *, const Prop *, int) = sym(cu, "cuMemGetAllocationGranularity");
	CUresult (*cuMemAddressReserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long) =
		sym(cu, "cuMemAddressReserve");
	CUresult (*cuMemMap)(CUdeviceptr, size_t, size_t, unsigned long long, unsigned long long) = sym(cu, "cuMemMap");
	CUresult (*cuMemSetAccess)(CUdeviceptr, size_t, const Access *, size_t) = sym(cu, "cuMemSetAccess");
	CUresult (*cuMemExportToShareableHandle)(void *, unsigned long long, int, unsigned long long) =
		sym(cu, "cuMemExportToShareableHandle");
	CUresult (*cuMemGetHandleForAddressRange)(void *, CUdeviceptr, size_t, int, unsigned long long) =
		sym(cu, "cuMemGetHandleForAddressRange");
	CUresult (*cuMemRetainAllocationHandle)(unsigned long long *, void *) = sym(cu, "cuMemRetainAllocationHandle");
	CUresult (*cuMemRelease)(unsigned long long) = sym(cu, "cuMemRelease");
	CUresult (*cuMemUnmap)(CUdeviceptr, size_t) = sym(cu, "cuMemUnmap");
	CUresult (*cuMemAddressFree)(CUdeviceptr, size_t) = sym(cu, "cuMemAddressFree");
	Prop prop;
	memset(&prop, 0, sizeof(prop));
	prop.type = 1;
	prop.handletypes = 1;
	prop.loc.type = 1;
	prop.loc.id = 0;
	size_t g = 0;
	CHECK(cuMemGetAllocationGranularity(&g, &prop, 0) == 0 && g == 2u << 20, "granularity %zu", g);
	unsigned long long h = 0;
	CUdeviceptr va = 0;
	CHECK(cuMemCreate(&h, g, &prop, 0) == 0 && h, "create");
	CHECK(cuMemAddressReserve(&va, g, g, 0, 0) == 0 && va % g == 0, "reserve");
	CHECK(cuMemMap(va, g, 0, h, 0) == 0, "map");
	Access acc = { { 1, 0 }, 3 };
	CHECK(cuMemSetAccess(va, g, &acc, 1) == 0, "access");
	strcpy((char *)(uintptr_t)va, "written by the exporter");
	int fd = -1;
	CHECK(cuMemExportToShareableHandle(&fd, h, 1, 0) == 0 && fd >= 0, "export");
	fcntl(fd, F_SETFD, 0); /* the child inherits it; NCCL passes it over a UNIX socket */
	char arg[64], out[4096];
	snprintf(arg, sizeof(arg), "%d", fd);
	int rc = run_child("vmm-import", arg, out, sizeof(out), NULL);
	CHECK(rc == 0, "vmm child: %d %s", rc, out);
	CHECK(strcmp((char *)(uintptr_t)va, "written by the importer") == 0, "importer's bytes: %s", (char *)(uintptr_t)va);
	close(fd);

	int dfd = -1;
	CHECK(cuMemGetHandleForAddressRange(&dfd, va, g, 1, 0) == 0 && dfd >= 0, "dma-buf fd");
	char *m = mmap(NULL, g, PROT_READ, MAP_SHARED, dfd, 0);
	CHECK(m != MAP_FAILED && strcmp(m, "written by the importer") == 0, "dma-buf maps the same bytes");
	if (m != MAP_FAILED)
		munmap(m, g);
	close(dfd);

	unsigned long long h2 = 0;
	CHECK(cuMemRetainAllocationHandle(&h2, (void *)(uintptr_t)va) == 0 && h2 == h, "retain");
	CHECK(cuMemRelease(h2) == 0, "release retained");
	CHECK(cuMemUnmap(va, g) == 0, "unmap");
	CHECK(cuMemRelease(h) == 0, "release");
	CHECK(cuMemAddressFree(va, g) == 0, "address free");

	/* legacy IPC */
	F(fn_alloc, cuMemAlloc_v2);
	CUresult (*cuIpcGetMemHandle)(unsigned char *, CUdeviceptr) = sym(cu, "cuIpcGetMemHandle");
	CUdeviceptr d = 0;
	CHECK(cuMemAlloc_v2(&d, 1 << 16) == 0, "alloc for IPC");
	strcpy((char *)(uintptr_t)d, "legacy ipc");
	unsigned char ih[64];
	CHECK(cuIpcGetMemHandle(ih, d) == 0, "ipc handle");
	char hex[129];
	for (int i = 0; i < 64; i++)
		snprintf(hex + 2 * i, 3, "%02x", ih[i]);
	rc = run_child("ipc-open", hex, out, sizeof(out), NULL);
	CHECK(rc == 0, "ipc child: %d %s", rc, out);
	CHECK(strcmp((char *)(uintptr_t)d, "legacy ipc: seen") == 0, "ipc bytes: %s", (char *)(uintptr_t)d);
}

static int child_vmm_import(int fd)
{
	drv_init();
	CUresult (*cuMemImportFromShareableHandle)(unsigned long long *, void *, int) =
		sym(cu, "cuMemImportFromShareableHandle");
	CUresult (*cuMemAddressReserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long) =
		sym(cu, "cuMemAddressReserve");
	CUresult (*cuMemMap)(CUdeviceptr, size_t, size_t, unsigned long long, unsigned long long) = sym(cu, "cuMemMap");
	unsigned long long h = 0;
	CUdeviceptr va = 0;
	size_t g = 2u << 20;
	CHECK_FATAL(cuMemImportFromShareableHandle(&h, (void *)(intptr_t)fd, 1) == 0, "import");
	CHECK_FATAL(cuMemAddressReserve(&va, g, 0, 0, 0) == 0 && cuMemMap(va, g, 0, h, 0) == 0, "map imported");
	CHECK_FATAL(strcmp((char *)(uintptr_t)va, "written by the exporter") == 0, "exporter's bytes: %s",
		    (char *)(uintptr_t)va);
	strcpy((char *)(uintptr_t)va, "written by the importer");
	return 0;
}

typedef struct {
	unsigned char b[64];
} IpcHandle; /* passed by value, as CUipcMemHandle */

static int child_ipc_open(const char *hex)
{
	drv_init();
	CUresult (*cuIpcOpenMemHandle_v2)(CUdeviceptr *, IpcHandle, unsigned) = sym(cu, "cuIpcOpenMemHandle_v2");
	CUresult (*cuIpcCloseMemHandle)(CUdeviceptr) = sym(cu, "cuIpcCloseMemHandle");
	IpcHandle h;
	for (int i = 0; i < 64; i++) {
		unsigned v;
		sscanf(hex + 2 * i, "%2x", &v);
		h.b[i] = (unsigned char)v;
	}
	CUdeviceptr p = 0;
	CHECK_FATAL(cuIpcOpenMemHandle_v2(&p, h, 1) == 0 && p, "open");
	CHECK_FATAL(strcmp((char *)(uintptr_t)p, "legacy ipc") == 0, "bytes: %s", (char *)(uintptr_t)p);
	strcat((char *)(uintptr_t)p, ": seen");
	CHECK_FATAL(cuIpcCloseMemHandle(p) == 0, "close");
	return 0;
}

static int child_fault(void)
{
	drv_init();
	F(fn_alloc, cuMemAlloc_v2);
	CUdeviceptr d;
	int a = cuMemAlloc_v2(&d, 64), b = cuMemAlloc_v2(&d, 64), c = cuMemAlloc_v2(&d, 64);
	printf("results %d %d %d\n", a, b, c);
	return 0;
}

/* SIGKILL_AFTER on the first cuMemAlloc: it returns, and the next call
 * into a fake library, NVML's here (another library's copy of the fault
 * switch), kills */
static int child_fault_after(void)
{
	drv_init();
	F(fn_alloc, cuMemAlloc_v2);
	CUdeviceptr d;
	printf("alloc %d\n", cuMemAlloc_v2(&d, 64));
	fflush(stdout);
	int (*nvmlInit_v2)(void) = sym(nv, "nvmlInit_v2");
	printf("nvml %d\n", nvmlInit_v2());
	return 0;
}

static int child_host1(void)
{
	drv_init();
	test_devices(1);
	return check_failures ? 1 : 0;
}

static void test_children(void)
{
	char out[8192];
	char e1[] = "NCCLRR_FAULT=cuMemAlloc:rank=3:nth=2:CUDA_ERROR_OUT_OF_MEMORY";
	char e2[] = "NCCLRR_RANK=3";
	char stats[256];
	snprintf(stats, sizeof(stats), "NCCLRR_FAKE_STATS=/tmp/test_fake_cuda.%d.stats", (int)getpid());
	char *env[] = { e1, e2, stats, NULL };
	int rc = run_child("fault", "", out, sizeof(out), env);
	CHECK(rc == 0 && strstr(out, "results 0 2 0"), "fault: %s", out);
	CHECK(strstr(out, "ncclrr-fake: injecting CUDA_ERROR_OUT_OF_MEMORY into cuMemAlloc (rank 3, call 2)\n"),
	      "fault message: %s", out);
	FILE *f = fopen(stats + strlen("NCCLRR_FAKE_STATS="), "r");
	char line[256];
	int seen = 0;
	while (f && fgets(line, sizeof(line), f))
		seen |= strcmp(line, "cuMemAlloc 3\n") == 0;
	if (f)
		fclose(f);
	CHECK(seen, "stats file has 'cuMemAlloc 3'");
	unlink(stats + strlen("NCCLRR_FAKE_STATS="));

	char e3[] = "NCCLRR_RANK=2"; /* other rank: no fault */
	char *env2[] = { e1, e3, NULL };
	rc = run_child("fault", "", out, sizeof(out), env2);
	CHECK(rc == 0 && strstr(out, "results 0 0 0") && !strstr(out, "injecting"), "other rank: %s", out);

	char e4[] = "NCCLRR_FAULT=cuMemAlloc:rank=x:nth=1:CUDA_ERROR_INVALID_VALUE;cuMemAlloc:nth=3:CUDA_ERROR_BOGUS";
	char *env3[] = { e4, e2, NULL };
	rc = run_child("fault", "", out, sizeof(out), env3);
	CHECK(rc == 0 && strstr(out, "results 0 0 0"), "bad rules ignored: %s", out);
	CHECK(strstr(out, "bad token 'rank=x'") && strstr(out, "bad token 'CUDA_ERROR_BOGUS'"), "bad token messages: %s", out);

	/* a SIGKILL rule on the call an injection rule also takes: the kill
	 * wins (a rerun kills a rank at a call whose recorded answer is a rule) */
	char e5[] = "NCCLRR_FAULT=cuMemAlloc:rank=*:nth=2:CUDA_ERROR_OUT_OF_MEMORY;cuMemAlloc:rank=3:nth=2:SIGKILL";
	char *env6[] = { e5, e2, NULL };
	rc = run_child("fault", "", out, sizeof(out), env6);
	CHECK(rc == 128 && strstr(out, "injecting SIGKILL into cuMemAlloc (rank 3, call 2)") && !strstr(out, "results"),
	      "the SIGKILL rule wins over the injection at the same call: exit %d: %s", rc, out);

	/* SIGKILL_AFTER: the call runs, the next one (in another library) kills */
	char e7[] = "NCCLRR_FAULT=cuMemAlloc:rank=3:nth=1:SIGKILL_AFTER";
	char dir[] = "NCCLRR_ID_DIR=/tmp";
	char *env7[] = { e7, e2, dir, NULL };
	rc = run_child("fault-after", "", out, sizeof(out), env7);
	CHECK(rc == 128 && strstr(out, "alloc 0\n") && !strstr(out, "nvml ") &&
		      strstr(out, "ncclrr-fake: injecting SIGKILL into nvmlInit (rank 3, the call after a SIGKILL_AFTER rule's)"),
	      "SIGKILL_AFTER kills at the next call, in NVML: exit %d: %s", rc, out);
	/* on a call an injection also takes: the call gets the error, the next kills */
	char e9[] = "NCCLRR_FAULT=cuMemAlloc:rank=3:nth=1:SIGKILL_AFTER;cuMemAlloc:rank=3:nth=1:CUDA_ERROR_OUT_OF_MEMORY";
	char *env9[] = { e9, e2, dir, NULL };
	rc = run_child("fault-after", "", out, sizeof(out), env9);
	CHECK(rc == 128 && strstr(out, "alloc 2\n") && !strstr(out, "nvml ") && strstr(out, "into nvmlInit (rank 3, the call after"),
	      "SIGKILL_AFTER with an injection on the same call: exit %d: %s", rc, out);
	char e8[] = "NCCLRR_RANK=2";   /* another rank: no kill */
	char *env8[] = { e7, e8, dir, NULL };
	rc = run_child("fault-after", "", out, sizeof(out), env8);
	CHECK(rc == 0 && strstr(out, "alloc 0\nnvml 0\n"), "SIGKILL_AFTER of rank 3 on rank 2: exit %d: %s", rc, out);

	char topo[512], host[] = "NCCLRR_HOST=1";
	snprintf(topo, sizeof(topo), "NCCLRR_TOPO=%s/2node_16gpu.xml", topodir);
	char *env4[] = { topo, host, NULL };
	rc = run_child("host1", "", out, sizeof(out), env4);
	CHECK(rc == 0, "host 1 of 2node_16gpu: %s", out);

	char bad[] = "NCCLRR_TOPO=/nonexistent.xml";
	char *env5[] = { bad, NULL };
	rc = run_child("host1", "", out, sizeof(out), env5);
	CHECK(rc != 0 && strstr(out, "/nonexistent.xml: cannot open"), "bad topology reported: %s", out);
}

static void test_nvml(void)
{
	int (*nvmlInit_v2)(void) = sym(nv, "nvmlInit_v2");
	int (*nvmlDeviceGetCount_v2)(unsigned *) = sym(nv, "nvmlDeviceGetCount_v2");
	int (*byBus)(const char *, void **) = sym(nv, "nvmlDeviceGetHandleByPciBusId_v2");
	int (*byIndex)(unsigned, void **) = sym(nv, "nvmlDeviceGetHandleByIndex_v2");
	int (*getIndex)(void *, unsigned *) = sym(nv, "nvmlDeviceGetIndex");
	int (*linkState)(void *, unsigned, int *) = sym(nv, "nvmlDeviceGetNvLinkState");
	int (*remote)(void *, unsigned, char *) = sym(nv, "nvmlDeviceGetNvLinkRemotePciInfo");
	int (*p2p)(void *, void *, int, int *) = sym(nv, "nvmlDeviceGetP2PStatus");
	int (*cc)(void *, int *, int *) = sym(nv, "nvmlDeviceGetCudaComputeCapability");
	const char *(*errstr)(int) = sym(nv, "nvmlErrorString");
	unsigned n = 0, idx = 99;
	CHECK(nvmlInit_v2() == 0 && nvmlDeviceGetCount_v2(&n) == 0 && n == 8, "nvml count %u", n);
	void *d = NULL, *d0 = NULL, *d1 = NULL;
	CHECK(byBus("00000000:5D:00.0", &d) == 0 && getIndex(d, &idx) == 0 && idx == 3, "by bus id: %u", idx);
	CHECK(byBus("0000:77:00.0", &d) == 6, "unknown bus id");
	CHECK(byIndex(0, &d0) == 0 && byIndex(1, &d1) == 0, "by index");
	int act = 0, st = -1, ma = 0, mi = 0;
	CHECK(linkState(d0, 0, &act) == 0 && act == 1, "link 0 active");
	CHECK(linkState(d0, 17, &act) == 0 && act == 1, "link 17 active");
	char pci[64];
	memset(pci, 0, sizeof(pci));
	CHECK(remote(d0, 5, pci) == 0 && strcmp(pci, "0000:ff:00.0") == 0, "remote %s", pci);
	CHECK(p2p(d0, d1, 0, &st) == 0 && st == 0, "p2p read ok");
	CHECK(cc(d0, &ma, &mi) == 0 && ma == 9 && mi == 0, "cc");
	CHECK(strcmp(errstr(3), "Not Supported") == 0, "nvmlErrorString");
}

/* ---- handles the fake never gave out -------------------------------------- */
/* A replay may pass a handle value from another process's trace, or a stale
 * one: the real driver answers an error; the fake must not dereference it.
 * A crash names the call being tried. */
static const char *volatile bad_call = "";

static void bad_handle_crash(int sig)
{
	char msg[256];
	int n = snprintf(msg, sizeof(msg), "FATAL: signal %d in %s with a handle the fake never gave out\n", sig,
			 bad_call);
	ssize_t w = write(2, msg, n > 0 ? (size_t)n : 0);
	(void)w;
	_exit(1);
}

#define TRY(name, expr) (bad_call = (name), (expr))

static void test_bad_handles(void)
{
	F(fn_p, cuCtxSetCurrent);
	F(fn_p, cuCtxPushCurrent_v2);
	F(fn_pp, cuCtxGetCurrent);
	CUresult (*cuMemMap)(CUdeviceptr, size_t, size_t, unsigned long long, unsigned long long) = sym(cu, "cuMemMap");
	CUresult (*cuMemRelease)(unsigned long long) = sym(cu, "cuMemRelease");
	CUresult (*cuMemExportToShareableHandle)(void *, unsigned long long, int, unsigned long long) =
		sym(cu, "cuMemExportToShareableHandle");
	CUresult (*cuMemCreate)(unsigned long long *, size_t, const void *, unsigned long long) = sym(cu, "cuMemCreate");
	CUresult (*cuMemAddressReserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long) =
		sym(cu, "cuMemAddressReserve");
	CUresult (*cuMemAddressFree)(CUdeviceptr, size_t) = sym(cu, "cuMemAddressFree");
	CUresult (*cuStreamCreate)(void **, unsigned) = sym(cu, "cuStreamCreate");
	CUresult (*cuStreamSynchronize)(void *) = sym(cu, "cuStreamSynchronize");
	CUresult (*cuStreamDestroy)(void *) = sym(cu, "cuStreamDestroy_v2");
	CUresult (*cuStreamWaitEvent)(void *, void *, unsigned) = sym(cu, "cuStreamWaitEvent");
	CUresult (*cuEventCreate)(void **, unsigned) = sym(cu, "cuEventCreate");
	CUresult (*cuEventQuery)(void *) = sym(cu, "cuEventQuery");
	CUresult (*cuEventDestroy)(void *) = sym(cu, "cuEventDestroy_v2");
	CUresult (*cuModuleLoadData)(void **, const void *) = sym(cu, "cuModuleLoadData");
	CUresult (*cuModuleGetFunction)(void **, void *, const char *) = sym(cu, "cuModuleGetFunction");
	CUresult (*cuKernelGetFunction)(void **, void *) = sym(cu, "cuKernelGetFunction");
	CUresult (*cuLaunchKernel)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
				   void **, void **) = sym(cu, "cuLaunchKernel");
	CUresult (*cuMemcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, void *) = sym(cu, "cuMemcpyAsync");
	CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, void *) = sym(cu, "cuMemsetD8Async");
	CUresult (*cuMemAllocAsync)(CUdeviceptr *, size_t, void *) = sym(cu, "cuMemAllocAsync");
	CUresult (*cuFuncSetCacheConfig)(void *, int) = sym(cu, "cuFuncSetCacheConfig");
	CUresult (*cuFuncIsLoaded)(int *, void *) = sym(cu, "cuFuncIsLoaded");
	CUresult (*cuOccupancy)(int *, void *, int, size_t) = sym(cu, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
	CUresult (*cuIpcGetEventHandle)(void *, void *) = sym(cu, "cuIpcGetEventHandle");
	char rtpath[4096];
	snprintf(rtpath, sizeof(rtpath), "%s/libcudart.so.12", libdir);
	void *rt = dlopen(rtpath, RTLD_NOW | RTLD_LOCAL);
	CHECK_FATAL(rt, "%s: %s", rtpath, dlerror());
	int (*cudaStreamIsCapturing)(void *, int *) = sym(rt, "cudaStreamIsCapturing");
	int (*cudaStreamGetCaptureInfo)(void *, int *, unsigned long long *) = sym(rt, "cudaStreamGetCaptureInfo");
	enum { INVALID_VALUE = 1, INVALID_CONTEXT = 201, INVALID_HANDLE = 400 };

	struct sigaction sa, old_segv, old_bus;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = bad_handle_crash;
	sigaction(SIGSEGV, &sa, &old_segv);
	sigaction(SIGBUS, &sa, &old_bus);

	/* an address nothing is mapped at (a page given back), a small integer,
	 * and zeroed readable memory that is no object of the fake's */
	long pg = sysconf(_SC_PAGESIZE);
	void *gone = mmap(NULL, (size_t)pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK_FATAL(gone != MAP_FAILED, "mmap");
	munmap(gone, (size_t)pg);
	static char zeros[256] __attribute__((aligned(64)));
	char stack_zeros[256] __attribute__((aligned(64)));
	memset(stack_zeros, 0, sizeof(stack_zeros));
	void *bad[] = { (void *)0x1234, gone, zeros, stack_zeros };
	const char *what[] = { "0x1234", "an unmapped page", "static zeros", "stack zeros" };

	void *ctx = NULL;
	CHECK(cuCtxGetCurrent(&ctx) == 0 && ctx, "current context");
	CUdeviceptr va = 0;
	size_t g = 2u << 20;
	CHECK(cuMemAddressReserve(&va, g, g, 0, 0) == 0, "reserve");
	void *s = NULL, *e = NULL, *m = NULL, *f = NULL;
	int st_live = -1;
	static const char image[] = "not a real fatbin";
	CHECK(cuStreamCreate(&s, 0) == 0 && cuEventCreate(&e, 0) == 0 && cuModuleLoadData(&m, image) == 0 &&
	      cuModuleGetFunction(&f, m, "kern") == 0, "live objects");

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		void *b = bad[i];
		unsigned long long bh = (unsigned long long)(uintptr_t)b;
		int fd = -1;
		void *out = NULL;
		CHECK(TRY("cuMemMap", cuMemMap(va, g, 0, bh, 0)) == INVALID_VALUE, "cuMemMap(%s)", what[i]);
		CHECK(TRY("cuMemRelease", cuMemRelease(bh)) == INVALID_VALUE, "cuMemRelease(%s)", what[i]);
		CHECK(TRY("cuMemExportToShareableHandle", cuMemExportToShareableHandle(&fd, bh, 1, 0)) == INVALID_VALUE &&
		      fd == -1, "cuMemExportToShareableHandle(%s)", what[i]);
		CHECK(TRY("cuStreamSynchronize", cuStreamSynchronize(b)) == INVALID_HANDLE, "cuStreamSynchronize(%s)",
		      what[i]);
		CHECK(TRY("cuStreamDestroy", cuStreamDestroy(b)) == INVALID_HANDLE, "cuStreamDestroy(%s)", what[i]);
		CHECK(TRY("cuStreamWaitEvent", cuStreamWaitEvent(s, b, 0)) == INVALID_HANDLE, "cuStreamWaitEvent(%s)",
		      what[i]);
		CHECK(TRY("cuEventQuery", cuEventQuery(b)) == INVALID_HANDLE, "cuEventQuery(%s)", what[i]);
		CHECK(TRY("cuEventDestroy", cuEventDestroy(b)) == INVALID_HANDLE, "cuEventDestroy(%s)", what[i]);
		CHECK(TRY("cuCtxSetCurrent", cuCtxSetCurrent(b)) == INVALID_CONTEXT, "cuCtxSetCurrent(%s)", what[i]);
		CHECK(TRY("cuCtxPushCurrent", cuCtxPushCurrent_v2(b)) == INVALID_CONTEXT, "cuCtxPushCurrent(%s)", what[i]);
		CHECK(TRY("cuModuleGetFunction", cuModuleGetFunction(&out, b, "kern")) == INVALID_HANDLE && !out,
		      "cuModuleGetFunction(%s)", what[i]);
		CHECK(TRY("cuKernelGetFunction", cuKernelGetFunction(&out, b)) == INVALID_HANDLE && !out,
		      "cuKernelGetFunction(%s)", what[i]);
		CHECK(TRY("cuLaunchKernel(function)", cuLaunchKernel(b, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL)) ==
		      INVALID_HANDLE, "cuLaunchKernel(function %s)", what[i]);
		CHECK(TRY("cuLaunchKernel(stream)", cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, b, NULL, NULL)) ==
		      INVALID_HANDLE, "cuLaunchKernel(stream %s)", what[i]);
		/* the asynchronous memory calls check their stream, the function
		 * calls their function, as a driver does */
		CUdeviceptr d = 0;
		CHECK(TRY("cuMemcpyAsync", cuMemcpyAsync(0, 0, 0, b)) == INVALID_HANDLE, "cuMemcpyAsync(%s)", what[i]);
		CHECK(TRY("cuMemsetD8Async", cuMemsetD8Async(0, 0, 0, b)) == INVALID_HANDLE, "cuMemsetD8Async(%s)", what[i]);
		CHECK(TRY("cuMemAllocAsync", cuMemAllocAsync(&d, 64, b)) == INVALID_HANDLE && !d, "cuMemAllocAsync(%s)",
		      what[i]);
		int st = 0;
		CHECK(TRY("cuFuncSetCacheConfig", cuFuncSetCacheConfig(b, 0)) == INVALID_HANDLE, "cuFuncSetCacheConfig(%s)",
		      what[i]);
		CHECK(TRY("cuFuncIsLoaded", cuFuncIsLoaded(&st, b)) == INVALID_HANDLE, "cuFuncIsLoaded(%s)", what[i]);
		CHECK(TRY("cuOccupancyMaxActiveBlocksPerMultiprocessor", cuOccupancy(&st, b, 32, 0)) == INVALID_HANDLE,
		      "cuOccupancyMaxActiveBlocksPerMultiprocessor(%s)", what[i]);
		char ipc[64];
		CHECK(TRY("cuIpcGetEventHandle", cuIpcGetEventHandle(ipc, b)) == INVALID_HANDLE, "cuIpcGetEventHandle(%s)",
		      what[i]);
		/* the runtime's capture queries: cudaErrorInvalidResourceHandle (400) */
		CHECK(TRY("cudaStreamIsCapturing", cudaStreamIsCapturing(b, &st)) == 400, "cudaStreamIsCapturing(%s)",
		      what[i]);
		CHECK(TRY("cudaStreamGetCaptureInfo", cudaStreamGetCaptureInfo(b, &st, NULL)) == 400,
		      "cudaStreamGetCaptureInfo(%s)", what[i]);
	}
	CHECK(cudaStreamIsCapturing(s, &st_live) == 0 && st_live == 0, "cudaStreamIsCapturing(a live stream)");
	/* the context is still the one set before */
	void *now = NULL;
	CHECK(cuCtxGetCurrent(&now) == 0 && now == ctx, "context unchanged by bad handles");

	/* live handles of another type: the magic is the type check */
	CHECK(TRY("cuEventQuery(stream)", cuEventQuery(s)) == INVALID_HANDLE, "an event that is a stream");
	CHECK(TRY("cuStreamSynchronize(event)", cuStreamSynchronize(e)) == INVALID_HANDLE, "a stream that is an event");
	CHECK(TRY("cuCtxSetCurrent(module)", cuCtxSetCurrent(m)) == INVALID_CONTEXT, "a context that is a module");
	CHECK(TRY("cuLaunchKernel(module)", cuLaunchKernel(m, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL)) == INVALID_HANDLE,
	      "a function that is a module");
	CHECK(TRY("cuMemRelease(stream)", cuMemRelease((unsigned long long)(uintptr_t)s)) == INVALID_VALUE,
	      "an allocation handle that is a stream");

	/* freed handles: destroyed once, then an error every time */
	struct { int type, handletypes, loctype, locid; void *meta; unsigned char rest[8]; } prop;
	memset(&prop, 0, sizeof(prop));
	prop.type = 1;
	prop.handletypes = 1;
	prop.loctype = 1;
	unsigned long long h = 0;
	CHECK(cuMemCreate(&h, g, &prop, 0) == 0 && h, "create");
	CHECK(cuMemRelease(h) == 0, "release");
	CHECK(TRY("cuMemRelease(released)", cuMemRelease(h)) == INVALID_VALUE, "release twice");
	CHECK(TRY("cuMemMap(released)", cuMemMap(va, g, 0, h, 0)) == INVALID_VALUE, "map a released handle");
	CHECK(cuStreamDestroy(s) == 0 && cuEventDestroy(e) == 0, "destroy");
	CHECK(TRY("cuStreamSynchronize(destroyed)", cuStreamSynchronize(s)) == INVALID_HANDLE, "destroyed stream");
	CHECK(TRY("cuStreamDestroy(destroyed)", cuStreamDestroy(s)) == INVALID_HANDLE, "stream destroyed twice");
	CHECK(TRY("cuEventQuery(destroyed)", cuEventQuery(e)) == INVALID_HANDLE, "destroyed event");
	CHECK(TRY("cuEventDestroy(destroyed)", cuEventDestroy(e)) == INVALID_HANDLE, "event destroyed twice");
	CHECK(cuMemAddressFree(va, g) == 0, "address free");

	/* many live handles (the registry grows) and many freed (tombstones):
	 * each answers as it should */
	enum { NEV = 3000 };
	static void *evs[NEV];
	int created = 0, live_ok = 0, dead_ok = 0, destroyed = 0;
	for (int i = 0; i < NEV; i++)
		created += cuEventCreate(&evs[i], 0) == 0;
	for (int i = 0; i < NEV; i += 2)
		destroyed += cuEventDestroy(evs[i]) == 0;
	for (int i = 0; i < NEV; i++)
		if (i % 2)
			live_ok += cuEventQuery(evs[i]) == 0;
		else
			dead_ok += cuEventQuery(evs[i]) == INVALID_HANDLE;
	CHECK(created == NEV && destroyed == NEV / 2 && live_ok == NEV / 2 && dead_ok == NEV / 2,
	      "%d events: %d created, %d destroyed, %d live answer, %d destroyed refused", NEV, created, destroyed,
	      live_ok, dead_ok);
	int rest = 0;
	for (int i = 1; i < NEV; i += 2)
		rest += cuEventDestroy(evs[i]) == 0;
	CHECK(rest == NEV / 2 && cuEventQuery(evs[NEV - 1]) == INVALID_HANDLE, "all destroyed");

	/* NVML device handles are elements of the fake's own table */
	int (*nvmlInit_v2)(void) = sym(nv, "nvmlInit_v2");
	int (*getIndex)(void *, unsigned *) = sym(nv, "nvmlDeviceGetIndex");
	int (*byIndex)(unsigned, void **) = sym(nv, "nvmlDeviceGetHandleByIndex_v2");
	unsigned idx = 99;
	void *d0 = NULL;
	CHECK(nvmlInit_v2() == 0 && byIndex(0, &d0) == 0, "nvml");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(TRY("nvmlDeviceGetIndex", getIndex(bad[i], &idx)) == 2 && idx == 99, "nvmlDeviceGetIndex(%s)",
		      what[i]);
	CHECK(TRY("nvmlDeviceGetIndex(misaligned)", getIndex((char *)d0 + 1, &idx)) == 2, "a handle inside another");

	bad_call = "";
	sigaction(SIGSEGV, &old_segv, NULL);
	sigaction(SIGBUS, &old_bus, NULL);
}

int main(int argc, char **argv)
{
	CHECK_FATAL(argc >= 3, "usage: test_fake_cuda FAKE_LIBDIR TOPO_DIR");
	self_exe = "/proc/self/exe";
	static char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		self_exe = exe;
	}
	libdir = argv[1];
	topodir = argv[2];
	char path[4096];
	snprintf(path, sizeof(path), "%s/libcuda.so.1", libdir);
	cu = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	CHECK_FATAL(cu, "%s: %s", path, dlerror());
	snprintf(path, sizeof(path), "%s/libnvidia-ml.so.1", libdir);
	nv = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	CHECK_FATAL(nv, "%s: %s", path, dlerror());
	if (argc >= 4) {
		const char *mode = argv[3];
		if (strcmp(mode, "vmm-import") == 0)
			return child_vmm_import(atoi(argv[4]));
		if (strcmp(mode, "ipc-open") == 0)
			return child_ipc_open(argv[4]);
		if (strcmp(mode, "fault") == 0)
			return child_fault();
		if (strcmp(mode, "fault-after") == 0)
			return child_fault_after();
		if (strcmp(mode, "host1") == 0)
			return child_host1();
		return 2;
	}
	unsetenv("NCCLRR_TOPO");
	unsetenv("NCCLRR_HOST");
	unsetenv("NCCLRR_FAULT");
	unsetenv("CUDA_VISIBLE_DEVICES");
	test_proc_address();
	test_errors();
	drv_init();
	test_devices(0);
	test_memory();
	test_pools();
	test_streams();
	test_vmm_and_ipc();
	test_children();
	test_nvml();
	test_bad_handles();
	return check_done("fake_cuda");
}
