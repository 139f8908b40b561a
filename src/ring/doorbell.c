/* SPDX-License-Identifier: MIT */
/* Doorbells: how writers wake a consumer that sleeps (docs/ring.md §8). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ring/ring.h"

int ring_bellfd = -1;

/* Wake the consumer waiting on *word if it is 1, setting it to 0 (ring.md
 * §8): through the session daemon's eventfd when the process has one,
 * else as a shared futex (the waiter may be another process mapping the
 * ring). */
void ring_doorbell(uint32_t *word)
{
	if (__atomic_exchange_n(word, 0, __ATOMIC_RELAXED)) {
		int saved_errno = errno; /* a tracepoint's caller keeps its errno */
		int bfd = __atomic_load_n(&ring_bellfd, __ATOMIC_ACQUIRE);
		if (bfd >= 0) {
			uint64_t one = 1;
			if (write(bfd, &one, sizeof(one)) < 0) {
				/* EAGAIN: the counter is full, it rings */
			}
		} else {
			syscall(SYS_futex, word, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
		}
		errno = saved_errno;
	}
}

uint32_t ring_bell;

void ring_bell_ring(void)
{
	int saved_errno = errno;

	__atomic_add_fetch(&ring_bell, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &ring_bell, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
	errno = saved_errno;
}
