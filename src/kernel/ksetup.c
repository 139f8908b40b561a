/* SPDX-License-Identifier: MIT */
/* A kernel session's private tracefs instance and output directory: set up at start, restored and freed on every exit path. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tracefs/tracefs.h>
#include <traceevent/event-parse.h>
#include <traceevent/kbuffer.h>

#include <strata/strata.h>

#include "common/tfile.h"
#include "kernel/kern_int.h"
#include "lib/clock.h"

/* ---- setup and restore --------------------------------------------------- */

static bool tracefs_ready(void)
{
	struct stat st;
	return stat(TRACEFS_DIR "/instances", &st) == 0;
}

int kern_event_exists(const char *system, const char *event)
{
	char tmp[] = "/tmp/strata-tracefs-XXXXXX", path[512];
	const char *root = TRACEFS_DIR;
	int ret;

	if (!tracefs_ready()) {
		/* a private mount that goes away again: asking leaves
		 * /sys/kernel/tracing as it was */
		if (!mkdtemp(tmp))
			return -errno;
		if (mount("nodev", tmp, "tracefs", 0, NULL) < 0) {
			ret = -errno;
			rmdir(tmp);
			return ret;
		}
		root = tmp;
	}
	snprintf(path, sizeof(path), "%s/events/%s/%s", root, system, event);
	ret = access(path, F_OK) == 0;
	if (root == tmp) {
		umount2(tmp, MNT_DETACH);
		rmdir(tmp);
	}
	return ret;
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

/* Remove our streams after a failed start: no half trace is left. */
void kern_remove_outputs(struct kern_session *s)
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

void kern_teardown(struct kern_session *s)
{
	kern_reader_join(s);
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

void kern_session_free(struct kern_session *s)
{
	if (s->streams)
		for (unsigned cpu = 0; cpu < s->ncpus; cpu++)
			if (s->streams[cpu].pkt || s->streams[cpu].fd > 0)
				kstream_close(&s->streams[cpu], 0);
	free(s->streams);
	if (s->live_fd >= 0)
		close(s->live_fd);
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
int kern_instance(struct kern_session *s, const struct kern_options *o)
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
int kern_outputs(struct kern_session *s, const struct kern_options *o, uint32_t psize,
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
