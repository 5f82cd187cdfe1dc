/* SPDX-License-Identifier: MIT */
/*
 * nrr_sysfs.c - a virtual host's NICs as sysfs shows them: the files NCCL's
 * NET/IB reads under /sys/class/infiniband and the PCI device directories
 * their `device` links lead to, written from the topology. The relinked
 * NCCL answers /sys paths from this tree when $NCCLRR_SYSFS names it
 * (scripts/nccl_sysfs.c); the fake libibverbs answers the same addresses
 * through verbs (nrr_topo_nic_addr_of is the one rule for both).
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nrr_topo.h"

void nrr_topo_nic_addr_of(const nrr_topo_nic *nic, int host, int idx, nrr_topo_nic_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (nic->guid[0]) {
		char *end;
		unsigned long long g = strtoull(nic->guid, &end, 16);
		if (*end == 0 && g)
			a->guid = g;
	}
	if (!a->guid)
		a->guid = 0x0002c90300000000ull | ((uint64_t)host << 8) | (uint64_t)idx;
	a->gid[0][0] = 0xfe;
	a->gid[0][1] = 0x80;
	uint64_t be = htobe64(a->guid);
	memcpy(&a->gid[0][8], &be, 8);
	a->ngids = 1;
	if (nic->ethernet) {
		a->gid[1][10] = 0xff;
		a->gid[1][11] = 0xff;
		a->gid[1][12] = 10;
		a->gid[1][13] = (uint8_t)(host >> 8);
		a->gid[1][14] = (uint8_t)host;
		a->gid[1][15] = (uint8_t)(idx + 1);
		a->roce_v2[1] = 1;
		a->ngids = 2;
	}
}

struct sw {
	char *err;
	size_t errlen;
};

static int sw_fail(struct sw *w, int e, const char *path, const char *what)
{
	snprintf(w->err, w->errlen, "%s: cannot %s: %s", path, what, strerror(e));
	return -e;
}

/* mkdir -p of @path (its components below an existing directory) */
static int mkdirs(struct sw *w, const char *path)
{
	char p[4096];
	if (snprintf(p, sizeof(p), "%s", path) >= (int)sizeof(p))
		return sw_fail(w, ENAMETOOLONG, path, "create");
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			return sw_fail(w, errno, p, "create directory");
		*s = '/';
	}
	if (mkdir(p, 0755) < 0 && errno != EEXIST)
		return sw_fail(w, errno, p, "create directory");
	return 0;
}

static int put_file(struct sw *w, const char *text, const char *fmt, ...)
{
	char p[4096];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(p, sizeof(p), fmt, ap);
	va_end(ap);
	if (n < 0 || n >= (int)sizeof(p))
		return sw_fail(w, ENAMETOOLONG, p, "create");
	char *slash = strrchr(p, '/');
	*slash = 0;
	int rc = mkdirs(w, p);
	*slash = '/';
	if (rc < 0)
		return rc;
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return sw_fail(w, errno, p, "create");
	size_t len = strlen(text);
	ssize_t wr = write(fd, text, len);
	int e = errno;
	close(fd);
	if (wr != (ssize_t)len)
		return sw_fail(w, wr < 0 ? e : EIO, p, "write");
	return 0;
}

/* devices/<path>/ for every <pci> of the host, with the attribute files
 * sysfs has for them */
static int write_pci(struct sw *w, const char *dir, const struct nrr_xml_node *n, const char *path)
{
	char sub[2048];
	int rc;
	if (strcmp(n->name, "pci") == 0) {
		char b[32];
		if (nrr_topo_norm_busid(nrr_xml_attr(n, "busid"), b, sizeof(b)) < 0)
			return sw_fail(w, EINVAL, dir, "write a <pci> without a valid busid");
		int len = *path ? snprintf(sub, sizeof(sub), "%s/%s", path, b)
				: snprintf(sub, sizeof(sub), "pci%.7s/%s", b, b);
		if (len < 0 || len >= (int)sizeof(sub))
			return sw_fail(w, ENAMETOOLONG, dir, "write the PCI path");
		static const char *const attrs[] = { "class", "vendor", "device", "subsystem_vendor",
						     "subsystem_device", "link_width" };
		for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
			const char *v = nrr_xml_attr(n, attrs[i]);
			char line[128];
			if (!v)
				continue;
			snprintf(line, sizeof(line), "%s\n", v);
			if ((rc = put_file(w, line, "%s/devices/%s/%s", dir, sub, attrs[i])) < 0)
				return rc;
		}
		/* sysfs spells the link speed "32.0 GT/s PCIe" as the XML does */
		const char *speed = nrr_xml_attr(n, "link_speed");
		if (speed) {
			char line[128];
			snprintf(line, sizeof(line), "%s\n", speed);
			if ((rc = put_file(w, line, "%s/devices/%s/max_link_speed", dir, sub)) < 0 ||
			    (rc = put_file(w, line, "%s/devices/%s/current_link_speed", dir, sub)) < 0)
				return rc;
		}
		path = sub;
	}
	for (int i = 0; i < n->nchildren; i++)
		if ((rc = write_pci(w, dir, n->children[i], path)) < 0)
			return rc;
	return 0;
}

static void gid_text(const uint8_t g[16], char *out)
{
	/* sysfs writes all eight groups, zero-padded: fe80:0000:...:5d16 */
	for (int i = 0; i < 8; i++)
		sprintf(out + 5 * i, "%02x%02x%s", g[2 * i], g[2 * i + 1], i < 7 ? ":" : "\n");
}

int nrr_topo_write_host_sysfs(const nrr_topo *t, int host, const char *dir, char *err, size_t errlen)
{
	struct sw w = { err, errlen };
	if (!t || host < 0 || host >= t->nhosts) {
		snprintf(err, errlen, "no host %d in the topology", host);
		return -EINVAL;
	}
	const nrr_topo_host *h = &t->hosts[host];
	int rc;
	if (mkdir(dir, 0755) < 0)
		return sw_fail(&w, errno, dir, "create directory");
	if ((h->system && (rc = write_pci(&w, dir, h->system, "")) < 0))
		return rc;
	char p[4096];
	if (snprintf(p, sizeof(p), "%s/class/infiniband", dir) >= (int)sizeof(p))
		return sw_fail(&w, ENAMETOOLONG, dir, "create");
	if ((rc = mkdirs(&w, p)) < 0)
		return rc;
	for (int i = 0; i < h->nnics; i++) {
		const nrr_topo_nic *nic = &h->nics[i];
		if ((rc = put_file(&w, nic->ethernet ? "Ethernet\n" : "InfiniBand\n",
				   "%s/class/infiniband/%s/ports/1/link_layer", dir, nic->name)) < 0)
			return rc;
		nrr_topo_nic_addr a;
		nrr_topo_nic_addr_of(nic, host, i, &a);
		for (int g = 0; g < a.ngids; g++) {
			char text[48];
			gid_text(a.gid[g], text);
			if ((rc = put_file(&w, text, "%s/class/infiniband/%s/ports/1/gids/%d", dir, nic->name,
					   g)) < 0 ||
			    (rc = put_file(&w, a.roce_v2[g] ? "RoCE v2\n" : "IB/RoCE v1\n",
					   "%s/class/infiniband/%s/ports/1/gid_attrs/types/%d", dir,
					   nic->name, g)) < 0)
				return rc;
		}
		if (!nic->pci_path[0])
			continue;  /* a <net> outside any <pci>: no device link, as
				    * for a NIC sysfs cannot place */
		char target[512], link[4096];
		snprintf(target, sizeof(target), "../../../devices/%s", nic->pci_path);
		if (snprintf(link, sizeof(link), "%s/class/infiniband/%s/device", dir, nic->name) >=
		    (int)sizeof(link))
			return sw_fail(&w, ENAMETOOLONG, dir, "create");
		if (symlink(target, link) < 0)
			return sw_fail(&w, errno, link, "create link");
	}
	return 0;
}
