/* SPDX-License-Identifier: MIT */
/* fork() of a traced process: the library's locks around it, and what the child keeps (docs/record.md, "Fork"). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <unistd.h>

#include <strata/strata.h>

#include "lib/client.h"
#include "lib/session.h"
#include "ring/ring.h"

/*
 * fork(): the library's locks (session.h) are taken before it, in their
 * nesting order, so that no other thread of ours is inside one when the
 * child is made: the helper thread a daemon's session child starts would
 * otherwise wait forever on a lock that the parent's helper held at that
 * moment (statedump_lock), and so would its exit, joining that helper.
 * EDEADLK: this very thread holds the lock, so fork() was called from a
 * signal handler that interrupted the library; the child then does not
 * trace (its helper could enter the interrupted critical section).
 */
static pthread_mutex_t *const lib_locks[] = {
	&registry_lock, &control_enable_lock, &statedump_lock,
};
#define NLIB_LOCKS (sizeof(lib_locks) / sizeof(lib_locks[0]))
static bool lib_locks_held[NLIB_LOCKS];
static bool fork_interrupted_lib;

static void before_fork(void)
{
	fork_interrupted_lib = false;
	for (size_t i = 0; i < NLIB_LOCKS; i++) {
		lib_locks_held[i] = pthread_mutex_lock(lib_locks[i]) == 0;
		fork_interrupted_lib |= !lib_locks_held[i];
	}
}

static void after_fork_parent(void)
{
	for (size_t i = NLIB_LOCKS; i-- > 0;)
		if (lib_locks_held[i])
			pthread_mutex_unlock(lib_locks[i]);
}

/* In the child, the locks belong to a thread id that no longer exists:
 * glibc's error-checking unlock refuses (EPERM), so each is made anew.
 * The unlock before is for ThreadSanitizer, which takes this thread for
 * the owner and would call the next lock a double lock. */
static void fork_child_locks(void)
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
	for (size_t i = 0; i < NLIB_LOCKS; i++) {
		if (lib_locks_held[i])
			(void)pthread_mutex_unlock(lib_locks[i]);
		pthread_mutex_init(lib_locks[i], &a);
	}
	pthread_mutexattr_destroy(&a);
}

/*
 * After fork() the child has copies of the parent's mappings: MAP_SHARED
 * ring memory that the parent's consumer is still draining. The child
 * must never write there, so it drops every ring and stops tracing. (A
 * `strata record` session traces children by giving them rings of their
 * own; the in-process consumer thread does not survive fork.)
 */
static void after_fork_child(void)
{
	fork_child_locks();
	if (fork_interrupted_lib) {
		static const char msg[] = "strata: fork() from a signal handler "
			"that interrupted the tracer: the child is not traced\n";
		client_fork_untraced();
		if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0) {
			/* nothing more to say it with */
		}
	}
	/* Under `strata record` the child keeps tracing, into rings of its
	 * own that it hands over when it creates them. */
	if (!client_traces_child())
		mask_set(0);
	strata_pid = (uint32_t)getpid();
	client_after_fork_child();
	strata_tls.tid = 0;
	for (unsigned i = 0; i < STRATA_MAX_CPUS; i++) {
		struct strata_ring *r = strata_rings[i];
		strata_rings[i] = NULL;
		ring_destroy(r);
	}
	session_after_fork_child();
	client_fork_helper();
}

void fork_init(void)
{
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}
