/* SPDX-License-Identifier: MIT */
/* Unit tests of generated descriptors and registration, and of strata_enable()/strata_disable() (src/lib/control.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "rt.h"

volatile uint8_t *tu2_flags(void);
const struct strata_event_desc *tu2_event(void);

#define NEVENTS 8

static void assert_flags(const char *want)
{
	for (int i = 0; i < NEVENTS; i++)
		assert_int_equal(strata_gen_on_rt[i], want[i] - '0');
}

/* Both translation units see one flag array and one descriptor. */
static void test_one_copy(void **state)
{
	(void)state;
	assert_ptr_equal(tu2_flags(), strata_gen_on_rt);
	assert_ptr_equal(tu2_event(), &strata_gen_event_rt_ints);
}

static void test_registered(void **state)
{
	const struct strata_event_desc *e = strata_event_lookup(7, 1);

	(void)state;
	assert_non_null(e);
	assert_string_equal(e->subsystem, "rt");
	assert_string_equal(e->name, "ints");
	assert_ptr_equal(e->enabled, &strata_gen_on_rt[0]);
	assert_int_equal(e->nfields, 8);
	assert_string_equal(e->fields[3].name, "d");
	assert_int_equal(e->fields[3].flags, STRATA_F_HEX); /* %{d:x} */
	assert_int_equal(e->fields[0].flags, 0);
	e = strata_event_lookup(7, 5);
	assert_non_null(e);
	assert_int_equal(e->kind, STRATA_EV_BEGIN);
	assert_int_equal(strata_event_lookup(7, 6)->kind, STRATA_EV_END);
	e = strata_event_lookup(7, 4);
	assert_int_equal(e->fields[1].type, STRATA_T_S16);
	assert_int_equal(e->fields[1].count, 5);
	assert_int_equal(strata_event_lookup(7, 2)->fields[3].flags, STRATA_F_HEX);
}

static void test_event_glob(void **state)
{
	(void)state;
	assert_int_equal(strata_disable("rt:ints"), 1);
	assert_flags("01111111");
	assert_int_equal(strata_disable("*:span_*"), 2);
	assert_flags("01110011");
	assert_int_equal(strata_disable("rt:[lm]*"), 2);
	assert_flags("00110010");
	assert_int_equal(strata_enable("rt:*"), NEVENTS);
	assert_flags("11111111");
}

static void test_subsystem(void **state)
{
	(void)state;
	assert_int_equal(strata_disable("rt"), 1);
	assert_false(strata_majors() & STRATA_MAJOR_BIT(STRATA_MAJOR_RT));
	assert_flags("11111111"); /* flags untouched */
	/* Enabling an event turns its subsystem on. */
	assert_int_equal(strata_enable("rt:none"), 1);
	assert_true(strata_majors() & STRATA_MAJOR_BIT(STRATA_MAJOR_RT));
	assert_int_equal(strata_disable("r?"), 1);
	assert_int_equal(strata_enable("*"), 1);
	assert_true(strata_majors() & STRATA_MAJOR_BIT(STRATA_MAJOR_RT));
}

static void test_invalid(void **state)
{
	(void)state;
	assert_int_equal(strata_enable(NULL), -EINVAL);
	assert_int_equal(strata_enable(""), -EINVAL);
	assert_int_equal(strata_enable(":ints"), -EINVAL);
	assert_int_equal(strata_enable("rt:"), -EINVAL);
	assert_int_equal(strata_disable("rt:a:b"), -EINVAL);
	assert_int_equal(strata_enable("nosuch"), 0);
	assert_int_equal(strata_disable("nosuch:*"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_copy),
		cmocka_unit_test(test_registered),
		cmocka_unit_test(test_event_glob),
		cmocka_unit_test(test_subsystem),
		cmocka_unit_test(test_invalid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
