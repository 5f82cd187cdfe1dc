/* SPDX-License-Identifier: MIT */
/* json.h - how every JSON output of ncclrr (export --chrome, the HTML
 * report's data, diff --json, hang --json) writes a string: one rule, so
 * the outputs cannot drift apart. */
#ifndef NCCLRR_ANALYZER_JSON_H
#define NCCLRR_ANALYZER_JSON_H

#include <stddef.h>
#include <stdio.h>

/* Write @p[0..n) as a JSON string (with quotes): valid UTF-8 is kept;
 * '"', '\\' and '\n' get their short escapes; other control characters,
 * DEL and each byte of invalid UTF-8 (as U+0080..U+00FF) get \u00XX; and
 * so does '<', as the exports' JSON may stand in the HTML report's page (no
 * "</script>" inside it). */
void nrr_json_str(FILE *f, const char *p, size_t n);
/* The C string @s by the same rule but for '<', which stays as it is
 * (diff --json, hang --json: never inside a page); NULL writes null. */
void nrr_json_strz(FILE *f, const char *s);

#endif
