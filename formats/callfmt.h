/* SPDX-License-Identifier: MIT */
/* callfmt.h - text rendering of recorded calls (dump, diff, hang). */
#ifndef NCCLRR_CALLFMT_H
#define NCCLRR_CALLFMT_H

#include <stdio.h>
#include "nrt.h"

/* @return true when @c's result is an error under its return convention
 * ("not ready" / "in progress" answers of polling calls are not errors). */
bool nrr_call_failed(const nrr_call *c);

/* Write "name=value, …" for the args of @c that are recorded. */
void nrr_format_args(FILE *f, const nrr_call *c);
/* Write one value of arg @i of @c. */
void nrr_format_value(FILE *f, const nrr_arg_schema *a, const nrr_value *v);
/* Write the result of @c: "CUDA_ERROR_INVALID_VALUE (1)", "-1 ECONNREFUSED", … */
void nrr_format_result(FILE *f, const nrr_call *c);
/* Write a duration: "850ns", "3.1us", "12.0ms", "1.25s". */
void nrr_format_dur(FILE *f, uint64_t ns);
/* Write one dump line (no newline) for @c: "[T] [who] #SEQ name(args) = result dur".
 * @t_rel: seconds since the start of the listing; @who: "host:pid/tid". */
void nrr_format_call(FILE *f, const nrr_call *c, double t_rel, const char *who);

#endif
