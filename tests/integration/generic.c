/* SPDX-License-Identifier: MIT */
/* Logs every kind of generic event and prints what babeltrace2 must show. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <strata/strata.h>

/*
 * Prints, on stdout, one line per event: the name and payload as
 * babeltrace2's text output shows them ("7:1: { w0 = 0x2A }"), so that the
 * test compares them line for line. Also logs across a long pause, which
 * needs an extended header (docs/compact.md), and checks the wall-clock
 * time babeltrace2 gives that event.
 */
static void expect_words(unsigned major, unsigned minor, const uint64_t *w,
			 unsigned n)
{
	printf("%u:%u:", major, minor);
	/* no payload: the event ends with its header (docs/compact.md) */
	if (n) {
		printf(" {");
		for (unsigned i = 0; i < n; i++)
			printf(" w%u = 0x%llX%s", i, (unsigned long long)w[i],
			       i + 1 < n ? "," : "");
		printf(" }");
	}
	printf("\n");
}

int main(void)
{
	uint64_t w[1022];
	struct timespec pause = {0, 300 * 1000000};
	struct strata_stats st;

	STRATA_EVENT0(7, 0);
	expect_words(7, 0, w, 0);
	STRATA_EVENT1(7, 1, 42);
	w[0] = 42;
	expect_words(7, 1, w, 1);
	STRATA_EVENT2(7, 2, 1, UINT64_MAX);
	w[0] = 1, w[1] = UINT64_MAX;
	expect_words(7, 2, w, 2);
	STRATA_EVENT3(7, 3, 3, 2, 1);
	w[0] = 3, w[1] = 2, w[2] = 1;
	expect_words(7, 3, w, 3);
	STRATA_EVENT4(7, 4, 0xdead, 0xbeef, 0, 1ull << 63);
	w[0] = 0xdead, w[1] = 0xbeef, w[2] = 0, w[3] = 1ull << 63;
	expect_words(7, 4, w, 4);

	/* The largest event: 1022 payload words + header = 1023 words. */
	for (unsigned i = 0; i < 1022; i++)
		w[i] = i * 0x0101010101010101ull;
	strata_log_words(8, 1, w, 1022);
	expect_words(8, 1, w, 1022);
	/* One word too many: refused and counted, never truncated. */
	strata_log_words(8, 2, w, 1023);

	/* A byte blob (size, then the bytes padded to a word). */
	strata_log_blob(9, 1, "hello", 5);
	printf("9:1: { data_len = 8, size = 5, data = [ [0] = 104, [1] = 101, "
	       "[2] = 108, [3] = 108, [4] = 111, [5] = 0, [6] = 0, [7] = 0 ] }\n");

	/* A pause longer than 2^28 TSC ticks: the next event carries a
	 * strata:clock record. */
	nanosleep(&pause, NULL);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	STRATA_EVENT1(7, 1, 7);
	w[0] = 7;
	expect_words(7, 1, w, 1);
	fprintf(stderr, "realtime %lld.%09ld\n", (long long)now.tv_sec, now.tv_nsec);

	strata_stop();
	strata_get_stats(&st);
	fprintf(stderr, "too_big %llu events_written %llu\n",
		(unsigned long long)st.lost_too_big,
		(unsigned long long)st.events_written);
	return st.lost_too_big == 1 ? 0 : 1;
}
