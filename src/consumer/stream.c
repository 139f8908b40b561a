/* SPDX-License-Identifier: MIT */
/* A stream's files: packets written (direct I/O), the packet index, the full-disk reserve, the loss trailer. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/log.h"
#include "common/tfile.h"
#include "consumer/cons_int.h"

#define RESERVE_SIZE (256u << 10)

void cons_error(struct cons *c, int err, const char *what,
		const char *path)
{
	if (!c->err) {
		c->err = err;
		slog_detail("%s: %s: %s", path, what, strerror(-err));
	}
}

/* Hold RESERVE_SIZE bytes of the trace's file system, as a dot file that
 * readers skip (format.md §2, "Trailer"). Best effort. */
void cons_reserve_hold(struct cons *c)
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

/* One direct write of `want` bytes at `off`: 0, a negative errno (a short
 * write is a full device; `*done` then says how much of it was written),
 * or 1 if the file system took O_DIRECT at open but refuses this write
 * (EINVAL). */
static int direct_write(struct cons_stream *s, const struct iovec *iov, int n,
			uint64_t want, uint64_t off, uint64_t *done)
{
	ssize_t got;

	do
		got = pwritev(s->fd, iov, n, (off_t)off);
	while (got < 0 && errno == EINTR);
	*done = got > 0 ? (uint64_t)got : 0;
	if (got == (ssize_t)want)
		return 0;
	if (got >= 0)
		return -ENOSPC;
	return errno == EINVAL ? 1 : -errno;
}

/* Buffered writes from now on. */
static int direct_off(struct cons_stream *s)
{
	int fl = fcntl(s->fd, F_GETFL);

	if (fl < 0 || fcntl(s->fd, F_SETFL, fl & ~O_DIRECT) < 0)
		return -1;
	s->direct = 0;
	return 0;
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
	uint64_t done;
	int n = 0, ret;

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
	ret = direct_write(s, iov, n, whole + (part ? DIO_ALIGN : 0),
			   s->file_off, &done);
	if (ret <= 0)
		return ret;
no_direct:
	if (direct_off(s))
		return -EINVAL;
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
	} else {
		cons_sink_index(c, s, (uint64_t)end, s->idx_buf, s->idx_len);
	}
	s->idx_len = 0;
	return ret;
}

struct cons_stream *cons_stream_open(struct cons *c, struct strata_ring *r)
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
	cons_sink_stream_open(c, s);
	return s;
}

/*
 * A packet of another process's ring, copied out of the shared mapping so
 * that what is checked is what is written. Its header must be one the
 * ring's process wrote for this trace (format.md §2): a packet with
 * another magic or uuid would make the whole stream unreadable.
 */
int cons_packet_ours(struct cons *c, const struct strata_ring *r,
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

unsigned char *cons_copy_packet(struct cons *c, struct cons_stream *s,
				uint64_t begin)
{
	struct strata_ring *r = s->ring;
	unsigned slot = s->batch_n < cons_batch_max(r->psize) ? s->batch_n : 0;
	unsigned char *copy = c->pktbuf + (size_t)slot * r->psize;

	if (!slot)
		cons_stream_flush(c, s); /* the slot is the batch's first */
	memcpy(copy, ring_packet_addr(r, begin), r->psize);
	return cons_packet_ours(c, r, copy, begin) ? copy : NULL;
}

/*
 * babeltrace2 reports discarded events as the difference between two
 * packets' events_discarded, never a first packet's own count: a stream
 * whose first packet written already counts losses (a full disk from the
 * start, so that the loss trailer is the first; a ring that adopted
 * losses or lapped before its first packet was written) would have them
 * in strata's count only. Such a packet is preceded by an empty one
 * counting 0, numbered just before it, at its start time. (A first
 * packet numbered 0 leaves no number for it: its losses then stay
 * strata's alone, format.md §2.)
 */
static void lead_packet(struct cons *c, struct cons_stream *s,
			const unsigned char *pkt, uint64_t seq)
{
	uint64_t zero = 0, content = STRATA_PACKET_HEADER * 8;
	/* aligned as direct I/O wants a buffer (stream_write()) */
	unsigned char lead[STRATA_PACKET_HEADER] __attribute__((aligned(DIO_ALIGN)));

	memcpy(lead, pkt, STRATA_PACKET_HEADER);
	memcpy(lead + STRATA_PKT_OFF_TS_END, pkt + STRATA_PKT_OFF_TS_BEGIN, 8);
	memcpy(lead + STRATA_PKT_OFF_CONTENT_SIZE, &content, 8);
	memcpy(lead + STRATA_PKT_OFF_SEQ, &seq, 8);
	memcpy(lead + STRATA_PKT_OFF_DISCARDED, &zero, 8);
	cons_write_packet_buf(c, s, lead, seq << s->ring->pshift, 0);
}

/*
 * Batches. A synchronous direct write waits for the device, and with a
 * packet per write the device's latency, not its bandwidth, bounds the
 * consumer: here 256 KiB writes move 1.6 GB/s, 1 MiB ones 2.6 (dd
 * oflag=direct). So the drain (cons_drain_ring()) lets packets that
 * follow each other in memory and fill the file's space up to their last
 * page (the usual packet, closed when the next event did not fit) wait, a
 * megabyte of them, and writes them with one pwritev(): counted, indexed
 * and their metadata written as each comes, their bytes handed to the
 * kernel (and the sink) by cons_stream_flush(), before the drain releases
 * them to the writers. Each last partial page goes from a padded copy, as
 * stream_write() does. A write that fails (a full disk) keeps the batch's
 * packets that it wrote whole and takes back what the others counted:
 * their events are counted as not written, the file cut after the last
 * whole one (without that, a disk filling on the first megabyte would keep
 * no event at all).
 */
static int batch_takes(const struct cons *c, const struct cons_stream *s,
		       const unsigned char *pkt, uint64_t content)
{
	uint64_t psize = s->ring->psize;

	if (!s->direct || !c->batch_tails || content + DIO_ALIGN <= psize ||
	    ((uintptr_t)pkt & (DIO_ALIGN - 1)))
		return 0;
	if (!s->batch_n)
		return 1;
	return s->batch_n < cons_batch_max(psize) &&
	       s->batch_pkt[s->batch_n - 1] + psize == pkt &&
	       s->batch_off + s->batch_n * psize == s->file_off;
}

static void batch_begin(struct cons_stream *s)
{
	s->batch_off = s->file_off;
	s->batch_was.disc = s->last_disc;
	s->batch_was.ts = s->last_ts;
	memcpy(s->batch_was.hdr, s->last_hdr, STRATA_PACKET_HEADER);
	s->batch_was.have_hdr = s->have_hdr;
	s->batch_was.idx_len = s->idx_len;
}

/* Write the batch: 0, or a negative errno with `*kept` the number of its
 * first packets that are whole in the file. Each packet of a batch fills
 * its psize bytes of the file (batch_takes()), so a short write keeps as
 * many packets as whole psizes it wrote. */
static int batch_write(struct cons *c, struct cons_stream *s, unsigned *kept)
{
	uint64_t psize = s->ring->psize, want = s->batch_n * psize, done;
	struct iovec *iov = c->batch_iov;
	int n = 0;

	for (unsigned i = 0; i < s->batch_n; i++) {
		uint64_t len = s->batch_len[i];
		uint64_t whole = len & ~(uint64_t)(DIO_ALIGN - 1);
		if (whole)
			iov[n++] = (struct iovec){s->batch_pkt[i], whole};
		if (len > whole) {
			unsigned char *t = c->batch_tails + (size_t)i * DIO_ALIGN;
			memcpy(t, s->batch_pkt[i] + whole, len - whole);
			memset(t + (len - whole), 0, DIO_ALIGN - (len - whole));
			iov[n++] = (struct iovec){t, DIO_ALIGN};
		}
	}
	int ret = direct_write(s, iov, n, want, s->batch_off, &done);
	*kept = (unsigned)(done / psize);
	if (ret <= 0)
		return ret;
	if (direct_off(s))
		return -EINVAL;
	for (unsigned i = 0; i < s->batch_n; i++) {
		*kept = i;
		ret = fmt_write_all(s->fd, s->batch_pkt[i], s->batch_len[i],
				    (off_t)(s->batch_off + i * psize));
		if (ret)
			return ret;
	}
	return 0;
}

int cons_stream_batch_waits(const struct cons_stream *s, uint64_t next)
{
	const struct strata_ring *r = s->ring;

	/* At the ring's end the next packet cannot join the batch (not
	 * contiguous): write now, and give the writers the ring's tail
	 * back without waiting for the next flush. */
	return s->batch_n && s->batch_n < cons_batch_max(r->psize) &&
	       (next & r->bufmask);
}

/* The stream as if the batch had ended after its first `kept` packets
 * (a failed write): the others' counts taken back, their events counted
 * as not written, the file cut after the last whole packet. */
static void batch_take_back(struct cons *c, struct cons_stream *s,
			    unsigned kept)
{
	uint64_t psize = s->ring->psize, nev = 0, bytes = 0;

	for (unsigned i = kept; i < s->batch_n; i++) {
		nev += s->batch_nev[i];
		bytes += s->batch_len[i];
	}
	s->lost_io += nev;
	strata_add_fetch_relaxed(&c->lost_io, nev);
	/* taken back: the additions wrap to the difference */
	strata_add_fetch_relaxed(&c->events, 0 - nev);
	strata_add_fetch_relaxed(&c->packets, 0 - (uint64_t)(s->batch_n - kept));
	strata_add_fetch_relaxed(&c->bytes, 0 - bytes);
	s->file_off = s->batch_off + kept * psize;
	if (ftruncate(s->fd, (off_t)s->file_off) < 0)
		(void)0;
	/* The index entries and the trailer's template as of the last packet
	 * kept (its bytes are still the batch's: released after the flush) */
	s->idx_len = s->batch_was.idx_len + kept * STRATA_IDX_ENTRY;
	if (!kept) {
		s->last_disc = s->batch_was.disc;
		s->last_ts = s->batch_was.ts;
		memcpy(s->last_hdr, s->batch_was.hdr, STRATA_PACKET_HEADER);
		s->have_hdr = s->batch_was.have_hdr;
		return;
	}
	const unsigned char *last = s->batch_pkt[kept - 1];
	memcpy(&s->last_disc, last + STRATA_PKT_OFF_DISCARDED, 8);
	memcpy(&s->last_ts, last + STRATA_PKT_OFF_TS_END, 8);
	memcpy(s->last_hdr, last, STRATA_PACKET_HEADER);
	s->have_hdr = 1;
}

void cons_stream_flush(struct cons *c, struct cons_stream *s)
{
	unsigned n = s->batch_n, kept;
	int ret;

	if (!n)
		return;
	ret = batch_write(c, s, &kept);
	if (ret) {
		cons_error(c, ret, "cannot write packet", c->dir);
		s->dead = 1;
		batch_take_back(c, s, kept);
	} else {
		kept = n;
	}
	s->batch_n = 0;
	for (unsigned i = 0; i < kept; i++)
		cons_sink_packet(c, s, s->batch_off + i * s->ring->psize,
				 s->batch_pkt[i], s->batch_len[i]);
}

/* Write one packet (`pkt`: its bytes, in the ring or a private copy). */
void cons_write_packet_buf(struct cons *c, struct cons_stream *s,
			   unsigned char *pkt, uint64_t begin, int counted)
{
	cons_write_packet_batch(c, s, pkt, begin, counted, 0);
}

void cons_write_packet_batch(struct cons *c, struct cons_stream *s,
			     unsigned char *pkt, uint64_t begin, int counted,
			     int batch)
{
	struct strata_ring *r = s->ring;
	uint64_t content, ts_begin, ts_end, seq, disc;
	int ret = 0;

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
	uint64_t nev = cons_packet_events(c, pkt, content, counted);
	/* The metadata first: at no moment may a stream hold an event class
	 * the metadata does not declare (babeltrace2 refuses the whole
	 * trace; format.md §1). */
	if (c->meta_dirty)
		cons_update_metadata(c);
	if (!s->have_hdr) {
		/* The trailer's template, even if this packet is never
		 * written: a stream the full disk kept empty still ends with
		 * its count of what was not written (loss_trailer()). */
		memcpy(s->last_hdr, pkt, STRATA_PACKET_HEADER);
		memcpy(&s->last_ts, pkt + STRATA_PKT_OFF_TS_END, 8);
		s->have_hdr = 1;
	}
	memcpy(&seq, pkt + STRATA_PKT_OFF_SEQ, 8);
	memcpy(&disc, pkt + STRATA_PKT_OFF_DISCARDED, 8);
	/* A closer delayed between its switch and its close (ring_close()
	 * reads the ring's losses then) can count more than the closer of
	 * the next packet, which ran meanwhile. Within a stream the count
	 * must not go back (babeltrace2 takes a decrease for 2^64 lost
	 * events): the later packet takes the earlier's count; the last
	 * count, the total, stays exact. */
	if (disc < s->last_disc) {
		disc = s->last_disc;
		memcpy(pkt + STRATA_PKT_OFF_DISCARDED, &disc, 8);
	}
	if (s->file_off == 0 && disc && seq && !s->dead)
		lead_packet(c, s, pkt, seq - 1);
	batch = batch && !s->dead && batch_takes(c, s, pkt, content);
	if (!batch)
		cons_stream_flush(c, s); /* in file order */
	if (s->dead) {
		s->lost_io += nev;
		strata_add_fetch_relaxed(&c->lost_io, nev);
		return;
	}
	/* Only the content: the padding is a hole in a sparse file, and the
	 * file is extended to whole packets at the end. */
	if (batch) {
		if (!s->batch_n)
			batch_begin(s);
		s->batch_pkt[s->batch_n] = pkt;
		s->batch_nev[s->batch_n] = nev;
		s->batch_len[s->batch_n++] = content;
	} else {
		ret = stream_write(c, s, pkt, content);
	}
	if (ret) {
		/* Keep only whole packets: cut the partial one. What was
		 * written before stays a valid trace. */
		if (ftruncate(s->fd, (off_t)s->file_off) < 0)
			(void)0;
		cons_error(c, ret, "cannot write packet", c->dir);
		s->dead = 1;
		s->lost_io += nev;
		strata_add_fetch_relaxed(&c->lost_io, nev);
		return;
	}
	strata_add_fetch_relaxed(&c->events, nev);
	if (!batch)
		cons_sink_packet(c, s, s->file_off, pkt, content);

	memcpy(&ts_begin, pkt + STRATA_PKT_OFF_TS_BEGIN, 8);
	memcpy(&ts_end, pkt + STRATA_PKT_OFF_TS_END, 8);
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
	s->file_off += r->psize;
	strata_add_fetch_relaxed(&c->packets, 1);
	strata_add_fetch_relaxed(&c->bytes, content);
	if (s->idx_len == sizeof(s->idx_buf)) {
		/* the packets before their index entries */
		cons_stream_flush(c, s);
		idx_flush(c, s);
	}
}

/* Write the packet that began at virtual offset `begin` (complete). */
void cons_write_packet(struct cons *c, struct cons_stream *s, uint64_t begin,
		       int batch)
{
	unsigned char *pkt;

	if (c->copy) {
		pkt = cons_copy_packet(c, s, begin);
	} else {
		pkt = ring_packet_addr(s->ring, begin);
		if (c->external && !cons_packet_ours(c, s->ring, pkt, begin))
			pkt = NULL;
	}
	/* Overwrite mode writes at the end what the ring kept (the walk
	 * checks it); the rest, a ring written with rseq: counted by its
	 * closer (ring.md §7). */
	if (pkt)
		cons_write_packet_batch(c, s, pkt, begin,
					s->ring->rseq &&
						c->mode != STRATA_MODE_OVERWRITE,
					batch);
}

int cons_write_copy(struct cons *c, unsigned cpu, unsigned char *pkt,
		    uint64_t begin)
{
	struct cons_stream *s = cpu < STRATA_MAX_CPUS ? c->streams[cpu] : NULL;

	if (!s || !cons_packet_ours(c, s->ring, pkt, begin))
		return -EINVAL;
	cons_write_packet_buf(c, s, pkt, begin, 0);
	return s->dead ? c->err : 0;
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
	/* pairs with the writers' CAS of write (ring.md §2 F, §7) */
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
	memcpy(pkt + STRATA_PKT_OFF_SEQ, &seq, 8);
	memcpy(pkt + STRATA_PKT_OFF_DISCARDED, &total, 8);
	cons_write_packet_buf(c, s, pkt, seq << r->pshift, 0);
}

static void close_stream(struct cons *c, struct cons_stream *s)
{
	int pub = 0; /* the index renamed into place */

	cons_stream_flush(c, s);
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
		pub = !(close(s->idx_fd) || s->idx_bad || rename(tmp, path));
		if (!pub)
			unlink(tmp);
	}
	cons_sink_stream_close(c, s, pub);
	free(s);
}

/* The end of every stream, once everything is drained: the reserve
 * given back, the loss trailers, the metadata (with the streams' final
 * loss counts), the index. */
void cons_close_streams(struct cons *c)
{
	reserve_free(c);
	for (unsigned cpu = 0; cpu < c->max_cpu; cpu++)
		if (c->streams[cpu])
			cons_stream_flush(c, c->streams[cpu]);
	for (unsigned cpu = 0; cpu < c->max_cpu && !c->snapshot; cpu++)
		if (c->streams[cpu])
			loss_trailer(c, c->streams[cpu]);
	cons_update_metadata(c);
	for (unsigned cpu = 0; cpu < c->max_cpu; cpu++) {
		if (c->streams[cpu])
			close_stream(c, c->streams[cpu]);
		c->streams[cpu] = NULL;
	}
}
