/* SPDX-License-Identifier: MIT */
/* The session: in-process start/stop or `strata record`'s, the major mask, fork and exit. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <strata/strata.h>

#include "common/log.h"
#include "common/tfile.h"
#include "consumer/consumer.h"
#include "lib/clock.h"
#include "lib/guard.h"
#include "lib/registry.h"
#include "lib/session.h"
#include "lib/statedump.h"
#include "ring/ring.h"
#include "session/paths.h"
#include "session/proto.h"

STRATA_API volatile uint64_t strata_mask;


/* Defined (as 1) by programs that link libstrata statically and must not
 * trace themselves from the environment: the strata tool. */
extern const int strata_no_autostart __attribute__((weak));

static pthread_mutex_t sess_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cons *sess_cons;
static struct strata_stats last_stats; /* of the last stopped session */
static int atexit_done;
static int started_from_env; /* no caller to check strata_stop()'s result */
static char sess_output[4096];

/* strata_enable_majors() and the mask: src/lib/control.c (the trigger gate). */

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

static void ring_stats(struct strata_stats *st);

/*
 * At exit of a program traced through STRATA_OUTPUT, nobody checks
 * strata_stop()'s result: say in one line if anything was lost, and what
 * to do about it. Silent when the trace is complete.
 */
static void report_exit(int ret, const struct strata_stats *s)
{
	const struct strata_stats st = *s;
	uint64_t lost = st.lost_full + st.lost_busy + st.lost_too_big +
			st.lost_nested + st.lost_no_ring;
	if (ret)
		fprintf(stderr, "strata: %s: trace incomplete: %s; %llu events "
			"written, %llu not written, %llu lost before (buffers "
			"full: %llu); the trace is readable up to there\n",
			sess_output, strata_strerror_detail(),
			(unsigned long long)st.events_written,
			(unsigned long long)st.lost_io, (unsigned long long)lost,
			(unsigned long long)(st.lost_full + st.lost_busy));
	else if (lost)
		fprintf(stderr, "strata: %s: %llu events recorded, %llu lost "
			"(buffers full: %llu); raise STRATA_PACKETS or "
			"STRATA_PACKET_SIZE\n",
			sess_output, (unsigned long long)st.events_written,
			(unsigned long long)lost,
			(unsigned long long)(st.lost_full + st.lost_busy));
}

static void stop_at_exit(void)
{
	struct strata_stats st;
	int ret = strata_stop();

	if (!started_from_env)
		return;
	strata_get_stats(&st);
	report_exit(ret, &st);
}

/* ---- STRATA_SESSION: tracing under `strata record` (docs/record.md) ------
 *
 * The process hands its rings to the session daemon instead of running a
 * consumer: each ring's memfd goes over a UNIX socket (SCM_RIGHTS) as the
 * ring is created, from the slow path -- possibly in a signal handler --
 * so that part uses only system calls on static data. Every send is
 * non-blocking: a stalled or dead daemon costs events (counted), never
 * time. A small helper thread sends the event descriptors (they are
 * registered by constructors that run after this library's) and retries
 * ring handovers that found the socket full.
 */
enum {
	SESS_OFF = 0, /* not in a session */
	SESS_NEED,    /* fork child: connect at its first ring */
	SESS_BUSY,    /* a thread is connecting */
	SESS_ON,      /* connected */
	SESS_DEAD,    /* the daemon is gone or never answered */
	/* joined, not connected yet: the daemon's backlog was full (it was
	 * stopped, or swamped). Tracing goes on into the rings; the helper
	 * thread, and at last the exit, connect when it takes us
	 * (sess_retry(): issue 24, item 7). */
	SESS_PENDING,
};
static int sess_state;
static int sess_fd = -1;
static char sess_sock[sizeof(((struct sockaddr_un *)0)->sun_path)];
static uint32_t sess_fork_of;
/* The eventfd our closers ring while a daemon drains our rings
 * (ring_bellfd): made once, never closed (ring.h). */
static int sess_bellfd = -1;
static uint8_t ring_sent[STRATA_MAX_CPUS]; /* 1: handed over (or trying) */
static uint32_t sess_rings_unsent;         /* failed for good */
static size_t sess_desc_sent;              /* descriptors sent so far */
/* blob ids sent so far, by their registry slot */
static uint8_t sess_blob_sent[REGISTRY_BLOB_SLOTS / 8];
static pthread_t sess_thread;
static int sess_thread_on, sess_thread_stop;
/* The session is the embedded mode's guardian (lib/guard.c): BYE asks
 * for DONE, and leaving waits for it, up to SESS_DONE_WAIT_MS. */
static int sess_guarded;
#define SESS_DONE_WAIT_MS 10000

/* Send one message, with `fd` attached when >= 0. Never blocks, never
 * raises SIGPIPE. Returns 0 or a negative errno; a broken connection
 * marks the session dead. Async-signal-safe. */
static int sess_send(const void *msg, size_t len, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {(void *)msg, len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	int s = __atomic_load_n(&sess_fd, __ATOMIC_ACQUIRE);

	if (s < 0)
		return -ENOTCONN;
	if (fd >= 0) {
		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof(u.buf);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	for (;;) {
		ssize_t n = sendmsg(s, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n == (ssize_t)len)
			return 0;
		if (n >= 0)
			return -EMSGSIZE;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != ENOBUFS)
			__atomic_store_n(&sess_state, SESS_DEAD, __ATOMIC_RELEASE);
		return -errno;
	}
}

/* Hand over every published ring not handed over yet. Async-signal-safe. */
static void sess_sweep(void)
{
	for (unsigned cpu = 0; cpu < STRATA_MAX_CPUS; cpu++) {
		struct strata_ring *r = strata_load_acquire(&strata_rings[cpu]);
		uint8_t zero = 0;
		if (!r || strata_load_relaxed(&ring_sent[cpu]) ||
		    !__atomic_compare_exchange_n(&ring_sent[cpu], &zero, 1, 0,
						 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			continue;
		struct sess_ring m = {{SESS_RING, sizeof(m)}, cpu, strata_pid};
		int ret = sess_send(&m, sizeof(m), r->fd);
		if (ret == -EAGAIN || ret == -ENOBUFS)
			__atomic_store_n(&ring_sent[cpu], 0, __ATOMIC_RELEASE);
		else if (ret)
			__atomic_add_fetch(&sess_rings_unsent, 1, __ATOMIC_RELAXED);
	}
}

/* Our parent's pid, from /proc/self/stat rather than getppid(): the
 * program's own system calls stay its own (a kernel trace that marks a
 * phase with getppid, tests/kernel/align.c, sees no extra one).
 * Async-signal-safe; 0 if unknown. */
static uint32_t self_ppid(void)
{
	char buf[512];
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	uint32_t ppid = 0;

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* "pid (comm) S ppid ...": comm may hold anything, ')' last */
	char *p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2] || p[3] != ' ')
		return 0;
	for (p += 4; *p >= '0' && *p <= '9'; p++)
		ppid = ppid * 10 + (uint32_t)(*p - '0');
	return ppid;
}

/* Connect and say HELLO, with the doorbell the daemon will poll (an
 * eventfd: ring.md §8, "The session daemon"; without one it polls our
 * rings). Async-signal-safe (system calls only). */
static int sess_connect(void)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	struct sess_hello h;
	int s, ret;

	memcpy(a.sun_path, sess_sock, sizeof(a.sun_path));
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0)
		return -errno;
	/* A UNIX connect never waits for the peer to accept: it succeeds
	 * while the backlog has room, EAGAIN otherwise. */
	if (connect(s, (struct sockaddr *)&a, sizeof(a)) < 0) {
		ret = -errno;
		close(s);
		return ret;
	}
	memset(&h, 0, sizeof(h));
	h.h.type = SESS_HELLO;
	h.h.len = sizeof(h);
	h.version = SESS_VERSION;
	h.pid = strata_pid;
	h.ppid = self_ppid();
	h.fork_of = sess_fork_of;
	h.clock_tsc = (uint32_t)strata_clock_tsc;
	h.mode = ring_cfg.mode;
	memcpy(h.uuid, ring_cfg.uuid, 16);
	prctl(PR_GET_NAME, h.name, 0, 0, 0);
	__atomic_store_n(&sess_fd, s, __ATOMIC_RELEASE);
	/* One caller at a time: the session's start, or the thread that
	 * took SESS_BUSY. */
	if (sess_bellfd < 0)
		sess_bellfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ret = sess_send(&h, sizeof(h), sess_bellfd);
	if (ret) {
		__atomic_store_n(&sess_fd, -1, __ATOMIC_RELEASE);
		close(s);
	} else {
		__atomic_store_n(&ring_bellfd, sess_bellfd, __ATOMIC_RELEASE);
	}
	return ret;
}

/*
 * Called by ring_get_or_create() after it published a new ring (the slow
 * path: any thread, possibly a signal handler). A fork child connects
 * here, at its first ring. The ring is then handed over, with any other
 * one a racing thread published meanwhile: a thread that finds another
 * one connecting leaves its ring to that one's sweep, which starts after
 * the state is ON (the seq_cst fences order our publish before our load
 * of the state, and its store of ON before its loads of strata_rings[]).
 */
static void sess_ring_created(struct strata_ring *ring)
{
	int saved_errno = errno;
	int st = __atomic_load_n(&sess_state, __ATOMIC_ACQUIRE), need = SESS_NEED;

	(void)ring;
	if (st == SESS_NEED &&
	    __atomic_compare_exchange_n(&sess_state, &need, SESS_BUSY, 0,
					__ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
		int ret = sess_connect();
		st = ret == -EAGAIN ? SESS_PENDING : ret ? SESS_DEAD : SESS_ON;
		__atomic_store_n(&sess_state, st, __ATOMIC_SEQ_CST);
	}
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&sess_state, __ATOMIC_SEQ_CST) == SESS_ON)
		sess_sweep();
	errno = saved_errno;
}

struct desc_buf {
	unsigned char *p;
	size_t len, count, skip;
	size_t ndesc; /* descriptors among count (the rest: blob ids) */
	int err;
};

static void desc_flush(struct desc_buf *b)
{
	if (!b->count || b->err)
		return;
	struct sess_desc *d = (struct sess_desc *)b->p;
	d->h.type = SESS_DESC;
	d->h.len = (uint32_t)b->len;
	d->count = (uint32_t)b->count;
	d->pad = 0;
	b->err = sess_send(b->p, b->len, -1);
	if (!b->err)
		sess_desc_sent += b->ndesc;
	else /* blob ids marked sent may not be: all again next time */
		memset(sess_blob_sent, 0, sizeof(sess_blob_sent));
	b->len = sizeof(struct sess_desc);
	b->count = b->ndesc = 0;
}

static int desc_put(unsigned char *p, size_t *len, const void *v, size_t n)
{
	if (*len + n > SESS_MAX_MSG)
		return -1;
	memcpy(p + *len, v, n);
	*len += n;
	return 0;
}

static int desc_put_str(unsigned char *p, size_t *len, const char *s)
{
	return desc_put(p, len, s ? s : "", strlen(s ? s : "") + 1);
}

/* Serialize one descriptor (proto.h, DESC) after those already sent. */
static int desc_add(const struct strata_event_desc *e, void *arg)
{
	struct desc_buf *b = arg;
	unsigned char rec[8];
	size_t len;

	if (b->skip) {
		b->skip--;
		return 0;
	}
	if (b->err)
		return 1;
	for (int tries = 0; tries < 2; tries++) {
		len = b->len;
		rec[0] = e->major;
		rec[1] = e->kind;
		memcpy(rec + 2, &e->minor, 2);
		memcpy(rec + 4, &e->nfields, 2);
		memset(rec + 6, 0, 2);
		int bad = desc_put(b->p, &len, rec, 8) ||
			  desc_put_str(b->p, &len, e->subsystem) ||
			  desc_put_str(b->p, &len, e->name) ||
			  desc_put_str(b->p, &len, e->format) ||
			  desc_put_str(b->p, &len, e->description);
		for (unsigned i = 0; !bad && i < e->nfields; i++) {
			const struct strata_field_desc *f = &e->fields[i];
			memcpy(rec, &f->type, 2);
			memcpy(rec + 2, &f->count, 2);
			memcpy(rec + 4, &f->flags, 4);
			bad = desc_put(b->p, &len, rec, 8) ||
			      desc_put_str(b->p, &len, f->name);
		}
		if (!bad) {
			b->len = len;
			b->count++;
			b->ndesc++;
			return 0;
		}
		if (!b->count)
			break; /* alone too big for a message: left out (raw) */
		desc_flush(b);
		if (b->err)
			return 1;
	}
	sess_desc_sent++; /* skipped for good */
	return 0;
}

/* A blob id not sent yet (proto.h, SESS_DESC_BLOB). */
static int blob_add(unsigned slot, uint32_t id, void *arg)
{
	struct desc_buf *b = arg;
	unsigned char rec[12];
	size_t len;

	if (sess_blob_sent[slot / 8] & (1u << (slot % 8)))
		return 0;
	if (b->err)
		return 1;
	rec[0] = (uint8_t)(id >> 16);
	rec[1] = SESS_DESC_BLOB;
	rec[2] = (uint8_t)id;
	rec[3] = (uint8_t)(id >> 8);
	memset(rec + 4, 0, 8); /* nfields, reserved, four empty strings */
	for (int tries = 0; tries < 2; tries++) {
		len = b->len;
		if (!desc_put(b->p, &len, rec, sizeof(rec))) {
			b->len = len;
			b->count++;
			sess_blob_sent[slot / 8] |= (uint8_t)(1u << (slot % 8));
			return 0;
		}
		desc_flush(b);
		if (b->err)
			return 1;
	}
	return 1;
}

/* Send the descriptors registered since the last call. Not
 * async-signal-safe (registry lock, malloc). */
static void sess_send_descs(void)
{
	struct desc_buf b = {.len = sizeof(struct sess_desc)};

	if (__atomic_load_n(&sess_state, __ATOMIC_ACQUIRE) != SESS_ON)
		return;
	b.p = malloc(SESS_MAX_MSG);
	if (!b.p)
		return;
	b.skip = sess_desc_sent;
	strata_registry_foreach(desc_add, &b);
	registry_foreach_blob(blob_add, &b);
	desc_flush(&b);
	free(b.p);
}

static char sess_enable[1024]; /* STRATA_ENABLE: patterns, comma-separated */

/* Apply STRATA_ENABLE (`strata record -e`) to what is registered now:
 * patterns name events, which exist only once their constructors ran. */
static void sess_apply_enable(void)
{
	char buf[sizeof(sess_enable)], *save = NULL;

	memcpy(buf, sess_enable, sizeof(buf));
	/* Only what is named: per-event flags default to on (dsl.md). An
	 * event racing with this may be missed once, at registration. */
	strata_disable("*:*");
	for (char *p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save))
		strata_enable(p);
}

/* ---- a long-lived daemon's state file (docs/record.md, "The control
 * file"): mapped read-only, polled by the helper thread, never waited on. */
static const struct sess_state *sess_st; /* NULL: none (strata record) */
static uint64_t sess_st_gen;              /* the generation applied */
static int sess_disabled;                 /* the daemon said: stopped */
static int sess_ack_due;                  /* tell the daemon sess_st_gen */

/* A consistent, checked copy of the state (proto.h: the seqlock reader).
 * Returns 0, -EAGAIN (the daemon is writing it) or -EINVAL. */
static int state_read(struct sess_state *out)
{
	for (int tries = 0; tries < 16; tries++) {
		uint64_t g = __atomic_load_n(&sess_st->gen, __ATOMIC_ACQUIRE);
		if (g & 1)
			continue;
		memcpy(out, (const void *)sess_st, sizeof(*out));
		/* The copy's loads before the second load of gen (pairs with
		 * the daemon's release fence after its odd store). */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&sess_st->gen, __ATOMIC_RELAXED) != g)
			continue;
		out->gen = g;
		out->enable[sizeof(out->enable) - 1] = 0;
		if (out->magic != SESS_STATE_MAGIC || out->version != SESS_VERSION ||
		    out->psize_shift < 14 || out->psize_shift > 26 ||
		    out->npackets_shift < 1 || out->npackets_shift > 16 ||
		    out->mode > STRATA_MODE_BLOCK)
			return -EINVAL;
		return 0;
	}
	return -EAGAIN;
}

/* Map DIR/state beside the socket, if there is one of ours. */
static int state_map(const char *sock, struct sess_state *out)
{
	char path[sizeof(sess_sock) + 8];
	const char *slash = strrchr(sock, '/');
	struct stat st;
	int fd;
	void *p;

	if (!slash)
		return -ENOENT;
	snprintf(path, sizeof(path), "%.*s/state", (int)(slash - sock), sock);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || st.st_uid != getuid() || !S_ISREG(st.st_mode) ||
	    st.st_size < (off_t)SESS_STATE_SIZE) {
		close(fd);
		return -EINVAL;
	}
	p = mmap(NULL, SESS_STATE_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -errno;
	sess_st = p;
	if (state_read(out)) {
		munmap(p, SESS_STATE_SIZE);
		sess_st = NULL;
		return -EINVAL;
	}
	return 0;
}

/* What the daemon says: the mask (and -e patterns) while a trace runs,
 * nothing while it is stopped. */
static void state_apply(const struct sess_state *s)
{
	sess_disabled = !s->enabled;
	control_enable_patterns(sess_enable, !sess_disabled);
	if (sess_disabled) {
		mask_set(0);
		return;
	}
	mask_set(s->majors & ~STRATA_MAJOR_BIT(63));
	if (sess_enable[0])
		sess_apply_enable();
}

/*
 * Helper thread, every 10 ms: apply a new state. On a stop, close this
 * process's open packets (after 1 ms for writers that passed the mask
 * check, as at exit) so that the daemon can finish the trace, then ACK
 * (non-blocking; retried on the next round if the socket is full).
 */
static void sess_follow_state(void)
{
	struct sess_state s;

	if (state_read(&s) == 0 && s.gen != sess_st_gen) {
		sess_st_gen = s.gen;
		state_apply(&s);
		if (sess_disabled) {
			struct timespec ts = {0, 1000000};
			nanosleep(&ts, NULL);
			strata_flush();
		}
		sess_ack_due = 1;
	}
	if (sess_ack_due && __atomic_load_n(&sess_state, __ATOMIC_ACQUIRE) == SESS_ON) {
		struct sess_ack a = {{SESS_ACK, sizeof(a)}, sess_st_gen};
		sess_sweep(); /* the daemon has every ring before the ACK */
		int ret = sess_send(&a, sizeof(a), -1);
		if (ret != -EAGAIN && ret != -ENOBUFS)
			sess_ack_due = 0;
	}
}

/*
 * A process whose daemon's backlog was full when it joined (SESS_PENDING):
 * connect now. One caller at a time (the helper thread, or the exit once
 * the helper is stopped; a fork child has its own state). Returns 0 when
 * connected (SESS_ON: the rings go over at the next sweep), -EAGAIN to
 * try later, another negative errno when the daemon is gone (SESS_DEAD).
 */
static int sess_retry(void)
{
	int ret = sess_connect();

	if (ret == -EAGAIN)
		return ret;
	__atomic_store_n(&sess_state, ret ? SESS_DEAD : SESS_ON, __ATOMIC_SEQ_CST);
	if (!ret)
		sess_sweep();
	return ret;
}

/* The helper thread: descriptors, retried handovers, every 10 ms. */
static void *sess_main(void *arg)
{
	uint64_t gen = 0;
	unsigned next_try = 1, wait = 1;

	(void)arg;
	statedump_self(); /* who we are, on this thread, not the program's */
	for (unsigned round = 0; !__atomic_load_n(&sess_thread_stop, __ATOMIC_ACQUIRE);
	     round++) {
		/* not connected yet: try again, every 10 ms doubling to 1 s */
		if (round >= next_try &&
		    __atomic_load_n(&sess_state, __ATOMIC_ACQUIRE) == SESS_PENDING) {
			if (sess_retry() == 0)
				gen = 0; /* every descriptor, to the daemon at last */
			wait = wait < 100 ? wait * 2 : 100;
			next_try = round + wait;
		}
		if (round % 100 == 2) /* 20 ms in, then every second */
			statedump_threads_update();
		uint64_t g = strata_registry_generation();
		if (g != gen) { /* (-e reaches new events as they register) */
			gen = g;
			sess_send_descs();
		}
		if (__atomic_load_n(&sess_state, __ATOMIC_ACQUIRE) == SESS_ON)
			sess_sweep();
		if (sess_st)
			sess_follow_state();
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/* How long leaving waits for the helper: one of its rounds is 10 ms of
 * sleep and a few non-blocking sends (a state dump at most). */
#define SESS_HELPER_JOIN_MS 1000

/* Stop the helper thread and join it, for SESS_HELPER_JOIN_MS at most:
 * exit never waits on it without a bound. True when it is joined. */
static bool sess_stop_helper(void)
{
	struct timespec until;

	__atomic_store_n(&sess_thread_stop, 1, __ATOMIC_RELEASE);
	clock_gettime(CLOCK_REALTIME, &until); /* pthread_timedjoin_np's clock */
	until.tv_sec += SESS_HELPER_JOIN_MS / 1000;
	until.tv_nsec += (SESS_HELPER_JOIN_MS % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	if (pthread_timedjoin_np(sess_thread, NULL, &until))
		return false;
	sess_thread_on = 0;
	return true;
}

static void sess_wait_done(const struct sess_bye *bye);

/* How long leaving waits, at most, for a daemon whose backlog was full
 * when this process joined (SESS_PENDING): it is stopped or swamped, and
 * everything the process logged is in its rings. */
#define SESS_JOIN_EXIT_MS 3000

/* At exit, still SESS_PENDING: try to connect for SESS_JOIN_EXIT_MS,
 * waiting 10 ms doubling to 200 ms. Returns the state then. */
static int sess_leave_retry(void)
{
	long waited = 0, nap = 10;

	for (;;) {
		int ret = sess_retry();
		if (ret != -EAGAIN)
			return ret ? SESS_DEAD : SESS_ON;
		if (waited >= SESS_JOIN_EXIT_MS)
			return SESS_PENDING;
		struct timespec ts = {0, nap * 1000000};
		nanosleep(&ts, NULL);
		waited += nap;
		nap = nap < 200 ? nap * 2 : 200;
	}
}

/*
 * Events that never reached the daemon: say so where it looks, so that
 * the trace counts them (docs/record.md, "Processes that could not
 * join"): a file `unrecorded.PID` in the session directory, "PID NAME
 * EVENTS". Best effort: a daemon that is gone reads nothing.
 */
static void sess_report_unrecorded(uint64_t events)
{
	char path[sizeof(sess_sock) + 32], line[96], name[17] = "";
	const char *slash = strrchr(sess_sock, '/');
	int fd;

	if (!slash || !events)
		return;
	snprintf(path, sizeof(path), "%.*s/unrecorded.%u", (int)(slash - sess_sock),
		 sess_sock, strata_pid);
	prctl(PR_GET_NAME, name, 0, 0, 0);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return;
	int n = snprintf(line, sizeof(line), "%u %s %llu\n", strata_pid,
			 name[0] ? name : "?", (unsigned long long)events);
	if (write(fd, line, (size_t)n) < 0) {
		/* nothing more to do */
	}
	close(fd);
}

/*
 * Leave the session (exit, or strata_stop()): stop the tracepoints, close
 * this process's open packets so that the daemon writes them, send the
 * last descriptors and BYE, and disconnect. One line on stderr if the
 * daemon could not be reached, with what was lost.
 */
static void sess_leave(void)
{
	int st = __atomic_load_n(&sess_state, __ATOMIC_ACQUIRE);
	struct sess_bye bye;

	if (st == SESS_OFF)
		return;
	mask_set(0);
	if (sess_thread_on && !sess_stop_helper()) {
		/* The helper may still use the connection: leave it open
		 * (the process is on its way out) and say so. */
		fprintf(stderr, "strata: session %s: the helper thread did not "
			"stop within %d ms; leaving without BYE\n", sess_sock,
			SESS_HELPER_JOIN_MS);
		return;
	}
	/* Writers that passed the mask check may still be between reserve
	 * and commit: the daemon salvages what they leave, so 1 ms is only
	 * a courtesy. */
	struct timespec ts = {0, 1000000};
	nanosleep(&ts, NULL);
	strata_flush();
	memset(&bye, 0, sizeof(bye));
	bye.h.type = SESS_BYE;
	bye.h.len = sizeof(bye);
	for (unsigned i = 0; i < STRATA_MAX_CPUS; i++) {
		struct strata_ring *r = strata_load_acquire(&strata_rings[i]);
		for (int k = 0; r && k < STRATA_LOST_NCAUSES; k++)
			bye.lost[k] += strata_load_relaxed(&r->ctl->lost[k]);
	}
	for (int k = 0; k < STRATA_LOST_NCAUSES; k++)
		bye.lost[k] += strata_load_relaxed(&ring_lost_global[k]);
	if (st == SESS_PENDING)
		st = sess_leave_retry();
	if (st == SESS_ON) {
		sess_send_descs();
		sess_sweep();
	}
	bye.rings_unsent = __atomic_load_n(&sess_rings_unsent, __ATOMIC_RELAXED);
	bye.internal_lost = 0; /* strata's own records are not in lost[] */
	bye.flags = sess_guarded ? SESS_BYE_DONE : 0;
	st = __atomic_load_n(&sess_state, __ATOMIC_ACQUIRE);
	if (st == SESS_ON && sess_send(&bye, sizeof(bye), -1))
		st = SESS_DEAD;
	if (st == SESS_ON && sess_guarded) {
		sess_wait_done(&bye);
	} else if (st == SESS_ON && !bye.rings_unsent) {
		/* fine: the daemon reports */
	} else if (st != SESS_NEED) {
		uint64_t lost = 0, held = 0;
		for (int k = 0; k < STRATA_LOST_NCAUSES; k++)
			lost += bye.lost[k];
		/* what sits in the rings, which nobody will write now */
		for (unsigned i = 0; st != SESS_ON && i < STRATA_MAX_CPUS; i++) {
			struct strata_ring *r = strata_load_acquire(&strata_rings[i]);
			if (r)
				held += cons_ring_pending(r, 0);
		}
		fprintf(stderr, "strata: session %s: the daemon %s; %llu events "
			"in the buffers not recorded, %llu dropped when they "
			"filled\n", sess_sock,
			st == SESS_ON ? "did not take every buffer"
			: st == SESS_PENDING ? "never took this process (its backlog stayed full)"
					     : "is gone or stalled",
			(unsigned long long)held, (unsigned long long)lost);
		sess_report_unrecorded(held + lost);
	}
	int s = __atomic_exchange_n(&sess_fd, -1, __ATOMIC_ACQ_REL);
	if (s >= 0)
		close(s);
	/* Closers wake futexes again (an in-process consumer may come). */
	__atomic_store_n(&ring_bellfd, -1, __ATOMIC_RELEASE);
	__atomic_store_n(&sess_state, SESS_OFF, __ATOMIC_RELEASE);
}

static void sess_at_exit(void)
{
	pthread_mutex_lock(&sess_lock);
	sess_leave();
	pthread_mutex_unlock(&sess_lock);
}

/* ---- STRATA_OUTPUT: the embedded mode's guardian (docs/record.md) ---- */

/*
 * After a BYE that asked for it: wait for DONE, which says this
 * process's sub-trace is on disk, then say in one line, as the in-process
 * consumer does, if anything was lost. Bounded: a guardian that does not
 * answer costs SESS_DONE_WAIT_MS once, and is reported.
 */
static void sess_wait_done(const struct sess_bye *bye)
{
	struct timespec t0, t;
	struct sess_done m;
	struct strata_stats st;
	int fd = __atomic_load_n(&sess_fd, __ATOMIC_ACQUIRE), got = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		long left = SESS_DONE_WAIT_MS - ((t.tv_sec - t0.tv_sec) * 1000 +
						 (t.tv_nsec - t0.tv_nsec) / 1000000);
		struct pollfd pf = {fd, POLLIN, 0};
		if (left <= 0)
			break;
		int r = poll(&pf, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		ssize_t n = recv(fd, &m, sizeof(m), MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n == (ssize_t)sizeof(m) && m.h.type == SESS_DONE &&
		    m.h.len == sizeof(m)) {
			got = 1;
			break;
		}
		if (n <= 0)
			break; /* the guardian is gone */
	}
	if (!got) {
		fprintf(stderr, "strata: %s: the recorder did not confirm the "
			"trace within %d s; it may be incomplete\n",
			sess_output, SESS_DONE_WAIT_MS / 1000);
		return;
	}
	memset(&st, 0, sizeof(st));
	st.events_written = m.events;
	st.bytes_written = m.bytes;
	st.packets_written = m.packets;
	st.lost_io = m.lost_io;
	st.lost_full = bye->lost[STRATA_LOST_FULL];
	st.lost_busy = bye->lost[STRATA_LOST_BUSY];
	st.lost_too_big = bye->lost[STRATA_LOST_TOO_BIG];
	st.lost_nested = bye->lost[STRATA_LOST_NESTED];
	st.lost_no_ring = bye->lost[STRATA_LOST_NO_RING];
	st.internal_logged = statedump_logged();
	last_stats = st; /* sess_lock held (sess_leave()'s callers) */
	if (m.err)
		slog_detail("%s: %s", sess_output, strerror(-m.err));
	report_exit(m.err, &st);
}

/*
 * Join the session whose socket is `path` (STRATA_SESSION, or a daemon's
 * default socket): the ring geometry, mode and initial majors come from
 * the daemon's state file when it has one (`strata daemon`), else from
 * the environment, which `strata record` sets for the whole process
 * tree; `enable`: STRATA_ENABLE or NULL. Returns 0, or a negative errno
 * with the detail set (the caller falls back).
 */
static int sess_join(const char *path, const char *enable)
{
	struct strata_options o;
	struct sess_state stt;
	int ret, have_state;

	if (strlen(path) >= sizeof(sess_sock)) {
		slog_detail("STRATA_SESSION: socket path too long: %s", path);
		return -ENAMETOOLONG;
	}
	if ((ret = strata_options_from_env(&o)))
		return ret;
	o.output = path; /* checked by options_check(), not used */
	if ((ret = options_check(&o)))
		return ret;
	memcpy(sess_sock, path, strlen(path) + 1);
	have_state = state_map(path, &stt) == 0;
	const char *en = have_state ? stt.enable : enable;
	if (en)
		snprintf(sess_enable, sizeof(sess_enable), "%s", en);
	if (have_state && !stt.clock_tsc && strata_clock_tsc) {
		/* the daemon's clock is CLOCK_MONOTONIC (--clock mono): ours
		 * too, and the write protocol that goes with it; no ring
		 * exists yet */
		clock_use_mono();
	}
	if (have_state) {
		o.packet_size = (size_t)1 << stt.psize_shift;
		o.npackets = 1u << stt.npackets_shift;
		o.mode = (int)stt.mode;
	}
	ring_cfg.psize_shift = (uint32_t)__builtin_ctzll(o.packet_size);
	ring_cfg.npackets_shift = (uint32_t)__builtin_ctz(o.npackets);
	ring_cfg.mode = (uint32_t)o.mode;
	random_uuid(ring_cfg.uuid);
	int st = SESS_ON;
	if ((ret = sess_connect()) == -EAGAIN) {
		st = SESS_PENDING; /* its backlog is full: later (sess_retry) */
	} else if (ret) {
		slog_detail("STRATA_SESSION: %s: cannot connect: %s", path,
			    strerror(-ret));
		if (sess_st)
			munmap((void *)sess_st, SESS_STATE_SIZE);
		sess_st = NULL;
		return ret;
	}
	__atomic_store_n(&sess_state, st, __ATOMIC_SEQ_CST);
	ring_created_hook = sess_ring_created;
	if (have_state) {
		sess_st_gen = stt.gen;
		sess_ack_due = 1;
		state_apply(&stt);
	} else if (o.majors == STRATA_MAJORS_NONE) {
		mask_set(0);
	} else {
		mask_set(o.majors ? o.majors : ~STRATA_MAJOR_BIT(63));
	}
	/* -e: the events registered so far now, the others as they
	 * register (control.c), not 10 ms later on the helper thread */
	if (!have_state) {
		control_enable_patterns(sess_enable, 1);
		if (sess_enable[0])
			sess_apply_enable();
	}
	/* last: the helper reads and writes what is set above */
	if (pthread_create(&sess_thread, NULL, sess_main, NULL) == 0) {
		pthread_setname_np(sess_thread, "strata-session");
		sess_thread_on = 1;
	}
	atexit(sess_at_exit);
	return 0;
}

/*
 * A fork child of a process in a daemon's session needs the helper
 * thread to follow the state file (and send its descriptors): unlike
 * under `strata record`, the session outlives it and may be stopped.
 * Called from the pthread_atfork child handler after the rings were
 * dropped; pthread_create there is what LTTng-UST does too (glibc resets
 * its own locks in the child).
 */
static void sess_fork_helper(void)
{
	if (!sess_st || __atomic_load_n(&sess_state, __ATOMIC_RELAXED) != SESS_NEED)
		return;
#if defined(STRATA_TSAN)
	/* ThreadSanitizer's fork() runs the atfork child handlers while it
	 * still holds its own locks: a thread created here waits forever
	 * (GCC 12's and Clang 14's runtimes). Under it the child goes
	 * without a helper: it joins, logs and leaves (BYE sends its
	 * descriptors) but does not follow a stop it outlives. */
	return;
#endif
	sess_ack_due = 1;
	if (pthread_create(&sess_thread, NULL, sess_main, NULL) == 0)
		sess_thread_on = 1;
}

/* In the child of fork(): only async-signal-safe work (the parent may
 * have held any lock). The child joins the session afresh at its first
 * ring, as a process of its own (its own uuid and connection). */
static void sess_after_fork_child(void)
{
	int st = __atomic_load_n(&sess_state, __ATOMIC_RELAXED);

	if (sess_fd >= 0)
		close(sess_fd); /* the parent's connection */
	sess_fd = -1;
	/* the parent's doorbell: ours comes with our own HELLO (one thread
	 * here, nobody is ringing it) */
	if (sess_bellfd >= 0)
		close(sess_bellfd);
	sess_bellfd = -1;
	ring_bellfd = -1;
	sess_thread_on = 0;
	sess_thread_stop = 0;
	sess_desc_sent = 0; /* the daemon clones the parent's; BYE sends all */
	memset(sess_blob_sent, 0, sizeof(sess_blob_sent));
	memset(ring_sent, 0, sizeof(ring_sent));
	sess_rings_unsent = 0;
	if (st != SESS_ON && st != SESS_PENDING) {
		sess_state = st == SESS_OFF ? SESS_OFF : SESS_DEAD;
		return;
	}
	sess_fork_of = self_ppid();
	if (getrandom(ring_cfg.uuid, 16, GRND_NONBLOCK) != 16) {
		uint64_t a = strata_clock() ^ ((uint64_t)strata_pid << 32);
		memcpy(ring_cfg.uuid, &a, 8);
	}
	ring_cfg.uuid[6] = (ring_cfg.uuid[6] & 0x0f) | 0x40;
	ring_cfg.uuid[8] = (ring_cfg.uuid[8] & 0x3f) | 0x80;
	sess_state = SESS_NEED;
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
	if (sess_cons || __atomic_load_n(&sess_state, __ATOMIC_ACQUIRE)) {
		ret = -EALREADY;
		slog_detail(sess_cons ? "tracing already started"
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
		mask_set(0);
	else
		mask_set(o.majors ? o.majors : ~STRATA_MAJOR_BIT(63));
	if (!atexit_done) {
		atexit(stop_at_exit);
		atexit_done = 1;
	}
out:
	pthread_mutex_unlock(&sess_lock);
	if (!ret)
		statedump_self();
	return ret;
}

STRATA_API int strata_stop(void)
{
	int ret = 0;

	pthread_mutex_lock(&sess_lock);
	sess_leave();
	if (sess_cons) {
		/* No new tracepoint enters; the consumer waits (bounded) for
		 * the ones in flight, flushes and drains every ring. */
		mask_set(0);
		memset(&last_stats, 0, sizeof(last_stats));
		ret = cons_destroy(sess_cons, &last_stats);
		sess_cons = NULL;
		ring_stats(&last_stats);
		last_stats.internal_logged += statedump_logged();
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

STRATA_API int strata_snapshot(const char *dir)
{
	struct cons_snap_stats st;
	struct cons_config cc;
	struct clock_point first;
	struct strata_ring **rings = NULL;
	char sub[4096];
	int ret;

	pthread_mutex_lock(&sess_lock);
	if (!sess_cons) {
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
	cons_clock_first(sess_cons, &first);
	memset(&cc, 0, sizeof(cc));
	cc.dir = sub;
	cc.mode = STRATA_MODE_OVERWRITE;
	memcpy(cc.uuid, ring_cfg.uuid, 16);
	cc.cp_first = &first;
	memset(&st, 0, sizeof(st));
	ret = cons_snapshot(&cc, rings, STRATA_MAX_CPUS, &st);
	free(rings);
out:
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
	pthread_mutex_lock(&sess_lock);
	if (sess_cons) {
		memset(st, 0, sizeof(*st));
		cons_get_stats(sess_cons, st);
		ring_stats(st);
		st->internal_logged += statedump_logged();
	} else {
		*st = last_stats;
	}
	pthread_mutex_unlock(&sess_lock);
}

/*
 * fork(): the library's locks (session.h) are taken before it, in their
 * nesting order, so that no other thread of ours is inside one when the
 * child is made: the helper thread a daemon's session child starts would
 * otherwise wait forever on a lock that the parent's helper held at that
 * moment (statedump_lock), and so would its exit, joining that helper.
 * EDEADLK: this very thread holds the lock, so fork() was called from a
 * signal handler that interrupted the library; the child then does not
 * trace (its helper could enter the interrupted critical section).
 */
static pthread_mutex_t *const lib_locks[] = {
	&registry_lock, &control_enable_lock, &statedump_lock,
};
#define NLIB_LOCKS (sizeof(lib_locks) / sizeof(lib_locks[0]))
static bool lib_locks_held[NLIB_LOCKS];
static bool fork_interrupted_lib;

static void before_fork(void)
{
	fork_interrupted_lib = false;
	for (size_t i = 0; i < NLIB_LOCKS; i++) {
		lib_locks_held[i] = pthread_mutex_lock(lib_locks[i]) == 0;
		fork_interrupted_lib |= !lib_locks_held[i];
	}
}

static void after_fork_parent(void)
{
	for (size_t i = NLIB_LOCKS; i-- > 0;)
		if (lib_locks_held[i])
			pthread_mutex_unlock(lib_locks[i]);
}

/* In the child, the locks belong to a thread id that no longer exists:
 * glibc's error-checking unlock refuses (EPERM), so each is made anew.
 * The unlock before is for ThreadSanitizer, which takes this thread for
 * the owner and would call the next lock a double lock. */
static void fork_child_locks(void)
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
	for (size_t i = 0; i < NLIB_LOCKS; i++) {
		if (lib_locks_held[i])
			(void)pthread_mutex_unlock(lib_locks[i]);
		pthread_mutex_init(lib_locks[i], &a);
	}
	pthread_mutexattr_destroy(&a);
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
	fork_child_locks();
	if (fork_interrupted_lib) {
		static const char msg[] = "strata: fork() from a signal handler "
			"that interrupted the tracer: the child is not traced\n";
		__atomic_store_n(&sess_state, SESS_OFF, __ATOMIC_RELAXED);
		if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0) {
			/* nothing more to say it with */
		}
	}
	/* Under `strata record` the child keeps tracing, into rings of its
	 * own that it hands over when it creates them. */
	int pst = __atomic_load_n(&sess_state, __ATOMIC_RELAXED);
	if (pst != SESS_ON && pst != SESS_PENDING)
		mask_set(0);
	strata_pid = (uint32_t)getpid();
	sess_after_fork_child();
	strata_tls.tid = 0;
	for (unsigned i = 0; i < STRATA_MAX_CPUS; i++) {
		struct strata_ring *r = strata_rings[i];
		strata_rings[i] = NULL;
		ring_destroy(r);
	}
	sess_cons = NULL; /* the parent's; its thread does not exist here */
	pthread_mutex_init(&sess_lock, NULL);
	sess_fork_helper();
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
	int n = guard_dir_files(dir);

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
	char sock[sizeof(sess_sock)];
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
		snprintf(sess_output, sizeof(sess_output), "%s", out);
		sess_guarded = 1;
		if (!sess_join(sock, env->enable)) {
			setenv("STRATA_SESSION", sock, 1);
			setenv("STRATA_GUARDED", "1", 1);
			started_from_env = 1;
			return 0;
		}
		sess_guarded = 0;
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
	snprintf(sess_output, sizeof(sess_output), "%s", out);
	sess_guarded = 1;
	if ((ret = sess_join(sock, env->enable))) {
		sess_guarded = 0;
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
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);

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
		if (!sess_daemon_dir("default", dir, sizeof(dir), base, sizeof(base)) &&
		    sess_path_private(dir, 1) &&
		    snprintf(sock, sizeof(sock), "%s/sock", dir) > 0 &&
		    sess_path_private(sock, 0))
			sess_join(sock, env.enable);
		return;
	}
	if (sess && *sess) {
		/* an exec'd child of a guarded program: its session too */
		sess_guarded = env.guarded;
		if (out && *out)
			snprintf(sess_output, sizeof(sess_output), "%s", out);
		int ret = sess_join(sess, env.enable);
		if (!ret)
			return;
		sess_guarded = 0;
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
