/* SPDX-License-Identifier: MIT */
/* launch_cluster.c - the virtual cluster as one call: a job on a topology,
 * optionally recorded (nrr_cluster_run), and the recording's environment
 * (nrr_record_env) that `ncclrr record` gives any command.  `ncclrr run`,
 * `ncclrr bisect`'s attempts and `ncclrr replay --rerun` launch through
 * nrr_cluster_run in their own process: none of them execs ncclrr again. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "net_choose.h"
#include "nrr_launch.h"

extern char **environ;

int nrr_mkdir_p(const char *path)
{
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0777) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(tmp, 0777) && errno != EEXIST ? -1 : 0;
}

/* ---- recording ------------------------------------------------------- */

static int find_lib(const char *file, const char *const *rel, const char *what, char *path, size_t len, char *err,
		    size_t errsize)
{
	char dir[PATH_MAX];
	int rc = nrr_find_near_exe("NCCLRR_TRACE_LIBDIR", file, rel, what, dir, sizeof(dir), err, errsize);
	if (rc < 0)
		return rc;
	snprintf(path, len, "%s/%s", dir, file);
	return 0;
}

#define LTTNG_UST_FD_LIB "liblttng-ust-fd.so.1"

int nrr_record_env(struct nrr_env *e, const struct nrr_record_opts *o, char *err, size_t errsize)
{
	FILE *warn = o->warn ? o->warn : stderr;
	const char *mode = o->mode ? o->mode : "full", *backend = o->backend ? o->backend : "native";
	const char *ltlib = o->ltlib ? o->ltlib : "";
	char lib[PATH_MAX];
	static const char *const rel[] = { "../tracer", NRR_PKGLIBDIR, NULL };
	int rc = find_lib("libncclrr-trace.so", rel, "the ncclrr tracer", lib, sizeof(lib), err, errsize);
	if (rc < 0)
		return rc;

	const char *old = nrr_env_get(e, "LD_PRELOAD");
	size_t plen = strlen(lib) + strlen(ltlib) + sizeof(LTTNG_UST_FD_LIB) + (old ? strlen(old) : 0) + 4;
	char *preload = malloc(plen);
	if (!preload)
		goto nomem;
	/* LTTng: lttng-ust's own descriptor guard too (liblttng-ust-fd, of
	 * lttng-ust itself): a program that closes every descriptor, as
	 * daemons and launchers do, would close lttng-ust's, and it aborts */
	snprintf(preload, plen, "%s%s%s%s%s%s", lib, *ltlib ? ":" : "", ltlib, *ltlib ? ":" LTTNG_UST_FD_LIB : "",
		 old && *old ? ":" : "", old && *old ? old : "");
	rc = nrr_env_set(e, "LD_PRELOAD", preload);
	free(preload);
	if (rc < 0 || nrr_env_set(e, "NCCLRR_TRACE_DIR", o->dir) < 0 || nrr_env_set(e, "NCCLRR_MODE", mode) < 0 ||
	    nrr_env_set(e, "NCCLRR_BACKEND", backend) < 0 ||
	    (o->payload && nrr_env_set(e, "NCCLRR_PAYLOAD", o->payload) < 0) ||
	    (o->watchdog && nrr_env_set(e, "NCCLRR_WATCHDOG", o->watchdog) < 0))
		goto nomem;
	if (o->group_read) {
		if (nrr_env_set(e, "NCCLRR_GROUP_READ", "1") < 0)
			goto nomem;
	} else {
		nrr_env_unset(e, "NCCLRR_GROUP_READ");
	}
	/* an external net plugin (NCCL_NET_PLUGIN, else libnccl-net.so) is
	 * wrapped by the variant of its own version, which records and
	 * forwards every call; without one NCCL's internal nets are traced at
	 * the socket and verbs layers */
	char plugin[PATH_MAX], why[1024] = "";
	int nv = nrr_net_plugin_version(nrr_env_get(e, "NCCL_NET_PLUGIN"), plugin, sizeof(plugin), why, sizeof(why));
	if (nv > 0) {
		static const char *const rel_net[] = { "../tracer/plugins", NRR_PKGLIBDIR, NULL };
		char wrap[PATH_MAX + 32], file[64];
		snprintf(file, sizeof(file), "libncclrr-net-v%d.so", nv);
		rc = find_lib(file, rel_net, "the ncclrr tracer", wrap, sizeof(wrap), err, errsize);
		if (rc < 0)
			return rc;
		if (nrr_env_set(e, "NCCLRR_NET_PLUGIN", plugin) < 0 || nrr_env_set(e, "NCCL_NET_PLUGIN", wrap) < 0)
			goto nomem;
	} else if (nv < 0) {
		fprintf(warn, "ncclrr record: warning: %s; its calls are not recorded\n", why);
	}
	/* ncclrr's profiler plugin records NCCL's profiler events (NCCL
	 * 2.23+; older ones never look); a profiler the user named is loaded
	 * by it and gets every call, as NCCL would give them */
	{
		static const char *const rel_prof[] = { "../tracer/plugins", NRR_PKGLIBDIR, NULL };
		char pdir[PATH_MAX], prof[PATH_MAX + 32], perr[2048], uprof[PATH_MAX] = "";
		const char *user = nrr_env_get(e, "NCCL_PROFILER_PLUGIN");
		if (nrr_find_near_exe("NCCLRR_TRACE_LIBDIR", "libncclrr-profiler.so", rel_prof, "ncclrr's profiler plugin",
				      pdir, sizeof(pdir), perr, sizeof(perr)) < 0) {
			fprintf(warn, "ncclrr record: warning: %s; NCCL's profiler events are not recorded\n", perr);
		} else {
			snprintf(prof, sizeof(prof), "%s/libncclrr-profiler.so", pdir);
			/* the profiler NCCL would have loaded (NCCL_PROFILER_PLUGIN,
			 * else libnccl-profiler.so, else the net plugin's library) */
			int pv = user && !strcmp(user, prof) ? 0 :
				 nrr_profiler_plugin_version(user, nv > 0 ? plugin : NULL, uprof, sizeof(uprof), perr,
							     sizeof(perr));
			if (pv > 0) {
				if (nrr_env_set(e, "NCCLRR_PROFILER_PLUGIN", uprof) < 0)
					goto nomem;
			} else if (pv < 0) {
				fprintf(warn, "ncclrr record: warning: %s; NCCL's profiler events are recorded without it\n",
					perr);
			}
			if (nrr_env_set(e, "NCCL_PROFILER_PLUGIN", prof) < 0)
				goto nomem;
		}
	}
	if (!nrr_env_get(e, "NCCL_TOPO_DUMP_FILE")) {
		char topo[PATH_MAX + 32];
		snprintf(topo, sizeof(topo), "%s/nccl-topo.xml", o->dir);
		if (nrr_env_set(e, "NCCL_TOPO_DUMP_FILE", topo) < 0)
			goto nomem;
	}
	return 0;
nomem:
	snprintf(err, errsize, "out of memory setting up the recording's environment");
	return -ENOMEM;
}

/* ---- the cluster ----------------------------------------------------- */

#define SETUP_ERR(...) do { \
		snprintf(res->error, sizeof(res->error), __VA_ARGS__); \
		goto end; \
	} while (0)

int nrr_cluster_run(const struct nrr_cluster_spec *s, struct nrr_cluster_result *res)
{
	FILE *report = s->report ? s->report : stderr;
	char err[2048];
	struct nrr_cluster cluster;
	bool loaded = false;
	double *late_s = NULL;
	char **user_env = NULL;
	struct nrr_env base = { 0 };
	memset(res, 0, sizeof(*res));
	res->status = NRR_LAUNCH_SETUP;

	if (nrr_launch_find_topo(s->topo, res->topo_path, sizeof(res->topo_path), err, sizeof(err)) < 0)
		SETUP_ERR("%s", err);
	if (nrr_cluster_load(&cluster, res->topo_path, err, sizeof(err)) < 0)
		SETUP_ERR("%s", err);
	loaded = true;
	int world = s->nranks ? s->nranks : cluster.nhosts * cluster.gpus_per_host;
	int max_env_rank = -1;
	for (size_t k = 0; k < s->n_rank_env; k++) {
		int rk = nrr_launch_rank_env_parse(s->rank_env[k], NULL);
		if (rk < 0)
			SETUP_ERR("--rank-env needs R:K=V (R a rank number), not '%s'", s->rank_env[k]);
		if (rk > max_env_rank)
			max_env_rank = rk;
	}
	for (size_t k = 0; k < s->n_late; k++)
		if (s->late[k].rank > max_env_rank)
			max_env_rank = s->late[k].rank;
	if (!s->wrap && max_env_rank >= world)
		SETUP_ERR("--rank-env or --start-late names rank %d, but the job has ranks 0..%d", max_env_rank,
			  world - 1);
	if (s->n_late) {
		if (s->wrap)
			SETUP_ERR("--start-late is for jobs ncclrr run launches, not wrapper mode");
		late_s = calloc((size_t)world, sizeof(double));
		if (!late_s)
			SETUP_ERR("out of memory");
		for (size_t k = 0; k < s->n_late; k++)
			late_s[s->late[k].rank] = s->late[k].s;
	}
	char libdir[2 * PATH_MAX + 1], nccldir[PATH_MAX], nccl_env[PATH_MAX + 32];
	if (nrr_launch_find_fake_libdir(libdir, sizeof(libdir), err, sizeof(err)) < 0)
		SETUP_ERR("%s", err);
	user_env = calloc(s->n_env + 2, sizeof(char *));
	if (!user_env)
		SETUP_ERR("out of memory");
	size_t n_env = 0;
	for (size_t k = 0; k < s->n_env; k++)
		user_env[n_env++] = s->env[k];
	/* the NCCL relinked against ncclrr's runtime, after the runtime; none
	 * found and none asked for: the ranks load whatever libnccl.so.2 they find */
	if (nrr_launch_find_nccl_dir(s->nccl, nccldir, sizeof(nccldir), err, sizeof(err)) == 0) {
		size_t l = strlen(libdir);
		snprintf(libdir + l, sizeof(libdir) - l, ":%s", nccldir);
		/* programs that dlopen NCCL by a path of their own (ncclrr's
		 * workloads: $NCCLRR_NCCL) load the one asked for too */
		if (s->nccl) {
			snprintf(nccl_env, sizeof(nccl_env), "NCCLRR_NCCL=%s/libnccl.so.2", nccldir);
			user_env[n_env++] = nccl_env;
		}
	} else if (s->nccl) {
		SETUP_ERR("%s", err);
	}

	/* the environment the ranks start from: this one, the launcher's
	 * variables over it, then the recording's */
	if (nrr_env_init(&base, environ) < 0)
		SETUP_ERR("out of memory");
	for (size_t k = 0; k < s->n_launcher_env; k++)
		if (nrr_env_put(&base, s->launcher_env[k]) < 0)
			SETUP_ERR("not a K=V variable: '%s'", s->launcher_env[k]);
	const char *trace_dir = NULL;
	if (s->record) {
		struct nrr_record_opts ro = *s->record;
		if (nrr_mkdir_p(ro.dir) || !realpath(ro.dir, res->trace_dir))
			SETUP_ERR("Cannot create the trace directory %s: %s", ro.dir, strerror(errno));
		ro.dir = trace_dir = res->trace_dir;
		if (nrr_record_env(&base, &ro, err, sizeof(err)) < 0)
			SETUP_ERR("%s", err);
	} else {
		trace_dir = nrr_env_get(&base, "NCCLRR_TRACE_DIR");   /* under `ncclrr record` */
	}

	struct nrr_launch_opts o = {
		.cluster = &cluster,
		.topo_path = res->topo_path,
		.nranks = s->nranks,
		.timeout_s = s->timeout_s,
		/* a recorded rank writes its trace's end on SIGTERM: give it time */
		.kill_grace_s = trace_dir && *trace_dir ? 10.0 : 3.0,
		.fake_libdir = libdir,
		.comm_id = s->comm_id,
		.user_env = user_env,
		.n_user_env = n_env,
		.unset_env = s->unset,
		.n_unset_env = s->n_unset,
		.rank_env = s->rank_env,
		.n_rank_env = s->n_rank_env,
		.start_late_s = late_s,
		.base_env = base.vars,
		.argv = s->argv,
		.out = s->out,
		.err = s->err,
		.report = report,
	};
	/* recorded: the trace directory keeps the cluster, for replay anywhere */
	if (nrr_launch_keep_cluster_in(trace_dir, res->topo_path, err, sizeof(err)) < 0)
		fprintf(report, "ncclrr run: warning: %s; replay it with --topo %s\n", err, res->topo_path);
	res->status = s->wrap ? nrr_launch_wrap_exec(&o) : nrr_launch_run(&o);
end:
	if (loaded)
		nrr_cluster_free(&cluster);
	nrr_env_free(&base);
	free(user_env);
	free(late_s);
	return res->status;
}

/* ---- the same job as commands ---------------------------------------- */

static void put_word(FILE *f, const char *a)
{
	bool plain = *a && strspn(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=:,./@%") ==
				   strlen(a);
	if (plain) {
		fprintf(f, " %s", a);
		return;
	}
	fputs(" '", f);
	for (; *a; a++)
		if (*a == '\'')
			fputs("'\\''", f);
		else
			fputc(*a, f);
	fputc('\'', f);
}

static void put_opt(FILE *f, const char *opt, const char *val)
{
	put_word(f, opt);
	put_word(f, val);
}

void nrr_cluster_spec_print(FILE *f, const char *prefix, const char *ncclrr, const struct nrr_cluster_spec *s)
{
	char buf[64];
	fputs(prefix, f);
	if (s->n_launcher_env)
		put_word(f, "env");
	for (size_t k = 0; k < s->n_launcher_env; k++)
		put_word(f, s->launcher_env[k]);
	if (s->record) {
		put_word(f, ncclrr);
		put_word(f, "record");
		put_word(f, "-q");
		put_opt(f, "-o", s->record->dir);
		if (s->record->mode)
			put_opt(f, "--mode", s->record->mode);
		if (s->record->payload)
			put_opt(f, "--payload", s->record->payload);
		if (s->record->watchdog)
			put_opt(f, "--watchdog", s->record->watchdog);
		if (s->record->group_read)
			put_word(f, "--group-read");
		put_word(f, "--");
	}
	put_word(f, ncclrr);
	put_word(f, "run");
	put_opt(f, "--topo", s->topo);
	if (s->timeout_s > 0) {
		snprintf(buf, sizeof(buf), "%g", s->timeout_s);
		put_opt(f, "--timeout", buf);
	}
	if (s->nranks > 0) {
		snprintf(buf, sizeof(buf), "%d", s->nranks);
		put_opt(f, "-np", buf);
	}
	if (s->nccl)
		put_opt(f, "--nccl", s->nccl);
	if (s->comm_id)
		put_opt(f, "--comm-id", s->comm_id);
	for (size_t k = 0; k < s->n_env; k++)
		put_opt(f, "--env", s->env[k]);
	for (size_t k = 0; k < s->n_unset; k++)
		put_opt(f, "--unset", s->unset[k]);
	for (size_t k = 0; k < s->n_rank_env; k++)
		put_opt(f, "--rank-env", s->rank_env[k]);
	for (size_t k = 0; k < s->n_late; k++) {
		snprintf(buf, sizeof(buf), "%d:%g", s->late[k].rank, s->late[k].s);
		put_opt(f, "--start-late", buf);
	}
	if (s->wrap)
		put_word(f, "--wrap");
	put_word(f, "--");
	for (size_t k = 0; s->argv && s->argv[k]; k++)
		put_word(f, s->argv[k]);
	fputc('\n', f);
}
