/* SPDX-License-Identifier: MIT */
/* The wire protocol between libstrata and the session daemon (docs/record.md), shared by both. */
#ifndef STRATA_PROTO_PROTO_H
#define STRATA_PROTO_PROTO_H

#include <stdint.h>

#include <strata/inline/ring.h>

/*
 * One SOCK_SEQPACKET connection per traced process image (a fork child or
 * an exec'd image connects afresh). Messages keep their boundaries; each
 * starts with a proto_hdr. Both ends run on one host: native byte order.
 * The daemon checks every length and count (the process is not trusted).
 *
 *   process -> daemon  HELLO   first message: who it is, with the
 *                              eventfd its packet closers ring
 *                              (SCM_RIGHTS; optional: ring.md §8)
 *   process -> daemon  RING    one per ring, with its memfd (SCM_RIGHTS)
 *   process -> daemon  DESC    event descriptors (any number of these)
 *   process -> daemon  BYE     at exit, after its last flush: counters
 *   daemon -> process  DONE    only to a BYE that asks for it (the
 *                              embedded mode's guardian): its sub-trace
 *                              is written, with the totals
 *
 * Otherwise the daemon never answers: a process never waits for it
 * (docs/record.md, "Never hurt the traced program"), except at exit in
 * the embedded mode, for a bounded time, where the in-process consumer
 * it replaces made exit wait too. EOF without BYE means the process
 * died, or exec'd: its rings are salvaged.
 */
#define PROTO_VERSION 1u
#define PROTO_MAX_MSG (64u << 10) /* bytes; DESC batches are split below this */

enum proto_type {
	PROTO_HELLO = 1,
	PROTO_RING = 2,
	PROTO_DESC = 3,
	PROTO_BYE = 4,
	PROTO_ACK = 5, /* a long-lived daemon's `state` applied (below) */
	PROTO_DONE = 6,
};

struct proto_hdr {
	uint32_t type;
	uint32_t len; /* of the whole message, header included */
};

struct proto_hello {
	struct proto_hdr h;
	uint32_t version;   /* PROTO_VERSION */
	uint32_t pid;
	uint32_t ppid;
	uint32_t fork_of;   /* a fork child registering itself: the parent's
			     * pid (its descriptors are the parent's); else 0 */
	uint32_t clock_tsc; /* the trace clock it uses (format.md §5) */
	uint32_t mode;      /* enum strata_mode of its rings */
	uint8_t uuid[16];   /* of its sub-trace: every ring's ctl->uuid */
	char name[16];      /* /proc/self/comm */
};

struct proto_ring {
	struct proto_hdr h;
	uint32_t cpu;
	uint32_t pid;
};

/*
 * DESC: `count` records, each
 *   u8 major, u8 kind, u16 minor, u16 nfields, u16 reserved,
 *   then NUL-terminated: subsystem, name, format, description ("" = none),
 *   then per field: u16 type, u16 count, u32 flags, NUL-terminated name.
 * No alignment: read with memcpy. A record whose kind is PROTO_DESC_BLOB
 * (nfields 0, empty strings) says that the id is logged with
 * strata_log_blob(): u32 size then the bytes (format.md §6).
 */
#define PROTO_DESC_BLOB 0xB1u
struct proto_desc {
	struct proto_hdr h;
	uint32_t count;
	uint32_t pad;
};

struct proto_bye {
	struct proto_hdr h;
	uint64_t lost[STRATA_LOST_NCAUSES]; /* over all its rings and none */
	uint32_t rings_unsent; /* rings the daemon never got (their events
				* are lost) */
	uint32_t internal_lost; /* strata's own records among lost[]: 0 from
				 * libraries that count them apart (lost_own) */
	uint32_t flags;         /* PROTO_BYE_*; absent (a shorter BYE) from
				 * older libraries */
	uint32_t pad;
};
#define PROTO_BYE_V1_LEN 56u   /* a BYE without flags */
_Static_assert(__builtin_offsetof(struct proto_bye, flags) == PROTO_BYE_V1_LEN,
	       "BYE: flags follow the first version's fields");
#define PROTO_BYE_DONE 1u      /* answer with DONE once written */

/* DONE: this process's sub-trace is finished (metadata, index, streams
 * closed). */
struct proto_done {
	struct proto_hdr h;
	int32_t err;      /* 0, or the first I/O error (negative errno) */
	uint32_t pad;
	uint64_t events;  /* written, strata's own records excluded */
	uint64_t bytes;
	uint64_t packets;
	uint64_t lost_io; /* recorded, not written (I/O error) */
};

/* ACK: the helper thread applied generation `gen` of the session's state
 * file (and, when it says disabled, closed its open packets first). */
struct proto_ack {
	struct proto_hdr h;
	uint64_t gen;
};

/*
 * The state file of a long-lived daemon (`strata daemon`), `state` beside
 * `sock` in the session directory (docs/record.md, "The control file").
 * The daemon is its only writer; processes map it read-only and poll it
 * from their helper thread every 10 ms, so the daemon tells every process
 * something without any of them ever waiting.
 *
 * Seqlock: the daemon makes `gen` odd, stores the fields, then makes it
 * even again (release); a reader loads `gen` (acquire), copies the fields,
 * fences (acquire), and retries later if `gen` changed or was odd. A
 * reader checks every field: the file is the daemon's, not its own.
 */
#define PROTO_STATE_MAGIC 0x53525453u /* "STRS" */
#define PROTO_STATE_SIZE 4096u

struct proto_state {
	uint32_t magic;
	uint32_t version; /* PROTO_VERSION */
	uint64_t gen;     /* even when stable; bumped by 2 per change */
	uint64_t majors;  /* the mask while enabled */
	uint32_t enabled; /* 0: the session is stopped: log nothing */
	/* ring geometry for rings created from now on (they win over the
	 * environment's STRATA_PACKET_SIZE / STRATA_PACKETS / STRATA_MODE) */
	uint32_t psize_shift;
	uint32_t npackets_shift;
	uint32_t mode;
	uint32_t clock_tsc; /* the daemon's trace clock: 0 = CLOCK_MONOTONIC,
			     * which joining processes then use too */
	/* `strata daemon --live=MS`: the live timer's period for joining
	 * processes (docs/record.md, "Live reading"); 0: their own
	 * STRATA_FLUSH_MS. Was padding: 0 from older daemons, ignored by
	 * older libraries. */
	uint32_t live_ms;
	char enable[1024]; /* -e patterns, comma-separated; "" = none */
};

/*
 * The control socket `ctl` (strata session ...): one request per
 * connection, answered by zero or more CTL_PROC records (status), then
 * CTL_DONE. SO_PEERCRED: the daemon's uid only.
 */
enum ctl_type {
	CTL_START = 1,    /* path: the new trace directory, "" = dated */
	CTL_STOP = 2,
	CTL_STATUS = 3,
	CTL_SNAPSHOT = 4, /* path: the snapshot directory, "" = dated */
	CTL_QUIT = 5,     /* stop, then end the daemon */
	CTL_PROC = 16,    /* reply: one connected process */
	CTL_DONE = 17,    /* reply: the last one */
};

struct ctl_req {
	struct proto_hdr h;
	uint32_t version;
	uint32_t pad;
	char path[4096]; /* absolute; "" = the daemon's default */
};

struct ctl_proc {
	struct proto_hdr h;
	uint32_t pid;
	uint32_t rings;
	uint64_t events;    /* written into the current trace */
	uint64_t bytes;
	uint64_t discarded; /* counted by its rings since the trace began */
	char name[17];
	char pad[7];
};

struct ctl_done {
	struct proto_hdr h;
	int32_t status;   /* 0 or a negative errno */
	uint32_t running; /* the session state after the request */
	uint32_t procs;   /* processes connected */
	uint32_t mode;    /* ring mode (enum strata_mode) */
	uint64_t psize, npackets, majors;
	uint64_t events, bytes, discarded; /* of the current or last trace */
	uint32_t daemon_pid;
	uint32_t pad;
	char trace[4096]; /* the current or last trace directory */
	char msg[1024];   /* one line for the user: what was done, or why not */
};

#endif /* STRATA_PROTO_PROTO_H */
