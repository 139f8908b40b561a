/* SPDX-License-Identifier: MIT */
/* A stream's packet index (format.md §7): loaded from its index file,
 * built from the packet headers, checked against them, and the totals
 * and time spans made from it. */
#define _GNU_SOURCE /* SEEK_DATA */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "open.h"

/* The packets index file `path` lists (format.md §7); 0 when it is
 * missing or unusable. */
uint64_t rd_index_packets(const char *path)
{
	struct stat st;
	const char *kind;
	uint8_t h[STRATA_IDX_HEADER_SIZE];
	uint64_t n = 0;
	int fd = rd_open_regular(path, &st, &kind);
	if (fd < 0)
		return 0;
	if (st.st_size >= STRATA_IDX_HEADER_SIZE &&
	    pread(fd, h, sizeof(h), 0) == STRATA_IDX_HEADER_SIZE &&
	    rd_be32(h) == RD_INDEX_MAGIC &&
	    rd_be32(h + STRATA_IDX_HDR_OFF_ENTRY_SIZE) >= RD_INDEX_ENTRY)
		n = ((uint64_t)st.st_size - STRATA_IDX_HEADER_SIZE) /
		    rd_be32(h + STRATA_IDX_HDR_OFF_ENTRY_SIZE);
	close(fd);
	return n;
}

int rd_load_index(struct strata_trace *t, struct rd_stream *s, int sfd)
{
	struct stat st;
	const char *kind;
	int fd = rd_open_regular(s->idxpath, &st, &kind);
	if (fd == -ENOENT)
		return -ENOENT; /* a cache: missing is normal */
	int rc = -EINVAL;
	uint8_t *buf = NULL;
	struct rd_packet *pk = NULL;
	char why[192] = "unreadable";
	if (fd < 0) {
		if (kind)
			snprintf(why, sizeof(why), "is %s, not a regular file", kind);
		else
			snprintf(why, sizeof(why), "cannot be opened: %s", strerror(-fd));
		goto bad;
	}
	if (st.st_size < 16 || st.st_size > (1ll << 32))
		goto bad;
	buf = malloc(st.st_size);
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}
	if (pread(fd, buf, st.st_size, 0) != st.st_size)
		goto bad;
	uint32_t esz = rd_be32(buf + STRATA_IDX_HDR_OFF_ENTRY_SIZE);
	snprintf(why, sizeof(why), "bad header");
	if (rd_be32(buf) != RD_INDEX_MAGIC ||
	    rd_be32(buf + STRATA_IDX_HDR_OFF_MAJOR) != 1 || esz < RD_INDEX_ENTRY)
		goto bad;
	uint64_t n = (st.st_size - STRATA_IDX_HEADER_SIZE) / esz;
	uint64_t want = (s->size + s->packet_size - 1) / s->packet_size;
	/* past the last packet listed, a hole to the end of the file (no
	 * data there for SEEK_DATA): nothing an index could list, a
	 * zero-filled tail reported below */
	uint64_t listed = n * s->packet_size;
	bool tail = n < want && sfd >= 0 && lseek(sfd, (off_t)listed, SEEK_DATA) < 0 &&
		    errno == ENXIO;
	snprintf(why, sizeof(why), "packet count differs from the stream file");
	if (n != want && !tail)
		goto bad;
	pk = calloc(n ? n : 1, sizeof(*pk));
	if (!pk) {
		rc = -ENOMEM;
		goto out;
	}
	for (uint64_t i = 0; i < n; i++) {
		const uint8_t *e = buf + STRATA_IDX_HEADER_SIZE + i * esz;
		pk[i].offset = rd_be64(e + STRATA_IDX_OFF_OFFSET);
		pk[i].content = rd_be64(e + STRATA_IDX_OFF_CONTENT_SIZE) / 8;
		pk[i].ts_begin = rd_be64(e + STRATA_IDX_OFF_TS_BEGIN);
		pk[i].ts_end = rd_be64(e + STRATA_IDX_OFF_TS_END);
		pk[i].discarded = rd_be64(e + STRATA_IDX_OFF_DISCARDED);
		pk[i].seq = rd_be64(e + STRATA_IDX_OFF_SEQ);
		snprintf(why, sizeof(why), "entry %" PRIu64 " inconsistent with the stream file", i);
		if (pk[i].offset != i * s->packet_size ||
		    rd_be64(e + STRATA_IDX_OFF_PACKET_SIZE) != s->packet_size * 8 ||
		    pk[i].content > s->packet_size || pk[i].content < RD_HEADER_SIZE ||
		    pk[i].content % (s->sclass ? 4 : 8) ||
		    pk[i].offset + pk[i].content > s->size ||
		    pk[i].ts_end < pk[i].ts_begin)
			goto bad;
		/* in a stream, packets follow each other in time, their
		 * sequence numbers grow and events_discarded never shrinks
		 * (format.md §2): the entries between the first and the last,
		 * which are checked against their headers at once
		 * (open_stream), cannot make the stream's totals lie */
		snprintf(why, sizeof(why), "entry %" PRIu64 " out of order with the one before "
			 "(timestamps, packet_seq_num or events_discarded)", i);
		if (i && (pk[i].ts_begin < pk[i - 1].ts_end || pk[i].seq <= pk[i - 1].seq ||
			  pk[i].discarded < pk[i - 1].discarded))
			goto bad;
		/* cpu/pid/tid come from the header, compared with the entry
		 * when the packet is entered (rd_packet_check) */
		pk[i].cpu = UINT32_MAX;
		pk[i].flags = RD_PK_UNCHECKED;
	}
	s->packets = pk;
	s->npackets = n;
	pk = NULL;
	rc = 0;
	if (tail) {
		struct rd_zrun z = { listed, n ? s->packets[n - 1].ts_end : 0, true, true };
		rd_zrun_end(t, s, &z, s->size);
	}
	goto out;
bad:
	rd_report(t, STRATA_PROBLEM_INDEX, s->idxpath, 0, 0, 0,
		  "index %s; rebuilt from packet headers", why);
out:
	free(pk);
	free(buf);
	if (fd >= 0)
		close(fd);
	return rc;
}

/*
 * A followed stream's last packet still being written (docs/reader.md,
 * "Following a live trace"): its header not all there, or its content
 * not yet. The writer appends packets in order, and a file's size covers
 * only bytes written (buffered writes grow it page by page, direct ones
 * when they complete), so a packet whose content the file holds is whole.
 */
static bool follow_unfinished(const struct rd_stream *s, const struct rd_packet *p,
			      uint64_t hl, const char *why)
{
	if (hl < RD_HEADER_SIZE)
		return true;
	return !why && p->offset + p->content > s->size;
}

/* Packets indexed so far, with room for cap (index_scan). */
struct rd_scan {
	struct rd_packet *pk;
	uint64_t n, cap;
};

/*
 * Index the slots of s from `off` (a packet boundary) to `limit`, onto
 * sc (format.md §7: packets have a fixed size, so this reads one header
 * per packet and no events). nslots 0: zero-filled slots are left out (a
 * sparse tail of any size costs no memory); else they are kept as skipped
 * entries (rd_build_index). A followed stream stops at its first packet
 * not yet whole, or at a zero-filled tail (a hole the writer may still
 * fill), and sets s->size there: the next scan resumes at it.
 */
static int index_scan(struct strata_trace *t, struct rd_stream *s, int fd, uint64_t off,
		      uint64_t limit, uint64_t nslots, struct rd_scan *sc)
{
	const uint64_t psz = s->packet_size;
	uint64_t last_end = 0, dropped = off;
	struct rd_zrun z = { 0 };
	for (uint64_t k = sc->n; k-- > 0;)
		if (!(sc->pk[k].flags & RD_PK_BAD)) {
			last_end = sc->pk[k].ts_end;
			break;
		}
	while (off < limit) {
		const char *why;
		if (off - dropped >= (8u << 20)) {
			/* header pages read so far (the kernel maps some around
			 * each): given back as we go, so that resident memory
			 * does not grow with the file */
			madvise((void *)s->map, off & ~(uint64_t)4095, MADV_DONTNEED);
			dropped = off;
		}
		uint64_t hl = s->size - off < RD_HEADER_SIZE ? s->size - off : RD_HEADER_SIZE;
		if (rd_all_zero(s->map + off, hl)) {
			if (!z.on)
				z = (struct rd_zrun){ off, last_end, true, false };
			uint64_t next = rd_skip_zeros(fd, off, psz, limit, &z.hole);
			if (t->follow && !nslots && next >= limit) {
				s->size = z.start; /* perhaps not written yet */
				z.on = false;
				break;
			}
			for (; nslots && off < next; off += psz)
				sc->pk[sc->n++] = (struct rd_packet){ .offset = off,
								      .ts_begin = last_end,
								      .ts_end = last_end,
								      .flags = RD_PK_BAD };
			off = next;
			continue;
		}
		rd_zrun_end(t, s, &z, off);
		if (sc->n == sc->cap) {
			uint64_t cap = sc->cap ? 2 * sc->cap : 64;
			struct rd_packet *np = realloc(sc->pk, cap * sizeof(*np));
			if (!np)
				return -ENOMEM;
			sc->pk = np;
			sc->cap = cap;
		}
		struct rd_packet *p = &sc->pk[sc->n++];
		*p = (struct rd_packet){ .offset = off };
		if (hl < RD_HEADER_SIZE)
			why = "truncated packet header";
		else
			why = rd_check_header(s, off, psz, p);
		if (t->follow && follow_unfinished(s, p, hl, why)) {
			sc->n--;
			s->size = off; /* read up to it, next time past it */
			break;
		}
		off += psz;
		if (why) {
			rd_report(t, STRATA_PROBLEM_DAMAGED, s->path, p->offset, 0, last_end,
				  "%s; packet skipped", why);
			*p = (struct rd_packet){ .offset = off - psz, .ts_begin = last_end,
						 .ts_end = last_end, .flags = RD_PK_BAD };
			continue;
		}
		if (p->offset + p->content > s->size) {
			rd_report(t, STRATA_PROBLEM_DAMAGED, s->path, s->size, 0,
				  p->ts_begin,
				  "file truncated inside a packet (content ends at %" PRIu64
				  "); reading what is there", p->offset + p->content);
			p->content = (s->size - p->offset) & ~7ull;
			/* the event cut by the end of file is this same damage */
			p->flags |= RD_PK_DAMAGE_REPORTED;
		}
		if (p->ts_begin < last_end) {
			rd_report(t, STRATA_PROBLEM_DAMAGED, s->path, p->offset, 0, last_end,
				  "packet begins before the previous one ends; packet skipped");
			p->flags = RD_PK_BAD;
			p->ts_begin = p->ts_end = last_end;
			continue;
		}
		last_end = p->ts_end;
	}
	rd_zrun_end(t, s, &z, limit);
	return 0;
}

/*
 * The index from the packet headers. nslots 0: the whole file; else
 * exactly nslots slots, zero-filled ones kept as skipped entries: the
 * rebuild of a loaded index keeps every packet at its index, which
 * cursors hold. fd: the stream file, for its holes (rd_skip_zeros), or -1.
 */
int rd_build_index(struct strata_trace *t, struct rd_stream *s, int fd, uint64_t nslots)
{
	uint64_t limit = nslots ? nslots * s->packet_size : s->size;
	if (limit > s->size)
		limit = s->size;
	struct rd_scan sc = { calloc(nslots ? nslots : 64, sizeof(*sc.pk)), 0,
			      nslots ? nslots : 64 };
	if (!sc.pk)
		return -ENOMEM;
	int rc = index_scan(t, s, fd, 0, limit, nslots, &sc);
	if (rc < 0) {
		free(sc.pk);
		return rc;
	}
	s->packets = sc.pk;
	s->npackets = sc.n;
	return 0;
}

int rd_extend_index(struct strata_trace *t, struct rd_stream *s, int fd, uint64_t size)
{
	const uint64_t psz = s->packet_size;
	/* the slot after the last one scanned: s->size is where the last
	 * scan stopped, or inside the last slot when its padding was not
	 * all written */
	uint64_t from = (s->size + psz - 1) / psz * psz;
	struct rd_scan sc = { s->packets, s->npackets, s->npackets };
	s->size = size;
	int rc = index_scan(t, s, fd, from, size, 0, &sc);
	s->packets = sc.pk; /* moved, perhaps, before running out */
	s->npackets = sc.n;
	return rc;
}

/* Totals of a stream from its index (events_discarded is cumulative):
 * its packets from `from` on added to the totals of those before (a
 * followed stream's new packets, follow_read.c), or all of them (0). */
void rd_stream_totals(struct rd_stream *s, uint64_t from)
{
	const struct rd_packet *prev = NULL;
	if (!from) {
		s->begin = UINT64_MAX;
		s->end = 0;
		s->discarded = 0;
		s->packets_lost = 0;
	}
	for (uint64_t k = from; k-- > 0;)
		if (!(s->packets[k].flags & RD_PK_BAD)) {
			prev = &s->packets[k];
			break;
		}
	if (!prev)
		s->begin = UINT64_MAX;
	for (uint64_t i = from; i < s->npackets; i++) {
		const struct rd_packet *p = &s->packets[i];
		if (p->flags & RD_PK_BAD)
			continue;
		if (p->ts_begin < s->begin)
			s->begin = p->ts_begin;
		if (p->ts_end > s->end)
			s->end = p->ts_end;
		if (p->discarded > s->discarded)
			s->discarded = p->discarded;
		if (prev) {
			/* damaged or zero-filled slots between the two explain
			 * part of a gap of packet_seq_num */
			uint64_t slots = (p->offset - prev->offset) / s->packet_size - 1;
			if (p->seq > prev->seq + 1 + slots)
				s->packets_lost += p->seq - prev->seq - 1 - slots;
		}
		prev = p;
	}
	if (!prev)
		s->begin = s->end = 0;
}

/* The trace's time span: its streams' (those with a readable packet). */
void rd_trace_span(struct strata_trace *t)
{
	t->begin = UINT64_MAX;
	t->end = 0;
	for (unsigned i = 0; i < t->nstreams; i++) {
		const struct rd_stream *s = &t->streams[i];
		bool any = false;
		for (uint64_t p = 0; p < s->npackets && !any; p++)
			any = !(s->packets[p].flags & RD_PK_BAD);
		if (!any)
			continue;
		/* s->sub may not be set yet (stream.c): by index */
		const struct rd_subtrace *sub = &t->subs[s->subidx];
		uint64_t b = rd_sub_time(sub, s->begin); /* offset.c */
		uint64_t e = rd_sub_time(sub, s->end);
		if (b < t->begin)
			t->begin = b;
		if (e > t->end)
			t->end = e;
	}
	if (t->begin == UINT64_MAX)
		t->begin = 0;
}

/* Rebuild an index-loaded stream's index from its packet headers, the
 * same slots (rd_build_index), keeping what was reported already. */
static int rebuild_index(struct strata_trace *t, struct rd_stream *s)
{
	struct rd_packet *old = s->packets;
	uint64_t n = s->npackets;
	struct stat st;
	const char *kind;
	int fd = rd_open_regular(s->path, &st, &kind);
	int rc = rd_build_index(t, s, fd < 0 ? -1 : fd, n);
	if (fd >= 0)
		close(fd);
	if (rc < 0)
		return rc;
	for (uint64_t i = 0; i < n; i++)
		s->packets[i].flags |= old[i].flags & (RD_PK_SEQ_REPORTED | RD_PK_DISC_REPORTED |
						       RD_PK_DAMAGE_REPORTED);
	free(old);
	rd_stream_totals(s, 0);
	rd_trace_span(t);
	return 0;
}

/* Whether an index entry's field (idx) differs from its header's (hdr);
 * says how in why. */
static bool differs(char *why, size_t n, const char *name, uint64_t idx, uint64_t hdr)
{
	if (idx == hdr)
		return false;
	snprintf(why, n, "%s %" PRIu64 " where the header says %" PRIu64, name, idx, hdr);
	return true;
}

int rd_packet_check(struct strata_trace *t, struct rd_stream *s, uint64_t i)
{
	struct rd_packet *p = &s->packets[i], h;
	char why[256];
	if (!(p->flags & RD_PK_UNCHECKED))
		return 0;
	const char *bad = rd_check_header(s, p->offset, s->packet_size, &h);
	if (bad)
		snprintf(why, sizeof(why), "the packet header: %s", bad);
	else if (!differs(why, sizeof(why), "content_size (bytes)", p->content, h.content) &&
		 !differs(why, sizeof(why), "timestamp_begin", p->ts_begin, h.ts_begin) &&
		 !differs(why, sizeof(why), "timestamp_end", p->ts_end, h.ts_end) &&
		 !differs(why, sizeof(why), "events_discarded", p->discarded, h.discarded) &&
		 !differs(why, sizeof(why), "packet_seq_num", p->seq, h.seq)) {
		p->cpu = h.cpu;
		p->pid = h.pid;
		p->tid = h.tid;
		p->flags &= ~RD_PK_UNCHECKED;
		return 0;
	}
	rd_report(t, STRATA_PROBLEM_INDEX, s->idxpath, STRATA_IDX_HEADER_SIZE + i * RD_INDEX_ENTRY, 0,
		  p->ts_begin,
		  "entry %" PRIu64 " (packet at offset %" PRIu64 "): %s; index rebuilt "
		  "from packet headers", i, p->offset, why);
	if (rebuild_index(t, s) == 0)
		return 1;
	/* no memory for another index: this packet alone is given up */
	rd_report(t, STRATA_PROBLEM_DAMAGED, s->path, p->offset, 0, p->ts_begin,
		  "out of memory rebuilding the index; packet skipped");
	p->flags = (p->flags & ~RD_PK_UNCHECKED) | RD_PK_BAD;
	return 0;
}
