/* SPDX-License-Identifier: MIT */
/* Logs sequence numbers as fast as it can and publishes the last committed one in a shared file (salvage, daemon, snapshot, idle tests). */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <strata/strata.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: seqwriter SIDE-FILE [EVENTS [STOP-FILE [fast]]]\n");
		return 2;
	}
	uint64_t n = argc > 2 ? strtoull(argv[2], NULL, 10) : ~0ull;
	const char *stop = argc > 3 ? argv[3] : NULL; /* ends when it exists */
	/* fast: no pause (overwrite mode, where nobody drains) */
	int fast = argc > 4 && !strcmp(argv[4], "fast");
	int fd = open(argv[1], O_RDWR | O_CREAT, 0600);
	if (fd < 0 || ftruncate(fd, 4096) < 0)
		return 1;
	/* [0] pid, [1] last committed sequence number + 1, [2] the major
	 * mask now (a daemon's stop clears it), [3] 1 once it ended */
	volatile uint64_t *side = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				       MAP_SHARED, fd, 0);
	if (side == MAP_FAILED)
		return 1;
	side[1] = 0;
	side[0] = (uint64_t)getpid();
	for (uint64_t i = 0; i < n; i++) {
		STRATA_EVENT1(5, 1, i); /* committed when this returns */
		/* release: after the event; the checker reads the file
		 * from another process (snapcheck.py, the scripts) */
		strata_store_release(&side[1], i + 1);
		if ((i & 255) == 255 && !fast)
			usleep(100); /* heavy, but within what the daemon drains */
		if ((i & 4095) == 4095) {
			strata_store_relaxed(&side[2], strata_majors());
			if (stop && access(stop, F_OK) == 0)
				break;
		}
	}
	strata_store_release(&side[3], 1);
	/* SEQWRITER_LINGER_MS: stay a while, rings and all, logging nothing */
	const char *linger = getenv("SEQWRITER_LINGER_MS");
	if (linger)
		usleep((useconds_t)strtoul(linger, NULL, 10) * 1000);
	return 0;
}
