/* SPDX-License-Identifier: MIT */
/* Holds a pair of events across a 20 ms sleep, five times: strata switches must show each sleep. */
#include <time.h>

#include <strata/strata.h>

int main(void)
{
	struct timespec d = {0, 20 * 1000 * 1000};

	for (int i = 0; i < 5; i++) {
		STRATA_EVENT1(7, 1, i); /* "7:1": acquire */
		nanosleep(&d, NULL);
		STRATA_EVENT1(7, 2, i); /* "7:2": release */
	}
	return 0;
}
