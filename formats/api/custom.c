/* SPDX-License-Identifier: MIT */
/*
 * custom.c - encoders for arguments no generic encoding fits: work
 * request chains, completions, QP attributes, msghdr with passed fds,
 * interface lists. Each writes a sequence of LEB128 values (layout in
 * formats/api/README.md) into buf (NRR_CUSTOM_MAX bytes) and returns the
 * bytes used; the schema records them as `bytes`.
 */
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>

#include "callfmt.h"
#include "ncclrr_config.h"
#include "nrr_api_gen.h"
#if NCCLRR_HAVE_VERBS
#include <infiniband/verbs.h>
#endif

/* Room left for one more item of up to @n bytes. */
#define ROOM(p, buf, n) ((size_t)((p) - (buf)) + (n) <= NRR_CUSTOM_MAX)
/* Bytes of msg_name kept: a struct sockaddr_un (the largest address
 * NCCL uses). */
#define NRR_MSGHDR_NAME_MAX 110u
/* mmsghdr: bytes kept of each message's first iovec */
#define NRR_MMSG_HEAD 32u

#if NCCLRR_HAVE_VERBS
/* ibv_query_port's answer is recorded and compared by the layout
 * formats/api/types.api declares (nrr_ibv_port_attr): rdma-core's, member
 * by member, or the build stops here */
#define NRR_SAME_MEMBER(m)                                                                       \
	_Static_assert(offsetof(nrr_ibv_port_attr, m) == offsetof(struct ibv_port_attr, m) &&   \
			       sizeof(((nrr_ibv_port_attr *)0)->m) == sizeof(((struct ibv_port_attr *)0)->m), \
		       "nrr_ibv_port_attr." #m " (formats/api/types.api) differs from struct ibv_port_attr")
NRR_SAME_MEMBER(state);
NRR_SAME_MEMBER(max_mtu);
NRR_SAME_MEMBER(active_mtu);
NRR_SAME_MEMBER(gid_tbl_len);
NRR_SAME_MEMBER(port_cap_flags);
NRR_SAME_MEMBER(max_msg_sz);
NRR_SAME_MEMBER(bad_pkey_cntr);
NRR_SAME_MEMBER(qkey_viol_cntr);
NRR_SAME_MEMBER(pkey_tbl_len);
NRR_SAME_MEMBER(lid);
NRR_SAME_MEMBER(sm_lid);
NRR_SAME_MEMBER(lmc);
NRR_SAME_MEMBER(max_vl_num);
NRR_SAME_MEMBER(sm_sl);
NRR_SAME_MEMBER(subnet_timeout);
NRR_SAME_MEMBER(init_type_reply);
NRR_SAME_MEMBER(active_width);
NRR_SAME_MEMBER(active_speed);
NRR_SAME_MEMBER(phys_state);
NRR_SAME_MEMBER(link_layer);
NRR_SAME_MEMBER(flags);
NRR_SAME_MEMBER(port_cap_flags2);
#undef NRR_SAME_MEMBER

/* Instead of the trailer: a chain length of 0, then why (enum nrr_sges),
 * when there is room for that. */
static uint8_t *put_no_sges(const uint8_t *buf, uint8_t *p, enum nrr_sges why)
{
	if (!ROOM(p, buf, 2 * NRR_VAR_MAX))
		return p;
	p = nrr_put_uvar(p, 0);
	return nrr_put_uvar(p, (uint64_t)why);
}

/* The scatter/gather lists of a work request chain, after its requests
 * (what replay needs to post them again: formats/api/README.md, "sge
 * trailer"): the chain's length, then per request its sge count and each
 * sge's addr, length, lkey.  Written whole or not at all (a chain longer
 * than NRR_SGE_WRS requests, more than NRR_SGE_MAX sges in one, or no room
 * left): then put_no_sges() says which, for nrr_wr_decode().
 * @next, @sg, @nsge: offsets of those members in ibv_send_wr/ibv_recv_wr. */
static uint8_t *put_sges(const uint8_t *buf, uint8_t *p, const void *v, size_t next, size_t sg, size_t nsge)
{
	size_t need = NRR_VAR_MAX;
	unsigned n = 0;
	for (const uint8_t *w = v; w; w = *(const uint8_t *const *)(w + next), n++) {
		int k = *(const int *)(w + nsge);
		if (n >= NRR_SGE_WRS)
			return put_no_sges(buf, p, NRR_SGES_MANY_WRS);
		if (k < 0 || k > NRR_SGE_MAX || (k && !*(const struct ibv_sge *const *)(w + sg)))
			return put_no_sges(buf, p, NRR_SGES_MANY_SGES);
		need += NRR_VAR_MAX + (size_t)k * 3 * NRR_VAR_MAX;
	}
	if (!ROOM(p, buf, need))
		return put_no_sges(buf, p, NRR_SGES_NO_ROOM);
	p = nrr_put_uvar(p, n);
	for (const uint8_t *w = v; w; w = *(const uint8_t *const *)(w + next)) {
		int k = *(const int *)(w + nsge);
		const struct ibv_sge *s = *(const struct ibv_sge *const *)(w + sg);
		p = nrr_put_uvar(p, (uint64_t)k);
		for (int i = 0; i < k; i++) {
			p = nrr_put_uvar(p, s[i].addr);
			p = nrr_put_uvar(p, s[i].length);
			p = nrr_put_uvar(p, s[i].lkey);
		}
	}
	return p;
}

size_t nrr_custom_send_wr(uint8_t *buf, const void *v, long long ret)
{
	uint8_t *p = buf + 1;
	unsigned n = 0;
	(void)ret;
	for (const struct ibv_send_wr *wr = v; wr && n < 8 && ROOM(p, buf, 8 * NRR_VAR_MAX); wr = wr->next, n++) {
		uint64_t len = 0;
		for (int i = 0; i < wr->num_sge && wr->sg_list; i++)
			len += wr->sg_list[i].length;
		p = nrr_put_uvar(p, wr->wr_id);
		p = nrr_put_uvar(p, (uint64_t)wr->opcode);
		p = nrr_put_uvar(p, wr->send_flags);
		p = nrr_put_uvar(p, wr->imm_data);
		p = nrr_put_uvar(p, (uint64_t)wr->num_sge);
		p = nrr_put_uvar(p, len);
		p = nrr_put_uvar(p, wr->wr.rdma.remote_addr);
		p = nrr_put_uvar(p, wr->wr.rdma.rkey);
	}
	buf[0] = (uint8_t)n;
	p = put_sges(buf, p, v, offsetof(struct ibv_send_wr, next), offsetof(struct ibv_send_wr, sg_list),
		     offsetof(struct ibv_send_wr, num_sge));
	return (size_t)(p - buf);
}

size_t nrr_custom_recv_wr(uint8_t *buf, const void *v, long long ret)
{
	uint8_t *p = buf + 1;
	unsigned n = 0;
	(void)ret;
	for (const struct ibv_recv_wr *wr = v; wr && n < NRR_ENTRIES_MAX && ROOM(p, buf, 3 * NRR_VAR_MAX); wr = wr->next, n++) {
		uint64_t len = 0;
		for (int i = 0; i < wr->num_sge && wr->sg_list; i++)
			len += wr->sg_list[i].length;
		p = nrr_put_uvar(p, wr->wr_id);
		p = nrr_put_uvar(p, (uint64_t)wr->num_sge);
		p = nrr_put_uvar(p, len);
	}
	buf[0] = (uint8_t)n;
	p = put_sges(buf, p, v, offsetof(struct ibv_recv_wr, next), offsetof(struct ibv_recv_wr, sg_list),
		     offsetof(struct ibv_recv_wr, num_sge));
	return (size_t)(p - buf);
}

/* 6 fields per completion, the status second: verbs.api's failed=1/6 on
 * ibv_poll_cq's wc says so to every reader (keep them in step) */
size_t nrr_custom_wc(uint8_t *buf, const void *v, long long ret)
{
	const struct ibv_wc *wc = v;
	uint8_t *p = buf + 1;
	unsigned n = 0;
	for (; wc && n < (ret > 0 ? (unsigned long long)ret : 0) && n < NRR_WC_MAX && ROOM(p, buf, 6 * NRR_VAR_MAX); n++) {
		p = nrr_put_uvar(p, wc[n].wr_id);
		p = nrr_put_uvar(p, (uint64_t)wc[n].status);
		p = nrr_put_uvar(p, (uint64_t)wc[n].opcode);
		p = nrr_put_uvar(p, wc[n].byte_len);
		p = nrr_put_uvar(p, wc[n].imm_data);
		p = nrr_put_uvar(p, wc[n].qp_num);
	}
	buf[0] = (uint8_t)n;
	return (size_t)(p - buf);
}

size_t nrr_custom_qp_attr(uint8_t *buf, const void *v, long long ret)
{
	const struct ibv_qp_attr *a = v;
	uint8_t *p = buf;
	(void)ret;
	if (!a)
		return 0;
	p = nrr_put_uvar(p, (uint64_t)a->qp_state);
	p = nrr_put_uvar(p, a->dest_qp_num);
	p = nrr_put_uvar(p, a->rq_psn);
	p = nrr_put_uvar(p, a->sq_psn);
	p = nrr_put_uvar(p, (uint64_t)a->path_mtu);
	p = nrr_put_uvar(p, a->ah_attr.dlid);
	p = nrr_put_uvar(p, a->ah_attr.port_num);
	p = nrr_put_uvar(p, a->ah_attr.grh.sgid_index);
	p = nrr_put_uvar(p, a->ah_attr.is_global);
	memcpy(p, a->ah_attr.grh.dgid.raw, 16);
	p += 16;
	p = nrr_put_uvar(p, a->timeout);
	p = nrr_put_uvar(p, a->retry_cnt);
	p = nrr_put_uvar(p, a->rnr_retry);
	p = nrr_put_uvar(p, a->max_rd_atomic);
	p = nrr_put_uvar(p, (uint64_t)a->qp_access_flags);
	return (size_t)(p - buf);
}

size_t nrr_custom_qp_init_attr(uint8_t *buf, const void *v, long long ret)
{
	const struct ibv_qp_init_attr *a = v;
	uint8_t *p = buf;
	(void)ret;
	if (!a)
		return 0;
	p = nrr_put_uvar(p, (uint64_t)a->qp_type);
	p = nrr_put_uvar(p, a->cap.max_send_wr);
	p = nrr_put_uvar(p, a->cap.max_recv_wr);
	p = nrr_put_uvar(p, a->cap.max_send_sge);
	p = nrr_put_uvar(p, a->cap.max_recv_sge);
	p = nrr_put_uvar(p, a->cap.max_inline_data);
	p = nrr_put_uvar(p, (uint64_t)a->sq_sig_all);
	p = nrr_put_uvar(p, (uint64_t)(uintptr_t)a->srq);  /* a handle:srq, 0 for none */
	return (size_t)(p - buf);
}

size_t nrr_custom_srq_attr(uint8_t *buf, const void *v, long long ret)
{
	const struct ibv_srq_attr *a = v;
	uint8_t *p = buf;
	(void)ret;
	if (!a)
		return 0;
	p = nrr_put_uvar(p, a->max_wr);
	p = nrr_put_uvar(p, a->max_sge);
	p = nrr_put_uvar(p, a->srq_limit);
	return (size_t)(p - buf);
}

size_t nrr_custom_srq_init_attr(uint8_t *buf, const void *v, long long ret)
{
	const struct ibv_srq_init_attr *a = v;
	return a ? nrr_custom_srq_attr(buf, &a->attr, ret) : 0;
}

/* "result" lines of verbs.api: numbers of the object a call made */
uint64_t nrr_res_qp_num(const void *res)
{
	return ((const struct ibv_qp *)res)->qp_num;
}

uint64_t nrr_res_mr_lkey(const void *res)
{
	return ((const struct ibv_mr *)res)->lkey;
}

uint64_t nrr_res_mr_rkey(const void *res)
{
	return ((const struct ibv_mr *)res)->rkey;
}
#else
/* Built without verbs headers: the calls are recorded, these args empty. */
uint64_t nrr_res_qp_num(const void *res) { (void)res; return 0; }
uint64_t nrr_res_mr_lkey(const void *res) { (void)res; return 0; }
uint64_t nrr_res_mr_rkey(const void *res) { (void)res; return 0; }
size_t nrr_custom_send_wr(uint8_t *buf, const void *v, long long ret) { (void)buf; (void)v; (void)ret; return 0; }
size_t nrr_custom_recv_wr(uint8_t *buf, const void *v, long long ret) { (void)buf; (void)v; (void)ret; return 0; }
size_t nrr_custom_wc(uint8_t *buf, const void *v, long long ret) { (void)buf; (void)v; (void)ret; return 0; }
size_t nrr_custom_qp_attr(uint8_t *buf, const void *v, long long ret) { (void)buf; (void)v; (void)ret; return 0; }
size_t nrr_custom_qp_init_attr(uint8_t *buf, const void *v, long long ret) { (void)buf; (void)v; (void)ret; return 0; }
size_t nrr_custom_srq_attr(uint8_t *buf, const void *v, long long ret) { (void)buf; (void)v; (void)ret; return 0; }
size_t nrr_custom_srq_init_attr(uint8_t *buf, const void *v, long long ret) { (void)buf; (void)v; (void)ret; return 0; }
#endif

size_t nrr_custom_msghdr(uint8_t *buf, const void *v, long long ret)
{
	const struct msghdr *m = v;
	uint8_t *p = buf;
	if (!m)
		return 0;
	uint64_t total = 0;
	for (size_t i = 0; i < m->msg_iovlen && m->msg_iov; i++)
		total += m->msg_iov[i].iov_len;
	/* data length: what was asked for (send) or received (recv, ret) */
	uint64_t len = ret > 0 ? (uint64_t)ret : total;
	p = nrr_put_uvar(p, (uint64_t)m->msg_iovlen);
	p = nrr_put_uvar(p, len);
	size_t head = 0;
	if (m->msg_iovlen && m->msg_iov && m->msg_iov[0].iov_base) {
		head = m->msg_iov[0].iov_len < 64 ? m->msg_iov[0].iov_len : 64;
		if (head > len)
			head = (size_t)len;
	}
	p = nrr_put_uvar(p, head);
	if (head) {
		memcpy(p, m->msg_iov[0].iov_base, head);
		p += head;
	}
	/* passed file descriptors (SCM_RIGHTS): cuMem shareable handles */
	uint8_t *count = p++;
	unsigned nfd = 0;
	if (m->msg_control && m->msg_controllen >= sizeof(struct cmsghdr)) {
		for (struct cmsghdr *c = CMSG_FIRSTHDR((struct msghdr *)m); c; c = CMSG_NXTHDR((struct msghdr *)m, c)) {
			if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
				continue;
			size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (size_t i = 0; i < n && nfd < 16; i++, nfd++) {
				int fd;
				memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
				p = nrr_put_svar(p, fd);
			}
		}
	}
	*count = (uint8_t)nfd;
	/* The address (msg_name): where a datagram sendmsg goes, or the
	 * sender the kernel filled in for recvmsg (msg_namelen on return);
	 * NCCL passes cuMem fds to an abstract-namespace UNIX name this way.
	 * Appended after the fds: records written before it was added end
	 * there, so readers take a missing name as "not recorded". */
	size_t nl = 0;
	if (m->msg_name && !(ret < 0))
		nl = m->msg_namelen < NRR_MSGHDR_NAME_MAX ? m->msg_namelen : NRR_MSGHDR_NAME_MAX;
	if (!ROOM(p, buf, nl + NRR_VAR_MAX))
		nl = 0;
	p = nrr_put_uvar(p, nl);
	if (nl) {
		memcpy(p, m->msg_name, nl);
		p += nl;
	}
	return (size_t)(p - buf);
}

size_t nrr_custom_ifaddrs(uint8_t *buf, const void *v, long long ret)
{
	const struct ifaddrs *const *pp = v;
	uint8_t *p = buf + 1;
	unsigned n = 0;
	if (!pp || ret != 0)
		return 0;
	for (const struct ifaddrs *i = *pp; i && n < 32; i = i->ifa_next) {
		size_t nl = i->ifa_name ? strnlen(i->ifa_name, 32) : 0;
		if (!ROOM(p, buf, nl + 2 * NRR_VAR_MAX + 20))
			break;
		p = nrr_put_uvar(p, nl);
		memcpy(p, i->ifa_name, nl);
		p += nl;
		int fam = i->ifa_addr ? i->ifa_addr->sa_family : 0;
		p = nrr_put_uvar(p, (uint64_t)fam);
		if (fam == AF_INET) {
			memcpy(p, &((const struct sockaddr_in *)(const void *)i->ifa_addr)->sin_addr, 4);
			p += 4;
		} else if (fam == AF_INET6) {
			memcpy(p, &((const struct sockaddr_in6 *)(const void *)i->ifa_addr)->sin6_addr, 16);
			p += 16;
		}
		n++;
	}
	buf[0] = (uint8_t)n;
	return (size_t)(p - buf);
}

size_t nrr_iov_gather(uint8_t *buf, size_t cap, const struct iovec *iov, long cnt, size_t limit)
{
	size_t total = 0, got = 0;
	for (long i = 0; iov && i < cnt && total < limit; i++) {
		size_t n = iov[i].iov_len < limit - total ? iov[i].iov_len : limit - total;
		size_t k = n < cap - got ? n : cap - got;
		if (k && iov[i].iov_base) {
			memcpy(buf + got, iov[i].iov_base, k);
			got += k;
		}
		total += n;
	}
	return total;
}

size_t nrr_custom_mmsghdr(uint8_t *buf, const void *v, long long ret)
{
	const struct mmsghdr *mv = v;
	uint8_t *p = buf + 1;
	unsigned n = 0;
	if (!mv || ret <= 0)
		return 0;
	for (long long i = 0; i < ret && n < 255; i++, n++) {
		const struct msghdr *m = &mv[i].msg_hdr;
		size_t head = 0, nl = 0;
		if (m->msg_iovlen && m->msg_iov && m->msg_iov[0].iov_base)
			head = m->msg_iov[0].iov_len < NRR_MMSG_HEAD ? m->msg_iov[0].iov_len : NRR_MMSG_HEAD;
		if (head > mv[i].msg_len)
			head = mv[i].msg_len;
		if (m->msg_name)
			nl = m->msg_namelen < NRR_MSGHDR_NAME_MAX ? m->msg_namelen : NRR_MSGHDR_NAME_MAX;
		if (!ROOM(p, buf, 3 * NRR_VAR_MAX + head + nl))
			break;
		p = nrr_put_uvar(p, mv[i].msg_len);
		p = nrr_put_uvar(p, head);
		memcpy(p, m->msg_iov[0].iov_base, head);
		p += head;
		p = nrr_put_uvar(p, nl);
		if (nl)
			memcpy(p, m->msg_name, nl);
		p += nl;
	}
	buf[0] = (uint8_t)n;
	return (size_t)(p - buf);
}
