/* SPDX-License-Identifier: MIT */
/* What the files of the session daemon share: its state, its clients, its
 * limits, and the functions one file calls in another (docs/record.md). */
#ifndef STRATA_DAEMON_DAEMON_INT_H
#define STRATA_DAEMON_DAEMON_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>

#include <strata/strata.h>

#include "common/mono.h"
#include "consumer/consumer.h"
#include "daemon/daemon.h"
#include "lib/clock.h"
#include "proto/proto.h"

#define MAX_CTL 16
#define STOP_WAIT_MS 1000 /* for processes to close their packets */
#define STOP_JOIN_MS 10000 /* more, for processes not heard yet */

/*
 * Connections (docs/record.md, "Limits"): how many one process may hold,
 * how many may wait for their HELLO and for how long, how long a control
 * client may take to ask, and the fds the daemon keeps for itself: the
 * clients it takes are bounded by RLIMIT_NOFILE, FDS_PER_CLIENT each (a
 * socket, a doorbell, a ring's stream and index).
 */
#define CLIENTS_PER_PID 8
#define PENDING_MAX 64
#define HELLO_MS 2000
#define CTL_IDLE_MS 2000
#define FDS_PER_CLIENT 4
#define FD_RESERVE 64
#define CLIENTS_MIN 16
#define CLIENTS_MAX 16384
#define LISTEN_PAUSE_MS 100 /* out of fds, none spare: the listeners rest */

/* One traced process image (a connection). */
#define CLIENT_BLOBS 64

struct client {
	int fd; /* -1 once closed */
	int bellfd; /* its rings' doorbell (an eventfd), or -1 */
	int registered;
	int pending;      /* connected, no HELLO yet */
	uint64_t hello_by; /* ... until then (ms, mono_ms()) */
	uint32_t peer;    /* its pid, the kernel's word (SO_PEERCRED) */
	uint32_t pid, mode;
	char name[17];
	uint8_t uuid[16];
	struct cons *cons;
	/* one per CPU, up to STRATA_MAX_CPUS (client_rings_fit) */
	struct strata_ring **rings;
	unsigned nrings, caprings;
	/* larger than the session's geometry, or no memory to take them */
	unsigned rings_refused;
	/* descriptors (struct desc_blk, shared with fork children) and
	 * their index by id; what this client made us allocate */
	const struct strata_event_desc **evs;
	size_t nev, cap;
	uint32_t *hidx; /* open addressing: index + 1 into evs, 0 = free */
	size_t hcap;
	size_t desc_bytes;
	int desc_full; /* over its budget: said once */
	/* ids it logs with strata_log_blob() (PROTO_DESC_BLOB); past the
	 * bound, blobs show as raw words */
	uint32_t blobs[CLIENT_BLOBS];
	unsigned nblobs;
	uint64_t gen;
	int bye;
	struct proto_bye byemsg;
	int err; /* its sub-trace's first I/O error (negative errno) */
	int untraced; /* its sub-trace could not be made: the cause (errno) */
	uint64_t ring_lost; /* sum of the rings' counters at close */
	uint64_t lost_base; /* ... when the current trace began */
	int traced;         /* has a sub-trace in the current trace */
	uint64_t acked;     /* last state generation it applied */
	struct strata_stats st;
	struct cons_salvage salv;
	struct client *next;
};

/* What the summary says of a process of the trace (client_sum()). */
struct proc_sum {
	uint64_t events, bytes, discarded, lost_io, salvaged, unsalvageable;
	uint64_t unsent;
	int crashed;
};

/* A process gone from the trace, as strata record -v lists it. */
struct proc_rec {
	uint32_t pid;
	char name[17];
	uint8_t crashed;
	uint64_t events, bytes, discarded;
};

/* A control connection (strata session ...), waiting for its request or,
 * for stop and quit, for the trace to be finished. */
struct ctl_conn {
	int fd;
	uint32_t waiting; /* CTL_STOP / CTL_QUIT: answer when stopped */
	uint64_t since;   /* accepted (ms, mono_ms()) */
};

enum { ST_STOPPED = 0, ST_RUNNING = 1, ST_STOPPING = 2 };

struct dmn {
	char trace[4096];
	char sdir[4096];
	char sock[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int lfd;
	struct clock_point cp_first;
	struct client *clients; /* newest first */
	unsigned nlive;    /* connected clients, pending ones included */
	unsigned npending; /* ... that have not said HELLO yet */
	unsigned max_clients;
	int spare_fd; /* kept open to be closed when fds run out
		       * (dmn_accept_fd) */
	uint64_t listen_rest_until; /* ms: listeners not polled before */
	/* dmn_step()'s poll set, grown with the clients */
	struct pollfd *pf;
	struct client **who;
	int *conn;
	size_t pfcap;
	size_t desc_bytes; /* every client's descriptors (desc_blk) */
	uint64_t ring_psize, ring_bytes; /* the largest ring a client may hand over */
	/* The current trace's processes that are gone, their structures
	 * freed (dmn_clients_reap): their totals, and under strata record one
	 * line's worth each for its summary (-v). */
	struct dmn_totals done;
	struct proc_rec *recs;
	size_t nrecs, caprecs;
	unsigned dir_seq; /* the last K of a pid-N.K made in this trace */
	unsigned limits_said; /* bit per enum limit: said once */
	int err;
	/* long-lived daemon */
	int daemon;
	int state;
	char ctl[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char statef[4200];
	int ctl_fd, lock_fd;
	struct proto_state *st; /* mapped, ours to write */
	uint64_t stop_gen;
	struct timespec stop_deadline;
	struct ctl_conn conns[MAX_CTL];
	int quit;
	struct dmn_totals last; /* of the last finished trace */
	void (*on_start)(const char *trace_dir);
	void (*on_stop)(const char *trace_dir);
	const struct cons_sink *sink; /* dmn_config's */
};

/* The limits of docs/record.md, "Limits", each said once per daemon
 * when a client reaches it: a client that keeps hitting one must not
 * fill the log either. */
enum limit {
	LIMIT_DESC, /* descriptor budget */
	LIMIT_RING, /* a ring larger than the session's geometry */
	LIMIT_PID,  /* connections of one process */
	LIMIT_CLIENTS, /* connections in all */
	LIMIT_PENDING, /* connections that did not say HELLO in time */
	LIMIT_FDS,  /* out of file descriptors */
	LIMIT_CTL,  /* control clients that did not ask in time */
	LIMIT_RING_NOMEM, /* no memory to take a client's ring */
};

/*
 * What one file of the daemon calls in another, each described where it
 * is defined. Every symbol of the daemon outside a file starts with
 * dmn_ (the daemon), its public ones (daemon.h) too.
 */

/* conn.c: the limits, said once; connections taken, bounded, timed out */
void dmn_limit_said(struct dmn *d, enum limit which, uint32_t pid);
int dmn_accept_fd(struct dmn *d, int lfd);
void dmn_clients_accept(struct dmn *d);
void dmn_catch_up(struct dmn *d);
void dmn_deadlines(struct dmn *d);

/* client.c: a client's messages, rings and sub-trace */
int dmn_make_dir(const char *trace, uint32_t pid, unsigned *seq,
		 char *dir, size_t n);
uint64_t dmn_client_ring_lost(const struct client *c);
int dmn_client_begin_trace(struct dmn *d, struct client *c);
/* A line in TRACE/unrecorded: `events` of process `pid` not in the
 * trace, and why (trace.c). */
void dmn_note_unrecorded(struct dmn *d, uint32_t pid, const char *name,
			 uint64_t events, const char *why);
void dmn_client_end_trace(struct dmn *d, struct client *c,
			  int writers_gone);
void dmn_client_close(struct dmn *d, struct client *c,
		      int writers_gone);
void dmn_client_read(struct dmn *d, struct client *c);
void dmn_client_free(struct dmn *d, struct client *c);

/* desc.c: a client's event descriptors (DESC) */
void dmn_client_config(struct dmn *d, struct client *c, const char *dir,
		       struct cons_source *src, struct cons_config *cc);
int dmn_desc_add(struct client *c, const struct strata_event_desc *e);
void dmn_client_descs_free(struct dmn *d, struct client *c);
void dmn_client_desc(struct dmn *d, struct client *c,
		     const unsigned char *buf, size_t len);

/* trace.c: the trace's start, stop and summary */
void dmn_trace_summary(struct dmn *d, FILE *log,
		       struct dmn_totals *t);
void dmn_trace_forget(struct dmn *d);
void dmn_clients_reap(struct dmn *d, int all);
/* TRACE/.live while the trace may grow (format.md §1); on = 0 removes it. */
void dmn_live_mark(const struct dmn *d, int on);
void dmn_stop_finish(struct dmn *d);
void dmn_stop_check(struct dmn *d);

/* control.c: the control socket */
void dmn_ctl_send_done(struct dmn *d, int fd, int status,
		       const char *msg);
int dmn_ctl_request(struct dmn *d, struct ctl_conn *k);
void dmn_ctl_accept(struct dmn *d);

#endif /* STRATA_DAEMON_DAEMON_INT_H */
