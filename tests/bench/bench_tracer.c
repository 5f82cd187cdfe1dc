/* SPDX-License-Identifier: MIT */
/*
 * bench_tracer - the cost of one cheap driver call, made the way a
 * statically linked CUDA runtime makes it (an entry point from
 * cuGetProcAddress_v2), on the fake driver.  bench_tracer.sh runs it
 * untraced, under the native tracer and under the LTTng backend.
 * Prints "calls=N wall_ns=X cpu_ns=Y" per call, best of @rounds.
 *
 * usage: bench_tracer [CALLS] [ROUNDS]
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
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
