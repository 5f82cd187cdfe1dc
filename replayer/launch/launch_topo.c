/* SPDX-License-Identifier: MIT */
/* launch_topo.c - the cluster as the launcher sees it, from topo/'s parser,
 * and the copy of it a recorded run keeps. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nrr_launch.h"
#include "nrr_topo.h"
#include "rundir.h"

static int write_host(void *ctx, int host, const char *path, char *err, size_t errsize)
{
	return nrr_topo_write_host_xml(ctx, host, path, err, errsize);
}

static int write_sysfs(void *ctx, int host, const char *dir, char *err, size_t errsize)
{
	return nrr_topo_write_host_sysfs(ctx, host, dir, err, errsize);
}

int nrr_cluster_load(struct nrr_cluster *c, const char *path, char *err, size_t errsize)
{
	memset(c, 0, sizeof(*c));
	struct nrr_topo *t = NULL;
	int rc = nrr_topo_load(path, &t, err, errsize);
	if (rc < 0)
		return rc;
	c->nhosts = nrr_topo_nhosts(t);
	c->gpus_per_host = nrr_topo_gpus_per_host(t);
	c->host_names = calloc((size_t)(c->nhosts > 0 ? c->nhosts : 1), sizeof(char *));
	if (!c->host_names) {
		nrr_topo_free(t);
		snprintf(err, errsize, "out of memory");
		return -ENOMEM;
	}
	for (int h = 0; h < c->nhosts; h++) {
		const char *name = nrr_topo_host_name(t, h);
		char def[32];
		snprintf(def, sizeof(def), "host%d", h);
		c->host_names[h] = strdup(name && *name ? name : def);
	}
	c->write_host_xml = write_host;
	c->write_host_sysfs = write_sysfs;
	c->ctx = t;
	c->memlock = calloc((size_t)(c->nhosts > 0 ? c->nhosts : 1), sizeof(*c->memlock));
	if (!c->memlock) {
		nrr_cluster_free(c);
		snprintf(err, errsize, "out of memory");
		return -ENOMEM;
	}
	for (int h = 0; h < c->nhosts; h++)
		c->memlock[h] = t->hosts[h].memlock;
	return 0;
}

void nrr_cluster_free(struct nrr_cluster *c)
{
	if (c->host_names)
		for (int h = 0; h < c->nhosts; h++)
			free(c->host_names[h]);
	free(c->host_names);
	free(c->memlock);
	if (c->ctx)
		nrr_topo_free(c->ctx);
	memset(c, 0, sizeof(*c));
}

int nrr_launch_keep_cluster(const char *topo_path, char *err, size_t errsize)
{
	return nrr_launch_keep_cluster_in(getenv("NCCLRR_TRACE_DIR"), topo_path, err, errsize);
}

int nrr_launch_keep_cluster_in(const char *dir, const char *topo_path, char *err, size_t errsize)
{
	if (!dir || !*dir || !topo_path)
		return 0;
	char dst[PATH_MAX];
	snprintf(dst, sizeof(dst), "%s/%s", dir, NRR_RUN_CLUSTER_FILE);
	if (access(dst, F_OK) == 0)
		return 0;   /* another rank's wrapper was first */
	return nrr_copy_file(topo_path, dst, err, errsize);
}

int nrr_launch_find_topo(const char *topo, char *buf, size_t size, char *err, size_t errsize)
{
	char real[PATH_MAX];
	if (realpath(topo, real)) {
		if (strlen(real) >= size) {
			snprintf(err, errsize, "topology file path too long: %s", real);
			return -ENAMETOOLONG;
		}
		snprintf(buf, size, "%s", real);
		return 0;
	}
	int saved = errno;
	size_t n = strlen(topo);
	if (strchr(topo, '/') || !n || n > NAME_MAX - 4) {
		snprintf(err, errsize, "cannot open topology file %s: %s", topo, strerror(saved));
		return -ENOENT;
	}
	/* a bare name: a shipped cluster, "1node_8gpu.xml" or "1node_8gpu" */
	char file[NAME_MAX + 1];
	snprintf(file, sizeof(file), "%s%s", topo, n > 4 && !strcmp(topo + n - 4, ".xml") ? "" : ".xml");
	static const char *const rel[] = { "../topo", NRR_PKGDATADIR "/topo", NULL };
	char dir[PATH_MAX], why[1536];
	if (nrr_find_near_exe("NCCLRR_TOPO_DIR", file, rel, "the cluster", dir, sizeof(dir), why, sizeof(why)) < 0) {
		snprintf(err, errsize, "cannot open topology file %s (%s in the current directory: %s; %s)", topo, topo,
			 strerror(saved), why);
		return -ENOENT;
	}
	if ((size_t)snprintf(buf, size, "%s/%s", dir, file) >= size) {
		snprintf(err, errsize, "topology file path too long: %s/%s", dir, file);
		return -ENAMETOOLONG;
	}
	return 0;
}
