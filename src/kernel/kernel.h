/* SPDX-License-Identifier: MIT */
/* The kernel source: ftrace events on the trace clock, written as strata streams (docs/kernel.md). */
#ifndef STRATA_KERNEL_H
#define STRATA_KERNEL_H

#include <stddef.h>
#include <stdint.h>

/* Groups of kernel events (docs/kernel.md "Groups"). */
enum kern_group {
	KERN_SCHED = 0x1,    /* sched_switch, wakeup, wakeup_new, process_*, migrate */
	KERN_IRQ = 0x2,      /* irq_handler_entry/exit, softirq_entry/exit */
	KERN_SYSCALLS = 0x4, /* raw_syscalls sys_enter/sys_exit (about 0.4 us per call) */
	KERN_FAULTS = 0x8,   /* exceptions:page_fault_user/kernel (x86); on with sched */
};

struct kern_options {
	const char *trace_dir;     /* TRACE: the kernel sub-trace goes to TRACE/kernel */
	unsigned groups;           /* enum kern_group bits */
	const char *const *events; /* more "system:event" names, NULL-terminated, or NULL */
	const int *pids;           /* trace these processes and their children only */
	unsigned npids;            /* 0: the whole system */
	unsigned buffer_kb;        /* kernel buffer per CPU; 0: 4096 */
	unsigned packet_size;      /* bytes, power of two; 0: 256 KiB (format.md §2) */
	unsigned flush_ms;         /* reader period; 0: 100 */
	unsigned live_ms;          /* the live timer (docs/kernel.md, "Live"):
				    * every live_ms the open packets written
				    * and a beacon published; 0: off */
	char *err;                 /* one line on failure (optional) */
	size_t errlen;
};

struct kern_stats {
	uint64_t events;    /* kernel events written */
	uint64_t discarded; /* lost in the kernel buffers (overrun + dropped) */
	uint64_t clamped;   /* timestamps that went backwards, clamped */
	unsigned ncpus;
	int times_err;       /* no strata:thread_times: why (negative errno), or 0 */
	uint64_t times_lost; /* exits whose times were not kept (ktimes.c) */
};

struct kern_session;

/*
 * Parse a comma list of groups ("sched,irq,syscalls,faults", or "all" for
 * the four); "sched" brings "faults" along, and "-NAME" takes a group out
 * ("sched,-faults"). Returns 0, or -EINVAL with *bad pointing at the
 * unknown name.
 */
int kern_groups_parse(const char *list, unsigned *groups, const char **bad);

/*
 * Whether tracefs has the event SYSTEM:EVENT: 1 or 0, or a negative errno
 * when it cannot tell (no tracefs, not root). When tracefs is not mounted
 * it is mounted on a temporary directory for the question and unmounted,
 * so the answer does not depend on whether something else mounted it.
 */
int kern_event_exists(const char *system, const char *event);

/*
 * Start recording kernel events into o->trace_dir/kernel: mount tracefs
 * if needed, create the private instance "strata-<pid>" (removing those
 * of dead strata processes), set its clock (x86-tsc when the user-space
 * trace clock is the TSC, else mono), apply the pid filter (set_event_pid
 * and the event-fork option), enable the events, and start the one reader
 * thread. On failure, everything done so far is undone.
 * Call from one thread; not from a signal handler. Blocks no signal: the
 * caller decides what SIGINT does (see cmd-ktrace.c).
 * Returns 0, -EPERM/-EACCES (not root), -ENODEV (no tracefs), -ENOENT (an
 * event does not exist), -EEXIST (this process already has a session),
 * -ENOMEM, or the errno of a failed file operation; o->err says which.
 */
int kern_start(const struct kern_options *o, struct kern_session **out);

/*
 * Stop: tracing off, read what is left in the kernel buffers, write the
 * metadata (with the clock of the user sub-traces found beside it, so that
 * both levels share one clock class exactly), remove the instance and
 * unmount tracefs if kern_start mounted it. Fills *st if not NULL.
 * Accepts NULL. Returns 0 or the first error met while writing.
 */
int kern_stop(struct kern_session *s, struct kern_stats *st);

#endif /* STRATA_KERNEL_H */
