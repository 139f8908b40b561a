/* SPDX-License-Identifier: MIT */
/* Internals of the session daemon's client shared by its files (client.c, client_state.c, client_leave.c). */
#ifndef STRATA_LIB_CLIENT_INT_H
#define STRATA_LIB_CLIENT_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/un.h>

#include <strata/strata.h>

#include "lib/descmsg.h"
#include "proto/proto.h"

/*
 * The process hands its rings to the session daemon instead of running a
 * consumer: each ring's memfd goes over a UNIX socket (SCM_RIGHTS) as the
 * ring is created, from the slow path -- possibly in a signal handler --
 * so that part uses only system calls on static data. Every send is
 * non-blocking: a stalled or dead daemon costs events (counted), never
 * time. A small helper thread sends the event descriptors (they are
 * registered by constructors that run after this library's) and retries
 * ring handovers that found the socket full.
 */
enum {
	CLIENT_OFF = 0, /* not in a session */
	CLIENT_NEED,    /* fork child: connect at its first ring */
	CLIENT_BUSY,    /* a thread is connecting */
	CLIENT_ON,      /* connected */
	CLIENT_DEAD,    /* the daemon is gone or never answered */
	/* joined, not connected yet: the daemon's backlog was full (it was
	 * stopped, or swamped). Tracing goes on into the rings; the helper
	 * thread, and at last the exit, connect when it takes us
	 * (client_retry(): issue 24, item 7). */
	CLIENT_PENDING,
};

/*
 * The session daemon's client: one per process (a fork child resets it,
 * client_after_fork_child()). The fields the slow path reads or writes
 * (state, fd, ring_sent, rings_unsent) are accessed atomically:
 *
 * - state is stored with release (seq_cst before a sweep: see
 *   client_ring_created()) and loaded with acquire, each load pairing with
 *   the store it reads: whoever sees CLIENT_ON sees the connection made
 *   and the fd stored before it;
 * - fd is stored with release once the socket is connected (or to -1
 *   before it is closed), and loaded with acquire by its users, which
 *   pair with that store;
 * - ring_sent[cpu]: a sweep claims a ring's handover by an acq_rel CAS
 *   and gives it back, when the socket was full, by a release store
 *   that the next sweep's CAS pairs with.
 */
struct client {
	int state; /* CLIENT_* */
	int fd;    /* the connection, -1 when none */
	char sock[sizeof(((struct sockaddr_un *)0)->sun_path)];
	uint32_t fork_of; /* a fork child: the parent's pid, in HELLO */
	/* The eventfd our closers ring while a daemon drains our rings
	 * (ring_bellfd): made once, never closed (ring.h). */
	int bellfd;
	uint8_t ring_sent[STRATA_MAX_CPUS]; /* 1: handed over (or trying) */
	uint32_t rings_unsent;              /* failed for good */
	struct descmsg_sent sent;           /* of the registry */
	pthread_t thread; /* the helper */
	int thread_on;
	/* the helper's first act, statedump_self(), was done: else leaving
	 * does it (a program that ends before its helper ran) */
	bool dumped;
	/* stored with release by client_stop_helper(), loaded with acquire by
	 * client_main(): the helper's last round sees what was done before */
	int thread_stop;
	/* The session is the embedded mode's guardian (lib/guard.c): BYE
	 * asks for DONE, and leaving waits for it, up to CLIENT_DONE_WAIT_MS. */
	int guarded;
	char output[4096]; /* STRATA_OUTPUT, for the guarded one's report */
	char record_trace[4096]; /* STRATA_RECORD_TRACE: strata record's trace */
	char enable[1024]; /* STRATA_ENABLE: patterns, comma-separated */
	/* a long-lived daemon's state file (below) */
	const struct proto_state *st; /* NULL: none (strata record) */
	uint64_t st_gen;             /* the generation applied */
	int disabled;                /* the daemon said: stopped */
	int ack_due;                 /* tell the daemon st_gen */
	/* The live timer (client_live.c): the period in ms (0: off), from
	 * STRATA_FLUSH_MS or the daemon's state file, and the last flush
	 * (mono_ms()). Set at the join, then the helper thread's only. */
	unsigned live_ms;
	uint64_t live_last;
};

extern struct client client_cl;

/* How long leaving waits for the helper: one of its rounds is 10 ms of
 * sleep and a few non-blocking sends (a state dump at most). */
#define CLIENT_HELPER_JOIN_MS 1000

/* client.c: the connection and the helper thread */
int client_send(const void *msg, size_t len, int fd);
void client_sweep(void);
void client_send_descs(void);
void client_apply_enable(void);
int client_retry(void);
bool client_stop_helper(void);

/* client_live.c: the live timer, on the helper thread */
void client_live_round(void);

/* client_state.c: a long-lived daemon's state file */
int client_state_map(const char *sock, struct proto_state *out);
void client_state_apply(const struct proto_state *s);
void client_follow_state(void);

#endif /* STRATA_LIB_CLIENT_INT_H */
