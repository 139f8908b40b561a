/* SPDX-License-Identifier: MIT */
/* The trace clock: TSC when invariant, CLOCK_MONOTONIC otherwise (format.md §5). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <strata/strata.h>

#include "common/compiler.h"
#include "lib/clock.h"
#include "ring/ring.h"

STRATA_API int strata_clock_tsc;
struct clock_point clock_init_point;

static int file_has(const char *path, const char *needle)
{
	char line[4096];
	int found = 0;
	FILE *f = fopen(path, "re");

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, needle) != NULL;
	fclose(f);
	return found;
}

void clock_init(void)
{
#if defined(__x86_64__)
	/* Invariant TSC (constant rate, ticking in deep C-states) and the
	 * kernel itself trusting it as clocksource: then the TSC is
	 * synchronised across CPUs and ftrace's x86-tsc clock is the same
	 * counter (FKT/FUT's super-trace). */
	strata_clock_tsc =
		file_has("/proc/cpuinfo", " constant_tsc") &&
		file_has("/proc/cpuinfo", " nonstop_tsc") &&
		file_has("/sys/devices/system/clocksource/clocksource0/current_clocksource",
			 "tsc");
#else
	strata_clock_tsc = 0;
#endif
	/* STRATA_CLOCK=mono (`strata record --clock mono`): CLOCK_MONOTONIC
	 * even where the TSC would do, e.g. to merge with another tool's
	 * trace on that clock. "tsc" cannot force an unreliable TSC. */
	const char *c = getenv("STRATA_CLOCK");
	if (c && !strcmp(c, "mono"))
		strata_clock_tsc = 0;
	ring_init(); /* the write protocol follows the clock (ring.md §7) */
	clock_point_take(&clock_init_point);
}

void clock_use_mono(void)
{
	strata_clock_tsc = 0;
	ring_init();
}

STRATA_API uint64_t strata_clock_mono(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

const char *clock_description(void)
{
	return strata_clock_tsc ? "x86 TSC (invariant)" : "CLOCK_MONOTONIC";
}

static uint64_t ns_of(clockid_t id)
{
	struct timespec t;
	clock_gettime(id, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

void clock_point_take(struct clock_point *p)
{
	uint64_t best = UINT64_MAX;

	/* Keep the try whose two trace-clock reads are closest: the system
	 * clocks were read within that window. */
	for (int i = 0; i < 8; i++) {
		uint64_t t0 = strata_clock();
		uint64_t mono = ns_of(CLOCK_MONOTONIC);
		uint64_t real = ns_of(CLOCK_REALTIME);
		uint64_t t1 = strata_clock();
		if (t1 - t0 < best) {
			best = t1 - t0;
			p->ts = t0 + (t1 - t0) / 2;
			p->mono_ns = mono;
			p->real_ns = real;
		}
	}
}

void clock_fit(const struct clock_point *a, const struct clock_point *b,
	       uint64_t *freq_hz, int64_t *offset_ns)
{
	if (!strata_clock_tsc) {
		*freq_hz = 1000000000u;
	} else if (b->mono_ns > a->mono_ns && b->ts > a->ts) {
		double f = (double)(b->ts - a->ts) * 1e9 /
			   (double)(b->mono_ns - a->mono_ns);
		*freq_hz = (uint64_t)(f + 0.5);
	} else if (*freq_hz == 0) {
		*freq_hz = 1000000000u;
	}
	/* Anchor on the latest point: realtime = offset + ts / freq. */
	double secs = (double)b->ts / (double)*freq_hz;
	*offset_ns = (int64_t)b->real_ns - (int64_t)(secs * 1e9);
}

void clock_uuid(char out[37])
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");

	if (f) {
		if (fgets(out, 37, f) && strlen(out) == 36) {
			fclose(f);
			return;
		}
		fclose(f);
	}
	strcpy(out, "00000000-0000-4000-8000-000000000000");
}
