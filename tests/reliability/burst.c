/* SPDX-License-Identifier: MIT */
/* A burst into the default rings, for exact loss accounting (issue 26, item 1). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <strata/strata.h>

/*
 * burst [EVENTS]: 4 threads log EVENTS events each of 1 to 4 words as
 * fast as they can, moving between CPUs (sched_setaffinity) every 5000;
 * another thread sends them SIGUSR1 about every 200 us, and the handler
 * logs one event. Traced from the environment (STRATA_OUTPUT, or under
 * `strata record`), with the default rings: the consumer cannot keep up,
 * and many events are discarded. Prints the number of events logged;
 * the caller checks that the trace's recorded + discarded equals it.
 * BURST_NO_SIGNALS=1: no signals (blocking mode loses nothing then).
 */

enum { NTHREADS = 4 };

static long nevents = 100000;
static pid_t tids[NTHREADS];
static long sig_logged[NTHREADS];
static __thread int me = -1;
static int done;

static void on_usr1(int sig)
{
	(void)sig;
	if (me >= 0) {
		STRATA_EVENT1(7, 9, (uint64_t)sig_logged[me]);
		sig_logged[me]++;
	}
}

static void *worker(void *arg)
{
	int w = (int)(intptr_t)arg;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	me = w;
	/* pairs with the signaller's acquire: the tid is this thread's */
	strata_store_release(&tids[w], (pid_t)syscall(SYS_gettid));
	for (long i = 0; i < nevents; i++) {
		uint64_t v = (uint64_t)w << 40 | (uint64_t)i;
		switch (i & 3) {
		case 0: STRATA_EVENT1(7, 1, v); break;
		case 1: STRATA_EVENT2(7, 2, v, 2); break;
		case 2: STRATA_EVENT3(7, 3, v, 2, 3); break;
		default: STRATA_EVENT4(7, 4, v, 2, 3, 4); break;
		}
		if (i % 5000 == 4999 && ncpu > 1) {
			cpu_set_t set;
			CPU_ZERO(&set);
			CPU_SET((int)((i / 5000 + w) % ncpu), &set);
			sched_setaffinity(0, sizeof(set), &set);
		}
	}
	return NULL;
}

static void *signaller(void *arg)
{
	/* `done` set before it starts: no signals at all */
	for (unsigned i = 0; !strata_load_acquire(&done); i++) {
		pid_t t = strata_load_acquire(&tids[i % NTHREADS]);
		if (t > 0)
			syscall(SYS_tgkill, getpid(), t, SIGUSR1);
		usleep(200 / NTHREADS);
	}
	return arg;
}

int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = on_usr1, .sa_flags = SA_RESTART};
	pthread_t th[NTHREADS], sig;
	long logged;

	if (argc > 1)
		nevents = atol(argv[1]);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	for (int i = 0; i < NTHREADS; i++)
		pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
	const char *nosig = getenv("BURST_NO_SIGNALS");
	if (nosig && *nosig == '1')
		strata_store_relaxed(&done, 1);
	pthread_create(&sig, NULL, signaller, NULL);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	strata_store_release(&done, 1); /* after the joins: the signaller stops */
	pthread_join(sig, NULL);
	signal(SIGUSR1, SIG_IGN);
	logged = NTHREADS * nevents;
	for (int i = 0; i < NTHREADS; i++)
		logged += sig_logged[i];
	printf("%ld\n", logged);
	return 0;
}
