/* SPDX-License-Identifier: MIT */
/* The reader thread of a kernel session: it drains the per-CPU tracefs buffers into the kernel streams. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <tracefs/tracefs.h>
#include <traceevent/event-parse.h>
#include <traceevent/kbuffer.h>

#include <strata/strata.h>

#include "common/mono.h"
#include "common/tfile.h"
#include "kernel/kern_int.h"

/* ---- tgid of a thread ---------------------------------------------------- */

static uint32_t read_tgid(uint32_t tid)
{
	char path[64], line[256];
	uint32_t tgid = tid;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/status", tid);
	if (!(f = fopen(path, "re")))
		return tid;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "Tgid:", 5)) {
			tgid = (uint32_t)strtoul(line + 5, NULL, 10);
			break;
		}
	fclose(f);
	return tgid;
}

static uint32_t tgid_of(struct kern_session *s, uint32_t tid)
{
	if (tid == 0)
		return 0;
	uint32_t h = (tid * 2654435761u) % TGID_SLOTS;
	for (unsigned i = 0; i < 8; i++, h = (h + 1) % TGID_SLOTS) {
		if (s->tgid_key[h] == tid)
			return s->tgid_val[h];
		if (!s->tgid_key[h]) {
			s->tgid_key[h] = tid;
			return s->tgid_val[h] = read_tgid(tid);
		}
	}
	return read_tgid(tid); /* crowded: not cached */
}

static void tgid_forget(struct kern_session *s, uint32_t tid)
{
	uint32_t h = (tid * 2654435761u) % TGID_SLOTS;
	for (unsigned i = 0; i < 8; i++, h = (h + 1) % TGID_SLOTS)
		if (s->tgid_key[h] == tid)
			s->tgid_val[h] = read_tgid(tid);
}

/* ---- reading the kernel buffers ----------------------------------------- */

static uint64_t stat_field(const char *text, const char *key)
{
	const char *p = text ? strstr(text, key) : NULL;
	return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

/* overrun + dropped_events of one CPU buffer: cumulative, like
 * events_discarded (format.md §2). */
uint64_t kern_cpu_lost(struct kern_session *s, unsigned cpu)
{
	char file[64];
	snprintf(file, sizeof(file), "per_cpu/cpu%u/stats", cpu);
	char *t = tracefs_instance_file_read(s->inst, file, NULL);
	uint64_t n = stat_field(t, "overrun: ") + stat_field(t, "dropped_events: ");
	free(t);
	return n;
}

static void handle_record(struct kern_session *s, unsigned cpu, uint64_t ts,
			  const uint8_t *data, unsigned size)
{
	if (size < 8)
		return;
	int type = (int)tep_read_number(s->tep, data, 2);
	if (type < 0 || type > s->max_id || !s->by_id[type])
		return;
	const struct kclass *c = s->by_id[type];
	uint32_t tid = (uint32_t)tep_read_number(s->tep, data + 4, 4);
	unsigned n = kclass_pack(c, data, size, s->words);
	kstream_event(&s->streams[cpu], ts, tid, tgid_of(s, tid),
		      STRATA_ID(c->desc.major, c->desc.minor), s->words, n);
	/* a new thread: its tgid is read now, while it exists */
	if (c->desc.major == 1 && !strcmp(c->name, "sched_process_fork")) {
		struct tep_format_field *f = tep_find_field(
			tep_find_event(s->tep, type), "child_pid");
		if (f && f->offset + 4 <= (int)size)
			tgid_forget(s, (uint32_t)tep_read_number(s->tep, data + f->offset, 4));
	}
}

static void drain_page(struct kern_session *s, unsigned cpu, void *page)
{
	unsigned long long ts;
	void *data;

	if (kbuffer_load_subbuffer(s->kbuf, page) < 0)
		return;
	for (data = kbuffer_read_event(s->kbuf, &ts); data;
	     data = kbuffer_next_event(s->kbuf, &ts))
		handle_record(s, cpu, ts, data, (unsigned)kbuffer_event_size(s->kbuf));
}

/* What CPU cpu's buffer holds now, whole pages only unless final. */
static void drain_cpu(struct kern_session *s, unsigned cpu, bool final)
{
	for (int i = 0; i < 1 << 16; i++) {
		int r = final ? tracefs_cpu_flush(s->tcpu[cpu], s->page)
			      : tracefs_cpu_read(s->tcpu[cpu], s->page, true);
		if (r <= 0)
			break;
		drain_page(s, cpu, s->page);
	}
}

void kern_drain_all(struct kern_session *s, bool final)
{
	for (unsigned cpu = 0; cpu < s->ncpus; cpu++) {
		if (!s->tcpu[cpu])
			continue;
		s->streams[cpu].discarded = kern_cpu_lost(s, cpu);
		drain_cpu(s, cpu, final);
	}
}

/*
 * The live timer's round (docs/kernel.md, "Live"), as the consumer's for
 * the user rings (record.md, "Live reading"): the trace time T read
 * first; every buffer drained, partial pages too; every open packet
 * written; then the beacon, T less KERN_LIVE_MARGIN: an event that
 * ftrace stamped before T but had not committed when its CPU was read
 * (a writer interrupted between its reservation and its commit) must be
 * in these packets, and a commit is far shorter than the margin (the
 * writer runs with preemption off). A round whose writes failed
 * publishes nothing. The metadata is written at the first round (a
 * follower reads no window before a sub-trace's metadata is there), on
 * this session's own clock fit until a user sub-trace's clock appears,
 * and once more then, on that clock (kmeta.c).
 */
#define KERN_LIVE_MARGIN 1000000u /* ticks: 0.3-0.5 ms of a TSC, 1 ms of mono */

void kern_live_round(struct kern_session *s)
{
	uint64_t before = strata_clock(), f;
	int64_t off;
	bool failed = false;

	kern_drain_all(s, true);
	for (unsigned cpu = 0; cpu < s->ncpus; cpu++) {
		kstream_flush(&s->streams[cpu]);
		failed |= s->streams[cpu].err != 0;
	}
	if (!s->meta_ust && (s->live_time == 0 || kern_ust_clock(s->trace_dir, &f, &off)))
		failed |= kern_write_metadata(s) != 0;
	uint64_t t = before > KERN_LIVE_MARGIN ? before - KERN_LIVE_MARGIN : 1;
	if (failed || t <= s->live_time)
		return;
	if (s->live_fd < 0) {
		char path[4300];
		snprintf(path, sizeof(path), "%s/.live-time", s->dir);
		s->live_fd = tfile_open(path, O_WRONLY | O_TRUNC);
	}
	uint64_t rec[2] = { t, ~t }; /* format.md §1 */
	if (s->live_fd >= 0 && pwrite(s->live_fd, rec, sizeof(rec), 0) == sizeof(rec))
		s->live_time = t;
}

/* The reader thread's nice value: see reader_main(). */
#define KERN_READER_NICE (-10)

/*
 * The reader: woken by a CPU's buffer reaching buffer_percent
 * (KERN_WATERMARK_PCT, set in kern_start(): poll() on trace_pipe_raw
 * waits for it), which drains that CPU at once, and every flush_ms for
 * all of them (partly filled pages, the loss counters). A fixed 100 ms
 * poll lost 20-26 % of a dd's syscalls where trace-cmd lost none: a
 * 4 MiB buffer fills in ~75 ms at 2 M events/s (docs/kernel.md).
 */
static void *reader_main(void *arg)
{
	struct kern_session *s = arg;
	sigset_t all;

	/* Signals are the tool's business (SIGINT in cmd-ktrace.c). */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	pthread_mutex_lock(&s->lock);
	s->reader_tid = (pid_t)syscall(SYS_gettid);
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	/* Ahead of the traced programs for a CPU: woken at a quarter-full
	 * buffer, the reader has the time the other three quarters take to
	 * fill, ~50 ms under a system-call storm, and a reader that waits
	 * its turn behind busy threads misses it (docs/kernel.md, "Keeping
	 * up"). Best effort: it needs CAP_SYS_NICE, which root has. */
	(void)setpriority(PRIO_PROCESS, (id_t)s->reader_tid, KERN_READER_NICE);
	unsigned period = s->live_ms ? s->live_ms : s->flush_ms;
	uint64_t next = mono_ms() + period;
	while (!strata_load_acquire(&s->stop)) {
		/* Started before the classes (kern_start: the system-call
		 * filter needs this thread's tid), it reads no record before
		 * the table from tracefs ids to classes is whole: the
		 * instance's events may fire as soon as they are enabled. */
		if (!strata_load_acquire(&s->ready)) {
			nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
			continue;
		}
		uint64_t t = mono_ms();
		int n = poll(s->pfd, s->ncpus + 2,
			     t >= next ? 0 : (int)(next - t));
		if (strata_load_acquire(&s->stop))
			break;
		if (n > 0)
			for (unsigned cpu = 0; cpu < s->ncpus; cpu++)
				if (s->pfd[cpu].revents & POLLIN)
					drain_cpu(s, cpu, false);
		if (n > 0 && (s->pfd[s->ncpus + 1].revents & POLLIN))
			ktimes_poll(s->times);
		if ((t = mono_ms()) >= next) {
			if (s->live_ms)
				kern_live_round(s);
			else
				kern_drain_all(s, false);
			next = t + period;
		}
	}
	return NULL;
}

/*
 * Each CPU's trace_pipe_raw, opened here so that the reader can poll()
 * it (libtracefs keeps the descriptors of tracefs_cpu_open() to itself),
 * and the reader's wake-up eventfd last in s->pfd. The buffers wake a
 * poller at KERN_WATERMARK_PCT percent full (the instance's
 * buffer_percent); an older kernel without that file wakes it at the
 * first page, which only costs wake-ups.
 */
#define KERN_WATERMARK_PCT "25"
static int open_cpus(struct kern_session *s)
{
	struct tracefs_cpu *probe = tracefs_cpu_open(s->inst, 0, true);

	if (!probe)
		return -EIO;
	s->page_size = tracefs_cpu_read_size(probe);
	tracefs_cpu_close(probe);
	if (s->page_size <= 0)
		return -EIO;
	if (!(s->page = calloc(1, (size_t)s->page_size)) ||
	    !(s->pfd = calloc(s->ncpus + 2, sizeof(*s->pfd))))
		return -ENOMEM;
	(void)tracefs_instance_file_write(s->inst, "buffer_percent",
					  KERN_WATERMARK_PCT);
	for (unsigned cpu = 0; cpu < s->ncpus; cpu++) {
		char file[64];
		s->pfd[cpu].fd = -1; /* poll() skips it: an offline CPU */
		snprintf(file, sizeof(file), "per_cpu/cpu%u/trace_pipe_raw", cpu);
		int fd = tracefs_instance_file_open(s->inst, file,
						    O_RDONLY | O_NONBLOCK);
		if (fd < 0)
			continue;
		s->tcpu[cpu] = tracefs_cpu_alloc_fd(fd, s->page_size, true);
		if (!s->tcpu[cpu]) {
			close(fd);
			continue;
		}
		s->pfd[cpu].fd = fd;
		s->pfd[cpu].events = POLLIN;
	}
	s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	s->pfd[s->ncpus].fd = s->wake_fd;
	s->pfd[s->ncpus].events = POLLIN;
	s->pfd[s->ncpus + 1].fd = ktimes_fd(s->times); /* -1: skipped */
	s->pfd[s->ncpus + 1].events = POLLIN;
	return s->wake_fd < 0 ? -errno : 0;
}

/* Stop the reader thread, if it runs, and wait for it. */
void kern_reader_join(struct kern_session *s)
{
	if (!s->thread_started)
		return;
	uint64_t one = 1;
	strata_store_release(&s->stop, 1);
	if (write(s->wake_fd, &one, sizeof(one)) < 0)
		(void)0; /* an eventfd at its maximum is readable already */
	pthread_join(s->thread, NULL);
	s->thread_started = false;
}

/* The reader thread, whose tid the syscall filter needs: started, and its
 * tid known. 0, or a negative errno after set_err(). */
int kern_reader_start(struct kern_session *s, const struct kern_options *o)
{
	int ret;

	if ((ret = open_cpus(s))) {
		set_err(o, "cannot open the per-CPU buffers of %s", s->name);
		return ret;
	}
	if ((ret = -pthread_create(&s->thread, NULL, reader_main, s))) {
		set_err(o, "cannot start the kernel reader thread: %s", strerror(-ret));
		return ret;
	}
	s->thread_started = true;
	pthread_mutex_lock(&s->lock);
	while (!s->reader_tid)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
	return 0;
}
