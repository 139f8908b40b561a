/* SPDX-License-Identifier: MIT */
/* A packet's events (its closer's count, or the walk), the compact ids, and the metadata the ids seen make the consumer rewrite. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "consumer/cons_int.h"
#include "lib/registry.h"

static const struct strata_event_desc *event_lookup(struct cons *c, uint32_t id)
{
	if (c->external)
		return c->src.lookup ? c->src.lookup(c->src.ctx, (uint8_t)(id >> 16),
						     (uint16_t)id)
				     : NULL;
	return strata_event_lookup((uint8_t)(id >> 16), (uint16_t)id);
}

static int is_blob(struct cons *c, uint32_t id)
{
	if (!c->external)
		return registry_is_blob(id);
	return c->src.is_blob && c->src.is_blob(c->src.ctx, id);
}

uint64_t cons_generation(struct cons *c)
{
	if (c->external)
		return c->src.generation ? c->src.generation(c->src.ctx) : 0;
	return strata_registry_generation();
}

/*
 * Learn the compact ids given since we last looked, from every ring's
 * table (docs/compact.md: one ring may lag another for an id given while
 * it was being made) and, in the traced process itself, from the
 * process's own. Entries are only ever added; one from another process's
 * ring that is not an entry (a bad length) is ignored.
 */
static void cids_refresh(struct cons *c)
{
	for (uint32_t i = 1; i < STRATA_NCIDS; i++) {
		if (c->cids[i])
			continue;
		uint64_t e = c->external ? 0 : ring_cid_entry(i);

		for (unsigned cpu = 0; !e && cpu < c->max_cpu; cpu++) {
			struct cons_stream *s = c->streams[cpu];
			if (s)
				e = strata_load_relaxed(&s->ring->ctl->cids[i]);
		}
		if (!(e & STRATA_CID_VALID))
			continue;
		uint32_t words = (uint32_t)(e >> 32) & 0x7fffffff;
		if (words == 0 || words > STRATA_MAX_WORDS)
			continue;
		c->cids[i] = e;
		c->meta_dirty = 1;
	}
}

/* The class of compact id `cid`: full id | words << 32, or 0. */
static uint64_t cid_lookup(struct cons *c, uint32_t cid)
{
	if (!c->cids[cid])
		cids_refresh(c);
	return c->cids[cid];
}

/*
 * One event of stream class 1 (docs/compact.md) at p, with `room` bytes
 * of content from p: its length in bytes, or 0 when it is damaged (id
 * 0, a compact id nobody gave, an extended length that is impossible or
 * past the content). *id is its full event id when known (compact ids
 * 10-30 map to one), else its CTF id; *ts follows the clock.
 */
uint32_t cons_event_at(struct cons *c, const unsigned char *p, uint64_t room,
		       uint32_t *id, uint64_t *ts)
{
	uint32_t h, cid, len;
	uint64_t e;

	if (room < 4)
		return 0;
	memcpy(&h, p, 4);
	cid = h & 31;
	if (cid == STRATA_CID_EXT) {
		len = (h >> 5) * 4;
		if (room < STRATA_HDR_EXTENDED || len < STRATA_HDR_EXTENDED ||
		    len > room || (len - STRATA_HDR_EXTENDED) % 8)
			return 0;
		memcpy(id, p + 4, 4);
		memcpy(ts, p + 8, 8);
		if (*id - STRATA_CID_USER < STRATA_CID_EXT - STRATA_CID_USER &&
		    (e = cid_lookup(c, *id)))
			*id = (uint32_t)e;
		return len;
	}
	if (cid == 0 || !(e = cid_lookup(c, cid)))
		return 0;
	len = STRATA_HDR_COMPACT + 8 * ((uint32_t)(e >> 32) & 0x7fffffff) - 8;
	if (len > room)
		return 0;
	*id = (uint32_t)e;
	*ts += ((h >> 5) - *ts) & ((1u << STRATA_TS_BITS) - 1);
	return len;
}

/*
 * Walk the events of a packet: count them, and note ids never seen before
 * so that the metadata declares them (format.md §6; those with a compact
 * id are declared from the table). The packet is our own memory, but a
 * writer bug must not make the consumer crash: every length is checked
 * against the content.
 */
uint64_t cons_scan_events(struct cons *c, const unsigned char *pkt,
			  uint64_t content)
{
	const unsigned char *p = pkt + STRATA_PACKET_HEADER;
	const unsigned char *end = pkt + content;
	uint64_t n = 0, ts = 0;
	uint32_t last = 0; /* an id known to be seen (0: strata's own) */

	while (p < end) {
		uint32_t id, h;
		uint32_t len = cons_event_at(c, p, (uint64_t)(end - p), &id, &ts);

		/* Each event's length leads to the next: a chain of loads
		 * through lines another CPU has just written. Ask for the
		 * lines ahead so that the misses overlap. */
		__builtin_prefetch(p + 512);
		if (len == 0) {
			slog_once("%s: damaged event in a packet (at byte %u): "
				  "rest of the packet not counted", c->dir,
				  (unsigned)(p - pkt));
			break;
		}
		memcpy(&h, p, 4);
		/* a user event: a full id, or a compact id not yet in the
		 * table (extended, docs/compact.md); a major-0 id above the
		 * compact ones (strata:build_id) is strata's own */
		if (strata_header_id_user(id)) {
			n++;
			/* compact ids: declared from the table */
			if (id == last || (h & 31) != STRATA_CID_EXT || !(id >> 16))
				goto next;
			last = id;
			if (!(c->seen[id >> 3] & (1u << (id & 7)))) {
				c->seen[id >> 3] |= (uint8_t)(1u << (id & 7));
				if (!event_lookup(c, id)) {
					if (c->nraw == c->cap_raw) {
						size_t cap = c->cap_raw ? c->cap_raw * 2 : 32;
						void *np = realloc(c->raw, cap * sizeof(*c->raw));
						if (!np)
							goto next;
						c->raw = np;
						c->cap_raw = cap;
					}
					c->raw[c->nraw++] = (struct meta_raw){
						.id = id,
						.words = (uint16_t)((len - STRATA_HDR_EXTENDED) / 8 + 1),
						.blob = (uint8_t)is_blob(c, id),
					};
					c->meta_dirty = 1;
				}
			}
		}
next:
		p += len;
	}
	return n;
}

/*
 * The program's events in a packet, without the walk where its closer
 * counted them (ring.md §7, `counted`): a ring written with restartable
 * sequences counts each packet's events in `xr`, and its closer publishes
 * the count in the header's `events`. Such a packet is walked only when
 * one of its events has a full id (STRATA_PKT_EVENTS_FULL_ID): one the
 * consumer may not know yet (a descriptor that has not arrived, an id
 * declared raw). Its compact ids are in the table: those given since we
 * last looked are learnt here, and the metadata is rewritten for them and
 * for descriptors registered since, before the packet is written
 * (format.md §1). The walk touches every line of the packet, which the
 * producer's CPU has just written: it was half of the consumer's time
 * (BENCHMARKS.md). A count that cannot be right (more events than
 * 4-byte headers fit) is not trusted: walked. The count is left in the
 * packet's `events`, exact on disk whichever way it was found.
 */
uint64_t cons_packet_events(struct cons *c, unsigned char *pkt,
			    uint64_t content, int counted)
{
	uint32_t ev;
	uint64_t n;

	memcpy(&ev, pkt + STRATA_PKT_OFF_EVENTS, 4);
	if (counted && !(ev & STRATA_PKT_EVENTS_FULL_ID) &&
	    ev <= (content - STRATA_PACKET_HEADER) / STRATA_HDR_COMPACT) {
		n = ev;
		cids_refresh(c);
		if (c->reg_gen != cons_generation(c))
			c->meta_dirty = 1;
	} else {
		n = cons_scan_events(c, pkt, content);
	}
	ev = (uint32_t)n;
	memcpy(pkt + STRATA_PKT_OFF_EVENTS, &ev, 4);
	return n;
}

void cons_update_metadata(struct cons *c)
{
	struct meta_info mi;
	char comm[64] = "";

	memset(&mi, 0, sizeof(mi));
	if (c->passive) {
		/* No calibration record in another process's ring (nor in a
		 * snapshot): the fit runs from the session's first point to
		 * now. */
		clock_point_take(&c->cp_last);
		clock_fit(&c->cp_first, &c->cp_last, &c->freq_hz, &c->offset_ns);
	}
	if (c->external) {
		mi.pid = c->src.pid;
		mi.procname = c->src.procname;
		if (c->src.events)
			mi.events = c->src.events(c->src.ctx, &mi.nevents);
	} else {
		FILE *f = fopen("/proc/self/comm", "re");
		if (f) {
			if (fgets(comm, sizeof(comm), f))
				comm[strcspn(comm, "\n")] = 0;
			fclose(f);
		}
		mi.pid = strata_pid;
		mi.procname = comm;
	}
	c->reg_gen = cons_generation(c);
	/* An id first seen before its descriptor arrived (a traced process
	 * sends them a little after its first events) is declared from the
	 * descriptor from now on, never twice (babeltrace2 refuses). */
	for (size_t i = 0; i < c->nraw;) {
		if (event_lookup(c, c->raw[i].id)) {
			c->raw[i] = c->raw[--c->nraw];
		} else {
			/* a blob's id may arrive after its first events */
			c->raw[i].blob = (uint8_t)is_blob(c, c->raw[i].id);
			i++;
		}
	}
	if (!mi.events) /* this process's own events */
		mi.each_event = strata_registry_foreach;
	memcpy(mi.uuid, c->uuid, 16);
	clock_meta(&mi);
	mi.freq_hz = c->freq_hz;
	mi.offset_ns = c->offset_ns;
	mi.raw = c->raw;
	mi.nraw = c->nraw;
	cids_refresh(c);
	mi.cids = c->cids;
	/* Each discarded event with its cause (issue 24): the streams'
	 * rings count them by cause (another process's counters are its
	 * own word, as its packets' events_discarded are), the consumer
	 * what the disk refused. The last rewrite, at the end, has the
	 * final counts. */
	uint64_t lost[META_LOST_NCAUSES] = {0};
	for (unsigned cpu = 0; cpu < c->max_cpu; cpu++) {
		struct cons_stream *s = c->streams[cpu];
		for (int k = 0; s && k < STRATA_LOST_NCAUSES; k++)
			lost[k] += strata_load_relaxed(&s->ring->ctl->lost[k]);
		if (s)
			lost[STRATA_LOST_NCAUSES] += s->lost_io;
	}
	mi.lost = lost;
	int ret = meta_write(c->dir, &mi);
	if (ret) {
		cons_error(c, ret, "cannot write metadata", c->dir);
	} else {
		c->meta_dirty = 0;
		cons_sink_metadata(c);
	}
}

uint64_t cons_ring_pending(struct strata_ring *r, int external)
{
	struct cons *c = calloc(1, sizeof(*c));
	uint64_t w = strata_load_acquire(&r->ctl->write), n = 0;
	uint64_t b = strata_load_acquire(&r->ctl->consumed);

	if (!c)
		return 0;
	/* the compact ids: ours, or those the ring's process wrote in its
	 * control block (untrusted: cons_event_at() checks every length) */
	c->external = external;
	for (uint32_t i = 1; i < STRATA_NCIDS; i++) {
		uint64_t e = external ? strata_load_relaxed(&r->ctl->cids[i])
				      : ring_cid_entry(i);
		uint32_t words = (uint32_t)(e >> 32) & 0x7fffffff;
		if ((e & STRATA_CID_VALID) && words && words <= STRATA_MAX_WORDS)
			c->cids[i] = e;
	}
	/* Overwrite mode: the ring holds one lap. Not cons_window(): `w`
	 * is no packet boundary, and the lap is counted from the slot after
	 * the one `w` is in (the open packet's). */
	if (w - b > r->bufmask + 1)
		b = ring_packet_begin(r, w) - (r->bufmask + 1 - r->psize);
	for (b = ring_packet_begin(r, b); b < w; b += r->psize) {
		const unsigned char *pkt = ring_packet_addr(r, b);
		uint64_t content;
		memcpy(&content, pkt + STRATA_PKT_OFF_CONTENT_SIZE, 8);
		content /= 8;
		if (!ring_packet_complete(r, b))
			content = w - b < r->psize ? w - b : 0; /* the open one */
		if (content < STRATA_PACKET_HEADER || content > r->psize)
			continue;
		uint64_t ts = 0;
		for (uint64_t off = STRATA_PACKET_HEADER; off < content;) {
			uint32_t id, len = cons_event_at(c, pkt + off, content - off, &id, &ts);
			if (!len)
				break;
			n += (uint64_t)strata_header_id_user(id);
			off += len;
		}
	}
	free(c);
	return n;
}
