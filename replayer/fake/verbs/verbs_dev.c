/* SPDX-License-Identifier: MIT */
/*
 * verbs_dev.c - the fake libibverbs' devices: one per NIC of the process's
 * virtual host (topo/), with ports, GIDs, LIDs, MTU and speed from the
 * topology file, and the cluster-wide address table that modify_qp(RTR)
 * resolves a destination LID or GID against.
 *
 * Addresses (unique per (host, NIC) in the cluster):
 *  - LID = 1 + 32 * host + NIC index within the host (InfiniBand ports;
 *    a RoCE port reports LID 0 as real RoCE ports do, the value is kept
 *    internally as the NIC's fabric key);
 *  - port GUID and GIDs: nrr_topo_nic_addr_of (topo/nrr_topo.h), the rule
 *    the sysfs view of the relinked NCCL shares.
 */
#include "verbs_internal.h"

#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct nv_device *g_devs;
static int g_ndevs;
static pthread_once_t g_devs_once = PTHREAD_ONCE_INIT;

void nv_addr_of(const nrr_topo_nic *nic, int host, int idx, struct nv_addr *a)
{
	memset(a, 0, sizeof(*a));
	a->host = host;
	a->nic = idx;
	a->lid = (uint16_t)(1 + 32 * host + idx);
	a->ethernet = nic->ethernet;
	a->mtu = nic->mtu ? nic->mtu : 4096;
	a->speed = nic->speed;
	nrr_topo_nic_addr ta;
	nrr_topo_nic_addr_of(nic, host, idx, &ta);
	a->guid = ta.guid;
	a->ngids = ta.ngids;
	for (int g = 0; g < ta.ngids; g++) {
		memcpy(a->gid[g].raw, ta.gid[g], 16);
		a->roce_v2[g] = ta.roce_v2[g];
	}
}

static void load_devs(void)
{
	const struct fake_host *h = fake_host();
	if (!h->host)
		return;
	int n = h->host->nnics;
	if (n > NV_MAX_NICS) {
		fake_log("libibverbs: host %s has %d NICs; the fake fabric addresses at most %d per host",
			 h->host->name, n, NV_MAX_NICS);
		n = NV_MAX_NICS;
	}
	g_devs = calloc((size_t)n + 1, sizeof(*g_devs));
	if (!g_devs)
		return;
	for (int i = 0; i < n; i++) {
		struct nv_device *d = &g_devs[i];
		const nrr_topo_nic *nic = &h->host->nics[i];
		d->dev.node_type = IBV_NODE_CA;
		d->dev.transport_type = IBV_TRANSPORT_IB;
		snprintf(d->dev.name, sizeof(d->dev.name), "%s", nic->name);
		snprintf(d->dev.dev_name, sizeof(d->dev.dev_name), "uverbs%d", i);
		snprintf(d->dev.dev_path, sizeof(d->dev.dev_path),
			 "/sys/class/infiniband_verbs/uverbs%d", i);
		snprintf(d->dev.ibdev_path, sizeof(d->dev.ibdev_path), "/sys/class/infiniband/%s",
			 nic->name);
		d->nic = nic;
		nv_addr_of(nic, h->host_index, i, &d->addr);
	}
	g_ndevs = n;
}

int nv_devices(struct nv_device **devs)
{
	pthread_once(&g_devs_once, load_devs);
	*devs = g_devs;
	return g_ndevs;
}

/* ---- the cluster's addresses (every host's NICs) ------------------------ */
static struct nv_addr *g_addrs;
static int g_naddrs;
static pthread_once_t g_addrs_once = PTHREAD_ONCE_INIT;

static void add_host(const nrr_topo_host *hh, int hi, int *cap)
{
	for (int i = 0; i < hh->nnics && i < NV_MAX_NICS; i++) {
		if (g_naddrs == *cap) {
			int nc = *cap ? *cap * 2 : 64;
			struct nv_addr *na = realloc(g_addrs, (size_t)nc * sizeof(*na));
			if (!na)
				return;
			g_addrs = na;
			*cap = nc;
		}
		nv_addr_of(&hh->nics[i], hi, i, &g_addrs[g_naddrs++]);
	}
}

static void load_addrs(void)
{
	const struct fake_host *h = fake_host();
	if (!h->topo)
		return;
	int cap = 0;
	if (h->topo->only_host < 0) {
		for (int i = 0; i < h->topo->nhosts; i++)
			add_host(&h->topo->hosts[i], i, &cap);
		return;
	}
	/* the process read its own host only: read the others now, once */
	for (int i = 0; i < h->topo->nhosts; i++) {
		if (i == h->host_index) {
			add_host(h->host, i, &cap);
			continue;
		}
		nrr_topo *t = NULL;
		char err[512];
		if (nrr_topo_load_host(h->topo->path, i, &t, err, sizeof(err)) < 0) {
			fake_log("libibverbs: reading the addresses of host %d: %s", i, err);
			continue;
		}
		if (i < t->nhosts)
			add_host(&t->hosts[i], i, &cap);
		nrr_topo_free(t);
	}
}

/* a GID names one NIC: two NICs of the cluster with one GUID make GID 0
 * ambiguous (the first is reached), which the topology should not do */
static void check_guids(void)
{
	for (int i = 0; i < g_naddrs; i++)
		for (int j = i + 1; j < g_naddrs; j++)
			if (g_addrs[i].guid == g_addrs[j].guid) {
				fake_log("libibverbs: %s: host %d NIC %d and host %d NIC %d have the same guid "
					 "0x%016llx: their GID 0 is one; give each <net> its own guid=",
					 fake_host()->topo->path, g_addrs[i].host, g_addrs[i].nic, g_addrs[j].host,
					 g_addrs[j].nic, (unsigned long long)g_addrs[i].guid);
				return;
			}
}

static void load_all(void)
{
	load_addrs();
	check_guids();
}

const struct nv_addr *nv_resolve(const struct ibv_ah_attr *ah, int ethernet)
{
	pthread_once(&g_addrs_once, load_all);
	for (int i = 0; i < g_naddrs; i++) {
		const struct nv_addr *a = &g_addrs[i];
		if (a->ethernet != ethernet)
			continue;
		if (ah->is_global) {
			for (int g = 0; g < a->ngids; g++)
				if (memcmp(a->gid[g].raw, ah->grh.dgid.raw, 16) == 0)
					return a;
		} else if (!ethernet && a->lid == ah->dlid) {
			return a;
		}
	}
	return NULL;
}

/* ---- device list and attributes ----------------------------------------- */
FAKE_EXPORT struct ibv_device **ibv_get_device_list(int *num)
{
	NV_COUNT_PTR(ibv_get_device_list);
	struct nv_device *devs;
	int n = nv_devices(&devs);
	struct ibv_device **l = calloc((size_t)n + 1, sizeof(*l));
	if (!l) {
		errno = ENOMEM;
		return NULL;
	}
	for (int i = 0; i < n; i++)
		l[i] = &devs[i].dev;
	if (num)
		*num = n;
	return l;
}

FAKE_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
	NV_COUNT_ONLY("ibv_free_device_list");
	free(list);
}

struct nv_device *nv_device(struct ibv_device *d)
{
	struct nv_device *devs;
	int n = nv_devices(&devs);
	for (int i = 0; i < n; i++)
		if (d == &devs[i].dev)
			return &devs[i];
	return NULL;
}

FAKE_EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
	NV_COUNT_ONLY("ibv_get_device_name");
	struct nv_device *d = nv_device(device);
	if (!d) {
		errno = EINVAL;
		return NULL;
	}
	return d->dev.name;
}

FAKE_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
	NV_COUNT_ONLY("ibv_get_device_guid");
	struct nv_device *d = nv_device(device);
	return d ? htobe64(d->addr.guid) : 0;
}

FAKE_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
	struct nv_device *d = nv_device(device);
	return d ? (int)(d - g_devs) : -1;
}

void nv_fill_device_attr(const struct nv_device *d, struct ibv_device_attr *a)
{
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "28.39.1002");
	a->node_guid = htobe64(d->addr.guid);
	a->sys_image_guid = htobe64(d->addr.guid);
	a->max_mr_size = ~0ull;
	a->page_size_cap = 0xfffffffffffff000ull;
	a->vendor_id = 0x02c9;
	a->vendor_part_id = 4129; /* ConnectX-7 */
	a->max_qp = NV_MAX_QPN;
	a->max_qp_wr = NV_MAX_WR;
	a->max_srq = NV_MAX_QPN;
	a->max_srq_wr = NV_MAX_WR;
	a->max_srq_sge = NV_MAX_SGE;
	a->device_cap_flags = IBV_DEVICE_PORT_ACTIVE_EVENT | IBV_DEVICE_RC_RNR_NAK_GEN |
			      IBV_DEVICE_SYS_IMAGE_GUID | IBV_DEVICE_CHANGE_PHY_PORT;
	a->max_sge = NV_MAX_SGE;
	a->max_sge_rd = NV_MAX_SGE;
	a->max_cq = 1 << 24;
	a->max_cqe = NV_MAX_CQE;
	a->max_mr = 1 << 24;
	a->max_pd = 1 << 24;
	a->max_qp_rd_atom = 16;
	a->max_qp_init_rd_atom = 16;
	a->max_res_rd_atom = 16 * NV_MAX_QPN;
	a->atomic_cap = IBV_ATOMIC_NONE;
	a->max_pkeys = 1;
	a->local_ca_ack_delay = 16;
	a->phys_port_cnt = 1;
}

/* IB per-lane signalling rates (ibv_port_attr.active_speed) in Gb/s */
static const struct { int gbps; uint8_t code; } lane_rates[] = {
	{ 2, 1 }, { 5, 2 }, { 10, 4 }, { 14, 16 }, { 25, 32 }, { 50, 64 }, { 100, 128 },
};

void nv_fill_port_attr(const struct nv_device *d, struct ibv_port_attr *p)
{
	memset(p, 0, sizeof(*p));
	p->state = IBV_PORT_ACTIVE;
	p->max_mtu = IBV_MTU_4096;
	p->active_mtu = nv_mtu_enum(d->addr.mtu);
	p->gid_tbl_len = d->addr.ngids;
	p->port_cap_flags = d->addr.ethernet ? 0x04010000u /* CM, IP-based GIDs */
					     : 0x0251086au; /* IB HCA port as mlx5 reports */
	p->max_msg_sz = 1u << 30;
	p->bad_pkey_cntr = 0;
	p->qkey_viol_cntr = 0;
	p->pkey_tbl_len = 1;
	p->lid = d->addr.ethernet ? 0 : d->addr.lid;
	p->sm_lid = d->addr.ethernet ? 0 : 1;
	p->lmc = 0;
	p->max_vl_num = 4;
	p->sm_sl = 0;
	p->subnet_timeout = 18;
	p->init_type_reply = 0;
	p->active_width = 2; /* 4X */
	int lane = d->addr.speed / 4000;
	p->active_speed = 1;
	for (size_t i = 0; i < sizeof(lane_rates) / sizeof(lane_rates[0]); i++)
		if (lane >= lane_rates[i].gbps)
			p->active_speed = lane_rates[i].code;
	p->phys_state = 5; /* LinkUp */
	p->link_layer = d->addr.ethernet ? IBV_LINK_LAYER_ETHERNET : IBV_LINK_LAYER_INFINIBAND;
}

enum ibv_mtu nv_mtu_enum(int bytes)
{
	switch (bytes) {
	case 256: return IBV_MTU_256;
	case 512: return IBV_MTU_512;
	case 1024: return IBV_MTU_1024;
	case 2048: return IBV_MTU_2048;
	default: return IBV_MTU_4096;
	}
}

/* ---- sysfs: the few files of a device that ibv_devinfo reads ------------ */
FAKE_EXPORT int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	struct nv_device *devs;
	int n = nv_devices(&devs);
	for (int i = 0; i < n && dir && file; i++) {
		if (strcmp(dir, devs[i].dev.ibdev_path) != 0)
			continue;
		const char *v = NULL;
		char tmp[160];
		if (!strcmp(file, "board_id")) {
			v = "MT_0000000838";
		} else if (!strcmp(file, "node_desc")) {
			snprintf(tmp, sizeof(tmp), "%s %s", fake_host()->host->name, devs[i].dev.name);
			v = tmp;
		} else if (!strcmp(file, "fw_ver")) {
			v = "28.39.1002";
		}
		if (!v) {
			errno = ENOENT;
			return -1;
		}
		int len = snprintf(buf, size, "%s", v);
		return len < (int)size ? len : (int)size - 1;
	}
	/* not one of ours: the real file, as libibverbs reads it */
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir ? dir : "", file ? file : "");
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t len = fread(buf, 1, size ? size - 1 : 0, f);
	fclose(f);
	if (size)
		buf[len] = 0;
	if (len && buf[len - 1] == '\n')
		buf[--len] = 0;
	return (int)len;
}

FAKE_EXPORT int ibv_get_sysfs_path(char *buf, size_t size)
{
	int len = snprintf(buf, size, "/sys");
	return len < (int)size ? 0 : -1;
}
