/* SPDX-License-Identifier: MIT */
/*
 * nrt.h - the native ncclrr trace file (.nrt): schema, writer and reader.
 *
 * formats/FORMAT.md is the byte-level specification; this header is the C
 * interface to it.  Every function returns 0 on success or a negative
 * errno / NRR_E* code; nrr_strerror() explains a code.  Reader errors also
 * fill an nrr_diag with the file and offset and what to do, so the caller
 * can print one line that a user can act on.
 */
#ifndef NCCLRR_NRT_H
#define NCCLRR_NRT_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "ncclrr/ncclrr.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- errors */
/* The codes are the public library's (include/ncclrr/ncclrr.h), which
 * documents them. */
enum {
	NRR_EBADMAGIC = NCCLRR_EBADMAGIC,
	NRR_EVERSION = NCCLRR_EVERSION,
	NRR_ECORRUPT = NCCLRR_ECORRUPT,
	NRR_ETRUNC = NCCLRR_ETRUNC,
	NRR_ESCHEMA = NCCLRR_ESCHEMA,
	NRR_EZSTD = NCCLRR_EZSTD,
	NRR_EEOF = NCCLRR_EEOF,        /* not an error for iterators */
	NRR_ENOTFOUND = NCCLRR_ENOTFOUND,
};

/* @return a static, human readable explanation of @err (negative). */
const char *nrr_strerror(int err);
/* A byte count as users write it: digits with an optional K, M or G suffix
 * (powers of 1024) and B ("64M", "4096", "1GB").  @return false if @s is
 * anything else. */
bool nrr_parse_size(const char *s, uint64_t *v);
/* Room for @need elements of @elem bytes in the array *@arr (a pointer
 * to the array pointer) of capacity *@cap, doubling the capacity until
 * they fit.  @return false (array untouched) when out of memory. */
bool nrr_reserve(void *arr, size_t need, size_t *cap, size_t elem);
/* Room for one more element in the array holding @n: nrr_reserve(n + 1). */
bool nrr_grow(void *arr, size_t n, size_t *cap, size_t elem);

/* A diagnostic filled by the reader: "file:offset: message". */
typedef struct nrr_diag {
	char path[512];
	uint64_t offset;   /* byte offset in the file the message is about */
	int code;          /* the error code also returned */
	char msg[512];     /* what is wrong and what to do */
} nrr_diag;

/* Format the diagnostic as "Cannot read trace: file=… offset=…: msg". */
void nrr_diag_format(const nrr_diag *d, char *buf, size_t len);

/* ---------------------------------------------------------------- format */
#define NRR_FORMAT_MAJOR 3
#define NRR_FORMAT_MINOR 0

#define NRR_FILE_MAGIC "\x89NRT\r\n\x1a\n"   /* 8 bytes */
#define NRR_FILE_HEADER_SIZE 64
#define NRR_CHUNK_MAGIC 0x3143524eu          /* "NRC1" little endian */
#define NRR_CHUNK_HEADER_SIZE 64
#define NRR_TRAILER_MAGIC "NRTINDEX"          /* 8 bytes */
#define NRR_TRAILER_SIZE 24

enum nrr_chunk_type {
	NRR_CHUNK_SCHEMA = 1,  /* schema text (see FORMAT.md "Schema") */
	NRR_CHUNK_META = 2,    /* key=value lines: host, pid, env, versions */
	NRR_CHUNK_DATA = 3,    /* records of one stream (thread) */
	NRR_CHUNK_INDEX = 4,   /* seek index over the data chunks */
};

/* Record tags inside a data chunk (first byte of every record). */
enum nrr_rec_tag {
	NRR_REC_ENTER = 1,   /* fn:uvar dts:uvar in-args */
	NRR_REC_LEAVE = 2,   /* dur:uvar result:svar errno:uvar out-args */
	NRR_REC_REPEAT = 3,  /* count:uvar elapsed:uvar  (previous call repeated) */
	NRR_REC_LOG = 4,     /* dts:uvar level:uvar text:bytes */
	NRR_REC_CYCLE = 5,   /* period:uvar count:uvar elapsed:uvar  (previous `period` calls repeated) */
};

/* ---------------------------------------------------------------- schema */
/* How a value is stored on the wire. */
enum nrr_wire { NRR_WIRE_U = 0, NRR_WIRE_S = 1, NRR_WIRE_B = 2 };

/* How a value is presented (dump) and normalized (diff). */
enum nrr_fmt {
	NRR_FMT_U,       /* unsigned decimal            wire U */
	NRR_FMT_I,       /* signed decimal              wire S */
	NRR_FMT_X,       /* hex (pointers, addresses)   wire U */
	NRR_FMT_BOOL,    /* 0/1                         wire U */
	NRR_FMT_ENUM,    /* symbolic via enum table     wire S */
	NRR_FMT_FLAGS,   /* OR of symbols               wire U */
	NRR_FMT_HANDLE,  /* opaque handle of a kind     wire U */
	NRR_FMT_FD,      /* file descriptor             wire S */
	NRR_FMT_STR,     /* NUL-free text               wire B */
	NRR_FMT_BYTES,   /* raw bytes (hex)             wire B */
	NRR_FMT_SOCKADDR,/* struct sockaddr bytes       wire B */
};

enum nrr_dir { NRR_DIR_IN = 1, NRR_DIR_OUT = 2, NRR_DIR_INOUT = 3 };

/* Return conventions. */
enum nrr_ret {
	NRR_RET_VOID,      /* no result */
	NRR_RET_CURESULT,  /* CUresult, 0 = success */
	NRR_RET_CUDART,    /* cudaError_t, 0 = success */
	NRR_RET_NCCL,      /* ncclResult_t, 0 = success */
	NRR_RET_NVML,      /* nvmlReturn_t, 0 = success */
	NRR_RET_ERRNO,     /* int, -1 and errno on error */
	NRR_RET_POSERR,    /* int, 0 or a positive errno */
	NRR_RET_PTR,       /* pointer, NULL (and maybe errno) on error */
	NRR_RET_INT,       /* plain integer, no error convention */
};

#define NRR_HANDLE_CREATE 1
#define NRR_HANDLE_CONSUME 2

typedef struct nrr_enum_schema {
	const char *name;
	uint32_t n;
	const int64_t *values;
	const char *const *names;
	bool flags;               /* a flags set rather than an enum */
} nrr_enum_schema;

typedef struct nrr_arg_schema {
	const char *name;
	uint8_t dir;      /* enum nrr_dir */
	uint8_t fmt;      /* enum nrr_fmt */
	uint8_t wire;     /* enum nrr_wire (derived from fmt) */
	uint8_t hflags;   /* NRR_HANDLE_* for FMT_HANDLE / FMT_FD */
	uint16_t name_len; /* strlen(name), for formatting without a scan */
	const char *kind; /* enum/flags table name or handle kind, or NULL */
	const nrr_enum_schema *table; /* resolved enum/flags table or NULL */
} nrr_arg_schema;

#define NRR_FN_BLOCKING 0x1u  /* may block (hang analysis) */
#define NRR_FN_POLL 0x2u      /* polling call: repeats are coalesced */
#define NRR_FN_INSTANT 0x4u   /* never waits: recorded with one timestamp, duration 0 (not measured) */

/* Call semantics (FORMAT.md "Call semantics", formats/api/README.md):
 * what a call does, and which of its answers mean what.  Same order as
 * ROLES / ARG_ROLES of formats/gen/ncclrr_gen.py. */
enum nrr_role {
	NRR_ROLE_NONE, NRR_ROLE_CONNECT, NRR_ROLE_ACCEPT, NRR_ROLE_SEND, NRR_ROLE_RECV,
	NRR_ROLE_POLL,       /* waits on a pollfd set (poll, ppoll) */
	NRR_ROLE_CLOSE, NRR_ROLE_SOCK_SETUP, NRR_ROLE_SOCK_PAIR,
	NRR_ROLE_SOCK_INFO,  /* the tracer's own socket event */
	NRR_ROLE_PROXY_REQ, NRR_ROLE_PROXY_RESP,
	NRR_ROLE_CQ_POLL,    /* polls a verbs completion queue */
	NRR_ROLE_NET_TEST,   /* asks the net plugin whether a request is done */
	NRR_ROLE_SYNC,       /* waits for (or asks about) GPU work: stream, event, device */
	NRR_ROLE_FD_EXPORT,  /* hands GPU memory out as a file descriptor */
	NRR_ROLE_FD_IMPORT,  /* maps GPU memory from a file descriptor */
	NRR_ROLE_DEV_OPEN,   /* opens a device (a NIC: ibv_open_device) */
	NRR_ROLE_WR_SEND,    /* posts verbs work requests to a send queue */
	NRR_ROLE_WR_RECV,    /* ...to a receive queue */
	NRR_ROLE_N
};
enum nrr_argrole {
	NRR_ARG_FD,          /* the descriptor the call works on */
	NRR_ARG_ADDR,        /* its socket address */
	NRR_ARG_FDS,         /* a set or pair of descriptors */
	NRR_ARG_PAYLOAD,
	NRR_ARG_ID,          /* the id that pairs a request with its answer */
	NRR_ARG_LOCAL,       /* this end's own socket address (bind, getsockname) */
	NRR_ARGROLE_N
};
/* The `role` field of the tracer's sock_info event: which call named the
 * socket (enum sock_role of formats/api/socket.api; recorded values). */
enum nrr_sock_role { NRR_SOCK_LISTEN = 1, NRR_SOCK_CONNECT = 2, NRR_SOCK_ACCEPT = 3 };
#define NRR_SEM_MAXV 4
/* answers: results, and errno values of a failure (-1, NULL or a poserr result) */
typedef struct nrr_result_set {
	uint8_t nret, nerr;
	int64_t ret[NRR_SEM_MAXV], err[NRR_SEM_MAXV];
} nrr_result_set;

typedef struct nrr_fn_schema {
	uint32_t id;        /* as used in ENTER records; 1..n */
	const char *name;
	const char *domain; /* cuda_driver, cuda_runtime, nvml, verbs, socket, nccl, net, proxy */
	uint8_t ret;        /* enum nrr_ret */
	uint16_t name_len;  /* strlen(name), for formatting without a scan */
	const char *ret_table; /* enum table for the result, or NULL */
	const nrr_enum_schema *rtable;
	uint32_t flags;     /* NRR_FN_* */
	uint16_t nargs;
	uint16_t nin, nout; /* args encoded at enter / at leave (inout in both) */
	const nrr_arg_schema *args;
	/* its semantics: from the trace's sem= attribute, else built in
	 * (by name, else by return convention); nrr_call_class() */
	const char *sem;    /* the sem= text they came from, or NULL: none */
	uint8_t role;       /* enum nrr_role */
	int8_t arg[NRR_ARGROLE_N]; /* parameter index of each enum nrr_argrole, or -1 */
	nrr_result_set notready, transient;
	int8_t notready_arg; /* notready when this out parameter... (-1: none) */
	int64_t notready_out; /* ...reads this value */
	/* failed when an entry this out parameter records (a count byte, then
	 * fail_nfields uvars each) has field fail_field != 0 (ibv_poll_cq's wc
	 * status); fail_table names the values (-1: none) */
	int8_t fail_arg;
	uint8_t fail_field, fail_nfields;
	const nrr_enum_schema *fail_table;
	/* bit i: args[i] is encoded at enter (in, inout) / at leave (out,
	 * inout): the reader decodes a record's args by these, without a
	 * test of each parameter's direction */
	uint32_t in_mask, out_mask;
	/* bit i: args[i] is bytes (wire B), whose value points into the
	 * reader's buffers (dump copies a call's bytes by it) */
	uint32_t b_mask;
	/* numbers each run chooses anew (QP numbers, memory keys: runid:
	 * items): the parameters that are one (bit i: args[i]), and in the
	 * bytes parameter runid_arg (-1: none) the fields runid_fields (bit k:
	 * field k) of a plain run of uvars (runid_nfields 0) or of each entry
	 * of runid_nfields uvars after a count byte */
	uint32_t runid;
	int8_t runid_arg;
	uint8_t runid_nfields;
	uint16_t runid_fields;
} nrr_fn_schema;

typedef struct nrr_schema nrr_schema;

/* Parse schema text (FORMAT.md "Schema").  On error fills @diag (msg
 * names the line) and returns NRR_ESCHEMA. */
int nrr_schema_parse(nrr_schema **out, const char *text, size_t len, nrr_diag *diag);
void nrr_schema_free(nrr_schema *s);
/* @return the function with @id, or NULL. */
const nrr_fn_schema *nrr_schema_fn(const nrr_schema *s, uint32_t id);
/* @return the function named @name, or NULL. */
const nrr_fn_schema *nrr_schema_fn_by_name(const nrr_schema *s, const char *name);
uint32_t nrr_schema_nfns(const nrr_schema *s);
/* @return the symbol for @v in @t, or NULL. */
const char *nrr_enum_name(const nrr_enum_schema *t, int64_t v);

/* The schema compiled into this build (generated from formats/api/; link
 * api_dep, not only format_dep, to have these). */
extern const char nrr_builtin_schema[];
extern const size_t nrr_builtin_schema_len;
/* @return the parsed built-in schema (parsed once, never freed). */
const nrr_schema *nrr_builtin(void);

/* A schema in parts, for a writer that writes a function's schema lines,
 * and the enum tables they name, when the function is first recorded
 * (nrr_writer_opts.schema_parts): a process that makes 30 kinds of calls
 * carries 30 functions, not the whole API. */
typedef struct nrr_schema_parts {
	uint32_t nfns, nenums;
	const char *text;               /* the parts are slices of it (nrr_builtin_schema) */
	const uint32_t *fn_at;          /* fn i in [1..nfns]: text[fn_at[2i] .. fn_at[2i + 1]),
					 * "name domain ret[ attrs]\n" then its "a ..." lines */
	const uint32_t *enum_at;        /* table e in [0..nenums): text[enum_at[e] .. enum_at[e + 1]),
					 * "enum NAME[ flags]\n" then its "v ..." lines */
	const uint16_t *fn_enum;        /* the tables of fn i: fn_enum[fn_enum_at[i] .. fn_enum_at[i + 1]) */
	const uint32_t *fn_enum_at;     /* [0..nfns + 1] */
} nrr_schema_parts;
extern const nrr_schema_parts nrr_builtin_parts;

/* ---------------------------------------------------------------- writer */
typedef struct nrr_writer nrr_writer;
typedef struct nrr_tls nrr_tls;   /* per-thread stream state */

typedef struct nrr_writer_opts {
	size_t chunk_size;     /* raw bytes per chunk (default 128 KiB) */
	size_t max_buffered;   /* raw bytes buffered for compression before a
				* thread waits (default 32 MiB per writer; each
				* thread may always use 2 chunks) */
	int zstd_level;        /* 0: 1, and -5 while the compression thread is
				* behind (a sixteenth of max_buffered queued);
				* any other: that level always */
	const char *schema;    /* schema text (required unless schema_parts) */
	size_t schema_len;
	/* Instead of schema: the functions' lines are written on first use,
	 * numbered 1, 2, 3, ... in that order (the records carry those
	 * numbers; callers keep passing the parts' ids).  The tracer passes
	 * &nrr_builtin_parts. */
	const nrr_schema_parts *schema_parts;
	const char *meta;      /* "key=value\n" lines; may be NULL */
	size_t meta_len;
	bool no_tsc;           /* use clock_gettime, not the TSC (used by
				* default where it is invariant) */
	/* Converters (e.g. CTF -> .nrt) keep the source's clock: with
	 * manual_clock every record takes the time last given to
	 * nrr_tls_set_time(), and the file header says mono_ns / wall_ns /
	 * pid below instead of this process's. */
	bool manual_clock;
	uint64_t mono_ns, wall_ns;
	uint32_t pid;
	/* Flight recorder: keep only the last ring_bytes of compressed data
	 * chunks in memory; they reach the file at nrr_writer_dump() and at
	 * close.  0: stream everything to the file (full mode). */
	size_t ring_bytes;
	/* Dump once when a call is in flight and no call returned in any
	 * thread for this long (0: no watchdog). */
	uint64_t watchdog_ns;
	/* Full mode: write what the threads hold but have not handed over as
	 * a provisional tail (index and trailer included) at most this often
	 * when it changed, so that SIGKILL loses at most this much time of
	 * records (0: only complete chunks reach the file before close). */
	uint64_t sync_ns;
	/* Called once, from the compression thread, at the first I/O error
	 * (after the one-line message on stderr). */
	void (*on_io_error)(void);
	/* Permissions of the new file (before the umask); 0: 0600, a trace
	 * holds the job's environment and command line. */
	unsigned file_mode;
} nrr_writer_opts;

/* Note the clock now: the TSC calibration of the writers opened later
 * measures from here (at least 100 us), instead of spinning 100 us at
 * open.  Call it early (the tracer: when it is loaded). */
void nrr_writer_clock_mark(void);
/* Create @path (O_EXCL|O_CLOEXEC) and start the compression thread.
 * @opts may be NULL for defaults.  @return 0 or negative errno. */
int nrr_writer_open(nrr_writer **out, const char *path, const nrr_writer_opts *opts);
/* Flush every stream (the caller's fully; other threads' committed records
 * as a snapshot), write the index and trailer, close.  Threads must not
 * record after this. @return 0 or the first I/O error seen. */
int nrr_writer_close(nrr_writer *w);
/* Like nrr_writer_close(), for a process that is exiting while other
 * threads may still record: the file is completed, but no memory is freed
 * (their records after this point are not written). */
int nrr_writer_finish(nrr_writer *w);
/* The program is about to close descriptor @fd (or copy another one over
 * it): when it is the trace file's, the writer goes on with a copy of it.
 * @return 1 moved, 0 not the writer's, or -errno. */
int nrr_writer_move_fd(nrr_writer *w, int fd);
/* The trace file's descriptor (-1 once closed). */
int nrr_writer_fd(const nrr_writer *w);
/* In a forked child: give up the parent's writer without touching its
 * file (closes the descriptor only; the memory is leaked). */
void nrr_writer_abandon(nrr_writer *w);
/*
 * Make the file complete and readable now, while recording goes on: the
 * ring (ring mode), the metadata added so far, every thread's committed
 * records, index and trailer.  Done by the compression thread; this only
 * asks and waits up to @timeout_ms (0: do not wait).  Async-signal-safe.
 * @return 0, or -ETIMEDOUT.
 */
int nrr_writer_dump(nrr_writer *w, int timeout_ms);
/* The same, for a process about to die (a fatal signal's default action):
 * after that dump the writer writes nothing more, so the death cannot cut
 * a later tail short (the kernel ends a write under way when a fatal
 * signal comes, and the tail that held the end note would be gone).
 * Async-signal-safe. @return 0, or -ETIMEDOUT. */
int nrr_writer_dump_last(nrr_writer *w, int timeout_ms);
/* Say how the trace ends ("exit 0", "signal SIGABRT", "exec"): written as
 * the metadata key `end` (with `end_ts`, the time) at the next dump and at
 * close.  A later call replaces the text unless @keep and one is set.
 * Async-signal-safe. @return 1 when set, 0 when kept. */
int nrr_writer_set_end(nrr_writer *w, const char *text, bool keep);
/* Add "key=value\n" metadata lines learnt while running (e.g. the NCCL
 * rank).  Later values of a key override earlier ones.  Not
 * async-signal-safe. @return 0 or -errno. */
int nrr_writer_add_meta(nrr_writer *w, const char *text, size_t len);
/* @return the calling thread's stream, registering it on first use
 * (allocates; not async-signal-safe the first time). NULL on failure. */
nrr_tls *nrr_writer_thread(nrr_writer *w);
/* A stream of its own for thread @tid, used by the one thread that calls
 * the record functions with it (converters writing many threads' streams;
 * pair with manual_clock).  Written at close. NULL on failure. */
nrr_tls *nrr_writer_stream(nrr_writer *w, uint32_t tid);
/* The threads with a live stream (they recorded and have not exited),
 * newest first: skips @skip of them and puts the ids of up to @max more
 * into @tids.  No allocation.  @return how many there are past @skip. */
size_t nrr_writer_threads(nrr_writer *w, size_t skip, uint32_t *tids, size_t max);
/* Monotonic time in ns as the writer timestamps it. */
uint64_t nrr_writer_now(const nrr_writer *w);
/* Bytes written so far and chunks dropped because of I/O errors. */
void nrr_writer_counters(const nrr_writer *w, uint64_t *bytes, uint64_t *chunks, uint64_t *io_errors);

/*
 * Recording a call (the generated encoders use exactly this sequence):
 *   p = nrr_enter_begin(t, fn, max);   p = nrr_put_uvar(p, …) …;  nrr_enter_end(t, p);
 *   … the real call …
 *   p = nrr_leave_begin(t, result, err, max); p = nrr_put_…;  nrr_leave_end(t, p, notready);
 * @max is an upper bound of the argument bytes that follow.
 * @notready marks a polling result that may be coalesced with the
 * previous identical call.
 */
uint8_t *nrr_enter_begin(nrr_tls *t, uint32_t fn, size_t max);
void nrr_enter_end(nrr_tls *t, uint8_t *p);
uint8_t *nrr_leave_begin(nrr_tls *t, int64_t result, uint32_t err, size_t max);
/* The same for a function that never waits (schema attribute `instant`):
 * the clock is not read again, the duration is 0. */
uint8_t *nrr_leave_begin_instant(nrr_tls *t, int64_t result, uint32_t err, size_t max);
void nrr_leave_end(nrr_tls *t, uint8_t *p, bool notready);
/* A log line (e.g. NCCL_DEBUG output) on this thread's timeline. */
void nrr_log(nrr_tls *t, unsigned level, const char *text, size_t len);
/* With nrr_writer_opts.manual_clock: the timestamp of this thread's next
 * records (ns on the writer's clock; keep it non-decreasing). */
void nrr_tls_set_time(nrr_tls *t, uint64_t ns);
/* Hand this thread's buffer to the compressor now. */
void nrr_tls_flush(nrr_tls *t);

/* Upper bound of the bytes a byte field of length n takes. */
#define NRR_BYTES_MAX(n) ((size_t)(n) + 10u)
#define NRR_VAR_MAX 10u
/* Longest byte field stored; longer values keep their length and a prefix. */
#define NRR_BYTES_CAP_DEFAULT 4096u
/* Bytes of a payload (socket data, buffers) kept per field: 0 ..
 * NRR_BYTES_CAP_DEFAULT (the default); set by the tracer from
 * `ncclrr record --payload`. Other byte fields are always kept whole. */
extern size_t nrr_payload_cap;

static inline uint8_t *nrr_put_uvar(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

static inline uint8_t *nrr_put_svar(uint8_t *p, int64_t v)
{
	return nrr_put_uvar(p, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

/* Byte field: total:uvar stored:uvar bytes[stored]; stored = min(n, cap). */
static inline uint8_t *nrr_put_bytes(uint8_t *p, const void *b, size_t n, size_t cap)
{
	size_t s = n < cap ? n : cap;
	p = nrr_put_uvar(p, n);
	p = nrr_put_uvar(p, s);
	if (s) {
		const uint8_t *src = (const uint8_t *)b;
		for (size_t i = 0; i < s; i++)
			p[i] = src[i];
		p += s;
	}
	return p;
}

/* ---------------------------------------------------------------- reader */
typedef struct nrr_reader nrr_reader;

typedef struct nrr_stream_info {
	uint32_t stream;
	uint32_t tid;
	uint32_t nchunks;
	uint64_t first_seq, last_seq;  /* last_seq from the index, approximate */
	uint64_t first_ts;
	uint64_t records;
} nrr_stream_info;

typedef struct nrr_file_info {
	uint16_t major, minor;
	uint32_t pid;
	uint64_t wall_ns;     /* CLOCK_REALTIME when the file was opened */
	uint64_t mono_ns;     /* the writer's clock at the same instant */
	bool index_rebuilt;   /* trailer/index missing or bad: rebuilt by scan */
	uint64_t index_bad_offset; /* the trailer named an index that cannot
			       * describe this file (damaged or crafted: see
			       * FORMAT.md): its offset; 0 when none */
	uint64_t dropped_bytes; /* bytes at the end that were not a complete chunk */
	uint64_t dropped_offset;
	uint32_t nstreams;
	uint64_t file_size;
	uint64_t meta_lost_offset; /* a later metadata chunk was damaged and
			       * skipped (its keys are missing): its offset,
			       * 0 when none was */
	uint64_t schema_lost_offset; /* a later schema chunk (format 3.0) was
			       * damaged: the calls of its functions and of
			       * every later one cannot be decoded; its offset,
			       * 0 when none was */
	uint64_t end_ts;      /* writer clock when the trace was last written out
			       * (meta end_ts: a dump, a provisional tail or
			       * close); 0 when the file does not say */
} nrr_file_info;

/* Open a trace.  A damaged tail is not an error: complete chunks are kept
 * and info.dropped_bytes says what was lost.  @return 0 or NRR_E*. */
int nrr_reader_open(nrr_reader **out, const char *path, nrr_diag *diag);
/* Same over a memory image (fuzzing, tests); @buf must outlive the reader. */
int nrr_reader_open_mem(nrr_reader **out, const void *buf, size_t len, const char *name, nrr_diag *diag);
void nrr_reader_close(nrr_reader *r);
const nrr_file_info *nrr_reader_info(const nrr_reader *r);
const nrr_schema *nrr_reader_schema(const nrr_reader *r);
const nrr_stream_info *nrr_reader_stream(const nrr_reader *r, uint32_t i);
const char *nrr_reader_path(const nrr_reader *r);
/* Metadata value for @key (from the META chunk), or NULL.  The value is
 * in a per-thread buffer that the next call overwrites (any reader): copy
 * it to keep it.  At most 4095 bytes. */
const char *nrr_reader_meta(const nrr_reader *r, const char *key);
/* The metadata's distinct keys, in the order each first appears, each
 * with its last value (spans of the metadata text, not NUL-terminated;
 * valid while @r is open).  @return how many. */
typedef struct nrr_meta_kv {
	const char *key, *value;
	size_t key_len, value_len;
} nrr_meta_kv;
size_t nrr_reader_meta_keys(const nrr_reader *r, const nrr_meta_kv **kv);
/* All metadata as "key=value\n" text. */
const char *nrr_reader_meta_text(const nrr_reader *r, size_t *len);

#define NRR_MAX_ARGS 24
#define NRR_MAX_DEPTH 48
/* CYCLE records: the longest repeated sequence of calls, and the most
 * repetitions one record may stand for (a reader delivers each call). */
#define NRR_CYCLE_MAX 8
#define NRR_CYCLE_COUNT_MAX (1u << 24)

typedef struct nrr_value {
	uint64_t u;            /* wire U, or wire S sign-extended */
	const uint8_t *p;      /* wire B: stored bytes (valid until the next event) */
	uint32_t len;          /* wire B: stored length */
	uint32_t total;        /* wire B: original length (saturated at 4 GiB) */
} nrr_value;

enum nrr_call_kind { NRR_CALL = 0, NRR_CALL_LOG = 1 };

/*
 * Calls nest (ncclCommInitRank -> cudaMalloc -> cuMemAlloc).  A call with
 * no nested call is delivered once, complete (PHASE_CALL).  A call with
 * nested calls or logs is delivered twice: PHASE_ENTER before its first
 * nested event and PHASE_RESUME (complete, args again) at its leave, like
 * strace's "<unfinished ...>" / "<... resumed>".  Calls still open at the
 * end of the trace are delivered as PHASE_INFLIGHT (done = false),
 * innermost first, after everything else of their stream.  Events of one stream come in non-decreasing order of
 * nrr_call_key().
 */
enum nrr_phase { NRR_PHASE_CALL = 0, NRR_PHASE_ENTER = 1, NRR_PHASE_RESUME = 2, NRR_PHASE_INFLIGHT = 3 };

/* One call: enter and leave merged. */
typedef struct nrr_call {
	uint8_t kind;          /* enum nrr_call_kind */
	uint8_t phase;         /* enum nrr_phase */
	uint8_t depth;         /* nesting depth, 0 = outermost */
	bool done;             /* leave seen (false: in flight at end of trace) */
	bool args_lost;        /* enter was in a chunk that was not read */
	uint32_t stream;
	uint32_t tid;
	uint64_t seq;          /* per stream call number, from 1 */
	uint64_t ts;           /* enter time, writer clock ns */
	uint64_t dur;          /* ns inside the call (PHASE_INFLIGHT: until the
				* end of the trace, info.end_ts, or the
				* stream's last record when that is later or
				* the file has no end_ts) */
	uint64_t repeat;       /* identical calls coalesced after this one */
	uint64_t repeat_ns;    /* time those took in total */
	uint8_t cycled;        /* delivered again from a CYCLE record (the period;
				* 0: a call written as itself) */
	int64_t result;
	uint32_t err;          /* errno at return */
	const nrr_fn_schema *fn; /* NULL for logs */
	uint32_t present;      /* bit i: args[i] was recorded */
	/* indexed like fn->args: the enter value of in-args, the leave value
	 * of out- and inout-args (the enter value while the call is open) */
	nrr_value args[NRR_MAX_ARGS];
	unsigned log_level;    /* NRR_CALL_LOG */
	const char *log;       /* NRR_CALL_LOG text (not NUL terminated) */
	uint32_t log_len;
	uint64_t chunk_offset; /* file offset of the chunk holding the last record */
} nrr_call;

/* Ordering key: enter time; leave time for PHASE_RESUME; the end of the
 * stream for PHASE_INFLIGHT (whose dur is the time it had been running). */
static inline uint64_t nrr_call_key(const nrr_call *c)
{
	return c->phase == NRR_PHASE_RESUME || c->phase == NRR_PHASE_INFLIGHT ? c->ts + c->dur : c->ts;
}

typedef struct nrr_cursor nrr_cursor;

/* Iterate the calls of one stream in order.  Memory: two chunks. */
int nrr_cursor_open(nrr_cursor **out, nrr_reader *r, uint32_t stream);
/* Position at the call with sequence number @seq (or the first after it). */
int nrr_cursor_seek(nrr_cursor *c, uint64_t seq);
/* @return 0 and points @call at the next event (valid until the next
 * call on @c), NRR_EEOF at the end, or an error (diag set). */
int nrr_cursor_next(nrr_cursor *c, const nrr_call **call);
const nrr_diag *nrr_cursor_diag(const nrr_cursor *c);
/* What the cursors (and merges) over @r do when a chunk of a stream cannot
 * be decoded.  With no handler (the default) nrr_cursor_next() returns the
 * error.  With one, @fn is told (@d names the file, the offset and what
 * is wrong) and, when it returns 0, that stream ends there, as at its end
 * (NRR_EEOF): the calls before the damage were read, the rest of the
 * stream is skipped (calls open at that point are dropped, not shown in
 * flight).  A nonzero return keeps the error.  Set before any cursor. */
typedef int (*nrr_damage_fn)(void *arg, const nrr_reader *r, const nrr_diag *d);
void nrr_reader_on_damage(nrr_reader *r, nrr_damage_fn fn, void *arg);
void nrr_cursor_close(nrr_cursor *c);

/* Merge all streams of several readers in enter-timestamp order (wall
 * clock: each file's mono->wall offset applied).  Memory: two chunks per
 * stream. */
typedef struct nrr_merge nrr_merge;
int nrr_merge_open(nrr_merge **out, nrr_reader *const *readers, size_t n);
/* @return 0 and points @call at the next event (valid until the next
 * call on @m) and sets @reader_index, NRR_EEOF, or an error (diag set). */
int nrr_merge_next(nrr_merge *m, const nrr_call **call, size_t *reader_index);
/* Wall-clock ns of writer timestamp @ts of reader @r. */
uint64_t nrr_reader_wall(const nrr_reader *r, uint64_t ts);
const nrr_diag *nrr_merge_diag(const nrr_merge *m);
void nrr_merge_close(nrr_merge *m);

/* Read an unsigned / signed LEB128 value from [*pp, end). @return 0 or
 * NRR_ETRUNC / NRR_ECORRUPT (over 10 bytes). */
int nrr_get_uvar(const uint8_t **pp, const uint8_t *end, uint64_t *v);
int nrr_get_svar(const uint8_t **pp, const uint8_t *end, int64_t *v);

/* CRC-32C (Castagnoli) as used in headers. */
uint32_t nrr_crc32c(uint32_t crc, const void *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
