/* SPDX-License-Identifier: MIT */
/* The cost of a probed call: one loop calling an empty function, built plain, with -pg (gprof), and with -finstrument-functions and libstrata-func (func_bench.sh). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

/* The function every call goes to: a call and a return, nothing else. */
__attribute__((noinline)) void bench_func_leaf(uint64_t v)
{
	sink = v;
}

__attribute__((no_instrument_function)) static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* bench_func CALLS REPS: the best of REPS loops, in ns per call */
__attribute__((no_instrument_function)) int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000;
	int reps = argc > 2 ? atoi(argv[2]) : 5;
	double best = 1e30;

	for (uint64_t i = 0; i < n / 10; i++) /* warm: rings, pages, caches */
		bench_func_leaf(i);
	for (int r = 0; r < reps; r++) {
		uint64_t t0 = now_ns();
		for (uint64_t i = 0; i < n; i++)
			bench_func_leaf(i);
		double ns = (double)(now_ns() - t0) / (double)n;
		if (ns < best)
			best = ns;
	}
	printf("FUNC calls=%llu reps=%d ns_call=%.3f\n", (unsigned long long)n, reps, best);
	return 0;
}
