/* SPDX-License-Identifier: MIT */
/*
 * writer.c - the native trace writer.
 *
 * Each thread appends records to a buffer of its own (no lock, no atomic
 * read-modify-write on the hot path).  A full buffer is handed to the
 * writer's compression thread through a lock-free stack and the thread
 * carries on in a spare buffer; the compression thread turns each buffer
 * into one chunk (zstd frame + header), appends it to the file and gives
 * the buffer back to its thread.  A burst that outruns compression is
 * absorbed by new buffers up to max_buffered bytes per writer, and at the
 * default level compressed faster while it is queued (drain); past that
 * the thread waits (nothing is dropped).  See FORMAT.md for the bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define HAVE_RDTSC 1
#if __has_include(<sys/platform/x86.h>)
#include <sys/platform/x86.h>   /* glibc >= 2.33: the CPUID answers of its start-up */
#define HAVE_GLIBC_CPUID 1
#else
#include <cpuid.h>
#endif
#endif

#include "nrt.h"
#include "nrt_internal.h"

#define MAX_DEPTH NRR_MAX_DEPTH
/* Room kept free at the end of a buffer for a REPEAT record. */
#define SLACK 32
/* Bytes the frame prologue of a chunk can take. */
#define PROLOGUE_MAX (NRR_VAR_MAX + MAX_DEPTH * 3 * NRR_VAR_MAX)

struct wbuf {
	uint8_t *data;
	size_t len;
	uint32_t nrec;
	uint64_t first_seq, first_ts;
	nrr_tls *owner;
	struct wbuf *next;   /* in the writer's queue, or a free list */
	struct wbuf *all;    /* every buffer of the owner, for freeing */
	_Atomic bool handed; /* handed over (queued or written): no longer the owner's to snapshot */
};

#define HIST (2 * NRR_CYCLE_MAX)

/* A call without nested records, as written in the current buffer. */
struct leaf {
	uint32_t fn;
	bool notready;
	uint32_t nrec_before;   /* records of the buffer before its ENTER */
	size_t call_off, end_off, args_off, args_len, body_off, body_len;
	uint64_t clock_before;
};

struct frame {
	uint32_t fn;
	uint64_t seq, ts;
	uint64_t clock_before;  /* stream clock before the ENTER */
	size_t call_off;        /* offset of the ENTER record, or SIZE_MAX */
	size_t args_off, args_len;
	uint32_t gen;           /* buffer generation of the ENTER */
	bool children;
};

size_t nrr_payload_cap = NRR_BYTES_CAP_DEFAULT;

struct nrr_tls {
	uint8_t *pos, *end, *base;
	uint8_t *limit;         /* base + chunk_size: pointers past it are scratch */
	size_t max_field;       /* largest record argument part that fits a chunk */
	/* the writer's clock, copied here so the hot path touches one struct */
	bool tsc;
	bool manual;            /* timestamps come from nrr_tls_set_time() */
	uint64_t tsc0, ns0, mult;
	uint32_t epoch_seq;         /* of the writer's epoch copied above */
	uint64_t manual_ns;
	nrr_writer *w;
	_Atomic uint32_t *fn_map;   /* the writer's sch_map (lazy schema), or NULL */
	struct wbuf *cur;
	uint32_t stream, tid;
	uint32_t gen;           /* bumped on every buffer switch */
	uint32_t nrec;
	uint64_t clock, seq;
	unsigned depth;         /* may exceed MAX_DEPTH: deeper calls are dropped */
	struct frame frames[MAX_DEPTH];
	/* Coalescing (FORMAT.md, REPEAT and CYCLE): the last leaf calls of the
	 * buffer that follow one another directly, oldest first; once two
	 * runs of the same sequence (holding a "not ready" answer) went by,
	 * the sequence is the template and each further run of it is folded
	 * into a count. */
	struct leaf hist[HIST];     /* a ring: hist_at() */
	unsigned nhist, hnext;
	unsigned since_notready;    /* calls of hist after its last "not ready" one */
	struct leaf tmpl[NRR_CYCLE_MAX];
	unsigned period;            /* calls in the template; 0: no cycle */
	unsigned part;              /* calls of the next run matched so far */
	uint64_t part_clock;        /* clock before that run */
	size_t part_end;            /* where its next call must start (nothing between) */
	size_t rec_off;             /* REPEAT/CYCLE record written before that run, or SIZE_MAX */
	uint64_t rec_count, rec_ns; /* what it holds */
	uint32_t rec_nrec;          /* records of the buffer before it */
	size_t leave_off, body_off;
	uint64_t rep_count, rep_ns; /* runs folded, not yet written */
	uint64_t dropped_deep;
	uint64_t progress;          /* time of the last call that returned (watchdog) */
	/* What another thread may copy out of cur (snapshot): the bytes that
	 * hold whole records and how many records they are, in one word
	 * (offset | count << 32) so the two always agree. */
	_Atomic uint64_t commit;
	/* The records before it are final (the same word as commit): a
	 * coalescing rewind goes back at most to the record written before a
	 * run being matched, or to the start of one of the last calls that a
	 * repeated sequence may still end with (stable_point()); everything
	 * else is only appended. */
	_Atomic uint64_t stable;
	_Atomic uint32_t folds;     /* coalescing rewinds so far, twice (odd: one under way) */
	bool dead;
	nrr_tls *next_all;
	struct wbuf *all;                /* every buffer this thread owns */
	struct wbuf *spare;              /* free buffers, owner only */
	_Atomic(struct wbuf *) returned; /* given back by the compression thread */
	/* where dropped records go (too deep, too big): last, and never
	 * zeroed, so its 64 KiB cost no page until a record is dropped */
	uint8_t scratch[NRR_BYTES_CAP_DEFAULT * NRR_MAX_ARGS + 256];
};

struct ring_chunk {
	struct ring_chunk *next;
	uint32_t stream, tid, nrec;
	uint64_t first_seq, first_ts;
	size_t len;                 /* header + payload */
	uint8_t bytes[];
};

struct index_ent {
	uint64_t offset, first_seq, first_ts;
	uint32_t stream, tid, nrec;
};

struct nrr_writer {
	int fd;
	char path[PATH_MAX];
	size_t chunk_size;
	int level;
	bool adapt, fast;   /* the default level: -5 while behind (drain) */
	bool tsc, manual;
	/* the clock epoch: ns = ns0 + (tsc - tsc0) * mult >> 32; read by every
	 * traced thread at every record (epoch_seq), written a few times: a
	 * cache line of its own */
	_Alignas(64) uint64_t tsc0;
	uint64_t ns0, mult;
	_Atomic uint32_t epoch_seq; /* odd while the epoch changes (threads copy it) */
	_Alignas(64) uint64_t cal_tsc, cal_ns;   /* start of the calibration baseline */
	int cal_round;              /* refinements done (refine_clock) */
	_Atomic(struct wbuf *) queue;
	_Atomic uint32_t qfutex;
	_Atomic uint32_t freefutex;
	_Atomic size_t pool_bytes;  /* buffers allocated by all threads */
	size_t max_buffered;
	_Atomic bool stop;
	/* held by the compression thread while it works (not while it
	 * sleeps); nrr_writer_finish takes it and does the last work itself,
	 * so that an exiting process does not wait for that thread to be
	 * woken and scheduled (the thread, once stopped, does nothing more) */
	pthread_mutex_t work_lock;
	nrr_tls *closer;            /* the stream of the thread finishing the file */
	pthread_t thread;
	bool thread_started;
	_Atomic(nrr_tls *) threads;
	_Atomic uint32_t nstreams;
	pthread_key_t key;
	/* compression thread only */
	ZSTD_CCtx *zc;
	uint8_t *zbuf;
	size_t zcap;
	uint64_t off;
	struct index_ent *index;
	size_t nindex, cindex;
	/* counters */
	_Atomic uint64_t bytes, chunks, io_errors;
	bool warned;
	void (*on_io_error)(void);
	/* flight recorder (ring_max > 0): data chunks stay in memory, oldest
	 * dropped first, and are written out by dumps */
	size_t ring_max, ring_used;
	struct ring_chunk *ring_head, *ring_tail;
	uint64_t base_off;          /* end of header, schema and first metadata */
	bool dumping;               /* emit_chunk writes data chunks to the file */
	/* The file holds [0, disk_off) for good and, up to file_end, the last
	 * tail (a provisional one, or a ring dump).  While a tail is there,
	 * what is written goes to pend (memory) instead, and reaches the file
	 * with the next tail, in its place, in one pwrite (put_pend): a SIGKILL
	 * finds a tail on disk except while that write is under way. */
	uint64_t disk_off, file_end;
	uint8_t *pend;
	size_t pend_len, pend_cap;
	uint64_t dump_ns;           /* how long the last tail took to make */
	/* Lazy schema (opts.schema_parts): a function's lines are appended to
	 * sch, numbered in order, when a thread first records it (sch_lock;
	 * sch is allocated whole at open and only appended to, so the
	 * compression thread reads [.., sch_len) without the lock), and reach
	 * the file as a schema chunk before the first data chunk that needs
	 * them (schema_flush). */
	const nrr_schema_parts *parts;
	_Atomic uint32_t *sch_map;  /* [parts' id] -> this file's id, 0 until first use */
	uint64_t *sch_enum_sent;    /* bitmap of parts' enum tables written */
	uint32_t sch_nfns;
	char *sch, *sch_out;        /* the lines; a chunk's text under construction */
	size_t sch_cap;
	_Atomic size_t sch_len;
	size_t sch_done;            /* bytes of sch in the file for good (full mode) */
	size_t sch_tail;            /* ... and in the tail being written (dump) */
	pthread_mutex_t sch_lock;
	char *meta_extra;           /* metadata added while running */
	size_t meta_extra_len;
	/* how the trace ended (nrr_writer_set_end): written with end_ts at
	 * every dump and at close, see end_meta() */
	char end_note[96];
	_Atomic uint32_t end_len;
	/* dump requests, numbered: dump_req counts the requests made,
	 * dump_done is the number of the last one a dump began after (a dump
	 * already under way when a request comes does not answer it: it may
	 * have written the tail before the request's end note) */
	_Atomic uint32_t dump_req, dump_done;
	/* nrr_writer_dump_last asked (last_asked); the dump that saw it is
	 * written and nothing is written after it (sealed, compression thread
	 * or close) */
	_Atomic bool last_asked;
	bool sealed;
	uint64_t watchdog_ns, watch_last, hang_at;
	uint64_t sync_ns, sync_last, sync_mark;   /* full mode: provisional tail (sync_tail) */
	uint64_t seen_mark;                       /* the records' state at sync_tail's last look */
	uint64_t active_at;         /* when the records last changed, or a chunk was queued */
	pthread_mutex_t io_lock;   /* compression thread vs close() and add_meta (a traced thread: tracer/core.c holds the ending signals back meanwhile) */
};

/* initial-exec: this is read twice per traced call, and the general
 * dynamic model costs a __tls_get_addr call each time */
static __thread struct {
	nrr_writer *w;
	nrr_tls *t;
} tls_cache __attribute__((tls_model("initial-exec")));

static void futex_wait(_Atomic uint32_t *f, uint32_t val, uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
	syscall(SYS_futex, (uint32_t *)f, FUTEX_WAIT_PRIVATE, val, ns ? &ts : NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *f)
{
	syscall(SYS_futex, (uint32_t *)f, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The TSC ticks at a constant rate in every power state ("invariant TSC",
 * CPUID 0x80000007 EDX bit 8): then it is the clock.  (The CPUID answer,
 * not /proc/cpuinfo: this runs in every traced process.)  glibc asked the
 * CPU at start-up and keeps the answer: in a VM each CPUID traps to the
 * hypervisor, and the 4 of asking again (two per __get_cpuid) took 26 us
 * of every traced process's start on this project's 2-core VM. */
static bool tsc_invariant(void)
{
#if defined(HAVE_GLIBC_CPUID)
	return CPU_FEATURE_PRESENT(INVARIANT_TSC);
#elif defined(HAVE_RDTSC)
	unsigned a, b, c, d;
	if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
		return false;
	__get_cpuid(0x80000007u, &a, &b, &c, &d);
	return (d >> 8) & 1u;
#else
	return false;
#endif
}

static inline uint64_t now_ns(const nrr_writer *w)
{
#ifdef HAVE_RDTSC
	if (w->tsc) {
		uint64_t d = __rdtsc() - w->tsc0;
		return w->ns0 + (uint64_t)(((unsigned __int128)d * w->mult) >> 32);
	}
#endif
	return mono_ns();
}

/* Copy the writer's clock epoch (seqlock: retried while it changes). */
static void epoch_copy(nrr_tls *t)
{
	const nrr_writer *w = t->w;
	for (;;) {
		uint32_t s0 = atomic_load_explicit(&w->epoch_seq, memory_order_acquire);
		if (s0 & 1)
			continue;
		uint64_t a = __atomic_load_n(&w->tsc0, __ATOMIC_RELAXED), b = __atomic_load_n(&w->ns0, __ATOMIC_RELAXED),
			 m = __atomic_load_n(&w->mult, __ATOMIC_RELAXED);
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&w->epoch_seq, memory_order_relaxed) == s0) {
			t->tsc0 = a, t->ns0 = b, t->mult = m, t->epoch_seq = s0;
			return;
		}
	}
}

static inline uint64_t tls_now(nrr_tls *t)
{
#ifdef HAVE_RDTSC
	if (__builtin_expect(t->tsc, 1)) {
		if (__builtin_expect(atomic_load_explicit(&t->w->epoch_seq, memory_order_relaxed) != t->epoch_seq, 0))
			epoch_copy(t);
		uint64_t d = __rdtsc() - t->tsc0;
		uint64_t ns = t->ns0 + (uint64_t)(((unsigned __int128)d * t->mult) >> 32);
		return ns > t->clock ? ns : t->clock;   /* a refined epoch never runs the clock back */
	}
#endif
	return t->manual ? t->manual_ns : mono_ns();
}

void nrr_tls_set_time(nrr_tls *t, uint64_t ns)
{
	t->manual_ns = ns;
}

uint64_t nrr_writer_now(const nrr_writer *w)
{
	return now_ns(w);
}

/* A clock reading taken before any writer opens (nrr_writer_clock_mark):
 * the start of the first calibration baseline. */
static _Atomic uint64_t g_mark_ns, g_mark_tsc;

void nrr_writer_clock_mark(void)
{
#ifdef HAVE_RDTSC
	uint64_t t = mono_ns(), c = __rdtsc();
	atomic_store_explicit(&g_mark_tsc, c, memory_order_relaxed);
	atomic_store_explicit(&g_mark_ns, t, memory_order_release);
#endif
}

/* TSC ticks to ns: a first estimate over at least 100 us at open, refined
 * by the compression thread over the time since open (refine_clock).  The
 * baseline starts at the mark when there is one (the tracer sets it when
 * it is loaded), so a process whose first traced call comes 100 us or
 * more after that does not wait here at all; before, every traced
 * process spun for 100 us. */
static void calibrate(nrr_writer *w)
{
#ifdef HAVE_RDTSC
	uint64_t t0 = mono_ns(), c0 = __rdtsc(), t1, c1;
	uint64_t mt = atomic_load_explicit(&g_mark_ns, memory_order_acquire);
	uint64_t mc = atomic_load_explicit(&g_mark_tsc, memory_order_relaxed);
	if (mt && mt < t0 && mc && mc < c0) {
		t0 = mt;
		c0 = mc;
	}
	do {
		t1 = mono_ns();
		c1 = __rdtsc();
	} while (t1 - t0 < 100000);
	if (c1 > c0) {
		w->mult = (uint64_t)(((unsigned __int128)(t1 - t0) << 32) / (c1 - c0));
		w->tsc0 = c1;
		w->ns0 = t1;
		w->cal_tsc = c0;
		w->cal_ns = t0;
		return;
	}
#endif
	w->tsc = false;
}

/* Over 0.1 s, 1 s, 10 s and 100 s since open: a new rate from the whole
 * baseline, anchored where the old epoch is now, so the clock stays
 * continuous and each thread's stays monotonic. */
static void refine_clock(nrr_writer *w)
{
#ifdef HAVE_RDTSC
	static const uint64_t at[] = { 100000000u, 1000000000u, 10000000000u, 100000000000u };
	if (!w->tsc || w->cal_round >= (int)(sizeof(at) / sizeof(at[0])))
		return;
	uint64_t t = mono_ns(), c = __rdtsc();
	if (t - w->cal_ns < at[w->cal_round] || c <= w->cal_tsc)
		return;
	w->cal_round++;
	uint64_t mult = (uint64_t)(((unsigned __int128)(t - w->cal_ns) << 32) / (c - w->cal_tsc));
	uint64_t anchor = now_ns(w);
	atomic_fetch_add_explicit(&w->epoch_seq, 1, memory_order_acq_rel);
	atomic_thread_fence(memory_order_release);
	__atomic_store_n(&w->tsc0, c, __ATOMIC_RELAXED);
	__atomic_store_n(&w->ns0, anchor, __ATOMIC_RELAXED);
	__atomic_store_n(&w->mult, mult, __ATOMIC_RELAXED);
	atomic_fetch_add_explicit(&w->epoch_seq, 1, memory_order_release);
#endif
}

/* ------------------------------------------------------------- file I/O */

/* The writer runs inside traced programs, where write() and close() may be
 * the tracer's own wrappers: it goes to the kernel directly. */
static ssize_t sys_pwrite(int fd, const void *buf, size_t len, uint64_t at)
{
	return syscall(SYS_pwrite64, fd, buf, len, (off_t)at);
}

static int sys_close(int fd)
{
	return (int)syscall(SYS_close, fd);
}

/* The trace file lives at a high descriptor number, out of the way of the
 * program's own (a program's next descriptor is the lowest free one: the
 * numbers it gets are those it would get untraced), below the soft limit
 * and no higher than needed (the kernel's table grows to the highest one). */
#define FD_HIGH_MAX 4096
#define FD_HIGH_ROOM 64

static int fd_floor(void)
{
	struct rlimit rl;
	rlim_t top = FD_HIGH_MAX;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < top)
		top = rl.rlim_cur;
	return top > 2 * FD_HIGH_ROOM ? (int)(top - FD_HIGH_ROOM) : 3;
}

/* A copy of @fd at the lowest free number from the floor (or from 3 when
 * the limit leaves no room there), close-on-exec; -errno on failure. */
static int fd_copy_high(int fd)
{
	int n = (int)syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, fd_floor());
	if (n < 0 && errno == EINVAL)
		n = (int)syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, 3);
	return n < 0 ? -errno : n;
}

static void io_error(nrr_writer *w, int err)
{
	atomic_fetch_add(&w->io_errors, 1);
	if (!w->warned) {
		w->warned = true;
		fprintf(stderr, "ncclrr: Cannot write trace: file=%s: %s; tracing of this process stops, the program continues\n",
			w->path, strerror(err));
		if (w->on_io_error)
			w->on_io_error();
	}
}

/* @len bytes at file offset @at, whole (the descriptor may be moved by
 * nrr_writer_move_fd meanwhile). */
static int pwrite_all(nrr_writer *w, const uint8_t *p, size_t len, uint64_t at)
{
	while (len) {
		int fd = __atomic_load_n(&w->fd, __ATOMIC_ACQUIRE);
		ssize_t n = sys_pwrite(fd, p, len, at);
		if (n < 0) {
			if (errno == EINTR || (errno == EBADF && fd != __atomic_load_n(&w->fd, __ATOMIC_ACQUIRE)))
				continue;
			int e = errno;
			io_error(w, e);
			return -e;
		}
		p += n;
		len -= (size_t)n;
		at += (uint64_t)n;
	}
	return 0;
}

/* Append @len bytes at w->off: to the file, or to pend while a tail is on
 * disk or one is being made. */
static int write_all(nrr_writer *w, const void *buf, size_t len)
{
	if (w->io_errors)
		return -EIO;
	if (w->dumping || w->file_end > w->disk_off) {
		if (!nrr_reserve(&w->pend, w->pend_len + len, &w->pend_cap, 1))
			return -ENOMEM;
		memcpy(w->pend + w->pend_len, buf, len);
		w->pend_len += len;
	} else {
		int rc = pwrite_all(w, buf, len, w->off);
		if (rc)
			return rc;
		w->disk_off = w->file_end = w->off + len;
	}
	w->off += (uint64_t)len;
	atomic_fetch_add(&w->bytes, (uint64_t)len);
	return 0;
}

/* pend, in place of the old tail at disk_off: the old tail is cut first
 * and pend follows in one pwrite.  (Written over the old tail instead, a
 * write cut short by SIGKILL left new chunks over old ones that the old
 * index still pointed at.)  A kill in between loses the old tail too; the
 * file then ends with the chunks on disk before it, complete. */
static int put_pend(nrr_writer *w)
{
	if (w->file_end > w->disk_off && ftruncate(__atomic_load_n(&w->fd, __ATOMIC_ACQUIRE), (off_t)w->disk_off)) {
		io_error(w, errno);
		return -EIO;
	}
	w->file_end = w->disk_off;
	int rc = pwrite_all(w, w->pend, w->pend_len, w->disk_off);
	if (rc)
		return rc;
	w->file_end = w->disk_off + w->pend_len;
	w->pend_len = 0;
	return 0;
}

/* Keep a compressed data chunk in the flight recorder, dropping the oldest
 * while over budget. */
static int ring_push(nrr_writer *w, const nrr_chunk_header *ch, const uint8_t *h,
		     const uint8_t *z, size_t zn)
{
	struct ring_chunk *c = malloc(sizeof(*c) + NRR_CHUNK_HEADER_SIZE + zn);
	if (!c)
		return -ENOMEM;
	*c = (struct ring_chunk){ NULL, ch->stream, ch->tid, ch->nrecords, ch->first_seq, ch->first_ts,
				  NRR_CHUNK_HEADER_SIZE + zn };
	memcpy(c->bytes, h, NRR_CHUNK_HEADER_SIZE);
	memcpy(c->bytes + NRR_CHUNK_HEADER_SIZE, z, zn);
	if (w->ring_tail)
		w->ring_tail->next = c;
	else
		w->ring_head = c;
	w->ring_tail = c;
	w->ring_used += c->len;
	while (w->ring_used > w->ring_max && w->ring_head != w->ring_tail) {
		struct ring_chunk *old = w->ring_head;
		w->ring_head = old->next;
		w->ring_used -= old->len;
		free(old);
	}
	atomic_fetch_add(&w->chunks, 1);
	return 0;
}

static int schema_flush(nrr_writer *w);

/* Chunks smaller than this are stored raw (FORMAT.md: chunk flags bit 0
 * clear).  zstd saves little on them (a frame costs 13-17 bytes), and a
 * process that only writes such chunks (a program making a few calls)
 * never creates a compression context nor runs zstd's code: that was
 * about 15 of the tracer's 95 page faults in such a process (16 us each
 * on a 2-core VM).  8 KiB: the schema of a few functions with their enum
 * tables (CUresult's alone is 3 KiB) stays under it. */
#define RAW_BELOW 8192

/* The zstd context, made at the first chunk worth compressing. */
static ZSTD_CCtx *cctx(nrr_writer *w)
{
	if (!w->zc && (w->zc = ZSTD_createCCtx())) {
		ZSTD_CCtx_setParameter(w->zc, ZSTD_c_compressionLevel, w->fast ? -5 : w->level);
		ZSTD_CCtx_setParameter(w->zc, ZSTD_c_checksumFlag, 1);
	}
	return w->zc;
}

/* Compress @raw into a chunk of @type and append it; @return 0 or -errno. */
static int emit_chunk(nrr_writer *w, uint8_t type, uint32_t stream, uint32_t tid,
		      uint64_t first_seq, uint64_t first_ts, uint32_t nrec,
		      const void *raw, size_t len)
{
	if (atomic_load(&w->io_errors))
		return -EIO;   /* already said once; the program runs on untraced */
	if (len > NRR_CHUNK_RAW_MAX)
		return -E2BIG;   /* no reader would take it (metadata this large) */
	if (type == NRR_CHUNK_DATA) {
		int rc = schema_flush(w);
		if (rc)
			return rc;
	}
	const uint8_t *pay = raw;
	size_t zn = len;
	bool zstd = len >= RAW_BELOW;
	if (zstd) {
		size_t bound = ZSTD_compressBound(len);
		if (bound > w->zcap) {
			uint8_t *z = realloc(w->zbuf, bound);
			if (!z)
				return -ENOMEM;
			w->zbuf = z;
			w->zcap = bound;
		}
		if (!cctx(w))
			return -ENOMEM;
		zn = ZSTD_compress2(w->zc, w->zbuf, w->zcap, raw, len);
		if (ZSTD_isError(zn)) {
			fprintf(stderr, "ncclrr: Failed to compress a trace chunk: file=%s: %s\n", w->path, ZSTD_getErrorName(zn));
			return NRR_EZSTD;
		}
		pay = w->zbuf;
	}
	uint8_t h[NRR_CHUNK_HEADER_SIZE];
	nrr_chunk_header ch = {
		.type = type, .flags = zstd ? NRR_CHUNK_F_ZSTD : 0, .stream = stream, .tid = tid,
		.first_seq = first_seq, .first_ts = first_ts,
		.payload_size = (uint32_t)zn, .raw_size = (uint32_t)len, .nrecords = nrec,
		.payload_crc = nrr_crc32c(0, pay, zn),
	};
	nrr_chunk_header_pack(&ch, h);
	if (type == NRR_CHUNK_DATA && w->ring_max && !w->dumping)
		return ring_push(w, &ch, h, pay, zn);
	/* data chunks, and the metadata and schema added after the first, are
	 * indexed */
	bool indexed = type == NRR_CHUNK_DATA || ((type == NRR_CHUNK_META || type == NRR_CHUNK_SCHEMA) && w->base_off);
	if (indexed) {
		if (type == NRR_CHUNK_META)
			stream = NRR_STREAM_NONE;
		if (type == NRR_CHUNK_SCHEMA)
			stream = NRR_STREAM_SCHEMA;
		if (w->nindex == w->cindex) {
			size_t n = w->cindex ? w->cindex * 2 : 256;
			struct index_ent *x = realloc(w->index, n * sizeof(*x));
			if (!x)
				return -ENOMEM;
			w->index = x;
			w->cindex = n;
		}
		w->index[w->nindex] = (struct index_ent){ w->off, first_seq, first_ts, stream, tid, nrec };
	}
	int rc = write_all(w, h, sizeof(h));
	if (!rc)
		rc = write_all(w, pay, zn);
	if (!rc) {
		atomic_fetch_add(&w->chunks, 1);
		if (indexed)
			w->nindex++;
	}
	return rc;
}

static void drain(nrr_writer *w)
{
	struct wbuf *list = atomic_exchange(&w->queue, NULL);
	struct wbuf *fifo = NULL;
	size_t nq = 0;
	while (list) {          /* the stack is newest first: reverse it */
		struct wbuf *n = list->next;
		list->next = fifo;
		fifo = list;
		list = n;
		nq++;
	}
	/* Behind: the queue holds a sixteenth of what the threads may buffer
	 * before they wait.  At the default level, compress at -5 until it is
	 * short again: about 1.3 times as fast as level 1 and 20-30 % bigger
	 * (tests/bench/bench_writer, bench_size), so that a burst on a host
	 * whose CPUs are all busy makes threads wait less or not at all. */
	size_t backlog = nq * w->chunk_size;
	bool behind = backlog >= w->max_buffered / 16 || (w->fast && backlog > w->max_buffered / 64);
	if (w->adapt && behind != w->fast) {
		pthread_mutex_lock(&w->io_lock);   /* (metadata is compressed on other threads) */
		w->fast = behind;
		if (w->zc)
			ZSTD_CCtx_setParameter(w->zc, ZSTD_c_compressionLevel, behind ? -5 : w->level);
		pthread_mutex_unlock(&w->io_lock);
	}
	while (fifo) {
		struct wbuf *b = fifo;
		fifo = b->next;
		if (!w->sealed) {   /* (sealed: dropped, the threads go on until the process dies) */
			pthread_mutex_lock(&w->io_lock);
			emit_chunk(w, NRR_CHUNK_DATA, b->owner->stream, b->owner->tid,
				   b->first_seq, b->first_ts, b->nrec, b->data, b->len);
			pthread_mutex_unlock(&w->io_lock);
		}
		nrr_tls *t = b->owner;   /* give the buffer back (only pusher: this thread) */
		struct wbuf *head = atomic_load_explicit(&t->returned, memory_order_relaxed);
		do {
			b->next = head;
		} while (!atomic_compare_exchange_weak_explicit(&t->returned, &head, b,
							       memory_order_release, memory_order_relaxed));
		atomic_fetch_add(&w->freefutex, 1);
		futex_wake(&w->freefutex);
	}
}

/* Chunks drained while a tail is on disk wait in memory for the next one;
 * past this many bytes the next tail comes without waiting for sync_ns
 * (but still spaced by its cost: sync_tail) */
#define PEND_MAX(w) (4 * (w)->chunk_size)

static int dump(nrr_writer *w);
static void watchdog(nrr_writer *w);
static void sync_tail(nrr_writer *w, bool full);

/* How long the compression thread sleeps when nothing wakes it: 100 ms,
 * so that a tail follows a change within sync_ns + 0.1 s; 1 s once the
 * records have not changed for 2 s (a process blocked or between phases),
 * or a tenth of the watchdog's time if shorter.  Every wakeup costs about
 * 0.2 ms on a loaded 2-core VM, and a 2048-rank job on the fake cluster
 * is 2048 such threads: at 10 a second they took more than both CPUs. */
static uint64_t idle_wait_ns(nrr_writer *w)
{
	const uint64_t fast = 100000000u, slow = 1000000000u;
	uint64_t wd = w->watchdog_ns / 10 > fast ? w->watchdog_ns / 10 : fast;
	if (now_ns(w) - w->active_at < 2 * slow)
		return fast;
	return w->watchdog_ns && wd < slow ? wd : slow;
}

/* One round of the compression thread's work, under work_lock; @return
 * true to go again at once, false to sleep. */
static bool work(nrr_writer *w)
{
	if (w->sealed) {   /* the process is dying: requests are answered, nothing written */
		drain(w);
		atomic_store(&w->dump_done, atomic_load(&w->dump_req));
		futex_wake(&w->dump_done);
		return false;
	}
	if (atomic_load(&w->queue)) {
		w->active_at = now_ns(w);
		drain(w);
		/* without periodic tails (sync_ns 0) a tail on disk came
		 * from a dump: what follows it goes out with the next one */
		if (w->pend_len && (!w->sync_ns || w->pend_len >= PEND_MAX(w)))
			sync_tail(w, true);
		return true;
	}
	uint32_t req = atomic_load(&w->dump_req);
	if (req != atomic_load(&w->dump_done)) {
		/* read before the dump: the end note set before the request is in it */
		bool last = atomic_load(&w->last_asked);
		dump(w);
		w->sealed = last;
		atomic_store(&w->dump_done, req);
		futex_wake(&w->dump_done);
		return true;
	}
	if (w->watchdog_ns)
		watchdog(w);
	if (w->sync_ns || w->pend_len)
		sync_tail(w, !w->sync_ns);
	refine_clock(w);
	return false;
}

/* Once stopped, the thread does nothing more: whoever stopped it drains
 * and writes the last tail (close_impl), without waiting for this thread
 * to wake up.  It first sleeps FIRST_WORK_NS unless a buffer comes: the
 * file is readable from open on, a process that ends sooner completes it
 * at exit, and a first tail at once (the first change is written without
 * waiting sync_ns) cost every short-lived process a dump, a zstd context
 * and a malloc arena for this thread: 26 of its page faults.  A process
 * killed later than that has its first calls in the file as before. */
#define FIRST_WORK_NS 100000000u

static void *compress_main(void *arg)
{
	nrr_writer *w = arg;
	uint32_t first = atomic_load(&w->qfutex);
	if (!atomic_load(&w->queue))
		futex_wait(&w->qfutex, first, FIRST_WORK_NS);
	for (;;) {
		uint32_t seen = atomic_load(&w->qfutex);
		pthread_mutex_lock(&w->work_lock);
		bool stop = atomic_load(&w->stop);
		bool again = !stop && work(w);
		pthread_mutex_unlock(&w->work_lock);
		if (stop)
			break;
		if (!again)
			futex_wait(&w->qfutex, seen, idle_wait_ns(w));
	}
	return NULL;
}

/* -------------------------------------------------------------- threads */

#define COMMIT_OFF(c) ((size_t)((c) & 0xffffffffu))
#define COMMIT_NREC(c) ((uint32_t)((c) >> 32))

/* The @i-th of the calls in hist, oldest first. */
static inline struct leaf *hist_at(nrr_tls *t, unsigned i)
{
	return &t->hist[(t->hnext + HIST - t->nhist + i) % HIST];
}

/* Where a later coalescing rewind may go back to, at the earliest: the
 * record before the run being matched, or the first of the last calls
 * that the second run of a sequence found later may begin with. */
static inline uint64_t stable_point(nrr_tls *t, uint64_t c)
{
	if (t->rec_off != SIZE_MAX)
		return (uint64_t)t->rec_off | (uint64_t)t->rec_nrec << 32;
	if (t->nhist) {
		const struct leaf *l = hist_at(t, t->nhist > NRR_CYCLE_MAX - 1 ? t->nhist - (NRR_CYCLE_MAX - 1) : 0);
		return (uint64_t)l->call_off | (uint64_t)l->nrec_before << 32;
	}
	return c;
}

/* The records up to @off (t->nrec of them) are whole: a snapshot may copy them. */
static inline void publish(nrr_tls *t, size_t off)
{
	uint64_t c = (uint64_t)off | (uint64_t)t->nrec << 32;
	atomic_store_explicit(&t->stable, stable_point(t, c), memory_order_release);
	atomic_store_explicit(&t->commit, c, memory_order_release);
}

/* Nothing folds into what came before any more (the runs folded so far
 * are written). */
static inline void cycle_reset(nrr_tls *t)
{
	t->nhist = 0;
	t->period = 0;
	t->part = 0;
	t->rec_off = SIZE_MAX;
}

static void buf_start(nrr_tls *t, struct wbuf *b)
{
	t->cur = b;
	t->base = b->data;
	t->end = b->data + t->w->chunk_size - SLACK;
	t->limit = b->data + t->w->chunk_size;
	b->first_seq = t->seq + 1;
	b->first_ts = t->clock;
	b->nrec = 0;
	atomic_store(&b->handed, false);
	t->nrec = 0;
	t->gen++;
	cycle_reset(t);
	/* prologue: the calls open at the start of this chunk */
	unsigned open = t->depth < MAX_DEPTH ? t->depth : MAX_DEPTH;
	uint8_t *p = nrr_put_uvar(b->data, open);
	for (unsigned i = 0; i < open; i++) {
		p = nrr_put_uvar(p, t->frames[i].fn);
		p = nrr_put_uvar(p, t->frames[i].seq);
		p = nrr_put_uvar(p, t->frames[i].ts);
	}
	t->pos = p;
	publish(t, (size_t)(p - b->data));
}

/* The folded runs as a record: REPEAT for a single call, else CYCLE. */
static inline uint8_t *put_repeat(nrr_tls *t, uint8_t *p)
{
	if (t->period > 1) {
		*p++ = NRR_REC_CYCLE;
		p = nrr_put_uvar(p, t->period);
	} else {
		*p++ = NRR_REC_REPEAT;
	}
	p = nrr_put_uvar(p, t->rep_count);
	p = nrr_put_uvar(p, t->rep_ns);
	t->rep_count = 0;
	t->rep_ns = 0;
	t->nrec++;
	return p;
}

static void queue_buf(nrr_writer *w, struct wbuf *b)
{
	struct wbuf *head = atomic_load_explicit(&w->queue, memory_order_relaxed);
	do {
		b->next = head;
	} while (!atomic_compare_exchange_weak_explicit(&w->queue, &head, b,
						       memory_order_release, memory_order_relaxed));
	atomic_fetch_add(&w->qfutex, 1);
	if (!atomic_load_explicit(&w->stop, memory_order_relaxed))   /* stopped: the closer drains */
		futex_wake(&w->qfutex);
}

static struct wbuf *new_buf(nrr_tls *t)
{
	nrr_writer *w = t->w;
	struct wbuf *b = calloc(1, sizeof(*b));
	if (b)
		b->data = malloc(w->chunk_size);
	if (!b || !b->data) {
		free(b);
		return NULL;
	}
	b->owner = t;
	b->all = t->all;
	t->all = b;
	return b;
}

/* A free buffer: a spare, one given back, or a new one while the writer
 * is within max_buffered; NULL means wait for the compression thread. */
static struct wbuf *take_buf(nrr_tls *t)
{
	if (!t->spare)
		t->spare = atomic_exchange_explicit(&t->returned, NULL, memory_order_acquire);
	struct wbuf *b = t->spare;
	if (b) {
		t->spare = b->next;
		return b;
	}
	nrr_writer *w = t->w;
	if (atomic_fetch_add(&w->pool_bytes, w->chunk_size) + w->chunk_size <= w->max_buffered &&
	    (b = new_buf(t)))
		return b;
	atomic_fetch_sub(&w->pool_bytes, w->chunk_size);
	return NULL;
}

/* Hand the current buffer over and continue in a free one. */
static void switch_buf(nrr_tls *t)
{
	nrr_writer *w = t->w;
	struct wbuf *b = t->cur;
	if (t->rep_count)
		t->pos = put_repeat(t, t->pos);
	b->len = (size_t)(t->pos - t->base);
	b->nrec = t->nrec;
	atomic_store(&b->handed, true);
	queue_buf(w, b);
	struct wbuf *n;
	while (!(n = take_buf(t))) {
		if (t == w->closer) {   /* finishing the file: this thread drains */
			drain(w);
			continue;
		}
		uint32_t seen = atomic_load(&w->freefutex);
		if ((n = take_buf(t)))
			break;
		futex_wait(&w->freefutex, seen, 1000000);
	}
	buf_start(t, n);
}

void nrr_tls_flush(nrr_tls *t)
{
	if (t && !t->dead && t->nrec + t->rep_count)
		switch_buf(t);
}

static void free_bufs(nrr_tls *t)
{
	for (struct wbuf *b = t->all, *n; b; b = n) {
		n = b->all;
		free(b->data);
		free(b);
	}
	t->all = NULL;
}

static void tls_exit(void *arg)
{
	nrr_tls *t = arg;
	nrr_tls_flush(t);
	t->dead = true;
	if (tls_cache.t == t)
		tls_cache.t = NULL, tls_cache.w = NULL;
}

/* A new stream of @w for thread @tid, on the writer's list (not yet bound
 * to any thread). */
static nrr_tls *stream_new(nrr_writer *w, uint32_t tid)
{
	nrr_tls *t = malloc(sizeof(*t));
	if (!t)
		return NULL;
	memset(t, 0, offsetof(nrr_tls, scratch));
	t->w = w;
	t->fn_map = w->sch_map;
	/* two buffers each thread may always have, whatever max_buffered says */
	struct wbuf *first = new_buf(t), *second = first ? new_buf(t) : NULL;
	if (!second) {
		free_bufs(t);
		free(t);
		return NULL;
	}
	atomic_fetch_add(&w->pool_bytes, 2 * w->chunk_size);
	t->spare = second;
	t->tsc = w->tsc;
	t->manual = w->manual;
	epoch_copy(t);
	t->max_field = w->chunk_size - PROLOGUE_MAX - 64;
	t->stream = atomic_fetch_add(&w->nstreams, 1);
	t->tid = tid;
	t->clock = w->manual ? w->ns0 : now_ns(w);
	t->manual_ns = t->clock;
	t->progress = t->clock;
	buf_start(t, first);
	nrr_tls *head = atomic_load(&w->threads);
	do {
		t->next_all = head;
	} while (!atomic_compare_exchange_weak(&w->threads, &head, t));
	return t;
}

nrr_tls *nrr_writer_thread(nrr_writer *w)
{
	if (tls_cache.w == w)
		return tls_cache.t;
	nrr_tls *t = pthread_getspecific(w->key);
	if (!t) {
		t = stream_new(w, (uint32_t)syscall(SYS_gettid));
		if (!t)
			return NULL;
		pthread_setspecific(w->key, t);
	}
	/* (a thread may alternate between writers) */
	tls_cache.w = w;
	tls_cache.t = t;
	return t;
}

nrr_tls *nrr_writer_stream(nrr_writer *w, uint32_t tid)
{
	return stream_new(w, tid);
}

/* ------------------------------------------------------- lazy schema */

static size_t sch_putn(nrr_writer *w, size_t n, const char *text, size_t l)
{
	if (l > w->sch_cap - n)
		l = w->sch_cap - n;   /* (cannot happen: sch_cap holds every part) */
	memcpy(w->sch + n, text, l);
	return n + l;
}

static size_t sch_put(nrr_writer *w, size_t n, const char *text)
{
	return sch_putn(w, n, text, strlen(text));
}

/* The file's number for function @fn of the parts, given on its first
 * use: its lines, and the tables they name not yet written, are appended
 * to sch.  Rare (once per function per process): a mutex. */
static __attribute__((noinline)) uint32_t schema_add(nrr_writer *w, uint32_t fn)
{
	const nrr_schema_parts *sp = w->parts;
	if (fn == 0 || fn > sp->nfns)
		return fn;   /* a caller's bug: the reader will name the unknown id */
	pthread_mutex_lock(&w->sch_lock);
	uint32_t id = atomic_load_explicit(&w->sch_map[fn], memory_order_relaxed);
	if (!id) {
		size_t n = atomic_load_explicit(&w->sch_len, memory_order_relaxed);
		for (uint32_t i = sp->fn_enum_at[fn]; i < sp->fn_enum_at[fn + 1]; i++) {
			uint16_t e = sp->fn_enum[i];
			if (e < sp->nenums && !(w->sch_enum_sent[e / 64] >> (e % 64) & 1)) {
				n = sch_putn(w, n, sp->text + sp->enum_at[e], sp->enum_at[e + 1] - sp->enum_at[e]);
				w->sch_enum_sent[e / 64] |= 1ull << (e % 64);
			}
		}
		id = ++w->sch_nfns;
		char num[24], *q = num + sizeof(num);
		*--q = 0;
		*--q = ' ';
		for (uint32_t v = id; v; v /= 10)
			*--q = (char)('0' + v % 10);
		n = sch_put(w, n, "fn ");
		n = sch_put(w, n, q);
		n = sch_putn(w, n, sp->text + sp->fn_at[2 * fn], sp->fn_at[2 * fn + 1] - sp->fn_at[2 * fn]);
		atomic_store_explicit(&w->sch_len, n, memory_order_release);
		atomic_store_explicit(&w->sch_map[fn], id, memory_order_release);
	}
	pthread_mutex_unlock(&w->sch_lock);
	return id;
}

/* Before a data chunk: the functions first used since the last schema
 * chunk, as one more schema chunk.  In full mode a chunk written for good
 * advances sch_done; a tail's (dumping) is written again with the next
 * tail unless a chunk for good took it first; in ring mode the data part
 * is rewritten by each dump, so each dump writes every line (sch_tail
 * starts at 0) and nothing is written between dumps. */
static int schema_flush(nrr_writer *w)
{
	if (!w->parts || (w->ring_max && !w->dumping))
		return 0;
	size_t *from = w->dumping ? &w->sch_tail : &w->sch_done;
	size_t to = atomic_load_explicit(&w->sch_len, memory_order_acquire);
	if (to <= *from)
		return 0;
	static const char head[] = "ncclrr-schema 1\n", tail[] = "end\n";
	size_t n = to - *from;
	memcpy(w->sch_out, head, sizeof(head) - 1);
	memcpy(w->sch_out + sizeof(head) - 1, w->sch + *from, n);
	memcpy(w->sch_out + sizeof(head) - 1 + n, tail, sizeof(tail) - 1);
	int rc = emit_chunk(w, NRR_CHUNK_SCHEMA, NRR_STREAM_SCHEMA, 0, 0, 0, 0, w->sch_out,
			    sizeof(head) - 1 + n + sizeof(tail) - 1);
	if (!rc)
		*from = to;
	return rc;
}

/* Room for every part (so sch never moves and the traced threads never
 * allocate); the pages are touched only as far as functions are used. */
static int schema_setup(nrr_writer *w, const nrr_schema_parts *sp)
{
	size_t cap = 0;
	for (uint32_t i = 1; i <= sp->nfns; i++)
		cap += sp->fn_at[2 * i + 1] - sp->fn_at[2 * i] + 16;   /* "fn ID " */
	cap += sp->enum_at[sp->nenums] - sp->enum_at[0];
	w->parts = sp;
	w->sch_cap = cap;
	w->sch = malloc(cap);
	w->sch_out = malloc(cap + 32);
	w->sch_map = calloc(sp->nfns + 1, sizeof(*w->sch_map));
	w->sch_enum_sent = calloc(sp->nenums / 64 + 1, sizeof(*w->sch_enum_sent));
	pthread_mutex_init(&w->sch_lock, NULL);
	return w->sch && w->sch_out && w->sch_map && w->sch_enum_sent ? 0 : -ENOMEM;
}

static void schema_free(nrr_writer *w)
{
	free(w->sch);
	free(w->sch_out);
	free((void *)w->sch_map);
	free(w->sch_enum_sent);
}

/* ---------------------------------------------------------- hot path */

static inline void reserve(nrr_tls *t, size_t need)
{
	if (__builtin_expect(t->pos + need > t->end, 0))
		switch_buf(t);
}

uint8_t *nrr_enter_begin(nrr_tls *t, uint32_t fn, size_t max)
{
	unsigned d = t->depth;
	if (__builtin_expect(d >= MAX_DEPTH || max > t->max_field, 0)) {
		t->depth++;
		t->dropped_deep++;
		return t->scratch;
	}
	if (d)
		t->frames[d - 1].children = true;
	if (t->fn_map) {   /* lazy schema: the file's number for it */
		uint32_t id = fn <= t->w->parts->nfns ? atomic_load_explicit(&t->fn_map[fn], memory_order_acquire) : 0;
		fn = id ? id : schema_add(t->w, fn);
	}
	reserve(t, max + 2 * SLACK);   /* before the push: the prologue lists open calls */
	t->depth = d + 1;
	struct frame *f = &t->frames[d];
	uint64_t now = tls_now(t);
	uint8_t *p = t->pos;
	if (t->rep_count) {   /* this call may start one more run: the count goes first */
		t->rec_off = (size_t)(p - t->base);
		t->rec_count = t->rep_count;
		t->rec_ns = t->rep_ns;
		t->rec_nrec = t->nrec;
		t->part = 0;
		p = put_repeat(t, p);
		t->part_end = (size_t)(p - t->base);
	}
	f->fn = fn;
	f->seq = ++t->seq;
	f->clock_before = t->clock;
	f->ts = now;
	f->gen = t->gen;
	f->children = false;
	f->call_off = (size_t)(p - t->base);
	uint64_t dts = now > t->clock ? now - t->clock : 0;
	t->clock = f->ts = t->clock + dts;
	*p++ = NRR_REC_ENTER;
	p = nrr_put_uvar(p, fn);
	p = nrr_put_uvar(p, dts);
	f->args_off = (size_t)(p - t->base);
	return p;
}

void nrr_enter_end(nrr_tls *t, uint8_t *p)
{
	unsigned d = t->depth - 1;
	if (d >= MAX_DEPTH || p < t->base || p > t->limit)
		return;  /* dropped (too deep), or written to scratch */
	struct frame *f = &t->frames[d];
	f->args_len = (size_t)(p - t->base) - f->args_off;
	t->pos = p;
	t->nrec++;
	publish(t, (size_t)(p - t->base));
}

static inline uint8_t *leave_begin(nrr_tls *t, int64_t result, uint32_t err, size_t max, bool timed)
{
	unsigned d = t->depth - 1;
	if (__builtin_expect(d >= MAX_DEPTH || max > t->max_field, 0))
		return t->scratch;
	reserve(t, max + 2 * SLACK);
	struct frame *f = &t->frames[d];
	uint64_t now = timed ? tls_now(t) : f->ts;
	uint64_t dur = now > f->ts ? now - f->ts : 0;
	if (f->children || f->gen != t->gen) {   /* nested calls: what they folded ends here */
		if (t->rep_count)
			t->pos = put_repeat(t, t->pos);
		cycle_reset(t);
	}
	uint8_t *p = t->pos;
	t->leave_off = (size_t)(p - t->base);
	t->clock = f->ts + dur;
	*p++ = NRR_REC_LEAVE;
	p = nrr_put_uvar(p, dur);
	t->body_off = (size_t)(p - t->base);
	p = nrr_put_svar(p, result);
	p = nrr_put_uvar(p, err);
	return p;
}

uint8_t *nrr_leave_begin(nrr_tls *t, int64_t result, uint32_t err, size_t max)
{
	return leave_begin(t, result, err, max, true);
}

/* A call that cannot wait costs one clock read, not two: in a VM an rdtsc
 * takes 10-25 ns, as much as the rest of recording the call. */
uint8_t *nrr_leave_begin_instant(nrr_tls *t, int64_t result, uint32_t err, size_t max)
{
	return leave_begin(t, result, err, max, false);
}

static inline bool leaf_same(const nrr_tls *t, const struct leaf *a, const struct leaf *b)
{
	return a->fn == b->fn && a->args_len == b->args_len && a->body_len == b->body_len &&
	       memcmp(t->base + a->args_off, t->base + b->args_off, a->args_len) == 0 &&
	       memcmp(t->base + a->body_off, t->base + b->body_off, a->body_len) == 0;
}

/* A fold starts: the bytes from its rewind point on, and the pending
 * count, change now; tell a snapshot copying them before the first of
 * them changes (odd: a fold under way).  Only this thread writes folds,
 * so a plain store does (no locked add), and a release fence orders it
 * before the stores that follow (free on x86: stores stay in order; a
 * locked add and a full fence were 3 locked instructions per coalesced
 * poll). */
static inline void fold_begin(nrr_tls *t)
{
	atomic_store_explicit(&t->folds, atomic_load_explicit(&t->folds, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
}

/* Drop the records from @off on: they are folded into a count. */
static inline void fold_rewind(nrr_tls *t, size_t off, uint32_t nrec)
{
	t->pos = t->base + off;
	t->nrec = nrec;
	t->nhist = 0;
	publish(t, off);
	/* even again, after the rewound bytes and count (a release store) */
	atomic_store_explicit(&t->folds, atomic_load_explicit(&t->folds, memory_order_relaxed) + 1,
			      memory_order_release);
}

/* Two runs of the same sequence of at most NRR_CYCLE_MAX leaf calls (one
 * of them "not ready") at the end of hist: fold the second. */
static bool cycle_start(nrr_tls *t)
{
	unsigned n = t->nhist;
	/* the second run holds a "not ready" answer: it is among the last
	 * `per` calls (calls that never answer so cost one test) */
	for (unsigned per = t->since_notready + 1; per <= NRR_CYCLE_MAX && 2 * per <= n; per++) {
		bool notready = false, same = true;
		for (unsigned i = 0; i < per && same; i++) {
			const struct leaf *b = hist_at(t, n - per + i);
			same = leaf_same(t, hist_at(t, n - 2 * per + i), b);
			notready |= b->notready;
		}
		if (!same || !notready)
			continue;
		for (unsigned i = 0; i < per; i++)
			t->tmpl[i] = *hist_at(t, n - 2 * per + i);
		const struct leaf *b = hist_at(t, n - per);
		fold_begin(t);
		t->period = per;
		t->part = 0;
		t->rec_off = SIZE_MAX;
		t->rep_count = 1;
		t->rep_ns = t->clock - b->clock_before;
		fold_rewind(t, b->call_off, b->nrec_before);
		return true;
	}
	return false;
}

void nrr_leave_end(nrr_tls *t, uint8_t *p, bool notready)
{
	unsigned d = --t->depth;
	if (d >= MAX_DEPTH || p < t->base || p > t->limit)
		return;
	struct frame *f = &t->frames[d];
	size_t end = (size_t)(p - t->base);
	t->pos = p;
	t->nrec++;
	t->progress = t->clock;
	bool leaf = !f->children && f->gen == t->gen && t->leave_off == f->args_off + f->args_len;
	if (!leaf) {
		cycle_reset(t);
		publish(t, end);
		return;
	}
	struct leaf cur = {
		.fn = f->fn, .notready = notready, .nrec_before = t->nrec - 2,
		.call_off = f->call_off, .end_off = end, .args_off = f->args_off, .args_len = f->args_len,
		.body_off = t->body_off, .body_len = end - t->body_off, .clock_before = f->clock_before,
	};
	if (t->period) {
		if (t->rec_off != SIZE_MAX && t->part < t->period && cur.call_off == t->part_end &&
		    leaf_same(t, &t->tmpl[t->part], &cur)) {
			if (t->part == 0)
				t->part_clock = cur.clock_before;
			t->part_end = cur.end_off;
			if (++t->part == t->period) {
				if (t->rec_count >= NRR_CYCLE_COUNT_MAX) {
					/* (a count as large as a record may hold: this run
					 * stays written and may start a new cycle) */
					t->period = 0;
					t->part = 0;
				} else {   /* one more whole run: fold it */
					fold_begin(t);
					t->rep_count = t->rec_count + 1;
					t->rep_ns = t->rec_ns + (t->clock - t->part_clock);
					t->part = 0;
					size_t off = t->rec_off;
					t->rec_off = SIZE_MAX;
					fold_rewind(t, off, t->rec_nrec);
					return;
				}
			}
		} else {   /* the cycle ends: its count is written, this run's calls stay */
			t->period = 0;
			t->part = 0;
			t->rec_off = SIZE_MAX;
		}
	}
	/* remember it, after the calls it directly follows */
	if (t->nhist && hist_at(t, t->nhist - 1)->end_off != cur.call_off)
		t->nhist = 0;
	if (cur.notready)
		t->since_notready = 0;
	else if (!t->nhist)
		t->since_notready = NRR_CYCLE_MAX;
	else if (t->since_notready < NRR_CYCLE_MAX)
		t->since_notready++;
	t->hist[t->hnext] = cur;
	t->hnext = (t->hnext + 1) % HIST;
	if (t->nhist < HIST)
		t->nhist++;
	if (t->period || !cycle_start(t))
		publish(t, end);
}

void nrr_log(nrr_tls *t, unsigned level, const char *text, size_t len)
{
	if (len > NRR_BYTES_CAP_DEFAULT)
		len = NRR_BYTES_CAP_DEFAULT;
	if (t->depth && t->depth <= MAX_DEPTH)
		t->frames[t->depth - 1].children = true;
	reserve(t, len + 4 * NRR_VAR_MAX + 2 * SLACK);
	uint8_t *p = t->pos;
	if (t->rep_count)
		p = put_repeat(t, p);
	uint64_t now = tls_now(t);
	uint64_t dts = now > t->clock ? now - t->clock : 0;
	t->clock += dts;
	*p++ = NRR_REC_LOG;
	p = nrr_put_uvar(p, dts);
	p = nrr_put_uvar(p, level);
	p = nrr_put_bytes(p, text, len, len);
	t->pos = p;
	t->nrec++;
	cycle_reset(t);
	publish(t, (size_t)(p - t->base));
}

/* ------------------------------------------------------------ open/close */

/* A trace appears under its name only once its header, schema and
 * metadata are in it: it is made unnamed (O_TMPFILE) in its directory and
 * linked there when they are written.  A process killed in between (a
 * launcher's SIGKILL right after start) leaves no file, not an empty one
 * that every reader would have to call damaged.  Where the filesystem has
 * no O_TMPFILE the file is created under its name at once (*@unnamed
 * false).  -1 with errno set on failure. */
static int create_unnamed(const char *path, mode_t mode, bool *unnamed)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
	*unnamed = fd >= 0;
	if (fd >= 0 || errno == ENOENT || errno == EACCES || errno == ENOTDIR)
		return fd;
	return open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
}

/* Link the unnamed file @fd as @path (-EEXIST as open(O_EXCL) would),
 * then put a descriptor opened by that name in @fd's place, so that
 * /proc/PID/fd shows the trace's name (tests and users look there). */
static int give_name(int fd, const char *path)
{
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW)) {
		if (errno == EEXIST || errno == ENOSPC || errno == EDQUOT || errno == EROFS)
			return -errno;
		/* no /proc: the descriptor itself (needs CAP_DAC_READ_SEARCH) */
		if (linkat(fd, "", AT_FDCWD, path, AT_EMPTY_PATH))
			return -errno;
	}
	int named = open(path, O_WRONLY | O_CLOEXEC);
	struct stat a, b;
	if (named >= 0 && !fstat(fd, &a) && !fstat(named, &b) && a.st_ino == b.st_ino && a.st_dev == b.st_dev)
		syscall(SYS_dup3, named, fd, O_CLOEXEC);
	if (named >= 0)
		sys_close(named);
	return 0;
}

int nrr_writer_open(nrr_writer **out, const char *path, const nrr_writer_opts *opts)
{
	nrr_writer_opts o = { 0 };
	if (opts)
		o = *opts;
	if (!o.chunk_size)
		o.chunk_size = 128 * 1024;
	if (o.chunk_size < 16384)
		o.chunk_size = 16384;
	if (o.chunk_size > NRR_CHUNK_RAW_MAX)
		o.chunk_size = NRR_CHUNK_RAW_MAX;
	/* the compressor must keep up with the traced threads (tests/bench):
	 * level 1 still gives ~3 bytes/event */
	bool adapt = !o.zstd_level;
	if (adapt)
		o.zstd_level = 1;
	if (!o.schema_parts && (!o.schema || !o.schema_len))
		return -EINVAL;
	nrr_writer *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	int rc;
	snprintf(w->path, sizeof(w->path), "%s", path);
	w->chunk_size = o.chunk_size;
	w->max_buffered = o.max_buffered ? o.max_buffered : (size_t)32 << 20;
	w->level = o.zstd_level;
	w->adapt = adapt;
	w->ring_max = o.ring_bytes;
	w->on_io_error = o.on_io_error;
	w->watchdog_ns = o.watchdog_ns;
	w->sync_ns = o.ring_bytes ? 0 : o.sync_ns;
	pthread_mutex_init(&w->io_lock, NULL);
	pthread_mutex_init(&w->work_lock, NULL);
	bool unnamed;
	int low = create_unnamed(path, o.file_mode ? (mode_t)o.file_mode : 0600, &unnamed);
	if (low < 0) {
		rc = -errno;
		free(w);
		return rc;
	}
	w->fd = fd_copy_high(low);
	if (w->fd < 0)
		w->fd = low;   /* no free number up there: the low one serves */
	else
		sys_close(low);
	if (o.schema_parts && schema_setup(w, o.schema_parts)) {   /* (zstd: cctx(), at the first big chunk) */
		rc = -ENOMEM;
		goto error;
	}
	if (pthread_key_create(&w->key, tls_exit)) {
		rc = -EAGAIN;
		goto error;
	}
	w->manual = o.manual_clock;
	w->tsc = !o.no_tsc && !o.manual_clock && tsc_invariant();
	if (w->tsc)
		calibrate(w);

	struct timespec rt;
	clock_gettime(CLOCK_REALTIME, &rt);
	uint64_t mono = o.manual_clock ? o.mono_ns : now_ns(w);
	if (o.manual_clock)
		w->ns0 = mono;
	nrr_file_header fh = {
		.major = NRR_FORMAT_MAJOR, .minor = NRR_FORMAT_MINOR,
		.wall_ns = o.manual_clock ? o.wall_ns : (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec,
		.mono_ns = mono, .pid = o.manual_clock ? o.pid : (uint32_t)getpid(),
		.flags = w->tsc ? NRR_FILE_F_TSC : 0,
	};
	uint8_t h[NRR_FILE_HEADER_SIZE];
	nrr_file_header_pack(&fh, h);
	w->warned = true;   /* a failure here is the caller's to report */
	rc = write_all(w, h, sizeof(h));
	if (!rc && o.schema_parts)   /* no function yet: they follow on first use */
		rc = emit_chunk(w, NRR_CHUNK_SCHEMA, NRR_STREAM_NONE, 0, 0, 0, 0, "ncclrr-schema 1\nend\n", 20);
	else if (!rc)
		rc = emit_chunk(w, NRR_CHUNK_SCHEMA, NRR_STREAM_NONE, 0, 0, 0, 0, o.schema, o.schema_len);
	if (!rc)
		rc = emit_chunk(w, NRR_CHUNK_META, NRR_STREAM_NONE, 0, 0, 0, 0,
				o.meta ? o.meta : "", o.meta ? o.meta_len : 0);
	if (!rc && unnamed)
		rc = give_name(w->fd, path);
	if (rc)
		goto error_key;
	unnamed = false;
	w->base_off = w->off;
	w->warned = false;
	w->active_at = now_ns(w);
	/* the compression thread takes no signal: a handler that asks it for a
	 * dump (the tracer's) must never run on it */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	/* ... and runs on the CPUs of the process (its main thread's), not
	 * only on those of the thread that opened the writer: a thread pinned
	 * to one CPU (NCCL pins its threads near the GPU; a benchmark pins its
	 * loop) would otherwise share that CPU with its own compressor and
	 * wait for it.  A process bound by its launcher stays bound. */
	pthread_attr_t attr;
	cpu_set_t cpus;
	pthread_attr_init(&attr);
	if (!sched_getaffinity(getpid(), sizeof(cpus), &cpus))
		pthread_attr_setaffinity_np(&attr, sizeof(cpus), &cpus);
	int prc = pthread_create(&w->thread, &attr, compress_main, w);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (prc) {
		rc = -EAGAIN;
		goto error_key;
	}
	w->thread_started = true;
	*out = w;
	return 0;
error_key:
	pthread_key_delete(w->key);
error:
	ZSTD_freeCCtx(w->zc);
	free(w->zbuf);
	schema_free(w);
	sys_close(w->fd);
	if (!unnamed)
		unlink(path);
	free(w);
	return rc;
}

static int write_index(nrr_writer *w)
{
	size_t cap = 16 + w->nindex * 6 * NRR_VAR_MAX;
	uint8_t *buf = malloc(cap), *p = buf;
	if (!buf)
		return -ENOMEM;
	p = nrr_put_uvar(p, w->nindex);
	for (size_t i = 0; i < w->nindex; i++) {
		const struct index_ent *e = &w->index[i];
		p = nrr_put_uvar(p, e->offset);
		p = nrr_put_uvar(p, e->stream);
		p = nrr_put_uvar(p, e->tid);
		p = nrr_put_uvar(p, e->first_seq);
		p = nrr_put_uvar(p, e->first_ts);
		p = nrr_put_uvar(p, e->nrec);
	}
	uint64_t at = w->off;
	int rc = emit_chunk(w, NRR_CHUNK_INDEX, NRR_STREAM_NONE, 0, 0, 0, (uint32_t)w->nindex, buf, (size_t)(p - buf));
	free(buf);
	if (rc)
		return rc;
	uint8_t tr[NRR_TRAILER_SIZE];
	nrr_trailer_pack(at, (uint32_t)(w->off - at), tr);
	return write_all(w, tr, sizeof(tr));
}

/* Write what another (live, blocked or interrupted) thread has committed,
 * as is.  The thread may switch buffers meanwhile (its generation tells,
 * and the copy is taken again), or coalesce a "not ready" answer into the
 * one before and rewrite the bytes after it (folds tells, and only the
 * records that were final before the copy are kept). */
static void snapshot(nrr_writer *w, nrr_tls *t)
{
	uint8_t *copy = malloc(w->chunk_size + SLACK);
	if (!copy)
		return;
	for (int tries = 0; tries < 4; tries++) {
		uint32_t folds = atomic_load(&t->folds);
		uint32_t gen = __atomic_load_n(&t->gen, __ATOMIC_ACQUIRE);
		struct wbuf *b = __atomic_load_n(&t->cur, __ATOMIC_ACQUIRE);
		uint64_t stable = atomic_load(&t->stable);
		uint64_t c = atomic_load(&t->commit);
		size_t n = COMMIT_OFF(c);
		uint32_t nrec = COMMIT_NREC(c);
		uint64_t first_seq = b->first_seq, first_ts = b->first_ts;
		uint64_t rep_count = t->rep_count, rep_ns = t->rep_ns;
		unsigned period = t->period;
		if (n > w->chunk_size)
			continue;
		/* buffers @t handed over since the last drain: the copy continues
		 * them, so they go first (as snapshots too: the next drain writes
		 * them over this tail), or the stream would have a gap */
		struct wbuf *q[64];
		unsigned nq = 0;
		for (struct wbuf *x = atomic_load(&w->queue); x && nq < 64; x = x->next)
			if (x->owner == t)
				q[nq++] = x;
		memcpy(copy, b->data, n);
		atomic_thread_fence(memory_order_seq_cst);
		if (__atomic_load_n(&t->gen, __ATOMIC_ACQUIRE) != gen)
			continue;
		if ((folds & 1) || atomic_load(&t->folds) != folds) {   /* rewound while copied: the final records only */
			n = COMMIT_OFF(stable);
			nrec = COMMIT_NREC(stable);
			rep_count = 0;   /* the count pending then is not known */
		}
		if (atomic_load(&b->handed))   /* the next one not started yet: b is written, or in q */
			n = 0, nrec = 0, rep_count = 0;
		while (nq--)
			emit_chunk(w, NRR_CHUNK_DATA, t->stream, t->tid, q[nq]->first_seq, q[nq]->first_ts,
				   q[nq]->nrec, q[nq]->data, q[nq]->len);
		uint8_t *p = copy + n;
		if (rep_count) {   /* racy read of a quiescent thread; see FORMAT.md */
			if (period > 1) {
				*p++ = NRR_REC_CYCLE;
				p = nrr_put_uvar(p, period);
			} else {
				*p++ = NRR_REC_REPEAT;
			}
			p = nrr_put_uvar(p, rep_count);
			p = nrr_put_uvar(p, rep_ns);
			nrec++;
		}
		if (nrec)
			emit_chunk(w, NRR_CHUNK_DATA, t->stream, t->tid, first_seq, first_ts,
				   nrec, copy, (size_t)(p - copy));
		break;
	}
	free(copy);
}

/* The end of the trace as the tail's metadata: end_ts (this writer's clock
 * now: the trace covers the process up to here), whole_ts (@whole: when
 * the copy of every thread's records began, so each thread's records
 * before it are in the file; a thread copied later may have more) and,
 * once the process is ending, end=<how> (FORMAT.md "How a trace ended").
 * Not for converters, whose clock is the source's. */
static void end_meta(nrr_writer *w, uint64_t whole)
{
	if (w->manual)
		return;
	char text[200];
	uint32_t n = atomic_load(&w->end_len);
	int len = snprintf(text, sizeof(text), "end_ts=%llu\nwhole_ts=%llu\n", (unsigned long long)now_ns(w),
			   (unsigned long long)whole);
	if (n && n < sizeof(w->end_note) && len > 0)
		len += snprintf(text + len, sizeof(text) - (size_t)len, "end=%.*s\n", (int)n, w->end_note);
	if (len > 0 && (size_t)len < sizeof(text))
		emit_chunk(w, NRR_CHUNK_META, NRR_STREAM_NONE, 0, 0, 0, 0, text, (size_t)len);
}

int nrr_writer_set_end(nrr_writer *w, const char *text, bool keep)
{
	if (!w || (keep && atomic_load(&w->end_len)))
		return 0;
	/* plain stores, then the length: safe in a signal handler; the
	 * compression thread reads the note after the length */
	uint32_t n = 0;
	atomic_store(&w->end_len, 0);
	for (; text && text[n] && n < sizeof(w->end_note) - 1; n++)
		w->end_note[n] = text[n] == '\n' ? ' ' : text[n];
	atomic_store(&w->end_len, n);
	return 1;
}

/*
 * Write a complete, readable file now: the flight recorder's chunks (ring
 * mode), the metadata learnt while running, what every thread has
 * committed but not yet handed over, the index and the trailer.  In full
 * mode this tail follows the chunks drained since the last one (pend) and
 * both replace the last tail; in ring mode the whole data part is
 * rewritten.  Made in memory and written in one go (put_pend).
 * Compression thread (or close) only.  @return 0 or negative errno.
 */
static int dump(nrr_writer *w)
{
	if (w->sealed)
		return 0;
	drain(w);
	pthread_mutex_lock(&w->io_lock);
	uint64_t t0 = now_ns(w);
	/* full mode: the functions first used since the last chunk, for good
	 * now (as drain's chunks), so that tails do not carry them again and
	 * again in a process whose buffers never fill */
	if (!w->ring_max)
		schema_flush(w);
	/* full mode: the chunks drained since the last tail (in pend) stay,
	 * the tail follows them; ring mode: the whole data part is new */
	uint64_t data_end = w->ring_max ? w->base_off : w->off;
	size_t nindex = w->ring_max ? 0 : w->nindex;
	int rc = 0;
	w->dumping = true;
	w->off = data_end;
	w->nindex = nindex;
	w->sch_tail = w->ring_max ? 0 : w->sch_done;
	if (w->ring_max)
		rc = schema_flush(w);   /* every line: the ring's chunks may use any */
	for (struct ring_chunk *c = w->ring_head; c && !rc; c = c->next) {
		if (w->nindex == w->cindex) {
			size_t n = w->cindex ? w->cindex * 2 : 256;
			struct index_ent *x = realloc(w->index, n * sizeof(*x));
			if (!x) {
				rc = -ENOMEM;
				break;
			}
			w->index = x;
			w->cindex = n;
		}
		w->index[w->nindex] = (struct index_ent){ w->off, c->first_seq, c->first_ts, c->stream, c->tid, c->nrec };
		rc = write_all(w, c->bytes, c->len);
		if (!rc)
			w->nindex++;
	}
	if (!rc && w->ring_max && w->meta_extra_len)
		rc = emit_chunk(w, NRR_CHUNK_META, NRR_STREAM_NONE, 0, 0, 0, 0, w->meta_extra, w->meta_extra_len);
	if (!rc) {
		/* before any thread is copied: what a thread records from now
		 * on may be missing from its copy (a SIGKILL before the next
		 * tail loses it), what it recorded before is in */
		uint64_t whole = now_ns(w);
		for (nrr_tls *t = atomic_load(&w->threads); t; t = t->next_all)
			if (!t->dead)
				snapshot(w, t);
		end_meta(w, whole);
		rc = write_index(w);
	}
	if (!rc)
		rc = put_pend(w);
	if (!rc)
		w->disk_off = data_end;
	else   /* keep only what was drained: the next tail tries again */
		w->pend_len = (size_t)(data_end - w->disk_off);
	w->off = data_end;
	w->nindex = nindex;
	w->dumping = false;
	w->dump_ns = now_ns(w) - t0;
	pthread_mutex_unlock(&w->io_lock);
	return rc;
}

/* Ask the compression thread for a dump; @return the request's number */
static uint32_t request_dump(nrr_writer *w)
{
	uint32_t ticket = atomic_fetch_add(&w->dump_req, 1) + 1;
	atomic_fetch_add(&w->qfutex, 1);
	futex_wake(&w->qfutex);
	return ticket;
}

int nrr_writer_dump(nrr_writer *w, int timeout_ms)
{
	uint32_t ticket = request_dump(w);
	for (int waited = 0; waited < timeout_ms; waited += 10) {
		uint32_t done = atomic_load(&w->dump_done);
		if ((int32_t)(done - ticket) >= 0)
			return 0;
		futex_wait(&w->dump_done, done, 10000000);
	}
	return timeout_ms > 0 && (int32_t)(atomic_load(&w->dump_done) - ticket) < 0 ? -ETIMEDOUT : 0;
}

int nrr_writer_dump_last(nrr_writer *w, int timeout_ms)
{
	atomic_store(&w->last_asked, true);
	return nrr_writer_dump(w, timeout_ms);
}

/* Hang watchdog: a call in flight (or a poll repeating "not ready") and no
 * call returning in any thread for watchdog_ns: dump once per hang. */
static void watchdog(nrr_writer *w)
{
	uint64_t now = now_ns(w);
	if (now - w->watch_last < 200000000u)
		return;
	w->watch_last = now;
	uint64_t last = 0;
	bool waiting = false;
	for (nrr_tls *t = atomic_load(&w->threads); t; t = t->next_all) {
		if (t->dead)
			continue;
		uint64_t p = __atomic_load_n(&t->progress, __ATOMIC_RELAXED);
		if (p > last)
			last = p;
		if (__atomic_load_n(&t->depth, __ATOMIC_RELAXED) || __atomic_load_n(&t->rep_count, __ATOMIC_RELAXED) ||
		    __atomic_load_n(&t->period, __ATOMIC_RELAXED))
			waiting = true;
	}
	if (!waiting || now < last + w->watchdog_ns) {
		if (last > w->hang_at)
			w->hang_at = 0;   /* progress again: re-arm */
		return;
	}
	if (w->hang_at)
		return;
	w->hang_at = now;
	fprintf(stderr, "ncclrr: no traced call returned for %.0f s in pid %d; trace written to %s\n",
		(double)(now - last) / 1e9, (int)getpid(), w->path);
	dump(w);
}

/* Full mode: what the threads hold in their buffers, and the chunks
 * drained since, are written with a provisional tail (index and trailer)
 * at most every sync_ns (or ten times the last tail's making, if longer),
 * when something changed, so a process killed with SIGKILL loses at most
 * that much; and, a tenth of sync_ns after the last tail, as soon as
 * the records stopped changing between two looks of this thread (0.1 s
 * apart while the process is active), so one killed while it waits or
 * pauses loses nothing (traces/nccl_ib/
 * killed's rank 3, killed 1 s after its init, had lost the end of its
 * init).  @full: the drained chunks are over PEND_MAX, so only the tail's
 * own cost spaces it. */
static void sync_tail(nrr_writer *w, bool full)
{
	uint64_t now = now_ns(w);
	uint64_t mark = w->nindex;
	for (nrr_tls *t = atomic_load(&w->threads); t; t = t->next_all)
		if (!t->dead)
			mark = mark * 31 + atomic_load_explicit(&t->commit, memory_order_relaxed) +
			       (uint64_t)(uintptr_t)__atomic_load_n(&t->cur, __ATOMIC_RELAXED) +
			       __atomic_load_n(&t->rep_count, __ATOMIC_RELAXED);
	bool quiet = mark == w->seen_mark;
	w->seen_mark = mark;
	/* tails take at most a tenth of this thread's time; @full (pend is
	 * over its bound): no more than that; quiet: a tenth of sync_ns */
	uint64_t gap = full ? 0 : quiet ? w->sync_ns / 10 : w->sync_ns;
	if (gap < 10 * w->dump_ns)
		gap = 10 * w->dump_ns;
	if (now - w->sync_last < gap)
		return;
	if (mark == w->sync_mark)
		return;   /* (and the first change after a quiet time is written at once) */
	w->sync_mark = mark;
	w->sync_last = now;
	w->active_at = now;
	dump(w);
}

int nrr_writer_add_meta(nrr_writer *w, const char *text, size_t len)
{
	pthread_mutex_lock(&w->io_lock);
	char *m = realloc(w->meta_extra, w->meta_extra_len + len);
	int rc = -ENOMEM;
	if (m) {
		memcpy(m + w->meta_extra_len, text, len);
		w->meta_extra = m;
		w->meta_extra_len += len;
		/* full mode: on disk at once (or with a tail the compression
		 * thread writes now), so a killed process keeps it */
		rc = w->ring_max ? 0 : emit_chunk(w, NRR_CHUNK_META, NRR_STREAM_NONE, 0, 0, 0, 0, text, len);
	}
	bool held = w->pend_len > 0;
	pthread_mutex_unlock(&w->io_lock);
	if (held)
		request_dump(w);
	return rc;
}

static int close_impl(nrr_writer *w, bool free_all)
{
	if (!w)
		return 0;
	nrr_tls *self = tls_cache.w == w ? tls_cache.t : NULL;
	/* The compression thread ends what it is doing and stops; this thread
	 * does the rest (exit: no waiting for that thread to wake up) */
	pthread_mutex_lock(&w->work_lock);
	atomic_store(&w->stop, true);
	w->closer = self;
	if (self) {
		nrr_tls_flush(self);
		self->dead = true;
	}
	int rc = dump(w);   /* the last tail (after a drain): what every live thread holds */
	pthread_mutex_unlock(&w->work_lock);
	if (free_all && w->thread_started) {
		atomic_fetch_add(&w->qfutex, 1);
		futex_wake(&w->qfutex);
		pthread_join(w->thread, NULL);
	} else if (w->thread_started) {
		pthread_detach(w->thread);   /* it ends at its next wakeup, or with the process */
	}
	if (w->io_errors && !rc)
		rc = -EIO;
	if (sys_close(w->fd) && !rc)
		rc = -errno;
	w->fd = -1;
	if (tls_cache.w == w)
		tls_cache.w = NULL, tls_cache.t = NULL;
	if (!free_all)
		return rc;   /* other threads may still be inside a record: leave their memory */
	pthread_key_delete(w->key);
	nrr_tls *t = atomic_load(&w->threads);
	while (t) {
		nrr_tls *n = t->next_all;
		free_bufs(t);
		free(t);
		t = n;
	}
	for (struct ring_chunk *c = w->ring_head, *n; c; c = n) {
		n = c->next;
		free(c);
	}
	ZSTD_freeCCtx(w->zc);
	free(w->zbuf);
	free(w->index);
	free(w->pend);
	free(w->meta_extra);
	schema_free(w);
	pthread_mutex_destroy(&w->io_lock);
	pthread_mutex_destroy(&w->work_lock);
	free(w);
	return rc;
}

int nrr_writer_close(nrr_writer *w)
{
	return close_impl(w, true);
}

int nrr_writer_finish(nrr_writer *w)
{
	return close_impl(w, false);
}

int nrr_writer_fd(const nrr_writer *w)
{
	return __atomic_load_n(&w->fd, __ATOMIC_ACQUIRE);
}

int nrr_writer_move_fd(nrr_writer *w, int fd)
{
	int cur = __atomic_load_n(&w->fd, __ATOMIC_ACQUIRE);
	if (fd < 0 || fd != cur)
		return 0;
	int n = fd_copy_high(cur);
	if (n < 0)
		return n;
	__atomic_store_n(&w->fd, n, __ATOMIC_RELEASE);
	return 1;
}

void nrr_writer_abandon(nrr_writer *w)
{
	if (w && w->fd >= 0)
		sys_close(w->fd);
}

size_t nrr_writer_threads(nrr_writer *w, size_t skip, uint32_t *tids, size_t max)
{
	size_t n = 0;
	for (nrr_tls *t = atomic_load(&w->threads); t; t = t->next_all) {
		if (t->dead)
			continue;
		if (n >= skip && n - skip < max)
			tids[n - skip] = t->tid;
		n++;
	}
	return n > skip ? n - skip : 0;
}

void nrr_writer_counters(const nrr_writer *w, uint64_t *bytes, uint64_t *chunks, uint64_t *io_errors)
{
	if (bytes)
		*bytes = atomic_load(&w->bytes);
	if (chunks)
		*chunks = atomic_load(&w->chunks);
	if (io_errors)
		*io_errors = atomic_load(&w->io_errors);
}
