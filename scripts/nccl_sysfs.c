/* SPDX-License-Identifier: MIT */
/*
 * nccl_sysfs.c - linked into NCCL relinked by scripts/nccl.sh, whose
 * objects call the file functions below through it (-Wl,--wrap=SYM).
 * When $NCCLRR_SYSFS names a directory (the sysfs view `ncclrr run`
 * writes for each virtual host from the topology, topo/nrr_sysfs.c), the
 * /sys paths a virtual host has of its own are answered from that
 * directory:
 *   /sys/class/infiniband        the NICs: device links, ports, GIDs
 *   /sys/devices/pci*            the PCI devices those links lead to
 *   /sys/kernel/mm/memory_peers  the peer-memory clients (nv_mem ...)
 *   /sys/module/nvidia_peermem   the peer-memory module
 * (a path absent there is absent: no falling back to this machine's).
 * realpath() results inside the view are given back as /sys/..., as on
 * a real host, so NCCL's later calls on them come back here. Every other
 * path, and every call without $NCCLRR_SYSFS, is the real call's.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *__real_realpath(const char *path, char *resolved);
int __real_open(const char *path, int flags, ...);
int __real_access(const char *path, int mode);
FILE *__real_fopen(const char *path, const char *mode);
DIR *__real_opendir(const char *path);
int __real_stat(const char *path, struct stat *st);
ssize_t __real_readlink(const char *path, char *buf, size_t size);

/* hidden: NCCL's own calls come here, nobody else's */
#define WRAP __attribute__((visibility("hidden")))
WRAP char *__wrap_realpath(const char *path, char *resolved);
WRAP int __wrap_open(const char *path, int flags, ...);
WRAP int __wrap_access(const char *path, int mode);
WRAP FILE *__wrap_fopen(const char *path, const char *mode);
WRAP DIR *__wrap_opendir(const char *path);
WRAP int __wrap_stat(const char *path, struct stat *st);
WRAP ssize_t __wrap_readlink(const char *path, char *buf, size_t size);

static const char *const virtual_dirs[] = {
	"/sys/class/infiniband",
	"/sys/devices/pci",  /* a prefix: pci0000:15 ... */
	"/sys/kernel/mm/memory_peers",
	"/sys/module/nvidia_peermem",
};

static const char *view_root(void)
{
	const char *r = getenv("NCCLRR_SYSFS");
	return r && r[0] == '/' ? r : NULL;
}

/* @path in the view (into @buf) when it is one of the virtual host's;
 * else @path itself */
static const char *map(const char *path, char *buf, size_t size)
{
	const char *root = view_root();
	if (!root || !path || strncmp(path, "/sys/", 5) != 0)
		return path;
	for (size_t i = 0; i < sizeof(virtual_dirs) / sizeof(virtual_dirs[0]); i++) {
		size_t n = strlen(virtual_dirs[i]);
		char end = path[n];
		if (strncmp(path, virtual_dirs[i], n) != 0)
			continue;
		if (end && end != '/' && strcmp(virtual_dirs[i], "/sys/devices/pci") != 0)
			continue;
		if (snprintf(buf, size, "%s%s", root, path + 4) >= (int)size)
			return path;  /* too long for PATH_MAX anyway: the real call says so */
		return buf;
	}
	return path;
}

char *__wrap_realpath(const char *path, char *resolved)
{
	char buf[PATH_MAX];
	const char *p = map(path, buf, sizeof(buf));
	if (p == path)
		return __real_realpath(path, resolved);
	char *r = __real_realpath(p, NULL);
	if (!r)
		return NULL;
	const char *root = view_root();
	size_t n = strlen(root);
	char out[PATH_MAX];
	if (strncmp(r, root, n) == 0 && (r[n] == '/' || r[n] == 0))
		snprintf(out, sizeof(out), "/sys%s", r + n);
	else
		snprintf(out, sizeof(out), "%s", r);
	free(r);
	if (resolved) {
		memcpy(resolved, out, strlen(out) + 1);
		return resolved;
	}
	return strdup(out);
}

int __wrap_open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	if (flags & (O_CREAT | O_TMPFILE)) {
		va_list ap;
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	char buf[PATH_MAX];
	return __real_open(map(path, buf, sizeof(buf)), flags, mode);
}

int __wrap_access(const char *path, int mode)
{
	char buf[PATH_MAX];
	return __real_access(map(path, buf, sizeof(buf)), mode);
}

FILE *__wrap_fopen(const char *path, const char *mode)
{
	char buf[PATH_MAX];
	return __real_fopen(map(path, buf, sizeof(buf)), mode);
}

DIR *__wrap_opendir(const char *path)
{
	char buf[PATH_MAX];
	return __real_opendir(map(path, buf, sizeof(buf)));
}

int __wrap_stat(const char *path, struct stat *st)
{
	char buf[PATH_MAX];
	return __real_stat(map(path, buf, sizeof(buf)), st);
}

ssize_t __wrap_readlink(const char *path, char *lbuf, size_t size)
{
	char buf[PATH_MAX];
	return __real_readlink(map(path, buf, sizeof(buf)), lbuf, size);
}
