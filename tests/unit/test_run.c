/* SPDX-License-Identifier: MIT */
/* test_run.c - the run model (analyzer/run.h) over traces written here:
 * each process's record built from its metadata and file, how it ended,
 * the rank filter, and the library's messages going to the sink instead
 * of being printed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nrt.h"
#include "check.h"
#include "write_trace.h"
#include "run.h"

static char dir[] = "/tmp/test_run.XXXXXX";

/* Every message the library said, as "KIND CMD: TEXT\n". */
static char said[16384];

static void sink(enum nrr_run_msg kind, const char *cmd, const char *text)
{
	static const char *const k[] = { "ERROR", "USAGE", "SKIP", "NOTE" };
	size_t l = strlen(said);
	snprintf(said + l, sizeof(said) - l, "%s %s: %s\n", k[kind], cmd, text);
}

/* Write SUB/NAME.nrt with @meta; @end for nrr_writer_set_end (NULL:
 * none); @killed: the writer is abandoned (no index, as SIGKILL leaves). */
static void trace(const char *sub, const char *name, const char *meta, const char *end, bool killed)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, sub);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s.nrt", dir, sub, name);
	write_trace(path, meta, end, killed);
}

static const struct nrr_proc *by_name(const struct nrr_inputs *in, const char *name)
{
	for (size_t i = 0; i < in->n; i++)
		if (strstr(nrr_reader_path(in->r[i]), name))
			return &in->proc[i];
	return NULL;
}

static const char *env_of(const struct nrr_proc *p, const char *name)
{
	size_t l = strlen(name);
	for (size_t i = 0; i < p->nenv; i++)
		if (strncmp(p->env[i], name, l) == 0 && p->env[i][l] == '=')
			return p->env[i] + l + 1;
	return NULL;
}

int main(void)
{
	CHECK_FATAL(mkdtemp(dir), "mkdtemp");
	nrr_run_set_sink(sink);

	trace("run", "a-launcher", "host=vm\npid=10\nargv=ncclrr run -- ./prog\nexe=/usr/bin/ncclrr\n", "exec", false);
	trace("run", "b-rank0", "host=node0\npid=11\nargv=./prog --size 8\nexe=/opt/prog\nrank=0\n"
	      "nccl_version=2.22.3\nenv.NCCL_DEBUG=INFO\nenv.NCCL_ALGO=Ring\n", "exit 0", false);
	trace("run", "c-rank1", "host=node1\npid=12\nargv=./prog --size 8\nrank=1\n", "signal SIGSEGV", false);
	trace("run", "d-rank2", "host=node1\npid=13\nargv=./prog --size 8\nrank=2\n", NULL, false);
	trace("run", "e-rank3", "host=node1\npid=14\nargv=./prog --size 8\nrank=3\n", NULL, true);

	struct nrr_inputs in;
	char *paths[2];
	char p[600];
	snprintf(p, sizeof(p), "%s/run", dir);
	paths[0] = p;
	CHECK_FATAL(nrr_inputs_open(&in, "test", paths, 1, NULL) == 0, "open %s: %s", p, said);
	CHECK(in.n == 5, "5 processes, got %zu", in.n);

	const struct nrr_proc *l = by_name(&in, "a-launcher"), *r0 = by_name(&in, "b-rank0"),
			      *r1 = by_name(&in, "c-rank1"), *r2 = by_name(&in, "d-rank2"), *r3 = by_name(&in, "e-rank3");
	CHECK_FATAL(l && r0 && r1 && r2 && r3, "every file opened");
	/* files in name order, the arrays of old point into the records */
	CHECK(&in.proc[0] == l && &in.proc[4] == r3, "sorted by name");
	for (size_t i = 0; i < in.n; i++)
		CHECK(in.who[i] == in.proc[i].who && in.rank[i] == in.proc[i].rank_str, "who/rank of %zu", i);

	CHECK(l->rank == -1 && !l->rank_str, "launcher has no rank: %ld", l->rank);
	CHECK(l->end == NRR_END_EXEC && strcmp(l->end_how, "exec") == 0, "launcher exec'd: %d %s", l->end, l->end_how);
	CHECK(strcmp(l->who, "vm:") > 0 && strncmp(l->who, "vm:", 3) == 0, "who %s", l->who);
	CHECK(strcmp(l->program, "/usr/bin/ncclrr") == 0, "program %s", l->program);

	CHECK(r0->rank == 0 && strcmp(r0->rank_str, "0") == 0, "rank 0: %ld", r0->rank);
	CHECK(strcmp(r0->host, "node0") == 0, "host %s", r0->host);
	CHECK(r0->pid == (uint32_t)getpid(), "pid from the header: %u", r0->pid);
	CHECK(strcmp(r0->argv, "./prog --size 8") == 0, "argv %s", r0->argv);
	CHECK(strcmp(r0->program, "/opt/prog") == 0, "program from exe: %s", r0->program);
	CHECK(r0->nccl_version && strcmp(r0->nccl_version, "2.22.3") == 0, "nccl_version");
	CHECK(r0->end == NRR_END_EXIT && r0->exit_code == 0, "rank 0 exit 0: %d %d", r0->end, r0->exit_code);
	CHECK(r0->end_wall > 0, "end time from end_ts");
	CHECK(r0->nenv == 2 && env_of(r0, "NCCL_DEBUG") && strcmp(env_of(r0, "NCCL_DEBUG"), "INFO") == 0 &&
	      strcmp(env_of(r0, "NCCL_ALGO"), "Ring") == 0 && !r0->env[2], "environment: %zu", r0->nenv);

	CHECK(r1->end == NRR_END_SIGNAL && strcmp(r1->signal_name, "SIGSEGV") == 0, "rank 1 signal: %d", r1->end);
	CHECK(strcmp(r1->program, "./prog") == 0, "program from argv[0]: %s", r1->program);
	CHECK(!r1->nccl_version && r1->nenv == 0, "absent keys stay absent");
	CHECK(r2->end == NRR_END_RUNNING && r2->end_how[0] == 0, "rank 2 no end, complete file: %d", r2->end);
	CHECK(r3->end == NRR_END_KILLED, "rank 3 writer killed: %d", r3->end);
	CHECK(strstr(said, "NOTE test: warning: file=") && strstr(said, "e-rank3.nrt: no index at the end"),
	      "the killed writer's file was said as a warning: %s", said);
	nrr_inputs_close(&in);

	/* the rank filter keeps the records with their readers */
	CHECK_FATAL(nrr_inputs_open(&in, "test", paths, 1, "3,1") == 0, "open ranks 3,1");
	CHECK(in.n == 2 && in.proc[0].rank == 1 && in.proc[1].rank == 3 && in.rank[1] == in.proc[1].rank_str,
	      "ranks 1 and 3: %zu", in.n);
	nrr_inputs_close(&in);
	said[0] = 0;
	CHECK(nrr_inputs_open(&in, "test", paths, 1, "7") == -EINVAL && in.n == 0, "no rank 7");
	const char *last = "NOTE test: no trace of rank 7 among the inputs\n";   /* (after the killed file's warning) */
	CHECK(strlen(said) > strlen(last) && strcmp(said + strlen(said) - strlen(last), last) == 0, "said: %s", said);

	/* errors are said, not printed, and are negative errnos */
	said[0] = 0;
	CHECK(nrr_inputs_open(&in, "test", paths, 0, NULL) == -EINVAL, "no paths");
	CHECK(strcmp(said, "USAGE test: no trace file or directory given\n") == 0, "said: %s", said);
	said[0] = 0;
	snprintf(p, sizeof(p), "%s/empty", dir);
	mkdir(p, 0755);
	CHECK(nrr_inputs_open(&in, "test", paths, 1, NULL) == -EINVAL, "empty dir");
	CHECK(strncmp(said, "ERROR test: no .nrt trace files in dir=", 39) == 0 && strstr(said, "record one with"),
	      "said: %s", said);
	rmdir(p);

	/* how it ended, from the end key's words (FORMAT.md) */
	static const struct { const char *how; bool cut; enum nrr_proc_end end; int code; const char *sig; } e[] = {
		{ "exit 3", false, NRR_END_EXIT, 3, NULL },
		{ "exit", false, NRR_END_EXIT, -1, NULL },
		{ "exit 3x", false, NRR_END_EXIT, -1, NULL },
		{ "signal SIGABRT", false, NRR_END_SIGNAL, -1, "SIGABRT" },
		{ "signal", false, NRR_END_SIGNAL, -1, "" },
		{ "exec", false, NRR_END_EXEC, -1, NULL },
		{ NULL, false, NRR_END_RUNNING, -1, NULL },
		{ NULL, true, NRR_END_KILLED, -1, NULL },
		{ "exit 0", true, NRR_END_EXIT, 0, NULL },   /* an end key wins over a cut file */
	};
	for (size_t i = 0; i < sizeof(e) / sizeof(e[0]); i++) {
		struct nrr_proc pr = { 0 };
		CHECK(nrr_proc_parse_end(&pr, e[i].how, e[i].cut) == 0, "parse %s", e[i].how);
		CHECK(pr.end == e[i].end && pr.exit_code == e[i].code &&
		      (e[i].sig ? pr.signal_name && strcmp(pr.signal_name, e[i].sig) == 0 : !pr.signal_name) &&
		      strcmp(pr.end_how, e[i].how ? e[i].how : "") == 0,
		      "end '%s' cut %d: %d %d", e[i].how ? e[i].how : "(none)", e[i].cut, pr.end, pr.exit_code);
		free(pr.end_how);
		free(pr.signal_name);
	}

	char cmd[700];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return check_done("run");
}
