/* SPDX-License-Identifier: MIT */
/*
 * sockbuf.c - two processes joined by a TCP connection over loopback, each
 * sending what the kernel takes of 8 MB without waiting (a non-blocking
 * send, as NCCL's bootstrap sends) and neither reading: both exit with
 * megabytes in the kernel's buffers.  Recorded and replayed by
 * test_sockbuf.sh with socket buffers smaller than the recording's, where
 * each replayed process has bytes the other never reads when it ends.
 * Prints "sockbuf: sent N" per process; exit 0 when both sent some.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 1) < 0 ||
	    getsockname(l, (struct sockaddr *)&a, &al) < 0) {
		perror("sockbuf: listen");
		return 1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("sockbuf: fork");
		return 1;
	}
	int s;
	if (pid == 0) {
		s = socket(AF_INET, SOCK_STREAM, 0);
		if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)) < 0) {
			perror("sockbuf: connect");
			return 1;
		}
	} else if ((s = accept(l, NULL, NULL)) < 0) {
		perror("sockbuf: accept");
		return 1;
	}
	size_t n = 8u << 20, sent = 0;
	char *b = malloc(n);
	if (!b)
		return 1;
	memset(b, 'x', n);
	while (sent < n) {
		ssize_t w = send(s, b + sent, n - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w <= 0)
			break;
		sent += (size_t)w;
	}
	printf("sockbuf: sent %zu\n", sent);
	fflush(stdout);
	int st = 0;
	if (pid > 0 && (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)))
		return 1;
	return sent ? 0 : 1;
}
