/* SPDX-License-Identifier: MIT */
/* The relay's estimate of each sender's clock offset: NTP-style TSYNC exchanges, the minimum-delay sample of a sliding window, and the clock file a reader applies (docs/relay.md §7). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "relay/server_int.h"

#define SYNC_BURST 16u      /* exchanges back to back at connect */
#define SYNC_EVERY_MS 1000  /* then a round a second, */
#define SYNC_ROUND 4u       /* of this many back to back: the first wakes
			     * two idle ends (here a round trip of 75 to
			     * 170 us, and up to 27 us of offset error
			     * from the unequal wake-ups); the next ones
			     * find both awake (17 us) */
#define SYNC_LOST_MS 5000   /* an answer later than this is not waited for */
#define REWRITE_MS 5000     /* the file's "measured" refreshed this often */

int srv_reserved_name(const char *name)
{
	return !strcmp(name, MARKER) || !strcmp(name, RELAY_CLOCK_FILE) ||
	       !strcmp(name, RELAY_CLOCK_TMP);
}

void srv_clock_start(struct rconn *c)
{
	c->sync_burst = SYNC_BURST;
	c->sync_t1 = 0;
	c->sync_next_ms = 0;
}

/* Send the next TSYNC when one is due and none is outstanding. Only on an
 * empty send buffer: t1 is stamped as the frame goes out, not while it
 * waits behind ACKs (such a wait would only lengthen the round trip, and
 * the sample be discarded, but it would waste it). */
void srv_clock_poll(struct relay *r, struct rconn *c)
{
	int64_t now = now_ms();

	if (!c->authed || !c->tsync || !c->sess || c->closing)
		return;
	if (c->sync_t1 && now - c->sync_next_ms < SYNC_LOST_MS)
		return;
	if (now < c->sync_next_ms || c->tx_off < c->tx_len)
		return;
	unsigned char p[RELAY_TSYNC_LEN];
	c->sync_id++;
	c->sync_next_ms = now; /* when it left, for SYNC_LOST_MS */
	c->sync_t1 = relay_mono_ns();
	put32(p, c->sync_id);
	put64(p + 4, c->sync_t1);
	if (srv_tx_put(c, RELAY_TSYNC, p, sizeof(p)))
		c->sync_t1 = 0;
	srv_conn_flush(r, c);
}

/*
 * The drift of the sender's clock against the relay's, in parts per
 * billion: the least-squares slope of offset over time through the good
 * samples of the window (a round trip within twice the best's, plus 20 us
 * for the wake-ups of two idle ends). NAN until at least 4 of them
 * span 10 s: over less, the samples' noise (microseconds) outweighs any
 * drift a clock has (tens of ppm at most).
 */
static double clock_drift(const struct rclock *k)
{
	uint64_t lim = 2 * k->best.delta + 20000, t0 = k->best.t4;
	double sx = 0, sy = 0, sxx = 0, sxy = 0, lo = 0, hi = 0;
	unsigned n = 0;

	for (unsigned i = 0; i < k->n; i++) {
		const struct rsample *x = &k->win[i];
		if (x->delta > lim)
			continue;
		double dx = (double)(int64_t)(x->t4 - t0) / 1e9; /* s */
		double dy = (double)(x->theta - k->best.theta);  /* ns */
		sx += dx, sy += dy, sxx += dx * dx, sxy += dx * dy;
		lo = n && lo < dx ? lo : dx;
		hi = n && hi > dx ? hi : dx;
		n++;
	}
	double den = n * sxx - sx * sx;
	if (n < 4 || hi - lo < 10 || den <= 0)
		return NAN;
	return (n * sxy - sx * sy) / den; /* ns per s: ppb */
}

/* CLOCK_REALTIME - CLOCK_MONOTONIC of the relay: the wall clock that a
 * reader shows for times on the relay's base, never a sender's. */
static int64_t wall_minus_mono(void)
{
	struct timespec w;
	uint64_t m = relay_mono_ns();
	clock_gettime(CLOCK_REALTIME, &w);
	return (int64_t)w.tv_sec * 1000000000 + w.tv_nsec - (int64_t)m;
}

/* The clock file: written beside the trace and renamed over the last
 * one, so that a reader sees a whole one (as METADATA, §2). */
static void clock_write(struct relay *r, struct rsession *s)
{
	const struct rsample *b = &s->clock.best;
	double drift = clock_drift(&s->clock);
	char host[256] = "", dl[48] = "";
	char text[512];

	if (!isnan(drift))
		snprintf(dl, sizeof(dl), "drift_ppb %.0f\n", drift);
	gethostname(host, sizeof(host) - 1);
	int n = snprintf(text, sizeof(text),
			 "# strata relay: the sender's clock minus the relay's "
			 "(docs/relay.md §7)\n"
			 "clock CLOCK_MONOTONIC\n"
			 "offset_ns %lld\n"
			 "uncertainty_ns %llu\n"
			 "rtt_ns %llu\n"
			 "measured_ns %llu\n"
			 "samples %llu\n"
			 "%s"
			 "relay_wall_ns %lld\n"
			 "sender %s\n"
			 "relay %s\n",
			 (long long)b->theta, (unsigned long long)(b->delta + 1) / 2,
			 (unsigned long long)b->delta, (unsigned long long)b->t4,
			 (unsigned long long)s->clock.total, dl, (long long)wall_minus_mono(),
			 s->host, host);
	int fd = openat(s->dirfd, RELAY_CLOCK_TMP,
			O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	/* --fsync: part of the copy as much as the sender's files */
	int ok = fd >= 0 && write(fd, text, (size_t)n) == n &&
		 (!s->sync || fdatasync(fd) == 0);
	if (fd >= 0)
		close(fd);
	if (ok)
		ok = renameat(s->dirfd, RELAY_CLOCK_TMP, s->dirfd,
			      RELAY_CLOCK_FILE) == 0 &&
		     !srv_sync_dir(s->sync, s->dirfd);
	if (!ok && !s->clock.written_ms)
		srv_log(r, "%s/%s: cannot write %s: %s (offsets not recorded)",
			s->host, s->trace, RELAY_CLOCK_FILE, strerror(errno));
	s->clock.written_ms = now_ms();
}

void srv_clock_flush(struct relay *r, struct rsession *s)
{
	if (s->clock.total)
		clock_write(r, s);
}

/* The sample of least round trip in the window: its path was the least
 * queued, so the two directions' delays were closest to equal, and its
 * offset is the best estimate (Mills, NTP's clock filter). */
static void clock_update(struct relay *r, struct rsession *s)
{
	struct rclock *k = &s->clock;
	const struct rsample *best = NULL;

	for (unsigned i = 0; i < k->n; i++)
		if (!best || k->win[i].delta < best->delta)
			best = &k->win[i];
	int changed = best->t4 != k->best.t4;
	k->best = *best;
	if (changed || !k->written_ms || now_ms() - k->written_ms >= REWRITE_MS)
		clock_write(r, s);
}

int srv_on_tsync_reply(struct relay *r, struct rconn *c,
		       const unsigned char *p, size_t n)
{
	struct rsession *s = c->sess;

	if (n != RELAY_TSYNC_REPLY_LEN || !c->tsync)
		return -EPROTO;
	uint64_t t1 = get64(p + 4), t2 = get64(p + 12), t3 = get64(p + 20);
	uint64_t t4 = c->rx_ns;
	if (!s || !c->sync_t1 || get32(p) != c->sync_id || t1 != c->sync_t1)
		return 0; /* late, after a timeout: not ours any more */
	c->sync_t1 = 0;
	if (c->sync_burst) {
		c->sync_burst--;
		c->sync_next_ms = now_ms();
	} else {
		c->sync_next_ms = now_ms() + SYNC_EVERY_MS;
		c->sync_burst = SYNC_ROUND - 1;
	}
	/* the sender's time inside the exchange cannot exceed the whole */
	if (t3 < t2 || t4 < t1 || t3 - t2 > t4 - t1)
		return 0;
	struct rclock *k = &s->clock;
	struct rsample *x = &k->win[k->head];
	x->delta = (t4 - t1) - (t3 - t2);
	/* summed unsigned: a sender's nonsense wraps, never overflows */
	x->theta = (int64_t)((t2 - t1) + (t3 - t4)) / 2;
	x->t4 = t4;
	k->head = (k->head + 1) % CLOCK_WINDOW;
	if (k->n < CLOCK_WINDOW)
		k->n++;
	k->total++;
	clock_update(r, s);
	return 0;
}
