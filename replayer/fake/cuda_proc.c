/* SPDX-License-Identifier: MIT */
/*
 * cuda_proc.c - cuGetProcAddress (the versioned entry-point table) and
 * cuGetExportTable (the private tables the statically linked CUDA runtime
 * asks for; see FAKE_CUDA.md in the design notes).
 *
 * The table maps (base name, CUDA version) to the variant whose ABI that
 * version introduced: a lookup returns the entry with the highest version
 * not above the requested one (cuMemAlloc at 3020+ is cuMemAlloc_v2,
 * cuGetProcAddress at 12000+ the 5-argument _v2, ...). A name the driver
 * lacks answers CUDA_ERROR_NOT_FOUND with status SYMBOL_NOT_FOUND.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda.h"
#include "nrr_fake_cuda_entry.h"

/* Entries name the exported symbol; the addresses are resolved once with
 * dlsym on this library itself (no prototypes needed here). */
struct entry {
	const char *name;
	int version;
	const char *sym;
};

static const struct entry table[] = {
#define T(name, ver, sym) { name, ver, #sym },
#include "nrr_fake_cuda_table.h" /* since= and entry lines of formats/api/cuda_driver.api */
#undef T
};

#define NTABLE (sizeof(table) / sizeof(table[0]))

static void *addrs[NTABLE];
static pthread_once_t addrs_once = PTHREAD_ONCE_INIT;

static void resolve(void)
{
	Dl_info info;
	void *self = NULL;
	if (dladdr((void *)resolve, &info) && info.dli_fname)
		self = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
	for (size_t i = 0; i < NTABLE; i++) {
		addrs[i] = self ? dlsym(self, table[i].sym) : NULL;
		if (!addrs[i])
			fake_log("internal error: entry point %s (%s) is not exported", table[i].sym, table[i].name);
	}
}

void *fake_proc_lookup(const char *name, int version, int *status)
{
	pthread_once(&addrs_once, resolve);
	const struct entry *best = NULL;
	int any = 0;
	for (size_t i = 0; i < NTABLE; i++) {
		if (strcmp(table[i].name, name) != 0)
			continue;
		any = 1;
		if (table[i].version <= version && (!best || table[i].version > best->version))
			best = &table[i];
	}
	if (!best) {
		*status = any ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
		return NULL;
	}
	void *fn = addrs[best - table];
	*status = fn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	return fn;
}

/* names asked for and not found, reported once each with NCCLRR_FAKE_DEBUG */
static void note_missing(const char *name, int version, int status)
{
	if (!fake_debug)
		return;
	fake_log("cuGetProcAddress: %s (version %d) %s", name, version,
		 status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT ? "needs a newer version" : "not provided");
}

static CUresult proc(const char *sym, void **pfn, int version, cuuint64_t flags, int *status)
{
	int st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	if (!sym || !pfn) {
		if (status)
			*status = st;
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (!*sym) {
		/* the static runtime's first probe: a real driver (CUDA 13, H100
		 * and H200 recordings in traces/h100) answers it with success and
		 * no pointer */
		*pfn = NULL;
		if (status)
			*status = CU_GET_PROC_ADDRESS_SUCCESS;
		return CUDA_SUCCESS;
	}
	void *fn = fake_proc_lookup(sym, version, &st);
	*pfn = fn;
	if (status)
		*status = st;
	if (!fn) {
		note_missing(sym, version, st);
		return CUDA_ERROR_NOT_FOUND;
	}
	return CUDA_SUCCESS;
}

CUresult fake_cuGetProcAddress(const char *sym, void **pfn, int version, cuuint64_t flags)
{
	return proc(sym, pfn, version, flags, NULL);
}

CUresult fake_cuGetProcAddress_v2(const char *sym, void **pfn, int version, cuuint64_t flags, int *status)
{
	return proc(sym, pfn, version, flags, status);
}

/* ---- private export tables ------------------------------------------------------ */
typedef struct {
	unsigned char b[16];
} uuid16;

static int uuid_is(const void *id, const char *s)
{
	unsigned char want[16];
	int n = 0;
	for (const char *c = s; *c && n < 16; c++) {
		if (*c == '-')
			continue;
		unsigned v;
		if (sscanf(c, "%2x", &v) != 1)
			return 0;
		want[n++] = (unsigned char)v;
		c++;
	}
	return n == 16 && memcmp(id, want, 16) == 0;
}

/* runtime interface */
struct wrapper {
	int magic;
	int version;
	const void *data;
	void *filename_or_fatbins;
};

static CUresult rt_module_from_wrapper(CUmodule *pm, const struct wrapper *w)
{
	FAKE_DBG("export table slot %s", __func__);
	if (!pm || !w)
		return CUDA_ERROR_INVALID_VALUE;
	const void *img = w->magic == 0x466243b1 ? w->data : (const void *)w;
	return fake_module_from_image(pm, img, 0);
}

static CUresult rt_retain_primary(CUcontext *pc, CUdevice d)
{
	FAKE_DBG("export table slot %s", __func__);
	return fake_primary_retain(pc, d);
}

static CUresult rt_module_v6(CUmodule *pm, const struct wrapper *w, void *a, void *b, unsigned c)
{
	FAKE_DBG("export table slot %s", __func__);
	return rt_module_from_wrapper(pm, w);
}

static CUresult rt_noop(void)
{
	FAKE_DBG("export table slot %s", __func__);
	return CUDA_SUCCESS;
}

static CUresult rt_module_v8(const void *fatbin, CUmodule *pm, void *a, void *b, unsigned c)
{
	FAKE_DBG("export table slot %s", __func__);
	if (!pm)
		return CUDA_ERROR_INVALID_VALUE;
	return fake_module_from_image(pm, fatbin, 0);
}

static const void *tbl_runtime[13] = {
	(void *)(uintptr_t)(13 * sizeof(void *)),
	(void *)rt_module_from_wrapper,
	(void *)rt_retain_primary,
	NULL, NULL, NULL,
	(void *)rt_module_v6,
	(void *)rt_noop,
	(void *)rt_module_v8,
	NULL, NULL, NULL,
	(void *)rt_noop,
};

/* tool callback hooks */
static unsigned char tool_buf1[1024];
static unsigned char tool_buf2[14];

static CUresult tool_noop(void)
{
	FAKE_DBG("export table slot %s", __func__);
	return CUDA_SUCCESS;
}

static CUresult tool_buffer1(void **buf, size_t *size)
{
	FAKE_DBG("export table slot %s", __func__);
	if (buf)
		*buf = tool_buf1;
	if (size)
		*size = sizeof(tool_buf1);
	return CUDA_SUCCESS;
}

static CUresult tool_buffer2(void **buf, size_t *size)
{
	FAKE_DBG("export table slot %s", __func__);
	if (buf)
		*buf = tool_buf2;
	if (size)
		*size = sizeof(tool_buf2);
	return CUDA_SUCCESS;
}

static const void *tbl_tools[7] = {
	(void *)(uintptr_t)(7 * sizeof(void *)),
	(void *)tool_noop,
	(void *)tool_buffer1,
	NULL,
	(void *)tool_noop,
	NULL,
	(void *)tool_buffer2,
};

static const void *tbl_tools_tls[4] = {
	(void *)(uintptr_t)(4 * sizeof(void *)),
	NULL,
	(void *)tool_noop,
	NULL,
};

/* context-local storage */
struct cls {
	struct fctx *ctx;
	void *key;
	void *value;
	void (*dtor)(struct fctx *, void *, void *);
	struct cls *next;
};
static struct cls *cls_list;
static pthread_mutex_t cls_lock = PTHREAD_MUTEX_INITIALIZER;

static CUresult cls_put(CUcontext ctx, void *key, void *value, void (*dtor)(struct fctx *, void *, void *))
{
	FAKE_DBG("export table slot %s", __func__);
	struct fctx *c = ctx ? ctx : fake_current_ctx();
	if (!c)
		return CUDA_ERROR_INVALID_CONTEXT;
	pthread_mutex_lock(&cls_lock);
	struct cls *e;
	for (e = cls_list; e; e = e->next)
		if (e->ctx == c && e->key == key)
			break;
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e) {
			pthread_mutex_unlock(&cls_lock);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		e->ctx = c;
		e->key = key;
		e->next = cls_list;
		cls_list = e;
	}
	e->value = value;
	e->dtor = dtor;
	pthread_mutex_unlock(&cls_lock);
	return CUDA_SUCCESS;
}

static CUresult cls_delete(CUcontext ctx, void *key)
{
	FAKE_DBG("export table slot %s", __func__);
	struct fctx *c = ctx ? ctx : fake_current_ctx();
	pthread_mutex_lock(&cls_lock);
	for (struct cls **pe = &cls_list; *pe; pe = &(*pe)->next)
		if ((*pe)->ctx == c && (*pe)->key == key) {
			struct cls *e = *pe;
			*pe = e->next;
			free(e);
			break;
		}
	pthread_mutex_unlock(&cls_lock);
	return CUDA_SUCCESS;
}

static CUresult cls_get(void **value, CUcontext ctx, void *key)
{
	FAKE_DBG("export table slot %s", __func__);
	struct fctx *c = ctx ? ctx : fake_current_ctx();
	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	*value = NULL;
	pthread_mutex_lock(&cls_lock);
	for (struct cls *e = cls_list; e; e = e->next)
		if (e->ctx == c && e->key == key) {
			*value = e->value;
			pthread_mutex_unlock(&cls_lock);
			return CUDA_SUCCESS;
		}
	pthread_mutex_unlock(&cls_lock);
	return CUDA_ERROR_NOT_FOUND;
}

static const void *tbl_cls[3] = {
	(void *)cls_put,
	(void *)cls_delete,
	(void *)cls_get,
};

/* context checks */
static CUresult ctx_check(CUcontext ctx, unsigned *result, void **detail)
{
	FAKE_DBG("export table slot %s", __func__);
	if (result)
		*result = 0;
	if (detail)
		*detail = NULL;
	return CUDA_SUCCESS;
}

/* returns a flag (the runtime compares the result with 1), not a CUresult */
static int ctx_flags(void *a, void *b, void *c)
{
	FAKE_DBG("export table slot %s", __func__);
	return 0;
}

static const void *tbl_ctx_check[4] = {
	(void *)(uintptr_t)(4 * sizeof(void *)),
	NULL,
	(void *)ctx_check,
	(void *)ctx_flags,
};

CUresult fake_cuGetExportTable(const void **table_out, const CUuuid *id)
{
	if (!table_out || !id)
		return CUDA_ERROR_INVALID_VALUE;
	const void *t = NULL;
	if (uuid_is(id, "6bd5fb6c-5bf4-e74a-8987-d93912fd9df9"))
		t = tbl_runtime;
	else if (uuid_is(id, "a094798c-2e74-2e74-93f2-0800200c0a66"))
		t = tbl_tools;
	else if (uuid_is(id, "42d85a81-23f6-cb47-8298-f6e78a3aecdc"))
		t = tbl_tools_tls;
	else if (uuid_is(id, "c693336e-1121-df11-a8c3-68f355d89593"))
		t = tbl_cls;
	else if (uuid_is(id, "263e8860-7cd2-6143-92f6-bbd5006dfa7e"))
		t = tbl_ctx_check;
	const unsigned char *b = id->bytes;
	FAKE_DBG("cuGetExportTable: %02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x: %s",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
		 b[15], t ? "provided" : "not provided");
	if (!t) {
		/* The runtime cannot start without this one: say so once, plainly,
		 * instead of leaving the user with 'named symbol not found'. */
		static _Atomic int told;
		if (uuid_is(id, "d4082055-bde6-704b-8d34-ba123c66e1f2") && !atomic_exchange(&told, 1))
			fake_log("the CUDA runtime asked for its driver integrity check (export table "
				 "d4082055-bde6-704b-8d34-ba123c66e1f2), which the fake driver does not "
				 "emulate: this runtime will fail to initialize (\"named symbol not found\"). "
				 "Use an NCCL whose CUDA runtime does not require it; see replayer/fake/README.md");
		*table_out = NULL;
		return CUDA_ERROR_NOT_FOUND;
	}
	*table_out = t;
	return CUDA_SUCCESS;
}
