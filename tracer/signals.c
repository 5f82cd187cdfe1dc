/* SPDX-License-Identifier: MIT */
/*
 * signals.c - writing the trace out when the process dies or is asked to,
 * and completing it across exec and _exit.
 *
 * SIGSEGV, SIGBUS, SIGABRT and SIGTERM (and SIGUSR1 in ring mode) get a
 * handler that writes the trace out (nrr_writer_dump: the compression
 * thread writes, this thread waits up to 5 s; async-signal-safe; before a
 * default action that ends the process, nrr_writer_dump_last: nothing is
 * written after it) and then does what the program asked for that
 * signal: its own handler, ignore, or the default action (the process
 * dies of the same signal, core dump included).  sigaction() and
 * signal() for these signals keep the program's wish for that forwarding
 * and report it back as the current action, so the program sees no
 * difference.  In ring mode SIGUSR1 only
 * writes the trace (its default action would end the process); a program
 * that installs its own SIGUSR1 handler gets it called as well.
 *
 * exec*() completes the trace first (the new image starts a new file);
 * _exit() and _Exit() complete it as exit() does (destructor in core.c).
 * The trace says how it ended (metadata `end`, FORMAT.md): "signal NAME"
 * when the default action of a fatal signal ends the process, "exec",
 * "exit STATUS" (core.c).
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tracer_internal.h"

static const int owned_fatal[] = { SIGSEGV, SIGBUS, SIGABRT, SIGTERM };
static bool owned[NSIG];
static struct sigaction user[NSIG];   /* what the program asked for */
static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);
static bool ring;

static void forward(int sig, siginfo_t *si, void *uc)
{
	struct sigaction *ua = &user[sig];
	if (ua->sa_handler == SIG_IGN)
		return;
	if (ua->sa_handler == SIG_DFL) {
		if (sig == SIGUSR1 && ring)
			return;
		struct sigaction dfl = { .sa_handler = SIG_DFL };
		real_sigaction(sig, &dfl, NULL);
		/* a fault happens again on return; anything else is raised
		 * again (blocked in this handler, delivered when it returns) */
		if (!((sig == SIGSEGV || sig == SIGBUS) && si && si->si_code > 0))
			raise(sig);
		return;
	}
	if (ua->sa_flags & SA_SIGINFO)
		ua->sa_sigaction(sig, si, uc);
	else
		ua->sa_handler(sig);
	if (ua->sa_flags & SA_RESETHAND)
		ua->sa_handler = SIG_DFL;
}

/* "signal SIGABRT" for the trace's end note, without stdio (this runs in
 * a signal handler) */
static void end_by_signal(int sig)
{
	static const struct {
		int sig;
		const char *name;
	} names[] = { { SIGSEGV, "SIGSEGV" }, { SIGBUS, "SIGBUS" }, { SIGABRT, "SIGABRT" }, { SIGTERM, "SIGTERM" } };
	char text[32] = "signal ";
	size_t n = 7;
	const char *name = NULL;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].sig == sig)
			name = names[i].name;
	if (name) {
		for (; *name && n < sizeof(text) - 1; name++)
			text[n++] = *name;
	} else {   /* "signal N" */
		char d[12];
		size_t k = 0;
		for (unsigned v = (unsigned)sig; k == 0 || v; v /= 10)
			d[k++] = (char)('0' + v % 10);
		while (k && n < sizeof(text) - 1)
			text[n++] = d[--k];
	}
	text[n] = '\0';
	nrr_trace_end_note(text, false);
}

static void handler(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	/* the default action ends the process: the trace says so (a program's
	 * own handler may go on, and its exit says how it ends), and that
	 * dump is the file's last (a tail written as the process dies is cut
	 * short, and the one with the end note gone: 1 in 100 SIGTERMs of a
	 * busy python3 on a loaded machine) */
	bool dies = user[sig].sa_handler == SIG_DFL && !(sig == SIGUSR1 && ring);
	if (dies)
		end_by_signal(sig);
	/* a fatal signal: wait for the data to be on disk; SIGUSR1: ask only */
	nrr_trace_dump(sig == SIGUSR1 ? 0 : 5000, dies);
	forward(sig, si, uc);
	errno = saved;
}

/* Our handler for @sig in the kernel, with the program's mask. */
static int arm(int sig, const sigset_t *mask)
{
	struct sigaction mine = { .sa_sigaction = handler, .sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART };
	mine.sa_mask = *mask;
	return real_sigaction(sig, &mine, NULL);
}

static bool resolve_real(void)
{
	if (!real_sigaction)
		real_sigaction = (int (*)(int, const struct sigaction *, struct sigaction *))nrr_real_next("sigaction");
	return real_sigaction != NULL;
}

static void install(int sig)
{
	struct sigaction cur;
	if (real_sigaction(sig, NULL, &cur))
		return;
	if (cur.sa_handler == SIG_IGN && sig != SIGUSR1)
		return;   /* ignored by whoever started us: stays ignored, not ours */
	user[sig] = cur;
	if (arm(sig, &cur.sa_mask) == 0)
		owned[sig] = true;
}

void nrr_signals_init(bool ring_mode)
{
	ring = ring_mode;
	if (!resolve_real())
		return;
	for (size_t i = 0; i < sizeof(owned_fatal) / sizeof(owned_fatal[0]); i++)
		install(owned_fatal[i]);
	if (ring)
		install(SIGUSR1);
}

NRR_HOOK int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (!resolve_real()) {
		errno = ENOSYS;
		return -1;
	}
	if (sig <= 0 || sig >= NSIG || !owned[sig])
		return real_sigaction(sig, act, old);
	if (old)
		*old = user[sig];
	if (act) {
		user[sig] = *act;
		arm(sig, &act->sa_mask);   /* the kernel keeps our handler, with the program's mask */
	}
	return 0;
}

NRR_HOOK sighandler_t signal(int sig, sighandler_t h)
{
	if (sig <= 0 || sig >= NSIG || !owned[sig]) {
		sighandler_t (*real)(int, sighandler_t) = (sighandler_t (*)(int, sighandler_t))nrr_real_next("signal");
		if (!real) {
			errno = ENOSYS;
			return SIG_ERR;
		}
		return real(sig, h);
	}
	struct sigaction act = { .sa_handler = h, .sa_flags = SA_RESTART }, old;
	sigemptyset(&act.sa_mask);
	sigaction(sig, &act, &old);
	return old.sa_handler;
}

/* ------------------------------------------------------- exec and _exit */

#define REAL(ret, name, ...)                                                          \
	static ret (*real)(__VA_ARGS__);                                              \
	if (!real)                                                                    \
		real = (ret (*)(__VA_ARGS__))nrr_real_next(name);

/* Around an exec: complete this image's trace; if the exec fails, the
 * program goes on and records into a new file. */
#define EXEC(call)                                 \
	do {                                       \
		nrr_trace_end_note("exec", false); \
		nrr_trace_finish();                \
		int r_ = (call);                   \
		int e_ = errno;                    \
		nrr_trace_reopen();                \
		errno = e_;                        \
		return r_;                         \
	} while (0)

NRR_HOOK int execve(const char *path, char *const argv[], char *const envp[])
{
	REAL(int, "execve", const char *, char *const[], char *const[]);
	EXEC(real ? real(path, argv, envp) : (errno = ENOSYS, -1));
}

NRR_HOOK int execv(const char *path, char *const argv[])
{
	REAL(int, "execv", const char *, char *const[]);
	EXEC(real ? real(path, argv) : (errno = ENOSYS, -1));
}

NRR_HOOK int execvp(const char *file, char *const argv[])
{
	REAL(int, "execvp", const char *, char *const[]);
	EXEC(real ? real(file, argv) : (errno = ENOSYS, -1));
}

NRR_HOOK int execvpe(const char *file, char *const argv[], char *const envp[])
{
	REAL(int, "execvpe", const char *, char *const[], char *const[]);
	EXEC(real ? real(file, argv, envp) : (errno = ENOSYS, -1));
}

NRR_HOOK int fexecve(int fd, char *const argv[], char *const envp[])
{
	REAL(int, "fexecve", int, char *const[], char *const[]);
	EXEC(real ? real(fd, argv, envp) : (errno = ENOSYS, -1));
}

NRR_HOOK int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
	REAL(int, "execveat", int, const char *, char *const[], char *const[], int);
	EXEC(real ? real(dirfd, path, argv, envp, flags) : (errno = ENOSYS, -1));
}

/* execl, execlp, execle: collect the arguments and take the v forms */
static char **collect(const char *arg0, va_list ap, char *const **envp)
{
	va_list c;
	va_copy(c, ap);
	size_t n = 1;
	while (va_arg(c, char *))
		n++;
	va_end(c);
	char **v = malloc((n + 1) * sizeof(*v));
	if (!v)
		return NULL;
	v[0] = (char *)arg0;
	for (size_t i = 1; i <= n; i++)
		v[i] = i < n ? va_arg(ap, char *) : NULL;
	if (n)
		(void)va_arg(ap, char *);   /* the terminating NULL */
	if (envp)
		*envp = va_arg(ap, char *const *);
	return v;
}

/* execl and execlp: the argument list as an array, to the v form */
static int exec_list(int (*v)(const char *, char *const[]), const char *file, const char *arg, va_list ap)
{
	char **argv = collect(arg, ap, NULL);
	if (!argv) {
		errno = ENOMEM;
		return -1;
	}
	int r = v(file, argv);
	free(argv);
	return r;
}

NRR_HOOK int execl(const char *path, const char *arg, ...)
{
	va_list ap;
	va_start(ap, arg);
	int r = exec_list(execv, path, arg, ap);
	va_end(ap);
	return r;
}

NRR_HOOK int execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	va_start(ap, arg);
	int r = exec_list(execvp, file, arg, ap);
	va_end(ap);
	return r;
}

NRR_HOOK int execle(const char *path, const char *arg, ...)
{
	va_list ap;
	char *const *envp = NULL;
	va_start(ap, arg);
	char **v = collect(arg, ap, &envp);
	va_end(ap);
	if (!v) {
		errno = ENOMEM;
		return -1;
	}
	int r = execve(path, v, envp);
	free(v);
	return r;
}

NRR_HOOK void _exit(int status)
{
	nrr_trace_end_exit(status);
	nrr_trace_finish();
	static void (*real)(int);
	if (!real)
		real = (void (*)(int))nrr_real_next("_exit");
	if (real)
		real(status);
	for (;;)
		syscall(SYS_exit_group, status);
}

NRR_HOOK void _Exit(int status)
{
	_exit(status);
}
