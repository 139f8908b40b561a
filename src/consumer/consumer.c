/* SPDX-License-Identifier: MIT */
/* Draining complete packets from rings into a CTF stream directory. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "common/format.h"
#include "common/log.h"
#include "common/tfile.h"
#include "consumer/consumer.h"
#include "consumer/metadata.h"
#include "lib/clock.h"
#include "lib/statedump.h"
#include "lib/registry.h"
#include "ring/ring.h"

/* Direct I/O: buffer address, length and file offset in multiples of this
 * (the page: as large as any device's logical block). */
#define DIO_ALIGN 4096u
#define IDX_BATCH 64

struct cons_stream {
	struct strata_ring *ring;
	uint32_t pid;       /* of the ring's process (index entries) */
	int fd;
	int idx_fd;
	int direct;        /* fd is O_DIRECT */
	int dead;          /* an I/O error stopped this stream */
	uint64_t lost_io;  /* events of this stream not written (I/O error) */
	uint64_t last_disc; /* events_discarded of the last packet written */
	uint64_t last_ts;   /* and its timestamp_end */
	/* the header and context of the last packet written, or of the
	 * first seen if none was (loss_trailer()); have_hdr: one is there */
	unsigned char last_hdr[STRATA_PACKET_HEADER];
	int have_hdr;
	uint64_t file_off; /* where the next packet goes */
	uint64_t faulted;  /* bytes of the ring's data faulted in (prefault()) */
	size_t idx_len;
	int idx_bad; /* a write failed: the index does not cover the stream */
	unsigned char idx_buf[STRATA_IDX_ENTRY * IDX_BATCH];
};

struct cons {
	char dir[4096];
	int mode;
	unsigned flush_ms;
	uint8_t uuid[16];
	pthread_t thread;
	int running;
	/* NULL: in-process. Else another process's rings (untrusted): each
	 * packet is copied to pktbuf before it is read. */
	struct cons_source src;
	int external;
	/* A snapshot (consumer/snapshot.c): packets come only through
	 * cons_write_copy(); nothing is drained or finished from the rings. */
	int snapshot;
	int passive; /* external || snapshot: no thread, rings are added */
	unsigned char *pktbuf; /* DIO_ALIGN-aligned */
	size_t pktbuf_size;
	unsigned char *tail;   /* DIO_ALIGN bytes, aligned: a packet's last page */
	unsigned char *bounce; /* aligned copy of an unaligned packet */
	size_t bounce_size;
	uint64_t salvaged, unsalvageable, dropped_bytes;

	struct cons_stream *streams[STRATA_MAX_CPUS];
	unsigned max_cpu; /* streams[] is filled below this */

	/* Ids seen in the rings: bit per 22-bit id, and those with no
	 * registered descriptor, declared as raw (format.md §6). */
	uint8_t *seen;
	struct meta_raw *raw;
	size_t nraw, cap_raw;
	int meta_dirty;
	uint64_t reg_gen;
	/* The compact ids of the rings' process (docs/compact.md): the
	 * union of the rings' tables, as read so far. */
	uint64_t cids[STRATA_NCIDS];

	struct clock_point cp_first, cp_last;
	uint64_t freq_hz;
	int64_t offset_ns;

	/* Written by the consumer thread, read by strata_get_stats(). */
	uint64_t packets, bytes, events, incomplete, internal;
	uint64_t lost_io; /* events not written: I/O error on their stream */
	int err; /* first I/O error, negative errno */
	/* A few blocks held back for the end, when a full disk stopped a
	 * stream: given up then so that the loss trailers, the index and
	 * the metadata can say what was not written (reserve_free()). */
	char reserve[4200];
	int reserve_held;
};

#define RESERVE_SIZE (256u << 10)

static void cons_error(struct cons *c, int err, const char *what,
		       const char *path)
{
	if (!c->err) {
		c->err = err;
		slog_detail("%s: %s: %s", path, what, strerror(-err));
	}
}

/* Hold RESERVE_SIZE bytes of the trace's file system, as a dot file that
 * readers skip (format.md §2, "Trailer"). Best effort. */
static void reserve_hold(struct cons *c)
{
	snprintf(c->reserve, sizeof(c->reserve), "%s/.reserve", c->dir);
	int fd = tfile_open(c->reserve, O_WRONLY | O_TRUNC);
	if (fd < 0)
		return;
	c->reserve_held = posix_fallocate(fd, 0, RESERVE_SIZE) == 0;
	close(fd);
	if (!c->reserve_held)
		unlink(c->reserve);
}

/* At the end: give the reserve back, to what comes after it. */
static void reserve_free(struct cons *c)
{
	if (c->reserve_held)
		unlink(c->reserve);
	c->reserve_held = 0;
}

/*
 * Write a packet's `content` bytes at the stream's current offset. Stream
 * files are opened with O_DIRECT where the file system takes it (docs/
 * record.md, "Direct I/O"): the kernel then moves the ring's pages to the
 * device without copying them into the page cache, which is most of a
 * buffered write's CPU cost (measured in BENCHMARKS.md). Direct I/O needs
 * aligned lengths: the whole pages of the content are written from the
 * packet itself, and its last partial page from a copy padded with zeros
 * (the ring is never written to). The rest of the packet stays a hole.
 * A file system that refuses direct writes gets buffered ones from then on.
 */
static int stream_write(struct cons *c, struct cons_stream *s,
			const unsigned char *pkt, uint64_t content)
{
	uint64_t whole = content & ~(uint64_t)(DIO_ALIGN - 1);
	uint64_t part = content - whole;
	struct iovec iov[2];
	int n = 0;

	if (!s->direct)
		goto buffered;
	if ((uintptr_t)pkt & (DIO_ALIGN - 1)) {
		/* a caller's copy (snapshots): through an aligned one */
		if (c->bounce_size < s->ring->psize) {
			free(c->bounce);
			c->bounce = aligned_alloc(DIO_ALIGN, s->ring->psize);
			c->bounce_size = c->bounce ? s->ring->psize : 0;
		}
		if (!c->bounce)
			goto no_direct;
		memcpy(c->bounce, pkt, content);
		pkt = c->bounce;
	}
	if (whole)
		iov[n++] = (struct iovec){(void *)pkt, whole};
	if (part) {
		memcpy(c->tail, pkt + whole, part);
		memset(c->tail + part, 0, DIO_ALIGN - part);
		iov[n++] = (struct iovec){c->tail, DIO_ALIGN};
	}
	size_t want = whole + (part ? DIO_ALIGN : 0);
	ssize_t got;
	do
		got = pwritev(s->fd, iov, n, (off_t)s->file_off);
	while (got < 0 && errno == EINTR);
	if (got == (ssize_t)want)
		return 0;
	if (got >= 0)
		return -ENOSPC; /* a short direct write: the device is full */
	if (errno != EINVAL)
		return -errno;
	/* The file system takes O_DIRECT at open but not this write. */
no_direct:;
	int fl = fcntl(s->fd, F_GETFL);
	if (fl < 0 || fcntl(s->fd, F_SETFL, fl & ~O_DIRECT) < 0)
		return -EINVAL;
	s->direct = 0;
buffered:
	return fmt_write_all(s->fd, pkt, content, (off_t)s->file_off);
}

static int idx_flush(struct cons *c, struct cons_stream *s)
{
	off_t end;
	int ret;

	if (!s->idx_len || s->idx_fd < 0)
		return 0;
	end = lseek(s->idx_fd, 0, SEEK_END);
	ret = end < 0 ? -errno
		      : fmt_write_all(s->idx_fd, s->idx_buf, s->idx_len, end);
	if (ret) {
		/* Keep the index a whole number of entries: a reader that
		 * finds it short rebuilds from the stream (format.md §7). */
		if (end >= 0 && ftruncate(s->idx_fd, end) < 0)
			(void)0;
		s->idx_bad = 1;
		cons_error(c, ret, "cannot write the packet index", c->dir);
	}
	s->idx_len = 0;
	return ret;
}

static struct cons_stream *stream_open(struct cons *c, struct strata_ring *r)
{
	char path[4200];
	struct cons_stream *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->ring = r;
	s->pid = c->external ? c->src.pid : strata_pid;
	snprintf(path, sizeof(path), "%s/cpu%u", c->dir, r->cpu);
	const char *dio = getenv("STRATA_DIRECT_IO");
	s->fd = -1;
	if (c->tail && !(dio && !strcmp(dio, "0"))) {
		s->fd = tfile_open(path, O_WRONLY | O_TRUNC | O_DIRECT);
		s->direct = s->fd >= 0;
	}
	if (s->fd < 0) /* EINVAL: no direct I/O on this file system */
		s->fd = tfile_open(path, O_WRONLY | O_TRUNC);
	if (s->fd < 0) {
		cons_error(c, s->fd, "cannot create stream file", path);
		s->dead = 1;
	}
	/* Written as a dot file that readers skip, and renamed into place
	 * when the stream is closed (close_stream()): babeltrace2 refuses a
	 * trace whose index does not cover its stream exactly, which a
	 * growing one never does, and builds one itself when there is none
	 * (a trace whose consumer was killed). format.md §7. */
	snprintf(path, sizeof(path), "%s/index/.cpu%u.idx", c->dir, r->cpu);
	s->idx_fd = tfile_open(path, O_WRONLY | O_TRUNC);
	if (s->idx_fd >= 0 && fmt_idx_begin(s->idx_fd)) {
		close(s->idx_fd);
		s->idx_fd = -1;
	}
	return s;
}

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

static uint64_t generation(struct cons *c)
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
		uint64_t e = c->external ? 0 : ring_cid_entry(i);

		for (unsigned cpu = 0; !e && cpu < c->max_cpu; cpu++) {
			struct cons_stream *s = c->streams[cpu];
			if (s)
				e = strata_load_relaxed(&s->ring->ctl->cids[i]);
		}
		if (c->cids[i] || !(e & STRATA_CID_VALID))
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
static uint32_t event_at(struct cons *c, const unsigned char *p, uint64_t room,
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
static uint64_t scan_events(struct cons *c, const unsigned char *pkt,
			    uint64_t content)
{
	const unsigned char *p = pkt + STRATA_PACKET_HEADER;
	const unsigned char *end = pkt + content;
	uint64_t n = 0, ts = 0;
	uint32_t last = 0; /* an id known to be seen (0: strata's own) */

	while (p < end) {
		uint32_t id, h;
		uint32_t len = event_at(c, p, (uint64_t)(end - p), &id, &ts);

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
		 * table (extended, docs/compact.md) */
		if ((id >> 16) || id >= STRATA_CID_USER) {
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
 * A packet of another process's ring, copied out of the shared mapping so
 * that what is checked is what is written. Its header must be one the
 * ring's process wrote for this trace (format.md §2): a packet with
 * another magic or uuid would make the whole stream unreadable.
 */
static int packet_ours(struct cons *c, const struct strata_ring *r,
		       const unsigned char *pkt, uint64_t begin)
{
	uint32_t magic;

	memcpy(&magic, pkt, 4);
	if (magic != STRATA_PKT_MAGIC ||
	    memcmp(pkt + STRATA_PKT_OFF_UUID, c->uuid, 16)) {
		slog("%s/cpu%u: packet %llu has a bad magic or uuid: skipped",
		     c->dir, r->cpu, (unsigned long long)(begin >> r->pshift));
		return 0;
	}
	return 1;
}

static const unsigned char *copy_packet(struct cons *c, struct cons_stream *s,
					uint64_t begin)
{
	struct strata_ring *r = s->ring;

	memcpy(c->pktbuf, ring_packet_addr(r, begin), r->psize);
	return packet_ours(c, r, c->pktbuf, begin) ? c->pktbuf : NULL;
}

static void update_metadata(struct cons *c);

/* Write one packet (`pkt`: its bytes, in the ring or a private copy). */
static void write_packet_buf(struct cons *c, struct cons_stream *s,
			     const unsigned char *pkt, uint64_t begin)
{
	struct strata_ring *r = s->ring;
	uint64_t content, ts_begin, ts_end, seq, disc;
	int ret;

	memcpy(&content, pkt + STRATA_PKT_OFF_CONTENT_SIZE, 8);
	content /= 8;
	if (content < STRATA_PACKET_HEADER || content > r->psize ||
	    content % 4) {
		slog_once("%s/cpu%u: packet %llu has an impossible content "
			  "size (%llu bytes): skipped",
			  c->dir, r->cpu, (unsigned long long)(begin >> r->pshift),
			  (unsigned long long)content);
		return;
	}
	uint64_t nev = scan_events(c, pkt, content);
	/* The metadata first: at no moment may a stream hold an event class
	 * the metadata does not declare (babeltrace2 refuses the whole
	 * trace; format.md §1). */
	if (c->meta_dirty)
		update_metadata(c);
	if (!s->have_hdr) {
		/* The trailer's template, even if this packet is never
		 * written: a stream the full disk kept empty still ends with
		 * its count of what was not written (loss_trailer()). */
		memcpy(s->last_hdr, pkt, STRATA_PACKET_HEADER);
		memcpy(&s->last_ts, pkt + STRATA_PKT_OFF_TS_END, 8);
		s->have_hdr = 1;
	}
	if (s->dead) {
		s->lost_io += nev;
		__atomic_add_fetch(&c->lost_io, nev, __ATOMIC_RELAXED);
		return;
	}
	/* Only the content: the padding is a hole in a sparse file, and the
	 * file is extended to whole packets at the end. */
	ret = stream_write(c, s, pkt, content);
	if (ret) {
		/* Keep only whole packets: cut the partial one. What was
		 * written before stays a valid trace. */
		if (ftruncate(s->fd, (off_t)s->file_off) < 0)
			(void)0;
		cons_error(c, ret, "cannot write packet", c->dir);
		s->dead = 1;
		s->lost_io += nev;
		__atomic_add_fetch(&c->lost_io, nev, __ATOMIC_RELAXED);
		return;
	}
	__atomic_add_fetch(&c->events, nev, __ATOMIC_RELAXED);

	memcpy(&ts_begin, pkt + STRATA_PKT_OFF_TS_BEGIN, 8);
	memcpy(&ts_end, pkt + STRATA_PKT_OFF_TS_END, 8);
	memcpy(&seq, pkt + STRATA_PKT_OFF_SEQ, 8);
	memcpy(&disc, pkt + STRATA_PKT_OFF_DISCARDED, 8);
	s->last_disc = disc;
	s->last_ts = ts_end;
	memcpy(s->last_hdr, pkt, STRATA_PACKET_HEADER);
	s->have_hdr = 1;
	/* The stream's own size and instance: another process's packet
	 * header is not trusted for them. */
	fmt_idx_entry_put(s->idx_buf + s->idx_len, &(struct strata_idx_entry){
		.offset = s->file_off,
		.packet_size = r->psize * 8,
		.content_size = content * 8,
		.ts_begin = ts_begin,
		.ts_end = ts_end,
		.discarded = disc,
		.stream_instance_id = ((uint64_t)s->pid << 32) | r->cpu,
		.seq = seq,
	});
	s->idx_len += STRATA_IDX_ENTRY;
	if (s->idx_len == sizeof(s->idx_buf))
		idx_flush(c, s);

	s->file_off += r->psize;
	__atomic_add_fetch(&c->packets, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&c->bytes, content, __ATOMIC_RELAXED);
}

/* Write the packet that began at virtual offset `begin` (complete). */
static void write_packet(struct cons *c, struct cons_stream *s, uint64_t begin)
{
	const unsigned char *pkt;

	if (c->external)
		pkt = copy_packet(c, s, begin);
	else
		pkt = ring_packet_addr(s->ring, begin);
	if (pkt)
		write_packet_buf(c, s, pkt, begin);
}

/* Discard mode: write every complete packet from `consumed` on, and
 * release each one to the writers (ring.md §4). Returns packets written. */
static unsigned drain_ring(struct cons *c, struct cons_stream *s)
{
	struct strata_ring *r = s->ring;
	uint64_t consumed = strata_load_relaxed(&r->ctl->consumed);
	unsigned n = 0;

	/* Bounded: another process's ring could claim anything. */
	while (n <= r->nmask &&
	       consumed < strata_load_acquire(&r->ctl->write) &&
	       ring_packet_complete(r, consumed)) {
		write_packet(c, s, consumed);
		consumed += r->psize;
		/* Pairs with the writers' acquire load in slot_free(): the
		 * packet was read before the slot is reused. */
		strata_store_release(&r->ctl->consumed, consumed);
		n++;
	}
	return n;
}

/*
 * Fault in a fresh ring ahead of its writers (ring.md §1, "First lap"):
 * a page fault costs a writer about as much as a hundred events here,
 * one every 256 events of 16 bytes. Like read-ahead: past the packet
 * being written, as much again as the packets already written, half a
 * ring at most, so that a ring that is hardly used stays small; until
 * half of the first lap is written, which makes the window reach the
 * ring's end, every packet close wakes the consumer (§8) to move it on. A megabyte at a time, between drains, so that a big ring
 * does not hold up the draining of the others. Not for a snapshot, whose
 * rings nobody writes any more.
 */
#define PREFAULT_STEP (UINT64_C(1) << 20)

static unsigned prefault(struct cons *c, struct cons_stream *s)
{
	struct strata_ring *r = s->ring;
	uint64_t size = r->bufmask + 1, done, to, len;

	if (s->faulted >= size || c->snapshot)
		return 0;
	done = ring_packet_begin(r, strata_load_relaxed(&r->ctl->write));
	to = done + r->psize + (done < size / 2 ? done : size / 2);
	if (to > size)
		to = size; /* past the first lap: every page was touched */
	if (to <= s->faulted)
		return 0;
	len = to - s->faulted < PREFAULT_STEP ? to - s->faulted : PREFAULT_STEP;
	if (ring_prefault(r, s->faulted, len))
		len = size - s->faulted; /* refused: the writers fault instead */
	s->faulted += len;
	return 1;
}

static struct cons_stream *stream_of(struct cons *c, unsigned cpu)
{
	struct strata_ring *r;

	if (c->streams[cpu] || c->passive)
		return c->streams[cpu];
	r = strata_load_acquire(&strata_rings[cpu]);
	if (!r)
		return NULL;
	c->streams[cpu] = stream_open(c, r);
	if (c->streams[cpu] && cpu + 1 > c->max_cpu)
		c->max_cpu = cpu + 1;
	return c->streams[cpu];
}

static void update_metadata(struct cons *c)
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
	c->reg_gen = generation(c);
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
	memcpy(mi.uuid, c->uuid, 16);
	mi.freq_hz = c->freq_hz;
	mi.offset_ns = c->offset_ns;
	mi.raw = c->raw;
	mi.nraw = c->nraw;
	cids_refresh(c);
	mi.cids = c->cids;
	int ret = meta_write(c->dir, &mi);
	if (ret)
		cons_error(c, ret, "cannot write metadata", c->dir);
	else
		c->meta_dirty = 0;
}

/* A calibration record on the consumer's own CPU ring (format.md §4). */
static void log_calib(struct cons *c)
{
	struct strata_rsv r;
	struct clock_point p;

	clock_point_take(&p);
	c->cp_last = p;
	clock_fit(&c->cp_first, &c->cp_last, &c->freq_hz, &c->offset_ns);
	__atomic_add_fetch(&c->internal, 1, __ATOMIC_RELAXED);
	if (!strata_reserve(&r, STRATA_ID(0, STRATA_ID_CALIB), 4))
		return;
	r.p[0] = p.mono_ns;
	r.p[1] = p.real_ns;
	r.p[2] = c->freq_hz;
	strata_commit(&r);
}

/* strata_flush() without depending on the session module (the daemon
 * links the consumer without it). */
static void flush_local(void)
{
	unsigned hwm = strata_load_acquire(&ring_hwm);

	for (unsigned i = 0; i < hwm; i++) {
		struct strata_ring *r = strata_load_acquire(&strata_rings[i]);
		if (r)
			ring_flush(r);
	}
}

static uint64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* Has a packet completed on one of our rings that we have not drained?
 * Never in overwrite mode, which drains nothing until the end. */
static int cons_pending(struct cons *c)
{
	if (c->mode == STRATA_MODE_OVERWRITE)
		return 0;
	for (unsigned cpu = 0; cpu < c->max_cpu; cpu++) {
		struct cons_stream *s = c->streams[cpu];
		if (!s)
			continue;
		struct strata_ring *r = s->ring;
		uint64_t consumed = strata_load_relaxed(&r->ctl->consumed);
		if (consumed < strata_load_acquire(&r->ctl->write) &&
		    ring_packet_complete(r, consumed))
			return 1;
	}
	return 0;
}

/* Does the consumer wait for this ring's packets: to drain them, or in
 * overwrite mode to fault in its first lap (prefault())? */
static int bell_wanted(const struct cons *c, const struct cons_stream *s)
{
	return c->mode != STRATA_MODE_OVERWRITE || s->faulted <= s->ring->bufmask;
}

int cons_arm(struct cons *c)
{
	for (unsigned cpu = 0; cpu < c->max_cpu; cpu++) {
		struct cons_stream *s = c->streams[cpu];
		if (s && bell_wanted(c, s))
			strata_store_relaxed(&s->ring->ctl->cwait, 1);
	}
	/* Our cwait stores, then the commit counts; a closer commits, then
	 * reads cwait (ring_close()). */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return !c->snapshot && cons_pending(c);
}

void cons_disarm(struct cons *c)
{
	for (unsigned cpu = 0; cpu < c->max_cpu; cpu++)
		if (c->streams[cpu])
			strata_store_relaxed(&c->streams[cpu]->ring->ctl->cwait, 0);
}

/*
 * Sleep until a packet closes on a ring we drain, a ring is created or
 * the consumer is stopped (ring_bell moves from `bell`, read before the
 * caller looked for new rings and at c->running), or for `ms` (ring.md
 * §8). Where futex_waitv is missing (Linux < 5.16, or refused by a
 * seccomp filter), or with more rings than one call can wait on, it
 * polls every millisecond instead.
 */
static void cons_sleep(struct cons *c, uint32_t bell, unsigned ms)
{
#if defined(SYS_futex_waitv) && defined(FUTEX_WAITV_MAX)
	static int no_waitv;
	struct futex_waitv wv[FUTEX_WAITV_MAX];
	unsigned n = 0, cpu;

	if (!no_waitv) {
		memset(wv, 0, sizeof(wv));
		wv[n].val = bell;
		wv[n].uaddr = (uintptr_t)&ring_bell;
		wv[n++].flags = FUTEX_32 | FUTEX_PRIVATE_FLAG;
	}
	for (cpu = 0; n && cpu < c->max_cpu; cpu++) {
		struct cons_stream *s = c->streams[cpu];
		if (!s || !bell_wanted(c, s))
			continue;
		if (n == FUTEX_WAITV_MAX) {
			n = 0; /* too many rings: poll */
			break;
		}
		wv[n].val = 1;
		wv[n].uaddr = (uintptr_t)&s->ring->ctl->cwait;
		wv[n++].flags = FUTEX_32; /* shared: the ring is a shared mapping */
	}
	if (n && !cons_arm(c)) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += ms / 1000;
		ts.tv_nsec += (long)(ms % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		if (syscall(SYS_futex_waitv, wv, n, 0, &ts, CLOCK_MONOTONIC) < 0 &&
		    errno != EAGAIN && errno != ETIMEDOUT && errno != EINTR)
			no_waitv = 1;
	}
	if (n) {
		cons_disarm(c);
		return;
	}
#else
	(void)bell;
	(void)ms;
#endif
	struct timespec d = {0, 1000000}; /* 1 ms */
	nanosleep(&d, NULL);
}

static void *cons_main(void *arg)
{
	struct cons *c = arg;
	uint64_t last_calib = now_ms(), last_flush = last_calib;
	int first = 1;

	for (;;) {
		/* Before c->running and the look for new rings: cons_sleep()
		 * returns at once if either changed since. */
		uint32_t bell = __atomic_load_n(&ring_bell, __ATOMIC_SEQ_CST);
		if (!__atomic_load_n(&c->running, __ATOMIC_SEQ_CST))
			break;
		unsigned work = 0;
		uint64_t t = now_ms();

		if (first && t - last_calib >= 20) {
			/* First frequency estimate, 20 ms after start. */
			log_calib(c);
			update_metadata(c);
			first = 0;
			last_calib = t;
			statedump_threads_update(); /* threads started since */
		} else if (t - last_calib >= 1000) {
			log_calib(c);
			last_calib = t;
			statedump_threads_update();
		}
		if (c->flush_ms && t - last_flush >= c->flush_ms) {
			flush_local();
			last_flush = t;
		}
		unsigned hwm = strata_load_acquire(&ring_hwm);
		for (unsigned cpu = 0; cpu < hwm; cpu++) {
			struct cons_stream *s = stream_of(c, cpu);
			if (s && c->mode != STRATA_MODE_OVERWRITE)
				work += drain_ring(c, s);
			if (s)
				work += prefault(c, s);
		}
		if (c->meta_dirty || c->reg_gen != generation(c))
			update_metadata(c);
		if (!work) {
			/* Until the next calibration or flush, 100 ms at most. */
			uint64_t due = last_calib + (first ? 20 : 1000);
			if (c->flush_ms && last_flush + c->flush_ms < due)
				due = last_flush + c->flush_ms;
			uint64_t now = now_ms();
			uint64_t ms = due > now ? due - now : 1;
			cons_sleep(c, bell, ms > 100 ? 100 : (unsigned)ms);
		}
	}
	return NULL;
}

static void cons_free(struct cons *c);

int cons_create(const struct cons_config *cfg, struct cons **out)
{
	char path[4200];
	struct cons *c = calloc(1, sizeof(*c));
	int ret;

	if (!c)
		return -ENOMEM;
	/* no buffer: no direct I/O (stream_open), nothing else changes */
	c->tail = aligned_alloc(DIO_ALIGN, DIO_ALIGN);
	c->seen = calloc(1, (1u << 22) / 8);
	if (!c->seen) {
		ret = -ENOMEM;
		goto fail;
	}
	snprintf(c->dir, sizeof(c->dir), "%s", cfg->dir);
	c->mode = cfg->mode;
	c->flush_ms = cfg->flush_ms;
	memcpy(c->uuid, cfg->uuid, 16);
	snprintf(path, sizeof(path), "%s/index", c->dir);
	if ((ret = tfile_mkdir(path, 0))) {
		slog_detail("%s: cannot create directory: %s", path,
			    strerror(-ret));
		goto fail;
	}
	if (!cfg->snapshot)
		reserve_hold(c);

	if (cfg->src) {
		c->external = 1;
		c->src = *cfg->src;
	}
	c->snapshot = cfg->snapshot;
	c->passive = c->external || c->snapshot;
	clock_point_take(&c->cp_first);
	if (c->external && c->src.cp_first)
		c->cp_first = *c->src.cp_first;
	if (cfg->cp_first)
		c->cp_first = *cfg->cp_first;
	c->cp_last = c->cp_first;
	c->freq_hz = strata_clock_tsc ? 0 : 1000000000u;
	if (strata_clock_tsc && !c->passive) {
		/* In-process: the fit starts at the library's load, so that
		 * the first guess (until the 20 ms estimate) does not keep
		 * the program waiting; at least 200 us of counting, though
		 * (1e-3 at worst: the two points are within ~100 ns). */
		if (clock_init_point.mono_ns && !cfg->cp_first)
			c->cp_first = clock_init_point;
		do
			clock_point_take(&c->cp_last);
		while (c->cp_last.mono_ns - c->cp_first.mono_ns < 200000);
	}
	clock_fit(&c->cp_first, &c->cp_last, &c->freq_hz, &c->offset_ns);
	update_metadata(c);
	if (c->err) {
		ret = c->err;
		goto fail;
	}

	if (c->passive) {
		*out = c;
		return 0;
	}
	c->running = 1;
	ret = -pthread_create(&c->thread, NULL, cons_main, c);
	if (ret) {
		slog_detail("cannot start the consumer thread: %s",
			    strerror(-ret));
		goto fail;
	}
	pthread_setname_np(c->thread, "strata-consumer");
	*out = c;
	return 0;
fail:
	cons_free(c);
	return ret;
}

uint64_t cons_ring_pending(struct strata_ring *r, int external)
{
	struct cons *c = calloc(1, sizeof(*c));
	uint64_t w = strata_load_acquire(&r->ctl->write), n = 0;
	uint64_t b = strata_load_acquire(&r->ctl->consumed);

	if (!c)
		return 0;
	/* the compact ids: ours, or those the ring's process wrote in its
	 * control block (untrusted: event_at() checks every length) */
	c->external = external;
	for (uint32_t i = 1; i < STRATA_NCIDS; i++) {
		uint64_t e = external ? strata_load_relaxed(&r->ctl->cids[i])
				      : ring_cid_entry(i);
		uint32_t words = (uint32_t)(e >> 32) & 0x7fffffff;
		if ((e & STRATA_CID_VALID) && words && words <= STRATA_MAX_WORDS)
			c->cids[i] = e;
	}
	if (w - b > r->bufmask + 1) /* overwrite mode: the ring holds one lap */
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
			uint32_t id, len = event_at(c, pkt + off, content - off, &id, &ts);
			if (!len)
				break;
			n += (id >> 16) || id >= STRATA_CID_USER;
			off += len;
		}
	}
	free(c);
	return n;
}

int cons_add_ring(struct cons *c, struct strata_ring *ring)
{
	if (!c->passive || ring->cpu >= STRATA_MAX_CPUS)
		return -EINVAL;
	if (c->streams[ring->cpu])
		return -EEXIST;
	if (ring->psize > c->pktbuf_size) {
		/* aligned, so that direct I/O can write from it */
		void *p = aligned_alloc(DIO_ALIGN, ring->psize);
		if (!p)
			return -ENOMEM;
		free(c->pktbuf);
		c->pktbuf = p;
		c->pktbuf_size = ring->psize;
	}
	c->streams[ring->cpu] = stream_open(c, ring);
	if (!c->streams[ring->cpu])
		return -ENOMEM;
	if (ring->cpu + 1 > c->max_cpu)
		c->max_cpu = ring->cpu + 1;
	return 0;
}

unsigned cons_poll(struct cons *c)
{
	unsigned work = 0;

	for (unsigned cpu = 0; cpu < c->max_cpu; cpu++) {
		struct cons_stream *s = c->streams[cpu];
		if (s && c->mode != STRATA_MODE_OVERWRITE && !c->snapshot)
			work += drain_ring(c, s);
		if (s)
			work += prefault(c, s);
	}
	if (c->meta_dirty || c->reg_gen != generation(c))
		update_metadata(c);
	return work;
}

int cons_write_copy(struct cons *c, unsigned cpu, const unsigned char *pkt,
		    uint64_t begin)
{
	struct cons_stream *s = cpu < STRATA_MAX_CPUS ? c->streams[cpu] : NULL;

	if (!s || !packet_ours(c, s->ring, pkt, begin))
		return -EINVAL;
	write_packet_buf(c, s, pkt, begin);
	return s->dead ? c->err : 0;
}

void cons_clock_first(const struct cons *c, struct clock_point *out)
{
	*out = c->cp_first;
}

/*
 * Crash salvage (docs/record.md): the packet that began at `begin` was
 * left incomplete by writers that will never come back (the process died
 * or exec'd). `reserved` is how far writers had reserved in it (the
 * packet size when unknown). Committed bytes are not a prefix in
 * general, but a writer commits what it reserved, in order, and a thread
 * has one reservation in flight at most: when the events walked from the
 * header end exactly at the committed count, what lies past it is the
 * reservation(s) in flight when the writers stopped, and the prefix is
 * whole. The packet is then closed in a private copy, as ring_close()
 * would have (content_size, timestamp_end of its last event,
 * events_discarded), and written. Otherwise (an event in the middle was
 * never committed) it cannot be told apart from garbage: reported and
 * skipped.
 */
static int close_copy(struct cons *c, const struct cons_stream *s,
		      unsigned char *pkt, uint64_t done)
{
	const struct strata_ring *r = s->ring;
	uint64_t off, ts;
	uint32_t id;

	memcpy(&ts, pkt + STRATA_PKT_OFF_TS_BEGIN, 8);
	for (off = STRATA_PACKET_HEADER; off < done;) {
		uint32_t len = event_at(c, pkt + off, done - off, &id, &ts);
		if (len == 0)
			return -1;
		off += len;
	}
	uint64_t bits = done * 8, disc = 0;
	/* r->ctl, not the fast path's computed address: this view is not
	 * laid out like the creator's (consumer/mapped.c). */
	for (int i = 0; i < STRATA_LOST_NCAUSES; i++)
		disc += strata_load_relaxed(&r->ctl->lost[i]);
	memcpy(pkt + STRATA_PKT_OFF_TS_END, &ts, 8);
	memcpy(pkt + STRATA_PKT_OFF_CONTENT_SIZE, &bits, 8);
	if (disc < s->last_disc)
		disc = s->last_disc; /* a free-running counter never decreases */
	memcpy(pkt + STRATA_PKT_OFF_DISCARDED, &disc, 8);
	return 0;
}

int cons_write_open(struct cons *c, unsigned cpu, unsigned char *pkt,
		    uint64_t begin, uint64_t done)
{
	struct cons_stream *s = cpu < STRATA_MAX_CPUS ? c->streams[cpu] : NULL;

	if (!s || done < STRATA_PACKET_HEADER || done > s->ring->psize ||
	    close_copy(c, s, pkt, done) || !packet_ours(c, s->ring, pkt, begin))
		return -EINVAL;
	write_packet_buf(c, s, pkt, begin);
	return s->dead ? c->err : 0;
}

static void salvage_packet(struct cons *c, struct cons_stream *s,
			   uint64_t begin, uint64_t reserved)
{
	struct strata_ring *r = s->ring;
	/* The open packet: its whole bytes, inline events included (ring.md
	 * §7). An earlier one: what was committed (its closer died before
	 * its own commit; on an rseq ring the inline events were the
	 * closer's to count, and the walk below then fails). */
	uint64_t done = reserved && reserved < r->psize
				? ring_open_done(r, begin)
				: ring_lap_committed(r, begin);
	unsigned char *pkt;

	if (done < STRATA_PACKET_HEADER) {
		/* The opener died before committing the header: an empty
		 * packet, nothing of it was committed. */
		if (reserved > done)
			c->dropped_bytes += reserved - done;
		return;
	}
	if (done > r->psize || !copy_packet(c, s, begin))
		goto bad;
	pkt = c->pktbuf;
	if (close_copy(c, s, pkt, done)) {
		/* An rseq ring's packet whose closer died between its close
		 * and its commit: the closer wrote content_size, and the
		 * inline events up to there are whole (write passed them); a
		 * walk that ends there exactly makes it the packet's content.
		 * The opener never writes content_size (opener and closer
		 * write disjoint fields, ring.md §4): one left from the
		 * slot's previous lap comes with that lap's timestamp_end,
		 * before this lap's timestamp_begin. A two-phase event in
		 * flight (one per thread at most) may be torn: the events
		 * strata-gen writes through strata_reserve() (ring.md §7). */
		uint64_t cs, tb, te;
		memcpy(&tb, pkt + STRATA_PKT_OFF_TS_BEGIN, 8);
		memcpy(&te, pkt + STRATA_PKT_OFF_TS_END, 8);
		memcpy(&cs, pkt + STRATA_PKT_OFF_CONTENT_SIZE, 8);
		cs /= 8;
		if (!r->rseq || reserved || te < tb || cs <= done || cs > r->psize ||
		    close_copy(c, s, pkt, cs))
			goto bad;
		done = cs;
	}
	write_packet_buf(c, s, pkt, begin);
	c->salvaged++;
	if (reserved > done && reserved <= r->psize) {
		c->dropped_bytes += reserved - done;
		slog("%s/cpu%u: packet %llu salvaged; %llu bytes a writer was "
		     "writing when it died were dropped",
		     c->dir, r->cpu, (unsigned long long)(begin >> r->pshift),
		     (unsigned long long)(reserved - done));
	}
	return;
bad:
	c->unsalvageable++;
	c->incomplete++;
	slog("%s/cpu%u: packet %llu: an event in its middle was never "
	     "committed (its writer died): skipped",
	     c->dir, r->cpu, (unsigned long long)(begin >> r->pshift));
}

/*
 * Events dropped after a ring's last packet was closed (the ring full at
 * the end, or the packet after an exactly full one never opened) are in
 * no packet's events_discarded. The stream then ends with a trailer: an
 * empty packet (header and context only, format.md §2) whose
 * events_discarded is the ring's final count, numbered as the packet the
 * ring would have opened next, at the time of the last packet written. So
 * every reader (babeltrace2 included) reports exactly what the producer
 * counted. Events that a write error (a full disk) kept out of the
 * stream count there too: the trailer is written after its last whole
 * packet, once reserve_free() has made room. Called last, when nothing
 * more will be written to the stream.
 */
static void loss_trailer(struct cons *c, struct cons_stream *s)
{
	struct strata_ring *r = s->ring;
	uint64_t total = ring_lost_total(r) + s->lost_io;
	uint64_t w = strata_load_acquire(&r->ctl->write);
	uint64_t seq = ring_packet_begin(r, w + r->pmask) >> r->pshift;
	uint64_t content = STRATA_PACKET_HEADER * 8;
	/* aligned as direct I/O wants a buffer (stream_write()) */
	unsigned char pkt[STRATA_PACKET_HEADER] __attribute__((aligned(DIO_ALIGN)));

	if (total <= s->last_disc || !s->have_hdr || s->fd < 0)
		return;
	s->dead = 0; /* one more try, with the reserve given up */
	memcpy(pkt, s->last_hdr, STRATA_PACKET_HEADER);
	memcpy(pkt + STRATA_PKT_OFF_TS_BEGIN, &s->last_ts, 8);
	memcpy(pkt + STRATA_PKT_OFF_TS_END, &s->last_ts, 8);
	memcpy(pkt + STRATA_PKT_OFF_CONTENT_SIZE, &content, 8);
	if (s->file_off == 0) {
		/* Nothing of the stream was written (a full disk from its
		 * first packet): an empty packet first, counting nothing,
		 * numbered as that one. babeltrace2 reports discarded events
		 * as the difference between two packets' counts, never a
		 * first packet's own. */
		uint64_t zero = 0;
		memcpy(pkt + STRATA_PKT_OFF_DISCARDED, &zero, 8);
		write_packet_buf(c, s, pkt, 0);
	}
	memcpy(pkt + STRATA_PKT_OFF_SEQ, &seq, 8);
	memcpy(pkt + STRATA_PKT_OFF_DISCARDED, &total, 8);
	write_packet_buf(c, s, pkt, seq << r->pshift);
}

/* An external ring at the end: drain, then salvage or report the rest. */
static void finish_external(struct cons *c, struct cons_stream *s,
			    int writers_gone)
{
	struct strata_ring *r = s->ring;
	uint64_t w = strata_load_acquire(&r->ctl->write);
	uint64_t end = ring_packet_begin(r, w + r->pmask);
	uint64_t b;

	if (c->mode != STRATA_MODE_OVERWRITE) {
		b = strata_load_relaxed(&r->ctl->consumed);
		drain_ring(c, s);
		b = strata_load_relaxed(&r->ctl->consumed);
	} else {
		/* The packets held, but none an earlier trace of a long-lived
		 * session wrote already: in overwrite mode no writer reads
		 * `consumed`, so it marks where the last trace ended. */
		b = end > r->bufmask ? end - (r->bufmask + 1) : 0;
		uint64_t done = strata_load_relaxed(&r->ctl->consumed);
		if (done > b && done <= end)
			b = done;
	}
	/* Untrusted offsets: at most one ring's worth of packets. */
	if (end < b || end - b > r->bufmask + 1)
		b = end > r->bufmask ? end - (r->bufmask + 1) : 0;
	for (; b < end; b += r->psize) {
		if (ring_packet_complete(r, b)) {
			write_packet(c, s, b);
		} else if (writers_gone) {
			/* The open packet: reserved up to `write`. An earlier
			 * one: its closer died before committing the padding;
			 * how far it was reserved is not known (0). */
			salvage_packet(c, s, b, w - b < r->psize ? w - b : 0);
		} else {
			c->incomplete++;
			slog("%s/cpu%u: packet %llu still open when the session "
			     "stopped (the process still runs): not written",
			     c->dir, r->cpu, (unsigned long long)(b >> r->pshift));
		}
	}
	strata_store_release(&r->ctl->consumed, end);
}

static void close_stream(struct cons *c, struct cons_stream *s);

/* The end of every stream, once everything is drained: the reserve
 * given back, the loss trailers, the index, the metadata. */
static void close_streams(struct cons *c)
{
	reserve_free(c);
	for (unsigned cpu = 0; cpu < c->max_cpu; cpu++) {
		struct cons_stream *s = c->streams[cpu];
		if (!s)
			continue;
		if (!c->snapshot)
			loss_trailer(c, s);
		close_stream(c, s);
		c->streams[cpu] = NULL;
	}
	update_metadata(c);
}

static void close_stream(struct cons *c, struct cons_stream *s)
{
	idx_flush(c, s);
	if (s->fd >= 0) {
		if (!s->dead && ftruncate(s->fd, (off_t)s->file_off) < 0)
			cons_error(c, -errno, "cannot extend stream file",
				   c->dir);
		if (close(s->fd) < 0 && !s->dead)
			cons_error(c, -errno, "cannot close stream file",
				   c->dir);
	}
	if (s->idx_fd >= 0) {
		char tmp[4200], path[4200];
		snprintf(tmp, sizeof(tmp), "%s/index/.cpu%u.idx", c->dir, s->ring->cpu);
		snprintf(path, sizeof(path), "%s/index/cpu%u.idx", c->dir, s->ring->cpu);
		/* published only if every packet written is in it; else
		 * readers build their own */
		if (close(s->idx_fd) || s->idx_bad || rename(tmp, path))
			unlink(tmp);
	}
	free(s);
}

static void cons_free(struct cons *c)
{
	if (!c)
		return;
	free(c->pktbuf);
	free(c->tail);
	free(c->bounce);
	free(c->raw);
	free(c->seen);
	free(c);
}

int cons_finish(struct cons *c, int writers_gone, struct strata_stats *final,
		struct cons_salvage *salv)
{
	int ret;

	if (!c)
		return 0;
	if (!c->passive)
		return cons_destroy(c, final);
	if (salv)
		memset(salv, 0, sizeof(*salv));
	for (unsigned cpu = 0; cpu < c->max_cpu; cpu++)
		if (c->streams[cpu] && !c->snapshot)
			finish_external(c, c->streams[cpu], writers_gone);
	close_streams(c);
	ret = c->err;
	cons_get_stats(c, final);
	if (salv) {
		salv->salvaged = c->salvaged;
		salv->unsalvageable = c->unsalvageable;
		salv->dropped_bytes = c->dropped_bytes;
	}
	cons_free(c);
	return ret;
}

/* Overwrite mode at stop: the packets still held, oldest first. */
static void drain_held(struct cons *c, struct cons_stream *s)
{
	struct strata_ring *r = s->ring;
	uint64_t w = strata_load_acquire(&r->ctl->write);
	uint64_t end = ring_packet_begin(r, w + r->pmask); /* after flush: w */
	uint64_t begin = end > r->bufmask ? end - (r->bufmask + 1) : 0;

	for (; begin < end; begin += r->psize) {
		if (ring_packet_complete(r, begin))
			write_packet(c, s, begin);
		else
			c->incomplete++;
	}
}


int cons_destroy(struct cons *c, struct strata_stats *final)
{
	int ret;

	if (!c)
		return 0;
	if (c->passive)
		return cons_finish(c, 0, final, NULL);
	__atomic_store_n(&c->running, 0, __ATOMIC_SEQ_CST);
	ring_bell_ring(); /* after running: cons_main() reads them the other way */
	pthread_join(c->thread, NULL);

	log_calib(c);
	flush_local();

	/* Writers that passed the mask check before tracing stopped may
	 * still be between reserve and commit: give them 100 ms. */
	for (int tries = 0; tries < 100; tries++) {
		int pending = 0;
		for (unsigned cpu = 0; cpu < STRATA_MAX_CPUS; cpu++) {
			struct cons_stream *s = stream_of(c, cpu);
			if (!s)
				continue;
			struct strata_ring *r = s->ring;
			uint64_t w = strata_load_acquire(&r->ctl->write);
			if (c->mode != STRATA_MODE_OVERWRITE) {
				drain_ring(c, s);
				if (strata_load_relaxed(&r->ctl->consumed) <
				    ring_packet_begin(r, w + r->pmask))
					pending = 1;
			} else {
				uint64_t end = ring_packet_begin(r, w + r->pmask);
				uint64_t b = end > r->bufmask ? end - (r->bufmask + 1) : 0;
				for (; b < end; b += r->psize)
					if (!ring_packet_complete(r, b))
						pending = 1;
			}
		}
		if (!pending)
			break;
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
		flush_local(); /* late writers may have opened packets */
	}

	for (unsigned cpu = 0; cpu < c->max_cpu; cpu++) {
		struct cons_stream *s = c->streams[cpu];
		if (!s)
			continue;
		struct strata_ring *r = s->ring;
		if (c->mode == STRATA_MODE_OVERWRITE) {
			drain_held(c, s);
		} else {
			/* Packets a writer never completed: report, skip, and
			 * write what follows them. */
			uint64_t w = strata_load_acquire(&r->ctl->write);
			uint64_t end = ring_packet_begin(r, w + r->pmask);
			uint64_t b = strata_load_relaxed(&r->ctl->consumed);
			for (; b < end; b += r->psize) {
				if (ring_packet_complete(r, b)) {
					write_packet(c, s, b);
				} else {
					c->incomplete++;
					slog("%s/cpu%u: packet %llu never completed "
					     "(a writer stopped between reserve and "
					     "commit): skipped",
					     c->dir, r->cpu,
					     (unsigned long long)(b >> r->pshift));
				}
			}
			strata_store_release(&r->ctl->consumed, end);
		}
	}
	close_streams(c);
	ret = c->err;
	cons_get_stats(c, final);
	cons_free(c);
	return ret;
}

void cons_get_stats(struct cons *c, struct strata_stats *st)
{
	st->packets_written += __atomic_load_n(&c->packets, __ATOMIC_RELAXED);
	st->bytes_written += __atomic_load_n(&c->bytes, __ATOMIC_RELAXED);
	st->events_written += __atomic_load_n(&c->events, __ATOMIC_RELAXED);
	st->packets_incomplete += c->incomplete;
	st->lost_io += __atomic_load_n(&c->lost_io, __ATOMIC_RELAXED);
	st->internal_logged += __atomic_load_n(&c->internal, __ATOMIC_RELAXED);
}
