/* SPDX-License-Identifier: MIT */
/* The relay's sender: creating it, starting its thread, sweeping the files the sink did not see, and finishing; the queue, sink and thread are in sender_queue.c, sender_sink.c and sender_net.c (docs/relay.md §3, §5). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "relay/sender_int.h"

/* ---- create, sweep, finish ---------------------------------------------- */

static void clean_name(const char *in, char *out)
{
	size_t n = 0;

	for (; in[n] && n < RELAY_MAX_NAME; n++) {
		char c = in[n];
		out[n] = relay_name_ok(&c, 1) || c == '.' ? c : '-';
	}
	out[n] = 0;
	if (!n || out[0] == '.')
		out[0] = n ? '_' : 0;
	if (!out[0])
		strcpy(out, "trace");
}

int relay_sender_create(const struct relay_sender_config *cfg,
			struct relay_sender **out, const char **why)
{
	char host[256], port[16];
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_NUMERICSERV};
	struct relay_sender *s;
	int ret;

	*why = "--relay wants HOST:PORT";
	if (relay_split_addr(cfg->addr, host, sizeof(host), port, sizeof(port)))
		return -EINVAL;
	*why = "bad token";
	if (cfg->token_len > RELAY_TOKEN_MAX || cfg->token_len < RELAY_TOKEN_MIN)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->fd = -1;
	s->evfd = -1;
	snprintf(s->addr, sizeof(s->addr), "%s", cfg->addr);
	memcpy(s->token, cfg->token, cfg->token_len);
	s->token_len = cfg->token_len;
	snprintf(s->root, sizeof(s->root), "%s", cfg->root);
	s->rootlen = strlen(s->root);
	while (s->rootlen > 1 && s->root[s->rootlen - 1] == '/')
		s->root[--s->rootlen] = 0;
	char hn[256] = "";
	if (cfg->host)
		snprintf(hn, sizeof(hn), "%s", cfg->host);
	else if (gethostname(hn, sizeof(hn) - 1) < 0)
		strcpy(hn, "host");
	clean_name(hn, s->host);
	const char *base = cfg->trace;
	if (!base) {
		base = strrchr(s->root, '/');
		base = base ? base + 1 : s->root;
	}
	clean_name(base, s->trace);
	s->log = cfg->log;
	s->budget = cfg->budget ? cfg->budget : (64u << 20);
	s->hard = 4 * s->budget + (16u << 20);
	snd_sink_init(s);
	pthread_mutex_init(&s->mu, NULL);
	*why = "no memory for zstd";
	if (cfg->zstd_level) {
		s->zlevel = cfg->zstd_level;
		s->zcap = ZSTD_compressBound(RELAY_CHUNK);
		if (!(s->zc = ZSTD_createCCtx()) || !(s->zbuf = malloc(s->zcap))) {
			ret = -ENOMEM;
			goto fail;
		}
	}
	*why = "cannot resolve the relay's address";
	if ((ret = getaddrinfo(host, port, &hints, &s->ai))) {
		ret = ret == EAI_SYSTEM ? -errno : -EADDRNOTAVAIL;
		s->ai = NULL;
		goto fail;
	}
	*why = "cannot make the session id";
	if ((ret = relay_random(s->sid, RELAY_SID)))
		goto fail;
	*why = "cannot start the sender thread";
	s->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->evfd < 0) {
		ret = -errno;
		goto fail;
	}
	*out = s;
	return 0;
fail:
	ZSTD_freeCCtx(s->zc);
	free(s->zbuf);
	if (s->ai)
		freeaddrinfo(s->ai);
	if (s->evfd >= 0)
		close(s->evfd);
	free(s);
	return ret;
}

int relay_sender_start(struct relay_sender *s)
{
	int ret = -pthread_create(&s->thread, NULL, snd_main, s);

	if (ret)
		return ret;
	s->started = 1;
	pthread_setname_np(s->thread, "strata-relay");
	return 0;
}

const struct cons_sink *relay_sender_sink(struct relay_sender *s)
{
	return &s->sink;
}

static struct relay_sender *sweep_s;
static int64_t sweep_deadline;
static int sweep_n;

/* Wait for room for n bytes in the queue, until the deadline. */
static int wait_room(struct relay_sender *s, size_t n)
{
	for (;;) {
		pthread_mutex_lock(&s->mu);
		int ok = s->queued + n + 64 <= s->budget, ab = s->abandoned;
		pthread_mutex_unlock(&s->mu);
		if (ok)
			return 0;
		if (ab || !s->started || now_ms() > sweep_deadline)
			return -ETIMEDOUT;
		usleep(5000);
	}
}

static int sweep_one(const char *path, const struct stat *st, int type,
		     struct FTW *ftw)
{
	struct relay_sender *s = sweep_s;
	const char *rel = snd_rel_of(s, path);
	(void)ftw;

	if (s->abandoned)
		return 1; /* nftw stops */
	if (type != FTW_F || !S_ISREG(st->st_mode) || !rel)
		return 0;
	/* dot files and dot directories are the writers' own (format.md §1) */
	if (rel[0] == '.' || strstr(rel, "/."))
		return 0;
	pthread_mutex_lock(&s->mu);
	struct sfile *f = snd_file_get(s, path);
	int sent = f != NULL;
	if (!sent && (f = snd_file_add(s, path, K_OTHER)))
		snd_q_create(s, f);
	pthread_mutex_unlock(&s->mu);
	if (sent || !f)
		return 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	uint64_t off = 0;
	static unsigned char buf[RELAY_CHUNK];
	while (fd >= 0) {
		ssize_t n = pread(fd, buf, sizeof(buf), (off_t)off);
		if (n <= 0 || wait_room(s, (size_t)n))
			break;
		pthread_mutex_lock(&s->mu);
		snd_q_write(s, f, off, buf, (size_t)n, 0, 0);
		pthread_mutex_unlock(&s->mu);
		off += (uint64_t)n;
	}
	if (fd >= 0)
		close(fd);
	pthread_mutex_lock(&s->mu);
	snd_q_close(s, f, off, NULL, 0);
	f->open = 0;
	s->st.files_swept++;
	pthread_mutex_unlock(&s->mu);
	sweep_n++;
	return 0;
}

int relay_sender_sweep(struct relay_sender *s, unsigned timeout_ms)
{
	sweep_s = s;
	sweep_n = 0;
	sweep_deadline = now_ms() + timeout_ms;
	int ret = nftw(s->root, sweep_one, 16, FTW_PHYS);
	if (ret < 0)
		return -errno;
	return ret ? -ECONNABORTED : sweep_n;
}

void relay_sender_finish(struct relay_sender *s, unsigned timeout_ms,
			 struct relay_sender_stats *st)
{
	int64_t until = now_ms() + timeout_ms;

	pthread_mutex_lock(&s->mu);
	struct msg *m = snd_msg_new(s, RELAY_END, 8);
	if (m)
		snd_enqueue_locked(s, m, 0);
	pthread_mutex_unlock(&s->mu);
	for (;;) {
		pthread_mutex_lock(&s->mu);
		int done = s->end_acked || s->abandoned || !s->started;
		pthread_mutex_unlock(&s->mu);
		if (done || now_ms() >= until)
			break;
		usleep(10000);
	}
	pthread_mutex_lock(&s->mu);
	s->stop = 1;
	pthread_mutex_unlock(&s->mu);
	snd_wake(s);
	if (s->started)
		pthread_join(s->thread, NULL);
	/* what never reached the relay is lost too */
	while (s->head) {
		m = s->head;
		s->head = m->next;
		s->st.packets_lost += m->packet;
		free(m);
	}
	snd_spare_free(s);
	s->st.complete = s->end_acked;
	if (!s->end_acked && !s->st.error[0])
		snprintf(s->st.error, sizeof(s->st.error),
			 "the relay did not acknowledge everything in %u ms",
			 timeout_ms);
	if (st)
		*st = s->st;
	for (unsigned h = 0; h < HASH; h++)
		for (struct sfile *f = s->hash[h], *n; f; f = n) {
			n = f->hnext;
			free(f->path);
			free(f);
		}
	free(s->have);
	ZSTD_freeCCtx(s->zc);
	free(s->zbuf);
	freeaddrinfo(s->ai);
	close(s->evfd);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

void relay_sender_end(struct relay_sender *s, unsigned timeout_ms, const char *addr,
		      const char *label, const char *local)
{
	struct relay_sender_stats st;

	relay_sender_sweep(s, timeout_ms);
	relay_sender_finish(s, timeout_ms, &st);
	fprintf(stderr, "strata: relay %s: %s%s%llu packets sent, %llu lost, %llu bytes "
		"(%llu on the wire), %llu other files, %llu connection%s\n", addr,
		label ? label : "", label ? ": " : "", (unsigned long long)st.packets_sent,
		(unsigned long long)st.packets_lost, (unsigned long long)st.bytes_sent,
		(unsigned long long)st.wire_bytes, (unsigned long long)st.files_swept,
		(unsigned long long)st.connects, st.connects == 1 ? "" : "s");
	if (!st.complete)
		fprintf(stderr, "strata: warning: relay %s: the relay's copy%s%s is "
			"incomplete: %s%s%s%s\n", addr, label ? " of " : "", label ? label : "",
			st.error, local ? "; the local trace " : "", local ? local : "",
			local ? " is whole" : "");
}
