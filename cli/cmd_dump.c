/* SPDX-License-Identifier: MIT */
/* cmd_dump.c - `ncclrr dump`: one line per recorded call, in time order. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "callfmt.h"
#include "cmds.h"
#include "inputs.h"
#include "progress.h"

const char cmd_dump_usage[] =
	"Usage: ncclrr dump [OPTIONS] FILE|DIR...\n"
	"\n"
	"Print one line per recorded call of the traces (every .nrt file of a DIR),\n"
	"all threads and processes merged in time order:\n"
	"  TIME HOST:PID/TID #SEQ name(arg=value, ...) = RESULT DURATION\n"
	"TIME is seconds since the earliest trace started. Calls that contain other\n"
	"calls print an '<unfinished ...>' line and a '<... resumed>' line; calls\n"
	"that never returned are marked '<in flight at end of trace>'. Identical\n"
	"polling answers show as '[+N identical, TIME]'. NCCL's proxy RPCs are\n"
	"decoded (ncclProxyRequest, ncclProxyResponse) for NCCL 2.19 to 2.28; for a\n"
	"trace of another NCCL a note on stderr says they are not (metadata proxy_rpc).\n"
	"With two CPUs or more, a second thread formats and writes the lines while\n"
	"the first reads and merges the traces (`taskset -c 0` keeps one thread).\n"
	"\n"
	"Options:\n"
	NRR_SELECT_USAGE
	"  --meta             print each file's metadata first\n"
	NRR_USAGE_STRICT
	"  -h, --help         this text\n"
	"      --version      print the version\n"
	"\n"
	"Exit status: 0 success, 2 bad usage or unreadable trace,\n"
	NRR_USAGE_EXIT_SKIPPED;


/* Traces whose NCCL's proxy RPCs the tracer does not decode (metadata
 * proxy_rpc, written by the tracer with the versions it decodes): one
 * line per NCCL version, on stderr. */
static void proxy_note(struct nrr_inputs *in)
{
	for (size_t i = 0; i < in->n; i++) {
		char v[128];
		const char *p = nrr_reader_meta(in->r[i], "proxy_rpc");
		if (!p || strncmp(p, "not decoded", 11) != 0)
			continue;
		snprintf(v, sizeof(v), "%s", p);   /* (nrr_reader_meta answers in one buffer) */
		size_t n = 0;
		bool first = true;
		for (size_t j = 0; j < in->n && first; j++) {
			const char *q = nrr_reader_meta(in->r[j], "proxy_rpc");
			bool same = q && !strcmp(q, v);
			first = !(same && j < i);
			n += same && j >= i;
		}
		if (first)
			fprintf(stderr, "ncclrr dump: note: NCCL's proxy RPCs are %s (%zu file%s, first %s): no ncclProxyRequest/"
				"ncclProxyResponse lines; their bytes are in the proxy sockets' send/recv calls\n",
				v, n, n == 1 ? "" : "s", nrr_reader_path(in->r[i]));
	}
}

/* "host:pid/tid " prefixes of dump lines, made once per thread: a table
 * keyed by (reader, tid), open addressing, grown at half full. */
struct who_cache {
	struct who_ent { uint64_t key; char *s; size_t len; } *e;   /* key 0: empty */
	size_t cap, n;
};

static void who_free(struct who_cache *w)
{
	for (size_t i = 0; i < w->cap; i++)
		free(w->e[i].s);
	free(w->e);
}

static size_t who_slot(const struct who_cache *w, uint64_t key)
{
	size_t i = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & (w->cap - 1);
	while (w->e[i].key && w->e[i].key != key)
		i = (i + 1) & (w->cap - 1);
	return i;
}

/* @return "who/tid" of reader @ri's thread @tid (its length in *@len), or
 * NULL when out of memory. */
static const char *who_get(struct who_cache *w, const struct nrr_inputs *in, size_t ri, uint32_t tid, size_t *len)
{
	uint64_t key = ((uint64_t)(ri + 1) << 32) | tid;
	if (w->cap) {
		struct who_ent *e = &w->e[who_slot(w, key)];
		if (e->key == key) {
			*len = e->len;
			return e->s;
		}
	}
	if (2 * (w->n + 1) > w->cap) {
		struct who_cache g = { calloc(w->cap ? 2 * w->cap : 64, sizeof(*g.e)), w->cap ? 2 * w->cap : 64, w->n };
		if (!g.e)
			return NULL;
		for (size_t i = 0; i < w->cap; i++)
			if (w->e[i].key)
				g.e[who_slot(&g, w->e[i].key)] = w->e[i];
		free(w->e);
		*w = g;
	}
	struct who_ent *e = &w->e[who_slot(w, key)];
	size_t wl = strlen(in->who[ri]);
	char t[32], *s = malloc(wl + 1 + sizeof(t));
	if (!s)
		return NULL;
	nrr_out o;   /* the tid */
	nrr_out_init(&o, NULL, t, sizeof(t));
	nrr_out_u64(&o, tid);
	memcpy(s, in->who[ri], wl);
	s[wl] = '/';
	memcpy(s + wl + 1, t, o.n);
	*e = (struct who_ent){ key, s, wl + 1 + o.n };
	w->n++;
	*len = e->len;
	return s;
}

/* Formatting on a second thread.  The main thread reads, decodes,
 * merges and selects; each selected call is copied (its fields, its
 * function's arguments, the bytes they point to) into a batch, and the
 * formatter thread formats full batches in the order they were filled and
 * writes them.  Calls point into chunk buffers that the next read reuses,
 * hence the copy.  With one CPU, or no thread, the main thread formats
 * each call itself, as before. */
#define BATCH_SIZE (1u << 17)
#define NBATCH 4

struct batch {
	char *buf;
	size_t cap, n;
} __attribute__((aligned(64)));   /* a batch's fields are not on the lines the other thread writes */

/* One call in a batch: this header, the call up to its args, its
 * function's args, its log fields, then the bytes of its byte args and
 * log text.  Sizes are multiples of 8.  Its time and "host:pid/tid" are
 * made by the thread that formats it (from @ri and the call): that took
 * a tenth of the reading thread's time, which is dump's limit. */
struct rec {
	uint32_t size, ri;
};

#define CALL_HEAD offsetof(nrr_call, args)
#define CALL_TAIL (sizeof(nrr_call) - offsetof(nrr_call, log_level))

struct pipe_q {
	struct batch b[NBATCH];
	pthread_mutex_t mu;
	pthread_cond_t cv;
	size_t head, full;   /* the formatter's next batch; batches filled and not yet formatted */
	bool done;           /* the reader filled its last batch */
	int stop;            /* the formatter's output failed (o->err): read no further */
	nrr_out *o;
	const struct nrr_inputs *in;
};

static size_t rec_size(const nrr_call *c, unsigned nargs)
{
	size_t n = sizeof(struct rec) + CALL_HEAD + nargs * sizeof(nrr_value) + CALL_TAIL;
	for (uint32_t m = nargs ? c->fn->b_mask & c->present : 0; m; m &= m - 1)
		n += c->args[__builtin_ctz(m)].len;
	if (c->kind == NRR_CALL_LOG)
		n += c->log_len;
	return (n + 7) & ~(size_t)7;
}

/* Copy @c of input @ri into @dst (rec_size() bytes). */
static void rec_put(char *dst, size_t size, const nrr_call *c, unsigned nargs, size_t ri)
{
	struct rec h = { (uint32_t)size, (uint32_t)ri };
	memcpy(dst, &h, sizeof(h));
	char *p = dst + sizeof(h);
	memcpy(p, c, CALL_HEAD);
	p += CALL_HEAD;
	memcpy(p, c->args, nargs * sizeof(nrr_value));
	p += nargs * sizeof(nrr_value);
	memcpy(p, &c->log_level, CALL_TAIL);
	p += CALL_TAIL;
	for (uint32_t m = nargs ? c->fn->b_mask & c->present : 0; m; m &= m - 1) {
		const nrr_value *v = &c->args[__builtin_ctz(m)];
		if (v->len)
			memcpy(p, v->p, v->len);
		p += v->len;
	}
	if (c->kind == NRR_CALL_LOG && c->log_len)
		memcpy(p, c->log, c->log_len);
}

/* Format call @c of input @ri as a line of @o.  @return 0, or ENOMEM
 * (@wc, the thread's "host:pid/tid" strings). */
static int put_line(nrr_out *o, struct who_cache *wc, const struct nrr_inputs *in, size_t ri, const nrr_call *c)
{
	size_t wl;
	const char *who = who_get(wc, in, ri, c->tid, &wl);
	if (!who)
		return ENOMEM;
	nrr_out_call(o, c, nrr_inputs_time(in, ri, nrr_call_key(c)), who, wl);
	nrr_out_putc(o, '\n');
	return 0;
}

/* Format the call at @src (rec_put's layout); @return its size, 0 when
 * out of memory. */
static size_t rec_format(nrr_out *o, struct who_cache *wc, const struct nrr_inputs *in, const char *src)
{
	struct rec h;
	nrr_call c;
	memcpy(&h, src, sizeof(h));
	const char *p = src + sizeof(h);
	memcpy(&c, p, CALL_HEAD);
	p += CALL_HEAD;
	unsigned nargs = c.fn ? c.fn->nargs : 0;
	memcpy(c.args, p, nargs * sizeof(nrr_value));
	p += nargs * sizeof(nrr_value);
	memcpy(&c.log_level, p, CALL_TAIL);
	p += CALL_TAIL;
	for (uint32_t m = nargs ? c.fn->b_mask & c.present : 0; m; m &= m - 1) {
		nrr_value *v = &c.args[__builtin_ctz(m)];
		v->p = (const uint8_t *)p;
		p += v->len;
	}
	if (c.kind == NRR_CALL_LOG)
		c.log = p;
	return put_line(o, wc, in, h.ri, &c) ? 0 : h.size;
}

static void *formatter(void *arg)
{
	struct pipe_q *q = arg;
	/* its own copy: the reading thread's locals (the call it is handed,
	 * written per call) share cache lines with the caller's nrr_out, and
	 * the two threads writing those lines took 2.4 times the CPU */
	nrr_out o = *q->o;
	struct who_cache wc = { 0 };
	for (;;) {
		pthread_mutex_lock(&q->mu);
		while (!q->full && !q->done)
			pthread_cond_wait(&q->cv, &q->mu);
		if (!q->full) {
			pthread_mutex_unlock(&q->mu);
			break;
		}
		struct batch *b = &q->b[q->head];
		pthread_mutex_unlock(&q->mu);
		for (size_t at = 0, n; at < b->n && !o.err; at += n)
			if (!(n = rec_format(&o, &wc, q->in, b->buf + at)))
				o.err = ENOMEM;   /* its who_cache */
		pthread_mutex_lock(&q->mu);
		b->n = 0;
		q->head = (q->head + 1) % NBATCH;
		q->full--;
		if (o.err)
			__atomic_store_n(&q->stop, 1, __ATOMIC_RELAXED);
		pthread_cond_signal(&q->cv);
		pthread_mutex_unlock(&q->mu);
	}
	who_free(&wc);
	nrr_out_flush(&o);
	*q->o = o;
	return NULL;
}

/* Hand the batch being filled (q->b[(head + full) % NBATCH]), @n bytes
 * of it, to the formatter and wait for a free one.  @return the free one.
 * The reading thread counts a batch's bytes in a local until it hands it
 * over: a count in the batch itself, on a line the formatter writes, was
 * a cache miss per call (a quarter of the reading thread's time). */
static struct batch *batch_pass(struct pipe_q *q, size_t n)
{
	pthread_mutex_lock(&q->mu);
	q->b[(q->head + q->full) % NBATCH].n = n;
	q->full++;
	pthread_cond_signal(&q->cv);
	while (q->full == NBATCH)
		pthread_cond_wait(&q->cv, &q->mu);
	struct batch *b = &q->b[(q->head + q->full) % NBATCH];
	pthread_mutex_unlock(&q->mu);
	return b;
}

/* Whether a second thread can format: more than one CPU to run on. */
static bool two_cpus(void)
{
	cpu_set_t set;
	return sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 1;
}

int cmd_dump(int argc, char **argv)
{
	static const struct option opts[] = {
		NRR_SELECT_OPTIONS,
		{ "meta", no_argument, NULL, 'm' },
		{ NULL, 0, NULL, 0 },
	};
	struct nrr_select sel;
	bool meta = false;
	int c, taken;
	nrr_select_init(&sel);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		taken = nrr_select_option(&sel, "dump", c, optarg);
		if (taken == 1)
			continue;
		if (taken)
			return taken;
		switch (c) {
		case 'm': meta = true; break;
		default:
			return nrr_cli_opt_error("dump", c, argv[optind - 1]);
		}
	}

	struct nrr_inputs in;
	if (nrr_inputs_open(&in, "dump", argv + optind, argc - optind, sel.ranks))
		return NRR_EXIT_USAGE;
	if (nrr_select_resolve(&sel, &in)) {
		nrr_inputs_close(&in);
		return NRR_EXIT_USAGE;
	}
	if (meta) {
		for (size_t i = 0; i < in.n; i++) {
			size_t len;
			const char *t = nrr_reader_meta_text(in.r[i], &len);
			printf("# %s\n", nrr_reader_path(in.r[i]));
			const char *p = t, *end = t + len;
			while (p < end) {
				const char *nl = memchr(p, '\n', (size_t)(end - p));
				size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
				printf("#   %.*s\n", (int)n, p);
				p += n + 1;
			}
		}
	}
	proxy_note(&in);
	nrr_merge *m;
	int rc = nrr_merge_open(&m, in.r, in.n);
	if (rc) {
		fprintf(stderr, "ncclrr dump: %s\n", nrr_strerror(rc));
		nrr_inputs_close(&in);
		return NRR_EXIT_USAGE;
	}
	const nrr_call *call;
	size_t ri;
	struct who_cache wc = { 0 };
	static char obuf[1 << 18];
	nrr_out o;
	fflush(stdout);   /* --meta's lines first */
	nrr_out_init_fd(&o, STDOUT_FILENO, obuf, sizeof(obuf));
	struct nrr_progress prog;
	nrr_progress_init(&prog, &in);
	struct pipe_q q = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .o = &o, .in = &in };
	pthread_t fmt;
	bool piped = two_cpus();
	for (size_t i = 0; piped && i < NBATCH; i++)
		piped = (q.b[i].buf = malloc(q.b[i].cap = BATCH_SIZE)) != NULL;
	piped = piped && pthread_create(&fmt, NULL, formatter, &q) == 0;
	struct batch *b = &q.b[0];
	size_t bn = 0;   /* bytes of b filled */
	int werr = 0;   /* ENOMEM of this thread: its who_cache (formatting here) or a batch */
	while ((rc = nrr_merge_next(m, &call, &ri)) == 0) {
		nrr_progress_note(&prog, ri, call);
		if (!nrr_select_call(&in, ri, call))
			continue;   /* past --to: other streams may still be earlier */
		if (!piped) {
			if ((werr = put_line(&o, &wc, &in, ri, call)) || o.err)
				break;
			continue;
		}
		unsigned nargs = call->fn ? call->fn->nargs : 0;
		size_t sz = rec_size(call, nargs);
		if (sz > b->cap - bn) {
			if (bn) {
				b = batch_pass(&q, bn);
				bn = 0;
				if (__atomic_load_n(&q.stop, __ATOMIC_RELAXED))
					break;
			}
			if (sz > b->cap) {   /* a call of large byte args: a batch of its own */
				char *nb = realloc(b->buf, sz);
				if (!nb) {
					werr = ENOMEM;
					break;
				}
				b->buf = nb;
				b->cap = sz;
			}
		}
		rec_put(b->buf + bn, sz, call, nargs, ri);
		bn += sz;
	}
	if (piped) {
		pthread_mutex_lock(&q.mu);
		b->n = bn;
		q.full += bn != 0;
		q.done = true;
		pthread_cond_signal(&q.cv);
		pthread_mutex_unlock(&q.mu);
		pthread_join(fmt, NULL);
	}
	for (size_t i = 0; i < NBATCH; i++)
		free(q.b[i].buf);
	if (werr && !o.err)
		o.err = werr;
	nrr_out_flush(&o);
	who_free(&wc);
	nrr_progress_end(&prog);
	int ret = NRR_EXIT_OK;
	if (rc != NRR_EEOF && rc != 0) {
		fflush(stdout);
		nrr_print_diag("dump", nrr_merge_diag(m));
		ret = NRR_EXIT_USAGE;
	}
	nrr_merge_close(m);
	nrr_inputs_close(&in);
	if ((o.err || fflush(stdout) == EOF) && (o.err ? o.err : errno) != EPIPE) {
		fprintf(stderr, "ncclrr dump: cannot write output: %s\n", strerror(o.err ? o.err : errno));
		ret = NRR_EXIT_USAGE;
	}
	return ret;
}
