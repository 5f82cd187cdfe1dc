/* SPDX-License-Identifier: MIT */
/*
 * test_libncclrr.c - the public reader API (include/ncclrr/ncclrr.h),
 * linked against libncclrr.so like any program outside ncclrr (only
 * ncclrr_dep, nothing internal), over the golden trace
 * traces/sample_init.nrt whose `ncclrr dump` is traces/sample_init.dump.
 * usage: test_libncclrr SOURCE_ROOT TMPDIR_FILE
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ncclrr/ncclrr.h>

#include "check.h"

static char sample[4096];

static void test_errors(const char *tmpfile)
{
	char err[1024];
	ncclrr_reader *r = (ncclrr_reader *)1;
	CHECK(ncclrr_reader_open(&r, NULL, 0, err, sizeof(err)) == -EINVAL && r == NULL && err[0],
	      "no file: -EINVAL, NULL reader and a message (%s)", err);
	const char *none[] = { "/nonexistent/x.nrt" };
	int rc = ncclrr_reader_open(&r, none, 1, err, sizeof(err));
	CHECK(rc == -ENOENT && r == NULL && strstr(err, "file=/nonexistent/x.nrt"), "missing file: %d %s", rc, err);
	FILE *f = fopen(tmpfile, "w");
	CHECK_FATAL(f, "cannot write %s", tmpfile);
	fputs("this is not a trace file, but long enough to hold a header .......................\n", f);
	fclose(f);
	const char *bad[] = { sample, tmpfile };
	rc = ncclrr_reader_open(&r, bad, 2, err, sizeof(err));
	char want[1100];
	snprintf(want, sizeof(want), "file=%s offset=0", tmpfile);
	CHECK(rc == NCCLRR_EBADMAGIC && r == NULL && strstr(err, want), "bad second file: %d %s", rc, err);
	CHECK(strcmp(ncclrr_strerror(NCCLRR_EBADMAGIC), ncclrr_strerror(NCCLRR_ECORRUPT)) != 0 &&
		      strcmp(ncclrr_strerror(-ENOENT), ncclrr_strerror(-EINVAL)) != 0,
	      "strerror tells codes apart");
	ncclrr_reader_close(NULL);
}

static void test_sample(void)
{
	char err[1024], text[512];
	ncclrr_reader *r;
	const char *paths[] = { sample };
	int rc = ncclrr_reader_open(&r, paths, 1, err, sizeof(err));
	CHECK_FATAL(rc == 0, "open %s: %d %s", sample, rc, err);
	CHECK(ncclrr_reader_nfiles(r) == 1, "one file");
	const char *v = ncclrr_reader_meta(r, 0, "host");
	CHECK(v && !strcmp(v, "node0"), "meta host (%s)", v ? v : "NULL");
	v = ncclrr_reader_meta(r, 0, "argv");
	CHECK(v && !strcmp(v, "./init_allreduce"), "meta argv (%s)", v ? v : "NULL");
	CHECK(!ncclrr_reader_meta(r, 0, "no.such.key") && !ncclrr_reader_meta(r, 1, "host"), "absent meta");

	const ncclrr_call *c;
	unsigned events = 0, logs = 0, enters = 0, resumes = 0, inflight = 0, failed = 0;
	uint64_t repeats = 0, last_wall = 0;
	int saw_first = 0, saw_connect = 0, saw_init = 0;
	while ((rc = ncclrr_reader_next(r, &c)) == 1) {
		events++;
		if (ncclrr_call_kind(c) == NCCLRR_KIND_LOG) {
			size_t len = 0;
			const char *t = ncclrr_call_log(c, &len);
			CHECK(t && len > 5 && !strcmp(ncclrr_call_name(c), "log") && ncclrr_call_nargs(c) == 0 &&
				      ncclrr_call_seq(c) == 0,
			      "log line");
			logs++;
			continue;
		}
		size_t dummy;
		CHECK(!ncclrr_call_log(c, &dummy), "a call has no log text");
		CHECK(ncclrr_call_file(c) == 0, "file index");
		last_wall = ncclrr_call_wall_ns(c);
		repeats += ncclrr_call_repeat(c);
		failed += (unsigned)ncclrr_call_failed(c);
		int ph = ncclrr_call_phase(c);
		enters += ph == NCCLRR_PHASE_ENTER;
		resumes += ph == NCCLRR_PHASE_RESUME;
		inflight += ph == NCCLRR_PHASE_INFLIGHT;
		const char *name = ncclrr_call_name(c);
		uint64_t u;
		const uint8_t *p;
		size_t len, total;
		if (!saw_first) {
			saw_first = 1;
			CHECK(!strcmp(name, "ncclGetVersion") && !strcmp(ncclrr_call_domain(c), "nccl") &&
				      ncclrr_call_seq(c) == 1 && ncclrr_call_depth(c) == 0 && ph == NCCLRR_PHASE_CALL &&
				      ncclrr_call_tid(c) == 6909,
			      "first call: %s", name);
			CHECK(ncclrr_call_nargs(c) == 1 && !strcmp(ncclrr_call_arg_name(c, 0), "version") &&
				      !ncclrr_call_arg_name(c, 1),
			      "ncclGetVersion's argument");
			CHECK(ncclrr_call_arg_u64(c, 0, &u) && u == 22809, "version=22809");
			CHECK(!ncclrr_call_arg_bytes(c, 0, &p, &len, NULL) && !ncclrr_call_arg_u64(c, 1, &u),
			      "an integer has no bytes; no argument 1");
			CHECK(ncclrr_call_result(c) == 0 && !ncclrr_call_failed(c) && ncclrr_call_duration_ns(c) / 100 == 1122,
			      "result 0 in 112.3us as dump rounds it (%llu ns)", (unsigned long long)ncclrr_call_duration_ns(c));
			CHECK(ncclrr_call_wall_ns(c) > 1000000000ull * 1000000000ull, "wall clock after 2001");
		}
		if (!strcmp(name, "connect") && ncclrr_call_seq(c) == 18) {
			saw_connect = 1;
			CHECK(ncclrr_call_result(c) == -1 && ncclrr_call_errno(c) == ECONNREFUSED && ncclrr_call_failed(c) &&
				      ncclrr_call_depth(c) == 1,
			      "connect #18 failed with ECONNREFUSED");
			CHECK(ncclrr_call_arg_bytes(c, 1, &p, &len, &total) && len == 16 && total == 16 && p[2] == 0x9c &&
				      p[3] == 0x40,
			      "addr: 16 bytes of sockaddr_in, port 40000");
			int n = ncclrr_call_format(c, text, sizeof(text));
			const char *want = "connect(sockfd=17, addr=127.0.0.1:40000, addrlen=16) = -1 ECONNREFUSED "
					   "(Connection refused)";
			CHECK(n == (int)strlen(want) && !strcmp(text, want), "format: %d '%s'", n, text);
			char small[8];
			n = ncclrr_call_format(c, small, sizeof(small));
			CHECK(n == (int)strlen(want) && !strcmp(small, "connect"), "truncated like snprintf: %d '%s'", n,
			      small);
		}
		if (!strcmp(name, "ncclCommInitRank") && ph == NCCLRR_PHASE_RESUME) {
			saw_init = 1;
			CHECK(ncclrr_call_result(c) == 3 && ncclrr_call_failed(c) && ncclrr_call_seq(c) == 3,
			      "ncclCommInitRank returned ncclInternalError");
			ncclrr_call_format(c, text, sizeof(text));
			CHECK(!strncmp(text, "<... ncclCommInitRank resumed> (comm=NULL, nranks=2", 50) &&
				      strstr(text, ") = ncclInternalError (3)"),
			      "resumed format '%s'", text);
		}
		if (ph == NCCLRR_PHASE_INFLIGHT)
			CHECK(!strcmp(name, "recv") && ncclrr_call_result(c) == 0 && !ncclrr_call_failed(c),
			      "in flight: recv without result");
	}
	CHECK(rc == 0 && !ncclrr_reader_error(r)[0], "clean end: %d %s", rc, ncclrr_reader_error(r));
	CHECK(ncclrr_reader_next(r, &c) == 0, "the end stays the end");
	/* the golden dump: 39 lines (34 calls and 5 logs) of 33 calls, one
	 * delivered twice (ENTER, RESUME); the stats: 54 coalesced repeats */
	CHECK(events == 39 && logs == 5 && enters == 1 && resumes == 1 && inflight == 1 && repeats == 54,
	      "events %u logs %u enter %u resume %u inflight %u repeats %llu", events, logs, enters, resumes, inflight,
	      (unsigned long long)repeats);
	CHECK(failed == 3, "3 failed calls (%u)", failed);
	CHECK(saw_first && saw_connect && saw_init && last_wall, "the calls looked for were seen");
	ncclrr_reader_close(r);

	/* two files merge: every event twice, from both indexes */
	const char *two[] = { sample, sample };
	CHECK_FATAL(ncclrr_reader_open(&r, two, 2, err, sizeof(err)) == 0, "open twice: %s", err);
	unsigned per[2] = { 0, 0 };
	while (ncclrr_reader_next(r, &c) == 1)
		per[ncclrr_call_file(c) & 1]++;
	CHECK(per[0] == 39 && per[1] == 39, "merged %u + %u", per[0], per[1]);
	ncclrr_reader_close(r);
}

int main(int argc, char **argv)
{
	CHECK_FATAL(argc == 3, "usage: test_libncclrr SOURCE_ROOT TMPFILE");
	snprintf(sample, sizeof(sample), "%s/traces/sample_init.nrt", argv[1]);
	CHECK(!strcmp(ncclrr_version_string(), NCCLRR_WANT_VERSION), "version %s", ncclrr_version_string());
	test_errors(argv[2]);
	test_sample();
	remove(argv[2]);
	return check_done("libncclrr");
}
