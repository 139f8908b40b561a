/* SPDX-License-Identifier: MIT */
/* The session daemon's clients: their messages (HELLO, RING, BYE, ACK),
 * their rings, and their sub-trace of the current trace. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/tfile.h"
#include "daemon/daemon_int.h"

/* c said HELLO, or is gone: no longer one that waits for it. */
static void client_unpend(struct dmn *d, struct client *c)
{
	if (c->pending) {
		c->pending = 0;
		d->npending--;
	}
}

/*
 * TRACE/ust/pid-N, or pid-N.K when that exists (another image of that
 * pid: exec; or a pid that connected again): K counts such directories
 * in the trace (*seq), so that a pid connecting many times costs one
 * mkdir each, never runs out of names, and never fails the trace.
 */
int dmn_make_dir(const char *trace, uint32_t pid, unsigned *seq,
		 char *dir, size_t n)
{
	char ust[4100];

	if (snprintf(ust, sizeof(ust), "%s/ust", trace) >= (int)sizeof(ust))
		return -ENAMETOOLONG;
	int ret = tfile_mkdir(ust, 0);
	if (ret)
		return ret;
	snprintf(dir, n, "%s/pid-%u", ust, pid);
	/* bounded: K only grows, and only directories made by others
	 * (there are none in a new trace) are skipped */
	for (unsigned tries = 0; tries < 100000; tries++) {
		ret = tfile_mkdir(dir, 1);
		if (ret != -EEXIST)
			return ret;
		snprintf(dir, n, "%s/pid-%u.%u", ust, pid, ++*seq);
	}
	return -EEXIST;
}

uint64_t dmn_client_ring_lost(const struct client *c)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < c->nrings; i++)
		for (int k = 0; k < STRATA_LOST_NCAUSES; k++)
			n += strata_load_relaxed(&c->rings[i]->ctl->lost[k]);
	return n;
}

/* Begin this client's sub-trace in the current trace (d->trace) and hand
 * it the rings it has. Returns 0 or a negative errno (said on stderr). */
int dmn_client_begin_trace(struct dmn *d, struct client *c)
{
	struct cons_source src;
	struct cons_config cc;
	char dir[4400];
	int ret;

	if ((ret = dmn_make_dir(d->trace, c->pid, &d->dir_seq, dir,
				sizeof(dir)))) {
		fprintf(stderr, "strata: %s/ust: cannot create directory: %s\n",
			d->trace, strerror(-ret));
		if (!d->err)
			d->err = ret;
		/* counted when it leaves (dmn_client_close) */
		c->untraced = ret;
		return ret;
	}
	dmn_client_config(d, c, dir, &src, &cc);
	cc.sink = d->sink; /* not a snapshot's (dmn_snapshot) */
	if ((ret = cons_create(&cc, &c->cons))) {
		fprintf(stderr, "strata: %s: %s\n", dir,
			strata_strerror_detail());
		if (!d->err)
			d->err = ret;
		c->untraced = ret;
		return ret;
	}
	c->traced = 1;
	c->untraced = 0;
	c->bye = 0;
	memset(&c->st, 0, sizeof(c->st));
	memset(&c->salv, 0, sizeof(c->salv));
	c->ring_lost = 0;
	c->lost_base = dmn_client_ring_lost(c);
	for (unsigned i = 0; i < c->nrings; i++)
		if (cons_add_ring(c->cons, c->rings[i]))
			slog("session: pid %u: ring of cpu %u not traced", c->pid,
			     c->rings[i]->cpu);
	return 0;
}

static void client_hello(struct dmn *d, struct client *c,
			 const unsigned char *buf, size_t len)
{
	struct proto_hello h;
	struct ucred cr;
	socklen_t crlen = sizeof(cr);

	if (len != sizeof(h))
		goto bad;
	memcpy(&h, buf, sizeof(h));
	if (h.version != PROTO_VERSION || h.mode > STRATA_MODE_BLOCK)
		goto bad;
	/* The kernel's word, not the message's, for who is at the other end. */
	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) < 0 ||
	    (uint32_t)cr.pid != h.pid || cr.uid != getuid())
		goto bad;
	if ((int)h.clock_tsc != strata_clock_tsc) {
		fprintf(stderr, "strata: pid %u uses another trace clock: not "
			"traced\n", h.pid);
		goto bad;
	}
	c->pid = h.pid;
	c->mode = h.mode;
	memcpy(c->uuid, h.uuid, 16);
	memcpy(c->name, h.name, 16);
	c->name[16] = 0;
	for (char *p = c->name; *p; p++)
		if ((unsigned char)*p < 0x20)
			*p = '?';
	if (h.fork_of) {
		/* A fork child: the parent's descriptors (same image). */
		for (struct client *p = d->clients; p; p = p->next)
			if (p != c && p->pid == h.fork_of && p->registered) {
				for (size_t i = 0; i < p->nev; i++)
					dmn_desc_add(c, p->evs[i]);
				memcpy(c->blobs, p->blobs, sizeof(c->blobs));
				c->nblobs = p->nblobs;
				break;
			}
	}
	/* A stopped daemon's processes only register: their sub-traces
	 * begin with the next trace (dmn_start). A stopping one's are
	 * traced: such a process may have joined and logged while the
	 * trace ran, its connection taken only now (a daemon behind a
	 * burst of short processes); one that joined after the stop logged
	 * nothing and leaves an empty sub-trace. One whose sub-trace
	 * cannot be made stays connected, untraced: what it logs is counted
	 * when it leaves, with the cause (dmn_client_close()). */
	if (d->state != ST_STOPPED)
		dmn_client_begin_trace(d, c);
	c->registered = 1;
	client_unpend(d, c);
	return;
bad:
	slog("session: a client sent a bad HELLO: disconnected");
	dmn_client_close(d, c, 1);
}

/*
 * Room in c->rings for one more ring. It grows with the CPUs the process
 * has, up to STRATA_MAX_CPUS: one ring per CPU is taken, and
 * cons_ring_map() refuses a higher CPU. (A fixed 64 refused the 65th CPU
 * of a larger machine, silently: issue 19.) Returns 0 or -ENOMEM.
 */
static int client_rings_fit(struct client *c)
{
	unsigned cap;
	void *p;

	if (c->nrings < c->caprings)
		return 0;
	if (c->caprings >= STRATA_MAX_CPUS)
		return -ENOMEM; /* not reached: one ring per CPU */
	cap = c->caprings ? 2 * c->caprings : 8;
	if (cap > STRATA_MAX_CPUS)
		cap = STRATA_MAX_CPUS;
	p = realloc(c->rings, cap * sizeof(*c->rings));
	if (!p)
		return -ENOMEM;
	c->rings = p;
	c->caprings = cap;
	return 0;
}

static void client_ring(struct dmn *d, struct client *c,
			const unsigned char *buf, size_t len, int fd)
{
	struct proto_ring m;
	struct strata_ring *r;
	int ret;

	if (fd < 0 || len != sizeof(m) || !c->registered)
		goto bad;
	memcpy(&m, buf, sizeof(m));
	if (m.pid != c->pid)
		goto bad;
	if ((ret = cons_ring_map(fd, c->pid, c->uuid, &r)))
		goto bad;
	/* Nothing the daemon does costs more than a packet (a snapshot
	 * copies packet by packet), but its memory is the client's to
	 * choose: no larger than the session's geometry (record.md,
	 * "Limits"). */
	if (r->psize > d->ring_psize || r->bufmask + 1 > d->ring_bytes) {
		cons_ring_unmap(r);
		c->rings_refused++;
		dmn_limit_said(d, LIMIT_RING, c->pid);
		return;
	}
	int dup = 0; /* one ring per CPU */
	for (unsigned i = 0; i < c->nrings; i++)
		dup |= c->rings[i]->cpu == r->cpu;
	if (r->cpu != m.cpu || dup) {
		cons_ring_unmap(r);
		goto bad;
	}
	/* Out of memory (the array, or the consumer's stream): an honest
	 * process's ring refused, counted and said like one too large. */
	if (client_rings_fit(c) || (c->cons && cons_add_ring(c->cons, r))) {
		cons_ring_unmap(r);
		c->rings_refused++;
		dmn_limit_said(d, LIMIT_RING_NOMEM, c->pid);
		return;
	}
	c->rings[c->nrings++] = r;
	return;
bad:
	/* Refused: its events are lost; the process counts nothing, so
	 * say it (verbose) -- an honest process never gets here. */
	slog("session: pid %u: a ring was refused: %s", c->pid,
	     strata_strerror_detail());
}

/* Finish this client's sub-trace of the current trace: write what its
 * rings hold (salvaging them when `writers_gone`), close its streams. */
void dmn_client_end_trace(struct dmn *d, struct client *c, int writers_gone)
{
	if (!c->cons)
		return;
	c->ring_lost = dmn_client_ring_lost(c);
	cons_poll(c->cons);
	int ret = cons_finish(c->cons, writers_gone, &c->st, &c->salv);
	c->cons = NULL;
	c->err = ret;
	if (ret && !d->err)
		d->err = ret;
}

/* A BYE that asks for DONE (the embedded mode's guardian): finish the
 * sub-trace now (the process closed its packets before BYE) and say so,
 * with the totals; the process waits for it at exit. */
static void client_done(struct dmn *d, struct client *c)
{
	struct proto_done m;

	dmn_client_end_trace(d, c, 1);
	memset(&m, 0, sizeof(m));
	m.h.type = PROTO_DONE;
	m.h.len = sizeof(m);
	m.err = c->err;
	m.events = c->st.events_written;
	m.bytes = c->st.bytes_written;
	m.packets = c->st.packets_written;
	m.lost_io = c->st.lost_io;
	if (send(c->fd, &m, sizeof(m), MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		/* it gave up waiting, or is gone: the trace is written */
	}
}

/* The process is gone (EOF) or the session ends: write everything. */
void dmn_client_close(struct dmn *d, struct client *c, int writers_gone)
{
	client_unpend(d, c);
	if (c->fd >= 0) {
		close(c->fd);
		c->fd = -1;
		d->nlive--;
	}
	if (c->bellfd >= 0) {
		close(c->bellfd);
		c->bellfd = -1;
	}
	dmn_client_end_trace(d, c, writers_gone);
	if (c->untraced) {
		/* its sub-trace could never be made (a read-only or full
		 * trace directory): all it logged is lost, counted here
		 * with the cause (issue 24, item 9) */
		uint64_t n = dmn_client_ring_lost(c);
		for (unsigned i = 0; i < c->nrings; i++)
			n += cons_ring_pending(c->rings[i], 1);
		d->done.untraced++;
		d->done.untraced_events += n;
		if (!d->done.untraced_err)
			d->done.untraced_err = c->untraced;
		char why[160];
		snprintf(why, sizeof(why), "its sub-trace could not be made: %s",
			 strerror(-c->untraced));
		dmn_note_unrecorded(d, c->pid, c->name, n, why);
		c->untraced = 0;
	}
	if (c->bye && c->traced && !c->lost_base) {
		/* Losses its BYE counts that no ring holds, so no packet's
		 * events_discarded: events dropped while it could make no
		 * ring at all (out of descriptors to its end). Readers see
		 * them here, or nowhere. */
		uint64_t said = 0, held = dmn_client_ring_lost(c);
		for (int k = 0; k < STRATA_LOST_NCAUSES; k++)
			said += c->byemsg.lost[k];
		if (said > held)
			dmn_note_unrecorded(d, c->pid, c->name, said - held,
					    "discarded while it had no buffer to count them in");
	}
	for (unsigned i = 0; i < c->nrings; i++)
		cons_ring_unmap(c->rings[i]);
	c->nrings = 0;
}

/* Is fd an eventfd (what a HELLO's doorbell must be: the process is not
 * trusted, and another kind of file could block our reads)? */
static int is_eventfd(int fd)
{
	char path[64], link[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return 0;
	link[n] = 0;
	return !strcmp(link, "anon_inode:[eventfd]") &&
	       fcntl(fd, F_SETFL, O_NONBLOCK) == 0;
}

/*
 * The fds that came with a message (SCM_RIGHTS): the first one to *fd,
 * every other one closed at once, whatever the message turns out to be.
 * A message whose control data was cut (MSG_CTRUNC: more than our buffer
 * holds; the kernel discards what did not fit) keeps none. Returns 1 if
 * the message carried control data at all.
 */
static int take_fds(struct msghdr *mh, int *fd)
{
	int ctrunc = (mh->msg_flags & MSG_CTRUNC) != 0;

	*fd = -1;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS ||
		    cm->cmsg_len < CMSG_LEN(0))
			continue;
		size_t nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t k = 0; k < nfd; k++) {
			int x;
			memcpy(&x, CMSG_DATA(cm) + k * sizeof(int), sizeof(int));
			if (*fd < 0 && !ctrunc)
				*fd = x;
			else
				close(x); /* one fd per message */
		}
	}
	return mh->msg_controllen > 0 || ctrunc;
}

/* recvmsg() said 0: the peer is gone (EOF), or it sent an empty message. */
static int peer_gone(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR | POLLNVAL));
}

/*
 * One whole message of `len` bytes from c, with the fd that came with it
 * (*fd, -1 if none): set to -1 when taken (the HELLO's doorbell) or
 * closed. Returns 1 when c is done with (its BYE).
 */
static int client_msg(struct dmn *d, struct client *c,
		      const unsigned char *buf, size_t len, int *fd)
{
	struct proto_hdr h;

	memcpy(&h, buf, sizeof(h));
	if (h.len != (uint32_t)len)
		h.type = 0;
	if (!c->registered && h.type != PROTO_HELLO)
		h.type = 0;
	switch (h.type) {
	case PROTO_HELLO:
		if (c->registered)
			break;
		client_hello(d, c, buf, len);
		if (c->registered && *fd >= 0 && is_eventfd(*fd)) {
			c->bellfd = *fd; /* ring.md §8 */
			*fd = -1;
		}
		break;
	case PROTO_RING:
		client_ring(d, c, buf, len, *fd);
		break;
	case PROTO_DESC:
		dmn_client_desc(d, c, buf, len);
		break;
	case PROTO_BYE:
		if (len == sizeof(c->byemsg) || len == PROTO_BYE_V1_LEN) {
			memset(&c->byemsg, 0, sizeof(c->byemsg));
			memcpy(&c->byemsg, buf, len);
			c->bye = 1;
			/* the embedded mode's guardian: the sub-trace
			 * written, then said */
			if (c->byemsg.flags & PROTO_BYE_DONE)
				client_done(d, c);
			/* its last message: done with it, whether or not it
			 * disconnects (dmn_clients_reap) */
			if (*fd >= 0)
				close(*fd);
			*fd = -1;
			dmn_client_close(d, c, 1);
			return 1;
		}
		break;
	case PROTO_ACK: {
		struct proto_ack a;
		if (len == sizeof(a)) {
			memcpy(&a, buf, sizeof(a));
			c->acked = a.gen;
		}
		break;
	}
	}
	return 0;
}

/* Read every message waiting on a client's socket. */
void dmn_client_read(struct dmn *d, struct client *c)
{
	static unsigned char buf[PROTO_MAX_MSG];

	for (int n = 0; n < 256 && c->fd >= 0; n++) {
		union {
			char b[CMSG_SPACE(sizeof(int) * 8)];
			struct cmsghdr align;
		} u;
		struct iovec iov = {buf, sizeof(buf)};
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1,
				    .msg_control = u.b,
				    .msg_controllen = sizeof(u.b)};
		ssize_t len = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		int fd = -1;

		if (len < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (len < 0) {
			dmn_client_close(d, c, 1);
			return;
		}
		/* Before anything else: a zero-byte message may carry fds,
		 * and recvmsg() then returns 0 as it does at EOF (record.md,
		 * "Limits": every fd received is closed unless taken). */
		int had_control = take_fds(&mh, &fd);
		if (len == 0 && !had_control && peer_gone(c->fd)) {
			dmn_client_close(d, c, 1);
			return;
		}
		if ((size_t)len >= sizeof(struct proto_hdr) &&
		    !(mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) &&
		    client_msg(d, c, buf, (size_t)len, &fd))
			return;
		if (fd >= 0)
			close(fd); /* the mapping keeps the ring alive */
	}
}

void dmn_client_free(struct dmn *d, struct client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	if (c->bellfd >= 0)
		close(c->bellfd);
	for (unsigned i = 0; i < c->nrings; i++)
		cons_ring_unmap(c->rings[i]);
	free(c->rings);
	if (c->cons) {
		struct strata_stats st;
		cons_finish(c->cons, 0, &st, NULL);
	}
	dmn_client_descs_free(d, c);
	free(c);
}
