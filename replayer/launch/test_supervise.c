/* SPDX-License-Identifier: MIT */
/* test_supervise.c - the supervisor on a made-up 2x2 cluster with shell
 * programs: prefixes, environment, exit summary, timeout kill and report. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "nrr_launch.h"

static int write_xml(void *ctx, int host, const char *path, char *err, size_t errsize)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		snprintf(err, errsize, "%s", strerror(errno));
		return -errno;
	}
	fprintf(f, "<system host=\"%d\"/>\n", host);
	fclose(f);
	return 0;
}

static char *slurp(FILE *f)
{
	fflush(f);
	long n = ftell(f);
	char *s = calloc(1, (size_t)n + 1);
	rewind(f);
	if (fread(s, 1, (size_t)n, f) != (size_t)n)
		s[0] = '\0';
	return s;
}

static int run(const char *script, double timeout, char *const *env, size_t nenv,
	       char **out, char **err, char **rep)
{
	static char *names[] = { "nodeA", "nodeB" };
	struct nrr_cluster c = { .nhosts = 2, .gpus_per_host = 2, .host_names = names, .write_host_xml = write_xml };
	char *argv[] = { "sh", "-c", (char *)script, NULL };
	FILE *fo = tmpfile(), *fe = tmpfile(), *fr = tmpfile();
	struct nrr_launch_opts o = {
		.cluster = &c, .topo_path = "/abs/cluster.xml", .timeout_s = timeout,
		.kill_grace_s = 0.5, .fake_libdir = "/fake/lib", .user_env = env, .n_user_env = nenv,
		.argv = argv, .out = fo, .err = fe, .report = fr,
	};
	int rc = nrr_launch_run(&o);
	*out = slurp(fo);
	*err = slurp(fe);
	*rep = slurp(fr);
	fclose(fo);
	fclose(fe);
	fclose(fr);
	return rc;
}

int main(void)
{
	char *out, *err, *rep;
	int rc = run("echo \"out $RANK $LOCAL_RANK $NCCLRR_HOST $NCCL_HOSTID $WORLD_SIZE\"; "
		     "echo \"err $NCCL_COMM_ID\" >&2; printf partial; "
		     "grep -q '<system host=\"'$NCCLRR_HOST'\"' \"$NCCL_TOPO_FILE\" && echo topo-ok; "
		     "case $LD_LIBRARY_PATH in /fake/lib*) echo ldpath-ok;; esac; echo \"user=$FOO\"",
		     10, (char *[]){ "FOO=bar" }, 1, &out, &err, &rep);
	CHECK(rc == NRR_LAUNCH_OK, "rc %d, report: %s", rc, rep);
	CHECK(strstr(out, "[0] out 0 0 0 nodeA 4\n") && strstr(out, "[3] out 3 1 1 nodeB 4\n") &&
	      strstr(out, "[2] out 2 0 1 nodeB 4\n"), "stdout: %s", out);
	CHECK(strstr(err, "[1] err 127.0.0.1:"), "stderr: %s", err);
	CHECK(strstr(out, "[1] partialtopo-ok\n") || strstr(out, "[1] partial\n"), "partial line: %s", out);
	CHECK(strstr(out, "[3] ldpath-ok\n") && strstr(out, "[0] user=bar\n"), "env: %s", out);
	CHECK(strstr(rep, "4 of 4 ranks exited 0"), "summary: %s", rep);
	free(out), free(err), free(rep);

	rc = run("[ $RANK = 2 ] && exit 3; [ $RANK = 1 ] && kill -SEGV $$; exit 0", 10, NULL, 0,
		 &out, &err, &rep);
	CHECK(rc == NRR_LAUNCH_FAILED, "rc %d", rc);
	CHECK(strstr(rep, "rank 2: exit status 3") && strstr(rep, "rank 1: killed by signal 11 (SIGSEGV)") &&
	      strstr(rep, "rank 0: exit status 0") && strstr(rep, "2 of 4 ranks exited 0"), "report: %s", rep);
	free(out), free(err), free(rep);

	rc = run("echo start; [ $RANK = 3 ] && exit 0; trap '' TERM; echo waiting-$RANK; sleep 30",
		 1.0, NULL, 0, &out, &err, &rep);
	CHECK(rc == NRR_LAUNCH_TIMEOUT, "rc %d", rc);
	CHECK(strstr(rep, "timeout after 1.0 s; 3 of 4 ranks still running") &&
	      strstr(rep, "rank 0 (pid") && strstr(rep, "last printed: waiting-0") &&
	      !strstr(rep, "rank 3 (pid") && strstr(rep, "SIGKILL") &&
	      strstr(rep, "rank 1: killed by signal 9 (SIGKILL)") && strstr(rep, "rank 3: exit status 0"),
	      "report: %s", rep);
	free(out), free(err), free(rep);
	return check_done("launch_supervise");
}
