/* SPDX-License-Identifier: MIT */
/* libstrata producer API: tracepoints, the major mask, starting and stopping. */
#ifndef STRATA_STRATA_H
#define STRATA_STRATA_H

#include <stddef.h>
#include <stdint.h>

#include <strata/events.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- major classes and the mask (docs/ring.md §2) ---------------------- */

#define STRATA_MAJOR_MAX 62 /* 0 is strata's own, 63 reserved */
#define STRATA_MAJOR_BIT(m) (UINT64_C(1) << (m))
#define STRATA_ID(major, minor) (((uint32_t)(major) << 16) | (uint32_t)(minor))
#define STRATA_MAX_WORDS 1023 /* longest event, header included */

/*
 * The hot word every tracepoint checks first. Bit m enables major class m.
 * Read with a plain load on the fast path; written only through
 * strata_enable_majors()/strata_disable_majors().
 */
extern STRATA_API volatile uint64_t strata_mask;

/* Enable / disable major classes (OR / AND-NOT into the mask). Any thread,
 * any time, async-signal-safe. */
STRATA_API void strata_enable_majors(uint64_t majors);
STRATA_API void strata_disable_majors(uint64_t majors);
STRATA_API uint64_t strata_majors(void);

/* ---- sessions ----------------------------------------------------------- */

enum strata_mode {
	STRATA_MODE_DISCARD = 0,   /* drop new events when the consumer lags */
	STRATA_MODE_OVERWRITE = 1, /* flight recorder: keep the newest packets */
	/* never drop while the consumer lives: a writer that finds the ring
	 * full waits for it, up to STRATA_BLOCK_TIMEOUT_MS (default 1000;
	 * then the event is dropped, counted), in signal handlers too
	 * (docs/ring.md §4, "Blocking") */
	STRATA_MODE_BLOCK = 2,
};

struct strata_options {
	const char *output;   /* trace directory; NULL: $STRATA_OUTPUT */
	size_t packet_size;   /* bytes, power of two >= 16 KiB; 0: default 256 KiB */
	unsigned npackets;    /* per CPU, power of two >= 2; 0: default 16 */
	int mode;             /* enum strata_mode */
	uint64_t majors;      /* initial mask; 0: all majors enabled */
	unsigned flush_ms;    /* close partial packets this often (live reading); 0: only at stop */
};

/*
 * Fill `opt` from the environment:
 *   STRATA_OUTPUT=DIR         where the trace goes (required to trace)
 *   STRATA_PACKET_SIZE=N[KM]  packet (sub-buffer) size
 *   STRATA_PACKETS=N          packets per CPU ring
 *   STRATA_MODE=discard|overwrite
 *   STRATA_MAJORS=all|none|1,2,5-9|0x...   initially enabled majors
 *   STRATA_FLUSH_MS=N
 * Returns 0, or -EINVAL naming nothing (see strata_strerror_detail()).
 */
STRATA_API int strata_options_from_env(struct strata_options *opt);

/*
 * Start tracing into a trace directory, with an in-process consumer
 * thread that writes complete packets as they fill. Called automatically
 * at load time when STRATA_OUTPUT is set. Not async-signal-safe.
 * Returns 0, -EALREADY (already tracing), -EINVAL (bad options), or the
 * negative errno of the failed mkdir/open/pthread_create.
 */
STRATA_API int strata_start(const struct strata_options *opt);

/*
 * Stop tracing: disable every tracepoint, close every partial packet,
 * write everything still in the rings (in overwrite mode: the packets held
 * now), finish the index and metadata, and join the consumer. Runs
 * automatically at exit. Idempotent. Returns 0, or the first I/O error as
 * a negative errno (what was written before stays a valid trace).
 */
STRATA_API int strata_stop(void);

/* Close every partial packet now so the consumer writes it (ring.md §4). */
STRATA_API void strata_flush(void);

/*
 * Flight recorder: write the newest complete packets of every ring of
 * this process into the trace directory `dir` (created if needed; a
 * trace of its own, `dir/ust/pid-N`) while tracing goes on. Needs the
 * in-process consumer (strata_start(), STRATA_OUTPUT) in overwrite mode;
 * under a `strata record` or `strata daemon` session use SIGUSR1 or
 * `strata session snapshot` instead. A packet that writers take back
 * while it is copied is left out, never written torn (docs/record.md,
 * "Snapshots"). Any thread, not a signal handler (allocates, writes
 * files); concurrent calls are serialized. Returns 0, -ENOENT (not
 * tracing in-process), -EINVAL (discard mode), or the negative errno of
 * a failed mkdir/open/write.
 */
STRATA_API int strata_snapshot(const char *dir);

/* Counters for this process since strata_start(). */
struct strata_stats {
	uint64_t packets_written;
	uint64_t bytes_written;
	uint64_t events_written;  /* events on disk, strata's own excluded */
	uint64_t lost_full;       /* discard mode, ring full */
	uint64_t lost_busy;       /* packet still being written by a lagging writer */
	uint64_t lost_too_big;    /* longer than STRATA_MAX_WORDS */
	uint64_t lost_nested;     /* nesting deeper than 4 */
	uint64_t lost_no_ring;    /* ring could not be created, or disabled */
	uint64_t packets_incomplete; /* reported at stop: a writer never committed */
	uint64_t lost_io;         /* recorded in the rings, not written: I/O error */
	/* strata's own records attempted (calibration points, loss reports,
	 * state dump), and those of them dropped. Their losses are not in
	 * events_discarded nor in lost_* above, which count the program's
	 * events only: events_written + lost_* == what the program logged. */
	uint64_t internal_logged;
	uint64_t internal_lost;
};
STRATA_API void strata_get_stats(struct strata_stats *st);

/* Text of the last configuration error of strata_options_from_env() or
 * strata_start() ("STRATA_PACKET_SIZE: 1000 is not a power of two"). */
STRATA_API const char *strata_strerror_detail(void);

/* ---- generic events ------------------------------------------------------ */

/* Log an event of n 64-bit words (n <= STRATA_MAX_WORDS - 1). Events
 * longer than that are refused and counted as too_big. */
STRATA_API void strata_log_words(uint8_t major, uint16_t minor,
				 const uint64_t *words, size_t n);

/* Log a byte blob: payload is u32 size, then the bytes padded to a word
 * (described as "size" and a byte sequence "data" in the metadata). */
STRATA_API void strata_log_blob(uint8_t major, uint16_t minor, const void *p,
				size_t size);

#ifdef __cplusplus
}
#endif

#include <strata/inline/event.h>

#endif /* STRATA_STRATA_H */
