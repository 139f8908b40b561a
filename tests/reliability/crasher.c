/* SPDX-License-Identifier: MIT */
/* A program recording through STRATA_OUTPUT that is killed (issue 26, item 2). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <strata/strata.h>

/*
 * crasher PROGRESS: two threads log sequence numbers (event 5:T+1, w0 = n)
 * and, after each tracepoint returns, publish n + 1 in the file PROGRESS
 * (mapped shared): so at any moment the file says how many events each
 * thread had committed. Runs until killed. Before logging it checks
 * that the guardian is none of its business: no SIGCHLD, and waitpid(-1)
 * finds no child (exit 3 otherwise).
 */

static uint64_t *done;
static volatile sig_atomic_t chld;

static void on_chld(int sig)
{
	(void)sig;
	chld++;
}

static void *logger(void *arg)
{
	unsigned t = (unsigned)(uintptr_t)arg;

	for (uint64_t n = 0;; n++) {
		STRATA_EVENT1(5, t + 1, n);
		/* release: after the event, for whoever reads the file */
		strata_store_release(&done[t], n + 1);
		for (volatile int k = 0; k < 3000; k++) /* ~ an event per 10 us */
			;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = on_chld};
	pthread_t th[2];

	if (argc < 2)
		return 2;
	sigaction(SIGCHLD, &sa, NULL);
	usleep(20000);
	if (waitpid(-1, NULL, WNOHANG) != -1 || errno != ECHILD || chld) {
		fprintf(stderr, "crasher: the guardian showed as a child\n");
		return 3;
	}
	int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, 4096) < 0)
		return 2;
	done = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (done == MAP_FAILED)
		return 2;
	for (unsigned t = 0; t < 2; t++)
		pthread_create(&th[t], NULL, logger, (void *)(uintptr_t)t);
	printf("ready\n");
	fflush(stdout);
	pause();
	return 0;
}
