/* SPDX-License-Identifier: MIT */
/* Fork and exec children of a program recording through STRATA_OUTPUT (issue 26, item 3). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <strata/strata.h>

/*
 * forkemb: logs 1000 events (5:1), then forks
 *   a child that logs 50,000 events (5:2) and ends with _exit(0): no
 *     atexit handler runs, nothing says goodbye;
 *   a child that logs 50,000 events (5:3) and dies of SIGSEGV;
 *   a child that execs this program as `forkemb exec`, which logs
 *     50,000 events (5:4) and returns from main;
 * waits for them, logs 1000 more and returns. Every one of the 152,000
 * events must be in the trace, in one sub-trace per process.
 */
static void logn(unsigned minor, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		switch (minor) {
		case 1: STRATA_EVENT1(5, 1, i); break;
		case 2: STRATA_EVENT1(5, 2, i); break;
		case 3: STRATA_EVENT1(5, 3, i); break;
		default: STRATA_EVENT1(5, 4, i); break;
		}
	}
}

int main(int argc, char **argv)
{
	pid_t k[3];

	if (argc > 1 && !strcmp(argv[1], "exec")) {
		logn(4, 50000);
		return 0;
	}
	logn(1, 1000);
	if ((k[0] = fork()) == 0) {
		logn(2, 50000);
		_exit(0);
	}
	if ((k[1] = fork()) == 0) {
		logn(3, 50000);
		signal(SIGSEGV, SIG_DFL);
		raise(SIGSEGV);
		_exit(1);
	}
	if ((k[2] = fork()) == 0) {
		execl("/proc/self/exe", argv[0], "exec", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 3; i++) {
		int st;
		waitpid(k[i], &st, 0);
		if (i == 1 ? !WIFSIGNALED(st) : !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "forkemb: child %d ended wrongly (%#x)\n", i, st);
			return 1;
		}
	}
	logn(1, 1000);
	return 0;
}
