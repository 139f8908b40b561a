/* SPDX-License-Identifier: MIT */
/*
 * Where the library chose the TSC as trace clock (format.md §5: the
 * kernel's clocksource, or vouched for by a KVM host), it must be one
 * clock across CPUs, or the per-CPU streams of a trace would merge out of
 * order. Two checks, on this machine's real CPUs:
 *
 * 1. warp: a token passed between two threads pinned to different CPUs,
 *    each reading the TSC (fenced) after it sees the token and stamping it before
 *    passing it on; the receiver's read must never be below the sender's
 *    stamp (the kernel's check_tsc_warp, from user space);
 * 2. rate: the TSC against CLOCK_MONOTONIC on each CPU: the same line
 *    (a CPU whose TSC is offset from the others' would lie off it).
 *
 * Where the trace clock is CLOCK_MONOTONIC there is nothing to check: it
 * says so and passes. Usage: tscsync [ROUNDS]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <strata/strata.h>

#include "lib/clock.h"

/* rdtsc after every earlier instruction, the token's load included
 * (alone, it may execute before the load and read an earlier time). */
static uint64_t rdtsc_ordered(void)
{
	__asm__ __volatile__("lfence" ::: "memory");
	return strata_rdtsc();
}

static int pin(int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	return pthread_setaffinity_np(pthread_self(), sizeof(s), &s);
}

/* ---- 1. warp ------------------------------------------------------------ */

static struct {
	uint64_t turn;  /* whose turn: even = thread 0, odd = thread 1 */
	uint64_t stamp; /* the TSC of the last pass */
} tok __attribute__((aligned(64)));
static uint64_t rounds, warps, worst;

struct side {
	int cpu, me;
};

static void *side_main(void *p)
{
	const struct side *s = p;

	if (pin(s->cpu))
		return (void *)1;
	for (uint64_t r = s->me; r < 2 * rounds; r += 2) {
		/* pairs with the other thread's release of turn below */
		while (strata_load_acquire(&tok.turn) != r)
			;
		uint64_t prev = strata_load_relaxed(&tok.stamp);
		uint64_t now = rdtsc_ordered();
		if (now < prev) {
			warps++; /* one side writes at a time: the token orders */
			if (prev - now > worst)
				worst = prev - now;
		}
		strata_store_relaxed(&tok.stamp, rdtsc_ordered());
		/* publishes stamp to the other thread's acquire of turn */
		strata_store_release(&tok.turn, r + 1);
	}
	return NULL;
}

static int warp_check(int a, int b)
{
	pthread_t th[2];
	struct side s[2] = {{a, 0}, {b, 1}};
	void *rc[2];

	tok.turn = 0;
	tok.stamp = strata_rdtsc();
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, side_main, &s[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], &rc[i]);
	if (rc[0] || rc[1]) {
		fprintf(stderr, "tscsync: cannot pin to CPUs %d and %d\n", a, b);
		return 1;
	}
	if (warps) {
		fprintf(stderr,
			"tscsync: FAIL: the TSC went back %llu times (by up to "
			"%llu ticks) between CPUs %d and %d, yet the library "
			"chose it as trace clock\n",
			(unsigned long long)warps, (unsigned long long)worst, a,
			b);
		return 1;
	}
	printf("tscsync: CPUs %d and %d: %llu passes, the TSC never went back\n",
	       a, b, (unsigned long long)rounds);
	return 0;
}

/* ---- 2. rate -------------------------------------------------------------- */

/* Calibration points (the library's own, on the trace clock, which is
 * the TSC here) on each CPU in turn. */
static int rate_check(const int *cpus, int n)
{
	struct clock_point a, b, p;
	const struct timespec gap = {0, 50 * 1000 * 1000};
	int bad = 0;

	if (pin(cpus[0]))
		return 1;
	clock_point_take(&a);
	nanosleep(&gap, NULL);
	clock_point_take(&b);
	double ticks_per_ns = (double)(b.ts - a.ts) / (double)(b.mono_ns - a.mono_ns);
	for (int i = 0; i < n; i++) {
		if (pin(cpus[i]))
			return 1;
		clock_point_take(&p);
		double off_ns = (double)(int64_t)(p.ts - a.ts) / ticks_per_ns -
				(double)(int64_t)(p.mono_ns - a.mono_ns);
		/* NTP slews CLOCK_MONOTONIC by at most 500 ppm: 25 us over
		 * the 50 ms of the fit; a CPU's own offset is what stands
		 * out beyond that. */
		printf("tscsync: CPU %d: %+.0f ns off the line of CPU %d\n",
		       cpus[i], off_ns, cpus[0]);
		if (off_ns > 100000 || off_ns < -100000) {
			fprintf(stderr,
				"tscsync: FAIL: CPU %d's TSC is %.0f ns off CPU "
				"%d's, yet the library chose it as trace clock\n",
				cpus[i], off_ns, cpus[0]);
			bad = 1;
		}
	}
	return bad;
}

int main(int argc, char **argv)
{
	cpu_set_t set;
	int cpus[CPU_SETSIZE], n = 0, bad = 0;

	rounds = argc > 1 ? strtoull(argv[1], NULL, 10) : 200000;
	clock_init(); /* linked statically: the decision the library makes at load */
	if (!strata_clock_tsc) {
		printf("tscsync: the trace clock is CLOCK_MONOTONIC here: "
		       "nothing to check\n");
		return 0;
	}
	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			cpus[n++] = c;
	/* every CPU against the first: what a merge of per-CPU streams needs */
	for (int i = 1; i < n; i++)
		bad |= warp_check(cpus[0], cpus[i]);
	bad |= rate_check(cpus, n);
	if (!bad)
		printf("tscsync: OK (%d CPUs)\n", n);
	return bad;
}
