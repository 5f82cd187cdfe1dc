/* SPDX-License-Identifier: MIT */
/* write_trace.h - a trace file with the built-in schema and the metadata
 * a test gives, for the unit tests that read traces (include after nrt.h
 * and check.h). */
#ifndef NCCLRR_TEST_WRITE_TRACE_H
#define NCCLRR_TEST_WRITE_TRACE_H

#include <stdbool.h>
#include <string.h>

/* Write @path with metadata @meta ("key=value\n" lines); @end for
 * nrr_writer_set_end() (NULL: none); @killed: the writer is abandoned, as
 * SIGKILL leaves it (no index). */
static inline void write_trace(const char *path, const char *meta, const char *end, bool killed)
{
	nrr_writer_opts o = { .schema = nrr_builtin_schema, .schema_len = nrr_builtin_schema_len,
			      .meta = meta, .meta_len = strlen(meta) };
	nrr_writer *w;
	CHECK_FATAL(nrr_writer_open(&w, path, &o) == 0, "writer %s", path);
	if (end)
		CHECK_FATAL(nrr_writer_set_end(w, end, false) == 1, "set_end %s", end);
	if (killed)
		nrr_writer_abandon(w);
	else
		CHECK_FATAL(nrr_writer_close(w) == 0, "close %s", path);
}

#endif
