/* SPDX-License-Identifier: MIT */
/*
 * exit_on_load.c - a stand-in for the fake runtime's libcuda.so.1 that
 * exits (status 3) as a replay worker loads it, as a sanitizer's report
 * or an abort handler ends a process without a signal (or, with
 * EXIT_ON_LOAD_SIGNAL=N, dies of signal N, as a crash does)
 * (tests/replay/test_replay.sh dead).  Only in a worker: the worker sets
 * NCCLRR_RANK before it loads the runtime.
 */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void exit_on_load(void)
{
	if (!getenv("NCCLRR_RANK"))
		return;
	/* EXIT_ON_LOAD_SIGNAL=N: die of signal N instead, as a crash does */
	const char *sig = getenv("EXIT_ON_LOAD_SIGNAL");
	if (sig && atoi(sig) > 0) {
		signal(atoi(sig), SIG_DFL);
		raise(atoi(sig));
	}
	_exit(3);
}
