/* SPDX-License-Identifier: MIT */
/*
 * test_crash.c - a writer process killed with SIGKILL mid-run leaves a file
 * the reader opens: index rebuilt by scanning, every complete chunk
 * recovered, the partial tail reported in bytes and offset.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nrt.h"
#include "nrt_internal.h"
#include "../lib/check.h"

static const char schema[] =
	"ncclrr-schema 1\nfn 1 work dom int\na in i u\na in pad bytes\nend\n";

static void child(const char *path, int ready_fd, unsigned chunks_before_ready)
{
	nrr_writer *w;
	nrr_writer_opts o = { .schema = schema, .schema_len = sizeof(schema) - 1, .chunk_size = 16384 };
	if (nrr_writer_open(&w, path, &o))
		_exit(3);
	nrr_tls *t = nrr_writer_thread(w);
	uint8_t pad[48];
	memset(pad, 0x5a, sizeof(pad));
	bool told = false;
	for (uint64_t i = 1;; i++) {
		uint8_t *p = nrr_enter_begin(t, 1, 2 * NRR_VAR_MAX + 60);
		p = nrr_put_uvar(p, i);
		p = nrr_put_bytes(p, pad, (size_t)(i % 48), 64);
		nrr_enter_end(t, p);
		p = nrr_leave_begin(t, (int64_t)i, 0, 0);
		nrr_leave_end(t, p, false);
		uint64_t chunks;
		nrr_writer_counters(w, NULL, &chunks, NULL);
		if (!told && chunks >= chunks_before_ready + 2) {  /* + schema + meta */
			told = true;
			if (write(ready_fd, "r", 1) != 1)
				_exit(4);
		}
	}
}

/* End of the last complete chunk, by walking the headers ourselves. */
static uint64_t last_complete(const char *path, uint64_t size)
{
	FILE *f = fopen(path, "rb");
	uint64_t off = NRR_FILE_HEADER_SIZE, good = off;
	uint8_t h[NRR_CHUNK_HEADER_SIZE];
	while (f && fseek(f, (long)off, SEEK_SET) == 0 && fread(h, 1, sizeof(h), f) == sizeof(h)) {
		nrr_chunk_header ch;
		if (nrr_chunk_header_unpack(h, &ch))
			break;
		uint64_t next = off + ch.header_size + ch.payload_size;
		if (next > size)
			break;
		good = off = next;
	}
	if (f)
		fclose(f);
	return good;
}

static int torn_runs, torn_dropped;

/*
 * The writer appends each chunk with one write(), so a SIGKILL alone
 * usually leaves whole chunks. A torn write (power loss, full disk, a
 * kill inside write()) leaves part of one: cut the killed file inside its
 * last chunk, or append part of a header / garbage, and check the reader
 * drops exactly the partial tail and names where it starts.
 */
static void torn_tail(const char *path, uint64_t size, uint64_t good, uint64_t *s)
{
	FILE *f = fopen(path, "rb");
	CHECK_FATAL(f, "reopen");
	uint8_t *b = malloc((size_t)size + 200);
	CHECK_FATAL(b && fread(b, 1, (size_t)size, f) == (size_t)size, "read killed file");
	fclose(f);
	/* the last complete chunk starts at the last header before @good */
	uint64_t off = NRR_FILE_HEADER_SIZE, last = off;
	while (off < good) {
		nrr_chunk_header ch;
		CHECK_FATAL(nrr_chunk_header_unpack(b + off, &ch) == 0, "header at %llu", (unsigned long long)off);
		last = off;
		off += ch.header_size + ch.payload_size;
	}
	for (int k = 0; k < 6; k++) {
		uint64_t len, keep;
		if (k < 4) {   /* cut inside the last chunk: header, or payload */
			keep = last;
			len = last + 1 + rnd(s) % (good - last - 1);
			if (k == 0)
				len = last + 1 + rnd(s) % (NRR_CHUNK_HEADER_SIZE - 1);
		} else {       /* a whole file plus a partial next chunk */
			keep = good;
			len = good + 1 + rnd(s) % (k == 4 ? NRR_CHUNK_HEADER_SIZE - 1 : 150);
			memcpy(b + good, b + last, (size_t)(len - good));   /* a real header prefix */
		}
		nrr_reader *r;
		nrr_diag d;
		int rc = nrr_reader_open_mem(&r, b, (size_t)len, path, &d);
		CHECK(rc == 0, "open torn file (len %llu): %s", (unsigned long long)len, d.msg);
		if (rc)
			continue;
		const nrr_file_info *fi = nrr_reader_info(r);
		torn_runs++;
		torn_dropped += fi->dropped_bytes > 0;
		CHECK(fi->index_rebuilt, "torn: index rebuilt");
		CHECK(fi->dropped_bytes == len - keep && fi->dropped_offset == keep,
		      "torn at %llu: dropped %llu bytes at %llu, expected %llu at %llu", (unsigned long long)len,
		      (unsigned long long)fi->dropped_bytes, (unsigned long long)fi->dropped_offset,
		      (unsigned long long)(len - keep), (unsigned long long)keep);
		nrr_cursor *cur;
		if (fi->nstreams == 0) {   /* the cut chunk was the only data chunk */
			nrr_reader_close(r);
			continue;
		}
		CHECK_FATAL(nrr_cursor_open(&cur, r, 0) == 0, "cursor");
		const nrr_call *call;
		uint64_t expect = 1;
		while ((rc = nrr_cursor_next(cur, &call)) == 0 && call->phase != NRR_PHASE_INFLIGHT) {
			CHECK(call->seq == expect && call->result == (int64_t)expect, "torn: call %llu intact", (unsigned long long)expect);
			expect++;
		}
		CHECK(rc == 0 || rc == NRR_EEOF, "torn: reads cleanly: %s", nrr_cursor_diag(cur)->msg);
		nrr_cursor_close(cur);
		nrr_reader_close(r);
	}
	free(b);
}

/* Fork a writer process: @body(path, ready_fd, arg) writes a byte to
 * ready_fd when it may be killed, and never returns.  Once the byte came
 * (@what: what the child failed to do if it did not), wait @us more and
 * SIGKILL it.  @return its wait status. */
static int kill_writer(const char *path, void (*body)(const char *, int, const void *), const void *arg, unsigned us,
		       const char *what)
{
	int pfd[2];
	CHECK_FATAL(pipe(pfd) == 0, "pipe");
	unlink(path);
	pid_t pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		body(path, pfd[1], arg);
		_exit(5);
	}
	close(pfd[1]);
	char c;
	CHECK_FATAL(read(pfd[0], &c, 1) == 1, "the child never %s", what);
	usleep(us);
	kill(pid, SIGKILL);
	int st;
	waitpid(pid, &st, 0);
	close(pfd[0]);
	return st;
}

static void counting_child(const char *path, int ready_fd, const void *arg)
{
	child(path, ready_fd, *(const unsigned *)arg);
}

static void one_run(const char *path, unsigned chunks, unsigned extra_us)
{
	int st = kill_writer(path, counting_child, &chunks, extra_us, "reported progress");
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "child killed");

	struct stat sb;
	CHECK_FATAL(stat(path, &sb) == 0, "stat");
	nrr_reader *r;
	nrr_diag d;
	int rc = nrr_reader_open(&r, path, &d);
	CHECK(rc == 0, "open after SIGKILL: %s", d.msg);
	if (rc)
		return;
	const nrr_file_info *fi = nrr_reader_info(r);
	uint64_t good = last_complete(path, (uint64_t)sb.st_size);
	CHECK(fi->index_rebuilt, "index rebuilt by scanning");
	CHECK(fi->dropped_bytes == (uint64_t)sb.st_size - good, "dropped %llu bytes, expected %llu",
	      (unsigned long long)fi->dropped_bytes, (unsigned long long)((uint64_t)sb.st_size - good));
	if (fi->dropped_bytes)
		CHECK(fi->dropped_offset == good, "dropped offset %llu, expected %llu",
		      (unsigned long long)fi->dropped_offset, (unsigned long long)good);
	CHECK(fi->nstreams == 1, "one stream");
	nrr_cursor *cur;
	CHECK_FATAL(nrr_cursor_open(&cur, r, 0) == 0, "cursor");
	const nrr_call *call;
	uint64_t expect = 1, n = 0;
	while ((rc = nrr_cursor_next(cur, &call)) == 0) {
		if (call->phase == NRR_PHASE_INFLIGHT)
			break;   /* the last call may have been cut between enter and leave */
		CHECK(call->seq == expect && call->args[0].u == expect && call->result == (int64_t)expect,
		      "call %llu intact (got seq %llu)", (unsigned long long)expect, (unsigned long long)call->seq);
		CHECK(call->args[1].total == expect % 48, "payload length");
		expect++;
		n++;
	}
	CHECK(rc == 0 || rc == NRR_EEOF, "recovered calls read cleanly: %s", nrr_cursor_diag(cur)->msg);
	CHECK(n >= chunks * 100, "recovered %llu calls from at least %u chunks", (unsigned long long)n, chunks);
	nrr_cursor_close(cur);
	nrr_reader_close(r);
	uint64_t s = (uint64_t)chunks * 7919 + extra_us + 1;
	if (good > NRR_FILE_HEADER_SIZE)
		torn_tail(path, (uint64_t)sb.st_size, good, &s);
}

/* A process killed while a call is in flight, its trace written out first
 * (as the tracer's SIGTERM handler does): the call ran until the trace
 * ended (end_ts), not until its own enter record, the stream's last. */
static void inflight_child(const char *path, int ready_fd, const void *arg)
{
	nrr_writer *w;
	nrr_writer_opts o = { .schema = schema, .schema_len = sizeof(schema) - 1 };
	if (nrr_writer_open(&w, path, &o))
		_exit(3);
	nrr_tls *t = nrr_writer_thread(w);
	uint8_t *p = nrr_enter_begin(t, 1, 2 * NRR_VAR_MAX + 60);
	p = nrr_put_uvar(p, 7);
	p = nrr_put_bytes(p, "x", 1, 64);
	nrr_enter_end(t, p);   /* ... and it never returns */
	usleep(300000);
	nrr_writer_set_end(w, "signal SIGTERM", false);
	nrr_writer_set_end(w, "exit 0", true);   /* kept: one is set */
	if (nrr_writer_dump(w, 30000) || write(ready_fd, "r", 1) != 1)
		_exit(4);
	pause();
}

static void inflight_until_end(const char *path)
{
	kill_writer(path, inflight_child, NULL, 0, "dumped");
	nrr_reader *r;
	nrr_diag d;
	CHECK_FATAL(nrr_reader_open(&r, path, &d) == 0, "open the dumped trace: %s", d.msg);
	const char *end = nrr_reader_meta(r, "end");
	CHECK(end && !strcmp(end, "signal SIGTERM"), "end=%s, want signal SIGTERM", end ? end : "(none)");
	CHECK(nrr_reader_info(r)->end_ts != 0, "end_ts in the metadata");
	nrr_cursor *cur;
	CHECK_FATAL(nrr_cursor_open(&cur, r, 0) == 0, "cursor");
	const nrr_call *call;
	int rc = nrr_cursor_next(cur, &call);
	CHECK(rc == 0 && call->phase == NRR_PHASE_INFLIGHT && call->seq == 1, "the call is in flight at the end");
	if (rc == 0) {
		CHECK(call->dur >= 300000000u, "in flight for %llu ns, want at least the 300 ms to the end of the trace",
		      (unsigned long long)call->dur);
		CHECK(call->ts + call->dur == nrr_reader_info(r)->end_ts, "in flight until end_ts");
	}
	nrr_cursor_close(cur);
	nrr_reader_close(r);
}

/* A thread that folds "not ready" answers all the time (a proxy thread
 * polling recv = EAGAIN) while another writes provisional tails of it, and
 * the process is killed: the last tail reads cleanly, every call once, in
 * order.  Tails used to copy a record the thread was rewriting to fold one
 * more answer ("truncated LEAVE", "REPEAT not after a completed call"),
 * give a record count that did not match the bytes, leave out a buffer
 * handed over after the drain (a gap) or copy one already written (calls
 * twice). */
static _Atomic uint64_t polled;
static int folding_runs, folding_read;

static void *poller(void *arg)
{
	nrr_tls *t = nrr_writer_thread(arg);
	for (uint64_t i = 1;; i++) {
		atomic_store(&polled, i);
		uint8_t *p = nrr_enter_begin(t, 1, 2 * NRR_VAR_MAX + 60);   /* one that counts */
		p = nrr_put_uvar(p, i);
		p = nrr_put_bytes(p, "data", 4, 64);
		nrr_enter_end(t, p);
		nrr_leave_end(t, nrr_leave_begin(t, (int64_t)i, 0, 0), false);
		for (uint64_t k = 0; k < 1 + i % 7; k++) {   /* then EAGAIN a few times */
			p = nrr_enter_begin(t, 1, 2 * NRR_VAR_MAX + 60);
			p = nrr_put_uvar(p, 0);
			p = nrr_put_bytes(p, "", 0, 64);
			nrr_enter_end(t, p);
			nrr_leave_end(t, nrr_leave_begin(t, -1, 11, 0), true);
		}
	}
	return NULL;
}

static void folding_child(const char *path, int ready_fd, const void *arg)
{
	nrr_writer *w;
	nrr_writer_opts o = { .schema = schema, .schema_len = sizeof(schema) - 1, .chunk_size = 65536 };
	pthread_t th;
	if (nrr_writer_open(&w, path, &o) || pthread_create(&th, NULL, poller, w))
		_exit(3);
	for (int n = 0;; n++) {
		/* the wait is generous: on a loaded machine a tail can take
		 * seconds, and the test is about what the tail holds */
		if (nrr_writer_dump(w, 30000))
			_exit(4);
		if (n == 3) {   /* tails are being written, and the poller polls */
			while (atomic_load(&polled) < 1000)
				sched_yield();
			if (write(ready_fd, "r", 1) != 1)
				_exit(4);
		}
	}
}

static void snapshot_while_folding(const char *path, unsigned kill_after_us)
{
	folding_runs++;
	kill_writer(path, folding_child, NULL, kill_after_us, "wrote a tail");
	nrr_reader *r;
	nrr_diag d;
	CHECK_FATAL(nrr_reader_open(&r, path, &d) == 0, "open the killed poller's trace: %s", d.msg);
	if (nrr_reader_info(r)->nstreams == 0) {   /* killed before a tail held the poller's records */
		nrr_reader_close(r);
		return;
	}
	folding_read++;
	nrr_cursor *cur;
	CHECK_FATAL(nrr_cursor_open(&cur, r, 0) == 0, "cursor");
	const nrr_call *call;
	int rc;
	uint64_t counted = 0, polls = 0;
	while ((rc = nrr_cursor_next(cur, &call)) == 0 && call->phase != NRR_PHASE_INFLIGHT) {
		if (call->result > 0)
			CHECK(call->args[0].u == ++counted, "counted call %llu intact (seq %llu: arg %llu, result %lld)",
			      (unsigned long long)counted, (unsigned long long)call->seq,
			      (unsigned long long)call->args[0].u, (long long)call->result);
		else
			polls += 1 + call->repeat;
	}
	CHECK(rc == 0 || rc == NRR_EEOF, "killed %u us after its tails began: reads cleanly: %s", kill_after_us,
	      nrr_cursor_diag(cur)->msg);
	CHECK(counted > 0 && polls >= counted, "%llu counted calls, %llu polls", (unsigned long long)counted,
	      (unsigned long long)polls);
	nrr_cursor_close(cur);
	nrr_reader_close(r);
}

/* A thread's records that reached the file in a tail survive chunks of
 * other threads written after it.  Such a chunk used to be written over
 * the tail, so a SIGKILL before the next tail (up to a second later)
 * lost every other thread's records since their last chunk: mpirun's
 * SIGKILL cut a rank's main thread a second before its proxy thread. */
/* @n calls of `work` on @t, argument @first, @first + 1, ..., with @len
 * bytes of padding */
static void record_calls(nrr_tls *t, uint64_t first, uint64_t n, size_t len)
{
	static const uint8_t pad[48];
	for (uint64_t i = first; i < first + n; i++) {
		uint8_t *p = nrr_enter_begin(t, 1, 2 * NRR_VAR_MAX + 60);
		p = nrr_put_uvar(p, i);
		p = nrr_put_bytes(p, pad, len, 64);
		nrr_enter_end(t, p);
		nrr_leave_end(t, nrr_leave_begin(t, (int64_t)i, 0, 0), false);
	}
}

static void *busy_thread(void *arg)
{
	record_calls(nrr_writer_thread(arg), 1000001, 4000, 48);   /* about 12 chunks of 16 KiB */
	return NULL;
}

/* A child's writer of @path with tails every @sync_ns (exit 3 if none). */
static nrr_writer *child_writer(const char *path, uint64_t sync_ns)
{
	nrr_writer *w;
	nrr_writer_opts o = { .schema = schema, .schema_len = sizeof(schema) - 1, .sync_ns = sync_ns };
	if (nrr_writer_open(&w, path, &o))
		_exit(3);
	return w;
}

/* Tell the parent the child is ready to be killed, and wait for it. */
static void ready_then_wait(int ready_fd)
{
	if (write(ready_fd, "r", 1) != 1)
		_exit(4);
	pause();
}

/* Run @body in a child killed once it is ready; open what it left. */
static nrr_reader *open_killed(const char *path, void (*body)(const char *, int, const void *), const char *what)
{
	kill_writer(path, body, NULL, 0, what);
	nrr_reader *r;
	nrr_diag d;
	CHECK_FATAL(nrr_reader_open(&r, path, &d) == 0, "open the killed writer's trace: %s", d.msg);
	return r;
}

static void tail_then_chunks_child(const char *path, int ready_fd, const void *arg)
{
	(void)arg;
	nrr_writer *w;
	/* tails only when asked (the first periodic one comes at once) */
	nrr_writer_opts o = { .schema = schema, .schema_len = sizeof(schema) - 1, .chunk_size = 16384,
			      .sync_ns = 60000000000ull };
	if (nrr_writer_open(&w, path, &o))
		_exit(3);
	usleep(200000);
	record_calls(nrr_writer_thread(w), 1, 100, 4);   /* stays in this thread's buffer */
	if (nrr_writer_dump(w, 30000))   /* a tail with those 100 calls */
		_exit(4);
	uint64_t before, chunks;
	nrr_writer_counters(w, NULL, &before, NULL);
	pthread_t th;
	if (pthread_create(&th, NULL, busy_thread, w) || pthread_join(th, NULL))
		_exit(4);
	do {   /* the busy thread's full buffers were drained */
		usleep(1000);
		nrr_writer_counters(w, NULL, &chunks, NULL);
	} while (chunks < before + 10);
	ready_then_wait(ready_fd);
}

static void tail_survives_chunks(const char *path)
{
	nrr_reader *r = open_killed(path, tail_then_chunks_child, "drained the busy thread");
	uint64_t mine = 0, busy = 0;
	for (uint32_t s = 0; s < nrr_reader_info(r)->nstreams; s++) {
		nrr_cursor *cur;
		CHECK_FATAL(nrr_cursor_open(&cur, r, s) == 0, "cursor");
		const nrr_call *call;
		int rc;
		while ((rc = nrr_cursor_next(cur, &call)) == 0)
			call->args[0].u > 1000000 ? busy++ : mine++;
		CHECK(rc == NRR_EEOF, "stream %u reads cleanly: %s", s, nrr_cursor_diag(cur)->msg);
		nrr_cursor_close(cur);
	}
	CHECK(mine == 100, "%llu of the main thread's 100 calls survived the busy thread's chunks (%llu calls)",
	      (unsigned long long)mine, (unsigned long long)busy);
	/* the last tail's metadata too (issue 20: end_ts was missing) */
	CHECK(nrr_reader_info(r)->end_ts != 0, "end_ts after SIGKILL");
	nrr_reader_close(r);
}

/* A thread that went idle long before the last tail (NCCL's proxy
 * progress thread waits on a condition variable after its cudaSetDevice)
 * is whole until the tail's whole_ts, not only until its last return:
 * the tail copied every thread from then on (issue 15: replay cut a rank
 * killed after init at that thread's last call, 4 s before its end, and
 * its peers waited for ever). */
static void *idle_thread(void *arg)
{
	record_calls(nrr_writer_thread(arg), 2000001, 5, 1);
	return NULL;
}

static void idle_child(const char *path, int ready_fd, const void *arg)
{
	(void)arg;
	nrr_writer *w = child_writer(path, 60000000000ull);
	pthread_t th;
	if (pthread_create(&th, NULL, idle_thread, w))
		_exit(4);
	usleep(100000);   /* the idle thread is done and stays (not joined: alive) */
	record_calls(nrr_writer_thread(w), 1, 10, 1);
	usleep(100000);
	if (nrr_writer_dump(w, 30000))
		_exit(4);
	ready_then_wait(ready_fd);
}

static void whole_after_idle(const char *path)
{
	nrr_reader *r = open_killed(path, idle_child, "dumped");
	const char *v = nrr_reader_meta(r, "whole_ts");
	uint64_t whole = v ? strtoull(v, NULL, 10) : 0, end = nrr_reader_info(r)->end_ts, idle_end = 0, last_end = 0;
	CHECK(whole >= nrr_reader_info(r)->mono_ns && whole <= end, "whole_ts %llu between the header's clock and end_ts %llu",
	      (unsigned long long)whole, (unsigned long long)end);
	uint64_t n = 0;
	for (uint32_t s = 0; s < nrr_reader_info(r)->nstreams; s++) {
		nrr_cursor *cur;
		CHECK_FATAL(nrr_cursor_open(&cur, r, s) == 0, "cursor");
		const nrr_call *call;
		while (nrr_cursor_next(cur, &call) == 0) {
			n++;
			uint64_t e = call->ts + call->dur;
			if (call->args[0].u > 2000000 && e > idle_end)
				idle_end = e;
			if (e > last_end)
				last_end = e;
		}
		nrr_cursor_close(cur);
	}
	CHECK(n == 15, "%llu of 15 calls in the file", (unsigned long long)n);
	/* the idle thread stopped 0.2 s before the tail, the main thread 0.1 s */
	CHECK(idle_end && whole >= idle_end + 150000000ull && whole >= last_end + 50000000ull,
	      "whole_ts %llu is the tail's time, not a thread's last return (idle thread %llu, last %llu)",
	      (unsigned long long)whole, (unsigned long long)idle_end, (unsigned long long)last_end);
	nrr_reader_close(r);
}

/* the calls a trace holds, all its threads */
static uint64_t calls_in(nrr_reader *r)
{
	uint64_t n = 0;
	for (uint32_t s = 0; s < nrr_reader_info(r)->nstreams; s++) {
		nrr_cursor *cur;
		CHECK_FATAL(nrr_cursor_open(&cur, r, s) == 0, "cursor");
		const nrr_call *call;
		while (nrr_cursor_next(cur, &call) == 0)
			n++;
		nrr_cursor_close(cur);
	}
	return n;
}

/* A process killed in its first second, as mpirun's SIGKILL finds a rank
 * that was slow to start: its calls are in the file.  The first periodic
 * tail used to come a second after the writer opened, whatever came
 * before (a rank with no call at all was then "died" in hang). */
static void early_child(const char *path, int ready_fd, const void *arg)
{
	(void)arg;
	nrr_writer *w = child_writer(path, 1000000000u);
	usleep(20000);
	record_calls(nrr_writer_thread(w), 1, 10, 1);
	if (write(ready_fd, "r", 1) != 1)
		_exit(4);
	pause();
}

static void killed_early(const char *path)
{
	kill_writer(path, early_child, NULL, 400000, "recorded");
	nrr_reader *r;
	nrr_diag d;
	CHECK_FATAL(nrr_reader_open(&r, path, &d) == 0, "open the early-killed writer's trace: %s", d.msg);
	uint64_t n = calls_in(r);
	CHECK(n == 10, "killed 0.4 s after its first calls (tails once a second): %llu of 10 calls in the file",
	      (unsigned long long)n);
	nrr_reader_close(r);
}

/* A process killed while it pauses (traces/nccl_ib/killed's rank 3, 1 s
 * after its init) loses nothing: once its records stop changing, the tail
 * comes a tenth of sync_ns after the last one, not sync_ns after it. */
static void pause_child(const char *path, int ready_fd, const void *arg)
{
	(void)arg;
	nrr_writer *w = child_writer(path, 4000000000ull);
	usleep(20000);
	record_calls(nrr_writer_thread(w), 1, 10, 1);   /* the first tail comes at once */
	usleep(300000);
	record_calls(nrr_writer_thread(w), 11, 100, 1);   /* the next periodic one would come 4 s later */
	usleep(1000000);
	ready_then_wait(ready_fd);
}

static void killed_in_pause(const char *path)
{
	nrr_reader *r = open_killed(path, pause_child, "paused");
	uint64_t n = calls_in(r);
	CHECK(n == 110, "killed 1 s into a pause after its calls (tails every 4 s): %llu of 110 calls in the file",
	      (unsigned long long)n);
	nrr_reader_close(r);
}

/* An end_ts before the file began (its header's clock) is no end: a
 * reader that took it made `ncclrr hang` say "trace stops at
 * -1795468118.683776 s" for a process killed before its first call. */
static void end_before_start(const char *path)
{
	unlink(path);
	static const char meta[] = "host=h\nend_ts=5\n";
	nrr_writer_opts o = { .schema = schema, .schema_len = sizeof(schema) - 1, .meta = meta, .meta_len = sizeof(meta) - 1,
			      .manual_clock = true, .mono_ns = 100000000000ull, .wall_ns = 1795468118000000000ull, .pid = 7 };
	nrr_writer *w;
	CHECK_FATAL(nrr_writer_open(&w, path, &o) == 0, "writer open");
	nrr_reader *r;
	nrr_diag d;
	CHECK_FATAL(nrr_reader_open(&r, path, &d) == 0, "open a trace with no call yet: %s", d.msg);
	CHECK(nrr_reader_info(r)->end_ts == 0, "end_ts %llu, before the file began (mono %llu), taken as the end",
	      (unsigned long long)nrr_reader_info(r)->end_ts, (unsigned long long)nrr_reader_info(r)->mono_ns);
	nrr_reader_close(r);
	nrr_writer_close(w);
}

/* The dump of a process about to die (tracer/signals.c, a fatal signal's
 * default action) is the file's last: the threads that go on recording
 * while it dies bring no later tail, which the death would cut short
 * (record_sigterm: 1 in 100 python3 traces lost the tail that said
 * "signal SIGTERM", and the file read only by a scan). */
static _Atomic bool keep_going;

static void *recording_thread(void *arg)
{
	nrr_tls *t = nrr_writer_thread(arg);
	for (uint64_t i = 3000001; atomic_load(&keep_going); i += 50) {
		record_calls(t, i, 50, 48);
		usleep(1000);   /* about 50000 calls a second: the file stays small */
	}
	return NULL;
}

static char *file_bytes(const char *path, size_t *len)
{
	struct stat st;
	FILE *f = fopen(path, "rb");
	CHECK_FATAL(f && fstat(fileno(f), &st) == 0, "open %s", path);
	char *b = malloc((size_t)st.st_size + 1);
	*len = b ? fread(b, 1, (size_t)st.st_size, f) : 0;
	fclose(f);
	CHECK_FATAL(b && *len == (size_t)st.st_size, "read %s", path);
	return b;
}

static void last_dump_is_last(const char *path)
{
	unlink(path);
	nrr_writer *w;
	nrr_writer_opts o = { .schema = schema, .schema_len = sizeof(schema) - 1, .sync_ns = 20000000 };
	CHECK_FATAL(nrr_writer_open(&w, path, &o) == 0, "writer open");
	atomic_store(&keep_going, true);
	pthread_t th;
	CHECK_FATAL(pthread_create(&th, NULL, recording_thread, w) == 0, "thread");
	usleep(100000);
	nrr_writer_set_end(w, "signal SIGTERM", false);
	CHECK(nrr_writer_dump_last(w, 30000) == 0, "the last dump was written");
	size_t n0, n1;
	char *b0 = file_bytes(path, &n0);
	usleep(300000);   /* 15 tail intervals of recording */
	char *b1 = file_bytes(path, &n1);
	CHECK(n0 == n1 && !memcmp(b0, b1, n0), "the file changed after the last dump (%zu bytes, then %zu)", n0, n1);
	free(b0);
	free(b1);
	nrr_reader *r;
	nrr_diag d;
	CHECK_FATAL(nrr_reader_open(&r, path, &d) == 0, "open the sealed trace: %s", d.msg);
	const char *end = nrr_reader_meta(r, "end");
	CHECK(end && !strcmp(end, "signal SIGTERM"), "end=%s after the last dump", end ? end : "(none)");
	nrr_reader_close(r);
	atomic_store(&keep_going, false);
	pthread_join(th, NULL);
	nrr_writer_close(w);
}

int main(void)
{
	char path[] = "/tmp/nrr-crash-XXXXXX";
	int fd = mkstemp(path);
	CHECK_FATAL(fd >= 0, "mkstemp");
	close(fd);
	static const unsigned chunks[] = { 1, 3, 10, 30 };
	static const unsigned delay[] = { 0, 200, 1000, 5000 };
	for (unsigned i = 0; i < 4; i++)
		for (unsigned j = 0; j < 4; j++)
			one_run(path, chunks[i], delay[j]);
	inflight_until_end(path);
	for (int i = 0; i < 5; i++)
		tail_survives_chunks(path);
	killed_early(path);
	killed_in_pause(path);
	whole_after_idle(path);
	end_before_start(path);
	last_dump_is_last(path);
	for (unsigned us = 0; us < 30000; us += 1500)
		snapshot_while_folding(path, us);
	CHECK(folding_read * 2 >= folding_runs, "%d of %d killed pollers' traces had the poller's stream", folding_read,
	      folding_runs);
	unlink(path);
	CHECK(torn_runs > 0 && torn_dropped == torn_runs, "every torn tail was reported (%d of %d)", torn_dropped, torn_runs);
	return check_done("crash_recovery");
}
