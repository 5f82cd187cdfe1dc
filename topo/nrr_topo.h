/* SPDX-License-Identifier: MIT */
/*
 * nrr_topo.h - virtual cluster topology files (see topo/README.md).
 *
 * A cluster file wraps one NCCL topology XML <system> element per virtual
 * host:
 *
 *   <cluster name="2node_16gpu">
 *     <host name="node0"> <system version="1"> ... </system> </host>
 *     <host name="node1"> ... </host>
 *   </cluster>
 *
 * nrr_topo_load() parses the file with a small strict XML reader, keeps
 * each host's <system> subtree as an element tree, and extracts the GPUs
 * (bus id, sm, NVLink peers) and NICs the fake CUDA driver and NVML answer
 * from. nrr_topo_write_host_xml() writes one host's <system> element as the
 * standalone file NCCL loads through NCCL_TOPO_FILE.
 *
 * Errors: functions return 0 or a negative errno; @err receives
 * "file:line: what is wrong" (always NUL-terminated when errlen > 0).
 */
#ifndef NRR_TOPO_H
#define NRR_TOPO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NRR_TOPO_MAX_NVLINKS 32

/* ---- generic element tree (the <system> subtree, kept verbatim) ------- */
struct nrr_xml_attr {
	char *name;
	char *value;
};

struct nrr_xml_node {
	char *name;
	int line;                       /* line of the start tag */
	int nattrs;
	struct nrr_xml_attr *attrs;
	int nchildren;
	struct nrr_xml_node **children;
	struct nrr_xml_node *parent;
};

/* Value of attribute @name of @n, or NULL. */
const char *nrr_xml_attr(const struct nrr_xml_node *n, const char *name);

/* ---- what the fake runtime needs -------------------------------------- */
typedef struct nrr_topo_nvlink {
	char target[32];                /* remote PCI bus id, normalised (lower case,
	                                 * "0000:xx:yy.z") */
	int count;                      /* number of links */
	unsigned tclass;                /* class of the target: 0x030200 GPU,
	                                 * 0x068000 NVSwitch, 0x060400 CPU */
	int peer_gpu;                   /* index into host->gpus, or -1 */
} nrr_topo_nvlink;

typedef struct nrr_topo_gpu {
	int dev;                        /* CUDA device index on the host (gpu dev=) */
	char busid[32];                 /* "0000:18:00.0", normalised (lower case) */
	int domain, bus, device, function;
	int sm;                         /* compute capability * 10 (90 = 9.0) */
	int rank;                       /* gpu rank= attribute, -1 if absent */
	int gdr;
	int numa;                       /* numaid of the enclosing <cpu>, -1 */
	char cpu_affinity[160];         /* affinity= of the enclosing <cpu> (hex mask) */
	uint8_t uuid[16];               /* unique per (cluster, host, gpu) */
	int nnvlinks;
	nrr_topo_nvlink nvlinks[NRR_TOPO_MAX_NVLINKS];
	int nvlink_total;               /* sum of nvlinks[].count */
	char pci_device_id[16];         /* device= of the enclosing <pci>, e.g. 0x2330 */
} nrr_topo_gpu;

typedef struct nrr_topo_nic {
	char name[64];                  /* net name= (e.g. "mlx5_0") */
	int dev;                        /* net dev= */
	int speed;                      /* Mb/s */
	int port;
	char guid[32];
	int gdr;
	char busid[32];                 /* enclosing <pci busid>, "" if none */
	int ethernet;                   /* link_layer="Ethernet" (RoCE); default
	                                 * "InfiniBand" (the fake libibverbs) */
	int mtu;                        /* mtu= active MTU in bytes, 256..4096
	                                 * (a power of two); default 4096 */
	char pci_path[256];             /* its sysfs device directory under
	                                 * /sys/devices: "pci0000:15/0000:15:00.0/
	                                 * 0000:16:00.0", the enclosing <pci>
	                                 * busids outermost first ("" if none) */
} nrr_topo_nic;

/* A NIC's fabric addresses, one rule for the fake libibverbs and the
 * sysfs view (nrr_sysfs.c):
 *  - port GUID: guid= of the <net>, else 0x0002c903_0000HHII (host, index);
 *  - GID 0 = fe80::/64 + the port GUID (IB GID, or RoCE v1 on Ethernet);
 *  - Ethernet (RoCE) only: GID 1 = ::ffff:10.H.H.(i+1), RoCE v2 over IPv4,
 *    with H the host index in two bytes and i the NIC index. */
#define NRR_TOPO_MAX_GIDS 2
typedef struct nrr_topo_nic_addr {
	uint64_t guid;
	int ngids;
	uint8_t gid[NRR_TOPO_MAX_GIDS][16];
	int roce_v2[NRR_TOPO_MAX_GIDS];  /* 1: "RoCE v2", 0: "IB/RoCE v1" */
} nrr_topo_nic_addr;
void nrr_topo_nic_addr_of(const nrr_topo_nic *nic, int host, int idx, nrr_topo_nic_addr *a);

typedef struct nrr_topo_host {
	char name[64];
	int line;                       /* line of <host> */
	long long memlock;              /* memlock= RLIMIT_MEMLOCK its processes
	                                 * get, bytes; -1: unlimited (default) */
	int ngpus;
	nrr_topo_gpu *gpus;             /* sorted by dev */
	int nnics;
	nrr_topo_nic *nics;
	struct nrr_xml_node *system;    /* the host's <system> element */
} nrr_topo_host;

typedef struct nrr_topo {
	char name[64];
	char path[512];
	int nhosts;
	nrr_topo_host *hosts;
	struct nrr_xml_node *root;      /* <cluster> */
	int only_host;                  /* nrr_topo_load_host: the host read in
	                                 * full; the others have their name
	                                 * and line only (-1: all read) */
} nrr_topo;

/* Parse cluster file @path into *@out (free with nrr_topo_free).
 * A file whose root is a bare <system> is accepted as a one-host cluster.
 * @return 0, or -errno (-EINVAL for malformed content, -ENOENT, -ENOMEM...)
 * with "file:line: what is wrong" in @err. */
int nrr_topo_load(const char *path, nrr_topo **out, char *err, size_t errlen);

/* Only host @host of the cluster read in full (the others' names and
 * lines are kept, their content passed over unchecked: a process of the
 * virtual cluster needs its own host, and a 512-host file costs it 3 MB
 * less and 200 ms less than a full load).  A @host past the last leaves
 * nhosts to say so.  A bare <system> is read in full. */
int nrr_topo_load_host(const char *path, int host, nrr_topo **out, char *err, size_t errlen);

/* Same as nrr_topo_load, from a buffer; @name is used in messages in place of a path. */
int nrr_topo_load_buffer(const char *name, const char *buf, size_t len, nrr_topo **out,
			 char *err, size_t errlen);
int nrr_topo_load_host_buffer(const char *name, const char *buf, size_t len, int host, nrr_topo **out,
			      char *err, size_t errlen);

/* Write host @host's <system> element as a standalone NCCL topology file
 * (NCCL_TOPO_FILE) at @path (written to a temporary then renamed).
 * @return 0 or -errno with the reason in @err. */
int nrr_topo_write_host_xml(const nrr_topo *t, int host, const char *path, char *err,
			    size_t errlen);

/* Write host @host's sysfs view into directory @dir (created: it must not
 * exist yet), the files NCCL reads for its IB NICs, which the
 * relinked NCCL answers from $NCCLRR_SYSFS (scripts/nccl_sysfs.c):
 *   class/infiniband/DEV/device -> ../../../devices/<nic pci_path>
 *   class/infiniband/DEV/ports/1/{link_layer,gids/N,gid_attrs/types/N}
 *   devices/<pci_path>/{vendor,device,class} of each enclosing <pci>
 * and no kernel/mm/memory_peers (no peermem: GPUDirect RDMA is dma-buf's).
 * @return 0 or -errno with the path and reason in @err. */
int nrr_topo_write_host_sysfs(const nrr_topo *t, int host, const char *dir, char *err,
			      size_t errlen);

/* Same into a malloc'ed NUL-terminated string (*@out, free()). */
int nrr_topo_host_xml_string(const nrr_topo *t, int host, char **out, size_t *len);

void nrr_topo_free(nrr_topo *t);

/* Convenience accessors (NULL-safe). */
int nrr_topo_nhosts(const nrr_topo *t);
/* GPUs per host: the smallest host's count (all shipped files are uniform). */
int nrr_topo_gpus_per_host(const nrr_topo *t);
const char *nrr_topo_host_name(const nrr_topo *t, int host);

/* The built-in default: one host "node0" with 8 H100-like GPUs on NVSwitch
 * (the fake runtime uses it when NCCLRR_TOPO is unset). */
int nrr_topo_default(nrr_topo **out, char *err, size_t errlen);

/* Normalise a PCI bus id ("18:00.0", "00000000:18:00.0", "0000:18:00.0")
 * to "0000:18:00.0" lower case in @out (size >= 13). @return 0 or -EINVAL. */
int nrr_topo_norm_busid(const char *in, char *out, size_t outlen);

#ifdef __cplusplus
}
#endif
#endif
