/* SPDX-License-Identifier: MIT */
/*
 * test_fake_socket.c - the fault switch's connect() rules
 * (libncclrr-fake-socket.so), run with it in LD_PRELOAD (meson.build) and
 * NCCLRR_FAULT='connect:rank=3:thread=NCCL Service:nth=2:ECONNREFUSED;
 * connect:rank=3:thread=netfail:ENETUNREACH', NCCLRR_RANK=3:
 *  - a connect from another thread, and the first from 'NCCL Service  3',
 *    reach the listener;
 *  - the second from 'NCCL Service  3' is refused by the kernel: EINPROGRESS,
 *    SO_ERROR ECONNREFUSED, then ECONNABORTED when retried on the socket;
 *  - 'netfail' gets ENETUNREACH answered at once;
 *  - UNIX-domain connects are not touched.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "check.h"

static struct sockaddr_in listen_addr;

/* a non-blocking connect to the listener, as NCCL's NET/Socket makes it:
 * @return 0 connected, else the errno that ended it; *@retry_errno gets
 * what a second connect() on the same socket said (0: not retried) */
static int nb_connect(int *retry_errno)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	int rc = connect(fd, (struct sockaddr *)&listen_addr, sizeof(listen_addr));
	int err = rc == 0 ? 0 : errno;
	*retry_errno = 0;
	if (err == EINPROGRESS) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		poll(&p, 1, 5000);
		socklen_t l = sizeof(err);
		getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l);
	}
	if (err == ECONNREFUSED) {
		rc = connect(fd, (struct sockaddr *)&listen_addr, sizeof(listen_addr));
		*retry_errno = rc == 0 ? 0 : errno;
	}
	close(fd);
	return err;
}

struct job {
	const char *name;
	int n;
	int err[3], retry[3];
};

static void *run(void *arg)
{
	struct job *j = arg;
	prctl(PR_SET_NAME, j->name, 0, 0, 0);
	for (int i = 0; i < j->n; i++)
		j->err[i] = nb_connect(&j->retry[i]);
	return NULL;
}

static void in_thread(struct job *j)
{
	pthread_t t;
	pthread_create(&t, NULL, run, j);
	pthread_join(t, NULL);
}

int main(void)
{
	int l = socket(AF_INET, SOCK_STREAM, 0);
	listen_addr.sin_family = AF_INET;
	listen_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof(listen_addr);
	CHECK_FATAL(bind(l, (struct sockaddr *)&listen_addr, len) == 0 && listen(l, 64) == 0 &&
		    getsockname(l, (struct sockaddr *)&listen_addr, &len) == 0, "listener");

	struct job other = { .name = "main-ish", .n = 1 };
	in_thread(&other);
	CHECK(other.err[0] == 0, "a thread the rule does not name connects (got %s)", strerror(other.err[0]));

	struct job svc = { .name = "NCCL Service  3", .n = 3 };
	in_thread(&svc);
	CHECK(svc.err[0] == 0, "1st connect of 'NCCL Service  3' connects (nth=2): %s", strerror(svc.err[0]));
	CHECK(svc.err[1] == ECONNREFUSED, "2nd is refused by the kernel (got %s)", strerror(svc.err[1]));
	CHECK(svc.retry[1] == ECONNABORTED, "retried on the same socket: ECONNABORTED, as Linux says (got %s)",
	      strerror(svc.retry[1]));
	CHECK(svc.err[2] == 0, "3rd connects again (got %s)", strerror(svc.err[2]));

	struct job nf = { .name = "netfail", .n = 1 };
	in_thread(&nf);
	CHECK(nf.err[0] == ENETUNREACH, "an errno other than ECONNREFUSED is answered (got %s)", strerror(nf.err[0]));

	int u = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un ua = { .sun_family = AF_UNIX };
	snprintf(ua.sun_path + 1, sizeof(ua.sun_path) - 1, "ncclrr-test-fake-socket-%d", (int)getpid());
	errno = 0;
	int rc = connect(u, (struct sockaddr *)&ua, sizeof(ua));
	CHECK(rc < 0 && errno == ECONNREFUSED, "a UNIX-domain connect is the kernel's (got %s)", strerror(errno));
	close(u);
	close(l);
	return check_done("fake_socket");
}
