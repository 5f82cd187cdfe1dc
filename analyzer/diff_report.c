/* SPDX-License-Identifier: MIT */
/* diff_report.c - `ncclrr diff`'s renderers: the result (struct nrr_diff)
 * as text and as one JSON object (json.h's writer); the calls around a
 * divergence are read again from the traces here. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "diff_internal.h"
#include "json.h"
#include "term_color.h"

/* ---------------------------------------------------------- reporting */

/* Format the events of @toks (in stream order) of @p's @stream, one
 * malloc'ed line each (NULL where not found). */
static void load_lines(struct proc *p, uint32_t stream, const struct tok *toks, size_t n, char **lines)
{
	for (size_t k = 0; k < n; k++)
		lines[k] = NULL;
	if (!n)
		return;
	nrr_cursor *c;
	if (nrr_cursor_open(&c, p->r, stream))
		return;
	uint64_t s = toks[0].seq;
	for (size_t k = 1; k < n; k++)
		if (toks[k].seq < s)
			s = toks[k].seq;
	if (toks[0].phase == NRR_PHASE_INFLIGHT && s > 1)
		s--;
	if (nrr_cursor_seek(c, s) && nrr_cursor_seek(c, 1)) {
		nrr_cursor_close(c);
		return;
	}
	char who[300];
	snprintf(who, sizeof(who), "%s:%u/%u", p->in->proc[p->idx].host, nrr_reader_info(p->r)->pid,
		 nrr_reader_stream(p->r, stream)->tid);
	const nrr_call *call;
	size_t k = 0;
	uint64_t scanned = 0;
	while (k < n && scanned++ < SCAN_LIMIT && nrr_cursor_next(c, &call) == 0) {
		for (size_t j = k; j < n; j++) {
			if (call->kind != NRR_CALL || call->seq != toks[j].seq || call->phase != toks[j].phase)
				continue;
			char *buf = NULL;
			size_t len = 0;
			FILE *f = open_memstream(&buf, &len);
			if (f) {
				double t = (double)(int64_t)(nrr_reader_wall(p->r, nrr_call_key(call)) - p->in->base_wall) / 1e9;
				nrr_format_call(f, call, t, who);
				fclose(f);
				lines[j] = buf;
			}
			if (j == k)
				while (k < n && lines[k])
					k++;
			break;
		}
	}
	nrr_cursor_close(c);
}

/* Find the event of @t on @stream; the cursor stays open in *@cp. */
static const nrr_call *find_call(struct proc *p, uint32_t stream, const struct tok *t, nrr_cursor **cp)
{
	*cp = NULL;
	if (nrr_cursor_open(cp, p->r, stream))
		return NULL;
	uint64_t s = t->phase == NRR_PHASE_INFLIGHT && t->seq > 1 ? t->seq - 1 : t->seq;
	if (nrr_cursor_seek(*cp, s))
		return NULL;
	const nrr_call *c;
	uint64_t scanned = 0;
	while (scanned++ < SCAN_LIMIT && nrr_cursor_next(*cp, &c) == 0)
		if (c->kind == NRR_CALL && c->seq == t->seq && c->phase == t->phase)
			return c;
	return NULL;
}

/* What differs between the two diverging calls, as "result, size". */
static char *what_differs(struct pair *pr)
{
	struct divg *d = &pr->d;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	nrr_cursor *ca, *cb;
	const nrr_call *a = find_call(pr->a, d->stream_a, &d->ta, &ca);
	const nrr_call *b = a ? find_call(pr->b, d->stream_b, &d->tb, &cb) : (cb = NULL, NULL);
	const char *sep = "";
	if (a && b) {
		if (strcmp(a->fn->name, b->fn->name) != 0) {
			fputs("function", f);
		} else {
			struct fninfo *fa = diff_fninfo_of(pr->a, a->fn), *fb = diff_fninfo_of(pr->b, b->fn);
			if ((a->phase == NRR_PHASE_INFLIGHT) != (b->phase == NRR_PHASE_INFLIGHT)) {
				fputs("completion (one never returned)", f);
				sep = ", ";
			} else if (a->phase != b->phase) {
				fputs("nesting", f);
				sep = ", ";
			}
			/* the parameters both schemas have, paired in order (the
			 * call's identity, tokenize()) */
			for (uint16_t i = 0, nk = 0; fa && fb && i < a->fn->nargs && i < NRR_MAX_ARGS; i++) {
				if (fa->own & (1u << i))
					continue;
				while (nk < b->fn->nargs && nk < NRR_MAX_ARGS && (fb->own & (1u << nk)))
					nk++;
				if (nk >= b->fn->nargs || nk >= NRR_MAX_ARGS)
					break;
				uint16_t k = nk++;
				bool pa = a->present & (1u << i), pb = b->present & (1u << k);
				bool open = a->phase == NRR_PHASE_ENTER || a->phase == NRR_PHASE_INFLIGHT ||
					    b->phase == NRR_PHASE_ENTER || b->phase == NRR_PHASE_INFLIGHT;
				if ((open || !diff_outs_written(a) || !diff_outs_written(b)) && a->fn->args[i].dir == NRR_DIR_OUT)
					continue;
				if (!pa && !pb)
					continue;
				uint64_t ha = pa ? diff_hash_arg(1, fa->cls[i], a->fn, &a->fn->args[i], &a->args[i]) : 0;
				uint64_t hb = pb ? diff_hash_arg(1, fb->cls[k], b->fn, &b->fn->args[k], &b->args[k]) : 0;
				if (ha != hb) {
					fprintf(f, "%s%s", sep, a->fn->args[i].name);
					sep = ", ";
				}
			}
			bool ca_done = a->phase == NRR_PHASE_CALL || a->phase == NRR_PHASE_RESUME;
			bool cb_done = b->phase == NRR_PHASE_CALL || b->phase == NRR_PHASE_RESUME;
			if (fa && fb && ca_done && cb_done && diff_hash_result(1, fa, a) != diff_hash_result(1, fb, b))
				fprintf(f, "%sresult", sep);
		}
	}
	if (ca)
		nrr_cursor_close(ca);
	if (cb)
		nrr_cursor_close(cb);
	fclose(f);
	if (buf && !*buf) {
		free(buf);
		return NULL;
	}
	return buf;
}

static const char *kind_text(enum dkind k)
{
	switch (k) {
	case D_CALL: return "call";
	case D_A_ENDS: return "A ends";
	case D_B_ENDS: return "B ends";
	case D_THREAD_A: return "thread only in A";
	case D_THREAD_B: return "thread only in B";
	case D_PROC_A: return "process only in A";
	case D_PROC_B: return "process only in B";
	}
	return "?";
}

static const char *kind_json(enum dkind k)
{
	static const char *const n[] = { "call", "a_ends", "b_ends", "thread_only_in_a", "thread_only_in_b",
					 "process_only_in_a", "process_only_in_b" };
	return n[k];
}

struct lines {
	char *hist[MAX_CONTEXT], *a[MAX_CONTEXT + 1], *b[MAX_CONTEXT + 1];
	char *what;
};

static void lines_load(struct pair *pr, struct lines *L)
{
	struct divg *d = &pr->d;
	memset(L, 0, sizeof(*L));
	if (!pr->a || !pr->b || d->kind == D_THREAD_A || d->kind == D_THREAD_B)
		return;
	struct tok ta[MAX_CONTEXT + 1], tb[MAX_CONTEXT + 1];
	size_t na = 0, nb = 0;
	if (d->kind != D_A_ENDS)
		ta[na++] = d->ta;
	for (size_t k = 0; k < d->naft_a; k++)
		ta[na++] = d->aft_a[k];
	if (d->kind != D_B_ENDS)
		tb[nb++] = d->tb;
	for (size_t k = 0; k < d->naft_b; k++)
		tb[nb++] = d->aft_b[k];
	load_lines(pr->a, d->stream_a, d->hist, d->nhist, L->hist);
	load_lines(pr->a, d->stream_a, ta, na, L->a);
	load_lines(pr->b, d->stream_b, tb, nb, L->b);
	if (d->kind == D_CALL)
		L->what = what_differs(pr);
}

static void lines_free(struct lines *L)
{
	for (size_t k = 0; k < MAX_CONTEXT; k++)
		free(L->hist[k]);
	for (size_t k = 0; k <= MAX_CONTEXT; k++) {
		free(L->a[k]);
		free(L->b[k]);
	}
	free(L->what);
}

static const char *api_of(const struct divg *d)
{
	if (d->kind == D_CALL || d->kind == D_B_ENDS)
		return d->ta.fn ? d->ta.fn->name : NULL;
	if (d->kind == D_A_ENDS)
		return d->tb.fn ? d->tb.fn->name : NULL;
	return NULL;
}

static void text_pair(FILE *f, struct pair *pr, struct lines *L)
{
	struct divg *d = &pr->d;
	const char *label = (pr->a ? pr->a : pr->b)->label;
	switch (d->kind) {
	case D_PROC_A:
	case D_PROC_B:
		fprintf(f, "%s: only in %s (%s)\n", label, d->kind == D_PROC_A ? "A" : "B",
			nrr_reader_path((pr->a ? pr->a : pr->b)->r));
		return;
	case D_THREAD_A:
	case D_THREAD_B:
		fprintf(f, "%s thread %u: only in %s (tid %u, first call at +%.6f s)\n", label, d->thread_no,
			d->kind == D_THREAD_A ? "A" : "B", d->tid_a, d->t_a / 1e9);
		return;
	default:
		break;
	}
	fprintf(f, "%s thread %u (tid %u in A, %u in B): ", label, d->thread_no, d->tid_a, d->tid_b);
	if (d->kind == D_CALL)
		fprintf(f, "call #%llu in A, #%llu in B: %s", (unsigned long long)d->ta.seq, (unsigned long long)d->tb.seq,
			d->ta.fn->name);
	else if (d->kind == D_A_ENDS)
		fprintf(f, "A ends, B goes on with call #%llu %s", (unsigned long long)d->tb.seq, d->tb.fn->name);
	else
		fprintf(f, "B ends, A goes on with call #%llu %s", (unsigned long long)d->ta.seq, d->ta.fn->name);
	if (L->what)
		fprintf(f, " (%s differs)", L->what);
	fprintf(f, " at +%.6f s in A, +%.6f s in B\n", d->t_a / 1e9, d->t_b / 1e9);
	for (size_t k = 0; k < d->nhist; k++)
		if (L->hist[k])
			fprintf(f, "    = %s\n", L->hist[k]);
	size_t na = (d->kind != D_A_ENDS) + d->naft_a, nb = (d->kind != D_B_ENDS) + d->naft_b;
	if (d->kind == D_A_ENDS)
		fputs("  A>  (no more calls)\n", f);
	for (size_t k = 0; k < na; k++)
		if (L->a[k])
			fprintf(f, "  A%s %s\n", k == 0 && d->kind != D_A_ENDS ? ">" : " ", L->a[k]);
	if (d->kind == D_B_ENDS)
		fputs("  B>  (no more calls)\n", f);
	for (size_t k = 0; k < nb; k++)
		if (L->b[k])
			fprintf(f, "  B%s %s\n", k == 0 && d->kind != D_B_ENDS ? ">" : " ", L->b[k]);
	if (pr->other_threads)
		fprintf(f, "  (%zu more thread%s of %s diverge later)\n", pr->other_threads, pr->other_threads > 1 ? "s" : "",
			label);
}

static void json_lines(struct nrr_jw *w, const char *name, char **l, size_t n)
{
	nrr_jw_key(w, name);
	nrr_jw_arr(w, false);
	for (size_t k = 0; k < n; k++)
		if (l[k])
			nrr_jw_str(w, l[k]);
	nrr_jw_end(w);
}

static void json_meaningful(struct nrr_jw *w, struct pair *pr);

static void json_pair(struct nrr_jw *w, struct pair *pr, struct lines *L)
{
	struct divg *d = &pr->d;
	const struct proc *p = pr->a ? pr->a : pr->b;
	nrr_jw_obj(w, false);
	nrr_jw_kstr(w, "process", p->label);
	nrr_jw_key(w, "rank");
	if (p->rank != 0x7fffffffL)
		nrr_jw_int(w, p->rank);
	else
		nrr_jw_null(w);
	nrr_jw_kstr(w, "kind", kind_json(d->kind));
	nrr_jw_kuint(w, "thread", d->thread_no);
	nrr_jw_kuint(w, "tid_a", d->tid_a);
	nrr_jw_kuint(w, "tid_b", d->tid_b);
	nrr_jw_kstr(w, "api", api_of(d));
	if (d->kind == D_CALL || d->kind == D_B_ENDS)
		nrr_jw_kuint(w, "seq_a", d->ta.seq);
	if (d->kind == D_CALL || d->kind == D_A_ENDS)
		nrr_jw_kuint(w, "seq_b", d->tb.seq);
	nrr_jw_kfixed(w, "t_a", d->t_a / 1e9, 9);
	nrr_jw_kfixed(w, "t_b", d->t_b / 1e9, 9);
	nrr_jw_kstr(w, "differs", L->what);
	nrr_jw_kstr(w, "call_a", d->kind != D_A_ENDS ? L->a[0] : NULL);
	nrr_jw_kstr(w, "call_b", d->kind != D_B_ENDS ? L->b[0] : NULL);
	json_lines(w, "before", L->hist, d->nhist);
	json_lines(w, "after_a", L->a + (d->kind != D_A_ENDS), d->naft_a);
	json_lines(w, "after_b", L->b + (d->kind != D_B_ENDS), d->naft_b);
	nrr_jw_kuint(w, "other_threads", pr->other_threads);
	json_meaningful(w, pr);
	nrr_jw_end(w);
}

/* The failing call of @pr's M_FAIL, as dump prints it (malloc'ed), or NULL. */
static char *fail_line(struct pair *pr)
{
	struct tok t = { .seq = pr->mf.seq, .phase = pr->mf.phase };
	char *line = NULL;
	load_lines(pr->m_in_b ? pr->b : pr->a, pr->mf.stream, &t, 1, &line);
	return line;
}

static const char *end_text(const struct proc *p)
{
	return p->end[0] ? p->end : "killed (its trace stops, no end recorded: SIGKILL, or the host went away)";
}

/* One line on @pr's meaningful divergence when it is not its first call
 * divergence: "  first failure only in B: ..." or "  ends only in B: ...". */
static void text_meaningful(FILE *f, struct pair *pr)
{
	const char *r = pr->m_in_b ? "B" : "A";
	if (pr->m == M_FAIL && !pr->m_is_d) {
		char *line = fail_line(pr);
		fprintf(f, "  first failure only in %s, thread %u (tid %u) at +%.6f s in %s:\n  %s> %s\n", r, pr->m_thread,
			nrr_reader_stream((pr->m_in_b ? pr->b : pr->a)->r, pr->mf.stream)->tid, pr->m_t / 1e9, r, r,
			line ? line : "?");
		free(line);
	} else if (pr->m == M_END) {
		fprintf(f, "  ends abnormally only in %s: A %s at +%.6f s, B %s at +%.6f s\n", r, end_text(pr->a),
			(pr->a->end_wall - pr->a->in->base_wall) / 1e9, end_text(pr->b),
			(pr->b->end_wall - pr->b->in->base_wall) / 1e9);
	}
}

/* The api and result of @pr's M_FAIL: "cudaIpcOpenMemHandle = cudaErrorInvalidValue (1)". */
static void fail_what(FILE *f, struct pair *pr)
{
	nrr_cursor *c;
	struct tok t = { .seq = pr->mf.seq, .phase = pr->mf.phase };
	const nrr_call *call = find_call(pr->m_in_b ? pr->b : pr->a, pr->mf.stream, &t, &c);
	if (call) {
		fprintf(f, "%s = ", call->fn->name);
		nrr_format_result(f, call);
	} else {
		fputs("?", f);
	}
	if (c)
		nrr_cursor_close(c);
}

#define ERR(f) nrr_color(f, NRR_COLOR_ERROR)
#define RANK(f) nrr_color(f, NRR_COLOR_RANK)
#define END(f) nrr_color_end(f)

static void text_headline(FILE *f, struct pair *pr)
{
	struct divg *d = &pr->d;
	const struct proc *p = pr->a ? pr->a : pr->b;
	const char *r = pr->m_in_b ? "B" : "A";
	if (pr->m == M_FAIL && !pr->m_is_d) {
		fprintf(f, "%sEarliest across ranks:%s %s%s%s thread %u, failure only in %s: ", ERR(f), END(f), RANK(f), p->label, END(f), pr->m_thread, r);
		fail_what(f, pr);
		fprintf(f, " at +%.6f s in %s\n", pr->m_t / 1e9, r);
		return;
	}
	if (pr->m == M_END) {
		fprintf(f, "%sEarliest across ranks:%s %s%s%s, abnormal end only in %s: %s at +%.6f s in %s (%s: %s)\n",
			ERR(f), END(f), RANK(f), p->label, END(f), r,
			end_text(pr->m_in_b ? pr->b : pr->a), pr->m_t / 1e9, r, pr->m_in_b ? "A" : "B",
			end_text(pr->m_in_b ? pr->a : pr->b));
		return;
	}
	const char *api = api_of(d);
	fprintf(f, "%sEarliest across ranks:%s %s%s%s thread %u, %s%s%s", ERR(f), END(f), RANK(f), p->label, END(f), d->thread_no, kind_text(d->kind), api ? ": " : "",
		api ? api : "");
	if (pr->m == M_FAIL)
		fprintf(f, " (fails only in %s)", r);
	fprintf(f, " at +%.6f s in A, +%.6f s in B\n", d->t_a / 1e9, d->t_b / 1e9);
}

static void json_meaningful(struct nrr_jw *w, struct pair *pr)
{
	nrr_jw_key(w, "meaningful");
	if (pr->m == M_NONE) {
		nrr_jw_null(w);
		return;
	}
	char kind[40];
	snprintf(kind, sizeof(kind), "%s_only_in_%s", pr->m == M_END ? "end" : "failure", pr->m_in_b ? "b" : "a");
	nrr_jw_obj(w, false);
	nrr_jw_kstr(w, "kind", kind);
	if (pr->m == M_END) {
		nrr_jw_kfixed(w, "t", pr->m_t / 1e9, 9);
		nrr_jw_kstr(w, "end_a", pr->a->end[0] ? pr->a->end : NULL);
		nrr_jw_kstr(w, "end_b", pr->b->end[0] ? pr->b->end : NULL);
		nrr_jw_end(w);
		return;
	}
	char *line = fail_line(pr), *what = NULL;
	size_t len = 0;
	FILE *wf = open_memstream(&what, &len);
	if (wf) {
		fail_what(wf, pr);
		fclose(wf);
	}
	nrr_jw_kuint(w, "thread", pr->m_thread);
	nrr_jw_kuint(w, "seq", pr->mf.seq);
	nrr_jw_kfixed(w, "t", pr->m_t / 1e9, 9);
	nrr_jw_kbool(w, "first_divergence", pr->m_is_d);
	nrr_jw_kstr(w, "failure", what);
	nrr_jw_kstr(w, "call", line);
	nrr_jw_end(w);
	free(line);
	free(what);
}

static void config_text(FILE *f, const struct config *c)
{
	if (!c->have)
		return;
	if (!c->n) {
		fputs("Configuration: no difference\n", f);
		return;
	}
	fprintf(f, "Configuration: %zu difference%s\n", c->n, c->n > 1 ? "s" : "");
	for (size_t i = 0; i < c->n; i++) {
		const struct nrr_runinfo_change *x = &c->ch[i];
		if (x->rank < 0)
			fprintf(f, "  %s (every rank): ", x->key);
		else
			fprintf(f, "  %s (rank %d): ", x->key, x->rank);
		fputs("A ", f);
		if (x->a)
			fprintf(f, "'%s'", x->a);
		else
			fputs("absent", f);
		fputs(", B ", f);
		if (x->b)
			fprintf(f, "'%s'", x->b);
		else
			fputs("absent", f);
		fputc('\n', f);
	}
}

static void config_json(struct nrr_jw *w, const struct config *c)
{
	nrr_jw_key(w, "config");
	nrr_jw_arr(w, false);
	for (size_t i = 0; c->have && i < c->n; i++) {
		const struct nrr_runinfo_change *x = &c->ch[i];
		nrr_jw_obj(w, false);
		nrr_jw_kstr(w, "key", x->key);
		nrr_jw_key(w, "rank");
		if (x->rank < 0)
			nrr_jw_null(w);
		else
			nrr_jw_int(w, x->rank);
		nrr_jw_kstr(w, "a", x->a);
		nrr_jw_kstr(w, "b", x->b);
		nrr_jw_end(w);
	}
	nrr_jw_end(w);
}

/* ---------------------------------------------------------- the report */

void nrr_diff_print_json(FILE *out, const struct nrr_diff *r)
{
	struct nrr_jw jw, *w = &jw;
	struct pair *pairs = r->pairs;
	nrr_jw_init(w, out, 0);
	nrr_jw_obj(w, false);
	nrr_jw_kstr(w, "a", r->ia->n ? nrr_reader_path(r->ia->r[0]) : NULL);
	nrr_jw_kstr(w, "b", r->ib->n ? nrr_reader_path(r->ib->r[0]) : NULL);
	nrr_jw_kbool(w, "same", !r->differ);
	config_json(w, &r->cfg);
	nrr_jw_kuint(w, "processes_a", r->ia->n);
	nrr_jw_kuint(w, "processes_b", r->ib->n);
	nrr_jw_kuint(w, "calls_compared", r->x.compared);
	nrr_jw_key(w, "divergences");
	nrr_jw_arr(w, false);
	for (size_t i = 0; i < r->np; i++) {
		if (!pairs[i].d.found && pairs[i].m == M_NONE)
			continue;
		struct lines L;
		lines_load(&pairs[i], &L);
		json_pair(w, &pairs[i], &L);
		lines_free(&L);
	}
	nrr_jw_end(w);
	char *hl = NULL;
	size_t hlen = 0;
	FILE *hf = r->ndiv ? open_memstream(&hl, &hlen) : NULL;
	if (hf) {
		text_headline(hf, &pairs[r->first]);
		fclose(hf);
		if (hl && hlen && hl[hlen - 1] == '\n')
			hl[hlen - 1] = 0;
	}
	nrr_jw_kstr(w, "headline", hl);
	free(hl);
	nrr_jw_key(w, "earliest");
	if (r->ndiv) {
		struct lines L;
		lines_load(&pairs[r->first], &L);
		json_pair(w, &pairs[r->first], &L);
		lines_free(&L);
	} else {
		nrr_jw_null(w);
	}
	nrr_jw_end(w);
	fputc('\n', out);
}

void nrr_diff_print_text(FILE *out, const struct nrr_diff *r)
{
	struct pair *pairs = r->pairs;
	config_text(out, &r->cfg);
	if (!r->ndiv) {
		fprintf(out, "Calls: %sno divergence%s (%zu processes in A, %zu in B, %llu calls compared)\n",
			nrr_color(out, NRR_COLOR_GOOD), nrr_color_end(out), r->ia->n, r->ib->n,
			(unsigned long long)r->x.compared);
		return;
	}
	fprintf(out, "Calls: %zu of %zu processes diverge; first divergence of each:\n", r->ndiv, r->np);
	for (size_t i = 0; i < r->np; i++) {
		if (!pairs[i].d.found && pairs[i].m == M_NONE)
			continue;
		if (pairs[i].d.found) {
			struct lines L;
			lines_load(&pairs[i], &L);
			text_pair(out, &pairs[i], &L);
			lines_free(&L);
		} else {
			fprintf(out, "%s: the same calls, but\n", (pairs[i].a ? pairs[i].a : pairs[i].b)->label);
		}
		text_meaningful(out, &pairs[i]);
	}
	text_headline(out, &pairs[r->first]);
}
