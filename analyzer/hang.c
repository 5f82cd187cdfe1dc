/* SPDX-License-Identifier: MIT */
/* hang.c - why a job hangs (see hang.h): runs the scan (hang_scan.c), the
 * graph and root causes (hang_graph.c) into the diagnosis the renderers
 * (hang_report.c) print. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hang_internal.h"

static const char *meta_end(size_t i, void *arg, uint64_t *wall)
{
	const struct nrr_proc *p = &((const struct nrr_hang *)arg)->in->proc[i];
	*wall = p->end_wall;
	return nrr_proc_end_key(p);
}

int nrr_hang_analyze(struct nrr_inputs *in, struct nrr_hang **out)
{
	struct nrr_hang *h = calloc(1, sizeof(*h));
	if (!h)
		return -EINVAL;
	h->in = in;
	h->np = in->n;
	h->p = calloc(h->np + 1, sizeof(*h->p));
	h->base_wall = in->base_wall;
	h->root_owner = -1;
	h->first_bad = -1;
	if (!h->p) {
		free(h);
		return -EINVAL;
	}
	h->cut = nrr_job_stopped_at(h->np, meta_end, h);
	nrr_progress_init(&h->prog, in);
	for (size_t i = 0; i < h->np; i++) {
		int rc = hang_read_proc(h, i);
		if (rc) {
			nrr_progress_end(&h->prog);
			nrr_hang_free(h);
			return -EINVAL;
		}
		if (h->p[i].end_wall > h->job_end)
			h->job_end = h->p[i].end_wall;
	}
	nrr_progress_end(&h->prog);
	hang_job_size(h);
	/* rank -> node in one pass over each (not ranks x processes) */
	h->missing = calloc((size_t)h->nranks + 1, sizeof(int));
	h->rank_node = malloc(((size_t)h->nranks + 1) * sizeof(int));
	if (!h->missing || !h->rank_node) {
		nrr_hang_free(h);
		return -EINVAL;
	}
	for (int r = 0; r < h->nranks; r++)
		h->rank_node[r] = -1;
	for (size_t i = h->np; i-- > 0;)   /* (the first process of a rank wins) */
		if (h->p[i].rank >= 0 && h->p[i].rank < h->nranks)
			h->rank_node[h->p[i].rank] = (int)i;
	for (int r = 0; r < h->nranks; r++)
		if (h->rank_node[r] < 0) {
			h->rank_node[r] = (int)(h->np + h->nmissing);
			h->missing[h->nmissing++] = r;
		}
	if (h->root_addr[0]) {
		for (size_t i = 0; i < h->np && h->root_owner < 0; i++)
			for (size_t k = 0; k < h->p[i].nsocks; k++)
				if (h->p[i].socks[k].role == NRR_SOCK_LISTEN && hang_is_root(h, h->p[i].socks[k].local))
					h->root_owner = (int)i;
	}
	struct graph g = { 0 };
	if (hang_build_edges(h) || hang_graph_build(h, &g) || hang_find_causes(h, &g)) {
		nrr_run_say(NRR_RUN_NOTE, "hang", "out of memory");
		hang_graph_free(&g);
		nrr_hang_free(h);
		return -EINVAL;
	}
	for (size_t i = 0; i < h->np; i++)
		h->found |= h->p[i].waiting;
	if (h->found && h->nc)
		h->summary = hang_chain(h, &g);
	else if (h->found)
		h->summary = strdup("ranks wait, but the traces do not say on what");
	else
		h->summary = strdup("no hang: no traced process waits at the end of its trace");
	/* without a hang: the first rank to end abnormally (died, killed,
	 * exit status not 0), the others' ends may follow from it */
	for (size_t i = 0; i < h->np && !h->found; i++) {
		struct hproc *p = &h->p[i];
		bool bad = p->rank >= 0 && strcmp(p->end_how, "exit 0") && strcmp(p->end_how, "exec");
		uint64_t when = nrr_end_order(p->end_how, p->end_wall, h->cut);
		if (bad && (h->first_bad < 0 ||
			    ends_before(when, nrr_end_order(h->p[h->first_bad].end_how, h->p[h->first_bad].end_wall, h->cut))))
			h->first_bad = (int)i;
	}
	if (h->first_bad >= 0) {
		struct hproc *p = &h->p[h->first_bad];
		h->first_bad_text = hang_describe(h, h->first_bad, p->end_how[0] && strncmp(p->end_how, "signal ", 7) ? C_EXITED : C_DIED, false);
	}
	hang_graph_free(&g);
	*out = h;
	return 0;
}

bool nrr_hang_found(const struct nrr_hang *h)
{
	return h->found;
}

const char *nrr_hang_summary(const struct nrr_hang *h)
{
	return h->summary ? h->summary : "";
}

int nrr_hang_root_rank(const struct nrr_hang *h)
{
	if (!h->found)
		return h->first_bad >= 0 ? h->p[h->first_bad].rank : -1;
	return h->nc ? node_rank(h, h->c[0].node) : -1;
}

void nrr_hang_free(struct nrr_hang *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->np; i++) {
		struct hproc *p = &h->p[i];
		for (uint32_t k = 0; p->st && k < p->nst; k++) {
			free(p->st[k].inner.text);
			free(p->st[k].outer.text);
		}
		free(p->st);
		free(p->socks);
		free(p->pend);
		free(p->last_text);
		free(p->fail_text);
	}
	for (size_t i = 0; i < h->nc; i++)
		free(h->c[i].text);
	free(h->c);
	free(h->p);
	free(h->missing);
	free(h->rank_node);
	free(h->e);
	free(h->summary);
	free(h->first_bad_text);
	free(h);
}

