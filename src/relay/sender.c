/* SPDX-License-Identifier: MIT */
/* The relay's sender: a bounded queue filled by the consumer's sink callbacks, drained by a thread over one TCP connection that it reconnects and resumes (docs/relay.md §3, §5). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>

#include "common/format.h"
#include "consumer/consumer.h"
#include "relay/proto.h"
#include "relay/sender.h"

#define HASH 1024u
#define PING_MS 2000
#define DEAD_MS 15000     /* nothing from the relay while data is out */
#define CONNECT_MS 3000
#define BACKOFF_MIN 100
#define BACKOFF_MAX 2000

enum { K_OTHER, K_STREAM, K_INDEX, K_META };

/* One frame, kept until the relay acknowledges its seq (resent after a
 * reconnect otherwise). */
struct msg {
	struct msg *next;
	uint64_t seq;
	uint32_t type, id;
	uint64_t off, wlen; /* WRITE: skipped on resume if the relay has it */
	int packet;         /* the last frame of a stream packet */
	size_t len;         /* of frame[] */
	unsigned char frame[];
};

/* A file of the local trace that the relay is told of. */
struct sfile {
	struct sfile *hnext;
	char *path; /* local, as the consumer names it (the key) */
	const char *rel;
	uint32_t id;
	int kind, open, lossy;
	uint64_t close_seq;   /* of its CLOSE: open at the relay until acked */
	struct sfile *stream; /* an index's stream file */
	/* stream files (docs/relay.md §5, "Losses") */
	uint64_t psize, remote_next;
	int kept_any, drop_pending, have_first;
	unsigned char first_drop[STRATA_PACKET_HEADER];
	unsigned char last_drop[STRATA_PACKET_HEADER];
};

enum { S_IDLE, S_CONNECTING, S_CHALLENGE, S_WELCOME, S_STREAMING };

struct relay_sender {
	struct cons_sink sink;
	char addr[300];
	unsigned char token[RELAY_TOKEN_MAX];
	size_t token_len;
	char root[4096];
	size_t rootlen;
	char host[RELAY_MAX_NAME + 1], trace[RELAY_MAX_NAME + 1];
	uint8_t sid[RELAY_SID];
	FILE *log;
	struct addrinfo *ai;
	ZSTD_CCtx *zc;  /* the thread's; NULL: no compression */
	int zlevel;
	unsigned char *zbuf; /* ZSTD_compressBound(RELAY_CHUNK) bytes */
	size_t zcap;

	pthread_t thread;
	int started; /* relay_sender_start() */
	pthread_mutex_t mu;
	int evfd;
	/* under mu: the queue, its bytes, the counters, the files */
	struct msg *head, *tail;
	size_t queued, budget, hard;
	uint64_t next_seq, acked; /* the last seq given, and acknowledged */
	uint32_t next_id;
	int stop, ending, end_acked, abandoned;
	struct relay_sender_stats st;
	struct sfile *hash[HASH];

	/* the thread's own */
	int fd, state, welcomed;
	struct msg *pre;    /* CREATEs (seq 0) sent before the cursor */
	struct msg *cursor; /* next to send; NULL: all sent */
	size_t cursor_off;
	int64_t retry_at, backoff, last_rx, last_tx, conn_at;
	unsigned char rx[RELAY_HDR + 65536];
	size_t rx_len;
	uint64_t *have; /* WELCOME: (id, size) pairs, sorted by id */
	size_t nhave;
	int outage_logged;
};

static int64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

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

/* ---- the queue (any thread, under mu) ----------------------------------- */

static void wake(struct relay_sender *s)
{
	uint64_t one = 1;
	if (write(s->evfd, &one, 8) < 0)
		(void)0; /* the counter is full: a wake-up is pending */
}

static struct msg *msg_new(struct relay_sender *s, uint32_t type, size_t plen)
{
	struct msg *m = malloc(sizeof(*m) + RELAY_HDR + plen);

	if (!m)
		return NULL;
	memset(m, 0, sizeof(*m));
	m->type = type;
	m->len = RELAY_HDR + plen;
	put32(m->frame, type);
	put32(m->frame + 4, (uint32_t)plen);
	(void)s;
	return m;
}

/* Give m a seq and queue it. A droppable frame (a packet, index bytes)
 * that does not fit the budget is freed: returns -ENOBUFS. Others go in
 * up to the hard limit, past which the relay is given up (everything
 * from then on counts as lost): -ENOBUFS too. */
static int enqueue_locked(struct relay_sender *s, struct msg *m, int droppable)
{
	if (s->abandoned || (droppable && s->queued + m->len > s->budget)) {
		free(m);
		return -ENOBUFS;
	}
	if (s->queued + m->len > s->hard) {
		s->abandoned = 1;
		snprintf(s->st.error, sizeof(s->st.error),
			 "more than %zu bytes waiting: the relay is given up",
			 s->hard);
		free(m);
		wake(s);
		return -ENOBUFS;
	}
	m->seq = ++s->next_seq;
	put64(m->frame + RELAY_HDR, m->seq);
	if (s->tail)
		s->tail->next = m;
	else
		s->head = m;
	s->tail = m;
	/* the cursor (the first frame not sent yet) is NULL when all are
	 * sent; while disconnected, on_welcome() sets it again */
	if (!s->cursor)
		s->cursor = m;
	s->queued += m->len;
	wake(s);
	return 0;
}

static int q_create(struct relay_sender *s, struct sfile *f)
{
	size_t n = strlen(f->rel);
	struct msg *m = msg_new(s, RELAY_CREATE, 8 + 4 + 2 + n);

	if (!m)
		return -ENOMEM;
	unsigned char *p = m->frame + RELAY_HDR + 8;
	put32(p, f->id);
	put16(p + 4, (uint16_t)n);
	memcpy(p + 6, f->rel, n);
	return enqueue_locked(s, m, 0);
}

/* `len` bytes at `off` of f, in frames of at most RELAY_CHUNK. */
static int q_write(struct relay_sender *s, struct sfile *f, uint64_t off,
		   const unsigned char *buf, size_t len, int droppable,
		   int packet)
{
	size_t nchunks = len ? (len + RELAY_CHUNK - 1) / RELAY_CHUNK : 1;

	if (droppable && s->queued + len + nchunks * 32 > s->budget)
		return -ENOBUFS;
	for (size_t k = 0, done = 0; k < nchunks; k++) {
		size_t n = len - done > RELAY_CHUNK ? RELAY_CHUNK : len - done;
		struct msg *m = msg_new(s, RELAY_WRITE, 8 + 4 + 8 + n);
		if (!m)
			return -ENOMEM;
		unsigned char *p = m->frame + RELAY_HDR + 8;
		put32(p, f->id);
		put64(p + 4, off + done);
		memcpy(p + 12, buf + done, n);
		m->id = f->id;
		m->off = off + done;
		m->wlen = n;
		m->packet = packet && k == nchunks - 1;
		/* the first chunk decided: the others follow it */
		int ret = enqueue_locked(s, m, droppable && k == 0);
		if (ret)
			return ret;
		done += n;
	}
	return 0;
}

static int q_close(struct relay_sender *s, struct sfile *f, uint64_t size,
		   const char *final, int unlink_it)
{
	size_t n = final ? strlen(final) : 0;
	struct msg *m = msg_new(s, RELAY_CLOSE, 8 + 4 + 8 + 4 + 2 + n);

	if (!m)
		return -ENOMEM;
	unsigned char *p = m->frame + RELAY_HDR + 8;
	put32(p, f->id);
	put64(p + 4, size);
	put32(p + 12, unlink_it ? RELAY_CLOSE_UNLINK : 0);
	put16(p + 16, (uint16_t)n);
	if (n)
		memcpy(p + 18, final, n);
	int ret = enqueue_locked(s, m, 0);
	if (!ret)
		f->close_seq = s->next_seq;
	return ret;
}

/* ---- files -------------------------------------------------------------- */

static unsigned hash_of(const char *p)
{
	uint32_t h = 2166136261u;
	while (*p)
		h = (h ^ (unsigned char)*p++) * 16777619u;
	return h % HASH;
}

static struct sfile *file_get(struct relay_sender *s, const char *path)
{
	for (struct sfile *f = s->hash[hash_of(path)]; f; f = f->hnext)
		if (!strcmp(f->path, path))
			return f;
	return NULL;
}

/* The path below root, or NULL (a snapshot elsewhere, ...). */
static const char *rel_of(const struct relay_sender *s, const char *path)
{
	if (strncmp(path, s->root, s->rootlen) || path[s->rootlen] != '/')
		return NULL;
	path += s->rootlen + 1;
	return relay_path_ok(path, strlen(path)) ? path : NULL;
}

static struct sfile *file_add(struct relay_sender *s, const char *path, int kind)
{
	struct sfile *f = file_get(s, path);

	if (!f) {
		f = calloc(1, sizeof(*f));
		if (!f || !(f->path = strdup(path))) {
			free(f);
			return NULL;
		}
		f->rel = f->path + s->rootlen + 1;
		unsigned h = hash_of(path);
		f->hnext = s->hash[h];
		s->hash[h] = f;
	}
	f->kind = kind;
	f->id = s->next_id++ % (RELAY_MAX_FILE_ID + 1);
	f->open = 1;
	f->lossy = 0;
	return f;
}

static int kind_of(const char *rel)
{
	const char *leaf = strrchr(rel, '/');
	unsigned cpu;
	char c;

	leaf = leaf ? leaf + 1 : rel;
	if (sscanf(leaf, "cpu%u%c", &cpu, &c) == 1)
		return K_STREAM;
	if (sscanf(leaf, ".cpu%u.id%c", &cpu, &c) == 2 && c == 'x')
		return K_INDEX;
	return K_OTHER;
}

/* ---- the sink (the consumer's thread) ----------------------------------- */

static void on_file_create(void *ctx, const char *path)
{
	struct relay_sender *s = ctx;
	const char *rel = rel_of(s, path);

	if (!rel)
		return;
	pthread_mutex_lock(&s->mu);
	struct sfile *f = file_add(s, path, kind_of(rel));
	if (f && f->kind == K_INDEX) {
		/* DIR/index/.cpuN.idx: the stream is DIR/cpuN */
		char sp[4200];
		const char *slash = strrchr(path, '/');
		int dl = (int)(slash - path) - (int)strlen("/index");
		unsigned cpu = 0;
		sscanf(slash + 1, ".cpu%u", &cpu);
		if (dl > 0) {
			snprintf(sp, sizeof(sp), "%.*s/cpu%u", dl, path, cpu);
			f->stream = file_get(s, sp);
		}
	}
	if (f)
		q_create(s, f);
	pthread_mutex_unlock(&s->mu);
}

/* An empty packet (header and context only) made from `hdr`, numbered
 * `seq`, at time `ts`, counting `disc`: the lead and trailer that keep
 * a stream's first and last losses visible (docs/relay.md §5). */
static void synth_packet(struct relay_sender *s, struct sfile *f,
			 const unsigned char *hdr, uint64_t seq, uint64_t ts,
			 uint64_t disc)
{
	unsigned char p[STRATA_PACKET_HEADER];
	uint64_t content = STRATA_PACKET_HEADER * 8;

	memcpy(p, hdr, sizeof(p));
	memcpy(p + STRATA_PKT_OFF_TS_BEGIN, &ts, 8);
	memcpy(p + STRATA_PKT_OFF_TS_END, &ts, 8);
	memcpy(p + STRATA_PKT_OFF_CONTENT_SIZE, &content, 8);
	memcpy(p + STRATA_PKT_OFF_SEQ, &seq, 8);
	memcpy(p + STRATA_PKT_OFF_DISCARDED, &disc, 8);
	if (!q_write(s, f, f->remote_next, p, sizeof(p), 0, 0))
		f->remote_next += f->psize;
}

/* Before the first packet kept after the stream's first ones were
 * dropped: a lead numbered just before the first dropped one, so that
 * readers see the gap; when that one is packet 0, the lead takes its
 * number and the gap is one packet short (docs/relay.md, "Losses"). */
static void lead_if_needed(struct relay_sender *s, struct sfile *f)
{
	uint64_t seq, ts;

	if (f->kept_any || !f->have_first)
		return;
	memcpy(&seq, f->first_drop + STRATA_PKT_OFF_SEQ, 8);
	memcpy(&ts, f->first_drop + STRATA_PKT_OFF_TS_BEGIN, 8);
	synth_packet(s, f, f->first_drop, seq ? seq - 1 : 0, ts, 0);
	f->have_first = 0;
}

static void stream_packet(struct relay_sender *s, struct sfile *f,
			  uint64_t off, const unsigned char *pkt, size_t len)
{
	uint64_t psize;
	size_t frames = (len + RELAY_CHUNK - 1) / RELAY_CHUNK;

	if (len < STRATA_PACKET_HEADER)
		return;
	memcpy(&psize, pkt + STRATA_PKT_OFF_PACKET_SIZE, 8);
	psize /= 8;
	if (!f->psize)
		f->psize = psize;
	/* kept or dropped is decided here, before a lead is queued for
	 * it: the lead and its packet go in together */
	if (s->abandoned ||
	    s->queued + len + frames * (RELAY_HDR + 32) + 2 * STRATA_PACKET_HEADER > s->budget) {
		/* dropped: counted, and shown in the relay's copy by the
		 * packet_seq_num gap (and the lead/trailer) */
		s->st.packets_lost++;
		if (!f->lossy)
			f->remote_next = off; /* compact from here */
		f->lossy = 1;
		f->drop_pending = 1;
		if (!f->kept_any && !f->have_first) {
			memcpy(f->first_drop, pkt, STRATA_PACKET_HEADER);
			f->have_first = 1;
		}
		memcpy(f->last_drop, pkt, STRATA_PACKET_HEADER);
		return;
	}
	if (f->lossy && f->drop_pending)
		lead_if_needed(s, f);
	uint64_t at = f->lossy ? f->remote_next : off;
	if (q_write(s, f, at, pkt, len, 0, 1)) {
		s->st.packets_lost++; /* abandoned, or no memory */
		return;
	}
	f->kept_any = 1;
	f->drop_pending = 0;
	f->remote_next = at + f->psize;
}

static void on_write(void *ctx, const char *path, uint64_t off,
		     const void *buf, size_t len)
{
	struct relay_sender *s = ctx;

	pthread_mutex_lock(&s->mu);
	struct sfile *f = file_get(s, path);
	if (!f || !f->open) {
		pthread_mutex_unlock(&s->mu);
		return;
	}
	if (f->kind == K_STREAM) {
		stream_packet(s, f, off, buf, len);
	} else if (!f->lossy && !(f->stream && f->stream->lossy)) {
		/* index bytes: one lost makes the index unpublishable at
		 * the relay (readers then rebuild it from the stream) */
		if (q_write(s, f, off, buf, len, f->kind == K_INDEX, 0))
			f->lossy = 1;
	}
	pthread_mutex_unlock(&s->mu);
}

static void on_metadata(void *ctx, const char *path, const char *text,
			size_t len)
{
	struct relay_sender *s = ctx;
	const char *rel = rel_of(s, path);

	if (!rel || len > RELAY_CHUNK)
		return;
	pthread_mutex_lock(&s->mu);
	struct sfile *f = file_get(s, path);
	if (!f && (f = file_add(s, path, K_META)))
		f->open = 0; /* a name only: never CREATEd (reopen()) */
	size_t n = strlen(rel);
	struct msg *m = f ? msg_new(s, RELAY_METADATA, 8 + 2 + n + len) : NULL;
	if (m) {
		unsigned char *p = m->frame + RELAY_HDR + 8;
		put16(p, (uint16_t)n);
		memcpy(p + 2, rel, n);
		memcpy(p + 2 + n, text, len);
		enqueue_locked(s, m, 0);
	}
	pthread_mutex_unlock(&s->mu);
}

static void on_close(void *ctx, const char *path, uint64_t size,
		     const char *final, int keep)
{
	struct relay_sender *s = ctx;

	pthread_mutex_lock(&s->mu);
	struct sfile *f = file_get(s, path);
	if (!f || !f->open) {
		pthread_mutex_unlock(&s->mu);
		return;
	}
	if (f->kind == K_STREAM) {
		if (f->lossy && f->drop_pending) {
			uint64_t seq, ts, disc;
			lead_if_needed(s, f);
			memcpy(&seq, f->last_drop + STRATA_PKT_OFF_SEQ, 8);
			memcpy(&ts, f->last_drop + STRATA_PKT_OFF_TS_END, 8);
			memcpy(&disc, f->last_drop + STRATA_PKT_OFF_DISCARDED, 8);
			synth_packet(s, f, f->last_drop, seq + 1, ts, disc);
		}
		q_close(s, f, f->lossy ? f->remote_next : size, NULL, 0);
	} else {
		const char *frel = final ? rel_of(s, final) : NULL;
		int drop = !keep || f->lossy || (f->stream && f->stream->lossy) ||
			   (final && !frel);
		q_close(s, f, size, drop ? NULL : frel, drop);
		/* the sweep must not send it either: an index that does not
		 * match the relay's stream is worse than none */
		struct sfile *g = frel ? file_add(s, final, K_META) : NULL;
		if (g)
			g->open = 0;
	}
	f->open = 0;
	pthread_mutex_unlock(&s->mu);
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
				     (s->zc ? RELAY_HELLO_ZSTD : 0));
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
			struct msg *m = msg_new(s, RELAY_CREATE, 8 + 4 + 2 + n);
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
	while (s->head && s->head->seq <= applied) {
		struct msg *m = s->head;
		s->head = m->next;
		if (!s->head)
			s->tail = NULL;
		s->queued -= m->len;
		s->st.packets_sent += m->packet;
		s->st.bytes_sent += m->wlen;
		free(m);
	}
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
		struct msg *m = s->head;
		if (m->type == RELAY_END)
			s->end_acked = 1;
		s->head = m->next;
		if (!s->head)
			s->tail = NULL;
		s->queued -= m->len;
		s->st.packets_sent += m->packet;
		s->st.bytes_sent += m->wlen;
		free(m);
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

/* Send from the cursor until the socket is full. */
static void pump(struct relay_sender *s)
{
	while (s->pre) {
		struct msg *m = s->pre;
		int w = send_raw(s, m->frame + s->cursor_off, m->len - s->cursor_off);
		if (w < 0) {
			disconnect(s, strerror(-w));
			return;
		}
		if (w == 0)
			return;
		s->cursor_off += (size_t)w;
		if (s->cursor_off < m->len)
			return;
		s->pre = m->next;
		s->cursor_off = 0;
		free(m);
	}
	for (;;) {
		pthread_mutex_lock(&s->mu);
		struct msg *m = s->cursor;
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
		int w = send_raw(s, m->frame + s->cursor_off, m->len - s->cursor_off);
		if (w < 0) {
			disconnect(s, strerror(-w));
			return;
		}
		if (w == 0)
			return;
		s->cursor_off += (size_t)w;
		if (s->cursor_off < m->len)
			return;
		pthread_mutex_lock(&s->mu);
		s->cursor = m->next; /* NULL: enqueue_locked() sets it */
		s->cursor_off = 0;
		pthread_mutex_unlock(&s->mu);
	}
}

static void *sender_main(void *arg)
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
			pump(s);
			if (s->fd >= 0 && now - s->last_tx >= PING_MS) {
				unsigned char ping[RELAY_HDR];
				put32(ping, RELAY_PING);
				put32(ping + 4, 0);
				if (send_raw(s, ping, sizeof(ping)) < 0)
					disconnect(s, "connection lost");
			}
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
				if (s->cursor || s->pre)
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

/* ---- create, sweep, finish ---------------------------------------------- */

static void clean_name(const char *in, char *out)
{
	size_t n = 0;

	for (; in[n] && n < RELAY_MAX_NAME; n++) {
		char c = in[n];
		out[n] = relay_name_ok(&c, 1) || c == '.' ? c : '-';
	}
	out[n] = 0;
	if (!n || out[0] == '.')
		out[0] = n ? '_' : 0;
	if (!out[0])
		strcpy(out, "trace");
}

int relay_sender_create(const struct relay_sender_config *cfg,
			struct relay_sender **out, const char **why)
{
	char host[256], port[16];
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_NUMERICSERV};
	struct relay_sender *s;
	int ret;

	*why = "--relay wants HOST:PORT";
	if (relay_split_addr(cfg->addr, host, sizeof(host), port, sizeof(port)))
		return -EINVAL;
	*why = "bad token";
	if (cfg->token_len > RELAY_TOKEN_MAX || cfg->token_len < RELAY_TOKEN_MIN)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->fd = -1;
	s->evfd = -1;
	snprintf(s->addr, sizeof(s->addr), "%s", cfg->addr);
	memcpy(s->token, cfg->token, cfg->token_len);
	s->token_len = cfg->token_len;
	snprintf(s->root, sizeof(s->root), "%s", cfg->root);
	s->rootlen = strlen(s->root);
	while (s->rootlen > 1 && s->root[s->rootlen - 1] == '/')
		s->root[--s->rootlen] = 0;
	char hn[256] = "";
	if (cfg->host)
		snprintf(hn, sizeof(hn), "%s", cfg->host);
	else if (gethostname(hn, sizeof(hn) - 1) < 0)
		strcpy(hn, "host");
	clean_name(hn, s->host);
	const char *base = cfg->trace;
	if (!base) {
		base = strrchr(s->root, '/');
		base = base ? base + 1 : s->root;
	}
	clean_name(base, s->trace);
	s->log = cfg->log;
	s->budget = cfg->budget ? cfg->budget : (64u << 20);
	s->hard = 4 * s->budget + (16u << 20);
	s->sink = (struct cons_sink){
		.ctx = s,
		.on_file_create = on_file_create,
		.on_write = on_write,
		.on_metadata = on_metadata,
		.on_close = on_close,
	};
	pthread_mutex_init(&s->mu, NULL);
	*why = "no memory for zstd";
	if (cfg->zstd_level) {
		s->zlevel = cfg->zstd_level;
		s->zcap = ZSTD_compressBound(RELAY_CHUNK);
		if (!(s->zc = ZSTD_createCCtx()) || !(s->zbuf = malloc(s->zcap))) {
			ret = -ENOMEM;
			goto fail;
		}
	}
	*why = "cannot resolve the relay's address";
	if ((ret = getaddrinfo(host, port, &hints, &s->ai))) {
		ret = ret == EAI_SYSTEM ? -errno : -EADDRNOTAVAIL;
		s->ai = NULL;
		goto fail;
	}
	*why = "cannot make the session id";
	if ((ret = relay_random(s->sid, RELAY_SID)))
		goto fail;
	*why = "cannot start the sender thread";
	s->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->evfd < 0) {
		ret = -errno;
		goto fail;
	}
	*out = s;
	return 0;
fail:
	ZSTD_freeCCtx(s->zc);
	free(s->zbuf);
	if (s->ai)
		freeaddrinfo(s->ai);
	if (s->evfd >= 0)
		close(s->evfd);
	free(s);
	return ret;
}

int relay_sender_start(struct relay_sender *s)
{
	int ret = -pthread_create(&s->thread, NULL, sender_main, s);

	if (ret)
		return ret;
	s->started = 1;
	pthread_setname_np(s->thread, "strata-relay");
	return 0;
}

const struct cons_sink *relay_sender_sink(struct relay_sender *s)
{
	return &s->sink;
}

static struct relay_sender *sweep_s;
static int64_t sweep_deadline;
static int sweep_n;

/* Wait for room for n bytes in the queue, until the deadline. */
static int wait_room(struct relay_sender *s, size_t n)
{
	for (;;) {
		pthread_mutex_lock(&s->mu);
		int ok = s->queued + n + 64 <= s->budget, ab = s->abandoned;
		pthread_mutex_unlock(&s->mu);
		if (ok)
			return 0;
		if (ab || !s->started || now_ms() > sweep_deadline)
			return -ETIMEDOUT;
		usleep(5000);
	}
}

static int sweep_one(const char *path, const struct stat *st, int type,
		     struct FTW *ftw)
{
	struct relay_sender *s = sweep_s;
	const char *rel = rel_of(s, path);
	(void)ftw;

	if (s->abandoned)
		return 1; /* nftw stops */
	if (type != FTW_F || !S_ISREG(st->st_mode) || !rel)
		return 0;
	/* dot files and dot directories are the writers' own (format.md §1) */
	if (rel[0] == '.' || strstr(rel, "/."))
		return 0;
	pthread_mutex_lock(&s->mu);
	struct sfile *f = file_get(s, path);
	int sent = f != NULL;
	if (!sent && (f = file_add(s, path, K_OTHER)))
		q_create(s, f);
	pthread_mutex_unlock(&s->mu);
	if (sent || !f)
		return 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	uint64_t off = 0;
	static unsigned char buf[RELAY_CHUNK];
	while (fd >= 0) {
		ssize_t n = pread(fd, buf, sizeof(buf), (off_t)off);
		if (n <= 0 || wait_room(s, (size_t)n))
			break;
		pthread_mutex_lock(&s->mu);
		q_write(s, f, off, buf, (size_t)n, 0, 0);
		pthread_mutex_unlock(&s->mu);
		off += (uint64_t)n;
	}
	if (fd >= 0)
		close(fd);
	pthread_mutex_lock(&s->mu);
	q_close(s, f, off, NULL, 0);
	f->open = 0;
	s->st.files_swept++;
	pthread_mutex_unlock(&s->mu);
	sweep_n++;
	return 0;
}

int relay_sender_sweep(struct relay_sender *s, unsigned timeout_ms)
{
	sweep_s = s;
	sweep_n = 0;
	sweep_deadline = now_ms() + timeout_ms;
	int ret = nftw(s->root, sweep_one, 16, FTW_PHYS);
	if (ret < 0)
		return -errno;
	return ret ? -ECONNABORTED : sweep_n;
}

void relay_sender_finish(struct relay_sender *s, unsigned timeout_ms,
			 struct relay_sender_stats *st)
{
	int64_t until = now_ms() + timeout_ms;

	pthread_mutex_lock(&s->mu);
	struct msg *m = msg_new(s, RELAY_END, 8);
	if (m)
		enqueue_locked(s, m, 0);
	pthread_mutex_unlock(&s->mu);
	for (;;) {
		pthread_mutex_lock(&s->mu);
		int done = s->end_acked || s->abandoned || !s->started;
		pthread_mutex_unlock(&s->mu);
		if (done || now_ms() >= until)
			break;
		usleep(10000);
	}
	pthread_mutex_lock(&s->mu);
	s->stop = 1;
	pthread_mutex_unlock(&s->mu);
	wake(s);
	if (s->started)
		pthread_join(s->thread, NULL);
	/* what never reached the relay is lost too */
	while (s->head) {
		m = s->head;
		s->head = m->next;
		s->st.packets_lost += m->packet;
		free(m);
	}
	s->st.complete = s->end_acked;
	if (!s->end_acked && !s->st.error[0])
		snprintf(s->st.error, sizeof(s->st.error),
			 "the relay did not acknowledge everything in %u ms",
			 timeout_ms);
	if (st)
		*st = s->st;
	for (unsigned h = 0; h < HASH; h++)
		for (struct sfile *f = s->hash[h], *n; f; f = n) {
			n = f->hnext;
			free(f->path);
			free(f);
		}
	free(s->have);
	ZSTD_freeCCtx(s->zc);
	free(s->zbuf);
	freeaddrinfo(s->ai);
	close(s->evfd);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

void relay_sender_end(struct relay_sender *s, unsigned timeout_ms, const char *addr,
		      const char *label, const char *local)
{
	struct relay_sender_stats st;

	relay_sender_sweep(s, timeout_ms);
	relay_sender_finish(s, timeout_ms, &st);
	fprintf(stderr, "strata: relay %s: %s%s%llu packets sent, %llu lost, %llu bytes "
		"(%llu on the wire), %llu other files, %llu connection%s\n", addr,
		label ? label : "", label ? ": " : "", (unsigned long long)st.packets_sent,
		(unsigned long long)st.packets_lost, (unsigned long long)st.bytes_sent,
		(unsigned long long)st.wire_bytes, (unsigned long long)st.files_swept,
		(unsigned long long)st.connects, st.connects == 1 ? "" : "s");
	if (!st.complete)
		fprintf(stderr, "strata: warning: relay %s: the relay's copy%s%s is "
			"incomplete: %s%s%s%s\n", addr, label ? " of " : "", label ? label : "",
			st.error, local ? "; the local trace " : "", local ? local : "",
			local ? " is whole" : "");
}
