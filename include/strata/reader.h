/* SPDX-License-Identifier: MIT */
/* libstrata-reader: open strata traces, iterate, seek, filter and decode events. */
#ifndef STRATA_READER_H
#define STRATA_READER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef STRATA_API
#define STRATA_API __attribute__((visibility("default")))
#endif

/*
 * Threading: a struct strata_trace and the iterators made from it belong to
 * one thread at a time. Different traces are independent. Nothing in this
 * library prints, exits or aborts; problems with the input are reported
 * through the problem callback (below) and the damaged part is skipped.
 * Timestamps are raw trace-clock values ("ticks", docs/format.md §5) unless a
 * name says ns.
 */

struct strata_trace;
struct strata_iter;
struct strata_filter;

/* ---- problems: damaged input, lost events ------------------------------ */

enum strata_problem_kind {
	STRATA_PROBLEM_DAMAGED = 1,   /* bytes that break format.md (zero-filled
				       * regions, time going back included);
				       * skipped, or read as written (offset) */
	STRATA_PROBLEM_METADATA,      /* metadata rejected, missing or not a
				       * regular file; sub-trace skipped */
	STRATA_PROBLEM_INDEX,         /* index file unusable, or disagreeing with
				       * the packets; rebuilt from them */
	STRATA_PROBLEM_DISCARDED,     /* events_discarded grew: `count` events lost */
	STRATA_PROBLEM_PACKETS_LOST,  /* packet_seq_num gap: `count` packets lost */
	STRATA_PROBLEM_MISSING,       /* a stream file missing, empty or not a
				       * regular file while it should hold
				       * packets; `count`: the packets its index
				       * lists (0 if unknown); not read */
	STRATA_PROBLEM_RECORDING,     /* strata_trace_open found several
				       * recordings (`file`: one of them,
				       * `count`: its sub-traces): one report
				       * each, then -ENOTUNIQ */
	STRATA_PROBLEM_LATE,          /* strata_follow_poll: `count` events
				       * written after the windows handed out
				       * had passed them; not in any window */
};

struct strata_problem {
	int kind;            /* enum strata_problem_kind */
	const char *file;    /* the file concerned (full path) */
	uint64_t offset;     /* byte offset in that file, or line for metadata */
	uint64_t count;      /* lost events / packets, else 0 */
	uint64_t timestamp;  /* where in time it happened, 0 if unknown */
	const char *what;    /* one line, no trailing newline */
};

/* Called synchronously from the reader call that met the problem; the
 * pointers in `p` live until the callback returns. Each problem is
 * reported once. */
typedef void (*strata_problem_fn)(const struct strata_problem *p, void *arg);

/* ---- event classes (from the metadata, docs/format.md §6) -------------- */

enum strata_field_type {
	STRATA_FIELD_INT = 1,   /* integer, signed or not */
	STRATA_FIELD_FLOAT,     /* 32 or 64-bit IEEE 754 */
	STRATA_FIELD_ENUM,      /* integer with labels */
	STRATA_FIELD_ARRAY,     /* fixed count of integers; text if `text` */
	STRATA_FIELD_SEQUENCE,  /* count from an earlier field; text if `text` */
};

struct strata_enum_mapping {
	const char *label;
	int64_t lo, hi; /* inclusive; compared as unsigned for unsigned enums */
};

#define STRATA_OFFSET_VARIABLE UINT32_MAX

struct strata_field_class {
	const char *name;        /* leading '_' removed, as CTF says */
	uint8_t type;            /* enum strata_field_type */
	uint8_t bits;            /* element size in bits: 8, 16, 32 or 64 */
	uint8_t is_signed;
	uint8_t base;            /* display base: 2, 8, 10 or 16 */
	uint8_t align;           /* bytes */
	uint8_t text;            /* byte array/sequence with an encoding */
	uint8_t hidden;          /* length of a text sequence: not shown */
	uint8_t reserved;
	uint32_t length;         /* ARRAY: element count */
	int32_t length_field;    /* SEQUENCE: index of the count field */
	uint32_t offset;         /* byte offset in the payload, or VARIABLE */
	unsigned nmappings;
	const struct strata_enum_mapping *mappings;
};

enum strata_event_kind_attr {
	STRATA_KIND_POINT = 0,
	STRATA_KIND_BEGIN = 1,
	STRATA_KIND_END = 2,
};

/* The end of a message flow an event class is (docs/dsl.md, "Flows"). */
enum strata_flow_role {
	STRATA_FLOW_NONE = 0,
	STRATA_FLOW_SEND = 1,    /* a message leaves */
	STRATA_FLOW_RECEIVE = 2, /* it arrives: the earliest unreceived send of its key */
};

struct strata_event_class {
	const char *name;        /* "mem:alloc" */
	uint32_t id;             /* major << 16 | minor */
	uint32_t index;          /* dense, unique across the whole trace */
	const char *format;      /* strata_format attribute, or NULL */
	int kind;                /* enum strata_event_kind_attr (strata_kind) */
	unsigned nfields;
	const struct strata_field_class *fields;
	uint32_t min_size;       /* payload bytes needed before variable fields */
	uint8_t fixed;           /* every field at a fixed offset */
};

/* ---- events -------------------------------------------------------------- */

/* The current event of an iterator; valid until the next call on it. */
struct strata_event {
	uint64_t timestamp;      /* full clock value (format.md §3) */
	const struct strata_event_class *cls;
	const uint8_t *payload;  /* inside the read-only mapping */
	uint32_t size;           /* payload bytes */
	uint32_t cpu;
	uint32_t pid;            /* attribution: format.md §4 */
	uint32_t tid;
	uint32_t stream;         /* index for strata_trace_stream() */
	uint32_t id;             /* raw id, major << 16 | minor */
	uint64_t offset;         /* byte offset of the header in the stream file */
};

enum strata_value_type {
	STRATA_VALUE_UINT = 1,
	STRATA_VALUE_SINT,
	STRATA_VALUE_DOUBLE,
	STRATA_VALUE_STRING,     /* str, count bytes, not NUL-terminated */
	STRATA_VALUE_ARRAY,      /* data, count elements of elem_bits each */
};

struct strata_value {
	uint8_t type;            /* enum strata_value_type */
	uint8_t elem_bits;
	uint8_t elem_signed;
	uint8_t reserved;
	uint32_t count;
	union {
		uint64_t u;
		int64_t s;
		double d;
		const char *str;
		const void *data;
	};
};

/*
 * Decode field `idx` of `ev` (lazy: nothing is decoded before this call).
 * Returns 0, -EINVAL (no such field) or -EBADMSG (the payload is too short
 * for the field: damaged event).
 */
STRATA_API int strata_event_field(const struct strata_event *ev, unsigned idx,
				  struct strata_value *out);
/* Decode every field into vals[0..] (n >= cls->nfields: the room in vals).
 * Returns the number of fields, or -EBADMSG. The fixed-layout path reads
 * each field at its precomputed offset; with room to spare it may also
 * write (zeros) into entries past the fields, up to a multiple of 4
 * (give n >= nfields + 3 for the fastest path). */
STRATA_API int strata_event_fields(const struct strata_event *ev,
				   struct strata_value *vals, unsigned n);
/* Index of the field called `name` in `cls`, or -ENOENT. */
STRATA_API int strata_event_class_field(const struct strata_event_class *cls,
					const char *name);
/*
 * The flow role of `cls` (the metadata's strata_flow, format.md §6) and,
 * for a send or a receive, the index of its key field (an INT or ENUM
 * field: compare the keys' values) in *key, else -1; key may be NULL.
 * Any thread; never fails.
 */
STRATA_API enum strata_flow_role strata_event_class_flow(const struct strata_event_class *cls,
							 int *key);
/* Element i of an ARRAY value, widened (sign-extended when signed). */
STRATA_API uint64_t strata_value_elem(const struct strata_value *v, uint32_t i);
/*
 * Render the event's description from its format string ("%{size}",
 * "%{addr:x}", "%%"), or "name=value name=value" when it has none, into
 * buf (always NUL-terminated when len > 0). Returns the length it needed,
 * excluding the NUL, like snprintf, or -EBADMSG.
 */
STRATA_API int strata_event_describe(const struct strata_event *ev, char *buf,
				     size_t len);
/* strata_event_describe from values already decoded: vals[0..nvals), as
 * strata_event_fields or a batch (strata_iter_decode) gives them. Returns
 * what strata_event_describe returns, or -EINVAL when nvals is less than
 * the class's field count (a damaged payload has none). */
STRATA_API int strata_event_describe_values(const struct strata_event *ev,
					    const struct strata_value *vals,
					    unsigned nvals, char *buf, size_t len);

/* ---- traces ---------------------------------------------------------------- */

/* Read the sub-traces of several recordings as one trace (their times are
 * then only comparable when they share a clock, format.md §5). */
#define STRATA_OPEN_MERGE 0x1u
/* The files may still be growing (docs/reader.md, "Following a live
 * trace"): a stream's last packet is read only once the file holds all
 * of its content, and an unfinished tail is not reported as damage. */
#define STRATA_OPEN_FOLLOW 0x2u

struct strata_open_options {
	strata_problem_fn problem;   /* NULL: problems are only counted */
	void *problem_arg;
	unsigned flags;              /* STRATA_OPEN_* */
};

/*
 * Open a trace: either a root directory (its ust/pid-* sub-traces, found
 * recursively: every directory holding a `metadata` file), or one
 * sub-trace directory. Stream files are mapped read-only; packet indexes are
 * loaded from index/cpuN.idx, each entry checked against its packet header
 * when the packet is first entered, or rebuilt from packet headers. A
 * sub-trace whose metadata is rejected, missing or not a regular file is
 * reported and skipped; so is a stream file that is not a regular file, or
 * missing or empty while its index lists packets. Only regular files are
 * read (a FIFO or a device never blocks or feeds the reader).
 * A trace is one recording (docs/format.md §1): a directory holding the
 * sub-traces of several (below distinct roots, or recorded in different
 * boots) is refused unless opt->flags has STRATA_OPEN_MERGE.
 * Returns 0, -ENOENT (no such directory, or no sub-trace in it), -ENOMEM,
 * -EINVAL (no readable sub-trace: every one was reported), -ENOTUNIQ
 * (several recordings, each reported as STRATA_PROBLEM_RECORDING), or the
 * errno of a failed opendir.
 */
STRATA_API int strata_trace_open(const char *path,
				 const struct strata_open_options *opt,
				 struct strata_trace **out);
STRATA_API void strata_trace_close(struct strata_trace *t); /* NULL ok */

struct strata_clock_info {
	const char *name;
	uint64_t freq;               /* Hz */
	int64_t offset_s;            /* Unix seconds at clock value 0 */
	int64_t offset;              /* plus this many ticks */
	const char *description;     /* what the clock is, and why (format.md §5), or "" */
};

struct strata_stream_info {
	const char *path;            /* the stream file */
	const char *trace_dir;       /* its sub-trace directory */
	uint32_t cpu;                /* from the file name / packet context */
	uint32_t pid;                /* vpid of the sub-trace's env, or 0 */
	const char *procname;        /* env procname, or "" */
	uint64_t file_size;
	uint64_t packet_size;        /* bytes */
	uint64_t npackets;           /* readable packet headers */
	uint64_t begin, end;         /* timestamp range of its packets */
	uint64_t discarded;          /* events_discarded of the last packet */
	uint64_t packets_lost;       /* sum of packet_seq_num gaps */
	uint32_t subtrace;           /* index of its sub-trace */
};

STRATA_API unsigned strata_trace_nstreams(const struct strata_trace *t);
STRATA_API int strata_trace_stream(const struct strata_trace *t, unsigned i,
				   struct strata_stream_info *out);
/* One packet of a stream as its index (or its header) gives it, without
 * reading its events: what a whole-trace overview needs in milliseconds
 * (docs/reader.md, "Packets"). Any thread that owns `t`. */
struct strata_packet_info {
	uint64_t begin, end;         /* timestamp_begin, timestamp_end */
	uint64_t content;            /* bytes: header, context and events */
	uint64_t discarded;          /* events_discarded: cumulative */
	uint64_t seq;                /* packet_seq_num */
};
/* Packet i (from 0, in file order) of stream `stream`. Returns 0,
 * -EINVAL (no such stream or packet: i past the last), -ENODATA (a
 * packet whose header was rejected or unreadable: skipped by readers). */
STRATA_API int strata_trace_packet(const struct strata_trace *t, unsigned stream,
				   uint64_t i, struct strata_packet_info *out);
STRATA_API unsigned strata_trace_nsubtraces(const struct strata_trace *t);
/* Environment value of sub-trace `sub` ("procname", "vpid", "hostname"...),
 * as text, or NULL. */
STRATA_API const char *strata_trace_env(const struct strata_trace *t,
					unsigned sub, const char *key);
/* All event classes of all sub-traces; class->index is < this count. */
STRATA_API unsigned strata_trace_nclasses(const struct strata_trace *t);
STRATA_API const struct strata_event_class *
strata_trace_class(const struct strata_trace *t, unsigned index);
STRATA_API void strata_trace_clock(const struct strata_trace *t,
				   struct strata_clock_info *out);
/* First packet begin and last packet end over all streams (ticks). */
STRATA_API uint64_t strata_trace_begin(const struct strata_trace *t);
STRATA_API uint64_t strata_trace_end(const struct strata_trace *t);
/* Total bytes of the stream files. */
STRATA_API uint64_t strata_trace_size(const struct strata_trace *t);
/* Ticks <-> nanoseconds (durations; no offset). */
STRATA_API uint64_t strata_trace_ticks_to_ns(const struct strata_trace *t,
					     uint64_t ticks);
STRATA_API uint64_t strata_trace_ns_to_ticks(const struct strata_trace *t,
					     uint64_t ns);
/* Nanoseconds since the Unix epoch of clock value `ts` (clock offset). */
STRATA_API int64_t strata_trace_wall_ns(const struct strata_trace *t,
					uint64_t ts);
/* Problems reported so far (all kinds). */
STRATA_API uint64_t strata_trace_nproblems(const struct strata_trace *t);

/* ---- following a trace while it is written --------------------------------- */

/*
 * A follower reads a trace that its writer (the in-process consumer, the
 * guardian, `strata record`, the daemon or a relay) is still writing
 * (docs/reader.md, "Following a live trace"). Each strata_follow_poll()
 * looks at the files again, picks up new packets, streams and sub-traces,
 * and hands out a window of time [*from, *to) whose events can all be read
 * now, in time order: every stream still being written has a whole packet
 * ending at or after *to, or its writer's live timer says it has written
 * everything before a time at or after *to (docs/record.md, "Live
 * reading": a quiet CPU then holds nothing back). Consecutive
 * windows join end to end, so each event is in exactly one; an event that
 * still appears behind them is reported (STRATA_PROBLEM_LATE), never
 * passed over in silence. A follower belongs to one thread at a time.
 */
struct strata_follow;

struct strata_follow_options {
	const struct strata_open_options *open; /* problem callback; flags
						 * (STRATA_OPEN_FOLLOW is
						 * added); NULL: none */
	unsigned reserved[4];                    /* 0 */
};

/* Start following `path` (a trace root or a sub-trace; it need not exist
 * yet). Returns 0, -EINVAL (NULL path), -ENOMEM. Opens nothing yet. */
STRATA_API int strata_follow_create(const char *path,
				    const struct strata_follow_options *opt,
				    struct strata_follow **out);
STRATA_API void strata_follow_destroy(struct strata_follow *f); /* NULL ok */

#define STRATA_FOLLOW_LIVE 1  /* read the window, poll again later */
#define STRATA_FOLLOW_DONE 0  /* the trace is complete: read the window
			       * (up to UINT64_MAX), then stop */

/*
 * Look at the files again. *t is the trace as it is now, valid until the
 * next poll or strata_follow_destroy() (iterators and filters made from it
 * must be destroyed before); NULL while there is no readable trace yet (the
 * window is then empty). Read the events of [*from, *to) from it (a
 * strata_filter_time of from .. to - 1). A problem is reported once per
 * follower, not once per poll; a part not readable yet (a sub-trace
 * without metadata) is not reported while the trace is written, and holds
 * the window. A trace is complete when no program is connected to its
 * guardian (no `.session`), no recorder or daemon writes it (`.live`), no
 * relay session holds it (`.relay-session`), no consumer holds a
 * sub-trace's reserve (`.reserve`) and every stream's index is published
 * (format.md §1, §7). Returns STRATA_FOLLOW_LIVE, STRATA_FOLLOW_DONE, -ENOMEM, or
 * the error of strata_trace_open() other than "nothing readable yet"
 * (-ENOENT, -EINVAL), such as -ENOTUNIQ or -ENOTDIR.
 */
STRATA_API int strata_follow_poll(struct strata_follow *f,
				  struct strata_trace **t, uint64_t *from,
				  uint64_t *to);

/* ---- filters ----------------------------------------------------------------- */

/*
 * A filter is built for one trace (it resolves event names and field names
 * against its classes once) and may be shared by iterators of that trace.
 * Cheap conditions (time, cpu, pid, tid, event name by id) are checked
 * before any field is decoded. Each add_* call narrows the set: values of
 * the same kind are OR-ed (cpu 1 or 3), kinds are AND-ed.
 */
STRATA_API int strata_filter_create(struct strata_trace *t,
				    struct strata_filter **out);
STRATA_API void strata_filter_destroy(struct strata_filter *f); /* NULL ok */
/* Keep events with begin <= timestamp <= end (ticks). */
STRATA_API int strata_filter_time(struct strata_filter *f, uint64_t begin,
				  uint64_t end);
STRATA_API int strata_filter_cpu(struct strata_filter *f, uint32_t cpu);
STRATA_API int strata_filter_pid(struct strata_filter *f, uint32_t pid);
STRATA_API int strata_filter_tid(struct strata_filter *f, uint32_t tid);
/* Glob on the event name ("mem:*", "*:alloc"). Returns the number of
 * classes it matches now (0 is not an error). */
STRATA_API int strata_filter_event(struct strata_filter *f, const char *glob);
/*
 * Field expression: identifiers are field names (an event without that
 * field does not match) or cpu/pid/tid; operators == != < <= > >= & | &&
 * || ! and parentheses; integer (decimal, 0x) and "string" literals.
 * Compiled once to bytecode. Several expressions are AND-ed.
 * Returns 0, -EINVAL with a message in err (position included; a name that
 * is no field of any event class of the trace, nor cpu/pid/tid, is an
 * error too: the message names it and the fields there are), -ENOMEM.
 */
STRATA_API int strata_filter_expr(struct strata_filter *f, const char *expr,
				  char *err, size_t errlen);

/* ---- iteration ------------------------------------------------------------- */

#define STRATA_ITER_INTERNAL 0x1u /* also return strata's major-0 records */
/* Streams one after another (each in its own order, streams in index
 * order) instead of merged by time: for work that does not need the
 * global order (counts, statistics, full-trace scans), it skips the
 * interleaving of streams. Seeks and filters work as without it. */
#define STRATA_ITER_UNORDERED 0x2u

struct strata_iter_options {
	int stream;                     /* -1: all streams merged by time */
	unsigned flags;                 /* STRATA_ITER_* */
	const struct strata_filter *filter; /* NULL: everything */
};

/*
 * Iterate over one stream, or all streams of all sub-traces merged by
 * timestamp (ties broken by stream order: stable). Memory is bounded by the
 * number of streams. Returns 0, -EINVAL (bad stream index or a filter of
 * another trace), -ENOMEM.
 */
STRATA_API int strata_iter_create(struct strata_trace *t,
				  const struct strata_iter_options *opt,
				  struct strata_iter **out);
STRATA_API void strata_iter_destroy(struct strata_iter *it); /* NULL ok */
/* Next event matching the filter: returns 1 and sets *ev, 0 at the end. */
STRATA_API int strata_iter_next(struct strata_iter *it,
				const struct strata_event **ev);
/*
 * Copy up to n next events into evs[0..]: the same events in the same
 * order as n calls of strata_iter_next, without a call per event. Returns
 * the number copied (< n only at the end), 0 at the end. The copies'
 * payload pointers stay valid until strata_trace_close().
 */
STRATA_API int strata_iter_read(struct strata_iter *it, struct strata_event *evs,
				unsigned n);

/* ---- batches: events with every field decoded --------------------------- */

/*
 * What strata_iter_decode fills: events and the values of all their
 * fields in flat arrays, for work that reads every field of every event
 * (statistics, conversion, full scans) without a call per event or field.
 * Everything it points to is owned by the batch and valid until the next
 * strata_iter_decode into it or strata_batch_free(); payload and string
 * pointers stay valid until strata_trace_close().
 */
struct strata_batch {
	unsigned n;                        /* events in the batch */
	const struct strata_event *events; /* events[0 .. n) */
	/* Event i's fields are values[first[i] .. first[i + 1]), in the order
	 * of its class's fields, as strata_event_fields() decodes them; none
	 * when its payload is damaged (strata_event_fields: -EBADMSG). */
	const uint32_t *first;             /* first[0 .. n] */
	const struct strata_value *values; /* values[0 .. first[n]) */
};

/* A batch with room for up to `cap` events (1..65536) of trace t, and for
 * their values. Returns 0, -EINVAL (cap), -ENOMEM. */
STRATA_API int strata_batch_alloc(const struct strata_trace *t, unsigned cap,
				  struct strata_batch **out);
STRATA_API void strata_batch_free(struct strata_batch *b); /* NULL ok */
/*
 * Fill b with the next events, the same events in the same order as
 * strata_iter_next would return, and decode all their fields. Returns the
 * number of events (b->n): 0 only at the end; a batch may hold fewer than
 * its cap before the end. b must come from strata_batch_alloc() for this
 * iterator's trace (else -EINVAL). strata_iter_next, strata_iter_read and
 * strata_iter_decode may be mixed on one iterator: each goes on where the
 * last call stopped.
 */
STRATA_API int strata_iter_decode(struct strata_iter *it, struct strata_batch *b);

/* Position before the first event with timestamp >= ts: a binary search of
 * each stream's packet index, then a scan of one packet. Returns 0. */
STRATA_API int strata_iter_seek(struct strata_iter *it, uint64_t ts);
/* Bytes of stream files consumed so far (for progress). */
STRATA_API uint64_t strata_iter_progress(const struct strata_iter *it);

/* ---- symbols ---------------------------------------------------------------- */

/*
 * Addresses of a traced process (pointer fields, lock addresses, call
 * chains) as function+offset (file:line), from the memory maps its state
 * dump recorded (strata:map, format.md §4) and the mapped files' ELF
 * symbols and DWARF (elfutils' libdwfl; separate debug files found by
 * build-id under /usr/lib/debug). A file whose inode is not the one that
 * was mapped (rebuilt or replaced since the trace) is not read: its
 * addresses are given as module+offset and marked STRATA_SYM_CHANGED;
 * nor one whose GNU build-id is not the one recorded (strata:build_id,
 * format.md §4; rebuilt in place): STRATA_SYM_REBUILT. Traces without
 * build-ids are checked by inode only.
 * Built once per trace, lazily per process; not thread-safe.
 */
struct strata_symbolizer;

enum strata_sym_status {
	STRATA_SYM_FUNCTION = 0, /* function (or data object) + offset */
	STRATA_SYM_MODULE,       /* in a mapped file without a symbol there */
	STRATA_SYM_CHANGED,      /* the file changed since the trace: not read */
	STRATA_SYM_MAPPING,      /* an anonymous or special mapping ([heap]...) */
	STRATA_SYM_UNKNOWN,      /* no mapping of that process holds it */
	STRATA_SYM_REBUILT,      /* same inode, but its build-id is not the
				  * one the trace recorded: not read */
};

struct strata_symbol {
	int status;              /* enum strata_sym_status */
	const char *module;      /* the file's or mapping's name, or NULL */
	uint64_t module_offset;  /* file-relative address (addr - load bias) */
	const char *function;    /* STRATA_SYM_FUNCTION: the symbol, without
				  * a symbol version ("@@GLIBC_2.34") */
	uint64_t offset;         /* addr - the symbol's start */
	const char *file;        /* source file, or NULL */
	int line;                /* source line, or 0 */
};

/* Read the maps of every process in t. Returns 0, -ENOMEM, or -ENOTSUP
 * (a libstrata-reader built without libdw). */
STRATA_API int strata_symbolizer_create(struct strata_trace *t,
					struct strata_symbolizer **out);
STRATA_API void strata_symbolizer_destroy(struct strata_symbolizer *s); /* NULL ok */
/* Resolve addr of process pid; strings stay valid until destroy.
 * Returns out->status (>= 0). */
STRATA_API int strata_symbolize(struct strata_symbolizer *s, uint32_t pid,
				uint64_t addr, struct strata_symbol *out);
/* The same for a return address of a call chain: the call is the byte
 * before it, so the function and line are those of pc - 1; the offsets
 * shown stay pc's, as debuggers show them. */
STRATA_API int strata_symbolize_return(struct strata_symbolizer *s, uint32_t pid,
				       uint64_t pc, struct strata_symbol *out);
/* "func+0x1a (file.c:12)", "module+0x1a2b", "module+0x1a2b (changed since
 * the trace)", "module+0x1a2b (changed since the trace: build-id differs)",
 * "[heap]+0x10" or "0x7f12...", into buf (NUL-terminated);
 * returns buf. */
STRATA_API const char *strata_symbol_format(const struct strata_symbol *sym,
					    uint64_t addr, char *buf, size_t len);

/* ---- several hosts on one time base ------------------------------------------ */

/*
 * A recording received by `strata relay` holds the relay's estimate of its
 * sender's clock offset (docs/relay.md §7). strata_trace_open applies it:
 * every timestamp of such a recording is on the relay's CLOCK_MONOTONIC,
 * so that several hosts opened together (STRATA_OPEN_MERGE) merge on one
 * time base (docs/reader.md, "Several hosts"). Only to a recording whose
 * clock is CLOCK_MONOTONIC (`--clock mono`): a TSC's ticks are not the
 * clock the offset was measured on, and such a recording keeps its own
 * (applied == 0); nor in a trace opened with STRATA_OPEN_FOLLOW, whose
 * windows are on the files' own times.
 */
struct strata_host_offset {
	const char *root;        /* the recording's directory */
	const char *sender;      /* the sender's host name, as the relay saw it */
	int64_t offset_ns;       /* the sender's clock minus the relay's */
	uint64_t uncertainty_ns; /* half the round trip of the sample used */
	uint64_t measured_ns;    /* the relay's clock when it was measured */
	uint64_t samples;        /* exchanges it was chosen from */
	int applied;             /* its timestamps were moved by -offset_ns,
				  * and by the drift since measured_ns */
	int has_drift;           /* drift_ppb was estimated (over 10 s or more) */
	int64_t drift_ppb;       /* the sender's clock's rate against the
				  * relay's, parts per billion: the offset at
				  * sender time t is offset_ns + drift_ppb *
				  * (t - measured_ns - offset_ns) / 10^9 */
};

/* Recordings of the trace with a clock offset, and offset i of them:
 * 0 or -EINVAL (i out of range). */
STRATA_API unsigned strata_trace_noffsets(const struct strata_trace *t);
STRATA_API int strata_trace_offset(const struct strata_trace *t, unsigned i,
				   struct strata_host_offset *out);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_READER_H */
