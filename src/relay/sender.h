/* SPDX-License-Identifier: MIT */
/* The relay's sender: streams what a consumer writes to a strata relay, on a thread of its own, never blocking the consumer (docs/relay.md §5). */
#ifndef STRATA_RELAY_SENDER_H
#define STRATA_RELAY_SENDER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct cons_sink;
struct relay_sender;

struct relay_sender_config {
	const char *addr;      /* the relay: HOST:PORT */
	const unsigned char *token;
	size_t token_len;
	const char *root;      /* the local trace directory, as the consumer
				* names it: files below it are sent */
	const char *host;      /* NULL: gethostname() */
	const char *trace;     /* NULL: root's last component */
	size_t budget;         /* bytes queued at most; 0: 64 MiB */
	int zstd_level;        /* compress file bytes with zstd; 0: not */
	FILE *log;             /* connection changes; NULL: none */
};

struct relay_sender_stats {
	uint64_t packets_sent;  /* stream packets the relay acknowledged */
	uint64_t packets_lost;  /* dropped (queue full) or never acknowledged */
	uint64_t bytes_sent;    /* file bytes acknowledged */
	uint64_t wire_bytes;    /* bytes written to sockets (resent ones too) */
	uint64_t files_swept;   /* sent whole by relay_sender_sweep() */
	uint64_t connects;      /* connections that were welcomed */
	int complete;           /* the relay acknowledged the END */
	char error[300];        /* why it gave up, or "" */
};

/*
 * Resolve the relay's address and make the queue: the sink takes frames
 * from now on. Returns 0 with *out, or a negative errno with *why (a bad
 * address, no memory).
 */
int relay_sender_create(const struct relay_sender_config *cfg,
			struct relay_sender **out, const char **why);
/*
 * Start the sender's thread, which connects (and reconnects, with
 * backoff) by itself. Separate from create so that a caller that forks
 * children which do not exec at once (the state dump) forks before it
 * has a second thread. Returns 0 or a negative errno (no thread).
 */
int relay_sender_start(struct relay_sender *s);

/* The sink to give the consumers (cons_config.sink, dmn_config.sink):
 * its callbacks only copy into the queue; a full queue drops the packet
 * and counts it (docs/relay.md §5, "Losses"). */
const struct cons_sink *relay_sender_sink(struct relay_sender *s);

/* Once the recording is over: send every regular file below root that
 * no consumer wrote (the state dump, the kernel and sample sub-traces,
 * `unrecorded`), waiting for room in the queue, at most timeout_ms in
 * all. Returns the number of files queued, or a negative errno. */
int relay_sender_sweep(struct relay_sender *s, unsigned timeout_ms);

/* Send END and wait up to timeout_ms for the relay to acknowledge
 * everything; stop the thread, free. Counts to *st (NULL: none). */
void relay_sender_finish(struct relay_sender *s, unsigned timeout_ms,
			 struct relay_sender_stats *st);

/* The end of a sender, as record and the daemon end one: sweep, finish
 * (timeout_ms for each), and one line on stderr of what went ("strata:
 * relay ADDR: [LABEL: ]N packets sent, M lost, ..."), and a warning when
 * the relay's copy is incomplete (naming `local`, the whole local trace,
 * when not NULL). */
void relay_sender_end(struct relay_sender *s, unsigned timeout_ms, const char *addr,
		      const char *label, const char *local);

#endif /* STRATA_RELAY_SENDER_H */
