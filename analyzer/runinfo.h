/* SPDX-License-Identifier: MIT */
/*
 * runinfo.h - what a run was configured with, from trace metadata.
 *
 * The run is the set of traced processes that carry a `rank` meta key (the
 * `ncclrr run` launcher and other helpers have none and are skipped); when
 * no process has a rank, every process counts, numbered in the order given.
 * When two processes claim one rank (an exec), the later exec generation
 * wins.
 *
 * Items (key, rank, value); rank -1 when the value is the same on every
 * rank, else one item per rank that has the key:
 *   ranks        the ranks traced, as ranges ("0-15")          rank -1
 *   nranks       how many ranks were traced                     rank -1
 *   hosts        host count and the ranks on each host, in rank order
 *                ("2: node0=0-7 node1=8-15"); a rank's host is its
 *                NCCL_HOSTID when set (NCCL's own host identity), else the
 *                meta host                                      rank -1
 *   nccl_version from the meta key of that name
 *   exe          basename of the executable and its GNU build id
 *                ("conn_setup build-id:…", meta exe_build_id), else the
 *                path and "(no build id recorded)": the same binary at
 *                another path is the same, a rebuilt one is not
 *   argv         the command line with argv[0] cut to its basename
 *   topology     the cluster file: the basename the recording gives it
 *                (NCCLRR_TOPO) and the content hash of the copy its run
 *                directory keeps (rundir.h), else "NAME (no copy kept)".
 *                No path a trace names is ever opened
 *   env.NAME     an environment variable the tracer kept
 *
 * Normalisation of env.NAME (what always differs between runs, or by
 * design between ranks, must not hide what decides behaviour):
 *   dropped      the tracer's own settings (NCCLRR_TRACE_DIR, _MODE,
 *                _BACKEND, _PAYLOAD, _WATCHDOG, _TRACE_LIBDIR), where the
 *                fake runtime lives (NCCLRR_FAKE_LIBDIR) and its debug
 *                switches (NCCLRR_FAKE_DEBUG, _STATS), LD_PRELOAD (the
 *                tracer), NCCL_TOPO_DUMP_FILE (a path in the trace dir),
 *                job ids (SLURM_JOB_ID, SLURM_STEP_ID, TORCHELASTIC_RUN_ID),
 *                NCCLRR_TOPO (reported as `topology`), NCCLRR_TOPO_DIR
 *                (where `run --topo NAME` looked), and NCCL_TOPO_FILE
 *                when `ncclrr run` wrote it into a temporary directory (it
 *                is derived from the topology); a NCCL_TOPO_FILE of the
 *                user's is kept as its path
 *   ports        NCCL_COMM_ID keeps its address, the port becomes <port>;
 *                MASTER_PORT becomes <port>
 *   identity     variables that differ per rank by design become a token
 *                when they agree with the rank's place, so that they fold
 *                into one item and only a wrong value stands out:
 *                RANK, NCCLRR_RANK, OMPI_COMM_WORLD_RANK, PMI_RANK,
 *                PMIX_RANK, SLURM_PROCID equal to the rank -> <rank>;
 *                LOCAL_RANK, NCCLRR_LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK,
 *                SLURM_LOCALID equal to the rank's index among the ranks of
 *                its host -> <local rank>; NCCLRR_HOST, SLURM_NODEID,
 *                GROUP_RANK, NODE_RANK equal to the index of its host (in
 *                order of first rank) -> <host index>; NCCL_HOSTID -> <host>
 *                (the names are in `hosts`)
 * Everything else (LD_LIBRARY_PATH, NCCLRR_FAULT, every NCCL_ knob) is kept
 * verbatim.
 */
#ifndef NCCLRR_ANALYZER_RUNINFO_H
#define NCCLRR_ANALYZER_RUNINFO_H

#include <stddef.h>

#include "nrt.h"

struct nrr_runinfo_item { char *key; int rank; char *value; }; /* rank -1: same on every rank */
/* items sorted by key, then rank (-1 first) */
struct nrr_runinfo { struct nrr_runinfo_item *items; size_t n; };

/* @return 0, or -1 with a message in @err */
int nrr_runinfo_read(struct nrr_runinfo *ri, nrr_reader *const *r, size_t n, char *err, size_t errlen);
void nrr_runinfo_free(struct nrr_runinfo *ri);

struct nrr_runinfo_change { const char *key; int rank; const char *a, *b; }; /* a or b NULL: absent */
/* Differences that decide behaviour (noise such as ports, pids, temp paths
 * dropped at read), sorted by key then rank.  Ranks are compared where both
 * runs have them (a different set of ranks shows as `ranks`/`nranks`); a
 * change that is the same on every such rank is one change with rank -1.
 * The strings point into @a and @b; free *@out with free().
 * @return count, or (size_t)-1 on ENOMEM */
size_t nrr_runinfo_diff(const struct nrr_runinfo *a, const struct nrr_runinfo *b, struct nrr_runinfo_change **out);

/* The value of @key for @rank (an item of that rank, else the rank -1
 * item), or NULL. */
/* The host a process ran on as its job saw it: the virtual host of
 * `ncclrr run` (NCCL_HOSTID), else the machine (meta host); NULL when
 * neither is recorded.  The string is the reader's until its next
 * nrr_reader_meta() call. */
const char *nrr_runinfo_host(nrr_reader *r);

const char *nrr_runinfo_get(const struct nrr_runinfo *ri, const char *key, int rank);

#endif
