/* SPDX-License-Identifier: MIT */
/* Logs N one-word events and exits: one of many short processes of a session. */
#include <stdlib.h>

#include <strata/strata.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;

	for (long i = 0; i < n; i++)
		STRATA_EVENT1(6, 1, (uint64_t)i);
	return 0;
}
