/* SPDX-License-Identifier: MIT */
/* The kernel's own per-thread CPU accounting (taskstats over generic netlink), for the breakdown's user/kernel split. */
#ifndef STRATA_KERNEL_TASKSTATS_H
#define STRATA_KERNEL_TASKSTATS_H

#include <stdint.h>

/*
 * A thread's utime and stime as taskstats reports them: its tick samples
 * (each tick, CONFIG_HZ, less the steal time it held, charged to the
 * thread as user or system time), to the microsecond, not scaled to the
 * runtime as /proc and rusage scale them (cputime_adjust). Their ratio is
 * the kernel's statistical split of the thread's time.
 */
struct kacct_times {
	uint32_t tid, pid; /* pid 0: not known (a kernel before taskstats v13) */
	uint64_t utime_ns, stime_ns;
};

struct kacct;

/*
 * Open a query socket and a listener that receives the accounting of
 * every thread that exits on CPUs 0..ncpus-1 (TASKSTATS_CMD_ATTR_REGISTER_
 * CPUMASK). Needs CAP_NET_ADMIN. Returns 0, or a negative errno (-ENOENT:
 * no taskstats in this kernel; -EPERM).
 */
int kacct_open(unsigned ncpus, struct kacct **out);
/* The listener's descriptor, to poll for POLLIN. */
int kacct_fd(const struct kacct *a);
/* The accounting of live thread `tid` now. Returns 0 or -ESRCH, -EIO. */
int kacct_query(struct kacct *a, uint32_t tid, struct kacct_times *out);
/*
 * Hand every exit received so far to fn. Never blocks. Returns the number
 * handed, or a negative errno. When the socket's buffer overflowed, the
 * exits it dropped are unknown: kacct_overflowed() says so.
 */
int kacct_exits(struct kacct *a, void (*fn)(const struct kacct_times *, void *),
		void *arg);
int kacct_overflowed(const struct kacct *a);
void kacct_close(struct kacct *a); /* NULL ok */

#endif /* STRATA_KERNEL_TASKSTATS_H */
