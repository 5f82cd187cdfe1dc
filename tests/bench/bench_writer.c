/* SPDX-License-Identifier: MIT */
/*
 * bench_writer.c - cost per event of the native writer against an LTTng-UST
 * tracepoint with the same fields, in the same run.
 *
 *   LTTng side:  tracepoint(ncclrr_bench, call4, a, b, c, d): four integer
 *                fields, with a private session active (this program starts
 *                lttng-sessiond if none runs, creates, enables and starts a
 *                session, and undoes all of it at the end).
 *   ncclrr side: a call of a function with four u-args: an ENTER record
 *                (fn, dts, 4 args) and a LEAVE record (dur, result, errno):
 *                two records = two events.
 *   baseline:    the same loop with no tracing.
 *
 * Single thread pinned to one CPU, then 2 threads on 2 CPUs.  Prints
 * ns/event and `writer/lttng = R (target <= 0.25)`.  No timed assertion:
 * exits 0 unless something cannot run (a file cannot be written).
 *
 * usage: bench_writer [CALLS] [--no-lttng]
 *   NCCLRR_BENCH_ZSTD_LEVEL=N overrides the writer's zstd level (experiments).
 *
 * Two costs are printed: wall (elapsed time of the traced thread, which
 * includes waiting for a free buffer when the single compression thread
 * cannot keep up with this saturating loop) and CPU (the traced thread's
 * own CPU time).  The ratio line uses CPU time, the cost to the traced
 * program, and the wall ratio is printed beside it.
 */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <stdbool.h>
#include <sys/wait.h>

#include "ncclrr_config.h"
#include "nrt.h"
#include "bench_common.h"
#if NCCLRR_HAVE_LTTNG
#include "bench_tp.h"
#endif

static const char schema4[] =
	"ncclrr-schema 1\n"
	"fn 1 call4 bench int\n"
	"a in a u\na in b u\na in c u\na in d u\n"
	"end\n";

static char dir[256];
static volatile uint64_t sink;

/* --------------------------------------------------------------- loops */

static void loop_empty(uint64_t n)
{
	uint64_t s = 0;
	for (uint64_t i = 0; i < n; i++) {
		s += i ^ (i * 3);
		__asm__ volatile("" : "+r"(s) :: "memory");
	}
	sink = s;
}

static void loop_ncclrr(nrr_tls *t, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		uint8_t *p = nrr_enter_begin(t, 1, 4 * NRR_VAR_MAX);
		p = nrr_put_uvar(p, i & 0xffff);        /* small varied value */
		p = nrr_put_uvar(p, 0x7f2e00000000ull + (i << 6)); /* an address */
		p = nrr_put_uvar(p, 4096);
		p = nrr_put_uvar(p, 7);
		nrr_enter_end(t, p);
		p = nrr_leave_begin(t, 0, 0, 0);
		nrr_leave_end(t, p, false);
	}
}

#if NCCLRR_HAVE_LTTNG
static void loop_lttng(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		tracepoint(ncclrr_bench, call4, i & 0xffff, 0x7f2e00000000ull + (i << 6), 4096, 7);
}
#endif

/* ------------------------------------------------------------- threads */

enum kind { K_EMPTY, K_NCCLRR, K_LTTNG };

struct job {
	enum kind kind;
	nrr_writer *w;
	uint64_t n;
	int cpu;
	pthread_barrier_t *bar;
	double secs;   /* this thread's own wall time */
	double cpu_s;  /* this thread's CPU time */
	long vcsw, ivcsw; /* voluntary (waits) / involuntary (preempted) switches */
};

static double thread_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *job_main(void *arg)
{
	struct job *j = arg;
	bench_pin(j->cpu);
	nrr_tls *t = j->kind == K_NCCLRR ? nrr_writer_thread(j->w) : NULL;
	if (j->kind == K_NCCLRR && !t) {
		fprintf(stderr, "Cannot register a writer thread\n");
		exit(1);
	}
	/* warm up: fault the buffers in and let the clock settle */
	if (t)
		loop_ncclrr(t, 1000);
	pthread_barrier_wait(j->bar);
	struct rusage ru0, ru1;
	getrusage(RUSAGE_THREAD, &ru0);
	double t0 = bench_now(), c0 = thread_cpu();
	switch (j->kind) {
	case K_EMPTY: loop_empty(j->n); break;
	case K_NCCLRR: loop_ncclrr(t, j->n); nrr_tls_flush(t); break;
	case K_LTTNG:
#if NCCLRR_HAVE_LTTNG
		loop_lttng(j->n);
#endif
		break;
	}
	j->secs = bench_now() - t0;
	j->cpu_s = thread_cpu() - c0;
	getrusage(RUSAGE_THREAD, &ru1);
	j->vcsw = ru1.ru_nvcsw - ru0.ru_nvcsw;
	j->ivcsw = ru1.ru_nivcsw - ru0.ru_nivcsw;
	return NULL;
}

struct result {
	double per_event_thread;  /* wall ns per event as seen by a traced thread */
	double per_event_cpu;     /* CPU ns per event of a traced thread */
	double per_event_wall;    /* ns of wall time per event, all threads */
	long vcsw, ivcsw;         /* context switches of the traced threads */
	double bytes_per_event;   /* the trace file's size per event */
};

/* The writer's zstd level for the next runs (0: its default) and, when
 * set, the CPU its compression thread is pinned to (-1: the process's) */
static int w_level;
static int w_compressor_cpu = -1;
static cpu_set_t all_cpus;   /* the process's CPUs at start */

static void bench_unpin(void)
{
	sched_setaffinity(0, sizeof(all_cpus), &all_cpus);
}

/* Run @nthreads threads of @kind, @calls each; events per call: @epc. */
static struct result run(enum kind kind, int nthreads, uint64_t calls, int epc)
{
	char path[512];
	nrr_writer *w = NULL;
	static int serial;
	if (kind == K_NCCLRR) {
		snprintf(path, sizeof(path), "%s/w%d.nrt", dir, serial++);
		nrr_writer_opts o = { .schema = schema4, .schema_len = sizeof(schema4) - 1 };
		const char *lvl = getenv("NCCLRR_BENCH_ZSTD_LEVEL");   /* experiments */
		o.zstd_level = lvl ? atoi(lvl) : w_level;
		/* the compression thread runs on the main thread's CPUs
		 * (writer.c): pinning main while it opens the writer pins it */
		if (w_compressor_cpu >= 0)
			bench_pin(w_compressor_cpu);
		int rc = nrr_writer_open(&w, path, &o);
		if (w_compressor_cpu >= 0)
			bench_unpin();
		if (rc) {
			fprintf(stderr, "Cannot open the trace: file=%s: %s\n", path, nrr_strerror(rc));
			exit(1);
		}
	}
	pthread_barrier_t bar;
	pthread_barrier_init(&bar, NULL, (unsigned)nthreads + 1);
	struct job jobs[8];
	pthread_t th[8];
	for (int i = 0; i < nthreads; i++) {
		jobs[i] = (struct job){ .kind = kind, .w = w, .n = calls, .cpu = i, .bar = &bar };
		pthread_create(&th[i], NULL, job_main, &jobs[i]);
	}
	pthread_barrier_wait(&bar);
	double t0 = bench_now();
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	double wall = bench_now() - t0;
	pthread_barrier_destroy(&bar);
	struct result r = { 0, 0, 0, 0, 0, 0 };
	double events = (double)calls * epc;
	for (int i = 0; i < nthreads; i++) {
		r.per_event_thread += jobs[i].secs * 1e9 / events / nthreads;
		r.per_event_cpu += jobs[i].cpu_s * 1e9 / events / nthreads;
		r.vcsw += jobs[i].vcsw;
		r.ivcsw += jobs[i].ivcsw;
	}
	r.per_event_wall = wall * 1e9 / (events * nthreads);
	if (w) {
		int rc = nrr_writer_close(w);
		if (rc) {
			fprintf(stderr, "Cannot write the trace: file=%s: %s\n", path, nrr_strerror(rc));
			exit(1);
		}
		struct stat st;
		if (!stat(path, &st))
			r.bytes_per_event = (double)st.st_size / (events * nthreads);
		unlink(path);
	}
	return r;
}

/* Best (lowest) of @reps runs: the other CPU is shared with the compressor
 * or the consumer daemon and the VM is noisy. */
static struct result best(enum kind kind, int nthreads, uint64_t calls, int epc, int reps)
{
	struct result b = run(kind, nthreads, calls, epc);
	for (int i = 1; i < reps; i++) {
		struct result r = run(kind, nthreads, calls, epc);
		if (r.per_event_thread < b.per_event_thread) {
			b.per_event_thread = r.per_event_thread;
			b.per_event_wall = r.per_event_wall;
			b.vcsw = r.vcsw;
			b.ivcsw = r.ivcsw;
			b.bytes_per_event = r.bytes_per_event;
		}
		if (r.per_event_cpu < b.per_event_cpu)
			b.per_event_cpu = r.per_event_cpu;
	}
	return b;
}

/* --------------------------------------------------------------- lttng */

#if NCCLRR_HAVE_LTTNG
static struct {
	bool active;
	pid_t started;   /* the sessiond this program started, or 0 */
	char session[64];
	char why[256];
} lt;

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	int rc = system(cmd);
	return rc == -1 ? -1 : WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

static void lttng_start(void)
{
	if (sh("command -v lttng >/dev/null 2>&1 && command -v lttng-sessiond >/dev/null 2>&1")) {
		snprintf(lt.why, sizeof(lt.why), "lttng-tools not installed");
		return;
	}
	/* a private LTTNG_HOME: the client's config and, for a non-root user,
	 * the session daemon's run directory stay under our temp dir */
	char home[300];
	snprintf(home, sizeof(home), "%s/lttng-home", dir);
	mkdir(home, 0700);
	setenv("LTTNG_HOME", home, 1);
	if (sh("lttng list >/dev/null 2>&1")) {
		if (sh("lttng-sessiond --daemonize --no-kernel --pidfile='%s/sessiond.pid' >/dev/null 2>&1", dir)) {
			snprintf(lt.why, sizeof(lt.why), "lttng-sessiond --daemonize --no-kernel failed");
			return;
		}
		char pf[300];
		snprintf(pf, sizeof(pf), "%s/sessiond.pid", dir);
		FILE *f = fopen(pf, "r");
		int pid = 0;
		if (f) {
			if (fscanf(f, "%d", &pid) != 1)
				pid = 0;
			fclose(f);
		}
		lt.started = pid;
	}
	snprintf(lt.session, sizeof(lt.session), "ncclrr-bench-%d", (int)getpid());
	if (sh("lttng create %s --output='%s/lttng-trace' >/dev/null", lt.session, dir) ||
	    sh("lttng enable-event -u -s %s 'ncclrr_bench:*' >/dev/null", lt.session) ||
	    sh("lttng start %s >/dev/null", lt.session)) {
		snprintf(lt.why, sizeof(lt.why), "lttng create/enable-event/start failed");
		return;
	}
	/* the application registers with the daemon asynchronously */
	for (int i = 0; i < 500 && !tracepoint_enabled(ncclrr_bench, call4); i++)
		usleep(10000);
	if (!tracepoint_enabled(ncclrr_bench, call4)) {
		snprintf(lt.why, sizeof(lt.why), "the tracepoint did not get enabled within 5 s (application not registered with lttng-sessiond)");
		return;
	}
	lt.active = true;
}

static void lttng_stop(void)
{
	if (lt.session[0]) {
		sh("lttng stop %s >/dev/null 2>&1", lt.session);
		sh("lttng destroy %s >/dev/null 2>&1", lt.session);
	}
	if (lt.started > 0) {
		kill(lt.started, SIGTERM);
		for (int i = 0; i < 200 && kill(lt.started, 0) == 0; i++)
			usleep(10000);
	}
}
#endif

/* Whether the one compression thread keeps up with this loop (about 20 M
 * records/s, far above a real job) at the writer's default level (1, and
 * -5 while it is behind), at 1 and at the fast negative ones: on a CPU of
 * its own (the writer's placement: the process's CPUs), sharing the loop's
 * CPU (the placement it had when it took the CPUs of the thread that
 * opened the writer) and with two loops on 2 CPUs.  Waits: the loop
 * thread's voluntary switches. */
static void compressor_table(uint64_t calls)
{
	static const int levels[] = { 0, 1, -1, -3, -5 };
	printf("\ncompression thread vs this loop (best of 3; wall/CPU 1.00 = the loop never waited; waits:\n"
	       "blocked for a free buffer, preempt: the CPU taken, by the compressor when it shares the loop's):\n");
	printf("  %-22s %7s %9s %9s %8s %7s %7s %9s\n", "placement", "level", "wall ns", "CPU ns", "wall/CPU", "waits",
	       "preempt", "bytes/ev");
	for (int place = 0; place < 3; place++) {
		for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
			w_level = levels[i];
			w_compressor_cpu = place == 1 ? 0 : -1;
			int nth = place == 2 ? 2 : 1;
			struct result r = best(K_NCCLRR, nth, calls / (uint64_t)nth, 2, 3);
			static const char *const names[] = { "own CPU (1 loop)", "loop's CPU (1 loop)", "2 loops on 2 CPUs" };
			char lv[16];
			snprintf(lv, sizeof(lv), levels[i] ? "%d" : "default", levels[i]);
			printf("  %-22s %7s %9.2f %9.2f %8.2f %7ld %7ld %9.3f\n", names[place], lv, r.per_event_thread,
			       r.per_event_cpu, r.per_event_thread / r.per_event_cpu, r.vcsw, r.ivcsw, r.bytes_per_event);
		}
	}
	w_level = 0;
	w_compressor_cpu = -1;
}

int main(int argc, char **argv)
{
	uint64_t calls = 10000000;
	bool want_lttng = true;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--no-lttng"))
			want_lttng = false;
		else
			calls = strtoull(argv[i], NULL, 0);
	}
	if (calls < 1000)
		calls = 1000;
	bench_tmpdir(dir, sizeof(dir), "bench-writer");
	/* each loop thread pins itself; the main thread, whose CPUs the
	 * writer's compression thread takes, stays on all of them */
	sched_getaffinity(0, sizeof(all_cpus), &all_cpus);

	printf("== bench_writer: cost per event, %llu calls per thread\n", (unsigned long long)calls);
	printf("   ncclrr event = one record: a call of a 4-u-arg function writes ENTER + LEAVE = 2 events\n");
	printf("   lttng  event = one tracepoint with 4 integer fields\n");

	struct result lttng1 = { 0, 0, 0, 0, 0, 0 }, lttng2 = { 0, 0, 0, 0, 0, 0 };
#if NCCLRR_HAVE_LTTNG
	if (want_lttng) {
		lttng_start();
		if (lt.active) {
			/* the LTTng events: 2 events per loop iteration would be 2
			 * tracepoints; we count one tracepoint = one event */
			lttng1 = best(K_LTTNG, 1, calls, 1, 3);
			lttng2 = best(K_LTTNG, 2, calls / 2, 1, 3);
		}
		lttng_stop();
	} else {
		snprintf(lt.why, sizeof(lt.why), "--no-lttng");
	}
#endif
	struct result e1 = best(K_EMPTY, 1, calls, 1, 3);
	struct result n1 = best(K_NCCLRR, 1, calls, 2, 3);
	struct result e2 = best(K_EMPTY, 2, calls / 2, 1, 3);
	struct result n2 = best(K_NCCLRR, 2, calls / 2, 2, 3);

	printf("\n  %-34s %21s   %21s\n", "", "----- 1 thread -----", "----- 2 threads -----");
	printf("  %-34s %10s %10s   %10s %10s\n", "ns/event (best of 3)", "wall", "CPU", "wall", "CPU");
#define ROW(name, r1, r2, k) printf("  %-34s %10.2f %10.2f   %10.2f %10.2f\n", name, \
		(k) * (r1).per_event_thread, (k) * (r1).per_event_cpu, (k) * (r2).per_event_thread, (k) * (r2).per_event_cpu)
	ROW("baseline (empty loop)", e1, e2, 1);
#if NCCLRR_HAVE_LTTNG
	if (lt.active)
		ROW("lttng-ust (session active)", lttng1, lttng2, 1);
	else
		printf("  lttng-ust: SKIP (%s)\n", lt.why);
#else
	printf("  lttng-ust: SKIP (built without liblttng-ust)\n");
#endif
	ROW("ncclrr writer (per record)", n1, n2, 1);
	ROW("ncclrr writer (per call = 2 rec.)", n1, n2, 2);
	printf("  wall: the traced thread's elapsed time, including waits for a free buffer when the\n"
	       "        compression thread falls behind (this loop records ~20 M records/s, far above any real\n"
	       "        job; with 2 threads the compressor shares a CPU with one, and other load);\n"
	       "  CPU:  the traced thread's own CPU time (CLOCK_THREAD_CPUTIME_ID): the cost to the program.\n"
	       "  ncclrr all threads together: %.2f ns of wall per event (1 thread), %.2f (2 threads)\n"
	       "  ncclrr traced thread, best wall run: %ld waits for a free buffer (voluntary switches), %ld preemptions\n\n",
	       n1.per_event_wall, n2.per_event_wall, n1.vcsw, n1.ivcsw);
	if (lttng1.per_event_thread > 0) {
		printf("writer/lttng = %.3f (target <= 0.25)   [1 thread, CPU: %.2f / %.2f ns/event]\n",
		       n1.per_event_cpu / lttng1.per_event_cpu, n1.per_event_cpu, lttng1.per_event_cpu);
		printf("writer/lttng, wall = %.3f   [1 thread: %.2f / %.2f ns/event]\n",
		       n1.per_event_thread / lttng1.per_event_thread, n1.per_event_thread, lttng1.per_event_thread);
		printf("writer/lttng, 2 threads = %.3f CPU, %.3f wall\n", n2.per_event_cpu / lttng2.per_event_cpu,
		       n2.per_event_thread / lttng2.per_event_thread);
		printf("writer call (enter+leave) / lttng event = %.3f CPU\n", 2 * n1.per_event_cpu / lttng1.per_event_cpu);
	} else {
		printf("writer/lttng = SKIP (no LTTng baseline); writer %.2f ns/event CPU vs the design reference 124 ns/event: %.3f (target <= 0.25)\n",
		       n1.per_event_cpu, n1.per_event_cpu / 124.0);
	}
	compressor_table(calls);
	bench_rmdir(dir);
	return 0;
}
