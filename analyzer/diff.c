/* SPDX-License-Identifier: MIT */
/* diff.c - `ncclrr diff` (diff.h): opens both runs' processes, pairs them
 * and compares each pair (diff_align.c) into the result the renderers
 * (diff_report.c) print.  How calls are compared: diff_align.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "diff_internal.h"

static int config_read(struct config *c, struct nrr_inputs *ia, struct nrr_inputs *ib)
{
	memset(c, 0, sizeof(*c));
	char err[512];
	if (nrr_runinfo_read(&c->a, ia->r, ia->n, err, sizeof(err))) {
		nrr_run_say(NRR_RUN_NOTE, "diff", "run A: %s", err);
		return -1;
	}
	if (nrr_runinfo_read(&c->b, ib->r, ib->n, err, sizeof(err))) {
		nrr_run_say(NRR_RUN_NOTE, "diff", "run B: %s", err);
		nrr_runinfo_free(&c->a);
		return -1;
	}
	c->n = nrr_runinfo_diff(&c->a, &c->b, &c->ch);
	if (c->n == (size_t)-1) {
		nrr_run_say(NRR_RUN_NOTE, "diff", "out of memory");
		nrr_runinfo_free(&c->a);
		nrr_runinfo_free(&c->b);
		return -1;
	}
	c->have = true;
	return 0;
}

static void config_free(struct config *c)
{
	if (c->have) {
		free(c->ch);
		nrr_runinfo_free(&c->a);
		nrr_runinfo_free(&c->b);
	}
}

/* ---------------------------------------------------------- driver */

static bool touches_gpu(const struct proc *p)
{
	for (uint32_t k = 0; k < p->nstreams; k++)
		if (p->gpu[k])
			return true;
	return false;
}

static const char *proc_end(size_t i, void *arg, uint64_t *wall)
{
	const struct proc *p = (const struct proc *)arg + i;
	*wall = p->end_wall;
	return p->end;
}

static int procs_open(struct nrr_inputs *in, const char *api, struct proc **out)
{
	struct proc *ps = calloc(in->n + 1, sizeof(*ps));
	if (!ps)
		return -ENOMEM;
	*out = ps;
	for (size_t i = 0; i < in->n; i++) {
		ps[i].api = api;
		if (diff_proc_init(&ps[i], in, i))
			return -ENOMEM;
	}
	for (size_t i = 0; i < in->n; i++) {
		int rc = diff_proc_scan(&ps[i]);
		if (rc)
			return rc;
	}
	uint64_t stop = nrr_job_stopped_at(in->n, proc_end, ps);
	for (size_t i = 0; i < in->n; i++)
		ps[i].stop = stop;
	/* a helper that carries a rank (a launcher's fork stub or wrapper
	 * with the rank's variables, which execs the rank or starts it) is
	 * no rank when another process of that rank touches CUDA, NVML,
	 * verbs or NCCL and it does not: paired by executable, as helpers */
	for (size_t i = 0; i < in->n; i++) {
		if (strncmp(ps[i].key, "exe=", 4) == 0 || touches_gpu(&ps[i]))
			continue;
		bool other = false;
		for (size_t j = 0; j < in->n && !other; j++)
			other = j != i && !strcmp(ps[j].key, ps[i].key) && touches_gpu(&ps[j]);
		if (!other)
			continue;
		const char *v = nrr_reader_meta(ps[i].r, "exe");
		char *k;
		if (asprintf(&k, "exe=%s", v ? diff_base_name(v) : "?") < 0)
			return -ENOMEM;
		free(ps[i].key);
		ps[i].key = k;
		ps[i].rank = 0x7fffffffL;
	}
	return diff_proc_keys(ps, in->n);
}

/* The result of a comparison (diff.h): the processes of both runs,
 * paired, with the first divergence of each pair; the calls around a
 * divergence are read again from the traces when a renderer prints them. */
int nrr_diff_compare(const struct nrr_diff_opts *o, struct nrr_inputs *ia, struct nrr_inputs *ib, struct nrr_diff **out)
{
	struct nrr_diff *r = calloc(1, sizeof(*r));
	if (!r) {
		nrr_run_say(NRR_RUN_NOTE, "diff", "out of memory");
		return -EINVAL;
	}
	r->o = *o;
	r->ia = ia;
	r->ib = ib;
	r->x = (struct ctx){ .o = &r->o, .ia = ia, .ib = ib };
	struct ctx *x = &r->x;
	if (config_read(&r->cfg, ia, ib)) {
		free(r);
		return -EINVAL;
	}
	int ret = -EINVAL;
	int prc = procs_open(ia, o->api, &r->pa);
	if (!prc)
		prc = procs_open(ib, o->api, &r->pb);
	if (prc || !(r->pairs = calloc(ia->n + ib->n + 1, sizeof(*r->pairs)))) {
		if (!prc || prc == -ENOMEM)
			nrr_run_say(NRR_RUN_NOTE, "diff", "out of memory");
		goto out;
	}
	struct proc *pa = r->pa, *pb = r->pb;
	struct pair *pairs = r->pairs;
	size_t np = 0;
	bool *used = calloc(ib->n + 1, sizeof(*used));
	if (!used)
		goto out;
	for (size_t i = 0; i < ia->n; i++) {
		pairs[np].a = &pa[i];
		for (size_t j = 0; j < ib->n; j++) {
			if (!used[j] && strcmp(pa[i].key, pb[j].key) == 0) {
				used[j] = true;
				pairs[np].b = &pb[j];
				break;
			}
		}
		np++;
	}
	for (size_t j = 0; j < ib->n; j++)
		if (!used[j])
			pairs[np++].b = &pb[j];
	free(used);
	r->np = np;
	qsort(pairs, np, sizeof(*pairs), diff_cmp_pair);

	size_t ndiv = 0, first = 0;
	uint64_t best = 0;
	for (size_t i = 0; i < np; i++) {
		if (diff_compare_pair(x, &pairs[i]))
			goto out;
		diff_meaningful(&pairs[i]);
		struct divg *d = &pairs[i].d;
		if (!d->found && pairs[i].m == M_NONE)
			continue;
		ndiv++;
	}
	/* the headline: the earliest meaningful divergence of a rank, else
	 * of any process; else the earliest call divergence of a rank, else
	 * of any process */
	for (int pass = 0; pass < 4; pass++) {
		bool have = false;
		for (size_t i = 0; i < np; i++) {
			const struct proc *p = pairs[i].a ? pairs[i].a : pairs[i].b;
			if (pass % 2 == 0 && p->rank == 0x7fffffffL)
				continue;
			if (pass < 2 ? pairs[i].m == M_NONE : !pairs[i].d.found)
				continue;
			uint64_t when = pass < 2 ? pairs[i].m_t : diff_when_of(&pairs[i].d);
			if (!have || when < best) {
				best = when;
				first = i;
				have = true;
			}
		}
		if (have)
			break;
	}
	r->ndiv = ndiv;
	r->first = first;
	r->differ = ndiv || r->cfg.n;
	*out = r;
	return 0;
out:
	nrr_diff_free(r);
	return ret;
}

bool nrr_diff_differ(const struct nrr_diff *r)
{
	return r->differ;
}

void nrr_diff_free(struct nrr_diff *r)
{
	if (!r)
		return;
	for (size_t i = 0; r->pa && i < r->ia->n; i++)
		diff_proc_free(&r->pa[i]);
	for (size_t i = 0; r->pb && i < r->ib->n; i++)
		diff_proc_free(&r->pb[i]);
	free(r->pa);
	free(r->pb);
	for (size_t i = 0; r->pairs && i < r->np; i++)
		free(r->pairs[i].sa), free(r->pairs[i].sb);
	free(r->pairs);
	config_free(&r->cfg);
	free(r);
}

int nrr_diff_run(const struct nrr_diff_opts *o, struct nrr_inputs *ia, struct nrr_inputs *ib, FILE *out)
{
	struct nrr_diff *r;
	int rc = nrr_diff_compare(o, ia, ib, &r);
	if (rc)
		return rc;
	if (o->json)
		nrr_diff_print_json(out, r);
	else
		nrr_diff_print_text(out, r);
	rc = r->differ ? 1 : 0;
	nrr_diff_free(r);
	return rc;
}
