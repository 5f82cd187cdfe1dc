/* SPDX-License-Identifier: MIT */
/* rundir.h - what a run directory holds besides its traces, for every
 * command that reads one (replay, rerun, bisect) and for `ncclrr run`,
 * which writes it. */
#ifndef NCCLRR_RUNDIR_H
#define NCCLRR_RUNDIR_H

#include <stddef.h>

/* A recorded run keeps its cluster: `ncclrr run` under `ncclrr record`
 * (NCCLRR_TRACE_DIR set) copies its cluster file into the trace directory
 * under this name, and the commands take it from there, so the recording
 * replays on any machine without --topo. */
#define NRR_RUN_CLUSTER_FILE "ncclrr-cluster.xml"

/* The cluster file of the run in @dir (a run directory, or a trace file
 * in one): its kept copy (NRR_RUN_CLUSTER_FILE, a regular file in that
 * directory, not a link).  @recorded (the recorded
 * NCCLRR_TOPO, may be NULL) is never opened: a path a trace names is the
 * recording machine's, and a trace never chooses a file to read; it only
 * goes into the message.  @return 0 with the path in @out, or -ENOENT
 * with what is missing in @why. */
int nrr_run_cluster(const char *dir, const char *recorded, char *out, size_t size, char *why, size_t whysize);

/* Copy the file @src to @dst (a run's cluster file: `ncclrr run` keeps
 * one, bisect gives its attempts one): written to a temporary file beside
 * @dst and renamed, so that a reader sees the whole file or none, and @src
 * opened without blocking (a FIFO put there gives an error, not a wait).
 * @return 0, or -errno with what failed in @err. */
int nrr_copy_file(const char *src, const char *dst, char *err, size_t errsize);

#endif
