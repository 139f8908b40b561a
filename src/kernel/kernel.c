/* SPDX-License-Identifier: MIT */
/* The kernel session: a private tracefs instance, its reader thread, and the restore on every exit path. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <tracefs/tracefs.h>
#include <traceevent/event-parse.h>
#include <traceevent/kbuffer.h>

#include <strata/strata.h>

#include "common/mono.h"
#include "common/kstate.h"
#include "common/metadata.h"
#include "common/tfile.h"
#include "kernel/kernel.h"
#include "kernel/kern_int.h"
#include "kernel/syscalls.h"
#include "lib/clock.h"

#define TRACEFS_DIR "/sys/kernel/tracing"

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

/* A tid -> tgid cache: ftrace records name the thread only. */
#define TGID_SLOTS 16384u

struct kern_session {
	struct tracefs_instance *inst;
	char name[64];
	char dir[4200]; /* TRACE/kernel */
	char trace_dir[4096];
	bool mounted; /* tracefs was mounted by kern_start */
	bool inst_created;
	struct tep_handle *tep;
	struct kclass *classes;
	unsigned nclasses;
	struct kclass **by_id; /* tep id -> class */
	int max_id;
	unsigned ncpus;
	struct kstream *streams;
	struct tracefs_cpu **tcpu;
	struct pollfd *pfd; /* per CPU trace_pipe_raw, then wake_fd */
	int wake_fd;        /* an eventfd: the reader stops (reader_join()) */
	struct kbuffer *kbuf;
	void *page;
	int page_size;
	uint64_t *words;
	pthread_t thread;
	bool thread_started;
	/* Set with release by reader_join(); reader_main()'s acquire loads
	 * pair with it: its last drain sees what the stopper did before. */
	int stop;
	pid_t reader_tid;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned flush_ms;
	uint8_t uuid[16];
	struct clock_point p0;
	uint32_t tgid_key[TGID_SLOTS], tgid_val[TGID_SLOTS];
	char *scope; /* the threads set_event_pid was given, "tid tid ...", or NULL */
	struct ktimes *times; /* strata:thread_times, or NULL (ktimes.c) */
	int times_err;        /* why there is none: a negative errno, or 0 */
	int err;
};

void kern_errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

#define set_err(o, ...) kern_errf((o)->err, (o)->errlen, __VA_ARGS__)

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
static uint64_t cpu_lost(struct kern_session *s, unsigned cpu)
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

static void drain_all(struct kern_session *s, bool final)
{
	for (unsigned cpu = 0; cpu < s->ncpus; cpu++) {
		if (!s->tcpu[cpu])
			continue;
		s->streams[cpu].discarded = cpu_lost(s, cpu);
		drain_cpu(s, cpu, final);
	}
}

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
	uint64_t next = mono_ms() + s->flush_ms;
	while (!strata_load_acquire(&s->stop)) {
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
			drain_all(s, false);
			next = t + s->flush_ms;
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

/* ---- setup and restore --------------------------------------------------- */

static bool tracefs_ready(void)
{
	struct stat st;
	return stat(TRACEFS_DIR "/instances", &st) == 0;
}

/* Remove the instances of strata processes that died without kern_stop
 * (SIGKILL): their pid no longer exists. */
static int stale_instance(const char *name, void *arg)
{
	(void)arg;
	unsigned long pid;
	char *end;

	if (strncmp(name, "strata-", 7))
		return 0;
	pid = strtoul(name + 7, &end, 10);
	if (*end || !pid || (pid_t)pid == getpid())
		return 0;
	if (kill((pid_t)pid, 0) < 0 && errno == ESRCH) {
		struct tracefs_instance *i = tracefs_instance_alloc(NULL, name);
		if (i) {
			tracefs_instance_destroy(i);
			tracefs_instance_free(i);
		}
	}
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

/* Remove our streams after a failed start: no half trace is left. */
static void remove_outputs(struct kern_session *s)
{
	char path[4300];
	for (unsigned cpu = 0; cpu < s->ncpus; cpu++) {
		snprintf(path, sizeof(path), "%s/cpu%u", s->dir, cpu);
		unlink(path);
		snprintf(path, sizeof(path), "%s/index/cpu%u.idx", s->dir, cpu);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/index", s->dir);
	rmdir(path);
	rmdir(s->dir);
}

/* Stop the reader thread, if it runs, and wait for it. */
static void reader_join(struct kern_session *s)
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

static void teardown(struct kern_session *s)
{
	reader_join(s);
	if (s->tcpu)
		for (unsigned cpu = 0; cpu < s->ncpus; cpu++)
			if (s->tcpu[cpu]) {
				/* ours to close (open_cpus()) */
				tracefs_cpu_free_fd(s->tcpu[cpu]);
				close(s->pfd[cpu].fd);
			}
	free(s->tcpu);
	s->tcpu = NULL;
	free(s->pfd);
	s->pfd = NULL;
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	s->wake_fd = -1;
	if (s->inst) {
		tracefs_trace_off(s->inst);
		if (s->inst_created)
			tracefs_instance_destroy(s->inst);
		tracefs_instance_free(s->inst);
		s->inst = NULL;
	}
	if (s->mounted) {
		umount2(TRACEFS_DIR, MNT_DETACH);
		s->mounted = false;
	}
}

/*
 * The pid filter of processes `pids`: every thread of each, for
 * set_event_pid matches threads (task->pid), not processes, and the
 * event-fork option only adds what they create from now on. A process
 * whose /proc entry cannot be read (gone, or a bare tid) stands for itself.
 * Returns "tid tid ... " (malloc'd), or NULL when out of memory.
 */
static char *scope_list(const int *pids, unsigned npids)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	for (unsigned i = 0; i < npids; i++) {
		char dir[64];
		snprintf(dir, sizeof(dir), "/proc/%d/task", pids[i]);
		DIR *d = opendir(dir);
		struct dirent *de;
		unsigned n = 0;
		while (d && (de = readdir(d)))
			if (de->d_name[0] >= '1' && de->d_name[0] <= '9') {
				fprintf(f, "%s ", de->d_name);
				n++;
			}
		if (d)
			closedir(d);
		if (!n)
			fprintf(f, "%d ", pids[i]);
	}
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static void session_free(struct kern_session *s)
{
	if (s->streams)
		for (unsigned cpu = 0; cpu < s->ncpus; cpu++)
			if (s->streams[cpu].pkt || s->streams[cpu].fd > 0)
				kstream_close(&s->streams[cpu], 0);
	free(s->streams);
	for (unsigned i = 0; i < s->nclasses; i++)
		kclass_fini(&s->classes[i]);
	free(s->classes);
	free(s->by_id);
	if (s->kbuf)
		kbuffer_free(s->kbuf);
	if (s->tep)
		tep_free(s->tep);
	free(s->page);
	free(s->words);
	free(s->scope);
	ktimes_stop(s->times, NULL);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
}

static int mkdir1(const char *p)
{
	return tfile_mkdir(p, 0);
}

/* The private tracefs instance: tracefs mounted if needed, stale
 * instances of dead strata processes removed, clock, buffer size and the
 * pid filter set. 0, or a negative errno after set_err(). */
static int kern_instance(struct kern_session *s, const struct kern_options *o)
{
	int ret;

	/* tracefs: mounted already, or mount it (and unmount at stop) */
	if (!tracefs_ready()) {
		if (mount("nodev", TRACEFS_DIR, "tracefs", 0, NULL) < 0) {
			ret = -errno;
			set_err(o, "cannot mount tracefs on " TRACEFS_DIR ": %s%s",
				strerror(errno), errno == EPERM ? " (needs root)" : "");
			return ret == -ENOENT || ret == -ENODEV ? -ENODEV : ret;
		}
		s->mounted = true;
		if (!tracefs_ready()) {
			set_err(o, "tracefs has no instances directory here");
			return -ENODEV;
		}
	}
	if (access(TRACEFS_DIR "/instances", W_OK) < 0) {
		ret = -errno;
		set_err(o, TRACEFS_DIR "/instances: %s (kernel tracing needs root)",
			strerror(errno));
		return ret;
	}
	tracefs_instances_walk(stale_instance, NULL);

	snprintf(s->name, sizeof(s->name), "strata-%d", (int)getpid());
	if (tracefs_instance_exists(s->name)) {
		set_err(o, "tracefs instance %s exists: one kernel session per process", s->name);
		return -EEXIST;
	}
	if (!(s->inst = tracefs_instance_create(s->name))) {
		ret = errno ? -errno : -EIO;
		set_err(o, "cannot create tracefs instance %s: %s", s->name, strerror(-ret));
		return ret;
	}
	s->inst_created = tracefs_instance_is_new(s->inst);
	tracefs_trace_off(s->inst);

	/* format.md §5: the same counter as user space */
	const char *clk = strata_clock_tsc ? "x86-tsc" : "mono";
	if (tracefs_instance_file_write(s->inst, "trace_clock", clk) < 0) {
		set_err(o, "cannot set the trace clock of %s to %s", s->name, clk);
		return -EIO;
	}
	if (tracefs_instance_set_buffer_size(s->inst, o->buffer_kb ? o->buffer_kb : 4096, -1) < 0) {
		set_err(o, "cannot set the buffer size of %s", s->name);
		return -EIO;
	}
	if (o->npids) {
		if (!(s->scope = scope_list(o->pids, o->npids)))
			return -ENOMEM;
		if (tracefs_instance_file_write(s->inst, "set_event_pid", s->scope) < 0 ||
		    tracefs_option_enable(s->inst, TRACEFS_OPTION_EVENT_FORK) < 0) {
			set_err(o, "cannot set the pid filter of %s", s->name);
			return -EIO;
		}
	}
	return 0;
}

/* TRACE/kernel/cpuN and index/. 0, or a negative errno after set_err();
 * *made says whether TRACE/kernel exists now (to be removed on failure). */
static int kern_outputs(struct kern_session *s, const struct kern_options *o, uint32_t psize,
			bool *made)
{
	int ret;

	*made = false;
	if ((ret = mkdir1(s->trace_dir)) || (ret = mkdir1(s->dir))) {
		set_err(o, "%s: cannot create directory: %s", s->dir, strerror(-ret));
		return ret;
	}
	*made = true;
	char idx[4300];
	snprintf(idx, sizeof(idx), "%s/index", s->dir);
	if ((ret = mkdir1(idx))) {
		set_err(o, "%s: cannot create directory: %s", idx, strerror(-ret));
		return ret;
	}
	long nc = sysconf(_SC_NPROCESSORS_CONF);
	s->ncpus = nc > 0 ? (unsigned)nc : 1;
	if (getrandom(s->uuid, 16, 0) != 16)
		memcpy(s->uuid, &s->p0, 16);
	s->streams = calloc(s->ncpus, sizeof(*s->streams));
	s->tcpu = calloc(s->ncpus, sizeof(*s->tcpu));
	s->words = calloc(1023, 8);
	if (!s->streams || !s->tcpu || !s->words)
		return -ENOMEM;
	for (unsigned cpu = 0; cpu < s->ncpus; cpu++)
		s->streams[cpu].fd = s->streams[cpu].idx_fd = -1;
	for (unsigned cpu = 0; cpu < s->ncpus; cpu++)
		if ((ret = kstream_open(&s->streams[cpu], s->dir, cpu, s->uuid, psize))) {
			set_err(o, "%s/cpu%u: cannot create: %s", s->dir, cpu, strerror(-ret));
			return ret;
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

/* The reader thread, whose tid the syscall filter needs: started, and its
 * tid known. 0, or a negative errno after set_err(). */
static int kern_reader_start(struct kern_session *s, const struct kern_options *o)
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
	if (tracefs_trace_on(s->inst) < 0) {
		ret = -EIO;
		set_err(o, "cannot turn tracing on in %s", s->name);
		goto fail;
	}
	*out = s;
	return 0;

fail:
	teardown(s);
	session_free(s);
	if (made) {
		/* the streams are closed: remove them */
		struct kern_session tmp = { .ncpus = (unsigned)sysconf(_SC_NPROCESSORS_CONF) };
		snprintf(tmp.dir, sizeof(tmp.dir), "%s/kernel", o->trace_dir);
		remove_outputs(&tmp);
	}
	return ret;
}

/* ---- stop: metadata with the user sub-traces' clock ---------------------- */

/* The clock of a user sub-trace beside us (TRACE/ust/ * /metadata), so that
 * both share one clock class exactly (format.md §1, §5). */
bool kern_ust_clock(const char *trace_dir, uint64_t *freq, int64_t *off_ns)
{
	char path[4600], ust[4200];
	struct dirent **names = NULL;
	bool found = false;

	snprintf(ust, sizeof(ust), "%s/ust", trace_dir);
	int n = scandir(ust, &names, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		if (!found && names[i]->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s/metadata", ust, names[i]->d_name);
			FILE *f = fopen(path, "re");
			char line[512];
			bool inclock = false;
			unsigned long long fr = 0, offc = 0;
			long long offs = 0;
			while (f && fgets(line, sizeof(line), f)) {
				if (!strncmp(line, "clock {", 7))
					inclock = true;
				else if (inclock && line[0] == '}')
					break;
				else if (inclock) {
					sscanf(line, " freq = %llu;", &fr);
					sscanf(line, " offset_s = %lld;", &offs);
					sscanf(line, " offset = %llu;", &offc);
				}
			}
			if (f)
				fclose(f);
			if (fr) {
				*freq = fr;
				*off_ns = offs * 1000000000ll +
					  (int64_t)((double)offc * 1e9 / (double)fr + 0.5);
				found = true;
			}
		}
		free(names[i]);
	}
	free(names);
	return found;
}

static int write_metadata(struct kern_session *s)
{
	struct meta_info mi;
	struct utsname u;
	const struct strata_event_desc **ev = calloc(s->nclasses + 2, sizeof(*ev));
	/* env: kernel release, trace clock, the scope, then the syscall names */
	size_t nenv = 6 + 2 * NSYSCALL_NAMES + 1;
	const char **env = calloc(nenv, sizeof(*env));
	char (*keys)[32] = calloc(NSYSCALL_NAMES + 1, sizeof(*keys));
	int ret;

	if (!ev || !env || !keys) {
		ret = -ENOMEM;
		goto out;
	}
	for (unsigned i = 0; i < s->nclasses; i++)
		ev[i] = &s->classes[i].desc;
	ev[s->nclasses] = ktimes_desc();
	size_t k = 0;
	uname(&u);
	env[k++] = "kernel_release";
	env[k++] = u.release;
	env[k++] = "trace_clock";
	env[k++] = strata_clock_tsc ? "x86-tsc" : "mono";
	if (s->scope) { /* docs/kernel.md: what a scoped trace sees */
		env[k++] = "scope_tids";
		env[k++] = s->scope;
	}
	for (size_t i = 0; i < NSYSCALL_NAMES; i++) {
		snprintf(keys[i], sizeof(keys[i]), "syscall_%u", syscall_names[i].nr);
		env[k++] = keys[i];
		env[k++] = syscall_names[i].name;
	}
	env[k] = NULL;

	/* Named values (format.md §6): system calls by number, task states
	 * as sched_switch prints them, each state alone and preempted. */
	struct meta_label sc[NSYSCALL_NAMES], st[18];
	char letters[18][12];
	for (size_t i = 0; i < NSYSCALL_NAMES; i++)
		sc[i] = (struct meta_label){syscall_names[i].nr, syscall_names[i].name};
	for (unsigned i = 0; i < 18; i++) {
		int64_t v = (i % 9 ? INT64_C(1) << (i % 9 - 1) : 0) |
			    (i >= 9 ? KSTATE_PREEMPT : 0);
		st[i] = (struct meta_label){v, kstate_letters(v, letters[i])};
	}
	const struct meta_enum enums[] = {
		{"sched:sched_switch", "prev_state", st, 18},
		{"raw_syscalls:sys_enter", "id", sc, NSYSCALL_NAMES},
		{"raw_syscalls:sys_exit", "id", sc, NSYSCALL_NAMES},
	};

	memset(&mi, 0, sizeof(mi));
	memcpy(mi.uuid, s->uuid, 16);
	mi.pid = 0;
	mi.procname = "kernel";
	mi.domain = "kernel";
	mi.enums = enums;
	/* no system call table at build time: the states only */
	mi.nenums = syscall_names[0].name[0] ? 3 : 1;
	mi.events = ev;
	mi.nevents = s->nclasses + 1;
	mi.env = env;
	clock_meta(&mi);
	if (!kern_ust_clock(s->trace_dir, &mi.freq_hz, &mi.offset_ns)) {
		struct clock_point p1;
		clock_point_take(&p1);
		mi.freq_hz = 0;
		clock_fit(&s->p0, &p1, &mi.freq_hz, &mi.offset_ns);
	}
	ret = meta_write(s->dir, &mi);
out:
	free(ev);
	free(env);
	free(keys);
	return ret;
}

int kern_stop(struct kern_session *s, struct kern_stats *st)
{
	int ret = 0;

	if (!s)
		return 0;
	tracefs_trace_off(s->inst);
	reader_join(s);
	drain_all(s, false);
	drain_all(s, true);
	for (unsigned cpu = 0; cpu < s->ncpus; cpu++)
		s->streams[cpu].discarded = cpu_lost(s, cpu);
	uint64_t times_lost = ktimes_stop(s->times, &s->streams[0]);
	s->times = NULL;
	teardown(s);
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
	int r = write_metadata(s);
	if (r && !ret)
		ret = r;
	session_free(s);
	return ret;
}
