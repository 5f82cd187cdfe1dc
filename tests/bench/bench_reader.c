/* SPDX-License-Identifier: MIT */
/*
 * bench_reader.c - reader speed on one core.
 *   1 stream:  a trace of CALLS calls (2 records each, default 10 M calls =
 *              20 M records) written by one thread, read with
 *              nrr_cursor_next;
 *   8 streams: the same number of calls written by 8 threads into one
 *              file, read in timestamp order with nrr_merge_next.
 * The records: a cuDeviceGetAttribute-like call (3 in-args: attribute id,
 * device, a pointer) and its leave (result, errno, one out-arg).
 * An event is a record (ENTER or LEAVE); a delivered nrr_call is one call.
 * Target: >= 20 M events/s.  Exits 0 unless a file cannot be written/read.
 *
 * usage: bench_reader [CALLS]
 */
#include <pthread.h>
#include <stdbool.h>
#include <sys/stat.h>

#include "nrt.h"
#include "bench_common.h"

static const char schema[] =
	"ncclrr-schema 1\n"
	"fn 1 getAttribute bench int\n"
	"a out pi i\na in attrib i\na in dev i\na in ctx x\n"
	"end\n";

static char dir[256];
static volatile uint64_t sink;

struct wjob {
	nrr_writer *w;
	uint64_t calls;
	uint64_t seed;
};

static void *write_main(void *arg)
{
	struct wjob *j = arg;
	nrr_tls *t = nrr_writer_thread(j->w);
	if (!t) {
		fprintf(stderr, "Cannot register a writer thread\n");
		exit(1);
	}
	uint64_t rs = j->seed;
	for (uint64_t i = 0; i < j->calls; i++) {
		uint64_t r = bench_rand(&rs);
		int attr = 1 + (int)(r % 130), dev = (int)(i & 7);
		uint8_t *p = nrr_enter_begin(t, 1, 3 * NRR_VAR_MAX);
		p = nrr_put_svar(p, attr);
		p = nrr_put_svar(p, dev);
		p = nrr_put_uvar(p, 0x55d0a2f31000ull + (r >> 60) * 0x1000);
		nrr_enter_end(t, p);
		p = nrr_leave_begin(t, 0, 0, NRR_VAR_MAX);
		p = nrr_put_svar(p, (int64_t)(r >> 40 & 0xfff));
		nrr_leave_end(t, p, false);
	}
	nrr_tls_flush(t);
	return NULL;
}

static void write_trace(const char *path, int nthreads, uint64_t calls)
{
	nrr_writer *w;
	nrr_writer_opts o = { .schema = schema, .schema_len = sizeof(schema) - 1 };
	int rc = nrr_writer_open(&w, path, &o);
	if (rc) {
		fprintf(stderr, "Cannot open the trace: file=%s: %s\n", path, nrr_strerror(rc));
		exit(1);
	}
	struct wjob jobs[8];
	pthread_t th[8];
	for (int i = 0; i < nthreads; i++) {
		jobs[i] = (struct wjob){ .w = w, .calls = calls / (uint64_t)nthreads, .seed = 0x9e3779b97f4a7c15ull + (uint64_t)i };
		pthread_create(&th[i], NULL, write_main, &jobs[i]);
	}
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	rc = nrr_writer_close(w);
	if (rc) {
		fprintf(stderr, "Cannot write the trace: file=%s: %s\n", path, nrr_strerror(rc));
		exit(1);
	}
}

static nrr_reader *open_trace(const char *path)
{
	nrr_reader *r;
	nrr_diag d;
	if (nrr_reader_open(&r, path, &d)) {
		char buf[1200];
		nrr_diag_format(&d, buf, sizeof(buf));
		fprintf(stderr, "%s\n", buf);
		exit(1);
	}
	return r;
}

static uint64_t total_records(nrr_reader *r)
{
	uint64_t n = 0;
	for (uint32_t s = 0; s < nrr_reader_info(r)->nstreams; s++)
		n += nrr_reader_stream(r, s)->records;
	return n;
}

static void report(const char *what, uint64_t records, uint64_t calls, double secs)
{
	double evs = (double)records / secs;
	printf("  %-28s %10llu records %10llu calls %7.3f s  %7.1f M events/s  %7.1f M calls/s   reader/target = %.2f (target >= 20 M events/s)\n",
	       what, (unsigned long long)records, (unsigned long long)calls, secs, evs / 1e6,
	       (double)calls / secs / 1e6, evs / 20e6);
}

/* Best of @reps passes over the whole trace. */
static void bench_cursor(const char *path)
{
	nrr_reader *r = open_trace(path);
	uint64_t records = total_records(r), calls = 0;
	double best = 1e30;
	for (int rep = 0; rep < 3; rep++) {
		nrr_cursor *c;
		int rc = nrr_cursor_open(&c, r, 0);
		if (rc) {
			fprintf(stderr, "Cannot open a cursor: file=%s: %s\n", path, nrr_strerror(rc));
			exit(1);
		}
		const nrr_call *call;
		uint64_t n = 0, x = 0;
		double t0 = bench_now();
		while ((rc = nrr_cursor_next(c, &call)) == 0) {
			n++;
			x += call->args[1].u + (uint64_t)call->result;
		}
		double dt = bench_now() - t0;
		if (rc != NRR_EEOF) {
			fprintf(stderr, "Cannot read the trace: file=%s: %s\n", path, nrr_strerror(rc));
			exit(1);
		}
		sink = x;
		calls = n;
		if (dt < best)
			best = dt;
		nrr_cursor_close(c);
	}
	report("cursor, 1 stream", records, calls, best);
	nrr_reader_close(r);
}

static void bench_merge(const char *path)
{
	nrr_reader *r = open_trace(path);
	uint64_t records = total_records(r), calls = 0;
	double best = 1e30;
	for (int rep = 0; rep < 3; rep++) {
		nrr_merge *m;
		int rc = nrr_merge_open(&m, &r, 1);
		if (rc) {
			fprintf(stderr, "Cannot open a merge: file=%s: %s\n", path, nrr_strerror(rc));
			exit(1);
		}
		const nrr_call *call;
		size_t ri;
		uint64_t n = 0, x = 0;
		double t0 = bench_now();
		while ((rc = nrr_merge_next(m, &call, &ri)) == 0) {
			n++;
			x += call->args[1].u + ri;
		}
		double dt = bench_now() - t0;
		if (rc != NRR_EEOF) {
			fprintf(stderr, "Cannot read the trace: file=%s: %s\n", path, nrr_strerror(rc));
			exit(1);
		}
		sink = x;
		calls = n;
		if (dt < best)
			best = dt;
		nrr_merge_close(m);
	}
	char what[64];
	snprintf(what, sizeof(what), "merge, %u streams", nrr_reader_info(r)->nstreams);
	report(what, records, calls, best);
	nrr_reader_close(r);
}

int main(int argc, char **argv)
{
	uint64_t calls = argc > 1 ? strtoull(argv[1], NULL, 0) : 10000000;
	if (calls < 8000)
		calls = 8000;
	bench_tmpdir(dir, sizeof(dir), "bench-reader");
	char p1[300], p8[300];
	snprintf(p1, sizeof(p1), "%s/one.nrt", dir);
	snprintf(p8, sizeof(p8), "%s/eight.nrt", dir);
	printf("== bench_reader: events decoded per second on one core (%llu calls = %llu records per trace)\n",
	       (unsigned long long)calls, (unsigned long long)calls * 2);
	write_trace(p1, 1, calls);
	write_trace(p8, 8, calls);
	struct stat s1, s8;
	stat(p1, &s1);
	stat(p8, &s8);
	printf("  traces: 1 stream %.1f MB, 8 streams %.1f MB (%.2f / %.2f bytes/record)\n",
	       (double)s1.st_size / 1e6, (double)s8.st_size / 1e6,
	       (double)s1.st_size / (double)(calls * 2), (double)s8.st_size / (double)(calls * 2));
	bench_pin(0);
	bench_cursor(p1);
	bench_merge(p8);
	bench_rmdir(dir);
	return 0;
}
