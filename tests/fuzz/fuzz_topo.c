/* SPDX-License-Identifier: MIT */
/*
 * fuzz_topo.c - the cluster topology parser (topo/nrr_topo.c) on arbitrary
 * bytes: a full load, and one host read with the others passed over
 * (nrr_topo_load_host_buffer, what each process of a virtual cluster
 * does).  Never a crash; an error always names "fuzz.xml:"; a file the
 * full load takes, the one-host load takes too, with the same host.
 */
#include <stdlib.h>
#include <string.h>

#include "nrr_topo.h"
#include "driver.h"

static void same_host(const nrr_topo *a, const nrr_topo *b, int h)
{
	const nrr_topo_host *x = &a->hosts[h], *y = &b->hosts[h];
	if (a->nhosts != b->nhosts || strcmp(x->name, y->name) || x->ngpus != y->ngpus || x->nnics != y->nnics)
		abort();
	for (int g = 0; g < x->ngpus; g++)
		if (memcmp(x->gpus[g].uuid, y->gpus[g].uuid, 16) || strcmp(x->gpus[g].busid, y->gpus[g].busid))
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	nrr_topo *full = NULL;
	int rc = nrr_topo_load_buffer("fuzz.xml", (const char *)data, size, &full, err, sizeof(err));
	if (rc < 0 && (full || strncmp(err, "fuzz.xml:", 9)))
		abort();
	int hosts[] = { 0, 1, full ? full->nhosts - 1 : 2 };
	for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
		nrr_topo *one = NULL;
		int r1 = nrr_topo_load_host_buffer("fuzz.xml", (const char *)data, size, hosts[i], &one, err, sizeof(err));
		if (r1 < 0 && (one || strncmp(err, "fuzz.xml:", 9)))
			abort();
		if (full && r1 < 0)
			abort();
		if (full && hosts[i] < full->nhosts)
			same_host(full, one, hosts[i]);
		if (one && hosts[i] < one->nhosts) {
			char *x = NULL;
			if (one->hosts[hosts[i]].system && nrr_topo_host_xml_string(one, hosts[i], &x, NULL) == 0)
				free(x);
		}
		nrr_topo_free(one);
	}
	nrr_topo_free(full);
	return 0;
}
