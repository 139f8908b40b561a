/* SPDX-License-Identifier: MIT */
/* The kernel session's start and stop: the event groups and classes, and the steps in order (ksetup.c, kread.c, kmeta.c do them). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tracefs/tracefs.h>
#include <traceevent/event-parse.h>
#include <traceevent/kbuffer.h>

#include <strata/strata.h>

#include "kernel/kernel.h"
#include "kernel/kern_int.h"
#include "lib/clock.h"

/* The events of each group (docs/kernel.md); majors follow the order of
 * the systems here, minors the order of the events. */
static const struct {
	unsigned group;
	const char *sys, *name;
} group_events[] = {
	{ KERN_SCHED, "sched", "sched_switch" },
	{ KERN_SCHED, "sched", "sched_wakeup" },
	{ KERN_SCHED, "sched", "sched_wakeup_new" },
	{ KERN_SCHED, "sched", "sched_waking" },
	{ KERN_SCHED, "sched", "sched_process_fork" },
	{ KERN_SCHED, "sched", "sched_process_exec" },
	{ KERN_SCHED, "sched", "sched_process_exit" },
	{ KERN_SCHED, "sched", "sched_migrate_task" },
	{ KERN_IRQ, "irq", "irq_handler_entry" },
	{ KERN_IRQ, "irq", "irq_handler_exit" },
	{ KERN_IRQ, "irq", "softirq_entry" },
	{ KERN_IRQ, "irq", "softirq_exit" },
	/* x86 interrupt vectors: the local timer is no irq_handler event */
	{ KERN_IRQ, "irq_vectors", "local_timer_entry" },
	{ KERN_IRQ, "irq_vectors", "local_timer_exit" },
	{ KERN_IRQ, "irq_vectors", "reschedule_entry" },
	{ KERN_IRQ, "irq_vectors", "reschedule_exit" },
	{ KERN_IRQ, "irq_vectors", "call_function_single_entry" },
	{ KERN_IRQ, "irq_vectors", "call_function_single_exit" },
	{ KERN_SYSCALLS, "raw_syscalls", "sys_enter" },
	{ KERN_SYSCALLS, "raw_syscalls", "sys_exit" },
	/* x86 page faults (entry only: their time is not traced) */
	{ KERN_FAULTS, "exceptions", "page_fault_user" },
	{ KERN_FAULTS, "exceptions", "page_fault_kernel" },
};
#define NGROUP_EVENTS (sizeof(group_events) / sizeof(group_events[0]))

int kern_groups_parse(const char *list, unsigned *groups, const char **bad)
{
	static char tok[64];
	const char *p = list;
	unsigned add = 0, del = 0;

	*groups = 0;
	while (p && *p) {
		size_t n = strcspn(p, ",");
		snprintf(tok, sizeof(tok), "%.*s", (int)(n < 63 ? n : 63), p);
		const char *nm = tok + (tok[0] == '-');
		unsigned g = 0;
		if (!strcmp(nm, "sched"))
			g = KERN_SCHED | (tok[0] == '-' ? 0 : KERN_FAULTS);
		else if (!strcmp(nm, "irq"))
			g = KERN_IRQ;
		else if (!strcmp(nm, "syscalls") || !strcmp(nm, "syscall"))
			g = KERN_SYSCALLS;
		else if (!strcmp(nm, "faults"))
			g = KERN_FAULTS;
		else if (!strcmp(nm, "all"))
			g = KERN_SCHED | KERN_IRQ | KERN_SYSCALLS | KERN_FAULTS;
		else if (n) {
			if (bad)
				*bad = tok;
			return -EINVAL;
		}
		*(tok[0] == '-' ? &del : &add) |= g;
		p += n + (p[n] == ',');
	}
	*groups = add & ~del;
	return 0;
}

static int add_class(struct kern_session *s, const struct kern_options *o,
		     const char *sys, const char *name)
{
	struct tep_event *ev = tep_find_event_by_name(s->tep, sys, name);
	unsigned major = 0, minor = 1;

	if (!ev) {
		set_err(o, "kernel event %s:%s does not exist here", sys, name);
		return -ENOENT;
	}
	for (unsigned i = 0; i < s->nclasses; i++)
		if (s->classes[i].tep_id == ev->id)
			return 0; /* asked twice */
	/* major per system, in order of first use; minor per event */
	unsigned maxmajor = 0;
	for (unsigned i = 0; i < s->nclasses; i++) {
		if (s->classes[i].desc.major > maxmajor)
			maxmajor = s->classes[i].desc.major;
		if (!strcmp(s->classes[i].subsys, sys)) {
			major = s->classes[i].desc.major;
			if (s->classes[i].desc.minor >= minor)
				minor = s->classes[i].desc.minor + 1u;
		}
	}
	if (!major)
		major = maxmajor + 1;
	if (major > 62) {
		set_err(o, "too many kernel event systems (62 at most)");
		return -E2BIG;
	}
	struct kclass *nc = realloc(s->classes, (s->nclasses + 1) * sizeof(*nc));
	if (!nc)
		return -ENOMEM;
	s->classes = nc;
	int ret = kclass_init(&s->classes[s->nclasses], ev, major, minor);
	if (ret)
		return ret;
	s->nclasses++;
	if (tracefs_event_enable(s->inst, sys, name) < 0) {
		ret = errno ? -errno : -EIO;
		set_err(o, "cannot enable kernel event %s:%s: %s", sys, name, strerror(-ret));
		return ret;
	}
	if (!strcmp(sys, "raw_syscalls")) {
		/* The reader thread excludes itself: its own reads would
		 * otherwise feed the buffers it drains. */
		char filt[64];
		snprintf(filt, sizeof(filt), "common_pid != %d", (int)s->reader_tid);
		tracefs_event_file_write(s->inst, sys, name, "filter", filt);
	}
	return 0;
}

/* The format files of the systems used: those of the groups, then -e's.
 * 0, or a negative errno after set_err(). */
static int kern_formats(struct kern_session *s, const struct kern_options *o)
{
	const char *systems[64] = { "sched", "irq", "raw_syscalls", "irq_vectors", "exceptions" };
	const unsigned ngroup_sys = 5;
	unsigned nsys = ngroup_sys;
	for (const char *const *e = o->events; e && *e && nsys < 63; e++) {
		char sys[64];
		snprintf(sys, sizeof(sys), "%.*s", (int)strcspn(*e, ":"), *e);
		bool have = false;
		for (unsigned i = 0; i < nsys; i++)
			have |= !strcmp(systems[i], sys);
		if (!have && (systems[nsys] = strdup(sys)))
			nsys++;
	}
	s->tep = tracefs_local_events_system(NULL, systems);
	for (unsigned i = ngroup_sys; i < nsys; i++)
		free((char *)systems[i]);
	if (!s->tep) {
		set_err(o, "cannot read the tracefs event formats");
		return -EIO;
	}
	return (s->kbuf = tep_kbuffer(s->tep)) ? 0 : -ENOMEM;
}

/* The events of the groups and of -e, enabled, and the table from tracefs
 * ids to classes. 0, or a negative errno after set_err(). */
static int kern_classes(struct kern_session *s, const struct kern_options *o)
{
	int ret;

	for (size_t i = 0; i < NGROUP_EVENTS; i++)
		if ((o->groups & group_events[i].group) &&
		    (ret = add_class(s, o, group_events[i].sys, group_events[i].name))) {
			if (ret == -ENOENT && (!strcmp(group_events[i].name, "sched_waking") ||
					       !strcmp(group_events[i].sys, "irq_vectors") ||
					       !strcmp(group_events[i].sys, "exceptions")))
				continue; /* older kernels, other architectures */
			return ret;
		}
	for (const char *const *e = o->events; e && *e; e++) {
		char sys[64];
		const char *colon = strchr(*e, ':');
		if (!colon) {
			set_err(o, "kernel event '%s': expected SYSTEM:EVENT", *e);
			return -EINVAL;
		}
		snprintf(sys, sizeof(sys), "%.*s", (int)(colon - *e), *e);
		if ((ret = add_class(s, o, sys, colon + 1)))
			return ret;
	}
	s->max_id = 0;
	for (unsigned i = 0; i < s->nclasses; i++)
		if (s->classes[i].tep_id > s->max_id)
			s->max_id = s->classes[i].tep_id;
	if (!(s->by_id = calloc((size_t)s->max_id + 1, sizeof(*s->by_id))))
		return -ENOMEM;
	for (unsigned i = 0; i < s->nclasses; i++)
		s->by_id[s->classes[i].tep_id] = &s->classes[i];
	return 0;
}

int kern_start(const struct kern_options *o, struct kern_session **out)
{
	struct kern_session *s;
	bool made = false;
	int ret;

	*out = NULL;
	if (!o->trace_dir || !o->groups) {
		set_err(o, "no trace directory or no event group");
		return -EINVAL;
	}
	uint32_t psize = o->packet_size ? o->packet_size : 256u << 10;
	if (psize < 16384 || (psize & (psize - 1))) {
		set_err(o, "packet size %u: a power of two >= 16 KiB", psize);
		return -EINVAL;
	}
	if (!(s = calloc(1, sizeof(*s))))
		return -ENOMEM;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->wake_fd = -1;
	s->flush_ms = o->flush_ms ? o->flush_ms : 100;
	s->live_ms = o->live_ms;
	s->live_fd = -1;
	snprintf(s->trace_dir, sizeof(s->trace_dir), "%s", o->trace_dir);
	snprintf(s->dir, sizeof(s->dir), "%s/kernel", o->trace_dir);
	clock_init();
	clock_point_take(&s->p0);

	if ((ret = kern_instance(s, o)) || (ret = kern_outputs(s, o, psize, &made)) ||
	    (ret = kern_formats(s, o)))
		goto fail;
	/* the kernel's own split of on-CPU time, for the breakdown: baselines
	 * now, before tracing is on (a failure only costs the split) */
	if (o->groups & KERN_SCHED)
		s->times_err = ktimes_start(&s->times, s->ncpus, s->scope, &s->streams[0]);
	if ((ret = kern_reader_start(s, o)) || (ret = kern_classes(s, o)))
		goto fail;
	strata_store_release(&s->ready, 1);
	if (tracefs_trace_on(s->inst) < 0) {
		ret = -EIO;
		set_err(o, "cannot turn tracing on in %s", s->name);
		goto fail;
	}
	*out = s;
	return 0;

fail:
	kern_teardown(s);
	kern_session_free(s);
	if (made) {
		/* the streams are closed: remove them */
		struct kern_session tmp = { .ncpus = (unsigned)sysconf(_SC_NPROCESSORS_CONF) };
		snprintf(tmp.dir, sizeof(tmp.dir), "%s/kernel", o->trace_dir);
		kern_remove_outputs(&tmp);
	}
	return ret;
}

int kern_stop(struct kern_session *s, struct kern_stats *st)
{
	int ret = 0;

	if (!s)
		return 0;
	tracefs_trace_off(s->inst);
	kern_reader_join(s);
	kern_drain_all(s, false);
	kern_drain_all(s, true);
	for (unsigned cpu = 0; cpu < s->ncpus; cpu++)
		s->streams[cpu].discarded = kern_cpu_lost(s, cpu);
	uint64_t times_lost = ktimes_stop(s->times, &s->streams[0]);
	s->times = NULL;
	kern_teardown(s);
	if (st)
		memset(st, 0, sizeof(*st));
	uint64_t now = strata_clock();
	for (unsigned cpu = 0; cpu < s->ncpus; cpu++) {
		struct kstream *k = &s->streams[cpu];
		if (st) {
			st->events += k->events;
			st->discarded += k->discarded;
			st->clamped += k->clamped;
		}
		int r = kstream_close(k, now);
		if (r && !ret)
			ret = r;
	}
	if (st) {
		st->ncpus = s->ncpus;
		st->times_err = s->times_err;
		st->times_lost = times_lost;
	}
	int r = kern_write_metadata(s);
	if (r && !ret)
		ret = r;
	if (s->live_fd >= 0) {
		/* the indexes published say the rest (format.md §1) */
		char path[4300];
		snprintf(path, sizeof(path), "%s/.live-time", s->dir);
		unlink(path);
	}
	kern_session_free(s);
	return ret;
}
