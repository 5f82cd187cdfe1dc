/* SPDX-License-Identifier: MIT */
/*
 * test_rverbs.c - the verbs remap table (rverbs.c) across processes: a
 * forked process publishes QP numbers, rkeys with their regions and port
 * addresses (GIDs, LIDs) as a replay worker that owns them would; this one
 * looks them up as the peer that uses them, waiting for values published
 * late.  The same number under two GIDs, or under a GID and a LID, names
 * two objects.  A second owner fills the table the way a replay worker
 * does, from recorded calls (nrr_rverbs_done): an ibv_reg_mr whose
 * recorded rkey waits until its context's address is known from the
 * recorded ibv_query_gid, one after it that is published at once; its
 * ibv_query_port (an InfiniBand port) publishes both under the port's
 * recorded LID too, and a RoCE port's ibv_query_port publishes no LID.
 * Two owners of one GID (two ranks of a virtual host) publishing the same
 * recorded rkey keep two regions: a QP number tells its owner, and the
 * rkey is looked up under it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ncclrr_config.h"
#include "replay_internal.h"
#if NCCLRR_HAVE_VERBS
#include <infiniband/verbs.h>
#endif

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
static const uint8_t graw_a[16] = { [10] = 0xff, [11] = 0xff, [12] = 10, [15] = 1 };
static const uint8_t graw_b[16] = { [10] = 0xff, [11] = 0xff, [12] = 10, [15] = 2 };
static const uint8_t lraw_b[16] = { 0xfe, 0x80, [15] = 0x42 };
/* a GID whose bytes start as LID 0x21's do */
static const uint8_t graw_21[16] = { 0x21 };
static nrr_vaddr gid_a, gid_b, live_b, lid_a, live_lid_a, gid_21;

#if NCCLRR_HAVE_VERBS
static const uint8_t graw_c[16] = { [10] = 0xff, [11] = 0xff, [12] = 10, [15] = 3 };
static const uint8_t lraw_c[16] = { 0xfe, 0x80, [15] = 0x43 };
static nrr_vaddr gid_c, live_c, lid_c, live_lid_c;
#define REC_LID_C 0x21
#define LIVE_LID_C 0x41
#define REC_LID_ROCE 0x22   /* what a RoCE port's attributes say: not an address */

/* what ibv_query_port recorded (@rec) and answers live (@live) */
static void port_attrs(struct ibv_port_attr *rec, struct ibv_port_attr *live, uint16_t rlid, uint16_t llid, uint8_t ll)
{
	memset(rec, 0, sizeof(*rec));
	rec->state = IBV_PORT_ACTIVE;
	rec->lid = rlid;
	rec->link_layer = ll;
	*live = *rec;
	live->lid = llid;
}

/* the owner of gid_c: replays ibv_reg_mr (twice) and ibv_query_gid as
 * recorded, with live results, as rcuda.c hands them to rverbs.c */
static int owner_from_calls(void)
{
	static const nrr_arg_schema mr_args[] = {
		{ .name = "pd" }, { .name = "addr" }, { .name = "length" }, { .name = "access" },
		{ .name = "lkey", .dir = NRR_DIR_OUT }, { .name = "rkey", .dir = NRR_DIR_OUT },
	};
	static const nrr_arg_schema gid_args[] = {
		{ .name = "context" }, { .name = "port_num" }, { .name = "index" }, { .name = "gid", .dir = NRR_DIR_OUT },
	};
	static const nrr_fn_schema reg = { .name = "ibv_reg_mr", .domain = "verbs", .nargs = 6, .args = mr_args };
	static const nrr_fn_schema qg = { .name = "ibv_query_gid", .domain = "verbs", .nargs = 4, .args = gid_args };
	static const nrr_arg_schema port_args[] = {
		{ .name = "context" }, { .name = "port_num" }, { .name = "port_attr", .dir = NRR_DIR_OUT },
	};
	static const nrr_fn_schema qp = { .name = "ibv_query_port", .domain = "verbs", .nargs = 3, .args = port_args };
	struct ibv_context *ctx = (struct ibv_context *)(uintptr_t)0x1000;   /* only compared */
	struct ibv_mr m1 = { .context = ctx, .addr = (void *)(uintptr_t)0x7c0000000000, .rkey = 0x77 };
	struct ibv_mr m2 = { .context = ctx, .addr = (void *)(uintptr_t)0x7c0000100000, .rkey = 0x78 };
	nrr_call c = { .fn = &reg, .present = 0x3f, .done = true };
	c.args[1].u = 0x7f0000400000;   /* recorded addr, length, lkey, rkey */
	c.args[2].u = 65536;
	c.args[4].u = 0x200;
	c.args[5].u = 0x200;
	uint64_t slot[NRR_MAX_ARGS] = { 0 };
	nrr_rverbs_done(NULL, &c, slot, (int64_t)(uintptr_t)&m1);   /* GID not known yet: kept */
	usleep(400 * 1000);   /* the peer's first look (50 ms) finds nothing */
	uint8_t live[16];
	memcpy(live, lraw_c, 16);
	nrr_call g = { .fn = &qg, .present = 0xf, .done = true };
	g.args[3].p = graw_c;
	g.args[3].len = g.args[3].total = 16;
	uint64_t gslot[NRR_MAX_ARGS] = { (uint64_t)(uintptr_t)ctx, 1, 1, (uint64_t)(uintptr_t)live };
	nrr_rverbs_done(NULL, &g, gslot, 0);   /* publishes the first MR and the GID */
	c.args[1].u = 0x7f0000500000;
	c.args[2].u = 4096;
	c.args[5].u = 0x201;
	nrr_rverbs_done(NULL, &c, slot, (int64_t)(uintptr_t)&m2);   /* at once */
	/* the port is InfiniBand: both MRs go under its LID as well */
	struct ibv_port_attr rp, lp;
	port_attrs(&rp, &lp, REC_LID_C, LIVE_LID_C, IBV_LINK_LAYER_INFINIBAND);
	nrr_call q = { .fn = &qp, .present = 0x7, .done = true };
	q.args[2].p = (const uint8_t *)&rp;
	q.args[2].len = q.args[2].total = sizeof(rp);
	uint64_t qslot[NRR_MAX_ARGS] = { (uint64_t)(uintptr_t)ctx, 1, (uint64_t)(uintptr_t)&lp };
	nrr_rverbs_done(NULL, &q, qslot, 0);
	/* another context on a RoCE port: its LID is no address */
	port_attrs(&rp, &lp, REC_LID_ROCE, REC_LID_ROCE, IBV_LINK_LAYER_ETHERNET);
	qslot[0] = 0x2000;
	nrr_rverbs_done(NULL, &q, qslot, 0);
	return 0;
}
#endif

int main(void)
{
	if (nrr_xmap_init(256) < 0) {
		perror("nrr_xmap_init");
		return 1;
	}
	nrr_vaddr_gid(&gid_a, graw_a);
	nrr_vaddr_gid(&gid_b, graw_b);
	nrr_vaddr_gid(&live_b, lraw_b);
	nrr_vaddr_gid(&gid_21, graw_21);
	nrr_vaddr_lid(&lid_a, 0x21);
	nrr_vaddr_lid(&live_lid_a, 0x61);
#if NCCLRR_HAVE_VERBS
	nrr_vaddr_gid(&gid_c, graw_c);
	nrr_vaddr_gid(&live_c, lraw_c);
	nrr_vaddr_lid(&lid_c, REC_LID_C);
	nrr_vaddr_lid(&live_lid_c, LIVE_LID_C);
#endif
	pid_t pid = fork();
	if (pid == 0) {
		/* the owner publishes after the peer started waiting */
		usleep(100 * 1000);
		int e = nrr_rverbs_put_qpn(&gid_a, 0x1234, 0xabcd);
		e |= nrr_rverbs_put_qpn(&gid_b, 0x1234, 0x5678);   /* same number, other HCA */
		e |= nrr_rverbs_put_mr(&gid_a, 0x5a000100, 0x7f0000001000, 131072, 0x5a000300, 0x7e0000002000);
		e |= nrr_rverbs_put_mr(&gid_b, 0x5a000100, 0x7f0000009000, 4096, 0x5a000100, 0x7d0000000000);
		e |= nrr_rverbs_put_addr(&gid_b, &live_b);
		/* an HCA addressed by LID (InfiniBand, no GRH) */
		e |= nrr_rverbs_put_qpn(&lid_a, 0x1234, 0x9abc);
		e |= nrr_rverbs_put_mr(&lid_a, 0x5a000100, 0x7f0000011000, 8192, 0x5a000500, 0x7b0000000000);
		e |= nrr_rverbs_put_addr(&lid_a, &live_lid_a);
		_exit(e ? 1 : 0);
	}
	uint32_t q = 0, rk = 0, owner = (uint32_t)pid;
	uint64_t addr = 0;
	CHECK(nrr_rverbs_get_qpn(&gid_a, 0x1234, &q, NULL, 5000) == 0 && q == 0xabcd, "qpn on A: 0x%x", q);
	CHECK(nrr_rverbs_get_qpn(&gid_b, 0x1234, &q, NULL, 5000) == 0 && q == 0x5678, "qpn on B: 0x%x", q);
	int e = nrr_rverbs_remote(&gid_a, owner, 0x5a000100, 0x7f0000001000 + 64, 8, &rk, &addr, 5000);
	CHECK(e == 0 && rk == 0x5a000300 && addr == 0x7e0000002000 + 64, "remote on A: %d 0x%x 0x%llx", e, rk,
	      (unsigned long long)addr);
	/* the whole region, and one byte past its end */
	e = nrr_rverbs_remote(&gid_a, owner, 0x5a000100, 0x7f0000001000, 131072, &rk, &addr, 5000);
	CHECK(e == 0 && addr == 0x7e0000002000, "whole region: %d", e);
	e = nrr_rverbs_remote(&gid_a, owner, 0x5a000100, 0x7f0000001000 + 131072 - 4, 8, &rk, &addr, 5000);
	CHECK(e == -ERANGE, "past the end: %d, want -ERANGE", e);
	/* still mapped, so that the live HCA refuses the access as the recorded one did */
	CHECK(rk == 0x5a000300 && addr == 0x7e0000002000 + 131072 - 4, "past the end maps to 0x%x 0x%llx", rk,
	      (unsigned long long)addr);
	e = nrr_rverbs_remote(&gid_a, owner, 0x5a000100, 0x7f0000000ff8, 8, &rk, &addr, 5000);
	CHECK(e == -ERANGE, "before the start: %d, want -ERANGE", e);
	e = nrr_rverbs_remote(&gid_b, owner, 0x5a000100, 0x7f0000009000, 16, &rk, &addr, 5000);
	CHECK(e == 0 && rk == 0x5a000100 && addr == 0x7d0000000000, "same rkey on B: %d 0x%llx", e,
	      (unsigned long long)addr);
	nrr_vaddr g;
	CHECK(nrr_rverbs_get_addr(&gid_b, &g, 5000) == 0 && !memcmp(&g, &live_b, sizeof(g)), "gid of B");
	/* the same numbers under a LID: other objects, and not those of a GID
	 * whose bytes the LID's start */
	CHECK(nrr_rverbs_get_qpn(&lid_a, 0x1234, &q, NULL, 5000) == 0 && q == 0x9abc, "qpn under lid 0x21: 0x%x", q);
	e = nrr_rverbs_remote(&lid_a, owner, 0x5a000100, 0x7f0000011000 + 8, 8, &rk, &addr, 5000);
	CHECK(e == 0 && rk == 0x5a000500 && addr == 0x7b0000000000 + 8, "rkey under lid 0x21: %d 0x%x 0x%llx", e, rk,
	      (unsigned long long)addr);
	CHECK(nrr_rverbs_get_addr(&lid_a, &g, 5000) == 0 && g.kind == NRR_VADDR_LID && nrr_vaddr_lid_of(&g) == 0x61,
	      "live lid of 0x21: kind %d 0x%x", g.kind, nrr_vaddr_lid_of(&g));
	CHECK(nrr_rverbs_get_qpn(&gid_21, 0x1234, &q, NULL, 50) == -ETIMEDOUT, "qpn under a gid with the lid's bytes");
	/* never published: a bounded wait, then -ETIMEDOUT */
	CHECK(nrr_rverbs_get_qpn(&gid_a, 0x999, &q, NULL, 50) == -ETIMEDOUT, "unknown qpn");
	CHECK(nrr_rverbs_get_addr(&gid_a, &g, 50) == -ETIMEDOUT, "unknown gid");
	int st = 0;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "publisher failed: status %d", st);
	/* another rank of host A: same GID, same recorded rkey and address
	 * (the fake fabric's rkeys repeat in every process), its own region */
	pid_t pid2 = fork();
	if (pid2 == 0) {
		int e2 = nrr_rverbs_put_qpn(&gid_a, 0x1235, 0xbcde);
		e2 |= nrr_rverbs_put_mr(&gid_a, 0x5a000100, 0x7f0000001000, 131072, 0x5a000900, 0x7a0000000000);
		_exit(e2 ? 1 : 0);
	}
	uint32_t o1 = 0, o2 = 0;
	CHECK(nrr_rverbs_get_qpn(&gid_a, 0x1234, &q, &o1, 5000) == 0 && o1 == (uint32_t)pid, "owner of qpn 0x1234: %u",
	      o1);
	CHECK(nrr_rverbs_get_qpn(&gid_a, 0x1235, &q, &o2, 5000) == 0 && q == 0xbcde && o2 == (uint32_t)pid2,
	      "owner of qpn 0x1235: %u, want %d", o2, (int)pid2);
	e = nrr_rverbs_remote(&gid_a, o2, 0x5a000100, 0x7f0000001000 + 64, 8, &rk, &addr, 5000);
	CHECK(e == 0 && rk == 0x5a000900 && addr == 0x7a0000000000 + 64, "second owner's rkey: %d 0x%x 0x%llx", e, rk,
	      (unsigned long long)addr);
	e = nrr_rverbs_remote(&gid_a, o1, 0x5a000100, 0x7f0000001000 + 64, 8, &rk, &addr, 5000);
	CHECK(e == 0 && rk == 0x5a000300 && addr == 0x7e0000002000 + 64, "first owner's rkey after the second's: %d "
	      "0x%x 0x%llx", e, rk, (unsigned long long)addr);
	waitpid(pid2, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "second owner failed: status %d", st);
#if NCCLRR_HAVE_VERBS
	pid = fork();
	if (pid == 0)
		_exit(owner_from_calls());
	owner = (uint32_t)pid;
	/* before the owner queried its GID, nothing is published under it */
	e = nrr_rverbs_remote(&gid_c, owner, 0x200, 0x7f0000400000, 8, &rk, &addr, 50);
	CHECK(e == -ETIMEDOUT, "rkey published before its GID was known: %d", e);
	e = nrr_rverbs_remote(&gid_c, owner, 0x200, 0x7f0000400000 + 16, 8, &rk, &addr, 5000);
	CHECK(e == 0 && rk == 0x77 && addr == 0x7c0000000000 + 16, "rkey from recorded calls: %d 0x%x 0x%llx", e, rk,
	      (unsigned long long)addr);
	e = nrr_rverbs_remote(&gid_c, owner, 0x201, 0x7f0000500000, 4096, &rk, &addr, 5000);
	CHECK(e == 0 && rk == 0x78 && addr == 0x7c0000100000, "second rkey: %d 0x%x", e, rk);
	e = nrr_rverbs_remote(&gid_c, owner, 0x201, 0x7f0000500000, 4097, &rk, &addr, 50);
	CHECK(e == -ERANGE, "past the recorded region: %d", e);
	CHECK(nrr_rverbs_get_addr(&gid_c, &g, 5000) == 0 && !memcmp(&g, &live_c, sizeof(g)), "gid from ibv_query_gid");
	/* ibv_query_port of the InfiniBand port: the LID remap, and both MRs under it */
	CHECK(nrr_rverbs_get_addr(&lid_c, &g, 5000) == 0 && !memcmp(&g, &live_lid_c, sizeof(g)),
	      "lid from ibv_query_port: kind %d 0x%x", g.kind, nrr_vaddr_lid_of(&g));
	e = nrr_rverbs_remote(&lid_c, owner, 0x200, 0x7f0000400000 + 16, 8, &rk, &addr, 5000);
	CHECK(e == 0 && rk == 0x77 && addr == 0x7c0000000000 + 16, "rkey under the lid: %d 0x%x", e, rk);
	e = nrr_rverbs_remote(&lid_c, owner, 0x201, 0x7f0000500000, 4096, &rk, &addr, 5000);
	CHECK(e == 0 && rk == 0x78 && addr == 0x7c0000100000, "second rkey under the lid: %d 0x%x", e, rk);
	nrr_vaddr roce;
	nrr_vaddr_lid(&roce, REC_LID_ROCE);
	CHECK(nrr_rverbs_get_addr(&roce, &g, 50) == -ETIMEDOUT, "a RoCE port's lid published");
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "owner from calls failed: status %d", st);
#endif
	if (fails)
		return 1;
	printf("PASS: verbs remap table\n");
	return 0;
}
