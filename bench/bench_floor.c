/* SPDX-License-Identifier: MIT */
/* The floor every tracer is compared with: rdtsc plus a 16-byte thread-local store per event. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

static void loop_floor(uint64_t n, void *arg)
{
	(void)arg;
	for (uint64_t i = 0; i < n; i++)
		bench_floor_event(i);
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 1;
	uint64_t n = bench_env_u64("BENCH_EVENTS", 1000000);
	int reps = (int)bench_env_u64("BENCH_REPS", 5);

	if (threads < 1) {
		fprintf(stderr, "usage: %s [THREADS]\n", argv[0]);
		return 2;
	}
	printf("INFO tsc_ghz=%.4f\n", bench_tsc_ghz());
	uint64_t logged = bench_run("floor", threads, n, n / 10, reps,
				    loop_floor, NULL, NULL);
	printf("COUNT suite=floor threads=%d logged=%llu recorded=%llu lost=0\n",
	       threads, (unsigned long long)logged, (unsigned long long)logged);
	return 0;
}
