/* SPDX-License-Identifier: MIT */
/*
 * rerun.c - `ncclrr replay --rerun`: the real program again, on the fake
 * cluster, with what the environment answered taken from the trace where
 * it decided the outcome, then a per-rank verdict.
 *
 * From the recording (every .nrt of DIR) it takes:
 *  - the CUDA driver and NVML calls that failed, as rules for the fake
 *    runtime's fault switch (NCCLRR_FAULT, replayer/fake/fake_common.c),
 *    counted the way the fake counts them;
 *  - each rank's environment (metadata env.*), given back per rank where
 *    it differs from what the rerun would have anyway;
 *  - per rank, the outcome: how it ended (meta `end`), its first failing
 *    call and NCCL's warnings (LOG records).
 * It records the rerun (`ncclrr record -- ncclrr run ...`, the same
 * executables the user runs), reads that back the same way and compares.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "callfmt.h"
#include "engine.h"
#include "rundir.h"
#include "nrt.h"
#include "nrr_env.h"
#include "nrr_launch.h"
#include "nrr_meta.h"
#include "rerun.h"

/* ------------------------------------------------------------ small lists */
struct strv {
	char **v;
	size_t n, cap;
};

static int strv_add(struct strv *s, char *str)   /* takes @str */
{
	if (!str || !nrr_grow(&s->v, s->n + 1, &s->cap, sizeof(char *))) {
		free(str);
		return -ENOMEM;
	}
	s->v[s->n++] = str;
	s->v[s->n] = NULL;
	return 0;
}

static int strv_addf(struct strv *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int strv_addf(struct strv *s, const char *fmt, ...)
{
	va_list ap;
	char *str = NULL;
	va_start(ap, fmt);
	int n = vasprintf(&str, fmt, ap);
	va_end(ap);
	return strv_add(s, n < 0 ? NULL : str);
}

static bool strv_has(const struct strv *s, const char *str)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->v[i], str))
			return true;
	return false;
}

static void strv_free(struct strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/* ------------------------------------------------------- one process's trace */
/* A recorded failure the fault switch can repeat. */
struct rule {
	char fn[96];           /* base name, as NCCLRR_FAULT names it */
	char thread[16];       /* thread=NAME (connect rules), or "" */
	char call[96];         /* the recorded name (cuIpcOpenMemHandle_v2) */
	char res[160];         /* the error, by name */
	uint64_t nth;          /* the fake's count of that entry point */
	uint64_t wall;         /* wall-clock ns of the failed call's return */
	uint16_t port;         /* connect rules: the port connected to */
	bool dropped;          /* inside a failed call that is the rule, or made
				* after the job's stop (trim_after_stop) */
	bool cap;              /* a capability answer (verbs_capability) */
};

struct proc {
	char *path;
	bool ib_dev;          /* opened an IB device (a role=dev_open call answered one) */
	int rank;              /* -1: not a rank (the launcher, a helper) */
	long pid, ppid;
	char host[64];         /* meta host (masked in NCCL's lines) */
	char end[96];          /* meta `end`, "" when the trace has none */
	char nccl[32];         /* meta nccl_version, "" when NCCL never said */
	uint64_t start_wall;   /* wall-clock ns when the trace was opened */
	uint64_t end_wall;     /* wall-clock time of the end (0: unknown) */
	uint64_t last_wall;    /* of the last recorded event */
	double timeout_s;      /* an `ncclrr run --timeout S` launcher's S, else 0 */
	char fail[320];        /* "fn = RESULT" of the first failing call, "" none */
	uint64_t fail_wall;    /* its wall-clock time */
	struct strv warns;     /* NCCL's warnings and error trail, masked, each once */
	struct strv later;     /* those of @warns printed only after the first
				* failure's report (see after_failure()) */
	uint64_t *warn_wall;   /* per line of @warns: when it was first printed */
	struct rule *rules;    /* what the fault switch can repeat */
	size_t nrules, caprules;
	struct strv env;       /* "K=V" of the recorded env.* */
	uint16_t *ports;       /* IP ports it bound or was given (bind, getsockname) */
	size_t nports, capports;
	char *variants;        /* a note when a rule's function was called under
				* several names (see rule_for) */
	struct rule last;      /* its last call the fault switch counts: where a
				* rank killed outright is killed in the rerun */
};

static void proc_free(struct proc *p)
{
	free(p->path);
	free(p->variants);
	strv_free(&p->warns);
	strv_free(&p->later);
	free(p->warn_wall);
	free(p->rules);
	free(p->ports);
	strv_free(&p->env);
}

/* The rank of a trace: its metadata's (nrr_meta_rank()), else a
 * launcher's variable. */
static int trace_rank(nrr_reader *r)
{
	long rank = nrr_meta_rank(r);
	if (rank >= 0)
		return (int)rank;
	const char *var;
	for (size_t i = 0; (var = nrr_env_rank_var(i)); i++) {
		char key[64];
		snprintf(key, sizeof(key), "env.%s", var);
		const char *v = nrr_reader_meta(r, key);
		char *e;
		if (!v || !*v)
			continue;
		long n = strtol(v, &e, 10);
		if (!*e && n >= 0 && n < INT_MAX)
			return (int)n;
	}
	return -1;
}

/* An answer the fake runtime gives by itself: a probe of the CUDA API
 * (`benign=probe` in formats/api/: the entry-point lookup of a symbol it
 * does not have, CUDA_ERROR_NOT_FOUND).  The CUDA runtime probes for
 * entry points this way and goes on; the fake answers the same for every
 * symbol it lacks, so injecting it would change nothing but could,
 * counted by nth, land on a lookup the fake does serve. */
static bool fake_answers_itself(const nrr_call *c)
{
	const nrr_benign_rule *b = nrr_call_benign_rule(c);
	return b && !strcmp(b->kind, "probe") && !strncmp(c->fn->domain, "cuda_", 5);
}

/* Is @a a recorded IPv4/IPv6 sockaddr (at least its port)? */
static bool ip_sockaddr(const nrr_value *a)
{
	return a && a->len >= 4 && (a->p[0] == 2 /* AF_INET */ || a->p[0] == 10 /* AF_INET6 */);
}

/* A connect to an IPv4/IPv6 address (the socket fault switch counts
 * those; UNIX-domain ones pass through it uncounted). */
static bool ip_connect(const nrr_call *c)
{
	return ip_sockaddr(nrr_call_role_arg(c, NRR_ARG_ADDR));
}

/* The IP port of @c's socket address of role @r (addr: a connect's
 * peer; local: this end's own, that bind names or getsockname learns),
 * or 0 */
static uint16_t ip_port(const nrr_call *c, enum nrr_argrole r)
{
	const nrr_value *a = nrr_call_role_arg(c, r);
	return ip_sockaddr(a) ? (uint16_t)(a->p[2] << 8 | a->p[3]) : 0;
}

/* Does @c (succeeded) return a new descriptor: an accept, or a socket
 * setup call that works on no descriptor or pair of them (socket,
 * epoll_create, eventfd; not pipe, which returns its pair in fds)? */
static bool makes_fd(const nrr_call *c)
{
	enum nrr_role r = nrr_call_role(c);
	return c->result >= 0 && (r == NRR_ROLE_ACCEPT || (r == NRR_ROLE_SOCK_SETUP && nrr_fn_arg(c->fn, NRR_ARG_FD) < 0 &&
								     nrr_fn_arg(c->fn, NRR_ARG_FDS) < 0));
}

/* What the fake runtime's fault switch can make fail: the CUDA driver,
 * the CUDA runtime (ncclrr's libcudart, which real NCCL relinked from its
 * static archive calls), NVML, and the verbs the fake libibverbs counts
 * (an RTR refused, a registration over RLIMIT_MEMLOCK: NCCL's NET/IB
 * failures): those described with `fault` in formats/api/verbs.api
 * (nrr_fn_fault()), which the fake's counting macros name. */
static bool faultable(const nrr_fn_schema *fn)
{
	return !strcmp(fn->domain, "cuda_driver") || !strcmp(fn->domain, "cuda_runtime") ||
	       !strcmp(fn->domain, "nvml") || nrr_fn_fault(fn->name);
}

/* A verbs call's errno (the fault switch's rule names it: ENOMEM,
 * ENETUNREACH): a pointer verb's errno, an int verb's positive result. */
static int verbs_errno(const nrr_call *c)
{
	return c->fn->ret == NRR_RET_POSERR ? (int)c->result : (int)c->err;
}

/* A verbs failure that answers what the machine has, as
 * capability_answer() does for CUDA and NVML: a benign= rule of
 * formats/api/verbs.api (no verbs device: ENOSYS, ENODEV; NCCL's dma-buf
 * probe, ibv_reg_dmabuf_mr of fd -1). */
static bool verbs_capability(const nrr_call *c)
{
	return !strcmp(c->fn->domain, "verbs") && nrr_call_benign(c);
}

/* An answer about what the machine has rather than a failure of the job:
 * "not supported", "not found", "already enabled".  NCCL asks NVML for
 * fabric information on every GPU and goes on when it has none, enables
 * peer access that may be on already, probes for entry points.  Such
 * answers still become rules (a cluster that lacks what the fake has must
 * lack it in the rerun too), but a rank's "first failing call" is the
 * first failure that is not one of them. */
static bool capability_answer(const char *res)
{
	static const char *const tails[] = { "NOT_SUPPORTED", "NotSupported", "NOT_FOUND", "NotFound",
					     "ALREADY_ENABLED", "AlreadyEnabled" };
	size_t n = strlen(res);
	for (size_t i = 0; i < sizeof(tails) / sizeof(tails[0]); i++) {
		size_t t = strlen(tails[i]);
		if (n >= t && !strcmp(res + n - t, tails[i]))
			return true;
	}
	return false;
}

/* Failures that say little about where a run went: socket calls probe
 * and retry (a connect refused until the peer listens), verbs calls other
 * than those the fake counts (a post or a poll: their number depends on
 * timing), capability answers.  The rank's end and NCCL's warnings carry
 * what the network decided.  A counted verb that fails (an RTR refused, a
 * registration over the memlock limit) is where NET/IB failed. */
static bool counts_as_first_failure(const nrr_call *c, const char *res)
{
	if (!strcmp(c->fn->domain, "verbs"))
		return nrr_fn_fault(c->fn->name) && !verbs_capability(c);
	return strcmp(c->fn->domain, "socket") && !fake_answers_itself(c) && !capability_answer(res);
}

/* "FILE.cc:123 -> 3": NCCL's error trail (printed at INFO or WARN). */
static bool is_trail(const char *s, size_t n)
{
	for (size_t i = 0; i + 4 <= n; i++) {
		if (memcmp(s + i, " -> ", 4) || i + 4 >= n || s[i + 4] < '0' || s[i + 4] > '9')
			continue;
		size_t j = i;
		while (j > 0 && s[j - 1] >= '0' && s[j - 1] <= '9')
			j--;
		if (j == i || j == 0 || s[j - 1] != ':')
			continue;
		for (size_t k = j - 1; k > 0 && s[k - 1] != ' '; k--)
			if (s[k - 1] == '.')
				return true;
	}
	return false;
}

static bool alnum(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool hexdig(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Length of a dotted IPv4 address at @s (0: none). */
static size_t ipv4_len(const char *s, size_t n)
{
	size_t i = 0;
	for (int part = 0; part < 4; part++) {
		size_t d = 0;
		while (i + d < n && s[i + d] >= '0' && s[i + d] <= '9' && d < 4)
			d++;
		if (d == 0 || d > 3)
			return 0;
		i += d;
		if (part < 3) {
			if (i >= n || s[i] != '.')
				return 0;
			i++;
		}
	}
	return i < n && alnum(s[i]) ? 0 : i;
}

/*
 * One of NCCL's log lines as compared between two runs.  NCCL writes
 * "HOST:PID:TID [DEV] FILE:LINE NCCL WARN MSG" and "HOST:PID:TID [DEV]
 * NCCL INFO MSG"; the line becomes "FILE:LINE WARN MSG" / "INFO MSG",
 * and in MSG what differs between two runs of one job is masked:
 * 0x... -> 0x#; IPv4 addresses -> <addr>, their ports ("<54476>" or
 * ":54476") -> <port>; words of 8 or more hex digits (the hash in a UDS
 * socket name, UUIDs) -> #; decimals -> #; the host name -> <host>; the
 * process's pid and a number after "pid" or "process" -> <pid>.  Other
 * numbers (source lines, trail codes, ranks, error codes) stay.
 */
static char *normalize_log(const char *s, size_t n, const char *host, long pid)
{
	static const char *const marks[] = { " NCCL WARN ", " NCCL INFO " };
	const char *where = NULL;
	size_t wlen = 0;
	int level = -1;
	for (int m = 0; m < 2 && level < 0; m++) {
		const char *at = memmem(s, n, marks[m], strlen(marks[m]));
		if (!at)
			continue;
		level = m;
		if (m == 0) {   /* FILE:LINE, the word before the mark */
			const char *w = at;
			while (w > s && w[-1] != ' ')
				w--;
			if (w < at && memchr(w, ':', (size_t)(at - w)) && w[0] != '[') {
				where = w;
				wlen = (size_t)(at - w);
			}
		}
		n -= (size_t)(at + strlen(marks[m]) - s);
		s = at + strlen(marks[m]);
	}
	while (n && (s[n - 1] == '\n' || s[n - 1] == ' '))
		n--;
	size_t hl = host ? strlen(host) : 0;
	char *out = malloc(wlen + 8 + 8 * n + 1);   /* "<addr>" for a 1-char token at worst */
	if (!out)
		return NULL;
	size_t o = 0;
	if (where) {
		memcpy(out, where, wlen);
		o = wlen;
		out[o++] = ' ';
	}
	if (level >= 0)
		o += (size_t)sprintf(out + o, "%s ", level == 0 ? "WARN" : "INFO");
	for (size_t i = 0; i < n;) {
		bool start = i == 0 || !alnum(s[i - 1]);
		if (!start || !alnum(s[i])) {
			out[o++] = s[i++];
			continue;
		}
		if (s[i] == '0' && i + 2 < n && s[i + 1] == 'x' && hexdig(s[i + 2])) {
			size_t j = i + 2;
			while (j < n && hexdig(s[j]))
				j++;
			o += (size_t)sprintf(out + o, "0x#");
			i = j;
			continue;
		}
		size_t a = ipv4_len(s + i, n - i);
		if (a) {
			o += (size_t)sprintf(out + o, "<addr>");
			i += a;
			size_t j = i + 1;
			while (j < n && s[j] >= '0' && s[j] <= '9')
				j++;
			if (i < n && (s[i] == '<' || s[i] == ':') && j > i + 1 && (s[i] == ':' || (j < n && s[j] == '>'))) {
				o += (size_t)sprintf(out + o, s[i] == '<' ? "<port>" : ":<port>");
				i = s[i] == '<' ? j + 1 : j;
			}
			continue;
		}
		size_t j = i;
		bool digits = true, hex = true, anydigit = false;
		while (j < n && alnum(s[j])) {
			digits &= s[j] >= '0' && s[j] <= '9';
			hex &= hexdig(s[j]);
			anydigit |= s[j] >= '0' && s[j] <= '9';
			j++;
		}
		if (hl && j - i == hl && !memcmp(s + i, host, hl)) {
			o += (size_t)sprintf(out + o, "<host>");
		} else if (hex && anydigit && j - i >= 8) {
			out[o++] = '#';
		} else if (digits && j + 1 < n && s[j] == '.' && s[j + 1] >= '0' && s[j + 1] <= '9') {
			j++;
			while (j < n && s[j] >= '0' && s[j] <= '9')
				j++;
			out[o++] = '#';
		} else if (digits && ((pid > 0 && strtol(s + i, NULL, 10) == pid) ||
				      (i >= 4 && (!memcmp(s + i - 4, "pid ", 4) || !memcmp(s + i - 4, "pid=", 4))) ||
				      (i >= 8 && !memcmp(s + i - 8, "process ", 8)))) {
			o += (size_t)sprintf(out + o, "<pid>");
		} else {
			memcpy(out + o, s + i, j - i);
			o += j - i;
		}
		i = j;
	}
	out[o] = 0;
	return out;
}

static void result_text(const nrr_call *c, char *buf, size_t len)
{
	const char *name = c->fn->rtable ? nrr_enum_name(c->fn->rtable, c->result) : NULL;
	if (name) {
		snprintf(buf, len, "%s", name);
		return;
	}
	FILE *f = fmemopen(buf, len, "w");
	if (!f) {
		snprintf(buf, len, "%lld", (long long)c->result);
		return;
	}
	nrr_format_result(f, c);
	fclose(f);
}

/* Base name as the fake runtime's counters name a function: without _vN,
 * _ptds, _ptsz (fake_common.c strip_version). */
static void base_name(const char *name, char *out, size_t len)
{
	snprintf(out, len, "%s", name);
	size_t n = strlen(out);
	if (n > 5 && (!strcmp(out + n - 5, "_ptds") || !strcmp(out + n - 5, "_ptsz")))
		out[n -= 5] = 0;
	char *v = strrchr(out, '_');
	if (v && v[1] == 'v' && v[2] && strspn(v + 2, "0123456789") == strlen(v + 2))
		*v = 0;
}

/* A call counted while a faultable call was open on its thread: if that
 * outer call fails and becomes the rule, the fake fails it at its entry
 * and the calls nested in it never happen in the rerun. */
struct nested {
	uint32_t stream;
	uint8_t depth;
	uint32_t fn;           /* schema id, whose count it took */
	long rule;             /* the rule it became, or -1 */
};

/*
 * Read one trace.  The fault rules count calls as the fake runtime does
 * (replayer/fake/fake_common.c fake_enter): per process, per exported
 * entry point (each variant, cuDeviceGetUuid and cuDeviceGetUuid_v2, has
 * a counter of its own), counting every call, the failed ones included,
 * in the order they were entered; a rule names the function without its
 * version suffix and fires at the call whose own counter equals nth.  So
 * the K of a failed call is the number of calls of its exact recorded
 * name the process had entered up to and including it.  Calls are counted
 * in the order the trace's merge delivers their entries (enter time
 * across threads), which is the fake's order unless two threads call the
 * same function within the clock's resolution.
 *
 * A failed runtime call with driver calls nested in it (cudaIpcOpenMemHandle
 * over cuIpcOpenMemHandle, failing or not) is ONE failure: the rule is the
 * outermost faultable call's, the program saw its answer; the nested
 * calls are uncounted (the fake fails the outer call before it runs them)
 * and their rules and first-failure are dropped.
 */
/*
 * IP connects as the socket fault switch counts them for a rule
 * `connect:thread=NAME:nth=N`: the connects of threads whose name starts
 * with NAME (metadata thread.TID; a thread without one counts under "").
 */
struct conn_count {
	struct thread_name { uint32_t tid, at; char name[16]; } *names;   /* by tid (sort_names) */
	size_t nnames, capnames;
	struct { char name[16]; uint64_t n; } *per;   /* connects per thread name */
	size_t nper, capper;
	struct { uint32_t stream; int64_t fd; uint64_t nth; } *first;   /* an fd's first connect */
	size_t nfirst, capfirst;
};

static int cmp_thread_name(const void *x, const void *y)
{
	const struct thread_name *a = x, *b = y;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	return a->at < b->at ? -1 : a->at > b->at;
}

/* Sort the names by thread, the last one given for a thread kept (two
 * keys may name one thread: thread.12 and thread.012), for thread_name's
 * binary search: a trace may name many threads and make many connects. */
static void sort_names(struct conn_count *cc)
{
	qsort(cc->names, cc->nnames, sizeof(*cc->names), cmp_thread_name);
	size_t n = 0;
	for (size_t i = 0; i < cc->nnames; i++) {
		if (n && cc->names[n - 1].tid == cc->names[i].tid)
			n--;   /* a later one replaces it */
		cc->names[n++] = cc->names[i];
	}
	cc->nnames = n;
}

static const char *thread_name(const struct conn_count *cc, uint32_t tid)
{
	size_t lo = 0, hi = cc->nnames;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (cc->names[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < cc->nnames && cc->names[lo].tid == tid ? cc->names[lo].name : "";
}

/* Count an IP connect of a thread named @name: @return the switch's count
 * of it for a rule naming @name (every thread whose name starts so). */
static uint64_t count_connect(struct conn_count *cc, const char *name)
{
	size_t i = 0;
	while (i < cc->nper && strcmp(cc->per[i].name, name))
		i++;
	if (i == cc->nper) {
		if (!nrr_grow(&cc->per, cc->nper, &cc->capper, sizeof(*cc->per)))
			return 0;
		snprintf(cc->per[cc->nper].name, sizeof(cc->per[0].name), "%s", name);
		cc->per[cc->nper++].n = 0;
	}
	cc->per[i].n++;
	uint64_t n = 0;
	for (size_t j = 0; j < cc->nper; j++)
		if (!strncmp(cc->per[j].name, name, strlen(name)))
			n += cc->per[j].n;
	return n;
}

/* The count of the first connect on @fd of @stream since it was made
 * (@set: this connect's count @nth when it is the first); 0 unknown. */
static uint64_t first_connect(struct conn_count *cc, uint32_t stream, int64_t fd, uint64_t nth, bool set)
{
	for (size_t i = 0; i < cc->nfirst; i++)
		if (cc->first[i].stream == stream && cc->first[i].fd == fd) {
			if (set && !cc->first[i].nth)
				cc->first[i].nth = nth;
			return cc->first[i].nth;
		}
	if (set && nrr_grow(&cc->first, cc->nfirst, &cc->capfirst, sizeof(*cc->first)))
		cc->first[cc->nfirst++] = (typeof(cc->first[0])){ stream, fd, nth };
	return set ? nth : 0;
}

/* @fd was made again (socket, accept): its next connect is a first one */
static void forget_fd(struct conn_count *cc, uint32_t stream, int64_t fd)
{
	for (size_t i = 0; i < cc->nfirst; i++)
		if (cc->first[i].stream == stream && cc->first[i].fd == fd)
			cc->first[i].nth = 0;
}

static int64_t arg_i(const nrr_call *c, const char *name)
{
	for (uint16_t i = 0; i < c->fn->nargs; i++)
		if (!strcmp(c->fn->args[i].name, name) && (c->present >> i & 1))
			return (int64_t)c->args[i].u;
	return -1;
}

/* Where one of NCCL's lines (@line: its index in the process's warns) was
 * printed: its thread and time key */
struct printed {
	size_t line;
	uint32_t stream;
	uint64_t key;
};

/*
 * The lines of @p that decide a rerun's verdict are those printed before
 * its first failing call returned (@fail_end) and those its failing thread
 * (@fail_stream) printed from then until that thread's next traced call
 * (@report_end): the failure's own report (NCCL's wrapper saying which
 * call failed and why).  What threads print after that (a proxy still
 * serving requests queued before the failure, the teardown) depends on
 * how far the process got before it ended: timing.  Those go to
 * p->later, shown but not compared.  No failing call: every line decides.
 */
static int after_failure(struct proc *p, const struct printed *at, size_t nat, uint32_t fail_stream,
			 uint64_t fail_end, uint64_t report_end)
{
	if (!p->fail[0] || !p->warns.n)
		return 0;
	bool *decides = calloc(p->warns.n, sizeof(*decides));
	if (!decides)
		return -ENOMEM;
	for (size_t i = 0; i < nat; i++)
		if (at[i].key < fail_end || (at[i].stream == fail_stream && at[i].key < report_end))
			decides[at[i].line] = true;
	int rc = 0;
	for (size_t i = 0; i < p->warns.n && !rc; i++)
		if (!decides[i])
			rc = strv_addf(&p->later, "%s", p->warns.v[i]);
	free(decides);
	return rc;
}

static int read_proc(const char *path, struct proc *p, bool want_rules, FILE *err)
{
	nrr_reader *r = NULL;
	nrr_merge *m = NULL;
	nrr_diag d;
	uint64_t *counts = NULL, *entered = NULL;
	size_t *mark = NULL;            /* per slot: first nested index of an open faultable call, or SIZE_MAX */
	struct nested *nest = NULL;
	size_t nnest = 0, capnest = 0, open = 0;
	uint64_t nconnect = 0;          /* connects on IP sockets, as the socket fault switch counts them */
	bool connects_vary = false;     /* a connect failed: how many follow is timing's */
	struct conn_count cc = { 0 };
	bool conn_rule = false;         /* a connect rule was derived (the first failure that is one) */
	long fail_nest = -1;            /* the nested entry that set p->fail, or -1 */
	struct printed *at = NULL;      /* where NCCL's lines were printed */
	size_t nat = 0, capat = 0;
	uint32_t fail_stream = UINT32_MAX;   /* p->fail's thread, its return, */
	uint64_t fail_end = 0, report_end = UINT64_MAX;   /* that thread's next call */
	int rc = nrr_reader_open(&r, path, &d);
	if (rc < 0) {
		char line[1200];
		nrr_diag_format(&d, line, sizeof(line));
		fprintf(err, "ncclrr replay: %s\n", line);
		return rc;
	}
	memset(p, 0, sizeof(*p));
	p->path = strdup(path);
	if (!nrr_replay_threads_ok(r, err)) {
		rc = -E2BIG;
		goto out;
	}
	p->rank = trace_rank(r);
	const char *v = nrr_reader_meta(r, "pid");
	p->pid = v ? strtol(v, NULL, 10) : (long)nrr_reader_info(r)->pid;
	v = nrr_reader_meta(r, "ppid");
	p->ppid = v ? strtol(v, NULL, 10) : 0;
	v = nrr_reader_meta(r, "host");
	snprintf(p->host, sizeof(p->host), "%s", v ? v : "");
	v = nrr_reader_meta(r, "end");
	snprintf(p->end, sizeof(p->end), "%s", v ? v : "");
	v = nrr_reader_meta(r, "nccl_version");
	snprintf(p->nccl, sizeof(p->nccl), "%s", v ? v : "");
	p->start_wall = nrr_reader_info(r)->wall_ns;
	if (nrr_reader_info(r)->end_ts)
		p->end_wall = nrr_reader_wall(r, nrr_reader_info(r)->end_ts);
	/* `ncclrr run ... --timeout S ...`: the launcher stops the job at S */
	v = nrr_reader_meta(r, "argv");
	const char *t = v && p->rank < 0 && strstr(v, " run ") ? strstr(v, " --timeout ") : NULL;
	if (t)
		p->timeout_s = strtod(t + 11, NULL);
	/* distinct keys with their last values: linear however long the
	 * metadata is */
	const nrr_meta_kv *kv;
	size_t nkv = nrr_reader_meta_keys(r, &kv);
	for (size_t i = 0; i < nkv; i++) {
		const char *k = kv[i].key;
		size_t kl = kv[i].key_len;
		if (kl > 7 && !memcmp(k, "thread.", 7) && nrr_grow(&cc.names, cc.nnames, &cc.capnames, sizeof(*cc.names))) {
			cc.names[cc.nnames].tid = (uint32_t)strtoul(k + 7, NULL, 10);
			cc.names[cc.nnames].at = (uint32_t)cc.nnames;
			snprintf(cc.names[cc.nnames].name, sizeof(cc.names[0].name), "%.*s", (int)kv[i].value_len, kv[i].value);
			cc.nnames++;
		}
		if (kl > 4 && !memcmp(k, "env.", 4))
			strv_addf(&p->env, "%.*s=%.*s", (int)(kl - 4), k + 4, (int)kv[i].value_len, kv[i].value);
	}
	sort_names(&cc);

	const nrr_schema *s = nrr_reader_schema(r);
	uint32_t nfns = nrr_schema_nfns(s), nstreams = nrr_reader_info(r)->nstreams;
	size_t nslots = (size_t)nstreams * NRR_MAX_DEPTH + 1;
	counts = calloc((size_t)nfns + 1, sizeof(*counts));
	entered = calloc(nslots, sizeof(*entered));
	mark = malloc(nslots * sizeof(*mark));
	if (!counts || !entered || !mark) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nslots; i++)
		mark[i] = SIZE_MAX;
	rc = nrr_merge_open(&m, &r, 1);
	if (rc < 0)
		goto out;
	const nrr_call *c;
	size_t ri;
	uint64_t last_key = 0;
	while ((rc = nrr_merge_next(m, &c, &ri)) == 0) {
		if (nrr_call_key(c) > last_key)
			last_key = nrr_call_key(c);
		if (c->kind == NRR_CALL_LOG) {
			if (c->log_level == 2 || is_trail(c->log, c->log_len)) {
				char *w = normalize_log(c->log, c->log_len, p->host, p->pid);
				if (!w)
					continue;
				size_t li = p->warns.n;
				for (size_t i = 0; i < p->warns.n && li == p->warns.n; i++)
					if (!strcmp(p->warns.v[i], w))
						li = i;
				if (li < p->warns.n)
					free(w);
				else if (strv_add(&p->warns, w) < 0)
					continue;
				if (nrr_grow(&at, nat, &capat, sizeof(*at)))
					at[nat++] = (struct printed){ li, c->stream, nrr_call_key(c) };
			}
			continue;
		}
		if (!c->fn)
			continue;
		if (c->stream == fail_stream && report_end == UINT64_MAX && nrr_call_key(c) >= fail_end &&
		    (c->phase == NRR_PHASE_CALL || c->phase == NRR_PHASE_ENTER))
			report_end = nrr_call_key(c);
		size_t slot = c->stream < nstreams ? (size_t)c->stream * NRR_MAX_DEPTH +
							    (c->depth < NRR_MAX_DEPTH ? c->depth : 0)
						  : nslots - 1;
		uint32_t id = c->fn->id <= nfns ? c->fn->id : 0;
		bool fa = faultable(c->fn);
		/* (a call that contains others is recorded as ENTER and RESUME) */
		if ((c->phase == NRR_PHASE_CALL || c->phase == NRR_PHASE_RESUME) && c->result &&
		    nrr_call_role(c) == NRR_ROLE_DEV_OPEN)
			p->ib_dev = true;
		uint64_t k = 0;
		long me = -1;   /* this call's nested entry */
		if (c->phase == NRR_PHASE_CALL || c->phase == NRR_PHASE_ENTER) {
			k = ++counts[id];
			if (c->phase == NRR_PHASE_ENTER)
				entered[slot] = k;
			if (open && c->depth > 0) {
				if (!nrr_grow(&nest, nnest, &capnest, sizeof(*nest))) {
					rc = -ENOMEM;
					goto out;
				}
				nest[nnest] = (struct nested){ c->stream, c->depth, id, -1 };
				me = (long)nnest++;
			}
			if (c->phase == NRR_PHASE_ENTER && fa && mark[slot] == SIZE_MAX) {
				mark[slot] = nnest;
				open++;
			}
		} else if (c->phase == NRR_PHASE_RESUME) {
			k = entered[slot];
		}
		/* the last call the fault switch counts (CUDA and NVML ones, and
		 * connects on IP sockets: libncclrr-fake-socket.so counts those)
		 * whose count a rerun reaches too: not a polling call (how often
		 * it asked is timing), not a connect once one was refused (how
		 * often it retried is timing: a rerun that made fewer never
		 * killed the rank) */
		bool ipc = (c->phase == NRR_PHASE_CALL || c->phase == NRR_PHASE_ENTER) && nrr_call_role(c) == NRR_ROLE_CONNECT &&
			   ip_connect(c);
		if (ipc)
			++nconnect;
		if (ipc && c->phase == NRR_PHASE_CALL && c->result < 0 && c->err != EINPROGRESS)
			connects_vary = true;
		int so_err;
		if (c->phase == NRR_PHASE_CALL && nrr_so_error(c, &so_err) && so_err)
			connects_vary = true;   /* an in-progress connect failed */
		bool steady = ipc ? !connects_vary : !(c->fn->flags & NRR_FN_POLL);
		if ((c->phase == NRR_PHASE_CALL || c->phase == NRR_PHASE_ENTER) && ((fa && k) || ipc) && steady) {
			base_name(c->fn->name, p->last.fn, sizeof(p->last.fn));
			snprintf(p->last.call, sizeof(p->last.call), "%s", c->fn->name);
			p->last.nth = fa ? k : nconnect;
			p->last.wall = nrr_reader_wall(r, c->ts);
		}
		if (c->phase == NRR_PHASE_CALL && makes_fd(c))
			forget_fd(&cc, c->stream, c->result);
		/* where it listened: a refused connect is a peer's going only
		 * when that peer had this port */
		uint16_t port;
		if (c->phase == NRR_PHASE_CALL && c->result == 0 && (port = ip_port(c, NRR_ARG_LOCAL)) &&
		    nrr_grow(&p->ports, p->nports, &p->capports, sizeof(*p->ports)))
			p->ports[p->nports++] = port;
		if (ipc && want_rules && p->rank >= 0) {
			const char *tn = thread_name(&cc, nrr_reader_stream(r, c->stream)->tid);
			uint64_t nth = count_connect(&cc, tn);
			uint64_t first = first_connect(&cc, c->stream, arg_i(c, "sockfd"), nth, true);
			/* The first connect that fails for no reason a retry
			 * explains (nrr_call_benign: not a refusal while the
			 * peer does not listen yet) is repeated: a connect
			 * retried on a refused socket (ECONNABORTED, NCCL
			 * 2.22) as the refusal of that socket's first connect,
			 * which the switch makes the kernel's. */
			if (!conn_rule && nrr_call_failed(c) && !nrr_call_benign(c) && tn[0] && !strpbrk(tn, ":,") &&
			    nrr_grow(&p->rules, p->nrules, &p->caprules, sizeof(*p->rules))) {
				bool aborted = c->err == ECONNABORTED && first;
				struct rule *ru = &p->rules[p->nrules++];
				memset(ru, 0, sizeof(*ru));
				snprintf(ru->fn, sizeof(ru->fn), "connect");
				snprintf(ru->call, sizeof(ru->call), "connect");
				snprintf(ru->thread, sizeof(ru->thread), "%s", tn);
				snprintf(ru->res, sizeof(ru->res), "%s", aborted ? "ECONNREFUSED" : strerrorname_np(c->err));
				ru->nth = aborted ? first : nth;
				ru->wall = nrr_reader_wall(r, c->ts + c->dur);
				ru->port = ip_port(c, NRR_ARG_ADDR);
				conn_rule = true;
			}
		}
		if (c->phase == NRR_PHASE_ENTER)
			continue;
		size_t first_nested = SIZE_MAX;
		if (c->phase != NRR_PHASE_CALL && mark[slot] != SIZE_MAX) {
			first_nested = mark[slot];
			mark[slot] = SIZE_MAX;
			open--;
		}
		bool failed = c->phase != NRR_PHASE_INFLIGHT && nrr_call_failed(c);
		char res[160];
		if (failed)
			result_text(c, res, sizeof(res));
		bool is_rule = failed && want_rules && fa && !fake_answers_itself(c) && k;
		/* the outer call failed: what failed inside it is this failure */
		if (failed && fa && first_nested != SIZE_MAX) {
			for (size_t i = first_nested; i < nnest; i++) {
				if (nest[i].stream != c->stream || nest[i].depth <= c->depth)
					continue;
				if (is_rule && counts[nest[i].fn])
					counts[nest[i].fn]--;
				if (nest[i].rule >= 0)
					p->rules[nest[i].rule].dropped = true;
				if (fail_nest == (long)i) {
					p->fail[0] = 0;
					fail_nest = -1;
					fail_stream = UINT32_MAX;
				}
			}
		}
		if (!open) {
			nnest = 0;
			if (fail_nest >= 0)
				fail_nest = -1;
		}
		if (!failed)
			continue;
		if (!p->fail[0] && counts_as_first_failure(c, res)) {
			snprintf(p->fail, sizeof(p->fail), "%s = %s", c->fn->name, res);
			p->fail_wall = nrr_reader_wall(r, nrr_call_key(c));
			fail_nest = me >= 0 && open ? me : -1;
			fail_stream = c->stream;
			fail_end = c->ts + c->dur;
			report_end = UINT64_MAX;
		}
		if (!is_rule)
			continue;
		if (p->rank < 0) {
			fprintf(err, "ncclrr replay: note: %s: %s failed in a process without a rank; the fault switch "
				"cannot aim at it, so the rerun does not repeat it\n", path, c->fn->name);
			continue;
		}
		char base[96];
		base_name(c->fn->name, base, sizeof(base));
		/* The fake's rule names the base; another variant with a counter of
		 * its own reaching the same nth would fail too. */
		for (uint32_t o_id = 1; o_id <= nfns; o_id++) {
			const nrr_fn_schema *o = nrr_schema_fn(s, o_id);
			char ob[96];
			if (!o || o == c->fn || !counts[o_id])
				continue;
			base_name(o->name, ob, sizeof(ob));
			if (!strcmp(ob, base) && !p->variants &&
			    asprintf(&p->variants, "%s and %s were both called; the rule for %s may also fire on %s",
				     c->fn->name, o->name, c->fn->name, o->name) < 0)
				p->variants = NULL;
		}
		if (!nrr_grow(&p->rules, p->nrules, &p->caprules, sizeof(*p->rules))) {
			rc = -ENOMEM;
			goto out;
		}
		struct rule *ru = &p->rules[p->nrules];
		memset(ru, 0, sizeof(*ru));
		snprintf(ru->fn, sizeof(ru->fn), "%s", base);
		snprintf(ru->call, sizeof(ru->call), "%s", c->fn->name);
		/* a verb's rule names its errno (the fake returns it, or NULL
		 * with it); "NULL ENOMEM" is how a trace prints it */
		const char *en = !strcmp(c->fn->domain, "verbs") ? strerrorname_np(verbs_errno(c)) : NULL;
		snprintf(ru->res, sizeof(ru->res), "%s", en ? en : res);
		ru->cap = verbs_capability(c);
		ru->nth = k;
		ru->wall = nrr_reader_wall(r, c->ts + c->dur);
		if (me >= 0 && open)
			nest[me].rule = (long)p->nrules;
		p->nrules++;
	}
	if (last_key)
		p->last_wall = nrr_reader_wall(r, last_key);
	if (rc == NRR_EEOF) {
		rc = after_failure(p, at, nat, fail_stream, fail_end, report_end);
		p->warn_wall = calloc(p->warns.n + 1, sizeof(*p->warn_wall));
		if (!p->warn_wall)
			rc = -ENOMEM;
		for (size_t i = 0; i < nat && !rc; i++)
			if (!p->warn_wall[at[i].line])
				p->warn_wall[at[i].line] = nrr_reader_wall(r, at[i].key);
	} else {
		char line[1200];
		nrr_diag_format(nrr_merge_diag(m), line, sizeof(line));
		fprintf(err, "ncclrr replay: %s\n", line);
	}
out:
	free(at);
	free(counts);
	free(entered);
	free(mark);
	free(nest);
	free(cc.names);
	free(cc.per);
	free(cc.first);
	if (m)
		nrr_merge_close(m);
	nrr_reader_close(r);
	if (rc < 0)
		proc_free(p);
	return rc;
}

/* ------------------------------------------------------- a whole recording */
struct rank_sum {
	int rank;
	const struct proc *root;   /* the rank's first process (its end counts) */
	char fail[320];            /* earliest first failure over its processes */
	uint64_t fail_wall;
	struct strv warns;
	struct strv later;         /* of @warns: every process printed it only after
				    * its failure's report (after_failure()) */
	uint64_t line_wall;        /* when it first printed a line of @warns not in
				    * @later, else 0 */
	bool present;
	/* the first other rank to end badly, and when: a failure of this rank
	 * after that may be the peer's going (a connection closed, a peer's
	 * memory gone), which the rerun brings about by itself */
	int first_other;           /* -1: none ended */
	uint64_t first_other_wall;
	/* the first other rank to fail (its first failing call, else its end;
	 * a rank ended by the timeout: its end), and when: its peers may
	 * notice before it ends (NCCL's proxy answers a connect with the error
	 * at once; real NCCL's rank 4 of traces/nccl_ib/memlock exits 67 ms
	 * after its failure, longer on a loaded machine) */
	int first_failed;          /* -1: none */
	uint64_t first_failed_wall;
	bool consequence;          /* it failed only after first_failed failed */
};

struct run {
	struct proc *procs;
	size_t n, cap;
	struct rank_sum *ranks;    /* indexed by rank */
	int nranks;                /* max rank + 1 */
	const struct proc *launcher; /* an `ncclrr run` stopped at its --timeout, or NULL */
	uint64_t stop_wall;        /* when the job was stopped, else 0: given for a job
				    * this process launched (no launcher in its
				    * traces), else found by mark_teardown() */
	uint64_t start_wall, end_wall; /* the job's first start, last end */
	uint64_t story_wall;       /* the last failure or end that was not the timeout's teardown */
};

static void run_free(struct run *x)
{
	for (size_t i = 0; i < x->n; i++)
		proc_free(&x->procs[i]);
	free(x->procs);
	for (int i = 0; i < x->nranks; i++) {
		strv_free(&x->ranks[i].warns);
		strv_free(&x->ranks[i].later);
	}
	free(x->ranks);
	memset(x, 0, sizeof(*x));
}

static bool killed(const char *end)
{
	return !*end || !strcmp(end, "signal SIGTERM") || !strcmp(end, "signal SIGKILL");
}

/* When a process ended: its recorded end, else its last event (SIGKILL
 * leaves no end). */
static uint64_t ended_at(const struct proc *p)
{
	return p->end_wall ? p->end_wall : p->last_wall;
}

static bool ended_well(const struct proc *p)
{
	return !strcmp(p->end, "exit 0");
}

/*
 * A job that `ncclrr run` stopped at its --timeout (its own trace, the
 * process without a rank, ends "exit 124"): the ranks still running were
 * sent SIGTERM (one after the other by launchers before 2026-11-27, since
 * then all at once while stopped), and one whose peer died first may see
 * the connection close and exit on its own in between.  How such a rank
 * ended says when the teardown reached it, not what the environment
 * answered.  The teardown starts at the launcher's start + its --timeout
 * (meta argv); every rank that ended from then on counts as "killed at
 * the timeout", and so does one killed (SIGTERM, SIGKILL, no end) less
 * than a second before.  A rank killed earlier was killed from outside
 * and keeps its end.  Without the launcher's --timeout, the teardown
 * starts at the first kill.  The rerun's own job is launched in this
 * process (nrr_cluster_run), so its traces hold no launcher: the rerun
 * gives the stop's time itself (@x->stop_wall); otherwise it is found
 * here and goes there (trim_after_stop()).
 */
static void mark_teardown(struct run *x)
{
	uint64_t stop = x->stop_wall, first = 0;
	for (size_t i = 0; i < x->n; i++)
		if (x->procs[i].rank < 0 && !strcmp(x->procs[i].end, "exit 124"))
			x->launcher = &x->procs[i];
	if (!x->launcher && !stop)
		return;
	if (x->launcher && x->launcher->timeout_s > 0 && x->launcher->start_wall)
		stop = x->launcher->start_wall + (uint64_t)(x->launcher->timeout_s * 1e9);
	if (stop)
		first = stop - 1000000000ull;
	for (int r = 0; r < x->nranks && !first; r++) {
		const struct proc *p = x->ranks[r].root;
		if (p && killed(p->end) && ended_at(p) && (!first || ended_at(p) < first))
			first = ended_at(p);
	}
	x->stop_wall = stop ? stop : first;
	for (int r = 0; r < x->nranks; r++) {
		struct proc *p = (struct proc *)x->ranks[r].root;
		if (p && (!first || ended_at(p) >= first) && (killed(p->end) || (first && p->end_wall >= first)))
			snprintf(p->end, sizeof(p->end), "killed at the timeout");
	}
}

/* The rank whose end explains a failure of rank @rank at @wall, or -1:
 * the first other rank that ended badly before it; for a refused connect
 * (@port, else 0) only a rank that had that port: a connect refused at an
 * address no rank that is gone had (a bootstrap root that listens late) is
 * a cause. */
static int explained_by(const struct run *x, int rank, uint64_t wall, uint16_t port)
{
	const struct rank_sum *s = &x->ranks[rank];
	if (s->first_other < 0 || wall < s->first_other_wall)
		return -1;
	if (!port)
		return s->first_other;
	for (size_t i = 0; i < x->n; i++) {
		const struct proc *o = &x->procs[i];
		const struct proc *root = o->rank >= 0 && o->rank != rank ? x->ranks[o->rank].root : NULL;
		if (!root || !ended_at(root) || ended_well(root) || !strcmp(root->end, "exec") || ended_at(root) > wall)
			continue;
		for (size_t k = 0; k < o->nports; k++)
			if (o->ports[k] == port)
				return o->rank;
	}
	return -1;
}

/* a rank the launcher's stop ended (mark_teardown) */
static bool teardown(const struct rank_sum *s)
{
	return s->root && !strcmp(s->root->end, "killed at the timeout");
}

/*
 * What a rank the stop ended did from the stop on is the stop's doing, not
 * the environment's: its peers were killed at that instant, and one whose
 * own signal came later sees their connections close under it (real
 * NCCL's `bootstrap.cc:416 -> 6`, ncclRemoteError, on a rank that was
 * still running when its peers were gone).  Whether a rerun's stop meets
 * the rank at such a point is timing.  So the failing calls, NCCL's lines
 * first printed and the fault rules of such a rank from the stop on are
 * neither compared nor repeated, nor do they make the story longer (the
 * rerun's timeout): the call no longer counts as its first failure, the
 * lines go to @later, the rules are dropped.  @return 0, or -ENOMEM.
 */
static int trim_after_stop(struct run *x)
{
	for (size_t i = 0; x->stop_wall && i < x->n; i++) {
		struct proc *p = &x->procs[i];
		if (p->rank < 0 || !teardown(&x->ranks[p->rank]))
			continue;
		if (p->fail[0] && p->fail_wall >= x->stop_wall) {
			p->fail[0] = 0;
			p->fail_wall = 0;
		}
		for (size_t w = 0; w < p->warns.n; w++)
			if (p->warn_wall[w] >= x->stop_wall && !strv_has(&p->later, p->warns.v[w]) &&
			    strv_addf(&p->later, "%s", p->warns.v[w]) < 0)
				return -ENOMEM;
		for (size_t j = 0; j < p->nrules; j++)
			if (p->rules[j].wall >= x->stop_wall)
				p->rules[j].dropped = true;
	}
	return 0;
}

/* For every rank: which other rank ended first and when, whether this
 * one failed only after that (not when a refused connect no end explains
 * came first), and when the recorded story was over. */
static void mark_consequences(struct run *x)
{
	for (size_t i = 0; i < x->n; i++) {
		const struct proc *p = &x->procs[i];
		if (p->start_wall && (!x->start_wall || p->start_wall < x->start_wall))
			x->start_wall = p->start_wall;
		if (ended_at(p) > x->end_wall)
			x->end_wall = ended_at(p);
	}
	for (int r = 0; r < x->nranks; r++) {
		struct rank_sum *s = &x->ranks[r];
		s->first_other = s->first_failed = -1;
		if (!s->root)
			continue;
		for (int q = 0; q < x->nranks; q++) {
			const struct proc *o = x->ranks[q].root;
			/* only a peer that ended badly can be the cause (in
			 * conn_setup, ranks that finished their part exit 0 early) */
			if (q == r || !o || !ended_at(o) || !strcmp(o->end, "exec") || ended_well(o))
				continue;
			if (s->first_other < 0 || ended_at(o) < s->first_other_wall) {
				s->first_other = q;
				s->first_other_wall = ended_at(o);
			}
			const struct rank_sum *so = &x->ranks[q];
			uint64_t failed = so->fail_wall && so->fail_wall < ended_at(o) && !teardown(so) ? so->fail_wall : ended_at(o);
			if (s->first_failed < 0 || failed < s->first_failed_wall) {
				s->first_failed = q;
				s->first_failed_wall = failed;
			}
		}
		/* when it began to fail: its first failing call, else its end; a
		 * rank the stop ended: its first failing call or line of NCCL's,
		 * whichever came first, else never (CI: rank 8's connect to a
		 * peer that had failed was refused for 20 s, and NCCL's lines
		 * saying so came just before the stop) */
		const struct proc *p = s->root;
		uint64_t when = s->fail_wall ? s->fail_wall : ended_at(p);
		if (teardown(s))
			when = s->fail_wall && (!s->line_wall || s->fail_wall < s->line_wall) ? s->fail_wall : s->line_wall;
		s->consequence = !ended_well(p) && when && s->first_failed >= 0 && when >= s->first_failed_wall;
		for (size_t j = 0; j < p->nrules && s->consequence; j++)
			if (p->rules[j].port && p->rules[j].wall <= when &&
			    explained_by(x, r, p->rules[j].wall, p->rules[j].port) < 0)
				s->consequence = false;
		if (s->fail_wall > x->story_wall)
			x->story_wall = s->fail_wall;
		if (!teardown(s) && ended_at(p) > x->story_wall)
			x->story_wall = ended_at(p);
	}
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int load_run(const char *dir, struct run *x, bool want_rules, FILE *err)
{
	struct dirent **ents;
	int n = scandir(dir, &ents, NULL, by_name);
	if (n < 0) {
		fprintf(err, "ncclrr replay: cannot read the trace directory %s: %s\n", dir, strerror(errno));
		return -errno;
	}
	int rc = 0;
	for (int i = 0; i < n; i++) {
		size_t l = strlen(ents[i]->d_name);
		if (!rc && l > 4 && !strcmp(ents[i]->d_name + l - 4, ".nrt")) {
			char path[PATH_MAX];
			snprintf(path, sizeof(path), "%s/%s", dir, ents[i]->d_name);
			if (!nrr_grow(&x->procs, x->n, &x->cap, sizeof(*x->procs))) {
				rc = -ENOMEM;
			} else {
				rc = read_proc(path, &x->procs[x->n], want_rules, err);
				if (rc == 0)
					x->n++;
			}
		}
		free(ents[i]);
	}
	free(ents);
	if (rc < 0)
		return rc;
	if (!x->n) {
		fprintf(err, "ncclrr replay: %s holds no .nrt trace (record one with 'ncclrr record -o %s -- ...')\n",
			dir, dir);
		return -ENOENT;
	}
	for (size_t i = 0; i < x->n; i++)
		if (x->procs[i].rank >= x->nranks)
			x->nranks = x->procs[i].rank + 1;
	x->ranks = calloc((size_t)x->nranks + 1, sizeof(*x->ranks));
	if (!x->ranks)
		return -ENOMEM;
	for (size_t i = 0; i < x->n; i++) {
		const struct proc *p = &x->procs[i];
		if (p->rank < 0)
			continue;
		struct rank_sum *s = &x->ranks[p->rank];
		s->rank = p->rank;
		s->present = true;
		/* the root: a process whose parent is not of the same rank */
		bool child = false;
		for (size_t j = 0; j < x->n; j++)
			if (j != i && x->procs[j].rank == p->rank && x->procs[j].pid == p->ppid)
				child = true;
		if (!child && (!s->root || p->pid < s->root->pid))
			s->root = p;
	}
	for (int r = 0; r < x->nranks; r++)
		if (x->ranks[r].present && !x->ranks[r].root)   /* parents form a cycle: pid reuse */
			for (size_t i = 0; i < x->n; i++)
				if (x->procs[i].rank == r && !x->ranks[r].root)
					x->ranks[r].root = &x->procs[i];
	mark_teardown(x);
	if (trim_after_stop(x) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < x->n; i++) {
		const struct proc *p = &x->procs[i];
		if (p->rank < 0)
			continue;
		struct rank_sum *s = &x->ranks[p->rank];
		if (p->fail[0] && (!s->fail[0] || p->fail_wall < s->fail_wall)) {
			snprintf(s->fail, sizeof(s->fail), "%s", p->fail);
			s->fail_wall = p->fail_wall;
		}
		for (size_t w = 0; w < p->warns.n; w++) {
			if (!strv_has(&s->warns, p->warns.v[w]))
				strv_addf(&s->warns, "%s", p->warns.v[w]);
			if (!strv_has(&p->later, p->warns.v[w]) && (!s->line_wall || p->warn_wall[w] < s->line_wall))
				s->line_wall = p->warn_wall[w];
		}
	}
	/* a line decides for the rank when it decides for one of its processes */
	for (int r = 0; r < x->nranks; r++) {
		struct rank_sum *s = &x->ranks[r];
		for (size_t w = 0; w < s->warns.n; w++) {
			bool decides = false;
			for (size_t i = 0; i < x->n && !decides; i++)
				decides = x->procs[i].rank == r && strv_has(&x->procs[i].warns, s->warns.v[w]) &&
					  !strv_has(&x->procs[i].later, s->warns.v[w]);
			if (!decides && strv_addf(&s->later, "%s", s->warns.v[w]) < 0)
				return -ENOMEM;
		}
	}
	mark_consequences(x);
	return 0;
}

/* ------------------------------------------------------- the environment */
/* Set by `ncclrr run` for every rank (placement, the fake runtime), by
 * `ncclrr record` (the tracer), or describing the real cluster's own
 * launcher, which the virtual cluster replaces (NRR_ENV_LAUNCH): never
 * given back; but the fake hardware's settings (NRR_ENV_FABRIC) are the
 * machine the job failed on. */
static bool env_is_ours(const char *kv)
{
	unsigned f = nrr_env_flags(kv, strcspn(kv, "="));
	if ((f & NRR_ENV_LAUNCH) && !(f & NRR_ENV_FABRIC))
		return true;
	/* ncclrr run's default: a rank that had it needs nothing */
	return !strcmp(kv, "NCCL_SOCKET_IFNAME=lo");
}

/* The libraries' settings the tracer records (NRR_ENV_SETTING) and the
 * fake hardware's (NRR_ENV_FABRIC): a
 * variable of these that this environment has and the recording's rank did
 * not have was unset there. */
static bool env_family_recorded(const char *k)
{
	return (nrr_env_flags(k, strlen(k)) & (NRR_ENV_SETTING | NRR_ENV_FABRIC)) != 0;
}

const char *nrr_rerun_env_refused(const char *kv)
{
	size_t kl = strcspn(kv, "=");
	char k[128];
	if (kl >= sizeof(k))
		return "not a variable of NCCL, CUDA, NVIDIA, UCX, PyTorch's NCCL or the fake fabric";
	memcpy(k, kv, kl);
	k[kl] = 0;
	if (!env_family_recorded(k))
		return "not a variable of NCCL, CUDA, NVIDIA, UCX, PyTorch's NCCL or the fake fabric";
	/* plugins, injection libraries, module directories: code to load */
	static const char *const code[] = { "PLUGIN", "INJECTION", "PATH", "_DIR" };
	for (size_t i = 0; i < sizeof(code) / sizeof(code[0]); i++)
		if (strstr(k, code[i]))
			return "it chooses code to load";
	const char *v = kv[kl] ? kv + kl + 1 : "";
	if (strchr(v, '/'))
		return "its value is a path";
	if (strstr(v, ".so"))
		return "its value names a library";
	return NULL;
}

static const char *env_in(const struct strv *e, const char *k, size_t kl)
{
	for (size_t i = 0; i < e->n; i++)
		if (!strncmp(e->v[i], k, kl) && e->v[i][kl] == '=')
			return e->v[i] + kl + 1;
	return NULL;
}

/* A rank's recorded value of @k, unless it is refused (NULL then too). */
static const char *env_given(const struct proc *p, const char *k, size_t kl)
{
	const char *v = p ? env_in(&p->env, k, kl) : NULL;
	return v && !nrr_rerun_env_refused(v - kl - 1) ? v : NULL;
}

/* The --env / --unset / --rank-env options that give each rank back its
 * recorded environment: only what nrr_rerun_env_refused() lets through. */
static int env_options(const struct run *x, struct strv *args, FILE *err)
{
	extern char **environ;
	struct strv keys = { 0 }, refused = { 0 };
	for (int r = 0; r < x->nranks; r++) {
		const struct proc *p = x->ranks[r].root;
		for (size_t i = 0; p && i < p->env.n; i++) {
			const char *kv = p->env.v[i];
			size_t kl = strcspn(kv, "=");
			if (env_is_ours(kv))
				continue;
			const char *why = nrr_rerun_env_refused(kv);
			if (why) {
				char name[128];
				snprintf(name, sizeof(name), "%.*s", (int)kl, kv);
				const char *now = getenv(name);
				/* (one this environment has the same is the rerun's anyway) */
				if (!strv_has(&refused, kv) && !(now && !strcmp(now, kv + kl + 1)))
					fprintf(err, "ncclrr replay: note: the recorded %s (rank %d) is not given back: %s; "
						"a trace is data, never code: set it yourself to have it\n", kv, r, why);
				strv_addf(&refused, "%s", kv);
				continue;
			}
			char *k = strndup(kv, kl);
			if (k && !strv_has(&keys, k))
				strv_add(&keys, k);
			else
				free(k);
		}
	}
	for (char **e = environ; e && *e; e++) {
		size_t kl = strcspn(*e, "=");
		char *k = strndup(*e, kl);
		if (k && env_family_recorded(k) && !env_is_ours(*e) && !nrr_rerun_env_refused(*e) && !strv_has(&keys, k))
			strv_add(&keys, k);
		else
			free(k);
	}
	/* A recording in which no process opened an IB device had no NET/IB
	 * (a machine without HCAs, or one recorded before the fake verbs):
	 * the rerun keeps NCCL off the fake cluster's NICs too, unless the
	 * recording says what NCCL_IB_DISABLE was. */
	bool ib = false, ib_said = false;
	for (size_t i = 0; i < x->n; i++)
		ib |= x->procs[i].ib_dev;
	for (int r = 0; r < x->nranks; r++)
		ib_said |= x->ranks[r].root && env_given(x->ranks[r].root, "NCCL_IB_DISABLE", 15);
	if (!ib && !ib_said) {
		fprintf(err, "ncclrr replay: note: no process of the recording opened an IB device: the rerun "
			"keeps NCCL off NET/IB (NCCL_IB_DISABLE=1)\n");
		strv_addf(args, "--env"), strv_addf(args, "NCCL_IB_DISABLE=1");
	}
	for (size_t i = 0; i < keys.n; i++) {
		const char *k = keys.v[i];
		size_t kl = strlen(k);
		if (!ib && !ib_said && !strcmp(k, "NCCL_IB_DISABLE"))
			continue;
		const char *now = getenv(k), *first = NULL;
		bool same = true, any = false, all = true;
		for (int r = 0; r < x->nranks; r++) {
			if (!x->ranks[r].root)
				continue;
			const char *v = env_given(x->ranks[r].root, k, kl);
			if (v && strstr(v, "<redacted>")) {
				fprintf(err, "ncclrr replay: note: rank %d's %s was redacted in the recording; the rerun "
					"has this environment's value\n", r, k);
				v = now;
			}
			if (!v)
				all = false;
			if (v && !any)
				first = v;
			any |= v != NULL;
			if (!v || (first && strcmp(v, first)))
				same = false;
		}
		if (all && same && any) {
			if (!now || strcmp(now, first))
				strv_addf(args, "--env"), strv_addf(args, "%s=%s", k, first);
			continue;
		}
		if (now)
			strv_addf(args, "--unset"), strv_addf(args, "%s", k);
		for (int r = 0; r < x->nranks; r++) {
			const char *v = env_given(x->ranks[r].root, k, kl);
			if (v && strstr(v, "<redacted>"))
				v = now;
			if (v)
				strv_addf(args, "--rank-env"), strv_addf(args, "%d:%s=%s", r, k, v);
		}
	}
	strv_free(&refused);
	strv_free(&keys);
	return 0;
}

/* ------------------------------------------------------- running it */
static int find_ncclrr(const struct nrr_rerun_opts *o, char *buf, size_t len, FILE *err)
{
	if (o->ncclrr) {
		snprintf(buf, len, "%s", o->ncclrr);
		return 0;
	}
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0) {
		fprintf(err, "ncclrr replay: cannot read /proc/self/exe: %s\n", strerror(errno));
		return -ENOENT;
	}
	self[n] = 0;
	char *slash = strrchr(self, '/');
	if (slash)
		*slash = 0;
	snprintf(buf, len, "%s/ncclrr", self);
	if (access(buf, X_OK)) {
		fprintf(err, "ncclrr replay: no ncclrr executable at %s (the rerun records and runs through it)\n", buf);
		return -ENOENT;
	}
	return 0;
}

static double rerun_timeout(const struct run *x, FILE *err);

/* Record and run the job on the virtual cluster (nrr_cluster_run): the
 * recording's ranks on @topo, in @outdir, with @args's --env / --unset /
 * --rank-env.  The job's output goes with the notes to @err (the verdict
 * alone goes to out).  When its timeout stopped it, *@stop is the
 * wall-clock ns at which it was stopped (mark_teardown).  @return
 * the job's status (NRR_LAUNCH_*), or -1. */
static int run_job(const struct nrr_rerun_opts *o, const struct run *rec, const struct strv *args, const char *topo,
		   const char *outdir, const char *nccl, const char *ncclrr, uint64_t *stop, FILE *err)
{
	size_t n = args->n;
	char **env = calloc(n + 1, sizeof(char *)), **unset = calloc(n + 1, sizeof(char *));
	char **rank_env = calloc(n + 1, sizeof(char *));
	struct nrr_cluster_result *res = calloc(1, sizeof(*res));
	char plugin[PATH_MAX + 32];
	char *launcher_env[] = { plugin, NULL };
	int st = -1;
	if (!env || !unset || !rank_env || !res)
		goto out;
	struct nrr_cluster_spec s = {
		.topo = topo,
		.nranks = rec->nranks,
		.timeout_s = o->timeout_s > 0 ? o->timeout_s : rerun_timeout(rec, err),
		.nccl = *nccl ? nccl : NULL,
		.env = env,
		.unset = unset,
		.rank_env = rank_env,
		.argv = o->argv,
		.out = err,
		.err = err,
		.report = err,
	};
	for (size_t i = 0; i + 1 < n; i += 2) {
		if (!strcmp(args->v[i], "--env"))
			env[s.n_env++] = args->v[i + 1];
		else if (!strcmp(args->v[i], "--unset"))
			unset[s.n_unset++] = args->v[i + 1];
		else if (!strcmp(args->v[i], "--rank-env"))
			rank_env[s.n_rank_env++] = args->v[i + 1];
	}
	if (o->net_plugin) {
		snprintf(plugin, sizeof(plugin), "NCCL_NET_PLUGIN=%s", o->net_plugin);
		s.launcher_env = launcher_env;
		s.n_launcher_env = 1;
	}
	struct nrr_record_opts ro = { .dir = outdir, .warn = err };
	s.record = &ro;
	/* what it runs, as commands to type */
	nrr_cluster_spec_print(err, "ncclrr replay: rerun:", ncclrr, &s);
	fprintf(err, "ncclrr replay: the rerun is recorded in %s\n", outdir);
	fflush(NULL);
	struct timespec t0;
	clock_gettime(CLOCK_REALTIME, &t0);
	st = nrr_cluster_run(&s, res);
	if (st == NRR_LAUNCH_TIMEOUT)
		*stop = (uint64_t)t0.tv_sec * 1000000000ull + (uint64_t)t0.tv_nsec + (uint64_t)(s.timeout_s * 1e9);
	if (st == NRR_LAUNCH_SETUP && res->error[0])
		fprintf(err, "ncclrr run: %s\n", res->error);
out:
	free(env);
	free(unset);
	free(rank_env);
	free(res);
	return st;
}

/* ------------------------------------------------------- the rules */
/* The fake keeps this many NCCLRR_FAULT rules, of this many characters
 * (replayer/fake/fake_common.c parse_faults). */
#define FAKE_MAX_RULES 32
#define FAKE_MAX_SPEC 4095

struct cand {
	const struct rule *r;
	int rank;
	bool cap;              /* a capability answer (NOT_SUPPORTED ...) */
	bool done;
};

/*
 * The NCCLRR_FAULT value: every rule that is a cause.  A failure of a rank
 * after another rank had ended is taken as a consequence of that end (the
 * rerun's own peers end too: a cuIpcOpenMemHandle of memory whose
 * exporter exited, a proxy call to a rank that is gone) and is not
 * repeated.  A rule every rank has becomes one rule with rank=*.  Rules
 * that are failures come before capability answers, so that they are kept
 * when the fake's limits are reached.  @return a string to free ("" when
 * there is nothing to inject), or NULL (ENOMEM).
 */
static bool same_rule(const struct rule *a, const struct rule *b)
{
	return !strcmp(a->fn, b->fn) && a->nth == b->nth && !strcmp(a->res, b->res) && !strcmp(a->thread, b->thread);
}

static char *fault_spec(const struct run *x, FILE *err)
{
	struct cand *v = NULL;
	size_t n = 0, cap = 0;
	int ranks = 0;
	for (int r = 0; r < x->nranks; r++)
		ranks += x->ranks[r].root != NULL;
	for (size_t i = 0; i < x->n; i++) {
		const struct proc *p = &x->procs[i];
		size_t kept = 0;
		if (p->rank < 0)
			continue;
		for (size_t j = 0; j < p->nrules; j++) {
			const struct rule *ru = &p->rules[j];
			if (ru->dropped)
				continue;
			int by = explained_by(x, p->rank, ru->wall, ru->port);
			if (by >= 0) {
				fprintf(err, "ncclrr replay: note: rank %d's %s = %s (call %llu) came after rank %d had "
					"ended: taken as a consequence of that, not repeated\n", p->rank, ru->call, ru->res,
					(unsigned long long)ru->nth, by);
				continue;
			}
			if (!nrr_grow(&v, n, &cap, sizeof(*v))) {
				free(v);
				return NULL;
			}
			v[n++] = (struct cand){ ru, p->rank, ru->cap || capability_answer(ru->res), false };
			kept++;
		}
		if (kept && x->ranks[p->rank].root != p)
			fprintf(err, "ncclrr replay: note: %s (rank %d) is not the rank's first process; the fault switch "
				"counts per process and aims by rank, so its rules may fire in another process of rank %d\n",
				p->path, p->rank, p->rank);
		if (kept && p->variants)
			fprintf(err, "ncclrr replay: note: %s: %s\n", p->path, p->variants);
	}
	struct strv out = { 0 };
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < n; i++) {
			if (v[i].done || v[i].cap != (pass == 1))
				continue;
			int same = 0;
			for (size_t j = i; j < n; j++)
				if (same_rule(v[j].r, v[i].r))
					same++;   /* one rule per rank and call: same K, same rank only once */
			bool all = ranks > 1 && same == ranks;
			for (size_t j = i; all && j < n; j++)
				if (same_rule(v[j].r, v[i].r))
					v[j].done = true;
			v[i].done = true;
			char rk[16];
			snprintf(rk, sizeof(rk), all ? "*" : "%d", v[i].rank);
			strv_addf(&out, "%s:rank=%s:nth=%llu:%s%s%s%s", v[i].r->fn, rk, (unsigned long long)v[i].r->nth,
				  v[i].r->thread[0] ? "thread=" : "", v[i].r->thread, v[i].r->thread[0] ? ":" : "",
				  v[i].r->res);
		}
	}
	free(v);
	/* A rank killed outright (its trace has no end while most have one)
	 * is killed again, at its first call into a fake library after its
	 * last one the fault switch counts (SIGKILL_AFTER): that call returned
	 * in the recording, so the signal came after it.  (Killed at that
	 * call, traces/nccl_ib/killed's rank 3 died at a bootstrap connect
	 * near the end of its init instead of at the allocation 1 s later, and
	 * its peers waited in init for the rest of the rerun.) */
	size_t without = 0, procs = 0;
	for (size_t i = 0; i < x->n; i++) {
		procs++;
		without += !x->procs[i].end[0];
	}
	for (size_t i = 0; nrr_no_end_means_killed(without, procs) && i < x->n; i++) {
		const struct proc *p = &x->procs[i];
		if (p->rank < 0 || p->end[0] || !p->last.nth)
			continue;
		fprintf(err, "ncclrr replay: note: rank %d was killed outright (no end recorded): the rerun kills it at "
			"its first call after its last counted call, %s #%llu\n", p->rank, p->last.call,
			(unsigned long long)p->last.nth);
		strv_addf(&out, "%s:rank=%d:nth=%llu:SIGKILL_AFTER", p->last.fn, p->rank, (unsigned long long)p->last.nth);
	}
	size_t keep = 0, len = 0;
	for (; keep < out.n && keep < FAKE_MAX_RULES; keep++) {
		size_t l = strlen(out.v[keep]) + (keep ? 1 : 0);
		if (len + l > FAKE_MAX_SPEC)
			break;
		len += l;
	}
	if (keep < out.n)
		fprintf(err, "ncclrr replay: warning: %zu fault rules derived, the fake runtime takes %d of at most %d "
			"characters: the last %zu (from '%s' on) are not repeated\n", out.n, FAKE_MAX_RULES,
			FAKE_MAX_SPEC, out.n - keep, out.v[keep]);
	char *spec = malloc(len + 1);
	if (spec) {
		spec[0] = 0;
		for (size_t i = 0; i < keep; i++) {
			if (i)
				strcat(spec, ";");
			strcat(spec, out.v[i]);
		}
	}
	strv_free(&out);
	return spec;
}

/* ------------------------------------------------------- the verdict */
static void describe(char *buf, size_t len, const struct rank_sum *s)
{
	const char *end = s->root ? s->root->end : "";
	if (!*end)
		end = "killed from outside (no end recorded)";
	else if (killed(end) && !teardown(s))
		end = !strcmp(end, "signal SIGKILL") ? "killed from outside (SIGKILL)" : "killed from outside (SIGTERM)";
	snprintf(buf, len, "%s, %s", s->fail[0] ? s->fail : "no failing call", end);
}

/* Ranks killed from outside before any teardown: no recorded answer made
 * that happen, so the rerun cannot (it sends no signal). */
static void note_outside_kills(const struct run *x, FILE *err)
{
	for (int r = 0; r < x->nranks; r++) {
		const struct rank_sum *s = &x->ranks[r];
		if (!s->root || !killed(s->root->end) || teardown(s))
			continue;
		if (!*s->root->end && s->root->last.nth)
			continue;   /* killed outright: fault_spec kills it again */
		fprintf(err, "ncclrr replay: note: rank %d was killed from outside %.1f s into the job (%s); a signal "
			"is not an answer the trace can give back and the rerun sends none, so rank %d and the ranks "
			"that failed because it was gone will not end as recorded\n", r,
			(double)(ended_at(s->root) - x->start_wall) / 1e9,
			*s->root->end ? s->root->end : "SIGKILL leaves no end", r);
	}
}

/* NCCL's lines of one rank that only one run has, at most @max */
static void print_lines(FILE *out, const char *tag, const struct strv *v, const struct strv *other, size_t max)
{
	size_t shown = 0, more = 0;
	for (size_t i = 0; i < v->n; i++) {
		if (other && strv_has(other, v->v[i]))
			continue;
		if (shown < max) {
			fprintf(out, "  %s: %s\n", tag, v->v[i]);
			shown++;
		} else {
			more++;
		}
	}
	if (more)
		fprintf(out, "  %s: ... and %zu more\n", tag, more);
}

/*
 * One line per recorded rank:
 *   rank R: reproduced: FIRST FAILING CALL, END
 *   rank R: NOT reproduced: recorded ..., rerun ...
 *   rank R: timing: recorded ..., rerun ... (after rank Q failed)
 * then, indented, NCCL's lines (WARN, `file.cc:N -> R`): those seen in
 * both runs, or the ones only one run has.  The lines that decide are
 * those before a rank's failure and its report (after_failure()); each
 * must be printed by the other run.  "timing": the rank failed
 * after another rank had failed in one run, and in the other it did the
 * same or waited until the timeout; which peers notice a rank's end, and
 * how, is decided by timing, not by the recorded answers.  Such ranks do
 * not count against the verdict.  With another NCCL than the recorded
 * one (@other_nccl) NCCL's lines are shown but do not decide: its files,
 * lines and words change between releases; the end and the first failing
 * call do.  @return the number of ranks NOT reproduced.
 */
static int compare(const struct run *rec, const struct run *re, bool other_nccl, FILE *out, int *nsame,
		   int *ntiming, const struct nrr_rerun_opts *o)
{
	const char *cb = o->c_bad ? o->c_bad : "", *cg = o->c_good ? o->c_good : "", *ce = o->c_end ? o->c_end : "";
	int bad = 0;
	for (int r = 0; r < rec->nranks; r++) {
		const struct rank_sum *a = &rec->ranks[r];
		if (!a->present)
			continue;
		char da[512], db[512];
		describe(da, sizeof(da), a);
		const struct rank_sum *b = r < re->nranks && re->ranks[r].present ? &re->ranks[r] : NULL;
		if (!b) {
			fprintf(out, "rank %d: %sNOT reproduced%s: recorded %s, rerun has no trace of rank %d\n", r, cb, ce, da, r);
			bad++;
			continue;
		}
		describe(db, sizeof(db), b);
		/* a line that decides in one run must be printed in the other */
		size_t missing = 0, extra = 0;
		for (size_t i = 0; i < a->warns.n; i++)
			missing += !strv_has(&a->later, a->warns.v[i]) && !strv_has(&b->warns, a->warns.v[i]);
		for (size_t i = 0; i < b->warns.n; i++)
			extra += !strv_has(&b->later, b->warns.v[i]) && !strv_has(&a->warns, b->warns.v[i]);
		bool same = !strcmp(da, db) && ((!missing && !extra) || other_nccl);
		bool timing = (a->consequence && (b->consequence || teardown(b))) ||
			      (b->consequence && teardown(a));
		int after = a->consequence ? a->first_failed : b->first_failed;
		if (same) {
			(*nsame)++;
			if (a->consequence)
				fprintf(out, "rank %d: %sreproduced%s (after rank %d failed): %s\n", r, cg, ce, after, da);
			else
				fprintf(out, "rank %d: %sreproduced%s: %s\n", r, cg, ce, da);
			for (size_t i = 0; i < a->warns.n; i++)
				if (strv_has(&b->warns, a->warns.v[i]))
					fprintf(out, "  NCCL: %s\n", a->warns.v[i]);
			/* another NCCL says it in other words */
			print_lines(out, "NCCL, recorded only", &a->warns, &b->warns, 8);
			print_lines(out, "NCCL, rerun only", &b->warns, &a->warns, 8);
			continue;
		}
		if (timing) {
			(*ntiming)++;
			fprintf(out, "rank %d: timing: recorded %s, rerun %s (after rank %d failed; not counted)\n", r, da,
				db, after);
		} else {
			bad++;
			fprintf(out, "rank %d: %sNOT reproduced%s: recorded %s, rerun %s\n", r, cb, ce, da, db);
		}
		size_t both = 0;
		for (size_t i = 0; i < a->warns.n; i++)
			both += strv_has(&b->warns, a->warns.v[i]);
		if (both)
			fprintf(out, "  NCCL: %zu line(s) in both runs\n", both);
		print_lines(out, "NCCL, recorded only", &a->warns, &b->warns, 8);
		print_lines(out, "NCCL, rerun only", &b->warns, &a->warns, 8);
	}
	for (int r = rec->nranks; r < re->nranks; r++)
		if (re->ranks[r].present)
			fprintf(out, "rank %d: not in the recording (the rerun has more ranks)\n", r);
	return bad;
}

/* The rerun's --timeout when none is given: a job that was stopped (by
 * `ncclrr run --timeout`, or ranks killed) ran on after its story was
 * over, waiting: twice the story plus 15 s lets the rerun get as far on a
 * machine that may be slower than the recording's (1.5 times plus 10 s
 * was once short: a 16-rank NCCL init took 4 s recorded and over 16 s in
 * a rerun).  A
 * job that ended by itself ends by itself again: twice its length plus
 * 10 s only bounds a rerun that hangs where the recording did not. */
static double rerun_timeout(const struct run *x, FILE *err)
{
	bool stopped = x->launcher != NULL;
	for (int r = 0; r < x->nranks; r++)
		if (x->ranks[r].root && killed(x->ranks[r].root->end))
			stopped = true;
	double len = x->end_wall > x->start_wall ? (double)(x->end_wall - x->start_wall) / 1e9 : 0;
	double story = x->story_wall > x->start_wall ? (double)(x->story_wall - x->start_wall) / 1e9 : len;
	double t = stopped ? story * 2 + 15 : len * 2 + 10;
	if (t < 10)
		t = 10;
	t = (double)(long)(t + 0.999);
	if (stopped)
		fprintf(err, "ncclrr replay: the recorded job ran %.1f s and was stopped; what it did ended at %.1f s: "
			"rerun timeout %.0f s (--timeout S to change)\n", len, story, t);
	else
		fprintf(err, "ncclrr replay: the recorded job ran %.1f s and ended by itself: rerun timeout %.0f s "
			"(--timeout S to change)\n", len, t);
	return t;
}

/* The NCCL version the job's ranks said they ran (meta nccl_version), ""
 * when none did */
static const char *run_nccl(const struct run *x)
{
	for (size_t i = 0; i < x->n; i++)
		if (x->procs[i].rank >= 0 && x->procs[i].nccl[0])
			return x->procs[i].nccl;
	return "";
}

/* The NCCL the rerun loads (`ncclrr run --nccl`, into @buf; "" for ncclrr
 * run's default): --nccl, else the recorded version when the fake cluster
 * has it */
static void rerun_nccl(const struct nrr_rerun_opts *o, const char *rec_nccl, char *buf, size_t len, FILE *err)
{
	char dir[PATH_MAX], why[1024];
	buf[0] = 0;
	if (o->nccl) {
		snprintf(buf, len, "%s", o->nccl);
		if (nrr_launch_find_nccl_dir(o->nccl, dir, sizeof(dir), why, sizeof(why)) == 0)
			fprintf(err, "ncclrr replay: the rerun loads NCCL %s from %s (--nccl; recorded with %s)\n", o->nccl,
				dir, *rec_nccl ? rec_nccl : "an NCCL that never said its version");
		return;   /* not found: ncclrr run says why */
	}
	if (!*rec_nccl)
		return;
	if (nrr_launch_find_nccl_dir(rec_nccl, dir, sizeof(dir), why, sizeof(why)) == 0) {
		snprintf(buf, len, "%s", rec_nccl);
		fprintf(err, "ncclrr replay: the rerun loads NCCL %s, as recorded, from %s (--nccl VERSION|PATH for "
			"another)\n", rec_nccl, dir);
	} else {
		fprintf(err, "ncclrr replay: note: recorded with NCCL %s, which the fake cluster does not have (%s); the "
			"rerun loads ncclrr run's default ('ncclrr nccl list' shows what there is)\n", rec_nccl, why);
	}
}

int nrr_rerun(const struct nrr_rerun_opts *o)
{
	FILE *out = o->out ? o->out : stdout, *err = o->err ? o->err : stderr;
	struct run rec = { 0 }, re = { 0 };
	struct strv args = { 0 };
	int ret = NRR_RERUN_ERROR;
	char ncclrr[PATH_MAX], outdir[PATH_MAX], topo[PATH_MAX];
	struct timespec t0, t1;
	if (!o->dir || !o->argv || !o->argv[0]) {
		fprintf(err, "ncclrr replay: --rerun needs the recording's directory and the program to run\n");
		return NRR_RERUN_ERROR;
	}
	if (find_ncclrr(o, ncclrr, sizeof(ncclrr), err) < 0)
		return NRR_RERUN_ERROR;
	if (load_run(o->dir, &rec, true, err) < 0)
		goto end;
	if (!rec.nranks) {
		fprintf(err, "ncclrr replay: no trace in %s says which rank it was (metadata rank, env.RANK, ...); "
			"record the job's ranks, not only its launcher\n", o->dir);
		goto end;
	}

	/* the cluster: given, or the one the recording ran on */
	const char *rec_topo = NULL;
	for (int r = 0; r < rec.nranks && !rec_topo; r++)
		if (rec.ranks[r].root)
			rec_topo = env_in(&rec.ranks[r].root->env, "NCCLRR_TOPO", 11);
	char why[2 * PATH_MAX + 256];
	if (o->topo) {
		snprintf(topo, sizeof(topo), "%s", o->topo);
	} else if (nrr_run_cluster(o->dir, rec_topo, topo, sizeof(topo), why, sizeof(why)) < 0) {
		fprintf(err, "ncclrr replay: %s; pass the cluster to rerun on with --topo FILE (e.g. topo/2node_16gpu.xml)\n",
			why);
		goto end;
	}

	if (o->outdir) {
		snprintf(outdir, sizeof(outdir), "%s", o->outdir);
	} else {
		const char *t = getenv("TMPDIR");
		snprintf(outdir, sizeof(outdir), "%s/ncclrr-rerun.XXXXXX", t && *t ? t : "/tmp");
		if (!mkdtemp(outdir)) {
			fprintf(err, "ncclrr replay: cannot make a directory for the rerun's trace (%s): %s\n", outdir,
				strerror(errno));
			goto end;
		}
	}

	char nccl[PATH_MAX];
	const char *rec_nccl = run_nccl(&rec);
	rerun_nccl(o, rec_nccl, nccl, sizeof(nccl), err);
	note_outside_kills(&rec, err);
	char *fault = fault_spec(&rec, err);
	if (!fault)
		goto end;

	double rec_len = rec.end_wall > rec.start_wall ? (double)(rec.end_wall - rec.start_wall) / 1e9 : 0;
	/* the job's --env / --unset / --rank-env, as env_options gives them */
	if (*fault)
		strv_addf(&args, "--env"), strv_addf(&args, "NCCLRR_FAULT=%s", fault);
	else
		strv_addf(&args, "--unset"), strv_addf(&args, "NCCLRR_FAULT");
	free(fault);
	env_options(&rec, &args, err);
	if (!args.v)
		goto end;
	/* a library to load comes from the user, never from the trace */
	const char *rec_plugin = NULL;
	for (int r = 0; r < rec.nranks && !rec_plugin; r++)
		if (rec.ranks[r].root)
			rec_plugin = env_in(&rec.ranks[r].root->env, "NCCLRR_NET_PLUGIN", 17);
	if (o->net_plugin)
		fprintf(err, "ncclrr replay: the rerun's NCCL loads the net plugin %s (--net-plugin)\n", o->net_plugin);
	else if (rec_plugin)
		fprintf(err, "ncclrr replay: note: the recording used the net plugin %s; the rerun loads none (NCCL's "
			"own nets): a trace never chooses a library, pass --net-plugin PATH to load one\n", rec_plugin);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	int st = run_job(o, &rec, &args, topo, outdir, nccl, ncclrr, &re.stop_wall, err);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (st < 0) {
		fprintf(err, "ncclrr replay: the rerun could not be started\n");
		goto end;
	}
	if (load_run(outdir, &re, false, err) < 0) {
		fprintf(err, "ncclrr replay: the rerun (exit %d) left no readable trace in %s\n", st, outdir);
		goto end;
	}
	int same = 0, timing = 0, nrec = 0;
	for (int r = 0; r < rec.nranks; r++)
		nrec += rec.ranks[r].present;
	const char *re_nccl = run_nccl(&re);
	int bad = compare(&rec, &re, *re_nccl && *rec_nccl && strcmp(re_nccl, rec_nccl), out, &same, &timing, o);
	char vers[96] = "";
	if (*re_nccl && strcmp(re_nccl, rec_nccl))
		snprintf(vers, sizeof(vers), " with NCCL %s (recorded with %s)", re_nccl, *rec_nccl ? rec_nccl : "?");
	else if (*re_nccl)
		snprintf(vers, sizeof(vers), " with NCCL %s", re_nccl);
	fprintf(out, "rerun: %d of %d ranks reproduced, %d timing, %d NOT reproduced%s; the rerun took %.1f s (recorded "
		"%.1f s)\n", same, nrec, timing, bad, vers,
		(double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9, rec_len);
	ret = bad ? NRR_RERUN_DIFFERENT : NRR_RERUN_REPRODUCED;
	fflush(out);
end:
	strv_free(&args);
	run_free(&rec);
	run_free(&re);
	return ret;
}
