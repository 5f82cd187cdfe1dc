/* SPDX-License-Identifier: MIT */
/* fuzz_meta_gram.c - trace metadata ("key=value" lines, FORMAT.md) made
 * from the input's choices (gram.h): the keys the tools read (rank,
 * nranks, pid, end, end_ts, exec_generation, exe, env.NCCLRR_TOPO, ...)
 * with edge numbers, long values, repeats (the last wins), lines without
 * '=' and empty keys; written into a trace with the writer, read back,
 * and given to what reads metadata: nrr_reader_meta (checked against the
 * lines generated) and the run description diff and bisect build from it
 * (analyzer/runinfo.c), over three processes of one run. */
#include <unistd.h>

#include "nrt.h"
#include "runinfo.h"
#include "driver.h"
#include "gram.h"

static const char *const keys[] = { "rank", "nranks", "pid", "ppid", "host", "end", "end_ts", "exec_generation",
				     "exe", "exe_build_id", "argv", "nccl_version", "nccl_rank", "uid",
				     "env.NCCLRR_TOPO", "env.NCCL_TOPO_FILE", "env.NCCL_COMM_ID", "env.RANK",
				     "env.LOCAL_RANK", "env.NCCL_HOSTID", "env.MASTER_PORT", "env.NCCLRR_HOST",
				     "init.ab", "comm.0x1", "thread.7", "redacted", "env.", "" };
#define NKEYS (sizeof(keys) / sizeof(keys[0]))
static const char *const words[] = { "exit 0", "exit 1", "signal SIGKILL", "exec", "127.0.0.1:29500",
				     "../../etc/passwd", "/dev/zero", "node0", "x", "a=b", "" };

/* One process's metadata; @last[k]: the value key k was given last (the
 * one the reader must return), NULL when never. */
static void gen_meta(struct gram *g, char **last)
{
	for (unsigned l = pick(g, 24); l > 0; l--) {
		unsigned k = pick(g, NKEYS);
		size_t start;
		switch (pick(g, 12)) {
		case 0:   /* no '=' */
			emit(g, "%s\n", keys[k]);
			continue;
		case 1:   /* a long value: longer than a reader's buffer */
			emit(g, "%s=", keys[k]);
			start = g->len;
			emit_run(g, 'v', 3000 + pick(g, 256) * 8);
			break;
		case 2: case 3:
			emit(g, "%s=", keys[k]);
			start = g->len;
			emit(g, "%s", one_of(g, words, sizeof(words) / sizeof(words[0])));
			break;
		default:
			emit(g, "%s=", keys[k]);
			start = g->len;
			emit_number(g);
			break;
		}
		free(last[k]);
		last[k] = strndup(g->out + start, g->len - start);
		emit(g, "\n");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char dir[] = "/tmp/fuzz_meta_gram.XXXXXX";
	if (!mkdtemp(dir))
		return 0;
	nrr_reader *r[3] = { 0 };
	size_t nr = 0;
	struct gram g = { .p = data, .n = size };
	for (int p = 0; p < 3; p++) {
		char *last[NKEYS] = { 0 };
		g.len = 0;
		gen_meta(&g, last);
		char path[64];
		snprintf(path, sizeof(path), "%s/p%d.nrt", dir, p);
		static const char schema[] = "ncclrr-schema 1\nfn 1 f dom void\nend\n";
		nrr_writer_opts o = { .schema = schema, .schema_len = sizeof(schema) - 1,
				      .meta = g.out ? g.out : "", .meta_len = g.len };
		nrr_writer *w;
		nrr_diag d;
		if (nrr_writer_open(&w, path, &o) == 0 && nrr_writer_close(w) == 0 &&
		    nrr_reader_open(&r[nr], path, &d) == 0) {
			/* the last value given, at most 4095 bytes (nrt.h); an
			 * empty key or a line without '=' is no value (end_ts:
			 * the writer's own, written at its close, wins) */
			for (size_t k = 0; k < NKEYS; k++) {
				const char *v = nrr_reader_meta(r[nr], keys[k]);
				if (!keys[k][0] || !strcmp(keys[k], "end_ts"))
					continue;
				REQUIRE(!v == !last[k]);
				REQUIRE(!v || !strncmp(v, last[k], 4095));
			}
			size_t tl;
			nrr_reader_meta_text(r[nr], &tl);
			nr++;
		}
		for (size_t k = 0; k < NKEYS; k++)
			free(last[k]);
	}
	struct nrr_runinfo ri;
	char err[512];
	if (nrr_runinfo_read(&ri, r, nr, err, sizeof(err)) == 0) {
		struct nrr_runinfo_change *ch;
		size_t n = nrr_runinfo_diff(&ri, &ri, &ch);
		REQUIRE(n == 0 || n == (size_t)-1);   /* a run against itself */
		if (n != (size_t)-1)
			free(ch);
		nrr_runinfo_free(&ri);
	} else {
		REQUIRE(err[0]);
	}
	for (size_t i = 0; i < nr; i++)
		nrr_reader_close(r[i]);
	free(g.out);
	for (int p = 0; p < 3; p++) {
		char path[64];
		snprintf(path, sizeof(path), "%s/p%d.nrt", dir, p);
		unlink(path);
	}
	if (rmdir(dir) != 0)
		fprintf(stderr, "fuzz_meta_gram: cannot remove %s\n", dir);
	return 0;
}
