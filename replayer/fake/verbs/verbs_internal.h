/* SPDX-License-Identifier: MIT */
/*
 * verbs_internal.h - what the parts of the fake libibverbs share: devices
 * (verbs_dev.c), the objects and entry points (verbs.c) and the fabric
 * between processes (verbs_fabric.c). See replayer/fake/README.md.
 *
 * One lock (nv_lock) guards every QP, CQ, MR and connection of the process:
 * the progress thread and the entry points take it; nothing blocks while
 * holding it (sockets are non-blocking, with an output buffer each).
 */
#ifndef NRR_VERBS_INTERNAL_H
#define NRR_VERBS_INTERNAL_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdint.h>

#include "fake_common.h"
#include "nrr_fake_verbs_fault.h"

/* <verbs.h> makes these names macros over inline helpers; the library
 * defines the exported functions behind them */
#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_reg_mr_iova
#undef ibv_get_device_list

#define NV_MAX_NICS 32
#define NV_MAX_QPN 0xffffff
#define NV_MAX_WR 32768
#define NV_MAX_SGE 30
#define NV_MAX_CQE 4194303
#define NV_MAX_INLINE 256

/* The entry count of the fault switch (NCCLRR_FAULT=ibv_reg_mr:...:ENOMEM):
 * an int-returning verb returns the errno, a pointer one NULL with errno.
 * @nm is the verb's name as an identifier: it must be described with
 * `fault` in formats/api/verbs.api (NRR_FAULT_<nm>, generated into
 * nrr_fake_verbs_fault.h), the list `replay --rerun` gives failures back
 * for (nrr_fn_fault()); an undeclared one does not build. */
#define NV_COUNT_DECLARED(nm) \
	_Static_assert(NRR_FAULT_##nm, #nm " is described with fault in formats/api/verbs.api")
#define NV_COUNT_INT(nm) \
	NV_COUNT_DECLARED(nm); \
	static struct fake_api api_ = { .name = #nm }; \
	do { \
		int inj_ = fake_enter(&api_); \
		if (inj_) \
			return inj_; \
	} while (0)
#define NV_COUNT_PTR(nm) \
	NV_COUNT_DECLARED(nm); \
	NV_COUNT_PTR_NAMED(#nm)
/* A verb the API description does not have (not traced: no recording
 * names it), counted under the name @str all the same. */
#define NV_COUNT_PTR_NAMED(str) \
	static struct fake_api api_ = { .name = str }; \
	do { \
		int inj_ = fake_enter(&api_); \
		if (inj_) { \
			errno = inj_; \
			return NULL; \
		} \
	} while (0)

/* A verb with no error to return (void, a name): counted only; a fault
 * rule naming it has nothing to inject. */
#define NV_COUNT_ONLY(nm) \
	static struct fake_api api_ = { .name = nm }; \
	(void)fake_enter(&api_)

/* one NIC of the cluster, as the fabric addresses it */
struct nv_addr {
	int host, nic;
	uint16_t lid;               /* the fabric key, also on RoCE */
	uint64_t guid;
	int ethernet;
	int mtu;                    /* bytes */
	int speed;                  /* Mb/s */
	int ngids;
	union ibv_gid gid[NRR_TOPO_MAX_GIDS];
	int roce_v2[NRR_TOPO_MAX_GIDS];  /* the GID's type: RoCE v2, else IB/RoCE v1 */
};

struct nv_device {
	struct ibv_device dev;
	const nrr_topo_nic *nic;
	struct nv_addr addr;
};

struct nv_context {
	struct verbs_context vctx;  /* vctx.context is what the program gets */
	struct nv_device *dev;
	int async_fd;               /* eventfd (semaphore): one count per event */
	struct ibv_async_event *events;
	int nevents, capevents;
};

struct nv_mr {
	struct ibv_mr mr;
	uint64_t iova;
	unsigned access;
	size_t pinned;              /* bytes counted against RLIMIT_MEMLOCK */
	void *map;                  /* dma-buf MR: its mapping of the fd */
	size_t maplen;
	struct nv_mr *next;
};

struct nv_cq {
	struct ibv_cq cq;
	struct ibv_wc *ring;
	int cap, head, count;
	int armed, solicited_only;
	int pending_event;          /* queued on the channel, not yet got */
	struct nv_cq *ev_next;
};

struct nv_channel {
	struct ibv_comp_channel ch;
	struct nv_cq *ev_head, *ev_tail;
};

/* a send work request, its payload copied when posted */
struct nv_swr {
	uint64_t wr_id;
	enum ibv_wr_opcode opcode;
	int signaled, solicited;
	enum ibv_wc_status local_err;   /* IBV_WC_SUCCESS or an error found when posted */
	uint32_t imm;
	uint64_t raddr;
	uint32_t rkey;
	uint8_t *data;              /* SEND/WRITE payload */
	uint64_t len;
	int nsge;                   /* RDMA READ: where the answer goes */
	struct ibv_sge sge[NV_MAX_SGE];
	uint32_t seq;
	struct nv_swr *next;
};

struct nv_rwr {
	uint64_t wr_id;
	int nsge;
	struct ibv_sge sge[NV_MAX_SGE];
	struct nv_rwr *next;
};

/* a receive queue: a QP's own, or a shared one (SRQ) */
struct nv_rq {
	struct nv_rwr *head, *tail;
	int count;
};

/* A shared receive queue: the QPs created with it take their receives
 * from it, in posting order, whichever QP a message arrives on. */
struct nv_srq {
	struct ibv_srq srq;
	struct ibv_srq_attr attr;   /* max_wr, max_sge; srq_limit: armed when not 0 */
	struct nv_rq rq;
	int users;                  /* QPs receiving from it: destroy is EBUSY */
};

struct nv_conn {
	int fd;
	struct nv_qp *qp;
	int outgoing;               /* ours to the peer (requests), or the peer's to us */
	int connecting;
	uint8_t *out;
	size_t outlen, outoff, outcap;
	uint8_t *in;
	size_t inlen, incap;
	uint64_t inpos;             /* bytes of the stream before in[0] */
	struct nv_conn *next;
};

struct nv_qp {
	struct ibv_qp qp;
	struct ibv_qp_cap cap;
	int sq_sig_all;
	struct ibv_qp_attr attr;    /* what modify_qp set */
	int lfd;                    /* listening socket: (LID, QPN) */
	char path[108];
	const struct nv_addr *peer; /* resolved at RTR */
	/* requester */
	struct nv_swr *sq_head, *sq_tail;
	int sq_count;
	int inflight;
	uint64_t deadline_ns, resend_ns;
	int retries_left, rnr_left;
	uint32_t next_seq;
	struct nv_conn *out;
	/* responder: receives from its own queue, or from @srq's */
	struct nv_rq rq;
	struct nv_srq *srq;
	uint32_t expect_seq;
	int comm_est;
	struct nv_qp *next;
};

extern pthread_mutex_t nv_lock;
extern struct nv_qp *nv_qps;       /* every QP of the process */

/* verbs_dev.c */
int nv_devices(struct nv_device **devs);
struct nv_device *nv_device(struct ibv_device *d);
void nv_addr_of(const nrr_topo_nic *nic, int host, int idx, struct nv_addr *a);
const struct nv_addr *nv_resolve(const struct ibv_ah_attr *ah, int ethernet);
void nv_fill_device_attr(const struct nv_device *d, struct ibv_device_attr *a);
void nv_fill_port_attr(const struct nv_device *d, struct ibv_port_attr *p);
enum ibv_mtu nv_mtu_enum(int bytes);

/* verbs.c (called with nv_lock held) */
struct nv_mr *nv_mr_find(uint32_t key, int remote);
/* host pointer of [addr, addr+len) in @mr under @access, or NULL */
void *nv_mr_ptr(struct nv_mr *mr, struct ibv_pd *pd, uint64_t addr, uint64_t len, unsigned access);
void nv_cq_add(struct nv_cq *cq, const struct ibv_wc *wc);
/* an async event of @qp, of @srq, or (both NULL) of the port */
void nv_async_event(struct ibv_context *ctx, enum ibv_event_type t, struct ibv_qp *qp, struct ibv_srq *srq);

/* verbs_fabric.c */
int nv_fabric_listen(struct nv_qp *q, uint16_t lid);   /* assigns qp_num */
void nv_fabric_kick(void);                            /* wake the progress thread */
/* with nv_lock: drop the QP's connections and, unless @keep_listening
 * (a QP back in RESET keeps its QPN), its socket */
void nv_fabric_close_qp(struct nv_qp *q, int keep_listening);
void nv_qp_error(struct nv_qp *q, struct nv_swr *failed, enum ibv_wc_status st);
/* empty both queues; @complete: with a flush completion each (@failed gets @st) */
void nv_qp_drain(struct nv_qp *q, int complete, struct nv_swr *failed, enum ibv_wc_status st);
/* the next receive of @q (its SRQ's when it has one), or NULL: RNR;
 * nv_rq_pop takes it off, raising an armed SRQ limit */
struct nv_rwr *nv_rq_peek(struct nv_qp *q);
struct nv_rwr *nv_rq_pop(struct nv_qp *q);
void nv_complete_send(struct nv_qp *q, struct nv_swr *w, enum ibv_wc_status st);
void nv_complete_recv(struct nv_qp *q, struct nv_rwr *r, enum ibv_wc_status st,
		      enum ibv_wc_opcode op, uint32_t len, uint32_t imm, int with_imm);
int nv_qp_register(struct nv_qp *q);
void nv_qp_unregister(struct nv_qp *q);

#endif
