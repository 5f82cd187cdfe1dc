/* SPDX-License-Identifier: MIT */
/* bench_common.h - timing and pinning helpers shared by the benchmarks. */
#ifndef NCCLRR_BENCH_COMMON_H
#define NCCLRR_BENCH_COMMON_H

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static inline double bench_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Pin the calling thread to @cpu modulo the CPUs it may run on. */
static inline int bench_pin(int cpu)
{
	cpu_set_t allowed, one;
	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		return -errno;
	int n = CPU_COUNT(&allowed), k = 0;
	if (n <= 0)
		return -EINVAL;
	cpu %= n;
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, &allowed))
			continue;
		if (k++ == cpu) {
			CPU_ZERO(&one);
			CPU_SET(c, &one);
			return sched_setaffinity(0, sizeof(one), &one) ? -errno : c;
		}
	}
	return -EINVAL;
}

/* A temporary directory that is removed (with its files) at exit. */
static inline const char *bench_tmpdir(char *buf, size_t len, const char *tag)
{
	const char *base = getenv("TMPDIR");
	snprintf(buf, len, "%s/ncclrr-%s-XXXXXX", base && *base ? base : "/tmp", tag);
	if (!mkdtemp(buf)) {
		fprintf(stderr, "Cannot create a temporary directory: path=%s: %s\n", buf, strerror(errno));
		exit(1);
	}
	return buf;
}

static inline void bench_rmdir(const char *dir)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "warning: cannot remove %s\n", dir);
}

/* xorshift64*: deterministic pseudo-random numbers. */
static inline uint64_t bench_rand(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1Dull;
}

#endif
