/* SPDX-License-Identifier: MIT */
/* The session protocol between libstrata and `strata record` (docs/record.md). */
#ifndef STRATA_SESSION_PROTO_H
#define STRATA_SESSION_PROTO_H

#include <stdint.h>

#include <strata/inline/ring.h>

/*
 * One SOCK_SEQPACKET connection per traced process image (a fork child or
 * an exec'd image connects afresh). Messages keep their boundaries; each
 * starts with a sess_hdr. Both ends run on one host: native byte order.
 * The daemon checks every length and count (the process is not trusted).
 *
 *   process -> daemon  HELLO   first message: who it is
 *   process -> daemon  RING    one per ring, with its memfd (SCM_RIGHTS)
 *   process -> daemon  DESC    event descriptors (any number of these)
 *   process -> daemon  BYE     at exit, after its last flush: counters
 *
 * The daemon never answers: a process never waits for it (docs/record.md,
 * "Never hurt the traced program"). EOF without BYE means the process
 * died, or exec'd: its rings are salvaged.
 */
#define SESS_VERSION 1u
#define SESS_MAX_MSG (64u << 10) /* bytes; DESC batches are split below this */

enum sess_type {
	SESS_HELLO = 1,
	SESS_RING = 2,
	SESS_DESC = 3,
	SESS_BYE = 4,
};

struct sess_hdr {
	uint32_t type;
	uint32_t len; /* of the whole message, header included */
};

struct sess_hello {
	struct sess_hdr h;
	uint32_t version;   /* SESS_VERSION */
	uint32_t pid;
	uint32_t ppid;
	uint32_t fork_of;   /* a fork child registering itself: the parent's
			     * pid (its descriptors are the parent's); else 0 */
	uint32_t clock_tsc; /* the trace clock it uses (format.md §5) */
	uint32_t mode;      /* enum strata_mode of its rings */
	uint8_t uuid[16];   /* of its sub-trace: every ring's ctl->uuid */
	char name[16];      /* /proc/self/comm */
};

struct sess_ring {
	struct sess_hdr h;
	uint32_t cpu;
	uint32_t pid;
};

/*
 * DESC: `count` records, each
 *   u8 major, u8 kind, u16 minor, u16 nfields, u16 reserved,
 *   then NUL-terminated: subsystem, name, format, description ("" = none),
 *   then per field: u16 type, u16 count, u32 flags, NUL-terminated name.
 * No alignment: read with memcpy.
 */
struct sess_desc {
	struct sess_hdr h;
	uint32_t count;
	uint32_t pad;
};

struct sess_bye {
	struct sess_hdr h;
	uint64_t lost[STRATA_LOST_NCAUSES]; /* over all its rings and none */
	uint32_t rings_unsent; /* rings the daemon never got (their events
				* are lost) */
	uint32_t pad;
};

#endif /* STRATA_SESSION_PROTO_H */
