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

/*
 * Frames of packets are large (a packet's content, up to RELAY_CHUNK) and
 * each lives a round trip. From malloc, they came from fresh pages every
 * time: glibc hands a chunk past its mmap threshold back to the kernel
 * when freed (or trims the thread's arena under it), so the consumer's
 * memcpy into the next one faulted in and zeroed every page of it and the
 * sender's free unmapped them again, a third of the streaming sender's CPU
 * (docs/relay.md, "Benchmark"). Large frames freed are kept here instead,
 * up to SPARE_MAX bytes, and reused for frames that fill at least half of
 * one; their capacity is a multiple of SPARE_STEP so that packets of one
 * stream, whose sizes differ by their last events, fit each other's.
 */
#define SPARE_MIN (64u << 10)
#define SPARE_STEP (64u << 10)
#define SPARE_MAX (16u << 20)

/* Under mu. */
struct msg *snd_msg_new(struct relay_sender *s, uint32_t type, size_t plen)
{
	size_t need = RELAY_HDR + plen, cap = need;
	struct msg *m = NULL;

	if (need >= SPARE_MIN) {
		for (struct msg **pp = &s->spare; *pp; pp = &(*pp)->next) {
			if ((*pp)->cap >= need && (*pp)->cap / 2 <= need) {
				m = *pp;
				*pp = m->next;
				s->spare_bytes -= m->cap;
				cap = m->cap;
				break;
			}
		}
		if (!m)
			cap = (need + SPARE_STEP - 1) / SPARE_STEP * SPARE_STEP;
	}
	if (!m && !(m = malloc(sizeof(*m) + cap)))
		return NULL;
	memset(m, 0, sizeof(*m));
	m->type = type;
	m->len = need;
	m->cap = cap;
	put32(m->frame, type);
	put32(m->frame + 4, (uint32_t)plen);
	return m;
}

/* A frame done with (acknowledged, dropped): kept as a spare, or freed.
 * Under mu. */
void snd_msg_free_locked(struct relay_sender *s, struct msg *m)
{
	if (m->cap < SPARE_MIN || s->spare_bytes + m->cap > SPARE_MAX) {
		free(m);
		return;
	}
	m->next = s->spare;
	s->spare = m;
	s->spare_bytes += m->cap;
}

void snd_spare_free(struct relay_sender *s)
{
	while (s->spare) {
		struct msg *m = s->spare;
		s->spare = m->next;
		free(m);
	}
	s->spare_bytes = 0;
}

/* Give m a seq and queue it. A droppable frame (a packet, index bytes)
 * that does not fit the budget is freed: returns -ENOBUFS. Others go in
 * up to the hard limit, past which the relay is given up (everything
 * from then on counts as lost): -ENOBUFS too. */
int snd_enqueue_locked(struct relay_sender *s, struct msg *m, int droppable)
{
	if (s->abandoned || (droppable && s->queued + m->len > s->budget)) {
		snd_msg_free_locked(s, m);
		return -ENOBUFS;
	}
	if (s->queued + m->len > s->hard) {
		s->abandoned = 1;
		snprintf(s->st.error, sizeof(s->st.error),
			 "more than %zu bytes waiting: the relay is given up",
			 s->hard);
		snd_msg_free_locked(s, m);
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
	/* One wake per sleep, not per frame: a thread that is not idle
	 * looks at the cursor again before it sleeps (pump()) */
	if (s->idle) {
		s->idle = 0;
		snd_wake(s);
	}
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

/* A stream packet's header in its frame, renumbered for the relay's copy
 * (docs/relay.md §5, "Losses"): before the frame is queued, since the
 * sender's thread may send it as soon as it is. */
static void bias_seq(unsigned char *pkt, uint64_t bias)
{
	uint64_t seq;

	memcpy(&seq, pkt + STRATA_PKT_OFF_SEQ, 8);
	seq += bias;
	memcpy(pkt + STRATA_PKT_OFF_SEQ, &seq, 8);
}

/* `len` bytes at `off` of f, in frames of at most RELAY_CHUNK; a stream
 * `packet` is renumbered by f->seq_bias. */
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
		if (packet && k == 0 && f->seq_bias)
			bias_seq(p + 12, f->seq_bias);
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
