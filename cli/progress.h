/* SPDX-License-Identifier: MIT */
/* progress.h - a progress line on stderr while a command reads traces.
 *
 * Shown only when stderr is a terminal and the traces total at least
 * 32 MiB (NCCLRR_PROGRESS=1 forces it on, =0 off), redrawn at most four
 * times a second, erased when reading ends; so piped output and small
 * traces never see it. */
#ifndef NCCLRR_CLI_PROGRESS_H
#define NCCLRR_CLI_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

#include "inputs.h"

struct nrr_progress {
	const char *cmd;
	bool on;
	uint64_t total;        /* bytes of every input file */
	uint64_t *at;          /* per input: offset of the chunk being read */
	size_t n;
	uint32_t tick;
	uint64_t started_ns, drawn_ns;
	bool drawn;
};

/* Set up for the files of @in read by command @cmd. */
void nrr_progress_init(struct nrr_progress *p, const char *cmd, const struct nrr_inputs *in);
/* Redraw the line if a quarter second has passed. */
void nrr_progress_draw(struct nrr_progress *p);
/* Note that input @i was read up to the chunk at @chunk_offset (an
 * nrr_call's chunk_offset); cheap enough to call for every call. */
static inline void nrr_progress_note(struct nrr_progress *p, size_t i, uint64_t chunk_offset)
{
	if (!p->on || i >= p->n)
		return;
	p->at[i] = chunk_offset;
	if ((p->tick++ & 0x3fff) == 0)   /* the first call, then every 16384 */
		nrr_progress_draw(p);
}
/* Erase the line and free. */
void nrr_progress_end(struct nrr_progress *p);

#endif
