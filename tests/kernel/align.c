/* SPDX-License-Identifier: MIT */
/* Logs a user event just before and just after each of N getppid system calls (super-trace alignment test). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <strata/strata.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 5000;

	for (long i = 0; i < n; i++) {
		STRATA_EVENT1(10, 1, (uint64_t)i); /* before */
		syscall(SYS_getppid);
		STRATA_EVENT1(10, 2, (uint64_t)i); /* after */
	}
	strata_stop();
	printf("%ld\n", (long)syscall(SYS_gettid));
	return 0;
}
