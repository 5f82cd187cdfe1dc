/* SPDX-License-Identifier: MIT */
/*
 * fdcalls.c - the descriptor calls of launchers and runtimes (Open MPI's
 * mpirun/orted, libevent, PMIx) on a TCP connection between a parent and
 * a forked child, for tests/integration/test_fdcalls.sh: writev/readv,
 * sendmmsg/recvmmsg, epoll, select/pselect/ppoll, pipe/pipe2, dup/dup2/
 * dup3, eventfd, fcntl(F_DUPFD), and with `undescribed` as argument a
 * sendfile, a splice and a syscall(SYS_sendto) on the socket (calls the
 * API description does not describe).
 * Exit status 0 when every exchange went as planned.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define FAIL(...) do { fprintf(stderr, "fdcalls: " __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

static void read_all(int fd, void *b, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, (char *)b + got, n - got);
		if (r <= 0)
			FAIL("read: %zd %s", r, strerror(errno));
		got += (size_t)r;
	}
}

static void wait_readable_select(int fd)
{
	fd_set rs;
	FD_ZERO(&rs);
	FD_SET(fd, &rs);
	if (select(fd + 1, &rs, NULL, NULL, NULL) != 1 || !FD_ISSET(fd, &rs))
		FAIL("select");
}

static int child(unsigned short port, int pipe_w, int undescribed)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (connect(s, (struct sockaddr *)&a, sizeof(a)))
		FAIL("connect: %s", strerror(errno));
	/* an out-of-band message: header and body in one writev */
	char hdr[4] = "HDR:", body[12] = "hello-writev";
	struct iovec iov[2] = { { hdr, sizeof(hdr) }, { body, sizeof(body) } };
	if (writev(s, iov, 2) != 16)
		FAIL("writev");
	/* the answer: wait with select, pselect and ppoll, read it */
	wait_readable_select(s);
	fd_set rs;
	FD_ZERO(&rs);
	FD_SET(s, &rs);
	struct timespec ts = { 5, 0 };
	if (pselect(s + 1, &rs, NULL, NULL, &ts, NULL) != 1)
		FAIL("pselect");
	struct pollfd pf = { .fd = s, .events = POLLIN };
	if (ppoll(&pf, 1, &ts, NULL) != 1)
		FAIL("ppoll");
	char ok[2];
	read_all(s, ok, 2);
	if (memcmp(ok, "ok", 2))
		FAIL("answer");
	/* two messages in one call, through copies of the socket */
	int d = dup(s), d2 = dup2(s, 100), d3 = dup3(s, 101, O_CLOEXEC), d4 = fcntl(s, F_DUPFD_CLOEXEC, 110);
	if (d < 0 || d2 != 100 || d3 != 101 || d4 < 110)
		FAIL("dup");
	char m1[3] = "mm1", m2[5] = "mm2-2";
	struct iovec v1 = { m1, sizeof(m1) }, v2 = { m2, sizeof(m2) };
	struct mmsghdr mm[2] = { { .msg_hdr = { .msg_iov = &v1, .msg_iovlen = 1 } },
				 { .msg_hdr = { .msg_iov = &v2, .msg_iovlen = 1 } } };
	if (sendmmsg(d2, mm, 2, 0) != 2)
		FAIL("sendmmsg: %s", strerror(errno));
	close(d);
	close(d2);
	close(d3);
	close(d4);
	if (undescribed) {   /* bytes the trace cannot hold */
		char tmp[] = "/tmp/fdcalls-XXXXXX";
		int f = mkstemp(tmp);
		if (f < 0 || write(f, "file", 4) != 4 || lseek(f, 0, SEEK_SET) != 0)
			FAIL("temporary file");
		unlink(tmp);
		if (sendfile(s, f, NULL, 4) != 4)
			FAIL("sendfile: %s", strerror(errno));
		close(f);
		int sp[2];
		if (pipe(sp) || write(sp[1], "spl", 3) != 3 || splice(sp[0], NULL, s, NULL, 3, 0) != 3)
			FAIL("splice: %s", strerror(errno));
		if (syscall(SYS_sendto, s, "raw", 3, 0, NULL, 0) != 3)
			FAIL("syscall(SYS_sendto): %s", strerror(errno));
	}
	/* done: tell the parent over the pipe */
	if (write(pipe_w, "D", 1) != 1)
		FAIL("pipe write");
	char end;
	if (read(s, &end, 1) != 0)
		FAIL("no end of stream");
	close(s);
	return 0;
}

int main(int argc, char **argv)
{
	int undescribed = argc > 1 && !strcmp(argv[1], "undescribed");
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 4) || getsockname(l, (struct sockaddr *)&a, &al))
		FAIL("listen");
	int p[2], q[2];
	if (pipe(p) || pipe2(q, O_CLOEXEC))
		FAIL("pipe");
	pid_t pid = fork();
	if (pid == 0) {
		/* as a launcher's fork stub does: close everything inherited
		 * (the trace file's descriptor too, once the first close has
		 * opened it: the tracer answers EBADF, as untraced) */
		close(p[0]);   /* a traced call: the child's trace file opens */
		for (int fd = 3; fd < 1024; fd++)
			if (fd != p[1])
				close(fd);
		return child(ntohs(a.sin_port), p[1], undescribed);
	}
	close(p[1]);
	int c = accept(l, NULL, NULL);
	if (c < 0)
		FAIL("accept");
	/* libevent's loop: an epoll instance with the connection and a wake-up eventfd */
	int ep = epoll_create1(EPOLL_CLOEXEC), ev = eventfd(0, EFD_CLOEXEC);
	struct epoll_event e = { .events = EPOLLIN, .data.fd = c };
	struct epoll_event w = { .events = EPOLLIN, .data.fd = ev };
	if (ep < 0 || ev < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, c, &e) || epoll_ctl(ep, EPOLL_CTL_ADD, ev, &w))
		FAIL("epoll_ctl: %s", strerror(errno));
	uint64_t one = 1;
	if (write(ev, &one, 8) != 8 || read(ev, &one, 8) != 8)
		FAIL("eventfd");
	struct epoll_event got[4];
	int n;
	do
		n = epoll_wait(ep, got, 4, 5000);
	while (n == 1 && got[0].data.fd == ev);
	if (n < 1)
		FAIL("epoll_wait");
	char hdr[4], body[12];
	struct iovec iov[2] = { { hdr, sizeof(hdr) }, { body, sizeof(body) } };
	ssize_t r = 0;
	while (r < 16) {   /* (loopback delivers it at once, but a reader may not count on it) */
		ssize_t k = readv(c, iov, 2);
		if (k <= 0)
			FAIL("readv");
		r += k;
		if (r < 16)
			FAIL("readv short: %zd", r);
	}
	if (memcmp(hdr, "HDR:", 4) || memcmp(body, "hello-writev", 12))
		FAIL("readv bytes");
	struct iovec ans = { "ok", 2 };
	if (writev(c, &ans, 1) != 2)
		FAIL("writev answer");
	/* the two messages */
	if (epoll_pwait(ep, got, 4, 5000, NULL) < 1)
		FAIL("epoll_pwait");
	char m1[3], m2[5];
	struct iovec v1 = { m1, sizeof(m1) }, v2 = { m2, sizeof(m2) };
	struct mmsghdr mm[2] = { { .msg_hdr = { .msg_iov = &v1, .msg_iovlen = 1 } },
				 { .msg_hdr = { .msg_iov = &v2, .msg_iovlen = 1 } } };
	int k = 0;
	while (k < 2) {
		int g = recvmmsg(c, mm + k, 2 - (unsigned)k, MSG_WAITFORONE, NULL);
		if (g <= 0)
			FAIL("recvmmsg: %s", strerror(errno));
		k += g;
	}
	if (memcmp(m1, "mm1", 3) || memcmp(m2, "mm2-2", 5))
		FAIL("recvmmsg bytes");
	char d, file[10];
	read_all(p[0], &d, 1);
	if (undescribed) {
		read_all(c, file, 10);
		if (memcmp(file, "filesplraw", 10))
			FAIL("sendfile, splice and syscall bytes");
	}
	close(c);
	int st;
	waitpid(pid, &st, 0);
	close(ep);
	close(ev);
	close(p[0]);
	close(q[0]);
	close(q[1]);
	close(l);
	printf("fdcalls: parent and child exchanged everything%s\n", undescribed ? " (and undescribed calls)" : "");
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
