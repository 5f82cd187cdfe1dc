/* SPDX-License-Identifier: MIT */
/*
 * test_roundtrip.c - random calls from many threads through the writer and
 * back through cursors, seek and merge: every call, argument, result,
 * nesting phase and coalesced repeat must come back exactly.
 *   test_roundtrip [SEED]   (or NCCLRR_TEST_SEED)
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "nrt.h"
#include "nrt_internal.h"
#include "../lib/check.h"

#define NTHREADS 8
#define NOPS 100000

static const char schema[] =
	"ncclrr-schema 1\n"
	"enum R\nv 0 OK\nv 1 BAD\nv 600 NOT_READY\n"
	"fn 1 parent dom curesult:R blocking\na in a u\na in b i\n"
	"fn 2 leaf dom curesult:R\na in a u\na in s str\na out o x\na inout io bytes\n"
	"fn 3 pollq dom curesult:R poll\na in h handle:stream\n"
	"fn 4 big dom int\na in data bytes\na out e enum:R\n"
	"end\n";

enum { F_PARENT = 1, F_LEAF = 2, F_POLL = 3, F_BIG = 4 };

struct ev {
	uint8_t phase, kind, depth;
	uint32_t fn;
	uint64_t seq;
	uint64_t a;      /* u arg */
	int64_t b;       /* i arg */
	int64_t result;
	uint32_t err;
	uint64_t dseed;  /* bytes/str content seed */
	uint32_t dlen;   /* bytes/str original length */
	uint32_t dlen2;  /* second byte field (inout io leave value) */
	uint8_t cont;    /* a NOT_READY poll right after two identical ones: must
			  * be coalesced into the previous record (REPEAT) unless
			  * a chunk boundary lies between them (after one only, it
			  * may end a CYCLE: ready, NOT_READY, ready, NOT_READY) */
	uint8_t folded;  /* may be folded into the record before (a NOT_READY
			  * poll right after an identical one: REPEAT; a
			  * repetition of an alternating sequence after its
			  * first period: CYCLE), so a seek, which lands on
			  * record starts, may pass it */
};

struct thr {
	nrr_writer *w;
	uint64_t seed;
	uint32_t tid;
	struct ev *ev;
	size_t nev, cap;
	uint64_t seq;
	int idx;
};

static struct ev *push(struct thr *t)
{
	if (t->nev == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 4096;
		t->ev = realloc(t->ev, t->cap * sizeof(*t->ev));
		CHECK_FATAL(t->ev, "out of memory");
	}
	return &t->ev[t->nev++];
}

static void fill(uint8_t *b, size_t n, uint64_t seed)
{
	uint64_t s = seed | 1;
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)rnd(&s);
}

static void fill_str(char *b, size_t n, uint64_t seed)
{
	uint64_t s = seed | 1;
	for (size_t i = 0; i < n; i++)
		b[i] = (char)('a' + rnd(&s) % 26);
	b[n] = 0;
}

struct frame {
	size_t enter_ev;   /* index of its ENTER placeholder, or SIZE_MAX */
	struct ev e;
};

static void announce(struct thr *t, struct frame *st, int depth)
{
	if (depth && st[depth - 1].enter_ev == SIZE_MAX) {
		st[depth - 1].enter_ev = t->nev;
		struct ev e = st[depth - 1].e;
		e.phase = NRR_PHASE_ENTER;
		*push(t) = e;
	}
}

static void *writer_main(void *arg)
{
	struct thr *t = arg;
	nrr_tls *w = nrr_writer_thread(t->w);
	uint64_t s = t->seed;
	struct frame st[8];
	int depth = 0;
	static __thread uint8_t buf[3 * NRR_BYTES_CAP_DEFAULT];
	char str[64];
	t->tid = (uint32_t)syscall(SYS_gettid);
	uint64_t handle = 0x1000 + (uint64_t)t->idx;
	bool last_notready = false;   /* the last record written was a NOT_READY poll */
	for (int op = 0; op < NOPS; op++) {
		uint64_t r = rnd(&s) % 100;
		bool was_notready = last_notready;
		last_notready = false;
		if (r < 12 && depth < 6) {
			struct frame *f = &st[depth];
			memset(&f->e, 0, sizeof(f->e));
			f->enter_ev = SIZE_MAX;
			announce(t, st, depth);
			f->e.kind = NRR_CALL;
			f->e.fn = F_PARENT;
			f->e.depth = (uint8_t)depth;
			f->e.seq = ++t->seq;
			f->e.a = rnd(&s);
			f->e.b = -(int64_t)(rnd(&s) >> 3);
			uint8_t *p = nrr_enter_begin(w, F_PARENT, 2 * NRR_VAR_MAX);
			p = nrr_put_uvar(p, f->e.a);
			p = nrr_put_svar(p, f->e.b);
			nrr_enter_end(w, p);
			depth++;
		} else if (r < 24 && depth > 0) {
			struct frame *f = &st[--depth];
			f->e.result = (int64_t)(rnd(&s) % 2);
			uint8_t *p = nrr_leave_begin(w, f->e.result, 0, 0);
			nrr_leave_end(w, p, false);
			f->e.phase = f->enter_ev == SIZE_MAX ? NRR_PHASE_CALL : NRR_PHASE_RESUME;
			*push(t) = f->e;
		} else if (r < 40 && r >= 35) {
			/* alternating answers on two handles (NCCL's proxy thread
			 * polling two sockets), sometimes with an identical ready
			 * call between (recv EAGAIN, then setsockopt): CYCLE */
			int n = 1 + (int)(rnd(&s) % 20);
			unsigned per = 2 + (unsigned)(rnd(&s) % 2);
			announce(t, st, depth);
			for (int k = 0; k < n; k++)
				for (unsigned j = 0; j < per; j++) {
					uint64_t h = handle + 0x100 * (j + 1);
					int64_t res = j == 2 ? 0 : 600;
					uint8_t *p = nrr_enter_begin(w, F_POLL, NRR_VAR_MAX);
					p = nrr_put_uvar(p, h);
					nrr_enter_end(w, p);
					p = nrr_leave_begin(w, res, 0, 0);
					nrr_leave_end(w, p, res == 600);
					*push(t) = (struct ev){ .phase = NRR_PHASE_CALL, .kind = NRR_CALL, .depth = (uint8_t)depth,
								       .fn = F_POLL, .seq = ++t->seq, .a = h, .result = res,
								       .folded = k > 0 };
				}
		} else if (r < 40) {
			int n = 1 + (int)(rnd(&s) % 30);
			bool ends_ready = rnd(&s) % 2;
			int nr_before = was_notready ? 1 : 0;   /* NOT_READY polls right before this one */
			announce(t, st, depth);
			for (int k = 0; k < n; k++) {
				int64_t res = (k == n - 1 && ends_ready) ? 0 : 600;
				uint8_t *p = nrr_enter_begin(w, F_POLL, NRR_VAR_MAX);
				p = nrr_put_uvar(p, handle);
				nrr_enter_end(w, p);
				p = nrr_leave_begin(w, res, 0, 0);
				nrr_leave_end(w, p, res == 600);
				*push(t) = (struct ev){ .phase = NRR_PHASE_CALL, .kind = NRR_CALL, .depth = (uint8_t)depth,
							       .fn = F_POLL, .seq = ++t->seq, .a = handle, .result = res,
							       .cont = was_notready && nr_before >= 2 && res == 600,
							       .folded = was_notready && nr_before >= 1 && res == 600 };
				was_notready = res == 600;
				nr_before = res == 600 ? nr_before + 1 : 0;
			}
			last_notready = was_notready;
		} else if (r < 45) {
			announce(t, st, depth);
			uint64_t seed = rnd(&s);
			size_t n = 1 + rnd(&s) % 60;
			fill_str(str, n, seed);
			nrr_log(w, 3, str, n);
			*push(t) = (struct ev){ .kind = NRR_CALL_LOG, .depth = (uint8_t)depth, .seq = t->seq,
						       .dseed = seed, .dlen = (uint32_t)n, .b = 3 };
		} else if (r < 50) {
			announce(t, st, depth);
			struct ev e = { .phase = NRR_PHASE_CALL, .kind = NRR_CALL, .depth = (uint8_t)depth, .fn = F_BIG, .seq = ++t->seq };
			e.dseed = rnd(&s);
			e.dlen = (uint32_t)(rnd(&s) % (2 * NRR_BYTES_CAP_DEFAULT + 10));
			fill(buf, e.dlen, e.dseed);
			uint8_t *p = nrr_enter_begin(w, F_BIG, NRR_BYTES_MAX(NRR_BYTES_CAP_DEFAULT));
			p = nrr_put_bytes(p, buf, e.dlen, NRR_BYTES_CAP_DEFAULT);
			nrr_enter_end(w, p);
			e.result = -(int64_t)(rnd(&s) % 1000);
			e.err = (uint32_t)(rnd(&s) % 150);
			e.b = (int64_t)(rnd(&s) % 3) - 1;
			p = nrr_leave_begin(w, e.result, e.err, NRR_VAR_MAX);
			p = nrr_put_svar(p, e.b);
			nrr_leave_end(w, p, false);
			*push(t) = e;
		} else {
			announce(t, st, depth);
			struct ev e = { .phase = NRR_PHASE_CALL, .kind = NRR_CALL, .depth = (uint8_t)depth, .fn = F_LEAF, .seq = ++t->seq };
			e.a = rnd(&s) >> (rnd(&s) % 64);
			e.dseed = rnd(&s);
			e.dlen = (uint32_t)(rnd(&s) % 40);
			e.dlen2 = (uint32_t)(rnd(&s) % 100);
			fill_str(str, e.dlen, e.dseed);
			fill(buf, e.dlen2, e.dseed + 1);
			uint8_t *p = nrr_enter_begin(w, F_LEAF, 3 * NRR_VAR_MAX + 64 + 200);
			p = nrr_put_uvar(p, e.a);
			p = nrr_put_bytes(p, str, e.dlen, NRR_BYTES_CAP_DEFAULT);
			p = nrr_put_bytes(p, buf, e.dlen2, NRR_BYTES_CAP_DEFAULT);
			nrr_enter_end(w, p);
			e.result = 1;
			e.b = (int64_t)rnd(&s);   /* out o */
			fill(buf, e.dlen2 / 2, e.dseed + 2);
			p = nrr_leave_begin(w, e.result, 0, 2 * NRR_VAR_MAX + 100);
			p = nrr_put_uvar(p, (uint64_t)e.b);
			p = nrr_put_bytes(p, buf, e.dlen2 / 2, NRR_BYTES_CAP_DEFAULT);
			nrr_leave_end(w, p, false);
			*push(t) = e;
		}
	}
	for (int d = depth - 1; d >= 0; d--) {  /* still open: in flight at the end */
		struct ev e = st[d].e;
		e.phase = NRR_PHASE_INFLIGHT;
		*push(t) = e;
	}
	return NULL;
}

static bool bytes_eq(const nrr_value *v, uint64_t seed, uint32_t len, bool str)
{
	static uint8_t b[3 * NRR_BYTES_CAP_DEFAULT + 1];
	if (v->total != len || v->len != (len < NRR_BYTES_CAP_DEFAULT ? len : NRR_BYTES_CAP_DEFAULT))
		return false;
	if (str)
		fill_str((char *)b, len, seed);
	else
		fill(b, len, seed);
	return memcmp(b, v->p, v->len) == 0;
}

/*
 * Compare what a cursor gives, from @first (already read, or NULL) to the
 * end, with the thread's expected events from index @i. After a seek
 * (@seek_seq != 0) calls opened before the seek point may come back with
 * args_lost set; they are counted in @lost. @return events matched.
 */
static size_t compare_from(nrr_cursor *c, const nrr_call *first, struct thr *t, size_t i, const char *what,
			   uint64_t seek_seq, uint64_t *coalesced, uint64_t *lost)
{
	const nrr_call *call = first;
	uint64_t last_key = 0, prev_chunk = UINT64_MAX, prev2_chunk = UINT64_MAX;
	int rc = 0;
	size_t i0 = i;
	while (call || (rc = nrr_cursor_next(c, &call)) == 0) {
		CHECK(nrr_call_key(call) >= last_key, "%s: time goes back at event %zu", what, i);
		last_key = nrr_call_key(call);
		CHECK(call->tid == t->tid, "%s: tid", what);
		for (uint64_t k = 0; k <= call->repeat; k++, i++) {
			if (i >= t->nev) {
				CHECK(0, "%s: more events than written", what);
				return i - i0;
			}
			const struct ev *e = &t->ev[i];
			CHECK(call->kind == e->kind, "%s: event %zu kind %d vs %d", what, i, call->kind, e->kind);
			if (e->kind == NRR_CALL_LOG) {
				nrr_value v = { .p = (const uint8_t *)call->log, .len = call->log_len, .total = call->log_len };
				CHECK(bytes_eq(&v, e->dseed, e->dlen, true) && call->log_level == 3, "%s: log %zu", what, i);
				CHECK(call->depth == e->depth, "%s: log depth", what);
				continue;
			}
			if (call->kind != NRR_CALL || call->fn->id != e->fn) {
				CHECK(0, "%s: event %zu fn %u vs %u", what, i, call->fn ? call->fn->id : 0, e->fn);
				return i - i0;
			}
			CHECK(call->phase == e->phase, "%s: event %zu (fn %u seq %llu) phase %d vs %d", what, i, e->fn,
			      (unsigned long long)e->seq, call->phase, e->phase);
			CHECK(call->seq + k == e->seq, "%s: event %zu seq %llu vs %llu", what, i,
			      (unsigned long long)(call->seq + k), (unsigned long long)e->seq);
			CHECK(call->depth == e->depth, "%s: event %zu depth %d vs %d", what, i, call->depth, e->depth);
			if (e->phase == NRR_PHASE_CALL || e->phase == NRR_PHASE_RESUME)
				CHECK(call->done && call->result == e->result, "%s: event %zu result %lld vs %lld", what, i,
				      (long long)call->result, (long long)e->result);
			/* the writer folds a poll into the previous one only when that
			 * one's enter and leave share a chunk; its enter may sit in the
			 * chunk of the event before it */
			if (e->fn == F_POLL && e->cont && k == 0 && prev2_chunk == prev_chunk)
				CHECK(call->chunk_offset != prev_chunk, "%s: poll seq %llu not coalesced with the identical "
				      "NOT_READY poll before it (same chunk at %llu)", what, (unsigned long long)e->seq,
				      (unsigned long long)prev_chunk);
			if (call->args_lost) {
				/* only a call opened before where reading started */
				CHECK(seek_seq && e->seq < seek_seq && e->fn == F_PARENT &&
				      (e->phase == NRR_PHASE_RESUME || e->phase == NRR_PHASE_INFLIGHT),
				      "%s: event %zu (seq %llu phase %d) has args_lost (read from seq %llu)", what, i,
				      (unsigned long long)e->seq, e->phase, (unsigned long long)seek_seq);
				if (lost)
					(*lost)++;
				continue;
			}
			switch (e->fn) {
			case F_PARENT:
				CHECK(call->args[0].u == e->a && (int64_t)call->args[1].u == e->b, "%s: parent args %zu", what, i);
				break;
			case F_POLL:
				CHECK(call->args[0].u == e->a, "%s: poll handle", what);
				if (k && coalesced)
					(*coalesced)++;
				break;
			case F_BIG:
				CHECK(bytes_eq(&call->args[0], e->dseed, e->dlen, false), "%s: big bytes %zu (len %u)", what, i, e->dlen);
				CHECK((int64_t)call->args[1].u == e->b && call->err == e->err, "%s: big out", what);
				break;
			case F_LEAF:
				CHECK(call->args[0].u == e->a, "%s: leaf a", what);
				CHECK(bytes_eq(&call->args[1], e->dseed, e->dlen, true), "%s: leaf str %zu", what, i);
				CHECK(call->args[2].u == (uint64_t)e->b, "%s: leaf out", what);
				CHECK(bytes_eq(&call->args[3], e->dseed + 2, e->dlen2 / 2, false), "%s: leaf inout", what);
				break;
			}
		}
		prev2_chunk = prev_chunk;
		prev_chunk = call->chunk_offset;
		call = NULL;
	}
	CHECK(rc == NRR_EEOF, "%s: cursor ended with %d (%s)", what, rc, nrr_cursor_diag(c)->msg);
	CHECK(i == t->nev, "%s: %zu events read, %zu written", what, i, t->nev);
	return i - i0;
}

/* Compare one stream with its thread's expected events. */
static void verify_stream(nrr_reader *r, uint32_t si, struct thr *t, const char *what)
{
	nrr_cursor *c;
	CHECK_FATAL(nrr_cursor_open(&c, r, si) == 0, "cursor");
	uint64_t coalesced = 0;
	compare_from(c, NULL, t, 0, what, 0, &coalesced, NULL);
	CHECK(coalesced > 0, "%s: polling was coalesced", what);
	nrr_cursor_close(c);
}

/* Seek to random seqs: land on the first call at or after it, then read
 * on to the end exactly as written; calls opened in an earlier chunk come
 * back with args_lost. @return how many args_lost events were seen. */
static uint64_t verify_seek(nrr_reader *r, uint32_t si, struct thr *t, uint64_t *s, const char *what)
{
	nrr_cursor *c;
	CHECK_FATAL(nrr_cursor_open(&c, r, si) == 0, "cursor");
	/* expected events that a seek can land on: CALL and ENTER */
	size_t n = 0;
	size_t *idx = malloc(t->nev * sizeof(*idx));
	CHECK_FATAL(idx, "out of memory");
	for (size_t i = 0; i < t->nev; i++)
		if (t->ev[i].kind == NRR_CALL && (t->ev[i].phase == NRR_PHASE_CALL || t->ev[i].phase == NRR_PHASE_ENTER))
			idx[n++] = i;
	CHECK_FATAL(n, "no calls");
	uint64_t lost = 0, maxseq = t->ev[idx[n - 1]].seq;
	const nrr_call *call;
	for (int k = 0; k < 16; k++) {
		uint64_t target = 1 + rnd(s) % maxseq;
		int rc = nrr_cursor_seek(c, target);
		CHECK(rc == 0, "%s: seek %llu: %d", what, (unsigned long long)target, rc);
		if (rc)
			continue;
		rc = nrr_cursor_next(c, &call);
		CHECK_FATAL(rc == 0, "%s: read after seek %llu", what, (unsigned long long)target);
		/* it must land on a record start at or after target, with nothing
		 * written in between but repeats of one coalesced record */
		size_t lo = 0;
		while (lo < n && t->ev[idx[lo]].seq < call->seq)
			lo++;
		CHECK_FATAL(lo < n && t->ev[idx[lo]].seq == call->seq, "%s: seek %llu landed on unknown seq %llu", what,
			    (unsigned long long)target, (unsigned long long)call->seq);
		CHECK(call->seq <= target || lo == 0 || t->ev[idx[lo - 1]].seq < target ||
		      (t->ev[idx[lo - 1]].fn == F_POLL && t->ev[idx[lo - 1]].folded),
		      "%s: seek %llu skipped seq %llu to land on %llu", what, (unsigned long long)target,
		      (unsigned long long)t->ev[idx[lo - 1]].seq, (unsigned long long)call->seq);
		CHECK(call->seq + call->repeat >= target, "%s: seek %llu landed before it (seq %llu)", what,
		      (unsigned long long)target, (unsigned long long)call->seq);
		char w2[96];
		snprintf(w2, sizeof(w2), "%s after seek %llu", what, (unsigned long long)target);
		compare_from(c, call, t, idx[lo], w2, call->seq, NULL, &lost);
	}
	CHECK(nrr_cursor_seek(c, maxseq + 1000000) == NRR_ENOTFOUND, "%s: seek past the end", what);
	free(idx);
	nrr_cursor_close(c);
	return lost;
}

/* Merge over @n readers: non-decreasing wall order, every event once. */
static void verify_merge(nrr_reader **r, size_t nr, size_t total, const char *what)
{
	nrr_merge *m;
	CHECK_FATAL(nrr_merge_open(&m, r, nr) == 0, "merge");
	const nrr_call *call;
	size_t ri, n = 0;
	uint64_t last = 0;
	int rc;
	while ((rc = nrr_merge_next(m, &call, &ri)) == 0) {
		CHECK_FATAL(ri < nr, "reader index");
		uint64_t k = nrr_reader_wall(r[ri], nrr_call_key(call));
		CHECK(k >= last, "%s: merge order goes back at event %zu", what, n);
		last = k;
		n += 1 + call->repeat;
	}
	CHECK(rc == NRR_EEOF, "%s: merge end %d", what, rc);
	CHECK(n == total, "%s: merge saw %zu events, %zu written", what, n, total);
	nrr_merge_close(m);
}

/* One poll record on handle @h answering @res (600: not ready). */
static void poll_call(nrr_tls *w, uint64_t h, int64_t res)
{
	uint8_t *p = nrr_enter_begin(w, F_POLL, NRR_VAR_MAX);
	p = nrr_put_uvar(p, h);
	nrr_enter_end(w, p);
	p = nrr_leave_begin(w, res, 0, 0);
	nrr_leave_end(w, p, res == 600);
}

/* Runs of the same sequence of calls are coalesced (CYCLE records) only
 * when one of its answers is "not ready", and read back call by call. */
static void test_cycles(const char *dir)
{
	static const struct { const char *what; unsigned per, runs; uint64_t h[3]; int64_t res[3]; bool folds; } cases[] = {
		{ "recv EAGAIN on two sockets", 2, 1000, { 1, 2 }, { 600, 600 }, true },
		{ "recv EAGAIN, then setsockopt", 2, 1000, { 1, 3 }, { 600, 0 }, true },
		{ "three calls", 3, 500, { 1, 2, 3 }, { 600, 600, 0 }, true },
		{ "ready answers only", 2, 1000, { 3, 4 }, { 0, 0 }, false },
	};
	for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++) {
		char path[128];
		snprintf(path, sizeof(path), "%s/cycle%zu.nrt", dir, ci);
		nrr_writer *wr;
		nrr_writer_opts o = { .schema = schema, .schema_len = sizeof(schema) - 1, .meta = "host=test\n", .meta_len = 10 };
		CHECK_FATAL(nrr_writer_open(&wr, path, &o) == 0, "writer_open %s", path);
		nrr_tls *w = nrr_writer_thread(wr);
		/* the cycle, a run broken after its first call, a log, the cycle again inside a parent */
		uint8_t *p = nrr_enter_begin(w, F_LEAF, 3 * NRR_VAR_MAX + 8);
		p = nrr_put_uvar(p, 7);
		p = nrr_put_bytes(p, "x", 1, 64);
		p = nrr_put_bytes(p, "", 0, 64);
		nrr_enter_end(w, p);
		p = nrr_leave_begin(w, 1, 0, 2 * NRR_VAR_MAX);
		p = nrr_put_uvar(p, 0);
		p = nrr_put_bytes(p, "", 0, 64);
		nrr_leave_end(w, p, false);
		for (unsigned k = 0; k < cases[ci].runs; k++)
			for (unsigned j = 0; j < cases[ci].per; j++)
				poll_call(w, cases[ci].h[j], cases[ci].res[j]);
		poll_call(w, cases[ci].h[0], cases[ci].res[0]);
		poll_call(w, 99, 0);
		nrr_log(w, 3, "between", 7);
		p = nrr_enter_begin(w, F_PARENT, 2 * NRR_VAR_MAX);
		p = nrr_put_uvar(p, 1);
		p = nrr_put_svar(p, 2);
		nrr_enter_end(w, p);
		for (unsigned k = 0; k < cases[ci].runs; k++)
			for (unsigned j = 0; j < cases[ci].per; j++)
				poll_call(w, cases[ci].h[j], cases[ci].res[j]);
		p = nrr_leave_begin(w, 0, 0, 0);
		nrr_leave_end(w, p, false);
		CHECK(nrr_writer_close(wr) == 0, "writer_close");

		nrr_reader *r;
		nrr_diag d;
		CHECK_FATAL(nrr_reader_open(&r, path, &d) == 0, "open: %s", d.msg);
		uint64_t recs = nrr_reader_stream(r, 0)->records;
		uint64_t ncalls = 2 * (uint64_t)cases[ci].runs * cases[ci].per + 4;
		if (cases[ci].folds)
			CHECK(recs < 40, "%s: %llu records for %llu calls: runs not coalesced", cases[ci].what,
			      (unsigned long long)recs, (unsigned long long)ncalls);
		else
			CHECK(recs >= 2 * ncalls, "%s: %llu records for %llu calls: ready answers coalesced", cases[ci].what,
			      (unsigned long long)recs, (unsigned long long)ncalls);
		nrr_cursor *c;
		CHECK_FATAL(nrr_cursor_open(&c, r, 0) == 0, "cursor");
		const nrr_call *call;
		uint64_t seq = 0, last_key = 0, n = 0, cycled = 0;
		int rc, phase = 0;   /* 0 first leaf, 1 first cycle, 2 broken run, 3 log, 4 parent, 5 cycle, 6 parent end */
		unsigned k = 0;
		while ((rc = nrr_cursor_next(c, &call)) == 0) {
			CHECK(nrr_call_key(call) >= last_key, "%s: time goes back at call %llu", cases[ci].what, (unsigned long long)n);
			last_key = nrr_call_key(call);
			n++;
			if (call->kind == NRR_CALL_LOG) {
				CHECK(phase == 3, "%s: log out of place", cases[ci].what);
				phase = 4;
				continue;
			}
			if (call->phase == NRR_PHASE_RESUME) {
				CHECK(phase == 5 && k == cases[ci].runs * cases[ci].per && call->fn->id == F_PARENT,
				      "%s: parent end", cases[ci].what);
				phase = 6;
				continue;
			}
			cycled += call->cycled != 0;
			CHECK(call->seq == seq + 1 && call->repeat == 0, "%s: seq %llu after %llu (repeat %llu)", cases[ci].what,
			      (unsigned long long)call->seq, (unsigned long long)seq, (unsigned long long)call->repeat);
			seq = call->seq;
			if (phase == 0) {
				CHECK(call->fn->id == F_LEAF, "%s: first call", cases[ci].what);
				phase = 1;
				continue;
			}
			if (phase == 4) {
				CHECK(call->fn->id == F_PARENT && call->phase == NRR_PHASE_ENTER, "%s: parent", cases[ci].what);
				phase = 5;
				continue;
			}
			if (phase == 1 && k == cases[ci].runs * cases[ci].per)
				phase = 2, k = 0;
			CHECK_FATAL(call->fn->id == F_POLL, "%s: call %llu is fn %u", cases[ci].what, (unsigned long long)n,
				    call->fn->id);
			uint64_t h = phase == 2 && k == 1 ? 99 : cases[ci].h[k % cases[ci].per];
			int64_t res = phase == 2 && k == 1 ? 0 : cases[ci].res[k % cases[ci].per];
			CHECK(call->args[0].u == h && call->result == res && call->depth == (phase == 5),
			      "%s: call %llu (phase %d, #%u): handle %llu = %lld, want %llu = %lld", cases[ci].what,
			      (unsigned long long)n, phase, k, (unsigned long long)call->args[0].u, (long long)call->result,
			      (unsigned long long)h, (long long)res);
			k++;
			if (phase == 2 && k == 2)
				phase = 3, k = 0;
		}
		/* (stats counts these as coalesced) all runs of the two cycles
		 * but their first one or two come from CYCLE records */
		uint64_t lo = 2 * (uint64_t)(cases[ci].runs - 2) * cases[ci].per, hi = 2 * (uint64_t)(cases[ci].runs - 1) * cases[ci].per;
		CHECK(cases[ci].folds ? cycled >= lo && cycled <= hi : cycled == 0,
		      "%s: %llu calls marked as delivered from a CYCLE", cases[ci].what, (unsigned long long)cycled);
		CHECK(rc == NRR_EEOF && phase == 6 && seq == ncalls, "%s: ended %d in phase %d after seq %llu of %llu",
		      cases[ci].what, rc, phase, (unsigned long long)seq, (unsigned long long)ncalls);
		/* a seek into the middle of a coalesced cycle lands on the exact call */
		uint64_t target = 2 + cases[ci].per * (cases[ci].runs / 2) + 1;
		CHECK(nrr_cursor_seek(c, target) == 0 && nrr_cursor_next(c, &call) == 0 && call->seq == target &&
		      call->args[0].u == cases[ci].h[(target - 2) % cases[ci].per],
		      "%s: seek to %llu", cases[ci].what, (unsigned long long)target);
		nrr_cursor_close(c);
		nrr_reader_close(r);
		unlink(path);
	}
}

/* The writer times calls by the TSC exactly when the CPU says it is
 * invariant (it takes glibc's copy of that CPUID answer: asked here
 * directly). */
static void check_tsc_flag(const char *path)
{
	uint8_t h[NRR_FILE_HEADER_SIZE];
	nrr_file_header fh;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool ok = fd >= 0 && read(fd, h, sizeof(h)) == (ssize_t)sizeof(h) && nrr_file_header_unpack(h, &fh) == 0;
	if (fd >= 0)
		close(fd);
	CHECK_FATAL(ok, "read the file header of %s", path);
	bool invariant = false;
#if defined(__x86_64__) || defined(__i386__)
	unsigned a, b, c, dx;
	invariant = __get_cpuid(0x80000000u, &a, &b, &c, &dx) && a >= 0x80000007u &&
		    __get_cpuid(0x80000007u, &a, &b, &c, &dx) && ((dx >> 8) & 1u);
#endif
	CHECK(!!(fh.flags & NRR_FILE_F_TSC) == invariant, "the file's clock is the TSC (flags %#x) exactly when CPUID says it is invariant (%d)",
	      fh.flags, invariant);
}

/* A trace is under its name from the moment the writer is open, complete
 * up to its metadata (never an empty file a kill could leave: it is made
 * unnamed and linked when its first chunks are in), its descriptor shows
 * that name, and an existing file of that name is refused and kept. */
static void test_naming(const char *dir)
{
	char path[128], link[128], target[256];
	snprintf(path, sizeof(path), "%s/named.nrt", dir);
	nrr_writer_opts o = { .schema = schema, .schema_len = sizeof(schema) - 1, .meta = "host=n\n", .meta_len = 7 };
	nrr_writer *w;
	CHECK_FATAL(nrr_writer_open(&w, path, &o) == 0, "writer_open %s", path);
	nrr_reader *r;
	nrr_diag d;
	CHECK(nrr_reader_open(&r, path, &d) == 0 && strcmp(nrr_reader_meta(r, "host"), "n") == 0,
	      "an open writer's file reads, metadata included: %s", d.msg);
	nrr_reader_close(r);
	snprintf(link, sizeof(link), "/proc/self/fd/%d", nrr_writer_fd(w));
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	target[n > 0 ? n : 0] = 0;
	CHECK(strcmp(target, path) == 0, "the writer's descriptor is the file by its name (%s)", target);
	nrr_writer *w2 = NULL;
	CHECK(nrr_writer_open(&w2, path, &o) == -EEXIST, "a second writer on the same name is refused with EEXIST");
	CHECK(nrr_writer_close(w) == 0, "writer_close");
	check_tsc_flag(path);
	CHECK(nrr_reader_open(&r, path, &d) == 0, "the refused writer left the first file in place: %s", d.msg);
	nrr_reader_close(r);
	unlink(path);
}

static void run(const char *path, size_t chunk, uint64_t seed, struct thr *th)
{
	nrr_writer *w;
	/* the small-chunk file also allows no buffering beyond each thread's
	 * two chunks, so threads wait for the compression thread */
	nrr_writer_opts o = { .schema = schema, .schema_len = sizeof(schema) - 1, .chunk_size = chunk,
			      .max_buffered = chunk == 16384 ? 1 : 0, .meta = "host=test\n", .meta_len = 10 };
	unlink(path);
	CHECK_FATAL(nrr_writer_open(&w, path, &o) == 0, "writer_open %s", path);
	pthread_t p[NTHREADS];
	for (int i = 0; i < NTHREADS; i++) {
		th[i] = (struct thr){ .w = w, .seed = seed * 1000 + (uint64_t)i + 1, .idx = i };
		pthread_create(&p[i], NULL, writer_main, &th[i]);
	}
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(p[i], NULL);
	CHECK(nrr_writer_close(w) == 0, "writer_close");
}

int main(int argc, char **argv)
{
	uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) :
			getenv("NCCLRR_TEST_SEED") ? strtoull(getenv("NCCLRR_TEST_SEED"), NULL, 0) : (uint64_t)getpid();
	printf("seed %llu (rerun: test_roundtrip %llu)\n", (unsigned long long)seed, (unsigned long long)seed);
	char dir[] = "/tmp/nrr-rt-XXXXXX";
	CHECK_FATAL(mkdtemp(dir), "mkdtemp");
	char p1[64], p2[64];
	snprintf(p1, sizeof(p1), "%s/small.nrt", dir);
	snprintf(p2, sizeof(p2), "%s/big.nrt", dir);
	test_cycles(dir);
	test_naming(dir);
	static struct thr t1[NTHREADS], t2[NTHREADS];
	run(p1, 16384, seed, t1);
	run(p2, 0, seed + 7, t2);

	nrr_reader *r[2];
	nrr_diag d;
	CHECK_FATAL(nrr_reader_open(&r[0], p1, &d) == 0, "open: %s", d.msg);
	CHECK_FATAL(nrr_reader_open(&r[1], p2, &d) == 0, "open: %s", d.msg);
	CHECK(!nrr_reader_info(r[0])->index_rebuilt && !nrr_reader_info(r[0])->dropped_bytes, "clean file");
	CHECK(strcmp(nrr_reader_meta(r[0], "host"), "test") == 0, "meta");
	struct thr *ths[2] = { t1, t2 };
	size_t total = 0;
	for (int f = 0; f < 2; f++) {
		CHECK(nrr_reader_info(r[f])->nstreams == NTHREADS, "streams %u", nrr_reader_info(r[f])->nstreams);
		for (uint32_t si = 0; si < nrr_reader_info(r[f])->nstreams; si++) {
			const nrr_stream_info *s = nrr_reader_stream(r[f], si);
			struct thr *t = NULL;
			for (int i = 0; i < NTHREADS; i++)
				if (ths[f][i].tid == s->tid)
					t = &ths[f][i];
			CHECK_FATAL(t, "stream %u has an unknown tid", si);
			char what[64];
			snprintf(what, sizeof(what), "file %d stream %u", f, si);
			verify_stream(r[f], si, t, what);
			total += t->nev;
		}
	}
	CHECK(nrr_reader_stream(r[0], 0)->nchunks > 5, "small chunks make many chunks (%u)", nrr_reader_stream(r[0], 0)->nchunks);
	uint64_t s = seed, lost = 0;
	for (uint32_t si = 0; si < 2; si++) {
		for (int f = 0; f < 2; f++) {
			struct thr *t = NULL;
			for (int i = 0; i < NTHREADS; i++)
				if (ths[f][i].tid == nrr_reader_stream(r[f], si)->tid)
					t = &ths[f][i];
			char what[64];
			snprintf(what, sizeof(what), "file %d stream %u", f, si);
			uint64_t l = verify_seek(r[f], si, t, &s, what);
			if (f == 0)
				lost += l;
		}
	}
	CHECK(lost > 0, "seeks into 16 KiB chunks met calls opened in an earlier chunk (args_lost)");
	size_t total0 = 0;
	for (int i = 0; i < NTHREADS; i++)
		total0 += t1[i].nev;
	verify_merge(r, 1, total0, "merge of one file");
	verify_merge(r, 2, total, "merge of two files");
	nrr_reader_close(r[0]);
	nrr_reader_close(r[1]);
	unlink(p1);
	unlink(p2);
	rmdir(dir);
	for (int i = 0; i < NTHREADS; i++) {
		free(t1[i].ev);
		free(t2[i].ev);
	}
	return check_done("roundtrip");
}
