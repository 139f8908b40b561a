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
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <strata/strata.h>

#include "common/format.h"
#include "common/log.h"
#include "common/tfile.h"
#include "consumer/consumer.h"
#include "lib/client.h"
#include "lib/client_int.h"
#include "lib/clock.h"
#include "lib/descmsg.h"
#include "lib/registry.h"
#include "lib/session.h"
#include "lib/statedump.h"
#include "ring/ring.h"
#include "proto/proto.h"

/* This process's one client (struct client, client_int.h). */
struct client client_cl = {.fd = -1, .bellfd = -1};

/* Send one message, with `fd` attached when >= 0. Never blocks, never
 * raises SIGPIPE. Returns 0 or a negative errno; a broken connection
 * marks the session dead. Async-signal-safe. */
int client_send(const void *msg, size_t len, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {(void *)msg, len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	int s = strata_load_acquire(&client_cl.fd);

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
			strata_store_release(&client_cl.state, CLIENT_DEAD);
		return -errno;
	}
}

/* Hand over every published ring not handed over yet. Async-signal-safe. */
void client_sweep(void)
{
	for (unsigned cpu = 0; cpu < STRATA_MAX_CPUS; cpu++) {
		/* pairs with the publishing CAS in ring_get_or_create() */
		struct strata_ring *r = strata_load_acquire(&strata_rings[cpu]);
		uint8_t zero = 0;
		/* The claim: one sweep sends the ring. Acquire pairs with the
		 * release store of 0 below, in an earlier sweep; on failure
		 * another sweep has it, and nothing is read. */
		if (!r || strata_load_relaxed(&client_cl.ring_sent[cpu]) ||
		    !strata_cas_acq_rel_relaxed(&client_cl.ring_sent[cpu], &zero, 1))
			continue;
		struct proto_ring m = {{PROTO_RING, sizeof(m)}, cpu, strata_pid};
		int ret = client_send(&m, sizeof(m), r->fd);
		if (ret == -EAGAIN || ret == -ENOBUFS) /* again, next sweep */
			strata_store_release(&client_cl.ring_sent[cpu], 0);
		else if (ret)
			strata_add_fetch_relaxed(&client_cl.rings_unsent, 1);
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

	memcpy(a.sun_path, client_cl.sock, sizeof(a.sun_path));
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
	h.fork_of = client_cl.fork_of;
	h.clock_tsc = (uint32_t)strata_clock_tsc;
	h.mode = ring_cfg.mode;
	memcpy(h.uuid, ring_cfg.uuid, 16);
	prctl(PR_GET_NAME, h.name, 0, 0, 0);
	/* connected; pairs with the senders' acquire loads (struct client) */
	strata_store_release(&client_cl.fd, s);
	/* One caller at a time: the session's start, or the thread that
	 * took CLIENT_BUSY. */
	if (client_cl.bellfd < 0)
		client_cl.bellfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ret = client_send(&h, sizeof(h), client_cl.bellfd);
	if (ret) {
		strata_store_release(&client_cl.fd, -1); /* before the close */
		close(s);
	} else {
		/* The eventfd made above; pairs with ring_doorbell()'s
		 * acquire load (ring/doorbell.c). */
		strata_store_release(&ring_bellfd, client_cl.bellfd);
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
	int st = strata_load_acquire(&client_cl.state), need = CLIENT_NEED;

	(void)ring;
	/* The CAS makes one thread the connecting one (CLIENT_NEED was
	 * stored before the fork child had other threads). A failure reads
	 * nothing: the load after the fence decides. */
	if (st == CLIENT_NEED &&
	    strata_cas_acq_rel_relaxed(&client_cl.state, &need, CLIENT_BUSY)) {
		int ret = client_connect();
		st = ret == -EAGAIN ? CLIENT_PENDING : ret ? CLIENT_DEAD : CLIENT_ON;
		/* before the sweep below, in our or another thread's call */
		strata_store_seq_cst(&client_cl.state, st);
	}
	/* Our publish of the ring before our load of the state; pairs with
	 * the seq_cst store of CLIENT_ON (above, client_retry(), client_join())
	 * that comes before that thread's sweep. */
	strata_fence_seq_cst();
	if (strata_load_seq_cst(&client_cl.state) == CLIENT_ON)
		client_sweep();
	errno = saved_errno;
}

/* Send the descriptors registered since the last call. Not
 * async-signal-safe (registry lock, malloc). */
void client_send_descs(void)
{
	if (strata_load_acquire(&client_cl.state) != CLIENT_ON)
		return;
	descmsg_send_new(&client_cl.sent, client_send);
}

/* Apply STRATA_ENABLE (`strata record -e`) to what is registered now:
 * patterns name events, which exist only once their constructors ran. */
void client_apply_enable(void)
{
	char buf[sizeof(client_cl.enable)], *save = NULL;

	memcpy(buf, client_cl.enable, sizeof(buf));
	/* Only what is named: per-event flags default to on (dsl.md). An
	 * event racing with this may be missed once, at registration. */
	strata_disable("*:*");
	for (char *p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save))
		strata_enable(p);
}


/*
 * A process whose daemon's backlog was full when it joined (CLIENT_PENDING):
 * connect now. One caller at a time (the helper thread, or the exit once
 * the helper is stopped; a fork child has its own state). Returns 0 when
 * connected (CLIENT_ON: the rings go over at the next sweep), -EAGAIN to
 * try later, another negative errno when the daemon is gone (CLIENT_DEAD).
 */
int client_retry(void)
{
	int ret = client_connect();

	if (ret == -EAGAIN)
		return ret;
	/* before the sweep: pairs with client_ring_created()'s fence */
	strata_store_seq_cst(&client_cl.state, ret ? CLIENT_DEAD : CLIENT_ON);
	if (!ret)
		client_sweep();
	return ret;
}

/* The helper thread: descriptors, retried handovers, the state file and
 * the live timer, every 10 ms. */
static void *client_main(void *arg)
{
	uint64_t gen = 0;
	unsigned next_try = 1, wait = 1;

	(void)arg;
	/* who we are, on this thread, not the program's */
	client_cl.dumped = statedump_self(false);
	for (unsigned round = 0; !strata_load_acquire(&client_cl.thread_stop);
	     round++) {
		/* not connected yet: try again, every 10 ms doubling to 1 s */
		if (round >= next_try &&
		    strata_load_acquire(&client_cl.state) == CLIENT_PENDING) {
			if (client_retry() == 0)
				gen = 0; /* every descriptor, to the daemon at last */
			wait = wait < 100 ? wait * 2 : 100;
			next_try = round + wait;
		}
		if (round % 100 == 2) /* 20 ms in, then every second */
			statedump_update();
		uint64_t g = strata_registry_generation();
		if (g != gen) { /* (-e reaches new events as they register) */
			gen = g;
			client_send_descs();
		}
		if (strata_load_acquire(&client_cl.state) == CLIENT_ON)
			client_sweep();
		if (client_cl.st)
			client_follow_state();
		client_live_round();
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
	}
	return NULL;
}


/* Stop the helper thread and join it, for CLIENT_HELPER_JOIN_MS at most:
 * exit never waits on it without a bound. True when it is joined. */
bool client_stop_helper(void)
{
	struct timespec until;

	strata_store_release(&client_cl.thread_stop, 1);
	clock_gettime(CLOCK_REALTIME, &until); /* pthread_timedjoin_np's clock */
	until.tv_sec += CLIENT_HELPER_JOIN_MS / 1000;
	until.tv_nsec += (CLIENT_HELPER_JOIN_MS % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	if (pthread_timedjoin_np(client_cl.thread, NULL, &until))
		return false;
	client_cl.thread_on = 0;
	return true;
}

/* lib/client.h */
int client_join(const char *path, const char *output, bool guarded,
		const char *enable)
{
	struct strata_options o;
	struct proto_state stt;
	int ret, have_state;

	if (strlen(path) >= sizeof(client_cl.sock)) {
		slog_detail("STRATA_SESSION: socket path too long: %s", path);
		return -ENAMETOOLONG;
	}
	if ((ret = strata_options_from_env(&o)))
		return ret;
	o.output = path; /* checked by options_check(), not used */
	if ((ret = options_check(&o)))
		return ret;
	memcpy(client_cl.sock, path, strlen(path) + 1);
	have_state = client_state_map(path, &stt) == 0;
	const char *en = have_state ? stt.enable : enable;
	if (en)
		snprintf(client_cl.enable, sizeof(client_cl.enable), "%s", en);
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
	client_cl.guarded = guarded;
	client_cl.live_ms = o.flush_ms; /* or the daemon's (state file) */
	if (output)
		snprintf(client_cl.output, sizeof(client_cl.output), "%s", output);
	int st = CLIENT_ON;
	if ((ret = client_connect()) == -EAGAIN) {
		st = CLIENT_PENDING; /* its backlog is full: later (client_retry) */
	} else if (ret) {
		slog_detail("STRATA_SESSION: %s: cannot connect: %s", path,
			    strerror(-ret));
		if (client_cl.st)
			munmap((void *)client_cl.st, PROTO_STATE_SIZE);
		client_cl.st = NULL;
		client_cl.guarded = 0;
		return ret;
	}
	/* as in client_retry(): pairs with client_ring_created()'s fence */
	strata_store_seq_cst(&client_cl.state, st);
	ring_created_hook = client_ring_created;
	if (have_state) {
		client_cl.st_gen = stt.gen;
		client_cl.ack_due = 1;
		client_state_apply(&stt);
	} else if (o.majors == STRATA_MAJORS_NONE) {
		mask_set(0);
	} else {
		mask_set(o.majors ? o.majors : ~STRATA_MAJOR_BIT(63));
	}
	/* -e: the events registered so far now, the others as they
	 * register (control.c), not 10 ms later on the helper thread */
	if (!have_state) {
		control_enable_patterns(client_cl.enable, 1);
		if (client_cl.enable[0])
			client_apply_enable();
	}
	/* last: the helper reads and writes what is set above */
	if (pthread_create(&client_cl.thread, NULL, client_main, NULL) == 0) {
		pthread_setname_np(client_cl.thread, "strata-session");
		client_cl.thread_on = 1;
	}
	return 0;
}

/*
 * A fork child of a process in a daemon's session needs the helper
 * thread to follow the state file (and send its descriptors): unlike
 * under `strata record`, the session outlives it and may be stopped.
 * Under any session, the live timer (client_live.c) needs it too.
 * Called from the pthread_atfork child handler after the rings were
 * dropped; pthread_create there is what LTTng-UST does too (glibc resets
 * its own locks in the child).
 */
void client_fork_helper(void)
{
	if ((!client_cl.st && !client_cl.live_ms) ||
	    strata_load_relaxed(&client_cl.state) != CLIENT_NEED)
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
	client_cl.ack_due = 1;
	if (pthread_create(&client_cl.thread, NULL, client_main, NULL) == 0)
		client_cl.thread_on = 1;
}

/* In the child of fork(): only async-signal-safe work (the parent may
 * have held any lock). The child joins the session afresh at its first
 * ring, as a process of its own (its own uuid and connection). */
void client_after_fork_child(void)
{
	int st = strata_load_relaxed(&client_cl.state);

	if (client_cl.fd >= 0)
		close(client_cl.fd); /* the parent's connection */
	client_cl.fd = -1;
	/* the parent's doorbell: ours comes with our own HELLO (one thread
	 * here, nobody is ringing it) */
	if (client_cl.bellfd >= 0)
		close(client_cl.bellfd);
	client_cl.bellfd = -1;
	ring_bellfd = -1;
	client_cl.thread_on = 0;
	client_cl.thread_stop = 0;
	client_cl.dumped = false; /* our own maps: our helper's, or our leaving's */
	/* the daemon clones the parent's descriptors; BYE sends all */
	memset(&client_cl.sent, 0, sizeof(client_cl.sent));
	memset(client_cl.ring_sent, 0, sizeof(client_cl.ring_sent));
	client_cl.rings_unsent = 0;
	if (st != CLIENT_ON && st != CLIENT_PENDING) {
		client_cl.state = st == CLIENT_OFF ? CLIENT_OFF : CLIENT_DEAD;
		return;
	}
	client_cl.fork_of = self_ppid();
	if (getrandom(ring_cfg.uuid, 16, GRND_NONBLOCK) != 16) {
		uint64_t a = strata_clock() ^ ((uint64_t)strata_pid << 32);
		memcpy(ring_cfg.uuid, &a, 8);
	}
	ring_cfg.uuid[6] = (ring_cfg.uuid[6] & 0x0f) | 0x40;
	ring_cfg.uuid[8] = (ring_cfg.uuid[8] & 0x3f) | 0x80;
	client_cl.state = CLIENT_NEED;
}

bool client_joined(void)
{
	return strata_load_acquire(&client_cl.state) != CLIENT_OFF;
}

bool client_traces_child(void)
{
	int st = strata_load_relaxed(&client_cl.state);

	return st == CLIENT_ON || st == CLIENT_PENDING;
}

void client_fork_untraced(void)
{
	strata_store_relaxed(&client_cl.state, CLIENT_OFF);
}