/* SPDX-License-Identifier: MIT */
/* strata_snapshot() during heavy tracing with the in-process consumer in overwrite mode (daemon-inproc test). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <strata/strata.h>

static volatile int stop;
static volatile uint64_t logged;

/* One thread, pinned to CPU 0: all its events are in one ring, so each
 * snapshot must hold one contiguous run of its sequence numbers. */
static void *writer(void *arg)
{
	cpu_set_t set;

	(void)arg;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);
	for (uint64_t i = 0; !stop; i++) {
		STRATA_EVENT1(5, 1, i);
		/* as fast as it can: rings wrap while they are copied */
		strata_store_relaxed(&logged, i + 1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: snapinproc DIR SNAPSHOTS\n");
		return 2;
	}
	const char *dir = argv[1];
	int n = atoi(argv[2]);
	char path[4096];
	struct strata_options o = {
		.output = path,
		.packet_size = 16 << 10,
		.npackets = 8,
		.mode = STRATA_MODE_OVERWRITE,
	};
	pthread_t t;
	int ret;

	mkdir(dir, 0755);
	snprintf(path, sizeof(path), "%s/trace", dir);
	if ((ret = strata_start(&o))) {
		fprintf(stderr, "strata_start: %s\n", strata_strerror_detail());
		return 1;
	}
	/* The open packet: 10 events, less than a packet, must be in a
	 * snapshot (its committed part, docs/record.md "Snapshots"). */
	for (uint64_t i = 0; i < 10; i++)
		STRATA_EVENT1(5, 2, i);
	snprintf(path, sizeof(path), "%s/snap-open", dir);
	if ((ret = strata_snapshot(path))) {
		fprintf(stderr, "strata_snapshot %s (open packet only): %s\n",
			path, strata_strerror_detail());
		return 1;
	}
	pthread_create(&t, NULL, writer, NULL);
	while (strata_load_relaxed(&logged) < 1000000)
		usleep(1000);
	for (int i = 1; i <= n; i++) {
		snprintf(path, sizeof(path), "%s/snap-%d", dir, i);
		if ((ret = strata_snapshot(path))) {
			fprintf(stderr, "strata_snapshot %s: %s\n", path,
				strata_strerror_detail());
			return 1;
		}
		struct timespec ts = {0, 2000000};
		nanosleep(&ts, NULL);
	}
	stop = 1;
	pthread_join(t, NULL);
	if ((ret = strata_stop())) {
		fprintf(stderr, "strata_stop: %s\n", strata_strerror_detail());
		return 1;
	}
	if (strata_snapshot(path) != -ENOENT) {
		fprintf(stderr, "strata_snapshot after strata_stop did not say "
			"-ENOENT\n");
		return 1;
	}
	printf("snapinproc: %d snapshots of %llu events\n", n,
	       (unsigned long long)logged);
	return 0;
}
