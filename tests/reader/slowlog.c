/* SPDX-License-Identifier: MIT */
/* Logs events at a slow known rate, each with its own CLOCK_MONOTONIC time,
 * alternating CPUs: the program that `strata print --follow` is tested on. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <strata/strata.h>

static const struct strata_field_desc f[] = {{"seq", STRATA_T_U64, 0, 0},
					     {"mono_ns", STRATA_T_U64, 0, 0}};
static const struct strata_event_desc e_tick = {
	"live", "tick", 3, STRATA_EV_POINT, 1, 2, 0, f, "seq=%{seq} mono_ns=%{mono_ns}",
	NULL, NULL};
static const struct strata_event_desc *const evs[] = {&e_tick};

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * A process that lies about its live timer (docs/record.md, "Live
 * reading", "Untrusted"): over its helper thread's honest stores, other
 * times (0, the far future, any) and ring counts in every ring's control
 * block, which its consumer in another process must survive.
 */
static void lie(unsigned i)
{
	static const uint64_t times[] = {0, UINT64_MAX, UINT64_C(1) << 62, 1};
	uint64_t x = (i + 1) * UINT64_C(0x9e3779b97f4a7c15);

	for (unsigned c = 0; c < STRATA_MAX_CPUS; c++) {
		struct strata_ring *r = strata_rings[c];
		if (!r)
			continue;
		__atomic_store_n(&r->ctl->live_time, i % 5 < 4 ? times[i % 4] : x,
				 __ATOMIC_RELEASE);
		__atomic_store_n(&r->ctl->live_rings, (uint32_t)(x >> 40),
				 __ATOMIC_RELAXED);
	}
}

/* slowlog [EVENTS [PERIOD_MS [quiet|lie]]]: EVENTS events (default 100),
 * one every PERIOD_MS (default 20), on CPU i % 2 where there are two, so
 * that the merge of two streams is what is followed; with `quiet`, the
 * second half all on CPU 0, so that CPU 1's stream is quiet meanwhile;
 * with `lie`, sequence numbers from 1000000, and the process lies about
 * its live timer after each event (lie()). */
int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 100;
	unsigned ms = argc > 2 ? (unsigned)atoi(argv[2]) : 20;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int quiet = argc > 3 && !strcmp(argv[3], "quiet");
	int liar = argc > 3 && !strcmp(argv[3], "lie");

	strata_register(NULL, evs, 1);
	for (unsigned i = 0; i < n; i++) {
		if (ncpu > 1) {
			cpu_set_t s;
			CPU_ZERO(&s);
			CPU_SET(quiet && i >= n / 2 ? 0 : i % 2, &s);
			sched_setaffinity(0, sizeof(s), &s);
		}
		STRATA_EVENT2(3, 1, liar ? 1000000 + i : i, mono_ns());
		if (liar)
			lie(i);
		struct timespec d = { 0, (long)ms * 1000000 };
		nanosleep(&d, NULL);
	}
	return 0;
}
