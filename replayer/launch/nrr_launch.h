/* SPDX-License-Identifier: MIT */
/* nrr_launch.h - the virtual-cluster launcher behind `ncclrr run`.
 *
 * Three layers, usable on their own:
 *  - placement (pure): which virtual host and local rank a global rank gets;
 *  - environment building (pure): the variables a rank's process sees;
 *  - the supervisor: fork one process group per rank, prefix their output
 *    lines with "[R] ", enforce a timeout, report and summarize.
 * Every function returns 0 or a negative errno unless said otherwise. */
#ifndef NCCLRR_LAUNCH_H
#define NCCLRR_LAUNCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

#include "ncclrr_config.h"   /* NCCLRR_PKGLIBDIR_REL, NCCLRR_PKGDATADIR_REL */

/* ---- placement ------------------------------------------------------- */

struct nrr_placement {
	int rank;        /* global rank */
	int nranks;      /* world size */
	int host;        /* virtual host index */
	int local_rank;  /* rank on that host == the device index it uses */
	int local_size;  /* ranks per host */
};

/* Place @rank of @nranks on a cluster of @nhosts hosts with @gpus_per_host
 * GPUs each: ranks are spread in order, local_size = nranks / nhosts,
 * host = rank / local_size, local_rank = rank % local_size.
 * @return 0, or -EINVAL when nranks is not a positive multiple of nhosts,
 * needs more than gpus_per_host ranks per host, or rank is out of range
 * (nrr_launch_place_error() then explains). */
int nrr_launch_place(int nhosts, int gpus_per_host, int nranks, int rank,
		     struct nrr_placement *out);

/* A sentence explaining why (nhosts, gpus_per_host, nranks) cannot be
 * placed, written into @buf; @return 0 if it can be placed. */
int nrr_launch_place_error(int nhosts, int gpus_per_host, int nranks,
			   char *buf, size_t size);

/* ---- environment ----------------------------------------------------- */

/* A NULL-terminated "K=V" array owned by the struct. */
struct nrr_env {
	char **vars;
	size_t n, cap;
};

/* Copy @base (NULL-terminated, may be NULL) into @e. */
int nrr_env_init(struct nrr_env *e, char *const *base);
void nrr_env_free(struct nrr_env *e);
/* The value of @key, or NULL. */
const char *nrr_env_get(const struct nrr_env *e, const char *key);
/* Set (or replace) @key to @val. */
int nrr_env_set(struct nrr_env *e, const char *key, const char *val);
/* Set from "K=V"; @return -EINVAL when there is no '=' or K is empty. */
int nrr_env_put(struct nrr_env *e, const char *kv);
/* Remove @key if present. */
void nrr_env_unset(struct nrr_env *e, const char *key);
/* Prepend @dir to the ':'-separated list in @key (set it if absent). */
int nrr_env_prepend_path(struct nrr_env *e, const char *key, const char *dir);

/* Append @item to the ':'-separated list in @key (set it if absent). */
int nrr_env_append_path(struct nrr_env *e, const char *key, const char *item);

/* The fake cluster's fault switch for socket calls (replayer/fake/fake_socket.c),
 * in the fake runtime's directory. */
#define NRR_FAKE_SOCKET_LIB "libncclrr-fake-socket.so"

/* What one rank's environment is built from. NULL strings are left out. */
struct nrr_rank_env {
	struct nrr_placement pl;
	const char *topo_path;     /* absolute cluster file -> NCCLRR_TOPO */
	const char *host_name;     /* -> NCCL_HOSTID */
	const char *host_xml;      /* per-host topology -> NCCL_TOPO_FILE */
	const char *host_sysfs;    /* per-host sysfs view -> NCCLRR_SYSFS */
	const char *memlock;       /* the host's memlock the rank could not be
				    * given -> NCCLRR_MEMLOCK (NULL: it was) */
	const char *memlock_given; /* what it got instead -> NCCLRR_MEMLOCK_GIVEN */
	const char *comm_id;       /* "127.0.0.1:PORT" -> NCCL_COMM_ID */
	const char *id_dir;        /* a directory every rank sees -> NCCLRR_ID_DIR,
				    * where rank 0 leaves its ncclUniqueId */
	const char *fake_libdir;   /* prepended to LD_LIBRARY_PATH (a ':' list:
				    * the fake runtime's directory first) */
	const char *socket_ifname; /* -> NCCL_SOCKET_IFNAME (NULL: "lo") */
	char *const *user_env;     /* "K=V" set last, overriding everything */
	size_t n_user_env;
	char *const *unset_env;    /* names removed after everything else */
	size_t n_unset_env;
	char *const *rank_env;     /* "R:K=V": K=V for rank R only, applied
				    * after unset_env (so it wins) */
	size_t n_rank_env;
};

/* Check one "R:K=V" per-rank variable: R a rank number, K non-empty.
 * @return the rank, or -EINVAL. *@kv (may be NULL) gets "K=V". */
int nrr_launch_rank_env_parse(const char *s, const char **kv);

/* The RLIMIT_MEMLOCK a rank of a host with memlock @want (bytes, -1:
 * unlimited) is started with, into *@rl: @want where this process may
 * give it (any limit up to the hard one; above it, when the hard limit
 * can be raised: root with CAP_SYS_RESOURCE). Else the most it may give
 * (the hard limit), and @virt / @given (64 bytes each) get the strings for
 * NCCLRR_MEMLOCK / NCCLRR_MEMLOCK_GIVEN: the fake libibverbs then counts
 * registrations against @want, as long as the rank keeps the limit it was
 * given (a rank that lowers it gets its own).
 * @return 1 when @want could not be given, 0 when it was. */
int nrr_launch_memlock(long long want, struct rlimit *rl, char *virt, char *given);

/* Add to @e everything a rank needs: NCCLRR_TOPO, NCCLRR_HOST,
 * NCCLRR_RANK, NCCLRR_NRANKS, NCCLRR_LOCAL_RANK, NCCLRR_LOCAL_SIZE, RANK,
 * WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, NCCL_HOSTID, NCCL_COMM_ID,
 * NCCL_SOCKET_IFNAME, NCCL_TOPO_FILE, NCCLRR_SYSFS, LD_LIBRARY_PATH, then the user's
 * variables, then removes the names in unset_env (inherited, set by us or
 * by the user alike), then sets the rank_env entries of this rank; when
 * the result has a non-empty NCCLRR_FAULT and fake_libdir is set, appends
 * NRR_FAKE_SOCKET_LIB in fake_libdir's first directory to LD_PRELOAD (the fault switch's socket
 * calls).
 * @return -EINVAL for a malformed user or per-rank variable or an unset
 * name that is empty or holds '='. */
int nrr_launch_rank_env(struct nrr_env *e, const struct nrr_rank_env *r);

/* Wrapper mode: find this process's rank and world size from an existing
 * launcher's variables in @env: OMPI_COMM_WORLD_RANK/SIZE (Open MPI),
 * then SLURM_PROCID/SLURM_NTASKS (srun), then RANK/WORLD_SIZE (torchrun
 * and others). @source gets the name of the rank variable used.
 * @return 0, -ENOENT when none is set, -EINVAL when a value is not a
 * number or the world size is missing. */
int nrr_launch_wrap_rank(char *const *env, int *rank, int *nranks,
			 const char **source);

/* ---- finding things -------------------------------------------------- */

/* Where an installed ncclrr keeps its private libraries (the tracer, the
 * net-plugin wrappers, the socket net plugin, fake/) and its data (topo/),
 * relative to the directory of the installed ncclrr program (meson's
 * libdir/ncclrr and datadir/ncclrr seen from bindir; absolute when bindir
 * is outside the prefix).  Give them to nrr_find_near_exe() after the
 * build tree's directory. */
#define NRR_PKGLIBDIR NCCLRR_PKGLIBDIR_REL
#define NRR_PKGDATADIR NCCLRR_PKGDATADIR_REL

/* Directory holding the fake libcuda.so.1: $NCCLRR_FAKE_LIBDIR, else
 * relative to /proc/self/exe: <exedir>/../replayer/fake[/cuda] (build
 * tree), NRR_PKGLIBDIR/fake (installed). @return 0, or -ENOENT with @err
 * explaining where it looked. */
int nrr_launch_find_fake_libdir(char *buf, size_t size, char *err, size_t errsize);

/* The NCCL every rank gets (scripts/nccl.sh relinks it against ncclrr's
 * CUDA runtime): the directory of its libnccl.so.2, for LD_LIBRARY_PATH
 * after the fake runtime's. @want: a version ("2.22.3", looked for in
 * ../nccl/VERSION beside this program, or the installed ncclrr/nccl/VERSION),
 * a path (libnccl.so.2 or its directory), or NULL: $NCCLRR_NCCL_DIR, else
 * NRR_NCCL_DEFAULT_VERSION, else any version relinked there.
 * @return 0, or -ENOENT with @err saying where it looked and what to do. */
#define NRR_NCCL_DEFAULT_VERSION "2.22.3"
int nrr_launch_find_nccl_dir(const char *want, char *buf, size_t size, char *err, size_t errsize);

/* One NCCL of the fake cluster: a directory VERSION holding libnccl.so.2
 * (scripts/nccl.sh relink), with the build facts it wrote (BUILDINFO). */
struct nrr_nccl_build {
	char version[32];
	char dir[4096];
};

/* Order NCCL versions by release ("2.22.3" < "2.29.7" < "2.100.0"):
 * numeric components compared in turn. */
int nrr_nccl_vercmp(const char *a, const char *b);

/* The NCCL versions the fake cluster has: the version directories of
 * $NCCLRR_NCCL_DIR's parent when that names one, and of the places
 * nrr_launch_find_nccl_dir() looks (the first place with a version wins),
 * sorted by release.  @return the count (*@out to free), or -ENOMEM. */
int nrr_launch_nccl_list(struct nrr_nccl_build **out);

/* The directory holding @file: $@envvar if @envvar and set (it must hold @file), else
 * the first of @rel (NULL-terminated; relative to the directory of
 * /proc/self/exe unless absolute, '*' allowed) that holds it.  @what names it in the
 * error.  @return 0, or -ENOENT with @err saying where it looked. */
int nrr_find_near_exe(const char *envvar, const char *file, const char *const *rel, const char *what, char *buf,
		      size_t size, char *err, size_t errsize);

/* A free TCP port on 127.0.0.1 (bound, read, released). @return port or
 * a negative errno. */
int nrr_launch_free_port(void);

/* NCCL's shared-memory segments (/dev/shm/nccl-*, one per intra-host
 * connection) are unlinked once both sides have them mapped, so a rank
 * that fails or is killed during connect leaves its own behind: 7 MB
 * each, about 130 MB per failed 16-rank job, in memory until reboot.
 * Called once a job's processes have all ended (ncclrr run, ncclrr
 * record): removes those of this user made since @since that no process
 * has mapped or open (a job beside this one keeps its own).
 * @return how many were removed. */
int nrr_launch_sweep_nccl_shm(time_t since);

/* ---- the cluster and the supervisor ---------------------------------- */

/* A loaded cluster, as the supervisor sees it. */
struct nrr_cluster {
	int nhosts;
	int gpus_per_host;
	char **host_names;  /* nhosts names */
	/* write host @host's NCCL topology XML to @path; @return 0 or
	 * negative with a message in @err */
	int (*write_host_xml)(void *ctx, int host, const char *path, char *err, size_t errsize);
	/* write host @host's sysfs view (the NICs NCCL reads under /sys,
	 * topo/nrr_sysfs.c) into the new directory @dir; NULL: none */
	int (*write_host_sysfs)(void *ctx, int host, const char *dir, char *err, size_t errsize);
	/* per host: the RLIMIT_MEMLOCK its processes get, bytes, -1
	 * unlimited (topology <host memlock=>); NULL: leave the limit alone */
	long long *memlock;
	void *ctx;
};

/* Copy @topo_path to $NCCLRR_TRACE_DIR/NRR_RUN_CLUSTER_FILE (rundir.h) when that is
 * set and the copy is not there yet (written whole: a temporary file
 * renamed).  @return 0 (also when not recorded), or -errno with a message
 * in @err (the run goes on). */
int nrr_launch_keep_cluster(const char *topo_path, char *err, size_t errsize);
/* The same into the trace directory @dir (NULL or "": nothing to do). */
int nrr_launch_keep_cluster_in(const char *dir, const char *topo_path, char *err, size_t errsize);

/* The cluster file `--topo @topo` names, as an absolute path in @buf: the
 * file @topo when it exists (relative to the current directory), else for
 * a bare name ("1node_8gpu.xml" or "1node_8gpu") that file in
 * $NCCLRR_TOPO_DIR, or else in the build tree's topo/ (<exedir>/../topo)
 * or the installed NRR_PKGDATADIR/topo.  @return 0, or -ENOENT /
 * -ENAMETOOLONG with @err saying where it looked. */
int nrr_launch_find_topo(const char *topo, char *buf, size_t size, char *err, size_t errsize);

/* Load @path with the topology parser (topo/). @return 0, or negative with
 * the parser's "file:line: ..." message in @err. */
int nrr_cluster_load(struct nrr_cluster *c, const char *path, char *err, size_t errsize);
void nrr_cluster_free(struct nrr_cluster *c);

struct nrr_launch_opts {
	const struct nrr_cluster *cluster;
	const char *topo_path;     /* absolute */
	int nranks;                /* 0: nhosts * gpus_per_host */
	double timeout_s;          /* 0: none */
	double kill_grace_s;       /* SIGTERM -> SIGKILL delay (0: 3 s, 10 s when recorded) */
	const char *fake_libdir;   /* NULL: leave LD_LIBRARY_PATH alone */
	const char *comm_id;       /* NULL: pick a free loopback port */
	char *const *user_env;
	size_t n_user_env;
	char *const *unset_env;    /* names removed from every rank's environment */
	size_t n_unset_env;
	char *const *rank_env;     /* "R:K=V" for rank R only (nrr_rank_env) */
	size_t n_rank_env;
	const double *start_late_s; /* per rank (nranks entries), seconds its program is
				     * exec'ed after the others'; NULL: none */
	char *const *base_env;     /* what every rank's environment starts from
				    * ("K=V", NULL-terminated); NULL: this process's */
	char *const *argv;         /* program and arguments, NULL-terminated */
	FILE *out, *err;           /* where rank lines go (stdout, stderr) */
	FILE *report;              /* summary and timeout report (stderr) */
};

/* Exit codes of nrr_launch_run. */
enum {
	NRR_LAUNCH_OK = 0,         /* every rank exited 0 */
	NRR_LAUNCH_FAILED = 1,     /* some rank exited non-zero or by signal */
	NRR_LAUNCH_SETUP = 2,      /* nothing started: bad options, no program */
	NRR_LAUNCH_TIMEOUT = 124,  /* the timeout fired; ranks were killed */
	NRR_LAUNCH_INTERRUPTED = 130, /* SIGINT/SIGTERM/SIGHUP received */
};

/* Run the job to completion. @return one of the NRR_LAUNCH_* codes. */
int nrr_launch_run(const struct nrr_launch_opts *o);

/* Wrapper mode: build this rank's environment (rank/world from the outer
 * launcher) and execve @argv; returns only on failure with
 * NRR_LAUNCH_SETUP after printing why to @o->report. */
int nrr_launch_wrap_exec(const struct nrr_launch_opts *o);

/* Find @prog in $PATH (or as given when it has a '/'); @return 0 and the
 * path in @buf, or -ENOENT / -EACCES. */
int nrr_launch_find_program(const char *prog, char *buf, size_t size);

/* ---- recording ------------------------------------------------------ */

/* How a job is recorded (`ncclrr record`'s options). */
struct nrr_record_opts {
	const char *dir;       /* the trace directory, absolute, existing */
	const char *mode;      /* "full" or "ring:SIZE"; NULL: full */
	const char *backend;   /* "native" or "lttng"; NULL: native */
	const char *ltlib;     /* lttng: the path of libncclrr-trace-lttng.so */
	const char *payload;   /* NCCLRR_PAYLOAD; NULL: the tracer's default */
	const char *watchdog;  /* NCCLRR_WATCHDOG; NULL: off */
	bool group_read;       /* NCCLRR_GROUP_READ=1 */
	FILE *warn;            /* where warnings go ("ncclrr record: warning:
				* ..."); NULL: stderr */
};

/* Add to @e (the environment of the command to record) what makes it and
 * everything it starts recorded: the tracer prepended to LD_PRELOAD,
 * NCCLRR_TRACE_DIR, NCCLRR_MODE, NCCLRR_BACKEND, NCCLRR_PAYLOAD,
 * NCCLRR_WATCHDOG, NCCLRR_GROUP_READ, the net plugin wrapper
 * (NCCL_NET_PLUGIN / NCCLRR_NET_PLUGIN, after the plugin @e's
 * NCCL_NET_PLUGIN names), the profiler plugin (NCCL_PROFILER_PLUGIN /
 * NCCLRR_PROFILER_PLUGIN) and NCCL_TOPO_DUMP_FILE unless @e has one.
 * The tracer is found in $NCCLRR_TRACE_LIBDIR, else beside this program.
 * @return 0, or -ENOENT (a library not found) / -ENOMEM with @err saying
 * what. */
int nrr_record_env(struct nrr_env *e, const struct nrr_record_opts *o, char *err, size_t errsize);

/* Create @path and its parents (mode 0777 less the umask). @return 0 or -1 (errno). */
int nrr_mkdir_p(const char *path);

/* ---- the virtual cluster as one call --------------------------------- */

/* A rank whose program starts late (`ncclrr run --start-late R:S`). */
struct nrr_late_start {
	int rank;
	double s;
};

/* A job on the virtual cluster, optionally recorded: what `ncclrr run`,
 * `ncclrr bisect`'s attempts and `ncclrr replay --rerun` launch. */
struct nrr_cluster_spec {
	const char *topo;          /* a cluster file, or a shipped cluster's name
				    * (nrr_launch_find_topo) */
	int nranks;                /* 0: hosts x GPUs per host */
	double timeout_s;          /* 0: none */
	const char *nccl;          /* VERSION or PATH (nrr_launch_find_nccl_dir);
				    * NULL: the default, or none when there is none */
	const char *comm_id;       /* NULL: 127.0.0.1 and a free port */
	char *const *env;          /* "K=V" for every rank (--env) */
	size_t n_env;
	char *const *unset;        /* names removed (--unset) */
	size_t n_unset;
	char *const *rank_env;     /* "R:K=V" (--rank-env) */
	size_t n_rank_env;
	const struct nrr_late_start *late;  /* --start-late */
	size_t n_late;
	char *const *launcher_env; /* "K=V" over this process's environment, which
				    * the ranks' start from (and the recording
				    * reads: NCCL_NET_PLUGIN) */
	size_t n_launcher_env;
	bool wrap;                 /* wrapper mode: this process becomes the
				    * rank an outer launcher gave it (exec) */
	const struct nrr_record_opts *record; /* recorded into record->dir
				    * (created; made absolute) when not NULL */
	char *const *argv;         /* program and arguments, NULL-terminated */
	FILE *out, *err;           /* the ranks' lines (NULL: stdout, stderr) */
	FILE *report;              /* the supervisor's notes (NULL: stderr) */
};

struct nrr_cluster_result {
	int status;                /* NRR_LAUNCH_* */
	char error[2 * 4096 + 256]; /* NRR_LAUNCH_SETUP before any rank started:
				    * why, as a sentence ("" when the
				    * supervisor said it on @report) */
	char topo_path[4096];      /* the cluster file used, absolute */
	char trace_dir[4096];      /* recorded: the trace directory, absolute */
};

/* Find and load the cluster, the fake runtime and NCCL, set up the
 * recording if asked, and run the job (nrr_launch_run) or, wrapper mode,
 * exec this rank (nrr_launch_wrap_exec).  @return @res->status. */
int nrr_cluster_run(const struct nrr_cluster_spec *s, struct nrr_cluster_result *res);

/* Write to @f, after @prefix, the commands that run @s by hand
 * (`ncclrr record -q -o DIR -- ncclrr run --topo ...`), quoted for a shell. */
void nrr_cluster_spec_print(FILE *f, const char *prefix, const char *ncclrr, const struct nrr_cluster_spec *s);

#endif
