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
	if (strata_exchange_relaxed(word, 0)) {
		int saved_errno = errno; /* a tracepoint's caller keeps its errno */
		/* Pairs with client_connect()'s release store (lib/client.c):
		 * the eventfd was made before its number was stored. */
		int bfd = strata_load_acquire(&ring_bellfd);
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

	/* After what the caller published (a ring and ring_hwm, or running
	 * cleared); pairs with cons_main()'s seq_cst load of ring_bell,
	 * before it looks at them: it sees them, or its wait sees the bell
	 * moved and returns at once. */
	strata_add_fetch_seq_cst(&ring_bell, 1);
	syscall(SYS_futex, &ring_bell, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
	errno = saved_errno;
}
