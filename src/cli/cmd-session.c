/* SPDX-License-Identifier: MIT */
/* strata session: start, stop, snapshot and show a long-lived daemon's trace. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <strata/strata.h>

#include "cli.h"
#include "proto/paths.h"
#include "proto/proto.h"
#include "table.h"

const char cmd_session_usage[] =
	"usage: strata session start|stop|status|snapshot [--name NAME] [-o DIR]\n\n"
	"Control the daemon NAME ('default' unless given; see 'strata daemon'):\n"
	"  start      begin writing a new trace (-o DIR, or a dated directory\n"
	"             where the daemon started); connected processes start\n"
	"             logging within about 10 ms\n"
	"  stop       finish the trace (every process closes its buffers, the\n"
	"             streams are written and closed); processes stay connected\n"
	"             and log nothing until the next start\n"
	"  status     the session's state, trace directory and connected\n"
	"             processes (pid, name, rings, events written, discarded)\n"
	"  snapshot   write the newest packets of every buffer (overwrite mode)\n"
	"             to a new trace (-o DIR, or a dated directory) while\n"
	"             tracing goes on\n"
	"'strata daemon --kill' ends the daemon.\n";

/* NAME's control socket path into a->sun_path; -1 if none can be. */
static int ctl_path(const char *name, struct sockaddr_un *a)
{
	char dir[4096], base[4096];

	if (proto_daemon_dir(name, dir, sizeof(dir), base, sizeof(base)) ||
	    (size_t)snprintf(a->sun_path, sizeof(a->sun_path), "%s/ctl", dir) >=
		    sizeof(a->sun_path)) {
		cli_err(NULL, "session: bad daemon name '%s'", name);
		return -1;
	}
	return 0;
}

/* Connect to NAME's control socket. Returns the socket or -1 (said). */
static int ctl_connect(const char *name)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd;

	if (ctl_path(name, &a))
		return -1;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		int err = errno;
		if (fd >= 0)
			close(fd);
		if (err == ENOENT || err == ECONNREFUSED)
			cli_err(NULL, "no daemon named '%s' is running (%s); start "
				"one with 'strata daemon'", name, a.sun_path);
		else
			cli_err(a.sun_path, "cannot connect: %s", strerror(err));
		return -1;
	}
	return fd;
}

/* One reply message; 0 at EOF, -1 on error or after 60 s (said). */
static ssize_t ctl_recv(int fd, void *buf, size_t n)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int r;

	while ((r = poll(&p, 1, 60000)) < 0 && errno == EINTR)
		;
	if (r == 0) {
		cli_err(NULL, "session: the daemon did not answer in 60 s");
		return -1;
	}
	ssize_t len = recv(fd, buf, n, 0);
	if (len < 0)
		cli_err(NULL, "session: %s", strerror(errno));
	return len;
}

static const char *mode_name(uint32_t mode)
{
	return mode == STRATA_MODE_OVERWRITE ? "overwrite"
	       : mode == STRATA_MODE_BLOCK   ? "block"
					     : "discard";
}

static void print_status(const char *name, const struct ctl_done *m,
			 struct table *t)
{
	static const char *state[] = {"stopped", "running", "stopping"};
	char psize[32];

	cli_human_size(m->psize, psize, sizeof(psize));
	printf("daemon:     %s (pid %u)\n", name, m->daemon_pid);
	printf("state:      %s\n", state[m->running < 3 ? m->running : 0]);
	printf("trace:      %s%s\n", m->trace[0] ? m->trace : "none yet",
	       m->running == 1 ? "" : m->trace[0] ? " (the last one)" : "");
	printf("buffers:    %s mode, %llu x %s per CPU, majors %#llx\n",
	       mode_name(m->mode), (unsigned long long)m->npackets, psize,
	       (unsigned long long)m->majors);
	printf("written:    %llu events, %llu bytes, %llu discarded\n",
	       (unsigned long long)m->events, (unsigned long long)m->bytes,
	       (unsigned long long)m->discarded);
	printf("processes:  %u connected\n", m->procs);
	if (t->nrows > t->ncol)
		table_print(t, stdout, "  ");
}

struct session_opts {
	const char *name, *out;
	uint32_t type; /* CTL_START ... */
};

/* The command line into *so: 0, or the exit status 2 after the usage or
 * one error line. */
static int session_parse(int argc, char **argv, struct session_opts *so)
{
	static const struct option opts[] = {
		{"name", required_argument, NULL, 'n'},
		{"output", required_argument, NULL, 'o'},
		{NULL, 0, NULL, 0},
	};
	static const struct {
		const char *word;
		uint32_t type;
	} verbs[] = {
		{"start", CTL_START}, {"stop", CTL_STOP}, {"status", CTL_STATUS},
		{"snapshot", CTL_SNAPSHOT}, {"quit", CTL_QUIT},
	};
	int o;

	*so = (struct session_opts){.name = "default"};
	if (argc < 2) {
		fputs(cmd_session_usage, stderr);
		return 2;
	}
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (!strcmp(argv[1], verbs[i].word))
			so->type = verbs[i].type;
	if (!so->type) {
		cli_err(NULL, "session: '%s' is not start, stop, status or "
			"snapshot", argv[1]);
		return 2;
	}
	optind = 2;
	while ((o = getopt_long(argc, argv, "n:o:", opts, NULL)) != -1) {
		switch (o) {
		case 'n': so->name = optarg; break;
		case 'o': so->out = optarg; break;
		default:
			fputs(cmd_session_usage, stderr);
			return 2;
		}
	}
	if (optind < argc) {
		cli_err(NULL, "session: unexpected argument '%s'", argv[optind]);
		return 2;
	}
	if (so->out && so->type != CTL_START && so->type != CTL_SNAPSHOT) {
		cli_err(NULL, "session %s: -o is for start and snapshot", argv[1]);
		return 2;
	}
	return 0;
}

/* The request for so's verb into *q: 0, or 2 after one error line. */
static int session_request(const struct session_opts *so, struct ctl_req *q)
{
	memset(q, 0, sizeof(*q));
	q->h.type = so->type;
	q->h.len = sizeof(*q);
	q->version = PROTO_VERSION;
	if (so->out) {
		/* The daemon runs elsewhere: give it an absolute path. */
		const char *out = so->out;
		char cwd[PATH_MAX];
		int n = out[0] == '/' || !getcwd(cwd, sizeof(cwd))
				? snprintf(q->path, sizeof(q->path), "%s", out)
				: snprintf(q->path, sizeof(q->path), "%s/%s", cwd, out);
		if (n < 0 || (size_t)n >= sizeof(q->path)) {
			cli_err(out, "path too long");
			return 2;
		}
	}
	return 0;
}

/* Read the daemon's answer on fd: the processes (status), then the
 * outcome, reported. Returns the exit status. */
static int session_answer(int fd, const struct session_opts *so)
{
	static struct ctl_done m; /* 5 KiB: off the stack */
	struct table t;
	int rc = 1;

	table_init(&t, 6, "rlrrrr");
	table_cell(&t, "PID");
	table_cell(&t, "NAME");
	table_cell(&t, "RINGS");
	table_cell(&t, "EVENTS");
	table_cell(&t, "BYTES");
	table_cell(&t, "DISCARDED");
	for (;;) {
		union {
			struct proto_hdr h;
			struct ctl_proc p;
			struct ctl_done d;
		} u;
		ssize_t len = ctl_recv(fd, &u, sizeof(u));
		if (len <= 0) {
			if (len == 0)
				cli_err(NULL, "session: the daemon closed the "
					"connection without an answer");
			break;
		}
		if (u.h.type == CTL_PROC && len == (ssize_t)sizeof(u.p)) {
			u.p.name[sizeof(u.p.name) - 1] = 0;
			table_cell(&t, "%u", u.p.pid);
			table_cell(&t, "%s", u.p.name);
			table_cell(&t, "%u", u.p.rings);
			table_cell(&t, "%llu", (unsigned long long)u.p.events);
			table_cell(&t, "%llu", (unsigned long long)u.p.bytes);
			table_cell(&t, "%llu", (unsigned long long)u.p.discarded);
			continue;
		}
		if (u.h.type != CTL_DONE || len != (ssize_t)sizeof(u.d)) {
			cli_err(NULL, "session: unexpected answer (another version "
				"of strata?)");
			break;
		}
		m = u.d;
		m.trace[sizeof(m.trace) - 1] = 0;
		m.msg[sizeof(m.msg) - 1] = 0;
		if (so->type == CTL_STATUS)
			print_status(so->name, &m, &t);
		else if (m.status)
			cli_err(NULL, "session %s: %s", so->name, m.msg);
		else
			fprintf(stderr, "strata: %s\n", m.msg);
		rc = m.status ? 1 : 0;
		break;
	}
	table_fini(&t);
	return rc;
}

/* A daemon told to quit exits once it answered: wait (bounded, 10 s)
 * until its socket is gone, so that a new daemon of that name can start
 * right after. */
static void wait_daemon_gone(const char *name)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};

	ctl_path(name, &a);
	for (int i = 0; i < 1000 && access(a.sun_path, F_OK) == 0; i++) {
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
	}
}

int cmd_session(int argc, char **argv)
{
	struct session_opts so;
	struct ctl_req q;
	int fd, rc;

	rc = session_parse(argc, argv, &so);
	if (!rc)
		rc = session_request(&so, &q);
	if (rc)
		return rc;
	fd = ctl_connect(so.name);
	if (fd < 0)
		return 1;
	if (send(fd, &q, sizeof(q), MSG_NOSIGNAL) != (ssize_t)sizeof(q)) {
		cli_err(NULL, "session: cannot send the request: %s", strerror(errno));
		close(fd);
		return 1;
	}
	rc = session_answer(fd, &so);
	if (so.type == CTL_QUIT && rc == 0)
		wait_daemon_gone(so.name);
	close(fd);
	return rc;
}
