/* SPDX-License-Identifier: MIT */
/* The session daemon: accepts traced processes, maps their rings, writes their streams. */
#ifndef STRATA_SESSION_DAEMON_H
#define STRATA_SESSION_DAEMON_H

#include <stdint.h>
#include <stdio.h>

struct sessd;

struct sessd_totals {
	uint64_t procs;      /* processes that registered */
	uint64_t events;     /* written, strata's own records excluded */
	uint64_t bytes;
	uint64_t discarded;  /* counted by the processes (ring full, ...) */
	uint64_t lost_io;    /* recorded but not written (I/O error) */
	uint64_t salvaged;   /* packets closed by the daemon after a death */
	uint64_t unsalvageable;
	uint64_t crashed;    /* processes that ended without BYE */
	uint64_t unsent;     /* rings a process could not hand over */
	int err;             /* first I/O error (negative errno) */
};

/*
 * Create a session writing to `trace_dir` (must exist): a private
 * directory (0700) under $TMPDIR holding the listening socket (0600).
 * Prints nothing; returns 0 or a negative errno with *what naming the
 * failed step.
 */
int sessd_create(const char *trace_dir, struct sessd **out, const char **what);

/* The socket path for STRATA_SESSION. */
const char *sessd_socket(const struct sessd *d);

/* Wait up to timeout_ms for messages, handle them, and drain every ring.
 * Returns the number of packets written (0: idle). */
unsigned sessd_step(struct sessd *d, int timeout_ms);

/* Processes still connected. */
unsigned sessd_live(const struct sessd *d);

/*
 * Finish: write what every process's rings hold (salvaging those of
 * processes that are gone), close the streams, remove the socket and its
 * directory, free. One line per process to `log` (NULL: none); totals to
 * *t.
 */
void sessd_destroy(struct sessd *d, FILE *log, struct sessd_totals *t);

#endif /* STRATA_SESSION_DAEMON_H */
