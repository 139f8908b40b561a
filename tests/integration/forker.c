/* SPDX-License-Identifier: MIT */
/* A traced program that forks: the child must not write into the parent's rings (its own, under the guardian). */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <strata/strata.h>

int main(void)
{
	for (int i = 0; i < 1000; i++)
		STRATA_EVENT1(3, 1, i);
	pid_t pid = fork();
	if (pid == 0) {
		/* Under the embedded mode's guardian the child records into
		 * a sub-trace of its own; with the in-process consumer its
		 * tracepoints are off (record.md). Never into the parent's. */
		for (int i = 0; i < 100000; i++)
			STRATA_EVENT1(3, 2, i);
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	for (int i = 0; i < 1000; i++)
		STRATA_EVENT1(3, 3, i);
	printf("%d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return 0;
}
