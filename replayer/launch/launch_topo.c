/* SPDX-License-Identifier: MIT */
/* launch_topo.c - the cluster as the launcher sees it, from topo/'s parser. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nrr_launch.h"

#if NRR_HAVE_TOPO
#include "nrr_topo.h"

static int write_host(void *ctx, int host, const char *path, char *err, size_t errsize)
{
	return nrr_topo_write_host_xml(ctx, host, path, err, errsize);
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
	c->ctx = t;
	return 0;
}

void nrr_cluster_free(struct nrr_cluster *c)
{
	if (c->host_names)
		for (int h = 0; h < c->nhosts; h++)
			free(c->host_names[h]);
	free(c->host_names);
	if (c->ctx)
		nrr_topo_free(c->ctx);
	memset(c, 0, sizeof(*c));
}

#else /* built without topo/ */

int nrr_cluster_load(struct nrr_cluster *c, const char *path, char *err, size_t errsize)
{
	memset(c, 0, sizeof(*c));
	snprintf(err, errsize, "%s: this ncclrr was built without the topology parser (topo/)", path);
	return -ENOSYS;
}

void nrr_cluster_free(struct nrr_cluster *c)
{
	memset(c, 0, sizeof(*c));
}
#endif
