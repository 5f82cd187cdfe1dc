/* SPDX-License-Identifier: MIT */
/*
 * cuda_mem.c - fake device memory. Device memory is host memory: every
 * allocation is a memfd mapped MAP_SHARED, so device pointers are host
 * addresses (memset/memcpy really copy) and a handle opened by another
 * process maps the same bytes:
 *   - cuMem VMM: cuMemCreate makes a memfd, cuMemMap maps it into a
 *     reserved range, cuMemExportToShareableHandle hands out a dup of the
 *     memfd (a real POSIX fd the program passes over a UNIX socket);
 *   - legacy IPC: the 64-byte handle names the owner's pid and fd number and
 *     the file's identity; the opener reopens /proc/PID/fd/FD (falling back
 *     to pidfd_getfd) and checks it is the same file;
 *   - cuMemGetHandleForAddressRange: a dup of the memfd stands in for the
 *     dma-buf fd.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fake_cuda.h"
#include "nrr_fake_cuda_entry.h"

#define GRANULARITY ((size_t)2 << 20)

enum kind { K_DEVICE = 1, K_HOST, K_REGISTERED, K_VMM, K_IPC };

/* a physical allocation of the VMM API (CUmemGenericAllocationHandle) */
struct fmemh {
	uint32_t magic;
	int fd;
	size_t size;
	CUmemAllocationProp prop;
	int refs;                   /* handles (create, retain) + mappings */
};
#define FAKE_MAGIC_MEMH 0x4e52524bu

struct falloc {
	uintptr_t base;
	size_t size;                /* as requested */
	size_t maplen;              /* mapped length (page rounded) */
	enum kind kind;
	int fd;                     /* memfd, -1 for registered host memory */
	int dev;
	struct fctx *ctx;
	unsigned long long id;
	struct fmemh *mh;           /* K_VMM */
	size_t mh_offset;
	unsigned flags;
	struct fpool *pool;         /* stream-ordered allocations */
};

/* a stream-ordered memory pool (CUmemoryPool); allocations are made at once,
 * as every stream of the fake driver has already completed */
struct fpool {
	uint32_t magic;
	CUmemPoolProps props;
	int is_default;
	int reuse[3];               /* CU_MEMPOOL_ATTR_REUSE_* (1..3) */
	uint64_t release_threshold;
	uint64_t used, used_high;   /* bytes of live allocations */
};
#define FAKE_MAGIC_POOL 0x4e525250u /* "NRRP" */

struct fresv {
	uintptr_t base;
	size_t size;
};

static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static struct falloc *allocs;
static size_t nallocs, capallocs;
static struct fresv *resvs;
static size_t nresvs, capresvs;
static unsigned long long next_buffer_id = 1;
static size_t page_size;

static size_t round_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

static size_t pagesz(void)
{
	if (!page_size)
		page_size = (size_t)sysconf(_SC_PAGESIZE);
	return page_size;
}

/* find the allocation containing p; call with mem_lock held */
static struct falloc *find(uintptr_t p)
{
	for (size_t i = 0; i < nallocs; i++)
		if (p >= allocs[i].base && p < allocs[i].base + (allocs[i].size ? allocs[i].size : 1))
			return &allocs[i];
	return NULL;
}

static int add_alloc(const struct falloc *a)
{
	if (nallocs == capallocs) {
		size_t nc = capallocs ? capallocs * 2 : 64;
		void *na = realloc(allocs, nc * sizeof(*allocs));
		if (!na)
			return -1;
		allocs = na;
		capallocs = nc;
	}
	allocs[nallocs] = *a;
	allocs[nallocs].id = next_buffer_id++;
	nallocs++;
	return 0;
}

static void remove_alloc(struct falloc *a)
{
	size_t i = (size_t)(a - allocs);
	allocs[i] = allocs[--nallocs];
}

static int new_memfd(size_t size, int dev)
{
	char name[64];
	const struct fake_host *h = fake_host();
	snprintf(name, sizeof(name), "ncclrr:host=%d:dev=%d", h->host_index, dev);
	int fd = (int)syscall(SYS_memfd_create, name, 1u /* MFD_CLOEXEC */);
	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)size) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static CUresult current_dev(int *dev, struct fctx **pc)
{
	struct fctx *c = fake_current_ctx();
	if (!c)
		return CUDA_ERROR_INVALID_CONTEXT;
	*dev = c->dev;
	if (pc)
		*pc = c;
	return CUDA_SUCCESS;
}

/* memfd-backed mapping registered as @kind, on the current context's device
 * or, from @pool, on the pool's */
static CUresult alloc_in(void **out, size_t size, enum kind kind, unsigned flags, struct fpool *pool)
{
	int dev;
	struct fctx *c;
	CUresult rc = current_dev(&dev, &c);
	if (rc)
		return rc;
	if (pool)
		dev = pool->props.location.id;
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	if (size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	size_t len = round_up(size, pagesz());
	int fd = new_memfd(len, dev);
	if (fd < 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	struct falloc a = { .base = (uintptr_t)p, .size = size, .maplen = len, .kind = kind, .fd = fd,
			    .dev = dev, .ctx = c, .flags = flags, .pool = pool };
	pthread_mutex_lock(&mem_lock);
	int r = add_alloc(&a);
	if (r == 0 && pool) {
		pool->used += size;
		if (pool->used > pool->used_high)
			pool->used_high = pool->used;
	}
	pthread_mutex_unlock(&mem_lock);
	if (r < 0) {
		munmap(p, len);
		close(fd);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*out = p;
	return CUDA_SUCCESS;
}

static CUresult alloc_shared(void **out, size_t size, enum kind kind, unsigned flags)
{
	return alloc_in(out, size, kind, flags, NULL);
}

static CUresult free_kind(uintptr_t p, enum kind k1, enum kind k2)
{
	pthread_mutex_lock(&mem_lock);
	struct falloc *a = find(p);
	if (!a || a->base != p || (a->kind != k1 && a->kind != k2)) {
		pthread_mutex_unlock(&mem_lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	struct falloc copy = *a;
	if (a->pool)
		a->pool->used -= a->size;
	remove_alloc(a);
	pthread_mutex_unlock(&mem_lock);
	if (copy.kind != K_REGISTERED) {
		munmap((void *)copy.base, copy.maplen);
		if (copy.fd >= 0)
			close(copy.fd);
	}
	return CUDA_SUCCESS;
}

/* ---- cuMemAlloc family ------------------------------------------------------ */
CUresult fake_cuMemAlloc_v2(CUdeviceptr *dptr, size_t size)
{
	void *p = NULL;
	if (!dptr)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = alloc_shared(&p, size, K_DEVICE, 0);
	if (rc == CUDA_SUCCESS)
		*dptr = (CUdeviceptr)(uintptr_t)p;
	return rc;
}

CUresult fake_cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t w, size_t h, unsigned esz)
{
	if (!dptr || !pitch)
		return CUDA_ERROR_INVALID_VALUE;
	size_t pt = round_up(w ? w : 1, 512);
	void *p = NULL;
	CUresult rc = alloc_shared(&p, pt * (h ? h : 1), K_DEVICE, 0);
	if (rc == CUDA_SUCCESS) {
		*dptr = (CUdeviceptr)(uintptr_t)p;
		*pitch = pt;
	}
	return rc;
}

CUresult fake_cuMemAllocManaged(CUdeviceptr *dptr, size_t size, unsigned flags)
{
	void *p = NULL;
	if (!dptr)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = alloc_shared(&p, size, K_DEVICE, flags);
	if (rc == CUDA_SUCCESS)
		*dptr = (CUdeviceptr)(uintptr_t)p;
	return rc;
}

/* ---- stream-ordered allocation and memory pools ----------------------------- */
#define MAX_DEVICES 64 /* struct fake_host's dev[] */
static struct fpool *default_pools[MAX_DEVICES];
static struct fpool *current_pools[MAX_DEVICES];

static int is_pool(const struct fpool *p)
{
	return p && fake_handle_live(p) && p->magic == FAKE_MAGIC_POOL;
}

static struct fpool *pool_new(const CUmemPoolProps *props, int is_default)
{
	struct fpool *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->magic = FAKE_MAGIC_POOL;
	p->props = *props;
	p->is_default = is_default;
	p->reuse[0] = p->reuse[1] = p->reuse[2] = 1;
	if (fake_handle_add(p) < 0) {
		free(p);
		return NULL;
	}
	return p;
}

/* the pool cuMemAllocAsync takes on device @dev: cuDeviceSetMemPool's, else
 * the default one, made on first use */
static CUresult device_pool(int dev, int want_default, struct fpool **out)
{
	CUresult rc = fake_need_dev(dev);
	if (rc)
		return rc;
	pthread_mutex_lock(&mem_lock);
	if (!default_pools[dev]) {
		CUmemPoolProps props = { .allocType = 1, .location = { .type = 1, .id = dev } };
		default_pools[dev] = pool_new(&props, 1);
	}
	struct fpool *p = !want_default && current_pools[dev] ? current_pools[dev] : default_pools[dev];
	pthread_mutex_unlock(&mem_lock);
	*out = p;
	return p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult fake_cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice d)
{
	if (!pool)
		return CUDA_ERROR_INVALID_VALUE;
	return device_pool(d, 1, pool);
}

CUresult fake_cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice d)
{
	if (!pool)
		return CUDA_ERROR_INVALID_VALUE;
	return device_pool(d, 0, pool);
}

CUresult fake_cuDeviceSetMemPool(CUdevice d, CUmemoryPool pool)
{
	CUresult rc = fake_need_dev(d);
	if (rc)
		return rc;
	pthread_mutex_lock(&mem_lock);
	rc = !is_pool(pool) ? CUDA_ERROR_INVALID_HANDLE
		      : pool->props.location.id != d ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
	if (rc == CUDA_SUCCESS)
		current_pools[d] = pool;
	pthread_mutex_unlock(&mem_lock);
	return rc;
}

CUresult fake_cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
	if (!pool || !props)
		return CUDA_ERROR_INVALID_VALUE;
	/* pinned device memory, exportable as a POSIX fd or not at all: what a
	 * Linux driver accepts of a device pool */
	if (props->allocType != 1 || props->location.type != 1 ||
	    (props->handleTypes & ~(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_FABRIC)))
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = fake_need_dev(props->location.id);
	if (rc)
		return rc;
	struct fpool *p = pool_new(props, 0);
	if (!p)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*pool = p;
	return CUDA_SUCCESS;
}

CUresult fake_cuMemPoolDestroy(CUmemoryPool pool)
{
	pthread_mutex_lock(&mem_lock);
	if (!is_pool(pool) || pool->is_default || !fake_handle_del(pool)) {
		pthread_mutex_unlock(&mem_lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	/* live allocations outlive their pool, as the driver's do */
	for (size_t i = 0; i < nallocs; i++)
		if (allocs[i].pool == pool)
			allocs[i].pool = NULL;
	for (int d = 0; d < MAX_DEVICES; d++)
		if (current_pools[d] == pool)
			current_pools[d] = NULL;
	pthread_mutex_unlock(&mem_lock);
	pool->magic = 0;
	free(pool);
	return CUDA_SUCCESS;
}

/* CUmemPool_attribute: 1..3 the reuse policies (int), 4 the release
 * threshold, 5/6 reserved bytes current/high, 7/8 used bytes current/high
 * (cuuint64_t); only the high-water marks may be set, and only to 0 */
CUresult fake_cuMemPoolSetAttribute(CUmemoryPool pool, int attr, void *value)
{
	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = CUDA_SUCCESS;
	pthread_mutex_lock(&mem_lock);
	if (!is_pool(pool))
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (attr >= 1 && attr <= 3)
		pool->reuse[attr - 1] = *(int *)value != 0;
	else if (attr == 4)
		pool->release_threshold = *(uint64_t *)value;
	else if ((attr == 6 || attr == 8) && *(uint64_t *)value == 0)
		pool->used_high = pool->used;
	else
		rc = CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_unlock(&mem_lock);
	return rc;
}

CUresult fake_cuMemPoolGetAttribute(CUmemoryPool pool, int attr, void *value)
{
	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = CUDA_SUCCESS;
	pthread_mutex_lock(&mem_lock);
	if (!is_pool(pool))
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (attr >= 1 && attr <= 3)
		*(int *)value = pool->reuse[attr - 1];
	else if (attr == 4)
		*(uint64_t *)value = pool->release_threshold;
	else if (attr >= 5 && attr <= 8)
		/* memory goes back at free: reserved is what is in use */
		*(uint64_t *)value = (attr & 1) ? pool->used : pool->used_high;
	else
		rc = CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_unlock(&mem_lock);
	return rc;
}

CUresult fake_cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream s)
{
	if (!fake_valid_stream(s))
		return CUDA_ERROR_INVALID_HANDLE;
	if (!dptr)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mem_lock);
	int ok = is_pool(pool);
	pthread_mutex_unlock(&mem_lock);
	if (!ok)
		return CUDA_ERROR_INVALID_VALUE;
	void *p = NULL;
	CUresult rc = alloc_in(&p, size, K_DEVICE, 0, pool);
	if (rc == CUDA_SUCCESS)
		*dptr = (CUdeviceptr)(uintptr_t)p;
	return rc;
}

CUresult fake_cuMemAllocAsync(CUdeviceptr *dptr, size_t size, CUstream s)
{
	if (!fake_valid_stream(s))
		return CUDA_ERROR_INVALID_HANDLE;
	if (!dptr)
		return CUDA_ERROR_INVALID_VALUE;
	int dev;
	struct fpool *pool;
	CUresult rc = current_dev(&dev, NULL);
	if (rc == CUDA_SUCCESS)
		rc = device_pool(dev, 0, &pool);
	void *p = NULL;
	if (rc == CUDA_SUCCESS)
		rc = alloc_in(&p, size, K_DEVICE, 0, pool);
	if (rc == CUDA_SUCCESS)
		*dptr = (CUdeviceptr)(uintptr_t)p;
	return rc;
}

CUresult fake_cuMemFree_v2(CUdeviceptr p)
{
	if (!p)
		return CUDA_SUCCESS;
	return free_kind((uintptr_t)p, K_DEVICE, K_DEVICE);
}

CUresult fake_cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
	if (!fake_valid_stream(s))
		return CUDA_ERROR_INVALID_HANDLE;
	if (!p)
		return CUDA_SUCCESS;
	return free_kind((uintptr_t)p, K_DEVICE, K_DEVICE);
}

CUresult fake_cuMemHostAlloc(void **pp, size_t size, unsigned flags)
{
	return alloc_shared(pp, size, K_HOST, flags);
}

CUresult fake_cuMemAllocHost_v2(void **pp, size_t size)
{
	return alloc_shared(pp, size, K_HOST, 0);
}

CUresult fake_cuMemFreeHost(void *p)
{
	if (!p)
		return CUDA_SUCCESS;
	return free_kind((uintptr_t)p, K_HOST, K_HOST);
}

CUresult fake_cuMemHostGetDevicePointer_v2(CUdeviceptr *dptr, void *p, unsigned flags)
{
	if (!dptr || !p || flags)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mem_lock);
	struct falloc *a = find((uintptr_t)p);
	int ok = a && (a->kind == K_HOST || a->kind == K_REGISTERED);
	pthread_mutex_unlock(&mem_lock);
	if (!ok)
		return CUDA_ERROR_INVALID_VALUE;
	*dptr = (CUdeviceptr)(uintptr_t)p;
	return CUDA_SUCCESS;
}

CUresult fake_cuMemHostGetFlags(unsigned *flags, void *p)
{
	if (!flags || !p)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mem_lock);
	struct falloc *a = find((uintptr_t)p);
	int ok = a && (a->kind == K_HOST || a->kind == K_REGISTERED);
	if (ok)
		*flags = a->flags;
	pthread_mutex_unlock(&mem_lock);
	return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult host_register(void *p, size_t size, unsigned flags)
{
	int dev;
	struct fctx *c;
	CUresult rc = current_dev(&dev, &c);
	if (rc)
		return rc;
	if (!p || !size)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mem_lock);
	for (size_t i = 0; i < nallocs; i++) {
		struct falloc *a = &allocs[i];
		if (a->kind == K_REGISTERED && (uintptr_t)p < a->base + a->size && a->base < (uintptr_t)p + size) {
			pthread_mutex_unlock(&mem_lock);
			return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
		}
	}
	struct falloc a = { .base = (uintptr_t)p, .size = size, .maplen = size, .kind = K_REGISTERED, .fd = -1,
			    .dev = dev, .ctx = c, .flags = flags };
	int r = add_alloc(&a);
	pthread_mutex_unlock(&mem_lock);
	return r < 0 ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}

CUresult fake_cuMemHostRegister_v2(void *p, size_t size, unsigned flags)
{
	return host_register(p, size, flags);
}

CUresult fake_cuMemHostRegister(void *p, size_t size, unsigned flags)
{
	return host_register(p, size, flags);
}

CUresult fake_cuMemHostUnregister(void *p)
{
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = free_kind((uintptr_t)p, K_REGISTERED, K_REGISTERED);
	return rc ? CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED : rc;
}

CUresult fake_cuMemGetInfo_v2(size_t *free_b, size_t *total)
{
	int dev;
	CUresult rc = current_dev(&dev, NULL);
	if (rc)
		return rc;
	size_t used = 0;
	pthread_mutex_lock(&mem_lock);
	for (size_t i = 0; i < nallocs; i++)
		if (allocs[i].kind == K_DEVICE && allocs[i].dev == dev)
			used += allocs[i].maplen;
	pthread_mutex_unlock(&mem_lock);
	size_t tot = (size_t)80 << 30;
	if (total)
		*total = tot;
	if (free_b)
		*free_b = used < tot ? tot - used : 0;
	return CUDA_SUCCESS;
}

CUresult fake_cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr p)
{
	pthread_mutex_lock(&mem_lock);
	struct falloc *a = find((uintptr_t)p);
	int ok = a && a->kind != K_REGISTERED;
	if (ok) {
		if (base)
			*base = a->base;
		if (size)
			*size = a->size;
	}
	pthread_mutex_unlock(&mem_lock);
	return ok ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

/* ---- pointer attributes -------------------------------------------------------- */
static CUresult ptr_attr(void *data, int attr, CUdeviceptr p, int lenient)
{
	pthread_mutex_lock(&mem_lock);
	struct falloc *a = find((uintptr_t)p);
	struct falloc c;
	if (a)
		c = *a;
	pthread_mutex_unlock(&mem_lock);
	if (!a) {
		if (!lenient)
			return CUDA_ERROR_INVALID_VALUE;
		/* cuPointerGetAttributes: defaults for unknown pointers */
		switch (attr) {
		case 1: case 3: case 4: case 17: case 19: *(void **)data = NULL; break;
		case 2: case 6: case 8: case 10: case 13: case 14: case 15: case 16: case 21:
			*(unsigned *)data = 0;
			break;
		case 9: *(int *)data = -2; break;
		case 7: case 11: case 12: case 18: case 20: *(unsigned long long *)data = 0; break;
		default: break;
		}
		return CUDA_SUCCESS;
	}
	int device_mem = c.kind == K_DEVICE || c.kind == K_VMM || c.kind == K_IPC;
	switch (attr) {
	case 1: /* context */
		*(CUcontext *)data = c.ctx;
		break;
	case 2: /* memory type */
		*(unsigned *)data = device_mem ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
		break;
	case 3: /* device pointer */
		*(CUdeviceptr *)data = p;
		break;
	case 4: /* host pointer */
		if (device_mem && !lenient)
			return CUDA_ERROR_INVALID_VALUE;
		*(void **)data = device_mem ? NULL : (void *)(uintptr_t)p;
		break;
	case 5: /* P2P tokens */
		return lenient ? CUDA_SUCCESS : CUDA_ERROR_NOT_SUPPORTED;
	case 6: /* sync memops */
		*(unsigned *)data = 1;
		break;
	case 7: /* buffer id */
		*(unsigned long long *)data = c.id;
		break;
	case 8: /* managed */
		*(unsigned *)data = 0;
		break;
	case 9: /* device ordinal */
		*(int *)data = c.dev;
		break;
	case 10: /* legacy IPC capable */
		*(unsigned *)data = c.kind == K_DEVICE;
		break;
	case 11: /* range start */
		*(CUdeviceptr *)data = c.base;
		break;
	case 12: /* range size */
		*(size_t *)data = c.size;
		break;
	case 13: /* mapped */
		*(unsigned *)data = 1;
		break;
	case 14: /* allowed handle types */
		*(unsigned *)data = c.kind == K_VMM ? (unsigned)c.mh->prop.requestedHandleTypes : 0;
		break;
	case 15: /* GPUDirect RDMA capable */
		*(unsigned *)data = device_mem;
		break;
	case 16: /* access flags */
		*(unsigned *)data = 3;
		break;
	case 17: /* mempool */
		*(void **)data = NULL;
		break;
	case 18: /* mapping size */
		*(size_t *)data = c.kind == K_VMM ? c.size : c.maplen;
		break;
	case 19: /* mapping base */
		*(void **)data = (void *)c.base;
		break;
	case 20: /* memory block id */
		*(unsigned long long *)data = c.id;
		break;
	case 21:
		*(unsigned *)data = 0;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

CUresult fake_cuPointerGetAttribute(void *data, int attr, CUdeviceptr p)
{
	if (!data)
		return CUDA_ERROR_INVALID_VALUE;
	return ptr_attr(data, attr, p, 0);
}

CUresult fake_cuPointerGetAttributes(unsigned n, int *attrs, void **data, CUdeviceptr p)
{
	if (!attrs || !data)
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned i = 0; i < n; i++) {
		if (!data[i])
			continue;
		CUresult rc = ptr_attr(data[i], attrs[i], p, 1);
		if (rc)
			return rc;
	}
	return CUDA_SUCCESS;
}

CUresult fake_cuPointerSetAttribute(const void *value, int attr, CUdeviceptr p)
{
	pthread_mutex_lock(&mem_lock);
	struct falloc *a = find((uintptr_t)p);
	pthread_mutex_unlock(&mem_lock);
	return a ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult fake_cuMemAdvise_v2(CUdeviceptr p, size_t n, int advice, CUmemLocation loc)
{
	return CUDA_SUCCESS;
}

CUresult fake_cuMemPrefetchAsync_v2(CUdeviceptr p, size_t n, CUmemLocation loc, unsigned flags, CUstream s)
{
	if (!fake_valid_stream(s))
		return CUDA_ERROR_INVALID_HANDLE;
	return CUDA_SUCCESS;
}

/* ---- copies and sets: device memory is host memory ------------------------------ */
/* As a driver checks: [p, p + n) lies inside one allocation (its size),
 * else CUDA_ERROR_INVALID_VALUE.  What a pointer may be:
 * DEV_ONLY a device pointer (in an allocation); HOST_OK either, where
 * unified addressing allows it (cuMemcpy): one in no allocation is the
 * program's host memory; HOST a host pointer parameter (the program's own
 * to get right, as with a driver). */
enum { DEV_ONLY, HOST_OK, HOST };

static CUresult check_range(uintptr_t p, size_t n, int is)
{
	if (n == 0)
		return CUDA_SUCCESS;
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mem_lock);
	const struct falloc *a = find(p);
	size_t len = a ? (a->size ? a->size : a->maplen) : 0;   /* (what cuMemGetAddressRange says) */
	CUresult rc = !a ? (is == HOST_OK ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE)
			 : n > len - (p - a->base) ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
	pthread_mutex_unlock(&mem_lock);
	return rc;
}

static CUresult copy(void *dst, int dst_is, const void *src, int src_is, size_t n)
{
	if (n == 0)
		return CUDA_SUCCESS;
	if (!dst || !src)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = dst_is == HOST ? CUDA_SUCCESS : check_range((uintptr_t)dst, n, dst_is);
	if (!rc && src_is != HOST)
		rc = check_range((uintptr_t)src, n, src_is);
	if (rc)
		return rc;
	memmove(dst, src, n);
	return CUDA_SUCCESS;
}

#define P(x) ((void *)(uintptr_t)(x))

CUresult fake_cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	return copy(P(dst), HOST_OK, P(src), HOST_OK, n);
}

CUresult fake_cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
	if (!fake_valid_stream(s))
		return CUDA_ERROR_INVALID_HANDLE;
	return copy(P(dst), HOST_OK, P(src), HOST_OK, n);
}

CUresult fake_cuMemcpyPeer(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n)
{
	return copy(P(dst), DEV_ONLY, P(src), DEV_ONLY, n);
}

CUresult fake_cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n,
				       CUstream s)
{
	if (!fake_valid_stream(s))
		return CUDA_ERROR_INVALID_HANDLE;
	return copy(P(dst), DEV_ONLY, P(src), DEV_ONLY, n);
}

CUresult fake_cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
	return copy(P(dst), DEV_ONLY, src, HOST, n);
}

CUresult fake_cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
	return copy(dst, HOST, P(src), DEV_ONLY, n);
}

CUresult fake_cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	return copy(P(dst), DEV_ONLY, P(src), DEV_ONLY, n);
}

CUresult fake_cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
	if (!fake_valid_stream(s))
		return CUDA_ERROR_INVALID_HANDLE;
	return copy(P(dst), DEV_ONLY, src, HOST, n);
}

CUresult fake_cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
	if (!fake_valid_stream(s))
		return CUDA_ERROR_INVALID_HANDLE;
	return copy(dst, HOST, P(src), DEV_ONLY, n);
}

CUresult fake_cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
	if (!fake_valid_stream(s))
		return CUDA_ERROR_INVALID_HANDLE;
	return copy(P(dst), DEV_ONLY, P(src), DEV_ONLY, n);
}

static CUresult copy2d(const CUDA_MEMCPY2D *c)
{
	if (!c)
		return CUDA_ERROR_INVALID_VALUE;
	if (c->srcMemoryType == CU_MEMORYTYPE_ARRAY || c->dstMemoryType == CU_MEMORYTYPE_ARRAY)
		return CUDA_ERROR_NOT_SUPPORTED;
	const char *s = c->srcMemoryType == CU_MEMORYTYPE_HOST ? (const char *)c->srcHost : (const char *)P(c->srcDevice);
	char *d = c->dstMemoryType == CU_MEMORYTYPE_HOST ? (char *)c->dstHost : (char *)P(c->dstDevice);
	if (!s || !d)
		return CUDA_ERROR_INVALID_VALUE;
	if (!c->Height || !c->WidthInBytes)
		return CUDA_SUCCESS;
	/* each device side's span, first row to the last byte, as one range */
	const struct { uintptr_t base; size_t x, y, pitch; int host; } side[2] = {
		{ (uintptr_t)s, c->srcXInBytes, c->srcY, c->srcPitch, c->srcMemoryType == CU_MEMORYTYPE_HOST },
		{ (uintptr_t)d, c->dstXInBytes, c->dstY, c->dstPitch, c->dstMemoryType == CU_MEMORYTYPE_HOST },
	};
	for (int k = 0; k < 2; k++) {
		size_t first, span;
		if (side[k].host)
			continue;
		if (__builtin_mul_overflow(side[k].y, side[k].pitch, &first) ||
		    __builtin_add_overflow(first, side[k].x, &first) ||
		    __builtin_mul_overflow(c->Height - 1, side[k].pitch, &span) ||
		    __builtin_add_overflow(span, c->WidthInBytes, &span) || side[k].base + first < side[k].base)
			return CUDA_ERROR_INVALID_VALUE;
		CUresult rc = check_range(side[k].base + first, span, DEV_ONLY);
		if (rc)
			return rc;
	}
	for (size_t y = 0; y < c->Height; y++)
		memmove(d + (c->dstY + y) * c->dstPitch + c->dstXInBytes, s + (c->srcY + y) * c->srcPitch + c->srcXInBytes,
			c->WidthInBytes);
	return CUDA_SUCCESS;
}

CUresult fake_cuMemcpy2D_v2(const CUDA_MEMCPY2D *c)
{
	return copy2d(c);
}

CUresult fake_cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *c)
{
	return copy2d(c);
}

CUresult fake_cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *c, CUstream s)
{
	if (!fake_valid_stream(s))
		return CUDA_ERROR_INVALID_HANDLE;
	return copy2d(c);
}

static CUresult set_n(CUdeviceptr dst, unsigned v, size_t n, int width)
{
	if (n == 0)
		return CUDA_SUCCESS;
	size_t bytes;
	if (!dst || __builtin_mul_overflow(n, (size_t)width, &bytes))
		return CUDA_ERROR_INVALID_VALUE;
	CUresult rc = check_range((uintptr_t)dst, bytes, DEV_ONLY);
	if (rc)
		return rc;
	if (width == 1) {
		memset(P(dst), (int)(v & 0xff), n);
	} else if (width == 2) {
		uint16_t *p = P(dst);
		for (size_t i = 0; i < n; i++)
			p[i] = (uint16_t)v;
	} else {
		uint32_t *p = P(dst);
		for (size_t i = 0; i < n; i++)
			p[i] = v;
	}
	return CUDA_SUCCESS;
}

CUresult fake_cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n)
{
	return set_n(d, v, n, 1);
}

CUresult fake_cuMemsetD16_v2(CUdeviceptr d, unsigned short v, size_t n)
{
	return set_n(d, v, n, 2);
}

CUresult fake_cuMemsetD32_v2(CUdeviceptr d, unsigned v, size_t n)
{
	return set_n(d, v, n, 4);
}

CUresult fake_cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s)
{
	if (!fake_valid_stream(s))
		return CUDA_ERROR_INVALID_HANDLE;
	return set_n(d, v, n, 1);
}

CUresult fake_cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream s)
{
	if (!fake_valid_stream(s))
		return CUDA_ERROR_INVALID_HANDLE;
	return set_n(d, v, n, 2);
}

CUresult fake_cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, CUstream s)
{
	if (!fake_valid_stream(s))
		return CUDA_ERROR_INVALID_HANDLE;
	return set_n(d, v, n, 4);
}

static CUresult set_2d(CUdeviceptr d, size_t pitch, unsigned v, size_t w, size_t h, int width)
{
	for (size_t y = 0; y < h; y++) {
		CUresult rc = set_n(d + y * pitch, v, w, width);
		if (rc)
			return rc;
	}
	return CUDA_SUCCESS;
}

CUresult fake_cuMemsetD2D8_v2(CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h)
{
	return set_2d(d, pitch, v, w, h, 1);
}

CUresult fake_cuMemsetD2D32_v2(CUdeviceptr d, size_t pitch, unsigned v, size_t w, size_t h)
{
	return set_2d(d, pitch, v, w, h, 4);
}

CUresult fake_cuMemsetD2D8Async(CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h,
				       CUstream s)
{
	if (!fake_valid_stream(s))
		return CUDA_ERROR_INVALID_HANDLE;
	return set_2d(d, pitch, v, w, h, 1);
}

CUresult fake_cuMemsetD2D32Async(CUdeviceptr d, size_t pitch, unsigned v, size_t w, size_t h, CUstream s)
{
	if (!fake_valid_stream(s))
		return CUDA_ERROR_INVALID_HANDLE;
	return set_2d(d, pitch, v, w, h, 4);
}

/* ---- the VMM API ------------------------------------------------------------------ */
CUresult fake_cuMemGetAllocationGranularity(size_t *g, const CUmemAllocationProp *prop, int option)
{
	if (!g || !prop)
		return CUDA_ERROR_INVALID_VALUE;
	*g = GRANULARITY;
	return CUDA_SUCCESS;
}

CUresult fake_cuMemCreate(CUmemGenericAllocationHandle *h, size_t size, const CUmemAllocationProp *prop,
				 unsigned long long flags)
{
	if (!h || !prop || size == 0 || size % GRANULARITY)
		return CUDA_ERROR_INVALID_VALUE;
	if (prop->requestedHandleTypes & ~CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
		return CUDA_ERROR_NOT_SUPPORTED; /* fabric / win32 handles */
	if (prop->location.type == 1 && (prop->location.id < 0 || prop->location.id >= fake_host()->ndev))
		return CUDA_ERROR_INVALID_DEVICE;
	struct fmemh *m = calloc(1, sizeof(*m));
	if (!m)
		return CUDA_ERROR_OUT_OF_MEMORY;
	m->fd = new_memfd(size, prop->location.id);
	if (m->fd < 0) {
		free(m);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	m->magic = FAKE_MAGIC_MEMH;
	m->size = size;
	m->prop = *prop;
	m->refs = 1;
	if (fake_handle_add(m) < 0) {
		close(m->fd);
		free(m);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*h = (CUmemGenericAllocationHandle)(uintptr_t)m;
	return CUDA_SUCCESS;
}

static struct fmemh *memh(CUmemGenericAllocationHandle h)
{
	struct fmemh *m = (struct fmemh *)(uintptr_t)h;
	/* the registry first: a handle the fake never gave out (stale, or from
	 * another process's trace) must not be dereferenced */
	return m && fake_handle_live(m) && m->magic == FAKE_MAGIC_MEMH ? m : NULL;
}

static void memh_unref(struct fmemh *m)
{
	if (--m->refs == 0) {
		fake_handle_del(m);
		close(m->fd);
		m->magic = 0;
		free(m);
	}
}

CUresult fake_cuMemRelease(CUmemGenericAllocationHandle h)
{
	pthread_mutex_lock(&mem_lock);
	struct fmemh *m = memh(h);
	if (!m) {
		pthread_mutex_unlock(&mem_lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	memh_unref(m);
	pthread_mutex_unlock(&mem_lock);
	return CUDA_SUCCESS;
}

CUresult fake_cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t align, CUdeviceptr addr,
					 unsigned long long flags)
{
	if (!ptr || size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (align == 0)
		align = GRANULARITY;
	if (align & (align - 1))
		return CUDA_ERROR_INVALID_VALUE;
	size_t span = size + align;
	void *p = mmap(P(addr), span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	uintptr_t base = round_up((uintptr_t)p, align);
	if (base > (uintptr_t)p)
		munmap(p, base - (uintptr_t)p);
	uintptr_t end = (uintptr_t)p + span;
	if (end > base + size)
		munmap(P(base + size), end - (base + size));
	pthread_mutex_lock(&mem_lock);
	if (nresvs == capresvs) {
		size_t nc = capresvs ? capresvs * 2 : 32;
		void *nr = realloc(resvs, nc * sizeof(*resvs));
		if (!nr) {
			pthread_mutex_unlock(&mem_lock);
			munmap(P(base), size);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		resvs = nr;
		capresvs = nc;
	}
	resvs[nresvs++] = (struct fresv){ base, size };
	pthread_mutex_unlock(&mem_lock);
	*ptr = base;
	return CUDA_SUCCESS;
}

CUresult fake_cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	pthread_mutex_lock(&mem_lock);
	for (size_t i = 0; i < nresvs; i++)
		if (resvs[i].base == ptr && resvs[i].size == size) {
			resvs[i] = resvs[--nresvs];
			pthread_mutex_unlock(&mem_lock);
			munmap(P(ptr), size);
			return CUDA_SUCCESS;
		}
	pthread_mutex_unlock(&mem_lock);
	return CUDA_ERROR_INVALID_VALUE;
}

static int in_reservation(uintptr_t p, size_t size)
{
	for (size_t i = 0; i < nresvs; i++)
		if (p >= resvs[i].base && p + size <= resvs[i].base + resvs[i].size)
			return 1;
	return 0;
}

CUresult fake_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle h,
			      unsigned long long flags)
{
	pthread_mutex_lock(&mem_lock);
	struct fmemh *m = memh(h);
	CUresult rc = CUDA_SUCCESS;
	if (!m || size == 0 || offset + size > m->size || ptr % GRANULARITY)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (!in_reservation((uintptr_t)ptr, size))
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (find((uintptr_t)ptr) || find((uintptr_t)ptr + size - 1))
		rc = CUDA_ERROR_ALREADY_MAPPED;
	if (rc == CUDA_SUCCESS) {
		void *p = mmap(P(ptr), size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, m->fd, (off_t)offset);
		if (p == MAP_FAILED) {
			rc = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			struct fctx *c = fake_current_ctx();
			struct falloc a = { .base = (uintptr_t)ptr, .size = size, .maplen = size, .kind = K_VMM,
					    .fd = -1, .dev = m->prop.location.id, .ctx = c, .mh = m,
					    .mh_offset = offset };
			if (add_alloc(&a) < 0) {
				rc = CUDA_ERROR_OUT_OF_MEMORY;
			} else {
				m->refs++;
			}
		}
	}
	pthread_mutex_unlock(&mem_lock);
	return rc;
}

CUresult fake_cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	pthread_mutex_lock(&mem_lock);
	int found = 0;
	for (size_t i = 0; i < nallocs;) {
		struct falloc *a = &allocs[i];
		if (a->kind == K_VMM && a->base >= ptr && a->base + a->size <= ptr + size) {
			struct fmemh *m = a->mh;
			mmap(P(a->base), a->size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
			remove_alloc(a);
			memh_unref(m);
			found = 1;
			continue;
		}
		i++;
	}
	pthread_mutex_unlock(&mem_lock);
	return found ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult fake_cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
	if (!desc || count == 0)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mem_lock);
	struct falloc *a = find((uintptr_t)ptr);
	int ok = a && a->kind == K_VMM;
	pthread_mutex_unlock(&mem_lock);
	if (!ok)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < count; i++)
		if (desc[i].location.type == 1 && (desc[i].location.id < 0 || desc[i].location.id >= fake_host()->ndev))
			return CUDA_ERROR_INVALID_DEVICE;
	return CUDA_SUCCESS;
}

CUresult fake_cuMemGetAccess(unsigned long long *flags, const CUmemLocation *loc, CUdeviceptr ptr)
{
	if (!flags || !loc)
		return CUDA_ERROR_INVALID_VALUE;
	*flags = 3;
	return CUDA_SUCCESS;
}

CUresult fake_cuMemExportToShareableHandle(void *out, CUmemGenericAllocationHandle h, int type,
						  unsigned long long flags)
{
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
		return CUDA_ERROR_NOT_SUPPORTED;
	pthread_mutex_lock(&mem_lock);
	struct fmemh *m = memh(h);
	int fd = m ? fcntl(m->fd, F_DUPFD_CLOEXEC, 0) : -1;
	pthread_mutex_unlock(&mem_lock);
	if (!m)
		return CUDA_ERROR_INVALID_VALUE;
	if (fd < 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*(int *)out = fd;
	return CUDA_SUCCESS;
}

/* the device a memfd was created for, from its name */
static int memfd_dev(int fd)
{
	char path[64], target[256];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(path, target, sizeof(target) - 1);
	if (n <= 0)
		return 0;
	target[n] = 0;
	const char *d = strstr(target, ":dev=");
	return d ? atoi(d + 5) : 0;
}

CUresult fake_cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *h, void *os_handle, int type)
{
	if (!h)
		return CUDA_ERROR_INVALID_VALUE;
	if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
		return CUDA_ERROR_NOT_SUPPORTED;
	int src = (int)(intptr_t)os_handle;
	struct stat st;
	if (src < 0 || fstat(src, &st) < 0 || st.st_size <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	struct fmemh *m = calloc(1, sizeof(*m));
	if (!m)
		return CUDA_ERROR_OUT_OF_MEMORY;
	m->fd = fcntl(src, F_DUPFD_CLOEXEC, 0);
	if (m->fd < 0) {
		free(m);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	m->magic = FAKE_MAGIC_MEMH;
	m->size = (size_t)st.st_size;
	m->prop.type = 1;
	m->prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	m->prop.location.type = 1;
	m->prop.location.id = memfd_dev(m->fd);
	m->refs = 1;
	if (fake_handle_add(m) < 0) {
		close(m->fd);
		free(m);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*h = (CUmemGenericAllocationHandle)(uintptr_t)m;
	return CUDA_SUCCESS;
}

CUresult fake_cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop, CUmemGenericAllocationHandle h)
{
	if (!prop)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mem_lock);
	struct fmemh *m = memh(h);
	if (m)
		*prop = m->prop;
	pthread_mutex_unlock(&mem_lock);
	return m ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult fake_cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *h, void *addr)
{
	if (!h)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mem_lock);
	struct falloc *a = find((uintptr_t)addr);
	int ok = a && a->kind == K_VMM;
	if (ok) {
		/* a retained handle holds a reference that cuMemRelease drops */
		a->mh->refs++;
		*h = (CUmemGenericAllocationHandle)(uintptr_t)a->mh;
	}
	pthread_mutex_unlock(&mem_lock);
	return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult fake_cuMemGetHandleForAddressRange(void *handle, CUdeviceptr dptr, size_t size, int type,
						   unsigned long long flags)
{
	if (!handle || type != 1 /* CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD */)
		return CUDA_ERROR_INVALID_VALUE;
	if (dptr % pagesz() || size % pagesz())
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mem_lock);
	struct falloc *a = find((uintptr_t)dptr);
	int fd = -1;
	if (a && dptr + size <= a->base + a->maplen) {
		int src = a->kind == K_VMM ? a->mh->fd : a->fd;
		if (src >= 0)
			fd = fcntl(src, F_DUPFD_CLOEXEC, 0);
	}
	pthread_mutex_unlock(&mem_lock);
	if (fd < 0)
		return CUDA_ERROR_INVALID_VALUE;
	*(int *)handle = fd;
	return CUDA_SUCCESS;
}

/* multicast objects (NVLS) are not emulated: the device says so too */
CUresult fake_cuMulticastCreate(CUmemGenericAllocationHandle *h, const CUmulticastObjectProp *prop)
{
	return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult fake_cuMulticastAddDevice(CUmemGenericAllocationHandle h, CUdevice d)
{
	return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult fake_cuMulticastBindMem(CUmemGenericAllocationHandle mc, size_t mo, CUmemGenericAllocationHandle m,
					size_t off, size_t size, unsigned long long flags)
{
	return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult fake_cuMulticastBindAddr(CUmemGenericAllocationHandle mc, size_t mo, CUdeviceptr p, size_t size,
					 unsigned long long flags)
{
	return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult fake_cuMulticastUnbind(CUmemGenericAllocationHandle mc, CUdevice d, size_t mo, size_t size)
{
	return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult fake_cuMulticastGetGranularity(size_t *g, const CUmulticastObjectProp *prop, int option)
{
	return CUDA_ERROR_NOT_SUPPORTED;
}

/* ---- legacy IPC ---------------------------------------------------------------------- */
struct ipc_handle {
	uint32_t magic;             /* "NRRI" */
	uint32_t version;
	int32_t pid;
	int32_t fd;
	uint64_t size;
	uint64_t ino;
	uint64_t devno;
	uint64_t buffer_id;
	int32_t dev;
	int32_t host;
	uint8_t pad[8];
};
_Static_assert(sizeof(struct ipc_handle) == 64, "IPC handle is 64 bytes");
#define IPC_MAGIC 0x4952524eu

CUresult fake_cuIpcGetMemHandle(CUipcMemHandle *out, CUdeviceptr p)
{
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mem_lock);
	struct falloc *a = find((uintptr_t)p);
	struct falloc c;
	int ok = a && a->kind == K_DEVICE && a->fd >= 0;
	if (ok)
		c = *a;
	pthread_mutex_unlock(&mem_lock);
	if (!ok)
		return CUDA_ERROR_INVALID_VALUE;
	struct stat st;
	if (fstat(c.fd, &st) < 0)
		return CUDA_ERROR_OPERATING_SYSTEM;
	struct ipc_handle h = { .magic = IPC_MAGIC, .version = 1, .pid = (int32_t)getpid(), .fd = c.fd,
				.size = c.maplen, .ino = (uint64_t)st.st_ino, .devno = (uint64_t)st.st_dev,
				.buffer_id = c.id, .dev = c.dev, .host = fake_host()->host_index };
	memset(out, 0, sizeof(*out));
	memcpy(out, &h, sizeof(h));
	return CUDA_SUCCESS;
}

static int reopen_remote_fd(int pid, int fd)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
	int nfd = open(path, O_RDWR | O_CLOEXEC);
	if (nfd >= 0)
		return nfd;
#ifdef SYS_pidfd_open
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd >= 0) {
		nfd = (int)syscall(SYS_pidfd_getfd, pfd, fd, 0);
		close(pfd);
		if (nfd >= 0)
			fcntl(nfd, F_SETFD, FD_CLOEXEC);
		return nfd;
	}
#endif
	return -1;
}

static CUresult ipc_open(CUdeviceptr *pd, const CUipcMemHandle *handle)
{
	int dev;
	struct fctx *c;
	CUresult rc = current_dev(&dev, &c);
	if (rc)
		return rc;
	if (!pd)
		return CUDA_ERROR_INVALID_VALUE;
	struct ipc_handle h;
	memcpy(&h, handle, sizeof(h));
	if (h.magic != IPC_MAGIC || h.version != 1 || h.size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	int fd = reopen_remote_fd(h.pid, h.fd);
	if (fd < 0) {
		fake_log("cuIpcOpenMemHandle: cannot open fd %d of process %d: %s", h.fd, h.pid, strerror(errno));
		return CUDA_ERROR_INVALID_VALUE;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_ino != h.ino || (uint64_t)st.st_dev != h.devno) {
		close(fd);
		fake_log("cuIpcOpenMemHandle: fd %d of process %d is no longer the exported buffer", h.fd, h.pid);
		return CUDA_ERROR_INVALID_VALUE;
	}
	void *p = mmap(NULL, h.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return CUDA_ERROR_MAP_FAILED;
	}
	struct falloc a = { .base = (uintptr_t)p, .size = h.size, .maplen = h.size, .kind = K_IPC, .fd = fd,
			    .dev = dev, .ctx = c };
	pthread_mutex_lock(&mem_lock);
	int r = add_alloc(&a);
	pthread_mutex_unlock(&mem_lock);
	if (r < 0) {
		munmap(p, h.size);
		close(fd);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*pd = (CUdeviceptr)(uintptr_t)p;
	return CUDA_SUCCESS;
}

CUresult fake_cuIpcOpenMemHandle(CUdeviceptr *pd, CUipcMemHandle h, unsigned flags)
{
	return ipc_open(pd, &h);
}

CUresult fake_cuIpcOpenMemHandle_v2(CUdeviceptr *pd, CUipcMemHandle h, unsigned flags)
{
	return ipc_open(pd, &h);
}

CUresult fake_cuIpcCloseMemHandle(CUdeviceptr p)
{
	return free_kind((uintptr_t)p, K_IPC, K_IPC);
}

/* the CUDA 8 forms, with a device number instead of a location */
CUresult fake_cuMemAdvise(CUdeviceptr p, size_t n, int advice, CUdevice d)
{
	return CUDA_SUCCESS;
}

CUresult fake_cuMemPrefetchAsync(CUdeviceptr p, size_t n, CUdevice d, CUstream s)
{
	if (!fake_valid_stream(s))
		return CUDA_ERROR_INVALID_HANDLE;
	return CUDA_SUCCESS;
}
