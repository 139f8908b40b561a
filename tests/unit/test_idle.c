/* SPDX-License-Identifier: MIT */
/* The switch out of idle that the kernel did not record, inferred (src/analysis/idle.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "analysis/analysis.h"

static bool feed(struct idle_cpu *k, uint64_t ts, uint32_t cpu, uint32_t tid,
		 bool sw, int64_t prev, int64_t next, uint64_t *at)
{
	struct strata_event ev = {.timestamp = ts, .cpu = cpu, .tid = tid};
	return idle_infer(k, 2, &ev, sw, prev, next, at);
}

/* CPU 1 goes idle (recorded), its idle task wakes 42, 42 logs: the switch
 * is inferred at the idle task's last event. */
static void unrecorded_switch_inferred(void **state)
{
	(void)state;
	struct idle_cpu k[2] = {0};
	uint64_t at = 0;

	assert_false(feed(k, 100, 1, 42, true, 42, 0, &at));   /* 42 -> idle */
	assert_false(feed(k, 200, 1, 0, false, -1, -1, &at));  /* idle: wakeup */
	assert_false(feed(k, 210, 0, 7, false, -1, -1, &at));  /* other CPU */
	assert_true(feed(k, 250, 1, 42, false, -1, -1, &at));  /* 42 logs */
	assert_int_equal(at, 200);
	assert_false(feed(k, 260, 1, 42, false, -1, -1, &at)); /* once only */
}

/* A recorded switch out of idle needs no inference. */
static void recorded_switch_kept(void **state)
{
	(void)state;
	struct idle_cpu k[2] = {0};
	uint64_t at = 0;

	assert_false(feed(k, 100, 0, 5, true, 5, 0, &at));
	assert_false(feed(k, 150, 0, 0, true, 0, 5, &at)); /* idle -> 5 */
	assert_false(feed(k, 160, 0, 5, false, -1, -1, &at));
}

/* A thread switching out of a CPU known idle ran there: inferred too, at
 * the time the CPU went idle when the idle task logged nothing since. */
static void switch_out_without_switch_in(void **state)
{
	(void)state;
	struct idle_cpu k[2] = {0};
	uint64_t at = 0;

	assert_false(feed(k, 100, 1, 9, true, 9, 0, &at));
	assert_true(feed(k, 300, 1, 9, true, 9, 0, &at));
	assert_int_equal(at, 100);
	/* ... and the CPU is idle again */
	assert_true(feed(k, 400, 1, 9, false, -1, -1, &at));
	assert_int_equal(at, 300);
}

/* A CPU never seen going idle is not assumed idle; unknown CPUs are ignored. */
static void unknown_cpu(void **state)
{
	(void)state;
	struct idle_cpu k[2] = {0};
	uint64_t at = 0;

	assert_false(feed(k, 100, 1, 9, false, -1, -1, &at));
	assert_false(feed(k, 100, 7, 9, true, 9, 0, &at));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(unrecorded_switch_inferred),
		cmocka_unit_test(recorded_switch_kept),
		cmocka_unit_test(switch_out_without_switch_in),
		cmocka_unit_test(unknown_cpu),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
