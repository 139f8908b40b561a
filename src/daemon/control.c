/* SPDX-License-Identifier: MIT */
/* The session daemon's control socket: the requests of `strata session`
 * (start, stop, status, snapshot, quit) and their answers. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "daemon/daemon_int.h"

/* ---- the control socket (strata session ...) ----------------------------- */

static void ctl_send(int fd, const void *m, size_t len)
{
	/* Our own command line reads at once; a peer that does not is
	 * dropped rather than waited for. */
	if (send(fd, m, len, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)len)
		slog("session: a control client does not read: dropped");
}

void dmn_ctl_send_done(struct dmn *d, int fd, int status, const char *msg)
{
	struct ctl_done m;

	memset(&m, 0, sizeof(m));
	m.h.type = CTL_DONE;
	m.h.len = sizeof(m);
	m.status = status;
	m.running = (uint32_t)d->state;
	m.procs = d->nlive - d->npending;
	m.daemon_pid = (uint32_t)getpid();
	if (d->st) {
		m.mode = d->st->mode;
		m.psize = UINT64_C(1) << d->st->psize_shift;
		m.npackets = UINT64_C(1) << d->st->npackets_shift;
		m.majors = d->st->majors;
	}
	if (d->state == ST_STOPPED) {
		m.events = d->last.events;
		m.bytes = d->last.bytes;
		m.discarded = d->last.discarded;
	} else { /* the processes of this trace already gone, then the others */
		m.events = d->done.events;
		m.bytes = d->done.bytes;
		m.discarded = d->done.discarded;
	}
	snprintf(m.trace, sizeof(m.trace), "%s", d->trace);
	snprintf(m.msg, sizeof(m.msg), "%s", msg ? msg : "");
	for (struct client *c = d->clients; c && d->state != ST_STOPPED; c = c->next) {
		struct strata_stats st = c->st;
		if (!c->traced)
			continue;
		if (c->cons) {
			memset(&st, 0, sizeof(st));
			cons_get_stats(c->cons, &st);
		}
		m.events += st.events_written;
		m.bytes += st.bytes_written;
		uint64_t lost = c->fd >= 0 ? dmn_client_ring_lost(c)
					   : c->ring_lost;
		m.discarded += lost > c->lost_base ? lost - c->lost_base : 0;
	}
	ctl_send(fd, &m, sizeof(m));
}

static void ctl_status(struct dmn *d, int fd)
{
	for (struct client *c = d->clients; c; c = c->next) {
		struct ctl_proc p;
		struct strata_stats st;

		if (c->fd < 0 || !c->registered)
			continue;
		memset(&p, 0, sizeof(p));
		memset(&st, 0, sizeof(st));
		p.h.type = CTL_PROC;
		p.h.len = sizeof(p);
		p.pid = c->pid;
		p.rings = c->nrings;
		if (c->cons)
			cons_get_stats(c->cons, &st);
		p.events = st.events_written;
		p.bytes = st.bytes_written;
		if (c->traced) {
			uint64_t lost = dmn_client_ring_lost(c);
			p.discarded = lost > c->lost_base ? lost - c->lost_base : 0;
		}
		memcpy(p.name, c->name, sizeof(p.name));
		ctl_send(fd, &p, sizeof(p));
	}
	dmn_ctl_send_done(d, fd, 0, NULL);
}

/* One request; returns 1 when the connection waits for the stop. */
int dmn_ctl_request(struct dmn *d, struct ctl_conn *k)
{
	struct ctl_req q;
	char dir[4096], msg[1024];
	ssize_t n = recv(k->fd, &q, sizeof(q), MSG_DONTWAIT);
	int ret = 0;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 1;
	if (n != (ssize_t)sizeof(q) || q.h.len != sizeof(q) ||
	    q.version != PROTO_VERSION) {
		if (n > 0)
			dmn_ctl_send_done(d, k->fd, -EPROTO, "bad request "
					  "(another version of strata?)");
		return 0;
	}
	q.path[sizeof(q.path) - 1] = 0;
	msg[0] = 0;
	switch (q.h.type) {
	case CTL_START:
		if (d->state != ST_STOPPED) {
			ret = -EALREADY;
			snprintf(msg, sizeof(msg), "already %s (into %.800s)",
				 d->state == ST_RUNNING ? "running" : "stopping",
				 d->trace);
		} else if ((ret = dmn_mkdir_new(q.path, "strata", dir, sizeof(dir)))) {
			snprintf(msg, sizeof(msg), "%.800s: cannot create the trace "
				 "directory: %s", q.path[0] ? q.path : dir,
				 strerror(-ret));
		} else {
			dmn_start(d, dir);
			snprintf(msg, sizeof(msg), "started: writing to %.800s", dir);
			if (d->daemon)
				fprintf(stderr, "strata: %s\n", msg);
		}
		break;
	case CTL_STOP:
	case CTL_QUIT:
		if (dmn_stop(d) == 0 || d->state == ST_STOPPING) {
			k->waiting = q.h.type;
			if (d->state == ST_STOPPED)
				/* not reached with a state file */
				dmn_stop_finish(d);
			return k->fd >= 0 && k->waiting;
		}
		if (q.h.type == CTL_QUIT) {
			d->quit = 1;
			snprintf(msg, sizeof(msg), "daemon ending (no trace was running)");
		} else {
			ret = -ENOENT;
			snprintf(msg, sizeof(msg), "not running (the last trace "
				 "is %.800s)", d->trace[0] ? d->trace : "none");
		}
		break;
	case CTL_STATUS:
		dmn_catch_up(d);
		ctl_status(d, k->fd);
		return 0;
	case CTL_SNAPSHOT: {
		struct dmn_snap sn;
		if ((ret = dmn_mkdir_new(q.path, "strata-snapshot", dir,
					 sizeof(dir)))) {
			snprintf(msg, sizeof(msg), "%.800s: cannot create the snapshot "
				 "directory: %s", q.path[0] ? q.path : dir,
				 strerror(-ret));
			break;
		}
		ret = dmn_snapshot(d, dir, &sn);
		dmn_snap_line(dir, ret, &sn, msg, sizeof(msg));
		if (ret == -ENOENT)
			rmdir(dir);
		break;
	}
	default:
		ret = -EINVAL;
		snprintf(msg, sizeof(msg), "unknown request %u", q.h.type);
	}
	dmn_ctl_send_done(d, k->fd, ret, msg);
	return 0;
}

void dmn_snap_line(const char *dir, int ret, const struct dmn_snap *sn,
		   char *buf, size_t n)
{
	if (ret == -ENOENT)
		snprintf(buf, n, "snapshot: no process to snapshot (%u not in "
			 "overwrite mode)", sn->skipped);
	else
		snprintf(buf, n, "snapshot %.800s: %u process%s, %llu packets, %llu "
			 "events, %llu bytes; %llu packets overwritten while "
			 "copied, %llu busy%s%s", dir, sn->procs,
			 sn->procs == 1 ? "" : "es",
			 (unsigned long long)sn->packets,
			 (unsigned long long)sn->events,
			 (unsigned long long)sn->bytes,
			 (unsigned long long)sn->overwritten,
			 (unsigned long long)sn->busy, ret ? "; error: " : "",
			 ret ? strerror(-ret) : "");
}

/*
 * A free control slot, or the one whose client has waited longest without
 * asking (closed): `strata session` stays reachable whatever idle
 * connections hold the slots. -1 if every slot waits for a stop to end
 * (answered within STOP_WAIT_MS).
 */
static int ctl_slot(struct dmn *d)
{
	int old = -1;

	for (int i = 0; i < MAX_CTL; i++) {
		struct ctl_conn *k = &d->conns[i];
		if (k->fd < 0)
			return i;
		if (!k->waiting && (old < 0 || k->since <= d->conns[old].since))
			old = i;
	}
	if (old >= 0) {
		dmn_limit_said(d, LIMIT_CTL, 0);
		close(d->conns[old].fd);
		d->conns[old].fd = -1;
	}
	return old;
}

void dmn_ctl_accept(struct dmn *d)
{
	for (int n = 0; n < MAX_CTL; n++) {
		struct ucred cr;
		socklen_t crlen = sizeof(cr);
		int fd = dmn_accept_fd(d, d->ctl_fd), slot;

		if (fd == -1)
			return;
		if (fd < 0)
			continue;
		/* Only our own uid controls the daemon (the socket is 0600
		 * too; root may connect anyway, it is refused here). */
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) < 0 ||
		    cr.uid != getuid() || (slot = ctl_slot(d)) < 0) {
			close(fd);
			continue;
		}
		struct ctl_conn *k = &d->conns[slot];
		k->fd = fd;
		k->waiting = 0;
		k->since = mono_ms();
		/* its request is there already (strata session sends it with
		 * its connect): answered now, before another connection could
		 * take its slot */
		if (!dmn_ctl_request(d, k) && k->fd >= 0) {
			close(k->fd);
			k->fd = -1;
		}
	}
}
