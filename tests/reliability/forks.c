/* SPDX-License-Identifier: MIT */
/* Programs that fork under a session: no child may hang (issue 24, item 1). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <strata/strata.h>

/*
 * forks first        fork first thing, as daemonising programs do; the
 *                    child logs one event and calls exit()
 * forks loop N       N children one after another, each logging one event
 * forks thread N     a thread forks N children while 3 others log
 *
 * Children leave with exit(), not _exit(): the atexit handlers (leaving
 * the session, joining the helper thread) are what hung. Prints the
 * number of events logged, children's included, for the caller to check
 * against the trace; exits non-zero if a child failed.
 */

enum { THREAD_EVENTS = 2000 };

static int child(unsigned i)
{
	pid_t p = fork();

	if (p < 0) {
		perror("fork");
		exit(2);
	}
	if (p == 0) {
		STRATA_EVENT1(3, 1, i);
		exit(0);
	}
	return p;
}

static int reap(pid_t p)
{
	int st;

	if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "forks: child %d failed\n", (int)p);
		return 1;
	}
	return 0;
}

static unsigned nforks;
static int bad;

static void *logger(void *arg)
{
	for (unsigned i = 0; i < THREAD_EVENTS; i++) {
		STRATA_EVENT1(3, 3, i);
		if (!(i % 256))
			sched_yield();
	}
	return arg;
}

static void *forker(void *arg)
{
	for (unsigned i = 0; i < nforks; i++)
		bad |= reap(child(i));
	return arg;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "first";
	unsigned n = argc > 2 ? (unsigned)atoi(argv[2]) : 1;
	unsigned long logged = 0;

	if (!strcmp(mode, "first")) {
		bad |= reap(child(0));
		logged = 1;
	} else if (!strcmp(mode, "loop")) {
		for (unsigned i = 0; i < n; i++)
			bad |= reap(child(i));
		logged = n;
	} else if (!strcmp(mode, "thread")) {
		pthread_t t[4];
		nforks = n;
		for (int i = 0; i < 3; i++)
			pthread_create(&t[i], NULL, logger, NULL);
		pthread_create(&t[3], NULL, forker, NULL);
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
		logged = n + 3UL * THREAD_EVENTS;
	} else {
		fprintf(stderr, "usage: forks first|loop N|thread N\n");
		return 2;
	}
	STRATA_EVENT1(3, 2, logged);
	printf("%lu\n", logged + 1);
	return bad;
}
