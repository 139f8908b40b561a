/* SPDX-License-Identifier: MIT */
/*
 * The in-process consumer sleeps when there is nothing to do (ring.md §8):
 * in both modes, once packets have completed and nothing more is logged,
 * its thread uses next to no CPU. A consumer that spins (as it did in
 * overwrite mode, where it drains nothing until the end, with every packet
 * complete) uses all of a CPU. Usage: idle DIR discard|overwrite
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <strata/events.h>
#include <strata/strata.h>

/* On-CPU nanoseconds of this process's thread named `name`, or -1. */
static long long thread_cpu_ns(const char *name)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	long long ns = -1;

	while (d && (e = readdir(d))) {
		char path[300], comm[64] = "";
		FILE *f;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		if (!(f = fopen(path, "re")))
			continue;
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
		if (strcmp(comm, name))
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/schedstat", e->d_name);
		if ((f = fopen(path, "re"))) {
			if (fscanf(f, "%lld", &ns) != 1)
				ns = -1;
			fclose(f);
		}
	}
	if (d)
		closedir(d);
	return ns;
}

int main(int argc, char **argv)
{
	struct strata_options o = {0};
	struct timespec idle = {0, 500 * 1000000};

	if (argc != 3) {
		fprintf(stderr, "usage: %s DIR discard|overwrite\n", argv[0]);
		return 2;
	}
	o.output = argv[1];
	o.mode = strcmp(argv[2], "overwrite") ? STRATA_MODE_DISCARD : STRATA_MODE_OVERWRITE;
	o.packet_size = 16 << 10;
	o.npackets = 4;
	if (strata_start(&o)) {
		fprintf(stderr, "idle: strata_start failed: %s\n", strata_strerror_detail());
		return 1;
	}
	/* Two packets and a half of the first lap: complete packets that a
	 * consumer in overwrite mode leaves where they are. */
	for (uint64_t i = 0; i < 2500; i++)
		STRATA_EVENT1(5, 1, i);
	nanosleep(&idle, NULL); /* settle: drains, first calibrations */
	long long before = thread_cpu_ns("strata-consumer");
	nanosleep(&idle, NULL);
	long long used = thread_cpu_ns("strata-consumer") - before;
	strata_stop();
	if (before < 0) {
		fprintf(stderr, "idle: no thread named strata-consumer\n");
		return 1;
	}
	/* Idle, it wakes a few times (calibration, 100 ms timeouts): well
	 * under a millisecond. Spinning, it would use the whole 500 ms. */
	printf("idle (%s): the consumer used %.3f ms of CPU in 500 ms\n", argv[2],
	       (double)used / 1e6);
	if (used > 50 * 1000000LL) {
		fprintf(stderr, "idle: FAIL: the consumer does not sleep (%s mode)\n",
			argv[2]);
		return 1;
	}
	return 0;
}
