/* SPDX-License-Identifier: MIT */
/* test_format.c - LEB128, CRC-32C, fixed headers, the schema parser and the
 * text sink that renders calls. */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>

#include "nrt.h"
#include "nrt_internal.h"
#include "textout.h"
#include "../lib/check.h"

static void test_varint(void)
{
	static const uint64_t u[] = { 0, 1, 127, 128, 255, 16383, 16384, 1ull << 32, (1ull << 63) - 1, 1ull << 63, UINT64_MAX };
	for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++) {
		uint8_t b[16];
		uint8_t *e = nrr_put_uvar(b, u[i]);
		const uint8_t *p = b;
		uint64_t v;
		CHECK(nrr_get_uvar(&p, e, &v) == 0 && v == u[i] && p == e, "uvar %llu", (unsigned long long)u[i]);
		CHECK((size_t)(e - b) <= NRR_VAR_MAX, "uvar length");
		p = b;
		if (e - b > 1)
			CHECK(nrr_get_uvar(&p, e - 1, &v) == NRR_ETRUNC, "truncated uvar %llu", (unsigned long long)u[i]);
	}
	static const int64_t s[] = { 0, -1, 1, -64, 63, -65, INT64_MIN, INT64_MAX };
	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
		uint8_t b[16];
		uint8_t *e = nrr_put_svar(b, s[i]);
		const uint8_t *p = b;
		int64_t v;
		CHECK(nrr_get_svar(&p, e, &v) == 0 && v == s[i], "svar %lld", (long long)s[i]);
	}
	uint8_t z[16];
	CHECK(nrr_put_svar(z, -1) == z + 1 && z[0] == 1, "zigzag maps -1 to 1");
	/* 11 continuation bytes, and a 10th byte above 1: both rejected */
	uint8_t over[12];
	memset(over, 0x80, sizeof(over));
	const uint8_t *p = over;
	uint64_t v;
	CHECK(nrr_get_uvar(&p, over + sizeof(over), &v) == NRR_ECORRUPT, "over-long uvar");
	uint8_t big[10] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02 };
	p = big;
	CHECK(nrr_get_uvar(&p, big + 10, &v) == NRR_ECORRUPT, "uvar over 64 bits");
	p = big;
	CHECK(nrr_get_uvar(&p, big, &v) == NRR_ETRUNC, "empty input");
	/* byte fields keep the original length and cap the stored bytes */
	uint8_t src[100], dst[200];
	memset(src, 7, sizeof(src));
	uint8_t *e = nrr_put_bytes(dst, src, 100, 10);
	p = dst;
	uint64_t total, stored;
	CHECK(nrr_get_uvar(&p, e, &total) == 0 && total == 100, "bytes total");
	CHECK(nrr_get_uvar(&p, e, &stored) == 0 && stored == 10 && e - p == 10, "bytes stored");
}

static void test_crc(void)
{
	CHECK(nrr_crc32c(0, "123456789", 9) == 0xE3069283u, "crc32c check value %08x", nrr_crc32c(0, "123456789", 9));
	CHECK(nrr_crc32c(0, "", 0) == 0, "crc of nothing");
	char buf[1000];
	for (int i = 0; i < 1000; i++)
		buf[i] = (char)(i * 7);
	uint32_t whole = nrr_crc32c(0, buf, sizeof(buf));
	CHECK(nrr_crc32c(nrr_crc32c(0, buf, 333), buf + 333, 667) == whole, "crc is incremental");
}

static void test_headers(void)
{
	nrr_chunk_header h = { .type = NRR_CHUNK_DATA, .flags = 1, .stream = 3, .tid = 77, .first_seq = 1234567,
			       .first_ts = 99999999999ull, .payload_size = 4000, .raw_size = 131072, .nrecords = 9000,
			       .payload_crc = 0xdeadbeef };
	uint8_t b[NRR_CHUNK_HEADER_SIZE];
	nrr_chunk_header_pack(&h, b);
	CHECK(memcmp(b, "NRC1", 4) == 0, "chunk magic bytes");
	nrr_chunk_header g;
	CHECK(nrr_chunk_header_unpack(b, &g) == 0, "unpack");
	CHECK(g.stream == 3 && g.tid == 77 && g.first_seq == 1234567 && g.first_ts == 99999999999ull &&
	      g.payload_size == 4000 && g.raw_size == 131072 && g.nrecords == 9000 && g.payload_crc == 0xdeadbeef &&
	      g.header_size == 64, "fields survive");
	for (int i = 0; i < NRR_CHUNK_HEADER_SIZE; i++) {
		uint8_t c[NRR_CHUNK_HEADER_SIZE];
		memcpy(c, b, sizeof(c));
		c[i] ^= 0x10;
		CHECK(nrr_chunk_header_unpack(c, &g) != 0, "flipped header byte %d detected", i);
	}
	nrr_file_header fh = { .major = 1, .minor = 0, .wall_ns = 5, .mono_ns = 6, .pid = 7, .flags = 1 };
	uint8_t f[NRR_FILE_HEADER_SIZE];
	nrr_file_header_pack(&fh, f);
	nrr_file_header fg;
	CHECK(nrr_file_header_unpack(f, &fg) == 0 && fg.pid == 7 && fg.wall_ns == 5 && fg.mono_ns == 6, "file header");
	CHECK(memcmp(f, "\x89NRT\r\n\x1a\n", 8) == 0, "file magic");
	f[0] = 'X';
	CHECK(nrr_file_header_unpack(f, &fg) == NRR_EBADMAGIC, "bad magic");
}

static const char good[] =
	"ncclrr-schema 1\n"
	"enum R\nv 0 OK\nv -5 NEG\n"
	"enum F flags\nv 1 A\nv 2 B\n"
	"fn 1 f1 dom curesult:R blocking poll\n"
	"a in x u\na out y enum:R\na inout z flags:F\na in h handle:stream create\na in s str\n"
	"fn 2 f2 dom void\n"
	"end\n";

/* @line: the line the message must name (0: any line) */
static void expect_bad_at(const char *text, size_t len, unsigned line, const char *why)
{
	nrr_schema *s = NULL;
	nrr_diag d;
	memset(&d, 0, sizeof(d));
	int rc = nrr_schema_parse(&s, text, len, &d);
	char want[32] = "schema line";
	if (line)
		snprintf(want, sizeof(want), "schema line %u:", line);
	CHECK(rc == NRR_ESCHEMA && s == NULL && strstr(d.msg, want) != NULL, "rejects %s (rc %d, msg '%s', want '%s')", why,
	      rc, d.msg, want);
}

#define expect_bad(text, why) expect_bad_at(text, strlen(text), 0, why)
#define expect_bad_line(text, line, why) expect_bad_at(text, strlen(text), line, why)

static void test_schema(void)
{
	nrr_schema *s;
	nrr_diag d;
	CHECK_FATAL(nrr_schema_parse(&s, good, strlen(good), &d) == 0, "good schema: %s", d.msg);
	CHECK(nrr_schema_nfns(s) == 2, "two fns");
	const nrr_fn_schema *f = nrr_schema_fn_by_name(s, "f1");
	CHECK(f && f->id == 1 && f->nargs == 5 && f->nin == 4 && f->nout == 2, "f1 shape");
	CHECK(f && (f->flags & NRR_FN_POLL) && (f->flags & NRR_FN_BLOCKING) && f->ret == NRR_RET_CURESULT, "f1 attrs");
	CHECK(f && f->args[1].wire == NRR_WIRE_S && f->args[2].wire == NRR_WIRE_U && f->args[4].wire == NRR_WIRE_B, "wire kinds");
	CHECK(f && f->args[3].hflags == NRR_HANDLE_CREATE && strcmp(f->args[3].kind, "stream") == 0, "handle");
	CHECK(f && strcmp(nrr_enum_name(f->args[1].table, -5), "NEG") == 0, "enum lookup");
	CHECK(nrr_schema_fn(s, 3) == NULL && nrr_schema_fn(s, 0) == NULL, "out of range ids");
	nrr_schema_free(s);
	/* `instant` (2.1), and attributes of a later version are skipped */
	static const char attrs[] = "ncclrr-schema 1\nfn 1 f d void instant\nfn 2 g d void blocking someday\nend\n";
	CHECK_FATAL(nrr_schema_parse(&s, attrs, strlen(attrs), &d) == 0, "attributes: %s", d.msg);
	CHECK(nrr_schema_fn(s, 1)->flags == NRR_FN_INSTANT && nrr_schema_fn(s, 2)->flags == NRR_FN_BLOCKING,
	      "instant, and an unknown attribute skipped");
	nrr_schema_free(s);

	expect_bad("", "empty text");
	expect_bad_line("ncclrr-schema 2\nend\n", 1, "newer schema version");
	expect_bad("ncclrr-schema 1\n", "missing end");
	expect_bad_line("ncclrr-schema 1\nfn 1 f d void\nenum E\nv 1 A\na in x u\nend\n", 5, "argument after an enum");
	expect_bad_line("ncclrr-schema 1\nfn 2 f d void\nend\n", 2, "id out of sequence");
	expect_bad_line("ncclrr-schema 1\nfn 1 f d void\nfn 1 g d void\nend\n", 3, "repeated id");
	expect_bad_line("ncclrr-schema 1\nfn 1 f d void\na in x weird\nend\n", 3, "unknown format");
	expect_bad_line("ncclrr-schema 1\nfn 1 f d void\na in x enum:Nope\nend\n", 3, "unknown table");
	expect_bad_line("ncclrr-schema 1\nfn 1 f d bogus\nend\n", 2, "unknown return convention");
	expect_bad_line("ncclrr-schema 1\nfn 1 f d void\na sideways x u\nend\n", 3, "bad direction");
	expect_bad_line("ncclrr-schema 1\na in x u\nend\n", 2, "arg before fn");
	expect_bad("ncclrr-schema 1\nfn 1 f d void\na in x handle\nend\n", "handle without kind");
	expect_bad("ncclrr-schema 1\nfn 1 f  d void\nend\n", "double space");
	expect_bad("ncclrr-schema 1\nend", "unterminated line");
	const char nul[] = "ncclrr-schema 1\n\0end\n";
	nrr_schema *x = NULL;
	CHECK(nrr_schema_parse(&x, nul, sizeof(nul) - 1, &d) == NRR_ESCHEMA, "NUL byte");
	expect_bad_at(nul, sizeof(nul) - 1, 2, "NUL byte names its line");
	char many[4096] = "ncclrr-schema 1\nfn 1 f d void\n";
	for (int i = 0; i < NRR_MAX_ARGS + 1; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), "a in x%d u\n", i);
	strcat(many, "end\n");
	expect_bad_line(many, 3 + NRR_MAX_ARGS, "too many args");
	/* the example from the design brief parses */
	static const char ex[] = "ncclrr-schema 1\nenum CUresult\nv 0 CUDA_SUCCESS\nv 600 CUDA_ERROR_NOT_READY\n"
		"fn 1 cuMemAlloc cuda_driver curesult:CUresult\na out dptr handle:devptr create\na in size u\n"
		"fn 2 cuStreamQuery cuda_driver curesult:CUresult blocking poll\na in s handle:stream\n"
		"fn 3 f nccl int\na in name str\nend\n";
	CHECK(nrr_schema_parse(&x, ex, sizeof(ex) - 1, &d) == 0 && nrr_schema_nfns(x) == 3, "example schema: %s", d.msg);
	if (x)
		nrr_schema_free(x);
}

/* Parsing is linear in the number of enums: a schema of N enums (and a
 * function over the last one) compares O(N) enum names while it parses.
 * With the old linear search per enum, 100k enums took 107 s and 1M an
 * hour (N^2/2 comparisons).  Counted, not timed: a loaded machine does not
 * change the count.  The table is at most half full, so a lookup compares
 * a handful of names on average; 4 per enum is the bound. */
static uint64_t parse_enums(uint32_t n)
{
	size_t cap = (size_t)n * 24 + 128, len = 0;
	char *t = malloc(cap);
	CHECK_FATAL(t != NULL, "out of memory");
	len += (size_t)snprintf(t, cap, "ncclrr-schema 1\n");
	for (uint32_t i = 0; i < n; i++)
		len += (size_t)snprintf(t + len, cap - len, "enum E%u\nv %u A\n", i, i);
	len += (size_t)snprintf(t + len, cap - len, "fn 1 f d void\na in x enum:E%u\nend\n", n - 1);
	nrr_schema *s = NULL;
	nrr_diag d;
	int rc = nrr_schema_parse(&s, t, len, &d);
	CHECK(rc == 0 && s && nrr_schema_fn(s, 1)->args[0].table, "%u enums: %s", n, rc ? d.msg : "");
	uint64_t probes = s ? nrr_schema_enum_probes(s) : 0;
	nrr_schema_free(s);
	free(t);
	return probes;
}

static void test_schema_scaling(void)
{
	expect_bad_line("ncclrr-schema 1\nenum A\nv 0 X\nenum B\nenum A\nend\n", 5, "an enum defined twice");
	uint32_t sizes[] = { 10000, 100000, 1000000 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t p = parse_enums(sizes[i]);
		printf("schema parse: %u enums, %llu names compared (%.2f per enum)\n", sizes[i],
		       (unsigned long long)p, (double)p / sizes[i]);
		CHECK(p <= 4ull * sizes[i], "%u enums compared %llu names: not linear", sizes[i],
		      (unsigned long long)p);
	}
}

/* What nrr_out writes, through a buffer of @cap bytes, into @res. */
#define OUT_INTO(res, cap, ...)                                          \
	do {                                                             \
		char b_[cap];                                            \
		size_t l_;                                               \
		char *s_;                                                \
		FILE *f_ = open_memstream(&s_, &l_);                     \
		nrr_out o_;                                              \
		nrr_out_init(&o_, f_, b_, sizeof(b_));                   \
		__VA_ARGS__;                                             \
		nrr_out_flush(&o_);                                      \
		fclose(f_);                                              \
		snprintf(res, sizeof(res), "%s", s_);                    \
		free(s_);                                                \
	} while (0)

/* The sink's numbers must read as printf's did: golden outputs and users'
 * scripts parse them. */
static void test_textout(void)
{
	char got[512], want[512];
	static const uint64_t u[] = { 0, 9, 10, 99, 100, 12345, 4294967295u, 18446744073709551615ull };
	for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++) {
		OUT_INTO(got, 64, nrr_out_u64(&o_, u[i]); nrr_out_putc(&o_, ' '); nrr_out_hex(&o_, u[i]);
			 nrr_out_putc(&o_, ' '); nrr_out_i64(&o_, (int64_t)u[i]));
		snprintf(want, sizeof(want), "%llu %llx %lld", (unsigned long long)u[i], (unsigned long long)u[i],
			 (long long)u[i]);
		CHECK(!strcmp(got, want), "u64/hex/i64 %s, want %s", got, want);
	}
	/* fixed point: every rounding case, ties (printf's double decides) and negatives */
	static const int64_t ns[] = { 0, 1, 499, 500, 501, 999, 1000, 1049, 1050, 1051, 999949, 999950, 999999,
				      1234500, 1234501, 2500000, 999999999, 1000000000, 1005000000, -1, -400, -500,
				      -1234567, 3600123456789ll, 250, 750, 1250000, 3750000, 1125000000,
				      1375000000, 9007199254740993ll };
	static const unsigned sc[][2] = { { 9, 6 }, { 3, 1 }, { 6, 1 }, { 9, 2 }, { 3, 3 } };
	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
		for (size_t k = 0; k < sizeof(sc) / sizeof(sc[0]); k++) {
			double div = 1;
			for (unsigned j = 0; j < sc[k][0]; j++)
				div *= 10;
			OUT_INTO(got, 64, nrr_out_fixed(&o_, ns[i], sc[k][0], sc[k][1]));
			snprintf(want, sizeof(want), "%.*f", (int)sc[k][1], (double)ns[i] / div);
			CHECK(!strcmp(got, want), "fixed %lld/10^%u .%u: %s, want %s", (long long)ns[i], sc[k][0],
			      sc[k][1], got, want);
		}
	for (int64_t v = 0; v < 3000000; v += 7)   /* a dense sweep of durations and times */
		for (size_t k = 0; k < 4; k++) {
			double div = 1;
			for (unsigned j = 0; j < sc[k][0]; j++)
				div *= 10;
			OUT_INTO(got, 64, nrr_out_fixed(&o_, v, sc[k][0], sc[k][1]));
			snprintf(want, sizeof(want), "%.*f", (int)sc[k][1], (double)v / div);
			if (strcmp(got, want)) {
				CHECK(0, "fixed %lld/10^%u .%u: %s, want %s", (long long)v, sc[k][0], sc[k][1], got, want);
				return;
			}
		}
	/* strings and bytes longer than the buffer, across flushes */
	char longs[300];
	memset(longs, 'x', sizeof(longs) - 1);
	longs[sizeof(longs) - 1] = 0;
	OUT_INTO(got, 64, nrr_out_puts(&o_, "ab"); nrr_out_puts(&o_, longs); nrr_out_write(&o_, longs, 200);
		 nrr_out_putc(&o_, '!'));
	CHECK(strlen(got) == 2 + 299 + 200 + 1 && got[301] == 'x' && got[501] == '!', "long strings through a small buffer");
	uint8_t bytes[40];
	for (int i = 0; i < 40; i++)
		bytes[i] = (uint8_t)(i * 7);
	OUT_INTO(got, 64, nrr_out_hexbytes(&o_, bytes, 40));
	CHECK(strlen(got) == 80 && !strncmp(got, "00070e15", 8) && !strcmp(got + 78, "11"), "hex bytes: %s", got);
	OUT_INTO(got, 64, nrr_out_printf(&o_, "%s-%d", longs, 7));
	CHECK(strlen(got) == 301 && !strcmp(got + 299, "-7"), "printf longer than its scratch");
	/* a failed write is remembered, and later output dropped */
	FILE *full = fopen("/dev/full", "w");
	if (full) {
		char b[64];
		nrr_out o;
		setvbuf(full, NULL, _IONBF, 0);
		nrr_out_init(&o, full, b, sizeof(b));
		nrr_out_write(&o, longs, 200);
		CHECK(nrr_out_flush(&o) == -1 && o.err == ENOSPC, "write error kept: %d", o.err);
		fclose(full);
	}
	/* straight to a file descriptor (dump's stdout): whole buffers, and
	 * what is longer than the buffer, in order; errors kept as above */
	FILE *tf = tmpfile();
	if (tf) {
		char b[64], back[1024] = "";
		nrr_out o;
		nrr_out_init_fd(&o, fileno(tf), b, sizeof(b));
		nrr_out_puts(&o, "ab");
		nrr_out_write(&o, longs, 200);
		nrr_out_u64(&o, 18446744073709551615ull);
		nrr_out_fixed(&o, 1234567, 9, 6);
		CHECK(nrr_out_flush(&o) == 0 && o.err == 0, "fd sink: %d", o.err);
		rewind(tf);
		size_t n = fread(back, 1, sizeof(back) - 1, tf);
		CHECK(n == 2 + 200 + 20 + 8 && !strncmp(back, "abxx", 4) && !strcmp(back + 202, "184467440737095516150.001235"),
		      "fd sink wrote %zu bytes: %.40s", n, back + 190);
		fclose(tf);
	}
	int fullfd = open("/dev/full", O_WRONLY);
	if (fullfd >= 0) {
		char b[64];
		nrr_out o;
		nrr_out_init_fd(&o, fullfd, b, sizeof(b));
		nrr_out_write(&o, longs, 200);
		CHECK(nrr_out_flush(&o) == -1 && o.err == ENOSPC, "fd write error kept: %d", o.err);
		close(fullfd);
	}
}

int main(void)
{
	test_varint();
	test_crc();
	test_headers();
	test_schema();
	test_schema_scaling();
	test_textout();
	return check_done("format_units");
}
