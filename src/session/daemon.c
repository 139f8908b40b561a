/* SPDX-License-Identifier: MIT */
/* The session daemon: accepts traced processes, maps their rings, writes their streams. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <strata/strata.h>

#include "common/log.h"
#include "consumer/consumer.h"
#include "lib/clock.h"
#include "ring/ring.h"
#include "session/daemon.h"
#include "session/proto.h"

#define MAX_CLIENTS 1024

/* One traced process image (a connection). */
struct client {
	int fd; /* -1 once closed */
	int registered;
	uint32_t pid, mode;
	char name[17];
	uint8_t uuid[16];
	char dir[4400];
	struct cons *cons;
	struct strata_ring *rings[64];
	unsigned nrings;
	/* descriptors (owned by the daemon's pool) */
	const struct strata_event_desc **evs;
	size_t nev, cap;
	uint64_t gen;
	int bye;
	struct sess_bye byemsg;
	uint64_t ring_lost; /* sum of the rings' counters at close */
	struct strata_stats st;
	struct cons_salvage salv;
	struct client *next;
};

/* Every descriptor the daemon built, freed at the end (fork children
 * share their parent's). */
struct pool {
	void *mem;
	struct pool *next;
};

struct sessd {
	char trace[4096];
	char sdir[4096];
	char sock[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int lfd;
	struct clock_point cp_first;
	struct client *clients; /* newest first */
	unsigned nlive;
	struct pool *pool;
	int err;
};

static const struct strata_event_desc *const *src_events(void *ctx, size_t *n)
{
	struct client *c = ctx;
	static const struct strata_event_desc *none[1];

	*n = c->nev;
	return c->evs ? c->evs : none;
}

static const struct strata_event_desc *src_lookup(void *ctx, uint8_t major,
						  uint16_t minor)
{
	struct client *c = ctx;

	for (size_t i = 0; i < c->nev; i++)
		if (c->evs[i]->major == major && c->evs[i]->minor == minor)
			return c->evs[i];
	return NULL;
}

static uint64_t src_generation(void *ctx)
{
	return ((struct client *)ctx)->gen;
}

static int add_desc(struct client *c, const struct strata_event_desc *e)
{
	if (src_lookup(c, e->major, e->minor))
		return 0; /* the first one stays (strata_register's rule) */
	if (c->nev == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		void *p = realloc(c->evs, cap * sizeof(*c->evs));
		if (!p)
			return -ENOMEM;
		c->evs = p;
		c->cap = cap;
	}
	c->evs[c->nev++] = e;
	c->gen++;
	return 0;
}

int sessd_create(const char *trace_dir, struct sessd **out, const char **what)
{
	struct sessd *d = calloc(1, sizeof(*d));
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	const char *tmp = getenv("TMPDIR");
	int ret;

	/* The daemon's own view of the trace clock, explicitly: libstrata's
	 * constructor is not necessarily linked into the tool. */
	clock_init();
	if (!d)
		return -ENOMEM;
	d->lfd = -1;
	snprintf(d->trace, sizeof(d->trace), "%s", trace_dir);
	snprintf(d->sdir, sizeof(d->sdir), "%s/strata-session-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	/* mkdtemp: 0700, a name nobody else could have made */
	if (!mkdtemp(d->sdir)) {
		ret = -errno;
		*what = "cannot create the session directory";
		free(d);
		return ret;
	}
	if (snprintf(d->sock, sizeof(d->sock), "%s/sock", d->sdir) >=
	    (int)sizeof(d->sock)) {
		ret = -ENAMETOOLONG;
		*what = "session socket path too long (set TMPDIR)";
		goto fail;
	}
	d->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (d->lfd < 0) {
		ret = -errno;
		*what = "cannot create the session socket";
		goto fail;
	}
	memcpy(a.sun_path, d->sock, sizeof(d->sock));
	mode_t old = umask(0177); /* the socket file is 0600 */
	ret = bind(d->lfd, (struct sockaddr *)&a, sizeof(a));
	umask(old);
	if (ret < 0 || listen(d->lfd, 128) < 0) {
		ret = -errno;
		*what = "cannot listen on the session socket";
		goto fail;
	}
	clock_point_take(&d->cp_first);
	*out = d;
	return 0;
fail:
	if (d->lfd >= 0)
		close(d->lfd);
	unlink(d->sock);
	rmdir(d->sdir);
	free(d);
	return ret;
}

const char *sessd_socket(const struct sessd *d)
{
	return d->sock;
}

unsigned sessd_live(const struct sessd *d)
{
	return d->nlive;
}

/* TRACE/ust/pid-N, or pid-N.K for the K-th image of that pid (exec). */
static int make_dir(struct sessd *d, struct client *c)
{
	char ust[4100];

	if (snprintf(ust, sizeof(ust), "%s/ust", d->trace) >= (int)sizeof(ust))
		return -ENAMETOOLONG;
	if (mkdir(ust, 0755) < 0 && errno != EEXIST)
		return -errno;
	for (unsigned k = 0; k < 1000; k++) {
		if (k)
			snprintf(c->dir, sizeof(c->dir), "%s/pid-%u.%u", ust,
				 c->pid, k);
		else
			snprintf(c->dir, sizeof(c->dir), "%s/pid-%u", ust, c->pid);
		if (mkdir(c->dir, 0755) == 0)
			return 0;
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

static void client_hello(struct sessd *d, struct client *c,
			 const unsigned char *buf, size_t len)
{
	struct sess_hello h;
	struct ucred cr;
	socklen_t crlen = sizeof(cr);
	struct cons_source src;
	struct cons_config cc;
	int ret;

	if (len != sizeof(h))
		goto bad;
	memcpy(&h, buf, sizeof(h));
	if (h.version != SESS_VERSION || h.mode > STRATA_MODE_OVERWRITE)
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
					add_desc(c, p->evs[i]);
				break;
			}
	}
	if ((ret = make_dir(d, c))) {
		fprintf(stderr, "strata: %s/ust: cannot create directory: %s\n",
			d->trace, strerror(-ret));
		if (!d->err)
			d->err = ret;
		goto bad;
	}
	memset(&src, 0, sizeof(src));
	src.pid = c->pid;
	src.procname = c->name;
	src.events = src_events;
	src.lookup = src_lookup;
	src.generation = src_generation;
	src.ctx = c;
	src.cp_first = &d->cp_first;
	memset(&cc, 0, sizeof(cc));
	cc.dir = c->dir;
	cc.mode = (int)c->mode;
	memcpy(cc.uuid, c->uuid, 16);
	cc.src = &src;
	if ((ret = cons_create(&cc, &c->cons))) {
		fprintf(stderr, "strata: %s: %s\n", c->dir,
			strata_strerror_detail());
		if (!d->err)
			d->err = ret;
		goto bad;
	}
	c->registered = 1;
	return;
bad:
	slog("session: a client sent a bad HELLO: disconnected");
	close(c->fd);
	c->fd = -1;
	d->nlive--;
}

static void client_ring(struct client *c, const unsigned char *buf,
			size_t len, int fd)
{
	struct sess_ring m;
	struct strata_ring *r;
	int ret;

	if (fd < 0 || len != sizeof(m) || !c->registered ||
	    c->nrings == sizeof(c->rings) / sizeof(c->rings[0]))
		goto bad;
	memcpy(&m, buf, sizeof(m));
	if (m.pid != c->pid)
		goto bad;
	if ((ret = cons_ring_map(fd, c->pid, c->uuid, &r)))
		goto bad;
	if (r->cpu != m.cpu || cons_add_ring(c->cons, r)) {
		cons_ring_unmap(r);
		goto bad;
	}
	c->rings[c->nrings++] = r;
	return;
bad:
	/* Refused: its events are lost; the process counts nothing, so
	 * say it (verbose) -- an honest process never gets here. */
	slog("session: pid %u: a ring was refused: %s", c->pid,
	     strata_strerror_detail());
}

/* A NUL-terminated string inside [*p, end); advances *p. */
static const char *take_str(const unsigned char **p, const unsigned char *end)
{
	const unsigned char *s = *p;
	const unsigned char *z = memchr(s, 0, (size_t)(end - s));

	if (!z)
		return NULL;
	*p = z + 1;
	return (const char *)s;
}

static char *pool_strdup(struct sessd *d, const char *s, size_t max)
{
	size_t n = strnlen(s, max);
	struct pool *pl = malloc(sizeof(*pl) + n + 1);

	if (!pl)
		return NULL;
	char *out = (char *)(pl + 1);
	memcpy(out, s, n);
	out[n] = 0;
	pl->mem = NULL;
	pl->next = d->pool;
	d->pool = pl;
	return out;
}

static void *pool_alloc(struct sessd *d, size_t n)
{
	struct pool *pl = calloc(1, sizeof(*pl) + n);

	if (!pl)
		return NULL;
	pl->next = d->pool;
	d->pool = pl;
	return pl + 1;
}

/* Names and text go into TSDL: keep them short and printable. */
static int name_ok(const char *s)
{
	if (!*s || strlen(s) > 128)
		return 0;
	for (; *s; s++)
		if (!(*s == '_' || (*s >= '0' && *s <= '9') ||
		      (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
			return 0;
	return 1;
}

static void client_desc(struct sessd *d, struct client *c,
			const unsigned char *buf, size_t len)
{
	struct sess_desc h;
	const unsigned char *p, *end = buf + len;

	if (len < sizeof(h) || !c->registered)
		return;
	memcpy(&h, buf, sizeof(h));
	p = buf + sizeof(h);
	for (uint32_t i = 0; i < h.count; i++) {
		unsigned char rec[8];
		uint16_t minor, nfields;
		const char *sub, *name, *fmt, *desc;

		if (end - p < 8)
			return;
		memcpy(rec, p, 8);
		p += 8;
		memcpy(&minor, rec + 2, 2);
		memcpy(&nfields, rec + 4, 2);
		if (!(sub = take_str(&p, end)) || !(name = take_str(&p, end)) ||
		    !(fmt = take_str(&p, end)) || !(desc = take_str(&p, end)))
			return;
		struct strata_event_desc *e = pool_alloc(d, sizeof(*e));
		struct strata_field_desc *f =
			nfields ? pool_alloc(d, nfields * sizeof(*f)) : NULL;
		if (!e || (nfields && !f))
			return;
		int ok = rec[0] >= 1 && rec[0] <= STRATA_MAJOR_MAX &&
			 rec[1] <= STRATA_EV_END && nfields <= 512 &&
			 name_ok(sub) && name_ok(name);
		for (unsigned k = 0; k < nfields; k++) {
			unsigned char fr[8];
			const char *fname;
			if (end - p < 8)
				return;
			memcpy(fr, p, 8);
			p += 8;
			if (!(fname = take_str(&p, end)))
				return;
			memcpy(&f[k].type, fr, 2);
			memcpy(&f[k].count, fr + 2, 2);
			memcpy(&f[k].flags, fr + 4, 4);
			f[k].name = pool_strdup(d, fname, 128);
			if (!f[k].name || !name_ok(f[k].name) ||
			    f[k].type < STRATA_T_U8 || f[k].type > STRATA_T_STRING ||
			    (f[k].type == STRATA_T_STRING && f[k].count))
				ok = 0;
		}
		if (!ok)
			continue; /* undecodable here: its events show raw */
		e->major = rec[0];
		e->kind = rec[1];
		e->minor = minor;
		e->nfields = nfields;
		e->fields = f;
		e->subsystem = pool_strdup(d, sub, 128);
		e->name = pool_strdup(d, name, 128);
		e->format = *fmt ? pool_strdup(d, fmt, 4096) : NULL;
		e->description = *desc ? pool_strdup(d, desc, 4096) : NULL;
		if (e->subsystem && e->name)
			add_desc(c, e);
	}
}

/* The process is gone (EOF) or the session ends: write everything. */
static void client_close(struct sessd *d, struct client *c, int writers_gone)
{
	if (c->fd >= 0) {
		close(c->fd);
		c->fd = -1;
		d->nlive--;
	}
	if (!c->cons)
		return;
	for (unsigned i = 0; i < c->nrings; i++)
		for (int k = 0; k < STRATA_LOST_NCAUSES; k++)
			c->ring_lost += strata_load_relaxed(&c->rings[i]->ctl->lost[k]);
	cons_poll(c->cons);
	int ret = cons_finish(c->cons, writers_gone, &c->st, &c->salv);
	c->cons = NULL;
	if (ret && !d->err)
		d->err = ret;
	for (unsigned i = 0; i < c->nrings; i++)
		cons_ring_unmap(c->rings[i]);
	c->nrings = 0;
}

/* Read every message waiting on a client's socket. */
static void client_read(struct sessd *d, struct client *c)
{
	static unsigned char buf[SESS_MAX_MSG];

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
		if (len <= 0) {
			client_close(d, c, 1);
			return;
		}
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm;
		     cm = CMSG_NXTHDR(&mh, cm)) {
			if (cm->cmsg_level != SOL_SOCKET ||
			    cm->cmsg_type != SCM_RIGHTS)
				continue;
			size_t nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (size_t k = 0; k < nfd; k++) {
				int x;
				memcpy(&x, CMSG_DATA(cm) + k * sizeof(int), sizeof(int));
				if (fd < 0)
					fd = x;
				else
					close(x); /* one fd per message */
			}
		}
		struct sess_hdr h;
		if ((size_t)len >= sizeof(h) && !(mh.msg_flags & MSG_TRUNC)) {
			memcpy(&h, buf, sizeof(h));
			if (h.len != (uint32_t)len)
				h.type = 0;
			if (!c->registered && h.type != SESS_HELLO)
				h.type = 0;
			switch (h.type) {
			case SESS_HELLO:
				if (!c->registered)
					client_hello(d, c, buf, (size_t)len);
				break;
			case SESS_RING:
				client_ring(c, buf, (size_t)len, fd);
				break;
			case SESS_DESC:
				client_desc(d, c, buf, (size_t)len);
				break;
			case SESS_BYE:
				if ((size_t)len == sizeof(c->byemsg)) {
					memcpy(&c->byemsg, buf, sizeof(c->byemsg));
					c->bye = 1;
				}
				break;
			}
		}
		if (fd >= 0)
			close(fd); /* the mapping keeps the ring alive */
	}
}

unsigned sessd_step(struct sessd *d, int timeout_ms)
{
	struct pollfd pf[MAX_CLIENTS + 1];
	struct client *who[MAX_CLIENTS + 1];
	unsigned n = 0, work = 0;

	pf[n].fd = d->lfd;
	pf[n].events = POLLIN;
	who[n++] = NULL;
	for (struct client *c = d->clients; c && n <= MAX_CLIENTS; c = c->next)
		if (c->fd >= 0) {
			pf[n].fd = c->fd;
			pf[n].events = POLLIN;
			who[n++] = c;
		}
	if (poll(pf, n, timeout_ms) > 0) {
		for (unsigned i = 1; i < n; i++)
			if (pf[i].revents)
				client_read(d, who[i]);
		if (pf[0].revents & POLLIN) {
			for (int k = 0; k < 64; k++) {
				int fd = accept4(d->lfd, NULL, NULL,
						 SOCK_CLOEXEC | SOCK_NONBLOCK);
				if (fd < 0)
					break;
				struct client *c = calloc(1, sizeof(*c));
				if (!c || d->nlive >= MAX_CLIENTS) {
					free(c);
					close(fd);
					continue;
				}
				c->fd = fd;
				c->next = d->clients;
				d->clients = c;
				d->nlive++;
				client_read(d, c);
			}
		}
	}
	for (struct client *c = d->clients; c; c = c->next)
		if (c->cons)
			work += cons_poll(c->cons);
	return work;
}

void sessd_destroy(struct sessd *d, FILE *log, struct sessd_totals *t)
{
	memset(t, 0, sizeof(*t));
	if (!d)
		return;
	/* Messages already queued (the last BYEs) first. */
	for (struct client *c = d->clients; c; c = c->next)
		if (c->fd >= 0)
			client_read(d, c);
	for (struct client *c = d->clients; c; c = c->next) {
		/* Still connected: the process runs on; only its complete
		 * packets can be written (nothing of it may be flushed from
		 * here, ring.md §7). */
		client_close(d, c, 0);
	}
	while (d->clients) {
		struct client *c = d->clients;
		d->clients = c->next;
		if (c->registered) {
			uint64_t disc = c->bye ? 0 : c->ring_lost;
			if (c->bye)
				for (int k = 0; k < STRATA_LOST_NCAUSES; k++)
					disc += c->byemsg.lost[k];
			t->procs++;
			t->events += c->st.events_written;
			t->bytes += c->st.bytes_written;
			t->discarded += disc;
			t->lost_io += c->st.lost_io;
			t->salvaged += c->salv.salvaged;
			t->unsalvageable += c->st.packets_incomplete;
			t->crashed += !c->bye;
			t->unsent += c->bye ? c->byemsg.rings_unsent : 0;
			if (log)
				fprintf(log, "strata:   pid %u (%s): %llu events, "
					"%llu bytes, %llu discarded%s\n",
					c->pid, c->name,
					(unsigned long long)c->st.events_written,
					(unsigned long long)c->st.bytes_written,
					(unsigned long long)disc,
					c->bye ? "" : ", ended without goodbye "
						      "(killed, crashed or exec'd): "
						      "salvaged");
		}
		free(c->evs);
		free(c);
	}
	while (d->pool) {
		struct pool *p = d->pool;
		d->pool = p->next;
		free(p);
	}
	t->err = d->err;
	close(d->lfd);
	unlink(d->sock);
	rmdir(d->sdir);
	free(d);
}
