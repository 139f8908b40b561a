/* SPDX-License-Identifier: MIT */
/* The session daemon's connections: taken, bounded, timed out, and the
 * limits it says once (docs/record.md, "Limits"). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon/daemon_int.h"

/* ---- limits: what a client may make the daemon hold ---------------------- */

void dmn_limit_said(struct dmn *d, enum limit which, uint32_t pid)
{
	static const char *const what[] = {
		[LIMIT_DESC] = "sent more event descriptors than a process may "
			       "(4 MiB, 64 MiB for all processes): the rest show raw",
		[LIMIT_RING] = "handed over a ring larger than the session's "
			       "packet size or ring size: refused, its events "
			       "are lost",
		[LIMIT_PID] = "opened more connections than a process may hold "
			      "(8): refused",
		[LIMIT_CLIENTS] = "connected while the daemon holds as many "
				  "processes as its file descriptors allow: "
				  "refused, not traced",
		[LIMIT_PENDING] = "connected and did not say HELLO in time (2 s, "
				  "or 64 waiting): disconnected",
		[LIMIT_FDS] = "connected while the daemon had no file descriptor "
			      "left: refused, not traced",
		[LIMIT_CTL] = "held a control connection without a request (2 s, "
			      "or 16 waiting): closed",
		[LIMIT_RING_NOMEM] = "handed over a ring while the daemon had "
				     "no memory to take it: refused, its events "
				     "are lost",
	};

	if (d->limits_said & (1u << which))
		return;
	d->limits_said |= 1u << which;
	if (pid)
		fprintf(stderr, "strata: pid %u %s (said once; docs/record.md, "
			"\"Limits\")\n", pid, what[which]);
	else
		fprintf(stderr, "strata: a process %s (said once; "
			"docs/record.md, \"Limits\")\n", what[which]);
}

/* ---- connections: taken, bounded, timed out ------------------------------ */

static void pending_evict(struct dmn *d);

/*
 * accept4() on a listening socket. Out of fds (EMFILE, ENFILE): a
 * connection that has not said HELLO is closed to make room, the oldest;
 * without one, the new connection is taken with the spare fd and closed
 * at once. Left in the backlog, it kept the listener readable, so that
 * every poll() returned at once and the idle daemon spun (100 % CPU),
 * while the programs behind it waited. Without a spare either (it could
 * not be opened again), the listeners rest for LISTEN_PAUSE_MS. Returns
 * the fd; -1 when none is waiting (or the listeners rest), -2 for one
 * refused.
 */
int dmn_accept_fd(struct dmn *d, int lfd)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd >= 0)
		return fd;
	if (errno != EMFILE && errno != ENFILE)
		return -1;
	dmn_limit_said(d, LIMIT_FDS, 0);
	if (d->npending) {
		pending_evict(d);
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd >= 0 || (errno != EMFILE && errno != ENFILE))
			return fd >= 0 ? fd : -1;
	}
	if (d->spare_fd >= 0) {
		close(d->spare_fd);
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0)
			close(fd);
		d->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			return -2;
	}
	d->listen_rest_until = mono_ms() + LISTEN_PAUSE_MS;
	return -1;
}

/* Connections held by process `pid`. */
static unsigned pid_conns(const struct dmn *d, uint32_t pid)
{
	unsigned n = 0;

	for (const struct client *c = d->clients; c; c = c->next)
		n += c->fd >= 0 && c->peer == pid;
	return n;
}

/* Disconnect the connection that has waited longest for its HELLO. */
static void pending_evict(struct dmn *d)
{
	struct client *old = NULL;

	for (struct client *c = d->clients; c; c = c->next)
		if (c->pending && (!old || c->hello_by <= old->hello_by))
			old = c;
	if (old) {
		dmn_limit_said(d, LIMIT_PENDING, old->peer);
		dmn_client_close(d, old, 1);
	}
}

/*
 * New connections to `sock`: our uid only (the socket is 0600; root
 * may connect anyway), CLIENTS_PER_PID per process, max_clients in all
 * (those that have not said HELLO make room for new ones: they are
 * disconnected, oldest first), PENDING_MAX waiting for their HELLO. An
 * honest process sends its HELLO with its connect(), so that it is
 * read here at once.
 */
void dmn_clients_accept(struct dmn *d)
{
	for (int k = 0; k < 64; k++) {
		struct ucred cr;
		socklen_t crlen = sizeof(cr);
		int fd = dmn_accept_fd(d, d->lfd);
		struct client *c;

		if (fd == -1)
			break;
		if (fd < 0)
			continue;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) < 0 ||
		    cr.uid != getuid()) {
			close(fd);
			continue;
		}
		if (pid_conns(d, (uint32_t)cr.pid) >= CLIENTS_PER_PID) {
			dmn_limit_said(d, LIMIT_PID, (uint32_t)cr.pid);
			close(fd);
			continue;
		}
		if ((d->npending >= PENDING_MAX || d->nlive >= d->max_clients) &&
		    d->npending)
			pending_evict(d);
		if (d->nlive >= d->max_clients || !(c = calloc(1, sizeof(*c)))) {
			dmn_limit_said(d, LIMIT_CLIENTS, (uint32_t)cr.pid);
			close(fd);
			continue;
		}
		c->fd = fd;
		c->bellfd = -1;
		c->peer = (uint32_t)cr.pid;
		c->pending = 1;
		c->hello_by = mono_ms() + HELLO_MS;
		d->npending++;
		c->next = d->clients;
		d->clients = c;
		d->nlive++;
		dmn_client_read(d, c);
	}
}

/*
 * Everything the processes said before a request that reports on them
 * (`session status`, `session snapshot`): the connections waiting in the
 * backlog taken, every socket read. A program's connect() and its RING
 * messages return before the daemon reads them, so that without this a
 * snapshot asked for just after a program started, or after one of its
 * threads first ran on a CPU, left out what that program had logged and
 * believed recorded (a connect that returned is a join that happened).
 */
void dmn_catch_up(struct dmn *d)
{
	if (mono_ms() >= d->listen_rest_until)
		dmn_clients_accept(d);
	for (struct client *c = d->clients; c; c = c->next)
		if (c->fd >= 0)
			dmn_client_read(d, c);
}

/* Connections that did not speak in time: clients without a HELLO after
 * HELLO_MS, control clients without a request after CTL_IDLE_MS. */
void dmn_deadlines(struct dmn *d)
{
	uint64_t now = mono_ms();

	for (struct client *c = d->clients; c && d->npending; c = c->next)
		if (c->pending && now >= c->hello_by) {
			dmn_limit_said(d, LIMIT_PENDING, c->peer);
			dmn_client_close(d, c, 1);
		}
	for (int i = 0; i < MAX_CTL; i++) {
		struct ctl_conn *k = &d->conns[i];
		if (k->fd >= 0 && !k->waiting && now - k->since >= CTL_IDLE_MS) {
			dmn_limit_said(d, LIMIT_CTL, 0);
			close(k->fd);
			k->fd = -1;
		}
	}
}
