/* SPDX-License-Identifier: MIT */
/* env.c - the table of nrr_env.h. */
#include <string.h>

#include "nrr_env.h"

#define REC NRR_ENV_RECORD
#define SET NRR_ENV_SETTING
#define LAU NRR_ENV_LAUNCH
#define PER NRR_ENV_PER_RUN
#define RUN NRR_ENV_BY_RUN

const struct nrr_env_var nrr_env_vars[] = {
	/* families: the libraries' settings, ncclrr's own, Open MPI's, Slurm's */
	{ "NCCL_", REC | SET },
	{ "CUDA_", REC | SET },
	{ "NVIDIA_", REC | SET },
	{ "UCX_", REC | SET },
	{ "TORCH_NCCL_", REC | SET },
	{ "NCCLRR_", REC | LAU },
	{ "OMPI_COMM_WORLD_", REC | LAU },
	{ "SLURM_", LAU },
	/* the rank, in the order the tracer believes them */
	{ "RANK", REC | LAU | RUN | NRR_ENV_RANK },
	{ "OMPI_COMM_WORLD_RANK", NRR_ENV_RANK },
	{ "PMIX_RANK", REC | LAU | NRR_ENV_RANK },
	{ "PMI_RANK", REC | LAU | NRR_ENV_RANK },
	{ "SLURM_PROCID", REC | NRR_ENV_RANK },
	{ "NCCLRR_RANK", RUN | NRR_ENV_RANK },
	/* the rank on the host, the host's number */
	{ "LOCAL_RANK", REC | LAU | RUN | NRR_ENV_LOCAL_RANK },
	{ "NCCLRR_LOCAL_RANK", RUN | NRR_ENV_LOCAL_RANK },
	{ "OMPI_COMM_WORLD_LOCAL_RANK", NRR_ENV_LOCAL_RANK },
	{ "SLURM_LOCALID", REC | NRR_ENV_LOCAL_RANK },
	{ "NCCLRR_HOST", RUN | NRR_ENV_HOST_INDEX },
	{ "SLURM_NODEID", REC | NRR_ENV_HOST_INDEX },
	{ "GROUP_RANK", REC | LAU | NRR_ENV_HOST_INDEX },
	{ "NODE_RANK", REC | LAU | NRR_ENV_HOST_INDEX },
	/* the rest of a launcher's world */
	{ "PMI_SIZE", REC | LAU },
	{ "WORLD_SIZE", REC | LAU | RUN },
	{ "LOCAL_WORLD_SIZE", REC | LAU | RUN },
	{ "NCCLRR_NRANKS", RUN },
	{ "NCCLRR_LOCAL_SIZE", RUN },
	{ "SLURM_NTASKS", REC },
	{ "SLURM_NNODES", REC },
	{ "SLURM_JOB_ID", REC | PER },
	{ "SLURM_STEP_ID", REC | PER },
	{ "TORCHELASTIC_RUN_ID", REC | LAU | PER },
	{ "MASTER_ADDR", REC | LAU },
	{ "MASTER_PORT", REC | LAU },
	{ "LD_LIBRARY_PATH", REC | LAU | RUN },
	{ "LD_PRELOAD", REC | LAU | PER },
	/* NCCL's that `ncclrr run` sets for each rank */
	{ "NCCL_HOSTID", LAU | RUN },
	{ "NCCL_COMM_ID", LAU | RUN },
	{ "NCCL_TOPO_FILE", LAU | RUN },
	{ "NCCL_TOPO_DUMP_FILE", LAU | PER },
	{ "NCCL_NET_PLUGIN", LAU },   /* given to record, which wraps it again */
	/* ncclrr's own that name where this run keeps its files, or how it is
	 * traced, not what the job does */
	{ "NCCLRR_TRACE_DIR", PER },
	{ "NCCLRR_MODE", PER },
	{ "NCCLRR_BACKEND", PER },
	{ "NCCLRR_PAYLOAD", PER },
	{ "NCCLRR_WATCHDOG", PER },
	{ "NCCLRR_TRACE_LIBDIR", PER },
	{ "NCCLRR_FAKE_LIBDIR", PER },
	{ "NCCLRR_FAKE_DEBUG", PER },
	{ "NCCLRR_FAKE_STATS", PER },
	{ "NCCLRR_TOPO", PER | RUN },
	{ "NCCLRR_ID_DIR", PER },     /* ncclrr run's private temporary directory */
	{ "NCCLRR_SYSFS", PER },      /* the host's sysfs view, in that directory */
	{ "NCCLRR_MEMLOCK_GIVEN", PER }, /* this machine's hard RLIMIT_MEMLOCK */
	{ "NCCLRR_TOPO_DIR", PER },   /* where `run --topo NAME` looks: the cluster itself is compared */
	/* the fake fabric's timing (replayer/fake/verbs/verbs_fabric.c): how
	 * long a dead peer takes to give completion error 12 */
	{ "NCCLRR_VERBS_TIME_SCALE", NRR_ENV_FABRIC },
	{ "NCCLRR_VERBS_MIN_TIMEOUT_MS", NRR_ENV_FABRIC },
};
const size_t nrr_env_nvars = sizeof(nrr_env_vars) / sizeof(nrr_env_vars[0]);

static bool matches(const char *entry, const char *name, size_t len)
{
	size_t k = strlen(entry);
	if (entry[k - 1] == '_')
		return len > k && !strncmp(name, entry, k);
	return len == k && !strncmp(name, entry, k);
}

unsigned nrr_env_flags(const char *name, size_t len)
{
	unsigned f = 0;
	for (size_t i = 0; i < nrr_env_nvars; i++)
		if (matches(nrr_env_vars[i].name, name, len))
			f |= nrr_env_vars[i].flags;
	return f;
}

const char *nrr_env_rank_var(size_t i)
{
	for (size_t k = 0; k < nrr_env_nvars; k++)
		if ((nrr_env_vars[k].flags & NRR_ENV_RANK) && i-- == 0)
			return nrr_env_vars[k].name;
	return NULL;
}
