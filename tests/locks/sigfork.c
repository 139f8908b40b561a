/* SPDX-License-Identifier: MIT */
/* Locks taken in a signal handler and across fork(), under libstrata-locks.so: must end, with the same output (tests/locks/locks_test.py). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_mutex_t shared = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t in_handler = PTHREAD_MUTEX_INITIALIZER;
static volatile sig_atomic_t handled;
static atomic_int stop;

/* Only the handler takes in_handler, and SIGALRM does not nest, so it
 * cannot deadlock on itself; it interrupts the wrappers at any point. */
static void on_alarm(int sig)
{
	(void)sig;
	pthread_mutex_lock(&in_handler);
	handled++;
	pthread_mutex_unlock(&in_handler);
}

static void *spin(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		pthread_mutex_lock(&shared);
		pthread_mutex_unlock(&shared);
	}
	return NULL;
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = { { 0, 200 }, { 0, 200 } };
	setitimer(ITIMER_REAL, &it, NULL);

	pthread_t th;
	pthread_create(&th, NULL, spin, NULL);
	unsigned children = 0;
	for (int i = 0; i < 20; i++) {
		for (int k = 0; k < 2000; k++) {
			pthread_mutex_lock(&shared);
			pthread_mutex_unlock(&shared);
		}
		/* fork while the other thread may hold `shared`, or be in
		 * the handler holding in_handler: the child takes a lock of
		 * its own only */
		pid_t pid = fork();
		if (pid == 0) {
			pthread_mutex_t mine = PTHREAD_MUTEX_INITIALIZER;
			for (int k = 0; k < 1000; k++) {
				pthread_mutex_lock(&mine);
				pthread_mutex_unlock(&mine);
			}
			_exit(0);
		}
		int st = -1;
		pid_t got;
		while (pid > 0 && (got = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
			;
		if (pid > 0 && got == pid && WIFEXITED(st) && !WEXITSTATUS(st))
			children++;
	}
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	it = (struct itimerval){ 0 };
	setitimer(ITIMER_REAL, &it, NULL);
	printf("children %u ok; handler ran %s\n", children, handled ? "yes" : "no");
	return 0;
}
