/* SPDX-License-Identifier: MIT */
/* Round-trip program: logs every field type through generated tracepoints; roundtrip.sh checks babeltrace2's view. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "pad.h"
#include "rt.h"

#define LONG_A 8170 /* docs/dsl.md, "Strings": the cap of rt:long is 8171 bytes */

/* Every gap and tail size: babeltrace2's CTF writer must copy them all. */
static void log_pads(void)
{
	const uint8_t u3[3] = { 1, 2, 3 }, u5[5] = { 1, 2, 3, 4, 5 };
	const uint16_t u3w[3] = { 1, 0x8000, UINT16_MAX };
	const int8_t s7[7] = { -1, 2, -3, 4, -5, 6, INT8_MIN };

	strata_pad_t7(true);
	strata_pad_t6(INT16_MIN);
	strata_pad_t5(u3);
	strata_pad_t4(-7);
	strata_pad_t3(u5);
	strata_pad_t2(u3w);
	strata_pad_t1(s7);
	strata_pad_g7(UINT8_MAX, 1.5, INT8_MIN);
	strata_pad_g6(0xfffe, (const void *)(uintptr_t)0xffffffffffffff00u, 9);
	strata_pad_g5(u3, UINT64_MAX, true);
	strata_pad_g3(true, 0x80000000u, 0xabcd);
	strata_pad_gs(1, "seven b", 2);
}

int main(void)
{
	static char longstr[LONG_A + 64];
	const uint8_t bytes[3] = { 1, 2, 255 };
	const int16_t shorts[5] = { -1, 0, 1, INT16_MIN, INT16_MAX };
	const uint32_t words[2] = { 0xdeadbeef, 7 };
	const int64_t big[2] = { INT64_MIN, INT64_MAX };

	strata_rt_ints(UINT8_MAX, UINT16_MAX, UINT32_MAX, UINT64_MAX, INT8_MIN,
		       INT16_MIN, INT32_MIN, INT64_MIN);
	strata_rt_ints(1, 2, 3, 0x1234, -1, -2, -3, -4);
	strata_rt_misc(-2.5, true, false, (const void *)(uintptr_t)0x7fff12345678u);
	strata_rt_misc(0.125, false, true, NULL);
	strata_rt_text(9, "hello, world", 77, "", -1);
	strata_rt_text(10, NULL, 0, "exactly8", INT32_MAX);
	strata_rt_arrays(bytes, shorts, words, big);
	strata_rt_span_begin(0xabc);
	strata_rt_span_end(0xabc);
	strata_rt_none();

	/* Too long: cut to fit 1023 words, before the 2-byte UTF-8 'é'
	 * that straddles the cap. */
	memset(longstr, 'a', LONG_A);
	memcpy(longstr + LONG_A, "\xc3\xa9 and more", 11);
	strata_rt_long(longstr);

	/* Switched off by event, then by subsystem: neither is logged. */
	if (strata_disable("rt:none") != 1)
		return 1;
	strata_rt_none();
	if (strata_enable("rt:none") != 1 || strata_disable("rt") != 1)
		return 1;
	strata_rt_none();
	if (strata_enable("rt") != 1)
		return 1;
	strata_rt_span_end(1);

	log_pads();
	return 0;
}
