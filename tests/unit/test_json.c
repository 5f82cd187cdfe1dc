/* SPDX-License-Identifier: MIT */
/* test_json.c - the one JSON string rule (analyzer/json.c), byte for byte:
 * what every JSON output of ncclrr writes for the same text. */
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

int main(void)
{
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
