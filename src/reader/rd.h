/* SPDX-License-Identifier: MIT */
/* libstrata-reader internals shared by its modules (not installed). */
#ifndef STRATA_RD_H
#define STRATA_RD_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <strata/reader.h>

/* by their path from here: the reader's tests see only src/reader/ */
#include "../common/compiler.h" /* strata_likely, strata_always_inline */
#include "../common/format.h"

/* format.md §2, §7: the layout is common/format.h's */
#define RD_PACKET_MAGIC STRATA_PKT_MAGIC
#define RD_HEADER_SIZE STRATA_PKT_HEADER_SIZE
#define RD_MIN_PACKET (4096u)            /* accept smaller than spec's 16 KiB */
#define RD_MAX_PACKET (64ull << 20)
#define RD_INDEX_MAGIC STRATA_IDX_MAGIC
#define RD_INDEX_ENTRY STRATA_IDX_ENTRY

/* format.md §4: strata's own records, major 0 */
#define RD_ID_THREAD 1u
#define RD_ID_CLOCK 2u

static inline uint64_t rd_le64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v; /* little-endian hosts only; checked in CMake */
}
static inline uint32_t rd_le32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}
static inline uint64_t rd_be64(const uint8_t *p)
{
	return __builtin_bswap64(rd_le64(p));
}
static inline uint32_t rd_be32(const uint8_t *p)
{
	return __builtin_bswap32(rd_le32(p));
}

/* ---- metadata (metadata.c) -------------------------------------------- */

/* One compiled piece of a format string: literal text, then a field. */
struct rd_fmt_part {
	const char *lit;
	uint32_t litlen;
	int32_t field; /* -1: literal only */
	char spec;     /* 0, 'x', 'd', 'u', 'o', 'b' */
};

/* One piece of a compiled description: literal text, then an integer. */
enum { RD_OUT_NONE, RD_OUT_DEC, RD_OUT_SDEC, RD_OUT_HEX };
struct rd_out_part {
	const char *lit;
	uint32_t litlen;
	uint16_t field;
	uint8_t kind; /* RD_OUT_* */
};

/* Branch-free decode of a fixed-offset scalar (event.c): fields never
 * cross a word (natural alignment), so load the word, shift, mask and
 * sign-extend. */
struct rd_plan {
	uint64_t mask;
	uint16_t word;  /* byte offset of the containing word */
	uint8_t shift;  /* bits */
	uint8_t sx;     /* 64 - bits for signed fields, else 0 */
	uint8_t vtype;  /* enum strata_value_type */
};

#define RD_PLAN_STEP 4u
/* Classes with more fields than this take the general path in batches. */
#define RD_FAST_MAX 16u

/* Decode plan entry pl of payload p into v: all 8 bytes of v's head are
 * written (type, zero count), so no stale byte of the caller's survives. */
static inline void rd_plan_value(const struct rd_plan *pl, const uint8_t *p,
				 struct strata_value *v)
{
	uint64_t x, head = pl->vtype;
	memcpy(&x, p + pl->word, 8);
	x = (x >> pl->shift) & pl->mask;
	x = (uint64_t)((int64_t)(x << pl->sx) >> pl->sx);
	memcpy(v, &head, 8);
	v->u = x;
}

struct rd_class {
	struct strata_event_class pub;
	int flow;                /* enum strata_flow_role */
	int flow_key;            /* the key field's index; -1 without a flow */
	uint32_t ctf;            /* id in the event headers: pub.id, or in
				  * stream class 1 a compact id standing for
				  * it (docs/compact.md) */
	uint32_t clen;           /* stream class 1: bytes of a compact event
				  * of this class; 0: not fixed, never compact */
	struct rd_plan *plan;    /* non-NULL when every field fits the plan */
	uint32_t nplan;          /* nfields rounded up to RD_PLAN_STEP: the
				  * padding entries decode to 0 */
	uint32_t plan_min;       /* payload bytes the plan reads */
	uint8_t words;           /* plan fields are whole 64-bit words: no
				  * shift, mask or sign extension */
	uint32_t fast_min;       /* payload bytes the batch path needs to take
				  * an event of this class (a batch entry,
				  * struct rd_fast); UINT32_MAX: never, the
				  * general path does */
	struct rd_fmt_part *fmt; /* NULL: no format string */
	unsigned nfmt;
	/* the description as a program of literals and plain integers,
	 * rendered without a bounds check per piece when the buffer has
	 * out_max bytes (event.c render_fast); NULL when some field needs
	 * more (text, arrays, floats, enum labels, octal, binary) */
	struct rd_out_part *out;
	unsigned nout;
	uint32_t out_max;
};

struct rd_env {
	char *key;
	char *value;
};

struct rd_meta {
	struct rd_class **classes; /* sorted by id */
	unsigned nclasses;
	struct rd_env *env;
	unsigned nenv;
	uint8_t sclass;            /* stream class: 0 (format.md §3) or 1
				    * (docs/compact.md) */
	char *clock_name;
	char *clock_desc; /* the clock's description, or NULL */
	uint64_t freq;
	int64_t offset_s, offset;
	uint8_t uuid[16];
	bool has_uuid;
	uint8_t clock_uuid[16];    /* the boot id (format.md §5): sub-traces
				    * of one recording share it */
	bool has_clock_uuid;
	/* everything allocated while parsing, freed at once */
	void **allocs;
	size_t nallocs, capallocs;
};

/* Parse TSDL text. On error returns -EINVAL and writes "line N: problem"
 * into err. */
int rd_meta_parse(const char *text, size_t len, struct rd_meta *m, char *err,
		  size_t errlen);
void rd_meta_fini(struct rd_meta *m);
const char *rd_meta_env(const struct rd_meta *m, const char *key);

/* ---- trace, streams, packets (trace.c, stream.c, index.c, packet.c) ---- */

#define RD_PK_BAD 1u              /* header rejected: skipped */
#define RD_PK_SEQ_REPORTED 2u     /* problems already reported once */
#define RD_PK_DAMAGE_REPORTED 4u
#define RD_PK_DISC_REPORTED 8u
/* loaded from the index and not yet compared with the packet header:
 * cpu/pid/tid unknown, the rest the index's word (format.md §7) */
#define RD_PK_UNCHECKED 16u

struct rd_packet {
	uint64_t offset;       /* in the file */
	uint64_t ts_begin, ts_end;
	uint64_t content;      /* bytes, clamped to the file; 0: unreadable */
	uint64_t discarded;    /* cumulative */
	uint64_t seq;
	uint32_t cpu, pid, tid;
	uint32_t flags;        /* RD_PK_* */
};

/*
 * The batch path's class lookup (batch.c fast_at), by the upper half of
 * an event's header word (format.md §3: length and id): one compare of
 * `hi` proves the id is a class with a decode plan, not a strata record
 * (major 0), and that the event has exactly the class's length, so the
 * payload holds every word the plan reads. Events of other lengths are
 * valid too; the general path takes them.
 */
struct rd_fast {
	/* `simple` classes (one or two fields, whole words: at payload
	 * bytes 0 and 8): the 16 bytes at voff from the header hold the
	 * fields, the last one in the upper half (voff 8 * (nf - 1), so a
	 * lone field comes with the header), and vh the heads (type, count
	 * 0) of the values that the lower and the upper half make; with
	 * one field, the upper half's value is the one kept */
	uint64_t vh[2];
	uint64_t voff;
	uint64_t vbytes;       /* nf * sizeof(struct strata_value) */
	uint32_t hi;           /* header bits 32..63 this entry takes */
	uint16_t nf;           /* fields */
	uint8_t simple;        /* vh and voff make the values, else cls->plan */
	uint8_t pad;
	uint64_t size;         /* payload bytes */
	uint64_t id_hi;        /* id << 32 (struct strata_event's word 5) */
	const struct rd_class *cls;
};

_Static_assert(sizeof(struct rd_fast) == 64, "one cache line per class");

/* struct rd_fast's size in stream class 1 for a compact id the batch path
 * does not take: larger than any content (classes.c build_fast1) */
#define RD_FAST_NONE (UINT64_MAX >> 1)

struct rd_subtrace {
	char *dir;
	struct rd_meta meta;
	uint64_t meta_len; /* bytes of metadata parsed: a follower parses it
			    * again when it grows (follow_read.c) */
	/* id lookup: by_major[major] -> array of minor -> class */
	struct rd_class **by_major[64];
	uint32_t nminor[64];
	uint32_t vpid;
	int64_t shift;  /* ticks added to its timestamps: the relay's clock
			 * offset of its recording (offset.c), or 0 */
	/* and the offset's drift (parts per billion, 0 for none) from the
	 * time it was measured, `pivot` on this sub-trace's clock:
	 * rd_sub_time() */
	int64_t drift_ppb;
	uint64_t pivot;
	/* rd_fast entries: the one of hi at byte offset
	 * ((hi * fast_mult) >> 16) & fast_mask (fast_mask: (slots - 1) << 6,
	 * a multiply, a shift and a mask, no shift by a register); an empty
	 * slot holds a hi that hashes elsewhere, so it matches no header.
	 * Stream class 1: 32 entries, the compact id's (hi: the id, size:
	 * the payload, RD_FAST_NONE when the batch path does not take it) */
	struct rd_fast *fast;
	uint32_t fast_mult;
	uint32_t fast_mask;
};

/* A timestamp of sub-trace `sub` on the trace's time base: moved by its
 * recording's clock offset at that time, the offset measured at `pivot`
 * plus its drift since (docs/reader.md, "Several hosts"). Monotonic:
 * offset.c bounds the drift far below one part in one. */
static inline uint64_t rd_sub_time(const struct rd_subtrace *sub,
				   uint64_t ts)
{
	uint64_t t = ts + (uint64_t)sub->shift;

	if (sub->drift_ppb) {
		/* to the nearest ns */
		__int128 d = (__int128)(int64_t)(ts - sub->pivot) *
			     sub->drift_ppb;
		t -= (uint64_t)(int64_t)((d + (d < 0 ? -500000000 : 500000000)) /
					 1000000000);
	}
	return t;
}

static inline const struct rd_fast *rd_fast_slot(const struct rd_subtrace *s,
						 uint32_t hi)
{
	return (const struct rd_fast *)((const char *)s->fast +
					(((uint32_t)(hi * s->fast_mult) >> 16) &
					 s->fast_mask));
}

struct rd_stream {
	char *path;
	char *idxpath;  /* index/<name>.idx beside it (format.md §7) */
	struct rd_subtrace *sub;
	unsigned subidx;
	const uint8_t *map;
	uint64_t map_len; /* what was mapped: size may end before it (a
			   * followed file's unfinished packet) */
	uint64_t size;
	uint64_t packet_size;
	struct rd_packet *packets;
	uint64_t npackets;
	uint32_t cpu;
	uint8_t sclass; /* its sub-trace's stream class (packet stream_id) */
	uint64_t begin, end, discarded, packets_lost;
	bool random; /* sought in: the reader reads ahead itself (cursor.c) */
	bool back_reported; /* time going back: said once per stream */
};

/* A recording's clock offset, as its relay measured it (docs/relay.md §7). */
struct rd_offset {
	char *root;
	char sender[65];
	struct strata_host_offset pub;
	int64_t wall_ns;  /* the relay's CLOCK_REALTIME - CLOCK_MONOTONIC */
	bool has_wall;
	bool kept;        /* a follower uses its events: read no more (follow.c) */
};

struct strata_trace {
	struct rd_subtrace *subs;
	unsigned nsubs;
	struct rd_stream *streams;
	unsigned nstreams;
	const struct strata_event_class **classes; /* by pub.index */
	unsigned nclasses;
	uint32_t max_nf;     /* most fields of any class */
	uint32_t fast_nf;    /* most fields of a class the batch loop takes,
			      * rounded up to even (>= 2) */
	uint64_t begin, end, total_size;
	uint64_t freq;
	int64_t offset_s, offset;
	const char *clock_name;
	const char *clock_desc;
	strata_problem_fn problem;
	void *problem_arg;
	uint64_t nproblems;
	bool follow; /* STRATA_OPEN_FOLLOW: the files may be growing */
	/* STRATA_OPEN_FOLLOW: sub-traces and streams not readable yet (no
	 * metadata, a stream file not there): being created, not reported;
	 * a follower waits for them (follow.c) */
	unsigned not_yet;
	/* the recordings with a relay's clock offset (offset.c) */
	struct rd_offset *offs;
	unsigned noffs;
};

void rd_report(struct strata_trace *t, int kind, const char *file,
	       uint64_t offset, uint64_t count, uint64_t ts, const char *fmt,
	       ...) __attribute__((format(printf, 7, 8)));

/*
 * Entry i of an index-loaded stream (RD_PK_UNCHECKED) against the packet
 * header it points to, before anything is read by it (cursor.c): the index
 * is a cache, and one that disagrees with its packets is reported once and
 * rebuilt from the packet headers (format.md §7). Returns 0 when the entry
 * holds (it is then checked, cpu/pid/tid from the header), 1 when the index
 * was rebuilt: s->packets moved, every entry is now the header's, the same
 * slots (packet i is still at index i), some perhaps RD_PK_BAD.
 */
int rd_packet_check(struct strata_trace *t, struct rd_stream *s, uint64_t i);

static inline const struct rd_class *rd_lookup(const struct rd_subtrace *s,
					       uint32_t id)
{
	uint32_t major = (id >> 16) & 63, minor = id & 0xffff;
	if (minor >= s->nminor[major])
		return NULL;
	return s->by_major[major][minor];
}

/* ---- filters (filter.c) ----------------------------------------------- */

struct rd_filter_prog;

struct strata_filter {
	struct strata_trace *trace;
	uint64_t t_begin, t_end;
	uint32_t *cpus, ncpus;
	uint32_t *pids, npids;
	uint32_t *tids, ntids;
	bool by_name;
	uint8_t *name_ok;        /* per class index, when by_name */
	struct rd_filter_prog **progs;
	unsigned nprogs;
	bool narrowed;           /* any condition added: not a no-op filter */
};

bool rd_filter_expr_match(const struct strata_filter *f,
			  const struct strata_event *ev);

/* x in v, sorted (filter.c's push_u32) */
static inline bool rd_in(const uint32_t *v, uint32_t n, uint32_t x)
{
	while (n > 1) {
		uint32_t half = n / 2;
		if (v[half] <= x)
			v += half, n -= half;
		else
			n = half;
	}
	return n && *v == x;
}

/* ---- decoding (event.c) ------------------------------------------------ */

int rd_class_compile_format(struct rd_class *c, struct rd_meta *m);
void *rd_meta_alloc(struct rd_meta *m, size_t n);
char *rd_meta_strdup(struct rd_meta *m, const char *s, size_t n);

#endif /* STRATA_RD_H */
