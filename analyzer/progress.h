/* SPDX-License-Identifier: MIT */
/* progress.h - a progress line on stderr while a command reads traces.
 *
 * Shown only when stderr is a terminal and the traces total at least
 * 32 MiB (NCCLRR_PROGRESS=1 forces it on, =0 off), redrawn at most four
 * times a second, erased when reading ends; so piped output and small
 * traces never see it. */
#ifndef NCCLRR_ANALYZER_PROGRESS_H
#define NCCLRR_ANALYZER_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

#include "run.h"

struct nrr_progress {
	const char *cmd;
	bool on;
	uint64_t total;        /* bytes of every input file */
	const struct nrr_inputs *in;
	uint64_t *at;          /* per input: the furthest chunk offset reached */
	uint64_t *ts;          /* per input: the latest call time reached */
	size_t n;
	uint32_t tick;
	uint64_t started_ns, drawn_ns;
	bool drawn;
};

/* Set up for the files of @in, named after the command that opened them
 * (@in->cmd: `export --html` runs the hang analysis, and says "export"). */
void nrr_progress_init(struct nrr_progress *p, const struct nrr_inputs *in);
/* Redraw the line if a quarter second has passed. */
void nrr_progress_draw(struct nrr_progress *p);
/* Note that input @i was read up to call @c; cheap enough to call for
 * every call.  Calls come in time order across a file's streams, whose
 * chunks lie anywhere in it, so the part of a file read is measured in its
 * time (from its start to its recorded end), else by the furthest chunk
 * reached: the line only moves forward. */
static inline void nrr_progress_note(struct nrr_progress *p, size_t i, const nrr_call *c)
{
	if (!p->on || i >= p->n)
		return;
	if (c->chunk_offset > p->at[i])
		p->at[i] = c->chunk_offset;
	if (c->ts > p->ts[i])
		p->ts[i] = c->ts;
	if ((p->tick++ & 0x3fff) == 0)   /* the first call, then every 16384 */
		nrr_progress_draw(p);
}
/* Erase the line and free. */
void nrr_progress_end(struct nrr_progress *p);

#endif
