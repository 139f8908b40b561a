/* SPDX-License-Identifier: MIT */
/* The session daemon's traces: start, stop, summary, and snapshots. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/format.h"
#include "common/tfile.h"
#include "daemon/daemon_int.h"

/* ---- the trace: start, stop, summary ------------------------------------ */

/* Publish a change of `state` (proto.h: the seqlock writer). */
static void state_publish(struct dmn *d, int enabled)
{
	struct proto_state *s = d->st;
	uint64_t g;

	if (!s)
		return;
	g = strata_load_relaxed(&s->gen);
	strata_store_relaxed(&s->gen, g + 1);
	/* The odd generation is visible before any field changes: pairs
	 * with the readers' acquire fence after they read the fields and
	 * before they read gen again (state_read() in src/lib/client_state.c). */
	strata_fence_release();
	strata_store_relaxed(&s->enabled, (uint32_t)enabled);
	/* Pairs with the readers' acquire load of gen (state_read()). */
	strata_store_release(&s->gen, g + 2);
	d->stop_gen = g + 2;
}

/* What the summary says of client c, one of the current trace's. */
static void client_sum(const struct client *c, struct proc_sum *p)
{
	uint64_t disc = c->bye ? 0 : c->ring_lost;

	if (c->bye)
		for (int k = 0; k < STRATA_LOST_NCAUSES; k++)
			disc += c->byemsg.lost[k];
	/* strata's own records (the state dump) are not the program's
	 * events: recorded + discarded == logged. Known for a process whose
	 * whole life is in this trace (BYE); a long-lived one's earlier
	 * losses are in lost_base. */
	if (c->bye && !c->lost_base)
		disc -= disc < c->byemsg.internal_lost ? disc : c->byemsg.internal_lost;
	/* a long-lived process: what it lost during this trace */
	p->discarded = disc > c->lost_base ? disc - c->lost_base : 0;
	p->events = c->st.events_written;
	p->bytes = c->st.bytes_written;
	p->lost_io = c->st.lost_io;
	p->salvaged = c->salv.salvaged;
	p->unsalvageable = c->st.packets_incomplete;
	p->crashed = c->fd < 0 && !c->bye;
	p->unsent = (c->bye ? c->byemsg.rings_unsent : 0) + c->rings_refused;
}

static void totals_add(struct dmn_totals *t, const struct proc_sum *p)
{
	t->procs++;
	t->events += p->events;
	t->bytes += p->bytes;
	t->discarded += p->discarded;
	t->lost_io += p->lost_io;
	t->salvaged += p->salvaged;
	t->unsalvageable += p->unsalvageable;
	t->crashed += (uint64_t)p->crashed;
	t->unsent += p->unsent;
}

static void proc_line(FILE *log, const struct proc_rec *r)
{
	fprintf(log, "strata:   pid %u (%s): %llu events, %llu bytes, %llu "
		"discarded%s\n", r->pid, r->name,
		(unsigned long long)r->events, (unsigned long long)r->bytes,
		(unsigned long long)r->discarded,
		r->crashed ? ", ended without goodbye (killed, crashed or "
			     "exec'd): salvaged" : "");
}

static void proc_rec_of(const struct client *c, const struct proc_sum *p,
			struct proc_rec *r)
{
	r->pid = c->pid;
	memcpy(r->name, c->name, sizeof(r->name));
	r->crashed = (uint8_t)p->crashed;
	r->events = p->events;
	r->bytes = p->bytes;
	r->discarded = p->discarded;
}

/* One line in TRACE/unrecorded, where readers see it (`strata info`):
 * a process whose events are not in the trace, how many and why. */
void dmn_note_unrecorded(struct dmn *d, uint32_t pid, const char *name,
			 uint64_t events, const char *why)
{
	char path[4200];

	if (!d->trace[0])
		return;
	snprintf(path, sizeof(path), "%s/unrecorded", d->trace);
	int fd = tfile_open(path, O_WRONLY | O_APPEND);
	if (fd < 0)
		return;
	fmt_unrecorded_line(fd, pid, name, events, why);
	close(fd);
}

/*
 * Processes that could not join report their unrecorded events in
 * unrecorded.PID files of the session directory (lib/session.c,
 * client_report_unrecorded()): count them into the current trace's figures
 * and list them in its `unrecorded` file, where readers see them
 * (`strata info`). Each file is read once, then removed; its content is
 * the process's word, bounded and checked.
 */
static void collect_unrecorded(struct dmn *d)
{
	DIR *dir = opendir(d->sdir);
	struct dirent *e;

	if (!dir)
		return;
	while ((e = readdir(dir))) {
		char path[4200], line[128], name[32];
		unsigned pid;
		unsigned long long n;
		if (strncmp(e->d_name, "unrecorded.", 11))
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", d->sdir,
				     e->d_name) >= sizeof(path))
			continue;
		int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
		ssize_t k = fd < 0 ? -1 : read(fd, line, sizeof(line) - 1);
		if (fd >= 0)
			close(fd);
		unlink(path);
		if (k <= 0)
			continue;
		line[k] = 0;
		if (sscanf(line, "%u %31s %llu", &pid, name, &n) != 3 || !n ||
		    n > (1ull << 48) || !d->trace[0])
			continue;
		d->done.unjoined++;
		d->done.unjoined_events += n;
		dmn_note_unrecorded(d, pid, name, n, "it could not join the session");
	}
	closedir(dir);
}

/* Totals of the current trace: the processes gone (d->done) and the
 * clients that have a sub-trace in it, one line each to `log` (NULL:
 * none). */
void dmn_trace_summary(struct dmn *d, FILE *log, struct dmn_totals *t)
{
	collect_unrecorded(d);
	*t = d->done;
	for (size_t i = 0; log && i < d->nrecs; i++)
		proc_line(log, &d->recs[i]);
	for (struct client *c = d->clients; c; c = c->next) {
		struct proc_sum p;
		struct proc_rec r;
		if (!c->registered || !c->traced)
			continue;
		client_sum(c, &p);
		totals_add(t, &p);
		if (log) {
			proc_rec_of(c, &p, &r);
			proc_line(log, &r);
		}
	}
	t->err = d->err;
}

/* The current trace's figures start again (a new trace, or none). */
void dmn_trace_forget(struct dmn *d)
{
	memset(&d->done, 0, sizeof(d->done));
	free(d->recs);
	d->recs = NULL;
	d->nrecs = d->caprecs = 0;
	d->dir_seq = 0;
}

/*
 * Free the clients that are gone: connection closed (EOF, or after its
 * BYE) and rings written (dmn_client_close()). What the trace's summary
 * needs of one is kept in d->done, and under strata record its line in
 * d->recs (a few dozen bytes), so that a long-lived daemon's memory stays
 * flat however many processes come and go (docs/record.md, "Limits").
 * With `all`, every client (the end).
 */
void dmn_clients_reap(struct dmn *d, int all)
{
	struct client **pp = &d->clients;

	while (*pp) {
		struct client *c = *pp;
		if (!all && (c->fd >= 0 || c->cons)) {
			pp = &c->next;
			continue;
		}
		if (!all && c->registered && c->traced) {
			struct proc_sum p;
			client_sum(c, &p);
			totals_add(&d->done, &p);
			if (!d->daemon && d->nrecs == d->caprecs) {
				size_t cap = d->caprecs ? d->caprecs * 2 : 64;
				void *np = realloc(d->recs, cap * sizeof(*d->recs));
				if (np) {
					d->recs = np;
					d->caprecs = cap;
				}
			}
			if (!d->daemon && d->nrecs < d->caprecs)
				proc_rec_of(c, &p, &d->recs[d->nrecs++]);
		}
		*pp = c->next;
		dmn_client_free(d, c);
	}
}

/* TRACE/.live while the trace may still grow (format.md §1): a reader
 * following it (docs/reader.md, "Following a live trace") knows by it
 * that more sub-traces may come, as the guardian's .session says for the
 * embedded mode. Best effort: without it a follower may end early. */
void dmn_live_mark(const struct dmn *d, int on)
{
	char path[sizeof(d->trace) + 8];
	if (!d->trace[0])
		return;
	snprintf(path, sizeof(path), "%s/.live", d->trace);
	if (!on) {
		unlink(path);
		return;
	}
	int fd = tfile_open(path, O_WRONLY | O_TRUNC);
	if (fd >= 0)
		close(fd);
}

int dmn_start(struct dmn *d, const char *dir)
{
	if (d->state != ST_STOPPED)
		return -EALREADY;
	snprintf(d->trace, sizeof(d->trace), "%s", dir);
	d->err = 0;
	dmn_live_mark(d, 1);
	dmn_trace_forget(d);
	clock_point_take(&d->cp_first);
	d->state = ST_RUNNING;
	for (struct client *c = d->clients; c; c = c->next)
		if (c->fd >= 0 && c->registered)
			dmn_client_begin_trace(d, c);
	/* Enabled before the system's state dump (on_start), which takes a
	 * while: a program that joined meanwhile logged nothing while the
	 * state file said disabled, and lost its first events uncounted
	 * (issue 24, item 8). Its rings keep what it logs until the loop
	 * takes them. */
	state_publish(d, 1);
	if (d->on_start)
		d->on_start(dir);
	return 0;
}

/* Every process closed its packets (or had its time): write and close
 * the trace, answer those who asked for it. */
void dmn_stop_finish(struct dmn *d)
{
	char line[1024];

	for (struct client *c = d->clients; c; c = c->next)
		if (c->fd >= 0)
			dmn_client_end_trace(d, c, 0);
	dmn_trace_summary(d, NULL, &d->last);
	for (struct client *c = d->clients; c; c = c->next)
		c->traced = 0;
	dmn_trace_forget(d);
	dmn_clients_reap(d, 0);
	malloc_trim(0); /* a long-lived daemon gives back what the trace took */
	d->state = ST_STOPPED;
	if (d->on_stop)
		d->on_stop(d->trace);
	dmn_live_mark(d, 0); /* after on_stop's files (state, relay) */
	char unrec[160] = "";
	uint64_t np = d->last.untraced + d->last.unjoined;
	if (np)
		snprintf(unrec, sizeof(unrec), "; %llu process%s not traced, "
			 "%llu events not recorded (unrecorded says why)",
			 (unsigned long long)np, np == 1 ? "" : "es",
			 (unsigned long long)(d->last.untraced_events +
					      d->last.unjoined_events));
	snprintf(line, sizeof(line), "%.700s: %llu process%s, %llu events, %llu "
		 "bytes, %llu discarded%s%s%s", d->trace,
		 (unsigned long long)d->last.procs, d->last.procs == 1 ? "" : "es",
		 (unsigned long long)d->last.events,
		 (unsigned long long)d->last.bytes,
		 (unsigned long long)d->last.discarded, unrec,
		 d->last.err ? "; trace incomplete: " : "",
		 d->last.err ? strerror(-d->last.err) : "");
	if (d->daemon)
		fprintf(stderr, "strata: %s\n", line);
	for (int i = 0; i < MAX_CTL; i++) {
		struct ctl_conn *k = &d->conns[i];
		if (k->fd < 0 || !k->waiting)
			continue;
		if (k->waiting == CTL_QUIT)
			d->quit = 1;
		dmn_ctl_send_done(d, k->fd, d->last.err, line);
		close(k->fd);
		k->fd = -1;
		k->waiting = 0;
	}
}

int dmn_stop(struct dmn *d)
{
	if (d->state != ST_RUNNING)
		return -ENOENT;
	state_publish(d, 0);
	clock_gettime(CLOCK_MONOTONIC, &d->stop_deadline);
	d->stop_deadline.tv_sec += STOP_WAIT_MS / 1000;
	d->stop_deadline.tv_nsec += (STOP_WAIT_MS % 1000) * 1000000L;
	if (d->stop_deadline.tv_nsec >= 1000000000L) {
		d->stop_deadline.tv_sec++;
		d->stop_deadline.tv_nsec -= 1000000000L;
	}
	d->state = ST_STOPPING;
	if (!d->st)
		dmn_stop_finish(d); /* strata record: no process to tell */
	return 0;
}

/*
 * A process that joined while the trace ran may not have been heard yet:
 * its connection still in the listening socket's backlog, its HELLO not
 * read, or its rings and BYE still queued in its socket (a daemon behind
 * a burst of short processes: 7 of 60 runs of ten forks were dropped,
 * uncounted, by a stop that came right after them: the daemon was 2 s
 * behind). Until they are taken, the trace is not finished.
 */
static int joiners_unheard(const struct dmn *d)
{
	struct pollfd p = {.fd = d->lfd, .events = POLLIN};

	if (d->npending || (d->lfd >= 0 && poll(&p, 1, 0) == 1))
		return 1;
	for (const struct client *c = d->clients; c; c = c->next) {
		p.fd = c->fd;
		p.revents = 0;
		if (c->fd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & POLLIN))
			return 1;
	}
	return 0;
}

/* Stopping: done when every process was heard and every one that has
 * rings applied the stop (its ACK comes after its last flush), or when
 * its time is up. */
void dmn_stop_check(struct dmn *d)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	int late = now.tv_sec > d->stop_deadline.tv_sec ||
		   (now.tv_sec == d->stop_deadline.tv_sec &&
		    now.tv_nsec >= d->stop_deadline.tv_nsec);
	/* Unheard joiners get longer than slow closers: the daemon is
	 * taking them as fast as it can (STOP_JOIN_MS bounds a stream of
	 * newcomers, which the stop does not trace but still has to hear). */
	if (joiners_unheard(d) && (!late || now.tv_sec < d->stop_deadline.tv_sec +
						   STOP_JOIN_MS / 1000))
		return;
	for (struct client *c = d->clients; c && !late; c = c->next)
		if (c->fd >= 0 && c->registered && c->nrings &&
		    c->acked < d->stop_gen)
			return;
	dmn_stop_finish(d);
}

void dmn_stop_wait(struct dmn *d, struct dmn_totals *t)
{
	if (dmn_stop(d) == 0)
		while (d->state == ST_STOPPING)
			dmn_step(d, 2);
	*t = d->last;
}

int dmn_running(const struct dmn *d)
{
	return d->state;
}

const char *dmn_trace(const struct dmn *d)
{
	return d->trace;
}

int dmn_quit_requested(const struct dmn *d)
{
	return d->quit;
}

void dmn_last_totals(const struct dmn *d, struct dmn_totals *t)
{
	*t = d->last;
}

/* The absolute form of a directory just made (messages, status). */
static void absolute(char *path, size_t n)
{
	char *abs = realpath(path, NULL);

	if (abs && strlen(abs) < n)
		memcpy(path, abs, strlen(abs) + 1);
	free(abs);
}

int dmn_mkdir_new(const char *want, const char *prefix, char *out, size_t n)
{
	char stamp[32];
	struct tm tm;
	time_t now = time(NULL);

	if (want && *want) {
		if ((size_t)snprintf(out, n, "%s", want) >= n)
			return -ENAMETOOLONG;
		int ret = tfile_mkdir(out, 1);
		if (ret)
			return ret;
		absolute(out, n);
		return 0;
	}
	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	for (unsigned k = 1; k < 1000; k++) {
		if (k > 1)
			snprintf(out, n, "%s-%s-%u", prefix, stamp, k);
		else
			snprintf(out, n, "%s-%s", prefix, stamp);
		int ret = tfile_mkdir(out, 1);
		if (!ret) {
			absolute(out, n);
			return 0;
		}
		if (ret != -EEXIST)
			return ret;
	}
	return -EEXIST;
}

int dmn_snapshot(struct dmn *d, const char *dir, struct dmn_snap *res)
{
	unsigned seq = 0;
	int err = 0, ret;

	memset(res, 0, sizeof(*res));
	dmn_catch_up(d);
	for (struct client *c = d->clients; c; c = c->next) {
		char sub[4400];
		struct cons_source src;
		struct cons_config cc;
		struct cons_snap_stats st;

		if (c->fd < 0 || !c->registered || !c->nrings)
			continue;
		if (c->mode != STRATA_MODE_OVERWRITE) {
			res->skipped++;
			continue;
		}
		if ((ret = dmn_make_dir(dir, c->pid, &seq, sub,
					sizeof(sub)))) {
			err = err ? err : ret;
			continue;
		}
		dmn_client_config(d, c, sub, &src, &cc);
		memset(&st, 0, sizeof(st));
		ret = cons_snapshot(&cc, c->rings, c->nrings, &st);
		if (ret && !err)
			err = ret;
		res->procs++;
		res->packets += st.packets;
		res->events += st.events;
		res->bytes += st.bytes;
		res->overwritten += st.overwritten;
		res->busy += st.busy;
	}
	if (!res->procs && !err)
		return -ENOENT;
	return err;
}
