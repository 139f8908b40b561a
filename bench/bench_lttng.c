/* SPDX-License-Identifier: MIT */
/* LTTng-UST 2.13 peer: the cost of one event with one uint64 field, enabled (session driven by run.sh) or disabled. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "lttng_tp.h"

BENCH_OPAQUE static void ev_lttng(uint64_t w)
{
	lttng_ust_tracepoint(strata_bench, ev, w);
}

static void loop_enabled(uint64_t n, void *arg)
{
	(void)arg;
	for (uint64_t i = 0; i < n; i++)
		ev_lttng(i);
}

/* Disabled: the tracepoint inlined in the loop, as in real code. */
BENCH_OPAQUE static void loop_hot(uint64_t n, void *arg)
{
	(void)arg;
	for (uint64_t i = 0; i < n; i++) {
		lttng_ust_tracepoint(strata_bench, ev, i);
		BENCH_USE(i);
	}
}

BENCH_OPAQUE static void loop_hot_empty(uint64_t n, void *arg)
{
	(void)arg;
	for (uint64_t i = 0; i < n; i++)
		BENCH_USE(i);
}

#define STATE_LINE (&lttng_ust_tracepoint_strata_bench___ev.state)

BENCH_OPAQUE static void loop_cold(uint64_t n, uint32_t *ticks)
{
	for (uint64_t i = 0; i < n; i++) {
		bench_clflush(STATE_LINE);
		uint64_t t0 = bench_rdtsc_fenced();
		lttng_ust_tracepoint(strata_bench, ev, i);
		ticks[i] = (uint32_t)(bench_rdtsc_fenced() - t0);
	}
}

BENCH_OPAQUE static void loop_cold_empty(uint64_t n, uint32_t *ticks)
{
	for (uint64_t i = 0; i < n; i++) {
		bench_clflush(STATE_LINE);
		uint64_t t0 = bench_rdtsc_fenced();
		BENCH_USE(i);
		ticks[i] = (uint32_t)(bench_rdtsc_fenced() - t0);
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int threads = argc > 2 ? atoi(argv[2]) : 1;
	uint64_t n = bench_env_u64("BENCH_EVENTS", 1000000);
	int reps = (int)bench_env_u64("BENCH_REPS", 5);

	if (!strcmp(mode, "enabled") && threads >= 1) {
		uint64_t logged = bench_run("lttng", threads, n, n / 10, reps,
					    loop_enabled, NULL, NULL);
		/* recorded and discarded are counted by run.sh from the trace */
		printf("LOGGED suite=lttng threads=%d logged=%llu\n", threads,
		       (unsigned long long)logged);
		return 0;
	}
	if (!strcmp(mode, "disabled")) {
		bench_disabled("lttng-disabled", n * 20, n / 10 ? n / 10 : 1,
			       reps, loop_hot, loop_hot_empty, loop_cold,
			       loop_cold_empty);
		return 0;
	}
	fprintf(stderr, "usage: %s enabled THREADS | disabled\n", argv[0]);
	return 2;
}
