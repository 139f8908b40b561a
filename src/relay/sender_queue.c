/* SPDX-License-Identifier: MIT */
/* The relay sender's queue: frames in seq order, bounded by the budget, kept until the relay acknowledges them (docs/relay.md §5). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "relay/sender_int.h"

void snd_wake(struct relay_sender *s)
{
	uint64_t one = 1;
	if (write(s->evfd, &one, 8) < 0)
		(void)0; /* the counter is full: a snd_wake-up is pending */
}

struct msg *snd_msg_new(struct relay_sender *s, uint32_t type, size_t plen)
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
int snd_enqueue_locked(struct relay_sender *s, struct msg *m, int droppable)
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
		snd_wake(s);
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
	 * sent; while disconnected, on_welcome() (sender_net.c) sets
	 * it again */
	if (!s->cursor)
		s->cursor = m;
	s->queued += m->len;
	snd_wake(s);
	return 0;
}

int snd_q_create(struct relay_sender *s, struct sfile *f)
{
	size_t n = strlen(f->rel);
	struct msg *m = snd_msg_new(s, RELAY_CREATE, 8 + 4 + 2 + n);

	if (!m)
		return -ENOMEM;
	unsigned char *p = m->frame + RELAY_HDR + 8;
	put32(p, f->id);
	put16(p + 4, (uint16_t)n);
	memcpy(p + 6, f->rel, n);
	return snd_enqueue_locked(s, m, 0);
}

/* `len` bytes at `off` of f, in frames of at most RELAY_CHUNK. */
int snd_q_write(struct relay_sender *s, struct sfile *f, uint64_t off,
		const unsigned char *buf, size_t len, int droppable,
		int packet)
{
	size_t nchunks = len ? (len + RELAY_CHUNK - 1) / RELAY_CHUNK : 1;

	if (droppable && s->queued + len + nchunks * 32 > s->budget)
		return -ENOBUFS;
	for (size_t k = 0, done = 0; k < nchunks; k++) {
		size_t n = len - done > RELAY_CHUNK ? RELAY_CHUNK : len - done;
		struct msg *m = snd_msg_new(s, RELAY_WRITE, 8 + 4 + 8 + n);
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
		int ret = snd_enqueue_locked(s, m, droppable && k == 0);
		if (ret)
			return ret;
		done += n;
	}
	return 0;
}

int snd_q_close(struct relay_sender *s, struct sfile *f, uint64_t size,
		const char *final, int unlink_it)
{
	size_t n = final ? strlen(final) : 0;
	struct msg *m = snd_msg_new(s, RELAY_CLOSE, 8 + 4 + 8 + 4 + 2 + n);

	if (!m)
		return -ENOMEM;
	unsigned char *p = m->frame + RELAY_HDR + 8;
	put32(p, f->id);
	put64(p + 4, size);
	put32(p + 12, unlink_it ? RELAY_CLOSE_UNLINK : 0);
	put16(p + 16, (uint16_t)n);
	if (n)
		memcpy(p + 18, final, n);
	int ret = snd_enqueue_locked(s, m, 0);
	if (!ret)
		f->close_seq = s->next_seq;
	return ret;
}
