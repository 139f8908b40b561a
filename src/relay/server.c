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

#include "relay/server_int.h"

void srv_log(struct relay *r, const char *fmt, ...)
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
	if (type == RELAY_TSYNC_REPLY) {
		ret = srv_on_tsync_reply(r, c, p, n);
		if (ret) {
			r->st.proto_errors++;
			srv_conn_refuse(r, c, EPROTO, "bad TSYNC_REPLY");
		}
		return ret ? -1 : 0;
	}
	if (!s) {
		srv_conn_refuse(r, c, EPROTO, "frame after END");
		return -1;
	}
	if (type < RELAY_CREATE || type > RELAY_WRITEZ || n < 8) {
		r->st.proto_errors++;
		srv_conn_refuse(r, c, EPROTO, "unexpected frame type %u", type);
		return -1;
	}
	uint64_t seq = get64(p);
	if (seq == 0 && type == RELAY_CREATE) {
		/* unsequenced: a sender reopening its files after this relay
		 * was restarted (docs/relay.md §3); idempotent */
		ret = srv_op_create(s, p + 8, n - 8, &why);
		if (ret)
			srv_conn_refuse(r, c, (uint32_t)-ret, "%s/%s: %s: %s", s->host,
					s->trace, why, strerror(-ret));
		return ret ? -1 : 0;
	}
	if (seq <= c->last_seq) {
		r->st.proto_errors++;
		srv_conn_refuse(r, c, EPROTO, "frame %llu after %llu: out of order",
				(unsigned long long)seq, (unsigned long long)c->last_seq);
		return -1;
	}
	p += 8;
	n -= 8;
	switch (type) {
	case RELAY_CREATE: ret = srv_op_create(s, p, n, &why); break;
	case RELAY_WRITE: ret = srv_op_write(s, p, n, &why); break;
	case RELAY_CLOSE: ret = srv_op_close(s, p, n, &why); break;
	case RELAY_METADATA: ret = srv_op_metadata(s, p, n, &why); break;
	case RELAY_WRITEZ: ret = srv_op_writez(r, s, p, n, &why); break;
	default: /* RELAY_END */
		srv_clock_flush(r, s);
		ret = srv_session_sync(s, &why);
		if (ret)
			break;
		srv_session_close_files(s);
		unlinkat(s->dirfd, MARKER, 0);
		srv_sync_dir(s->sync, s->dirfd); /* at worst, resumable */
		r->st.ended++;
		srv_log(r, "%s/%s: complete", s->host, s->trace);
		break;
	}
	if (ret) {
		if (ret == -EPROTO)
			r->st.proto_errors++;
		srv_conn_refuse(r, c, (uint32_t)-ret, "%s/%s: %s: %s", s->host,
				s->trace, why, strerror(-ret));
		return -1;
	}
	c->last_seq = s->applied = seq;
	r->st.bytes += n;
	if (type == RELAY_END) {
		/* the name is free again once the sender has its ACK */
		unsigned char a[8];
		put64(a, seq);
		srv_tx_put(c, RELAY_ACK, a, 8);
		c->acked = seq;
		srv_conn_flush(r, c);
		c->sess = NULL;
		srv_session_free(r, s);
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
				srv_log(r, "%s/%s: %s closed the connection",
					c->sess->host, c->sess->trace, c->peer_s);
			srv_conn_free(r, c);
			return;
		}
		if (got < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break;
			srv_conn_free(r, c);
			return;
		}
		c->rx_len += (size_t)got;
		c->rx_ns = relay_mono_ns(); /* t4 of a TSYNC_REPLY in it */
		size_t pos = 0;
		while (c->rx_len - pos >= RELAY_HDR) {
			uint32_t type = get32(c->rx + pos);
			uint32_t len = get32(c->rx + pos + 4);
			if (!c->authed &&
			    (type != RELAY_HELLO || len > RELAY_MAX_PREAUTH)) {
				r->st.proto_errors++;
				srv_conn_refuse(r, c, EACCES, "not authenticated: "
						"frame type %u, %u bytes", type, len);
				return;
			}
			if (len > RELAY_MAX_FRAME) {
				r->st.proto_errors++;
				srv_conn_refuse(r, c, EPROTO, "frame of %u bytes "
						"(at most %u)", len, RELAY_MAX_FRAME);
				return;
			}
			if (c->rx_len - pos < RELAY_HDR + (size_t)len)
				break;
			const unsigned char *p = c->rx + pos + RELAY_HDR;
			pos += RELAY_HDR + len;
			if (!c->authed) {
				if (srv_on_hello(r, c, p, len))
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
		const char *why;
		/* --fsync: nothing is acknowledged before it is on stable
		 * storage; a sync that fails closes the connection, and the
		 * sender sends the frames again */
		int ret = c->sess ? srv_session_sync(c->sess, &why) : 0;
		if (ret) {
			srv_conn_refuse(r, c, (uint32_t)-ret, "%s/%s: %s: %s",
					c->sess->host, c->sess->trace, why,
					strerror(-ret));
			return;
		}
		put64(a, c->last_seq);
		if (!srv_tx_put(c, RELAY_ACK, a, 8)) {
			c->acked = c->last_seq;
			c->pinged = 0;
		}
		srv_conn_flush(r, c);
	}
	srv_clock_poll(r, c);
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
		srv_conn_refuse(r, c, ETIMEDOUT, c->authed ? "idle for %u ms: closed"
				: "no valid HELLO within %u ms: closed",
				c->authed ? r->cfg.idle_ms : r->cfg.auth_ms);
	}
	for (struct rsession *s = r->sessions, *next; s; s = next) {
		next = s->next;
		if (!s->conn && now - s->detached_ms > DETACHED_MS) {
			srv_log(r, "%s/%s: no sender for %d s: files closed "
				"(it may resume)", s->host, s->trace,
				DETACHED_MS / 1000);
			srv_session_free(r, s);
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
				srv_do_accept(r);
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
				srv_conn_flush(r, c);
			if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
				on_readable(r, c);
		}
		expire(r);
		for (struct rconn *c = r->conns; c; c = c->next)
			srv_clock_poll(r, c);
	}
	return 0;
}

void relay_destroy(struct relay *r, struct relay_stats *st)
{
	if (!r)
		return;
	while (r->conns)
		srv_conn_free(r, r->conns);
	while (r->sessions)
		srv_session_free(r, r->sessions);
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
