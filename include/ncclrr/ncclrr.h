/* SPDX-License-Identifier: MIT */
/*
 * ncclrr.h - libncclrr, the public C library for reading ncclrr traces
 * (.nrt files written by `ncclrr record`).
 *
 * Build against the installed library with
 *     cc my_reader.c $(pkg-config --cflags --libs ncclrr)
 * or, from a meson project, dependency('ncclrr') (ncclrr as a subproject
 * provides it as well).
 *
 * Conventions (every function below follows them unless it says so):
 * - Functions that can fail return an int: 0 (or a positive count) on
 *   success, a negative value on failure: a negative errno (-ENOMEM,
 *   -ENOENT, ...) or one of the NCCLRR_E* codes below.  ncclrr_strerror()
 *   explains any such value.
 * - Strings and objects returned by the library belong to the library;
 *   the caller never frees them.  Each function says how long they stay
 *   valid.
 * - Thread-safety: the library keeps no global state.  One reader (and the
 *   calls it returns) must be used by one thread at a time; different
 *   readers may be used by different threads concurrently.
 * - ABI: only the functions declared here are exported (a linker version
 *   script, node NCCLRR_0); the types are opaque, so their layout can
 *   change without breaking programs.  The SONAME is libncclrr.so.0.
 *
 * The file format itself is specified in formats/FORMAT.md of the ncclrr
 * sources.
 */
#ifndef NCCLRR_NCCLRR_H
#define NCCLRR_NCCLRR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef NCCLRR_API
#define NCCLRR_API __attribute__((visibility("default")))
#endif

/* ----------------------------------------------------------------- errors */
/* Error codes besides negative errno values. */
enum {
	NCCLRR_EBADMAGIC = -1000,  /* not an ncclrr trace file */
	NCCLRR_EVERSION = -1001,   /* written by a newer, incompatible format */
	NCCLRR_ECORRUPT = -1002,   /* checksum or structure error inside the file */
	NCCLRR_ETRUNC = -1003,     /* the file ends inside a structure */
	NCCLRR_ESCHEMA = -1004,    /* the file's schema text cannot be parsed */
	NCCLRR_EZSTD = -1005,      /* zstd decompression failed */
	NCCLRR_EEOF = -1006,       /* no more events (internal; never returned by ncclrr_reader_next) */
	NCCLRR_ENOTFOUND = -1007,  /* seek target not in the file */
};

/*! ncclrr_strerror() :
 *  @err : a negative value returned by any function of this library.
 *  @return : a static, human readable explanation (never NULL; unknown
 *            values give a generic text).  Thread-safe. */
NCCLRR_API const char *ncclrr_strerror(int err);

/*! ncclrr_version_string() :
 *  @return : the library's version, "MAJOR.MINOR.PATCH" (static).
 *            Thread-safe. */
NCCLRR_API const char *ncclrr_version_string(void);

/* ----------------------------------------------------------------- reader */
typedef struct ncclrr_reader ncclrr_reader;  /* opaque */
typedef struct ncclrr_call ncclrr_call;      /* opaque, owned by its reader */

/*! ncclrr_reader_open() :
 *  Open @nfiles trace files (.nrt; one per traced process, e.g. the files
 *  of a run directory) and prepare to deliver their events merged in
 *  wall-clock order.  A file whose end was lost (process killed) is not an
 *  error: its complete chunks are read.
 *  @out    : receives the reader; set to NULL on failure.
 *  @paths  : @nfiles paths of .nrt files (copied; not used after return).
 *  @nfiles : at least 1.
 *  @errbuf : (may be NULL) on failure receives one line naming the file,
 *            the byte offset and what to do, e.g. "Cannot read trace:
 *            file=x.nrt offset=0: not an ncclrr trace (bad magic) ...".
 *  @errlen : size of @errbuf.
 *  @return : 0, -EINVAL (no file, NULL argument), -ENOMEM, or the error of
 *            the first file that cannot be opened (-ENOENT, NCCLRR_EBADMAGIC,
 *            NCCLRR_EVERSION, ...).
 *  Ownership: close the reader with ncclrr_reader_close(). */
NCCLRR_API int ncclrr_reader_open(ncclrr_reader **out, const char *const *paths, size_t nfiles, char *errbuf,
				  size_t errlen);

/*! ncclrr_reader_close() :
 *  Free the reader and everything it returned (calls, strings).
 *  @r : may be NULL (no-op). */
NCCLRR_API void ncclrr_reader_close(ncclrr_reader *r);

/*! ncclrr_reader_nfiles() :
 *  @return : the number of files the reader was opened with. */
NCCLRR_API size_t ncclrr_reader_nfiles(const ncclrr_reader *r);

/*! ncclrr_reader_meta() :
 *  The metadata value of @key in file @file ("host", "pid", "rank",
 *  "nccl_version", "argv", "end", "env.NAME", ... : the keys are listed
 *  in FORMAT.md, "Meta chunk").
 *  @return : the value (NUL-terminated), or NULL when @file is out of range,
 *            the file has no such key, or memory ran out.  The string is
 *            the reader's and stays valid until the next
 *            ncclrr_reader_meta() or ncclrr_reader_close() on @r. */
NCCLRR_API const char *ncclrr_reader_meta(ncclrr_reader *r, size_t file, const char *key);

/*! ncclrr_reader_next() :
 *  Advance to the next event of the merged files.
 *  Calls nest (ncclCommInitRank -> cuMemAlloc ...).  A call without nested
 *  events comes once, complete (NCCLRR_PHASE_CALL).  A call with nested
 *  events comes twice: NCCLRR_PHASE_ENTER before the first nested event and
 *  NCCLRR_PHASE_RESUME (complete, arguments again) when it returned.  A
 *  call that never returned (hang, kill) comes as NCCLRR_PHASE_INFLIGHT
 *  at the end of its thread's events.
 *  @call   : receives the event; valid until the next ncclrr_reader_next()
 *            or ncclrr_reader_close() on @r.
 *  @return : 1 when an event was delivered, 0 at the end, or a negative
 *            error (damaged data that cannot be skipped); then
 *            ncclrr_reader_error() describes it and the reader is at its
 *            end. */
NCCLRR_API int ncclrr_reader_next(ncclrr_reader *r, const ncclrr_call **call);

/*! ncclrr_reader_error() :
 *  @return : the message of the last error of ncclrr_reader_next() ("Cannot
 *            read trace: file=... offset=...: ..."), or "" when there was
 *            none.  Valid until the next call on @r. */
NCCLRR_API const char *ncclrr_reader_error(const ncclrr_reader *r);

/* ------------------------------------------------------------------ calls */
enum ncclrr_kind {
	NCCLRR_KIND_CALL = 0,  /* a traced API call */
	NCCLRR_KIND_LOG = 1,   /* a log line (e.g. NCCL_DEBUG output) */
};

enum ncclrr_phase {
	NCCLRR_PHASE_CALL = 0,      /* complete call without nested events */
	NCCLRR_PHASE_ENTER = 1,     /* start of a call with nested events (no result yet) */
	NCCLRR_PHASE_RESUME = 2,    /* its return (complete) */
	NCCLRR_PHASE_INFLIGHT = 3,  /* never returned before the trace ended */
};

/* The accessors below take an event returned by ncclrr_reader_next() and
 * never fail; strings they return live as long as the event unless said
 * otherwise. */

/*! @return : enum ncclrr_kind of the event. */
NCCLRR_API int ncclrr_call_kind(const ncclrr_call *c);
/*! @return : enum ncclrr_phase of the event (NCCLRR_PHASE_CALL for logs). */
NCCLRR_API int ncclrr_call_phase(const ncclrr_call *c);
/*! @return : the function's name ("cuMemAlloc_v2"), or "log" for a log line.
 *            Valid until the reader is closed. */
NCCLRR_API const char *ncclrr_call_name(const ncclrr_call *c);
/*! @return : the function's domain (cuda_driver, cuda_runtime, nvml, verbs,
 *            socket, nccl, net, proxy), or "log".  Valid until the reader is
 *            closed. */
NCCLRR_API const char *ncclrr_call_domain(const ncclrr_call *c);
/*! @return : index (0 ..) in ncclrr_reader_open()'s @paths of the file the
 *            event comes from. */
NCCLRR_API size_t ncclrr_call_file(const ncclrr_call *c);
/*! @return : the thread id of the calling thread. */
NCCLRR_API uint32_t ncclrr_call_tid(const ncclrr_call *c);
/*! @return : the call's number in its thread, from 1 (0 for log lines). */
NCCLRR_API uint64_t ncclrr_call_seq(const ncclrr_call *c);
/*! @return : nesting depth, 0 for an outermost call. */
NCCLRR_API unsigned ncclrr_call_depth(const ncclrr_call *c);
/*! @return : when the call started (NCCLRR_PHASE_RESUME: also its start),
 *            in ns since the Unix epoch (the recording host's clock). */
NCCLRR_API uint64_t ncclrr_call_wall_ns(const ncclrr_call *c);
/*! @return : ns spent inside the call (in flight: until the trace ended;
 *            0 for calls too short to be timed, see FORMAT.md `instant`). */
NCCLRR_API uint64_t ncclrr_call_duration_ns(const ncclrr_call *c);
/*! @return : how many identical calls right after this one were coalesced
 *            into it by the writer (polling loops), 0 for none. */
NCCLRR_API uint64_t ncclrr_call_repeat(const ncclrr_call *c);
/*! @return : the call's return value (CUresult, ncclResult_t, int, pointer
 *            ... as a signed 64-bit value); 0 when it has no result yet. */
NCCLRR_API int64_t ncclrr_call_result(const ncclrr_call *c);
/*! @return : errno after the call returned (meaningful for libc calls). */
NCCLRR_API uint32_t ncclrr_call_errno(const ncclrr_call *c);
/*! @return : 1 if the call returned an error by its API's convention
 *            (CUDA_SUCCESS != result, -1 from a socket call, ...) or
 *            returned an entry with an error status (an ibv_poll_cq
 *            completion other than IBV_WC_SUCCESS), else 0. */
NCCLRR_API int ncclrr_call_failed(const ncclrr_call *c);

/*! @return : the number of arguments the function's schema declares (0 for
 *            log lines); arguments are indexed 0 .. n-1. */
NCCLRR_API unsigned ncclrr_call_nargs(const ncclrr_call *c);
/*! @return : the name of argument @i, or NULL when @i is out of range.
 *            Valid until the reader is closed. */
NCCLRR_API const char *ncclrr_call_arg_name(const ncclrr_call *c, unsigned i);
/*! ncclrr_call_arg_u64() :
 *  The integer value of argument @i (pointers, handles, flags, enums:
 *  signed values sign-extended).  Out-arguments hold the value at return.
 *  @return : 1 and *@v set, or 0 when @i is out of range, was not recorded
 *            in this event, or is a byte or string argument. */
NCCLRR_API int ncclrr_call_arg_u64(const ncclrr_call *c, unsigned i, uint64_t *v);
/*! ncclrr_call_arg_bytes() :
 *  The bytes of byte / string / socket address argument @i.
 *  @data  : receives a pointer to the stored bytes (not NUL-terminated),
 *           valid as long as the event.
 *  @len   : receives the stored length.
 *  @total : (may be NULL) receives the length the program passed, which is
 *           larger when the writer kept only a prefix.
 *  @return : 1, or 0 when @i is out of range, not recorded or an integer. */
NCCLRR_API int ncclrr_call_arg_bytes(const ncclrr_call *c, unsigned i, const uint8_t **data, size_t *len,
				     size_t *total);
/*! ncclrr_call_log() :
 *  @len    : receives the length of the text.
 *  @return : the text of a log line (not NUL-terminated; trailing newline
 *            kept), or NULL for a call.  Valid as long as the event. */
NCCLRR_API const char *ncclrr_call_log(const ncclrr_call *c, size_t *len);

/*! ncclrr_call_format() :
 *  Write the event as `ncclrr dump` shows it, without the time, the
 *  process and the sequence number: "connect(sockfd=17,
 *  addr=127.0.0.1:40000, addrlen=16) = -1 ECONNREFUSED (Connection
 *  refused)" (no duration).  PHASE_ENTER and PHASE_INFLIGHT events have
 *  no " = result" part; a log line is "log[LEVEL] TEXT".
 *  @buf, @size : the output, always NUL-terminated when @size > 0
 *                (truncated like snprintf()).
 *  @return : the length of the whole text (excluding the NUL; larger than
 *            or equal to @size means truncated), or -ENOMEM. */
NCCLRR_API int ncclrr_call_format(const ncclrr_call *c, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
