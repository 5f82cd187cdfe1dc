/* SPDX-License-Identifier: MIT */
/*
 * test_verbs_fabric.c - the fake libibverbs through its ABI (<verbs.h>,
 * inline data path and all): the QP state machine's errors, SEND/RECV,
 * RDMA WRITE (with immediate) and READ between two QPs on two NICs, the
 * remote access error, RNR retry exceeded, retry exceeded when the peer
 * QP is gone, completion channel events, and RLIMIT_MEMLOCK.
 *
 * Linked against build/replayer/fake/libibverbs.so.1 (the fake), run with
 * NCCLRR_TOPO set by meson; the QPs are two NICs of host 0 so that one
 * process holds both ends.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int fails;
#define CHECK(c)                                                                       \
	do {                                                                           \
		if (!(c)) {                                                            \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c); \
			fails++;                                                       \
		}                                                                      \
	} while (0)
#define REQUIRE(c)                                                                     \
	do {                                                                           \
		if (!(c)) {                                                            \
			fprintf(stderr, "%s:%d: REQUIRE failed: %s\n", __FILE__, __LINE__, #c); \
			exit(1);                                                       \
		}                                                                      \
	} while (0)

struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_port_attr port;
	char *buf;
	struct ibv_mr *mr;
};

static void end_open(struct end *e, struct ibv_device *dev, int access)
{
	memset(e, 0, sizeof(*e));
	REQUIRE((e->ctx = ibv_open_device(dev)) != NULL);
	REQUIRE((e->pd = ibv_alloc_pd(e->ctx)) != NULL);
	REQUIRE((e->ch = ibv_create_comp_channel(e->ctx)) != NULL);
	REQUIRE((e->cq = ibv_create_cq(e->ctx, 64, e, e->ch, 0)) != NULL);
	struct ibv_qp_init_attr ia = { .send_cq = e->cq, .recv_cq = e->cq, .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 2,
						.max_recv_sge = 2 } };
	REQUIRE((e->qp = ibv_create_qp(e->pd, &ia)) != NULL);
	REQUIRE(ibv_query_port(e->ctx, 1, &e->port) == 0);
	REQUIRE((e->buf = aligned_alloc(4096, 8192)) != NULL);
	memset(e->buf, 0, 8192);
	REQUIRE((e->mr = ibv_reg_mr(e->pd, e->buf, 8192, access)) != NULL);
}

static int to_init(struct end *e, int access)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
				 .qp_access_flags = access };
	return ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

static int to_rtr(struct end *e, const struct end *peer, enum ibv_mtu mtu, uint16_t dlid, uint8_t rnr_timer)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR, .path_mtu = mtu, .dest_qp_num = peer->qp->qp_num,
				 .rq_psn = 0, .max_dest_rd_atomic = 1, .min_rnr_timer = rnr_timer,
				 .ah_attr = { .dlid = dlid, .port_num = 1 } };
	return ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
						 IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
}

static int to_rts(struct end *e, uint8_t retry, uint8_t rnr_retry)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS, .sq_psn = 0, .timeout = 1, .retry_cnt = retry,
				 .rnr_retry = rnr_retry, .max_rd_atomic = 1 };
	return ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
						 IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* one completion within 30 s (a loaded machine) */
static struct ibv_wc wait_wc(struct end *e)
{
	struct ibv_wc wc;
	memset(&wc, 0, sizeof(wc));
	for (int i = 0; i < 30000; i++) {
		int n = ibv_poll_cq(e->cq, 1, &wc);
		if (n == 1)
			return wc;
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	fprintf(stderr, "no completion within 30 s\n");
	fails++;
	wc.status = (enum ibv_wc_status)-1;
	return wc;
}

static int post_recv(struct end *e, uint64_t id, size_t off, uint32_t len)
{
	struct ibv_sge s = { .addr = (uintptr_t)e->buf + off, .length = len, .lkey = e->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &s, .num_sge = 1 }, *bad;
	return ibv_post_recv(e->qp, &wr, &bad);
}

static int post(struct end *e, enum ibv_wr_opcode op, uint64_t id, size_t off, uint32_t len, uint64_t raddr,
		uint32_t rkey, uint32_t imm)
{
	struct ibv_sge s = { .addr = (uintptr_t)e->buf + off, .length = len, .lkey = e->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &s, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED, .imm_data = imm }, *bad;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(e->qp, &wr, &bad);
}

static void connect_pair(struct end *a, struct end *b, int access, uint8_t retry, uint8_t rnr_retry)
{
	REQUIRE(to_init(a, access) == 0 && to_init(b, access) == 0);
	REQUIRE(to_rtr(a, b, IBV_MTU_1024, b->port.lid, 1) == 0 && to_rtr(b, a, IBV_MTU_1024, a->port.lid, 1) == 0);
	REQUIRE(to_rts(a, retry, rnr_retry) == 0 && to_rts(b, retry, rnr_retry) == 0);
}

static void end_close(struct end *e)
{
	if (e->qp)
		CHECK(ibv_destroy_qp(e->qp) == 0);
	CHECK(ibv_dereg_mr(e->mr) == 0);
	CHECK(ibv_destroy_cq(e->cq) == 0);
	CHECK(ibv_destroy_comp_channel(e->ch) == 0);
	CHECK(ibv_dealloc_pd(e->pd) == 0);
	CHECK(ibv_close_device(e->ctx) == 0);
	free(e->buf);
}

/* a fresh pair, b's MR with @b_access; one @op from a to b's buffer with
 * b's rkey xor @rkey_xor completes with @want */
static void expect_error(struct ibv_device **devs, int b_access, enum ibv_wr_opcode op, uint32_t rkey_xor,
			 enum ibv_wc_status want)
{
	const int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	struct end a, b;
	end_open(&a, devs[0], rw);
	end_open(&b, devs[1], b_access);
	connect_pair(&a, &b, rw, 3, 1);
	CHECK(post(&a, op, 77, 0, 8, (uintptr_t)b.buf, b.mr->rkey ^ rkey_xor, 0) == 0);
	struct ibv_wc wc = wait_wc(&a);
	if (wc.status != want || wc.wr_id != 77) {
		fprintf(stderr, "opcode %d: completion %s, expected %s\n", op, ibv_wc_status_str(wc.status),
			ibv_wc_status_str(want));
		fails++;
	}
	end_close(&a);
	end_close(&b);
}

/* what NCCL 2.22.3 looks up with dlvsym (src/misc/ibvsymbols.cc), each at
 * its node; and what ibverbs-utils import beyond IBVERBS_1.1 */
static void check_versions(void)
{
	static const char *const v11[] = {
		"ibv_get_device_list", "ibv_free_device_list", "ibv_get_device_name", "ibv_open_device",
		"ibv_close_device", "ibv_get_async_event", "ibv_ack_async_event", "ibv_query_device",
		"ibv_query_port", "ibv_query_gid", "ibv_query_qp", "ibv_alloc_pd", "ibv_dealloc_pd",
		"ibv_reg_mr", "ibv_dereg_mr", "ibv_create_cq", "ibv_destroy_cq", "ibv_create_qp",
		"ibv_modify_qp", "ibv_destroy_qp", "ibv_fork_init", "ibv_event_type_str",
		"ibv_get_cq_event", "ibv_ack_cq_events", "ibv_wc_status_str", "ibv_get_device_guid",
		"ibv_create_srq", "ibv_modify_srq", "ibv_query_srq", "ibv_destroy_srq",
	};
	static const struct { const char *fn, *ver; } other[] = {
		{ "ibv_reg_mr_iova2", "IBVERBS_1.8" }, { "ibv_reg_dmabuf_mr", "IBVERBS_1.12" },
		{ "ibv_query_ece", "IBVERBS_1.10" }, { "ibv_set_ece", "IBVERBS_1.10" },
		{ "ibv_create_comp_channel", "IBVERBS_1.0" }, { "ibv_destroy_comp_channel", "IBVERBS_1.0" },
		{ "ibv_read_sysfs_file", "IBVERBS_1.0" }, { "ibv_qp_to_qp_ex", "IBVERBS_1.6" },
		{ "ibv_query_gid_type", "IBVERBS_PRIVATE_34" },
	};
	void *h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD);
	REQUIRE(h);
	for (size_t i = 0; i < sizeof(v11) / sizeof(v11[0]); i++)
		if (!dlvsym(h, v11[i], "IBVERBS_1.1")) {
			fprintf(stderr, "no %s@IBVERBS_1.1\n", v11[i]);
			fails++;
		}
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
		if (!dlvsym(h, other[i].fn, other[i].ver)) {
			fprintf(stderr, "no %s@%s\n", other[i].fn, other[i].ver);
			fails++;
		}
	dlclose(h);
}

/* A shared receive queue on b: b's QP receives from it; the limits give
 * the errnos a provider gives; the armed limit raises its async event
 * once; an empty SRQ makes the sender retry (RNR) until a receive is
 * posted; it cannot be destroyed while a QP uses it. */
static void test_srq(struct ibv_device *da, struct ibv_device *db, int rw)
{
	struct end a, b;
	end_open(&a, da, rw);
	end_open(&b, db, rw);
	struct ibv_device_attr da_;
	REQUIRE(ibv_query_device(b.ctx, &da_) == 0 && da_.max_srq > 0 && da_.max_srq_sge == da_.max_sge);
	struct ibv_srq_init_attr si = { .attr = { .max_wr = (uint32_t)da_.max_srq_wr + 1, .max_sge = 1 } };
	errno = 0;
	CHECK(ibv_create_srq(b.pd, &si) == NULL && errno == EINVAL);
	si.attr.max_wr = 4;
	si.attr.max_sge = (uint32_t)da_.max_srq_sge + 1;
	errno = 0;
	CHECK(ibv_create_srq(b.pd, &si) == NULL && errno == EINVAL);
	si.attr.max_sge = 1;
	struct ibv_srq *srq = ibv_create_srq(b.pd, &si);
	REQUIRE(srq != NULL);
	CHECK(ibv_destroy_qp(b.qp) == 0);
	struct ibv_qp_init_attr ia = { .send_cq = b.cq, .recv_cq = b.cq, .srq = srq, .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 16, .max_send_sge = 1 } };
	REQUIRE((b.qp = ibv_create_qp(b.pd, &ia)) != NULL);
	CHECK(ibv_destroy_srq(srq) == EBUSY);
	struct ibv_srq_attr sa;
	CHECK(ibv_query_srq(srq, &sa) == 0 && sa.max_wr == 4 && sa.max_sge == 1 && sa.srq_limit == 0);
	connect_pair(&a, &b, rw, 3, 7);
	CHECK(post_recv(&b, 1, 0, 64) == ENOMEM);   /* the QP has no receive queue of its own */
	struct ibv_sge sg[2] = { { (uintptr_t)b.buf, 64, b.mr->lkey }, { (uintptr_t)b.buf + 64, 64, b.mr->lkey } };
	struct ibv_recv_wr wr = { .wr_id = 200, .sg_list = sg, .num_sge = 2 }, *bad = NULL;
	CHECK(ibv_post_srq_recv(srq, &wr, &bad) == EINVAL && bad == &wr);
	wr.num_sge = 1;
	for (int i = 0; i < 4; i++) {
		wr.wr_id = 200 + (uint64_t)i;
		sg[0].addr = (uintptr_t)b.buf + 64 * (uint64_t)i;
		CHECK(ibv_post_srq_recv(srq, &wr, &bad) == 0);
	}
	CHECK(ibv_post_srq_recv(srq, &wr, &bad) == ENOMEM);
	sa.srq_limit = 5;
	CHECK(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT) == EINVAL);   /* above max_wr */
	CHECK(ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR) == EINVAL);  /* no resizing */
	sa.srq_limit = 3;
	CHECK(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT) == 0);
	/* 4 receives: the first SEND leaves 3 (not below 3), the second 2 */
	for (int i = 0; i < 4; i++) {
		CHECK(post(&a, IBV_WR_SEND, 10 + (uint64_t)i, 0, 8, 0, 0, 0) == 0);
		struct ibv_wc wc = wait_wc(&a);
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 10 + (uint64_t)i);
		wc = wait_wc(&b);
		CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && wc.wr_id == 200 + (uint64_t)i &&
		      wc.qp_num == b.qp->qp_num);
		struct pollfd pfd = { .fd = b.ctx->async_fd, .events = POLLIN };
		CHECK(poll(&pfd, 1, 0) == (i == 1));
		if (i == 1) {
			struct ibv_async_event ev;
			CHECK(ibv_get_async_event(b.ctx, &ev) == 0 && ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED &&
			      ev.element.srq == srq);
			ibv_ack_async_event(&ev);
			CHECK(ibv_query_srq(srq, &sa) == 0 && sa.srq_limit == 0);   /* disarmed */
		}
	}
	/* empty: the SEND waits (RNR, retried for ever: rnr_retry 7) for a receive */
	CHECK(post(&a, IBV_WR_SEND, 20, 0, 8, 0, 0, 0) == 0);
	struct timespec ts = { 0, 50000000 };
	nanosleep(&ts, NULL);
	struct ibv_wc wc;
	CHECK(ibv_poll_cq(a.cq, 1, &wc) == 0);
	wr.wr_id = 300;
	CHECK(ibv_post_srq_recv(srq, &wr, &bad) == 0);
	wc = wait_wc(&a);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 20);
	wc = wait_wc(&b);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 300);
	CHECK(ibv_destroy_qp(b.qp) == 0);
	b.qp = NULL;
	CHECK(ibv_destroy_srq(srq) == 0);
	end_close(&a);
	end_close(&b);
}

int main(void)
{
	check_versions();
	int n = 0;
	struct ibv_device **devs = ibv_get_device_list(&n);
	REQUIRE(devs && n >= 2);
	CHECK(strcmp(ibv_get_device_name(devs[0]), "mlx5_0") == 0);
	const int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

	/* ---- state machine ---- */
	struct end a, b;
	end_open(&a, devs[0], rw);
	end_open(&b, devs[1], rw);
	CHECK(a.port.lid != 0 && a.port.lid != b.port.lid);
	CHECK(a.port.link_layer == IBV_LINK_LAYER_INFINIBAND);
	CHECK(a.qp->qp_num != b.qp->qp_num);
	/* RESET -> RTR skips INIT */
	CHECK(to_rtr(&a, &b, IBV_MTU_1024, b.port.lid, 1) == EINVAL);
	/* RESET -> INIT without the port */
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_INIT, .qp_access_flags = rw };
	CHECK(ibv_modify_qp(a.qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS) == EINVAL);
	/* an attribute INIT does not take */
	at.port_num = 1;
	CHECK(ibv_modify_qp(a.qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS | IBV_QP_PORT |
					   IBV_QP_TIMEOUT) == EINVAL);
	/* port 2 of a one-port HCA */
	at.port_num = 2;
	CHECK(ibv_modify_qp(a.qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS | IBV_QP_PORT) ==
	      EINVAL);
	CHECK(to_init(&a, rw) == 0 && to_init(&b, rw) == 0);
	CHECK(a.qp->state == IBV_QPS_INIT);
	/* INIT -> RTS skips RTR */
	CHECK(to_rts(&a, 7, 7) == EINVAL);
	/* a LID no NIC of the cluster has; a path MTU above the port's (4096 is the
	 * maximum enum: 2node_8gpu_pcie's NICs are 4096, so test an invalid enum) */
	CHECK(to_rtr(&a, &b, IBV_MTU_1024, 0x7777, 1) == EINVAL);
	CHECK(to_rtr(&a, &b, (enum ibv_mtu)6, b.port.lid, 1) == EINVAL);
	/* RTR without the destination QPN */
	struct ibv_qp_attr ar = { .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
				  .ah_attr = { .dlid = b.port.lid, .port_num = 1 } };
	CHECK(ibv_modify_qp(a.qp, &ar, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_RQ_PSN |
					   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) == EINVAL);
	/* a GID index past the table */
	ar.ah_attr.is_global = 1;
	ar.ah_attr.grh.sgid_index = 3;
	ar.dest_qp_num = b.qp->qp_num;
	CHECK(ibv_modify_qp(a.qp, &ar, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) == EINVAL);
	CHECK(a.qp->state == IBV_QPS_INIT);
	/* posting a send before RTS */
	CHECK(post(&a, IBV_WR_SEND, 1, 0, 8, 0, 0, 0) == EINVAL);
	CHECK(to_rtr(&a, &b, IBV_MTU_1024, b.port.lid, 1) == 0 && to_rtr(&b, &a, IBV_MTU_1024, a.port.lid, 1) == 0);
	CHECK(to_rts(&a, 3, 1) == 0 && to_rts(&b, 3, 1) == 0);
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	CHECK(ibv_query_qp(a.qp, &qa, IBV_QP_STATE, &qia) == 0 && qa.qp_state == IBV_QPS_RTS &&
	      qa.dest_qp_num == b.qp->qp_num);

	/* ---- SEND/RECV with a completion event ---- */
	CHECK(ibv_req_notify_cq(b.cq, 0) == 0);
	CHECK(post_recv(&b, 100, 4096, 64) == 0);
	strcpy(a.buf, "hello over the fake fabric");
	CHECK(post(&a, IBV_WR_SEND_WITH_IMM, 1, 0, 27, 0, 0, htonl(0xabcd)) == 0);
	struct pollfd pfd = { .fd = b.ch->fd, .events = POLLIN };
	CHECK(poll(&pfd, 1, 5000) == 1);
	struct ibv_cq *ecq;
	void *ectx;
	CHECK(ibv_get_cq_event(b.ch, &ecq, &ectx) == 0 && ecq == b.cq && ectx == &b);
	ibv_ack_cq_events(b.cq, 1);
	struct ibv_wc wc = wait_wc(&b);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && wc.wr_id == 100 && wc.byte_len == 27 &&
	      (wc.wc_flags & IBV_WC_WITH_IMM) && ntohl(wc.imm_data) == 0xabcd && wc.src_qp == a.qp->qp_num);
	CHECK(strcmp(b.buf + 4096, "hello over the fake fabric") == 0);
	wc = wait_wc(&a);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND && wc.wr_id == 1);
	/* the first packet on an RTR/RTS responder: COMM_EST was not raised (b was RTS) */

	/* ---- RDMA WRITE, WRITE WITH IMM, READ ---- */
	memset(a.buf, 'w', 100);
	CHECK(post(&a, IBV_WR_RDMA_WRITE, 2, 0, 100, (uintptr_t)b.buf + 1000, b.mr->rkey, 0) == 0);
	wc = wait_wc(&a);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_WRITE && wc.wr_id == 2);
	CHECK(b.buf[1000] == 'w' && b.buf[1099] == 'w' && b.buf[1100] == 0);
	CHECK(post_recv(&b, 101, 4096, 64) == 0);
	CHECK(post(&a, IBV_WR_RDMA_WRITE_WITH_IMM, 3, 0, 10, (uintptr_t)b.buf + 2000, b.mr->rkey, htonl(7)) == 0);
	wc = wait_wc(&a);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 3);
	wc = wait_wc(&b);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM && wc.wr_id == 101 &&
	      ntohl(wc.imm_data) == 7);
	CHECK(b.buf[2000] == 'w');
	memcpy(b.buf + 3000, "read me", 8);
	CHECK(post(&a, IBV_WR_RDMA_READ, 4, 500, 8, (uintptr_t)b.buf + 3000, b.mr->rkey, 0) == 0);
	wc = wait_wc(&a);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_READ && wc.wr_id == 4);
	CHECK(strcmp(a.buf + 500, "read me") == 0);
	/* an MR registered at an IO virtual address: the peer addresses it by iova */
	struct ibv_mr *iv = ibv_reg_mr_iova2(b.pd, b.buf + 6000, 1000, 0x40000000, rw);
	CHECK(iv != NULL);
	if (iv) {
		memcpy(a.buf + 700, "by iova", 8);
		CHECK(post(&a, IBV_WR_RDMA_WRITE, 15, 700, 8, 0x40000000 + 100, iv->rkey, 0) == 0);
		wc = wait_wc(&a);
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 15);
		CHECK(strcmp(b.buf + 6100, "by iova") == 0);
		CHECK(ibv_dereg_mr(iv) == 0);
	}

	/* ---- garbage on b's QP socket (the rendezvous of the fabric): the
	 * connection is dropped, b goes on ---- */
	int gfd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *rdv = getenv("NCCLRR_VERBS_DIR");
	REQUIRE(rdv); /* meson sets it: the fabric's sockets of this test */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/v%u.%u", rdv, b.port.lid, b.qp->qp_num);
	CHECK(gfd >= 0 && connect(gfd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	char junk[256];
	memset(junk, 0xff, sizeof(junk));
	CHECK(write(gfd, junk, sizeof(junk)) == (ssize_t)sizeof(junk));
	char eof;
	CHECK(read(gfd, &eof, 1) == 0); /* closed by b */
	close(gfd);
	CHECK(post(&a, IBV_WR_RDMA_WRITE, 16, 0, 8, (uintptr_t)b.buf, b.mr->rkey, 0) == 0);
	wc = wait_wc(&a);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 16);

	/* ---- remote access error: out of the MR's bounds ---- */
	CHECK(post(&a, IBV_WR_RDMA_WRITE, 5, 0, 100, (uintptr_t)b.buf + 8150, b.mr->rkey, 0) == 0);
	wc = wait_wc(&a);
	CHECK(wc.status == IBV_WC_REM_ACCESS_ERR && wc.wr_id == 5);
	CHECK(a.qp->state == IBV_QPS_ERR);
	/* a QP in error flushes what is posted */
	CHECK(post(&a, IBV_WR_SEND, 6, 0, 8, 0, 0, 0) == 0);
	wc = wait_wc(&a);
	CHECK(wc.status == IBV_WC_WR_FLUSH_ERR && wc.wr_id == 6);
	/* back to RESET (state only: anything else is EINVAL) and connected
	 * again, with the same QP numbers */
	uint32_t qpn = a.qp->qp_num;
	struct ibv_qp_attr rs = { .qp_state = IBV_QPS_RESET, .timeout = 3 };
	CHECK(ibv_modify_qp(a.qp, &rs, IBV_QP_STATE | IBV_QP_TIMEOUT) == EINVAL);
	CHECK(ibv_modify_qp(a.qp, &rs, IBV_QP_STATE) == 0 && ibv_modify_qp(b.qp, &rs, IBV_QP_STATE) == 0);
	CHECK(a.qp->qp_num == qpn && a.qp->state == IBV_QPS_RESET);
	connect_pair(&a, &b, rw, 3, 1);
	CHECK(post(&a, IBV_WR_RDMA_WRITE, 12, 0, 8, (uintptr_t)b.buf, b.mr->rkey, 0) == 0);
	wc = wait_wc(&a);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 12);
	end_close(&a);
	end_close(&b);

	/* ---- remote access errors: a wrong rkey, an MR without remote write; RNR:
	 * a SEND with no receive posted and rnr_retry 1 ---- */
	expect_error(devs, rw, IBV_WR_RDMA_WRITE, 0x1, IBV_WC_REM_ACCESS_ERR);
	expect_error(devs, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ, IBV_WR_RDMA_WRITE, 0,
		     IBV_WC_REM_ACCESS_ERR);
	expect_error(devs, rw & ~IBV_ACCESS_REMOTE_READ, IBV_WR_RDMA_READ, 0, IBV_WC_REM_ACCESS_ERR);
	expect_error(devs, rw, IBV_WR_SEND, 0, IBV_WC_RNR_RETRY_EXC_ERR);

	/* ---- retry exceeded: the peer QP is gone ---- */
	end_open(&a, devs[0], rw);
	end_open(&b, devs[1], rw);
	connect_pair(&a, &b, rw, 2, 1);
	CHECK(ibv_destroy_qp(b.qp) == 0);
	b.qp = NULL;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK(post(&a, IBV_WR_RDMA_WRITE, 9, 0, 8, (uintptr_t)b.buf, b.mr->rkey, 0) == 0);
	wc = wait_wc(&a);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK(wc.status == IBV_WC_RETRY_EXC_ERR && wc.status == 12 && wc.wr_id == 9);
	double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	/* retry_cnt 2: three tries of the 200 ms floor (timeout 1 is 8 us) */
	printf("retry exceeded after %.0f ms\n", ms);
	CHECK(ms >= 590 && ms < 20000);
	end_close(&a);
	end_close(&b);

	/* ---- GPUDirect: an MR on the fake CUDA driver's dma-buf fd; a peer's
	 * RDMA WRITE lands in the device allocation ---- */
	void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
	REQUIRE(cuda);
	int (*cuInit)(unsigned) = (int (*)(unsigned))dlsym(cuda, "cuInit");
	int (*cuDeviceGet)(int *, int) = (int (*)(int *, int))dlsym(cuda, "cuDeviceGet");
	int (*cuCtxCreate)(void **, unsigned, int) = (int (*)(void **, unsigned, int))dlsym(cuda, "cuCtxCreate_v2");
	int (*cuMemAlloc)(uint64_t *, size_t) = (int (*)(uint64_t *, size_t))dlsym(cuda, "cuMemAlloc_v2");
	int (*cuMemGetHandle)(void *, uint64_t, size_t, int, unsigned long long) =
		(int (*)(void *, uint64_t, size_t, int, unsigned long long))dlsym(cuda, "cuMemGetHandleForAddressRange");
	REQUIRE(cuInit && cuDeviceGet && cuCtxCreate && cuMemAlloc && cuMemGetHandle);
	int cudev;
	void *cuctx;
	uint64_t dptr;
	int dmafd = -1;
	REQUIRE(cuInit(0) == 0 && cuDeviceGet(&cudev, 0) == 0 && cuCtxCreate(&cuctx, 0, cudev) == 0);
	REQUIRE(cuMemAlloc(&dptr, 1 << 21) == 0);
	REQUIRE(cuMemGetHandle(&dmafd, dptr, 1 << 21, 1, 0) == 0 && dmafd >= 0);
	end_open(&a, devs[0], rw);
	end_open(&b, devs[1], rw);
	struct ibv_mr *dm = ibv_reg_dmabuf_mr(b.pd, 4096, 65536, dptr + 4096, dmafd, rw);
	CHECK(dm != NULL);
	int pfds[2];
	REQUIRE(pipe(pfds) == 0);
	CHECK(ibv_reg_dmabuf_mr(b.pd, 0, 4096, 0, pfds[0] /* no dma-buf */, rw) == NULL && errno == EINVAL);
	close(pfds[0]);
	close(pfds[1]);
	connect_pair(&a, &b, rw, 3, 1);
	memset(a.buf, 'g', 64);
	if (dm) {
		CHECK(post(&a, IBV_WR_RDMA_WRITE, 10, 0, 64, dptr + 8192, dm->rkey, 0) == 0);
		wc = wait_wc(&a);
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 10);
		CHECK(((char *)(uintptr_t)dptr)[8192] == 'g' && ((char *)(uintptr_t)dptr)[8255] == 'g');
		CHECK(ibv_dereg_mr(dm) == 0);
	}
	close(dmafd);
	end_close(&a);
	end_close(&b);

	/* ---- an async event: the first packet on a QP in RTR is COMM_EST ---- */
	end_open(&a, devs[0], rw);
	end_open(&b, devs[1], rw);
	REQUIRE(to_init(&a, rw) == 0 && to_init(&b, rw) == 0);
	REQUIRE(to_rtr(&a, &b, IBV_MTU_1024, b.port.lid, 1) == 0 && to_rtr(&b, &a, IBV_MTU_1024, a.port.lid, 1) == 0);
	REQUIRE(to_rts(&a, 3, 1) == 0);
	CHECK(post(&a, IBV_WR_RDMA_WRITE, 11, 0, 8, (uintptr_t)b.buf, b.mr->rkey, 0) == 0);
	wc = wait_wc(&a);
	CHECK(wc.status == IBV_WC_SUCCESS);
	struct pollfd apfd = { .fd = b.ctx->async_fd, .events = POLLIN };
	CHECK(poll(&apfd, 1, 5000) == 1);
	struct ibv_async_event aev;
	CHECK(ibv_get_async_event(b.ctx, &aev) == 0 && aev.event_type == IBV_EVENT_COMM_EST && aev.element.qp == b.qp);
	ibv_ack_async_event(&aev);
	end_close(&a);
	end_close(&b);

	/* ---- retry exceeded across processes: the peer process is killed ---- */
	int up[2], down[2];
	REQUIRE(pipe(up) == 0 && pipe(down) == 0);
	pid_t child = fork();
	REQUIRE(child >= 0);
	if (child == 0) {
		struct end c;
		end_open(&c, devs[1], rw);
		uint32_t me[2] = { c.qp->qp_num, (uint32_t)(uintptr_t)c.buf }, peer;
		uint64_t cbuf = (uintptr_t)c.buf;
		if (write(up[1], &me[0], 4) != 4 || write(up[1], &cbuf, 8) != 8 || write(up[1], &c.mr->rkey, 4) != 4 ||
		    read(down[0], &peer, 4) != 4)
			_exit(2);
		struct end fake_peer = { .qp = &(struct ibv_qp){ .qp_num = peer } };
		if (to_init(&c, rw) || to_rtr(&c, &fake_peer, IBV_MTU_1024, 1, 1) || write(up[1], "r", 1) != 1)
			_exit(3);
		pause();
		_exit(0);
	}
	end_open(&a, devs[0], rw);
	uint32_t cqpn, crkey;
	uint64_t cbuf;
	char ready;
	REQUIRE(read(up[0], &cqpn, 4) == 4 && read(up[0], &cbuf, 8) == 8 && read(up[0], &crkey, 4) == 4);
	REQUIRE(write(down[1], &a.qp->qp_num, 4) == 4 && read(up[0], &ready, 1) == 1);
	struct end cpeer = { .qp = &(struct ibv_qp){ .qp_num = cqpn } };
	REQUIRE(to_init(&a, rw) == 0 && to_rtr(&a, &cpeer, IBV_MTU_1024, 2, 1) == 0 && to_rts(&a, 1, 1) == 0);
	CHECK(post(&a, IBV_WR_RDMA_WRITE, 13, 0, 8, cbuf, crkey, 0) == 0);
	wc = wait_wc(&a);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 13);
	kill(child, SIGKILL);
	int wst;
	waitpid(child, &wst, 0);
	CHECK(post(&a, IBV_WR_RDMA_WRITE, 14, 0, 8, cbuf, crkey, 0) == 0);
	wc = wait_wc(&a);
	CHECK(wc.status == IBV_WC_RETRY_EXC_ERR && wc.wr_id == 14);
	end_close(&a);
	close(up[0]);
	close(up[1]);
	close(down[0]);
	close(down[1]);

	/* ---- registration: memlock, access rules, unmapped memory ---- */
	end_open(&a, devs[0], rw);
	CHECK(ibv_reg_mr(a.pd, a.buf, 4096, IBV_ACCESS_REMOTE_WRITE) == NULL && errno == EINVAL);
	CHECK(ibv_reg_mr(a.pd, (void *)4096, 4096, 0) == NULL && errno == EFAULT);
	struct ibv_mr *m2 = ibv_reg_mr_iova2(a.pd, a.buf, 4096, 0x10000, IBV_ACCESS_LOCAL_WRITE);
	CHECK(m2 && m2->lkey != a.mr->lkey);
	if (m2)
		CHECK(ibv_dereg_mr(m2) == 0);
	struct rlimit rl, old;
	CHECK(getrlimit(RLIMIT_MEMLOCK, &old) == 0);
	rl = (struct rlimit){ 64 * 1024, old.rlim_max };
	CHECK(setrlimit(RLIMIT_MEMLOCK, &rl) == 0);
	char *big = aligned_alloc(4096, 1 << 20);
	REQUIRE(big);
	memset(big, 0, 1 << 20);
	errno = 0;
	CHECK(ibv_reg_mr(a.pd, big, 1 << 20, IBV_ACCESS_LOCAL_WRITE) == NULL && errno == ENOMEM);
	struct ibv_mr *small = ibv_reg_mr(a.pd, big, 16384, IBV_ACCESS_LOCAL_WRITE);
	CHECK(small != NULL);
	if (small)
		ibv_dereg_mr(small);
	/* a virtual host's memlock= that ncclrr run could not give
	 * (NCCLRR_MEMLOCK, with the 64 KiB it gave instead) is what counts */
	setenv("NCCLRR_MEMLOCK_GIVEN", "65536", 1);
	setenv("NCCLRR_MEMLOCK", "unlimited", 1);
	struct ibv_mr *m3 = ibv_reg_mr(a.pd, big, 1 << 20, IBV_ACCESS_LOCAL_WRITE);
	CHECK(m3 != NULL);
	if (m3)
		ibv_dereg_mr(m3);
	setenv("NCCLRR_MEMLOCK", "131072", 1);
	errno = 0;
	CHECK(ibv_reg_mr(a.pd, big, 1 << 20, IBV_ACCESS_LOCAL_WRITE) == NULL && errno == ENOMEM);
	/* a process that lowers its own limit gets it, whatever the host's */
	setenv("NCCLRR_MEMLOCK", "unlimited", 1);
	rl.rlim_cur = 32 * 1024;
	CHECK(setrlimit(RLIMIT_MEMLOCK, &rl) == 0);
	errno = 0;
	CHECK(ibv_reg_mr(a.pd, big, 1 << 20, IBV_ACCESS_LOCAL_WRITE) == NULL && errno == ENOMEM);
	small = ibv_reg_mr(a.pd, big, 16384, IBV_ACCESS_LOCAL_WRITE);
	CHECK(small != NULL);
	if (small)
		ibv_dereg_mr(small);
	unsetenv("NCCLRR_MEMLOCK");
	unsetenv("NCCLRR_MEMLOCK_GIVEN");
	CHECK(setrlimit(RLIMIT_MEMLOCK, &old) == 0);
	free(big);
	struct ibv_ece ece;
	CHECK(ibv_query_ece(a.qp, &ece) == 0 && ece.vendor_id == 0x02c9);
	CHECK(ibv_set_ece(a.qp, &ece) == 0);
	struct ibv_device_attr_ex dx;
	CHECK(ibv_query_device_ex(a.ctx, NULL, &dx) == 0 && dx.orig_attr.phys_port_cnt == 1);
	CHECK(ibv_fork_init() == 0);
	end_close(&a);
	test_srq(devs[0], devs[1], rw);

	ibv_free_device_list(devs);
	if (fails)
		fprintf(stderr, "%d check(s) failed\n", fails);
	else
		printf("all checks passed\n");
	return fails ? 1 : 0;
}
