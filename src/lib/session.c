/* SPDX-License-Identifier: MIT */
/* The in-process session: start/stop, the major mask, fork and exit. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <strata/strata.h>

#include "common/log.h"
#include "consumer/consumer.h"
#include "lib/clock.h"
#include "lib/session.h"
#include "ring/ring.h"

STRATA_API volatile uint64_t strata_mask;

static pthread_mutex_t sess_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cons *sess_cons;
static struct strata_stats last_stats; /* of the last stopped session */
static int atexit_done;
static int started_from_env; /* no caller to check strata_stop()'s result */
static char sess_output[4096];

STRATA_API void strata_enable_majors(uint64_t majors)
{
	__atomic_fetch_or(&strata_mask, majors & ~STRATA_MAJOR_BIT(63),
			  __ATOMIC_RELAXED);
}

STRATA_API void strata_disable_majors(uint64_t majors)
{
	__atomic_fetch_and(&strata_mask, ~majors, __ATOMIC_RELAXED);
}

STRATA_API uint64_t strata_majors(void)
{
	return __atomic_load_n(&strata_mask, __ATOMIC_RELAXED);
}

static void random_uuid(uint8_t u[16])
{
	FILE *f = fopen("/dev/urandom", "re");
	if (!f || fread(u, 1, 16, f) != 16) {
		uint64_t a = strata_clock() ^ ((uint64_t)getpid() << 32);
		memcpy(u, &a, 8);
		memcpy(u + 8, &a, 8);
	}
	if (f)
		fclose(f);
	u[6] = (u[6] & 0x0f) | 0x40; /* version 4 */
	u[8] = (u[8] & 0x3f) | 0x80; /* RFC 4122 variant */
}

static int mkdir_p(const char *path)
{
	char buf[4096];
	size_t n = strlen(path);

	if (n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static void ring_stats(struct strata_stats *st);

/*
 * At exit of a program traced through STRATA_OUTPUT, nobody checks
 * strata_stop()'s result: say in one line if anything was lost, and what
 * to do about it. Silent when the trace is complete.
 */
static void stop_at_exit(void)
{
	struct strata_stats st;
	int ret = strata_stop();

	if (!started_from_env)
		return;
	strata_get_stats(&st);
	uint64_t lost = st.lost_full + st.lost_busy + st.lost_too_big +
			st.lost_nested + st.lost_no_ring;
	if (ret)
		fprintf(stderr, "strata: %s: trace incomplete: %s; %llu events "
			"written, %llu not written, the trace is readable up to "
			"there\n", sess_output, strata_strerror_detail(),
			(unsigned long long)st.events_written,
			(unsigned long long)st.lost_io);
	else if (lost)
		fprintf(stderr, "strata: %s: %llu events recorded, %llu lost "
			"(buffers full: %llu); raise STRATA_PACKETS or "
			"STRATA_PACKET_SIZE\n",
			sess_output, (unsigned long long)st.events_written,
			(unsigned long long)lost,
			(unsigned long long)(st.lost_full + st.lost_busy));
}

STRATA_API int strata_start(const struct strata_options *user)
{
	struct strata_options o;
	struct cons_config cc;
	char dir[4096];
	int ret;

	if (user) {
		o = *user;
	} else if ((ret = strata_options_from_env(&o))) {
		return ret;
	}
	if ((ret = options_check(&o)))
		return ret;

	pthread_mutex_lock(&sess_lock);
	if (sess_cons) {
		ret = -EALREADY;
		slog_detail("tracing already started");
		goto out;
	}
	if ((ret = mkdir_p(o.output))) {
		slog_detail("%s: cannot create directory: %s", o.output,
			    strerror(-ret));
		goto out;
	}
	snprintf(dir, sizeof(dir), "%s/ust/pid-%u", o.output, strata_pid);
	if ((ret = mkdir_p(dir))) {
		slog_detail("%s: cannot create directory: %s", dir,
			    strerror(-ret));
		goto out;
	}

	/* Geometry of the rings created from now on. Rings of an earlier
	 * session were destroyed by strata_stop(). */
	ring_cfg.psize_shift = (uint32_t)__builtin_ctzll(o.packet_size);
	ring_cfg.npackets_shift = (uint32_t)__builtin_ctz(o.npackets);
	ring_cfg.mode = (uint32_t)o.mode;
	random_uuid(ring_cfg.uuid);

	memset(&cc, 0, sizeof(cc));
	cc.dir = dir;
	cc.mode = o.mode;
	cc.flush_ms = o.flush_ms;
	memcpy(cc.uuid, ring_cfg.uuid, 16);
	if ((ret = cons_create(&cc, &sess_cons)))
		goto out;

	snprintf(sess_output, sizeof(sess_output), "%s", o.output);
	started_from_env = !user;
	if (o.majors == STRATA_MAJORS_NONE)
		strata_mask = 0;
	else
		strata_mask = o.majors ? o.majors : ~STRATA_MAJOR_BIT(63);
	if (!atexit_done) {
		atexit(stop_at_exit);
		atexit_done = 1;
	}
out:
	pthread_mutex_unlock(&sess_lock);
	return ret;
}

STRATA_API int strata_stop(void)
{
	int ret = 0;

	pthread_mutex_lock(&sess_lock);
	if (sess_cons) {
		/* No new tracepoint enters; the consumer waits (bounded) for
		 * the ones in flight, flushes and drains every ring. */
		strata_mask = 0;
		memset(&last_stats, 0, sizeof(last_stats));
		ret = cons_destroy(sess_cons, &last_stats);
		sess_cons = NULL;
		ring_stats(&last_stats);
		/* Unpublish the rings so that a new session gets fresh ones,
		 * but never unmap them: a thread that passed the mask check
		 * before tracing stopped may still be writing (its events are
		 * simply not recorded). The memory is reused by nothing else. */
		for (unsigned i = 0; i < STRATA_MAX_CPUS; i++)
			strata_store_release(&strata_rings[i], NULL);
	}
	pthread_mutex_unlock(&sess_lock);
	return ret;
}

STRATA_API void strata_flush(void)
{
	for (unsigned i = 0; i < STRATA_MAX_CPUS; i++) {
		struct strata_ring *r = strata_load_acquire(&strata_rings[i]);
		if (r)
			ring_flush(r);
	}
}

static void ring_stats(struct strata_stats *st)
{
	for (unsigned i = 0; i < STRATA_MAX_CPUS; i++) {
		struct strata_ring *r = strata_load_acquire(&strata_rings[i]);
		if (!r)
			continue;
		st->lost_full += strata_load_relaxed(&r->ctl->lost[STRATA_LOST_FULL]);
		st->lost_busy += strata_load_relaxed(&r->ctl->lost[STRATA_LOST_BUSY]);
		st->lost_too_big += strata_load_relaxed(&r->ctl->lost[STRATA_LOST_TOO_BIG]);
		st->lost_nested += strata_load_relaxed(&r->ctl->lost[STRATA_LOST_NESTED]);
		st->lost_no_ring += strata_load_relaxed(&r->ctl->lost[STRATA_LOST_NO_RING]);
	}
	st->lost_full += strata_load_relaxed(&ring_lost_global[STRATA_LOST_FULL]);
	st->lost_too_big += strata_load_relaxed(&ring_lost_global[STRATA_LOST_TOO_BIG]);
	st->lost_no_ring += strata_load_relaxed(&ring_lost_global[STRATA_LOST_NO_RING]);
}

STRATA_API void strata_get_stats(struct strata_stats *st)
{
	pthread_mutex_lock(&sess_lock);
	if (sess_cons) {
		memset(st, 0, sizeof(*st));
		cons_get_stats(sess_cons, st);
		ring_stats(st);
	} else {
		*st = last_stats;
	}
	pthread_mutex_unlock(&sess_lock);
}

/*
 * After fork() the child has copies of the parent's mappings: MAP_SHARED
 * ring memory that the parent's consumer is still draining. The child
 * must never write there, so it drops every ring and stops tracing. (A
 * `strata record` session traces children by giving them rings of their
 * own; the in-process consumer thread does not survive fork.)
 */
static void after_fork_child(void)
{
	strata_mask = 0;
	strata_pid = (uint32_t)getpid();
	strata_tls.tid = 0;
	for (unsigned i = 0; i < STRATA_MAX_CPUS; i++) {
		struct strata_ring *r = strata_rings[i];
		strata_rings[i] = NULL;
		ring_destroy(r);
	}
	sess_cons = NULL; /* the parent's; its thread does not exist here */
	pthread_mutex_init(&sess_lock, NULL);
}

__attribute__((constructor)) static void strata_init(void)
{
	strata_pid = (uint32_t)getpid();
	clock_init();
	ring_init();
	pthread_atfork(NULL, NULL, after_fork_child);

	const char *out = getenv("STRATA_OUTPUT");
	if (out && *out) {
		int ret = strata_start(NULL);
		/* Tracing was asked for in the environment: say why it is
		 * not happening, once, rather than fail silently. */
		if (ret)
			fprintf(stderr, "strata: tracing disabled: %s\n",
				strata_strerror_detail());
	}
}
