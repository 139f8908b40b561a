/* SPDX-License-Identifier: MIT */
/* Events logged while the process is out of file descriptors are counted, and those after it has some again are recorded (emfile.sh). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <strata/strata.h>

/*
 * emfile N, run with STRATA_MAJORS=none (so that nothing, not even the
 * state dump, has made a ring yet): on one CPU, after the session has
 * started, take every free descriptor, enable major 6 and log N events
 * (its ring cannot be created: no memfd), give them back, wait past the
 * ring's retry delay (100 ms, src/ring/shm.c) and log N more. Prints the
 * events logged. `emfile N never`: stays out of descriptors to its end.
 */
int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 10000;
	struct rlimit rl = {256, 256};
	struct timespec settle = {0, 300 * 1000000}, retry = {0, 200 * 1000000};
	static int fds[256];
	int nfd = 0;
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(0, &one);
	sched_setaffinity(0, sizeof(one), &one);
	setrlimit(RLIMIT_NOFILE, &rl);
	nanosleep(&settle, NULL); /* the session's start and state dump */
	while (nfd < 256 && (fds[nfd] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
		nfd++;
	strata_enable_majors(STRATA_MAJOR_BIT(6));
	for (unsigned long i = 0; i < n; i++)
		STRATA_EVENT1(6, 1, i);
	if (argc > 2 && !strcmp(argv[2], "never")) {
		/* out of descriptors to the end: no ring, ever */
		printf("%lu\n", n);
		return 0;
	}
	while (nfd > 0)
		close(fds[--nfd]);
	nanosleep(&retry, NULL);
	for (unsigned long i = 0; i < n; i++)
		STRATA_EVENT1(6, 2, i);
	printf("%lu\n", 2 * n);
	return 0;
}
