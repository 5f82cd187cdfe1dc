/* SPDX-License-Identifier: MIT */
/* color.c - see color.h. */
#include <errno.h>
#include <stdio.h>

#include "color.h"

int nrr_cli_verror(const char *name, const char *fmt, va_list ap)
{
	int e = errno;   /* (isatty sets it; callers go on to test theirs) */
	fprintf(stderr, "ncclrr %s: %s", name, nrr_color(stderr, NRR_COLOR_ERROR));
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "%s\n", nrr_color_end(stderr));
	errno = e;
	return 2;
}

int nrr_cli_error(const char *name, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = nrr_cli_verror(name, fmt, ap);
	va_end(ap);
	return rc;
}
