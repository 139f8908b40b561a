/* SPDX-License-Identifier: MIT */
/* The session: the in-process recorder (strata_start/stop), and at load, what the environment asks for. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/un.h>
#include <unistd.h>

#include <strata/strata.h>

#include "common/format.h"
#include "common/log.h"
#include "common/tfile.h"
#include "consumer/consumer.h"
#include "lib/client.h"
#include "lib/clock.h"
#include "lib/guard.h"
#include "lib/session.h"
#include "lib/statedump.h"
#include "ring/ring.h"
#include "proto/paths.h"

STRATA_API volatile uint64_t strata_mask;


/* Defined (as 1) by programs that link libstrata statically and must not
 * trace themselves from the environment: the strata tool. */
extern const int strata_no_autostart __attribute__((weak));

/* Held by strata_start/stop/snapshot/get_stats and the exits: one of
 * them at a time. */
static pthread_mutex_t session_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cons *session_cons;
static struct strata_stats last_stats; /* of the last stopped session */
static int atexit_done;
static int started_from_env; /* no caller to check strata_stop()'s result */
static char session_output[4096];
/* A descriptor held from an in-process session's start to its stop, so
 * that a process that ran out of them still gets its last metadata and
 * its TRACE/unrecorded line (strata_stop()); -1 when none is held. */
static int session_fd_reserve = -1;

/* strata_enable_majors() and the mask: src/lib/control.c (the trigger gate). */

void session_random_uuid(uint8_t u[16])
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

static void ring_stats(struct strata_stats *st);

/* The causes of `st`'s losses, for people: "buffers full: 12, no buffer:
 * 3" (the non-zero ones), or "none". */
static void lost_causes(const struct strata_stats *st, char *buf, size_t len)
{
	const struct {
		const char *what;
		uint64_t n;
	} c[] = {
		{"buffers full", st->lost_full + st->lost_busy},
		{"too big", st->lost_too_big},
		{"nested too deep", st->lost_nested},
		{"no buffer", st->lost_no_ring},
	};
	size_t at = 0;

	snprintf(buf, len, "none");
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]) && at < len; i++)
		if (c[i].n)
			at += (size_t)snprintf(buf + at, len - at, "%s%s: %llu",
					       at ? ", " : "", c[i].what,
					       (unsigned long long)c[i].n);
}

/*
 * At exit of a program traced through STRATA_OUTPUT, nobody checks
 * strata_stop()'s result: say in one line if anything was lost, why, and
 * what to do about it. Silent when the trace is complete.
 */
void session_report_exit(const char *output, int ret,
			 const struct strata_stats *s)
{
	const struct strata_stats st = *s;
	uint64_t lost = st.lost_full + st.lost_busy + st.lost_too_big +
			st.lost_nested + st.lost_no_ring;
	char why[160];

	lost_causes(&st, why, sizeof(why));
	if (ret)
		fprintf(stderr, "strata: %s: trace incomplete: %s; %llu events "
			"written, %llu not written, %llu lost before (%s); the "
			"trace is readable up to there\n",
			output, strata_strerror_detail(),
			(unsigned long long)st.events_written,
			(unsigned long long)st.lost_io, (unsigned long long)lost,
			why);
	else if (lost)
		fprintf(stderr, "strata: %s: %llu events recorded, %llu lost "
			"(%s)%s\n",
			output, (unsigned long long)st.events_written,
			(unsigned long long)lost, why,
			st.lost_full + st.lost_busy
				? "; raise STRATA_PACKETS or STRATA_PACKET_SIZE"
				: st.lost_no_ring ? "; STRATA_VERBOSE=1 says why"
						  : "");
}

static void stop_at_exit(void)
{
	struct strata_stats st;
	int ret = strata_stop();

	if (!started_from_env)
		return;
	strata_get_stats(&st);
	session_report_exit(session_output, ret, &st);
}

/* At the exit of a process in a daemon's session. */
static void client_at_exit(void)
{
	pthread_mutex_lock(&session_lock);
	client_leave(&last_stats);
	pthread_mutex_unlock(&session_lock);
}

/* Join a daemon's session (lib/client.h), and leave it at exit. */
static int join(const char *sock, const char *output, bool guarded,
		const char *enable)
{
	int ret = client_join(sock, output, guarded, enable);

	if (!ret)
		atexit(client_at_exit);
	return ret;
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

	pthread_mutex_lock(&session_lock);
	if (session_cons || client_joined()) {
		ret = -EALREADY;
		slog_detail(session_cons ? "tracing already started"
				      : "tracing already started (STRATA_SESSION)");
		goto out;
	}
	if ((ret = tfile_mkdir_p(o.output))) {
		slog_detail("%s: cannot create directory: %s", o.output,
			    strerror(-ret));
		goto out;
	}
	snprintf(dir, sizeof(dir), "%s/ust/pid-%u", o.output, strata_pid);
	if ((ret = tfile_mkdir_p(dir))) {
		slog_detail("%s: cannot create directory: %s", dir,
			    strerror(-ret));
		goto out;
	}

	/* Geometry of the rings created from now on. Rings of an earlier
	 * session were destroyed by strata_stop(). */
	ring_cfg.psize_shift = (uint32_t)__builtin_ctzll(o.packet_size);
	ring_cfg.npackets_shift = (uint32_t)__builtin_ctz(o.npackets);
	ring_cfg.mode = (uint32_t)o.mode;
	session_random_uuid(ring_cfg.uuid);

	memset(&cc, 0, sizeof(cc));
	cc.dir = dir;
	cc.mode = o.mode;
	cc.flush_ms = o.flush_ms;
	memcpy(cc.uuid, ring_cfg.uuid, 16);
	if (session_fd_reserve < 0)
		session_fd_reserve = open("/dev/null", O_RDONLY | O_CLOEXEC);
	cc.fd_reserve = &session_fd_reserve;
	if ((ret = cons_create(&cc, &session_cons)))
		goto out;

	snprintf(session_output, sizeof(session_output), "%s", o.output);
	started_from_env = !user;
	if (o.majors == STRATA_MAJORS_NONE)
		mask_set(0);
	else
		mask_set(o.majors ? o.majors : ~STRATA_MAJOR_BIT(63));
	if (!atexit_done) {
		atexit(stop_at_exit);
		atexit_done = 1;
	}
out:
	pthread_mutex_unlock(&session_lock);
	if (!ret)
		statedump_self(false);
	return ret;
}

/*
 * Events an in-process session dropped while no ring could be made (out
 * of descriptors: ring.md §1) and that no ring made later took over: no
 * packet counts them, so TRACE/unrecorded does, where `strata info`
 * reads it (issue 24; a daemon's session learns them from the process's
 * BYE instead, daemon/client.c). Taken from the counters, so that a later
 * session does not count them again; strata_get_stats() still has them.
 */
static void note_unadopted(void)
{
	uint64_t n = 0;

	for (int k = 0; k < STRATA_LOST_NCAUSES; k++)
		n += strata_exchange_relaxed(&ring_lost_global[k], 0);
	if (n && session_output[0])
		session_note_unrecorded(session_output, n,
					"discarded while it had no buffer to count them in");
}

void session_note_unrecorded(const char *trace, uint64_t events, const char *why)
{
	char path[4200], name[17] = "";

	snprintf(path, sizeof(path), "%s/unrecorded", trace);
	prctl(PR_GET_NAME, name, 0, 0, 0);
	/* the trace's own modes (owner-only, or --group's), as the daemon's */
	int fd = tfile_open(path, O_WRONLY | O_APPEND | O_NOFOLLOW);
	if (fd < 0)
		return;
	fmt_unrecorded_line(fd, strata_pid, name, events, why);
	close(fd);
}

STRATA_API int strata_stop(void)
{
	int ret = 0;

	pthread_mutex_lock(&session_lock);
	client_leave(&last_stats);
	if (session_cons) {
		/* a library loaded since the last periodic update: mapped */
		statedump_objects_update();
		/* No new tracepoint enters; the consumer waits (bounded) for
		 * the ones in flight, flushes and drains every ring. */
		mask_set(0);
		memset(&last_stats, 0, sizeof(last_stats));
		/* closes the reserve for the last metadata, whose slot the
		 * unrecorded line then takes */
		ret = cons_destroy(session_cons, &last_stats);
		session_cons = NULL;
		ring_stats(&last_stats);
		note_unadopted();
		last_stats.internal_logged += statedump_logged();
		/* Unpublish the rings so that a new session gets fresh ones,
		 * but never unmap them: a thread that passed the mask check
		 * before tracing stopped may still be writing (its events are
		 * simply not recorded). The memory is reused by nothing else. */
		for (unsigned i = 0; i < STRATA_MAX_CPUS; i++)
			strata_store_release(&strata_rings[i], NULL);
	}
	pthread_mutex_unlock(&session_lock);
	return ret;
}

STRATA_API int strata_snapshot(const char *dir)
{
	struct cons_snap_stats st;
	struct cons_config cc;
	struct clock_point first;
	struct strata_ring **rings = NULL;
	char sub[4096];
	int ret;

	pthread_mutex_lock(&session_lock);
	if (!session_cons) {
		ret = -ENOENT;
		slog_detail("strata_snapshot: not tracing with the in-process "
			    "consumer (strata_start)");
		goto out;
	}
	if (ring_cfg.mode != STRATA_MODE_OVERWRITE) {
		ret = -EINVAL;
		slog_detail("strata_snapshot: needs overwrite mode (the rings "
			    "are drained as they fill in discard mode)");
		goto out;
	}
	if (snprintf(sub, sizeof(sub), "%s/ust/pid-%u", dir, strata_pid) >=
	    (int)sizeof(sub)) {
		ret = -ENAMETOOLONG;
		goto out;
	}
	if ((ret = tfile_mkdir_p(sub))) {
		slog_detail("%s: cannot create directory: %s", sub, strerror(-ret));
		goto out;
	}
	rings = calloc(STRATA_MAX_CPUS, sizeof(*rings));
	if (!rings) {
		ret = -ENOMEM;
		goto out;
	}
	for (unsigned i = 0; i < STRATA_MAX_CPUS; i++)
		rings[i] = strata_load_acquire(&strata_rings[i]);
	cons_clock_first(session_cons, &first);
	memset(&cc, 0, sizeof(cc));
	cc.dir = sub;
	cc.mode = STRATA_MODE_OVERWRITE;
	memcpy(cc.uuid, ring_cfg.uuid, 16);
	cc.cp_first = &first;
	memset(&st, 0, sizeof(st));
	ret = cons_snapshot(&cc, rings, STRATA_MAX_CPUS, &st);
	free(rings);
out:
	pthread_mutex_unlock(&session_lock);
	return ret;
}

STRATA_API void strata_flush(void)
{
	(void)ring_flush_all();
}

static void lost_add(struct strata_stats *st, uint64_t *lost, uint64_t *own)
{
	st->lost_full += strata_load_relaxed(&lost[STRATA_LOST_FULL]);
	st->lost_busy += strata_load_relaxed(&lost[STRATA_LOST_BUSY]);
	st->lost_too_big += strata_load_relaxed(&lost[STRATA_LOST_TOO_BIG]);
	st->lost_nested += strata_load_relaxed(&lost[STRATA_LOST_NESTED]);
	st->lost_no_ring += strata_load_relaxed(&lost[STRATA_LOST_NO_RING]);
	st->internal_lost += strata_load_relaxed(own);
}

static void ring_stats(struct strata_stats *st)
{
	for (unsigned i = 0; i < STRATA_MAX_CPUS; i++) {
		struct strata_ring *r = strata_load_acquire(&strata_rings[i]);
		if (!r)
			continue;
		lost_add(st, r->ctl->lost, &r->ctl->lost_own);
	}
	lost_add(st, ring_lost_global, &ring_lost_own_global);
}

STRATA_API void strata_get_stats(struct strata_stats *st)
{
	pthread_mutex_lock(&session_lock);
	if (session_cons) {
		memset(st, 0, sizeof(*st));
		cons_get_stats(session_cons, st);
		ring_stats(st);
		st->internal_logged += statedump_logged();
	} else {
		*st = last_stats;
	}
	pthread_mutex_unlock(&session_lock);
}

void session_after_fork_child(void)
{
	session_cons = NULL; /* the parent's; its thread does not exist here */
	pthread_mutex_init(&session_lock, NULL);
}

/*
 * Whether `dir` holds an earlier recording (any file but the guardian's
 * .session): STRATA_OUTPUT never writes into one, where it merged two
 * runs into one trace silently (issue 26, item 11). It says so.
 */
static bool trace_dir_taken(const struct lib_env *env, const char *dir)
{
	/* strata ktrace made dir new for this run, and writes its kernel/
	 * beside: all the programs it runs are one recording (cmd-ktrace.c) */
	const char *k = env->ktrace_dir;
	if (k && !strcmp(k, dir))
		return false;
	int n = tfile_dir_has_files(dir, GUARD_SESSION_FILE);

	if (n > 0) {
		fprintf(stderr, "strata: tracing disabled: %s holds an earlier "
			"trace; choose another STRATA_OUTPUT (or remove it)\n",
			dir);
		return true;
	}
	return false;
}

/*
 * STRATA_OUTPUT: record through a guardian (lib/guard.c), which outlives
 * a crash of the program and takes its fork and exec children; the
 * in-process consumer thread only where it cannot start, or with
 * STRATA_GUARD=0 (docs/record.md, "The embedded mode"). Returns 0 when
 * joined; otherwise the caller starts the in-process consumer, after one
 * line saying why there is no crash protection (bad options are left to
 * it to report).
 */
static int guard_join(const struct lib_env *env, const char *out)
{
	struct strata_options o;
	char sock[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int ret;

	if (env->guard_off)
		return -ECANCELED;
	if (strata_options_from_env(&o) || options_check(&o))
		return -EINVAL;
	if ((ret = tfile_mkdir_p(out)))
		return ret; /* strata_start() says it */
	/* Another program of this recording started its guardian first:
	 * join that one (one recording, several programs). */
	if (guard_running(out, sock, sizeof(sock))) {
		if (!join(sock, out, true, env->enable)) {
			setenv("STRATA_SESSION", sock, 1);
			setenv("STRATA_GUARDED", "1", 1);
			started_from_env = 1;
			return 0;
		}
	}
	if (trace_dir_taken(env, out))
		return -EEXIST;
	if ((ret = guard_spawn(out, env->tool, sock, sizeof(sock)))) {
		fprintf(stderr, "strata: %s\n", strata_strerror_detail());
		return ret;
	}
	/* exec'd children join it too (a fork child does by itself) */
	setenv("STRATA_SESSION", sock, 1);
	setenv("STRATA_GUARDED", "1", 1);
	if ((ret = join(sock, out, true, env->enable))) {
		unsetenv("STRATA_SESSION");
		unsetenv("STRATA_GUARDED");
		fprintf(stderr, "strata: no crash protection: %s\n",
			strata_strerror_detail());
		return ret;
	}
	started_from_env = 1;
	return 0;
}

__attribute__((constructor)) static void strata_init(void)
{
	struct lib_env env;

	strata_pid = (uint32_t)getpid();
	clock_init(); /* and the write protocol */
	fork_init();
	/* every thread named at its first event, whatever records it */
	strata_store_relaxed(&ring_thread_hook, statedump_name_thread);

	/* The strata tool itself (the session daemon) is never traced. */
	if (&strata_no_autostart && strata_no_autostart)
		return;
	lib_env_read(&env);
	const char *out = env.output;
	const char *sess = env.session;
	if (sess && !strcmp(sess, "none")) {
		sess = NULL; /* opted out of every daemon */
	} else if ((!sess || !*sess) && (!out || !*out)) {
		/* A daemon of ours listening on the default socket: join it,
		 * silently if that fails (nobody asked for tracing). One
		 * lstat() when there is none. */
		char dir[4096], base[4096], sock[4200];
		if (!proto_daemon_dir("default", dir, sizeof(dir), base, sizeof(base)) &&
		    proto_path_private(dir, 1) &&
		    snprintf(sock, sizeof(sock), "%s/sock", dir) > 0 &&
		    proto_path_private(sock, 0))
			join(sock, NULL, false, env.enable);
		return;
	}
	if (sess && *sess) {
		client_record_trace(env.record_trace);
		/* an exec'd child of a guarded program: its session too */
		int ret = join(sess, out && *out ? out : NULL, env.guarded,
			       env.enable);
		if (!ret)
			return;
		/* The daemon is unreachable: the in-process consumer if
		 * STRATA_OUTPUT says where, else no tracing at all. */
		if (!out || !*out) {
			fprintf(stderr, "strata: tracing disabled: %s\n",
				strata_strerror_detail());
			return;
		}
	}
	if (out && *out) {
		int g = guard_join(&env, out);
		if (g == 0 || g == -EEXIST)
			return;
	}
	if (out && *out && !trace_dir_taken(&env, out)) {
		int ret = strata_start(NULL);
		/* Tracing was asked for in the environment: say why it is
		 * not happening, once, rather than fail silently. */
		if (ret)
			fprintf(stderr, "strata: tracing disabled: %s\n",
				strata_strerror_detail());
	}
}
