/* SPDX-License-Identifier: MIT */
/* strata relay's connections: accepting, sending, refusing, and the HELLO that authenticates a sender and gives it its session (docs/relay.md §1, §3). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "relay/server_int.h"

/* ---- connections -------------------------------------------------------- */

int srv_tx_put(struct rconn *c, uint32_t type, const void *p, size_t n)
{
	if (c->tx_len + RELAY_HDR + n > TX_MAX)
		return -ENOBUFS;
	if (!c->tx) {
		c->tx = malloc(TX_MAX);
		if (!c->tx)
			return -ENOMEM;
	}
	put32(c->tx + c->tx_len, type);
	put32(c->tx + c->tx_len + 4, (uint32_t)n);
	if (n)
		memcpy(c->tx + c->tx_len + RELAY_HDR, p, n);
	c->tx_len += RELAY_HDR + n;
	return 0;
}

static void conn_watch(struct relay *r, struct rconn *c)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
	int out = c->tx_off < c->tx_len;

	if (out == c->want_out)
		return;
	if (out)
		ev.events |= EPOLLOUT;
	c->want_out = out;
	epoll_ctl(r->ep, EPOLL_CTL_MOD, c->fd, &ev);
}

void srv_conn_flush(struct relay *r, struct rconn *c)
{
	while (c->tx_off < c->tx_len) {
		ssize_t n = send(c->fd, c->tx + c->tx_off, c->tx_len - c->tx_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				c->tx_off = c->tx_len; /* the read side will see it */
			break;
		}
		c->tx_off += (size_t)n;
	}
	if (c->tx_off == c->tx_len)
		c->tx_off = c->tx_len = 0;
	conn_watch(r, c);
}

void srv_conn_free(struct relay *r, struct rconn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		r->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	r->nconns--;
	epoll_ctl(r->ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	if (c->sess && c->sess->conn == c) {
		c->sess->conn = NULL;
		c->sess->detached_ms = now_ms();
	}
	free(c->rx);
	free(c->tx);
	free(c);
}

/* Say why (one ERROR frame, best effort) and close. */
void srv_conn_refuse(struct relay *r, struct rconn *c, int err,
		     const char *fmt, ...)
{
	unsigned char msg[300];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf((char *)msg + 4, sizeof(msg) - 4, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if (n > (int)sizeof(msg) - 5)
		n = (int)sizeof(msg) - 5;
	put32(msg, (uint32_t)err);
	if (c->authed || r->logged_unauth++ < 20)
		srv_log(r, "%s%s%s%s: %s", c->peer_s, c->sess ? " (" : "",
		c->sess ? c->sess->host : "", c->sess ? ")" : "", msg + 4);
	if (!srv_tx_put(c, RELAY_ERROR, msg, 4 + (size_t)n))
		srv_conn_flush(r, c);
	srv_conn_free(r, c);
}

static int same_addr(const struct sockaddr_storage *a,
		     const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return 0;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
	return 0;
}

/* A slot for a new connection from `peer`: at a limit, the oldest
 * connection that has not authenticated yet (of that peer, for the
 * per-peer limit) makes room, so that a flood of idle connections
 * cannot lock senders with the token out. 1: room; 0: refuse. */
static int make_room(struct relay *r, const struct sockaddr_storage *peer)
{
	unsigned mine = 0;
	struct rconn *oldest = NULL, *oldest_mine = NULL;

	for (struct rconn *c = r->conns; c; c = c->next) {
		int m = same_addr(&c->peer, peer);
		mine += m;
		if (!c->authed) {
			oldest = c; /* the list is newest first */
			if (m)
				oldest_mine = c;
		}
	}
	if (mine >= r->cfg.max_per_peer) {
		if (!oldest_mine)
			return 0;
		srv_conn_free(r, oldest_mine);
		r->st.evicted++;
		return 1;
	}
	if (r->nconns >= r->cfg.max_conns) {
		if (!oldest)
			return 0;
		srv_conn_free(r, oldest);
		r->st.evicted++;
	}
	return 1;
}

void srv_do_accept(struct relay *r)
{
	for (int k = 0; k < 64; k++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(r->lfd, (struct sockaddr *)&ss, &sl,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				srv_log(r, "accept: %s", strerror(errno));
			return;
		}
		if (!make_room(r, &ss)) {
			r->st.refused_full++;
			if (r->logged_full++ < 10)
				srv_log(r, "connection refused: %u connections "
					"(--max-conns, --max-per-peer)", r->nconns);
			close(fd);
			continue;
		}
		struct rconn *c = calloc(1, sizeof(*c));
		if (c)
			c->rx = malloc(RELAY_HDR + RELAY_MAX_PREAUTH);
		if (!c || !c->rx) {
			if (c)
				free(c);
			close(fd);
			continue;
		}
		c->fd = fd;
		c->peer = ss;
		c->peerlen = sl;
		c->rx_cap = RELAY_HDR + RELAY_MAX_PREAUTH;
		char h[INET6_ADDRSTRLEN] = "?";
		unsigned port = 0;
		if (ss.ss_family == AF_INET) {
			inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, h, sizeof(h));
			port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
		} else if (ss.ss_family == AF_INET6) {
			inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, h, sizeof(h));
			port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
		}
		snprintf(c->peer_s, sizeof(c->peer_s), "%s:%u", h, port);
		c->accepted_ms = now_ms();
		c->deadline_ms = c->accepted_ms + r->cfg.auth_ms;
		struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
		if (epoll_ctl(r->ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
			free(c->rx);
			free(c);
			close(fd);
			continue;
		}
		c->next = r->conns;
		if (r->conns)
			r->conns->prev = c;
		r->conns = c;
		r->nconns++;
		r->st.accepted++;
		unsigned char ch[4 + RELAY_NONCE];
		put32(ch, RELAY_VERSION);
		if (relay_random(c->nonce, RELAY_NONCE)) {
			srv_conn_free(r, c);
			continue;
		}
		memcpy(ch + 4, c->nonce, RELAY_NONCE);
		srv_tx_put(c, RELAY_CHALLENGE, ch, sizeof(ch));
		srv_conn_flush(r, c);
	}
}

/* ---- sessions ----------------------------------------------------------- */

static struct rsession *session_find(struct relay *r, const char *host,
				     const char *trace)
{
	for (struct rsession *s = r->sessions; s; s = s->next)
		if (!strcmp(s->host, host) && !strcmp(s->trace, trace))
			return s;
	return NULL;
}

static void sid_hex(const uint8_t *sid, char *out)
{
	for (unsigned i = 0; i < RELAY_SID; i++)
		sprintf(out + 2 * i, "%02x", sid[i]);
}

/* DIR/host/trace: made for a new session (it must not exist), or opened
 * for one that resumes (its marker must name the same session). */
static int session_dir(struct relay *r, const char *host, const char *trace,
		       const uint8_t *sid, int resume, const char **why)
{
	char hex[2 * RELAY_SID + 2], got[2 * RELAY_SID + 2];
	int hfd, tfd;

	*why = "cannot create the host directory";
	int made = mkdirat(r->outfd, host, 0700) == 0;
	if (!made && errno != EEXIST)
		return -errno;
	int err = made ? srv_sync_dir(r->cfg.fsync, r->outfd) : 0;
	if (err)
		return err;
	hfd = srv_open_beneath(r->outfd, host, O_RDONLY | O_DIRECTORY, 0);
	if (hfd < 0)
		return hfd;
	sid_hex(sid, hex);
	strcat(hex, "\n");
	if (!resume) {
		*why = "a trace of that name exists already";
		int e = mkdirat(hfd, trace, 0700) < 0 ? -errno : 0;
		if (!e)
			e = srv_sync_dir(r->cfg.fsync, hfd);
		if (e) {
			close(hfd);
			return e;
		}
	}
	*why = "cannot open the trace directory";
	tfd = srv_open_beneath(hfd, trace, O_RDONLY | O_DIRECTORY, 0);
	close(hfd);
	if (tfd < 0)
		return tfd;
	int mfd = srv_open_beneath(tfd, MARKER, resume ? O_RDONLY : O_WRONLY | O_CREAT | O_EXCL, 0600);
	*why = resume ? "no session to resume there" : "cannot write the session marker";
	if (mfd < 0) {
		close(tfd);
		return resume ? -ENOENT : mfd;
	}
	int ok;
	if (resume) {
		ssize_t n = read(mfd, got, sizeof(got) - 1);
		ok = n == (ssize_t)strlen(hex) && !memcmp(got, hex, (size_t)n);
	} else {
		/* --fsync: the marker too, which a resume after a power
		 * loss needs (docs/relay.md §3) */
		ok = write(mfd, hex, strlen(hex)) == (ssize_t)strlen(hex) &&
		     !srv_sync_dir(r->cfg.fsync, mfd) &&
		     !srv_sync_dir(r->cfg.fsync, tfd);
	}
	close(mfd);
	if (!ok) {
		close(tfd);
		return resume ? -ENOENT : -EIO;
	}
	return tfd;
}

/* What a HELLO says (docs/relay.md §3), authenticated and checked. */
struct hello {
	const uint8_t *sid;
	uint32_t flags;
	size_t hn, tn;
	char host[RELAY_MAX_NAME + 1], trace[RELAY_MAX_NAME + 1];
};

/* Authenticate a HELLO and read it into *hl. 0, or -1 when c was refused
 * (freed). */
static int hello_parse(struct relay *r, struct rconn *c, const unsigned char *p,
		       size_t n, struct hello *hl)
{
	unsigned char mac[RELAY_MAC];
	size_t off = RELAY_MAC;

	if (n < RELAY_MAC + 4 + RELAY_SID + 4 + 2)
		goto bad;
	relay_mac(r->token, r->cfg.token_len, c->nonce, p + RELAY_MAC,
		  n - RELAY_MAC, mac);
	if (!relay_mac_equal(mac, p)) {
		r->st.auth_failed++;
		srv_conn_refuse(r, c, EACCES, "authentication failed (wrong token)");
		return -1;
	}
	uint32_t version = get32(p + off);
	hl->sid = p + off + 4;
	hl->flags = get32(p + off + 4 + RELAY_SID);
	off += 4 + RELAY_SID + 4;
	size_t hn = get16(p + off);
	off += 2;
	if (off + hn + 2 > n)
		goto bad;
	const char *h = (const char *)p + off;
	off += hn;
	size_t tn = get16(p + off);
	off += 2;
	if (off + tn != n)
		goto bad;
	const char *t = (const char *)p + off;
	if (version != RELAY_VERSION) {
		srv_conn_refuse(r, c, EPROTO, "protocol version %u, this relay "
				"speaks %u", version, RELAY_VERSION);
		return -1;
	}
	if (!relay_name_ok(h, hn) || !relay_name_ok(t, tn)) {
		srv_conn_refuse(r, c, EINVAL, "bad host or trace name");
		return -1;
	}
	memcpy(hl->host, h, hn);
	hl->host[hn] = 0;
	memcpy(hl->trace, t, tn);
	hl->trace[tn] = 0;
	hl->hn = hn;
	hl->tn = tn;
	return 0;
bad:
	r->st.proto_errors++;
	srv_conn_refuse(r, c, EPROTO, "malformed HELLO");
	return -1;
}

/* The session a HELLO names: the one it resumes (a connection of the
 * same sender still there is dropped) or a new one. NULL when c was
 * refused (freed). */
static struct rsession *hello_session(struct relay *r, struct rconn *c,
				      const struct hello *hl)
{
	const char *host = hl->host, *trace = hl->trace;
	const uint8_t *sid = hl->sid;
	struct rsession *s = session_find(r, host, trace);

	if (s && memcmp(s->sid, sid, RELAY_SID)) {
		r->st.name_busy++;
		srv_conn_refuse(r, c, EBUSY, "%s/%s is being received from another "
				"sender", host, trace);
		return NULL;
	}
	if (s && s->conn) {
		/* the same sender again: its old connection is dead, though
		 * no FIN came yet (a cut cable, a proxy) */
		srv_log(r, "%s/%s: %s replaces %s", host, trace, c->peer_s,
			s->conn->peer_s);
		srv_conn_free(r, s->conn);
	}
	if (!s) {
		const char *why;
		int resume = !!(hl->flags & RELAY_HELLO_RESUME);
		int dfd = session_dir(r, host, trace, sid, resume, &why);
		if (dfd < 0) {
			r->st.name_busy += dfd == -EEXIST;
			srv_conn_refuse(r, c, (uint32_t)-dfd, "%s/%s: %s: %s", host,
					trace, why, strerror(-dfd));
			return NULL;
		}
		s = calloc(1, sizeof(*s));
		if (!s) {
			close(dfd);
			srv_conn_refuse(r, c, ENOMEM, "out of memory");
			return NULL;
		}
		s->dirfd = dfd;
		s->sync = r->cfg.fsync;
		memcpy(s->host, host, hl->hn + 1);
		memcpy(s->trace, trace, hl->tn + 1);
		memcpy(s->sid, sid, RELAY_SID);
		s->next = r->sessions;
		r->sessions = s;
		r->st.sessions++;
		srv_log(r, "%s/%s: %s from %s", host, trace,
			resume ? "resumed" : "new trace", c->peer_s);
	} else {
		srv_log(r, "%s/%s: resumed from %s", host, trace, c->peer_s);
	}
	return s;
}

/* c becomes s's connection, and WELCOME tells the sender what s holds.
 * 0, or -1 when c was refused (freed). */
static int hello_welcome(struct relay *r, struct rconn *c, struct rsession *s)
{
	/* after auth: room for a whole frame */
	unsigned char *rx = realloc(c->rx, RELAY_HDR + RELAY_MAX_FRAME);
	if (!rx) {
		srv_conn_refuse(r, c, ENOMEM, "out of memory");
		return -1;
	}
	c->rx = rx;
	c->rx_cap = RELAY_HDR + RELAY_MAX_FRAME;
	c->authed = 1;
	c->sess = s;
	s->conn = c;
	c->last_seq = s->applied;
	c->acked = s->applied;

	/* WELCOME: what this session holds, so that the sender resends
	 * only what is missing (docs/relay.md §3) */
	size_t wl = 12 + (size_t)s->nfiles * 12;
	unsigned char *w = malloc(wl);
	if (!w) {
		srv_conn_refuse(r, c, ENOMEM, "out of memory");
		return -1;
	}
	put64(w, s->applied);
	put32(w + 8, s->nfiles);
	for (unsigned i = 0; i < s->nfiles; i++) {
		struct stat st;
		uint64_t size = fstat(s->files[i].fd, &st) ? 0 : (uint64_t)st.st_size;
		put32(w + 12 + 12 * i, s->files[i].id);
		put64(w + 16 + 12 * i, size);
	}
	int ret = srv_tx_put(c, RELAY_WELCOME, w, wl);
	free(w);
	if (ret) {
		srv_conn_refuse(r, c, ENOBUFS, "too many open files to resume");
		return -1;
	}
	srv_conn_flush(r, c);
	return 0;
}

/* A HELLO: 0 when c is authenticated, -1 when it was refused (freed). */
int srv_on_hello(struct relay *r, struct rconn *c, const unsigned char *p,
		 size_t n)
{
	struct hello hl;
	struct rsession *s;

	if (hello_parse(r, c, p, n, &hl))
		return -1;
	if (!(s = hello_session(r, c, &hl)))
		return -1;
	if (hello_welcome(r, c, s))
		return -1;
	c->tsync = !!(hl.flags & RELAY_HELLO_TSYNC);
	srv_clock_start(c);
	return 0;
}
