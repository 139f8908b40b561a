/* SPDX-License-Identifier: MIT */
/* The relay sender's insides, shared by its files and installed nowhere: the sender, its queued frames and its files (docs/relay.md §5). */
#ifndef STRATA_RELAY_SENDER_INT_H
#define STRATA_RELAY_SENDER_INT_H

#include <netdb.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <zstd.h>

#include "common/format.h"
#include "consumer/consumer.h"
#include "relay/proto.h"
#include "relay/sender.h"

#define HASH 1024u
#define PING_MS 2000
#define DEAD_MS 15000     /* nothing from the relay while data is out */
#define CONNECT_MS 3000
#define BACKOFF_MIN 100
#define BACKOFF_MAX 2000

enum { K_OTHER, K_STREAM, K_INDEX, K_META };

/* One frame, kept until the relay acknowledges its seq (resent after a
 * reconnect otherwise). */
struct msg {
	struct msg *next;
	uint64_t seq;
	uint32_t type, id;
	uint64_t off, wlen; /* WRITE: skipped on resume if the relay has it */
	int packet;         /* the last frame of a stream packet */
	size_t len;         /* of frame[] */
	size_t cap;         /* bytes allocated for frame[] (a spare's) */
	unsigned char frame[];
};

/* A file of the local trace that the relay is told of. */
struct sfile {
	struct sfile *hnext;
	char *path; /* local, as the consumer names it (the key) */
	const char *rel;
	uint32_t id;
	int kind, open, lossy;
	uint64_t close_seq;   /* of its CLOSE: open at the relay until acked */
	struct sfile *stream; /* an index's stream file */
	/* stream files (docs/relay.md §5, "Losses") */
	uint64_t psize, remote_next;
	int kept_any, drop_pending, have_first;
	/* 1 when its packet 0 was dropped: every packet after it at the
	 * relay is numbered one more, so that the lead can take number 0
	 * and the gap still counts every packet lost */
	uint64_t seq_bias;
	unsigned char first_drop[STRATA_PACKET_HEADER];
	unsigned char last_drop[STRATA_PACKET_HEADER];
};

enum { S_IDLE, S_CONNECTING, S_CHALLENGE, S_WELCOME, S_STREAMING };

struct relay_sender {
	struct cons_sink sink;
	char addr[300];
	unsigned char token[RELAY_TOKEN_MAX];
	size_t token_len;
	char root[4096];
	size_t rootlen;
	char host[RELAY_MAX_NAME + 1], trace[RELAY_MAX_NAME + 1];
	uint8_t sid[RELAY_SID];
	FILE *log;
	struct addrinfo *ai;
	ZSTD_CCtx *zc;  /* the thread's; NULL: no compression */
	int zlevel;
	unsigned char *zbuf; /* ZSTD_compressBound(RELAY_CHUNK) bytes */
	size_t zcap;

	pthread_t thread;
	int started; /* relay_sender_start() */
	pthread_mutex_t mu;
	int evfd;
	/* under mu: the queue, its bytes, the counters, the files */
	struct msg *head, *tail;
	size_t queued, budget, hard;
	uint64_t next_seq, acked; /* the last seq given, and acknowledged */
	uint32_t next_id;
	int stop, ending, end_acked, abandoned;
	/* the thread sleeps without looking at the queue again: a new
	 * frame must wake it (snd_enqueue_locked(), pump()) */
	int idle;
	/* large frames freed, kept for the next packets (sender_queue.c) */
	struct msg *spare;
	size_t spare_bytes;
	struct relay_sender_stats st;
	struct sfile *hash[HASH];

	/* the thread's own */
	int fd, state, welcomed;
	struct msg *pre;    /* CREATEs (seq 0) sent before the cursor */
	struct msg *cursor; /* next to send; NULL: all sent */
	size_t cursor_off;
	int64_t retry_at, backoff, last_rx, last_tx, conn_at;
	unsigned char rx[RELAY_HDR + 65536];
	size_t rx_len;
	uint64_t *have; /* WELCOME: (id, size) pairs, sorted by id */
	size_t nhave;
	int outage_logged;
	/* a TSYNC to answer (docs/relay.md §7), or a PING due: sent
	 * between two frames, ahead of the queue, from ctl */
	int sync_pending, ping_due;
	uint32_t sync_id;
	uint64_t sync_t1, sync_t2, rx_ns;
	unsigned char ctl[RELAY_HDR + RELAY_TSYNC_REPLY_LEN];
	size_t ctl_len, ctl_off;
};

static inline int64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* sender_queue.c: the queue (any thread, under mu) */
void snd_wake(struct relay_sender *s);
struct msg *snd_msg_new(struct relay_sender *s, uint32_t type, size_t plen);
void snd_msg_free_locked(struct relay_sender *s, struct msg *m);
void snd_spare_free(struct relay_sender *s);
int snd_enqueue_locked(struct relay_sender *s, struct msg *m, int droppable);
int snd_q_create(struct relay_sender *s, struct sfile *f);
int snd_q_write(struct relay_sender *s, struct sfile *f, uint64_t off,
		const unsigned char *buf, size_t len, int droppable, int packet);
int snd_q_close(struct relay_sender *s, struct sfile *f, uint64_t size,
		const char *final, int unlink_it);

/* sender_sink.c: the files (under mu) and the consumer's sink */
struct sfile *snd_file_get(struct relay_sender *s, const char *path);
const char *snd_rel_of(const struct relay_sender *s, const char *path);
struct sfile *snd_file_add(struct relay_sender *s, const char *path, int kind);
void snd_sink_init(struct relay_sender *s);

/* sender_net.c: the thread */
void *snd_main(void *arg);

#endif
