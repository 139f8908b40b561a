/* SPDX-License-Identifier: MIT */
/* strata relay's insides, shared by its files and installed nowhere: the relay, its connections, sessions and files (docs/relay.md). */
#ifndef STRATA_RELAY_SERVER_INT_H
#define STRATA_RELAY_SERVER_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>

#include <zstd.h>

#include "relay/proto.h"
#include "relay/relay.h"

#define MAX_FILES 4096u          /* open at once per session */
#define DETACHED_MS (10 * 60 * 1000) /* a session without sender, kept */
#define TX_MAX (64u << 10)
#define MARKER ".relay-session"

struct rfile {
	uint32_t id;
	int fd;
	int dirty; /* written since its last fdatasync (--fsync) */
	char path[RELAY_MAX_PATH + 1];
};

/* One NTP-style exchange (docs/relay.md §7): the sender's clock minus the
 * relay's, and the round trip it was measured over. */
struct rsample {
	int64_t theta;  /* ns */
	uint64_t delta; /* ns */
	uint64_t t4;    /* the relay's clock when it ended */
};

#define CLOCK_WINDOW 256u /* samples kept: a minute at 4 a second */

/* A session's estimate of its sender's clock, kept across reconnects. */
struct rclock {
	struct rsample win[CLOCK_WINDOW]; /* a ring, the newest at head - 1 */
	unsigned head, n;
	uint64_t total;       /* samples ever taken */
	struct rsample best;  /* what the clock file says */
	int64_t written_ms;   /* when it was last written; 0: never */
};

struct rsession {
	struct rsession *next;
	char host[RELAY_MAX_NAME + 1], trace[RELAY_MAX_NAME + 1];
	uint8_t sid[RELAY_SID];
	int dirfd;
	int sync; /* --fsync: see srv_session_sync() */
	struct rconn *conn;
	uint64_t applied;
	struct rfile *files;
	unsigned nfiles;
	int64_t detached_ms;
	struct rclock clock;
};

struct rconn {
	struct rconn *next, *prev;
	int fd;
	struct sockaddr_storage peer;
	socklen_t peerlen;
	char peer_s[64];
	int authed, closing;
	unsigned char nonce[RELAY_NONCE];
	unsigned char *rx;
	size_t rx_len, rx_cap;
	unsigned char *tx;
	size_t tx_len, tx_off;
	int want_out, pinged;
	uint64_t last_seq, acked;
	struct rsession *sess;
	int64_t accepted_ms, deadline_ms;
	/* TSYNC (docs/relay.md §7): on when the sender's HELLO said it
	 * answers them; one outstanding at a time */
	int tsync;
	unsigned sync_burst;    /* left of the burst at connect */
	uint32_t sync_id;
	uint64_t sync_t1;       /* 0: none outstanding */
	int64_t sync_next_ms;
	uint64_t rx_ns;         /* the relay's clock when the batch arrived */
};

struct relay {
	struct relay_config cfg;
	unsigned char token[RELAY_TOKEN_MAX];
	int lfd, ep, outfd;
	unsigned port;
	struct rconn *conns; /* newest first */
	unsigned nconns;
	struct rsession *sessions;
	struct relay_stats st;
	unsigned logged_full, logged_unauth;
	ZSTD_DCtx *zd;      /* WRITEZ (one thread: one context, one buffer) */
	unsigned char *zbuf; /* RELAY_CHUNK bytes */
};

static inline int64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* server.c: the log, the frames and the loop */
void srv_log(struct relay *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* server_conn.c: connections, and the HELLO that makes a session */
int srv_tx_put(struct rconn *c, uint32_t type, const void *p, size_t n);
void srv_conn_flush(struct relay *r, struct rconn *c);
void srv_conn_free(struct relay *r, struct rconn *c);
void srv_conn_refuse(struct relay *r, struct rconn *c, int err,
		     const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void srv_do_accept(struct relay *r);
int srv_on_hello(struct relay *r, struct rconn *c, const unsigned char *p,
		 size_t n);

/* server_files.c: a session's files, and the data frames that write them */
int srv_open_beneath(int dirfd, const char *path, int flags, mode_t mode);
void srv_session_close_files(struct rsession *s);
int srv_session_sync(struct rsession *s, const char **why);
int srv_sync_dir(int sync, int dirfd);
void srv_session_free(struct relay *r, struct rsession *s);
int srv_op_create(struct rsession *s, const unsigned char *p, size_t n,
		  const char **why);
int srv_op_write(struct rsession *s, const unsigned char *p, size_t n,
		 const char **why);
int srv_op_writez(struct relay *r, struct rsession *s, const unsigned char *p,
		  size_t n, const char **why);
int srv_op_close(struct rsession *s, const unsigned char *p, size_t n,
		 const char **why);
int srv_op_metadata(struct rsession *s, const unsigned char *p, size_t n,
		    const char **why);

/* server_clock.c: the sender's clock offset (docs/relay.md §7) */
void srv_clock_start(struct rconn *c);
void srv_clock_poll(struct relay *r, struct rconn *c);
/* The clock file as the session ends: its last samples and drift. */
void srv_clock_flush(struct relay *r, struct rsession *s);
int srv_on_tsync_reply(struct relay *r, struct rconn *c,
		       const unsigned char *p, size_t n);
/* 1 if a sender may not write a file of this name (the relay's own). */
int srv_reserved_name(const char *name);

#endif
