/* SPDX-License-Identifier: MIT */
/*
 * hooks_nccl.c - what the tracer learns from NCCL besides its API calls:
 * the rank and communicators (run metadata), NCCL's version, and NCCL's
 * own log lines (NCCL_DEBUG output) as LOG events on the caller's
 * timeline.
 *
 * NCCL 2.18-2.28 write every log line with one fwrite() from
 * ncclDebugLog; fwrite calls whose caller is libnccl are recorded (and
 * written as usual).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "nrr_hash.h"
#include "nrr_wrap_gen.h"
#include "tracer_internal.h"

/* The hash of the unique id names the communicator's job in the metadata
 * (ranks of one communicator share it). */
static uint64_t uid_hash(const void *p, size_t n)
{
	return nrr_hash(p, n, NRR_HASH_INIT);
}

/* Call the real NCCL function @name (resolved like its wrapper does, and
 * not recorded). */
static void *real_nccl(const char *name)
{
	const nrr_wrap_ent *e = nrr_wrap_find(name);
	return e ? nrr_resolve(name, nrr_wrap_real(e)) : NULL;
}

static _Atomic int nccl_version;   /* NCCL_VERSION_CODE, 0 until known */

int nrr_nccl_version(void)
{
	return atomic_load_explicit(&nccl_version, memory_order_relaxed);
}

static void nccl_version_once(void)
{
	static _Atomic int done;
	if (atomic_exchange(&done, 1))
		return;
	ncclResult_t (*get)(int *) = (ncclResult_t (*)(int *))real_nccl("ncclGetVersion");
	int v = 0;
	if (get && get(&v) == 0 && v > 0) {
		/* 2.9+ codes are X*10000+Y*100+Z, older ones X*1000+Y*100+Z */
		atomic_store(&nccl_version, v >= 10000 ? v : v / 1000 * 10000 + v % 1000);
		nrr_trace_meta("nccl_version=%d.%d.%d", v >= 10000 ? v / 10000 : v / 1000,
			       v >= 10000 ? v / 100 % 100 : v / 100 % 10, v % 100);
		char why[96];
		nrr_proxy_decodes(atomic_load(&nccl_version), why, sizeof(why));
		nrr_trace_meta("proxy_rpc=%s", why);   /* `ncclrr dump` says when they are not */
	}
}

/* Before ncclCommInitRank* (which may never return): the rank this
 * process takes in the communicator of @uid. */
void nrr_nccl_init_begin(int rank, int nranks, const void *uid)
{
	if (nrr_trace_backend == NRR_BACKEND_OFF)
		return;
	nccl_version_once();
	static _Atomic int first = 1;
	uint64_t h = uid ? uid_hash(uid, 128) : 0;
	/* `rank` is the launcher's when it gave one (core.c), else the rank
	 * in the first communicator */
	if (atomic_exchange(&first, 0))
		nrr_trace_meta("%s%d\nnranks=%d\nuid=%016llx", nrr_launcher_rank(NULL) < 0 ? "rank=" : "nccl_rank=",
			       rank, nranks, (unsigned long long)h);
	nrr_trace_meta("init.%016llx=rank %d of %d", (unsigned long long)h, rank, nranks);
}

/* After a communicator was made (init or split): which one, and this
 * process's rank in it ("comm 0x..." as NCCL's own log lines say). */
void nrr_nccl_comm(ncclComm_t *comm, const void *uid, int ret)
{
	if (nrr_trace_backend == NRR_BACKEND_OFF || ret != 0 || !comm || !*comm)
		return;
	ncclResult_t (*user_rank)(ncclComm_t, int *) = (ncclResult_t (*)(ncclComm_t, int *))real_nccl("ncclCommUserRank");
	ncclResult_t (*count)(ncclComm_t, int *) = (ncclResult_t (*)(ncclComm_t, int *))real_nccl("ncclCommCount");
	int r = -1, n = -1;
	if (user_rank)
		user_rank(*comm, &r);
	if (count)
		count(*comm, &n);
	if (uid)
		nrr_trace_meta("comm.%p=rank %d of %d uid %016llx", (void *)*comm, r, n,
			       (unsigned long long)uid_hash(uid, 128));
	else
		nrr_trace_meta("comm.%p=rank %d of %d (split)", (void *)*comm, r, n);
}

/* NCCL_DEBUG levels (nccl.h: ncclDebugLogLevel) from the line's text */
static unsigned log_level(const char *s, size_t n)
{
	static const struct {
		const char *tag;
		unsigned level;
	} tags[] = { { " NCCL WARN ", 2 }, { " NCCL INFO ", 3 }, { "NCCL CALL ", 5 }, { " NCCL TRACE ", 5 } };
	for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++)
		if (memmem(s, n, tags[i].tag, strlen(tags[i].tag)))
			return tags[i].level;
	return 1;   /* the version banner */
}

static size_t (*real_fwrite)(const void *, size_t, size_t, FILE *);

NRR_HOOK size_t fwrite(const void *ptr, size_t size, size_t n, FILE *f)
{
	size_t (*real)(const void *, size_t, size_t, FILE *) = __atomic_load_n(&real_fwrite, __ATOMIC_RELAXED);
	if (__builtin_expect(!real, 0)) {
		real = (size_t (*)(const void *, size_t, size_t, FILE *))nrr_resolve("fwrite", (void **)&real_fwrite);
		if (!real) {
			errno = ENOSYS;
			return 0;
		}
	}
	if (nrr_trace_backend != NRR_BACKEND_OFF && size && n && !nrr_trace_busy() &&
	    nrr_caller_is_nccl(__builtin_return_address(0))) {
		const char *s = ptr;
		size_t len = size * n;
		while (len && (*s == '\n')) {   /* WARN lines start with an empty line */
			s++;
			len--;
		}
		while (len && (s[len - 1] == '\n'))
			len--;
		if (len)
			nrr_trace_log(log_level(s, len), s, len);
	}
	return real(ptr, size, n, f);
}
