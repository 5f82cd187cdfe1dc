/* SPDX-License-Identifier: MIT */
/*
 * test_rverbs.c - the verbs remap table (rverbs.c) across processes: a
 * forked process publishes QP numbers, rkeys with their regions and GIDs
 * as a replay worker that owns them would; this one looks them up as the
 * peer that uses them, waiting for values published late.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "replay_internal.h"

static int fails;
#define CHECK(c, ...)                                                     \
	do {                                                              \
		if (!(c)) {                                               \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                     \
			fputc('\n', stderr);                              \
			fails++;                                          \
		}                                                         \
	} while (0)

/* RoCE v2 GIDs of two hosts' NICs, as recorded */
static const uint8_t gid_a[16] = { [10] = 0xff, [11] = 0xff, [12] = 10, [15] = 1 };
static const uint8_t gid_b[16] = { [10] = 0xff, [11] = 0xff, [12] = 10, [15] = 2 };
static const uint8_t live_b[16] = { 0xfe, 0x80, [15] = 0x42 };

int main(void)
{
	if (nrr_xmap_init(256) < 0) {
		perror("nrr_xmap_init");
		return 1;
	}
	pid_t pid = fork();
	if (pid == 0) {
		/* the owner publishes after the peer started waiting */
		usleep(100 * 1000);
		int e = nrr_rverbs_put_qpn(gid_a, 0x1234, 0xabcd);
		e |= nrr_rverbs_put_qpn(gid_b, 0x1234, 0x5678);   /* same number, other HCA */
		e |= nrr_rverbs_put_mr(gid_a, 0x5a000100, 0x7f0000001000, 131072, 0x5a000300, 0x7e0000002000);
		e |= nrr_rverbs_put_mr(gid_b, 0x5a000100, 0x7f0000009000, 4096, 0x5a000100, 0x7d0000000000);
		e |= nrr_rverbs_put_gid(gid_b, live_b);
		_exit(e ? 1 : 0);
	}
	uint32_t q = 0, rk = 0;
	uint64_t addr = 0;
	CHECK(nrr_rverbs_get_qpn(gid_a, 0x1234, &q, 5000) == 0 && q == 0xabcd, "qpn on A: 0x%x", q);
	CHECK(nrr_rverbs_get_qpn(gid_b, 0x1234, &q, 5000) == 0 && q == 0x5678, "qpn on B: 0x%x", q);
	int e = nrr_rverbs_remote(gid_a, 0x5a000100, 0x7f0000001000 + 64, 8, &rk, &addr, 5000);
	CHECK(e == 0 && rk == 0x5a000300 && addr == 0x7e0000002000 + 64, "remote on A: %d 0x%x 0x%llx", e, rk,
	      (unsigned long long)addr);
	/* the whole region, and one byte past its end */
	e = nrr_rverbs_remote(gid_a, 0x5a000100, 0x7f0000001000, 131072, &rk, &addr, 5000);
	CHECK(e == 0 && addr == 0x7e0000002000, "whole region: %d", e);
	e = nrr_rverbs_remote(gid_a, 0x5a000100, 0x7f0000001000 + 131072 - 4, 8, &rk, &addr, 5000);
	CHECK(e == -ERANGE, "past the end: %d, want -ERANGE", e);
	e = nrr_rverbs_remote(gid_a, 0x5a000100, 0x7f0000000ff8, 8, &rk, &addr, 5000);
	CHECK(e == -ERANGE, "before the start: %d, want -ERANGE", e);
	e = nrr_rverbs_remote(gid_b, 0x5a000100, 0x7f0000009000, 16, &rk, &addr, 5000);
	CHECK(e == 0 && rk == 0x5a000100 && addr == 0x7d0000000000, "same rkey on B: %d 0x%llx", e,
	      (unsigned long long)addr);
	uint8_t g[16];
	CHECK(nrr_rverbs_get_gid(gid_b, g, 5000) == 0 && !memcmp(g, live_b, 16), "gid of B");
	/* never published: a bounded wait, then -ETIMEDOUT */
	CHECK(nrr_rverbs_get_qpn(gid_a, 0x999, &q, 50) == -ETIMEDOUT, "unknown qpn");
	CHECK(nrr_rverbs_get_gid(gid_a, g, 50) == -ETIMEDOUT, "unknown gid");
	int st = 0;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "publisher failed: status %d", st);
	if (fails)
		return 1;
	printf("PASS: verbs remap table\n");
	return 0;
}
