/* SPDX-License-Identifier: MIT */
/*
 * fdown.c - programs that treat every descriptor as their own, as daemons
 * and launchers' fork stubs do (tests/integration/test_fdown.sh).  Each
 * makes a socket (a traced call: the trace file opens), then
 *   closeall   closes 3..1023 one by one;
 *   closerange close_range(3, ~0U, 0);
 *   closefrom  closefrom(3);
 *   dup2       copies its socket over every descriptor above 2 it did not
 *              make (those /proc/self/fd lists), closes the copies and
 *              its socket;
 *   daemon     forks, setsid, forks again; the grandchild closes 0..1023,
 *              opens /dev/null as 0, 1 and 2 and goes on;
 * then opens DIR/data.txt, writes "hello\n" to it, makes another socket
 * and closes it, and writes the descriptor numbers it got to DIR/fds
 * (what it would write untraced: the test compares).
 * usage: fdown MODE DIR
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* descriptors above 2 open now, other than @keep */
static int others(int keep, int *fds, int max)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		die("opendir /proc/self/fd");
	int dfd = dirfd(d);
	struct dirent *e;
	while ((e = readdir(d)) && n < max) {
		int fd = atoi(e->d_name);
		if (e->d_name[0] != '.' && fd > 2 && fd != keep && fd != dfd)
			fds[n++] = fd;
	}
	closedir(d);
	return n;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: fdown closeall|closerange|closefrom|dup2|daemon DIR\n");
		return 2;
	}
	const char *mode = argv[1], *dir = argv[2];
	if (!strcmp(mode, "daemon")) {
		pid_t p = fork();
		if (p < 0)
			die("fork");
		if (p > 0) {
			int st;
			waitpid(p, &st, 0);
			/* the grandchild writes fds last; wait for it */
			char path[4096];
			snprintf(path, sizeof(path), "%s/fds", dir);
			for (int i = 0; i < 200 && access(path, F_OK); i++)
				usleep(50000);
			usleep(200000);
			return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
		}
		if (setsid() < 0)
			die("setsid");
		if ((p = fork()) < 0)
			die("fork");
		if (p > 0)
			_exit(0);
	}
	int s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0)
		die("socket");
	char line[256];
	int len = snprintf(line, sizeof(line), "socket %d\n", s);
	if (!strcmp(mode, "closeall") || !strcmp(mode, "daemon")) {
		for (int fd = !strcmp(mode, "daemon") ? 0 : 3; fd < 1024; fd++)
			close(fd);
		if (!strcmp(mode, "daemon")) {
			for (int i = 0; i < 3; i++)
				if (open("/dev/null", O_RDWR) != i)
					_exit(3);
		}
	} else if (!strcmp(mode, "closerange")) {
		if (close_range(3, ~0U, 0))
			die("close_range");
	} else if (!strcmp(mode, "closefrom")) {
		closefrom(3);
	} else if (!strcmp(mode, "dup2")) {
		int fds[64], n = others(s, fds, 64);
		for (int i = 0; i < n; i++) {
			if (dup2(s, fds[i]) != fds[i])
				die("dup2");
			close(fds[i]);
		}
		close(s);
	} else {
		fprintf(stderr, "fdown: unknown mode %s\n", mode);
		return 2;
	}
	char path[4096];
	snprintf(path, sizeof(path), "%s/data.txt", dir);
	int d = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (d < 0)
		die("open data.txt");
	if (write(d, "hello\n", 6) != 6)
		die("write");
	int s2 = socket(AF_INET, SOCK_STREAM, 0);
	len += snprintf(line + len, sizeof(line) - len, "data %d\nsocket %d\n", d, s2);
	close(s2);
	close(d);
	snprintf(path, sizeof(path), "%s/fds", dir);
	int o = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (o < 0 || write(o, line, (size_t)len) != len)
		die("write fds");
	close(o);
	return 0;
}
