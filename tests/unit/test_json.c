/* SPDX-License-Identifier: MIT */
/* test_json.c - the one JSON string rule and the streaming writer
 * (analyzer/json.c), byte for byte: what every JSON output of ncclrr
 * writes for the same text and the same document. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "json.h"

/* @s[0..n) through nrr_json_str (@page) or nrr_json_strz, as text */
static char *out(const char *s, size_t n, int page)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	CHECK_FATAL(f != NULL, "open_memstream");
	if (page)
		nrr_json_str(f, s, n);
	else
		nrr_json_strz(f, s);
	fclose(f);
	return buf;
}

static void want(const char *s, size_t n, int page, const char *expect)
{
	char *got = out(s, n, page);
	CHECK(strcmp(got, expect) == 0, "%s of %zu bytes: got [%s], want [%s]", page ? "nrr_json_str" : "nrr_json_strz",
	      n, got, expect);
	free(got);
}

/* The document of hang --json's shape: a block object, an inline object
 * in it, an empty block array, inline arrays, null and fixed numbers. */
static void doc_pretty(struct nrr_jw *w)
{
	nrr_jw_obj(w, true);
	nrr_jw_kbool(w, "hang", false);
	nrr_jw_kstr(w, "summary", "x<y");
	nrr_jw_kstr(w, "none", NULL);
	nrr_jw_key(w, "causes");
	nrr_jw_arr(w, true);
	nrr_jw_end(w);
	nrr_jw_key(w, "edges");
	nrr_jw_arr(w, true);
	for (int i = 0; i < 2; i++) {
		nrr_jw_obj(w, false);
		nrr_jw_kint(w, "from", -i);
		nrr_jw_kfixed(w, "t", 1.5, 6);
		nrr_jw_key(w, "ranks");
		nrr_jw_arr(w, false);
		nrr_jw_uint(w, 1);
		nrr_jw_uint(w, 18446744073709551615ull);
		nrr_jw_end(w);
		nrr_jw_end(w);
	}
	nrr_jw_end(w);
	nrr_jw_end(w);
}

/* export --chrome's shape: compact, a block array of events, a member on a
 * line of its own (nrr_jw_break), times in µs, a value the caller writes
 * itself. */
static void doc_compact(struct nrr_jw *w)
{
	nrr_jw_obj(w, false);
	nrr_jw_kstr(w, "unit", "ns");
	nrr_jw_key(w, "events");
	nrr_jw_arr(w, true);
	nrr_jw_obj(w, false);
	nrr_jw_kstr(w, "name", "</script>");
	nrr_jw_kus(w, "ts", 1250);
	nrr_jw_key(w, "at");
	nrr_jw_value(w);
	fputs("[]", w->f);
	nrr_jw_key(w, "us");
	nrr_jw_arr(w, false);
	nrr_jw_us(w, 0);
	nrr_jw_us(w, -1);
	nrr_jw_us(w, 999);
	nrr_jw_us(w, -1000000);
	nrr_jw_us(w, INT64_MIN);
	nrr_jw_us(w, INT64_MAX);
	nrr_jw_end(w);
	nrr_jw_end(w);
	nrr_jw_raw(w, "{\"args\":%d}", 7);
	nrr_jw_end(w);
	nrr_jw_break(w);
	nrr_jw_key(w, "meta");
	nrr_jw_arr(w, false);
	nrr_jw_null(w);
	nrr_jw_bool(w, true);
	nrr_jw_end(w);
	nrr_jw_end(w);
}

static void want_doc(void (*doc)(struct nrr_jw *), unsigned flags, const char *expect)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	CHECK_FATAL(f != NULL, "open_memstream");
	struct nrr_jw w;
	nrr_jw_init(&w, f, flags);
	doc(&w);
	CHECK(w.depth == 0, "writer left %d containers open", w.depth);
	fclose(f);
	CHECK(strcmp(buf, expect) == 0, "writer (flags %u): got\n%s\nwant\n%s", flags, buf, expect);
	free(buf);
}

int main(void)
{
	want_doc(doc_pretty, 0,
		 "{\n  \"hang\": false,\n  \"summary\": \"x<y\",\n  \"none\": null,\n  \"causes\": [\n  ],\n"
		 "  \"edges\": [\n    {\"from\": 0, \"t\": 1.500000, \"ranks\": [1, 18446744073709551615]},\n"
		 "    {\"from\": -1, \"t\": 1.500000, \"ranks\": [1, 18446744073709551615]}\n  ]\n}");
	want_doc(doc_compact, NRR_JW_COMPACT | NRR_JW_HTML,
		 "{\"unit\":\"ns\",\"events\":[\n{\"name\":\"\\u003c/script>\",\"ts\":1.250,\"at\":[],"
		 "\"us\":[0.000,-0.001,0.999,-1000.000,-9223372036854775.808,9223372036854775.807]},\n{\"args\":7}\n],\n"
		 "\"meta\":[null,true]}");

	static const struct { const char *in, *page, *plain; } cases[] = {
		{ "plain text", "\"plain text\"", "\"plain text\"" },
		{ "q\"b\\", "\"q\\\"b\\\\\"", "\"q\\\"b\\\\\"" },
		{ "a\nb\tc\r", "\"a\\nb\\u0009c\\u000d\"", "\"a\\nb\\u0009c\\u000d\"" },
		{ "</script>", "\"\\u003c/script>\"", "\"</script>\"" },           /* '<' only in a page */
		{ "del\x7f", "\"del\\u007f\"", "\"del\\u007f\"" },
		{ "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"",
		  "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"" },                 /* valid UTF-8 kept */
		{ "lat\xe9n \xc3", "\"lat\\u00e9n \\u00c3\"", "\"lat\\u00e9n \\u00c3\"" }, /* invalid, truncated */
		{ "", "\"\"", "\"\"" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		want(cases[i].in, strlen(cases[i].in), 1, cases[i].page);
		want(cases[i].in, strlen(cases[i].in), 0, cases[i].plain);
	}
	/* a length, not a terminator: embedded NUL, and a cut UTF-8 sequence */
	want("a\0b", 3, 1, "\"a\\u0000b\"");
	want("\xc3\xa9", 1, 1, "\"\\u00c3\"");
	want(NULL, 0, 0, "null");
	return check_done("json");
}
