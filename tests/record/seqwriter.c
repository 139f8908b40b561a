/* SPDX-License-Identifier: MIT */
/* Logs sequence numbers as fast as it can and publishes the last committed one in a shared file (crash salvage test). */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <strata/strata.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: seqwriter SIDE-FILE [EVENTS]\n");
		return 2;
	}
	uint64_t n = argc > 2 ? strtoull(argv[2], NULL, 10) : ~0ull;
	int fd = open(argv[1], O_RDWR | O_CREAT, 0600);
	if (fd < 0 || ftruncate(fd, 4096) < 0)
		return 1;
	/* [0] pid, [1] last committed sequence number + 1 */
	volatile uint64_t *side = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				       MAP_SHARED, fd, 0);
	if (side == MAP_FAILED)
		return 1;
	side[1] = 0;
	side[0] = (uint64_t)getpid();
	for (uint64_t i = 0; i < n; i++) {
		STRATA_EVENT1(5, 1, i); /* committed when this returns */
		__atomic_store_n(&side[1], i + 1, __ATOMIC_RELEASE);
		if ((i & 255) == 255)
			usleep(100); /* heavy, but within what the daemon drains */
	}
	return 0;
}
