/* SPDX-License-Identifier: MIT */
/* term_color.h - colours on a terminal for errors, the failing rank and the
 * verdicts (reproduced, diverged, a hang), the one place that decides.
 *
 * The text renderers of the analyses (hang, diff) and the CLI use it.
 *
 * --color=auto (the default): only on a stream that is a terminal, with
 * TERM set and not "dumb", and NO_COLOR unset or empty (the NO_COLOR convention);
 * --color=always: always, NO_COLOR or not; --color=never: never. */
#ifndef NCCLRR_ANALYZER_TERM_COLOR_H
#define NCCLRR_ANALYZER_TERM_COLOR_H

#include <stdbool.h>
#include <stdio.h>

enum nrr_color_role {
	NRR_COLOR_ERROR,   /* an error message, a failing call or rank, "NOT reproduced", "diverged" */
	NRR_COLOR_WARN,    /* a warning, a skipped input */
	NRR_COLOR_GOOD,    /* "reproduced", "the runs agree", "no hang" */
	NRR_COLOR_RANK,    /* the rank at the root of a failure or hang */
};

/* --color=@when: "auto", "always" or "never".  @return 0, or -1 for any
 * other word (nothing changed). */
int nrr_color_set(const char *when);
/* Whether what is written to @f gets colours. */
bool nrr_color_on(FILE *f);
/* The escape that starts @role on @f, and the one that ends it: both ""
 * when @f gets no colours. */
const char *nrr_color(FILE *f, enum nrr_color_role role);
const char *nrr_color_end(FILE *f);

#endif
