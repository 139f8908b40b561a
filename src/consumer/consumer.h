/* SPDX-License-Identifier: MIT */
/* Draining complete packets from rings into a CTF stream directory. */
#ifndef STRATA_CONSUMER_CONSUMER_H
#define STRATA_CONSUMER_CONSUMER_H

#include <stdint.h>

#include <strata/strata.h>

#include "common/metadata.h"
#include "lib/clock.h"

struct cons;
struct strata_ring;

/*
 * Where the rings and the event descriptors come from when they are not
 * this process's own: the session daemon consumes the rings of another
 * process, mapped from the memfds it sent (docs/record.md). Such rings
 * are untrusted: every packet is copied out of the shared mapping before
 * it is checked and written, and nothing is ever stored into them except
 * `consumed` (ring.md §1, line 2: the consumer's own field).
 */
struct cons_source {
	uint32_t pid;         /* of the traced process */
	const char *procname; /* its name, for the metadata's env */
	/* Its event descriptors (for the metadata: the array stays valid
	 * until the next call) and lookup by id (ids without one are
	 * declared raw, format.md §6). */
	const struct strata_event_desc *const *(*events)(void *ctx, size_t *n);
	const struct strata_event_desc *(*lookup)(void *ctx, uint8_t major,
						  uint16_t minor);
	/* Changes when descriptors were added: the metadata is rewritten. */
	uint64_t (*generation)(void *ctx);
	/* Whether an id without a descriptor is logged as a byte blob
	 * (strata_log_blob(): format.md §6); NULL: never. */
	int (*is_blob)(void *ctx, uint32_t id);
	void *ctx;
	/* The session's first calibration point (shared by every process of
	 * the session, so that their clock descriptions agree); NULL: now. */
	const struct clock_point *cp_first;
};

/*
 * A second destination for what the consumer writes (the relay's sender,
 * docs/relay.md §5): told of every file of the sub-trace as the consumer
 * writes it, in the same order, with full paths under cfg->dir. Called
 * on the consumer's thread (cons_poll()'s caller, or the in-process
 * thread); a callback must not block: it copies what it keeps. Only
 * bytes the consumer wrote successfully are passed on.
 */
struct cons_sink {
	void *ctx;
	/* a new file (created empty) */
	void (*on_file_create)(void *ctx, const char *path);
	/* `len` bytes at `off` of that file: a packet's content (stream
	 * files: every packet takes packet_size bytes of the file, its tail
	 * a hole), or index bytes */
	void (*on_write)(void *ctx, const char *path, uint64_t off,
			 const void *buf, size_t len);
	/* the metadata file `path` was replaced by `text` */
	void (*on_metadata)(void *ctx, const char *path, const char *text,
			    size_t len);
	/* the file is complete: `size` (UINT64_MAX: as written); renamed to
	 * `final` (NULL: it keeps its name), or dropped when !keep */
	void (*on_close)(void *ctx, const char *path, uint64_t size,
			 const char *final, int keep);
};

/* What cons_finish() did with packets left incomplete by dead writers. */
struct cons_salvage {
	uint64_t salvaged;      /* closed by the consumer and written */
	uint64_t unsalvageable; /* an event in the middle never committed */
	uint64_t dropped_bytes; /* reserved but never committed (in flight) */
};

struct cons_config {
	const char *dir; /* sub-trace directory (format.md §1), must exist */
	int mode;        /* enum strata_mode */
	unsigned flush_ms; /* close idle packets this often; 0: never */
	uint8_t uuid[16];
	/* NULL: this process's rings (strata_rings[]), drained by a thread
	 * of the consumer's own. Otherwise rings are added with
	 * cons_add_ring() and drained by cons_poll(): no thread. */
	const struct cons_source *src;
	/* A snapshot (consumer/snapshot.c): no thread, rings added with
	 * cons_add_ring(), packets written only by cons_write_copy(). */
	int snapshot;
	/* The clock fit's first point (the running session's, so that the
	 * snapshot's clock description agrees with it); NULL: src's, or now. */
	const struct clock_point *cp_first;
	/* In-process: a descriptor the caller keeps for the end (-1: none),
	 * closed by cons_destroy() once the thread has stopped, so that a
	 * process out of descriptors still gets its last metadata written;
	 * set to -1 then. */
	int *fd_reserve;
	/* Also tell this sink of every file written; NULL: none. */
	const struct cons_sink *sink;
	/* src's rings are written only by the consumer's own program, run
	 * by the same user (strata record, the guardian): their packets are
	 * written from the shared mapping, as an in-process consumer writes
	 * its own, not from a private copy (docs/record.md, "Copies"). A
	 * daemon that serves any program leaves it 0. */
	int own_program;
};

/*
 * Write the initial metadata. In-process (cfg->src == NULL): start the
 * consumer thread, which drains every ring of strata_rings[] as its
 * packets complete (discard mode), or leaves them in memory (overwrite
 * mode). Returns 0 or a negative errno (detail in strata_strerror_detail()).
 */
int cons_create(const struct cons_config *cfg, struct cons **out);

/*
 * External consumer only: consume `ring` (a view of another process's
 * ring, built by cons_ring_map()) into the stream of its CPU. The ring
 * stays owned by the caller and must outlive the consumer. Returns 0,
 * -EEXIST (a ring of that CPU was added already) or -ENOMEM.
 */
int cons_add_ring(struct cons *c, struct strata_ring *ring);

/* The program's events (strata's own excluded) in a ring not drained
 * yet: what would be lost if nobody took it. `external`: another
 * process's ring (mapped, untrusted), else one of this process's own. */
uint64_t cons_ring_pending(struct strata_ring *r, int external);

/* External consumer only: write every complete packet of every ring
 * (discard mode) and rewrite the metadata if needed. Returns the number
 * of packets written. */
unsigned cons_poll(struct cons *c);

/* Around a sleep (ring.md §8): cons_arm() asks the closers of the rings
 * it waits on to ring (their `cwait`), then returns 1 if cons_poll() has
 * work already (do not sleep); cons_disarm() takes the requests back. The
 * consumer's thread sleeps on the `cwait` futexes themselves; the session
 * daemon learns of the rings through the writers' process (an eventfd,
 * "The session daemon"). */
int cons_arm(struct cons *c);
void cons_disarm(struct cons *c);

/*
 * Stop the thread, close every partial packet, wait (bounded) for writers
 * in flight, write what the rings hold, finish the index and metadata,
 * close the files and free; add the final counters to *final. Returns 0 or
 * the first I/O error (negative errno); what was written before an error
 * is a valid trace.
 *
 * External consumer: nothing is flushed (only the ring's own process may
 * write to it, ring.md §7). With `writers_gone` (the process exited, was
 * killed or exec'd: nobody will ever write these rings again), packets
 * left open or incomplete are salvaged (docs/record.md, "Crash
 * salvage"); otherwise only complete packets are written and the open
 * ones are reported.
 */
int cons_destroy(struct cons *c, struct strata_stats *final);
int cons_finish(struct cons *c, int writers_gone, struct strata_stats *final,
		struct cons_salvage *salv);

/*
 * Snapshot consumer only: write `pkt`, a private copy of the packet that
 * began at virtual offset `begin` of the ring of `cpu` (added before),
 * after the checks every copied packet gets (magic, uuid, content size,
 * event lengths). Returns 0, -EINVAL (no such ring, or the packet is not
 * one of this trace's) or the stream's I/O error.
 */
int cons_write_copy(struct cons *c, unsigned cpu, unsigned char *pkt,
		    uint64_t begin);
/* A snapshot's copy of an open packet whose first `done` bytes were
 * committed: closed as crash salvage closes a packet (the events walked
 * must end exactly at `done`), then written. 0, -EINVAL (not whole), or
 * the I/O error. */
int cons_write_open(struct cons *c, unsigned cpu, unsigned char *pkt,
		    uint64_t begin, uint64_t done);

/* The first calibration point of `c` (immutable after cons_create()). */
void cons_clock_first(const struct cons *c, struct clock_point *out);

/* What a snapshot wrote and left out (consumer/snapshot.c). */
struct cons_snap_stats {
	uint64_t packets;     /* written */
	uint64_t events;
	uint64_t bytes;
	uint64_t overwritten; /* taken by writers before or while copied */
	uint64_t busy;        /* a writer had not committed all of it */
	uint64_t open;        /* open packets written: their committed part */
};

/*
 * Flight recorder (docs/record.md, "Snapshots"): write the newest
 * complete packets of `rings` (nrings, NULL entries skipped), then the
 * committed part of the open one, to a new
 * sub-trace `cfg->dir` (must exist; cfg->snapshot is implied) while their
 * writers go on. No packet is torn: each is copied, then its slot is
 * re-checked (ring.md §1: still complete for the same lap, and `write`
 * not yet in the slot's next lap); one that changed during the copy is
 * dropped and counted. Not async-signal-safe (malloc, files). Adds to *st;
 * returns 0 or a negative errno (what was written is a valid trace).
 */
int cons_snapshot(const struct cons_config *cfg, struct strata_ring *const *rings,
		  unsigned nrings, struct cons_snap_stats *st);

/* Add the consumer's counters to *st. */
void cons_get_stats(struct cons *c, struct strata_stats *st);


/*
 * Map the ring memfd `fd` that process `pid` sent (ring.md §1: the
 * control block at offset 4096) and check everything it says about
 * itself: magic, version, pid, cpu, geometry (psize_shift in [14, 26],
 * npackets a power of two up to 65536), offsets inside the mapping, and
 * the file's size. The uuid must be `uuid`. Does not take ownership of fd.
 * Returns 0 with *out (free with cons_ring_unmap()), or -EINVAL (detail in
 * strata_strerror_detail()), -ENOMEM, or the errno of fstat/mmap.
 */
int cons_ring_map(int fd, uint32_t pid, const uint8_t uuid[16],
		  struct strata_ring **out);
void cons_ring_unmap(struct strata_ring *ring);

#endif /* STRATA_CONSUMER_CONSUMER_H */
