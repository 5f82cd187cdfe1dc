/* SPDX-License-Identifier: MIT */
/*
 * test_roundtrip.c - random calls from many threads through the writer and
 * back through cursors, seek and merge: every call, argument, result,
 * nesting phase and coalesced repeat must come back exactly.
 *   test_roundtrip [SEED]   (or NCCLRR_TEST_SEED)
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nrt.h"
#include "../lib/check.h"

#define NTHREADS 8
#define NOPS 30000

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
	for (int op = 0; op < NOPS; op++) {
		uint64_t r = rnd(&s) % 100;
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
		} else if (r < 40) {
			int n = 1 + (int)(rnd(&s) % 30);
			bool ends_ready = rnd(&s) % 2;
			announce(t, st, depth);
			for (int k = 0; k < n; k++) {
				int64_t res = (k == n - 1 && ends_ready) ? 0 : 600;
				uint8_t *p = nrr_enter_begin(w, F_POLL, NRR_VAR_MAX);
				p = nrr_put_uvar(p, handle);
				nrr_enter_end(w, p);
				p = nrr_leave_begin(w, res, 0, 0);
				nrr_leave_end(w, p, res == 600);
				*push(t) = (struct ev){ .phase = NRR_PHASE_CALL, .kind = NRR_CALL, .depth = (uint8_t)depth,
							       .fn = F_POLL, .seq = ++t->seq, .a = handle, .result = res };
			}
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

/* Compare one stream with its thread's expected events. */
static void verify_stream(nrr_reader *r, uint32_t si, struct thr *t, const char *what)
{
	nrr_cursor *c;
	CHECK_FATAL(nrr_cursor_open(&c, r, si) == 0, "cursor");
	const nrr_call *call;
	size_t i = 0;
	uint64_t last_key = 0, coalesced = 0;
	int rc;
	while ((rc = nrr_cursor_next(c, &call)) == 0) {
		CHECK(nrr_call_key(call) >= last_key, "%s: time goes back at event %zu", what, i);
		last_key = nrr_call_key(call);
		CHECK(call->tid == t->tid, "%s: tid", what);
		for (uint64_t k = 0; k <= call->repeat; k++, i++) {
			if (i >= t->nev) {
				CHECK(0, "%s: more events than written", what);
				goto out;
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
				goto out;
			}
			CHECK(call->phase == e->phase, "%s: event %zu (fn %u seq %llu) phase %d vs %d", what, i, e->fn,
			      (unsigned long long)e->seq, call->phase, e->phase);
			CHECK(call->seq + k == e->seq, "%s: event %zu seq %llu vs %llu", what, i,
			      (unsigned long long)(call->seq + k), (unsigned long long)e->seq);
			CHECK(call->depth == e->depth, "%s: event %zu depth %d vs %d", what, i, call->depth, e->depth);
			if (e->phase == NRR_PHASE_CALL || e->phase == NRR_PHASE_RESUME)
				CHECK(call->done && call->result == e->result, "%s: event %zu result %lld vs %lld", what, i,
				      (long long)call->result, (long long)e->result);
			if (call->args_lost)
				continue;
			switch (e->fn) {
			case F_PARENT:
				CHECK(call->args[0].u == e->a && (int64_t)call->args[1].u == e->b, "%s: parent args %zu", what, i);
				break;
			case F_POLL:
				CHECK(call->args[0].u == e->a, "%s: poll handle", what);
				if (k)
					coalesced++;
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
	}
	CHECK(rc == NRR_EEOF, "%s: cursor ended with %d (%s)", what, rc, nrr_cursor_diag(c)->msg);
	CHECK(i == t->nev, "%s: %zu events read, %zu written", what, i, t->nev);
	CHECK(coalesced > 0, "%s: polling was coalesced", what);
out:
	nrr_cursor_close(c);
}

static void verify_seek(nrr_reader *r, uint32_t si, uint64_t *s)
{
	/* the seqs of CALL/ENTER events, from a full scan */
	nrr_cursor *c;
	CHECK_FATAL(nrr_cursor_open(&c, r, si) == 0, "cursor");
	size_t n = 0, cap = 1 << 16;
	uint64_t *seqs = malloc(cap * sizeof(*seqs));
	const nrr_call *call;
	while (nrr_cursor_next(c, &call) == 0) {
		if (call->kind == NRR_CALL && (call->phase == NRR_PHASE_CALL || call->phase == NRR_PHASE_ENTER)) {
			if (n == cap)
				seqs = realloc(seqs, (cap *= 2) * sizeof(*seqs));
			CHECK_FATAL(seqs, "out of memory");
			seqs[n++] = call->seq;
		}
	}
	for (int k = 0; k < 200 && n; k++) {
		uint64_t target = 1 + rnd(s) % seqs[n - 1];
		size_t lo = 0;
		while (seqs[lo] < target)
			lo++;
		int rc = nrr_cursor_seek(c, target);
		CHECK(rc == 0, "seek %llu: %d", (unsigned long long)target, rc);
		if (rc)
			continue;
		CHECK(nrr_cursor_next(c, &call) == 0 && call->seq == seqs[lo], "seek %llu landed on %llu, want %llu",
		      (unsigned long long)target, (unsigned long long)call->seq, (unsigned long long)seqs[lo]);
		/* and reading goes on from there */
		CHECK(nrr_cursor_next(c, &call) == 0 || lo + 1 == n, "read after seek");
	}
	CHECK(nrr_cursor_seek(c, seqs[n - 1] + 1000000) == NRR_ENOTFOUND, "seek past the end");
	free(seqs);
	nrr_cursor_close(c);
}

static void run(const char *path, size_t chunk, uint64_t seed, struct thr *th)
{
	nrr_writer *w;
	nrr_writer_opts o = { .schema = schema, .schema_len = sizeof(schema) - 1, .chunk_size = chunk,
			      .meta = "host=test\n", .meta_len = 10 };
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
	uint64_t s = seed;
	verify_seek(r[0], 0, &s);
	verify_seek(r[1], 1, &s);

	/* merge over both files: everything, in wall-time order */
	nrr_merge *m;
	CHECK_FATAL(nrr_merge_open(&m, r, 2) == 0, "merge");
	const nrr_call *call;
	size_t ri, n = 0;
	uint64_t last = 0;
	int rc;
	while ((rc = nrr_merge_next(m, &call, &ri)) == 0) {
		uint64_t k = nrr_reader_wall(r[ri], nrr_call_key(call));
		CHECK(k >= last, "merge order");
		last = k;
		n += 1 + call->repeat;
	}
	CHECK(rc == NRR_EEOF, "merge end");
	CHECK(n == total, "merge saw %zu events, %zu written", n, total);
	nrr_merge_close(m);
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
