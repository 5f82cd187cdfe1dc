/* SPDX-License-Identifier: MIT */
/*
 * test_corrupt.c - truncated and bit-flipped traces: the reader never
 * crashes or hangs; it either reads on and reports what it lost, or fails
 * with a diagnostic naming the file and an offset inside it.
 */
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nrt.h"
#include "nrt_internal.h"
#include "callfmt.h"
#include "../lib/check.h"

static const char schema[] =
	"ncclrr-schema 1\nenum R\nv 0 OK\nv 600 NR\n"
	"fn 1 outer dom curesult:R\na in s str\n"
	"fn 2 inner dom curesult:R poll\na in h handle:x\na out o bytes\n"
	"end\n";

static uint8_t *make_trace(const char *path, size_t *len)
{
	nrr_writer *w;
	nrr_writer_opts o = { .schema = schema, .schema_len = sizeof(schema) - 1, .chunk_size = 16384,
			      .meta = "host=h\nrank=1\n", .meta_len = 14 };
	unlink(path);
	CHECK_FATAL(nrr_writer_open(&w, path, &o) == 0, "open");
	nrr_tls *t = nrr_writer_thread(w);
	for (int i = 0; i < 3000; i++) {
		uint8_t *p = nrr_enter_begin(t, 1, 40);
		p = nrr_put_bytes(p, "hello world", (size_t)(i % 12), 64);
		nrr_enter_end(t, p);
		for (int k = 0; k < 3; k++) {
			p = nrr_enter_begin(t, 2, 10);
			p = nrr_put_uvar(p, (uint64_t)(i * 31 + k));
			nrr_enter_end(t, p);
			p = nrr_leave_begin(t, k == 2 ? 0 : 600, 0, 40);
			p = nrr_put_bytes(p, &i, sizeof(i), 64);
			nrr_leave_end(t, p, k != 2);
		}
		p = nrr_leave_begin(t, 0, 0, 0);
		nrr_leave_end(t, p, false);
	}
	CHECK_FATAL(nrr_writer_close(w) == 0, "close");
	FILE *f = fopen(path, "rb");
	struct stat st;
	CHECK_FATAL(f && stat(path, &st) == 0, "read back");
	uint8_t *b = malloc((size_t)st.st_size);
	CHECK_FATAL(b && fread(b, 1, (size_t)st.st_size, f) == (size_t)st.st_size, "read");
	fclose(f);
	*len = (size_t)st.st_size;
	return b;
}

/* A watchdog: a case that runs for seconds is a hang; name it and fail. */
static char current_case[128];

static void on_alarm(int sig)
{
	(void)sig;
	static const char m[] = "corruption: HANG (over 10 s) in case: ";
	if (write(2, m, sizeof(m) - 1) < 0 || write(2, current_case, strlen(current_case)) < 0 || write(2, "\n", 1) < 0)
		_exit(2);
	_exit(2);
}

#define CASE(...) do { snprintf(current_case, sizeof(current_case), __VA_ARGS__); alarm(10); } while (0)

static bool last_lossy;   /* the last read_all's reader reported a loss */

/* Read everything; @return events read, or -1 on a reported error. */
static long read_all(const uint8_t *buf, size_t len, int *code, uint64_t *off)
{
	nrr_reader *r;
	nrr_diag d;
	int rc = nrr_reader_open_mem(&r, buf, len, "mem.nrt", &d);
	if (rc) {
		CHECK(strcmp(d.path, "mem.nrt") == 0 && d.msg[0] && d.offset <= len, "open diag names file/offset (%s)", d.msg);
		*code = rc;
		*off = d.offset;
		return -1;
	}
	last_lossy = nrr_reader_info(r)->index_rebuilt || nrr_reader_info(r)->dropped_bytes ||
		     nrr_reader_info(r)->meta_lost_offset;
	long n = 0;
	FILE *null = fopen("/dev/null", "w");
	nrr_merge *m;
	CHECK_FATAL(nrr_merge_open(&m, &r, 1) == 0, "merge");
	const nrr_call *call;
	while ((rc = nrr_merge_next(m, &call, NULL)) == 0) {
		nrr_format_call(null, call, 0.0, "x");
		n++;
	}
	if (rc != NRR_EEOF) {
		const nrr_diag *md = nrr_merge_diag(m);
		CHECK(strcmp(md->path, "mem.nrt") == 0 && md->msg[0] && md->offset < len, "read diag names file/offset (%s)", md->msg);
		*code = rc;
		*off = md->offset;
		n = -1;
	}
	nrr_merge_close(m);
	nrr_reader_close(r);
	fclose(null);
	return n;
}

int main(void)
{
	char path[] = "/tmp/nrr-corrupt-XXXXXX";
	int fd = mkstemp(path);
	CHECK_FATAL(fd >= 0, "mkstemp");
	close(fd);
	size_t len;
	uint8_t *orig = make_trace(path, &len);
	int code;
	uint64_t off;
	long full = read_all(orig, len, &code, &off);
	CHECK_FATAL(full > 0, "clean trace reads");
	uint8_t *b = malloc(len);

	/* truncation at every early offset, then with a stride */
	signal(SIGALRM, on_alarm);
	for (size_t cut = 0; cut < len; cut += cut < 512 ? 1 : 97) {
		CASE("truncated at %zu of %zu", cut, len);
		long n = read_all(orig, cut, &code, &off);
		CHECK(n <= full, "truncated at %zu read more than the whole", cut);
		CHECK(n < 0 || last_lossy, "truncated at %zu: read %ld events and reported no loss", cut, n);
	}
	/* flipped bits all over the file */
	uint64_t s = 12345;
	for (int i = 0; i < 3000; i++) {
		memcpy(b, orig, len);
		/* the first 1 KiB (file header, schema, meta, first chunk
		 * header), the last 512 bytes (index, trailer), then anywhere */
		size_t at = i < 1024 ? (size_t)i : i < 1536 ? len - 1 - (size_t)(i - 1024) : (size_t)(rnd(&s) % len);
		uint8_t x = i % 3 == 2 ? (uint8_t)(1 + rnd(&s) % 255) : (uint8_t)(1u << (rnd(&s) % 8));
		b[at] ^= x;
		CASE("byte %zu of %zu xor 0x%02x", at, len, x);
		long n = read_all(b, len, &code, &off);
		if (n >= 0) {   /* read on: what it read can only be less, or the same */
			CHECK(n <= full, "flip at %zu read %ld events, the clean file has %ld", at, n, full);
			CHECK(last_lossy, "flip at %zu (xor 0x%02x) read %ld of %ld events and reported no loss", at, x, n, full);
		}
	}
	/* a flipped byte inside a data payload: NRR_ECORRUPT at that chunk */
	uint64_t o = NRR_FILE_HEADER_SIZE;
	nrr_chunk_header h = { 0 };
	while (o + NRR_CHUNK_HEADER_SIZE <= len && nrr_chunk_header_unpack(orig + o, &h) == 0 && h.type != NRR_CHUNK_DATA)
		o += h.header_size + h.payload_size;
	CHECK_FATAL(h.type == NRR_CHUNK_DATA, "found a data chunk");
	memcpy(b, orig, len);
	CASE("payload byte flip");
	b[o + NRR_CHUNK_HEADER_SIZE + h.payload_size / 2] ^= 0xff;
	CHECK(read_all(b, len, &code, &off) == -1 && code == NRR_ECORRUPT && off >= o && off <= o + NRR_CHUNK_HEADER_SIZE,
	      "payload damage reported at the chunk (code %d offset %llu, chunk at %llu)", code,
	      (unsigned long long)off, (unsigned long long)o);
	/* a damaged chunk header in the middle of an unindexed file: skipped, later chunks kept */
	memcpy(b, orig, len);
	b[len - 1] ^= 1;   /* trailer checksum: index not trusted */
	uint64_t o2 = o + NRR_CHUNK_HEADER_SIZE + h.payload_size;  /* the next chunk */
	b[o2 + 20] ^= 0x40;
	nrr_reader *r;
	nrr_diag d;
	CHECK(nrr_reader_open_mem(&r, b, len, "mem.nrt", &d) == 0, "open with a damaged chunk header: %s", d.msg);
	if (r) {
		const nrr_file_info *fi = nrr_reader_info(r);
		CHECK(fi->index_rebuilt && fi->dropped_offset == o2 && fi->dropped_bytes > 0, "damaged region reported at %llu (got %llu, %llu bytes)",
		      (unsigned long long)o2, (unsigned long long)fi->dropped_offset, (unsigned long long)fi->dropped_bytes);
		CHECK(nrr_reader_stream(r, 0)->nchunks >= 2, "chunks after the damage kept");
		nrr_reader_close(r);
	}
	/* a file from a newer major version */
	memcpy(b, orig, len);
	nrr_le16(b + 8, NRR_FORMAT_MAJOR + 1);
	nrr_le32(b + 60, nrr_crc32c(0, b, 60));
	CHECK(nrr_reader_open_mem(&r, b, len, "mem.nrt", &d) == NRR_EVERSION && strstr(d.msg, "newer"), "newer version: %s", d.msg);
	alarm(0);
	free(b);
	free(orig);
	unlink(path);
	return check_done("corruption");
}
