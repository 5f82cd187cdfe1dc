/* SPDX-License-Identifier: MIT */
/*
 * dualstack.c - what PyTorch's TCPStore does with its sockets: a
 * dual-stack listener on [::] (a port the kernel picks) and two clients
 * on another thread's side, an IPv6 socket connecting to the v4-mapped
 * [::ffff:127.0.0.1] and an IPv4 socket connecting to 127.0.0.1; each
 * sends a line and reads the server's answer.  Recorded and replayed by
 * test_dualstack.sh.  Exit 0 when both exchanges went through.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int lfd;

static void *server(void *arg)
{
	(void)arg;
	for (int i = 0; i < 2; i++) {
		int a = accept(lfd, NULL, NULL);
		char b[16] = { 0 };
		if (a < 0 || recv(a, b, 8, MSG_WAITALL) != 8)
			return (void *)1;
		b[0] = 'A';
		if (send(a, b, 8, 0) != 8)
			return (void *)1;
		close(a);
	}
	return NULL;
}

static int client(int fam, uint16_t port, const char *msg)
{
	int fd = socket(fam, SOCK_STREAM, 0);
	int r;
	if (fam == AF_INET6) {
		struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = port };
		inet_pton(AF_INET6, "::ffff:127.0.0.1", &a.sin6_addr);
		r = connect(fd, (struct sockaddr *)&a, sizeof(a));
	} else {
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = port };
		inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
		r = connect(fd, (struct sockaddr *)&a, sizeof(a));
	}
	char b[16] = { 0 };
	if (r < 0 || send(fd, msg, 8, 0) != 8 || recv(fd, b, 8, MSG_WAITALL) != 8 || b[0] != 'A') {
		perror("client");
		return 1;
	}
	close(fd);
	return 0;
}

int main(void)
{
	lfd = socket(AF_INET6, SOCK_STREAM, 0);
	int off = 0;
	setsockopt(lfd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT };
	socklen_t l = sizeof(a);
	if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(lfd, 8) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&a, &l) < 0) {
		perror("listen");
		return 1;
	}
	pthread_t t;
	pthread_create(&t, NULL, server, NULL);
	int bad = client(AF_INET6, a.sin6_port, "v6mapped") + client(AF_INET, a.sin6_port, "ipv4only");
	void *sr;
	pthread_join(t, &sr);
	close(lfd);
	printf("dualstack: %s\n", bad || sr ? "FAILED" : "ok");
	return bad || sr;
}
