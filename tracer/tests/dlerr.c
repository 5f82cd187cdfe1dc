/* SPDX-License-Identifier: MIT */
/*
 * dlerr.c - what a program's dlerror() says after a failed dlopen or
 * dlsym, when traced calls come in between (each the process's first
 * call of its kind, so the tracer looks the real function up then).
 * Traced and untraced runs must print the same lines
 * (tests/integration/test_record.sh, case dlerror).
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void show(const char *what)
{
	const char *e = dlerror();
	printf("%s: %s\n", what, e ? e : "(no error)");
	/* a second dlerror() after the first always says nothing */
	e = dlerror();
	printf("%s again: %s\n", what, e ? e : "(no error)");
}

int main(void)
{
	/* the first traced call of the process (the tracer opens its trace) */
	if (dlopen("libncclrr-no-such-library.so.1", RTLD_NOW))
		return 2;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	show("dlopen, then socket");

	/* a traced call whose real function is looked up now */
	if (dlopen("libncclrr-no-such-library.so.2", RTLD_LAZY))
		return 2;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	show("dlopen, then getsockname");

	/* dlsym failing, then hooked libc calls (signal, sigaction) and
	 * NCCL-style fwrite */
	if (dlsym(RTLD_DEFAULT, "ncclrr_no_such_symbol"))
		return 2;
	signal(SIGUSR2, SIG_DFL);
	struct sigaction sa;
	sigaction(SIGUSR2, NULL, &sa);
	fwrite("", 1, 0, stderr);
	show("dlsym, then signal, sigaction, fwrite");

	if (dlopen("libncclrr-no-such-library.so.3", RTLD_NOW))
		return 2;
	close(fd);
	show("dlopen, then close");
	return 0;
}
