/* SPDX-License-Identifier: MIT */
/* inputs.c - see inputs.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cmds.h"
#include "color.h"
#include "inputs.h"

void nrr_cli_run_sink(enum nrr_run_msg kind, const char *cmd, const char *text)
{
	switch (kind) {
	case NRR_RUN_ERROR:
		nrr_cli_error(cmd, "%s", text);
		break;
	case NRR_RUN_USAGE:
		nrr_cli_usage_error(cmd, "%s", text);
		break;
	case NRR_RUN_SKIP:
		fprintf(stderr, "ncclrr %s: %s%s%s\n", cmd, nrr_color(stderr, NRR_COLOR_WARN), text,
			nrr_color_end(stderr));
		break;
	case NRR_RUN_NOTE:
		fprintf(stderr, "ncclrr %s: %s\n", cmd, text);
		break;
	}
}

static int parse_seconds(const char *s, double *out)
{
	char *e;
	errno = 0;
	*out = strtod(s, &e);
	return errno || e == s || *e || *out != *out ? -1 : 0;
}

int nrr_select_option(struct nrr_select *s, const char *cmd, int c, const char *arg)
{
	switch (c) {
	case NRR_SEL_RANK: s->ranks = arg; return 1;
	case NRR_SEL_API: s->api = arg; return 1;
	case NRR_SEL_ERRORS: s->errors = true; return 1;
	case NRR_SEL_FROM:
		if (parse_seconds(arg, &s->from))
			return nrr_cli_usage_error(cmd, "--from wants seconds, got '%s'", arg);
		return 1;
	case NRR_SEL_TO:
		if (parse_seconds(arg, &s->to))
			return nrr_cli_usage_error(cmd, "--to wants seconds, got '%s'", arg);
		return 1;
	case NRR_SEL_AROUND:
		if (parse_seconds(arg, &s->around) || s->around < 0)
			return nrr_cli_usage_error(cmd, "--around-failure wants seconds (0 or more), got '%s'", arg);
		return 1;
	default:
		return 0;
	}
}

