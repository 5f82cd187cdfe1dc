/* SPDX-License-Identifier: MIT */
/*
 * rcuda.c - replay of CUDA driver, NVML and verbs calls.
 *
 * A recorded call is rebuilt into a real one through the table generated
 * from formats/api/ (nrr_replay_gen.c, `ncclrr_gen.py --emit replay`): one
 * call thunk per function with its exact prototype, and an out-reader that
 * reads the out parameters as the tracer recorded them.  What each
 * parameter gets is decided here from the trace's schema (direction and
 * encoding):
 *   - scalars: the recorded value;
 *   - handles (`handle:KIND`) and untyped pointers (`x`): remapped through
 *     this process's tables, device and host pointers by range (a pointer
 *     inside a recorded allocation maps to the live base + offset);
 *   - file descriptors: through nrr_rfd_get() (what the socket replay
 *     received, or what a replayed export made);
 *   - byte, string and struct in-values: a zero-padded copy of the
 *     recorded bytes;
 *   - out parameters: local storage, compared after the call with the
 *     recording (handles and pointers: NULL vs non-NULL and consistent
 *     remapping; everything else exactly).
 * A few calls need more than the description says (allocation sizes, host
 * scratch buffers, IPC handles crossing processes, pointer-valued
 * attributes): the `specials` table below.
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "callfmt.h"
#include "nrr_hash.h"
#include "nrr_replay_gen.h"
#include "replay_internal.h"

#define SCRATCH_MIN 4096u          /* storage of an out parameter at least */
#define IPC_TIMEOUT_MS 30000       /* wait for another worker's IPC handle */
#define NBUCKETS 4096u

/* ---------------------------------------------------------------- specials */
enum sp_what {
	SP_RANGE = 1,   /* out pointer creates a range whose size is in-arg @arg */
	SP_SCRATCH,     /* in host pointer: a scratch buffer of @arg bytes when not in a range */
	SP_HOSTREG,     /* in host pointer registered: scratch of @arg bytes, kept as a range */
	SP_DROPRANGE,   /* in pointer: its range ends with this call */
	SP_NOCMP,       /* out value not compared (entry points, an HCA model's description) */
	SP_IPC_PUT,     /* out IPC handle bytes: published (recorded -> live) under kind @arg */
	SP_IPC_GET,     /* in IPC handle bytes: the live ones another worker published */
	SP_PTRATTR,     /* cuPointerGetAttribute: data is a pointer/handle for some attributes */
	SP_CMPHEAD,     /* out struct: only its members up to @arg (in the layout the description declares:
			 * struct:TYPE and its `c` line) are the callee's; the rest is the caller's memory,
			 * uninitialized: ibv_query_port's exported entry fills the older, shorter
			 * struct ibv_port_attr */
	SP_IMAGE,       /* in code image (fatbin, cubin) in the program's memory, not recorded: the
			 * fake driver keeps the pointer and never reads it, so a page of zeros */
	SP_NULLOUT,     /* out count a program may pass as NULL, which the trace records as 0: a recorded
			 * 0 is not compared (ibv_rc_pingpong calls ibv_get_device_list(NULL)) */
};

static const struct special {
	const char *fn, *param;
	int what;
	const char *arg;
} specials[] = {
	{ "ibv_query_port", "port_attr", SP_CMPHEAD, "flags" },
	/* the program's buffer registered with the NIC: scratch memory of its
	 * length when no replayed call made it (NCCL's host FIFOs) */
	{ "ibv_reg_mr", "addr", SP_HOSTREG, "length" },
	{ "ibv_reg_mr_iova2", "addr", SP_HOSTREG, "length" },
	{ "cuMemAlloc_v2", "dptr", SP_RANGE, "bytesize" },
	{ "cuMemAddressReserve", "ptr", SP_RANGE, "size" },
	{ "cuMemAllocHost_v2", "pp", SP_RANGE, "bytesize" },
	{ "cuMemHostAlloc", "pp", SP_RANGE, "bytesize" },
	{ "cuMemcpyDtoH_v2", "dstHost", SP_SCRATCH, "ByteCount" },
	{ "cuMemcpyHtoD_v2", "srcHost", SP_SCRATCH, "ByteCount" },
	/* unified addressing: either side may be the program's host memory */
	{ "cuMemcpy", "dst", SP_SCRATCH, "ByteCount" },
	{ "cuMemcpy", "src", SP_SCRATCH, "ByteCount" },
	{ "cuMemcpyAsync", "dst", SP_SCRATCH, "ByteCount" },
	{ "cuMemcpyAsync", "src", SP_SCRATCH, "ByteCount" },
	{ "cuMemHostRegister_v2", "p", SP_HOSTREG, "bytesize" },
	{ "cuMemHostUnregister", "p", SP_DROPRANGE, NULL },
	{ "cuMemFreeHost", "p", SP_DROPRANGE, NULL },
	{ "ibv_get_device_list", "num_devices", SP_NULLOUT, NULL },
	/* the HCA model's description (firmware, vendor ids, limits such as
	 * max_srq): a trace from another model (a real ConnectX, an older fake
	 * verbs) differs in it everywhere, and replay runs on the fake's
	 * model; a limit that matters shows where the program hits it (a
	 * create or post failing) */
	{ "ibv_query_device", "device_attr", SP_NOCMP, NULL },
	{ "ibv_query_device_ex", "attr", SP_NOCMP, NULL },
	{ "cuGetProcAddress", "pfn", SP_NOCMP, NULL },
	{ "cuGetProcAddress_v2", "pfn", SP_NOCMP, NULL },
	{ "cuIpcGetMemHandle", "pHandle", SP_IPC_PUT, "ipc" },
	{ "cuIpcOpenMemHandle_v2", "handle", SP_IPC_GET, "ipc" },
	{ "cuIpcGetEventHandle", "pHandle", SP_IPC_PUT, "ipcev" },
	{ "cuIpcOpenEventHandle", "handle", SP_IPC_GET, "ipcev" },
	{ "cuPointerGetAttribute", "data", SP_PTRATTR, "attribute" },
	{ "cuModuleLoadData", "image", SP_IMAGE, NULL },
	{ "cuLibraryLoadData", "code", SP_IMAGE, NULL },
};

static const struct special *special_of(const char *fn, const char *param)
{
	for (size_t i = 0; i < sizeof(specials) / sizeof(specials[0]); i++)
		if (!strcmp(specials[i].fn, fn) && !strcmp(specials[i].param, param))
			return &specials[i];
	return NULL;
}

/* The coordinator's set of the IPC handles of kind @kind ("ipc", "ipcev")
 * that replayed processes make. */
static const char *made_set(const char *kind)
{
	return !strcmp(kind, "ipc") ? "isel" : "iesel";
}

const char *nrr_rcuda_ipc_made(const nrr_fn_schema *fn, const char **param)
{
	for (size_t i = 0; i < sizeof(specials) / sizeof(specials[0]); i++)
		if (specials[i].what == SP_IPC_PUT && !strcmp(specials[i].fn, fn->name)) {
			*param = specials[i].param;
			return made_set(specials[i].arg);
		}
	return NULL;
}

/* ---------------------------------------------------------------- tables */
struct hnode {
	struct hnode *next;
	const char *kind;   /* interned: the schema's kind string compared by content */
	uint64_t rec, live;
};

struct range {
	uint64_t rec, size, live;
	void *owned;        /* scratch mapping made here (munmap when dropped) */
	size_t owned_len;
};

struct nrr_rcuda {
	nrr_rproc *p;
	int inject;
	void *lib[3];              /* cuda_driver, nvml, verbs */
	char libpath[3][1024];
	nrr_rc_fptr *fp;           /* per nrr_rc_fns entry, NULL when missing */
	struct nrr_fn_memo gen;    /* gen_entry */
	pthread_mutex_t mu;
	struct hnode *bucket[NBUCKETS];
	struct range *ranges;
	size_t nranges, cap;
	CUresult (*addr_range)(CUdeviceptr *, size_t *, CUdeviceptr);
	/* recorded values (handles, address ranges) that stand for objects of
	 * processes that are not replayed (--ranks) or that no replayed call
	 * made: calls using them are answered from the trace */
	struct taint { uint64_t rec, size; } *taint;
	size_t ntaint, taintcap;
};

static unsigned hkey(const char *kind, uint64_t rec)
{
	uint64_t h = nrr_hash_str(kind, rec * 0x9e3779b97f4a7c15ull);
	return (unsigned)(h >> 40) % NBUCKETS;
}

static struct hnode *h_find(nrr_rcuda *x, const char *kind, uint64_t rec)
{
	for (struct hnode *n = x->bucket[hkey(kind, rec)]; n; n = n->next)
		if (n->rec == rec && !strcmp(n->kind, kind))
			return n;
	return NULL;
}

static void h_put(nrr_rcuda *x, const char *kind, uint64_t rec, uint64_t live)
{
	struct hnode *n = h_find(x, kind, rec);
	if (n) {
		n->live = live;
		return;
	}
	n = calloc(1, sizeof(*n));
	if (!n)
		return;
	n->kind = kind;   /* schema strings live as long as the trace's schema */
	n->rec = rec;
	n->live = live;
	unsigned b = hkey(kind, rec);
	n->next = x->bucket[b];
	x->bucket[b] = n;
}

static void h_del(nrr_rcuda *x, const char *kind, uint64_t rec)
{
	for (struct hnode **pp = &x->bucket[hkey(kind, rec)]; *pp; pp = &(*pp)->next)
		if ((*pp)->rec == rec && !strcmp((*pp)->kind, kind)) {
			struct hnode *n = *pp;
			*pp = n->next;
			free(n);
			return;
		}
}

/* newest range holding @rec */
static struct range *r_find(nrr_rcuda *x, uint64_t rec)
{
	for (size_t i = x->nranges; i-- > 0;)
		if (rec >= x->ranges[i].rec && rec - x->ranges[i].rec < x->ranges[i].size)
			return &x->ranges[i];
	return NULL;
}

static void r_drop_at(nrr_rcuda *x, size_t i)
{
	if (x->ranges[i].owned)
		munmap(x->ranges[i].owned, x->ranges[i].owned_len);
	x->ranges[i] = x->ranges[--x->nranges];
}

static void r_put(nrr_rcuda *x, uint64_t rec, uint64_t size, uint64_t live, void *owned, size_t owned_len)
{
	/* a new allocation at a recorded base replaces an old one there */
	for (size_t i = x->nranges; i-- > 0;)
		if (x->ranges[i].rec == rec)
			r_drop_at(x, i);
	if (!nrr_grow(&x->ranges, x->nranges, &x->cap, sizeof(*x->ranges)))
		return;
	x->ranges[x->nranges++] = (struct range){ rec, size ? size : 1, live, owned, owned_len };
}

static void r_drop(nrr_rcuda *x, uint64_t rec)
{
	for (size_t i = x->nranges; i-- > 0;)
		if (x->ranges[i].rec == rec) {
			r_drop_at(x, i);
			return;
		}
}

static bool is_addr_kind(const nrr_arg_schema *a)
{
	return a->fmt == NRR_FMT_X || (a->fmt == NRR_FMT_HANDLE && a->kind && !strcmp(a->kind, "devptr"));
}

/* recorded -> live; @known says whether a table knew it (0 is always 0) */
static uint64_t remap(nrr_rcuda *x, const nrr_arg_schema *a, uint64_t rec, bool *known)
{
	*known = true;
	if (!rec)
		return 0;
	uint64_t live = rec;
	pthread_mutex_lock(&x->mu);
	if (is_addr_kind(a)) {
		struct range *r = r_find(x, rec);
		if (r)
			live = r->live + (rec - r->rec);
		else
			*known = false;
	} else {
		struct hnode *n = h_find(x, a->kind ? a->kind : "?", rec);
		if (n)
			live = n->live;
		else
			*known = false;
	}
	pthread_mutex_unlock(&x->mu);
	return live;
}

/* ---------------------------------------------------------------- text */
static void why(nrr_rres *res, const char *f, ...) __attribute__((format(printf, 2, 3)));
static void why(nrr_rres *res, const char *f, ...)
{
	va_list ap;
	va_start(ap, f);
	vsnprintf(res->why, sizeof(res->why), f, ap);
	va_end(ap);
}

/* "CUDA_ERROR_INVALID_VALUE (1)", "0x7f00", "NULL", "42" */
static const char *fmt_val(char *buf, size_t n, uint8_t fmt, const nrr_enum_schema *t, uint64_t v)
{
	const char *name = t ? nrr_enum_name(t, (int64_t)v) : NULL;
	if (name)
		snprintf(buf, n, "%s (%" PRId64 ")", name, (int64_t)v);
	else if (fmt == NRR_FMT_X || fmt == NRR_FMT_HANDLE)
		snprintf(buf, n, v ? "0x%" PRIx64 : "NULL", v);
	else if (fmt == NRR_FMT_FLAGS)
		snprintf(buf, n, "0x%" PRIx64, v);
	else if (fmt == NRR_FMT_I || fmt == NRR_FMT_ENUM || fmt == NRR_FMT_FD)
		snprintf(buf, n, "%" PRId64, (int64_t)v);
	else
		snprintf(buf, n, "%" PRIu64, v);
	return buf;
}

static const char *fmt_result(char *buf, size_t n, const nrr_fn_schema *fn, int64_t v)
{
	if (fn->ret == NRR_RET_PTR)
		return fmt_val(buf, n, NRR_FMT_X, NULL, (uint64_t)v);
	return fmt_val(buf, n, NRR_FMT_I, fn->rtable, (uint64_t)v);
}

/* ---------------------------------------------------------------- open */
static const char *const lib_names[3] = { "libcuda.so.1", "libnvidia-ml.so.1", "libibverbs.so.1" };

static int dom_index(const char *d)
{
	return !strcmp(d, "cuda_driver") ? 0 : !strcmp(d, "nvml") ? 1 : !strcmp(d, "verbs") ? 2 : -1;
}

int nrr_rcuda_open(nrr_rcuda **out, nrr_rproc *p, const nrr_rcuda_opts *o, char *err, size_t errlen)
{
	*out = NULL;
	if (!o || !o->fake_libdir) {
		snprintf(err, errlen, "no fake runtime directory (libcuda.so.1, libnvidia-ml.so.1) given");
		return -EINVAL;
	}
	nrr_rcuda *x = calloc(1, sizeof(*x));
	if (!x || !(x->fp = calloc(nrr_rc_nfns, sizeof(*x->fp)))) {
		free(x);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	x->p = p;
	x->inject = o->inject;
	nrr_fn_memo_init(&x->gen, o->schema);
	pthread_mutex_init(&x->mu, NULL);
	/* the fake runtime reads its virtual host from the environment the
	 * first time it is asked; faults of the recorded run are not replayed
	 * by the runtime (ERRORS injects them from the trace) */
	char num[32];
	if (o->topo)
		setenv("NCCLRR_TOPO", o->topo, 1);
	if (o->host)
		setenv("NCCLRR_HOST", o->host, 1);
	if (o->rank >= 0) {
		snprintf(num, sizeof(num), "%d", o->rank);
		setenv("NCCLRR_RANK", num, 1);
	}
	unsetenv("NCCLRR_FAULT");
	for (int i = 0; i < 2; i++) {
		snprintf(x->libpath[i], sizeof(x->libpath[i]), "%s/%s", o->fake_libdir, lib_names[i]);
		x->lib[i] = dlopen(x->libpath[i], RTLD_NOW | RTLD_LOCAL);
		if (!x->lib[i]) {
			snprintf(err, errlen, "cannot load the fake runtime %s: %s (build it, or give the directory "
				 "holding libcuda.so.1 and libnvidia-ml.so.1)", x->libpath[i], dlerror());
			nrr_rcuda_close(x);
			return -ENOENT;
		}
	}
	/* verbs: the fake cluster's (the virtual host's NICs, as a recording
	 * on the fake cluster saw them), else the system's; no library or no
	 * devices is fine (calls then answer as they do, or are unsupported
	 * when the symbol is missing) */
	snprintf(x->libpath[2], sizeof(x->libpath[2]), "%s/%s", o->fake_libdir, lib_names[2]);
	x->lib[2] = dlopen(x->libpath[2], RTLD_NOW | RTLD_LOCAL);
	if (!x->lib[2]) {
		snprintf(x->libpath[2], sizeof(x->libpath[2]), "%s", lib_names[2]);
		x->lib[2] = dlopen(lib_names[2], RTLD_NOW | RTLD_LOCAL);
	}
	for (size_t i = 0; i < nrr_rc_nfns; i++) {
		int d = dom_index(nrr_rc_fns[i].domain);
		if (d >= 0 && x->lib[d] && !nrr_rc_fns[i].unsupported)
			*(void **)&x->fp[i] = dlsym(x->lib[d], nrr_rc_fns[i].name);
	}
	*(void **)&x->addr_range = dlsym(x->lib[0], "cuMemGetAddressRange_v2");
	*out = x;
	return 0;
}

void nrr_rcuda_close(nrr_rcuda *x)
{
	if (!x)
		return;
	for (unsigned b = 0; b < NBUCKETS; b++)
		for (struct hnode *n = x->bucket[b], *nx; n; n = nx) {
			nx = n->next;
			free(n);
		}
	while (x->nranges)
		r_drop_at(x, x->nranges - 1);
	free(x->ranges);
	free(x->taint);
	/* the libraries stay loaded: the fake runtime keeps process state
	 * (shared memory, threads) that must not be unmapped under them */
	free(x->fp);
	free((void *)x->gen.v);
	pthread_mutex_destroy(&x->mu);
	free(x);
}

uint64_t nrr_rcuda_handle(nrr_rcuda *x, const char *kind, uint64_t rec, bool *known)
{
	pthread_mutex_lock(&x->mu);
	struct hnode *n = h_find(x, kind, rec);
	uint64_t live = n ? n->live : 0;
	pthread_mutex_unlock(&x->mu);
	*known = n != NULL || !rec;
	return live;
}

void nrr_rcuda_bind(nrr_rcuda *x, const char *kind, uint64_t rec, uint64_t live)
{
	pthread_mutex_lock(&x->mu);
	h_put(x, kind, rec, live);
	pthread_mutex_unlock(&x->mu);
}

void *nrr_rcuda_verbs_lib(nrr_rcuda *x)
{
	return x->lib[2];
}

nrr_rproc *nrr_rcuda_proc(nrr_rcuda *x)
{
	return x->p;
}

bool nrr_rcuda_handles(const nrr_fn_schema *fn)
{
	return fn && fn->domain && dom_index(fn->domain) >= 0;
}

static const nrr_rc_fn *gen_find(const char *name, size_t *idx)
{
	size_t lo = 0, hi = nrr_rc_nfns;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(nrr_rc_fns[mid].name, name);
		if (!c) {
			*idx = mid;
			return &nrr_rc_fns[mid];
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* gen_find's answer for @fn: its index + 1, -1 for none */
static int32_t gen_index(const nrr_fn_schema *fn)
{
	size_t i;
	return gen_find(fn->name, &i) ? (int32_t)i + 1 : -1;
}

static const nrr_rc_fn *gen_entry(nrr_rcuda *x, const nrr_fn_schema *fn, size_t *idx)
{
	int32_t v = nrr_fn_memo(&x->gen, fn, gen_index);
	if (v < 0)
		return NULL;
	*idx = (size_t)v - 1;
	return &nrr_rc_fns[*idx];
}

/* ---------------------------------------------------------------- call */
struct pstate {
	int j;                      /* index in c->fn->args, -1 when not recorded */
	const struct special *sp;
	void *buf;                  /* storage made for this parameter (freed after) */
	size_t buflen;
};

static int64_t arg_int(const nrr_call *c, const char *name, bool *ok)
{
	for (uint16_t j = 0; j < c->fn->nargs; j++)
		if (!strcmp(c->fn->args[j].name, name) && (c->present >> j & 1)) {
			*ok = true;
			return (int64_t)c->args[j].u;
		}
	*ok = false;
	return 0;
}

static bool is_ipc(const struct special *sp)
{
	return sp && (sp->what == SP_IPC_PUT || sp->what == SP_IPC_GET);
}

/* answer from the trace: no call; fds the call made get a live stand-in */
static void inject(nrr_rcuda *x, const nrr_call *c, nrr_rres *res)
{
	res->status = NRR_R_INJECTED;
	res->result = c->result;
	if (nrr_call_failed(c))
		return;
	for (uint16_t j = 0; j < c->fn->nargs; j++) {
		const nrr_arg_schema *a = &c->fn->args[j];
		if (a->fmt == NRR_FMT_FD && (a->dir & NRR_DIR_OUT) && (c->present >> j & 1) &&
		    (int64_t)c->args[j].u >= 0 && x->p) {
			int fd = memfd_create("ncclrr-injected", MFD_CLOEXEC);
			if (fd >= 0)
				nrr_rfd_put(x->p, (int64_t)c->args[j].u, fd);
		}
	}
}

/* Under x->mu. */
static bool tainted(nrr_rcuda *x, uint64_t rec)
{
	for (size_t i = 0; i < x->ntaint; i++)
		if (rec >= x->taint[i].rec && rec - x->taint[i].rec < x->taint[i].size)
			return true;
	return false;
}

static void taint_add(nrr_rcuda *x, uint64_t rec, uint64_t size)
{
	if (rec && !tainted(x, rec) && nrr_grow(&x->taint, x->ntaint, &x->taintcap, sizeof(*x->taint)))
		x->taint[x->ntaint++] = (struct taint){ rec, size ? size : 1 };
}

/*
 * Does @c use something that came from outside the replay: a descriptor
 * received from a process that is not replayed, a tainted value, or a
 * handle no replayed call made?  Passing such a value to the live driver
 * would hand it a pointer it never gave out; the call is answered from
 * the trace instead, and what it touches and makes is tainted in turn.
 */
static bool taint_check(nrr_rcuda *x, const nrr_call *c, char *what, size_t wlen)
{
	bool hit = false;
	pthread_mutex_lock(&x->mu);
	for (uint16_t j = 0; j < c->fn->nargs && !hit; j++) {
		const nrr_arg_schema *a = &c->fn->args[j];
		uint64_t v = c->args[j].u;
		if (!(c->present >> j & 1) || !(a->dir & NRR_DIR_IN) || a->wire == NRR_WIRE_B)
			continue;
		if (a->fmt == NRR_FMT_FD) {
			pthread_mutex_unlock(&x->mu);
			hit = x->p && (int64_t)v >= 0 && nrr_rfd_served(x->p, (int64_t)v);
			pthread_mutex_lock(&x->mu);
		} else if (a->fmt == NRR_FMT_HANDLE && v) {
			hit = tainted(x, v) ||
			      (!is_addr_kind(a) && !h_find(x, a->kind ? a->kind : "?", v) && x->ntaint);
		}
		if (hit)
			snprintf(what, wlen, "%s", a->name);
	}
	if (hit) {
		for (uint16_t j = 0; j < c->fn->nargs; j++) {
			const nrr_arg_schema *a = &c->fn->args[j];
			uint64_t v = c->args[j].u;
			if (!(c->present >> j & 1) || a->fmt != NRR_FMT_HANDLE || !v)
				continue;
			struct range *r = is_addr_kind(a) ? r_find(x, v) : NULL;
			if (r)
				taint_add(x, r->rec, r->size);
			else
				taint_add(x, v, 1);
		}
	}
	pthread_mutex_unlock(&x->mu);
	return hit;
}

/* One member's value for a message: an unsigned number for 1, 2, 4 or 8
 * bytes (little-endian, as recorded), else its first bytes in hex. */
static const char *member_val(char *buf, size_t n, const uint8_t *p, uint32_t size)
{
	if (size == 1 || size == 2 || size == 4 || size == 8) {
		uint64_t v = 0;
		for (uint32_t i = size; i-- > 0;)
			v = v << 8 | p[i];
		snprintf(buf, n, "%" PRIu64, v);
		return buf;
	}
	size_t o = 0;
	for (uint32_t i = 0; i < size && i < 16 && o + 3 < n; i++)
		o += (size_t)snprintf(buf + o, n - o, "%02x", p[i]);
	if (size > 16 && o + 4 < n)
		snprintf(buf + o, n - o, "...");
	return buf;
}

/* Compare an out struct as recorded (@rec, @reclen bytes) and as replayed
 * (@live, @livelen) member by member, each at its offset in @fields (the
 * layout this build's description declares), up to and including @last
 * (NULL: all of them): bytes between members and after @last are not the
 * callee's. @return true when equal; else false, res->why naming the member. */
static bool cmp_members(const char *fn, const char *param, const nrr_rc_field *fields, const char *last, const uint8_t *rec,
		 size_t reclen, const uint8_t *live, size_t livelen, nrr_rres *res)
{
	char rb[64], lb[64];
	if (!fields) {
		why(res, "%s out %s: this build's description (formats/api/) gives it no member layout to compare "
			 "(struct:TYPE and a `c` line declaring TYPE)", fn, param);
		return false;
	}
	for (const nrr_rc_field *f = fields; f->name; f++) {
		if ((size_t)f->off + f->size > reclen || (size_t)f->off + f->size > livelen) {
			why(res, "out %s.%s: bytes %u..%u, but the recording holds %zu (a layout other than this "
				 "build's formats/api/types.api)", param, f->name, f->off, f->off + f->size - 1, reclen);
			return false;
		}
		if (memcmp(rec + f->off, live + f->off, f->size) != 0) {
			why(res, "out %s.%s: recorded %s, replayed %s", param, f->name,
			    member_val(rb, sizeof(rb), rec + f->off, f->size),
			    member_val(lb, sizeof(lb), live + f->off, f->size));
			return false;
		}
		if (last && !strcmp(f->name, last))
			return true;
	}
	if (last) {
		why(res, "%s out %s: its layout (formats/api/types.api) has no member %s, the last the callee fills "
			 "(rcuda.c specials)", fn, param, last);
		return false;
	}
	return true;
}

bool nrr_rcuda_cmp_members(const char *fn, const char *param, const char *last, const uint8_t *rec, size_t reclen,
			   const uint8_t *live, size_t livelen, nrr_rres *res)
{
	size_t idx;
	const nrr_rc_fn *g = gen_find(fn, &idx);
	for (size_t i = 0; g && i < g->nparams; i++)
		if (!strcmp(g->params[i].name, param))
			return cmp_members(fn, param, g->params[i].fields, last, rec, reclen, live, livelen, res);
	why(res, "%s out %s: not a parameter this build describes", fn, param);
	return false;
}

/* Compare one out value; register what it creates.  @return false on a
 * divergence (why set). */
static bool check_out(nrr_rcuda *x, const nrr_call *c, const nrr_rc_param *pp, const struct pstate *ps,
		      uint64_t live, nrr_rres *res)
{
	const nrr_arg_schema *a = &c->fn->args[ps->j];
	const nrr_value *v = &c->args[ps->j];
	char rb[96], lb[96];
	if (ps->sp && (ps->sp->what == SP_NOCMP || (ps->sp->what == SP_NULLOUT && v->u == 0)))
		return true;
	if (a->wire == NRR_WIRE_B) {
		if (pp->custom || is_ipc(ps->sp))
			return true;
		const uint8_t *lp = ps->buf;
		size_t ln = a->fmt == NRR_FMT_STR ? strnlen((const char *)lp, ps->buflen) : v->total;
		if (ps->sp && ps->sp->what == SP_PTRATTR) {
			/* pointer- and id-valued attributes: remapped, not compared */
			bool ok;
			int64_t at = arg_int(c, ps->sp->arg, &ok);
			if (ok && (at == 1 || at == 3 || at == 4 || at == 5 || at == 7 || at == 11 || at == 17 ||
				   at == 19 || at == 20))
				return true;
		}
		if (ps->sp && ps->sp->what == SP_CMPHEAD)
			return cmp_members(c->fn->name, a->name, pp->fields, ps->sp->arg, v->p, v->len, lp, ps->buflen,
					   res);
		/* recorded longer than this build lays the struct out: an older
		 * tracer read past the caller's struct (the legacy 52-byte
		 * nvmlPciInfo_v1_t of nvmlDeviceGetNvLinkRemotePciInfo was
		 * recorded as 68): compare the members the callee fills */
		if (pp->fields && pp->size && v->total > pp->size)
			return cmp_members(c->fn->name, a->name, pp->fields, NULL, v->p, v->len, lp, ps->buflen, res);
		if (ln != v->total || memcmp(lp, v->p, v->len < ln ? v->len : ln) != 0) {
			size_t k = 0;
			while (k < v->len && k < ln && lp[k] == v->p[k])
				k++;
			if (a->fmt == NRR_FMT_STR)
				why(res, "out %s: recorded \"%.*s\", replayed \"%.*s\"", a->name, (int)(v->len > 120 ? 120 : v->len),
				    (const char *)v->p, (int)(ln > 120 ? 120 : ln), (const char *)lp);
			else if (ln != v->total)
				why(res, "out %s: recorded %u bytes, replayed %zu", a->name, v->total, ln);
			else
				why(res, "out %s: %u bytes differ from byte %zu on (recorded %02x, replayed %02x)", a->name,
				    v->total, k, v->p[k], lp[k]);
			return false;
		}
		return true;
	}
	uint64_t rec = v->u;
	switch (a->fmt) {
	case NRR_FMT_FD:
		if ((int64_t)rec >= 0 && (int)live >= 0 && x->p)
			nrr_rfd_put(x->p, (int64_t)rec, (int)live);
		if (((int64_t)rec < 0) != ((int)live < 0)) {
			why(res, "out %s: recorded fd %" PRId64 ", replayed fd %d", a->name, (int64_t)rec, (int)live);
			return false;
		}
		return true;
	case NRR_FMT_X:
		if (pp->outaddr)
			return true;   /* the address of the caller's struct */
		/* fall through */
	case NRR_FMT_HANDLE: {
		/* NULL recorded by a call that succeeded: the caller passed no
		 * pointer there (NCCL's cuMemGetAddressRange(NULL, &size, p)) */
		if (!rec && live)
			return true;
		if (!rec != !live) {
			why(res, "out %s: recorded %s, replayed %s", a->name, fmt_val(rb, sizeof(rb), NRR_FMT_X, NULL, rec),
			    fmt_val(lb, sizeof(lb), NRR_FMT_X, NULL, live));
			return false;
		}
		if (!rec)
			return true;
		bool create = (a->hflags & NRR_HANDLE_CREATE) || (ps->sp && ps->sp->what == SP_RANGE);
		bool known;
		uint64_t mapped = create ? 0 : remap(x, a, rec, &known);
		if (!create && known && mapped != live) {
			why(res, "out %s: recorded %s %s maps to 0x%" PRIx64 " in this replay, replayed 0x%" PRIx64,
			    a->name, a->kind ? a->kind : "pointer", fmt_val(rb, sizeof(rb), NRR_FMT_X, NULL, rec), mapped,
			    live);
			return false;
		}
		if (!create && known)
			return true;
		if (!is_addr_kind(a)) {
			pthread_mutex_lock(&x->mu);
			h_put(x, a->kind ? a->kind : "?", rec, live);
			pthread_mutex_unlock(&x->mu);
			return true;
		}
		if (a->fmt == NRR_FMT_X && !(ps->sp && ps->sp->what == SP_RANGE))
			return true;   /* a pointer the driver handed out (names, tables): NULL-ness only */
		uint64_t size = 0;
		bool ok = false;
		if (ps->sp && ps->sp->what == SP_RANGE && ps->sp->arg)
			size = (uint64_t)arg_int(c, ps->sp->arg, &ok);
		if (!ok && x->addr_range) {
			CUdeviceptr base = 0;
			size_t sz = 0;
			if (x->addr_range(&base, &sz, (CUdeviceptr)live) == 0 && base == live)
				size = sz;
		}
		pthread_mutex_lock(&x->mu);
		r_put(x, rec, size, live, NULL, 0);
		pthread_mutex_unlock(&x->mu);
		return true;
	}
	default:
		if (rec != live) {
			why(res, "out %s: recorded %s, replayed %s", a->name, fmt_val(rb, sizeof(rb), a->fmt, a->table, rec),
			    fmt_val(lb, sizeof(lb), a->fmt, a->table, live));
			return false;
		}
		return true;
	}
}

int nrr_rcuda_call(nrr_rcuda *x, const nrr_call *c, nrr_rres *res)
{
	memset(res, 0, sizeof(*res));
	if (!c || c->kind != NRR_CALL || !c->fn) {
		res->status = NRR_R_UNSUPPORTED;
		why(res, "not a call");
		return -EINVAL;
	}
	const nrr_fn_schema *fn = c->fn;
	size_t gi = 0;
	const nrr_rc_fn *g = gen_entry(x, fn, &gi);
	res->result = c->result;
	if (!g || !nrr_rcuda_handles(fn)) {
		res->status = NRR_R_UNSUPPORTED;
		why(res, "%s: no replay entry in this build (domain %s; a trace of a newer ncclrr?)", fn->name,
		    fn->domain);
		return 0;
	}
	if (!c->done || c->args_lost) {
		res->status = NRR_R_UNSUPPORTED;
		why(res, "%s: %s", fn->name, !c->done ? "in flight at the end of the trace (no result to compare)"
						      : "its arguments were in a chunk that could not be read");
		return 0;
	}
	if (x->inject == NRR_INJECT_ALL) {
		inject(x, c, res);
		return 0;
	}
	char what[64];
	if (nrr_rverbs_data_path(x, c)) {
		if (taint_check(x, c, what, sizeof(what)))
			inject(x, c, res);
		else
			nrr_rverbs_call(x, c, res);
		return 0;
	}
	if (x->inject == NRR_INJECT_ERRORS && nrr_call_failed(c)) {
		inject(x, c, res);
		return 0;
	}
	/* a polling "not ready" is timing, not behaviour: the ready answer
	 * that follows it in the trace is the one replayed (NONE runs it) */
	if (x->inject != NRR_INJECT_NONE && (fn->flags & NRR_FN_POLL) && c->result != 0 && !nrr_call_failed(c)) {
		inject(x, c, res);
		return 0;
	}
	if (taint_check(x, c, what, sizeof(what))) {
		inject(x, c, res);
		return 0;
	}
	if (nrr_rverbs_owns(fn))
		return nrr_rverbs_call(x, c, res);
	nrr_rverbs_before(x, c);
	if (g->unsupported) {
		res->status = NRR_R_UNSUPPORTED;
		why(res, "%s", g->unsupported);
		return 0;
	}
	if (!x->fp[gi]) {
		res->status = NRR_R_UNSUPPORTED;
		why(res, "%s: not found in %s", fn->name, x->lib[dom_index(g->domain)] ? x->libpath[dom_index(g->domain)]
											 : "(library not loaded)");
		return 0;
	}
	if (g->nparams > NRR_MAX_ARGS) {
		res->status = NRR_R_UNSUPPORTED;
		why(res, "%s: %u parameters", fn->name, g->nparams);
		return 0;
	}

	struct pstate ps[NRR_MAX_ARGS];
	uint64_t slot[NRR_MAX_ARGS], outv[NRR_MAX_ARGS];
	memset(ps, 0, sizeof(ps));
	memset(slot, 0, sizeof(slot));
	memset(outv, 0, sizeof(outv));
	int rc = 0;
	char note[160] = "";
	bool bail = false, served = false;
	for (uint8_t i = 0; i < g->nparams && !bail; i++) {
		const nrr_rc_param *pp = &g->params[i];
		ps[i].j = -1;
		for (uint16_t j = 0; j < fn->nargs; j++)
			if (!strcmp(fn->args[j].name, pp->name))
				ps[i].j = j;
		if (ps[i].j < 0 || !(c->present >> ps[i].j & 1)) {
			res->status = NRR_R_UNSUPPORTED;
			why(res, "%s: parameter %s is not in the recording (the trace's schema differs from this build)",
			    fn->name, pp->name);
			bail = true;
			break;
		}
		const nrr_arg_schema *a = &fn->args[ps[i].j];
		const nrr_value *v = &c->args[ps[i].j];
		ps[i].sp = special_of(fn->name, pp->name);
		const struct special *sp = ps[i].sp;
		if (a->dir & NRR_DIR_OUT) {
			if (pp->cls != NRR_RC_PTR) {
				res->status = NRR_R_UNSUPPORTED;
				why(res, "%s: out parameter %s is not a pointer in this build", fn->name, pp->name);
				bail = true;
				break;
			}
			size_t n = SCRATCH_MIN;
			if (pp->size > n)
				n = pp->size;
			if (a->wire == NRR_WIRE_B && (size_t)v->total + 1 > n)
				n = (size_t)v->total + 1;
			ps[i].buf = calloc(1, n);
			ps[i].buflen = n;
			if (!ps[i].buf) {
				rc = -ENOMEM;
				why(res, "out of memory");
				bail = true;
				break;
			}
			slot[i] = (uint64_t)(uintptr_t)ps[i].buf;
			continue;
		}
		/* in */
		if (a->wire == NRR_WIRE_B) {
			size_t n = v->total > v->len ? v->total : v->len;
			if (pp->size > n)
				n = pp->size;
			ps[i].buf = calloc(1, n + 1);
			ps[i].buflen = n + 1;
			if (!ps[i].buf) {
				rc = -ENOMEM;
				why(res, "out of memory");
				bail = true;
				break;
			}
			if (v->len)
				memcpy(ps[i].buf, v->p, v->len);
			if (sp && sp->what == SP_IPC_GET && x->inject != NRR_INJECT_ALL) {
				uint8_t live[NRR_XMAP_MAX];
				uint64_t until = 0;
				size_t ll = sizeof(until);
				/* made by a process that is not replayed (--ranks), or
				 * opened after its maker's trace stops being whole: the
				 * answer, and what it maps, come from the trace */
				if (nrr_xmap_get(made_set(sp->arg), v->p, v->len, &until, &ll, 0) < 0 ||
				    (ll == sizeof(until) && x->p && nrr_rproc_wall(x->p, c->ts) >= until)) {
					served = true;
					bail = true;
					break;
				}
				ll = sizeof(live);
				int e = nrr_xmap_get(sp->arg, v->p, v->len, live, &ll, IPC_TIMEOUT_MS);
				if (e < 0) {
					res->status = NRR_R_DIVERGED;
					why(res, "in %s: no replayed process made the recorded IPC handle (%s) within %d s: %s",
					    pp->name, sp->arg, IPC_TIMEOUT_MS / 1000, strerror(-e));
					bail = true;
					break;
				}
				memcpy(ps[i].buf, live, ll < ps[i].buflen ? ll : ps[i].buflen);
			}
			slot[i] = (uint64_t)(uintptr_t)ps[i].buf;
			continue;
		}
		if (a->fmt == NRR_FMT_FD) {
			int fd = x->p ? nrr_rfd_get(x->p, (int64_t)v->u) : -1;
			if ((int64_t)v->u >= 0 && fd < 0) {
				res->status = NRR_R_DIVERGED;
				why(res, "in %s: recorded fd %" PRId64 " has no live descriptor (neither received nor made "
					 "by a replayed call)", pp->name, (int64_t)v->u);
				bail = true;
				break;
			}
			slot[i] = (uint64_t)(int64_t)((int64_t)v->u >= 0 ? fd : (int)v->u);
			continue;
		}
		if (a->fmt == NRR_FMT_HANDLE || a->fmt == NRR_FMT_X) {
			bool known;
			uint64_t live = remap(x, a, v->u, &known);
			if (!known && sp && (sp->what == SP_SCRATCH || sp->what == SP_HOSTREG)) {
				bool ok;
				int64_t n = arg_int(c, sp->arg, &ok);
				if (!ok || n < 0 || n > (1ll << 34)) {
					res->status = NRR_R_UNSUPPORTED;
					why(res, "%s: host buffer %s: no usable size %s", fn->name, pp->name, sp->arg);
					bail = true;
					break;
				}
				/* keep the recorded page offset: registration and
				 * copies see the same alignment */
				size_t off = (size_t)(v->u & 4095u);
				size_t len = ((size_t)n + off + 4095u) & ~(size_t)4095u;
				void *m = mmap(NULL, len ? len : 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
				if (m == MAP_FAILED) {
					rc = -errno;
					why(res, "%s: cannot map a %zu-byte host buffer: %s", fn->name, len, strerror(errno));
					bail = true;
					break;
				}
				live = (uint64_t)(uintptr_t)m + off;
				if (sp->what == SP_HOSTREG) {
					pthread_mutex_lock(&x->mu);
					r_put(x, v->u, (uint64_t)n, live, m, len ? len : 4096);
					pthread_mutex_unlock(&x->mu);
				} else {
					ps[i].buf = m;   /* unmapped after the call */
					ps[i].buflen = len ? len : 4096;
				}
			} else if (!known && sp && sp->what == SP_IMAGE) {
				static const uint8_t no_image[4096];
				live = (uint64_t)(uintptr_t)no_image;
			} else if (!known && a->fmt == NRR_FMT_X) {
				res->status = NRR_R_UNSUPPORTED;
				why(res, "%s: in %s: a pointer (0x%" PRIx64 ") to memory the trace does not describe", fn->name,
				    pp->name, v->u);
				bail = true;
				break;
			} else if (!known && a->kind && !strcmp(a->kind, "ibdev") &&
				   (live = nrr_rverbs_ibdev(x->lib[2], v->u)) != 0) {
				/* an entry of ibv_get_device_list's answer (not recorded) */
				pthread_mutex_lock(&x->mu);
				h_put(x, a->kind, v->u, live);
				pthread_mutex_unlock(&x->mu);
			} else if (!known && !note[0]) {
				snprintf(note, sizeof(note), "; in %s: recorded %s 0x%" PRIx64 " was made by no replayed call",
					 pp->name, a->kind ? a->kind : "handle", v->u);
			}
			slot[i] = live;
			continue;
		}
		slot[i] = v->u;
	}

	if (served) {
		inject(x, c, res);
		pthread_mutex_lock(&x->mu);
		for (uint16_t j = 0; j < fn->nargs; j++)
			if ((fn->args[j].dir & NRR_DIR_OUT) && fn->args[j].fmt == NRR_FMT_HANDLE && (c->present >> j & 1))
				taint_add(x, c->args[j].u, 1);
		pthread_mutex_unlock(&x->mu);
	} else if (!bail) {
		int64_t r = g->call(x->fp[gi], slot);
		g->read(slot, outv);
		res->result = r;
		res->status = NRR_R_MATCH;
		char rb[96], lb[96];
		bool rec_failed = nrr_call_failed(c);
		if (fn->ret == NRR_RET_PTR ? (!r != !c->result) : r != c->result) {
			res->status = NRR_R_DIVERGED;
			why(res, "result: recorded %s, replayed %s%s", fmt_result(rb, sizeof(rb), fn, c->result),
			    fmt_result(lb, sizeof(lb), fn, r), note);
		} else if (!rec_failed) {
			if (fn->ret == NRR_RET_PTR && g->ret_kind && c->result) {
				pthread_mutex_lock(&x->mu);
				h_put(x, g->ret_kind, (uint64_t)c->result, (uint64_t)r);
				pthread_mutex_unlock(&x->mu);
				if (!strcmp(g->ret_kind, "cq"))
					nrr_rverbs_cq_made((uint64_t)r);
			}
			if (!strcmp(g->domain, "verbs"))
				nrr_rverbs_done(x, c, slot, r);
			int ndiv = 0;
			char first[sizeof(res->why)] = "";
			for (uint8_t i = 0; i < g->nparams; i++) {
				const nrr_arg_schema *a = &fn->args[ps[i].j];
				if (a->dir & NRR_DIR_OUT) {
					uint64_t live = a->wire == NRR_WIRE_B ? 0 : outv[i];
					if (!check_out(x, c, &g->params[i], &ps[i], live, res)) {
						if (!ndiv++)
							memcpy(first, res->why, sizeof(first));
					}
					if (ps[i].sp && ps[i].sp->what == SP_IPC_PUT && c->args[ps[i].j].len) {
						const nrr_value *v = &c->args[ps[i].j];
						int e = nrr_xmap_put(ps[i].sp->arg, v->p, v->len, ps[i].buf, v->total);
						if (e < 0 && !ndiv++)
							snprintf(first, sizeof(first), "out %s: cannot publish the IPC handle: %s",
								 a->name, strerror(-e));
					}
				} else if (a->hflags & NRR_HANDLE_CONSUME || (ps[i].sp && ps[i].sp->what == SP_DROPRANGE)) {
					uint64_t rec = c->args[ps[i].j].u;
					pthread_mutex_lock(&x->mu);
					if (is_addr_kind(a))
						r_drop(x, rec);
					else if (a->fmt == NRR_FMT_HANDLE)
						h_del(x, a->kind ? a->kind : "?", rec);
					pthread_mutex_unlock(&x->mu);
				}
			}
			if (ndiv) {
				res->status = NRR_R_DIVERGED;
				if (ndiv > 1)
					snprintf(res->why, sizeof(res->why), "%.280s (+%d more)", first, ndiv - 1);
				else
					memcpy(res->why, first, sizeof(res->why));
			}
		}
	}
	for (uint8_t i = 0; i < g->nparams; i++) {
		if (!ps[i].buf)
			continue;
		if (ps[i].sp && ps[i].sp->what == SP_SCRATCH && !(fn->args[ps[i].j].dir & NRR_DIR_OUT) &&
		    fn->args[ps[i].j].wire != NRR_WIRE_B)
			munmap(ps[i].buf, ps[i].buflen);
		else
			free(ps[i].buf);
	}
	return rc;
}
