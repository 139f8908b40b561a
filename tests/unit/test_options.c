/* SPDX-License-Identifier: MIT */
/* Unit tests of the library's environment (lib/options.c): strata_options, the other STRATA_* variables. */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <strata/strata.h>

#include "lib/session.h"
#include "ring/ring.h"

/* Every variable the tests set, unset again after each test. */
static const char *const vars[] = {
	"STRATA_OUTPUT",    "STRATA_PACKET_SIZE", "STRATA_PACKETS",
	"STRATA_MODE",      "STRATA_MAJORS",      "STRATA_BLOCK_TIMEOUT_MS",
	"STRATA_FLUSH_MS",  "STRATA_CLOCK",       "STRATA_RSEQ",
	"STRATA_START_ON",  "STRATA_STOP_ON",     "STRATA_SESSION",
	"STRATA_GUARDED",   "STRATA_GUARD",       "STRATA_TOOL",
	"STRATA_ENABLE",    "STRATA_KTRACE_DIR",
};

static int clean_env(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	return 0;
}

static void test_options_from_env(void **state)
{
	(void)state;
	struct strata_options o;

	setenv("STRATA_OUTPUT", "/tmp/x", 1);
	setenv("STRATA_PACKET_SIZE", "64K", 1);
	setenv("STRATA_PACKETS", "8", 1);
	setenv("STRATA_MODE", "overwrite", 1);
	setenv("STRATA_MAJORS", "1,3-5", 1);
	setenv("STRATA_FLUSH_MS", "250", 1);
	assert_int_equal(strata_options_from_env(&o), 0);
	assert_string_equal(o.output, "/tmp/x");
	assert_int_equal(o.packet_size, 64 << 10);
	assert_int_equal(o.npackets, 8);
	assert_int_equal(o.mode, STRATA_MODE_OVERWRITE);
	assert_int_equal(o.majors, 0x3a);
	assert_int_equal(o.flush_ms, 250);
	assert_int_equal(options_check(&o), 0);
}

static void test_options_defaults(void **state)
{
	(void)state;
	struct strata_options o;

	assert_int_equal(strata_options_from_env(&o), 0);
	assert_null(o.output);
	assert_int_equal(o.packet_size, 0);
	assert_int_equal(o.mode, STRATA_MODE_DISCARD);
	/* no output: refused, and the detail says how to give one */
	assert_int_equal(options_check(&o), -EINVAL);
	assert_non_null(strstr(strata_strerror_detail(), "STRATA_OUTPUT"));
	o.output = "/tmp/x";
	assert_int_equal(options_check(&o), 0);
	assert_int_equal(o.packet_size, 256 << 10);
	/* 16 MiB per CPU while all CPUs' rings fit in 128 MiB, halved down
	 * to 4 MiB on bigger machines */
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	unsigned want = ncpu <= 8 ? 64 : ncpu <= 16 ? 32 : 16;
	assert_int_equal(o.npackets, want);

	/* "none" is told apart from unset (0: all) */
	setenv("STRATA_MAJORS", "none", 1);
	assert_int_equal(strata_options_from_env(&o), 0);
	assert_int_equal(o.majors, STRATA_MAJORS_NONE);
}

static void test_options_refused(void **state)
{
	(void)state;
	struct strata_options o;

	setenv("STRATA_OUTPUT", "/tmp/x", 1);
	setenv("STRATA_MODE", "sometimes", 1);
	assert_int_equal(strata_options_from_env(&o), -EINVAL);
	assert_non_null(strstr(strata_strerror_detail(), "STRATA_MODE"));
	unsetenv("STRATA_MODE");

	setenv("STRATA_PACKET_SIZE", "3000", 1);
	assert_int_equal(strata_options_from_env(&o), 0);
	assert_int_equal(options_check(&o), -EINVAL);
	assert_non_null(strstr(strata_strerror_detail(), "power of two"));
	setenv("STRATA_PACKET_SIZE", "12Q", 1);
	assert_int_equal(strata_options_from_env(&o), -EINVAL);
	assert_non_null(strstr(strata_strerror_detail(), "STRATA_PACKET_SIZE"));
	unsetenv("STRATA_PACKET_SIZE");

	setenv("STRATA_PACKETS", "3", 1);
	assert_int_equal(strata_options_from_env(&o), 0);
	assert_int_equal(options_check(&o), -EINVAL);
	unsetenv("STRATA_PACKETS");

	setenv("STRATA_MAJORS", "1-99", 1);
	assert_int_equal(strata_options_from_env(&o), -EINVAL);
	assert_non_null(strstr(strata_strerror_detail(), "STRATA_MAJORS"));
}

/* STRATA_BLOCK_TIMEOUT_MS goes to the ring's configuration, at most an
 * hour. */
static void test_block_timeout(void **state)
{
	(void)state;
	struct strata_options o;
	uint32_t saved = ring_cfg.block_ms;

	setenv("STRATA_BLOCK_TIMEOUT_MS", "250", 1);
	assert_int_equal(strata_options_from_env(&o), 0);
	assert_int_equal(ring_cfg.block_ms, 250);
	setenv("STRATA_BLOCK_TIMEOUT_MS", "3600001", 1);
	assert_int_equal(strata_options_from_env(&o), -EINVAL);
	assert_non_null(strstr(strata_strerror_detail(), "at most an hour"));
	ring_cfg.block_ms = saved;
}

static void test_parse_majors(void **state)
{
	(void)state;
	uint64_t m;

	assert_int_equal(options_parse_majors("all", &m), 0);
	assert_int_equal(m, ~0ull >> 1);
	assert_int_equal(options_parse_majors("ALL", &m), 0);
	assert_int_equal(options_parse_majors("none", &m), 0);
	assert_int_equal(m, 0);
	assert_int_equal(options_parse_majors("0x6", &m), 0);
	assert_int_equal(m, 6);
	assert_int_equal(options_parse_majors("0,62", &m), 0);
	assert_int_equal(m, 1ull | 1ull << 62);
	assert_int_equal(options_parse_majors("63", &m), -EINVAL);
	assert_int_equal(options_parse_majors("4-2", &m), -EINVAL);
	assert_int_equal(options_parse_majors("1,,x", &m), -EINVAL);
	assert_int_equal(options_parse_majors("0xg", &m), -EINVAL);
}

/* The rest of the environment: raw strings, NULL when unset, and the
 * switches that only one value turns. */
static void test_lib_env(void **state)
{
	(void)state;
	struct lib_env e;

	lib_env_read(&e);
	assert_null(e.output);
	assert_null(e.session);
	assert_null(e.enable);
	assert_false(e.rseq_off);
	assert_false(e.guarded);
	assert_false(e.guard_off);

	setenv("STRATA_CLOCK", "mono", 1);
	setenv("STRATA_RSEQ", "0", 1);
	setenv("STRATA_START_ON", "a:b", 1);
	setenv("STRATA_STOP_ON", "c:d", 1);
	setenv("STRATA_SESSION", "none", 1);
	setenv("STRATA_GUARDED", "1", 1);
	setenv("STRATA_GUARD", "0", 1);
	setenv("STRATA_TOOL", "/bin/strata", 1);
	setenv("STRATA_ENABLE", "mem:*,io:read", 1);
	setenv("STRATA_KTRACE_DIR", "/tmp/k", 1);
	lib_env_read(&e);
	assert_string_equal(e.clock, "mono");
	assert_true(e.rseq_off);
	assert_string_equal(e.start_on, "a:b");
	assert_string_equal(e.stop_on, "c:d");
	assert_string_equal(e.session, "none");
	assert_true(e.guarded);
	assert_true(e.guard_off);
	assert_string_equal(e.tool, "/bin/strata");
	assert_string_equal(e.enable, "mem:*,io:read");
	assert_string_equal(e.ktrace_dir, "/tmp/k");

	/* only "0" turns rseq and the guard off, only "1" means guarded */
	setenv("STRATA_RSEQ", "1", 1);
	setenv("STRATA_GUARDED", "yes", 1);
	setenv("STRATA_GUARD", "1", 1);
	lib_env_read(&e);
	assert_false(e.rseq_off);
	assert_false(e.guarded);
	assert_false(e.guard_off);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_options_from_env, clean_env),
		cmocka_unit_test_teardown(test_options_defaults, clean_env),
		cmocka_unit_test_teardown(test_options_refused, clean_env),
		cmocka_unit_test_teardown(test_block_timeout, clean_env),
		cmocka_unit_test_teardown(test_parse_majors, clean_env),
		cmocka_unit_test_teardown(test_lib_env, clean_env),
	};
	return cmocka_run_group_tests(tests, clean_env, NULL);
}
