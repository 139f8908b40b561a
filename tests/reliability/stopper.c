/* SPDX-License-Identifier: MIT */
/* Logs a burst, says so, then stops tracing: for kills inside strata_stop() (issue 24, item 10). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <strata/strata.h>

/*
 * stopper [EVENTS]: traced from the environment (STRATA_OUTPUT), logs
 * EVENTS events of 1 to 4 words and some of strata-gen's kind through
 * strata_log_words (so that the metadata is rewritten at stop), prints
 * "stopping" on stdout, and calls strata_stop(), which drains the rings
 * and writes the metadata: the caller kills it somewhere in there.
 */
int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 300000;
	uint64_t w[6] = {1, 2, 3, 4, 5, 6};

	for (long i = 0; i < n; i++) {
		switch (i & 3) {
		case 0: STRATA_EVENT1(4, 1, (uint64_t)i); break;
		case 1: STRATA_EVENT2(4, 2, (uint64_t)i, 2); break;
		case 2: STRATA_EVENT3(4, 3, (uint64_t)i, 2, 3); break;
		default: strata_log_words(4, (uint16_t)(10 + i % 7), w, 6); break;
		}
	}
	printf("stopping\n");
	fflush(stdout);
	int ret = strata_stop();
	printf("stopped %d\n", ret);
	fflush(stdout);
	pause(); /* the caller kills us in any case */
	return 0;
}
