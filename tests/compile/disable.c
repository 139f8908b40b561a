/* SPDX-License-Identifier: MIT */
/* A program using STRATA_EVENT0..4: built with -DSTRATA_DISABLE it must not
 * reference libstrata at all (tests/compile/CMakeLists.txt). */
#include <stdint.h>

#include <strata/strata.h>

static uint64_t counter(void)
{
	static uint64_t n;
	return ++n;
}

int main(int argc, char **argv)
{
	uint64_t a = (uint64_t)argc;
	uint32_t b = 7;
	const char *p = argv[0];

	(void)argv;
	STRATA_EVENT0(1, 1);
	STRATA_EVENT1(1, 2, a);
	STRATA_EVENT2(1, 3, a, b);
	STRATA_EVENT3(1, 4, a, b, (uintptr_t)p);
	STRATA_EVENT4(1, 5, a, b, (uintptr_t)p, counter());
	if (strata_major_enabled(1))
		return 1;
	return 0;
}
