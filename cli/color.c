/* SPDX-License-Identifier: MIT */
/* color.c - see color.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "color.h"

static enum { AUTO, ALWAYS, NEVER } mode = AUTO;

int nrr_color_set(const char *when)
{
	if (strcmp(when, "auto") == 0)
		mode = AUTO;
	else if (strcmp(when, "always") == 0)
		mode = ALWAYS;
	else if (strcmp(when, "never") == 0)
		mode = NEVER;
	else
		return -1;
	return 0;
}

bool nrr_color_on(FILE *f)
{
	if (mode != AUTO)
		return mode == ALWAYS;
	const char *no = getenv("NO_COLOR"), *term = getenv("TERM");
	if (no && *no)
		return false;
	if (!term || !*term || strcmp(term, "dumb") == 0)
		return false;
	return isatty(fileno(f));
}

const char *nrr_color(FILE *f, enum nrr_color_role role)
{
	static const char *const esc[] = {
		[NRR_COLOR_ERROR] = "\033[1;31m",   /* bold red */
		[NRR_COLOR_WARN] = "\033[33m",      /* yellow */
		[NRR_COLOR_GOOD] = "\033[32m",      /* green */
		[NRR_COLOR_RANK] = "\033[1;35m",    /* bold magenta */
	};
	return nrr_color_on(f) ? esc[role] : "";
}

const char *nrr_color_end(FILE *f)
{
	return nrr_color_on(f) ? "\033[0m" : "";
}

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
