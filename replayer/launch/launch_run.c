/* SPDX-License-Identifier: MIT */
/* launch_run.c - the supervisor: one process group per rank, output lines
 * prefixed with the rank, a timeout that kills and reports, a summary. */
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <glob.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nrr_hash.h"
#include "nrr_launch.h"
#include "nrt.h"

extern char **environ;

#define LINE_MAX_BYTES 65536

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- finding things -------------------------------------------------- */

static int has_file(const char *dir, const char *file)
{
	char p[PATH_MAX];
	if (snprintf(p, sizeof(p), "%s/%s", dir, file) >= (int)sizeof(p))
		return 0;
	return access(p, R_OK) == 0;
}

/* The directory of this executable, into @buf; -1 (errno) when
 * /proc/self/exe cannot be read */
static int exe_dir(char *buf, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	char *slash = strrchr(buf, '/');
	if (slash)
		*slash = '\0';
	return 0;
}

int nrr_find_near_exe(const char *envvar, const char *file, const char *const *rel, const char *what, char *buf,
		      size_t size, char *err, size_t errsize)
{
	const char *env = envvar ? getenv(envvar) : NULL;
	if (env && *env) {
		if (!has_file(env, file)) {
			snprintf(err, errsize, "%s=%s has no %s", envvar, env, file);
			return -ENOENT;
		}
		snprintf(buf, size, "%s", env);
		return 0;
	}
	char exe[PATH_MAX];
	if (exe_dir(exe, sizeof(exe)) < 0) {
		snprintf(err, errsize, "cannot read /proc/self/exe (%s); set %s", strerror(errno), envvar);
		return -ENOENT;
	}
	char cand[PATH_MAX], looked[1024] = "";
	size_t lo = 0;
	for (size_t i = 0; rel[i]; i++) {
		/* (an absolute one: an install whose bindir has no relation to its libdir) */
		if (snprintf(cand, sizeof(cand), "%s%s%s", rel[i][0] == '/' ? "" : exe, rel[i][0] == '/' ? "" : "/",
			     rel[i]) >= (int)sizeof(cand))
			continue;   /* (a path longer than any path) */
		if (lo < sizeof(looked))
			lo += (size_t)snprintf(looked + lo, sizeof(looked) - lo, "%s%s", i ? ", " : "", cand);
		glob_t g;   /* a relative directory may hold a '*' (lib/<triplet>) */
		if (glob(cand, 0, NULL, &g) != 0)
			continue;
		for (size_t k = 0; k < g.gl_pathc; k++) {
			if (!has_file(g.gl_pathv[k], file))
				continue;
			if (!realpath(g.gl_pathv[k], buf) || strlen(buf) >= size)
				snprintf(buf, size, "%s", g.gl_pathv[k]);
			globfree(&g);
			return 0;
		}
		globfree(&g);
	}
	snprintf(err, errsize, "cannot find %s (%s): looked in %s%s%s%s", what, file, looked,
		 envvar ? "; set " : "", envvar ? envvar : "", envvar ? " to the directory that holds it" : "");
	return -ENOENT;
}

int nrr_launch_find_fake_libdir(char *buf, size_t size, char *err, size_t errsize)
{
	static const char *const rel[] = { "../replayer/fake", "../replayer/fake/cuda", NRR_PKGLIBDIR "/fake", NULL };
	return nrr_find_near_exe("NCCLRR_FAKE_LIBDIR", "libcuda.so.1", rel, "the fake CUDA runtime", buf, size, err,
				 errsize);
}

/* Is @path a directory with a libnccl.so.2 (then @buf is it), or that file
 * (then @buf is its directory)? */
static int nccl_at(const char *path, char *buf, size_t size)
{
	char real[PATH_MAX];
	if (!realpath(path, real))
		return 0;
	if (has_file(real, "libnccl.so.2")) {
		snprintf(buf, size, "%s", real);
		return 1;
	}
	char *slash = strrchr(real, '/');
	if (slash && strcmp(slash + 1, "libnccl.so.2") == 0 && access(real, R_OK) == 0) {
		*slash = '\0';
		snprintf(buf, size, "%s", real);
		return 1;
	}
	return 0;
}

/* Where scripts/nccl.sh's VERSION directories are, relative to the
 * directory of this executable: the build tree, an install */
static const char *const nccl_roots[] = { "../nccl", "../lib/ncclrr/nccl", "../lib/*/ncclrr/nccl" };
#define NCCL_NROOTS (sizeof(nccl_roots) / sizeof(nccl_roots[0]))

int nrr_launch_find_nccl_dir(const char *want, char *buf, size_t size, char *err, size_t errsize)
{
	if (want && strchr(want, '/')) {
		if (nccl_at(want, buf, size))
			return 0;
		snprintf(err, errsize, "--nccl %s: neither libnccl.so.2 nor a directory holding one", want);
		return -ENOENT;
	}
	/* a version relinked by scripts/nccl.sh: the pinned default first */
	char rel[NCCL_NROOTS][PATH_MAX];
	const char *ver = want ? want : NRR_NCCL_DEFAULT_VERSION;
	for (size_t i = 0; i < NCCL_NROOTS; i++)
		snprintf(rel[i], sizeof(rel[i]), "%s/%s", nccl_roots[i], ver);
	_Static_assert(NCCL_NROOTS == 3, "rels below names each root");
	const char *const rels[] = { rel[0], rel[1], rel[2], want ? NULL : "../nccl/*", NULL };
	char e2[1024];
	int rc = nrr_find_near_exe(want ? NULL : "NCCLRR_NCCL_DIR", "libnccl.so.2", rels, "NCCL", buf, size, e2,
				   sizeof(e2));
	if (rc < 0)
		snprintf(err, errsize, "no NCCL %s relinked for the fake cluster (run 'scripts/nccl.sh setup', or "
			 "'scripts/nccl.sh relink libnccl_static.a' for your own): %s", want ? want : "", e2);
	return rc;
}

int nrr_nccl_vercmp(const char *a, const char *b)
{
	while (*a || *b) {
		char *ea, *eb;
		unsigned long x = strtoul(a, &ea, 10), y = strtoul(b, &eb, 10);
		if (x != y)
			return x < y ? -1 : 1;
		if (ea == a || eb == b)   /* not a number: compare the rest as text */
			return strcmp(a, b) < 0 ? -1 : strcmp(a, b) > 0;
		a = *ea == '.' ? ea + 1 : ea;
		b = *eb == '.' ? eb + 1 : eb;
	}
	return 0;
}

static int by_release(const void *x, const void *y)
{
	return nrr_nccl_vercmp(((const struct nrr_nccl_build *)x)->version, ((const struct nrr_nccl_build *)y)->version);
}

int nrr_launch_nccl_list(struct nrr_nccl_build **out)
{
	*out = NULL;
	size_t n = 0, cap = 0;
	char exe[PATH_MAX], pat[PATH_MAX + 64];
	bool have_exe = exe_dir(exe, sizeof(exe)) == 0;
	const char *env = getenv("NCCLRR_NCCL_DIR");
	for (size_t i = 0; i <= NCCL_NROOTS; i++) {
		if (i == 0 ? !(env && *env) : !have_exe)
			continue;
		if (i == 0)
			snprintf(pat, sizeof(pat), "%s/../*/libnccl.so.2", env);
		else
			snprintf(pat, sizeof(pat), "%s/%s/*/libnccl.so.2", exe, nccl_roots[i - 1]);
		glob_t g;
		if (glob(pat, 0, NULL, &g) != 0)
			continue;
		for (size_t k = 0; k < g.gl_pathc; k++) {
			struct nrr_nccl_build b;
			char real[PATH_MAX];
			if (!realpath(g.gl_pathv[k], real))
				continue;
			*strrchr(real, '/') = '\0';
			const char *v = strrchr(real, '/') + 1;
			if (!isdigit((unsigned char)*v) || strlen(v) >= sizeof(b.version) || strlen(real) >= sizeof(b.dir))
				continue;
			bool seen = false;
			for (size_t j = 0; j < n && !seen; j++)
				seen = !strcmp((*out)[j].version, v);
			if (seen)
				continue;
			if (!nrr_grow(out, n, &cap, sizeof(**out))) {
				globfree(&g);
				free(*out);
				*out = NULL;
				return -ENOMEM;
			}
			snprintf((*out)[n].version, sizeof(b.version), "%s", v);
			snprintf((*out)[n].dir, sizeof(b.dir), "%s", real);
			n++;
		}
		globfree(&g);
	}
	if (n)
		qsort(*out, n, sizeof(**out), by_release);
	return (int)n;
}

int nrr_launch_free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct sockaddr_in a;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = 0;
	socklen_t len = sizeof(a);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	close(fd);
	return ntohs(a.sin_port);
}

int nrr_launch_find_program(const char *prog, char *buf, size_t size)
{
	if (!prog || !*prog)
		return -ENOENT;
	if (strchr(prog, '/')) {
		if (access(prog, F_OK) < 0)
			return -ENOENT;
		if (access(prog, X_OK) < 0)
			return -EACCES;
		snprintf(buf, size, "%s", prog);
		return 0;
	}
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	int found_noexec = 0;
	while (*path) {
		const char *c = strchr(path, ':');
		size_t len = c ? (size_t)(c - path) : strlen(path);
		char cand[PATH_MAX];
		snprintf(cand, sizeof(cand), "%.*s/%s", (int)(len ? len : 1), len ? path : ".", prog);
		struct stat st;
		if (stat(cand, &st) == 0 && S_ISREG(st.st_mode)) {
			if (access(cand, X_OK) == 0) {
				snprintf(buf, size, "%s", cand);
				return 0;
			}
			found_noexec = 1;
		}
		path += len;
		if (*path == ':')
			path++;
	}
	return found_noexec ? -EACCES : -ENOENT;
}

/* ---- per-rank state -------------------------------------------------- */

struct stream {
	int fd;              /* -1 once closed */
	FILE *dst;
	char *buf;
	size_t len;
};

struct rank_proc {
	pid_t pid;           /* 0 once reaped */
	int status;
	int exited;
	double exit_time;
	struct stream s[2];  /* stdout, stderr */
	char last[512];      /* the last line printed (either stream) */
};

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

static void stream_emit(struct rank_proc *rp, int rank, struct stream *s,
			const char *line, size_t len)
{
	fprintf(s->dst, "[%d] %.*s\n", rank, (int)len, line);
	fflush(s->dst);
	size_t keep = len < sizeof(rp->last) - 1 ? len : sizeof(rp->last) - 1;
	memcpy(rp->last, line, keep);
	rp->last[keep] = '\0';
}

/* Read what is available; emit whole lines. @return 0, or 1 at EOF. */
static int stream_read(struct rank_proc *rp, int rank, struct stream *s)
{
	char tmp[16384];
	ssize_t n = read(s->fd, tmp, sizeof(tmp));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0) {
		if (s->len)
			stream_emit(rp, rank, s, s->buf, s->len);
		s->len = 0;
		close(s->fd);
		s->fd = -1;
		return 1;
	}
	for (ssize_t i = 0; i < n; i++) {
		if (tmp[i] == '\n') {
			stream_emit(rp, rank, s, s->buf, s->len);
			s->len = 0;
		} else {
			if (s->len == LINE_MAX_BYTES) {
				stream_emit(rp, rank, s, s->buf, s->len);
				s->len = 0;
			}
			s->buf[s->len++] = tmp[i];
		}
	}
	return 0;
}

static void stream_close(struct rank_proc *rp, int rank, struct stream *s)
{
	if (s->fd < 0)
		return;
	/* drain whatever is already there without blocking */
	int fl = fcntl(s->fd, F_GETFL);
	fcntl(s->fd, F_SETFL, fl | O_NONBLOCK);
	while (s->fd >= 0) {
		char tmp[4096];
		ssize_t n = read(s->fd, tmp, sizeof(tmp));
		if (n <= 0)
			break;
		for (ssize_t i = 0; i < n; i++) {
			if (tmp[i] == '\n' || s->len == LINE_MAX_BYTES) {
				stream_emit(rp, rank, s, s->buf, s->len);
				s->len = 0;
				if (tmp[i] == '\n')
					continue;
			}
			s->buf[s->len++] = tmp[i];
		}
	}
	if (s->len)
		stream_emit(rp, rank, s, s->buf, s->len);
	s->len = 0;
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

/* ---- reporting ------------------------------------------------------- */

static void read_small(const char *path, char *buf, size_t size)
{
	buf[0] = '\0';
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		n = 0;
	buf[n] = '\0';
	char *nl = strchr(buf, '\n');
	if (nl)
		*nl = '\0';
}

static const char *syscall_name(long nr)
{
	switch (nr) {
#ifdef __x86_64__
	case 0: return "read";
	case 1: return "write";
	case 7: return "poll";
	case 23: return "select";
	case 34: return "pause";
	case 44: return "sendto";
	case 46: return "sendmsg";
	case 128: return "rt_sigtimedwait";
	case 130: return "rt_sigsuspend";
	case 257: return "openat";
	case 35: return "nanosleep";
	case 43: return "accept";
	case 42: return "connect";
	case 45: return "recvfrom";
	case 47: return "recvmsg";
	case 61: return "wait4";
	case 202: return "futex";
	case 230: return "clock_nanosleep";
	case 232: return "epoll_wait";
	case 270: return "pselect6";
	case 271: return "ppoll";
	case 281: return "epoll_pwait";
	case 288: return "accept4";
#endif
	default: return NULL;
	}
}

/* One line per thread of @pid (wchan and syscall) into @f. */
static void report_threads(FILE *f, pid_t pid)
{
	char dir[64];
	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	int shown = 0;
	while ((de = readdir(d)) && shown < 16) {
		if (de->d_name[0] == '.')
			continue;
		char p[PATH_MAX], comm[64], wchan[128], sc[256];
		snprintf(p, sizeof(p), "%s/%s/comm", dir, de->d_name);
		read_small(p, comm, sizeof(comm));
		snprintf(p, sizeof(p), "%s/%s/wchan", dir, de->d_name);
		read_small(p, wchan, sizeof(wchan));
		snprintf(p, sizeof(p), "%s/%s/syscall", dir, de->d_name);
		read_small(p, sc, sizeof(sc));
		char scdesc[64] = "";
		if (sc[0]) {
			char *end;
			long nr = strtol(sc, &end, 10);
			const char *name = end != sc ? syscall_name(nr) : NULL;
			if (name)
				snprintf(scdesc, sizeof(scdesc), "%s", name);
			else if (end != sc)
				snprintf(scdesc, sizeof(scdesc), "syscall %ld", nr);
			else
				snprintf(scdesc, sizeof(scdesc), "%.40s", sc);
		}
		int has_wchan = wchan[0] && strcmp(wchan, "0") != 0;
		fprintf(f, "ncclrr run:     thread %s (%s): %s%s%s%s\n", de->d_name, comm,
			scdesc[0] ? "in " : "", scdesc[0] ? scdesc : "running or unknown",
			has_wchan ? ", kernel wait channel " : "", has_wchan ? wchan : "");
		shown++;
	}
	closedir(d);
}

static void describe_status(char *buf, size_t size, int status)
{
	if (WIFEXITED(status))
		snprintf(buf, size, "exit status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, size, "killed by signal %d (SIG%s)%s", WTERMSIG(status),
			 sigabbrev_np(WTERMSIG(status)) ? sigabbrev_np(WTERMSIG(status)) : "?",
			 WCOREDUMP(status) ? ", core dumped" : "");
	else
		snprintf(buf, size, "status 0x%x", status);
}

/* ---- temp dir -------------------------------------------------------- */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

/* @dir and everything under it (the host XMLs, the sysfs views) */
static void rm_dir(const char *dir)
{
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- the run --------------------------------------------------------- */

/* used[i] set when @path is /dev/shm/cand[i] */
static void shm_mark(const char *path, char (*cand)[NAME_MAX + 1], bool *used, int n)
{
	if (strncmp(path, "/dev/shm/", 9))
		return;
	for (int i = 0; i < n; i++)
		used[i] |= !strcmp(path + 9, cand[i]);
}

/* Which of the names in @cand (/dev/shm/NAME) some process has mapped or
 * open: one scan of /proc (what this user may read, which covers what it
 * may unlink); used[i] set for each. */
static void shm_mark_used(char (*cand)[NAME_MAX + 1], bool *used, int n)
{
	DIR *d = opendir("/proc");
	if (!d) {
		memset(used, 1, (size_t)n);   /* cannot tell: keep them all */
		return;
	}
	char path[300], line[512], link[PATH_MAX];
	for (struct dirent *e; (e = readdir(d));) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/maps", e->d_name);
		FILE *f = fopen(path, "re");
		while (f && fgets(line, sizeof(line), f)) {
			char *m = strstr(line, "/dev/shm/nccl-");
			if (!m)
				continue;
			m[strcspn(m, " \n")] = 0;
			shm_mark(m, cand, used, n);
		}
		if (f)
			fclose(f);
		snprintf(path, sizeof(path), "/proc/%s/fd", e->d_name);
		DIR *fd = opendir(path);
		for (struct dirent *l; fd && (l = readdir(fd));) {
			char lp[600];
			snprintf(lp, sizeof(lp), "%s/%s", path, l->d_name);
			ssize_t k = readlink(lp, link, sizeof(link) - 1);
			if (k <= 0)
				continue;
			link[k] = 0;
			shm_mark(link, cand, used, n);
		}
		if (fd)
			closedir(fd);
	}
	closedir(d);
}

int nrr_launch_sweep_nccl_shm(time_t since)
{
	DIR *d = opendir("/dev/shm");
	if (!d)
		return 0;
	char (*cand)[NAME_MAX + 1] = NULL;
	int n = 0, cap = 0, removed = 0;
	for (struct dirent *e; (e = readdir(d));) {
		struct stat st;
		if (strncmp(e->d_name, "nccl-", 5) || fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode) || st.st_uid != getuid() || st.st_ctime < since)
			continue;
		if (n == cap) {
			void *c = realloc(cand, (size_t)(cap = cap ? 2 * cap : 64) * sizeof(*cand));
			if (!c)
				break;
			cand = c;
		}
		snprintf(cand[n++], sizeof(*cand), "%s", e->d_name);
	}
	bool *used = n ? calloc((size_t)n, sizeof(*used)) : NULL;
	if (used) {
		shm_mark_used(cand, used, n);
		for (int i = 0; i < n; i++)
			removed += !used[i] && !unlinkat(dirfd(d), cand[i], 0);
	}
	free(used);
	free(cand);
	closedir(d);
	return removed;
}

static void kill_groups(struct rank_proc *rp, int n, int sig)
{
	for (int r = 0; r < n; r++)
		if (rp[r].pid > 0 && !rp[r].exited)
			kill(-rp[r].pid, sig);
}

/* Whether process @pid is stopped (or gone): its state in /proc. */
static bool proc_stopped(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return true;
	size_t k = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[k] = '\0';
	const char *e = strrchr(buf, ')');   /* the name may hold anything */
	return !e || e[1] != ' ' || e[2] == 'T' || e[2] == 't' || e[2] == 'Z' || e[2] == 'X';
}

/* SIGTERM every live rank at one instant. Sent one by one, a rank that
 * ends first closes its sockets, and a peer's recv then returns before
 * the peer's own SIGTERM is sent (a busy machine delays the launcher
 * between two kill()s): its trace no longer shows where it waited at
 * the timeout. So all are stopped first (up to 2 s for them to stop),
 * then get SIGTERM while stopped, then continue: each runs its handler
 * before any of its calls can return. */
static void term_all_at_once(struct rank_proc *rp, int n)
{
	kill_groups(rp, n, SIGSTOP);
	double t0 = now_s();
	for (int r = 0; r < n; r++)
		while (rp[r].pid > 0 && !rp[r].exited && !proc_stopped(rp[r].pid) && now_s() - t0 < 2.0)
			usleep(1000);
	kill_groups(rp, n, SIGTERM);
	kill_groups(rp, n, SIGCONT);
}

static void reap(struct rank_proc *rp, int n, int *alive)
{
	for (;;) {
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);
		if (p <= 0)
			return;
		for (int r = 0; r < n; r++) {
			if (rp[r].pid == p && !rp[r].exited) {
				rp[r].exited = 1;
				rp[r].status = st;
				rp[r].exit_time = now_s();
				(*alive)--;
				/* the group may hold leftovers: end them */
				kill(-p, SIGKILL);
			}
		}
	}
}

/* The environment of rank @rank, whose nrr_rank_env @re has its place,
 * host and id set, built into @env with the host's memlock and the
 * user's variables of @o; when the cluster gives hosts a memlock
 * (c->memlock), the limit to start the rank with goes into *@ml.
 * @return -1 (said on @report) when it cannot be built. */
static int rank_env_build(const struct nrr_launch_opts *o, const struct nrr_cluster *c, int rank,
			  struct nrr_rank_env *re, struct nrr_env *env, struct rlimit *ml, FILE *report)
{
	char virt[64], given[64];
	if (c->memlock && nrr_launch_memlock(c->memlock[re->pl.host], ml, virt, given)) {
		re->memlock = virt;
		re->memlock_given = given;
	}
	re->fake_libdir = o->fake_libdir;
	re->user_env = o->user_env;
	re->n_user_env = o->n_user_env;
	re->unset_env = o->unset_env;
	re->n_unset_env = o->n_unset_env;
	re->rank_env = o->rank_env;
	re->n_rank_env = o->n_rank_env;
	int rc = nrr_env_init(env, o->base_env ? o->base_env : environ) < 0 || nrr_launch_rank_env(env, re) < 0 ? -1 : 0;
	re->memlock = re->memlock_given = NULL;   /* copied into env: virt and given end here */
	if (rc < 0) {
		fprintf(report, "ncclrr run: cannot build the environment of rank %d\n", rank);
		nrr_env_free(env);
	}
	return rc;
}

static int spawn_rank(const struct nrr_launch_opts *o, int r, const char *prog,
		      char *const *envp, const struct rlimit *memlock, struct rank_proc *rp, FILE *report)
{
	int po[2], pe[2];
	if (pipe2(po, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(pe, O_CLOEXEC) < 0) {
		int e = -errno;
		close(po[0]);
		close(po[1]);
		return e;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		int e = -errno;
		close(po[0]); close(po[1]); close(pe[0]); close(pe[1]);
		return e;
	}
	if (pid == 0) {
		setpgid(0, 0);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		int devnull = open("/dev/null", O_RDONLY);
		if (devnull >= 0) {
			dup2(devnull, 0);
			close(devnull);
		}
		dup2(po[1], 1);
		dup2(pe[1], 2);
		if (o->start_late_s && o->start_late_s[r] > 0) {
			double d = o->start_late_s[r];
			struct timespec ts = { (time_t)d, (long)((d - (double)(time_t)d) * 1e9) };
			while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
				;
		}
		if (memlock && setrlimit(RLIMIT_MEMLOCK, memlock) < 0)
			dprintf(2, "ncclrr run: cannot set RLIMIT_MEMLOCK of rank %d: %s\n", r, strerror(errno));
		execve(prog, o->argv, envp);
		dprintf(2, "ncclrr run: cannot execute %s: %s\n", prog, strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);
	close(po[1]);
	close(pe[1]);
	rp->pid = pid;
	rp->s[0].fd = po[0];
	rp->s[1].fd = pe[0];
	(void)report;
	return 0;
}

int nrr_launch_run(const struct nrr_launch_opts *o)
{
	FILE *report = o->report ? o->report : stderr;
	const struct nrr_cluster *c = o->cluster;
	int n = o->nranks > 0 ? o->nranks : c->nhosts * c->gpus_per_host;
	char msg[512];
	if (nrr_launch_place_error(c->nhosts, c->gpus_per_host, n, msg, sizeof(msg)) < 0) {
		fprintf(report, "ncclrr run: %s\n", msg);
		return NRR_LAUNCH_SETUP;
	}
	if (!o->argv || !o->argv[0]) {
		fprintf(report, "ncclrr run: no program given\n");
		return NRR_LAUNCH_SETUP;
	}
	char prog[PATH_MAX];
	int rc = nrr_launch_find_program(o->argv[0], prog, sizeof(prog));
	if (rc < 0) {
		fprintf(report, "ncclrr run: cannot run program '%s': %s\n", o->argv[0],
			rc == -EACCES ? "not executable" : "not found (give a path or put it in PATH)");
		return NRR_LAUNCH_SETUP;
	}

	/* private temp dir with one topology XML per host */
	const char *tmpbase = getenv("TMPDIR");
	char tmpdir[PATH_MAX];
	snprintf(tmpdir, sizeof(tmpdir), "%s/ncclrr-run.XXXXXX", tmpbase && *tmpbase ? tmpbase : "/tmp");
	if (!mkdtemp(tmpdir)) {
		fprintf(report, "ncclrr run: cannot create a temporary directory %s: %s\n",
			tmpdir, strerror(errno));
		return NRR_LAUNCH_SETUP;
	}
	int nhosts_used = n / (n / c->nhosts);
	char (*xml)[PATH_MAX] = calloc((size_t)c->nhosts, sizeof(*xml));
	char (*sysfs)[PATH_MAX] = calloc((size_t)c->nhosts, sizeof(*sysfs));
	struct rank_proc *rp = calloc((size_t)n, sizeof(*rp));
	int ret = NRR_LAUNCH_SETUP;
	int alive = 0;
	if (!xml || !sysfs || !rp) {
		fprintf(report, "ncclrr run: out of memory\n");
		goto end;
	}
	for (int h = 0; h < nhosts_used; h++) {
		if (snprintf(xml[h], sizeof(xml[h]), "%s/host%d.xml", tmpdir, h) >= (int)sizeof(xml[h]) ||
		    snprintf(sysfs[h], sizeof(sysfs[h]), "%s/host%d.sysfs", tmpdir, h) >= (int)sizeof(sysfs[h])) {
			fprintf(report, "ncclrr run: the temporary directory %s is too long a path (TMPDIR)\n", tmpdir);
			goto end;
		}
		if (c->write_host_xml &&
		    c->write_host_xml(c->ctx, h, xml[h], msg, sizeof(msg)) < 0) {
			fprintf(report, "ncclrr run: cannot write the topology of host %d to %s: %s\n",
				h, xml[h], msg);
			goto end;
		}
		if (c->write_host_sysfs && c->write_host_sysfs(c->ctx, h, sysfs[h], msg, sizeof(msg)) < 0) {
			fprintf(report, "ncclrr run: cannot write the sysfs view of host %d: %s\n", h, msg);
			goto end;
		}
	}
	char comm_id[64];
	if (o->comm_id) {
		snprintf(comm_id, sizeof(comm_id), "%s", o->comm_id);
	} else {
		int port = nrr_launch_free_port();
		if (port < 0) {
			fprintf(report, "ncclrr run: cannot find a free port on 127.0.0.1: %s\n",
				strerror(-port));
			goto end;
		}
		snprintf(comm_id, sizeof(comm_id), "127.0.0.1:%d", port);
	}

	/* signals: interrupt the job, never die with ranks orphaned */
	struct sigaction sa, old_int, old_term, old_hup, old_pipe;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	got_signal = 0;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	sigaction(SIGHUP, &sa, &old_hup);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, &old_pipe);

	for (int r = 0; r < n; r++) {
		rp[r].s[0].fd = rp[r].s[1].fd = -1;
		rp[r].s[0].dst = o->out ? o->out : stdout;
		rp[r].s[1].dst = o->err ? o->err : stderr;
		rp[r].s[0].buf = malloc(LINE_MAX_BYTES + 1);
		rp[r].s[1].buf = malloc(LINE_MAX_BYTES + 1);
		if (!rp[r].s[0].buf || !rp[r].s[1].buf) {
			fprintf(report, "ncclrr run: out of memory\n");
			goto stop;
		}
	}
	double t0 = now_s();
	time_t started = time(NULL) - 1;
	for (int r = 0; r < n; r++) {
		struct nrr_rank_env re;
		memset(&re, 0, sizeof(re));
		nrr_launch_place(c->nhosts, c->gpus_per_host, n, r, &re.pl);
		re.topo_path = o->topo_path;
		re.host_name = c->host_names ? c->host_names[re.pl.host] : NULL;
		re.host_xml = c->write_host_xml ? xml[re.pl.host] : NULL;
		re.host_sysfs = c->write_host_sysfs ? sysfs[re.pl.host] : NULL;
		re.comm_id = comm_id;
		re.id_dir = tmpdir;
		struct rlimit ml;
		struct nrr_env env;
		if (rank_env_build(o, c, r, &re, &env, &ml, report) < 0)
			goto stop;
		rc = spawn_rank(o, r, prog, env.vars, c->memlock ? &ml : NULL, &rp[r], report);
		nrr_env_free(&env);
		if (rc < 0) {
			fprintf(report, "ncclrr run: cannot start rank %d: %s\n", r, strerror(-rc));
			goto stop;
		}
		alive++;
	}

	/* the poll loop */
	struct pollfd *pfd = calloc((size_t)n * 2, sizeof(*pfd));
	if (!pfd) {
		fprintf(report, "ncclrr run: out of memory\n");
		goto stop;
	}
	int timed_out = 0;
	for (;;) {
		reap(rp, n, &alive);
		double t = now_s();
		int open_streams = 0;
		nfds_t np = 0;
		for (int r = 0; r < n; r++) {
			for (int k = 0; k < 2; k++) {
				struct stream *s = &rp[r].s[k];
				if (s->fd < 0)
					continue;
				/* an exited rank whose pipe stays open (a leftover child
				 * kept it): give it 2 s, then stop listening */
				if (rp[r].exited && t - rp[r].exit_time > 2.0) {
					stream_close(&rp[r], r, s);
					continue;
				}
				pfd[np].fd = s->fd;
				pfd[np].events = POLLIN;
				np++;
				open_streams++;
			}
		}
		if (alive == 0 && open_streams == 0)
			break;
		if (got_signal || (o->timeout_s > 0 && t - t0 >= o->timeout_s)) {
			timed_out = got_signal ? 2 : 1;
			break;
		}
		int pr = poll(pfd, np, 100);
		if (pr <= 0)
			continue;
		for (nfds_t i = 0; i < np; i++) {
			if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			for (int r = 0; r < n; r++)
				for (int k = 0; k < 2; k++)
					if (rp[r].s[k].fd == pfd[i].fd)
						stream_read(&rp[r], r, &rp[r].s[k]);
		}
	}
	free(pfd);
	double elapsed = now_s() - t0;

	if (timed_out) {
		if (timed_out == 1)
			fprintf(report, "ncclrr run: timeout after %.1f s; %d of %d ranks still running:\n",
				o->timeout_s, alive, n);
		else
			fprintf(report, "ncclrr run: interrupted by signal %d after %.1f s; %d of %d ranks still running:\n",
				(int)got_signal, elapsed, alive, n);
		/* report before killing: where each live rank is */
		for (int r = 0; r < n; r++) {
			if (rp[r].exited)
				continue;
			for (int k = 0; k < 2; k++)
				if (rp[r].s[k].len) { /* a partial last line counts */
					size_t keep = rp[r].s[k].len < sizeof(rp[r].last) - 1 ? rp[r].s[k].len : sizeof(rp[r].last) - 1;
					memcpy(rp[r].last, rp[r].s[k].buf, keep);
					rp[r].last[keep] = '\0';
				}
			fprintf(report, "ncclrr run:   rank %d (pid %d) last printed: %s\n", r,
				(int)rp[r].pid, rp[r].last[0] ? rp[r].last : "(nothing)");
			report_threads(report, rp[r].pid);
		}
		fflush(report);
		/* a recorded rank writes its trace's end on SIGTERM: on a busy
		 * machine 16 of them need more than 3 s, and one SIGKILLed
		 * instead has no end (a rerun takes it as killed from outside) */
		double grace = o->kill_grace_s > 0 ? o->kill_grace_s : getenv("NCCLRR_TRACE_DIR") ? 10.0 : 3.0;
		term_all_at_once(rp, n);
		double tk = now_s();
		while (alive > 0 && now_s() - tk < grace) {
			reap(rp, n, &alive);
			if (alive > 0)
				usleep(20000);
		}
		if (alive > 0) {
			fprintf(report, "ncclrr run: %d ranks ignored SIGTERM for %.1f s; sending SIGKILL\n",
				alive, grace);
			kill_groups(rp, n, SIGKILL);
			while (alive > 0) {
				reap(rp, n, &alive);
				if (alive > 0)
					usleep(10000);
			}
		}
	}
	for (int r = 0; r < n; r++)
		for (int k = 0; k < 2; k++)
			stream_close(&rp[r], r, &rp[r].s[k]);

	/* summary */
	int failed = 0;
	for (int r = 0; r < n; r++)
		if (!(WIFEXITED(rp[r].status) && WEXITSTATUS(rp[r].status) == 0))
			failed++;
	if (failed) {
		for (int r = 0; r < n; r++) {
			char st[96];
			describe_status(st, sizeof(st), rp[r].status);
			fprintf(report, "ncclrr run: rank %d: %s\n", r, st);
		}
	}
	int swept = nrr_launch_sweep_nccl_shm(started);
	if (swept)
		fprintf(report, "ncclrr run: removed %d shared-memory segments its ranks left (/dev/shm/nccl-*)\n", swept);
	fprintf(report, "ncclrr run: %d of %d ranks exited 0 in %.2f s\n", n - failed, n, elapsed);
	ret = timed_out == 1 ? NRR_LAUNCH_TIMEOUT : timed_out == 2 ? NRR_LAUNCH_INTERRUPTED :
	      failed ? NRR_LAUNCH_FAILED : NRR_LAUNCH_OK;
	goto restore;

stop:
	/* a start failed: end what was started */
	kill_groups(rp, n, SIGKILL);
	while (alive > 0) {
		reap(rp, n, &alive);
		if (alive > 0)
			usleep(10000);
	}
	for (int r = 0; r < n; r++)
		for (int k = 0; k < 2; k++)
			if (rp[r].s[k].fd >= 0)
				close(rp[r].s[k].fd);
	ret = NRR_LAUNCH_SETUP;
restore:
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);
	sigaction(SIGPIPE, &old_pipe, NULL);
end:
	if (rp)
		for (int r = 0; r < n; r++) {
			free(rp[r].s[0].buf);
			free(rp[r].s[1].buf);
		}
	free(rp);
	free(xml);
	free(sysfs);
	rm_dir(tmpdir);
	return ret;
}

/* ---- wrapper mode ---------------------------------------------------- */

int nrr_launch_wrap_exec(const struct nrr_launch_opts *o)
{
	FILE *report = o->report ? o->report : stderr;
	const struct nrr_cluster *c = o->cluster;
	int rank, n;
	const char *src;
	int rc = nrr_launch_wrap_rank(environ, &rank, &n, &src);
	if (rc == -ENOENT) {
		fprintf(report, "ncclrr run: --wrap needs the rank from an outer launcher: none of "
			"OMPI_COMM_WORLD_RANK, SLURM_PROCID, RANK is set\n");
		return NRR_LAUNCH_SETUP;
	}
	if (rc < 0) {
		fprintf(report, "ncclrr run: wrapper mode: %s is set but it or the world size "
			"(OMPI_COMM_WORLD_SIZE / SLURM_NTASKS / WORLD_SIZE) is missing or not a valid number\n", src);
		return NRR_LAUNCH_SETUP;
	}
	char msg[512];
	if (nrr_launch_place_error(c->nhosts, c->gpus_per_host, n, msg, sizeof(msg)) < 0) {
		fprintf(report, "ncclrr run: wrapper mode (world size %d from the outer launcher): %s\n", n, msg);
		return NRR_LAUNCH_SETUP;
	}
	if (!o->argv || !o->argv[0]) {
		fprintf(report, "ncclrr run: no program given\n");
		return NRR_LAUNCH_SETUP;
	}
	char prog[PATH_MAX];
	rc = nrr_launch_find_program(o->argv[0], prog, sizeof(prog));
	if (rc < 0) {
		fprintf(report, "ncclrr run: cannot run program '%s': %s\n", o->argv[0],
			rc == -EACCES ? "not executable" : "not found (give a path or put it in PATH)");
		return NRR_LAUNCH_SETUP;
	}
	struct nrr_rank_env re;
	memset(&re, 0, sizeof(re));
	nrr_launch_place(c->nhosts, c->gpus_per_host, n, rank, &re.pl);

	/* The per-host XML must outlive us (we exec): a per-user cache dir,
	 * one file per (cluster file, host), written atomically so the ranks
	 * of one host can race. */
	char xml[PATH_MAX], sysfs[PATH_MAX];
	if (c->write_host_xml) {
		const char *tmpbase = getenv("TMPDIR");
		char dir[PATH_MAX];
		snprintf(dir, sizeof(dir), "%s/ncclrr-%d", tmpbase && *tmpbase ? tmpbase : "/tmp",
			 (int)getuid());
		if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
			fprintf(report, "ncclrr run: cannot create %s: %s\n", dir, strerror(errno));
			return NRR_LAUNCH_SETUP;
		}
		struct stat st;
		uint64_t h = nrr_hash_str(o->topo_path, NRR_HASH_INIT);
		if (stat(o->topo_path, &st) == 0) {
			uint64_t mtime = (uint64_t)st.st_mtime;
			h = nrr_hash(&mtime, sizeof(mtime), h);
		}
		if (snprintf(xml, sizeof(xml), "%s/topo-%016llx-host%d.xml", dir, (unsigned long long)h, re.pl.host) >=
		    (int)sizeof(xml)) {
			fprintf(report, "ncclrr run: %s is too long a path (TMPDIR)\n", dir);
			return NRR_LAUNCH_SETUP;
		}
		char tmp[PATH_MAX + 32];
		snprintf(tmp, sizeof(tmp), "%s.%d.tmp", xml, (int)getpid());
		if (c->write_host_xml(c->ctx, re.pl.host, tmp, msg, sizeof(msg)) < 0) {
			fprintf(report, "ncclrr run: cannot write the topology of host %d to %s: %s\n",
				re.pl.host, tmp, msg);
			unlink(tmp);
			return NRR_LAUNCH_SETUP;
		}
		if (rename(tmp, xml) < 0) {
			fprintf(report, "ncclrr run: cannot rename %s to %s: %s\n", tmp, xml, strerror(errno));
			unlink(tmp);
			return NRR_LAUNCH_SETUP;
		}
		re.host_xml = xml;
		/* the sysfs view beside it, written whole under a name of ours
		 * then renamed: the first rank of the host to finish wins */
		size_t xl = strlen(xml);
		snprintf(sysfs, sizeof(sysfs), "%.*s.sysfs", (int)(xl - 4), xml);
		snprintf(tmp, sizeof(tmp), "%s.%d.tmp", sysfs, (int)getpid());
		struct stat sst;
		if (c->write_host_sysfs && stat(sysfs, &sst) < 0) {
			rm_dir(tmp);
			if (c->write_host_sysfs(c->ctx, re.pl.host, tmp, msg, sizeof(msg)) < 0) {
				fprintf(report, "ncclrr run: cannot write the sysfs view of host %d: %s\n",
					re.pl.host, msg);
				rm_dir(tmp);
				return NRR_LAUNCH_SETUP;
			}
			if (rename(tmp, sysfs) < 0) {
				int e = errno;
				rm_dir(tmp);
				if (e != EEXIST && e != ENOTEMPTY) {
					fprintf(report, "ncclrr run: cannot rename the sysfs view %s.%d.tmp to %s: %s\n",
						sysfs, (int)getpid(), sysfs, strerror(e));
					return NRR_LAUNCH_SETUP;
				}
			}
		}
		re.host_sysfs = c->write_host_sysfs ? sysfs : NULL;
	}
	re.topo_path = o->topo_path;
	re.host_name = c->host_names ? c->host_names[re.pl.host] : NULL;
	re.comm_id = o->comm_id;  /* NULL: the user's NCCL_COMM_ID stays */
	struct rlimit ml;
	struct nrr_env env;
	if (rank_env_build(o, c, rank, &re, &env, &ml, report) < 0)
		return NRR_LAUNCH_SETUP;
	if (!nrr_env_get(&env, "NCCL_COMM_ID") && rank == 0)
		fprintf(report, "ncclrr run: warning: wrapper mode and no NCCL_COMM_ID (set it or use "
			"--comm-id HOST:PORT) - the program must distribute the NCCL unique id itself\n");
	fflush(NULL);
	if (c->memlock && setrlimit(RLIMIT_MEMLOCK, &ml) < 0)
		fprintf(report, "ncclrr run: cannot set RLIMIT_MEMLOCK of rank %d: %s\n", rank, strerror(errno));
	execve(prog, o->argv, env.vars);
	fprintf(report, "ncclrr run: cannot execute %s: %s\n", prog, strerror(errno));
	nrr_env_free(&env);
	return NRR_LAUNCH_SETUP;
}
