/* SPDX-License-Identifier: MIT */
/* color.h - the CLI's error line, in the error colour (the colours on a
 * terminal, and when they are on, are decided in analyzer/term_color.h). */
#ifndef NCCLRR_CLI_COLOR_H
#define NCCLRR_CLI_COLOR_H

#include <stdarg.h>

#include "term_color.h"   /* (the colours themselves: analyzer/) */

/* Print "ncclrr NAME: msg" on stderr, the message in the error colour;
 * errno is kept.  @return 2 (NRR_EXIT_USAGE). */
int nrr_cli_error(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int nrr_cli_verror(const char *name, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

#endif
