/* SPDX-License-Identifier: MIT */
/* json.c - the one JSON string rule of ncclrr's JSON outputs (json.h). */
#include <stdbool.h>
#include <string.h>

#include "json.h"

/* Length of the valid UTF-8 sequence at p (0 if not valid). */
static size_t utf8_len(const unsigned char *p, size_t n)
{
	size_t l;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		l = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		l = 3;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		l = 4;
	else
		return 0;
	if (l > n)
		return 0;
	for (size_t i = 1; i < l; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return l;
}

static void put_str(FILE *f, const char *s, size_t n, bool lt)
{
	const unsigned char *p = (const unsigned char *)s;
	fputc('"', f);
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = p[i];
		if (ch == '"' || ch == '\\') {
			fputc('\\', f);
			fputc(ch, f);
		} else if (ch == '\n') {
			fputs("\\n", f);
		} else if (ch < 0x20 || ch == 0x7f || (ch == '<' && lt)) {
			fprintf(f, "\\u%04x", ch);
		} else if (ch < 0x80) {
			fputc(ch, f);
		} else {
			size_t l = utf8_len(p + i, n - i);
			if (l) {
				fwrite(p + i, 1, l, f);
				i += l - 1;
			} else {
				fprintf(f, "\\u%04x", ch);
			}
		}
	}
	fputc('"', f);
}

void nrr_json_str(FILE *f, const char *s, size_t n)
{
	put_str(f, s, n, true);
}

void nrr_json_strz(FILE *f, const char *s)
{
	if (s)
		put_str(f, s, strlen(s), false);
	else
		fputs("null", f);
}
