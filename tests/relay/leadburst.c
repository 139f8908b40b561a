/* SPDX-License-Identifier: MIT */
/* On CPU 0 alone: a burst of events filling the first packet, then a few events far apart, each closed in a packet of its own by the live timer: the stream whose packet 0 relay-lead makes the sender drop. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <strata/strata.h>

static const struct strata_field_desc f[] = {{"n", STRATA_T_U64, 0, 0}};
static const struct strata_event_desc e_burst = {
	"lead", "burst", 3, STRATA_EV_POINT, 1, 1, 0, f, "n=%{n}", NULL, NULL};
static const struct strata_event_desc e_late = {
	"lead", "late", 3, STRATA_EV_POINT, 2, 1, 0, f, "n=%{n}", NULL, NULL};
static const struct strata_event_desc *const evs[] = {&e_burst, &e_late};

/* leadburst N K GAP_MS: N events at once, then K events GAP_MS apart */
int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: leadburst N K GAP_MS\n");
		return 2;
	}
	uint64_t n = strtoull(argv[1], NULL, 10), k = strtoull(argv[2], NULL, 10);
	unsigned gap_us = (unsigned)atoi(argv[3]) * 1000;
	cpu_set_t one;

	/* one CPU: one stream, its packets in the order logged */
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	if (sched_setaffinity(0, sizeof(one), &one) < 0) {
		perror("leadburst: sched_setaffinity");
		return 1;
	}
	strata_register(NULL, evs, 2);
	for (uint64_t i = 0; i < n; i++)
		STRATA_EVENT1(3, 1, i);
	for (uint64_t i = 0; i < k; i++) {
		usleep(gap_us);
		STRATA_EVENT1(3, 2, i);
	}
	usleep(gap_us);
	return 0;
}
