/* SPDX-License-Identifier: MIT */
/*
 * read_trace.c - the smallest useful program on libncclrr: print every
 * call of one or more ncclrr traces (.nrt) and count them.
 *
 *     cc read_trace.c -o read_trace $(pkg-config --cflags --libs ncclrr)
 *     ./read_trace run/*.nrt
 *
 * Output: one line per call, "FILE:#SEQ TEXT" with TEXT as `ncclrr dump`
 * shows it (without time and duration), then "N calls, E errors, I in
 * flight, L log lines in F files (host H)": N counts the calls that
 * returned, those a polling loop repeated included (a coalesced record
 * stands for 1 + ncclrr_call_repeat() calls), I the calls that never did.
 */
#include <stdio.h>
#include <stdlib.h>

#include <ncclrr/ncclrr.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s TRACE.nrt...\n", argv[0]);
		return 2;
	}
	char err[1024];
	ncclrr_reader *r;
	int rc = ncclrr_reader_open(&r, (const char *const *)argv + 1, (size_t)argc - 1, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	unsigned long long calls = 0, errors = 0, inflight = 0, logs = 0;
	const ncclrr_call *c;
	char text[4096];
	while ((rc = ncclrr_reader_next(r, &c)) > 0) {
		if (ncclrr_call_kind(c) == NCCLRR_KIND_LOG) {
			logs++;
			continue;
		}
		if (ncclrr_call_phase(c) == NCCLRR_PHASE_ENTER)
			continue;   /* the same call comes again, complete */
		if (ncclrr_call_phase(c) == NCCLRR_PHASE_INFLIGHT)
			inflight++;
		else
			calls += 1 + ncclrr_call_repeat(c);
		errors += (unsigned long long)ncclrr_call_failed(c);
		if (ncclrr_call_format(c, text, sizeof(text)) < 0)
			text[0] = '\0';
		printf("%zu:#%llu %s\n", ncclrr_call_file(c), (unsigned long long)ncclrr_call_seq(c), text);
	}
	if (rc < 0) {
		fprintf(stderr, "%s (%s)\n", ncclrr_reader_error(r), ncclrr_strerror(rc));
		ncclrr_reader_close(r);
		return 1;
	}
	const char *host = ncclrr_reader_meta(r, 0, "host");
	printf("%llu calls, %llu errors, %llu in flight, %llu log lines in %zu files (host %s)\n", calls, errors,
	       inflight, logs, ncclrr_reader_nfiles(r), host ? host : "?");
	ncclrr_reader_close(r);
	return 0;
}
