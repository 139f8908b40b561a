/* SPDX-License-Identifier: MIT */
/* strata relay's event loop: many senders at once, each writing one trace directory under DIR (docs/relay.md). */
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

#include <zstd.h>

#include "relay/proto.h"
#include "relay/relay.h"

#define MAX_FILES 4096u          /* open at once per session */
#define DETACHED_MS (10 * 60 * 1000) /* a session without sender, kept */
#define TX_MAX (64u << 10)
#define MARKER ".relay-session"

struct rfile {
	uint32_t id;
	int fd;
	char path[RELAY_MAX_PATH + 1];
};

struct rsession {
	struct rsession *next;
	char host[RELAY_MAX_NAME + 1], trace[RELAY_MAX_NAME + 1];
	uint8_t sid[RELAY_SID];
	int dirfd;
	struct rconn *conn;
	uint64_t applied;
	struct rfile *files;
	unsigned nfiles;
	int64_t detached_ms;
};

struct rconn {
	struct rconn *next, *prev;
	int fd;
	struct sockaddr_storage peer;
	socklen_t peerlen;
	char peer_s[64];
	int authed, closing;
	unsigned char nonce[RELAY_NONCE];
	unsigned char *rx;
	size_t rx_len, rx_cap;
	unsigned char *tx;
	size_t tx_len, tx_off;
	int want_out, pinged;
	uint64_t last_seq, acked;
	struct rsession *sess;
	int64_t accepted_ms, deadline_ms;
};

struct relay {
	struct relay_config cfg;
	unsigned char token[RELAY_TOKEN_MAX];
	int lfd, ep, outfd;
	unsigned port;
	struct rconn *conns; /* newest first */
	unsigned nconns;
	struct rsession *sessions;
	struct relay_stats st;
	unsigned logged_full, logged_unauth;
	ZSTD_DCtx *zd;      /* WRITEZ (one thread: one context, one buffer) */
	unsigned char *zbuf; /* RELAY_CHUNK bytes */
};

static int64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void rlog(struct relay *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void rlog(struct relay *r, const char *fmt, ...)
{
	va_list ap;

	if (!r->cfg.log)
		return;
	va_start(ap, fmt);
	fputs("strata relay: ", r->cfg.log);
	vfprintf(r->cfg.log, fmt, ap);
	fputc('\n', r->cfg.log);
	va_end(ap);
	fflush(r->cfg.log);
}

/* ---- files, beneath the session's directory ----------------------------- */

/* openat2 with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS: no path a sender
 * names can leave its trace directory, whatever is on disk
 * (docs/relay.md §4); relay_path_ok() has refused ".." already. */
static int open_beneath(int dirfd, const char *path, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW),
		.mode = (flags & O_CREAT) ? mode : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
			   RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	return fd < 0 ? -errno : (int)fd;
}

/* The directories above `path` (made 0700 where missing); the fd of the
 * last one and the file's name in it to *name. */
static int parent_dir(int dirfd, const char *path, const char **name)
{
	char buf[RELAY_MAX_PATH + 1];
	int fd = dup(dirfd);

	if (fd < 0)
		return -errno;
	snprintf(buf, sizeof(buf), "%s", path);
	char *p = buf, *slash;
	while ((slash = strchr(p, '/'))) {
		*slash = 0;
		if (mkdirat(fd, p, 0700) < 0 && errno != EEXIST) {
			int e = -errno;
			close(fd);
			return e;
		}
		int nfd = open_beneath(fd, p, O_RDONLY | O_DIRECTORY, 0);
		close(fd);
		if (nfd < 0)
			return nfd;
		fd = nfd;
		p = slash + 1;
	}
	*name = path + (p - buf);
	return fd;
}

static struct rfile *file_find(struct rsession *s, uint32_t id)
{
	for (unsigned i = 0; i < s->nfiles; i++)
		if (s->files[i].id == id)
			return &s->files[i];
	return NULL;
}

static void file_drop(struct rsession *s, struct rfile *f)
{
	close(f->fd);
	*f = s->files[--s->nfiles];
}

static void session_close_files(struct rsession *s)
{
	while (s->nfiles)
		file_drop(s, &s->files[0]);
}

static void session_free(struct relay *r, struct rsession *s)
{
	for (struct rsession **pp = &r->sessions; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	session_close_files(s);
	free(s->files);
	if (s->dirfd >= 0)
		close(s->dirfd);
	free(s);
}

/* ---- connections -------------------------------------------------------- */

static int tx_put(struct rconn *c, uint32_t type, const void *p, size_t n)
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

static void conn_flush(struct relay *r, struct rconn *c)
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

static void conn_free(struct relay *r, struct rconn *c)
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
static void conn_refuse(struct relay *r, struct rconn *c, int err,
			const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void conn_refuse(struct relay *r, struct rconn *c, int err,
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
		rlog(r, "%s%s%s%s: %s", c->peer_s, c->sess ? " (" : "",
	     c->sess ? c->sess->host : "", c->sess ? ")" : "", msg + 4);
	if (!tx_put(c, RELAY_ERROR, msg, 4 + (size_t)n))
		conn_flush(r, c);
	conn_free(r, c);
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
		conn_free(r, oldest_mine);
		r->st.evicted++;
		return 1;
	}
	if (r->nconns >= r->cfg.max_conns) {
		if (!oldest)
			return 0;
		conn_free(r, oldest);
		r->st.evicted++;
	}
	return 1;
}

static void do_accept(struct relay *r)
{
	for (int k = 0; k < 64; k++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(r->lfd, (struct sockaddr *)&ss, &sl,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				rlog(r, "accept: %s", strerror(errno));
			return;
		}
		if (!make_room(r, &ss)) {
			r->st.refused_full++;
			if (r->logged_full++ < 10)
				rlog(r, "connection refused: %u connections "
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
			conn_free(r, c);
			continue;
		}
		memcpy(ch + 4, c->nonce, RELAY_NONCE);
		tx_put(c, RELAY_CHALLENGE, ch, sizeof(ch));
		conn_flush(r, c);
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
	if (mkdirat(r->outfd, host, 0700) < 0 && errno != EEXIST)
		return -errno;
	hfd = open_beneath(r->outfd, host, O_RDONLY | O_DIRECTORY, 0);
	if (hfd < 0)
		return hfd;
	sid_hex(sid, hex);
	strcat(hex, "\n");
	if (!resume) {
		*why = "a trace of that name exists already";
		if (mkdirat(hfd, trace, 0700) < 0) {
			int e = -errno;
			close(hfd);
			return e;
		}
	}
	*why = "cannot open the trace directory";
	tfd = open_beneath(hfd, trace, O_RDONLY | O_DIRECTORY, 0);
	close(hfd);
	if (tfd < 0)
		return tfd;
	int mfd = open_beneath(tfd, MARKER, resume ? O_RDONLY : O_WRONLY | O_CREAT | O_EXCL, 0600);
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
		ok = write(mfd, hex, strlen(hex)) == (ssize_t)strlen(hex);
	}
	close(mfd);
	if (!ok) {
		close(tfd);
		return resume ? -ENOENT : -EIO;
	}
	return tfd;
}

/* A HELLO: 0 when c is authenticated, -1 when it was refused (freed). */
static int on_hello(struct relay *r, struct rconn *c, const unsigned char *p,
		    size_t n)
{
	unsigned char mac[RELAY_MAC];
	char host[RELAY_MAX_NAME + 1], trace[RELAY_MAX_NAME + 1];
	size_t off = RELAY_MAC;

	if (n < RELAY_MAC + 4 + RELAY_SID + 4 + 2)
		goto bad;
	relay_mac(r->token, r->cfg.token_len, c->nonce, p + RELAY_MAC,
		  n - RELAY_MAC, mac);
	if (!relay_mac_equal(mac, p)) {
		r->st.auth_failed++;
		conn_refuse(r, c, EACCES, "authentication failed (wrong token)");
		return -1;
	}
	uint32_t version = get32(p + off);
	const uint8_t *sid = p + off + 4;
	uint32_t flags = get32(p + off + 4 + RELAY_SID);
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
		conn_refuse(r, c, EPROTO, "protocol version %u, this relay "
			    "speaks %u", version, RELAY_VERSION);
		return -1;
	}
	if (!relay_name_ok(h, hn) || !relay_name_ok(t, tn)) {
		conn_refuse(r, c, EINVAL, "bad host or trace name");
		return -1;
	}
	memcpy(host, h, hn);
	host[hn] = 0;
	memcpy(trace, t, tn);
	trace[tn] = 0;

	struct rsession *s = session_find(r, host, trace);
	if (s && memcmp(s->sid, sid, RELAY_SID)) {
		r->st.name_busy++;
		conn_refuse(r, c, EBUSY, "%s/%s is being received from another "
			    "sender", host, trace);
		return -1;
	}
	if (s && s->conn) {
		/* the same sender again: its old connection is dead, though
		 * no FIN came yet (a cut cable, a proxy) */
		rlog(r, "%s/%s: %s replaces %s", host, trace, c->peer_s,
		     s->conn->peer_s);
		conn_free(r, s->conn);
	}
	if (!s) {
		const char *why;
		int resume = !!(flags & RELAY_HELLO_RESUME);
		int dfd = session_dir(r, host, trace, sid, resume, &why);
		if (dfd < 0) {
			r->st.name_busy += dfd == -EEXIST;
			conn_refuse(r, c, (uint32_t)-dfd, "%s/%s: %s: %s", host,
				    trace, why, strerror(-dfd));
			return -1;
		}
		s = calloc(1, sizeof(*s));
		if (!s) {
			close(dfd);
			conn_refuse(r, c, ENOMEM, "out of memory");
			return -1;
		}
		s->dirfd = dfd;
		memcpy(s->host, host, hn + 1);
		memcpy(s->trace, trace, tn + 1);
		memcpy(s->sid, sid, RELAY_SID);
		s->next = r->sessions;
		r->sessions = s;
		r->st.sessions++;
		rlog(r, "%s/%s: %s from %s", host, trace,
		     resume ? "resumed" : "new trace", c->peer_s);
	} else {
		rlog(r, "%s/%s: resumed from %s", host, trace, c->peer_s);
	}
	/* after auth: room for a whole frame */
	unsigned char *rx = realloc(c->rx, RELAY_HDR + RELAY_MAX_FRAME);
	if (!rx) {
		conn_refuse(r, c, ENOMEM, "out of memory");
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
		conn_refuse(r, c, ENOMEM, "out of memory");
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
	int ret = tx_put(c, RELAY_WELCOME, w, wl);
	free(w);
	if (ret) {
		conn_refuse(r, c, ENOBUFS, "too many open files to resume");
		return -1;
	}
	conn_flush(r, c);
	return 0;
bad:
	r->st.proto_errors++;
	conn_refuse(r, c, EPROTO, "malformed HELLO");
	return -1;
}

/* ---- data frames -------------------------------------------------------- */

static int write_all(int fd, const unsigned char *p, size_t n, uint64_t off)
{
	while (n) {
		ssize_t w = pwrite(fd, p, n, (off_t)off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -ENOSPC;
		p += w;
		n -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

static int op_create(struct rsession *s, const unsigned char *p, size_t n,
		     const char **why)
{
	*why = "malformed CREATE";
	if (n < 6)
		return -EPROTO;
	uint32_t id = get32(p);
	size_t pl = get16(p + 4);
	const char *path = (const char *)p + 6;
	if (6 + pl != n || id > RELAY_MAX_FILE_ID)
		return -EPROTO;
	*why = "refused path";
	if (!relay_path_ok(path, pl))
		return -EPERM;
	char name[RELAY_MAX_PATH + 1];
	memcpy(name, path, pl);
	name[pl] = 0;
	if (!strcmp(name, MARKER))
		return -EPERM;
	struct rfile *f = file_find(s, id);
	if (f) {
		/* a replay after a reconnect: the same file, or an error */
		*why = "file id in use";
		return strcmp(f->path, name) ? -EEXIST : 0;
	}
	*why = "too many open files";
	if (s->nfiles >= MAX_FILES)
		return -EMFILE;
	const char *leaf;
	*why = "cannot create directory";
	int dfd = parent_dir(s->dirfd, name, &leaf);
	if (dfd < 0)
		return dfd;
	/* no O_TRUNC: a replayed CREATE must not lose what was written */
	int fd = open_beneath(dfd, leaf, O_WRONLY | O_CREAT, 0600);
	close(dfd);
	*why = "cannot create file";
	if (fd < 0)
		return fd;
	if (!(s->nfiles & (s->nfiles + 1))) { /* grow at 0, 1, 3, 7 ... */
		struct rfile *nf = realloc(s->files, (size_t)(2 * s->nfiles + 1) * sizeof(*nf));
		if (!nf) {
			close(fd);
			return -ENOMEM;
		}
		s->files = nf;
	}
	f = &s->files[s->nfiles++];
	f->id = id;
	f->fd = fd;
	memcpy(f->path, name, pl + 1);
	return 0;
}

static int op_write(struct rsession *s, const unsigned char *p, size_t n,
		    const char **why)
{
	*why = "malformed WRITE";
	if (n < 12)
		return -EPROTO;
	struct rfile *f = file_find(s, get32(p));
	uint64_t off = get64(p + 4);
	*why = "WRITE to a file not created";
	if (!f)
		return -EBADF;
	*why = "offset out of bounds";
	if (off > RELAY_MAX_OFFSET || n - 12 > RELAY_MAX_OFFSET - off)
		return -EFBIG;
	*why = "cannot write";
	return write_all(f->fd, p + 12, n - 12, off);
}

/* A compressed WRITE: the frame must say its size, which must be the one
 * announced; the output buffer (RELAY_CHUNK) bounds what any frame can
 * make the relay write, whatever it claims. */
static int op_writez(struct relay *r, struct rsession *s, const unsigned char *p,
		     size_t n, const char **why)
{
	*why = "malformed WRITEZ";
	if (n < 16)
		return -EPROTO;
	uint32_t raw = get32(p + 12);
	if (raw > RELAY_CHUNK)
		return -EPROTO;
	struct rfile *f = file_find(s, get32(p));
	uint64_t off = get64(p + 4);
	*why = "WRITE to a file not created";
	if (!f)
		return -EBADF;
	*why = "offset out of bounds";
	if (off > RELAY_MAX_OFFSET || raw > RELAY_MAX_OFFSET - off)
		return -EFBIG;
	*why = "out of memory";
	if (!r->zd && !(r->zd = ZSTD_createDCtx()))
		return -ENOMEM;
	if (!r->zbuf && !(r->zbuf = malloc(RELAY_CHUNK)))
		return -ENOMEM;
	*why = "bad zstd frame";
	unsigned long long want = ZSTD_getFrameContentSize(p + 16, n - 16);
	if (want != raw)
		return -EBADMSG;
	size_t got = ZSTD_decompressDCtx(r->zd, r->zbuf, RELAY_CHUNK, p + 16, n - 16);
	if (ZSTD_isError(got) || got != raw)
		return -EBADMSG;
	*why = "cannot write";
	return write_all(f->fd, r->zbuf, raw, off);
}

static int op_close(struct rsession *s, const unsigned char *p, size_t n,
		    const char **why)
{
	*why = "malformed CLOSE";
	if (n < 18)
		return -EPROTO;
	uint32_t id = get32(p), flags = get32(p + 12);
	uint64_t size = get64(p + 4);
	size_t fl = get16(p + 16);
	const char *final = (const char *)p + 18;
	if (18 + fl != n)
		return -EPROTO;
	struct rfile *f = file_find(s, id);
	*why = "CLOSE of a file not created";
	if (!f)
		return -EBADF;
	*why = "refused path";
	if (fl && !relay_path_ok(final, fl))
		return -EPERM;
	char fin[RELAY_MAX_PATH + 1];
	memcpy(fin, final, fl);
	fin[fl] = 0;
	int ret = 0;
	if (flags & RELAY_CLOSE_UNLINK) {
		*why = "cannot remove";
		if (unlinkat(s->dirfd, f->path, 0) < 0 && errno != ENOENT)
			ret = -errno;
	} else {
		*why = "cannot set the size";
		if (size != RELAY_SIZE_KEEP &&
		    (size > RELAY_MAX_OFFSET || ftruncate(f->fd, (off_t)size) < 0))
			ret = size > RELAY_MAX_OFFSET ? -EFBIG : -errno;
		*why = "cannot rename";
		/* the parents exist (made for the file) or are made */
		const char *leaf;
		if (!ret && fl && !strcmp(fin, MARKER))
			ret = -EPERM;
		if (!ret && fl) {
			int dfd = parent_dir(s->dirfd, fin, &leaf);
			if (dfd < 0)
				ret = dfd;
			else
				close(dfd);
		}
		/* RENAME_NOREPLACE is not asked: a replay renames over
		 * its own earlier result */
		if (!ret && fl && renameat(s->dirfd, f->path, s->dirfd, fin) < 0 &&
		    errno != ENOENT)
			ret = -errno;
	}
	file_drop(s, f);
	return ret;
}

static int op_metadata(struct rsession *s, const unsigned char *p, size_t n,
		       const char **why)
{
	char path[RELAY_MAX_PATH + 1], tmp[RELAY_MAX_PATH + 16];

	*why = "malformed METADATA";
	if (n < 2)
		return -EPROTO;
	size_t pl = get16(p);
	if (2 + pl > n)
		return -EPROTO;
	*why = "refused path";
	if (!relay_path_ok((const char *)p + 2, pl))
		return -EPERM;
	memcpy(path, p + 2, pl);
	path[pl] = 0;
	const char *slash = strrchr(path, '/');
	const char *leaf = slash ? slash + 1 : path;
	if (strcmp(leaf, "metadata"))
		return -EPERM;
	snprintf(tmp, sizeof(tmp), "%.*s.metadata.tmp", (int)(leaf - path), path);
	const char *tleaf;
	*why = "cannot create directory";
	int dfd = parent_dir(s->dirfd, tmp, &tleaf);
	if (dfd < 0)
		return dfd;
	*why = "cannot write the metadata";
	int fd = open_beneath(dfd, tleaf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int ret = fd < 0 ? fd : write_all(fd, p + 2 + pl, n - 2 - pl, 0);
	if (fd >= 0)
		close(fd);
	if (!ret && renameat(dfd, tleaf, dfd, "metadata") < 0)
		ret = -errno;
	close(dfd);
	return ret;
}

/* One whole frame of an authenticated connection. 0, or the connection
 * was closed (-1). */
static int on_frame(struct relay *r, struct rconn *c, uint32_t type,
		    const unsigned char *p, size_t n)
{
	struct rsession *s = c->sess;
	const char *why = "unexpected frame";
	int ret;

	if (type == RELAY_PING) {
		c->pinged = 1; /* answered by an ACK: the sender sees us alive */
		return 0;
	}
	if (!s) {
		conn_refuse(r, c, EPROTO, "frame after END");
		return -1;
	}
	if (type < RELAY_CREATE || type > RELAY_WRITEZ || n < 8) {
		r->st.proto_errors++;
		conn_refuse(r, c, EPROTO, "unexpected frame type %u", type);
		return -1;
	}
	uint64_t seq = get64(p);
	if (seq == 0 && type == RELAY_CREATE) {
		/* unsequenced: a sender reopening its files after this relay
		 * was restarted (docs/relay.md §3); idempotent */
		ret = op_create(s, p + 8, n - 8, &why);
		if (ret)
			conn_refuse(r, c, (uint32_t)-ret, "%s/%s: %s: %s", s->host,
				    s->trace, why, strerror(-ret));
		return ret ? -1 : 0;
	}
	if (seq <= c->last_seq) {
		r->st.proto_errors++;
		conn_refuse(r, c, EPROTO, "frame %llu after %llu: out of order",
			    (unsigned long long)seq, (unsigned long long)c->last_seq);
		return -1;
	}
	p += 8;
	n -= 8;
	switch (type) {
	case RELAY_CREATE: ret = op_create(s, p, n, &why); break;
	case RELAY_WRITE: ret = op_write(s, p, n, &why); break;
	case RELAY_CLOSE: ret = op_close(s, p, n, &why); break;
	case RELAY_METADATA: ret = op_metadata(s, p, n, &why); break;
	case RELAY_WRITEZ: ret = op_writez(r, s, p, n, &why); break;
	default: /* RELAY_END */
		session_close_files(s);
		unlinkat(s->dirfd, MARKER, 0);
		r->st.ended++;
		rlog(r, "%s/%s: complete", s->host, s->trace);
		ret = 0;
		break;
	}
	if (ret) {
		if (ret == -EPROTO)
			r->st.proto_errors++;
		conn_refuse(r, c, (uint32_t)-ret, "%s/%s: %s: %s", s->host,
			    s->trace, why, strerror(-ret));
		return -1;
	}
	c->last_seq = s->applied = seq;
	r->st.bytes += n;
	if (type == RELAY_END) {
		/* the name is free again once the sender has its ACK */
		unsigned char a[8];
		put64(a, seq);
		tx_put(c, RELAY_ACK, a, 8);
		c->acked = seq;
		conn_flush(r, c);
		c->sess = NULL;
		session_free(r, s);
	}
	return 0;
}

static void on_readable(struct relay *r, struct rconn *c)
{
	for (int rounds = 0; rounds < 8; rounds++) {
		ssize_t got = recv(c->fd, c->rx + c->rx_len, c->rx_cap - c->rx_len,
				   MSG_DONTWAIT);
		if (got == 0) {
			if (c->authed && c->sess)
				rlog(r, "%s/%s: %s closed the connection",
				     c->sess->host, c->sess->trace, c->peer_s);
			conn_free(r, c);
			return;
		}
		if (got < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break;
			conn_free(r, c);
			return;
		}
		c->rx_len += (size_t)got;
		size_t pos = 0;
		while (c->rx_len - pos >= RELAY_HDR) {
			uint32_t type = get32(c->rx + pos);
			uint32_t len = get32(c->rx + pos + 4);
			if (!c->authed &&
			    (type != RELAY_HELLO || len > RELAY_MAX_PREAUTH)) {
				r->st.proto_errors++;
				conn_refuse(r, c, EACCES, "not authenticated: "
					    "frame type %u, %u bytes", type, len);
				return;
			}
			if (len > RELAY_MAX_FRAME) {
				r->st.proto_errors++;
				conn_refuse(r, c, EPROTO, "frame of %u bytes "
					    "(at most %u)", len, RELAY_MAX_FRAME);
				return;
			}
			if (c->rx_len - pos < RELAY_HDR + (size_t)len)
				break;
			const unsigned char *p = c->rx + pos + RELAY_HDR;
			pos += RELAY_HDR + len;
			if (!c->authed) {
				if (on_hello(r, c, p, len))
					return; /* refused: c is gone */
			} else if (on_frame(r, c, type, p, len)) {
				return;
			}
			c->deadline_ms = now_ms() + r->cfg.idle_ms;
		}
		if (pos) {
			memmove(c->rx, c->rx + pos, c->rx_len - pos);
			c->rx_len -= pos;
		}
		if ((size_t)got < 4096)
			break;
	}
	if (c->authed && (c->last_seq != c->acked || c->pinged)) {
		unsigned char a[8];
		put64(a, c->last_seq);
		if (!tx_put(c, RELAY_ACK, a, 8)) {
			c->acked = c->last_seq;
			c->pinged = 0;
		}
		conn_flush(r, c);
	}
}

/* ---- the loop ----------------------------------------------------------- */

static void expire(struct relay *r)
{
	int64_t now = now_ms();

	for (struct rconn *c = r->conns, *next; c; c = next) {
		next = c->next;
		if (now < c->deadline_ms)
			continue;
		r->st.timeouts++;
		conn_refuse(r, c, ETIMEDOUT, c->authed ? "idle for %u ms: closed"
			    : "no valid HELLO within %u ms: closed",
			    c->authed ? r->cfg.idle_ms : r->cfg.auth_ms);
	}
	for (struct rsession *s = r->sessions, *next; s; s = next) {
		next = s->next;
		if (!s->conn && now - s->detached_ms > DETACHED_MS) {
			rlog(r, "%s/%s: no sender for %d s: files closed "
			     "(it may resume)", s->host, s->trace,
			     DETACHED_MS / 1000);
			session_free(r, s);
		}
	}
}

static int is_loopback(const struct addrinfo *ai)
{
	if (ai->ai_family == AF_INET)
		return (ntohl(((struct sockaddr_in *)ai->ai_addr)->sin_addr.s_addr) >> 24) == 127;
	if (ai->ai_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr);
	return 0;
}

int relay_create(const struct relay_config *cfg, struct relay **out,
		 int *nonlocal, const char **why)
{
	char host[256], port[16];
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
	struct addrinfo *ai = NULL;
	struct relay *r;
	int ret;

	*why = "--listen wants ADDR:PORT";
	if (relay_split_addr(cfg->listen, host, sizeof(host), port, sizeof(port)))
		return -EINVAL;
	*why = "the token";
	if (cfg->token_len > RELAY_TOKEN_MAX)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->cfg = *cfg;
	memcpy(r->token, cfg->token, cfg->token_len);
	r->lfd = r->ep = r->outfd = -1;
	*why = "cannot create the output directory";
	if (mkdir(cfg->out_dir, 0700) < 0 && errno != EEXIST) {
		ret = -errno;
		goto fail;
	}
	r->outfd = open(cfg->out_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (r->outfd < 0) {
		ret = -errno;
		goto fail;
	}
	*why = "cannot resolve the address";
	if ((ret = getaddrinfo(host, port, &hints, &ai))) {
		ret = ret == EAI_SYSTEM ? -errno : -EADDRNOTAVAIL;
		ai = NULL;
		goto fail;
	}
	*nonlocal = !is_loopback(ai);
	*why = "cannot listen";
	r->lfd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	if (r->lfd < 0 ||
	    setsockopt(r->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(r->lfd, ai->ai_addr, ai->ai_addrlen) < 0 ||
	    listen(r->lfd, 512) < 0) {
		ret = -errno;
		goto fail;
	}
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	if (getsockname(r->lfd, (struct sockaddr *)&ss, &sl) == 0)
		r->port = ntohs(ss.ss_family == AF_INET6
				? ((struct sockaddr_in6 *)&ss)->sin6_port
				: ((struct sockaddr_in *)&ss)->sin_port);
	r->ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
	if (r->ep < 0 || epoll_ctl(r->ep, EPOLL_CTL_ADD, r->lfd, &ev) < 0) {
		ret = -errno;
		goto fail;
	}
	freeaddrinfo(ai);
	*out = r;
	return 0;
fail:
	if (ai)
		freeaddrinfo(ai);
	relay_destroy(r, NULL);
	return ret;
}

unsigned relay_port(const struct relay *r)
{
	return r->port;
}

int relay_run(struct relay *r, volatile sig_atomic_t *stop)
{
	struct epoll_event evs[64];

	while (!*stop) {
		int n = epoll_wait(r->ep, evs, 64, 250);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (int i = 0; i < n; i++) {
			struct rconn *c = evs[i].data.ptr;
			if (!c) {
				do_accept(r);
				continue;
			}
			/* c may have been freed by an earlier event of
			 * this batch (evicted, replaced): look it up */
			struct rconn *k = r->conns;
			while (k && k != c)
				k = k->next;
			if (!k)
				continue;
			if (evs[i].events & EPOLLOUT)
				conn_flush(r, c);
			if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
				on_readable(r, c);
		}
		expire(r);
	}
	return 0;
}

void relay_destroy(struct relay *r, struct relay_stats *st)
{
	if (!r)
		return;
	while (r->conns)
		conn_free(r, r->conns);
	while (r->sessions)
		session_free(r, r->sessions);
	if (st)
		*st = r->st;
	if (r->lfd >= 0)
		close(r->lfd);
	if (r->ep >= 0)
		close(r->ep);
	if (r->outfd >= 0)
		close(r->outfd);
	ZSTD_freeDCtx(r->zd);
	free(r->zbuf);
	free(r);
}
