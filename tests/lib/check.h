/* SPDX-License-Identifier: MIT */
/* check.h - the few assertion helpers the C tests share. */
#ifndef NCCLRR_TEST_CHECK_H
#define NCCLRR_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

static int check_failures;
static int check_passes;

#define CHECK(cond, ...) do { \
	if (cond) { \
		check_passes++; \
	} else { \
		check_failures++; \
		fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
		fprintf(stderr, __VA_ARGS__); \
		fputc('\n', stderr); \
		if (check_failures > 20) { \
			fprintf(stderr, "too many failures\n"); \
			exit(1); \
		} \
	} \
} while (0)

#define CHECK_FATAL(cond, ...) do { \
	if (!(cond)) { \
		fprintf(stderr, "%s:%d: FATAL CHECK(%s): ", __FILE__, __LINE__, #cond); \
		fprintf(stderr, __VA_ARGS__); \
		fputc('\n', stderr); \
		exit(1); \
	} \
} while (0)

/* Print "NAME: N passed, N failed" and return the exit status. */
static inline int check_done(const char *name)
{
	printf("%s: %d passed, %d failed\n", name, check_passes, check_failures);
	return check_failures ? 1 : 0;
}

/* xorshift64*: deterministic test data from a seed */
static inline uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}
#endif
