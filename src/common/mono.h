/* SPDX-License-Identifier: MIT */
/* Milliseconds on CLOCK_MONOTONIC, and a wait for readability bounded by a deadline in them. */
#ifndef STRATA_COMMON_MONO_H
#define STRATA_COMMON_MONO_H

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <time.h>

/* Now, in ms on CLOCK_MONOTONIC: every deadline of the library, the
 * consumer, the daemon and the kernel reader. */
static inline uint64_t mono_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* Wait until fd is readable or `deadline` (mono_ms()) passes, signals
 * retried: 1 readable (or hung up), 0 the deadline passed, -1 poll()
 * failed (errno). */
static inline int mono_poll_in(int fd, uint64_t deadline)
{
	for (;;) {
		uint64_t now = mono_ms();
		struct pollfd pf = { fd, POLLIN, 0 };
		if (now >= deadline)
			return 0;
		int r = poll(&pf, 1, (int)(deadline - now));
		if (r >= 0 || errno != EINTR)
			return r > 0 ? 1 : r;
	}
}

#endif /* STRATA_COMMON_MONO_H */
