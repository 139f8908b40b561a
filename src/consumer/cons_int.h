/* SPDX-License-Identifier: MIT */
/* The consumer's internals, shared by its files (not installed): the consumer and stream structs, and what each file offers the others. */
#ifndef STRATA_CONSUMER_CONS_INT_H
#define STRATA_CONSUMER_CONS_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "common/format.h"
#include "consumer/consumer.h"
#include "common/metadata.h"
#include "lib/clock.h"
#include "ring/ring.h"

/*
 * The consumer is four files of one concept each:
 *   consumer.c  the loop: the thread, draining, prefault, sleeping on the
 *               rings' doorbells, create / finish / destroy;
 *   stream.c    a stream's files: packets written (direct I/O), the
 *               index, the full-disk reserve, the loss trailer, closing;
 *   events.c    a packet's events: the count its closer published, or
 *               the event walk; the compact ids, and the metadata the
 *               ids seen make the consumer rewrite;
 *   salvage.c   packets whose writers died or are still writing: crash
 *               salvage and the snapshot's open packet (close_copy).
 */

/* Direct I/O: buffer address, length and file offset in multiples of this
 * (the page: as large as any device's logical block). */
#define DIO_ALIGN 4096u
#define IDX_BATCH 64
/* Whole packets written together (stream.c, "Batches"): as many as make
 * a megabyte, 64 at most. */
#define BATCH_BYTES (UINT64_C(1) << 20)
#define BATCH_MAX 64

static inline unsigned cons_batch_max(uint64_t psize)
{
	uint64_t n = BATCH_BYTES / psize;
	return n < 1 ? 1 : n > BATCH_MAX ? BATCH_MAX : (unsigned)n;
}

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
	/* Another process's ring: its `live_time` as the last cons_poll()
	 * read it (consumer.c live_poll()) */
	uint64_t live_seen;
	size_t idx_len;
	int idx_bad; /* a write failed: the index does not cover the stream */
	unsigned char idx_buf[STRATA_IDX_ENTRY * IDX_BATCH];
	/* Whole packets counted and indexed but not yet written (stream.c,
	 * "Batches"), from file offset batch_off: their memory stays the
	 * writer's until cons_stream_flush(). batch_was: the stream's last_*
	 * and idx_len before the first of them, put back if no packet of
	 * the batch could be written. */
	unsigned char *batch_pkt[BATCH_MAX];
	uint64_t batch_len[BATCH_MAX]; /* content */
	uint64_t batch_nev[BATCH_MAX]; /* events */
	unsigned batch_n;
	uint64_t batch_off;
	struct {
		uint64_t disc, ts;
		unsigned char hdr[STRATA_PACKET_HEADER];
		int have_hdr;
		size_t idx_len;
	} batch_was;
};

struct cons {
	char dir[4096];
	int mode;
	unsigned flush_ms;
	int live_fd;     /* DIR/.live-time (consumer.c live_beacon), or -1 */
	int live_failed; /* not made or not written: not tried again */
	uint64_t live_last; /* the last beacon written (another process's) */
	uint8_t uuid[16];
	pthread_t thread;
	int running;
	/* NULL: in-process. Else another process's rings (untrusted): each
	 * packet is checked (cons_packet_ours()) and, with `copy`, copied to
	 * pktbuf before it is read (cons_config.own_program). */
	struct cons_source src;
	int external;
	int copy;
	/* A snapshot (consumer/snapshot.c): packets come only through
	 * cons_write_copy(); nothing is drained or finished from the rings. */
	int snapshot;
	int passive; /* external || snapshot: no thread, rings are added */
	int *fd_reserve; /* cons_config's */
	unsigned char *pktbuf; /* DIO_ALIGN-aligned */
	size_t pktbuf_size;
	unsigned char *tail;   /* DIO_ALIGN bytes, aligned: a packet's last page */
	unsigned char *bounce; /* aligned copy of an unaligned packet */
	/* BATCH_MAX pages, aligned: the batch's last partial pages, padded */
	unsigned char *batch_tails;
	struct iovec batch_iov[2 * BATCH_MAX];
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
	const struct cons_sink *sink; /* cfg->sink (sink.c) */
};

/*
 * The first packet to take from a ring whose packets end at `end` (a
 * packet boundary): `from` when it lies in the last ring's worth before
 * `end`, else the start of that lap (0 early on). `from` may be anything
 * another process stored (`consumed`), or 0 for "all the ring holds":
 * what is read is never more than one ring's worth of packets.
 */
static inline uint64_t cons_window(const struct strata_ring *r, uint64_t end,
				   uint64_t from)
{
	if (from > end || end - from > r->bufmask + 1)
		from = end > r->bufmask ? end - (r->bufmask + 1) : 0;
	return from;
}

/* ---- stream.c ----------------------------------------------------------- */

/* Note the first I/O error of the consumer (and its detail). */
void cons_error(struct cons *c, int err, const char *what, const char *path);
/* Hold the full-disk reserve (format.md §2, "Trailer"); best effort. */
void cons_reserve_hold(struct cons *c);
/* Open the stream file and index of ring `r`'s CPU. NULL: no memory (an
 * open error leaves the stream dead, counted in c->err). */
struct cons_stream *cons_stream_open(struct cons *c, struct strata_ring *r);
/* Whether a copied packet's magic and uuid are this trace's (format.md
 * §2); reported if not. */
int cons_packet_ours(struct cons *c, const struct strata_ring *r,
		     const unsigned char *pkt, uint64_t begin);
/* Copy the packet at `begin` of another process's ring to c->pktbuf
 * (the slot after the stream's batch): the copy, or NULL if it is not
 * one of ours. */
unsigned char *cons_copy_packet(struct cons *c, struct cons_stream *s,
				uint64_t begin);
/* Check, count and write one packet (`pkt`: in the ring or a copy, ours
 * to change until it is released). `counted`: its `events` is the count
 * its closer published (cons_packet_events()). */
void cons_write_packet_buf(struct cons *c, struct cons_stream *s,
			   unsigned char *pkt, uint64_t begin, int counted);
/* The same, `batch`: a whole packet may wait, in the ring or in its slot
 * of c->pktbuf, for the stream's next cons_stream_flush(). */
void cons_write_packet_batch(struct cons *c, struct cons_stream *s,
			     unsigned char *pkt, uint64_t begin, int counted,
			     int batch);
/* Write the complete packet that began at `begin` of the stream's ring;
 * `batch` as above (cons_drain_ring() only). */
void cons_write_packet(struct cons *c, struct cons_stream *s, uint64_t begin,
		       int batch);
/* Whether the stream's batch waits for the ring's packet at `next`
 * (stream.c, "Batches"): there is room for it and it follows the last in
 * memory. If not, cons_drain_ring() writes the batch and releases it. */
int cons_stream_batch_waits(const struct cons_stream *s, uint64_t next);
/* Write the packets waiting in the stream's batch: before their memory
 * is released or reused. */
void cons_stream_flush(struct cons *c, struct cons_stream *s);
/* The end of every stream: the reserve, the loss trailers, the index,
 * the metadata. */
void cons_close_streams(struct cons *c);

/* ---- events.c ----------------------------------------------------------- */

/* The descriptors' generation: a change rewrites the metadata. */
uint64_t cons_generation(struct cons *c);
/* One event at p (`room` bytes of content left): its length, or 0 when
 * damaged; its id to *id, its time to *ts (docs/compact.md). */
uint32_t cons_event_at(struct cons *c, const unsigned char *p, uint64_t room,
		       uint32_t *id, uint64_t *ts);
/* Count a packet's events and note the ids the metadata must declare. */
uint64_t cons_scan_events(struct cons *c, const unsigned char *pkt,
			  uint64_t content);
/* The same, from the count the packet's closer published when `counted`
 * and it can be trusted, and by the walk otherwise; stored in the packet's
 * `events` (format.md §2). */
uint64_t cons_packet_events(struct cons *c, unsigned char *pkt,
			    uint64_t content, int counted);
/* Rewrite the metadata (the descriptors, raw ids and compact ids). */
void cons_update_metadata(struct cons *c);

/* ---- salvage.c ---------------------------------------------------------- */

/* Close a copy of a packet whose first `done` bytes are whole events, as
 * the ring's closer would have: 0, or -1 if the events do not end at
 * `done` exactly or one is older than the one before it (docs/record.md,
 * "Crash salvage"). */
int cons_close_copy(struct cons *c, const struct cons_stream *s,
		    unsigned char *pkt, uint64_t done);
/* A copy of the packet open at virtual offset `begin`, reserved to
 * `reserved`, whose reservations marked in flight (strata_ring_ctl's
 * `inflight`) are all its `reserved - done` missing bytes: cut them out
 * and close the copy at `done`: 0, or -1. */
int cons_cut_marked(struct cons *c, const struct cons_stream *s,
		    unsigned char *pkt, uint64_t begin, uint64_t reserved,
		    uint64_t done);
/* A copy reserved to `reserved` whose committed `done` bytes are not a
 * whole prefix: cut out the reservation in flight before committed
 * events when it can be told, and close the copy at `done`: 0, or -1. */
int cons_cut_in_flight(struct cons *c, const struct cons_stream *s,
		       unsigned char *pkt, uint64_t reserved, uint64_t done);
/* An external ring at the end: drain it, then salvage or report what is
 * left open. */
void cons_finish_external(struct cons *c, struct cons_stream *s,
			  int writers_gone);

/* ---- sink.c ------------------------------------------------------------- */

/* What the consumer wrote, passed on to c->sink (consumer.h); each does
 * nothing without a sink. */
void cons_sink_stream_open(struct cons *c, struct cons_stream *s);
void cons_sink_packet(struct cons *c, struct cons_stream *s, uint64_t off,
		      const unsigned char *pkt, uint64_t content);
void cons_sink_index(struct cons *c, struct cons_stream *s, uint64_t off,
		     const void *buf, size_t len);
void cons_sink_stream_close(struct cons *c, struct cons_stream *s,
			    int idx_published);
void cons_sink_metadata(struct cons *c);
void cons_sink_beacon(struct cons *c, const char *path, int create,
		      const uint64_t rec[2]);

/* ---- consumer.c --------------------------------------------------------- */

/* Discard mode: write and release every complete packet from
 * `consumed` on. Returns the packets written. */
unsigned cons_drain_ring(struct cons *c, struct cons_stream *s);

#endif /* STRATA_CONSUMER_CONS_INT_H */
