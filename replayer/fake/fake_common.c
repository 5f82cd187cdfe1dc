/* SPDX-License-Identifier: MIT */
/* fake_common.c - virtual host, call counters, fault switch, stats file. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "fake_common.h"

int fake_debug;

void fake_log(const char *fmt, ...)
{
	char buf[1024];
	int n = snprintf(buf, sizeof(buf), "ncclrr-fake[%d]: ", (int)getpid());
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	va_end(ap);
	size_t len = strlen(buf);
	if (len < sizeof(buf) - 1 && (len == 0 || buf[len - 1] != '\n'))
		buf[len++] = '\n';
	ssize_t w = write(2, buf, len);
	(void)w;
}

/* ---- the virtual host ---------------------------------------------------- */
static struct fake_host the_host;
static pthread_once_t host_once = PTHREAD_ONCE_INIT;

int fake_errno_by_name(const char *name)
{
	for (int e = 1; e < 4096; e++) {
		const char *n = strerrorname_np(e);
		if (n && strcmp(n, name) == 0)
			return e;
	}
	return -1;
}

static int env_int(const char *name, int def)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return def;
	char *e;
	long l = strtol(v, &e, 10);
	if (*e || l < -1 || l > 1 << 24)
		return def;
	return (int)l;
}

static void load_host(void)
{
	struct fake_host *h = &the_host;
	const char *dbg = getenv("NCCLRR_FAKE_DEBUG");
	fake_debug = dbg && *dbg ? atoi(dbg) : 0;
	h->rank = env_int("NCCLRR_RANK", -1);
	h->local_rank = env_int("NCCLRR_LOCAL_RANK", -1);
	const char *path = getenv("NCCLRR_TOPO");
	int hi = env_int("NCCLRR_HOST", 0);
	nrr_topo *t = NULL;
	char err[512];
	int rc;
	if (path && *path)
		rc = nrr_topo_load_host(path, hi, &t, err, sizeof(err));
	else
		rc = nrr_topo_default(&t, err, sizeof(err));
	if (rc < 0) {
		snprintf(h->error, sizeof(h->error), "cannot load the topology (NCCLRR_TOPO): %s", err);
		fake_log("%s", h->error);
		return;
	}
	h->topo = t;
	if (hi < 0 || hi >= t->nhosts) {
		snprintf(h->error, sizeof(h->error), "NCCLRR_HOST=%s: the cluster %s has hosts 0..%d",
			 getenv("NCCLRR_HOST"), t->path, t->nhosts - 1);
		fake_log("%s", h->error);
		return;
	}
	h->host_index = hi;
	h->host = &t->hosts[hi];
	const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
	if (!cvd) {
		for (int i = 0; i < h->host->ngpus && i < 64; i++)
			h->dev[h->ndev++] = &h->host->gpus[i];
	} else {
		/* indices or GPU-<uuid prefix>, comma separated; stop at the first
		 * invalid entry as the real driver does */
		char buf[1024];
		snprintf(buf, sizeof(buf), "%s", cvd);
		char *save = NULL;
		for (char *tok = strtok_r(buf, ",", &save); tok && h->ndev < 64; tok = strtok_r(NULL, ",", &save)) {
			while (isspace((unsigned char)*tok))
				tok++;
			const nrr_topo_gpu *g = NULL;
			if (strncmp(tok, "GPU-", 4) == 0) {
				for (int i = 0; i < h->host->ngpus && !g; i++) {
					char u[64];
					const uint8_t *b = h->host->gpus[i].uuid;
					snprintf(u, sizeof(u),
						 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
						 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
						 b[12], b[13], b[14], b[15]);
					if (tok[4] && strncmp(u, tok + 4, strlen(tok + 4)) == 0)
						g = &h->host->gpus[i];
				}
			} else {
				char *e;
				long v = strtol(tok, &e, 10);
				if (*tok && !*e && v >= 0 && v < h->host->ngpus)
					g = &h->host->gpus[v];
			}
			if (!g)
				break;
			for (int i = 0; i < h->ndev; i++)
				if (h->dev[i] == g)
					g = NULL;
			if (!g)
				break;
			h->dev[h->ndev++] = g;
		}
	}
	FAKE_DBG("host %d (%s) of %s: %d devices, rank %d", hi, h->host->name, t->path, h->ndev, h->rank);
}

const struct fake_host *fake_host(void)
{
	pthread_once(&host_once, load_host);
	return &the_host;
}

int fake_dev_by_busid(const char *busid)
{
	const struct fake_host *h = fake_host();
	char norm[32];
	if (nrr_topo_norm_busid(busid, norm, sizeof(norm)) < 0)
		return -1;
	for (int i = 0; i < h->ndev; i++)
		if (strcmp(h->dev[i]->busid, norm) == 0)
			return i;
	return -1;
}

/* ---- counters ------------------------------------------------------------ */
static _Atomic(struct fake_api *) api_list;

/* ---- fault switch -------------------------------------------------------- */
struct fault {
	char api[96];
	int rank;                       /* -1: any */
	unsigned long nth;              /* 0: every call */
	char thread[16];                /* "": any; else a prefix of the calling
					 * thread's name (prctl PR_GET_NAME) */
	atomic_ulong seen;              /* calls this rule matched so far
					 * (api, rank, thread): nth counts these */
	int code;
	char errname[64];
};

/* The action SIGKILL: the process is killed at that call, as a rank
 * SIGKILLed from outside (the OOM killer, a scheduler) dies wherever it is;
 * `ncclrr replay --rerun` repeats a recorded kill so.  SIGKILL_AFTER: the
 * call runs, and the process is killed at its next call into any fake
 * library (this rerun's way to kill a rank after the last call its trace
 * kept: the signal came later than that call, which returned).  The
 * libraries keep separate copies of this file, so the call that arms it
 * leaves a file, after_path(), that each library with such a rule for its
 * rank looks for on every call. */
#define FAULT_KILL 0x7fffffff
#define FAULT_KILL_AFTER 0x7ffffffe

static struct fault faults[32];
static int nfaults;
static pthread_once_t fault_once = PTHREAD_ONCE_INIT;
static int after_watch;            /* a SIGKILL_AFTER rule (any library's) is for this rank */
static atomic_int after_armed;     /* this library armed it */

/* the file that says a SIGKILL_AFTER rule's call was made in this
 * process: made when the rules are read, again in a forked child */
static char after_file[4096];

static void after_path(void)
{
	const char *d = getenv("NCCLRR_ID_DIR");
	snprintf(after_file, sizeof(after_file), "%s/ncclrr-fault-after.%d", d && *d ? d : "/tmp", (int)getpid());
}

static void strip_version(char *s)
{
	/* cuMemAlloc_v2 -> cuMemAlloc; also _ptds / _ptsz */
	size_t n = strlen(s);
	for (const char *suf = "_ptds"; suf; suf = strcmp(suf, "_ptds") == 0 ? "_ptsz" : NULL) {
		if (n > 5 && strcmp(s + n - 5, suf) == 0) {
			s[n - 5] = 0;
			n -= 5;
		}
	}
	char *v = strrchr(s, '_');
	if (v && v[1] == 'v' && v[2]) {
		for (char *c = v + 2; *c; c++)
			if (!isdigit((unsigned char)*c))
				return;
		*v = 0;
	}
}

static void parse_faults(void)
{
	const char *spec = getenv("NCCLRR_FAULT");
	if (!spec || !*spec)
		return;
	const struct fake_host *h = fake_host();
	char buf[4096];
	snprintf(buf, sizeof(buf), "%s", spec);
	char *save = NULL;
	for (char *rule = strtok_r(buf, ";", &save); rule; rule = strtok_r(NULL, ";", &save)) {
		while (isspace((unsigned char)*rule))
			rule++;
		if (!*rule)
			continue;
		struct fault f = { .rank = -1, .nth = 0, .code = -1 };
		char copy[1024];
		snprintf(copy, sizeof(copy), "%s", rule);
		char *fs = NULL;
		int field = 0, bad = 0, have_err = 0;
		const char *badtok = "";
		for (char *tok = strtok_r(copy, ":", &fs); tok; tok = strtok_r(NULL, ":", &fs), field++) {
			if (field == 0) {
				if (!isalpha((unsigned char)tok[0]) || strlen(tok) >= sizeof(f.api)) {
					bad = 1;
					badtok = tok;
					break;
				}
				snprintf(f.api, sizeof(f.api), "%s", tok);
				strip_version(f.api);
			} else if (strncmp(tok, "rank=", 5) == 0) {
				char *e;
				if (strcmp(tok + 5, "*") == 0) {
					f.rank = -1;
				} else {
					long r = strtol(tok + 5, &e, 10);
					if (!tok[5] || *e || r < 0) {
						bad = 1;
						badtok = tok;
						break;
					}
					f.rank = (int)r;
				}
			} else if (strncmp(tok, "nth=", 4) == 0) {
				char *e;
				if (strcmp(tok + 4, "*") == 0) {
					f.nth = 0;
				} else {
					unsigned long n = strtoul(tok + 4, &e, 10);
					if (!tok[4] || *e || n == 0) {
						bad = 1;
						badtok = tok;
						break;
					}
					f.nth = n;
				}
			} else if (strncmp(tok, "thread=", 7) == 0) {
				/* thread names are at most 15 bytes (TASK_COMM_LEN) */
				if (!tok[7] || strlen(tok + 7) >= sizeof(f.thread)) {
					bad = 1;
					badtok = tok;
					break;
				}
				snprintf(f.thread, sizeof(f.thread), "%s", tok + 7);
			} else if (!have_err) {
				snprintf(f.errname, sizeof(f.errname), "%s", tok);
				have_err = 1;
			} else {
				bad = 1;
				badtok = tok;
				break;
			}
		}
		if (!bad && !have_err) {
			bad = 1;
			badtok = rule;
		}
		if (bad) {
			fake_log("NCCLRR_FAULT: bad token '%s' in rule '%s' (expected API:rank=R:nth=N:thread=NAME:ERROR_NAME, "
				 "R and N numbers or *, NAME a thread name prefix of 1-15 bytes); rule ignored", badtok, rule);
			continue;
		}
		if (!strcmp(f.errname, "SIGKILL_AFTER") && (f.rank < 0 || f.rank == h->rank) && !after_watch) {
			after_watch = 1;   /* whichever library's call arms it */
			after_path();
			pthread_atfork(NULL, NULL, after_path);
		}
		if (!fake_lib_owns(f.api))
			continue; /* another fake library's rule */
		f.code = !strcmp(f.errname, "SIGKILL")	      ? FAULT_KILL
			 : !strcmp(f.errname, "SIGKILL_AFTER") ? FAULT_KILL_AFTER
							       : fake_lib_error_code(f.errname);
		if (f.code <= 0) {
			char *e;
			long v = strtol(f.errname, &e, 10);
			f.code = f.errname[0] && !*e && v > 0 && v < 100000 ? (int)v : -1;
		}
		if (f.code <= 0) {
			fake_log("NCCLRR_FAULT: bad token '%s' in rule '%s' (not an error name of %s); rule ignored",
				 f.errname, rule, fake_lib_what);
			continue;
		}
		if (nfaults < (int)(sizeof(faults) / sizeof(faults[0]))) {
			faults[nfaults] = f;
			atomic_init(&faults[nfaults].seen, 0);
			nfaults++;
		}
	}
}

/* "ncclrr-fake: injecting ERROR into API (rank R, thread 'T', call N)" */
static void say_fault(const struct fault *f, const struct fake_api *api, const struct fake_host *h, const char *tname,
		      unsigned long m)
{
	char rk[32];
	if (h->rank >= 0)
		snprintf(rk, sizeof(rk), "rank %d", h->rank);
	else
		snprintf(rk, sizeof(rk), "no rank");
	char th[48] = "";
	if (f->thread[0])
		snprintf(th, sizeof(th), ", thread '%s'", tname);
	char line[320];
	int len = snprintf(line, sizeof(line), "ncclrr-fake: injecting %s into %s (%s%s, call %lu)\n", f->errname,
			   api->name, rk, th, m);
	ssize_t w = write(2, line, (size_t)len);
	(void)w;
}

int fake_enter(struct fake_api *api)
{
	unsigned long n = atomic_fetch_add_explicit(&api->count, 1, memory_order_relaxed) + 1;
	if (!atomic_load_explicit(&api->registered, memory_order_acquire)) {
		int exp = 0;
		if (atomic_compare_exchange_strong(&api->registered, &exp, 1)) {
			struct fake_api *head = atomic_load(&api_list);
			do {
				api->next = head;
			} while (!atomic_compare_exchange_weak(&api_list, &head, api));
		}
	}
	pthread_once(&fault_once, parse_faults);
	if (fake_debug >= 2)
		fake_log("call %s #%lu", api->name, n);
	if (after_watch && (atomic_load(&after_armed) || access(after_file, F_OK) == 0)) {
		char line[256];
		int len = snprintf(line, sizeof(line), "ncclrr-fake: injecting SIGKILL into %s (rank %d, the call after "
				   "a SIGKILL_AFTER rule's)\n", api->name, fake_host()->rank);
		ssize_t w = write(2, line, (size_t)len);
		(void)w;
		unlink(after_file);
		raise(SIGKILL);
	}
	if (nfaults == 0)
		return 0;
	const struct fake_host *h = fake_host();
	char tname[16] = "";
	struct fault *hit = NULL, *after = NULL;
	unsigned long hit_m = 0, after_m = 0;
	for (int i = 0; i < nfaults; i++) {
		struct fault *f = &faults[i];
		if (strcmp(f->api, api->name) != 0)
			continue;
		if (f->rank >= 0 && f->rank != h->rank)
			continue;
		if (f->thread[0]) {
			if (!tname[0] && prctl(PR_GET_NAME, tname, 0, 0, 0) != 0)
				tname[0] = 0;
			if (strncmp(tname, f->thread, strlen(f->thread)) != 0)
				continue;
		}
		/* nth counts the calls this rule matches (without thread=: every
		 * call of the API in this process), so every matching rule counts
		 * this call; the first one whose nth it is injects, unless a
		 * SIGKILL's nth it is too: the process dies at this call whatever
		 * it would answer (a rerun kills a rank at a call whose recorded
		 * answer is also a rule) */
		unsigned long m = atomic_fetch_add_explicit(&f->seen, 1, memory_order_relaxed) + 1;
		if (f->nth && f->nth != m)
			continue;
		if (f->code == FAULT_KILL_AFTER) {
			/* arms whatever this call answers: a rerun kills a rank
			 * after a call whose recorded answer is also a rule */
			if (!after) {
				after = f;
				after_m = m;
			}
		} else if (!hit || (f->code == FAULT_KILL && hit->code != FAULT_KILL)) {
			hit = f;
			hit_m = m;
		}
	}
	if (after) {
		say_fault(after, api, h, tname, after_m);
		/* this call runs; the next call into any fake library kills
		 * (a rule for this rank set after_watch and after_file) */
		int fd = open(after_file, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		if (fd >= 0)
			close(fd);
		else
			fake_log("NCCLRR_FAULT: cannot create %s (%m): only this library's next call kills", after_file);
		atomic_store(&after_armed, 1);
	}
	if (!hit)
		return 0;
	say_fault(hit, api, h, tname, hit_m);
	if (hit->code == FAULT_KILL)
		raise(SIGKILL);
	return hit->code;
}

/* ---- stats at exit -------------------------------------------------------- */
static void expand_path(const char *in, char *out, size_t outlen)
{
	size_t o = 0;
	for (const char *p = in; *p && o + 16 < outlen; p++) {
		if (p[0] == '%' && p[1] == 'p') {
			o += (size_t)snprintf(out + o, outlen - o, "%d", (int)getpid());
			p++;
		} else if (p[0] == '%' && p[1] == 'r') {
			o += (size_t)snprintf(out + o, outlen - o, "%d", fake_host()->rank);
			p++;
		} else {
			out[o++] = *p;
		}
	}
	out[o] = 0;
}

__attribute__((destructor)) static void write_stats(void)
{
	const char *path = getenv("NCCLRR_FAKE_STATS");
	if (!path || !*path)
		return;
	char file[4096];
	expand_path(path, file, sizeof(file));
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap);
	if (!buf)
		return;
	for (struct fake_api *a = atomic_load(&api_list); a; a = a->next) {
		unsigned long c = atomic_load(&a->count);
		if (!c)
			continue;
		if (n + strlen(a->name) + 32 > cap) {
			char *nb = realloc(buf, cap * 2);
			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
		n += (size_t)snprintf(buf + n, cap - n, "%s %lu\n", a->name, c);
	}
	/* one write with O_APPEND: the CUDA and NVML libraries (and processes
	 * sharing the name) add their lines without tearing them */
	int fd = open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd >= 0) {
		ssize_t w = write(fd, buf, n);
		(void)w;
		close(fd);
	} else {
		fake_log("cannot write NCCLRR_FAKE_STATS=%s: %s", file, strerror(errno));
	}
	free(buf);
}

/* Device memory is one memfd per allocation: lift the soft fd limit. */
__attribute__((constructor)) static void raise_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max > 1048576 ? 1048576 : rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* ---- live handles ---------------------------------------------------------- */
/* Open addressing, linear probing, power-of-two capacity. Slot values: 0
 * empty, 1 a deleted entry (tombstone); handles are heap pointers, never 0
 * or 1. The table is rebuilt (doubled when more than half full of live
 * entries) when live entries and tombstones together fill 3/4 of it. */
#define HANDLE_EMPTY ((uintptr_t)0)
#define HANDLE_TOMB ((uintptr_t)1)

static pthread_mutex_t handle_lock = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t *handle_slots;
static size_t handle_cap;    /* 0 or a power of two */
static size_t handle_used;   /* live entries */
static size_t handle_tombs;

static size_t handle_hash(uintptr_t p, size_t cap)
{
	uint64_t h = (uint64_t)p >> 4; /* malloc alignment */
	h *= 0x9e3779b97f4a7c15ull;
	h ^= h >> 29;
	return (size_t)h & (cap - 1);
}

/* slot of @p, or of the first free slot (tombstone or empty) its probe
 * passes when @p is absent and @for_insert; SIZE_MAX when not found */
static size_t handle_find(uintptr_t p, int for_insert)
{
	if (handle_cap == 0)
		return SIZE_MAX;
	size_t mask = handle_cap - 1, i = handle_hash(p, handle_cap), free_slot = SIZE_MAX;
	for (size_t n = 0; n < handle_cap; n++, i = (i + 1) & mask) {
		uintptr_t v = handle_slots[i];
		if (v == p)
			return i;
		if (v == HANDLE_TOMB) {
			if (free_slot == SIZE_MAX)
				free_slot = i;
			continue;
		}
		if (v == HANDLE_EMPTY)
			return for_insert ? (free_slot != SIZE_MAX ? free_slot : i) : SIZE_MAX;
	}
	return for_insert ? free_slot : SIZE_MAX;
}

static int handle_rebuild(size_t cap)
{
	uintptr_t *old = handle_slots;
	size_t oldcap = handle_cap;
	uintptr_t *ns = calloc(cap, sizeof(*ns));
	if (!ns)
		return -1;
	handle_slots = ns;
	handle_cap = cap;
	handle_tombs = 0;
	for (size_t i = 0; i < oldcap; i++)
		if (old[i] != HANDLE_EMPTY && old[i] != HANDLE_TOMB)
			handle_slots[handle_find(old[i], 1)] = old[i];
	free(old);
	return 0;
}

int fake_handle_add(const void *ptr)
{
	uintptr_t p = (uintptr_t)ptr;
	if (p == HANDLE_EMPTY || p == HANDLE_TOMB)
		return -1;
	pthread_mutex_lock(&handle_lock);
	int rc = 0;
	if ((handle_used + handle_tombs + 1) * 4 > handle_cap * 3) {
		size_t cap = handle_cap ? handle_cap : 256;
		while ((handle_used + 1) * 2 > cap)
			cap *= 2;
		rc = handle_rebuild(cap);
	}
	if (rc == 0) {
		size_t i = handle_find(p, 1);
		if (handle_slots[i] != p) {
			if (handle_slots[i] == HANDLE_TOMB)
				handle_tombs--;
			handle_slots[i] = p;
			handle_used++;
		}
	}
	pthread_mutex_unlock(&handle_lock);
	return rc;
}

int fake_handle_del(const void *ptr)
{
	uintptr_t p = (uintptr_t)ptr;
	if (p == HANDLE_EMPTY || p == HANDLE_TOMB)
		return 0;
	pthread_mutex_lock(&handle_lock);
	size_t i = handle_find(p, 0);
	if (i != SIZE_MAX) {
		handle_slots[i] = HANDLE_TOMB;
		handle_used--;
		handle_tombs++;
	}
	pthread_mutex_unlock(&handle_lock);
	return i != SIZE_MAX;
}

int fake_handle_live(const void *ptr)
{
	uintptr_t p = (uintptr_t)ptr;
	if (p == HANDLE_EMPTY || p == HANDLE_TOMB)
		return 0;
	pthread_mutex_lock(&handle_lock);
	int live = handle_find(p, 0) != SIZE_MAX;
	pthread_mutex_unlock(&handle_lock);
	return live;
}
