/* SPDX-License-Identifier: MIT */
/* The relay sender's sink: the consumer's callbacks, on its thread, turning the files it writes into queued frames (docs/relay.md §5). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relay/sender_int.h"

/* ---- files -------------------------------------------------------------- */

static unsigned hash_of(const char *p)
{
	uint32_t h = 2166136261u;
	while (*p)
		h = (h ^ (unsigned char)*p++) * 16777619u;
	return h % HASH;
}

struct sfile *snd_file_get(struct relay_sender *s, const char *path)
{
	for (struct sfile *f = s->hash[hash_of(path)]; f; f = f->hnext)
		if (!strcmp(f->path, path))
			return f;
	return NULL;
}

/* The path below root, or NULL (a snapshot elsewhere, ...). */
const char *snd_rel_of(const struct relay_sender *s, const char *path)
{
	if (strncmp(path, s->root, s->rootlen) || path[s->rootlen] != '/')
		return NULL;
	path += s->rootlen + 1;
	return relay_path_ok(path, strlen(path)) ? path : NULL;
}

struct sfile *snd_file_add(struct relay_sender *s, const char *path, int kind)
{
	struct sfile *f = snd_file_get(s, path);

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
	f->seq_bias = 0;
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
	const char *rel = snd_rel_of(s, path);

	if (!rel)
		return;
	pthread_mutex_lock(&s->mu);
	struct sfile *f = snd_file_add(s, path, kind_of(rel));
	if (f && f->kind == K_INDEX) {
		/* DIR/index/.cpuN.idx: the stream is DIR/cpuN */
		char sp[4200];
		const char *slash = strrchr(path, '/');
		int dl = (int)(slash - path) - (int)strlen("/index");
		unsigned cpu = 0;
		sscanf(slash + 1, ".cpu%u", &cpu);
		if (dl > 0) {
			snprintf(sp, sizeof(sp), "%.*s/cpu%u", dl, path, cpu);
			f->stream = snd_file_get(s, sp);
		}
	}
	if (f)
		snd_q_create(s, f);
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
	if (!snd_q_write(s, f, f->remote_next, p, sizeof(p), 0, 0))
		f->remote_next += f->psize;
}

/* Before the first packet kept after the stream's first ones were
 * dropped: a lead numbered just before the first dropped one, so that
 * readers see the gap. When that one is packet 0, there is no number
 * before it: the lead takes 0 and every packet after it is numbered one
 * more at the relay (f->seq_bias), so that the gap is still exact
 * (docs/relay.md, "Losses"). */
static void lead_if_needed(struct relay_sender *s, struct sfile *f)
{
	uint64_t seq, ts;

	if (f->kept_any || !f->have_first)
		return;
	memcpy(&seq, f->first_drop + STRATA_PKT_OFF_SEQ, 8);
	memcpy(&ts, f->first_drop + STRATA_PKT_OFF_TS_BEGIN, 8);
	synth_packet(s, f, f->first_drop, seq + f->seq_bias - 1, ts, 0);
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
			uint64_t seq;
			memcpy(f->first_drop, pkt, STRATA_PACKET_HEADER);
			memcpy(&seq, pkt + STRATA_PKT_OFF_SEQ, 8);
			f->have_first = 1;
			f->seq_bias = seq == 0;
		}
		memcpy(f->last_drop, pkt, STRATA_PACKET_HEADER);
		return;
	}
	if (f->lossy && f->drop_pending)
		lead_if_needed(s, f);
	uint64_t at = f->lossy ? f->remote_next : off;
	if (snd_q_write(s, f, at, pkt, len, 0, 1)) {
		s->st.packets_lost++; /* abandoned, or no memory */
		return;
	}
	f->kept_any = 1;
	f->drop_pending = 0;
	f->remote_next = at + f->psize;
}

/* Take mu and find the open file at `path`; NULL, with mu released,
 * when the relay is not told of it or it is closed already. */
static struct sfile *lock_open_file(struct relay_sender *s, const char *path)
{
	pthread_mutex_lock(&s->mu);
	struct sfile *f = snd_file_get(s, path);
	if (!f || !f->open) {
		pthread_mutex_unlock(&s->mu);
		return NULL;
	}
	return f;
}

static void on_write(void *ctx, const char *path, uint64_t off,
		     const void *buf, size_t len)
{
	struct relay_sender *s = ctx;
	struct sfile *f = lock_open_file(s, path);

	if (!f)
		return;
	if (f->kind == K_STREAM) {
		stream_packet(s, f, off, buf, len);
	} else if (!f->lossy && !(f->stream && f->stream->lossy)) {
		/* index bytes: one lost makes the index unpublishable at
		 * the relay (readers then rebuild it from the stream) */
		if (snd_q_write(s, f, off, buf, len, f->kind == K_INDEX, 0))
			f->lossy = 1;
	}
	pthread_mutex_unlock(&s->mu);
}

static void on_metadata(void *ctx, const char *path, const char *text,
			size_t len)
{
	struct relay_sender *s = ctx;
	const char *rel = snd_rel_of(s, path);

	if (!rel || len > RELAY_CHUNK)
		return;
	pthread_mutex_lock(&s->mu);
	struct sfile *f = snd_file_get(s, path);
	if (!f && (f = snd_file_add(s, path, K_META)))
		f->open = 0; /* a name only: never CREATEd (reopen(), sender_net.c) */
	size_t n = strlen(rel);
	struct msg *m = f ? snd_msg_new(s, RELAY_METADATA, 8 + 2 + n + len) : NULL;
	if (m) {
		unsigned char *p = m->frame + RELAY_HDR + 8;
		put16(p, (uint16_t)n);
		memcpy(p + 2, rel, n);
		memcpy(p + 2 + n, text, len);
		snd_enqueue_locked(s, m, 0);
	}
	pthread_mutex_unlock(&s->mu);
}

static void on_close(void *ctx, const char *path, uint64_t size,
		     const char *final, int keep)
{
	struct relay_sender *s = ctx;
	struct sfile *f = lock_open_file(s, path);

	if (!f)
		return;
	if (f->kind == K_STREAM) {
		if (f->lossy && f->drop_pending) {
			uint64_t seq, ts, disc;
			lead_if_needed(s, f);
			memcpy(&seq, f->last_drop + STRATA_PKT_OFF_SEQ, 8);
			memcpy(&ts, f->last_drop + STRATA_PKT_OFF_TS_END, 8);
			memcpy(&disc, f->last_drop + STRATA_PKT_OFF_DISCARDED, 8);
			synth_packet(s, f, f->last_drop, seq + 1 + f->seq_bias,
				     ts, disc);
		}
		snd_q_close(s, f, f->lossy ? f->remote_next : size, NULL, 0);
	} else {
		const char *frel = final ? snd_rel_of(s, final) : NULL;
		int drop = !keep || f->lossy || (f->stream && f->stream->lossy) ||
			   (final && !frel);
		snd_q_close(s, f, size, drop ? NULL : frel, drop);
		/* the sweep must not send it either: an index that does not
		 * match the relay's stream is worse than none */
		struct sfile *g = frel ? snd_file_add(s, final, K_META) : NULL;
		if (g)
			g->open = 0;
	}
	f->open = 0;
	pthread_mutex_unlock(&s->mu);
}

void snd_sink_init(struct relay_sender *s)
{
	s->sink = (struct cons_sink){
		.ctx = s,
		.on_file_create = on_file_create,
		.on_write = on_write,
		.on_metadata = on_metadata,
		.on_close = on_close,
	};
}
