/* SPDX-License-Identifier: MIT */
/* A program with known lock contention: its own counts, waits and holds are the ground truth of `strata locks` (tests/locks/locks_test.py). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sleeping.h"

/*
 * Rounds: the main thread takes `hot`, lets the W workers go, and lets go
 * of `hot` only once every worker has announced itself and sleeps (state
 * S in /proc): between its announcement and its lock call a worker makes
 * no call that could sleep, so it sleeps in that call, and its try of the
 * lock (the preload's, or glibc's own fast path) failed. Each round thus
 * has exactly W contended acquisitions of `hot`, whatever the scheduler
 * does. With "rw", the hot lock is an rwlock that the main thread
 * write-locks and the workers read-lock (all at once); with "wr" the
 * other way round: the main thread read-locks it and the workers wait to
 * write-lock it (writers waiting for a reader, then for each other: one
 * wait each all the same, inside their one wrlock call). With "rwmix",
 * both directions at once: the workers wait to read-lock hot_rw, which
 * the main thread write-locked, then hold it all together while the main
 * thread waits to write-lock it (it calls wrlock once every worker holds,
 * and they let go only once it sleeps there), so each round has W
 * contended rwlock-r and one contended rwlock-w acquisition. Each worker also takes its own `cold` mutex C times a round,
 * never contended. The workers synchronise with raw futexes, never with a
 * pthread lock, so that every pthread lock call is one the truth counts.
 */

#define MAXW 16

static pthread_mutex_t hot = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t hot_rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_spinlock_t hot_spin;
static sem_t hot_sem;
/* The hot lock's kind (the 6th argument): "mutex"; "rw": hot_rw, written
 * by main, read by the workers; "lib": a shared library's static mutex
 * (symbols); "timed": hot taken with pthread_mutex_timedlock; "spin":
 * hot_spin; "sem": hot_sem, a semaphore of 1 used as a lock; "wr":
 * hot_rw, read by main, written by the workers; "libfn": hot, which the
 * workers take through the shared library's locks_lib_lock() (a chain
 * through a library's own code); "dlfn": the same through the
 * locks_lib_lock() of a copy of that library that main loads with
 * dlopen() after tracing began (the path in $LOCKS_DL): its frames are
 * named only if the objects loaded late are mapped. */
static enum { M_MUTEX, M_RW, M_LIB, M_TIMED, M_SPIN, M_SEM, M_WR, M_RWMIX, M_LIBFN,
	      M_DLFN } mode;
pthread_mutex_t *locks_lib_hot(void);
int locks_lib_lock(pthread_mutex_t *m);
static int (*lib_lock)(pthread_mutex_t *m) = locks_lib_lock;
static pthread_mutex_t *hot_m = &hot;

static void *hot_addr(void)
{
	return mode == M_RW || mode == M_WR || mode == M_RWMIX ? (void *)&hot_rw : mode == M_SPIN ? (void *)&hot_spin :
	       mode == M_SEM ? (void *)&hot_sem : (void *)hot_m;
}

static void hot_lock(int writer)
{
	struct timespec far;
	switch (mode) {
	case M_RW:
	case M_RWMIX:
		writer ? pthread_rwlock_wrlock(&hot_rw) : pthread_rwlock_rdlock(&hot_rw);
		break;
	case M_WR: /* the main thread (writer = 1) reads, the workers write */
		writer ? pthread_rwlock_rdlock(&hot_rw) : pthread_rwlock_wrlock(&hot_rw);
		break;
	case M_TIMED:
		clock_gettime(CLOCK_REALTIME, &far);
		far.tv_sec += 3600;
		pthread_mutex_timedlock(hot_m, &far);
		break;
	case M_SPIN:
		pthread_spin_lock(&hot_spin);
		break;
	case M_SEM:
		while (sem_wait(&hot_sem) && errno == EINTR)
			;
		break;
	case M_LIBFN:
	case M_DLFN:
		writer ? pthread_mutex_lock(hot_m) : lib_lock(hot_m);
		break;
	default:
		pthread_mutex_lock(hot_m);
	}
}

static void hot_unlock(void)
{
	switch (mode) {
	case M_RW:
	case M_RWMIX:
	case M_WR: pthread_rwlock_unlock(&hot_rw); break;
	case M_SPIN: pthread_spin_unlock(&hot_spin); break;
	case M_SEM: sem_post(&hot_sem); break;
	default: pthread_mutex_unlock(hot_m);
	}
}
static pthread_mutex_t cold[MAXW];
static _Atomic uint32_t round_no, announced, done;
/* rwmix: workers holding the read lock; the main thread about to wait */
static _Atomic uint32_t holding, writer_trying;
static int32_t main_tid;
static _Atomic int32_t tids[MAXW];
static unsigned nworkers, nrounds, ncold;
static uint64_t hold_ns = 200000;
/* LOCKS_HOLD_SLEEP_US: each worker sleeps this long inside its hold (a
 * holder blocked in a system call, for the causes of long holds) */
static long hold_sleep_ns;
/* rwmix: how long the readers hold on once the writer sleeps */
#define RWMIX_EXTRA_NS 2000000u

struct worker {
	unsigned i;
	uint64_t wait_ns, hold_ns, acquisitions;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void fwait(_Atomic uint32_t *w, uint32_t val)
{
	syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void fwake(_Atomic uint32_t *w)
{
	syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

static void *worker(void *arg)
{
	struct worker *w = arg;

	atomic_store(&tids[w->i], (int32_t)syscall(SYS_gettid));
	for (uint32_t r = 1; r <= nrounds; r++) {
		uint32_t cur;
		while ((cur = atomic_load(&round_no)) < r)
			fwait(&round_no, cur);
		for (unsigned k = 0; k < ncold; k++) {
			pthread_mutex_lock(&cold[w->i]);
			pthread_mutex_unlock(&cold[w->i]);
			w->acquisitions++;
		}
		atomic_fetch_add(&announced, 1);
		uint64_t t0 = now_ns();
		hot_lock(0);
		uint64_t t1 = now_ns();
		w->acquisitions++;
		w->wait_ns += t1 - t0;
		atomic_fetch_add(&holding, 1);
		if (hold_sleep_ns) {
			struct timespec ts = { 0, hold_sleep_ns };
			nanosleep(&ts, NULL);
		}
		while (now_ns() - t1 < hold_ns)
			;
		/* rwmix: the readers hold together until the writer sleeps in
		 * its wrlock call */
		while (mode == M_RWMIX &&
		       (!atomic_load(&writer_trying) || !sleeping(main_tid)))
			;
		/* and then a while longer: the wrapper's fixed cost around a
		 * wait (its try and call chain, outside the traced wait but
		 * inside the program's clock) stays small beside the wait */
		for (uint64_t t2 = now_ns(); mode == M_RWMIX && now_ns() - t2 < RWMIX_EXTRA_NS;)
			;
		w->hold_ns += now_ns() - t1;
		hot_unlock();
		atomic_fetch_add(&done, 1);
		fwake(&done);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: contend WORKERS ROUNDS COLD TRUTH.json [HOLD_US [mutex|rw|lib|timed|spin|sem|wr|rwmix|libfn|dlfn]]\n");
		return 2;
	}
	nworkers = (unsigned)atoi(argv[1]);
	nrounds = (unsigned)atoi(argv[2]);
	ncold = (unsigned)atoi(argv[3]);
	if (argc > 5)
		hold_ns = strtoull(argv[5], NULL, 10) * 1000;
	if (getenv("LOCKS_HOLD_SLEEP_US"))
		hold_sleep_ns = atol(getenv("LOCKS_HOLD_SLEEP_US")) * 1000;
	static const char *const modes[] = { "mutex", "rw",  "lib",	"timed", "spin",
					     "sem",   "wr",  "rwmix", "libfn", "dlfn" };
	for (unsigned i = 0; argc > 6 && i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!strcmp(argv[6], modes[i]))
			mode = i;
	if (mode == M_LIB)
		hot_m = locks_lib_hot();
	if (mode == M_DLFN) {
		/* well after the state dump of tracing's start */
		pause_us(300000);
		void *dl = getenv("LOCKS_DL") ? dlopen(getenv("LOCKS_DL"), RTLD_NOW) : NULL;
		if (!dl || !(lib_lock = (int (*)(pthread_mutex_t *))dlsym(dl, "locks_lib_lock"))) {
			fprintf(stderr, "contend: dlopen $LOCKS_DL: %s\n", dlerror());
			return 2;
		}
	}
	pthread_spin_init(&hot_spin, PTHREAD_PROCESS_PRIVATE);
	sem_init(&hot_sem, 0, 1);
	if (!nworkers || nworkers > MAXW)
		return 2;
	pthread_t th[MAXW];
	struct worker w[MAXW] = { 0 };
	for (unsigned i = 0; i < nworkers; i++) {
		pthread_mutex_init(&cold[i], NULL);
		w[i].i = i;
		pthread_create(&th[i], NULL, worker, &w[i]);
	}
	for (unsigned i = 0; i < nworkers; i++)
		while (!atomic_load(&tids[i]))
			pause_us(50);
	uint64_t main_acq = 0, main_cont = 0, main_wait = 0, main_hold = 0;
	main_tid = (int32_t)syscall(SYS_gettid);
	for (uint32_t r = 1; r <= nrounds; r++) {
		/* the workers are all done: free */
		hot_lock(1);
		main_acq++;
		atomic_store(&holding, 0);
		atomic_store(&announced, 0);
		atomic_store(&round_no, r);
		fwake(&round_no);
		while (atomic_load(&announced) < nworkers)
			pause_us(20);
		/* a spinning worker never sleeps: give it time to try */
		for (unsigned i = 0; i < nworkers && mode != M_SPIN; i++)
			while (!sleeping(atomic_load(&tids[i])))
				pause_us(20);
		if (mode == M_SPIN)
			pause_us(5000);
		hot_unlock();
		if (mode == M_RWMIX) {
			/* every worker holds the read lock: wait to write it */
			while (atomic_load(&holding) < nworkers)
				pause_us(20);
			atomic_store(&writer_trying, 1);
			uint64_t t0 = now_ns();
			pthread_rwlock_wrlock(&hot_rw);
			uint64_t t1 = now_ns();
			atomic_store(&writer_trying, 0);
			main_acq++;
			main_cont++;
			main_wait += t1 - t0;
			while (now_ns() - t1 < hold_ns)
				;
			main_hold += now_ns() - t1;
			pthread_rwlock_unlock(&hot_rw);
		}
		uint32_t d;
		while ((d = atomic_load(&done)) < r * nworkers)
			fwait(&done, d);
	}
	for (unsigned i = 0; i < nworkers; i++)
		pthread_join(th[i], NULL);

	/* stdout: the same with and without the preload */
	printf("workers %u rounds %u cold %u: hot taken %" PRIu64 " times, cold %" PRIu64 "\n",
	       nworkers, nrounds, ncold, main_acq + (uint64_t)nworkers * nrounds,
	       (uint64_t)nworkers * nrounds * ncold);
	FILE *f = fopen(argv[4], "w");
	if (!f)
		return 1;
	uint64_t wait = 0, hold = 0;
	fprintf(f, "{\"hot\":\"%p\",\"hot_contended\":%" PRIu64 ",\"cold\":[",
		hot_addr(),
		(uint64_t)nworkers * nrounds);
	for (unsigned i = 0; i < nworkers; i++)
		fprintf(f, "%s\"%p\"", i ? "," : "", (void *)&cold[i]);
	fprintf(f, "],\"threads\":[");
	for (unsigned i = 0; i < nworkers; i++) {
		fprintf(f, "%s{\"tid\":%d,\"acquisitions\":%" PRIu64 ",\"contended\":%u}",
			i ? "," : "", atomic_load(&tids[i]), w[i].acquisitions, nrounds);
		wait += w[i].wait_ns;
		hold += w[i].hold_ns;
	}
	/* rwmix: the main thread's waits to write, apart (the workers' are
	 * the reads) */
	fprintf(f, "],\"main_tid\":%d,\"main_acquisitions\":%" PRIu64
		",\"wait_ns\":%" PRIu64 ",\"hold_ns\":%" PRIu64 ",\"main_contended\":%" PRIu64
		",\"main_wait_ns\":%" PRIu64 ",\"main_hold_ns\":%" PRIu64 "}\n",
		(int)syscall(SYS_gettid), main_acq, wait, hold, main_cont, main_wait, main_hold);
	return fclose(f) ? 1 : 0;
}
