/* SPDX-License-Identifier: MIT */
/* Calls every generated tracepoint, compiled as C11, gnu11 and C++17 by compile_check.sh. */
#include "main.h"
#include "pad.h"
#include "rt.h"

int use_all(void);

int use_all(void)
{
	const uint8_t bytes[3] = { 1, 2, 3 };
	const int16_t shorts[5] = { -1, 0, 1, 2, 3 };
	const uint32_t words[2] = { 4, 5 };
	const int64_t big[2] = { -6, 7 };
	const uint8_t fives[5] = { 1, 2, 3, 4, 5 };
	const uint16_t threes[3] = { 1, 2, 3 };
	const int8_t sevens[7] = { 1, 2, 3, 4, 5, 6, -7 };
	int x = 0;

	strata_rt_ints(1, 2, 3, 4, -1, -2, -3, -4);
	strata_rt_misc(1.5, true, false, &x);
	strata_rt_text(1, "msg", 2, "", -3);
	strata_rt_arrays(bytes, shorts, words, big);
	strata_rt_span_begin(1);
	strata_rt_span_end(1);
	strata_rt_none();
	strata_rt_long("s");
	strata_mem_alloc(0x1000, 64, 0);
	strata_mem_free(&x);
	strata_mem_lock_acquire(&x);
	strata_mem_lock_release(&x);
	strata_net_send(3, "peer", 100);
	strata_sched_switch(1, 2);
	strata_pad_t7(true);
	strata_pad_t6(-1);
	strata_pad_t5(bytes);
	strata_pad_t4(-1);
	strata_pad_t3(fives);
	strata_pad_t2(threes);
	strata_pad_t1(sevens);
	strata_pad_g7(1, 0.5, -1);
	strata_pad_g6(2, &x, 3);
	strata_pad_g5(bytes, 4, false);
	strata_pad_g3(true, 5, 6);
	strata_pad_gs(7, "s", 8);
	return x;
}
