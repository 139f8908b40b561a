/* SPDX-License-Identifier: MIT */
/* The floor every tracer is compared with (rdtsc plus a 16-byte thread-local store per event), and the cost of its parts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <strata/inline/atomic.h>

#include "bench_util.h"

static void loop_floor(uint64_t n, void *arg)
{
	(void)arg;
	for (uint64_t i = 0; i < n; i++)
		bench_floor_event(i);
}

/*
 * Where a tracer's time goes on this machine: one opaque call per event
 * doing only one of the things a lockless reserve/commit does. The words
 * are thread-local, so no cache line moves between CPUs; what is left is
 * the cost of the instruction itself.
 */
static __thread uint64_t part_word __attribute__((aligned(64)));
static __thread uint64_t part_word2 __attribute__((aligned(64)));

BENCH_OPAQUE static void part_call(uint64_t w)
{
	BENCH_USE(w);
}

BENCH_OPAQUE static void part_rdtsc(uint64_t w)
{
	part_word = bench_rdtsc() + w;
}

/* The trace clock where the TSC is not vouched for (docs/format.md §5):
 * CLOCK_MONOTONIC through the vDSO. */
BENCH_OPAQUE static void part_mono(uint64_t w)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	part_word = (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec + w;
}

BENCH_OPAQUE static void part_cas(uint64_t w)
{
	uint64_t o = part_word;
	strata_cas_acq_rel(&part_word, &o, o + w); /* as the ring's F */
}

BENCH_OPAQUE static void part_xadd(uint64_t w)
{
	strata_add_release(&part_word, w); /* as the ring's commit */
}

/* The minimum of a CAS-reserve tracer: rdtsc, CAS the write offset, store
 * 16 bytes, atomically add to a commit count. */
BENCH_OPAQUE static void part_model(uint64_t w)
{
	bench_floor_event(w);
	uint64_t o = part_word;
	strata_cas_acq_rel(&part_word, &o, o + 16);
	strata_add_release(&part_word2, 16);
}

#define PART_LOOP(name)                                                        \
	static void loop_##name(uint64_t n, void *arg)                        \
	{                                                                      \
		(void)arg;                                                     \
		for (uint64_t i = 0; i < n; i++)                               \
			name(i);                                               \
	}
PART_LOOP(part_call)
PART_LOOP(part_rdtsc)
PART_LOOP(part_mono)
PART_LOOP(part_cas)
PART_LOOP(part_xadd)
PART_LOOP(part_model)

int main(int argc, char **argv)
{
	const char *arg = argc > 1 ? argv[1] : "1";
	uint64_t n = bench_env_u64("BENCH_EVENTS", 1000000);
	int reps = (int)bench_env_u64("BENCH_REPS", 5);

	printf("INFO tsc_ghz=%.4f\n", bench_tsc_ghz());
	if (!strcmp(arg, "parts")) {
		static const struct {
			const char *suite;
			bench_loop_fn fn;
		} p[] = {{"part-call", loop_part_call},
			 {"part-rdtsc", loop_part_rdtsc},
			 {"part-mono", loop_part_mono},
			 {"part-cas", loop_part_cas},
			 {"part-xadd", loop_part_xadd},
			 {"part-model", loop_part_model}};
		for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++)
			bench_run(p[i].suite, 1, n, n / 10, reps, p[i].fn, NULL,
				  NULL);
		return 0;
	}
	int threads = atoi(arg);
	if (threads < 1) {
		fprintf(stderr, "usage: %s [THREADS | parts]\n", argv[0]);
		return 2;
	}
	uint64_t logged = bench_run("floor", threads, n, n / 10, reps,
				    loop_floor, NULL, NULL);
	printf("COUNT suite=floor threads=%d logged=%llu recorded=%llu lost=0\n",
	       threads, (unsigned long long)logged, (unsigned long long)logged);
	return 0;
}
