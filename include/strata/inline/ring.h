/* SPDX-License-Identifier: MIT */
/* The producer fast path: lockless reserve / write / commit (docs/ring.md §2). */
#ifndef STRATA_INLINE_RING_H
#define STRATA_INLINE_RING_H

#include <stdint.h>

#include <strata/inline/atomic.h>

#if defined(__GLIBC__) &&                                                     \
	(__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
#include <sys/rseq.h>
#define STRATA_HAVE_RSEQ 1
#endif

#include <strata/inline/rseq.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef STRATA_API
#define STRATA_API __attribute__((visibility("default")))
#endif

#define STRATA_MAX_CPUS 4096
#define STRATA_MAX_NEST 4
#define STRATA_MAX_RETRIES 64
#define STRATA_MAX_WORDS 1023 /* longest event in 64-bit words, header counted as one */
#define STRATA_PACKET_HEADER 96 /* bytes, docs/format.md §2 */
#define STRATA_TS_BITS 27       /* of a compact header (docs/compact.md) */
#define STRATA_TS_HI_SHIFT STRATA_TS_BITS /* docs/ring.md §2, timestamp gaps */

/*
 * Event headers (docs/compact.md, stream class 1): one 32-bit word, the
 * compact id (1-30) in bits 0-4 and the low 27 bits of the clock above;
 * or the extended form, 16 bytes: 31 and the event's length in 32-bit
 * words, the u32 event class id, the u64 clock. A "header id"
 * (`header_id` below; HID in STRATA_HID_EXT) names which: 1-30, compact
 * with that id; anything else, extended with the id
 * header_id & ~STRATA_HID_EXT (the bit forces the extended form on an
 * id below 31: strata's own variable-length records).
 */
#define STRATA_CID_EXT 31u
#define STRATA_CID_USER 10u /* first compact id given to user events */
#define STRATA_NCIDS 32u
#define STRATA_INFLIGHT_SLOTS 8u
#define STRATA_HID_EXT (1u << 31) /* header id: extended, whatever the id */
#define STRATA_HDR_COMPACT 4u
#define STRATA_HDR_EXTENDED 16u

/* strata's own event ids (docs/format.md §4) */
#define STRATA_ID_THREAD 1u
#define STRATA_ID_CLOCK 2u
#define STRATA_ID_CALIB 3u
#define STRATA_ID_WORDS 4u
#define STRATA_ID_LOST 5u
#define STRATA_ID_PROCESS 6u     /* state dump (src/lib/statedump.c) */
#define STRATA_ID_THREAD_NAME 7u
#define STRATA_ID_MAP 8u
#define STRATA_ID_STATEDUMP 9u

enum strata_lost_cause {
	STRATA_LOST_FULL = 0,
	STRATA_LOST_BUSY,
	STRATA_LOST_TOO_BIG,
	STRATA_LOST_NESTED,
	STRATA_LOST_NO_RING,
	STRATA_LOST_NCAUSES
};

/*
 * ABI. strata_ring_ctl, strata_ring and strata_tls below are compiled
 * into every traced binary: the static inline functions of this header
 * (and of rseq.h) read and write their fields at the offsets the binary
 * was built with, as they use strata_rsv, the variables declared below
 * and this file's constants (STRATA_RING_CTL_OFFSET, STRATA_COMMIT_STRIDE,
 * the header layout); nothing checks them at run time. strata_ring_ctl is
 * read, besides, by consumers in other processes (`strata record`,
 * `strata daemon`, the embedded mode's guardian), which may be of another
 * build than the library. So:
 *
 * - a field may be appended, never inserted, and only one the inline
 *   code does not read, or reads back only as it wrote it itself
 *   (`inflight`): to strata_ring at its end, below
 *   STRATA_RING_CTL_OFFSET (`stalled`); to strata_ring_ctl in the padding
 *   of a cache line or after `cids`, inside its 4 KiB, and only one that
 *   a consumer of an older build may ignore and whose 0 (what an older
 *   library's fresh memfd holds there) means what that library did
 *   (`lost_own`);
 * - any other change (moving, resizing, retyping a field or changing what
 *   it means, or one of the constants above) bumps STRATA_RING_VERSION,
 *   which consumers check for equality (src/consumer/mapped.c, which then
 *   refuses the ring), and, since binaries built before it would go on
 *   using their old offsets against the new library, the library's
 *   SOVERSION (src/CMakeLists.txt) with it;
 * - strata_tls changes not at all: 8 bytes, read as one word.
 *
 * `make abi` (scripts/abi-check.sh; the test abi-libstrata, label abi,
 * of `make check`) compares libstrata.so's ABI, these structs included,
 * with abi/libstrata.abi and fails on any difference: revert it, or make
 * it deliberately and record it with `make abi-update` in the same commit.
 */

/*
 * The ring's control block, at the start of its shared mapping
 * (docs/ring.md §1). One cache line per role. Only integers: another
 * process maps this too. ABI: above; `write` and `xr` are adjacent for
 * rseq.h's one 16-byte store.
 */
struct strata_ring_ctl {
	/* line 0: identity, read-only after creation */
	uint32_t magic; /* STRATA_RING_MAGIC */
	uint32_t version;
	uint32_t cpu;
	uint32_t pid;
	uint32_t psize_shift;
	uint32_t npackets_shift;
	uint32_t mode;
	uint32_t commit_offset; /* bytes from the start of the mapping */
	uint64_t data_offset;
	uint64_t map_size;
	uint8_t uuid[16];
	/* line 1: writers. `write` and `xr` are stored together, by one
	 * 16-byte store (rseq mode, ring.md §7 "The inline path"). */
	uint64_t write __attribute__((aligned(64)));
	uint64_t xr; /* rseq mode: write's packet's count (STRATA_XR_*) */
	uint32_t owner;
	uint32_t last_ts_hi;
	/* line 2: consumer */
	uint64_t consumed __attribute__((aligned(64)));
	/* Consumer waiting: 1 while a consumer sleeps on this word; the closer of a
	 * packet that sees it takes it back to 0 and wakes it (futex,
	 * ring.md §8). */
	uint32_t cwait;
	/* The live timer of a process drained by another (docs/record.md,
	 * "Live reading"): its helper thread flushes every ring, then
	 * stores here the number of rings it had and the trace time it
	 * read before that flush (`live_time` last, release). Appended in
	 * line 2's padding: 0 from older libraries and with the timer
	 * off, which means no beacon. Never read by the inline code; the
	 * consumer reading it trusts neither. */
	uint32_t live_rings;
	uint64_t live_time;
	/* line 3: loss counters (slow path only) */
	uint64_t lost[STRATA_LOST_NCAUSES] __attribute__((aligned(64)));
	uint32_t disabled;
	/* 1: written with restartable sequences, whose inline events commit
	 * nothing (ring.md §7): `xr` is kept, and a packet's closer commits
	 * psize - xr. Set by the creator, then read-only. */
	uint32_t rseq;
	/* strata's own records dropped (ids below STRATA_CID_USER): kept
	 * apart from lost[], whose sum is the packets' events_discarded, so
	 * that recorded + discarded == logged holds for what the program
	 * logged (format.md §2). Appended in line 3's padding: rings of
	 * older libraries read 0 here. */
	uint64_t lost_own;
	/* lines 4-7: the process's compact ids (docs/compact.md): cids[c] =
	 * full id | words << 32 | 1 << 63 for each compact id c given so far
	 * (strata's own 1-9 included), 0 for the others. Written by the
	 * process when it gives an id, before any event uses it; read by
	 * consumers to walk packets and to write the metadata. */
	uint64_t cids[STRATA_NCIDS] __attribute__((aligned(64)));
	/* line 8: the two-phase reservations in flight (strata_reserve()
	 * to strata_commit(), inline or out of line):
	 * STRATA_INFLIGHT_MARK(off, bytes), 0 for none. Set after the
	 * reservation and cleared before its commit, by its thread, in the
	 * first free slot from tid % STRATA_INFLIGHT_SLOTS on
	 * (strata_rsv_mark() below), so
	 * that a mark present is a reservation not yet committed: crash
	 * salvage cuts exactly those out of a packet where guessing from
	 * lengths could keep one and drop a committed event (docs/record.md,
	 * "Crash salvage"). Appended after `cids`: 0 in an older library's
	 * ring, which salvage then reads as before, and in a ring written
	 * by binaries built before the marks. The inline code reads it only
	 * to clear its own mark: it never depends on a library writing it. */
	uint64_t inflight[STRATA_INFLIGHT_SLOTS] __attribute__((aligned(64)));
} __attribute__((aligned(64)));

#define STRATA_CID_VALID (UINT64_C(1) << 63)
/* A mark: the reservation's virtual offset, 48 bits of it, and its
 * length in 4-byte units (never 0). */
#define STRATA_INFLIGHT_MARK(off, bytes)                                       \
	(((uint64_t)(off) & ((UINT64_C(1) << 48) - 1)) << 16 |                  \
	 (uint64_t)((bytes) / 4))

/*
 * `xr` on a ring written with restartable sequences (ring.md §7): what
 * the writers of the open packet have reserved in it, stored with `write`
 * by one 16-byte store. Bits 0-31: the bytes reserved two-phase (each
 * committed by its writer; the packet's closer commits the rest). Bits
 * 32-62: the program's events, inline and two-phase (strata's own records
 * not counted). Bit 63: one of them has a full event id, not a compact
 * one. The closer publishes bits 32-63 in the packet header's `events`
 * (format.md §2), so that a consumer learns the count without walking
 * the events, and walks only a packet whose ids it may not know.
 */
#define STRATA_XR_EVENT (UINT64_C(1) << 32)
#define STRATA_XR_FULL_ID (UINT64_C(1) << 63)
#define STRATA_XR_BYTES(x) ((uint32_t)(x))

/* strata_tls (tid and nesting) read as one word (strata_log_rseq). */
typedef uint64_t strata_u64_alias __attribute__((may_alias));
/* A payload word: 4-byte aligned in stream class 1 (docs/compact.md). */
typedef uint64_t strata_u64_a4 __attribute__((aligned(4), may_alias));
typedef uint32_t strata_u32_alias __attribute__((may_alias));

/* The owner hint when no thread is named (a fresh ring, ring.md §3 rule
 * 4): not 0, which is the tid of a thread that has not logged yet. */
#define STRATA_OWNER_NONE 0xffffffffu

#define STRATA_RING_MAGIC 0x52525453u /* "STRR" */
/* The control block's layout: bumped by any change but an append (ABI,
 * above); consumers take rings of their own version only. */
#define STRATA_RING_VERSION 4u
/* Per packet slot, one cache line: [0] the local commit count (rseq: plain
 * adds on the ring's CPU only; CAS mode: every commit), [1] the remote
 * count (rseq mode: locked adds from any other CPU). ring.md §7. */
#define STRATA_COMMIT_STRIDE 8

/* The control block follows the process-private view at this fixed offset
 * in the ring's mapping (src/ring/shm.c), so the fast path computes its
 * address instead of loading it: one dependent load fewer. */
#define STRATA_RING_CTL_OFFSET 4096

/* Process-private view of a ring: pointers and masks, read-only once
 * published in strata_rings[]. ABI (above): the inline code reads `ctl`
 * to `cpu`; `rseq`, `fd` and `stalled` are the library's own. */
struct strata_ring {
	struct strata_ring_ctl *ctl;
	unsigned char *data;
	uint64_t *commit; /* commit[idx * STRATA_COMMIT_STRIDE] */
	uint64_t psize;
	uint64_t pmask;   /* psize - 1 */
	uint64_t bufmask; /* psize * npackets - 1 */
	uint32_t pshift;
	uint32_t nmask;   /* npackets - 1 */
	uint32_t cpu;
	uint32_t rseq; /* ctl->rseq, read once */
	int fd;
	/* STRATA_MODE_BLOCK (slow path only): `consumed` + 1 when a wait for
	 * room timed out, 0 otherwise; writers drop without waiting until
	 * the consumer moves again, so that a stalled consumer costs one
	 * timeout, not one per event. Appended: the inline path never
	 * reads it. */
	uint64_t stalled;
};

/* ABI (above): fixed, tid then nesting, 8-byte aligned: read as one word
 * by strata_log_rseq(). */
struct strata_tls {
	uint32_t tid;     /* 0 until the thread's first event */
	uint32_t nesting; /* tracepoints in progress on this thread */
} __attribute__((aligned(8)));

extern STRATA_API struct strata_ring *strata_rings[STRATA_MAX_CPUS];
extern STRATA_API __thread struct strata_tls strata_tls
	__attribute__((tls_model("initial-exec")));
extern STRATA_API uint32_t strata_pid;
extern STRATA_API int strata_clock_tsc; /* 1: the trace clock is the TSC */
/* How rings are written, decided once at load time (ring.md §7):
 * 0, with CAS and locked adds (ring.md §2); otherwise with restartable
 * sequences, whose sections run inline when the trace clock is the TSC
 * (STRATA_RSEQ_INLINE: the inline code reads it with rdtsc), and only out
 * of line, around the library's clock, when it is not
 * (STRATA_RSEQ_OUTLINE). */
#define STRATA_RSEQ_INLINE 1
#define STRATA_RSEQ_OUTLINE 2
extern STRATA_API int strata_rseq;

struct strata_rsv {
	struct strata_ring *ring;
	uint64_t off;   /* virtual offset of the reservation */
	strata_u64_a4 *p; /* first payload word (4-byte aligned) */
	uint32_t bytes; /* whole reservation, records included */
};

/* Out-of-line slow path (src/ring/slow.c): packet switch, first use of a
 * CPU or thread, nesting and retry limits, timestamp gaps. `header_id`:
 * a compact id, or an event class id | STRATA_HID_EXT (above). `flags`: STRATA_SLOW_THREAD when a thread record
 * is needed (the inline paths pass their 0/1 `need`, which is that bit),
 * plus STRATA_SLOW_HELD when the caller already holds the nesting guard
 * (it must not be released in between: a signal handler could then
 * trust an owner store that no reservation followed, ring.md §3).
 * Returns 1 with *r filled, or 0 when the event was dropped (and
 * counted); the guard is released on drop and by strata_commit(). */
#define STRATA_SLOW_THREAD 1u
#define STRATA_SLOW_HELD 2u
STRATA_API int strata_reserve_slow(struct strata_rsv *r, uint32_t header_id,
				   uint32_t words, uint32_t flags);
/* The whole event out of line: reserve (any protocol, every case), copy
 * the words-1 payload words from `pl`, commit. strata_log_fixed()'s
 * fallback. `cidp`: the call site's compact id byte (0 until the first
 * event gives it one, STRATA_CID_EXT when none is left), or NULL for an
 * event of variable length, always extended. */
STRATA_API void strata_log_slow(uint8_t *cidp, uint32_t id, uint32_t words,
				const uint64_t *pl);
/* The same for events of at most 4 payload words, passed in registers. */
STRATA_API void strata_log_slow4(uint8_t *cidp, uint32_t id, uint32_t words,
				 uint64_t a, uint64_t b, uint64_t c, uint64_t d);
/* Close the packet that the reservation at `end` exactly filled;
 * `self_committed` is how many of its bytes their writers commit
 * themselves (ring.md §4, §7): in rseq mode, the packet's `xr` after
 * that reservation, whose event count the closer publishes. */
STRATA_API void strata_ring_close_exact(struct strata_ring *ring,
					uint64_t end, uint64_t ts,
					uint64_t self_committed);

/* CLOCK_MONOTONIC in nanoseconds: the trace clock where the TSC is not
 * usable (out of line: keeps this header free of POSIX declarations). */
STRATA_API uint64_t strata_clock_mono(void);

/* Not named strata_ring_ctl(): in C++ a function of the struct's name
 * hides its constructor (g++ -Wshadow). */
static strata_always_inline struct strata_ring_ctl *
strata_ring_ctl_of(struct strata_ring *ring)
{
	return (struct strata_ring_ctl *)((char *)ring + STRATA_RING_CTL_OFFSET);
}

#if defined(__x86_64__)
static strata_always_inline uint64_t strata_rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}
#endif

static strata_always_inline uint64_t strata_clock(void)
{
#if defined(__x86_64__)
	if (strata_likely(strata_clock_tsc))
		return strata_rdtsc();
#endif
	return strata_clock_mono();
}

/*
 * The clock, read only after every earlier load has completed: the CAS
 * protocol's timestamp (D) must come after its load of `write` (B), or a
 * writer that migrated may stamp its event a little before the event it
 * follows in the buffer, written from another CPU meanwhile; a compact
 * header then reads 2^27 ticks late (ring.md §2, "Monotonicity"). rdtscp
 * waits for the earlier loads; CLOCK_MONOTONIC's vDSO orders its own
 * read. Restartable sequences need none of this: a ring is written from
 * its own CPU only.
 */
static strata_always_inline uint64_t strata_clock_ordered(void)
{
#if defined(__x86_64__)
	if (strata_likely(strata_clock_tsc)) {
		uint32_t lo, hi, aux;
		__asm__ __volatile__("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux) : : "memory");
		(void)aux;
		return ((uint64_t)hi << 32) | lo;
	}
#endif
	return strata_clock_mono();
}

/* Current CPU from glibc's rseq area: one load from the thread pointer.
 * Negative when rseq is unavailable; the slow path then asks the kernel. */
static strata_always_inline int strata_cpu(void)
{
#if defined(STRATA_HAVE_RSEQ) && defined(__x86_64__)
	char *tp;
	__asm__("mov %%fs:0, %0" : "=r"(tp));
	return (int)((volatile struct rseq *)(tp + __rseq_offset))->cpu_id;
#else
	return -1;
#endif
}

/* 1 if `header_id` (a compact id, or an event class id |
 * STRATA_HID_EXT) takes the compact header: it is a compact id, 1-30. */
static strata_always_inline int strata_header_id_compact(uint32_t header_id)
{
	return header_id - 1 < STRATA_CID_EXT - 1;
}

/* 1 if an event of `header_id` is the program's, 0 if one of strata's own
 * records (ids below STRATA_CID_USER, and major 0: format.md §4). */
static strata_always_inline int strata_header_id_user(uint32_t header_id)
{
	uint32_t id = header_id & ~STRATA_HID_EXT;
	return id >= STRATA_CID_USER && (id < STRATA_CID_EXT || id >= 0x10000);
}

/* `xr` with a reservation of `len` two-phase bytes of an event of
 * `header_id` in it: one event more if it is the program's, and the
 * full-id bit set (never added: it may be set already) if its id is not a
 * compact one (above). Folds to one add for a constant id. */
static strata_always_inline uint64_t strata_xr_add(uint64_t x, uint32_t len,
						   uint32_t header_id)
{
	return (x + len + (strata_header_id_user(header_id) ? STRATA_XR_EVENT : 0)) |
	       ((header_id & ~STRATA_HID_EXT) >= STRATA_CID_EXT ? STRATA_XR_FULL_ID
								 : 0);
}

/* A compact event header: `compact_id` (1-30) under the clock's low 27
 * bits (docs/compact.md). */
static strata_always_inline uint32_t strata_hdr_compact(uint64_t ts,
							uint32_t compact_id)
{
	return (uint32_t)ts << 5 | compact_id;
}

/*
 * Bytes of a reservation: the event (its header and words - 1 payload
 * words), after a strata:thread record (one payload word) when `need`.
 * `ts_gap`: the clock has left the 2^27-tick window of the ring's last
 * full timestamp (ts >> 27 != last_ts_hi, ring.md §2 "timestamp gaps"),
 * so the first of them takes the extended header, which carries the full
 * clock (strata_rsv_fill()).
 */
static strata_always_inline uint32_t strata_rsv_len(uint32_t header_id,
						    uint32_t words,
						    uint32_t need,
						    uint32_t ts_gap)
{
	uint32_t hdr = strata_header_id_compact(header_id)
			       ? STRATA_HDR_COMPACT
			       : STRATA_HDR_EXTENDED;

	if (need)
		return (ts_gap ? STRATA_HDR_EXTENDED : STRATA_HDR_COMPACT) +
		       8 + hdr + 8 * words - 8;
	return (ts_gap ? STRATA_HDR_EXTENDED : hdr) + 8 * words - 8;
}

/* The header of a record of header id `header_id` and `plen` payload
 * bytes at p: compact, or extended for an id that is not compact or with
 * `ts_gap` (a timestamp gap, strata_rsv_len(): the extended header
 * carries the full clock, docs/compact.md). Returns the record's
 * payload. */
static strata_always_inline unsigned char *strata_put_hdr(unsigned char *p,
							  uint32_t header_id,
							  uint32_t plen,
							  uint64_t ts,
							  uint32_t ts_gap)
{
	if (ts_gap || !strata_header_id_compact(header_id)) {
		((strata_u32_alias *)p)[0] = STRATA_CID_EXT |
					     (STRATA_HDR_EXTENDED + plen) / 4 << 5;
		((strata_u32_alias *)p)[1] = header_id & ~STRATA_HID_EXT;
		*(strata_u64_a4 *)(p + 8) = ts;
		return p + STRATA_HDR_EXTENDED;
	}
	*(strata_u32_alias *)p = strata_hdr_compact(ts, header_id);
	return p + STRATA_HDR_COMPACT;
}

/* Write the records and the event header at virtual offset w (after a
 * successful reservation of
 * len = strata_rsv_len(header_id, words, need, ts_gap) bytes) and fill
 * *r. `self_committed`: the bytes of w's packet, this reservation's
 * included, that their writers commit themselves (all of them in CAS
 * mode; in rseq mode the two-phase ones, with the packet's event count:
 * its `xr` after this reservation, ring.md §7); the closer of the
 * packet commits the rest. Ten
 * arguments on
 * purpose: always inlined, each is a value its callers hold in a
 * register already; a struct of them would be stored and reloaded. */
static strata_always_inline void strata_rsv_fill(struct strata_rsv *r,
				   struct strata_ring *ring, uint64_t w,
				   uint32_t len, uint64_t ts,
				   uint32_t header_id, uint32_t words,
				   uint32_t need, uint32_t ts_gap,
				   uint64_t self_committed)
{
	unsigned char *p = ring->data + (w & ring->bufmask);

	if (ts_gap) {
		/* Otherwise the reservation has just checked that ts >> 27
		 * equals last_ts_hi: only a gap changes it. */
		strata_store_relaxed(&strata_ring_ctl_of(ring)->last_ts_hi,
				     (uint32_t)(ts >> STRATA_TS_HI_SHIFT));
	}
	if (need) {
		p = strata_put_hdr(p, STRATA_ID_THREAD, 8, ts, ts_gap);
		*(strata_u64_a4 *)p = strata_tls.tid | ((uint64_t)strata_pid << 32);
		p += 8;
		ts_gap = 0; /* the event follows at the same time */
	}
	p = strata_put_hdr(p, header_id, 8 * words - 8, ts, ts_gap);
	if (strata_unlikely(((w + len) & ring->pmask) == 0))
		strata_ring_close_exact(ring, w + len, ts, self_committed);
	r->ring = ring;
	r->off = w;
	r->bytes = len;
	r->p = (strata_u64_a4 *)p;
}

#ifdef STRATA_RSEQ_X86
/*
 * The rseq reservation (ring.md §7): one attempt: the TSC read after
 * `write` is loaded, then one restartable sequence that commits if
 * `write` has not moved. Anything unusual -- first use, packet switch, a
 * timestamp gap needing a strata:clock record, preemption or migration in
 * the middle -- goes to the slow path, which loops. Keeping the fast path
 * free of a retry loop keeps it free of spills.
 */
static strata_always_inline int strata_reserve_rseq(struct strata_rsv *r,
						    uint32_t header_id,
						    uint32_t words,
						    struct strata_tls *t)
{
	struct rseq *rs = strata_rseq_area();
	struct strata_ring *ring;
	struct strata_ring_ctl *c;
	uint64_t w, x, ts, pos;
	uint32_t cpu, need, len, nest, lo, hi;

	nest = ++t->nesting;
	strata_barrier();
	need = nest > 1; /* ring.md §3 rule 3 */
	cpu = *(volatile uint32_t *)&rs->cpu_id_start;
	if (strata_unlikely(cpu >= STRATA_MAX_CPUS) ||
	    strata_unlikely(words > STRATA_MAX_WORDS) ||
	    strata_unlikely(!(ring = strata_load_acquire(&strata_rings[cpu]))) ||
	    strata_unlikely(nest > STRATA_MAX_NEST) || strata_unlikely(!t->tid))
		goto slow;
	c = strata_ring_ctl_of(ring);
	w = strata_load_relaxed(&c->write);
	/* xr: the bytes of w's packet reserved two-phase and its events,
	 * stored with write (R2 checks both); the new one adds this
	 * reservation's. */
	x = strata_load_relaxed(&c->xr);
	need |= strata_load_relaxed(&c->owner) != t->tid;
	/* After w, in program order (the asm takes w): strata_log_rseq(). */
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi) : "r"(w));
	ts = (uint64_t)hi << 32 | lo;
	len = strata_rsv_len(header_id, words, need, 0);
	pos = w & ring->pmask;
	if (strata_unlikely(pos == 0 || pos + len > ring->psize) ||
	    strata_unlikely((uint32_t)(ts >> STRATA_TS_HI_SHIFT) !=
			    strata_load_relaxed(&c->last_ts_hi)) ||
	    strata_unlikely(strata_rseq_reserve(rs, cpu, &c->write, w, w + len,
						strata_xr_add(x, len, header_id),
						&c->owner, need ? t->tid : 0)))
		goto slow;
	strata_rsv_fill(r, ring, w, len, ts, header_id, words, need, 0,
			strata_xr_add(x, len, header_id));
	return 1;
slow:
	return strata_reserve_slow(r, header_id, words,
				   need | STRATA_SLOW_HELD);
}
#endif

/* strata_reserve() without its mark: any protocol, every case. */
static strata_always_inline int strata_reserve_unmarked(struct strata_rsv *r,
							uint32_t header_id,
							uint32_t words)
{
	struct strata_tls *t = &strata_tls;
	struct strata_ring *ring;
	struct strata_ring_ctl *c;
	uint64_t w, ts, pos;
	uint32_t need, ts_gap, len, i, nest;
	int cpu;

#ifdef STRATA_RSEQ_X86
	if (strata_likely(strata_rseq)) {
		if (strata_likely(strata_rseq == STRATA_RSEQ_INLINE))
			return strata_reserve_rseq(r, header_id, words, t);
		return strata_reserve_slow(r, header_id, words, 0);
	}
#endif
	/* declared above: users build with -Wdeclaration-after-statement */
	cpu = strata_cpu();
	/* words > STRATA_MAX_WORDS would wrap the 10-bit length: the slow
	 * path refuses and counts it (folded away for constant sizes). */
	if (strata_unlikely(words > STRATA_MAX_WORDS) ||
	    strata_unlikely((unsigned)cpu >= STRATA_MAX_CPUS) ||
	    /* acquire pairs with the publishing CAS in ring_get_or_create()
	     * (a plain load on x86) */
	    strata_unlikely(!(ring = strata_load_acquire(&strata_rings[cpu]))) ||
	    strata_unlikely(!t->tid))
		return strata_reserve_slow(r, header_id, words, 0);

	nest = ++t->nesting;
	strata_barrier(); /* the guard is set before we touch the ring */
	need = nest > 1;  /* ring.md §3 rule 3 */
	c = ring->ctl;
	for (i = 0;; i++) {
		w = strata_load_acquire(&c->write);          /* B */
		need |= strata_load_relaxed(&c->owner) != t->tid; /* C */
		ts = strata_clock_ordered();                  /* D */
		/* left the window of the last full timestamp: the
		 * first record takes the extended header */
		ts_gap = (uint32_t)(ts >> STRATA_TS_HI_SHIFT) !=
			 strata_load_relaxed(&c->last_ts_hi);
		len = strata_rsv_len(header_id, words, need, ts_gap);
		pos = w & ring->pmask;
		if (strata_unlikely(pos == 0 || pos + len > ring->psize ||
				    i >= STRATA_MAX_RETRIES ||
				    nest > STRATA_MAX_NEST)) {
			return strata_reserve_slow(r, header_id, words,
						   need | STRATA_SLOW_HELD);
		}
		if (need)
			strata_store_relaxed(&c->owner, t->tid);      /* E */
		if (strata_likely(strata_cas_acq_rel(&c->write, &w, w + len)))
			break;                                         /* F */
	}
	/* CAS mode: every reserved byte of the packet commits itself */
	strata_rsv_fill(r, ring, w, len, ts, header_id, words, need, ts_gap,
			pos + len);
	return 1;
}

/*
 * Crash salvage's marks (strata_ring_ctl.inflight, docs/record.md "Crash
 * salvage"): a reservation is marked in flight right after it is made
 * and unmarked just before its commit, so that a mark present is always
 * a reservation not yet committed. A thread takes the first free slot of
 * its ring from tid % STRATA_INFLIGHT_SLOTS on: another thread of the
 * CPU that was preempted inside its event, or the event a signal handler
 * interrupted, keeps its mark (a slot taken by tid alone lost one in 8 of
 * them). The unmark clears only the caller's own mark, found the same
 * way. Two threads of one CPU racing for one free slot (one preempted
 * between the load and the store) can erase a mark, and all slots taken
 * leaves one unmarked: salvage then guesses from lengths, as without
 * marks. Never a mark on a committed event, which is all salvage needs
 * to trust them. A load and a store each way, on a line of the ring only
 * its own CPU's writers touch. Binaries built before the marks make
 * none: salvage reads 0 there, and guesses.
 */
/* The first slot from tid % STRATA_INFLIGHT_SLOTS on that holds `from`
 * takes `to`: marking takes a free slot (0 to the mark), unmarking finds
 * the caller's own mark (the mark to 0). None: nothing. */
static strata_always_inline void strata_rsv_slot_swap(const struct strata_rsv *r,
						       uint64_t from, uint64_t to)
{
	uint64_t *slots = strata_ring_ctl_of(r->ring)->inflight;
	uint32_t i, tid = strata_tls.tid;

	for (i = 0; i < STRATA_INFLIGHT_SLOTS; i++) {
		uint64_t *slot = &slots[(tid + i) % STRATA_INFLIGHT_SLOTS];

		if (strata_likely(strata_load_relaxed(slot) == from)) {
			strata_store_relaxed(slot, to);
			return;
		}
	}
}

static strata_always_inline void strata_rsv_mark(const struct strata_rsv *r)
{
	strata_rsv_slot_swap(r, 0, STRATA_INFLIGHT_MARK(r->off, r->bytes));
}

static strata_always_inline void strata_rsv_unmark(const struct strata_rsv *r)
{
	strata_rsv_slot_swap(r, STRATA_INFLIGHT_MARK(r->off, r->bytes), 0);
}

/*
 * Reserve room for one event of words - 1 payload words and write its
 * header, compact or extended as `header_id` says (above: a compact id,
 * or an event class id, | STRATA_HID_EXT when it is below 31), and mark
 * it in flight (above). On success the caller writes words-1 payload
 * words at r->p and calls strata_commit(). Async-signal-safe; never
 * blocks. Returns 1, or 0 if the event was dropped (counted by cause).
 */
static strata_always_inline int strata_reserve(struct strata_rsv *r,
					       uint32_t header_id,
					       uint32_t words)
{
	if (!strata_reserve_unmarked(r, header_id, words))
		return 0;
	strata_rsv_mark(r);
	return 1;
}

static strata_always_inline uint64_t *strata_ring_cc(struct strata_ring *ring,
						     uint64_t off)
{
	return &ring->commit[((off >> ring->pshift) & ring->nmask) *
			     STRATA_COMMIT_STRIDE];
}

#ifdef STRATA_RSEQ_X86
/* ring.md §7 commit: a plain add on the ring's CPU, a locked add to the
 * remote counter from any other. x86 stores are ordered: the plain add
 * publishes like a release (the asm is a compiler barrier). An aborted
 * section is retried, at most STRATA_MAX_RETRIES times in all; after
 * that the locked add, which is right from any CPU, this one included
 * (the remote counter only ever takes locked adds; readers sum the two). */
static strata_always_inline void strata_ring_commit_rseq(struct rseq *rs,
					   struct strata_ring *ring,
					   uint64_t *cc, uint64_t bytes)
{
	enum strata_rseq_commit_outcome rc;
	uint32_t tries = 1;

	/* The first try apart: the bound's counter stays off the fast path. */
	rc = strata_rseq_commit(rs, ring->cpu, cc, bytes);
	if (strata_likely(rc == STRATA_RSEQ_COMMITTED))
		return;
	while (rc == STRATA_RSEQ_ABORTED && tries++ < STRATA_MAX_RETRIES)
		rc = strata_rseq_commit(rs, ring->cpu, cc, bytes);
	if (rc == STRATA_RSEQ_COMMITTED)
		return;
	/* Migrated, or aborted every time: the remote counter. Release:
	 * publishes the event, as the plain add does. */
	strata_add_release(cc + 1, bytes);
}
#endif

/* Add `bytes` to the commit count of the packet holding virtual offset
 * `off` (ring.md §2 G, §7). The release publishes what the writer wrote. */
static strata_always_inline void strata_ring_commit(struct strata_ring *ring, uint64_t off,
				      uint64_t bytes)
{
	uint64_t *cc = strata_ring_cc(ring, off);
#ifdef STRATA_RSEQ_X86
	if (strata_likely(strata_rseq)) {
		strata_ring_commit_rseq(strata_rseq_area(), ring, cc, bytes);
		return;
	}
#endif
	strata_add_release(cc, bytes);
}

/* Publish the event written at r->p and leave the tracepoint. Unmarked
 * first: a process killed between the two leaves a reservation unmarked,
 * never a mark on a committed one (the commit's release, or x86's store
 * order in rseq mode, keeps the clear before it). */
static strata_always_inline void strata_commit(struct strata_rsv *r)
{
	strata_rsv_unmark(r);
	strata_barrier();
	strata_ring_commit(r->ring, r->off, (uint64_t)r->bytes);
	strata_barrier();
	strata_tls.nesting--;
}

#ifdef STRATA_RSEQ_X86
/*
 * The whole event in one restartable sequence and no call (ring.md §7,
 * "The inline path"): the section checks the CPU and `write`, writes the
 * event and moves `write` past it, counting it in `xr` (the same store);
 * no commit count. It runs only when the
 * ring's owner hint already names this thread (no strata:thread record)
 * and no tracepoint of this thread is in progress, and it never stores
 * the owner: so it can neither trust nor leave behind an owner store that
 * no reservation followed (ring.md §3), and needs no nesting guard.
 * Anything else (first use, another thread wrote last, nesting, a packet
 * that the event would open, fill or not fit, a timestamp gap,
 * preemption or migration during the section) returns 0 having moved
 * nothing; the caller then does the whole event on the slow path.
 * `compact_id`: the event's compact id, 1-30 (the inline path writes
 * only compact headers).
 * `tsc` (a constant): 1, the clock is read with rdtsc, inline; 0, with
 * strata_clock() (STRATA_RSEQ_OUTLINE: the library's own out-of-line
 * attempt, src/ring/slow.c).
 */
static strata_always_inline int strata_log_rseq(uint32_t compact_id,
						uint32_t words,
						const uint64_t *pl, int tsc)
{
	struct rseq *rs = strata_rseq_area();
	struct strata_ring *ring;
	struct strata_ring_ctl *c;
	uint64_t w, x, lo, tn;
	uint32_t cpu, hi, len = words * 8 - 4;

	cpu = *(volatile uint32_t *)&rs->cpu_id_start;
	if (strata_unlikely(cpu >= STRATA_MAX_CPUS) ||
	    strata_unlikely(words > STRATA_MAX_WORDS) ||
	    strata_unlikely(!(ring = strata_load_acquire(&strata_rings[cpu]))))
		return 0;
	c = strata_ring_ctl_of(ring);
	w = strata_load_relaxed(&c->write);
	/* after w: R2 checks both (ring.md §7) */
	x = strata_load_relaxed(&c->xr);
	/* tid | nesting << 32 */
	tn = *(const volatile strata_u64_alias *)&strata_tls;
	/* The clock is read after w is loaded, in program order (ring.md §7):
	 * the asm takes w, and volatile asms keep their order. Only the low
	 * word (the header's) and ts >> 27 (the gap check) are needed here:
	 * rdtsc zero-extends both halves, and one shld makes the second.
	 * Another clock is a call, which no load moves across. */
	if (tsc) {
		__asm__ __volatile__("rdtsc\n\t"
				     "shldl $(32 - " STRATA_STR(STRATA_TS_HI_SHIFT) "), %%eax, %%edx"
				     : "=a"(lo), "=d"(hi)
				     : "r"(w));
	} else {
		uint64_t ts = strata_clock();
		lo = (uint32_t)ts;
		hi = (uint32_t)(ts >> STRATA_TS_HI_SHIFT);
	}
	/* One compare: the owner is this thread and no tracepoint of it is
	 * in progress (owner is never 0, a tid not yet known: STRATA_OWNER_NONE).
	 * w - 1 and w + len in one packet: the event neither opens the
	 * packet (pos == 0) nor fills it (pos + len == psize) nor overflows.
	 * The same 2^27-tick window as the last full timestamp: no gap. */
	if (strata_unlikely((uint64_t)strata_load_relaxed(&c->owner) != tn) ||
	    strata_unlikely(((w - 1) ^ (w + len)) >= ring->psize) ||
	    strata_unlikely(hi != strata_load_relaxed(&c->last_ts_hi)))
		return 0;
	return strata_rseq_log(rs, cpu, &c->write, w, strata_xr_add(x, 0, compact_id),
			       ring->data + (w & ring->bufmask),
			       strata_hdr_compact(lo, compact_id), words, pl);
}
#endif

/*
 * Log one event of class `id` and words - 1 payload words pl[0 ..
 * words-2]. `cidp` is the call site's compact id byte (a static, 0 at
 * first: the slow path asks for an id once, docs/compact.md), or NULL for
 * an event whose length varies, which always takes the extended header.
 * With constant `words` (every tracepoint of fixed size) the copy unrolls
 * and the payload stays in registers; up to four payload words also reach
 * the slow path in registers, as a tail call. Async-signal-safe; never
 * blocks; drops and counts when it must.
 */
static strata_always_inline void strata_log_fixed(uint8_t *cidp, uint32_t id,
						  uint32_t words, const uint64_t *pl)
{
#ifdef STRATA_RSEQ_X86
	if (strata_likely(strata_rseq == STRATA_RSEQ_INLINE) && cidp) {
		/* relaxed: the slow path's store is one byte, the id
		 * stays valid once given (docs/compact.md) */
		uint32_t compact_id = strata_load_relaxed(cidp);
		if (strata_likely(compact_id - 1 < STRATA_CID_EXT - 1) &&
		    strata_likely(strata_log_rseq(compact_id, words, pl, 1)))
			return;
	}
#endif
	if (__builtin_constant_p(words) && words <= 5)
		strata_log_slow4(cidp, id, words, words > 1 ? pl[0] : 0,
				 words > 2 ? pl[1] : 0, words > 3 ? pl[2] : 0,
				 words > 4 ? pl[3] : 0);
	else
		strata_log_slow(cidp, id, words, pl);
}

#ifdef __cplusplus
}
#endif

#endif /* STRATA_INLINE_RING_H */
