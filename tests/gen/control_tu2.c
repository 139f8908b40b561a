/* SPDX-License-Identifier: MIT */
/* Second translation unit for control_test.c: the generated tables must be one copy per module. */
#include "rt.h"

volatile uint8_t *tu2_flags(void);
const struct strata_event_desc *tu2_event(void);

volatile uint8_t *tu2_flags(void)
{
	return strata_gen_on_rt;
}

const struct strata_event_desc *tu2_event(void)
{
	return &strata_gen_event_rt_ints;
}
