/* SPDX-License-Identifier: MIT */
/* Generic tracepoints whose major or minor is not a constant: each event keeps its own id. */
#include <stdio.h>

#include <strata/strata.h>

/*
 * One call site logging under three minors and two majors: before the
 * fix, the site's compact id cache recorded every event under the first
 * id it saw (4:1), silently. Prints what it logged, per id, for the
 * caller to compare with `strata stats`.
 */
int main(void)
{
	for (unsigned i = 0; i < 300; i++) {
		unsigned major = 4 + i % 2, minor = 1 + i % 3;
		STRATA_EVENT1(major, minor, i);
		STRATA_EVENT0(major, minor + 10);
	}
	for (unsigned major = 4; major <= 5; major++)
		for (unsigned minor = 1; minor <= 3; minor++)
			printf("%u:%u 50\n%u:%u 50\n", major, minor, major, minor + 10);
	return 0;
}
