/* SPDX-License-Identifier: MIT */
/*
 * forker - a process tree for the tracer's safety tests (test_record.sh):
 * the parent makes socket calls, forks a child that makes its own, and the
 * child execs this program again ("exec" mode) which makes more and lists
 * its open descriptors: none may be a trace file.  Threads record at the
 * same time as the fork.  errno must come out of traced calls as libc
 * left it.  Two more threads carry names (pthread_setname_np): one before
 * its first traced call, one named by the main thread after it.  Prints one line per check; exit 0 when all hold.
 *
 * usage: forker          the whole tree
 *        forker exec N   the exec'd image (N: the parent's count of calls)
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static int fails;

#define CHECK(cond, ...)                                   \
	do {                                               \
		if (!(cond)) {                             \
			printf("FAIL: " __VA_ARGS__);      \
			printf("\n");                      \
			fails++;                           \
		}                                          \
	} while (0)

/* a socketpair round trip: 6 traced calls */
static void chat(const char *who)
{
	int sv[2];
	char buf[32];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "%s: socketpair: %s", who, strerror(errno));
	CHECK(send(sv[0], who, strlen(who), 0) == (ssize_t)strlen(who), "%s: send", who);
	CHECK(recv(sv[1], buf, sizeof(buf), 0) == (ssize_t)strlen(who), "%s: recv", who);
	CHECK(write(sv[1], "x", 1) == 1, "%s: write", who);
	close(sv[0]);
	close(sv[1]);
}

static void check_errno(void)
{
	errno = 0;
	CHECK(close(-1) == -1 && errno == EBADF, "close(-1): errno %d, want EBADF", errno);
	errno = 0;
	CHECK(send(-1, "x", 1, 0) == -1 && errno == EBADF, "send(-1): errno %d, want EBADF", errno);
	int sv[2];
	errno = 1234;   /* a successful call leaves errno alone */
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0 && errno == 1234, "socketpair changed errno to %d",
	      errno);
	close(sv[0]);
	close(sv[1]);
}

/* no descriptor of this process may be a trace file (they are O_CLOEXEC) */
static void check_fds(void)
{
	char path[64], target[4096];
	for (int fd = 0; fd < 1024; fd++) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		ssize_t n = readlink(path, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		CHECK(!strstr(target, ".nrt"), "fd %d of the exec'd image is a trace file: %s", fd, target);
	}
}

/* thread names (metadata thread.TID=NAME): one named before its first
 * traced call, one named by the main thread after it (as NCCL names its
 * service threads from their creator) and still alive at exit */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int late_ready;

static void *named(void *arg)
{
	pthread_setname_np(pthread_self(), "NCCL Service  3");
	chat("named");
	return arg;
}

static void *late(void *arg)
{
	chat("late");
	pthread_mutex_lock(&mu);
	late_ready = 1;
	pthread_cond_broadcast(&cv);
	for (;;)
		pthread_cond_wait(&cv, &mu);   /* alive until the process exits */
	return arg;
}

static void *busy(void *arg)
{
	for (int i = 0; i < 200; i++)
		chat("thread");
	return arg;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "exec")) {
		check_fds();   /* before any traced call opens this image's own file */
		chat("exec");
		check_errno();
		printf("exec image: %s\n", fails ? "failed" : "ok");
		return fails ? 1 : 0;
	}
	chat("parent");
	check_errno();
	pthread_t th;
	pthread_create(&th, NULL, busy, NULL);
	pid_t p = fork();
	if (p == 0) {
		chat("child");
		fflush(stdout);
		execl("/proc/self/exe", argv[0], "exec", "1", (char *)NULL);
		printf("FAIL: exec: %s\n", strerror(errno));
		_exit(1);
	}
	pthread_join(th, NULL);
	pthread_t tn, tl;
	pthread_create(&tn, NULL, named, NULL);
	pthread_join(tn, NULL);
	pthread_create(&tl, NULL, late, NULL);
	pthread_mutex_lock(&mu);
	while (!late_ready)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	pthread_setname_np(tl, "NCCL Progress 3");
	int st = 0;
	waitpid(p, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child exited %d", st);
	printf("parent: %s\n", fails ? "failed" : "ok");
	return fails ? 1 : 0;
}
