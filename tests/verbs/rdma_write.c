/* SPDX-License-Identifier: MIT */
/*
 * rdma_write.c - a two-process RDMA WRITE WITH IMMEDIATE over RC, the data
 * path NCCL's NET/IB uses, for recording and replaying under `ncclrr run`
 * (rank from NCCLRR_RANK). Rank 0 registers a buffer, rank 1 writes 4 KiB
 * into it; they exchange QP number, PSN, GID (index 0, a GRH) or LID, and
 * the buffer's address and rkey over TCP on 127.0.0.1:PORT.
 *
 * usage: rdma_write PORT [dereg|oob] [lid] [read]
 *   dereg: rank 0 deregisters its buffer before it tells rank 1 to write,
 *   so rank 1's completion is IBV_WC_REM_ACCESS_ERR and it exits 1;
 *   oob: rank 1 writes half past the end of rank 0's buffer: the same error;
 *   lid: the RTR has no GRH and names the peer by the LID ibv_query_port
 *   gives (InfiniBand addressed by LID, NCCL's NET/IB without a GID index);
 *   read: rank 1 reads rank 0's 4 KiB with an RDMA READ instead (no
 *   immediate, rank 0 posts no receive) and checks the bytes.
 * Rank 0 exits 0 once rank 1 says it is done; rank 1 exits 0 when its write
 * (read) completed with IBV_WC_SUCCESS (and rank 0 saw the data and
 * immediate; rank 1 the bytes rank 0 wrote).
 */
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define LEN 4096
#define IMM 0x1234abcdu

struct info {
	uint32_t qpn, psn, rkey;
	uint64_t addr;
	uint8_t gid[16];
	uint16_t lid;
};

static int die(const char *what)
{
	fprintf(stderr, "rdma_write: %s\n", what);
	exit(2);
}

static void xfer(int fd, void *p, size_t n, int out)
{
	for (size_t d = 0; d < n;) {
		ssize_t k = out ? write(fd, (char *)p + d, n - d) : read(fd, (char *)p + d, n - d);
		if (k <= 0)
			die(out ? "cannot write to the peer" : "the peer closed the connection");
		d += (size_t)k;
	}
}

static int tcp(int rank, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0)
		die("socket");
	if (rank == 0) {
		int one = 1;
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(s, (struct sockaddr *)&a, sizeof(a)) || listen(s, 1))
			die("cannot listen");
		int c = accept(s, NULL, NULL);
		close(s);
		return c;
	}
	for (int i = 0; i < 300; i++) {   /* the server may not listen yet */
		if (connect(s, (struct sockaddr *)&a, sizeof(a)) == 0)
			return s;
		close(s);
		struct timespec t = { 0, 100000000 };
		nanosleep(&t, NULL);
		s = socket(AF_INET, SOCK_STREAM, 0);
	}
	return die("cannot connect to rank 0");
}

/* one completion, or exit after 10 s */
static struct ibv_wc poll1(struct ibv_cq *cq)
{
	struct ibv_wc wc;
	time_t end = time(NULL) + 10;
	int n;
	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0)
		if (time(NULL) > end)
			die("no completion within 10 s");
	if (n < 0)
		die("ibv_poll_cq failed");
	return wc;
}

int main(int argc, char **argv)
{
	const char *r = getenv("NCCLRR_RANK");
	if (argc < 2 || !r)
		return die("usage: rdma_write PORT [dereg|oob] [lid] [read], under ncclrr run (NCCLRR_RANK)");
	int rank = atoi(r), dereg = 0, oob = 0, lid = 0, rd = 0;
	for (int i = 2; i < argc; i++) {
		int *f = !strcmp(argv[i], "dereg") ? &dereg : !strcmp(argv[i], "oob") ? &oob : !strcmp(argv[i], "lid") ? &lid
			 : !strcmp(argv[i], "read") ? &rd : NULL;
		if (!f)
			return die("usage: rdma_write PORT [dereg|oob] [lid] [read]");
		*f = 1;
	}
	struct ibv_device **dl = ibv_get_device_list(NULL);
	if (!dl || !dl[0])
		return die("no RDMA device");
	struct ibv_context *ctx = ibv_open_device(dl[0]);
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	static char buf[LEN];
	struct ibv_mr *mr = cq ? ibv_reg_mr(pd, buf, LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						      IBV_ACCESS_REMOTE_READ) : NULL;
	struct ibv_qp_init_attr ia = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_qp *qp = mr ? ibv_create_qp(pd, &ia) : NULL;
	if (!qp)
		return die("cannot make the PD, CQ, MR or QP");
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return die("cannot move the QP to INIT");
	struct info me = { .qpn = qp->qp_num, .psn = 0x1000u + (uint32_t)rank, .rkey = mr->rkey,
			   .addr = (uint64_t)(uintptr_t)buf }, peer;
	if (lid) {
		struct ibv_port_attr pa;
		if (ibv_query_port(ctx, 1, &pa) || !pa.lid || pa.link_layer != IBV_LINK_LAYER_INFINIBAND)
			return die("no LID: the port is not InfiniBand, or cannot be queried");
		me.lid = pa.lid;
	} else {
		union ibv_gid gid;
		if (ibv_query_gid(ctx, 1, 0, &gid))
			return die("cannot query GID 0");
		memcpy(me.gid, gid.raw, 16);
	}
	int s = tcp(rank, atoi(argv[1]));
	xfer(s, &me, sizeof(me), 1);
	xfer(s, &peer, sizeof(peer), 0);

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer.qpn;
	a.rq_psn = peer.psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = !lid;
	a.ah_attr.dlid = peer.lid;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.grh.sgid_index = 0;
	memcpy(a.ah_attr.grh.dgid.raw, peer.gid, 16);
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return die("cannot move the QP to RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = me.psn;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					  IBV_QP_MAX_QP_RD_ATOMIC))
		return die("cannot move the QP to RTS");

	char go = 1;
	if (rank == 0 && rd) {
		memset(buf, 'r', LEN);   /* what rank 1 reads */
		xfer(s, &go, 1, 1);
		xfer(s, &go, 1, 0);
		return 0;
	}
	if (rank == 0) {
		/* the immediate consumes a receive; the data lands in buf */
		struct ibv_recv_wr rw = { .wr_id = 7 }, *bad;
		if (ibv_post_recv(qp, &rw, &bad))
			return die("ibv_post_recv failed");
		if (dereg && ibv_dereg_mr(mr))
			return die("ibv_dereg_mr failed");
		xfer(s, &go, 1, 1);
		if (!dereg && !oob) {
			struct ibv_wc wc = poll1(cq);
			int ok = wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
				 wc.imm_data == htonl(IMM) && wc.byte_len == LEN && buf[0] == 'w' && buf[LEN - 1] == 'w';
			printf("rank 0: received %u bytes, immediate 0x%x: %s\n", wc.byte_len, ntohl(wc.imm_data),
			       ok ? "ok" : "WRONG");
			if (!ok)
				return 1;
		}
		xfer(s, &go, 1, 0);   /* rank 1 is done */
		return 0;
	}
	xfer(s, &go, 1, 0);
	static char src[LEN];
	memset(src, rd ? 0 : 'w', LEN);
	struct ibv_mr *smr = ibv_reg_mr(pd, src, LEN, IBV_ACCESS_LOCAL_WRITE);
	if (!smr)
		return die("cannot register the source buffer");
	struct ibv_sge sge = { (uint64_t)(uintptr_t)src, LEN, smr->lkey };
	struct ibv_send_wr sw = { .wr_id = 42, .sg_list = &sge, .num_sge = 1,
				  .opcode = rd ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE_WITH_IMM,
				  .send_flags = IBV_SEND_SIGNALED, .imm_data = rd ? 0 : htonl(IMM) }, *sbad;
	sw.wr.rdma.remote_addr = peer.addr + (oob ? LEN / 2 : 0);
	sw.wr.rdma.rkey = peer.rkey;
	if (ibv_post_send(qp, &sw, &sbad))
		return die("ibv_post_send failed");
	struct ibv_wc wc = poll1(cq);
	if (rd) {
		int ok = wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_READ && wc.byte_len == LEN &&
			 src[0] == 'r' && src[LEN - 1] == 'r';
		printf("rank 1: read completed: %s (%d), %u bytes: %s\n", ibv_wc_status_str(wc.status), (int)wc.status,
		       wc.byte_len, ok ? "ok" : "WRONG");
		xfer(s, &go, 1, 1);
		return ok ? 0 : 1;
	}
	printf("rank 1: write completed: %s (%d)\n", ibv_wc_status_str(wc.status), (int)wc.status);
	xfer(s, &go, 1, 1);
	return wc.status == IBV_WC_SUCCESS ? 0 : 1;
}
