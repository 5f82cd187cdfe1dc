/* SPDX-License-Identifier: MIT */
/*
 * hooks_dl.c - how calls reach the generated wrappers.
 *
 * A program reaches a traced function in one of four ways, and each gets
 * the wrapper of formats/api/ (nrr_wrap_table):
 *  - through its PLT: the wrapper is an exported symbol of this preloaded
 *    library and comes first (the wrapper finds the real one with
 *    nrr_resolve());
 *  - dlsym(handle, name) / dlvsym(handle, name, version) on a library it
 *    dlopen'ed (NCCL opens libnvidia-ml and libibverbs, CUDA's runtime
 *    opens libcuda): the hooks below return the wrapper and remember the
 *    real function;
 *  - cuGetProcAddress, which hands out driver entry points by name and
 *    version (how a statically linked CUDA runtime reaches the driver):
 *    nrr_cuda_procaddr() replaces the answer by the wrapper of the exact
 *    variant returned (found by its symbol name);
 *  - function tables (verbs ops, ncclNet): hooks_verbs.c and plugins/.
 *
 * dlsym(RTLD_DEFAULT / RTLD_NEXT, ...) depends on who calls it, so those
 * jump straight to the real dlsym (assembly stubs: the caller's return
 * address is kept); a symbol a global lookup finds is already ours.
 * dlopen is not hooked: it also depends on the caller (its RUNPATH).
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "nrr_wrap_gen.h"
#include "tracer_internal.h"

/* Hidden: the assembly stubs read them PC-relative. */
__attribute__((used, visibility("hidden"))) void *nrr_real_dlsym_p;
__attribute__((used, visibility("hidden"))) void *nrr_real_dlvsym_p;
static bool hooks_active;   /* NCCLRR_TRACE_DIR was set: hand out wrappers */

/* ------------------------------------------- lookups in the ELF tables */

/* Looking a symbol up without the dynamic loader's dl* functions: each of
 * them (a successful dlsym included) clears or replaces the calling
 * thread's dlerror() state, and a lazy lookup of ours runs between the
 * program's failed dlopen and its dlerror() whenever a traced call comes
 * in between (the first socket() or fwrite() of a process): NCCL printed
 * a wrong "Failed to find CUDA library ... :" reason under the tracer.
 * dl_iterate_phdr() and the ELF tables of the loaded objects leave that
 * state alone. */
struct elf_lookup {
	const char *name;
	uint32_t gnu_hash;
	int pass;          /* 1: objects after this library (RTLD_NEXT); 2: any other */
	bool after_self;   /* pass 1: this library went by */
	void *found;
};

static uint32_t gnu_hash_of(const char *s)
{
	uint32_t h = 5381;
	for (; *s; s++)
		h = h * 33 + (uint8_t)*s;
	return h;
}

/* The loader relocates the d_ptr values of an object's dynamic section in
 * place, except for objects mapped read-only (the vDSO): those are
 * offsets from the load address. */
static const void *dyn_ptr(const struct dl_phdr_info *info, ElfW(Addr) p)
{
	return (const void *)(p < info->dlpi_addr ? info->dlpi_addr + p : p);
}

/* A defined function of the default version (not a hidden one, name@V). */
static void *sym_value(const struct dl_phdr_info *info, const ElfW(Sym) *sym, const uint16_t *versym, size_t i)
{
	int type = ELF64_ST_TYPE(sym->st_info);
	if (sym->st_shndx == SHN_UNDEF || (type != STT_FUNC && type != STT_GNU_IFUNC) ||
	    ELF64_ST_BIND(sym->st_info) == STB_LOCAL || (versym && (versym[i] & 0x8000)))
		return NULL;
	void *p = (void *)(info->dlpi_addr + sym->st_value);
	if (type == STT_GNU_IFUNC)   /* what dlsym does: ask the resolver */
		p = ((void *(*)(unsigned long))p)(getauxval(AT_HWCAP));
	return p;
}

static void *object_lookup(const struct dl_phdr_info *info, const struct elf_lookup *l)
{
	const ElfW(Sym) *syms = NULL;
	const char *strs = NULL;
	const uint32_t *gh = NULL, *sh = NULL;
	const uint16_t *versym = NULL;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		if (info->dlpi_phdr[i].p_type != PT_DYNAMIC)
			continue;
		for (const ElfW(Dyn) *d = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
		     d->d_tag != DT_NULL; d++) {
			if (d->d_tag == DT_SYMTAB)
				syms = dyn_ptr(info, d->d_un.d_ptr);
			else if (d->d_tag == DT_STRTAB)
				strs = dyn_ptr(info, d->d_un.d_ptr);
			else if (d->d_tag == DT_GNU_HASH)
				gh = dyn_ptr(info, d->d_un.d_ptr);
			else if (d->d_tag == DT_HASH)
				sh = dyn_ptr(info, d->d_un.d_ptr);
			else if (d->d_tag == DT_VERSYM)
				versym = dyn_ptr(info, d->d_un.d_ptr);
		}
	}
	if (!syms || !strs)
		return NULL;
	if (gh) {
		uint32_t nbuckets = gh[0], symoffset = gh[1], bloom_size = gh[2], shift = gh[3];
		const ElfW(Addr) *bloom = (const ElfW(Addr) *)(gh + 4);
		const uint32_t *buckets = (const uint32_t *)(bloom + bloom_size), *chain = buckets + nbuckets;
		const unsigned bits = sizeof(ElfW(Addr)) * 8;
		uint32_t h = l->gnu_hash;
		if (!nbuckets || !bloom_size)
			return NULL;
		ElfW(Addr) word = bloom[(h / bits) % bloom_size];
		ElfW(Addr) mask = ((ElfW(Addr))1 << (h % bits)) | ((ElfW(Addr))1 << ((h >> shift) % bits));
		if ((word & mask) != mask)
			return NULL;
		uint32_t i = buckets[h % nbuckets];
		if (i < symoffset)
			return NULL;
		for (;; i++) {
			uint32_t h2 = chain[i - symoffset];
			if ((h | 1) == (h2 | 1) && !strcmp(strs + syms[i].st_name, l->name)) {
				void *p = sym_value(info, &syms[i], versym, i);
				if (p)
					return p;
			}
			if (h2 & 1)
				return NULL;
		}
	}
	size_t nsyms = sh ? sh[1] : 0;   /* DT_HASH: nchain is the symbol count */
	for (size_t i = 0; i < nsyms; i++)
		if (!strcmp(strs + syms[i].st_name, l->name)) {
			void *p = sym_value(info, &syms[i], versym, i);
			if (p)
				return p;
		}
	return NULL;
}

/* ------------------------------------------------- libc's own dlsym/dlvsym */

/* Our dlsym and dlvsym shadow libc's for every caller, this library
 * included, so libc's are looked up in its ELF tables, the way every
 * other real function is (object_lookup: its GNU hash, the default
 * version; not a scan of libc's 3,000 symbols). */
static int find_in_libc(struct dl_phdr_info *info, size_t size, void *data)
{
	struct elf_lookup *l = data;
	(void)size;
	if (!info->dlpi_name || !strstr(info->dlpi_name, "/libc.so"))
		return 0;
	l->found = object_lookup(info, l);
	return 1;
}

static void *libc_function(const char *name)
{
	struct elf_lookup l = { .name = name, .gnu_hash = gnu_hash_of(name) };
	dl_iterate_phdr(find_in_libc, &l);
	return l.found;
}

static void real_dl_init(void)
{
	if (!__atomic_load_n(&nrr_real_dlsym_p, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&nrr_real_dlvsym_p, libc_function("dlvsym"), __ATOMIC_RELEASE);
		__atomic_store_n(&nrr_real_dlsym_p, libc_function("dlsym"), __ATOMIC_RELEASE);
	}
}

void *nrr_real_dlsym(void *handle, const char *name)
{
	real_dl_init();
	void *(*f)(void *, const char *) = (void *(*)(void *, const char *))nrr_real_dlsym_p;
	return f ? f(handle, name) : NULL;
}

static void *real_dlvsym(void *handle, const char *name, const char *version)
{
	real_dl_init();
	void *(*f)(void *, const char *, const char *) =
		(void *(*)(void *, const char *, const char *))nrr_real_dlvsym_p;
	return f ? f(handle, name, version) : NULL;
}

/* ------------------------------------------------------------ the table */

const nrr_wrap_ent *nrr_wrap_find(const char *name)
{
	size_t lo = 0, hi = nrr_wrap_count;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(name, nrr_wrap_name(&nrr_wrap_table[mid]));
		if (!c)
			return &nrr_wrap_table[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

/* The wrapper to hand out for @real, the function of wrap entry @e, or
 * @real itself when it is not ours to wrap (@e NULL: no entry). */
static void *wrap_ent(const nrr_wrap_ent *e, void *real)
{
	if (!hooks_active || !real || !e || real == nrr_wrap_wrapper(e))
		return real;
	void *expected = NULL;
	if (__atomic_compare_exchange_n(nrr_wrap_real(e), &expected, real, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) ||
	    expected == real)
		return nrr_wrap_wrapper(e);
	return real;   /* a second implementation of the same name: not recorded */
}

/* The same for the function @name of some library. */
static void *wrap(const char *name, void *real)
{
	return name ? wrap_ent(nrr_wrap_find(name), real) : real;
}

/* The assembly stubs' targets (hidden: reached without a PLT). */
#define STUB_TARGET __attribute__((used, visibility("hidden")))
STUB_TARGET void *nrr_dlsym_handle(void *handle, const char *name);
STUB_TARGET void *nrr_dlvsym_handle(void *handle, const char *name, const char *version);
STUB_TARGET void *nrr_dlsym_early(void *handle, const char *name);
STUB_TARGET void *nrr_dlvsym_early(void *handle, const char *name, const char *version);

/* Called by the stubs with a real handle (not RTLD_DEFAULT / RTLD_NEXT). */
STUB_TARGET void *nrr_dlsym_handle(void *handle, const char *name)
{
	return wrap(name, nrr_real_dlsym(handle, name));
}

STUB_TARGET void *nrr_dlvsym_handle(void *handle, const char *name, const char *version)
{
	return wrap(name, real_dlvsym(handle, name, version));
}

/* Only before the constructor found libc's dlsym (another library's
 * constructor): the caller's identity is lost for RTLD_NEXT then. */
STUB_TARGET void *nrr_dlsym_early(void *handle, const char *name)
{
	return nrr_real_dlsym(handle, name);
}

STUB_TARGET void *nrr_dlvsym_early(void *handle, const char *name, const char *version)
{
	return real_dlvsym(handle, name, version);
}

#if defined(__x86_64__)
__asm__(
	".text\n"
	".globl dlsym\n.type dlsym,@function\n"
	"dlsym:\n"
	"	cmpq $-1, %rdi\n	je 1f\n"
	"	testq %rdi, %rdi\n	je 1f\n"
	"	jmp nrr_dlsym_handle\n"
	"1:	movq nrr_real_dlsym_p(%rip), %rax\n"
	"	testq %rax, %rax\n	je 2f\n"
	"	jmp *%rax\n"
	"2:	jmp nrr_dlsym_early\n"
	".size dlsym, .-dlsym\n"
	".globl dlvsym\n.type dlvsym,@function\n"
	"dlvsym:\n"
	"	cmpq $-1, %rdi\n	je 1f\n"
	"	testq %rdi, %rdi\n	je 1f\n"
	"	jmp nrr_dlvsym_handle\n"
	"1:	movq nrr_real_dlvsym_p(%rip), %rax\n"
	"	testq %rax, %rax\n	je 2f\n"
	"	jmp *%rax\n"
	"2:	jmp nrr_dlvsym_early\n"
	".size dlvsym, .-dlvsym\n");
#elif defined(__aarch64__)
__asm__(
	".text\n"
	".globl dlsym\n.type dlsym,%function\n"
	"dlsym:\n"
	"	cmn x0, #1\n	b.eq 1f\n"
	"	cbz x0, 1f\n"
	"	b nrr_dlsym_handle\n"
	"1:	adrp x16, nrr_real_dlsym_p\n	ldr x16, [x16, :lo12:nrr_real_dlsym_p]\n"
	"	cbz x16, 2f\n	br x16\n"
	"2:	b nrr_dlsym_early\n"
	".size dlsym, .-dlsym\n"
	".globl dlvsym\n.type dlvsym,%function\n"
	"dlvsym:\n"
	"	cmn x0, #1\n	b.eq 1f\n"
	"	cbz x0, 1f\n"
	"	b nrr_dlvsym_handle\n"
	"1:	adrp x16, nrr_real_dlvsym_p\n	ldr x16, [x16, :lo12:nrr_real_dlvsym_p]\n"
	"	cbz x16, 2f\n	br x16\n"
	"2:	b nrr_dlvsym_early\n"
	".size dlvsym, .-dlvsym\n");
#else
#error "hooks_dl.c: dlsym/dlvsym stubs exist for x86_64 and aarch64 only"
#endif

/* ------------------------------------------------- resolving the real one */

/* This library's own address range: a lookup that lands in it found a
 * wrapper, not the real function. */
static uintptr_t self_lo, self_hi;

/* The loaded object holding an address: its whole range (first to last
 * PT_LOAD segment) and whether it is libnccl. */
struct find_obj {
	uintptr_t addr, lo, hi;
	bool found, nccl;
};

/* The span [*lo, *hi) of an object's loaded segments. */
static void object_span(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi)
{
	*lo = UINTPTR_MAX;
	*hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		if (a < *lo)
			*lo = a;
		if (a + ph->p_memsz > *hi)
			*hi = a + ph->p_memsz;
	}
}

static int find_object(struct dl_phdr_info *info, size_t size, void *data)
{
	struct find_obj *f = data;
	uintptr_t lo, hi;
	object_span(info, &lo, &hi);
	if (f->addr < lo || f->addr >= hi)
		return 0;
	f->found = true;
	f->lo = lo;
	f->hi = hi;
	const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
	base = base ? base + 1 : info->dlpi_name;
	f->nccl = base && !strncmp(base, "libnccl", 7) && strncmp(base, "libnccl-net", 11) &&
		  strncmp(base, "libnccl-profiler", 16);
	return 1;
}

static bool is_self(const void *p)
{
	return (uintptr_t)p >= self_lo && (uintptr_t)p < self_hi;
}

static int lookup_object(struct dl_phdr_info *info, size_t size, void *data)
{
	struct elf_lookup *l = data;
	uintptr_t here = (uintptr_t)&nrr_hooks_init;
	bool self = false;
	for (int i = 0; i < info->dlpi_phnum && !self; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		self = ph->p_type == PT_LOAD && here >= a && here < a + ph->p_memsz;
	}
	if (self) {
		l->after_self = true;
		return 0;
	}
	/* not the program itself (it comes before us; RTLD_NEXT never finds
	 * it), nor the vDSO */
	if (!info->dlpi_name || !strchr(info->dlpi_name, '/'))
		return 0;
	if (l->pass == 1 && !l->after_self)
		return 0;
	if (l->pass == 2 && l->after_self)
		return 1;   /* pass 1 looked there */
	l->found = object_lookup(info, l);
	return l->found != NULL;
}

void *nrr_real_next(const char *name)
{
	/* the next definition after this library in load order (RTLD_NEXT) ...
	 * or one in a library opened with RTLD_LOCAL, or loaded before us */
	struct elf_lookup l = { .name = name, .gnu_hash = gnu_hash_of(name), .pass = 1 };
	dl_iterate_phdr(lookup_object, &l);
	if (!l.found) {
		l.pass = 2;
		l.after_self = false;
		dl_iterate_phdr(lookup_object, &l);
	}
	return l.found;
}

void *nrr_resolve(const char *name, void **slot)
{
	void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	if (p)
		return p;
	p = nrr_real_next(name);
	if (!p || is_self(p))
		return NULL;
	void *expected = NULL;
	if (!__atomic_compare_exchange_n(slot, &expected, p, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		p = expected;
	return p;
}

/* The driver's wrapped exports by address, built at its first
 * cuGetProcAddress answer: one symbol lookup per wrapped driver function,
 * then a binary search per answer.  dladdr() scans the driver's whole
 * symbol table for each (0.35 us on the fake driver's 280 exports, several
 * times that on a real driver's), and a PyTorch process takes 900
 * answers. */
struct drv_ent {
	uintptr_t addr;
	const nrr_wrap_ent *e;
};
static struct {
	_Atomic int state;   /* 0 not built, 1 built, 2 building, -1 unusable */
	uintptr_t lo, hi;    /* the driver's code and data */
	struct drv_ent *tab;
	size_t n;
	uintptr_t probe;     /* the answer that found the driver */
} drv;

static int cmp_drv(const void *a, const void *b)
{
	uintptr_t x = ((const struct drv_ent *)a)->addr, y = ((const struct drv_ent *)b)->addr;
	return x < y ? -1 : x > y;
}

static int build_drv(struct dl_phdr_info *info, size_t size, void *data)
{
	uintptr_t lo, hi;
	object_span(info, &lo, &hi);
	if (drv.probe < lo || drv.probe >= hi)
		return 0;
	size_t n = 0;
	for (size_t i = 0; i < nrr_wrap_count; i++)
		n += nrr_wrap_table[i].domain == 0;   /* nrr_wrap_libs[0]: libcuda.so.1 */
	struct drv_ent *tab = malloc((n ? n : 1) * sizeof(*tab));
	if (!tab)
		return 1;
	n = 0;
	for (size_t i = 0; i < nrr_wrap_count; i++) {
		const nrr_wrap_ent *e = &nrr_wrap_table[i];
		struct elf_lookup l = { .name = nrr_wrap_name(e), .gnu_hash = gnu_hash_of(nrr_wrap_name(e)) };
		void *p = e->domain == 0 ? object_lookup(info, &l) : NULL;
		if (p)
			tab[n++] = (struct drv_ent){ (uintptr_t)p, e };
	}
	qsort(tab, n, sizeof(*tab), cmp_drv);
	drv.tab = tab;
	drv.n = n;
	drv.lo = lo;
	drv.hi = hi;
	(void)size;
	(void)data;
	return 1;
}

/* @return the wrap entry of the driver export at @p; NULL when @p is in
 * the driver but no wrapped export; @fallback set when the table cannot
 * say (not built, or @p outside the driver). */
static const nrr_wrap_ent *drv_find(void *p, bool *fallback)
{
	int st = atomic_load_explicit(&drv.state, memory_order_acquire);
	int zero = 0;
	if (st == 0 && atomic_compare_exchange_strong(&drv.state, &zero, 2)) {
		drv.probe = (uintptr_t)p;
		dl_iterate_phdr(build_drv, NULL);
		st = drv.tab ? 1 : -1;
		atomic_store_explicit(&drv.state, st, memory_order_release);
	}
	uintptr_t a = (uintptr_t)p;
	if (st != 1 || a < drv.lo || a >= drv.hi) {
		*fallback = true;
		return NULL;
	}
	*fallback = false;
	struct drv_ent key = { a, NULL };
	const struct drv_ent *f = bsearch(&key, drv.tab, drv.n, sizeof(key), cmp_drv);
	return f ? f->e : NULL;
}

/* After cuGetProcAddress[_v2]: hand out the wrapper of the exact variant
 * the driver answered with (its exported name), so calls from a
 * statically linked runtime are recorded with the right arguments. */
void nrr_cuda_procaddr(const char *symbol, void **pfn, int ret)
{
	if (ret != 0 || !pfn || !*pfn || !hooks_active)
		return;
	bool fallback;
	const nrr_wrap_ent *e = drv_find(*pfn, &fallback);
	if (!fallback) {
		*pfn = wrap_ent(e, *pfn);   /* (NULL: no wrapped export, handed out as is) */
		return;
	}
	Dl_info info;
	if (!dladdr(*pfn, &info) || info.dli_saddr != *pfn || !info.dli_sname)
		return;   /* not an exported function: handed out as is (not recorded) */
	*pfn = wrap(info.dli_sname, *pfn);
	(void)symbol;
}

/* --------------------------------------------- which library called us */

/* A few code ranges with the answer to "is this libnccl?", filled on
 * demand (the fwrite hook asks for every fwrite of the process). */
#define NRANGES 32
static struct range {
	_Atomic uintptr_t lo;
	uintptr_t hi;
	bool nccl;
} ranges[NRANGES];
static _Atomic unsigned nranges;

bool nrr_caller_is_nccl(const void *addr)
{
	uintptr_t a = (uintptr_t)addr;
	unsigned n = atomic_load_explicit(&nranges, memory_order_acquire);
	for (unsigned i = 0; i < n && i < NRANGES; i++) {
		uintptr_t lo = atomic_load_explicit(&ranges[i].lo, memory_order_acquire);
		if (lo && a >= lo && a < ranges[i].hi)
			return ranges[i].nccl;
	}
	struct find_obj f = { .addr = a };
	dl_iterate_phdr(find_object, &f);
	if (!f.found)
		return false;
	unsigned slot = atomic_fetch_add(&nranges, 1);
	if (slot < NRANGES) {
		ranges[slot].hi = f.hi;
		ranges[slot].nccl = f.nccl;
		atomic_store_explicit(&ranges[slot].lo, f.lo, memory_order_release);
	} else {
		atomic_store(&nranges, NRANGES);
	}
	return f.nccl;
}

/* Always, tracing or not: our dlsym stands in for libc's in every case. */
__attribute__((constructor)) static void dl_init(void)
{
	real_dl_init();
	struct find_obj me = { .addr = (uintptr_t)&nrr_hooks_init };
	dl_iterate_phdr(find_object, &me);
	self_lo = me.lo;
	self_hi = me.hi;
}

void nrr_hooks_init(void)
{
	hooks_active = true;
}
