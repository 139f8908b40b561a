/* SPDX-License-Identifier: MIT */
/* A traced program that forks: the child must not write into the parent's rings. */
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
		/* The child's tracepoints are off (docs: fork); they must
		 * neither crash nor reach the parent's trace. */
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
