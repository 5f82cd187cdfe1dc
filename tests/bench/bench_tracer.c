/* SPDX-License-Identifier: MIT */
/*
 * bench_tracer - the cost of one cheap driver call, made the way a
 * statically linked CUDA runtime makes it (an entry point from
 * cuGetProcAddress_v2), on the fake driver.  bench_tracer.sh runs it
 * untraced, under the native tracer and under the LTTng backend.
 * Prints "calls=N wall_ns=X cpu_ns=Y" per call, best of @rounds.
 *
 * usage: bench_tracer [CALLS] [ROUNDS]
 *        bench_tracer clock            cost of one rdtsc and one clock_gettime
 *        bench_tracer one              one driver call, then exit (a process's
 *                                      fixed cost is what it costs traced)
 *        bench_tracer poll [CALLS]     NCCL's commonest call: recv() on a
 *                                      socket with nothing to read (EAGAIN),
 *                                      which the writer coalesces, with a
 *                                      second thread idle (as NCCL's); prints
 *                                      "polls=N ns=X" per call, best of 3
 *        bench_tracer spawn N [TRACER DIR]
 *                                      run `bench_tracer one` N times, each
 *                                      traced into DIR when TRACER is given;
 *                                      prints the medians per process of wall
 *                                      ms, CPU ms (user + system) and page faults
 *        bench_tracer create N DIR [BYTES]
 *                                      create N files of BYTES (default 5120)
 *                                      in DIR, as a trace of one call is made
 *                                      (open, write, close): the median ms per
 *                                      file, what DIR's filesystem adds to a
 *                                      traced process whatever the tracer does
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __x86_64__
#include <x86intrin.h>
#endif
#include <stdlib.h>
#include <time.h>

static double now(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int clock_costs(void)
{
	const int n = 10000000;
	unsigned long long sum = 0;
	double t0 = now(CLOCK_MONOTONIC);
#ifdef __x86_64__
	for (int i = 0; i < n; i++)
		sum += __rdtsc();
#endif
	double t1 = now(CLOCK_MONOTONIC);
	for (int i = 0; i < n; i++) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		sum += (unsigned long long)ts.tv_nsec;
	}
	double t2 = now(CLOCK_MONOTONIC);
	printf("rdtsc_ns=%.1f clock_gettime_ns=%.1f check=%llu\n", (t1 - t0) / n, (t2 - t1) / n, sum % 7);
	return 0;
}

static void *idle_thread(void *arg)
{
	pause();
	return arg;
}

/* The polling thread is not alone, untraced either: an NCCL process has
 * its proxy and bootstrap threads, and in a multi-threaded process libc's
 * recv() is a cancellation point with atomics and the kernel counts the
 * socket's references (29 ns a call here).  Without this thread the
 * untraced loop skips both and the tracer's compression thread would be
 * charged for them. */
static int poll_calls(long n)
{
	int sv[2];
	char buf[64];
	pthread_t idle;
	if (pthread_create(&idle, NULL, idle_thread, NULL)) {
		fprintf(stderr, "bench_tracer: cannot start a thread\n");
		return 2;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
		perror("bench_tracer: socketpair");
		return 2;
	}
	double best = 1e30;
	long eagain = 0;
	for (int r = 0; r < 3; r++) {
		double t0 = now(CLOCK_MONOTONIC);
		for (long i = 0; i < n; i++)
			eagain += recv(sv[0], buf, sizeof(buf), MSG_DONTWAIT) < 0 && errno == EAGAIN;
		double t = (now(CLOCK_MONOTONIC) - t0) / (double)n;
		if (t < best)
			best = t;
	}
	printf("polls=%ld ns=%.1f eagain=%ld\n", n, best, eagain);
	return eagain == 3 * n ? 0 : 2;
}

static int one_call(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	int (*version)(int *) = h ? (int (*)(int *))dlsym(h, "cuDriverGetVersion") : NULL;
	int v = 0;
	return version && version(&v) == 0 && v > 0 ? 0 : 2;
}

static int spawn(char *self, int n, const char *tracer, const char *dir)
{
	/* per process: wall time, CPU time (user + system, all its threads)
	 * and page faults */
	double *t = calloc((size_t)n * 3, sizeof(*t));
	double *cpu = t ? t + n : NULL, *flt = t ? t + 2 * n : NULL;
	for (int i = 0; t && i < n; i++) {
		double t0 = now(CLOCK_MONOTONIC);
		pid_t p = fork();
		if (p == 0) {
			if (tracer) {
				setenv("LD_PRELOAD", tracer, 1);
				setenv("NCCLRR_TRACE_DIR", dir, 1);
			}
			execl(self, self, "one", (char *)NULL);
			_exit(127);
		}
		int st;
		struct rusage ru;
		if (p < 0 || wait4(p, &st, 0, &ru) != p || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "bench_tracer: `%s one` failed\n", self);
			return 2;
		}
		t[i] = (now(CLOCK_MONOTONIC) - t0) / 1e6;
		cpu[i] = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
			 (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
		flt[i] = (double)(ru.ru_minflt + ru.ru_majflt);
	}
	if (!t)
		return 2;
	for (int k = 0; k < 3; k++)
		qsort(t + k * n, (size_t)n, sizeof(*t), cmp_double);
	printf("processes=%d median_ms=%.3f cpu_ms=%.3f faults=%.0f\n", n, t[n / 2], cpu[n / 2], flt[n / 2]);
	free(t);
	return 0;
}

static int create_files(int n, const char *dir, size_t bytes)
{
	double *t = calloc((size_t)n, sizeof(*t));
	char *buf = calloc(1, bytes ? bytes : 1);
	if (!t || !buf)
		return 2;
	for (int i = 0; i < n; i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/create-%d", dir, i);
		double t0 = now(CLOCK_MONOTONIC);
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0 || pwrite(fd, buf, bytes, 0) != (ssize_t)bytes || close(fd)) {
			fprintf(stderr, "bench_tracer: cannot create %s: %s\n", path, strerror(errno));
			return 2;
		}
		t[i] = (now(CLOCK_MONOTONIC) - t0) / 1e6;
	}
	qsort(t, (size_t)n, sizeof(*t), cmp_double);
	printf("files=%d median_ms=%.3f\n", n, t[n / 2]);
	free(t);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "clock"))
		return clock_costs();
	if (argc > 1 && !strcmp(argv[1], "one"))
		return one_call();
	if (argc > 1 && !strcmp(argv[1], "poll"))
		return poll_calls(argc > 2 ? atol(argv[2]) : 2000000);
	if (argc > 3 && !strcmp(argv[1], "create"))
		return create_files(atoi(argv[2]), argv[3], argc > 4 ? (size_t)atol(argv[4]) : 5120);
	if (argc > 2 && !strcmp(argv[1], "spawn"))
		return spawn(argv[0], atoi(argv[2]), argc > 4 ? argv[3] : NULL, argc > 4 ? argv[4] : NULL);
	long calls = argc > 1 ? atol(argv[1]) : 2000000;
	int rounds = argc > 2 ? atoi(argv[2]) : 5;
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	int (*gpa)(const char *, void **, int, unsigned long long, int *) =
		h ? (int (*)(const char *, void **, int, unsigned long long, int *))dlsym(h, "cuGetProcAddress_v2") : NULL;
	int (*init)(unsigned) = NULL;
	int (*attr)(int *, int, int) = NULL;
	int st;
	if (!gpa || gpa("cuInit", (void **)&init, 2000, 0, &st) || gpa("cuDeviceGetAttribute", (void **)&attr, 2000, 0, &st) ||
	    init(0)) {
		fprintf(stderr, "bench_tracer: no usable libcuda.so.1 (set LD_LIBRARY_PATH to the fake runtime)\n");
		return 2;
	}
	double best_wall = 1e30, best_cpu = 1e30;
	int v = 0;
	long sum = 0;
	for (int r = 0; r < rounds; r++) {
		double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_THREAD_CPUTIME_ID);
		for (long i = 0; i < calls; i++) {
			attr(&v, 16, 0);   /* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT */
			sum += v;
		}
		double w = (now(CLOCK_MONOTONIC) - w0) / (double)calls, c = (now(CLOCK_THREAD_CPUTIME_ID) - c0) / (double)calls;
		if (w < best_wall)
			best_wall = w;
		if (c < best_cpu)
			best_cpu = c;
	}
	printf("calls=%ld wall_ns=%.1f cpu_ns=%.1f check=%ld\n", calls, best_wall, best_cpu, sum % 7);
	return 0;
}
