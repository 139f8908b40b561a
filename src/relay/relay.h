/* SPDX-License-Identifier: MIT */
/* strata relay: the server that receives traces from senders over TCP and writes them under one directory (docs/relay.md). */
#ifndef STRATA_RELAY_RELAY_H
#define STRATA_RELAY_RELAY_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct relay;

struct relay_config {
	const char *listen;   /* ADDR:PORT (port 0: any, see relay_port()) */
	const char *out_dir;  /* made 0700 if missing */
	const unsigned char *token;
	size_t token_len;
	unsigned max_conns;    /* connections at once, all peers */
	unsigned max_per_peer; /* from one address */
	unsigned auth_ms;      /* from accept to a valid HELLO */
	unsigned idle_ms;      /* between two whole frames, after auth */
	int fsync;             /* what is acknowledged is on stable storage
				* (docs/relay.md §3, "--fsync") */
	FILE *log;             /* one line per session and refusal; NULL: none */
};

struct relay_stats {
	uint64_t accepted, refused_full, evicted, auth_failed, proto_errors,
		timeouts, name_busy, sessions, ended, bytes;
};

/*
 * Bind and listen on cfg->listen, open cfg->out_dir. Returns 0 with *out,
 * or a negative errno with *why naming the step that failed. Sets
 * *nonlocal when the address is not a loopback one (the caller warns:
 * the stream is not encrypted).
 */
int relay_create(const struct relay_config *cfg, struct relay **out,
		 int *nonlocal, const char **why);
/* The port listened on (after a port 0). */
unsigned relay_port(const struct relay *r);
/* Serve until *stop is set (checked at least every 250 ms). Returns 0,
 * or a negative errno if the event loop itself fails. */
int relay_run(struct relay *r, volatile sig_atomic_t *stop);
/* Close every connection and file (sessions not ended stay resumable by
 * a relay started again on the same directory), free. */
void relay_destroy(struct relay *r, struct relay_stats *st);

#endif /* STRATA_RELAY_RELAY_H */
