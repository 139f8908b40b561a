/* SPDX-License-Identifier: MIT */
/* Flight-recorder snapshots: the newest complete packets of live rings, never torn. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/format.h"
#include "consumer/cons_int.h"
#include "ring/ring.h"

/*
 * Copy the packet that began at `begin` into `buf` if it is complete and
 * stays so while it is copied; its length (the content its header
 * announces, clamped to the slot) to *len. Returns 1 (copied, whole), 0
 * (a writer holds it: incomplete, counted busy) or -1 (its slot was or
 * is being reused by a later lap: overwritten).
 *
 * Why the copy is never torn: the packet is complete when its slot's
 * commit count is exactly (lap + 1) * psize (ring.md §1), so every byte
 * reserved in it was written, and the acquire loads make them visible.
 * The only writer that can touch the slot again is one that reserved in
 * its next lap, i.e. moved `write` past begin + bufsize with its CAS (or
 * its rseq commit, ring.md §7) *before* storing a byte there. So, with
 * the copy's loads ordered before a second load of `write` (acquire
 * fence: the seqlock reader's pattern, `write` is the sequence), a second
 * `write` still <= begin + bufsize proves that no writer stored into the
 * slot during the copy. The commit count is checked again too (same lap,
 * still complete), as a second witness.
 */
static int copy_stable(const struct strata_ring *r, uint64_t begin,
		       unsigned char *buf, uint64_t *len)
{
	uint64_t bufsize = r->bufmask + 1;
	uint64_t want = (ring_lap(r, begin) + 1) * r->psize, content;
	uint64_t c1 = ring_committed(r, begin);

	if (c1 != want)
		return c1 > want ? -1 : 0;
	if (strata_load_acquire(&r->ctl->write) > begin + bufsize)
		return -1;
	const unsigned char *src = ring_packet_addr(r, begin);
	memcpy(buf, src, STRATA_PACKET_HEADER);
	/* Only the content (the header says how much); a torn header is
	 * caught below, and the clamp keeps the copy inside the slot. */
	memcpy(&content, buf + STRATA_PKT_OFF_CONTENT_SIZE, 8);
	content /= 8;
	if (content < STRATA_PACKET_HEADER || content > r->psize)
		content = r->psize;
	memcpy(buf + STRATA_PACKET_HEADER, src + STRATA_PACKET_HEADER,
	       content - STRATA_PACKET_HEADER);
	/* Orders the copy's loads before the re-checks (pairs with the
	 * writers' acq_rel CAS on `write`, and x86 store order under rseq). */
	strata_fence_acquire();
	if (strata_load_relaxed(&r->ctl->write) > begin + bufsize ||
	    ring_committed(r, begin) != want)
		return -1;
	*len = content;
	return 1;
}

/*
 * The open packet that began at `begin`: its whole bytes (committed, and
 * in rseq mode the inline events before `write`: ring_open_done()),
 * copied into `buf`. Returns how many (0: nothing usable; the header not
 * committed, or the slot reused during the copy). Those bytes were
 * written before their commit (release) or before `write` passed them,
 * and before our acquire loads; they are written once per lap, so only a
 * writer of the next lap could change them, and `write` tells as in
 * copy_stable(). Whether they are a prefix is checked by the event walk
 * of cons_write_open(), as in crash salvage: a reservation still in
 * flight before a whole one makes the walk fail, and the packet is left
 * out.
 */
static uint64_t copy_open(const struct strata_ring *r, uint64_t begin,
			  unsigned char *buf)
{
	uint64_t bufsize = r->bufmask + 1;
	uint64_t done = ring_open_done(r, begin);

	if (done < STRATA_PACKET_HEADER || done >= r->psize)
		return 0;
	if (strata_load_acquire(&r->ctl->write) > begin + bufsize)
		return 0;
	memcpy(buf, ring_packet_addr(r, begin), done);
	/* The copy's loads before the second load of `write`, as in
	 * copy_stable(); pairs with the writers' CAS of it. */
	strata_fence_acquire();
	if (strata_load_relaxed(&r->ctl->write) > begin + bufsize)
		return 0;
	return done;
}

/*
 * Where a snapshot keeps the packets of one ring between their copy
 * (newest first) and their write (oldest first): the newest ones in
 * memory, up to SNAP_MEM_MAX, the older ones in a temporary file of the
 * snapshot's directory, so that a snapshot's memory does not grow with
 * the ring (docs/record.md, "Snapshots"; a 1 GiB ring cost the daemon
 * 1 GiB). Slot j is the j-th packet from the newest.
 */
#define SNAP_MEM_MAX (4u << 20)

struct snap_store {
	unsigned char *mem;  /* nmem slots of psize, pages touched */
	size_t memsize;
	unsigned char *pkt;  /* one packet: to and from the file */
	unsigned char *open; /* one packet: the open packet's copy */
	size_t psize;        /* of pkt and open */
	uint64_t nmem;       /* slots in memory for the current ring */
	int fd;              /* the file, or -1 until a packet needs it */
	const char *dir;
};

/* Buffers for a ring of `bufsize` bytes in packets of `psize`: memory
 * that is touched now, not while racing the writers. */
static int store_fit(struct snap_store *s, uint64_t bufsize, uint64_t psize)
{
	uint64_t nmem = (bufsize < SNAP_MEM_MAX ? bufsize : SNAP_MEM_MAX) / psize;
	size_t want = (size_t)(nmem * psize);

	if (want > s->memsize) {
		void *p = realloc(s->mem, want);
		if (!p)
			return -ENOMEM;
		s->mem = p;
		memset(s->mem + s->memsize, 0, want - s->memsize);
		s->memsize = want;
	}
	if (psize > s->psize) {
		void *a = realloc(s->pkt, psize), *b;
		if (!a)
			return -ENOMEM;
		s->pkt = a;
		if (!(b = realloc(s->open, psize)))
			return -ENOMEM;
		s->open = b;
		memset(s->pkt, 0, psize);
		memset(s->open, 0, psize);
		s->psize = psize;
	}
	s->nmem = nmem;
	return 0;
}

/* The temporary file, made when first needed: unnamed (O_TMPFILE), or
 * named for a moment where that is not supported. */
static int store_file(struct snap_store *s)
{
	char path[4200];

	if (s->fd >= 0)
		return 0;
	s->fd = open(s->dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (s->fd >= 0)
		return 0;
	snprintf(path, sizeof(path), "%s/.snapshot-XXXXXX", s->dir);
	s->fd = mkostemp(path, O_CLOEXEC);
	if (s->fd < 0)
		return -errno;
	unlink(path);
	return 0;
}

/* Where slot j is copied to: its place in memory, or the transit packet. */
static unsigned char *store_dst(struct snap_store *s, uint64_t j)
{
	return j < s->nmem ? s->mem + j * s->psize : s->pkt;
}

/* Slot j was copied (len bytes) by store_dst(): keep it. */
static int store_put(struct snap_store *s, uint64_t j, uint64_t len)
{
	int ret;

	if (j < s->nmem)
		return 0;
	if ((ret = store_file(s)))
		return ret;
	return fmt_write_all(s->fd, s->pkt, (size_t)len,
			     (off_t)((j - s->nmem) * s->psize));
}

/* Slot j's bytes, back (NULL: the file could not be read). */
static unsigned char *store_get(struct snap_store *s, uint64_t j,
				uint64_t psize)
{
	if (j < s->nmem)
		return s->mem + j * psize;
	off_t off = (off_t)((j - s->nmem) * psize);
	uint64_t done = 0;
	while (done < psize) {
		ssize_t n = pread(s->fd, s->pkt + done, psize - done,
				  off + (off_t)done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (uint64_t)n;
	}
	if (done < STRATA_PACKET_HEADER)
		return NULL;
	/* the last slot's file may end at its content: the rest is not
	 * read (cons_write_copy() takes the content only) */
	return s->pkt;
}

/*
 * One ring: the packets before the open one, at most one ring's worth,
 * each copied (and checked) into the store, its check's result in got[]
 * (one per packet); and first the open packet's committed bytes.
 *
 * Newest first: a writer in overwrite mode reuses the oldest slot next,
 * so a copy that went oldest first would chase it, one packet ahead, and
 * lose every packet to a writer that fills one faster than it is copied
 * (a small ring, a fast writer, a preempted consumer). From the newest
 * down, the copy moves away from the writer, and stops at the first
 * packet found overwritten: the older ones could only be written with a
 * gap. What is written is the newest run of complete packets, in order,
 * then the open packet's events if they follow that run without a gap.
 */
static int snap_ring(struct cons *c, const struct strata_ring *r,
		     struct snap_store *s, int8_t *got, struct cons_snap_stats *st)
{
	uint64_t end = 0, b0 = 0, n = 0, first = 0;
	uint64_t done = 0, len;
	int ret = 0;

	/* Lapped all the way (nothing left): again, a few times. */
	for (int tries = 0; tries < 4; tries++) {
		/* pairs with the writers' CAS of write (ring.md §2 F, §7) */
		end = ring_packet_begin(r, strata_load_acquire(&r->ctl->write));
		done = copy_open(r, end, s->open);
		b0 = cons_window(r, end, 0);
		n = (end - b0) >> r->pshift;
		first = 0;
		for (uint64_t i = n; i-- > 0;) {
			uint64_t j = n - 1 - i;
			got[i] = (int8_t)copy_stable(r, b0 + (i << r->pshift),
						     store_dst(s, j), &len);
			if (got[i] == 1 && (ret = store_put(s, j, len))) {
				/* no room for the older ones: they are left
				 * out as if overwritten, and the error said */
				got[i] = -1;
			}
			if (got[i] < 0) {
				first = i + 1;
				break;
			}
		}
		if (first < n || !n || ret)
			break;
	}
	st->overwritten += first;
	for (uint64_t i = first; i < n; i++) {
		unsigned char *pkt;
		if (got[i] == 0) {
			st->busy++;
			continue;
		}
		if (!(pkt = store_get(s, n - 1 - i, r->psize))) {
			ret = ret ? ret : -EIO;
			continue;
		}
		int err = cons_write_copy(c, r->cpu, pkt, b0 + (i << r->pshift));
		if (err && err != -EINVAL && !ret)
			ret = err;
	}
	/* The open packet follows the run when the newest complete packet
	 * was written (or none was: nothing before it to leave a gap). */
	if (done && (first == n || got[n - 1] == 1)) {
		int err = cons_write_open(c, r->cpu, s->open, end, done);
		if (err == 0)
			st->open++;
		else if (err != -EINVAL && !ret)
			ret = err;
	}
	return ret;
}

int cons_snapshot(const struct cons_config *cfg, struct strata_ring *const *rings,
		  unsigned nrings, struct cons_snap_stats *st)
{
	struct cons_config cc = *cfg;
	struct snap_store s = {.fd = -1, .dir = cfg->dir};
	struct strata_stats fin;
	struct cons *c;
	/* npackets <= 65536 (ring.md §1, checked by cons_ring_map) */
	int8_t *got = malloc(65536);
	int ret, err = 0;

	cc.snapshot = 1;
	if (!got)
		return -ENOMEM;
	if ((ret = cons_create(&cc, &c))) {
		free(got);
		return ret;
	}
	for (unsigned i = 0; i < nrings; i++) {
		const struct strata_ring *r = rings[i];
		if (!r)
			continue;
		if ((ret = store_fit(&s, r->bufmask + 1, r->psize))) {
			err = ret;
			break;
		}
		if ((ret = cons_add_ring(c, rings[i]))) {
			if (!err)
				err = ret;
			continue;
		}
		ret = snap_ring(c, r, &s, got, st);
		if (ret && !err)
			err = ret;
	}
	if (s.fd >= 0)
		close(s.fd);
	free(s.mem);
	free(s.pkt);
	free(s.open);
	free(got);
	memset(&fin, 0, sizeof(fin));
	ret = cons_finish(c, 0, &fin, NULL);
	st->packets += fin.packets_written;
	st->events += fin.events_written;
	st->bytes += fin.bytes_written;
	return err ? err : ret;
}
