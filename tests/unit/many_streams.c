/* many_streams - traces that claim many streams (threads), for the scaling
 * test of issue 20: no trace may make a reader take memory or time out of
 * proportion to its size.
 *
 *   many_streams OUT N real   N data chunks, each a stream of its own with
 *                             one call: a valid trace, about 100 bytes a stream
 *   many_streams OUT N lie    one data chunk and an index of N entries that
 *                             all point at it, each under another stream
 *   many_streams OUT N meta   one stream, and N environment keys in the
 *                             metadata, each written twice
 *   many_streams --test       writes traces of each kind with 10k, 100k and
 *                             1M under $TMPDIR and reads them with 4 GiB of
 *                             address space: every stream's call comes out
 *                             of the merge once, a lying index is rebuilt by
 *                             scan, every key once with its last value, and
 *                             time grows linearly
 *
 * The base trace is written by the real writer (one thread, one call); the
 * copies change only chunk headers, the index and the trailer. */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nrt.h"
#include "nrt_internal.h"
#include "../lib/check.h"

static const char schema[] = "ncclrr-schema 1\nfn 1 work dom int\na in i u\nend\n";

static uint8_t *slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY);
	CHECK_FATAL(fd >= 0, "%s: %s", path, strerror(errno));
	struct stat st;
	CHECK_FATAL(fstat(fd, &st) == 0, "stat %s", path);
	uint8_t *b = malloc((size_t)st.st_size + 1);
	CHECK_FATAL(b && read(fd, b, (size_t)st.st_size) == st.st_size, "read %s", path);
	close(fd);
	*len = (size_t)st.st_size;
	return b;
}

static void put(FILE *f, const void *p, size_t n)
{
	CHECK_FATAL(fwrite(p, 1, n, f) == n, "write: %s", strerror(errno));
}

/* "rank=0 nranks=1" and @n environment lines, each key twice (env.S_I=aI,
 * later env.S_I=bI): the second value is the one that counts */
static char *meta_lines(uint32_t n)
{
	size_t cap = (size_t)n * 2 * 40 + 64, len = 0;
	char *m = malloc(cap);
	CHECK_FATAL(m != NULL, "out of memory");
	len += (size_t)snprintf(m, cap, "rank=0\nnranks=1\n");
	for (int pass = 0; pass < 2; pass++)
		for (uint32_t i = 0; i < n; i++)
			len += (size_t)snprintf(m + len, cap - len, "env.S_%u=%c%u\n", i, pass ? 'b' : 'a', i);
	return m;
}

static void make(const char *out, uint32_t n, int lie, uint32_t nmeta)
{
	char base[4096];
	snprintf(base, sizeof(base), "%s.base", out);
	nrr_writer *w;
	char *meta = meta_lines(nmeta);
	nrr_writer_opts o = { .schema = schema, .schema_len = sizeof(schema) - 1, .meta = meta, .meta_len = strlen(meta) };
	CHECK_FATAL(nrr_writer_open(&w, base, &o) == 0, "writer %s", base);
	nrr_tls *t = nrr_writer_thread(w);
	uint8_t *p = nrr_enter_begin(t, 1, NRR_VAR_MAX);
	nrr_enter_end(t, nrr_put_uvar(p, 7));
	nrr_leave_end(t, nrr_leave_begin(t, 0, 0, 0), false);
	CHECK_FATAL(nrr_writer_close(w) == 0, "close %s", base);
	free(meta);

	size_t len;
	uint8_t *b = slurp(base, &len);
	unlink(base);
	nrr_file_header fh;
	CHECK_FATAL(len >= NRR_FILE_HEADER_SIZE && nrr_file_header_unpack(b, &fh) == 0, "base header");
	FILE *f = fopen(out, "w");
	CHECK_FATAL(f != NULL, "%s: %s", out, strerror(errno));
	put(f, b, fh.header_size);
	uint64_t off = fh.header_size, at = fh.header_size;
	size_t cap = (size_t)n * 40 + 64, ilen = 0;
	uint8_t *idx = malloc(cap);
	CHECK_FATAL(idx != NULL, "out of memory");
	uint32_t entries = 0;
	uint64_t data_at = 0;
	uint8_t *ip = idx + NRR_VAR_MAX;   /* the count goes in front at the end */
	while (off + NRR_CHUNK_HEADER_SIZE <= len) {
		nrr_chunk_header h;
		CHECK_FATAL(nrr_chunk_header_unpack(b + off, &h) == 0, "base chunk at %llu", (unsigned long long)off);
		size_t whole = h.header_size + (size_t)h.payload_size;
		if (h.type == NRR_CHUNK_INDEX)
			break;
		if (h.type == NRR_CHUNK_DATA && !data_at) {
			for (uint32_t s = 0; s < n; s++) {
				nrr_chunk_header c = h;
				c.stream = s;
				c.tid = 100000 + s;
				c.first_ts = h.first_ts + s;
				if (!lie || s == 0) {
					uint8_t hb[NRR_CHUNK_HEADER_SIZE];
					nrr_chunk_header_pack(&c, hb);
					put(f, hb, sizeof(hb));
					put(f, b + off + h.header_size, h.payload_size);
				}
				uint64_t where = lie ? at : at + (uint64_t)s * whole;
				ip = nrr_put_uvar(ip, where);
				ip = nrr_put_uvar(ip, c.stream);
				ip = nrr_put_uvar(ip, c.tid);
				ip = nrr_put_uvar(ip, c.first_seq);
				ip = nrr_put_uvar(ip, c.first_ts);
				ip = nrr_put_uvar(ip, c.nrecords);
				entries++;
			}
			data_at = at;
			at += lie ? whole : (uint64_t)n * whole;
		} else if (h.type == NRR_CHUNK_META) {
			put(f, b + off, whole);
			if (data_at) {   /* metadata added while running */
				for (int k = 0; k < 6; k++)
					ip = nrr_put_uvar(ip, k == 0 ? at : k == 1 ? NRR_STREAM_NONE : 0);
				entries++;
			}
			at += whole;
		} else {
			put(f, b + off, whole);
			at += whole;
		}
		off += whole;
	}
	CHECK_FATAL(data_at, "the base trace has no data chunk");
	uint8_t cnt[NRR_VAR_MAX];
	size_t cl = (size_t)(nrr_put_uvar(cnt, entries) - cnt);
	uint8_t *payload = idx + NRR_VAR_MAX - cl;
	memcpy(payload, cnt, cl);
	ilen = (size_t)(ip - payload);
	CHECK_FATAL(ilen <= cap, "index overflow");
	nrr_chunk_header ih = { .type = NRR_CHUNK_INDEX, .stream = NRR_STREAM_NONE, .payload_size = (uint32_t)ilen,
				.raw_size = (uint32_t)ilen, .nrecords = entries, .payload_crc = nrr_crc32c(0, payload, ilen) };
	uint8_t hb[NRR_CHUNK_HEADER_SIZE], tr[NRR_TRAILER_SIZE];
	nrr_chunk_header_pack(&ih, hb);
	put(f, hb, sizeof(hb));
	put(f, payload, ilen);
	nrr_trailer_pack(at, (uint32_t)(NRR_CHUNK_HEADER_SIZE + ilen), tr);
	put(f, tr, sizeof(tr));
	CHECK_FATAL(fclose(f) == 0, "close %s", out);
	free(idx);
	free(b);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Open @path and merge all its streams: the calls and streams seen. */
static double read_all(const char *path, uint32_t n, int lie)
{
	double t0 = now();
	nrr_reader *r;
	nrr_diag d;
	int rc = nrr_reader_open(&r, path, &d);
	CHECK(rc == 0, "%u streams (%s): open: %s", n, lie ? "lying index" : "real", rc ? d.msg : "");
	if (rc)
		return now() - t0;
	const nrr_file_info *inf = nrr_reader_info(r);
	uint32_t want = lie ? 1 : n;
	CHECK(inf->nstreams == want, "%u streams (%s): the reader has %u streams, want %u", n,
	      lie ? "lying index" : "real", inf->nstreams, want);
	CHECK(!lie || inf->index_rebuilt, "%u streams: a lying index was taken as it is", n);
	nrr_merge *m;
	rc = nrr_merge_open(&m, &r, 1);
	CHECK(rc == 0, "%u streams: merge: %s", n, nrr_strerror(rc));
	uint64_t calls = 0;
	if (rc == 0) {
		const nrr_call *c;
		while ((rc = nrr_merge_next(m, &c, NULL)) == 0)
			calls += c->phase == NRR_PHASE_CALL;
		CHECK(rc == NRR_EEOF, "%u streams: merge ended with %s: %s", n, nrr_strerror(rc), nrr_merge_diag(m)->msg);
		nrr_merge_close(m);
	}
	CHECK(calls == want, "%u streams: %llu calls merged, want %u", n, (unsigned long long)calls, want);
	nrr_reader_close(r);
	return now() - t0;
}

/* Open @path (one stream, @n environment keys written twice) and walk
 * its metadata: every key once, with its last value. */
static double read_meta(const char *path, uint32_t n)
{
	double t0 = now();
	nrr_reader *r;
	nrr_diag d;
	int rc = nrr_reader_open(&r, path, &d);
	CHECK(rc == 0, "%u metadata lines: open: %s", n, rc ? d.msg : "");
	if (rc)
		return now() - t0;
	const nrr_meta_kv *kv;
	size_t nkv = nrr_reader_meta_keys(r, &kv), env = 0, last = 0;
	for (size_t i = 0; i < nkv; i++)
		if (kv[i].key_len > 6 && !memcmp(kv[i].key, "env.S_", 6)) {
			env++;
			last += kv[i].value_len > 1 && kv[i].value[0] == 'b';
		}
	CHECK(env == n && last == n, "%u metadata keys written twice: %zu keys, %zu with the last value", n, env, last);
	char key[64];
	snprintf(key, sizeof(key), "env.S_%u", n - 1);
	const char *v = nrr_reader_meta(r, key);
	char want[32];
	snprintf(want, sizeof(want), "b%u", n - 1);
	CHECK(v && !strcmp(v, want), "%s = %s, want %s", key, v ? v : "(none)", want);
	nrr_reader_close(r);
	return now() - t0;
}

int main(int argc, char **argv)
{
	if (argc == 4) {
		uint32_t n = (uint32_t)strtoul(argv[2], NULL, 10);
		bool meta = !strcmp(argv[3], "meta");
		make(argv[1], meta ? 1 : n, !strcmp(argv[3], "lie"), meta ? n : 0);
		return check_done("many_streams");
	}
	if (argc != 2 || strcmp(argv[1], "--test")) {
		fprintf(stderr, "usage: many_streams OUT N real|lie|meta\n       many_streams --test\n");
		return 2;
	}
	/* what the old reader needed for 1M streams was about 46 GB */
	struct rlimit lim = { 4ull << 30, 4ull << 30 };
	CHECK(setrlimit(RLIMIT_AS, &lim) == 0, "setrlimit");
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	static const uint32_t ns[] = { 10000, 100000, 1000000 };
	static const char *const what[] = { "real streams", "lying index", "metadata lines" };
	double t[3][3];
	for (int k = 0; k < 3; k++)
		for (int i = 0; i < 3; i++) {
			char path[4096];
			snprintf(path, sizeof(path), "%s/many_streams.%d.%d.%u.nrt", tmp, (int)getpid(), k, ns[i]);
			make(path, k == 2 ? 1 : ns[i], k == 1, k == 2 ? ns[i] : 0);
			t[k][i] = k == 2 ? read_meta(path, ns[i]) : read_all(path, ns[i], k == 1);
			unlink(path);
		}
	for (int k = 0; k < 3; k++)
		printf("%s: 10k %.3f s, 100k %.3f s (x%.1f), 1M %.3f s (x%.1f of 10k)\n", what[k], t[k][0], t[k][1],
		       t[k][1] / t[k][0], t[k][2], t[k][2] / t[k][0]);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("peak RSS %.0f MB\n", (double)ru.ru_maxrss / 1024);
	/* linear: 100 times the streams in at most 1,000 times the time
	 * (quadratic growth is 10,000 times) */
	for (int k = 0; k < 3; k++)
		CHECK(t[k][2] < 1000 * (t[k][0] > 1e-2 ? t[k][0] : 1e-2), "%s: 1M took %.2f s, 10k %.4f s: not linear",
		      what[k], t[k][2], t[k][0]);
	return check_done("many_streams");
}
