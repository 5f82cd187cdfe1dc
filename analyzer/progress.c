/* SPDX-License-Identifier: MIT */
/* progress.c - see progress.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "progress.h"

#define PROGRESS_MIN_BYTES (32ull << 20)

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void nrr_progress_init(struct nrr_progress *p, const struct nrr_inputs *in)
{
	memset(p, 0, sizeof(*p));
	p->cmd = in->cmd ? in->cmd : "ncclrr";
	for (size_t i = 0; i < in->n; i++)
		p->total += nrr_reader_info(in->r[i])->file_size;
	const char *force = getenv("NCCLRR_PROGRESS");
	if (force && *force)
		p->on = strcmp(force, "0") != 0;
	else
		p->on = isatty(STDERR_FILENO) && p->total >= PROGRESS_MIN_BYTES;
	if (p->on) {
		p->at = calloc(in->n ? in->n : 1, sizeof(*p->at));
		p->ts = calloc(in->n ? in->n : 1, sizeof(*p->ts));
		if (!p->at || !p->ts)
			p->on = false;   /* no progress line is better than no answer */
		p->n = in->n;
		p->in = in;
	}
	p->started_ns = now_ns();
}

void nrr_progress_draw(struct nrr_progress *p)
{
	uint64_t t = now_ns();
	if (!p->on || t - p->drawn_ns < 250000000ull)
		return;
	p->drawn_ns = t;
	double done = 0;
	for (size_t i = 0; i < p->n; i++) {
		const nrr_file_info *fi = nrr_reader_info(p->in->r[i]);
		double part;
		if (fi->end_ts > fi->mono_ns && p->ts[i] >= fi->mono_ns)
			part = (double)(p->ts[i] - fi->mono_ns) / (double)(fi->end_ts - fi->mono_ns);
		else
			part = fi->file_size ? (double)p->at[i] / (double)fi->file_size : 1.0;
		done += (part > 1.0 ? 1.0 : part) * (double)fi->file_size;
	}
	double frac = p->total ? done / (double)p->total : 1.0;
	if (frac > 1.0)
		frac = 1.0;
	double secs = (double)(t - p->started_ns) / 1e9;
	fprintf(stderr, "\rncclrr %s: reading traces %5.1f%% of %.1f MB, %.0f s\033[K", p->cmd,
		100.0 * frac, (double)p->total / 1e6, secs);
	fflush(stderr);
	p->drawn = true;
}

void nrr_progress_end(struct nrr_progress *p)
{
	if (p->drawn) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
	free(p->at);
	free(p->ts);
	memset(p, 0, sizeof(*p));
}
