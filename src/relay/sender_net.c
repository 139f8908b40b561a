/* SPDX-License-Identifier: MIT */
/* The relay sender's thread: one TCP connection to the relay, its handshake, and the pump that sends the queue and resumes it after a reconnect (docs/relay.md §3, §5). */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <zstd.h>

#include "relay/sender_int.h"

static void slogf(struct relay_sender *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void slogf(struct relay_sender *s, const char *fmt, ...)
{
	va_list ap;

	if (!s->log)
		return;
	va_start(ap, fmt);
	fprintf(s->log, "strata: relay %s: ", s->addr);
	vfprintf(s->log, fmt, ap);
	fputc('\n', s->log);
	va_end(ap);
}

/* ---- the thread --------------------------------------------------------- */

static void free_pre(struct relay_sender *s)
{
	while (s->pre) {
		struct msg *m = s->pre;
		s->pre = m->next;
		free(m);
	}
	s->cursor_off = 0;
}

static void disconnect(struct relay_sender *s, const char *why)
{
	free_pre(s);
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	s->state = S_IDLE;
	s->rx_len = 0;
	s->sync_pending = s->ping_due = 0;
	s->ctl_len = s->ctl_off = 0;
	s->retry_at = now_ms() + s->backoff;
	s->backoff = s->backoff * 2 > BACKOFF_MAX ? BACKOFF_MAX : s->backoff * 2;
	if (why && !s->outage_logged) {
		slogf(s, "%s; reconnecting", why);
		s->outage_logged = 1;
	}
}

static void start_connect(struct relay_sender *s)
{
	for (struct addrinfo *a = s->ai; a; a = a->ai_next) {
		int fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		if (connect(fd, a->ai_addr, a->ai_addrlen) == 0 || errno == EINPROGRESS) {
			s->fd = fd;
			s->state = S_CONNECTING;
			s->conn_at = now_ms();
			return;
		}
		close(fd);
	}
	disconnect(s, "cannot connect");
}

static int send_raw(struct relay_sender *s, const unsigned char *p, size_t n)
{
	ssize_t w = send(s->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (w > 0) {
		s->last_tx = now_ms();
		pthread_mutex_lock(&s->mu);
		s->st.wire_bytes += (uint64_t)w;
		pthread_mutex_unlock(&s->mu);
	}
	return w < 0 ? (errno == EAGAIN || errno == EINTR ? 0 : -errno) : (int)w;
}

static void send_hello(struct relay_sender *s, const unsigned char *nonce)
{
	unsigned char p[RELAY_HDR + RELAY_MAX_PREAUTH];
	size_t hn = strlen(s->host), tn = strlen(s->trace);
	unsigned char *b = p + RELAY_HDR;
	size_t n = RELAY_MAC;

	put32(b + n, RELAY_VERSION);
	memcpy(b + n + 4, s->sid, RELAY_SID);
	put32(b + n + 4 + RELAY_SID, (s->welcomed ? RELAY_HELLO_RESUME : 0) |
				     (s->zc ? RELAY_HELLO_ZSTD : 0) | RELAY_HELLO_TSYNC);
	n += 4 + RELAY_SID + 4;
	put16(b + n, (uint16_t)hn);
	memcpy(b + n + 2, s->host, hn);
	n += 2 + hn;
	put16(b + n, (uint16_t)tn);
	memcpy(b + n + 2, s->trace, tn);
	n += 2 + tn;
	relay_mac(s->token, s->token_len, nonce, b + RELAY_MAC, n - RELAY_MAC, b);
	put32(p, RELAY_HELLO);
	put32(p + 4, (uint32_t)n);
	/* small: all of it fits an empty socket buffer */
	if (send_raw(s, p, RELAY_HDR + n) != (int)(RELAY_HDR + n))
		disconnect(s, "cannot send HELLO");
	else
		s->state = S_WELCOME;
}

static int cmp_have(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	return (x[0] > y[0]) - (x[0] < y[0]);
}

/* Whether the WELCOME listed file `id` as open at the relay. */
static int relay_open(const struct relay_sender *s, uint32_t id)
{
	uint64_t key[2] = {id, 0};
	return s->nhave && bsearch(key, s->have, s->nhave, 16, cmp_have);
}

/* Files open here that the relay does not have open (it was restarted:
 * docs/relay.md §3): CREATE again, unsequenced (seq 0), before the
 * frames resent. Under mu. */
static void reopen(struct relay_sender *s)
{
	struct msg **tail = &s->pre;

	free_pre(s);
	for (unsigned h = 0; h < HASH; h++)
		for (struct sfile *f = s->hash[h]; f; f = f->hnext) {
			if ((!f->open && f->close_seq <= s->acked) ||
			    relay_open(s, f->id))
				continue;
			size_t n = strlen(f->rel);
			struct msg *m = snd_msg_new(s, RELAY_CREATE, 8 + 4 + 2 + n);
			if (!m)
				return;
			unsigned char *p = m->frame + RELAY_HDR;
			put64(p, 0);
			put32(p + 8, f->id);
			put16(p + 12, (uint16_t)n);
			memcpy(p + 14, f->rel, n);
			*tail = m;
			tail = &m->next;
		}
}

/* The queue's head, which the relay has: counted as sent, and freed.
 * Under mu. */
static void free_head_locked(struct relay_sender *s)
{
	struct msg *m = s->head;

	s->head = m->next;
	if (!s->head)
		s->tail = NULL;
	s->queued -= m->len;
	s->st.packets_sent += m->packet;
	s->st.bytes_sent += m->wlen;
	snd_msg_free_locked(s, m);
}

static void on_welcome(struct relay_sender *s, const unsigned char *p, size_t n)
{
	if (n < 12) {
		disconnect(s, "malformed WELCOME");
		return;
	}
	uint64_t applied = get64(p);
	uint32_t nf = get32(p + 8);
	if (12 + (size_t)nf * 12 != n) {
		disconnect(s, "malformed WELCOME");
		return;
	}
	free(s->have);
	s->have = calloc(nf + 1, 16);
	s->nhave = s->have ? nf : 0;
	for (size_t i = 0; i < s->nhave; i++) {
		s->have[2 * i] = get32(p + 12 + 12 * i);
		s->have[2 * i + 1] = get64(p + 16 + 12 * i);
	}
	qsort(s->have, s->nhave, 16, cmp_have);
	pthread_mutex_lock(&s->mu);
	/* what the relay applied is acknowledged; the rest is resent */
	if (applied > s->acked)
		s->acked = applied;
	while (s->head && s->head->seq <= applied)
		free_head_locked(s);
	s->cursor = s->head;
	s->cursor_off = 0;
	reopen(s);
	pthread_mutex_unlock(&s->mu);
	if (s->welcomed || s->outage_logged)
		slogf(s, "%s/%s resumed after frame %llu", s->host, s->trace,
		      (unsigned long long)applied);
	s->welcomed = 1;
	s->outage_logged = 0;
	s->backoff = BACKOFF_MIN;
	s->state = S_STREAMING;
	s->st.connects++;
}

static void on_ack(struct relay_sender *s, uint64_t seq)
{
	pthread_mutex_lock(&s->mu);
	if (seq > s->acked)
		s->acked = seq;
	while (s->head && s->head->seq <= seq && s->head != s->cursor) {
		if (s->head->type == RELAY_END)
			s->end_acked = 1;
		free_head_locked(s);
	}
	pthread_mutex_unlock(&s->mu);
}

static int fatal_error(uint32_t e)
{
	return e == EACCES || e == EEXIST || e == EBUSY || e == EPROTO ||
	       e == EINVAL || e == ENOENT || e == EPERM;
}

static void on_readable(struct relay_sender *s)
{
	ssize_t got = recv(s->fd, s->rx + s->rx_len, sizeof(s->rx) - s->rx_len,
			   MSG_DONTWAIT);
	if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
		disconnect(s, got == 0 ? "the relay closed the connection"
				       : strerror(errno));
		return;
	}
	if (got < 0)
		return;
	s->rx_len += (size_t)got;
	s->rx_ns = relay_mono_ns(); /* t2 of a TSYNC in it */
	s->last_rx = now_ms();
	size_t pos = 0;
	while (s->fd >= 0 && s->rx_len - pos >= RELAY_HDR) {
		uint32_t type = get32(s->rx + pos), len = get32(s->rx + pos + 4);
		if (len > sizeof(s->rx) - RELAY_HDR) {
			disconnect(s, "oversized frame from the relay");
			return;
		}
		if (s->rx_len - pos < RELAY_HDR + len)
			break;
		const unsigned char *p = s->rx + pos + RELAY_HDR;
		pos += RELAY_HDR + len;
		if (type == RELAY_CHALLENGE && s->state == S_CHALLENGE &&
		    len == 4 + RELAY_NONCE) {
			send_hello(s, p + 4);
		} else if (type == RELAY_WELCOME && s->state == S_WELCOME) {
			on_welcome(s, p, len);
		} else if (type == RELAY_ACK && len == 8 && s->state == S_STREAMING) {
			on_ack(s, get64(p));
		} else if (type == RELAY_TSYNC && len == RELAY_TSYNC_LEN &&
			   s->state == S_STREAMING) {
			/* only the latest is answered: the relay waits for it */
			s->sync_pending = 1;
			s->sync_id = get32(p);
			s->sync_t1 = get64(p + 4);
			s->sync_t2 = s->rx_ns;
		} else if (type == RELAY_ERROR && len >= 4) {
			uint32_t e = get32(p);
			char text[256];
			snprintf(text, sizeof(text), "refused: %.*s",
				 (int)(len - 4 > 200 ? 200 : len - 4), p + 4);
			if (fatal_error(e)) {
				pthread_mutex_lock(&s->mu);
				s->abandoned = 1;
				snprintf(s->st.error, sizeof(s->st.error), "%s", text);
				pthread_mutex_unlock(&s->mu);
				slogf(s, "%s", text);
				disconnect(s, NULL);
			} else {
				disconnect(s, text);
			}
			return;
		} else {
			disconnect(s, "unexpected frame from the relay");
			return;
		}
	}
	if (s->fd >= 0 && pos) {
		memmove(s->rx, s->rx + pos, s->rx_len - pos);
		s->rx_len -= pos;
	}
}

/* Whether the WELCOME said the relay has all of m already. */
static int relay_has(const struct relay_sender *s, const struct msg *m)
{
	if ((m->type != RELAY_WRITE && m->type != RELAY_WRITEZ) || !s->nhave)
		return 0;
	uint64_t key[2] = {m->id, 0};
	const uint64_t *h = bsearch(key, s->have, s->nhave, 16, cmp_have);
	return h && m->off + m->wlen <= h[1];
}

/*
 * --relay-zstd: turn the WRITE m, about to be sent for the first time,
 * into a WRITEZ in place (docs/relay.md §2), if its zstd frame is
 * smaller. On the sender's thread, not the consumer's: compressing is
 * CPU that the consumer, draining the producers' rings, must not spend.
 * Only this thread touches a queued frame's bytes.
 */
static void compress(struct relay_sender *s, struct msg *m)
{
	size_t n = m->wlen;
	unsigned char *p = m->frame + RELAY_HDR + 8; /* u32 id, u64 offset */

	if (!s->zc || m->type != RELAY_WRITE || n < 512)
		return;
	size_t z = ZSTD_compressCCtx(s->zc, s->zbuf, s->zcap, p + 12, n, s->zlevel);
	if (ZSTD_isError(z) || z + 4 >= n)
		return;
	put32(p + 12, (uint32_t)n);
	memcpy(p + 16, s->zbuf, z);
	size_t len = RELAY_HDR + 8 + 4 + 8 + 4 + z;
	put32(m->frame, RELAY_WRITEZ);
	put32(m->frame + 4, (uint32_t)(len - RELAY_HDR));
	pthread_mutex_lock(&s->mu);
	s->queued -= m->len - len;
	m->len = len;
	m->type = RELAY_WRITEZ;
	pthread_mutex_unlock(&s->mu);
}

/* Send what is left of buf[0..len) from *off: 1 when all of it is out,
 * 0 when the socket is full first, -1 after disconnecting. */
static int send_from(struct relay_sender *s, const unsigned char *buf,
		     size_t len, size_t *off)
{
	while (*off < len) {
		int w = send_raw(s, buf + *off, len - *off);
		if (w < 0) {
			disconnect(s, strerror(-w));
			return -1;
		}
		if (w == 0)
			return 0;
		*off += (size_t)w;
	}
	return 1;
}

static int send_rest(struct relay_sender *s, const struct msg *m)
{
	return send_from(s, m->frame, m->len, &s->cursor_off);
}

/*
 * The answer to a TSYNC, between two frames and ahead of the queue: the
 * time it waits behind a frame already begun is between t2 and t3, out
 * of the round trip. t3 is stamped as it goes. 1 when nothing of it is
 * left to send (or a frame is half sent: after that one), 0 when the
 * socket is full, -1 after disconnecting.
 */
static int flush_ctl(struct relay_sender *s)
{
	if (s->cursor_off)
		return 1;
	if (!s->ctl_len && s->ping_due && !s->sync_pending) {
		put32(s->ctl, RELAY_PING);
		put32(s->ctl + 4, 0);
		s->ctl_len = RELAY_HDR;
		s->ctl_off = 0;
	}
	s->ping_due = 0; /* a TSYNC_REPLY shows the sender alive as well */
	if (!s->ctl_len && s->sync_pending) {
		unsigned char *b = s->ctl + RELAY_HDR;
		put32(s->ctl, RELAY_TSYNC_REPLY);
		put32(s->ctl + 4, RELAY_TSYNC_REPLY_LEN);
		put32(b, s->sync_id);
		put64(b + 4, s->sync_t1);
		put64(b + 12, s->sync_t2);
		put64(b + 20, relay_mono_ns());
		s->ctl_len = sizeof(s->ctl);
		s->ctl_off = 0;
		s->sync_pending = 0;
	}
	int ret = send_from(s, s->ctl, s->ctl_len, &s->ctl_off);
	if (ret == 1)
		s->ctl_len = s->ctl_off = 0;
	return ret;
}

/* Send from the cursor until the socket is full. */
static void pump(struct relay_sender *s)
{
	if (flush_ctl(s) <= 0)
		return;
	while (s->pre) {
		struct msg *m = s->pre;
		if (send_rest(s, m) <= 0)
			return;
		s->pre = m->next;
		s->cursor_off = 0;
		free(m);
		if (flush_ctl(s) <= 0)
			return;
	}
	for (;;) {
		if (flush_ctl(s) <= 0)
			return;
		pthread_mutex_lock(&s->mu);
		struct msg *m = s->cursor;
		s->idle = !m; /* the next frame queued wakes the thread */
		pthread_mutex_unlock(&s->mu);
		if (!m)
			return;
		if (s->cursor_off == 0 && relay_has(s, m)) {
			pthread_mutex_lock(&s->mu);
			s->cursor = m->next;
			pthread_mutex_unlock(&s->mu);
			continue;
		}
		if (s->cursor_off == 0)
			compress(s, m);
		if (send_rest(s, m) <= 0)
			return;
		pthread_mutex_lock(&s->mu);
		s->cursor = m->next; /* NULL: snd_enqueue_locked() sets it */
		s->cursor_off = 0;
		pthread_mutex_unlock(&s->mu);
	}
}

void *snd_main(void *arg)
{
	struct relay_sender *s = arg;

	s->backoff = BACKOFF_MIN;
	for (;;) {
		pthread_mutex_lock(&s->mu);
		int stop = s->stop, abandoned = s->abandoned, end_acked = s->end_acked;
		pthread_mutex_unlock(&s->mu);
		if (stop || end_acked || abandoned)
			break;
		int64_t now = now_ms();
		if (s->state == S_IDLE && now >= s->retry_at)
			start_connect(s);
		if (s->state == S_CONNECTING && now - s->conn_at > CONNECT_MS)
			disconnect(s, "connection timed out");
		if (s->state == S_STREAMING) {
			/* a PING goes between two frames, as a TSYNC_REPLY
			 * (flush_ctl): sent straight away, it could land
			 * inside a frame half sent */
			if (now - s->last_tx >= PING_MS)
				s->ping_due = 1;
			pump(s);
			if (s->fd >= 0 && now - s->last_rx > DEAD_MS)
				disconnect(s, "no answer from the relay");
		}
		if ((s->state == S_CHALLENGE || s->state == S_WELCOME) &&
		    now - s->last_rx > DEAD_MS)
			disconnect(s, "no answer from the relay");
		struct pollfd pf[2] = {{.fd = s->evfd, .events = POLLIN}, {.fd = s->fd}};
		int nfd = 1, timeout = 200;
		if (s->fd >= 0) {
			nfd = 2;
			pf[1].events = POLLIN;
			if (s->state == S_CONNECTING)
				pf[1].events = POLLOUT;
			else if (s->state == S_STREAMING) {
				pthread_mutex_lock(&s->mu);
				if (s->cursor || s->pre || s->sync_pending ||
				    s->ping_due || s->ctl_len)
					pf[1].events |= POLLOUT;
				pthread_mutex_unlock(&s->mu);
			}
		} else if (s->retry_at > now) {
			timeout = (int)(s->retry_at - now);
		}
		if (poll(pf, (nfds_t)nfd, timeout) < 0 && errno != EINTR)
			break;
		if (pf[0].revents & POLLIN) {
			uint64_t v;
			if (read(s->evfd, &v, 8) < 0)
				(void)0;
		}
		if (nfd == 2 && s->state == S_CONNECTING && (pf[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
			int err = 0;
			socklen_t el = sizeof(err);
			getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &el);
			if (err) {
				disconnect(s, strerror(err));
			} else {
				s->state = S_CHALLENGE;
				s->last_rx = s->last_tx = now_ms();
			}
			continue;
		}
		if (nfd == 2 && s->fd >= 0 && (pf[1].revents & (POLLIN | POLLERR | POLLHUP)))
			on_readable(s);
	}
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	return NULL;
}
