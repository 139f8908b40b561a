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
	char path[RELAY_MAX_PATH + 1];
};

struct rsession {
	struct rsession *next;
	char host[RELAY_MAX_NAME + 1], trace[RELAY_MAX_NAME + 1];
	uint8_t sid[RELAY_SID];
	int dirfd;
	struct rconn *conn;
	uint64_t applied;
	struct rfile *files;
	unsigned nfiles;
	int64_t detached_ms;
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

#endif
