/* SPDX-License-Identifier: MIT */
/* hang_report.c - `ncclrr hang`'s renderers: the diagnosis as text, as one
 * JSON document (json.h's writer) and as a Graphviz digraph. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hang_internal.h"
#include "json.h"
#include "term_color.h"

const char *const nrr_hang_cls_name[] = { "no trace", "died", "exited", "stuck", "waits outside the traces",
					  "cycle", "" };

/* ------------------------------------------------------------ output */

static void end_text(const struct nrr_hang *h, const struct hproc *p, char *buf, size_t len)
{
	if (p->end_how[0])
		snprintf(buf, len, "trace ended at %.6f s by %s", rel(h, p->end_wall), p->end_how);
	else if (!p->end_wall)
		snprintf(buf, len, "no call and no end recorded (lost with its process)");
	else
		snprintf(buf, len, "trace stops at %.6f s, no end recorded%s", rel(h, p->end_wall),
			 p->last_seq ? "" : ", no complete call");
}

static void print_proc(FILE *f, const struct nrr_hang *h, const struct hproc *p)
{
	char et[160];
	end_text(h, p, et, sizeof(et));
	fprintf(f, "  %s (%s, %s): %s; %s\n", p->label, p->who, p->path, p->waiting ? "WAITING" : p->exited ? "ended" : "not waiting", et);
	if (p->last_text)
		fprintf(f, "    last completed: %s at %.6f s\n", p->last_text, rel(h, p->last_wall));
	else
		fprintf(f, "    last completed: none\n");
	for (uint32_t k = 0; k < p->nst; k++) {
		const struct hstream *st = &p->st[k];
		if (st->ninflight) {
			fprintf(f, "    in flight, thread %u: ", st->tid);
			if (st->inner.cat)
				fprintf(f, "[%s] ", st->inner.cat);
			fprintf(f, "%s since %.6f s, for ", st->inner.text ? st->inner.text : "?", rel(h, st->inner.wall));
			put_for(f, st->inner.dur);
			if (st->inner.at_cut)
				fprintf(f, " (when the job was stopped; it returned after)");
			fputc('\n', f);
			if (st->ninflight > 1) {
				fprintf(f, "      outermost of %u: %s since %.6f s, for ", st->ninflight, st->outer.text ? st->outer.text : "?",
					rel(h, st->outer.wall));
				put_for(f, st->outer.dur);
				fputc('\n', f);
			}
		}
		if (st->run_fn)
			fprintf(f, "    thread %u: polling %s since %.6f s, %llu times (last at %.6f s)\n", st->tid, st->run_fn->name,
				rel(h, st->run_since), (unsigned long long)st->run_n, rel(h, st->run_last));
		if (st->cr_trailing)
			fprintf(f, "    thread %u: retrying connect to %s since %.6f s, %llu times refused (%s)\n", st->tid, st->cr_addr,
				rel(h, st->cr_since), (unsigned long long)st->cr_n,
				strerrorname_np((int)st->cr_err) ? strerrorname_np((int)st->cr_err) : "?");
	}
	if (p->coll.seen && !p->coll.last[0])
		fprintf(f, "    collective: none started\n");
	else if (p->coll.seen)
	{
		fprintf(f, "    collective: %s %s since %.6f s", nrr_coll_open(&p->coll) ? "in" : "last (done)", p->coll.last,
			rel(h, p->coll.last_wall));
		if (p->coll.ngroups)
			fprintf(f, ", its group not ended");
		if (p->coll.proxy_open)
			fprintf(f, ", %llu proxy operations unfinished", (unsigned long long)p->coll.proxy_open);
		fputc('\n', f);
	}
	for (size_t k = 0; k < p->npend; k++)
		fprintf(f, "    proxy request %s (opId 0x%llx) on fd %d unanswered since %.6f s\n", p->pend[k].type,
			(unsigned long long)p->pend[k].opid, p->pend[k].fd, rel(h, p->pend[k].wall));
}

void nrr_hang_print_text(FILE *f, const struct nrr_hang *h)
{
	size_t ranked = 0;
	for (size_t i = 0; i < h->np; i++)
		ranked += h->p[i].rank >= 0;
	fprintf(f, "ncclrr hang: %zu traced processes, %zu with a rank", h->np, ranked);
	if (h->nranks)
		fprintf(f, "; %d ranks expected (%s)", h->nranks, h->nranks_src);
	if (h->nmissing)
		fprintf(f, ", %zu without a trace", h->nmissing);
	if (h->root_addr[0])
		fprintf(f, "; bootstrap root %s (NCCL_COMM_ID)", h->root_addr);
	fputc('\n', f);
	if (h->cut != UINT64_MAX)
		fprintf(f, "The job was stopped at %.6f s (SIGTERM, SIGINT or SIGHUP): the state at that instant is analyzed.\n",
			rel(h, h->cut));
	if (!h->found) {
		fprintf(f, "%sNo hang%s: no traced process waits at the end of its trace.\n", nrr_color(f, NRR_COLOR_GOOD),
			nrr_color_end(f));
		if (h->first_bad_text) {
			/* the rank it begins with ("rank 5 died: ...") in the rank's colour */
			const char *t = h->first_bad_text;
			size_t lb = strncmp(t, "rank ", 5) ? 0 : 5 + strspn(t + 5, "0123456789");
			fprintf(f, "%sFirst abnormal end:%s %s%.*s%s%s\n", nrr_color(f, NRR_COLOR_ERROR), nrr_color_end(f),
				nrr_color(f, NRR_COLOR_RANK), (int)lb, t, nrr_color_end(f), t + lb);
		}
	} else {
		char lb[64];
		if (h->nc)
			fprintf(f, "%sHANG%s, root cause: %s%s%s (%s)\n", nrr_color(f, NRR_COLOR_ERROR), nrr_color_end(f),
				nrr_color(f, NRR_COLOR_RANK), node_label(h, h->c[0].node, lb, sizeof(lb)), nrr_color_end(f),
				nrr_hang_cls_name[h->c[0].cls]);
		else
			fprintf(f, "%sHANG%s: processes wait, but the traces do not say on what\n", nrr_color(f, NRR_COLOR_ERROR),
				nrr_color_end(f));
		fprintf(f, "Chain: %s\n", nrr_hang_summary(h));
		if (h->nc) {
			fprintf(f, "\nRoot causes, most likely first:\n");
			for (size_t i = 0; i < h->nc; i++)
				fprintf(f, "  %zu. [%s, %d waiting] %s\n", i + 1, nrr_hang_cls_name[h->c[i].cls], h->c[i].score,
					h->c[i].text ? h->c[i].text : "");
		}
		fprintf(f, "\nWait-for graph (%zu edges):\n", h->ne);
		for (size_t i = 0; i < h->ne; i++) {
			char a[64], b[64];
			fprintf(f, "  %s -> %s: %s\n", node_label(h, h->e[i].from, a, sizeof(a)),
				h->e[i].to >= 0 ? node_label(h, h->e[i].to, b, sizeof(b)) : "(nothing traced)", h->e[i].detail);
		}
	}
	if (h->nmissing) {
		char list[512];
		int *nodes = malloc(h->nmissing * sizeof(*nodes));
		if (nodes) {
			for (size_t i = 0; i < h->nmissing; i++)
				nodes[i] = (int)(h->np + i);
			hang_rank_list(h, nodes, h->nmissing, list, sizeof(list));
			fprintf(f, "\nNo trace: %s\n", list);
			free(nodes);
		}
	}
	fprintf(f, "\nRanks:\n");
	for (size_t i = 0; i < h->np; i++)
		if (h->p[i].rank >= 0)
			print_proc(f, h, &h->p[i]);
	bool other = false;
	for (size_t i = 0; i < h->np; i++)
		if (h->p[i].rank < 0) {
			if (!other)
				fprintf(f, "\nProcesses without a rank (launchers, helpers; in the graph only if a rank waits on them):\n");
			other = true;
			print_proc(f, h, &h->p[i]);
			fprintf(f, "    argv: %s\n", h->p[i].argv0);
		}
}

/* (hang writes "" where a text is missing) */
static void json_str(struct nrr_jw *w, const char *k, const char *s)
{
	nrr_jw_kstr(w, k, s ? s : "");
}

/* @s, or null where it is empty */
static void json_str_or_null(struct nrr_jw *w, const char *k, const char *s)
{
	nrr_jw_kstr(w, k, s && s[0] ? s : NULL);
}

/* @n's node object; an edge's unknown target (-1) as null */
static void json_node(struct nrr_jw *w, const char *k, const struct nrr_hang *h, int n, bool null_unknown)
{
	char lb[64];
	nrr_jw_key(w, k);
	if (n < 0 && null_unknown) {
		nrr_jw_null(w);
		return;
	}
	nrr_jw_obj(w, false);
	nrr_jw_kint(w, "node", n);
	nrr_jw_key(w, "rank");
	if (node_rank(h, n) >= 0)
		nrr_jw_int(w, node_rank(h, n));
	else
		nrr_jw_null(w);
	json_str(w, "label", node_label(h, n, lb, sizeof(lb)));
	nrr_jw_end(w);
}

static void json_thread(struct nrr_jw *w, const struct nrr_hang *h, const struct hstream *st)
{
	nrr_jw_obj(w, false);
	nrr_jw_kuint(w, "tid", st->tid);
	if (st->ninflight) {
		const struct flight *fl[2] = { &st->inner, st->ninflight > 1 ? &st->outer : &st->inner };
		const char *nm[2] = { "innermost", "outermost" };
		for (int j = 0; j < 2; j++) {
			nrr_jw_key(w, nm[j]);
			nrr_jw_obj(w, false);
			json_str(w, "call", fl[j]->text);
			nrr_jw_kstr(w, "blocked_in", fl[j]->cat);
			nrr_jw_kfixed(w, "since_s", rel(h, fl[j]->wall), 6);
			nrr_jw_kfixed(w, "for_s", fl[j]->dur / 1e9, 6);
			nrr_jw_kbool(w, "returned_after_stop", fl[j]->at_cut);
			nrr_jw_end(w);
		}
		nrr_jw_kuint(w, "in_flight", st->ninflight);
	}
	if (st->run_fn) {
		nrr_jw_key(w, "polling");
		nrr_jw_obj(w, false);
		json_str(w, "call", st->run_fn->name);
		nrr_jw_kfixed(w, "since_s", rel(h, st->run_since), 6);
		nrr_jw_kuint(w, "times", st->run_n);
		nrr_jw_end(w);
	}
	if (st->cr_trailing) {
		nrr_jw_key(w, "retrying_connect");
		nrr_jw_obj(w, false);
		json_str(w, "address", st->cr_addr);
		nrr_jw_kfixed(w, "since_s", rel(h, st->cr_since), 6);
		nrr_jw_kuint(w, "times", st->cr_n);
		nrr_jw_end(w);
	}
	nrr_jw_end(w);
}

static void json_proc(struct nrr_jw *w, const struct nrr_hang *h, size_t i)
{
	const struct hproc *p = &h->p[i];
	nrr_jw_obj(w, false);
	nrr_jw_kuint(w, "node", i);
	nrr_jw_key(w, "rank");
	if (p->rank >= 0)
		nrr_jw_int(w, p->rank);
	else
		nrr_jw_null(w);
	json_str(w, "who", p->who);
	json_str(w, "file", p->path);
	nrr_jw_kbool(w, "waiting", p->waiting);
	nrr_jw_key(w, "end");
	nrr_jw_obj(w, false);
	nrr_jw_kfixed(w, "time_s", rel(h, p->end_wall), 6);
	json_str_or_null(w, "how", p->end_how);
	nrr_jw_end(w);
	nrr_jw_key(w, "last_call");
	if (p->last_text) {
		nrr_jw_obj(w, false);
		json_str(w, "call", p->last_text);
		nrr_jw_kfixed(w, "time_s", rel(h, p->last_wall), 6);
		nrr_jw_end(w);
	} else {
		nrr_jw_null(w);
	}
	if (p->coll.seen) {
		nrr_jw_key(w, "collective");
		if (p->coll.last[0]) {
			nrr_jw_obj(w, false);
			json_str(w, "op", p->coll.last);
			nrr_jw_kbool(w, "in", nrr_coll_open(&p->coll));
			nrr_jw_kfixed(w, "time_s", rel(h, p->coll.last_wall), 6);
			nrr_jw_kbool(w, "group_open", p->coll.ngroups);
			nrr_jw_kuint(w, "proxy_ops_open", p->coll.proxy_open);
			nrr_jw_end(w);
		} else {
			nrr_jw_null(w);
		}
	}
	nrr_jw_key(w, "threads");
	nrr_jw_arr(w, false);
	for (uint32_t k = 0; k < p->nst; k++) {
		const struct hstream *st = &p->st[k];
		if (st->ninflight || st->run_fn || st->cr_trailing)
			json_thread(w, h, st);
	}
	nrr_jw_end(w);
	nrr_jw_key(w, "proxy_pending");
	nrr_jw_arr(w, false);
	for (size_t k = 0; k < p->npend; k++) {
		nrr_jw_obj(w, false);
		nrr_jw_kint(w, "fd", p->pend[k].fd);
		nrr_jw_kuint(w, "opId", p->pend[k].opid);
		json_str(w, "type", p->pend[k].type);
		nrr_jw_end(w);
	}
	nrr_jw_end(w);
	nrr_jw_end(w);
}

void nrr_hang_print_json(FILE *f, const struct nrr_hang *h)
{
	struct nrr_jw jw, *w = &jw;
	nrr_jw_init(w, f, 0);
	nrr_jw_obj(w, true);
	nrr_jw_kbool(w, "hang", h->found);
	json_str(w, "summary", nrr_hang_summary(h));
	nrr_jw_kint(w, "nranks_expected", h->nranks);
	json_str(w, "nranks_source", h->nranks_src);
	json_str_or_null(w, "bootstrap_root", h->root_addr);
	nrr_jw_key(w, "stopped_at_s");
	if (h->cut != UINT64_MAX)
		nrr_jw_fixed(w, rel(h, h->cut), 6);
	else
		nrr_jw_null(w);
	nrr_jw_key(w, "root_rank");
	if (nrr_hang_root_rank(h) >= 0)
		nrr_jw_int(w, nrr_hang_root_rank(h));
	else
		nrr_jw_null(w);
	nrr_jw_kstr(w, "first_abnormal_end", h->first_bad_text);
	nrr_jw_key(w, "root_causes");
	nrr_jw_arr(w, true);
	for (size_t i = 0; i < h->nc; i++) {
		nrr_jw_obj(w, false);
		json_str(w, "kind", nrr_hang_cls_name[h->c[i].cls]);
		json_node(w, "who", h, h->c[i].node, false);
		nrr_jw_kint(w, "waiting", h->c[i].score);
		json_str(w, "text", h->c[i].text);
		nrr_jw_end(w);
	}
	nrr_jw_end(w);
	nrr_jw_key(w, "missing_ranks");
	nrr_jw_arr(w, false);
	for (size_t i = 0; i < h->nmissing; i++)
		nrr_jw_int(w, h->missing[i]);
	nrr_jw_end(w);
	nrr_jw_key(w, "edges");
	nrr_jw_arr(w, true);
	for (size_t i = 0; i < h->ne; i++) {
		nrr_jw_obj(w, false);
		json_node(w, "from", h, h->e[i].from, false);
		json_node(w, "to", h, h->e[i].to, true);
		json_str(w, "wait", h->e[i].cat);
		json_str(w, "address", h->e[i].addr);
		json_str(w, "detail", h->e[i].detail);
		nrr_jw_end(w);
	}
	nrr_jw_end(w);
	nrr_jw_key(w, "processes");
	nrr_jw_arr(w, true);
	for (size_t i = 0; i < h->np; i++)
		json_proc(w, h, i);
	nrr_jw_end(w);
	nrr_jw_end(w);
	fputc('\n', f);
}

static void dot_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

void nrr_hang_print_dot(FILE *f, const struct nrr_hang *h)
{
	size_t n = nnodes(h);
	fputs("digraph ncclrr_hang {\n  rankdir=LR;\n  node [shape=box, fontname=\"monospace\"];\n  label=", f);
	dot_str(f, nrr_hang_summary(h));
	fputs(";\n  labelloc=t;\n", f);
	bool unknown = false;
	for (size_t u = 0; u < n; u++) {
		bool in_graph = false;
		for (size_t i = 0; i < h->ne && !in_graph; i++)
			in_graph = h->e[i].from == (int)u || h->e[i].to == (int)u;
		if (!in_graph && (u >= h->np || h->p[u].rank < 0))
			continue;
		char lb[64], label[256];
		node_label(h, (int)u, lb, sizeof(lb));
		int cause = -1;
		for (size_t i = 0; i < h->nc; i++)
			if (h->c[i].node == (int)u && cause < 0)
				cause = (int)i;
		if (u >= h->np)
			snprintf(label, sizeof(label), "%s\\nno trace", lb);
		else if (h->p[u].end_how[0])
			snprintf(label, sizeof(label), "%s\\n%s\\nended: %s", lb, h->p[u].who, h->p[u].end_how);
		else
			snprintf(label, sizeof(label), "%s\\n%s", lb, h->p[u].who);
		fprintf(f, "  n%zu [label=\"%s%s%s\"%s];\n", u, label, cause >= 0 ? "\\nroot cause: " : "",
			cause >= 0 ? nrr_hang_cls_name[h->c[cause].cls] : "",
			cause == 0 ? ", color=red, penwidth=3, style=filled, fillcolor=\"#ffdddd\""
			: cause > 0 ? ", color=red" : u >= h->np ? ", style=dashed" : "");
	}
	for (size_t i = 0; i < h->ne; i++) {
		if (h->e[i].to < 0)
			unknown = true;
		fprintf(f, "  n%d -> %s%d [label=", h->e[i].from, h->e[i].to >= 0 ? "n" : "unknown", h->e[i].to >= 0 ? h->e[i].to : 0);
		char lab[200];
		snprintf(lab, sizeof(lab), "%s%s%s", h->e[i].cat, h->e[i].addr[0] ? " " : "", h->e[i].addr);
		dot_str(f, lab);
		fputs("];\n", f);
	}
	if (unknown)
		fputs("  unknown0 [label=\"nothing traced\", shape=ellipse, style=dashed];\n", f);
	fputs("}\n", f);
}

