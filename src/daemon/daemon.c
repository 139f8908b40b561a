/* SPDX-License-Identifier: MIT */
/* The session daemon's life: its directory and sockets made, the loop that
 * serves them (dmn_step), the end. The rest: daemon_int.h. */
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
#include <unistd.h>

#include <strata/strata.h>

#include "daemon/daemon_int.h"
#include "lib/session.h"
#include "proto/paths.h"

static void dmn_free(struct dmn *d, int remove_files);

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
	return proto_path_private(path, 1) ? 0 : -EPERM;
}

/* The state file, made whole under another name and renamed: a process
 * that mapped an earlier daemon's file keeps its own, never a truncated
 * one (SIGBUS). */
static int state_create(struct dmn *d, const struct dmn_config *cfg)
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
	if (ftruncate(fd, PROTO_STATE_SIZE) < 0) {
		ret = -errno;
		close(fd);
		unlink(tmp);
		return ret;
	}
	p = mmap(NULL, PROTO_STATE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		unlink(tmp);
		return -ENOMEM;
	}
	d->st = p;
	d->st->magic = PROTO_STATE_MAGIC;
	d->st->version = PROTO_VERSION;
	d->st->majors = cfg->majors;
	d->st->psize_shift = cfg->psize_shift;
	d->st->npackets_shift = cfg->npackets_shift;
	d->st->mode = cfg->mode;
	d->st->clock_tsc = (uint32_t)strata_clock_tsc;
	d->st->live_ms = cfg->live_ms;
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
static int daemon_dir(struct dmn *d, const struct dmn_config *cfg,
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
 * command inherits. One fd is kept spare for dmn_accept_fd().
 */
static void fd_budget(struct dmn *d)
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
static void session_geometry(struct dmn *d, const struct dmn_config *cfg)
{
	struct dmn_config env = *cfg;

	if (!cfg->psize_shift && dmn_config_from_env(&env))
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

int dmn_create(const struct dmn_config *cfg, struct dmn **out,
	       const char **what)
{
	struct dmn *d = calloc(1, sizeof(*d));
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
	d->sink = cfg->sink;
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
	if (cfg->trace_dir && (ret = dmn_start(d, cfg->trace_dir))) {
		*what = "cannot start the trace";
		goto fail;
	}
	*out = d;
	return 0;
fail:
	dmn_free(d, ret != -EADDRINUSE);
	return ret;
}
const char *dmn_socket(const struct dmn *d)
{
	return d->sock;
}

unsigned dmn_live(const struct dmn *d)
{
	struct pollfd p = {.fd = d->lfd, .events = POLLIN};

	/* A process whose connection still waits in the backlog is one too:
	 * strata record must not end before it took its messages (a busy
	 * daemon, 1,000 processes joining at once). */
	return d->nlive + (d->lfd >= 0 && poll(&p, 1, 0) == 1);
}

int dmn_config_from_env(struct dmn_config *cfg)
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
	cfg->live_ms = o.flush_ms;
	return 0;
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
static int dmn_arm(struct dmn *d, int timeout_ms, int *armed)
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
static int pollset_fit(struct dmn *d, size_t n)
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

/* Where each kind of entry sits in the poll set (pollset_fill). */
struct pollset_at {
	int lidx, cidx;         /* the listeners; -1: resting (accept_fd) */
	unsigned nctl;          /* control connections from here */
	unsigned first_client;  /* client sockets from here */
	unsigned first_bell;    /* their doorbells from here, up to n */
	unsigned n;
};

/* The poll set: the listeners, the control connections that have not
 * asked yet, every client's socket and doorbell. Returns the timeout to
 * use (shortened while the listeners rest). */
static int pollset_fill(struct dmn *d, int timeout_ms, struct pollset_at *at)
{
	struct pollfd *pf = d->pf;
	struct client **who = d->who;
	int *conn = d->conn;
	uint64_t now = mono_ms();
	unsigned n = 0;

	at->lidx = at->cidx = -1;
	/* Out of fds with none spare (dmn_accept_fd): the listeners rest. */
	if (now >= d->listen_rest_until) {
		at->lidx = (int)n;
		pf[n].fd = d->lfd;
		pf[n].events = POLLIN;
		who[n++] = NULL;
		if (d->ctl_fd >= 0) {
			at->cidx = (int)n;
			pf[n].fd = d->ctl_fd;
			pf[n].events = POLLIN;
			who[n++] = NULL;
		}
	} else if (timeout_ms > (int)(d->listen_rest_until - now)) {
		timeout_ms = (int)(d->listen_rest_until - now);
	}
	at->nctl = n;
	for (int i = 0; i < MAX_CTL; i++)
		if (d->conns[i].fd >= 0 && !d->conns[i].waiting) {
			pf[n].fd = d->conns[i].fd;
			pf[n].events = POLLIN;
			conn[n] = i;
			who[n++] = NULL;
		}
	at->first_client = n;
	for (struct client *c = d->clients; c; c = c->next)
		if (c->fd >= 0) {
			pf[n].fd = c->fd;
			pf[n].events = POLLIN;
			who[n++] = c;
		}
	at->first_bell = n;
	for (struct client *c = d->clients; c; c = c->next)
		if (c->fd >= 0 && c->bellfd >= 0) {
			pf[n].fd = c->bellfd;
			pf[n].events = POLLIN;
			who[n++] = c;
		}
	at->n = n;
	return timeout_ms;
}

/* What poll() found ready in the set pollset_fill() made. */
static void pollset_serve(struct dmn *d, const struct pollset_at *at)
{
	struct pollfd *pf = d->pf;

	for (unsigned i = at->first_bell; i < at->n; i++) {
		uint64_t v;
		/* before dmn_client_read(), which may close it */
		if (pf[i].revents && read(pf[i].fd, &v, sizeof(v)) < 0) {
			/* EAGAIN: rung and read meanwhile */
		}
	}
	for (unsigned i = at->first_client; i < at->first_bell; i++)
		if (pf[i].revents)
			dmn_client_read(d, d->who[i]);
	for (unsigned i = at->nctl; i < at->first_client; i++) {
		struct ctl_conn *k = &d->conns[d->conn[i]];
		if (!pf[i].revents || k->fd < 0)
			continue;
		if (!dmn_ctl_request(d, k) && k->fd >= 0) {
			close(k->fd);
			k->fd = -1;
		}
	}
	if (at->cidx >= 0 && (pf[at->cidx].revents & POLLIN))
		dmn_ctl_accept(d);
	if (at->lidx >= 0 && (pf[at->lidx].revents & POLLIN))
		dmn_clients_accept(d);
}

/* Write what every sub-trace's rings hold. Returns the packets written. */
static unsigned drain(struct dmn *d)
{
	unsigned work = 0;

	for (struct client *c = d->clients; c; c = c->next)
		if (c->cons)
			work += cons_poll(c->cons);
	return work;
}

unsigned dmn_step(struct dmn *d, int timeout_ms)
{
	struct pollset_at at;
	unsigned work;
	int armed;

	if (pollset_fit(d, 2 + MAX_CTL + 2 * (size_t)d->nlive))
		return drain(d); /* no memory for the poll set: try again */
	timeout_ms = pollset_fill(d, timeout_ms, &at);
	timeout_ms = dmn_arm(d, timeout_ms, &armed);
	int ready = poll(d->pf, at.n, timeout_ms);
	if (armed)
		for (struct client *c = d->clients; c; c = c->next)
			if (c->cons)
				cons_disarm(c->cons);
	if (ready > 0)
		pollset_serve(d, &at);
	dmn_deadlines(d);
	work = drain(d);
	if (d->state == ST_STOPPING)
		dmn_stop_check(d);
	dmn_clients_reap(d, 0);
	return work;
}

/* Close everything; remove our files unless another daemon owns them. */
static void dmn_free(struct dmn *d, int remove_files)
{
	dmn_clients_reap(d, 1);
	dmn_trace_forget(d);
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
		munmap(d->st, PROTO_STATE_SIZE);
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

void dmn_destroy(struct dmn *d, FILE *log, struct dmn_totals *t)
{
	memset(t, 0, sizeof(*t));
	if (!d)
		return;
	/* Messages already queued (the last BYEs) first. */
	for (struct client *c = d->clients; c; c = c->next)
		if (c->fd >= 0)
			dmn_client_read(d, c);
	for (struct client *c = d->clients; c; c = c->next) {
		/* Still connected: the process runs on; only its complete
		 * packets can be written (nothing of it may be flushed from
		 * here, ring.md §7). */
		dmn_client_close(d, c, 0);
	}
	if (d->state != ST_STOPPED) {
		dmn_trace_summary(d, log, t);
		dmn_live_mark(d, 0); /* it ends here, every stream closed */
	} else {
		*t = d->last;
	}
	dmn_free(d, 1);
}
