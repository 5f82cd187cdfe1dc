/* SPDX-License-Identifier: MIT */
/*
 * core.c - the tracer's life in a traced process (libncclrr-trace.so).
 *
 * Configuration comes from the environment, as `ncclrr record` sets it:
 *   NCCLRR_TRACE_DIR   where <host>-<pid>.nrt goes (unset: trace nothing)
 *   NCCLRR_MODE        full (default) | ring:SIZE (flight recorder)
 *   NCCLRR_BACKEND     native (default) | lttng
 *   NCCLRR_PAYLOAD     payload bytes kept per buffer argument (0..4096)
 *   NCCLRR_WATCHDOG    seconds without any traced call returning while one
 *                      is in flight before the trace is written out (0: off)
 *
 * The trace file of a process is opened at its first traced call (a
 * process that makes none leaves no file), so a forked child opens its
 * own.  The file is completed at exit(), _exit() and before an exec (the
 * new image opens <host>-<pid>-1.nrt); fatal signals and, in ring mode,
 * SIGUSR1 write it out (signals.c).  The file says how the process ended
 * (metadata `end`: "exit STATUS", "signal NAME", "exec"; end_ts: when).
 * If it cannot be written the tracer
 * says so once and the program runs on untraced.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <elf.h>
#include <link.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/timex.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "ncclrr_config.h"
#include "nrr_api_gen.h"
#include "nrr_env.h"
#include "redact.h"
#include "tracer_internal.h"
/* the net plugin declares the hooks it calls itself: they must stay the
 * generated ones (a mismatch fails here) */
#include "nrr_wrap_gen.h"
#include "plugins/net_trace.h"

int nrr_trace_backend = NRR_BACKEND_OFF;
const struct nrr_lt_ops *nrr_lt;

static struct {
	char dir[PATH_MAX - 64];
	char host[128];
	size_t ring;                 /* ring mode: bytes kept; 0 = full mode */
	uint64_t watchdog_ns;
	int backend;                 /* what nrr_trace_backend is while tracing works */
	char mode_text[64];
	bool group_read;             /* NCCLRR_GROUP_READ=1: files 0640, not 0600 */
} cfg;

static _Atomic(nrr_writer *) g_w;  /* this process's writer, NULL until the first call */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pid_t g_pid;                /* the process g_w belongs to (vfork children differ) */
static int g_generation;           /* 0, then 1, 2, ... for each image after an exec failed */
static __thread int t_busy __attribute__((tls_model("initial-exec")));

/* ------------------------------------------------------------ recording */

static void open_writer(void);

/* Thread names, as metadata thread.TID=NAME: what pthread_setname_np or
 * prctl(PR_SET_NAME) set (NCCL names its threads "NCCL Service  3",
 * "NCCL Progress  3", ... with NCCL_SET_THREAD_NAME=1; other threads keep
 * the program's name).  Written at a thread's first event and again, for
 * the threads still alive, when the trace is completed (NCCL names a
 * thread from its creator, after the thread may have made its first
 * call; a later value of a key wins).  `ncclrr diff` pairs threads by
 * them. */
static __thread int t_named __attribute__((tls_model("initial-exec")));

static size_t thread_line(char *out, size_t len, long tid, const char *name, size_t nlen)
{
	int n = snprintf(out, len, "thread.%ld=", tid);
	if (n < 0 || (size_t)n + nlen + 2 > len)
		return 0;
	for (size_t i = 0; i < nlen && name[i] && name[i] != '\n'; i++)
		out[n++] = name[i] >= 0x20 && name[i] < 0x7f ? name[i] : '?';
	out[n++] = '\n';
	return (size_t)n;
}

/* Hold back the signals sent to end the process (SIGTERM, whose handler
 * writes the trace out: signals.c; SIGINT, SIGHUP; SIGUSR1, a dump in
 * ring mode) while this thread completes the file or holds the writer's
 * I/O lock: ending here would leave the file half written, and a handler
 * run here would wait 5 s for a dump that needs that lock, the process
 * then ending with neither the end nor what came since the last tail.
 * SIGSEGV, SIGBUS and SIGABRT cannot wait: they come from this thread's
 * own code, not the tracer's. */
static void hold_ending_signals(sigset_t *old)
{
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGHUP);
	sigaddset(&stop, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &stop, old);
}

/* metadata from a traced thread: the writer compresses it under its I/O
 * lock (nrr_writer_add_meta) */
static void add_meta(nrr_writer *w, const char *text, size_t len)
{
	sigset_t old;
	hold_ending_signals(&old);
	nrr_writer_add_meta(w, text, len);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void name_thread(nrr_writer *w)
{
	int saved = errno;
	char name[17] = "", line[64];
	t_named = 1;
	size_t n = prctl(PR_GET_NAME, name) == 0
			   ? thread_line(line, sizeof(line), (long)syscall(SYS_gettid), name, strnlen(name, 16))
			   : 0;
	if (n)
		add_meta(w, line, n);
	errno = saved;
}

/* The names of the threads that recorded and are still alive, when the
 * trace is completed: this thread's from prctl, the others' from
 * /proc/self/task/TID/comm (raw reads, no allocation: this may run in a
 * forked child).  Threads that never made a traced call are not named:
 * no event of theirs needs it, and reading another thread's comm costs
 * the process's exit more than the rest of the tracer's fixed cost (at its
 * release the kernel walks the dentries /proc made for it: about 0.3-0.8
 * ms on a 2-core VM, in the reaping parent's wait), while the tracer's own
 * compression thread was read every time. */
static void name_threads(nrr_writer *w)
{
	int saved = errno;
	uint32_t tids[256];
	char out[2048], path[64], name[32];
	size_t used = 0, n, done = 0;
	long self = (long)syscall(SYS_gettid);
	while ((n = nrr_writer_threads(w, done, tids, sizeof(tids) / sizeof(tids[0]))) > 0) {
		if (n > sizeof(tids) / sizeof(tids[0]))
			n = sizeof(tids) / sizeof(tids[0]);
		done += n;
		for (size_t i = 0; i < n; i++) {
			ssize_t r = -1;
			if ((long)tids[i] == self) {
				memset(name, 0, sizeof(name));
				if (prctl(PR_GET_NAME, name) == 0)
					r = (ssize_t)strnlen(name, 16);
			} else {
				snprintf(path, sizeof(path), "/proc/self/task/%u/comm", tids[i]);
				int fd = open(path, O_RDONLY | O_CLOEXEC);
				r = fd >= 0 ? read(fd, name, sizeof(name) - 1) : -1;
				if (fd >= 0)
					close(fd);
			}
			if (r <= 0)
				continue;
			if (used + 64 > sizeof(out)) {
				nrr_writer_add_meta(w, out, used);
				used = 0;
			}
			used += thread_line(out + used, sizeof(out) - used, (long)tids[i], name, (size_t)r);
		}
	}
	if (used)
		nrr_writer_add_meta(w, out, used);
	errno = saved;
}

nrr_tls *nrr_trace_begin(void)
{
	if (__builtin_expect(nrr_trace_backend != NRR_BACKEND_NATIVE, 0) || t_busy)
		return NULL;
	t_busy = 1;
	nrr_writer *w = atomic_load_explicit(&g_w, memory_order_acquire);
	if (__builtin_expect(!w, 0)) {
		pthread_once(&g_once, open_writer);
		w = atomic_load_explicit(&g_w, memory_order_acquire);
		if (!w) {
			t_busy = 0;
			return NULL;
		}
	}
	nrr_tls *t = nrr_writer_thread(w);
	if (!t)
		t_busy = 0;
	else if (__builtin_expect(!t_named, 0))
		name_thread(w);
	return t;
}

static void lttng_send_meta(void);
static _Atomic int lttng_meta_sent;

bool nrr_trace_lttng_begin(void)
{
	if (nrr_trace_backend != NRR_BACKEND_LTTNG || t_busy)
		return false;
	t_busy = 1;
	if (__builtin_expect(!atomic_load_explicit(&lttng_meta_sent, memory_order_relaxed), 0) &&
	    !atomic_exchange(&lttng_meta_sent, 1))
		lttng_send_meta();   /* the process's metadata precedes its first event */
	return true;
}

void nrr_trace_end(void)
{
	t_busy = 0;
}

bool nrr_trace_busy(void)
{
	return t_busy != 0;
}

/* for plugins (net_trace.h): the calls a wrapped plugin makes itself */
NRR_HOOK int nrr_trace_opaque_begin(void)
{
	int was = t_busy;
	t_busy = 1;
	return was;
}

NRR_HOOK void nrr_trace_opaque_end(int token)
{
	t_busy = token;
}

void nrr_trace_log(unsigned level, const char *text, size_t len)
{
	int saved = errno;
	nrr_tls *t = nrr_trace_begin();
	if (t) {
		nrr_log(t, level, text, len);
		nrr_trace_end();
	} else if (nrr_trace_lttng_begin()) {
		nrr_lt->log(level, text, len);
		nrr_trace_end();
	}
	errno = saved;
}

void nrr_trace_meta(const char *fmt, ...)
{
	if (nrr_trace_backend == NRR_BACKEND_OFF)
		return;
	int saved = errno;
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n > 0) {
		if ((size_t)n > sizeof(line) - 2)
			n = (int)sizeof(line) - 2;
		line[n++] = '\n';
		/* make sure the writer exists: metadata may come before any call */
		if (nrr_trace_begin()) {
			nrr_writer *w = atomic_load(&g_w);
			if (w)
				add_meta(w, line, (size_t)n);
			nrr_trace_end();
		} else if (nrr_trace_lttng_begin()) {
			nrr_lt->meta(line, (size_t)n);
			nrr_trace_end();
		}
	}
	errno = saved;
}

/* ------------------------------------------------------------- metadata */

/* The rank a launcher gave this process (-1: none); @src its variable. */
int nrr_launcher_rank(const char **src)
{
	const char *var;
	for (size_t i = 0; (var = nrr_env_rank_var(i)); i++) {
		const char *v = getenv(var);
		char *end;
		long r = v && *v ? strtol(v, &end, 10) : -1;
		if (r >= 0 && *end == '\0') {
			if (src)
				*src = var;
			return (int)r;
		}
	}
	return -1;
}

struct buf {
	char *p;
	size_t len, cap;
};

static void buf_add(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void buf_add(struct buf *b, const char *fmt, ...)
{
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if (b->p && b->len + (size_t)n < b->cap) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = (b->cap ? b->cap * 2 : 4096) + (size_t)n;
		char *p = realloc(b->p, cap);
		if (!p)
			return;
		b->p = p;
		b->cap = cap;
	}
}

static ssize_t read_file(const char *path, char *buf, size_t len)
{
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = syscall(SYS_read, fd, buf, len);
	syscall(SYS_close, fd);
	return n;
}

/* cmdline with NULs turned into spaces (text up to 2 KiB) */
static void add_cmdline(struct buf *b, bool *redacted)
{
	char cmd[2048];
	ssize_t n = read_file("/proc/self/cmdline", cmd, sizeof(cmd) - 1);
	if (n <= 0)
		return;
	while (n > 0 && cmd[n - 1] == '\0')
		n--;
	for (ssize_t i = 0; i < n; i++)
		if (cmd[i] == '\0' || cmd[i] == '\n')
			cmd[i] = ' ';
	cmd[n] = '\0';
	char red[4096];
	if (nrr_redact_cmdline(cmd, red, sizeof(red)))
		*redacted = true;
	buf_add(b, "argv=%s\n", red);
}

/* dl_iterate_phdr callback: the GNU build id (NT_GNU_BUILD_ID note) of
 * the first object, the main program, in hex into @arg (129 bytes): what
 * identifies the binary for diff and bisect, so that no tool opens the
 * path a trace names. */
static int main_build_id(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	char *out = arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		size_t align = ph->p_align == 8 ? 8 : 4;
		const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
		while ((size_t)(end - p) >= sizeof(ElfW(Nhdr))) {
			const ElfW(Nhdr) *nh = (const void *)p;
			const uint8_t *name = p + sizeof(*nh);
			const uint8_t *d = name + ((nh->n_namesz + align - 1) & ~(align - 1));
			if (d > end || nh->n_descsz > (size_t)(end - d))
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4) &&
			    nh->n_descsz <= 64) {
				for (size_t k = 0; k < nh->n_descsz; k++)
					snprintf(out + 2 * k, 3, "%02x", d[k]);
				return 1;
			}
			p = d + ((nh->n_descsz + align - 1) & ~(align - 1));
		}
	}
	return 1;   /* only the first object */
}

static void build_meta(struct buf *b)
{
	extern char **environ;
	struct utsname u;
	buf_add(b, "host=%s\npid=%d\nppid=%d\n", cfg.host, (int)getpid(), (int)getppid());
	bool argv_redacted = false;
	struct buf red = { 0 };   /* what was redacted: argv, env.NAME, ... */
	add_cmdline(b, &argv_redacted);
	if (argv_redacted)
		buf_add(&red, "argv");
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0)
		buf_add(b, "exe=%.*s\n", (int)n, exe);
	char bid[129] = "";
	dl_iterate_phdr(main_build_id, bid);
	if (bid[0])
		buf_add(b, "exe_build_id=%s\n", bid);
	if (uname(&u) == 0)
		buf_add(b, "kernel=%s %s %s\n", u.sysname, u.release, u.machine);
	buf_add(b, "tracer=ncclrr %s\nmode=%s\nbackend=%s\npayload=%zu\n", NCCLRR_VERSION, cfg.mode_text,
		cfg.backend == NRR_BACKEND_LTTNG ? "lttng" : "native", nrr_payload_cap);
	if (g_generation)
		buf_add(b, "exec_generation=%d\n", g_generation);
	int rank = nrr_launcher_rank(NULL);
	if (rank >= 0)
		buf_add(b, "rank=%d\n", rank);
	/* How far this host's wall clock can be trusted: traces of several
	 * hosts are aligned by wall time (the file header), give or take this. */
	struct timex tx = { 0 };
	int st = adjtimex(&tx);
	if (st >= 0)
		buf_add(b, "clock.synced=%d\nclock.esterror_us=%ld\nclock.maxerror_us=%ld\n",
			st != TIME_ERROR && !(tx.status & STA_UNSYNC), tx.esterror, tx.maxerror);
	char boot[64];
	n = read_file("/proc/sys/kernel/random/boot_id", boot, sizeof(boot) - 1);
	if (n > 0) {
		while (n > 0 && (boot[n - 1] == '\n'))
			n--;
		buf_add(b, "boot_id=%.*s\n", (int)n, boot);
	}
	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		if (!eq || !(nrr_env_flags(*e, (size_t)(eq - *e)) & NRR_ENV_RECORD))
			continue;
		char v[1024];
		if (nrr_redact_value(*e, (size_t)(eq - *e), eq + 1, v, sizeof(v)))
			buf_add(&red, "%senv.%.*s", red.len ? "," : "", (int)(eq - *e), *e);
		for (char *p = v; *p; p++)
			if (*p == '\n')
				*p = ' ';
		buf_add(b, "env.%.*s=%s\n", (int)(eq - *e), *e, v);
	}
	if (red.len)
		buf_add(b, "redacted=%s\n", red.p);
	free(red.p);
}

/* --------------------------------------------------------- writer life */

static void lttng_send_meta(void)
{
	struct buf meta = { 0 };
	build_meta(&meta);
	if (meta.p && nrr_lt)
		nrr_lt->meta(meta.p, meta.len);
	free(meta.p);
}

static void writer_failed(void)
{
	nrr_trace_backend = NRR_BACKEND_OFF;
}

/* exit() and a return from main: the status, before the destructor
 * completes the file (registered once per process image, at the first
 * writer: atexit functions registered then run before the libraries'
 * destructors) */
static void on_exit_status(int status, void *arg)
{
	(void)arg;
	nrr_trace_end_exit(status);
}

static void open_writer(void)
{
	static bool exit_hooked;   /* inherited by forked children, as on_exit's list is */
	if (!exit_hooked)
		exit_hooked = on_exit(on_exit_status, NULL) == 0;
	struct buf meta = { 0 };
	build_meta(&meta);
	nrr_writer_opts o = {
		.schema_parts = &nrr_builtin_parts,   /* each function's lines on first use */
		.meta = meta.p,
		.meta_len = meta.len,
		.ring_bytes = cfg.ring,
		.watchdog_ns = cfg.watchdog_ns,
		.sync_ns = 1000000000u,   /* a SIGKILL loses at most the last second */
		.on_io_error = writer_failed,
		.file_mode = cfg.group_read ? 0640 : 0600,
	};
	char path[PATH_MAX];
	nrr_writer *w = NULL;
	int rc = -EEXIST;
	pid_t pid = getpid();
	for (int i = 0; i < 1000 && rc == -EEXIST; i++) {
		int n = i == 0 && !g_generation
				? snprintf(path, sizeof(path), "%s/%s-%d.nrt", cfg.dir, cfg.host, (int)pid)
				: snprintf(path, sizeof(path), "%s/%s-%d-%d.nrt", cfg.dir, cfg.host, (int)pid,
					   i + g_generation);
		rc = n < (int)sizeof(path) ? nrr_writer_open(&w, path, &o) : -ENAMETOOLONG;
	}
	free(meta.p);
	if (rc) {
		fprintf(stderr, "ncclrr: Cannot create trace file=%s: %s; tracing of this process stops, the program continues\n",
			path, strerror(-rc));
		nrr_trace_backend = NRR_BACKEND_OFF;
		return;
	}
	g_pid = pid;
	atomic_store_explicit(&g_w, w, memory_order_release);
}

/* This process's writer when @fd is its trace file's descriptor, else
 * NULL.  Not in a vfork child: it has its own descriptors, our memory
 * (getpid() only once the number matched: close() runs this). */
static nrr_writer *owner_of(int fd)
{
	nrr_writer *w = atomic_load_explicit(&g_w, memory_order_acquire);
	return w && fd >= 0 && fd == nrr_writer_fd(w) && g_pid == getpid() ? w : NULL;
}

int nrr_trace_own_fd(void)
{
	nrr_writer *w = atomic_load_explicit(&g_w, memory_order_acquire);
	return w && g_pid == getpid() ? nrr_writer_fd(w) : -1;
}

int nrr_trace_fd_guard(int fd)
{
	return owner_of(fd) ? EBADF : 0;
}

void nrr_trace_protect_fd(int fd)
{
	nrr_writer *w = owner_of(fd);
	if (w)
		nrr_writer_move_fd(w, fd);
}

/* Complete the file (index and trailer) while other threads may still run:
 * before exit, _exit and exec.  Not in a vfork child (it shares our memory
 * and the parent goes on recording). */
static _Atomic pid_t g_finishing;   /* the thread completing the file, 0: none */

void nrr_trace_finish(void)
{
	nrr_writer *w = atomic_load(&g_w);
	if (!w || getpid() != g_pid)
		return;
	int saved = errno;
	int backend = nrr_trace_backend;
	/* a SIGTERM now would end the process with the file half written:
	 * this thread holds it back until the file is complete, and a handler
	 * running on another thread waits for it (nrr_trace_dump) */
	sigset_t old;
	hold_ending_signals(&old);
	atomic_store(&g_finishing, (pid_t)syscall(SYS_gettid));
	nrr_trace_backend = NRR_BACKEND_OFF;
	atomic_store(&g_w, NULL);
	name_threads(w);
	nrr_writer_finish(w);
	atomic_store(&g_finishing, 0);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	nrr_trace_backend = backend;
	errno = saved;
}

/* An exec failed and the program goes on: record into a new file. */
void nrr_trace_reopen(void)
{
	if (cfg.backend != NRR_BACKEND_NATIVE || nrr_trace_backend != NRR_BACKEND_NATIVE)
		return;
	g_generation++;
	g_once = (pthread_once_t)PTHREAD_ONCE_INIT;
}

void nrr_trace_end_note(const char *text, bool keep)
{
	nrr_writer *w = atomic_load(&g_w);
	if (w && getpid() == g_pid)
		nrr_writer_set_end(w, text, keep);
}

void nrr_trace_end_exit(int status)
{
	char text[32];
	snprintf(text, sizeof(text), "exit %d", status);
	nrr_trace_end_note(text, false);
}

int nrr_trace_dump(int timeout_ms, bool last)
{
	nrr_writer *w = atomic_load(&g_w);
	pid_t fin = atomic_load(&g_finishing);
	if (!w && fin && fin != (pid_t)syscall(SYS_gettid)) {
		/* another thread is completing the file (exit): let it finish */
		struct timespec ten_ms = { 0, 10000000 };
		for (int waited = 0; waited < timeout_ms && atomic_load(&g_finishing); waited += 10)
			nanosleep(&ten_ms, NULL);
		return 0;
	}
	if (!w || getpid() != g_pid)
		return -ENOENT;
	return last ? nrr_writer_dump_last(w, timeout_ms) : nrr_writer_dump(w, timeout_ms);
}

static void atfork_child(void)
{
	nrr_writer *w = atomic_load(&g_w);
	if (w)
		nrr_writer_abandon(w);   /* the parent's file stays the parent's */
	atomic_store(&g_w, NULL);
	g_once = (pthread_once_t)PTHREAD_ONCE_INIT;
	g_generation = 0;
	t_busy = 0;
	t_named = 0;   /* its first event in the child's own trace names it */
	atomic_store(&lttng_meta_sent, 0);
	nrr_trace_child_forked();
}


/* ------------------------------------------------------------- start-up */

/* @return 0, or -1 with a message on stderr (tracing stays off) */
static int configure(const char *dir)
{
	const char *mode = getenv("NCCLRR_MODE"), *backend = getenv("NCCLRR_BACKEND");
	const char *payload = getenv("NCCLRR_PAYLOAD"), *wd = getenv("NCCLRR_WATCHDOG");
	uint64_t v;
	snprintf(cfg.dir, sizeof(cfg.dir), "%s", dir);
	if (gethostname(cfg.host, sizeof(cfg.host) - 1) || !cfg.host[0])
		snprintf(cfg.host, sizeof(cfg.host), "localhost");
	for (char *p = cfg.host; *p; p++)
		if (*p == '/')
			*p = '_';
	snprintf(cfg.mode_text, sizeof(cfg.mode_text), "full");
	const char *gr = getenv("NCCLRR_GROUP_READ");
	cfg.group_read = gr && !strcmp(gr, "1");
	if (mode && *mode && strcmp(mode, "full")) {
		if (strncmp(mode, "ring:", 5) || !nrr_parse_size(mode + 5, &v) || !v) {
			fprintf(stderr, "ncclrr: Cannot trace: NCCLRR_MODE=%s: want full or ring:SIZE (e.g. ring:64M)\n", mode);
			return -1;
		}
		cfg.ring = (size_t)v;
		snprintf(cfg.mode_text, sizeof(cfg.mode_text), "ring:%zu", cfg.ring);
	}
	cfg.backend = NRR_BACKEND_NATIVE;
	if (backend && *backend && strcmp(backend, "native")) {
		if (strcmp(backend, "lttng")) {
			fprintf(stderr, "ncclrr: Cannot trace: NCCLRR_BACKEND=%s: want native or lttng\n", backend);
			return -1;
		}
		/* the provider's one exported function, found in the loaded
		 * objects' symbol tables (no dl* call); looked up only here */
		const struct nrr_lt_ops *(*get)(void) =
			(const struct nrr_lt_ops *(*)(void))nrr_real_next("nrr_lt_ops_get");
		const struct nrr_lt_ops *ops = get ? get() : NULL;
		if (!ops) {
			fprintf(stderr, "ncclrr: Cannot trace with LTTng: libncclrr-trace-lttng.so is not preloaded "
					"(use `ncclrr record --backend lttng`)\n");
			return -1;
		}
		if (ops->abi != NRR_LT_OPS_ABI) {
			fprintf(stderr, "ncclrr: Cannot trace with LTTng: the preloaded libncclrr-trace-lttng.so is of "
					"another build (table 0x%08x, this tracer's 0x%08x); preload the one built with "
					"this libncclrr-trace.so (`ncclrr record --backend lttng` does)\n",
				(unsigned)ops->abi, (unsigned)NRR_LT_OPS_ABI);
			return -1;
		}
		nrr_lt = ops;
		cfg.backend = NRR_BACKEND_LTTNG;
	}
	if (payload && *payload) {
		if (!nrr_parse_size(payload, &v) || v > NRR_BYTES_CAP_DEFAULT) {
			fprintf(stderr, "ncclrr: Cannot trace: NCCLRR_PAYLOAD=%s: want 0..%u bytes\n", payload,
				NRR_BYTES_CAP_DEFAULT);
			return -1;
		}
		nrr_payload_cap = (size_t)v;
	}
	if (wd && *wd) {
		char *end;
		double s = strtod(wd, &end);
		if (end == wd || *end || s < 0) {
			fprintf(stderr, "ncclrr: Cannot trace: NCCLRR_WATCHDOG=%s: want seconds (0: off)\n", wd);
			return -1;
		}
		cfg.watchdog_ns = (uint64_t)(s * 1e9);
	}
	return 0;
}

__attribute__((constructor)) static void nrr_trace_init(void)
{
	const char *dir = getenv("NCCLRR_TRACE_DIR");
	if (!dir || !*dir)
		return;
	nrr_hooks_init();
	if (configure(dir))
		return;
	nrr_writer_clock_mark();   /* the TSC calibration's baseline starts here */
	pthread_atfork(NULL, NULL, atfork_child);
	nrr_signals_init(cfg.ring != 0);
	nrr_trace_backend = cfg.backend;
}

__attribute__((destructor)) static void nrr_trace_fini(void)
{
	nrr_trace_end_note("exit", true);   /* the status, if on_exit_status did not say */
	nrr_trace_finish();
	nrr_trace_backend = NRR_BACKEND_OFF;
}
