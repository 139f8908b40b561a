/* SPDX-License-Identifier: MIT */
/* Internal glue between the session (start/stop) and its parts. */
#ifndef STRATA_LIB_SESSION_H
#define STRATA_LIB_SESSION_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <strata/strata.h>

/* strata_options.majors value meaning "explicitly none" (0 means default,
 * all). Bit 63 is otherwise unused: major 63 is reserved. */
#define STRATA_MAJORS_NONE STRATA_MAJOR_BIT(63)

/*
 * Every STRATA_* variable the library reads (lib/options.c, the README's
 * table): the raw strings, NULL when unset, and the switches parsed.
 */
struct lib_env {
	const char *output;           /* STRATA_OUTPUT */
	const char *packet_size;      /* STRATA_PACKET_SIZE */
	const char *packets;          /* STRATA_PACKETS */
	const char *mode;             /* STRATA_MODE */
	const char *majors;           /* STRATA_MAJORS */
	const char *block_timeout_ms; /* STRATA_BLOCK_TIMEOUT_MS */
	const char *flush_ms;         /* STRATA_FLUSH_MS */
	const char *clock;            /* STRATA_CLOCK */
	bool rseq_off;                /* STRATA_RSEQ=0: the CAS protocol */
	const char *start_on;         /* STRATA_START_ON */
	const char *stop_on;          /* STRATA_STOP_ON */
	const char *session;          /* STRATA_SESSION */
	bool guarded;                 /* STRATA_GUARDED=1 (set by the library) */
	bool guard_off;               /* STRATA_GUARD=0 */
	const char *tool;             /* STRATA_TOOL */
	const char *enable;           /* STRATA_ENABLE */
	const char *ktrace_dir;       /* STRATA_KTRACE_DIR (set by strata ktrace) */
	const char *record_trace;     /* STRATA_RECORD_TRACE (set by strata record) */
};

/* Read the environment now (any thread, not a signal handler). */
void lib_env_read(struct lib_env *e);

int options_parse_majors(const char *s, uint64_t *out);
/* Apply defaults and validate; sets the detail string on error. */
int options_check(struct strata_options *o);

/* The major mask and the start/stop gate (src/lib/control.c). Every
 * wholesale write of strata_mask goes through mask_set(). */
void mask_set(uint64_t m);
uint64_t mask_wanted(void);       /* the mask as set, whatever the gate */
struct strata_event_desc;
/* Registration of a batch of events (registry lock held): arms triggers. */
void control_registered(const struct strata_event_desc *const *evs, size_t n);
/* -e patterns to apply to events as they register (on = 0: none, while
 * a session is stopped). */
void control_enable_patterns(const char *pats, int on);

/* The in-process recorder (lib/session.c), for the daemon client and
 * fork. A fresh uuid for a sub-trace (format.md §2); not async-signal-safe. */
void session_random_uuid(uint8_t u[16]);
/* At exit with nobody to check strata_stop(): one line on stderr if
 * anything of the trace in `output` was lost, silent otherwise. */
void session_report_exit(const char *output, int ret,
			 const struct strata_stats *s);
/* One line in TRACE/unrecorded (`strata info` reads it): this process's
 * `events` that no packet counts, and why. Best effort. */
void session_note_unrecorded(const char *trace, uint64_t events, const char *why);
/* In a fork child: the parent's consumer and lock are not ours. */
void session_after_fork_child(void);

/* Install the pthread_atfork handlers (lib/fork.c): at load. */
void fork_init(void);

/*
 * The locks the library's own threads take (the session helper, the
 * in-process consumer) besides the program's. lib/fork.c takes every
 * one before fork() and resets them in the child, so that the child finds
 * each free and the data behind it whole (docs/record.md, "Fork"). They
 * check errors, so that a fork() from a signal handler that interrupted
 * their holder is told apart (EDEADLK) instead of deadlocking. They nest
 * in this order only: registry, control_enable, statedump.
 */
#define LIB_LOCK_INITIALIZER PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP
extern pthread_mutex_t registry_lock;       /* lib/registry.c */
extern pthread_mutex_t control_enable_lock; /* lib/control.c */
extern pthread_mutex_t statedump_lock;      /* lib/statedump.c */

#endif /* STRATA_LIB_SESSION_H */
