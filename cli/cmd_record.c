/* SPDX-License-Identifier: MIT */
/* cmd_record.c - `ncclrr record`: run a command with the tracer preloaded
 * into it and everything it starts. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmds.h"
#include "color.h"
#include "nrt.h"
#include "nrr_launch.h"

const char cmd_record_usage[] =
"Usage: ncclrr record [-o DIR] [--mode full|ring:SIZE] [--backend native|lttng]\n"
"                     [--payload BYTES] [--watchdog SECONDS] [--group-read] [-q] [--] COMMAND [ARGS]\n"
"\n"
"Run COMMAND with the ncclrr tracer (libncclrr-trace.so) preloaded, in it and in\n"
"every process it starts: wrap a launcher (ncclrr record -- mpirun ...) or run\n"
"under one (srun ncclrr record -o DIR -- prog). Each traced process that makes\n"
"a traced call writes DIR/<host>-<pid>.nrt (a forked child its own file, an\n"
"exec'd image <host>-<pid>-N.nrt): CUDA driver and runtime, NVML, libibverbs\n"
"(data path included), socket, NCCL API and ncclNet calls, NCCL's profiler\n"
"events (groups, collectives, point-to-point, proxy operations and steps), NCCL's\n"
"own log lines (NCCL_DEBUG), and the run metadata (host, rank, communicators, environment\n"
"with secrets redacted, library versions, clock).\n"
"\n"
"Options:\n"
"  -o, --output DIR     where the traces go (created if needed; default ncclrr-trace)\n"
"  --mode full          write everything as it happens (default)\n"
"  --mode ring:SIZE     flight recorder: keep the last SIZE (e.g. 64M) of compressed\n"
"                       trace per process in memory and write it at exit, on\n"
"                       SIGSEGV, SIGBUS, SIGABRT, SIGTERM, on SIGUSR1, and when the\n"
"                       watchdog fires\n"
"  --backend native     .nrt files (default)\n"
"  --backend lttng      LTTng-UST events (providers ncclrr_*) into DIR/lttng; starts\n"
"                       lttng-sessiond if none runs; read it with ncclrr dump DIR/lttng\n"
"  --payload BYTES      bytes of each payload kept (socket data, buffers): 0..4096\n"
"                       (default 4096); lengths are always kept\n"
"  --watchdog SECONDS   write the trace out when a traced call is in flight and\n"
"                       none has returned for SECONDS (default 0: off)\n"
"  --group-read         trace files readable by the group (0640); by default only\n"
"                       by their owner (0600): they hold the job's environment\n"
"                       and command line (secrets redacted: metadata redacted=)\n"
"  -q, --quiet          no summary line on stderr at the end\n"
"\n"
"The exit status is COMMAND's (a COMMAND killed by a signal kills ncclrr record\n"
"with the same signal); 127 when COMMAND is not found and 126 when it cannot be\n"
"executed (as a shell says), 2 when an option is bad or fork fails.\n"
"SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGUSR1 are passed on to COMMAND.\n"
"\n"
"Environment set for COMMAND: LD_PRELOAD (prepended), NCCLRR_TRACE_DIR,\n"
"NCCLRR_MODE, NCCLRR_BACKEND, NCCLRR_PAYLOAD, NCCLRR_WATCHDOG, NCCLRR_GROUP_READ,\n"
"and\n"
"NCCL_TOPO_DUMP_FILE=DIR/nccl-topo.xml unless already set. When NCCL would load\n"
"an external net plugin (NCCL_NET_PLUGIN, else libnccl-net.so), NCCL_NET_PLUGIN\n"
"names ncclrr's wrapper of the plugin's ncclNet version instead and\n"
"NCCLRR_NET_PLUGIN the plugin: every ncclNet call is recorded and forwarded.\n"
"NCCL_PROFILER_PLUGIN names ncclrr's profiler plugin (libncclrr-profiler.so),\n"
"which records NCCL's profiler events (NCCL 2.23+); the profiler NCCL would\n"
"have loaded (NCCL_PROFILER_PLUGIN, else libnccl-profiler.so, found as NCCL finds\n"
"it) goes to NCCLRR_PROFILER_PLUGIN: ncclrr's loads it and forwards every call,\n"
"so both run.\n"
"The tracer is found in $NCCLRR_TRACE_LIBDIR, else beside this program in the\n"
"build tree, else in the installed LIBDIR/ncclrr.\n"
"Once COMMAND has ended, the /dev/shm/nccl-* segments its processes left\n"
"(made since it started, mapped or open by no process) are removed.\n"
"\n"
"Example:\n"
"  ncclrr record -o run1 -- ncclrr run --topo topo/2node_16gpu.xml -- ./tp_dp\n"
"  ncclrr stats run1; ncclrr dump --errors run1\n";

static pid_t child;

static void pass_on(int sig)
{
	if (child > 0)
		kill(child, sig);
}

static int find_lib(const char *file, const char *const *rel, char *path, size_t len)
{
	char dir[PATH_MAX], err[2048];
	if (nrr_find_near_exe("NCCLRR_TRACE_LIBDIR", file, rel, "the ncclrr tracer", dir, sizeof(dir), err,
			      sizeof(err)) < 0) {
		nrr_cli_error("record", "%s", err);
		return -1;
	}
	snprintf(path, len, "%s/%s", dir, file);
	return 0;
}

/* Run a helper command quietly; @return its exit status (-1: not run). */
static int run_quiet(char *const argv[], char *out, size_t outlen)
{
	int pipefd[2];
	if (pipe(pipefd))
		return -1;
	pid_t p = fork();
	if (p < 0)
		return -1;
	if (p == 0) {
		dup2(pipefd[1], 1);
		dup2(pipefd[1], 2);
		close(pipefd[0]);
		close(pipefd[1]);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(pipefd[1]);
	size_t n = 0;
	ssize_t k;
	char chunk[512];
	while ((k = read(pipefd[0], chunk, sizeof(chunk))) > 0) {   /* all of it: the helper must not block */
		size_t keep = out && n + 1 < outlen ? outlen - 1 - n : 0;
		keep = (size_t)k < keep ? (size_t)k : keep;
		if (keep)
			memcpy(out + n, chunk, keep);
		n += keep;
	}
	if (out)
		out[n] = '\0';
	close(pipefd[0]);
	int st;
	while (waitpid(p, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* LTTng: a session daemon (started if none answers), a session writing to
 * DIR/lttng with every ncclrr_* event and the process/thread contexts. */
static int lttng_start(const char *dir, char *session, size_t len)
{
	char out[4096], outdir[PATH_MAX + 16];
	char *list[] = { "lttng", "list", NULL };
	if (run_quiet(list, out, sizeof(out)) != 0) {
		char *start[] = { "lttng-sessiond", "--daemonize", "--no-kernel", NULL };
		if (run_quiet(start, out, sizeof(out)) != 0) {
			nrr_cli_error("record", "Cannot start lttng-sessiond (is lttng-tools installed?): %s", out);
			return -1;
		}
	}
	snprintf(session, len, "ncclrr-%d-%ld", (int)getpid(), (long)time(NULL));
	snprintf(outdir, sizeof(outdir), "--output=%s/lttng", dir);
	char *create[] = { "lttng", "create", session, outdir, NULL };
	char *chan[] = { "lttng", "enable-channel", "--userspace", "--subbuf-size=4M", "--num-subbuf=8",
			 "--blocking-timeout=inf", "ncclrr", NULL };
	char *ev[] = { "lttng", "enable-event", "--userspace", "--channel=ncclrr", "ncclrr_*", NULL };
	char *ctx[] = { "lttng", "add-context", "--userspace", "--channel=ncclrr", "-t", "vpid", "-t", "vtid",
			"-t", "procname", NULL };
	char *start[] = { "lttng", "start", NULL };
	char *const *steps[] = { create, chan, ev, ctx, start };
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		if (run_quiet(steps[i], out, sizeof(out)) != 0) {
			nrr_cli_error("record", "Failed to set up the LTTng session: lttng %s: %s", steps[i][1],
				out);
			return -1;
		}
	return 0;
}

static void lttng_stop(const char *session)
{
	char *stop[] = { "lttng", "stop", (char *)session, NULL };
	char *destroy[] = { "lttng", "destroy", (char *)session, NULL };
	if (run_quiet(stop, NULL, 0) != 0 || run_quiet(destroy, NULL, 0) != 0)
		nrr_cli_error("record", "Failed to stop LTTng session %s (lttng destroy %s)", session, session);
}

/* number and bytes of .nrt files in @dir */
static void summarize(const char *dir, const char *mode, const char *backend)
{
	DIR *d = opendir(dir);
	size_t n = 0;
	unsigned long long bytes = 0;
	struct dirent *e;
	while (d && (e = readdir(d))) {
		size_t l = strlen(e->d_name);
		struct stat st;
		char p[PATH_MAX];
		if (l < 5 || strcmp(e->d_name + l - 4, ".nrt"))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (stat(p, &st) == 0) {
			n++;
			bytes += (unsigned long long)st.st_size;
		}
	}
	if (d)
		closedir(d);
	if (!strcmp(backend, "lttng"))
		fprintf(stderr, "ncclrr record: LTTng trace in %s/lttng\n", dir);
	else
		fprintf(stderr, "ncclrr record: %zu trace file%s (%.1f KiB, %s mode) in %s\n", n, n == 1 ? "" : "s",
			(double)bytes / 1024, mode, dir);
}

int cmd_record(int argc, char **argv)
{
	const char *out = "ncclrr-trace", *mode = "full", *backend = "native", *payload = NULL, *watchdog = NULL;
	bool quiet = false, group_read = false;
	int i;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-')
			break;
		const char **dst = !strcmp(a, "-o") || !strcmp(a, "--output") ? &out
				   : !strcmp(a, "--mode")			 ? &mode
				   : !strcmp(a, "--backend")			 ? &backend
				   : !strcmp(a, "--payload")			 ? &payload
				   : !strcmp(a, "--watchdog")			 ? &watchdog
										 : NULL;
		if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			quiet = true;
			continue;
		}
		if (!strcmp(a, "--group-read")) {
			group_read = true;
			continue;
		}
		if (!dst)
			return nrr_cli_opt_error("record", '?', a);
		if (i + 1 >= argc)
			return nrr_cli_opt_error("record", ':', a);
		*dst = argv[++i];
	}
	if (i >= argc)
		return nrr_cli_usage_error("record", "no command given");
	uint64_t v;
	if (strcmp(mode, "full") &&
	    (strncmp(mode, "ring:", 5) || !nrr_parse_size(mode + 5, &v) || v < (1ull << 20)))
		return nrr_cli_usage_error("record", "--mode wants full or ring:SIZE with SIZE >= 1M (e.g. ring:64M), not '%s'",
					   mode);
	if (strcmp(backend, "native") && strcmp(backend, "lttng"))
		return nrr_cli_usage_error("record", "--backend wants native or lttng, not '%s'", backend);
	if (!strcmp(backend, "lttng") && strcmp(mode, "full"))
		return nrr_cli_usage_error("record", "--mode ring is for the native backend (LTTng has its own "
						     "snapshot mode: lttng snapshot)");
	if (payload && (!nrr_parse_size(payload, &v) || v > 4096))
		return nrr_cli_usage_error("record", "--payload wants 0..4096 bytes, not '%s'", payload);
	char *end;
	if (watchdog && (strtod(watchdog, &end) < 0 || end == watchdog || *end))
		return nrr_cli_usage_error("record", "--watchdog wants seconds, not '%s'", watchdog);

#define LTTNG_UST_FD_LIB "liblttng-ust-fd.so.1"
	char dir[PATH_MAX], lib[PATH_MAX], ltlib[PATH_MAX] = "";
	if (nrr_mkdir_p(out) || !realpath(out, dir)) {
		nrr_cli_error("record", "Cannot create the trace directory %s: %s", out, strerror(errno));
		return NRR_EXIT_USAGE;
	}
	static const char *const rel[] = { "../tracer", NRR_PKGLIBDIR, NULL };
	static const char *const rel_lt[] = { "../tracer/lttng", NRR_PKGLIBDIR, NULL };
	if (find_lib("libncclrr-trace.so", rel, lib, sizeof(lib)) < 0 ||
	    (!strcmp(backend, "lttng") && find_lib("libncclrr-trace-lttng.so", rel_lt, ltlib, sizeof(ltlib)) < 0))
		return NRR_EXIT_USAGE;

	/* the LTTng session first: its daemons must not run traced */
	char session[128] = "";
	if (!strcmp(backend, "lttng")) {
		if (lttng_start(dir, session, sizeof(session)) < 0)
			return NRR_EXIT_USAGE;
		setenv("LTTNG_UST_ALLOW_BLOCKING", "1", 1);   /* no event lost: the channel blocks */
		/* ... nor before a process is registered: lttng-ust waits 3 s
		 * for the session daemon, then runs on and drops the events
		 * until it is (a loaded machine lost cuInit so).  A minute,
		 * not forever: a dead daemon must not hang the job */
		setenv("LTTNG_UST_REGISTER_TIMEOUT", "60000", 0);
	}

	/* the command's environment */
	struct nrr_env env;
	char err[2048];
	struct nrr_record_opts ro = {
		.dir = dir,
		.mode = mode,
		.backend = backend,
		.ltlib = ltlib,
		.payload = payload,
		.watchdog = watchdog,
		.group_read = group_read,
		.warn = stderr,
	};
	extern char **environ;
	if (nrr_env_init(&env, environ) < 0) {
		nrr_cli_error("record", "out of memory");
		return NRR_EXIT_USAGE;
	}
	if (nrr_record_env(&env, &ro, err, sizeof(err)) < 0) {
		nrr_cli_error("record", "%s", err);
		nrr_env_free(&env);
		return NRR_EXIT_USAGE;
	}

	static const int passed[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 };
	struct sigaction sa = { .sa_handler = pass_on };
	sigemptyset(&sa.sa_mask);
	for (size_t k = 0; k < sizeof(passed) / sizeof(passed[0]); k++)
		sigaction(passed[k], &sa, NULL);
	time_t started = time(NULL);
	child = fork();
	if (child < 0) {
		nrr_cli_error("record", "Cannot start %s: fork: %s", argv[i], strerror(errno));
		nrr_env_free(&env);
		return NRR_EXIT_USAGE;
	}
	if (child == 0) {
		struct sigaction dfl = { .sa_handler = SIG_DFL };
		for (size_t k = 0; k < sizeof(passed) / sizeof(passed[0]); k++)
			sigaction(passed[k], &dfl, NULL);
		environ = env.vars;
		execvp(argv[i], argv + i);
		nrr_cli_error("record", "Cannot start %s: %s", argv[i], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	nrr_env_free(&env);
	int st = 0;
	while (waitpid(child, &st, 0) < 0 && errno == EINTR)
		;
	if (*session)
		lttng_stop(session);
	/* a job started by a launcher other than ncclrr run (mpirun) leaves
	 * NCCL's segments of its failed ranks as ncclrr run's would */
	int swept = nrr_launch_sweep_nccl_shm(started);
	if (!quiet) {
		if (swept)
			fprintf(stderr, "ncclrr record: removed %d shared-memory segments its processes left (/dev/shm/nccl-*)\n",
			        swept);
		summarize(dir, mode, backend);
	}
	if (WIFSIGNALED(st)) {
		int sig = WTERMSIG(st);
		struct sigaction dfl = { .sa_handler = SIG_DFL };
		sigaction(sig, &dfl, NULL);
		struct rlimit nocore = { 0, 0 };   /* the command dumped core already, if it could */
		setrlimit(RLIMIT_CORE, &nocore);
		raise(sig);
		return 128 + sig;
	}
	return WEXITSTATUS(st);
}
