/* SPDX-License-Identifier: MIT */
/* The consumer's loop: draining complete packets from rings into a CTF stream directory. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/mono.h"
#include "common/tfile.h"
#include "consumer/cons_int.h"
#include "lib/statedump.h"

/* Hand the ring's packets before `consumed` back to its writers, once
 * the stream has written those still waiting in its batch. */
static void release(struct cons *c, struct cons_stream *s, uint64_t consumed)
{
	cons_stream_flush(c, s);
	/* Pairs with the writers' acquire loads of `consumed` in
	 * slot_check() and block_wait() (ring/slow.c): the packet was
	 * read before its slot is reused. */
	strata_store_release(&s->ring->ctl->consumed, consumed);
}

/* Discard mode: write every complete packet from `consumed` on, and
 * release each one to the writers (ring.md §4). Returns packets written. */
unsigned cons_drain_ring(struct cons *c, struct cons_stream *s)
{
	struct strata_ring *r = s->ring;
	uint64_t consumed = strata_load_relaxed(&r->ctl->consumed);
	uint64_t released = consumed;
	unsigned n = 0;

	/* Bounded: another process's ring could claim anything. `write`
	 * (acquire) pairs with the writers' release CAS of it (ring.md §2
	 * F; rseq: §7), the commit counts with their commits (G). */
	while (n <= r->nmask &&
	       consumed < strata_load_acquire(&r->ctl->write) &&
	       ring_packet_complete(r, consumed)) {
		cons_write_packet(c, s, consumed, 1);
		consumed += r->psize;
		n++;
		if (cons_stream_batch_waits(s, consumed))
			continue;
		release(c, s, consumed);
		released = consumed;
	}
	if (released != consumed)
		release(c, s, consumed);
	return n;
}

/* cons_drain_ring(), and whether the ring still holds a packet closed
 * before the call but not written (a writer between reserve and commit):
 * then the live beacon waits (live_beacon()). */
static unsigned drain_behind(struct cons *c, struct cons_stream *s, int *behind)
{
	struct strata_ring *r = s->ring;
	/* before the drain: every packet closed by now is before `w` */
	uint64_t w = strata_load_acquire(&r->ctl->write);
	unsigned work = cons_drain_ring(c, s);

	*behind |= strata_load_relaxed(&r->ctl->consumed) < ring_packet_begin(r, w);
	return work;
}

/*
 * Fault in a fresh ring ahead of its writers (ring.md §1, "First lap"):
 * a page fault costs a writer about as much as a hundred events here,
 * one every 256 events of 16 bytes. Like read-ahead: past the packet
 * being written, as much again as the packets already written, half a
 * ring at most, so that a ring that is hardly used stays small; until
 * half of the first lap is written, which makes the window reach the
 * ring's end, every packet close wakes the consumer (§8) to move it on.
 * A megabyte at a time, between drains, so that a big ring does not hold
 * up the draining of the others. Not for a snapshot, whose rings nobody
 * writes any more.
 */
#define PREFAULT_STEP (UINT64_C(1) << 20)

static unsigned prefault(struct cons *c, struct cons_stream *s)
{
	struct strata_ring *r = s->ring;
	uint64_t size = r->bufmask + 1, done, to, len;

	if (s->faulted >= size || c->snapshot)
		return 0;
	done = ring_packet_begin(r, strata_load_relaxed(&r->ctl->write));
	to = done + r->psize + (done < size / 2 ? done : size / 2);
	if (to > size)
		to = size; /* past the first lap: every page was touched */
	if (to <= s->faulted)
		return 0;
	len = to - s->faulted < PREFAULT_STEP ? to - s->faulted : PREFAULT_STEP;
	if (ring_prefault(r, s->faulted, len))
		len = size - s->faulted; /* refused: the writers fault instead */
	s->faulted += len;
	return 1;
}

static struct cons_stream *stream_of(struct cons *c, unsigned cpu)
{
	struct strata_ring *r;

	if (c->streams[cpu] || c->passive)
		return c->streams[cpu];
	/* pairs with the publishing CAS in ring_get_or_create() (shm.c) */
	r = strata_load_acquire(&strata_rings[cpu]);
	if (!r)
		return NULL;
	c->streams[cpu] = cons_stream_open(c, r);
	if (c->streams[cpu] && cpu + 1 > c->max_cpu)
		c->max_cpu = cpu + 1;
	return c->streams[cpu];
}

/* A calibration record on the consumer's own CPU ring (format.md §4). */
static void log_calib(struct cons *c)
{
	struct strata_rsv r;
	struct clock_point p;

	clock_point_take(&p);
	c->cp_last = p;
	clock_fit(&c->cp_first, &c->cp_last, &c->freq_hz, &c->offset_ns);
	strata_add_fetch_relaxed(&c->internal, 1);
	if (!strata_reserve(&r, STRATA_ID(0, STRATA_ID_CALIB), 4))
		return;
	r.p[0] = p.mono_ns;
	r.p[1] = p.real_ns;
	r.p[2] = c->freq_hz;
	strata_commit(&r);
}

/* Has a packet completed on one of our rings that we have not drained?
 * Never in overwrite mode, which drains nothing until the end. */
static int cons_pending(struct cons *c)
{
	if (c->mode == STRATA_MODE_OVERWRITE)
		return 0;
	for (unsigned cpu = 0; cpu < c->max_cpu; cpu++) {
		struct cons_stream *s = c->streams[cpu];
		if (!s)
			continue;
		struct strata_ring *r = s->ring;
		uint64_t consumed = strata_load_relaxed(&r->ctl->consumed);
		/* as in cons_drain_ring() */
		if (consumed < strata_load_acquire(&r->ctl->write) &&
		    ring_packet_complete(r, consumed))
			return 1;
		/* Another process flushed since cons_poll() (live_poll()):
		 * its beacon is due. Relaxed: after cons_arm()'s fence. */
		if (c->external &&
		    strata_load_relaxed(&r->ctl->live_time) != s->live_seen)
			return 1;
	}
	return 0;
}

/* Does the consumer wait for this ring's packets: to drain them, or in
 * overwrite mode to fault in its first lap (prefault())? */
static int bell_wanted(const struct cons *c, const struct cons_stream *s)
{
	return c->mode != STRATA_MODE_OVERWRITE || s->faulted <= s->ring->bufmask;
}

int cons_arm(struct cons *c)
{
	for (unsigned cpu = 0; cpu < c->max_cpu; cpu++) {
		struct cons_stream *s = c->streams[cpu];
		if (s && bell_wanted(c, s))
			strata_store_relaxed(&s->ring->ctl->cwait, 1);
	}
	/* Our cwait stores, then the commit counts; a closer commits, then
	 * reads cwait: pairs with the fence of ring_close() (ring/slow.c,
	 * ring.md §8). */
	strata_fence_seq_cst();
	return !c->snapshot && cons_pending(c);
}

void cons_disarm(struct cons *c)
{
	for (unsigned cpu = 0; cpu < c->max_cpu; cpu++)
		if (c->streams[cpu])
			strata_store_relaxed(&c->streams[cpu]->ring->ctl->cwait, 0);
}

/*
 * Sleep until a packet closes on a ring we drain, a ring is created or
 * the consumer is stopped (ring_bell moves from `bell`, read before the
 * caller looked for new rings and at c->running), or for `ms` (ring.md
 * §8). Where futex_waitv is missing (Linux < 5.16, or refused by a
 * seccomp filter), or with more rings than one call can wait on, it
 * polls every millisecond instead.
 */
static void cons_sleep(struct cons *c, uint32_t bell, unsigned ms)
{
#if defined(SYS_futex_waitv) && defined(FUTEX_WAITV_MAX)
	static int no_waitv;
	struct futex_waitv wv[FUTEX_WAITV_MAX];
	unsigned n = 0, cpu;

	if (!no_waitv) {
		memset(wv, 0, sizeof(wv));
		wv[n].val = bell;
		wv[n].uaddr = (uintptr_t)&ring_bell;
		wv[n++].flags = FUTEX_32 | FUTEX_PRIVATE_FLAG;
	}
	for (cpu = 0; n && cpu < c->max_cpu; cpu++) {
		struct cons_stream *s = c->streams[cpu];
		if (!s || !bell_wanted(c, s))
			continue;
		if (n == FUTEX_WAITV_MAX) {
			n = 0; /* too many rings: poll */
			break;
		}
		wv[n].val = 1;
		wv[n].uaddr = (uintptr_t)&s->ring->ctl->cwait;
		wv[n++].flags = FUTEX_32; /* shared: the ring is a shared mapping */
	}
	if (n && !cons_arm(c)) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += ms / 1000;
		ts.tv_nsec += (long)(ms % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		if (syscall(SYS_futex_waitv, wv, n, 0, &ts, CLOCK_MONOTONIC) < 0 &&
		    errno != EAGAIN && errno != ETIMEDOUT && errno != EINTR)
			no_waitv = 1;
	}
	if (n) {
		cons_disarm(c);
		return;
	}
#else
	(void)bell;
	(void)ms;
#endif
	struct timespec d = {0, 1000000}; /* 1 ms */
	nanosleep(&d, NULL);
}

/*
 * The live timer's beacon (docs/record.md, "Live reading"): after a flush
 * taken at trace time `before`, once every packet it closed is written
 * (no ring holds a closed packet undrained), this process's rings hold
 * nothing unwritten from before `before`. Written to DIR/.live-time for a
 * follower: the time and its complement, so that a torn read shows. Best
 * effort: without it a follower waits for packets.
 */
static void live_beacon(struct cons *c, uint64_t before)
{
	uint64_t rec[2] = {before, ~before};
	char path[4200];
	int create = 0;

	snprintf(path, sizeof(path), "%s/.live-time", c->dir);
	if (c->live_fd < 0 && !c->live_failed) {
		c->live_fd = tfile_open(path, O_WRONLY | O_TRUNC);
		c->live_failed = c->live_fd < 0;
		create = !c->live_failed;
	}
	if (c->live_fd >= 0 && pwrite(c->live_fd, rec, sizeof(rec), 0) != sizeof(rec))
		c->live_failed = 1;
	if (c->live_fd >= 0 && !c->live_failed)
		cons_sink_beacon(c, path, create, rec);
}

/* At the end the streams' indexes say it all: the beacon goes. */
static void live_beacon_end(struct cons *c)
{
	char path[4200];

	if (c->live_fd < 0)
		return;
	close(c->live_fd);
	c->live_fd = -1;
	snprintf(path, sizeof(path), "%s/.live-time", c->dir);
	unlink(path);
	cons_sink_beacon(c, path, 0, NULL);
}

static void *cons_main(void *arg)
{
	struct cons *c = arg;
	uint64_t last_calib = mono_ms(), last_flush = last_calib;
	int first = 1;

	for (;;) {
		/* Before c->running and the look for new rings: cons_sleep()
		 * returns at once if either changed since. seq_cst: pairs
		 * with ring_bell_ring()'s, which follows the publication of
		 * a ring or cons_destroy()'s clear of running. */
		uint32_t bell = strata_load_seq_cst(&ring_bell);
		if (!strata_load_seq_cst(&c->running))
			break;
		unsigned work = 0;
		int behind = 0;
		uint64_t t = mono_ms(), flushed_at = 0;

		if (first && t - last_calib >= 20) {
			/* First frequency estimate, 20 ms after start. */
			log_calib(c);
			cons_update_metadata(c);
			first = 0;
			last_calib = t;
			statedump_update(); /* threads started since */
		} else if (t - last_calib >= 1000) {
			log_calib(c);
			last_calib = t;
			statedump_update();
		}
		if (c->flush_ms && t - last_flush >= c->flush_ms) {
			/* before the flush: an event stamped earlier is in a
			 * packet it closes, or an earlier one (ring.md §2: the
			 * stamp follows the load of `write`) */
			flushed_at = strata_clock();
			(void)ring_flush_all();
			last_flush = t;
		}
		/* pairs with the release CAS of ring_hwm (shm.c) */
		unsigned hwm = strata_load_acquire(&ring_hwm);
		for (unsigned cpu = 0; cpu < hwm; cpu++) {
			struct cons_stream *s = stream_of(c, cpu);
			if (s && c->mode != STRATA_MODE_OVERWRITE)
				work += drain_behind(c, s, &behind);
			if (s)
				work += prefault(c, s);
		}
		if (flushed_at && !behind && c->mode != STRATA_MODE_OVERWRITE)
			live_beacon(c, flushed_at);
		if (c->meta_dirty || c->reg_gen != cons_generation(c))
			cons_update_metadata(c);
		if (!work) {
			/* Until the next calibration or flush, 100 ms at most. */
			uint64_t due = last_calib + (first ? 20 : 1000);
			if (c->flush_ms && last_flush + c->flush_ms < due)
				due = last_flush + c->flush_ms;
			uint64_t now = mono_ms();
			uint64_t ms = due > now ? due - now : 1;
			cons_sleep(c, bell, ms > 100 ? 100 : (unsigned)ms);
		}
	}
	return NULL;
}

static void cons_free(struct cons *c)
{
	if (!c)
		return;
	free(c->pktbuf);
	free(c->tail);
	free(c->batch_tails);
	free(c->bounce);
	free(c->raw);
	free(c->seen);
	free(c);
}

int cons_create(const struct cons_config *cfg, struct cons **out)
{
	char path[4200];
	struct cons *c = calloc(1, sizeof(*c));
	int ret;

	if (!c)
		return -ENOMEM;
	/* no buffer: no direct I/O (cons_stream_open), nothing else changes */
	c->tail = aligned_alloc(DIO_ALIGN, DIO_ALIGN);
	/* none: packets are written one by one */
	c->batch_tails = aligned_alloc(DIO_ALIGN, (size_t)DIO_ALIGN * BATCH_MAX);
	c->seen = calloc(1, (1u << 22) / 8);
	if (!c->seen) {
		ret = -ENOMEM;
		goto fail;
	}
	snprintf(c->dir, sizeof(c->dir), "%s", cfg->dir);
	c->mode = cfg->mode;
	c->flush_ms = cfg->flush_ms;
	c->live_fd = -1;
	c->sink = cfg->sink;
	memcpy(c->uuid, cfg->uuid, 16);
	snprintf(path, sizeof(path), "%s/index", c->dir);
	if ((ret = tfile_mkdir(path, 0))) {
		slog_detail("%s: cannot create directory: %s", path,
			    strerror(-ret));
		goto fail;
	}
	if (!cfg->snapshot)
		cons_reserve_hold(c);

	if (cfg->src) {
		c->external = 1;
		c->copy = !cfg->own_program;
		c->src = *cfg->src;
	}
	c->snapshot = cfg->snapshot;
	c->passive = c->external || c->snapshot;
	c->fd_reserve = cfg->fd_reserve;
	clock_point_take(&c->cp_first);
	if (c->external && c->src.cp_first)
		c->cp_first = *c->src.cp_first;
	if (cfg->cp_first)
		c->cp_first = *cfg->cp_first;
	c->cp_last = c->cp_first;
	c->freq_hz = strata_clock_tsc ? 0 : 1000000000u;
	if (strata_clock_tsc && !c->passive) {
		/* In-process: the fit starts at the library's load, so that
		 * the first guess (until the 20 ms estimate) does not keep
		 * the program waiting; at least 200 us of counting, though
		 * (1e-3 at worst: the two points are within ~100 ns). */
		if (clock_init_point.mono_ns && !cfg->cp_first)
			c->cp_first = clock_init_point;
		do
			clock_point_take(&c->cp_last);
		while (c->cp_last.mono_ns - c->cp_first.mono_ns < 200000);
	}
	clock_fit(&c->cp_first, &c->cp_last, &c->freq_hz, &c->offset_ns);
	cons_update_metadata(c);
	if (c->err) {
		ret = c->err;
		goto fail;
	}

	if (c->passive) {
		*out = c;
		return 0;
	}
	c->running = 1;
	ret = -pthread_create(&c->thread, NULL, cons_main, c);
	if (ret) {
		slog_detail("cannot start the consumer thread: %s",
			    strerror(-ret));
		goto fail;
	}
	pthread_setname_np(c->thread, "strata-consumer");
	*out = c;
	return 0;
fail:
	cons_free(c);
	return ret;
}

int cons_add_ring(struct cons *c, struct strata_ring *ring)
{
	if (!c->passive || ring->cpu >= STRATA_MAX_CPUS)
		return -EINVAL;
	if (c->streams[ring->cpu])
		return -EEXIST;
	/* a batch of copies (stream.c, "Batches") */
	size_t need = (size_t)ring->psize * cons_batch_max(ring->psize);
	if (need > c->pktbuf_size) {
		/* aligned, so that direct I/O can write from it */
		void *p = aligned_alloc(DIO_ALIGN, need);
		if (!p)
			return -ENOMEM;
		free(c->pktbuf);
		c->pktbuf = p;
		c->pktbuf_size = need;
	}
	c->streams[ring->cpu] = cons_stream_open(c, ring);
	if (!c->streams[ring->cpu])
		return -ENOMEM;
	if (ring->cpu + 1 > c->max_cpu)
		c->max_cpu = ring->cpu + 1;
	return 0;
}

/* What live_poll() learns of another process's live timer in one pass. */
struct live_scan {
	uint64_t min;    /* the oldest `live_time` of its rings */
	uint32_t need;   /* the most rings it says it flushed */
	unsigned have;   /* rings we drain */
	int behind;      /* a ring keeps a closed packet undrained */
};

/*
 * Drain one of another process's rings, and see how far its live timer
 * got (docs/record.md, "Live reading"): its helper thread flushed every
 * ring it had, then stored in each control block how many it had and
 * the trace time read before that flush (lib/client_live.c). Once the
 * packets that flush closed are written on every one of those rings,
 * its events stamped before the oldest such time are all in our files:
 * the beacon of the in-process consumer (live_beacon()), same rule.
 * Untrusted like the rest of the mapping: the two values only decide
 * what this sub-trace's beacon says, never a bound, a size or an
 * offset, so a lying process can mislead only its own sub-trace's
 * follower.
 */
static unsigned live_poll(struct cons *c, struct cons_stream *s,
			  struct live_scan *ls)
{
	struct strata_ring *r = s->ring;
	/* Before drain_behind()'s load of `write`: pairs with the release
	 * store of live_time after the flush, so that load is past every
	 * packet that flush closed. */
	uint64_t t = strata_load_acquire(&r->ctl->live_time);
	uint32_t n = strata_load_relaxed(&r->ctl->live_rings);
	unsigned work = drain_behind(c, s, &ls->behind);

	s->live_seen = t;
	ls->min = t < ls->min ? t : ls->min;
	ls->need = n > ls->need ? n : ls->need;
	ls->have++;
	return work;
}

unsigned cons_poll(struct cons *c)
{
	struct live_scan ls = {UINT64_MAX, 0, 0, 0};
	unsigned work = 0;

	for (unsigned cpu = 0; cpu < c->max_cpu; cpu++) {
		struct cons_stream *s = c->streams[cpu];
		if (s && c->mode != STRATA_MODE_OVERWRITE && !c->snapshot)
			work += live_poll(c, s, &ls);
		if (s)
			work += prefault(c, s);
	}
	/* A ring never flushed says 0: no beacon. Only forward: a beacon
	 * is a promise about the past. */
	if (c->external && ls.have && ls.have >= ls.need && !ls.behind &&
	    ls.min > c->live_last) {
		c->live_last = ls.min;
		live_beacon(c, ls.min);
	}
	if (c->meta_dirty || c->reg_gen != cons_generation(c))
		cons_update_metadata(c);
	return work;
}

void cons_clock_first(const struct cons *c, struct clock_point *out)
{
	*out = c->cp_first;
}

int cons_finish(struct cons *c, int writers_gone, struct strata_stats *final,
		struct cons_salvage *salv)
{
	int ret;

	if (!c)
		return 0;
	if (!c->passive)
		return cons_destroy(c, final);
	if (salv)
		memset(salv, 0, sizeof(*salv));
	live_beacon_end(c);
	for (unsigned cpu = 0; cpu < c->max_cpu; cpu++)
		if (c->streams[cpu] && !c->snapshot)
			cons_finish_external(c, c->streams[cpu], writers_gone);
	cons_close_streams(c);
	ret = c->err;
	cons_get_stats(c, final);
	if (salv) {
		salv->salvaged = c->salvaged;
		salv->unsalvageable = c->unsalvageable;
		salv->dropped_bytes = c->dropped_bytes;
	}
	cons_free(c);
	return ret;
}

/* Overwrite mode at stop: the packets still held, oldest first. */
static void drain_held(struct cons *c, struct cons_stream *s)
{
	struct strata_ring *r = s->ring;
	/* pairs with the writers' CAS of write (ring.md §2 F, §7) */
	uint64_t w = strata_load_acquire(&r->ctl->write);
	uint64_t end = ring_packet_begin(r, w + r->pmask); /* after flush: w */
	uint64_t begin = cons_window(r, end, 0);

	for (; begin < end; begin += r->psize) {
		if (ring_packet_complete(r, begin))
			cons_write_packet(c, s, begin, 0);
		else
			c->incomplete++;
	}
}

int cons_destroy(struct cons *c, struct strata_stats *final)
{
	int ret;

	if (!c)
		return 0;
	if (c->passive)
		return cons_finish(c, 0, final, NULL);
	/* Before the bell moves; pairs with cons_main()'s seq_cst loads. */
	strata_store_seq_cst(&c->running, 0);
	ring_bell_ring(); /* after running: cons_main() reads them the other way */
	pthread_join(c->thread, NULL);
	live_beacon_end(c);
	/* nothing of ours opens a file from here but the end's writes */
	if (c->fd_reserve && *c->fd_reserve >= 0) {
		close(*c->fd_reserve);
		*c->fd_reserve = -1;
	}

	log_calib(c);
	(void)ring_flush_all();

	/* Writers that passed the mask check before tracing stopped may
	 * still be between reserve and commit: give them 100 ms. */
	for (int tries = 0; tries < 100; tries++) {
		int pending = 0;
		for (unsigned cpu = 0; cpu < STRATA_MAX_CPUS; cpu++) {
			struct cons_stream *s = stream_of(c, cpu);
			if (!s)
				continue;
			struct strata_ring *r = s->ring;
			/* as in cons_drain_ring() */
			uint64_t w = strata_load_acquire(&r->ctl->write);
			if (c->mode != STRATA_MODE_OVERWRITE) {
				cons_drain_ring(c, s);
				if (strata_load_relaxed(&r->ctl->consumed) <
				    ring_packet_begin(r, w + r->pmask))
					pending = 1;
			} else {
				uint64_t end = ring_packet_begin(r, w + r->pmask);
				uint64_t b = cons_window(r, end, 0);
				for (; b < end; b += r->psize)
					if (!ring_packet_complete(r, b))
						pending = 1;
			}
		}
		if (!pending)
			break;
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
		(void)ring_flush_all(); /* late writers may have opened packets */
	}

	for (unsigned cpu = 0; cpu < c->max_cpu; cpu++) {
		struct cons_stream *s = c->streams[cpu];
		if (!s)
			continue;
		struct strata_ring *r = s->ring;
		if (c->mode == STRATA_MODE_OVERWRITE) {
			drain_held(c, s);
		} else {
			/* Packets a writer never completed: report, skip, and
			 * write what follows them. The load of write pairs
			 * with the writers' CAS of it (ring.md §2 F; §7). */
			uint64_t w = strata_load_acquire(&r->ctl->write);
			uint64_t end = ring_packet_begin(r, w + r->pmask);
			uint64_t b = strata_load_relaxed(&r->ctl->consumed);
			for (; b < end; b += r->psize) {
				if (ring_packet_complete(r, b)) {
					cons_write_packet(c, s, b, 0);
				} else {
					c->incomplete++;
					slog("%s/cpu%u: packet %llu never completed "
					     "(a writer stopped between reserve and "
					     "commit): skipped",
					     c->dir, r->cpu,
					     (unsigned long long)(b >> r->pshift));
				}
			}
			/* as in cons_drain_ring(): pairs with slot_check() */
			strata_store_release(&r->ctl->consumed, end);
		}
	}
	cons_close_streams(c);
	ret = c->err;
	cons_get_stats(c, final);
	cons_free(c);
	return ret;
}

void cons_get_stats(struct cons *c, struct strata_stats *st)
{
	st->packets_written += strata_load_relaxed(&c->packets);
	st->bytes_written += strata_load_relaxed(&c->bytes);
	st->events_written += strata_load_relaxed(&c->events);
	st->packets_incomplete += c->incomplete;
	st->lost_io += strata_load_relaxed(&c->lost_io);
	st->internal_logged += strata_load_relaxed(&c->internal);
}
