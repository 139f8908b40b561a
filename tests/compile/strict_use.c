/* SPDX-License-Identifier: MIT */
/* Every producer macro and inline call expanded in user code, built by the strict compile tests (tests/compile/CMakeLists.txt). */
#include <stddef.h>
#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#include <strata/reader.h>
#include <strata/strata.h>

enum strict_color { STRICT_RED, STRICT_GREEN };

int strict_use(int argc, const char *name, size_t len, double ratio, bool ok);

int strict_use(int argc, const char *name, size_t len, double ratio, bool ok)
{
	enum strict_color color = STRICT_GREEN;
	const int16_t neg = -5;
	uint64_t words[3];
	int t = 0; /* names a user may well have: nothing may shadow them */
	int ring = 0, cpu = 0, w = 0, c = 0;

	STRATA_EVENT0(1, 1);
	STRATA_EVENT1(1, 2, argc);
	STRATA_EVENT2(1, 3, len, neg);
	STRATA_EVENT3(1, 4, (uintptr_t)name, color, ok);
	STRATA_EVENT4(1, 5, ratio, argc, len, -1);
	words[0] = (uint64_t)argc;
	words[1] = len;
	words[2] = 0;
	strata_log_words(1, 6, words, 3);
	strata_log_blob(1, 7, name, len);
#ifndef STRATA_DISABLE
	{
		/* what a generated tracepoint with strings does */
		struct strata_rsv r;

		if (strata_reserve(&r, STRATA_HID_EXT | STRATA_ID(1, 8), 2)) {
			*r.p = len;
			strata_commit(&r);
		}
	}
#endif
	return (strata_major_enabled(1) ? 1 : 0) + t + ring + cpu + w + c;
}
