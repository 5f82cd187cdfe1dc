/* SPDX-License-Identifier: MIT */
/*
 * bench_empty - a shared library with nothing in it: bench_tracer.sh
 * preloads it into `bench_tracer one` to measure what mapping one more
 * library costs at all (the floor under the tracer's fixed cost).
 */
int nrr_bench_empty(void);
int nrr_bench_empty(void)
{
	return 0;
}
