/* SPDX-License-Identifier: MIT */
/* The session daemon: accepts traced processes, maps their rings, writes their streams. */
#ifndef STRATA_DAEMON_DAEMON_H
#define STRATA_DAEMON_DAEMON_H

#include <stdint.h>
#include <stdio.h>

struct dmn;
struct cons_sink;

struct dmn_totals {
	uint64_t procs;      /* processes that registered */
	uint64_t events;     /* written, strata's own records excluded */
	uint64_t bytes;
	uint64_t discarded;  /* counted by the processes (ring full, ...) */
	uint64_t lost_io;    /* recorded but not written (I/O error) */
	uint64_t salvaged;   /* packets closed by the daemon after a death */
	uint64_t unsalvageable;
	uint64_t crashed;    /* processes that ended without BYE */
	uint64_t unsent;     /* rings a process could not hand over */
	/* processes that never joined (the backlog stayed full), and the
	 * events of theirs not recorded: they left unrecorded.PID in the
	 * session directory (docs/record.md); the trace's `unrecorded`
	 * file lists them */
	uint64_t unjoined, unjoined_events;
	/* processes whose sub-trace could not be made (the first cause,
	 * negative errno): all they logged is lost */
	uint64_t untraced, untraced_events;
	int untraced_err;
	int err;             /* first I/O error (negative errno) */
};

struct dmn_config {
	/* Trace directory (must exist); NULL: created stopped (a daemon
	 * whose first trace is started by dmn_start()). */
	const char *trace_dir;
	/*
	 * NULL: a private session directory (0700) made with mkdtemp under
	 * $TMPDIR, holding the listening socket (0600): `strata record`.
	 * Otherwise a long-lived daemon's (proto/paths.h): this directory
	 * (made 0700 if missing) gets `sock`, the control socket `ctl` and
	 * the state file `state` (proto.h) that tells processes what to
	 * trace; its parent `base` too (0700, ours alone).
	 */
	const char *session_dir;
	const char *base_dir;
	/* Daemon only, published in `state`: the ring geometry and mode of
	 * every process that joins, the mask while a trace runs (and the
	 * -e patterns applied on top). */
	uint32_t psize_shift, npackets_shift, mode;
	uint64_t majors;
	const char *enable;
	/* The live timer's period for the processes that join (ms; 0:
	 * their own STRATA_FLUSH_MS), from STRATA_FLUSH_MS (--live). */
	unsigned live_ms;
	/* Called with each new trace directory as it starts (the state
	 * dump of `strata daemon`); NULL: none. */
	void (*on_start)(const char *trace_dir);
	/* Called with each trace directory once its user-space streams and
	 * metadata are complete (the daemon's kernel streams); NULL: none. */
	void (*on_stop)(const char *trace_dir);
	/* Every sub-trace's consumer also writes to this sink (the relay's
	 * sender, docs/relay.md); NULL: none. */
	const struct cons_sink *sink;
};

/* The daemon's ring settings from the environment, as libstrata reads
 * them (STRATA_PACKET_SIZE, STRATA_PACKETS, STRATA_MODE, STRATA_MAJORS,
 * STRATA_ENABLE). Returns 0 or -EINVAL (strata_strerror_detail()). */
int dmn_config_from_env(struct dmn_config *cfg);

/* `--live` of record and daemon without a period: STRATA_FLUSH_MS, ms
 * (docs/record.md, "Live reading"). */
#define DMN_LIVE_MS_DEFAULT "100"

/*
 * Create a session. Prints nothing; returns 0 or a negative errno with
 * *what naming the failed step (-EADDRINUSE: a daemon of that name
 * runs already).
 */
int dmn_create(const struct dmn_config *cfg, struct dmn **out,
	       const char **what);

/* The socket path for STRATA_SESSION. */
const char *dmn_socket(const struct dmn *d);

/* Wait up to timeout_ms for messages, handle them, and drain every ring.
 * Returns the number of packets written (0: idle). */
unsigned dmn_step(struct dmn *d, int timeout_ms);

/* Processes still connected, or waiting in the backlog to be. */
unsigned dmn_live(const struct dmn *d);

/*
 * Long-lived daemon (docs/record.md, "strata daemon"). dmn_step() also
 * answers the control socket: start, stop, status, snapshot, quit.
 *
 * dmn_start: begin writing a new trace into `dir` (must exist) for
 * every connected process and every one that joins; tells the processes
 * through `state`. Returns 0 or -EALREADY (running or stopping).
 *
 * dmn_stop: tell every process to stop logging; once each has closed
 * its open packets (its ACK) or after 1 s, dmn_step() finishes the
 * trace (everything written, streams closed) and the session is stopped;
 * the processes stay connected. Returns 0 or -ENOENT (not running).
 * dmn_stop_wait: the same, stepping until finished; totals to *t.
 */
int dmn_start(struct dmn *d, const char *dir);
int dmn_stop(struct dmn *d);
void dmn_stop_wait(struct dmn *d, struct dmn_totals *t);
int dmn_running(const struct dmn *d); /* 1 running, 2 stopping, 0 */
const char *dmn_trace(const struct dmn *d); /* current or last; "" */
/* A control client asked the daemon to end (CTL_QUIT, after its stop). */
int dmn_quit_requested(const struct dmn *d);
/* Totals of the last finished trace (dmn_stop()). */
void dmn_last_totals(const struct dmn *d, struct dmn_totals *t);

/* What a snapshot wrote. */
struct dmn_snap {
	unsigned procs;     /* processes snapshotted */
	unsigned skipped;   /* connected, not in overwrite mode */
	uint64_t packets, events, bytes;
	uint64_t overwritten, busy; /* packets left out (consumer.h) */
};

/*
 * Flight recorder: write the newest complete packets of every ring of
 * every connected overwrite-mode process into `dir` (must exist) as a
 * trace of its own, while tracing goes on (consumer/snapshot.c).
 * Returns 0, -ENOENT (no process to snapshot: none connected, or none in
 * overwrite mode) or the first I/O error.
 */
int dmn_snapshot(struct dmn *d, const char *dir, struct dmn_snap *res);
/* The one line that says what a snapshot did (ret: dmn_snapshot's). */
void dmn_snap_line(const char *dir, int ret, const struct dmn_snap *sn,
		   char *buf, size_t n);

/* Make a new directory: `want` if not empty (it must not exist), else
 * PREFIX-YYYYmmdd-HHMMSS[-N] in the current directory. The path made to
 * out. Returns 0 or a negative errno. */
int dmn_mkdir_new(const char *want, const char *prefix, char *out, size_t n);

/*
 * Finish: write what every process's rings hold (salvaging those of
 * processes that are gone), close the streams, remove the socket and its
 * directory, free. One line per process to `log` (NULL: none); totals to
 * *t.
 */
void dmn_destroy(struct dmn *d, FILE *log, struct dmn_totals *t);

#endif /* STRATA_DAEMON_DAEMON_H */
