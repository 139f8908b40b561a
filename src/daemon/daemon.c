/* SPDX-License-Identifier: MIT */
/* The session daemon: accepts traced processes, maps their rings, writes their streams. */
#define _GNU_SOURCE
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
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
#include "lib/session.h"
#include "ring/ring.h"
#include "daemon/daemon.h"
#include "proto/paths.h"
#include "proto/proto.h"

#define MAX_CTL 16
#define STOP_WAIT_MS 1000 /* for processes to close their packets */

/*
 * Connections (docs/record.md, "Limits"): how many one process may hold,
 * how many may wait for their HELLO and for how long, how long a control
 * client may take to ask, and the fds the daemon keeps for itself: the
 * clients it takes are bounded by RLIMIT_NOFILE, FDS_PER_CLIENT each (a
 * socket, a doorbell, a ring's stream and index).
 */
#define CLIENTS_PER_PID 8
#define PENDING_MAX 64
#define HELLO_MS 2000
#define CTL_IDLE_MS 2000
#define FDS_PER_CLIENT 4
#define FD_RESERVE 64
#define CLIENTS_MIN 16
#define CLIENTS_MAX 16384
#define LISTEN_PAUSE_MS 100 /* out of fds, none spare: the listeners rest */

/* One traced process image (a connection). */
#define CLIENT_BLOBS 64

struct client {
	int fd; /* -1 once closed */
	int bellfd; /* its rings' doorbell (an eventfd), or -1 */
	int registered;
	int pending;      /* connected, no HELLO yet */
	uint64_t hello_by; /* ... until then (ms, now_ms()) */
	uint32_t peer;    /* its pid, the kernel's word (SO_PEERCRED) */
	uint32_t pid, mode;
	char name[17];
	uint8_t uuid[16];
	struct cons *cons;
	struct strata_ring *rings[64];
	unsigned nrings;
	unsigned rings_refused; /* larger than the session's geometry */
	/* descriptors (struct desc_blk, shared with fork children) and
	 * their index by id; what this client made us allocate */
	const struct strata_event_desc **evs;
	size_t nev, cap;
	uint32_t *hidx; /* open addressing: index + 1 into evs, 0 = free */
	size_t hcap;
	size_t desc_bytes;
	int desc_full; /* over its budget: said once */
	/* ids it logs with strata_log_blob() (SESS_DESC_BLOB); past the
	 * bound, blobs show as raw words */
	uint32_t blobs[CLIENT_BLOBS];
	unsigned nblobs;
	uint64_t gen;
	int bye;
	struct sess_bye byemsg;
	int err; /* its sub-trace's first I/O error (negative errno) */
	int untraced; /* its sub-trace could not be made: the cause (errno) */
	uint64_t ring_lost; /* sum of the rings' counters at close */
	uint64_t lost_base; /* ... when the current trace began */
	int traced;         /* has a sub-trace in the current trace */
	uint64_t acked;     /* last state generation it applied */
	struct strata_stats st;
	struct cons_salvage salv;
	struct client *next;
};

/* What the summary says of a process of the trace (client_sum()). */
struct proc_sum {
	uint64_t events, bytes, discarded, lost_io, salvaged, unsalvageable;
	uint64_t unsent;
	int crashed;
};

/* A process gone from the trace, as strata record -v lists it. */
struct proc_rec {
	uint32_t pid;
	char name[17];
	uint8_t crashed;
	uint64_t events, bytes, discarded;
};

/* A control connection (strata session ...), waiting for its request or,
 * for stop and quit, for the trace to be finished. */
struct ctl_conn {
	int fd;
	uint32_t waiting; /* CTL_STOP / CTL_QUIT: answer when stopped */
	uint64_t since;   /* accepted (ms, now_ms()) */
};

enum { ST_STOPPED = 0, ST_RUNNING = 1, ST_STOPPING = 2 };

struct sessd {
	char trace[4096];
	char sdir[4096];
	char sock[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int lfd;
	struct clock_point cp_first;
	struct client *clients; /* newest first */
	unsigned nlive;    /* connected clients, pending ones included */
	unsigned npending; /* ... that have not said HELLO yet */
	unsigned max_clients;
	int spare_fd; /* kept open to be closed when fds run out (accept_fd) */
	uint64_t listen_rest_until; /* ms: listeners not polled before */
	/* sessd_step()'s poll set, grown with the clients */
	struct pollfd *pf;
	struct client **who;
	int *conn;
	size_t pfcap;
	size_t desc_bytes; /* every client's descriptors (desc_blk) */
	uint64_t ring_psize, ring_bytes; /* the largest ring a client may hand over */
	/* The current trace's processes that are gone, their structures
	 * freed (clients_reap): their totals, and under strata record one
	 * line's worth each for its summary (-v). */
	struct sessd_totals done;
	struct proc_rec *recs;
	size_t nrecs, caprecs;
	unsigned dir_seq; /* the last K of a pid-N.K made in this trace */
	unsigned limits_said; /* bit per enum limit: said once */
	int err;
	/* long-lived daemon */
	int daemon;
	int state;
	char ctl[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char statef[4200];
	int ctl_fd, lock_fd;
	struct sess_state *st; /* mapped, ours to write */
	uint64_t stop_gen;
	struct timespec stop_deadline;
	struct ctl_conn conns[MAX_CTL];
	int quit;
	struct sessd_totals last; /* of the last finished trace */
	void (*on_start)(const char *trace_dir);
	void (*on_stop)(const char *trace_dir);
};

/* ---- limits: what a client may make the daemon hold ---------------------- */

/* The limits of docs/record.md, "Limits", each said once per daemon
 * when a client reaches it: a client that keeps hitting one must not
 * fill the log either. */
enum limit {
	LIMIT_DESC, /* descriptor budget */
	LIMIT_RING, /* a ring larger than the session's geometry */
	LIMIT_PID,  /* connections of one process */
	LIMIT_CLIENTS, /* connections in all */
	LIMIT_PENDING, /* connections that did not say HELLO in time */
	LIMIT_FDS,  /* out of file descriptors */
	LIMIT_CTL,  /* control clients that did not ask in time */
};

static void limit_said(struct sessd *d, enum limit which, uint32_t pid)
{
	static const char *const what[] = {
		[LIMIT_DESC] = "sent more event descriptors than a process may "
			       "(4 MiB, 64 MiB for all processes): the rest show raw",
		[LIMIT_RING] = "handed over a ring larger than the session's "
			       "packet size or ring size: refused, its events "
			       "are lost",
		[LIMIT_PID] = "opened more connections than a process may hold "
			      "(8): refused",
		[LIMIT_CLIENTS] = "connected while the daemon holds as many "
				  "processes as its file descriptors allow: "
				  "refused, not traced",
		[LIMIT_PENDING] = "connected and did not say HELLO in time (2 s, "
				  "or 64 waiting): disconnected",
		[LIMIT_FDS] = "connected while the daemon had no file descriptor "
			      "left: refused, not traced",
		[LIMIT_CTL] = "held a control connection without a request (2 s, "
			      "or 16 waiting): closed",
	};

	if (d->limits_said & (1u << which))
		return;
	d->limits_said |= 1u << which;
	if (pid)
		fprintf(stderr, "strata: pid %u %s (said once; docs/record.md, "
			"\"Limits\")\n", pid, what[which]);
	else
		fprintf(stderr, "strata: a process %s (said once; "
			"docs/record.md, \"Limits\")\n", what[which]);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* c said HELLO, or is gone: no longer one that waits for it. */
static void client_unpend(struct sessd *d, struct client *c)
{
	if (c->pending) {
		c->pending = 0;
		d->npending--;
	}
}

static const struct strata_event_desc *const *src_events(void *ctx, size_t *n)
{
	struct client *c = ctx;
	static const struct strata_event_desc *none[1];

	*n = c->nev;
	return c->evs ? c->evs : none;
}

static size_t desc_hash(uint8_t major, uint16_t minor, size_t cap)
{
	uint32_t k = (uint32_t)major << 16 | minor;

	return (size_t)(k * 2654435761u) & (cap - 1);
}

static const struct strata_event_desc *src_lookup(void *ctx, uint8_t major,
						  uint16_t minor)
{
	struct client *c = ctx;

	if (!c->hcap)
		return NULL;
	for (size_t i = desc_hash(major, minor, c->hcap);; i = (i + 1) & (c->hcap - 1)) {
		const struct strata_event_desc *e;
		if (!c->hidx[i])
			return NULL;
		e = c->evs[c->hidx[i] - 1];
		if (e->major == major && e->minor == minor)
			return e;
	}
}

static int src_is_blob(void *ctx, uint32_t id)
{
	const struct client *c = ctx;

	for (unsigned i = 0; i < c->nblobs; i++)
		if (c->blobs[i] == id)
			return 1;
	return 0;
}

static uint64_t src_generation(void *ctx)
{
	return ((struct client *)ctx)->gen;
}

/* ---- descriptors: checked whole before any memory is taken ------------- */

/*
 * What one client may make the daemon hold in descriptors, and all of
 * them together (docs/record.md, "Limits"); a descriptor past either is
 * refused (its events show raw), said once (limit_said()).
 */
#define DESC_CLIENT_BYTES (4u << 20)
#define DESC_TOTAL_BYTES (64u << 20)
#define DESC_MAX_FIELDS 512
#define DESC_MAX_NAME 128
#define DESC_MAX_TEXT 4096

/* One descriptor in one block with its fields and strings, shared by
 * the clients that have it (a fork child has its parent's) and freed
 * with the last of them. */
struct desc_blk {
	unsigned refs;
	size_t size;
	struct strata_event_desc e;
	struct strata_field_desc f[]; /* then the strings */
};

static struct desc_blk *desc_blk_of(const struct strata_event_desc *e)
{
	return (struct desc_blk *)((char *)e - offsetof(struct desc_blk, e));
}

static void desc_put(struct sessd *d, const struct strata_event_desc *e)
{
	struct desc_blk *b = desc_blk_of(e);

	if (--b->refs)
		return;
	d->desc_bytes -= b->size;
	free(b);
}

/* Index slot i of c->evs by its id (the table has room: add_desc). */
static void hidx_put(struct client *c, size_t i)
{
	const struct strata_event_desc *e = c->evs[i];
	size_t k = desc_hash(e->major, e->minor, c->hcap);

	while (c->hidx[k])
		k = (k + 1) & (c->hcap - 1);
	c->hidx[k] = (uint32_t)(i + 1);
}

/* Give c the descriptor `e` (a reference taken) unless it has one of that
 * id: the first one stays (strata_register's rule). Returns 1 if added,
 * 0 if it had one, -ENOMEM. */
static int add_desc(struct client *c, const struct strata_event_desc *e)
{
	if (src_lookup(c, e->major, e->minor))
		return 0;
	if (c->nev == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		void *p = realloc(c->evs, cap * sizeof(*c->evs));
		if (!p)
			return -ENOMEM;
		c->evs = p;
		c->cap = cap;
	}
	if (2 * (c->nev + 1) > c->hcap) {
		size_t cap = c->hcap ? c->hcap * 2 : 128;
		uint32_t *h = calloc(cap, sizeof(*h));
		if (!h)
			return -ENOMEM;
		free(c->hidx);
		c->hidx = h;
		c->hcap = cap;
		for (size_t i = 0; i < c->nev; i++)
			hidx_put(c, i);
	}
	c->evs[c->nev] = e;
	hidx_put(c, c->nev++);
	desc_blk_of(e)->refs++;
	c->gen++;
	return 1;
}

static void client_descs_free(struct sessd *d, struct client *c)
{
	for (size_t i = 0; i < c->nev; i++)
		desc_put(d, c->evs[i]);
	free(c->evs);
	free(c->hidx);
	c->evs = NULL;
	c->hidx = NULL;
	c->nev = c->cap = c->hcap = 0;
}

static void sessd_free(struct sessd *d, int remove_files);

/* Bind a SOCK_SEQPACKET socket at `path` (mode 0600) and listen. */
static int listen_at(const char *path, int *fdp)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd, ret;

	if (strlen(path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	memcpy(a.sun_path, path, strlen(path) + 1);
	mode_t old = umask(0177); /* the socket file is 0600 */
	ret = bind(fd, (struct sockaddr *)&a, sizeof(a));
	umask(old);
	if (ret < 0 || listen(fd, 128) < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	*fdp = fd;
	return 0;
}

/* A directory that only we can enter: made 0700, or already so. */
static int private_dir(const char *path)
{
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return -errno;
	return sess_path_private(path, 1) ? 0 : -EPERM;
}

/* Publish a change of `state` (proto.h: the seqlock writer). */
static void state_publish(struct sessd *d, int enabled)
{
	struct sess_state *s = d->st;
	uint64_t g;

	if (!s)
		return;
	g = __atomic_load_n(&s->gen, __ATOMIC_RELAXED);
	__atomic_store_n(&s->gen, g + 1, __ATOMIC_RELAXED);
	/* The odd generation is visible before any field changes. */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&s->enabled, (uint32_t)enabled, __ATOMIC_RELAXED);
	/* Pairs with the readers' acquire load of gen (src/lib/session.c). */
	__atomic_store_n(&s->gen, g + 2, __ATOMIC_RELEASE);
	d->stop_gen = g + 2;
}

/* The state file, made whole under another name and renamed: a process
 * that mapped an earlier daemon's file keeps its own, never a truncated
 * one (SIGBUS). */
static int state_create(struct sessd *d, const struct sessd_config *cfg)
{
	char tmp[4300];
	int fd, ret;
	void *p;

	snprintf(d->statef, sizeof(d->statef), "%s/state", d->sdir);
	snprintf(tmp, sizeof(tmp), "%s/state.tmp", d->sdir);
	unlink(tmp);
	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, SESS_STATE_SIZE) < 0) {
		ret = -errno;
		close(fd);
		unlink(tmp);
		return ret;
	}
	p = mmap(NULL, SESS_STATE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		unlink(tmp);
		return -ENOMEM;
	}
	d->st = p;
	d->st->magic = SESS_STATE_MAGIC;
	d->st->version = SESS_VERSION;
	d->st->majors = cfg->majors;
	d->st->psize_shift = cfg->psize_shift;
	d->st->npackets_shift = cfg->npackets_shift;
	d->st->mode = cfg->mode;
	d->st->clock_tsc = (uint32_t)strata_clock_tsc;
	snprintf(d->st->enable, sizeof(d->st->enable), "%s",
		 cfg->enable ? cfg->enable : "");
	d->st->gen = 2;
	if (rename(tmp, d->statef) < 0) {
		ret = -errno;
		unlink(tmp);
		return ret;
	}
	return 0;
}

/* The long-lived daemon's directory: private, one daemon per name (a
 * lock held for its life), sockets left by a dead one replaced. */
static int daemon_dir(struct sessd *d, const struct sessd_config *cfg,
		      const char **what)
{
	char lock[4200];
	int ret;

	if ((cfg->base_dir && (ret = private_dir(cfg->base_dir))) ||
	    (ret = private_dir(d->sdir))) {
		*what = ret == -EPERM ? "the session directory belongs to "
					"another user or is open to others"
				      : "cannot create the session directory";
		return ret;
	}
	snprintf(lock, sizeof(lock), "%s/lock", d->sdir);
	d->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (d->lock_fd < 0 || flock(d->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		ret = errno == EWOULDBLOCK ? -EADDRINUSE : -errno;
		*what = ret == -EADDRINUSE ? "a daemon of that name is running"
					   : "cannot lock the session directory";
		return ret;
	}
	if (snprintf(d->ctl, sizeof(d->ctl), "%s/ctl", d->sdir) >=
	    (int)sizeof(d->ctl)) {
		*what = "session directory path too long";
		return -ENAMETOOLONG;
	}
	unlink(d->sock);
	unlink(d->ctl);
	if ((ret = state_create(d, cfg))) {
		*what = "cannot create the state file";
		return ret;
	}
	if ((ret = listen_at(d->ctl, &d->ctl_fd))) {
		*what = "cannot listen on the control socket";
		return ret;
	}
	return 0;
}

/*
 * The clients the daemon can take: its RLIMIT_NOFILE, less what it keeps
 * for itself, FDS_PER_CLIENT each. A long-lived daemon first raises its
 * soft limit to the hard one (1024 by default, where the hard limit is
 * often far higher); strata record keeps its own, which the traced
 * command inherits. One fd is kept spare for accept_fd().
 */
static void fd_budget(struct sessd *d)
{
	struct rlimit rl;
	uint64_t n = 1024;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		if (d->daemon && rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
				getrlimit(RLIMIT_NOFILE, &rl);
		}
		n = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : rl.rlim_cur;
	}
	n = n > FD_RESERVE ? (n - FD_RESERVE) / FDS_PER_CLIENT : 0;
	d->max_clients = n < CLIENTS_MIN ? CLIENTS_MIN
			 : n > CLIENTS_MAX ? CLIENTS_MAX : (unsigned)n;
	d->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

/* The largest ring a process may hand over: the daemon's geometry, or
 * under strata record the one it exported to the process tree (the
 * environment); without one, what cons_ring_map() allows. */
static void session_geometry(struct sessd *d, const struct sessd_config *cfg)
{
	struct sessd_config env = *cfg;

	if (!cfg->psize_shift && sessd_config_from_env(&env))
		env.psize_shift = env.npackets_shift = 0;
	if (!env.psize_shift) {
		env.psize_shift = 26;
		env.npackets_shift = 16;
	}
	d->ring_psize = UINT64_C(1) << env.psize_shift;
	d->ring_bytes = UINT64_C(1) << (env.psize_shift + env.npackets_shift);
}

/*
 * A strata record killed with SIGKILL leaves its private session
 * directory behind (issue 24, item 9): the next one removes those of
 * ours whose socket nobody listens on any more (connect: ECONNREFUSED),
 * with whatever the processes left in them (unrecorded.PID: their
 * recorder is gone). Only strata-session-* directories of this uid,
 * 0700; a live session answers and stays.
 */
static void sweep_stale_sessions(const char *tmp)
{
	DIR *dir = opendir(tmp);
	struct dirent *e;

	if (!dir)
		return;
	while ((e = readdir(dir))) {
		char path[4200], sock[4300];
		struct stat st;
		if (strncmp(e->d_name, "strata-session-", 15) ||
		    (size_t)snprintf(path, sizeof(path), "%s/%s", tmp, e->d_name) >=
			    sizeof(path) ||
		    lstat(path, &st) || !S_ISDIR(st.st_mode) ||
		    st.st_uid != getuid() || (st.st_mode & 077))
			continue;
		snprintf(sock, sizeof(sock), "%s/sock", path);
		struct sockaddr_un a = {.sun_family = AF_UNIX};
		if (strlen(sock) >= sizeof(a.sun_path))
			continue;
		memcpy(a.sun_path, sock, strlen(sock) + 1);
		int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (s < 0)
			continue;
		int dead = connect(s, (struct sockaddr *)&a, sizeof(a)) < 0 &&
			   (errno == ECONNREFUSED || errno == ENOENT);
		close(s);
		if (!dead)
			continue;
		DIR *sub = opendir(path);
		struct dirent *f;
		while (sub && (f = readdir(sub))) {
			char fp[4500];
			if (strcmp(f->d_name, ".") && strcmp(f->d_name, "..") &&
			    (size_t)snprintf(fp, sizeof(fp), "%s/%s", path, f->d_name) <
				    sizeof(fp))
				unlink(fp);
		}
		if (sub)
			closedir(sub);
		rmdir(path);
	}
	closedir(dir);
}

int sessd_create(const struct sessd_config *cfg, struct sessd **out,
		 const char **what)
{
	struct sessd *d = calloc(1, sizeof(*d));
	const char *tmp = getenv("TMPDIR");
	int ret;

	/* The daemon's own view of the trace clock, explicitly: libstrata's
	 * constructor is not necessarily linked into the tool. */
	clock_init();
	/* Each client's consumer takes large buffers for its life (a 512 KiB
	 * bitmap of ids, packet buffers): always mapped and unmapped, never
	 * from the heap, where glibc's sliding threshold would put them
	 * after the first was freed and keep the heap at its peak. Fixed,
	 * the daemon's memory follows its clients (record.md, "Limits"). */
	mallopt(M_MMAP_THRESHOLD, 64 << 10);
	if (!d)
		return -ENOMEM;
	d->lfd = d->ctl_fd = d->lock_fd = d->spare_fd = -1;
	for (int i = 0; i < MAX_CTL; i++)
		d->conns[i].fd = -1;
	d->daemon = cfg->session_dir != NULL;
	d->on_start = cfg->on_start;
	d->on_stop = cfg->on_stop;
	session_geometry(d, cfg);
	fd_budget(d);
	if (d->daemon) {
		snprintf(d->sdir, sizeof(d->sdir), "%s", cfg->session_dir);
	} else {
		sweep_stale_sessions(tmp && *tmp ? tmp : "/tmp");
		snprintf(d->sdir, sizeof(d->sdir), "%s/strata-session-XXXXXX",
			 tmp && *tmp ? tmp : "/tmp");
		/* mkdtemp: 0700, a name nobody else could have made */
		if (!mkdtemp(d->sdir)) {
			ret = -errno;
			*what = "cannot create the session directory";
			free(d);
			return ret;
		}
	}
	if (snprintf(d->sock, sizeof(d->sock), "%s/sock", d->sdir) >=
	    (int)sizeof(d->sock)) {
		ret = -ENAMETOOLONG;
		*what = "session socket path too long (set TMPDIR)";
		goto fail;
	}
	if (d->daemon && (ret = daemon_dir(d, cfg, what)))
		goto fail;
	if ((ret = listen_at(d->sock, &d->lfd))) {
		*what = "cannot listen on the session socket";
		goto fail;
	}
	if (cfg->trace_dir && (ret = sessd_start(d, cfg->trace_dir))) {
		*what = "cannot start the trace";
		goto fail;
	}
	*out = d;
	return 0;
fail:
	sessd_free(d, ret != -EADDRINUSE);
	return ret;
}
const char *sessd_socket(const struct sessd *d)
{
	return d->sock;
}

unsigned sessd_live(const struct sessd *d)
{
	struct pollfd p = {.fd = d->lfd, .events = POLLIN};

	/* A process whose connection still waits in the backlog is one too:
	 * strata record must not end before it took its messages (a busy
	 * daemon, 1,000 processes joining at once). */
	return d->nlive + (d->lfd >= 0 && poll(&p, 1, 0) == 1);
}

/*
 * TRACE/ust/pid-N, or pid-N.K when that exists (another image of that
 * pid: exec; or a pid that connected again): K counts such directories
 * in the trace (*seq), so that a pid connecting many times costs one
 * mkdir each, never runs out of names, and never fails the trace.
 */
static int make_dir(const char *trace, uint32_t pid, unsigned *seq, char *dir,
		    size_t n)
{
	char ust[4100];

	if (snprintf(ust, sizeof(ust), "%s/ust", trace) >= (int)sizeof(ust))
		return -ENAMETOOLONG;
	int ret = tfile_mkdir(ust, 0);
	if (ret)
		return ret;
	snprintf(dir, n, "%s/pid-%u", ust, pid);
	/* bounded: K only grows, and only directories made by others
	 * (there are none in a new trace) are skipped */
	for (unsigned tries = 0; tries < 100000; tries++) {
		ret = tfile_mkdir(dir, 1);
		if (ret != -EEXIST)
			return ret;
		snprintf(dir, n, "%s/pid-%u.%u", ust, pid, ++*seq);
	}
	return -EEXIST;
}

/* Where this client's descriptors and identity come from (consumer.h). */
static void client_source(struct sessd *d, struct client *c,
			  struct cons_source *src)
{
	memset(src, 0, sizeof(*src));
	src->pid = c->pid;
	src->procname = c->name;
	src->events = src_events;
	src->lookup = src_lookup;
	src->is_blob = src_is_blob;
	src->generation = src_generation;
	src->ctx = c;
	src->cp_first = &d->cp_first;
}

static uint64_t client_ring_lost(const struct client *c)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < c->nrings; i++)
		for (int k = 0; k < STRATA_LOST_NCAUSES; k++)
			n += strata_load_relaxed(&c->rings[i]->ctl->lost[k]);
	return n;
}

/* Begin this client's sub-trace in the current trace (d->trace) and hand
 * it the rings it has. Returns 0 or a negative errno (said on stderr). */
static int client_begin_trace(struct sessd *d, struct client *c)
{
	struct cons_source src;
	struct cons_config cc;
	char dir[4400];
	int ret;

	if ((ret = make_dir(d->trace, c->pid, &d->dir_seq, dir, sizeof(dir)))) {
		fprintf(stderr, "strata: %s/ust: cannot create directory: %s\n",
			d->trace, strerror(-ret));
		if (!d->err)
			d->err = ret;
		c->untraced = ret; /* counted when it leaves (client_close) */
		return ret;
	}
	client_source(d, c, &src);
	memset(&cc, 0, sizeof(cc));
	cc.dir = dir;
	cc.mode = (int)c->mode;
	memcpy(cc.uuid, c->uuid, 16);
	cc.src = &src;
	if ((ret = cons_create(&cc, &c->cons))) {
		fprintf(stderr, "strata: %s: %s\n", dir,
			strata_strerror_detail());
		if (!d->err)
			d->err = ret;
		c->untraced = ret;
		return ret;
	}
	c->traced = 1;
	c->untraced = 0;
	c->bye = 0;
	memset(&c->st, 0, sizeof(c->st));
	memset(&c->salv, 0, sizeof(c->salv));
	c->ring_lost = 0;
	c->lost_base = client_ring_lost(c);
	for (unsigned i = 0; i < c->nrings; i++)
		if (cons_add_ring(c->cons, c->rings[i]))
			slog("session: pid %u: ring of cpu %u not traced", c->pid,
			     c->rings[i]->cpu);
	return 0;
}

static void client_close(struct sessd *d, struct client *c, int writers_gone);

static void client_hello(struct sessd *d, struct client *c,
			 const unsigned char *buf, size_t len)
{
	struct sess_hello h;
	struct ucred cr;
	socklen_t crlen = sizeof(cr);

	if (len != sizeof(h))
		goto bad;
	memcpy(&h, buf, sizeof(h));
	if (h.version != SESS_VERSION || h.mode > STRATA_MODE_BLOCK)
		goto bad;
	/* The kernel's word, not the message's, for who is at the other end. */
	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) < 0 ||
	    (uint32_t)cr.pid != h.pid || cr.uid != getuid())
		goto bad;
	if ((int)h.clock_tsc != strata_clock_tsc) {
		fprintf(stderr, "strata: pid %u uses another trace clock: not "
			"traced\n", h.pid);
		goto bad;
	}
	c->pid = h.pid;
	c->mode = h.mode;
	memcpy(c->uuid, h.uuid, 16);
	memcpy(c->name, h.name, 16);
	c->name[16] = 0;
	for (char *p = c->name; *p; p++)
		if ((unsigned char)*p < 0x20)
			*p = '?';
	if (h.fork_of) {
		/* A fork child: the parent's descriptors (same image). */
		for (struct client *p = d->clients; p; p = p->next)
			if (p != c && p->pid == h.fork_of && p->registered) {
				for (size_t i = 0; i < p->nev; i++)
					add_desc(c, p->evs[i]);
				memcpy(c->blobs, p->blobs, sizeof(c->blobs));
				c->nblobs = p->nblobs;
				break;
			}
	}
	/* A stopped daemon's processes only register: their sub-traces
	 * begin with the next trace (sessd_start). One whose sub-trace
	 * cannot be made stays connected, untraced: what it logs is counted
	 * when it leaves, with the cause (client_close()). */
	if (d->state == ST_RUNNING)
		client_begin_trace(d, c);
	c->registered = 1;
	client_unpend(d, c);
	return;
bad:
	slog("session: a client sent a bad HELLO: disconnected");
	client_close(d, c, 1);
}

static void client_ring(struct sessd *d, struct client *c,
			const unsigned char *buf, size_t len, int fd)
{
	struct sess_ring m;
	struct strata_ring *r;
	int ret;

	if (fd < 0 || len != sizeof(m) || !c->registered ||
	    c->nrings == sizeof(c->rings) / sizeof(c->rings[0]))
		goto bad;
	memcpy(&m, buf, sizeof(m));
	if (m.pid != c->pid)
		goto bad;
	if ((ret = cons_ring_map(fd, c->pid, c->uuid, &r)))
		goto bad;
	/* Nothing the daemon does costs more than a packet (a snapshot
	 * copies packet by packet), but its memory is the client's to
	 * choose: no larger than the session's geometry (record.md,
	 * "Limits"). */
	if (r->psize > d->ring_psize || r->bufmask + 1 > d->ring_bytes) {
		cons_ring_unmap(r);
		c->rings_refused++;
		limit_said(d, LIMIT_RING, c->pid);
		return;
	}
	int dup = 0; /* one ring per CPU */
	for (unsigned i = 0; i < c->nrings; i++)
		dup |= c->rings[i]->cpu == r->cpu;
	if (r->cpu != m.cpu || dup || (c->cons && cons_add_ring(c->cons, r))) {
		cons_ring_unmap(r);
		goto bad;
	}
	c->rings[c->nrings++] = r;
	return;
bad:
	/* Refused: its events are lost; the process counts nothing, so
	 * say it (verbose) -- an honest process never gets here. */
	slog("session: pid %u: a ring was refused: %s", c->pid,
	     strata_strerror_detail());
}

/* A NUL-terminated string inside [*p, end); advances *p. */
static const char *take_str(const unsigned char **p, const unsigned char *end)
{
	const unsigned char *s = *p;
	const unsigned char *z = memchr(s, 0, (size_t)(end - s));

	if (!z)
		return NULL;
	*p = z + 1;
	return (const char *)s;
}

/* Names and text go into TSDL: keep them short and printable. */
static int name_ok(const char *s)
{
	if (!*s || strlen(s) > DESC_MAX_NAME)
		return 0;
	for (; *s; s++)
		if (!(*s == '_' || (*s >= '0' && *s <= '9') ||
		      (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
			return 0;
	return 1;
}

/* One DESC record (proto.h) read in place, nothing allocated. */
struct desc_rec {
	uint8_t major, kind;
	uint16_t minor, nfields;
	const char *sub, *name, *fmt, *desc;
	const unsigned char *fields; /* nfields records: u16 type, u16 count,
				      * u32 flags, name */
	size_t size; /* of its desc_blk */
};

/*
 * Read the record at *p (advanced past it) and check all of it: the
 * fields are read and checked here, before anything is allocated for it,
 * so that what a record claims (65535 fields) costs nothing unless it
 * is there. Returns 1 (good), 0 (whole but not usable: skipped, its
 * events show raw) or -1 (cut short: the rest of the message is not
 * read).
 */
static int desc_parse(const unsigned char **p, const unsigned char *end,
		      struct desc_rec *r)
{
	unsigned char rec[8];
	int ok;

	if (end - *p < 8)
		return -1;
	memcpy(rec, *p, 8);
	*p += 8;
	r->major = rec[0];
	r->kind = rec[1];
	memcpy(&r->minor, rec + 2, 2);
	memcpy(&r->nfields, rec + 4, 2);
	if (!(r->sub = take_str(p, end)) || !(r->name = take_str(p, end)) ||
	    !(r->fmt = take_str(p, end)) || !(r->desc = take_str(p, end)))
		return -1;
	ok = r->major >= 1 && r->major <= STRATA_MAJOR_MAX &&
	     r->kind <= STRATA_EV_END && r->nfields <= DESC_MAX_FIELDS &&
	     name_ok(r->sub) && name_ok(r->name);
	r->size = sizeof(struct desc_blk) +
		  r->nfields * sizeof(struct strata_field_desc) +
		  strlen(r->sub) + strlen(r->name) + 2 +
		  strnlen(r->fmt, DESC_MAX_TEXT) + strnlen(r->desc, DESC_MAX_TEXT) + 2;
	r->fields = *p;
	for (unsigned k = 0; k < r->nfields; k++) {
		uint16_t type, count;
		const char *fname;
		if (end - *p < 8)
			return -1;
		memcpy(&type, *p, 2);
		memcpy(&count, *p + 2, 2);
		*p += 8;
		if (!(fname = take_str(p, end)))
			return -1;
		r->size += strlen(fname) + 1;
		if (!name_ok(fname) || type < STRATA_T_U8 || type > STRATA_T_STRING ||
		    (type == STRATA_T_STRING && count))
			ok = 0;
	}
	return ok;
}

/* Copy `s` (at most max bytes of it) to *at, advance *at. */
static const char *blk_str(char **at, const char *s, size_t max)
{
	size_t n = strnlen(s, max);
	char *out = *at;

	memcpy(out, s, n);
	out[n] = 0;
	*at += n + 1;
	return out;
}

/* A checked record (desc_parse) made into a descriptor: one block. */
static struct desc_blk *desc_build(const struct desc_rec *r)
{
	struct desc_blk *b = malloc(r->size);
	const unsigned char *p = r->fields;
	char *at;

	if (!b)
		return NULL;
	b->refs = 0;
	b->size = r->size;
	at = (char *)(b->f + r->nfields);
	for (unsigned k = 0; k < r->nfields; k++) {
		struct strata_field_desc *f = &b->f[k];
		memcpy(&f->type, p, 2);
		memcpy(&f->count, p + 2, 2);
		memcpy(&f->flags, p + 4, 4);
		f->name = blk_str(&at, (const char *)p + 8, DESC_MAX_NAME);
		p += 8 + strlen((const char *)p + 8) + 1;
	}
	memset(&b->e, 0, sizeof(b->e));
	b->e.major = r->major;
	b->e.kind = r->kind;
	b->e.minor = r->minor;
	b->e.nfields = r->nfields;
	b->e.fields = r->nfields ? b->f : NULL;
	b->e.subsystem = blk_str(&at, r->sub, DESC_MAX_NAME);
	b->e.name = blk_str(&at, r->name, DESC_MAX_NAME);
	b->e.format = blk_str(&at, r->fmt, DESC_MAX_TEXT);
	b->e.description = blk_str(&at, r->desc, DESC_MAX_TEXT);
	if (!*r->fmt)
		b->e.format = NULL;
	if (!*r->desc)
		b->e.description = NULL;
	return b;
}

/* An id the process logs as a byte blob (proto.h, SESS_DESC_BLOB). */
static void client_blob(struct client *c, uint32_t id)
{
	for (unsigned i = 0; i < c->nblobs; i++)
		if (c->blobs[i] == id)
			return;
	if (c->nblobs < CLIENT_BLOBS) {
		c->blobs[c->nblobs++] = id;
		c->gen++; /* the metadata says so from now on */
	}
}

static void client_desc(struct sessd *d, struct client *c,
			const unsigned char *buf, size_t len)
{
	struct sess_desc h;
	const unsigned char *p, *end = buf + len;

	if (len < sizeof(h) || !c->registered)
		return;
	memcpy(&h, buf, sizeof(h));
	p = buf + sizeof(h);
	for (uint32_t i = 0; i < h.count; i++) {
		struct desc_rec r;
		int ok = desc_parse(&p, end, &r);
		if (ok < 0)
			return;
		if (r.kind == SESS_DESC_BLOB) {
			client_blob(c, STRATA_ID(r.major, r.minor));
			continue;
		}
		/* undecodable here, or one of that id it has already (a
		 * fork child's copies of its parent's): nothing taken */
		if (!ok || src_lookup(c, r.major, r.minor))
			continue;
		if (c->desc_bytes + r.size > DESC_CLIENT_BYTES ||
		    d->desc_bytes + r.size > DESC_TOTAL_BYTES) {
			if (!c->desc_full)
				limit_said(d, LIMIT_DESC, c->pid);
			c->desc_full = 1;
			continue;
		}
		struct desc_blk *b = desc_build(&r);
		if (!b)
			return;
		if (add_desc(c, &b->e) != 1) {
			free(b);
			return;
		}
		c->desc_bytes += b->size;
		d->desc_bytes += b->size;
	}
}

/* Finish this client's sub-trace of the current trace: write what its
 * rings hold (salvaging them when `writers_gone`), close its streams. */
static void client_end_trace(struct sessd *d, struct client *c, int writers_gone)
{
	if (!c->cons)
		return;
	c->ring_lost = client_ring_lost(c);
	cons_poll(c->cons);
	int ret = cons_finish(c->cons, writers_gone, &c->st, &c->salv);
	c->cons = NULL;
	c->err = ret;
	if (ret && !d->err)
		d->err = ret;
}

/* A BYE that asks for DONE (the embedded mode's guardian): finish the
 * sub-trace now (the process closed its packets before BYE) and say so,
 * with the totals; the process waits for it at exit. */
static void client_done(struct sessd *d, struct client *c)
{
	struct sess_done m;

	client_end_trace(d, c, 1);
	memset(&m, 0, sizeof(m));
	m.h.type = SESS_DONE;
	m.h.len = sizeof(m);
	m.err = c->err;
	m.events = c->st.events_written;
	m.bytes = c->st.bytes_written;
	m.packets = c->st.packets_written;
	m.lost_io = c->st.lost_io;
	if (send(c->fd, &m, sizeof(m), MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		/* it gave up waiting, or is gone: the trace is written */
	}
}

/* The process is gone (EOF) or the session ends: write everything. */
static void client_close(struct sessd *d, struct client *c, int writers_gone)
{
	client_unpend(d, c);
	if (c->fd >= 0) {
		close(c->fd);
		c->fd = -1;
		d->nlive--;
	}
	if (c->bellfd >= 0) {
		close(c->bellfd);
		c->bellfd = -1;
	}
	client_end_trace(d, c, writers_gone);
	if (c->untraced) {
		/* its sub-trace could never be made (a read-only or full
		 * trace directory): all it logged is lost, counted here
		 * with the cause (issue 24, item 9) */
		uint64_t n = client_ring_lost(c);
		for (unsigned i = 0; i < c->nrings; i++)
			n += cons_ring_pending(c->rings[i], 1);
		d->done.untraced++;
		d->done.untraced_events += n;
		if (!d->done.untraced_err)
			d->done.untraced_err = c->untraced;
		c->untraced = 0;
	}
	for (unsigned i = 0; i < c->nrings; i++)
		cons_ring_unmap(c->rings[i]);
	c->nrings = 0;
}

/* Is fd an eventfd (what a HELLO's doorbell must be: the process is not
 * trusted, and another kind of file could block our reads)? */
static int is_eventfd(int fd)
{
	char path[64], link[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return 0;
	link[n] = 0;
	return !strcmp(link, "anon_inode:[eventfd]") &&
	       fcntl(fd, F_SETFL, O_NONBLOCK) == 0;
}

/*
 * The fds that came with a message (SCM_RIGHTS): the first one to *fd,
 * every other one closed at once, whatever the message turns out to be.
 * A message whose control data was cut (MSG_CTRUNC: more than our buffer
 * holds; the kernel discards what did not fit) keeps none. Returns 1 if
 * the message carried control data at all.
 */
static int take_fds(struct msghdr *mh, int *fd)
{
	int ctrunc = (mh->msg_flags & MSG_CTRUNC) != 0;

	*fd = -1;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS ||
		    cm->cmsg_len < CMSG_LEN(0))
			continue;
		size_t nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t k = 0; k < nfd; k++) {
			int x;
			memcpy(&x, CMSG_DATA(cm) + k * sizeof(int), sizeof(int));
			if (*fd < 0 && !ctrunc)
				*fd = x;
			else
				close(x); /* one fd per message */
		}
	}
	return mh->msg_controllen > 0 || ctrunc;
}

/* recvmsg() said 0: the peer is gone (EOF), or it sent an empty message. */
static int peer_gone(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR | POLLNVAL));
}

/* Read every message waiting on a client's socket. */
static void client_read(struct sessd *d, struct client *c)
{
	static unsigned char buf[SESS_MAX_MSG];

	for (int n = 0; n < 256 && c->fd >= 0; n++) {
		union {
			char b[CMSG_SPACE(sizeof(int) * 8)];
			struct cmsghdr align;
		} u;
		struct iovec iov = {buf, sizeof(buf)};
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1,
				    .msg_control = u.b,
				    .msg_controllen = sizeof(u.b)};
		ssize_t len = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		int fd = -1;

		if (len < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (len < 0) {
			client_close(d, c, 1);
			return;
		}
		/* Before anything else: a zero-byte message may carry fds,
		 * and recvmsg() then returns 0 as it does at EOF (record.md,
		 * "Limits": every fd received is closed unless taken). */
		int had_control = take_fds(&mh, &fd);
		if (len == 0 && !had_control && peer_gone(c->fd)) {
			client_close(d, c, 1);
			return;
		}
		struct sess_hdr h;
		if ((size_t)len >= sizeof(h) &&
		    !(mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
			memcpy(&h, buf, sizeof(h));
			if (h.len != (uint32_t)len)
				h.type = 0;
			if (!c->registered && h.type != SESS_HELLO)
				h.type = 0;
			switch (h.type) {
			case SESS_HELLO:
				if (c->registered)
					break;
				client_hello(d, c, buf, (size_t)len);
				if (c->registered && fd >= 0 && is_eventfd(fd)) {
					c->bellfd = fd; /* ring.md §8 */
					fd = -1;
				}
				break;
			case SESS_RING:
				client_ring(d, c, buf, (size_t)len, fd);
				break;
			case SESS_DESC:
				client_desc(d, c, buf, (size_t)len);
				break;
			case SESS_BYE:
				if ((size_t)len == sizeof(c->byemsg) ||
				    (size_t)len == SESS_BYE_V1_LEN) {
					memset(&c->byemsg, 0, sizeof(c->byemsg));
					memcpy(&c->byemsg, buf, (size_t)len);
					c->bye = 1;
					/* the embedded mode's guardian: the
					 * sub-trace written, then said */
					if (c->byemsg.flags & SESS_BYE_DONE)
						client_done(d, c);
					/* its last message: done with it, whether
					 * or not it disconnects (clients_reap) */
					if (fd >= 0)
						close(fd);
					client_close(d, c, 1);
					return;
				}
				break;
			case SESS_ACK: {
				struct sess_ack a;
				if ((size_t)len == sizeof(a)) {
					memcpy(&a, buf, sizeof(a));
					c->acked = a.gen;
				}
				break;
			}
			}
		}
		if (fd >= 0)
			close(fd); /* the mapping keeps the ring alive */
	}
}

/* ---- the trace: start, stop, summary ------------------------------------ */

/* What the summary says of client c, one of the current trace's. */
static void client_sum(const struct client *c, struct proc_sum *p)
{
	uint64_t disc = c->bye ? 0 : c->ring_lost;

	if (c->bye)
		for (int k = 0; k < STRATA_LOST_NCAUSES; k++)
			disc += c->byemsg.lost[k];
	/* strata's own records (the state dump) are not the program's
	 * events: recorded + discarded == logged. Known for a process whose
	 * whole life is in this trace (BYE); a long-lived one's earlier
	 * losses are in lost_base. */
	if (c->bye && !c->lost_base)
		disc -= disc < c->byemsg.internal_lost ? disc : c->byemsg.internal_lost;
	/* a long-lived process: what it lost during this trace */
	p->discarded = disc > c->lost_base ? disc - c->lost_base : 0;
	p->events = c->st.events_written;
	p->bytes = c->st.bytes_written;
	p->lost_io = c->st.lost_io;
	p->salvaged = c->salv.salvaged;
	p->unsalvageable = c->st.packets_incomplete;
	p->crashed = c->fd < 0 && !c->bye;
	p->unsent = (c->bye ? c->byemsg.rings_unsent : 0) + c->rings_refused;
}

static void totals_add(struct sessd_totals *t, const struct proc_sum *p)
{
	t->procs++;
	t->events += p->events;
	t->bytes += p->bytes;
	t->discarded += p->discarded;
	t->lost_io += p->lost_io;
	t->salvaged += p->salvaged;
	t->unsalvageable += p->unsalvageable;
	t->crashed += (uint64_t)p->crashed;
	t->unsent += p->unsent;
}

static void proc_line(FILE *log, const struct proc_rec *r)
{
	fprintf(log, "strata:   pid %u (%s): %llu events, %llu bytes, %llu "
		"discarded%s\n", r->pid, r->name,
		(unsigned long long)r->events, (unsigned long long)r->bytes,
		(unsigned long long)r->discarded,
		r->crashed ? ", ended without goodbye (killed, crashed or "
			     "exec'd): salvaged" : "");
}

static void proc_rec_of(const struct client *c, const struct proc_sum *p,
			struct proc_rec *r)
{
	r->pid = c->pid;
	memcpy(r->name, c->name, sizeof(r->name));
	r->crashed = (uint8_t)p->crashed;
	r->events = p->events;
	r->bytes = p->bytes;
	r->discarded = p->discarded;
}

/* Totals of the current trace: the processes gone (d->done) and the
 * clients that have a sub-trace in it, one line each to `log` (NULL:
 * none). */
/*
 * Processes that could not join report their unrecorded events in
 * unrecorded.PID files of the session directory (lib/session.c,
 * sess_report_unrecorded()): count them into the current trace's figures
 * and list them in its `unrecorded` file, where readers see them
 * (`strata info`). Each file is read once, then removed; its content is
 * the process's word, bounded and checked.
 */
static void collect_unrecorded(struct sessd *d)
{
	DIR *dir = opendir(d->sdir);
	struct dirent *e;
	FILE *out = NULL;

	if (!dir)
		return;
	while ((e = readdir(dir))) {
		char path[4200], line[128], name[32];
		unsigned pid;
		unsigned long long n;
		if (strncmp(e->d_name, "unrecorded.", 11))
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", d->sdir,
				     e->d_name) >= sizeof(path))
			continue;
		int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
		ssize_t k = fd < 0 ? -1 : read(fd, line, sizeof(line) - 1);
		if (fd >= 0)
			close(fd);
		unlink(path);
		if (k <= 0)
			continue;
		line[k] = 0;
		if (sscanf(line, "%u %31s %llu", &pid, name, &n) != 3 || !n ||
		    n > (1ull << 48) || !d->trace[0])
			continue;
		d->done.unjoined++;
		d->done.unjoined_events += n;
		if (!out) {
			char p2[4200];
			snprintf(p2, sizeof(p2), "%s/unrecorded", d->trace);
			int ofd = tfile_open(p2, O_WRONLY | O_APPEND);
			out = ofd < 0 ? NULL : fdopen(ofd, "a");
			if (!out && ofd >= 0)
				close(ofd);
		}
		if (out)
			fprintf(out, "pid %u (%s): %llu events not recorded (it "
				"could not join the session)\n", pid, name, n);
	}
	closedir(dir);
	if (out)
		fclose(out);
}

static void trace_summary(struct sessd *d, FILE *log, struct sessd_totals *t)
{
	collect_unrecorded(d);
	*t = d->done;
	for (size_t i = 0; log && i < d->nrecs; i++)
		proc_line(log, &d->recs[i]);
	for (struct client *c = d->clients; c; c = c->next) {
		struct proc_sum p;
		struct proc_rec r;
		if (!c->registered || !c->traced)
			continue;
		client_sum(c, &p);
		totals_add(t, &p);
		if (log) {
			proc_rec_of(c, &p, &r);
			proc_line(log, &r);
		}
	}
	t->err = d->err;
}

/* The current trace's figures start again (a new trace, or none). */
static void trace_forget(struct sessd *d)
{
	memset(&d->done, 0, sizeof(d->done));
	free(d->recs);
	d->recs = NULL;
	d->nrecs = d->caprecs = 0;
	d->dir_seq = 0;
}

static void client_free(struct sessd *d, struct client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	if (c->bellfd >= 0)
		close(c->bellfd);
	for (unsigned i = 0; i < c->nrings; i++)
		cons_ring_unmap(c->rings[i]);
	if (c->cons) {
		struct strata_stats st;
		cons_finish(c->cons, 0, &st, NULL);
	}
	client_descs_free(d, c);
	free(c);
}

/*
 * Free the clients that are gone: connection closed (EOF, or after its
 * BYE) and rings written (client_close()). What the trace's summary
 * needs of one is kept in d->done, and under strata record its line in
 * d->recs (a few dozen bytes), so that a long-lived daemon's memory stays
 * flat however many processes come and go (docs/record.md, "Limits").
 * With `all`, every client (the end).
 */
static void clients_reap(struct sessd *d, int all)
{
	struct client **pp = &d->clients;

	while (*pp) {
		struct client *c = *pp;
		if (!all && (c->fd >= 0 || c->cons)) {
			pp = &c->next;
			continue;
		}
		if (!all && c->registered && c->traced) {
			struct proc_sum p;
			client_sum(c, &p);
			totals_add(&d->done, &p);
			if (!d->daemon && d->nrecs == d->caprecs) {
				size_t cap = d->caprecs ? d->caprecs * 2 : 64;
				void *np = realloc(d->recs, cap * sizeof(*d->recs));
				if (np) {
					d->recs = np;
					d->caprecs = cap;
				}
			}
			if (!d->daemon && d->nrecs < d->caprecs)
				proc_rec_of(c, &p, &d->recs[d->nrecs++]);
		}
		*pp = c->next;
		client_free(d, c);
	}
}

int sessd_start(struct sessd *d, const char *dir)
{
	if (d->state != ST_STOPPED)
		return -EALREADY;
	snprintf(d->trace, sizeof(d->trace), "%s", dir);
	d->err = 0;
	trace_forget(d);
	clock_point_take(&d->cp_first);
	d->state = ST_RUNNING;
	for (struct client *c = d->clients; c; c = c->next)
		if (c->fd >= 0 && c->registered)
			client_begin_trace(d, c);
	/* Enabled before the system's state dump (on_start), which takes a
	 * while: a program that joined meanwhile logged nothing while the
	 * state file said disabled, and lost its first events uncounted
	 * (issue 24, item 8). Its rings keep what it logs until the loop
	 * takes them. */
	state_publish(d, 1);
	if (d->on_start)
		d->on_start(dir);
	return 0;
}

static void ctl_send_done(struct sessd *d, int fd, int status, const char *msg);

/* Every process closed its packets (or had its time): write and close
 * the trace, answer those who asked for it. */
static void stop_finish(struct sessd *d)
{
	char line[1024];

	for (struct client *c = d->clients; c; c = c->next)
		if (c->fd >= 0)
			client_end_trace(d, c, 0);
	trace_summary(d, NULL, &d->last);
	for (struct client *c = d->clients; c; c = c->next)
		c->traced = 0;
	trace_forget(d);
	clients_reap(d, 0);
	malloc_trim(0); /* a long-lived daemon gives back what the trace took */
	d->state = ST_STOPPED;
	if (d->on_stop)
		d->on_stop(d->trace);
	snprintf(line, sizeof(line), "%.800s: %llu process%s, %llu events, %llu "
		 "bytes, %llu discarded%s%s", d->trace,
		 (unsigned long long)d->last.procs, d->last.procs == 1 ? "" : "es",
		 (unsigned long long)d->last.events,
		 (unsigned long long)d->last.bytes,
		 (unsigned long long)d->last.discarded,
		 d->last.err ? "; trace incomplete: " : "",
		 d->last.err ? strerror(-d->last.err) : "");
	if (d->daemon)
		fprintf(stderr, "strata: %s\n", line);
	for (int i = 0; i < MAX_CTL; i++) {
		struct ctl_conn *k = &d->conns[i];
		if (k->fd < 0 || !k->waiting)
			continue;
		if (k->waiting == CTL_QUIT)
			d->quit = 1;
		ctl_send_done(d, k->fd, d->last.err, line);
		close(k->fd);
		k->fd = -1;
		k->waiting = 0;
	}
}

int sessd_stop(struct sessd *d)
{
	if (d->state != ST_RUNNING)
		return -ENOENT;
	state_publish(d, 0);
	clock_gettime(CLOCK_MONOTONIC, &d->stop_deadline);
	d->stop_deadline.tv_sec += STOP_WAIT_MS / 1000;
	d->stop_deadline.tv_nsec += (STOP_WAIT_MS % 1000) * 1000000L;
	if (d->stop_deadline.tv_nsec >= 1000000000L) {
		d->stop_deadline.tv_sec++;
		d->stop_deadline.tv_nsec -= 1000000000L;
	}
	d->state = ST_STOPPING;
	if (!d->st)
		stop_finish(d); /* strata record: no process to tell */
	return 0;
}

/* Stopping: done when every process that has rings applied the stop
 * (its ACK comes after its last flush), or when its time is up. */
static void stop_check(struct sessd *d)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	int late = now.tv_sec > d->stop_deadline.tv_sec ||
		   (now.tv_sec == d->stop_deadline.tv_sec &&
		    now.tv_nsec >= d->stop_deadline.tv_nsec);
	for (struct client *c = d->clients; c && !late; c = c->next)
		if (c->fd >= 0 && c->registered && c->nrings &&
		    c->acked < d->stop_gen)
			return;
	stop_finish(d);
}

void sessd_stop_wait(struct sessd *d, struct sessd_totals *t)
{
	if (sessd_stop(d) == 0)
		while (d->state == ST_STOPPING)
			sessd_step(d, 2);
	*t = d->last;
}

int sessd_running(const struct sessd *d)
{
	return d->state;
}

const char *sessd_trace(const struct sessd *d)
{
	return d->trace;
}

int sessd_quit_requested(const struct sessd *d)
{
	return d->quit;
}

void sessd_last_totals(const struct sessd *d, struct sessd_totals *t)
{
	*t = d->last;
}

/* The absolute form of a directory just made (messages, status). */
static void absolute(char *path, size_t n)
{
	char *abs = realpath(path, NULL);

	if (abs && strlen(abs) < n)
		memcpy(path, abs, strlen(abs) + 1);
	free(abs);
}

int sessd_mkdir_new(const char *want, const char *prefix, char *out, size_t n)
{
	char stamp[32];
	struct tm tm;
	time_t now = time(NULL);

	if (want && *want) {
		if ((size_t)snprintf(out, n, "%s", want) >= n)
			return -ENAMETOOLONG;
		int ret = tfile_mkdir(out, 1);
		if (ret)
			return ret;
		absolute(out, n);
		return 0;
	}
	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	for (unsigned k = 1; k < 1000; k++) {
		if (k > 1)
			snprintf(out, n, "%s-%s-%u", prefix, stamp, k);
		else
			snprintf(out, n, "%s-%s", prefix, stamp);
		int ret = tfile_mkdir(out, 1);
		if (!ret) {
			absolute(out, n);
			return 0;
		}
		if (ret != -EEXIST)
			return ret;
	}
	return -EEXIST;
}

int sessd_config_from_env(struct sessd_config *cfg)
{
	struct strata_options o;
	int ret;

	if ((ret = strata_options_from_env(&o)))
		return ret;
	o.output = "-"; /* checked by options_check(), not used */
	if ((ret = options_check(&o)))
		return ret;
	cfg->psize_shift = (uint32_t)__builtin_ctzll(o.packet_size);
	cfg->npackets_shift = (uint32_t)__builtin_ctz(o.npackets);
	cfg->mode = (uint32_t)o.mode;
	if (o.majors == STRATA_MAJORS_NONE)
		cfg->majors = 0;
	else
		cfg->majors = o.majors ? o.majors : ~STRATA_MAJOR_BIT(63);
	cfg->enable = getenv("STRATA_ENABLE");
	return 0;
}

int sessd_snapshot(struct sessd *d, const char *dir, struct sessd_snap *res)
{
	unsigned seq = 0;
	int err = 0, ret;

	memset(res, 0, sizeof(*res));
	for (struct client *c = d->clients; c; c = c->next) {
		char sub[4400];
		struct cons_source src;
		struct cons_config cc;
		struct cons_snap_stats st;

		if (c->fd < 0 || !c->registered || !c->nrings)
			continue;
		if (c->mode != STRATA_MODE_OVERWRITE) {
			res->skipped++;
			continue;
		}
		if ((ret = make_dir(dir, c->pid, &seq, sub, sizeof(sub)))) {
			err = err ? err : ret;
			continue;
		}
		client_source(d, c, &src);
		memset(&cc, 0, sizeof(cc));
		cc.dir = sub;
		cc.mode = (int)c->mode;
		memcpy(cc.uuid, c->uuid, 16);
		cc.src = &src;
		memset(&st, 0, sizeof(st));
		ret = cons_snapshot(&cc, c->rings, c->nrings, &st);
		if (ret && !err)
			err = ret;
		res->procs++;
		res->packets += st.packets;
		res->events += st.events;
		res->bytes += st.bytes;
		res->overwritten += st.overwritten;
		res->busy += st.busy;
	}
	if (!res->procs && !err)
		return -ENOENT;
	return err;
}

/* ---- connections: taken, bounded, timed out ------------------------------ */

static void pending_evict(struct sessd *d);

/*
 * accept4() on a listening socket. Out of fds (EMFILE, ENFILE): a
 * connection that has not said HELLO is closed to make room, the oldest;
 * without one, the new connection is taken with the spare fd and closed
 * at once. Left in the backlog, it kept the listener readable, so that
 * every poll() returned at once and the idle daemon spun (100 % CPU),
 * while the programs behind it waited. Without a spare either (it could
 * not be opened again), the listeners rest for LISTEN_PAUSE_MS. Returns
 * the fd; -1 when none is waiting (or the listeners rest), -2 for one
 * refused.
 */
static int accept_fd(struct sessd *d, int lfd)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd >= 0)
		return fd;
	if (errno != EMFILE && errno != ENFILE)
		return -1;
	limit_said(d, LIMIT_FDS, 0);
	if (d->npending) {
		pending_evict(d);
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd >= 0 || (errno != EMFILE && errno != ENFILE))
			return fd >= 0 ? fd : -1;
	}
	if (d->spare_fd >= 0) {
		close(d->spare_fd);
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0)
			close(fd);
		d->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			return -2;
	}
	d->listen_rest_until = now_ms() + LISTEN_PAUSE_MS;
	return -1;
}

/* Connections held by process `pid`. */
static unsigned pid_conns(const struct sessd *d, uint32_t pid)
{
	unsigned n = 0;

	for (const struct client *c = d->clients; c; c = c->next)
		n += c->fd >= 0 && c->peer == pid;
	return n;
}

/* Disconnect the connection that has waited longest for its HELLO. */
static void pending_evict(struct sessd *d)
{
	struct client *old = NULL;

	for (struct client *c = d->clients; c; c = c->next)
		if (c->pending && (!old || c->hello_by <= old->hello_by))
			old = c;
	if (old) {
		limit_said(d, LIMIT_PENDING, old->peer);
		client_close(d, old, 1);
	}
}

/*
 * New connections to `sock`: our uid only (the socket is 0600; root
 * may connect anyway), CLIENTS_PER_PID per process, max_clients in all
 * (those that have not said HELLO make room for new ones: they are
 * disconnected, oldest first), PENDING_MAX waiting for their HELLO. An
 * honest process sends its HELLO with its connect(), so that it is
 * read here at once.
 */
static void clients_accept(struct sessd *d)
{
	for (int k = 0; k < 64; k++) {
		struct ucred cr;
		socklen_t crlen = sizeof(cr);
		int fd = accept_fd(d, d->lfd);
		struct client *c;

		if (fd == -1)
			break;
		if (fd < 0)
			continue;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) < 0 ||
		    cr.uid != getuid()) {
			close(fd);
			continue;
		}
		if (pid_conns(d, (uint32_t)cr.pid) >= CLIENTS_PER_PID) {
			limit_said(d, LIMIT_PID, (uint32_t)cr.pid);
			close(fd);
			continue;
		}
		if ((d->npending >= PENDING_MAX || d->nlive >= d->max_clients) &&
		    d->npending)
			pending_evict(d);
		if (d->nlive >= d->max_clients || !(c = calloc(1, sizeof(*c)))) {
			limit_said(d, LIMIT_CLIENTS, (uint32_t)cr.pid);
			close(fd);
			continue;
		}
		c->fd = fd;
		c->bellfd = -1;
		c->peer = (uint32_t)cr.pid;
		c->pending = 1;
		c->hello_by = now_ms() + HELLO_MS;
		d->npending++;
		c->next = d->clients;
		d->clients = c;
		d->nlive++;
		client_read(d, c);
	}
}

/* Connections that did not speak in time: clients without a HELLO after
 * HELLO_MS, control clients without a request after CTL_IDLE_MS. */
static void deadlines(struct sessd *d)
{
	uint64_t now = now_ms();

	for (struct client *c = d->clients; c && d->npending; c = c->next)
		if (c->pending && now >= c->hello_by) {
			limit_said(d, LIMIT_PENDING, c->peer);
			client_close(d, c, 1);
		}
	for (int i = 0; i < MAX_CTL; i++) {
		struct ctl_conn *k = &d->conns[i];
		if (k->fd >= 0 && !k->waiting && now - k->since >= CTL_IDLE_MS) {
			limit_said(d, LIMIT_CTL, 0);
			close(k->fd);
			k->fd = -1;
		}
	}
}

/* ---- the control socket (strata session ...) ----------------------------- */

static void ctl_send(int fd, const void *m, size_t len)
{
	/* Our own command line reads at once; a peer that does not is
	 * dropped rather than waited for. */
	if (send(fd, m, len, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)len)
		slog("session: a control client does not read: dropped");
}

static void ctl_send_done(struct sessd *d, int fd, int status, const char *msg)
{
	struct ctl_done m;

	memset(&m, 0, sizeof(m));
	m.h.type = CTL_DONE;
	m.h.len = sizeof(m);
	m.status = status;
	m.running = (uint32_t)d->state;
	m.procs = d->nlive - d->npending;
	m.daemon_pid = (uint32_t)getpid();
	if (d->st) {
		m.mode = d->st->mode;
		m.psize = UINT64_C(1) << d->st->psize_shift;
		m.npackets = UINT64_C(1) << d->st->npackets_shift;
		m.majors = d->st->majors;
	}
	if (d->state == ST_STOPPED) {
		m.events = d->last.events;
		m.bytes = d->last.bytes;
		m.discarded = d->last.discarded;
	} else { /* the processes of this trace already gone, then the others */
		m.events = d->done.events;
		m.bytes = d->done.bytes;
		m.discarded = d->done.discarded;
	}
	snprintf(m.trace, sizeof(m.trace), "%s", d->trace);
	snprintf(m.msg, sizeof(m.msg), "%s", msg ? msg : "");
	for (struct client *c = d->clients; c && d->state != ST_STOPPED; c = c->next) {
		struct strata_stats st = c->st;
		if (!c->traced)
			continue;
		if (c->cons) {
			memset(&st, 0, sizeof(st));
			cons_get_stats(c->cons, &st);
		}
		m.events += st.events_written;
		m.bytes += st.bytes_written;
		uint64_t lost = c->fd >= 0 ? client_ring_lost(c) : c->ring_lost;
		m.discarded += lost > c->lost_base ? lost - c->lost_base : 0;
	}
	ctl_send(fd, &m, sizeof(m));
}

static void ctl_status(struct sessd *d, int fd)
{
	for (struct client *c = d->clients; c; c = c->next) {
		struct ctl_proc p;
		struct strata_stats st;

		if (c->fd < 0 || !c->registered)
			continue;
		memset(&p, 0, sizeof(p));
		memset(&st, 0, sizeof(st));
		p.h.type = CTL_PROC;
		p.h.len = sizeof(p);
		p.pid = c->pid;
		p.rings = c->nrings;
		if (c->cons)
			cons_get_stats(c->cons, &st);
		p.events = st.events_written;
		p.bytes = st.bytes_written;
		if (c->traced) {
			uint64_t lost = client_ring_lost(c);
			p.discarded = lost > c->lost_base ? lost - c->lost_base : 0;
		}
		memcpy(p.name, c->name, sizeof(p.name));
		ctl_send(fd, &p, sizeof(p));
	}
	ctl_send_done(d, fd, 0, NULL);
}

/* One request; returns 1 when the connection waits for the stop. */
static int ctl_request(struct sessd *d, struct ctl_conn *k)
{
	struct ctl_req q;
	char dir[4096], msg[1024];
	ssize_t n = recv(k->fd, &q, sizeof(q), MSG_DONTWAIT);
	int ret = 0;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 1;
	if (n != (ssize_t)sizeof(q) || q.h.len != sizeof(q) ||
	    q.version != SESS_VERSION) {
		if (n > 0)
			ctl_send_done(d, k->fd, -EPROTO, "bad request (another "
				      "version of strata?)");
		return 0;
	}
	q.path[sizeof(q.path) - 1] = 0;
	msg[0] = 0;
	switch (q.h.type) {
	case CTL_START:
		if (d->state != ST_STOPPED) {
			ret = -EALREADY;
			snprintf(msg, sizeof(msg), "already %s (into %.800s)",
				 d->state == ST_RUNNING ? "running" : "stopping",
				 d->trace);
		} else if ((ret = sessd_mkdir_new(q.path, "strata", dir, sizeof(dir)))) {
			snprintf(msg, sizeof(msg), "%.800s: cannot create the trace "
				 "directory: %s", q.path[0] ? q.path : dir,
				 strerror(-ret));
		} else {
			sessd_start(d, dir);
			snprintf(msg, sizeof(msg), "started: writing to %.800s", dir);
			if (d->daemon)
				fprintf(stderr, "strata: %s\n", msg);
		}
		break;
	case CTL_STOP:
	case CTL_QUIT:
		if (sessd_stop(d) == 0 || d->state == ST_STOPPING) {
			k->waiting = q.h.type;
			if (d->state == ST_STOPPED)
				stop_finish(d); /* not reached with a state file */
			return k->fd >= 0 && k->waiting;
		}
		if (q.h.type == CTL_QUIT) {
			d->quit = 1;
			snprintf(msg, sizeof(msg), "daemon ending (no trace was running)");
		} else {
			ret = -ENOENT;
			snprintf(msg, sizeof(msg), "not running (the last trace "
				 "is %.800s)", d->trace[0] ? d->trace : "none");
		}
		break;
	case CTL_STATUS:
		ctl_status(d, k->fd);
		return 0;
	case CTL_SNAPSHOT: {
		struct sessd_snap sn;
		if ((ret = sessd_mkdir_new(q.path, "strata-snapshot", dir,
					   sizeof(dir)))) {
			snprintf(msg, sizeof(msg), "%.800s: cannot create the snapshot "
				 "directory: %s", q.path[0] ? q.path : dir,
				 strerror(-ret));
			break;
		}
		ret = sessd_snapshot(d, dir, &sn);
		sessd_snap_line(dir, ret, &sn, msg, sizeof(msg));
		if (ret == -ENOENT)
			rmdir(dir);
		break;
	}
	default:
		ret = -EINVAL;
		snprintf(msg, sizeof(msg), "unknown request %u", q.h.type);
	}
	ctl_send_done(d, k->fd, ret, msg);
	return 0;
}

void sessd_snap_line(const char *dir, int ret, const struct sessd_snap *sn,
		     char *buf, size_t n)
{
	if (ret == -ENOENT)
		snprintf(buf, n, "snapshot: no process to snapshot (%u not in "
			 "overwrite mode)", sn->skipped);
	else
		snprintf(buf, n, "snapshot %.800s: %u process%s, %llu packets, %llu "
			 "events, %llu bytes; %llu packets overwritten while "
			 "copied, %llu busy%s%s", dir, sn->procs,
			 sn->procs == 1 ? "" : "es",
			 (unsigned long long)sn->packets,
			 (unsigned long long)sn->events,
			 (unsigned long long)sn->bytes,
			 (unsigned long long)sn->overwritten,
			 (unsigned long long)sn->busy, ret ? "; error: " : "",
			 ret ? strerror(-ret) : "");
}

/*
 * A free control slot, or the one whose client has waited longest without
 * asking (closed): `strata session` stays reachable whatever idle
 * connections hold the slots. -1 if every slot waits for a stop to end
 * (answered within STOP_WAIT_MS).
 */
static int ctl_slot(struct sessd *d)
{
	int old = -1;

	for (int i = 0; i < MAX_CTL; i++) {
		struct ctl_conn *k = &d->conns[i];
		if (k->fd < 0)
			return i;
		if (!k->waiting && (old < 0 || k->since <= d->conns[old].since))
			old = i;
	}
	if (old >= 0) {
		limit_said(d, LIMIT_CTL, 0);
		close(d->conns[old].fd);
		d->conns[old].fd = -1;
	}
	return old;
}

static void ctl_accept(struct sessd *d)
{
	for (int n = 0; n < MAX_CTL; n++) {
		struct ucred cr;
		socklen_t crlen = sizeof(cr);
		int fd = accept_fd(d, d->ctl_fd), slot;

		if (fd == -1)
			return;
		if (fd < 0)
			continue;
		/* Only our own uid controls the daemon (the socket is 0600
		 * too; root may connect anyway, it is refused here). */
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) < 0 ||
		    cr.uid != getuid() || (slot = ctl_slot(d)) < 0) {
			close(fd);
			continue;
		}
		struct ctl_conn *k = &d->conns[slot];
		k->fd = fd;
		k->waiting = 0;
		k->since = now_ms();
		/* its request is there already (strata session sends it with
		 * its connect): answered now, before another connection could
		 * take its slot */
		if (!ctl_request(d, k) && k->fd >= 0) {
			close(k->fd);
			k->fd = -1;
		}
	}
}

/* ---- the loop ------------------------------------------------------------- */

/*
 * Before a sleep of more than a millisecond: ask the closers of every
 * ring we drain to ring (cons_arm()) and sleep up to SLEEP_MS, if every
 * process with rings gave us a doorbell. Returns the timeout to use: 0
 * when a packet is already waiting, `timeout_ms` (polling) when a process
 * has no doorbell, or while stopping (its deadline is polled).
 */
#define SLEEP_MS 100
static int sessd_arm(struct sessd *d, int timeout_ms, int *armed)
{
	*armed = 0;
	if (timeout_ms <= 1 || d->state == ST_STOPPING)
		return timeout_ms;
	for (struct client *c = d->clients; c; c = c->next)
		if (c->cons && (c->fd < 0 || c->bellfd < 0))
			return timeout_ms;
	int pending = 0;
	for (struct client *c = d->clients; c; c = c->next)
		if (c->cons)
			pending |= cons_arm(c->cons);
	*armed = 1;
	return pending ? 0 : SLEEP_MS;
}

/* Room in the poll set for n entries. Returns 0 or -ENOMEM. */
static int pollset_fit(struct sessd *d, size_t n)
{
	if (n <= d->pfcap)
		return 0;
	size_t cap = n + n / 2 + 64;
	void *a = realloc(d->pf, cap * sizeof(*d->pf));
	if (a)
		d->pf = a;
	void *b = realloc(d->who, cap * sizeof(*d->who));
	if (b)
		d->who = b;
	void *c = realloc(d->conn, cap * sizeof(*d->conn));
	if (c)
		d->conn = c;
	if (!a || !b || !c)
		return -ENOMEM;
	d->pfcap = cap;
	return 0;
}

unsigned sessd_step(struct sessd *d, int timeout_ms)
{
	unsigned n = 0, work = 0, nctl;
	int armed, lidx = -1, cidx = -1;
	uint64_t now = now_ms();

	if (pollset_fit(d, 2 + MAX_CTL + 2 * (size_t)d->nlive)) {
		/* no memory for the poll set: drain, and try again */
		for (struct client *c = d->clients; c; c = c->next)
			if (c->cons)
				work += cons_poll(c->cons);
		return work;
	}
	struct pollfd *pf = d->pf;
	struct client **who = d->who;
	int *conn = d->conn;

	/* Out of fds with none spare (accept_fd): the listeners rest. */
	if (now >= d->listen_rest_until) {
		lidx = (int)n;
		pf[n].fd = d->lfd;
		pf[n].events = POLLIN;
		who[n++] = NULL;
		if (d->ctl_fd >= 0) {
			cidx = (int)n;
			pf[n].fd = d->ctl_fd;
			pf[n].events = POLLIN;
			who[n++] = NULL;
		}
	} else if (timeout_ms > (int)(d->listen_rest_until - now)) {
		timeout_ms = (int)(d->listen_rest_until - now);
	}
	nctl = n;
	for (int i = 0; i < MAX_CTL; i++)
		if (d->conns[i].fd >= 0 && !d->conns[i].waiting) {
			pf[n].fd = d->conns[i].fd;
			pf[n].events = POLLIN;
			conn[n] = i;
			who[n++] = NULL;
		}
	unsigned first_client = n;
	for (struct client *c = d->clients; c; c = c->next)
		if (c->fd >= 0) {
			pf[n].fd = c->fd;
			pf[n].events = POLLIN;
			who[n++] = c;
		}
	unsigned first_bell = n;
	for (struct client *c = d->clients; c; c = c->next)
		if (c->fd >= 0 && c->bellfd >= 0) {
			pf[n].fd = c->bellfd;
			pf[n].events = POLLIN;
			who[n++] = c;
		}
	timeout_ms = sessd_arm(d, timeout_ms, &armed);
	int ready = poll(pf, n, timeout_ms);
	if (armed)
		for (struct client *c = d->clients; c; c = c->next)
			if (c->cons)
				cons_disarm(c->cons);
	if (ready > 0) {
		for (unsigned i = first_bell; i < n; i++) {
			uint64_t v;
			/* before client_read(), which may close it */
			if (pf[i].revents && read(pf[i].fd, &v, sizeof(v)) < 0) {
				/* EAGAIN: rung and read meanwhile */
			}
		}
		for (unsigned i = first_client; i < first_bell; i++)
			if (pf[i].revents)
				client_read(d, who[i]);
		for (unsigned i = nctl; i < first_client; i++) {
			struct ctl_conn *k = &d->conns[conn[i]];
			if (!pf[i].revents || k->fd < 0)
				continue;
			if (!ctl_request(d, k) && k->fd >= 0) {
				close(k->fd);
				k->fd = -1;
			}
		}
		if (cidx >= 0 && (pf[cidx].revents & POLLIN))
			ctl_accept(d);
		if (lidx >= 0 && (pf[lidx].revents & POLLIN))
			clients_accept(d);
	}
	deadlines(d);
	for (struct client *c = d->clients; c; c = c->next)
		if (c->cons)
			work += cons_poll(c->cons);
	if (d->state == ST_STOPPING)
		stop_check(d);
	clients_reap(d, 0);
	return work;
}

/* Close everything; remove our files unless another daemon owns them. */
static void sessd_free(struct sessd *d, int remove_files)
{
	clients_reap(d, 1);
	trace_forget(d);
	for (int i = 0; i < MAX_CTL; i++)
		if (d->conns[i].fd >= 0)
			close(d->conns[i].fd);
	if (d->spare_fd >= 0)
		close(d->spare_fd);
	free(d->pf);
	free(d->who);
	free(d->conn);
	if (d->lfd >= 0)
		close(d->lfd);
	if (d->ctl_fd >= 0)
		close(d->ctl_fd);
	if (d->st)
		munmap(d->st, SESS_STATE_SIZE);
	if (remove_files) {
		unlink(d->sock);
		if (d->daemon) {
			char lock[4200];
			unlink(d->ctl);
			if (d->st)
				unlink(d->statef);
			snprintf(lock, sizeof(lock), "%s/lock", d->sdir);
			unlink(lock);
		}
		rmdir(d->sdir);
	}
	if (d->lock_fd >= 0)
		close(d->lock_fd); /* last: the next daemon may start now */
	free(d);
}

void sessd_destroy(struct sessd *d, FILE *log, struct sessd_totals *t)
{
	memset(t, 0, sizeof(*t));
	if (!d)
		return;
	/* Messages already queued (the last BYEs) first. */
	for (struct client *c = d->clients; c; c = c->next)
		if (c->fd >= 0)
			client_read(d, c);
	for (struct client *c = d->clients; c; c = c->next) {
		/* Still connected: the process runs on; only its complete
		 * packets can be written (nothing of it may be flushed from
		 * here, ring.md §7). */
		client_close(d, c, 0);
	}
	if (d->state != ST_STOPPED)
		trace_summary(d, log, t);
	else
		*t = d->last;
	sessd_free(d, 1);
}
