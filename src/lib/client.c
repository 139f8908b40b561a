/* SPDX-License-Identifier: MIT */
/* The client of a session daemon (STRATA_SESSION, `strata record`, the embedded mode's guardian). */
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

#include "common/format.h"
#include "common/log.h"
#include "common/mono.h"
#include "common/tfile.h"
#include "consumer/consumer.h"
#include "lib/client.h"
#include "lib/clock.h"
#include "lib/descmsg.h"
#include "lib/registry.h"
#include "lib/session.h"
#include "lib/statedump.h"
#include "ring/ring.h"
#include "proto/proto.h"

/*
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
	CLIENT_OFF = 0, /* not in a session */
	CLIENT_NEED,    /* fork child: connect at its first ring */
	CLIENT_BUSY,    /* a thread is connecting */
	CLIENT_ON,      /* connected */
	CLIENT_DEAD,    /* the daemon is gone or never answered */
	/* joined, not connected yet: the daemon's backlog was full (it was
	 * stopped, or swamped). Tracing goes on into the rings; the helper
	 * thread, and at last the exit, connect when it takes us
	 * (client_retry(): issue 24, item 7). */
	CLIENT_PENDING,
};

/*
 * The session daemon's client: one per process (a fork child resets it,
 * client_after_fork_child()). The fields the slow path reads or writes
 * (state, fd, ring_sent, rings_unsent) are accessed atomically:
 *
 * - state is stored with release (seq_cst before a sweep: see
 *   client_ring_created()) and loaded with acquire, each load pairing with
 *   the store it reads: whoever sees CLIENT_ON sees the connection made
 *   and the fd stored before it;
 * - fd is stored with release once the socket is connected (or to -1
 *   before it is closed), and loaded with acquire by its users, which
 *   pair with that store;
 * - ring_sent[cpu]: a sweep claims a ring's handover by an acq_rel CAS
 *   and gives it back, when the socket was full, by a release store
 *   that the next sweep's CAS pairs with.
 */
static struct client {
	int state; /* CLIENT_* */
	int fd;    /* the connection, -1 when none */
	char sock[sizeof(((struct sockaddr_un *)0)->sun_path)];
	uint32_t fork_of; /* a fork child: the parent's pid, in HELLO */
	/* The eventfd our closers ring while a daemon drains our rings
	 * (ring_bellfd): made once, never closed (ring.h). */
	int bellfd;
	uint8_t ring_sent[STRATA_MAX_CPUS]; /* 1: handed over (or trying) */
	uint32_t rings_unsent;              /* failed for good */
	struct descmsg_sent sent;           /* of the registry */
	pthread_t thread; /* the helper */
	int thread_on;
	/* the helper's first act, statedump_self(), was done: else leaving
	 * does it (a program that ends before its helper ran) */
	bool dumped;
	/* stored with release by client_stop_helper(), loaded with acquire by
	 * client_main(): the helper's last round sees what was done before */
	int thread_stop;
	/* The session is the embedded mode's guardian (lib/guard.c): BYE
	 * asks for DONE, and leaving waits for it, up to CLIENT_DONE_WAIT_MS. */
	int guarded;
	char output[4096]; /* STRATA_OUTPUT, for the guarded one's report */
	char record_trace[4096]; /* STRATA_RECORD_TRACE: strata record's trace */
	char enable[1024]; /* STRATA_ENABLE: patterns, comma-separated */
	/* a long-lived daemon's state file (below) */
	const struct proto_state *st; /* NULL: none (strata record) */
	uint64_t st_gen;             /* the generation applied */
	int disabled;                /* the daemon said: stopped */
	int ack_due;                 /* tell the daemon st_gen */
} cl = {.fd = -1, .bellfd = -1};

#define CLIENT_DONE_WAIT_MS 10000

/* Send one message, with `fd` attached when >= 0. Never blocks, never
 * raises SIGPIPE. Returns 0 or a negative errno; a broken connection
 * marks the session dead. Async-signal-safe. */
static int client_send(const void *msg, size_t len, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {(void *)msg, len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	int s = strata_load_acquire(&cl.fd);

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
		if (errno != EAGAIN && errno != ENOBUFS) /* see struct client */
			strata_store_release(&cl.state, CLIENT_DEAD);
		return -errno;
	}
}

/* Hand over every published ring not handed over yet. Async-signal-safe. */
static void client_sweep(void)
{
	for (unsigned cpu = 0; cpu < STRATA_MAX_CPUS; cpu++) {
		/* pairs with the publishing CAS in ring_get_or_create() */
		struct strata_ring *r = strata_load_acquire(&strata_rings[cpu]);
		uint8_t zero = 0;
		/* The claim: one sweep sends the ring. Acquire pairs with the
		 * release store of 0 below, in an earlier sweep; on failure
		 * another sweep has it, and nothing is read. */
		if (!r || strata_load_relaxed(&cl.ring_sent[cpu]) ||
		    !strata_cas_acq_rel_relaxed(&cl.ring_sent[cpu], &zero, 1))
			continue;
		struct proto_ring m = {{PROTO_RING, sizeof(m)}, cpu, strata_pid};
		int ret = client_send(&m, sizeof(m), r->fd);
		if (ret == -EAGAIN || ret == -ENOBUFS) /* again, next sweep */
			strata_store_release(&cl.ring_sent[cpu], 0);
		else if (ret)
			strata_add_fetch_relaxed(&cl.rings_unsent, 1);
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
static int client_connect(void)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	struct proto_hello h;
	int s, ret;

	memcpy(a.sun_path, cl.sock, sizeof(a.sun_path));
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
	h.h.type = PROTO_HELLO;
	h.h.len = sizeof(h);
	h.version = PROTO_VERSION;
	h.pid = strata_pid;
	h.ppid = self_ppid();
	h.fork_of = cl.fork_of;
	h.clock_tsc = (uint32_t)strata_clock_tsc;
	h.mode = ring_cfg.mode;
	memcpy(h.uuid, ring_cfg.uuid, 16);
	prctl(PR_GET_NAME, h.name, 0, 0, 0);
	/* connected; pairs with the senders' acquire loads (struct client) */
	strata_store_release(&cl.fd, s);
	/* One caller at a time: the session's start, or the thread that
	 * took CLIENT_BUSY. */
	if (cl.bellfd < 0)
		cl.bellfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ret = client_send(&h, sizeof(h), cl.bellfd);
	if (ret) {
		strata_store_release(&cl.fd, -1); /* before the close */
		close(s);
	} else {
		/* The eventfd made above; pairs with ring_doorbell()'s
		 * acquire load (ring/doorbell.c). */
		strata_store_release(&ring_bellfd, cl.bellfd);
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
static void client_ring_created(struct strata_ring *ring)
{
	int saved_errno = errno;
	int st = strata_load_acquire(&cl.state), need = CLIENT_NEED;

	(void)ring;
	/* The CAS makes one thread the connecting one (CLIENT_NEED was
	 * stored before the fork child had other threads). A failure reads
	 * nothing: the load after the fence decides. */
	if (st == CLIENT_NEED &&
	    strata_cas_acq_rel_relaxed(&cl.state, &need, CLIENT_BUSY)) {
		int ret = client_connect();
		st = ret == -EAGAIN ? CLIENT_PENDING : ret ? CLIENT_DEAD : CLIENT_ON;
		/* before the sweep below, in our or another thread's call */
		strata_store_seq_cst(&cl.state, st);
	}
	/* Our publish of the ring before our load of the state; pairs with
	 * the seq_cst store of CLIENT_ON (above, client_retry(), client_join())
	 * that comes before that thread's sweep. */
	strata_fence_seq_cst();
	if (strata_load_seq_cst(&cl.state) == CLIENT_ON)
		client_sweep();
	errno = saved_errno;
}

/* Send the descriptors registered since the last call. Not
 * async-signal-safe (registry lock, malloc). */
static void client_send_descs(void)
{
	if (strata_load_acquire(&cl.state) != CLIENT_ON)
		return;
	descmsg_send_new(&cl.sent, client_send);
}

/* Apply STRATA_ENABLE (`strata record -e`) to what is registered now:
 * patterns name events, which exist only once their constructors ran. */
static void client_apply_enable(void)
{
	char buf[sizeof(cl.enable)], *save = NULL;

	memcpy(buf, cl.enable, sizeof(buf));
	/* Only what is named: per-event flags default to on (dsl.md). An
	 * event racing with this may be missed once, at registration. */
	strata_disable("*:*");
	for (char *p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save))
		strata_enable(p);
}

/* ---- a long-lived daemon's state file (docs/record.md, "The control
 * file"): mapped read-only, polled by the helper thread, never waited on. */

/* A consistent, checked copy of the state (proto.h: the seqlock reader).
 * Returns 0, -EAGAIN (the daemon is writing it) or -EINVAL. */
static int state_read(struct proto_state *out)
{
	for (int tries = 0; tries < 16; tries++) {
		/* Pairs with the daemon's release store of the even gen
		 * (daemon/trace.c): the copy reads what it wrote before. */
		uint64_t g = strata_load_acquire(&cl.st->gen);
		if (g & 1)
			continue;
		memcpy(out, (const void *)cl.st, sizeof(*out));
		/* The copy's loads before the second load of gen (pairs with
		 * the daemon's release fence after its odd store). */
		strata_fence_acquire();
		if (strata_load_relaxed(&cl.st->gen) != g)
			continue;
		out->gen = g;
		out->enable[sizeof(out->enable) - 1] = 0;
		if (out->magic != PROTO_STATE_MAGIC || out->version != PROTO_VERSION ||
		    out->psize_shift < 14 || out->psize_shift > 26 ||
		    out->npackets_shift < 1 || out->npackets_shift > 16 ||
		    out->mode > STRATA_MODE_BLOCK)
			return -EINVAL;
		return 0;
	}
	return -EAGAIN;
}

/* Map DIR/state beside the socket, if there is one of ours. */
static int state_map(const char *sock, struct proto_state *out)
{
	char path[sizeof(cl.sock) + 8];
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
	    st.st_size < (off_t)PROTO_STATE_SIZE) {
		close(fd);
		return -EINVAL;
	}
	p = mmap(NULL, PROTO_STATE_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -errno;
	cl.st = p;
	if (state_read(out)) {
		munmap(p, PROTO_STATE_SIZE);
		cl.st = NULL;
		return -EINVAL;
	}
	return 0;
}

/* What the daemon says: the mask (and -e patterns) while a trace runs,
 * nothing while it is stopped. */
static void state_apply(const struct proto_state *s)
{
	cl.disabled = !s->enabled;
	control_enable_patterns(cl.enable, !cl.disabled);
	if (cl.disabled) {
		mask_set(0);
		return;
	}
	mask_set(s->majors & ~STRATA_MAJOR_BIT(63));
	if (cl.enable[0])
		client_apply_enable();
}

/*
 * Helper thread, every 10 ms: apply a new state. On a stop, close this
 * process's open packets (after 1 ms for writers that passed the mask
 * check, as at exit) so that the daemon can finish the trace, then ACK
 * (non-blocking; retried on the next round if the socket is full).
 */
static void client_follow_state(void)
{
	struct proto_state s;

	if (state_read(&s) == 0 && s.gen != cl.st_gen) {
		cl.st_gen = s.gen;
		state_apply(&s);
		if (cl.disabled) {
			struct timespec ts = {0, 1000000};
			nanosleep(&ts, NULL);
			strata_flush();
		}
		cl.ack_due = 1;
	}
	if (cl.ack_due && strata_load_acquire(&cl.state) == CLIENT_ON) {
		struct proto_ack a = {{PROTO_ACK, sizeof(a)}, cl.st_gen};
		client_sweep(); /* the daemon has every ring before the ACK */
		int ret = client_send(&a, sizeof(a), -1);
		if (ret != -EAGAIN && ret != -ENOBUFS)
			cl.ack_due = 0;
	}
}

/*
 * A process whose daemon's backlog was full when it joined (CLIENT_PENDING):
 * connect now. One caller at a time (the helper thread, or the exit once
 * the helper is stopped; a fork child has its own state). Returns 0 when
 * connected (CLIENT_ON: the rings go over at the next sweep), -EAGAIN to
 * try later, another negative errno when the daemon is gone (CLIENT_DEAD).
 */
static int client_retry(void)
{
	int ret = client_connect();

	if (ret == -EAGAIN)
		return ret;
	/* before the sweep: pairs with client_ring_created()'s fence */
	strata_store_seq_cst(&cl.state, ret ? CLIENT_DEAD : CLIENT_ON);
	if (!ret)
		client_sweep();
	return ret;
}

/* The helper thread: descriptors, retried handovers, every 10 ms. */
static void *client_main(void *arg)
{
	uint64_t gen = 0;
	unsigned next_try = 1, wait = 1;

	(void)arg;
	/* who we are, on this thread, not the program's */
	cl.dumped = statedump_self(false);
	for (unsigned round = 0; !strata_load_acquire(&cl.thread_stop);
	     round++) {
		/* not connected yet: try again, every 10 ms doubling to 1 s */
		if (round >= next_try &&
		    strata_load_acquire(&cl.state) == CLIENT_PENDING) {
			if (client_retry() == 0)
				gen = 0; /* every descriptor, to the daemon at last */
			wait = wait < 100 ? wait * 2 : 100;
			next_try = round + wait;
		}
		if (round % 100 == 2) /* 20 ms in, then every second */
			statedump_threads_update();
		uint64_t g = strata_registry_generation();
		if (g != gen) { /* (-e reaches new events as they register) */
			gen = g;
			client_send_descs();
		}
		if (strata_load_acquire(&cl.state) == CLIENT_ON)
			client_sweep();
		if (cl.st)
			client_follow_state();
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/* How long leaving waits for the helper: one of its rounds is 10 ms of
 * sleep and a few non-blocking sends (a state dump at most). */
#define CLIENT_HELPER_JOIN_MS 1000

/* Stop the helper thread and join it, for CLIENT_HELPER_JOIN_MS at most:
 * exit never waits on it without a bound. True when it is joined. */
static bool client_stop_helper(void)
{
	struct timespec until;

	strata_store_release(&cl.thread_stop, 1);
	clock_gettime(CLOCK_REALTIME, &until); /* pthread_timedjoin_np's clock */
	until.tv_sec += CLIENT_HELPER_JOIN_MS / 1000;
	until.tv_nsec += (CLIENT_HELPER_JOIN_MS % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	if (pthread_timedjoin_np(cl.thread, NULL, &until))
		return false;
	cl.thread_on = 0;
	return true;
}

static void client_wait_done(const struct proto_bye *bye,
			     struct strata_stats *last);

/* How long leaving waits, at most, for a daemon whose backlog was full
 * when this process joined (CLIENT_PENDING): it is stopped or swamped, and
 * everything the process logged is in its rings. */
#define CLIENT_JOIN_EXIT_MS 3000

/* At exit, still CLIENT_PENDING: try to connect for CLIENT_JOIN_EXIT_MS,
 * waiting 10 ms doubling to 200 ms. Returns the state then. */
static int client_leave_retry(void)
{
	long waited = 0, nap = 10;

	for (;;) {
		int ret = client_retry();
		if (ret != -EAGAIN)
			return ret ? CLIENT_DEAD : CLIENT_ON;
		if (waited >= CLIENT_JOIN_EXIT_MS)
			return CLIENT_PENDING;
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
 * EVENTS". Best effort: a daemon that is gone reads nothing; a `strata
 * record` that is gone (killed) left its trace, which is told directly.
 */
static void trace_note_unrecorded(uint64_t events)
{
	session_note_unrecorded(cl.record_trace, events,
				"the recorder was gone when it left");
}

static void client_report_unrecorded(uint64_t events, bool recorder_gone)
{
	char path[sizeof(cl.sock) + 32], line[96], name[17] = "";
	const char *slash = strrchr(cl.sock, '/');
	int fd;

	if (!slash || !events)
		return;
	if (recorder_gone && cl.record_trace[0]) {
		trace_note_unrecorded(events);
		return;
	}
	snprintf(path, sizeof(path), "%.*s/unrecorded.%u", (int)(slash - cl.sock),
		 cl.sock, strata_pid);
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

void client_record_trace(const char *dir)
{
	if (dir && *dir && strlen(dir) < sizeof(cl.record_trace))
		memcpy(cl.record_trace, dir, strlen(dir) + 1);
}

/*
 * Leave the session (exit, or strata_stop()): stop the tracepoints, close
 * this process's open packets so that the daemon writes them, send the
 * last descriptors and BYE, and disconnect. One line on stderr if the
 * daemon could not be reached, with what was lost.
 */
void client_leave(struct strata_stats *last)
{
	int st = strata_load_acquire(&cl.state);
	struct proto_bye bye;

	if (st == CLIENT_OFF)
		return;
	bool wanted = mask_wanted() != 0;
	mask_set(0);
	if (cl.thread_on && !client_stop_helper()) {
		/* The helper may still use the connection: leave it open
		 * (the process is on its way out) and say so. */
		fprintf(stderr, "strata: session %s: the helper thread did not "
			"stop within %d ms; leaving without BYE\n", cl.sock,
			CLIENT_HELPER_JOIN_MS);
		return;
	}
	/* Writers that passed the mask check may still be between reserve
	 * and commit: the daemon salvages what they leave, so 1 ms is only
	 * a courtesy. */
	struct timespec ts = {0, 1000000};
	nanosleep(&ts, NULL);
	/* A program that ends before its helper's first act has had no
	 * state dump (mask_set(0) above makes the helper skip it): no maps,
	 * so no symbols for its addresses. The helper is stopped: ours. */
	if (wanted && !cl.dumped)
		cl.dumped = statedump_self(true);
	strata_flush();
	memset(&bye, 0, sizeof(bye));
	bye.h.type = PROTO_BYE;
	bye.h.len = sizeof(bye);
	for (unsigned i = 0; i < STRATA_MAX_CPUS; i++) {
		struct strata_ring *r = strata_load_acquire(&strata_rings[i]);
		for (int k = 0; r && k < STRATA_LOST_NCAUSES; k++)
			bye.lost[k] += strata_load_relaxed(&r->ctl->lost[k]);
	}
	for (int k = 0; k < STRATA_LOST_NCAUSES; k++)
		bye.lost[k] += strata_load_relaxed(&ring_lost_global[k]);
	if (st == CLIENT_PENDING)
		st = client_leave_retry();
	if (st == CLIENT_ON) {
		client_send_descs();
		client_sweep();
	}
	bye.rings_unsent = strata_load_relaxed(&cl.rings_unsent);
	bye.internal_lost = 0; /* strata's own records are not in lost[] */
	bye.flags = cl.guarded ? PROTO_BYE_DONE : 0;
	st = strata_load_acquire(&cl.state);
	if (st == CLIENT_ON && client_send(&bye, sizeof(bye), -1))
		st = CLIENT_DEAD;
	if (st == CLIENT_ON && cl.guarded) {
		client_wait_done(&bye, last);
	} else if (st == CLIENT_ON && !bye.rings_unsent) {
		/* fine: the daemon reports */
	} else if (st != CLIENT_NEED) {
		uint64_t lost = 0, held = 0;
		for (int k = 0; k < STRATA_LOST_NCAUSES; k++)
			lost += bye.lost[k];
		/* what sits in the rings, which nobody will write now */
		for (unsigned i = 0; st != CLIENT_ON && i < STRATA_MAX_CPUS; i++) {
			struct strata_ring *r = strata_load_acquire(&strata_rings[i]);
			if (r)
				held += cons_ring_pending(r, 0);
		}
		fprintf(stderr, "strata: session %s: the daemon %s; %llu events "
			"in the buffers not recorded, %llu dropped when they "
			"filled\n", cl.sock,
			st == CLIENT_ON ? "did not take every buffer"
			: st == CLIENT_PENDING ? "never took this process (its backlog stayed full)"
					     : "is gone or stalled",
			(unsigned long long)held, (unsigned long long)lost);
		client_report_unrecorded(held + lost, st != CLIENT_ON && st != CLIENT_PENDING);
	}
	/* One closer takes the fd; acquire pairs with client_connect()'s
	 * store, release with the senders' loads (struct client). */
	int s = strata_exchange_acq_rel(&cl.fd, -1);
	if (s >= 0)
		close(s);
	/* Closers wake futexes again (an in-process consumer may come);
	 * pairs with ring_doorbell()'s acquire load. */
	strata_store_release(&ring_bellfd, -1);
	/* after the fd is gone: pairs with the loads of state */
	strata_store_release(&cl.state, CLIENT_OFF);
}

/* ---- STRATA_OUTPUT: the embedded mode's guardian (docs/record.md) ---- */

/*
 * After a BYE that asked for it: wait for DONE, which says this
 * process's sub-trace is on disk, then say in one line, as the in-process
 * consumer does, if anything was lost. Bounded: a guardian that does not
 * answer costs CLIENT_DONE_WAIT_MS once, and is reported.
 */
static void client_wait_done(const struct proto_bye *bye,
			     struct strata_stats *last)
{
	struct proto_done m;
	struct strata_stats st;
	int fd = strata_load_acquire(&cl.fd), got = 0;
	uint64_t deadline = mono_ms() + CLIENT_DONE_WAIT_MS;

	while (mono_poll_in(fd, deadline) > 0) {
		ssize_t n = recv(fd, &m, sizeof(m), MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n == (ssize_t)sizeof(m) && m.h.type == PROTO_DONE &&
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
			cl.output, CLIENT_DONE_WAIT_MS / 1000);
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
	*last = st;
	if (m.err)
		slog_detail("%s: %s", cl.output, strerror(-m.err));
	session_report_exit(cl.output, m.err, &st);
}

/* lib/client.h */
int client_join(const char *path, const char *output, bool guarded,
		const char *enable)
{
	struct strata_options o;
	struct proto_state stt;
	int ret, have_state;

	if (strlen(path) >= sizeof(cl.sock)) {
		slog_detail("STRATA_SESSION: socket path too long: %s", path);
		return -ENAMETOOLONG;
	}
	if ((ret = strata_options_from_env(&o)))
		return ret;
	o.output = path; /* checked by options_check(), not used */
	if ((ret = options_check(&o)))
		return ret;
	memcpy(cl.sock, path, strlen(path) + 1);
	have_state = state_map(path, &stt) == 0;
	const char *en = have_state ? stt.enable : enable;
	if (en)
		snprintf(cl.enable, sizeof(cl.enable), "%s", en);
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
	session_random_uuid(ring_cfg.uuid);
	cl.guarded = guarded;
	if (output)
		snprintf(cl.output, sizeof(cl.output), "%s", output);
	int st = CLIENT_ON;
	if ((ret = client_connect()) == -EAGAIN) {
		st = CLIENT_PENDING; /* its backlog is full: later (client_retry) */
	} else if (ret) {
		slog_detail("STRATA_SESSION: %s: cannot connect: %s", path,
			    strerror(-ret));
		if (cl.st)
			munmap((void *)cl.st, PROTO_STATE_SIZE);
		cl.st = NULL;
		cl.guarded = 0;
		return ret;
	}
	/* as in client_retry(): pairs with client_ring_created()'s fence */
	strata_store_seq_cst(&cl.state, st);
	ring_created_hook = client_ring_created;
	if (have_state) {
		cl.st_gen = stt.gen;
		cl.ack_due = 1;
		state_apply(&stt);
	} else if (o.majors == STRATA_MAJORS_NONE) {
		mask_set(0);
	} else {
		mask_set(o.majors ? o.majors : ~STRATA_MAJOR_BIT(63));
	}
	/* -e: the events registered so far now, the others as they
	 * register (control.c), not 10 ms later on the helper thread */
	if (!have_state) {
		control_enable_patterns(cl.enable, 1);
		if (cl.enable[0])
			client_apply_enable();
	}
	/* last: the helper reads and writes what is set above */
	if (pthread_create(&cl.thread, NULL, client_main, NULL) == 0) {
		pthread_setname_np(cl.thread, "strata-session");
		cl.thread_on = 1;
	}
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
void client_fork_helper(void)
{
	if (!cl.st || strata_load_relaxed(&cl.state) != CLIENT_NEED)
		return;
#if defined(STRATA_TSAN) || defined(STRATA_ASAN)
	/* The sanitizers' fork() runs the atfork child handlers while the
	 * runtime still holds locks of its own: a thread created here waits
	 * forever (TSan in GCC 12's and Clang 14's runtimes; ASan in some
	 * children, whose helper then never stops: "the helper thread did
	 * not stop within 1000 ms"). Under them the child goes without a
	 * helper: it joins, logs and leaves (BYE sends its descriptors) but
	 * does not follow a stop it outlives. */
	return;
#endif
	cl.ack_due = 1;
	if (pthread_create(&cl.thread, NULL, client_main, NULL) == 0)
		cl.thread_on = 1;
}

/* In the child of fork(): only async-signal-safe work (the parent may
 * have held any lock). The child joins the session afresh at its first
 * ring, as a process of its own (its own uuid and connection). */
void client_after_fork_child(void)
{
	int st = strata_load_relaxed(&cl.state);

	if (cl.fd >= 0)
		close(cl.fd); /* the parent's connection */
	cl.fd = -1;
	/* the parent's doorbell: ours comes with our own HELLO (one thread
	 * here, nobody is ringing it) */
	if (cl.bellfd >= 0)
		close(cl.bellfd);
	cl.bellfd = -1;
	ring_bellfd = -1;
	cl.thread_on = 0;
	cl.thread_stop = 0;
	cl.dumped = false; /* our own maps: our helper's, or our leaving's */
	/* the daemon clones the parent's descriptors; BYE sends all */
	memset(&cl.sent, 0, sizeof(cl.sent));
	memset(cl.ring_sent, 0, sizeof(cl.ring_sent));
	cl.rings_unsent = 0;
	if (st != CLIENT_ON && st != CLIENT_PENDING) {
		cl.state = st == CLIENT_OFF ? CLIENT_OFF : CLIENT_DEAD;
		return;
	}
	cl.fork_of = self_ppid();
	if (getrandom(ring_cfg.uuid, 16, GRND_NONBLOCK) != 16) {
		uint64_t a = strata_clock() ^ ((uint64_t)strata_pid << 32);
		memcpy(ring_cfg.uuid, &a, 8);
	}
	ring_cfg.uuid[6] = (ring_cfg.uuid[6] & 0x0f) | 0x40;
	ring_cfg.uuid[8] = (ring_cfg.uuid[8] & 0x3f) | 0x80;
	cl.state = CLIENT_NEED;
}

bool client_joined(void)
{
	return strata_load_acquire(&cl.state) != CLIENT_OFF;
}

bool client_traces_child(void)
{
	int st = strata_load_relaxed(&cl.state);

	return st == CLIENT_ON || st == CLIENT_PENDING;
}

void client_fork_untraced(void)
{
	strata_store_relaxed(&cl.state, CLIENT_OFF);
}
