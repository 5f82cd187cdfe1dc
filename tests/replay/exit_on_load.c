/* SPDX-License-Identifier: MIT */
/*
 * exit_on_load.c - a stand-in for the fake runtime's libcuda.so.1 that
 * exits (status 3) as a replay worker loads it, as a sanitizer's report
 * or an abort handler ends a process without a signal
 * (tests/replay/test_replay.sh dead).  Only in a worker: the worker sets
 * NCCLRR_RANK before it loads the runtime.
 */
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void exit_on_load(void)
{
	if (getenv("NCCLRR_RANK"))
		_exit(3);
}
