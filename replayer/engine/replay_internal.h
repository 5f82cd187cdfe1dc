/* SPDX-License-Identifier: MIT */
/*
 * replay_internal.h - what the parts of the replay engine share.
 *
 * `ncclrr replay DIR` forks one worker per recorded process.  A worker
 * loads its trace, starts one thread per recorded thread (stream) and
 * re-executes the calls in recorded order: sockets in rsock.c, CUDA
 * driver / NVML / verbs in rcuda.c through the generated dispatch table,
 * ncclNet plugin calls in rnet.c against a live net plugin.  Calls of
 * other domains (NCCL API, runtime, proxy RPCs) are containers: the
 * engine replays what they called.
 */
#ifndef NCCLRR_REPLAY_INTERNAL_H
#define NCCLRR_REPLAY_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "nrt.h"
#include "replay.h"

/* What replaying one call gave. */
enum nrr_rstatus {
	NRR_R_MATCH = 0,       /* ran, and result and outputs agree with the recording */
	NRR_R_INJECTED = 1,    /* answered from the trace (not run) */
	NRR_R_DIVERGED = 2,    /* ran, and disagrees: why says how */
	NRR_R_UNSUPPORTED = 3, /* the engine cannot replay this call: why says why */
};

typedef struct nrr_rres {
	int status;       /* enum nrr_rstatus */
	int64_t result;   /* the live result (the recorded one when injected) */
	char why[320];    /* DIVERGED/UNSUPPORTED: "result recorded CUDA_ERROR_X (1), replayed CUDA_SUCCESS (0)",
			   * "out count: recorded 8, replayed 4", ... */
} nrr_rres;

/* One worker process: its handle tables.  Opaque to rcuda.c except through
 * the functions below. */
typedef struct nrr_rproc nrr_rproc;

/* A property of a function, worked out (by name) once per function of
 * this process's trace and then read, by its id, without a lock by
 * every replay thread.  make() never returns 0, which stands for "not
 * worked out yet".  (Looking them up by name on each call took 7 % of
 * the replay of traces/nccl_ib/killed in strcmp.) */
struct nrr_fn_memo {
	_Atomic int32_t *v;
	uint32_t n;
};

static inline void nrr_fn_memo_init(struct nrr_fn_memo *m, const nrr_schema *s)
{
	m->n = s ? nrr_schema_nfns(s) + 1 : 0;
	m->v = m->n ? calloc(m->n, sizeof(*m->v)) : NULL;
}

static inline int32_t nrr_fn_memo(struct nrr_fn_memo *m, const nrr_fn_schema *fn, int32_t (*make)(const nrr_fn_schema *))
{
	if (!m->v || fn->id >= m->n)
		return make(fn);
	int32_t v = atomic_load_explicit(&m->v[fn->id], memory_order_relaxed);
	if (!v) {
		v = make(fn);
		atomic_store_explicit(&m->v[fn->id], v, memory_order_relaxed);
	}
	return v;
}

/* File descriptors: recorded number -> live number (per worker process).
 * A descriptor made by a CUDA call (cuMemExportToShareableHandle) is put
 * here so that sendmsg can pass it; one received by recvmsg is put here so
 * that cuMemImportFromShareableHandle can use it. */
void nrr_rfd_put(nrr_rproc *p, int64_t rec, int live);
/* @return the live fd for recorded @rec, or -1 when none is known. */
int nrr_rfd_get(nrr_rproc *p, int64_t rec);
/* @return true when @rec stands for a descriptor of a process that is not
 * replayed (--ranks): calls using it are answered from the trace. */
bool nrr_rfd_served(nrr_rproc *p, int64_t rec);
/* Forget @rec (its live fd is closed by the caller). */
void nrr_rfd_del(nrr_rproc *p, int64_t rec);
/* The recorded wall time of a call of this process recorded at @ts. */
uint64_t nrr_rproc_wall(const nrr_rproc *p, uint64_t ts);
/* Order of verbs calls across processes (worker.c): the peer worker whose
 * process is @pid, for a call of this one recorded at @ts.
 * nrr_wait_peer_gone: when the peer's recorded end came before @ts, wait
 * until its worker is gone.  nrr_wait_peer_ended: wait until it finished
 * every call that had returned before @ts.  Each gives up when the peer
 * finished no call for 10 s.
 * @return 0 no wait needed (or no such peer), 1 waited, -ETIMEDOUT. */
int nrr_wait_peer_gone(nrr_rproc *p, uint32_t pid, uint64_t ts);
int nrr_wait_peer_ended(nrr_rproc *p, uint32_t pid, uint64_t ts);

/*
 * Cross-process table kept by the replay coordinator (shared memory, all
 * workers of one replay): values one process makes and another uses
 * (listen addresses, IPC handle bytes, ...).  Keys are (kind, recorded
 * bytes); kinds are short strings ("sock", "ipc", "conn").
 * nrr_xmap_get() waits up to @timeout_ms for another worker to publish.
 * @return 0, -ETIMEDOUT, -ENOSPC (table full, put), -E2BIG (key or value too long).
 */
#define NRR_XMAP_MAX 128   /* bytes of a key or a value */
/* Coordinator, before forking: make the table with room for @nslots. */
int nrr_xmap_init(size_t nslots);
/* Coordinator, between replays (--repeat): empty the table. */
void nrr_xmap_reset(void);
int nrr_xmap_put(const char *kind, const void *key, size_t klen, const void *val, size_t vlen);
int nrr_xmap_get(const char *kind, const void *key, size_t klen, void *val, size_t *vlen, int timeout_ms);

/* ---- verbs remap table (rverbs.c) ----
 * Verbs objects that cross processes, published by the process that owns
 * them and looked up by the one that uses them, through the table above.
 * Keys: the recorded address of the owning port (nrr_vaddr) and the
 * recorded number; an rkey's also the owner, the process that published
 * it (getpid()), which nrr_rverbs_get_qpn() tells of a QP number: ranks
 * of one virtual host share GIDs, and the fake fabric's rkeys repeat in
 * every process.
 * Getters wait up to @timeout_ms for the owner to publish.
 * @return 0, -ETIMEDOUT (never published), -ERANGE (nrr_rverbs_remote: the
 * recorded access lies outside the recorded region; the live rkey and the
 * address at the same offset from the live base are still set, so that a
 * replayed access fails on the live HCA as it did when recorded), -EPROTO,
 * or an nrr_xmap_put() error. */

/* The address of a port as an RTR names the peer's: its GID when the
 * address vector has a GRH (RoCE, InfiniBand with a GID index), else its
 * LID (InfiniBand addressed by LID).  QP numbers and rkeys are unique per
 * HCA, so a peer's object is named by (address, number), whichever kind
 * of address its QP's RTR used. */
enum { NRR_VADDR_GID = 1, NRR_VADDR_LID = 2 };
typedef struct nrr_vaddr {
	uint8_t kind;    /* NRR_VADDR_GID or NRR_VADDR_LID */
	uint8_t b[16];   /* the GID; a LID in b[0..1] (host order), the rest 0 */
} nrr_vaddr;
void nrr_vaddr_gid(nrr_vaddr *a, const uint8_t gid[16]);
void nrr_vaddr_lid(nrr_vaddr *a, uint16_t lid);
uint16_t nrr_vaddr_lid_of(const nrr_vaddr *a);
/* "gid fe80...01" or "lid 0x21" into @out (at least 40 bytes) */
const char *nrr_vaddr_str(char *out, const nrr_vaddr *a);

int nrr_rverbs_put_qpn(const nrr_vaddr *rec, uint32_t rec_qpn, uint32_t live_qpn);
/* @owner (may be NULL): the process that published it */
int nrr_rverbs_get_qpn(const nrr_vaddr *rec, uint32_t rec_qpn, uint32_t *live_qpn, uint32_t *owner, int timeout_ms);
int nrr_rverbs_put_mr(const nrr_vaddr *rec, uint32_t rec_rkey, uint64_t rec_addr, uint64_t len,
		      uint32_t live_rkey, uint64_t live_addr);
/* recorded (rkey, remote address, length) of @owner's MR -> live rkey and address */
int nrr_rverbs_remote(const nrr_vaddr *rec, uint32_t owner, uint32_t rec_rkey, uint64_t rec_addr, uint64_t len,
		      uint32_t *live_rkey, uint64_t *live_addr, int timeout_ms);
/* a port's recorded address -> its live one, of the same kind */
int nrr_rverbs_put_addr(const nrr_vaddr *rec, const nrr_vaddr *live);
int nrr_rverbs_get_addr(const nrr_vaddr *rec, nrr_vaddr *live, int timeout_ms);
/* The live device (struct ibv_device *) of @verbs_lib's list standing for
 * the recorded device @rec: live devices go to recorded ones in the order
 * recorded ones are first seen.  @return 0 when there is none. */
uint64_t nrr_rverbs_ibdev(void *verbs_lib, uint64_t rec);

/* ---- CUDA driver, NVML and verbs calls (rcuda.c + generated table) ---- */
typedef struct nrr_rcuda nrr_rcuda;

typedef struct nrr_rcuda_opts {
	const char *fake_libdir; /* holds libcuda.so.1 and libnvidia-ml.so.1 */
	const char *topo;        /* cluster file for the fake runtime (NCCLRR_TOPO) */
	const char *host;        /* virtual host index (NCCLRR_HOST) */
	int rank;                /* recorded rank, -1 when unknown */
	int inject;              /* enum nrr_inject */
	const nrr_schema *schema; /* this process's trace's (per-function lookups are kept by id) */
} nrr_rcuda_opts;

/* Load the fake runtime into this (worker) process.  On failure writes a
 * one-line reason to @err.  @return 0 or negative errno. */
int nrr_rcuda_open(nrr_rcuda **out, nrr_rproc *p, const nrr_rcuda_opts *o, char *err, size_t errlen);
/* @return true when @fn (domain cuda_driver, nvml or verbs) is replayed by
 * nrr_rcuda_call(); false for every other function. */
bool nrr_rcuda_handles(const nrr_fn_schema *fn);
/* When @fn makes IPC handle bytes another process opens
 * (cuIpcGetMemHandle, cuIpcGetEventHandle): the name of the coordinator's
 * set of those made by replayed processes, with *@param the argument that
 * holds them; else NULL.  An open of a handle outside the set (its maker
 * is not replayed: --ranks) is answered from the trace. */
const char *nrr_rcuda_ipc_made(const nrr_fn_schema *fn, const char **param);
/* Replay one complete call (c->done).  Called from several threads at once
 * (one per recorded thread), in recorded order per thread.  @return 0, or a
 * negative errno for an engine failure (res->why says what). */
int nrr_rcuda_call(nrr_rcuda *x, const nrr_call *c, nrr_rres *res);
void nrr_rcuda_close(nrr_rcuda *x);
/* Compare out parameter @param of @fn, a struct this build's description
 * lays out (struct:TYPE and its `c` line), as recorded (@rec, @reclen bytes)
 * and as replayed (@live, @livelen): member by member up to and including
 * @last (NULL: all), the way nrr_rcuda_call() compares ibv_query_port's.
 * @return true when equal; else false, res->why naming the member. */
bool nrr_rcuda_cmp_members(const char *fn, const char *param, const char *last, const uint8_t *rec, size_t reclen,
			   const uint8_t *live, size_t livelen, nrr_rres *res);
/* For rverbs.c: the live value of recorded handle @rec of @kind (a string
 * literal: "qp", "pd", "cq"), *@known false when no replayed call made it;
 * bind one; the libibverbs loaded (NULL when none). */
uint64_t nrr_rcuda_handle(nrr_rcuda *x, const char *kind, uint64_t rec, bool *known);
void nrr_rcuda_bind(nrr_rcuda *x, const char *kind, uint64_t rec, uint64_t live);
void *nrr_rcuda_verbs_lib(nrr_rcuda *x);
/* the worker replaying through @x (NULL in unit tests) */
nrr_rproc *nrr_rcuda_proc(nrr_rcuda *x);

/* Verbs calls whose arguments rcuda.c's generic dispatch cannot pass
 * (custom-encoded attributes, values that cross processes): replayed by
 * nrr_rverbs_call() once rcuda.c decided the call runs live. */
bool nrr_rverbs_owns(const nrr_fn_schema *fn);
int nrr_rverbs_call(nrr_rcuda *x, const nrr_call *c, nrr_rres *res);
/* Does data-path call @c (ibv_post_send, ibv_post_recv, ibv_poll_cq) run
 * live through nrr_rverbs_call(): a post that succeeded as recorded; a poll
 * of a CQ that a live post made live.  A recorded failure of a live CQ's
 * poll is reproduced, not answered from the trace. */
bool nrr_rverbs_data_path(nrr_rcuda *x, const nrr_call *c);
/* Before rcuda.c runs verbs call @c live: a teardown (ibv_destroy_qp,
 * ibv_dereg_mr) waits for its QPs' peers (nrr_wait_peer_ended). */
void nrr_rverbs_before(nrr_rcuda *x, const nrr_call *c);
/* rcuda.c: a CQ was made (live), the one ibv_create_qp of this thread takes */
void nrr_rverbs_cq_made(uint64_t live);
/* rcuda.c: verbs call @c succeeded as recorded with arguments @slot (the
 * generated thunk's, in prototype order) and result @live: the MR keys and
 * GIDs it made go into the remap table. */
void nrr_rverbs_done(nrr_rcuda *x, const nrr_call *c, const uint64_t *slot, int64_t live);
/* @return true when a successful @fn puts an entry into the remap table
 * (what the coordinator sizes the table for). */
bool nrr_rverbs_publishes(const nrr_fn_schema *fn);
/* With NCCLRR_DEBUG=verbs: one line on stderr with this process's remap
 * counts (QP numbers and rkeys published, RTR destination QP numbers
 * remapped, and not found in the table). */
void nrr_rverbs_report(void);

/* Is NCCLRR_DEBUG on for @topic ("verbs", "net"): it names the topic, or
 * is "all" (man ncclrr-replay, ENVIRONMENT). */
bool nrr_debug_topic(const char *topic);

#endif
