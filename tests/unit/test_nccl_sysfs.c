/* SPDX-License-Identifier: MIT */
/*
 * test_nccl_sysfs.c - a virtual host's sysfs view (topo/nrr_sysfs.c, as
 * `ncclrr run` writes it) read through the shim the relinked NCCL has
 * (scripts/nccl_sysfs.c): this program is linked with the same
 * -Wl,--wrap=SYM list as NCCL (scripts/nccl_sysfs.wrap), so its libc file
 * calls are NCCL's. What NCCL's NET/IB asks: realpath of a NIC's device
 * link, a GID's RoCE type, the peer-memory client files.
 * usage: test_nccl_sysfs TOPO_DIR
 */
/* NCCL's objects call open, fopen, stat (nm -u), not their 64-bit names
 * that meson's -D_FILE_OFFSET_BITS=64 would make these calls */
#undef _FILE_OFFSET_BITS
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "nrr_topo.h"

static char *slurp(const char *path)
{
	static char buf[256];
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return NULL;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return buf;
}

static char *view(const char *topo_dir, const char *file, int host, char *tmp)
{
	char path[PATH_MAX], err[512];
	nrr_topo *t = NULL;
	snprintf(path, sizeof(path), "%s/%s", topo_dir, file);
	CHECK_FATAL(nrr_topo_load(path, &t, err, sizeof(err)) == 0, "%s", err);
	static char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/%s.host%d", tmp, file, host);
	CHECK_FATAL(nrr_topo_write_host_sysfs(t, host, dir, err, sizeof(err)) == 0, "%s", err);
	/* written once: a second write is refused, naming the directory */
	CHECK(nrr_topo_write_host_sysfs(t, host, dir, err, sizeof(err)) == -EEXIST && strstr(err, dir),
	      "writing %s again: %s", dir, err);
	nrr_topo_free(t);
	return dir;
}

int main(int argc, char **argv)
{
	CHECK_FATAL(argc == 2, "usage: test_nccl_sysfs TOPO_DIR");
	char tmp[] = "/tmp/test_nccl_sysfs.XXXXXX";
	CHECK_FATAL(mkdtemp(tmp), "mkdtemp: %s", strerror(errno));
	char *p;

	/* InfiniBand: host 1 of 2node_16gpu, mlx5_3 behind its PCIe switch */
	setenv("NCCLRR_SYSFS", view(argv[1], "2node_16gpu.xml", 1, tmp), 1);
	p = realpath("/sys/class/infiniband/mlx5_3/device", NULL);
	CHECK(p && strcmp(p, "/sys/devices/pci0001:5a/0001:5a:00.0/0001:5b:00.0") == 0,
	      "mlx5_3's PCI path, as on a real host: %s", p ? p : strerror(errno));
	char resolved[PATH_MAX];
	CHECK(realpath("/sys/class/infiniband/mlx5_3/device/..", resolved) == resolved &&
		      strcmp(resolved, "/sys/devices/pci0001:5a/0001:5a:00.0") == 0,
	      "its parent (the switch) into a caller's buffer: %s", resolved);
	/* NCCL opens what realpath gave: it comes back to the view */
	char f[PATH_MAX + 16];
	snprintf(f, sizeof(f), "%s/vendor", p ? p : "");
	FILE *fp = fopen(f, "r");
	char line[64] = "";
	CHECK(fp && fgets(line, sizeof(line), fp) && strcmp(line, "0x15b3\n") == 0, "%s: %s", f, line);
	if (fp)
		fclose(fp);
	free(p);
	p = slurp("/sys/class/infiniband/mlx5_3/ports/1/link_layer");
	CHECK(p && strcmp(p, "InfiniBand\n") == 0, "link_layer: %s", p ? p : strerror(errno));
	p = slurp("/sys/class/infiniband/mlx5_3/ports/1/gids/0");
	CHECK(p && strncmp(p, "fe80:0000:0000:0000:", 20) == 0 && strlen(p) == 40, "GID 0: %s", p);
	p = slurp("/sys/class/infiniband/mlx5_3/ports/1/gid_attrs/types/0");
	CHECK(p && strcmp(p, "IB/RoCE v1\n") == 0, "IB GID type: %s", p);
	CHECK(access("/sys/class/infiniband/mlx5_3/ports/1/gids/1", F_OK) < 0 && errno == ENOENT,
	      "an IB port has one GID");
	struct stat st;
	CHECK(stat("/sys/class/infiniband/mlx5_7", &st) == 0 && S_ISDIR(st.st_mode), "mlx5_7 is there");
	CHECK(access("/sys/class/infiniband/mlx5_8", F_OK) < 0 && errno == ENOENT, "no mlx5_8");
	DIR *d = opendir("/sys/class/infiniband");
	int n = 0;
	for (struct dirent *de; d && (de = readdir(d));)
		n += strncmp(de->d_name, "mlx5_", 5) == 0;
	if (d)
		closedir(d);
	CHECK(n == 8, "8 NICs listed under /sys/class/infiniband (got %d)", n);
	char lnk[PATH_MAX];
	ssize_t ln = readlink("/sys/class/infiniband/mlx5_0/device", lnk, sizeof(lnk) - 1);
	lnk[ln > 0 ? ln : 0] = 0;
	CHECK(strcmp(lnk, "../../../devices/pci0001:15/0001:15:00.0/0001:16:00.0") == 0, "link: %s", lnk);
	/* no peer-memory client: GPUDirect RDMA is dma-buf's only */
	CHECK(access("/sys/kernel/mm/memory_peers/nv_mem/version", F_OK) < 0 && errno == ENOENT,
	      "no nv_mem peer-memory client");
	/* what the view does not cover is this machine's */
	CHECK(access("/sys/devices/system/cpu", F_OK) == 0, "/sys/devices/system is the real one");
	CHECK(access("/proc/self/status", R_OK) == 0, "other paths pass");
	/* the view holds only what it says: no real /sys/devices/pci* */
	CHECK(realpath("/sys/devices/pci0000:00", resolved) == NULL && errno == ENOENT,
	      "/sys/devices/pci0000:00 is not this machine's inside the view");

	/* RoCE: GID 0 IB/RoCE v1 (fe80::), GID 1 RoCE v2 (::ffff:10.0.1.2 for
	 * NIC 1 of host 1), the types NCCL's automatic GID choice reads */
	setenv("NCCLRR_SYSFS", view(argv[1], "2node_8gpu_roce.xml", 1, tmp), 1);
	p = slurp("/sys/class/infiniband/mlx5_1/ports/1/link_layer");
	CHECK(p && strcmp(p, "Ethernet\n") == 0, "RoCE link_layer: %s", p);
	p = slurp("/sys/class/infiniband/mlx5_1/ports/1/gid_attrs/types/1");
	CHECK(p && strcmp(p, "RoCE v2\n") == 0, "GID 1 type: %s", p);
	p = slurp("/sys/class/infiniband/mlx5_1/ports/1/gids/1");
	CHECK(p && strcmp(p, "0000:0000:0000:0000:0000:ffff:0a00:0102\n") == 0, "GID 1: %s", p);
	p = slurp("/sys/class/infiniband/mlx5_1/ports/1/gid_attrs/types/0");
	CHECK(p && strcmp(p, "IB/RoCE v1\n") == 0, "GID 0 type: %s", p);

	/* without NCCLRR_SYSFS every call is the real one: no infiniband here */
	unsetenv("NCCLRR_SYSFS");
	errno = 0;
	p = realpath("/sys/class/infiniband/mlx5_1/device", NULL);
	CHECK(!p || strncmp(p, "/sys/", 5) == 0, "the machine's own /sys without NCCLRR_SYSFS");
	free(p);
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	CHECK(system(cmd) == 0, "%s", cmd);
	return check_done("nccl_sysfs");
}
