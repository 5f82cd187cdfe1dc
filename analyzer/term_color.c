/* SPDX-License-Identifier: MIT */
/* term_color.c - see term_color.h. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "term_color.h"

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
