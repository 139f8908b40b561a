/* SPDX-License-Identifier: MIT */
/* strata record: run a command and every process it starts under a tracing session. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <strata/strata.h>

#include "cli.h"
#include "common/tfile.h"
#include "lib/clock.h"
#include "lib/guard.h"
#include "lib/session.h"
#ifdef STRATA_HAVE_KERNEL
#include "kernel/kernel.h"
#endif
#include "daemon/daemon.h"

/* libstrata is linked in for its consumer: it must not trace this tool
 * from STRATA_OUTPUT / STRATA_SESSION (src/lib/session.c). */
const int strata_no_autostart = 1;

const char cmd_record_usage[] =
	"usage: strata record [OPTIONS] -- COMMAND [ARGS...]\n\n"
	"Run COMMAND, and every process it forks or execs, under a tracing\n"
	"session: the processes hand their ring buffers to this command, which\n"
	"writes one trace directory (docs/record.md). Ctrl-C stops cleanly and\n"
	"keeps everything recorded. The exit status is COMMAND's.\n\n"
	"Options:\n"
	"  -o, --output DIR       trace directory (default strata-YYYYmmdd-HHMMSS)\n"
	CLI_RING_HELP
	"  --duration SECONDS     stop after this long (COMMAND gets SIGINT)\n"
	"  --clock tsc|mono       the trace clock: the invariant TSC (the default\n"
	"                         where the kernel or a KVM host vouches for it)\n"
	"                         or CLOCK_MONOTONIC\n"
	"  --start-on SUB:EVENT   record nothing until this event (a glob; the\n"
	"                         event is recorded, it comes first)\n"
	"  --stop-on SUB:EVENT    record nothing after this event (it is recorded);\n"
	"                         per process, events made with strata-gen\n"
	"  -k, --kernel GROUPS    also record kernel events on the same clock:\n"
	"                         sched, irq, syscalls, or all (docs/kernel.md);\n"
	"                         those of COMMAND's process tree only, unless\n"
	"  --kernel-system        ... the whole system's\n"
	"  -v, --verbose          one line per traced process at the end\n\n"
	"SIGUSR1 writes a snapshot of the buffers (overwrite mode) to\n"
	"DIR-snapshot-N while tracing goes on.\n";

volatile sig_atomic_t cli_got_signal, cli_got_usr1;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		cli_got_usr1 = 1;
	else
		cli_got_signal = sig;
}

void cli_session_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal; /* no SA_RESTART: poll() returns */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A size as libstrata's environment parser accepts it: digits and an
 * optional K/M/G suffix. */
static int valid_size(const char *s)
{
	size_t n = strspn(s, "0123456789");
	return n > 0 && (!s[n] || (strchr("kKmMgG", s[n]) && (!s[n + 1] ||
		!strcmp(s + n + 1, "i") || !strcmp(s + n + 1, "iB") ||
		!strcmp(s + n + 1, "B"))));
}

/* SIGUSR1: a snapshot into `dir`, one line on stderr (cli.h). */
void cli_snapshot(struct sessd *d, const char *dir)
{
	struct sessd_snap sn;
	char line[1024], made[4200];
	int ret;

	if ((ret = sessd_mkdir_new(dir, "strata-snapshot", made, sizeof(made)))) {
		cli_err(dir, "cannot create the snapshot directory: %s",
			strerror(-ret));
		return;
	}
	ret = sessd_snapshot(d, made, &sn);
	if (ret == -ENOENT)
		rmdir(made);
	sessd_snap_line(made, ret, &sn, line, sizeof(line));
	fprintf(stderr, "strata: %s\n", line);
}

int cli_kernel_opt(const char *cmd, const char *arg, unsigned *groups)
{
#ifdef STRATA_HAVE_KERNEL
	const char *bad = NULL;
	unsigned g;
	if (kern_groups_parse(arg, &g, &bad) < 0) {
		cli_err(NULL, "%s: --kernel: unknown group '%s' (sched, irq, "
			"syscalls, all)", cmd, bad ? bad : arg);
		return -1;
	}
	*groups |= g;
	return 0;
#else
	(void)arg;
	(void)groups;
	cli_err(NULL, "%s: --kernel: this strata was built without kernel "
		"support (install libtracefs-dev libtraceevent-dev and rebuild)",
		cmd);
	return -1;
#endif
}

#ifdef STRATA_HAVE_KERNEL
struct kern_session *cli_kernel_start(const char *trace, unsigned groups,
				      const int *pid)
{
	struct kern_session *ks = NULL;
	char err[512] = "";
	struct kern_options ko = {
		.trace_dir = trace,
		.groups = groups,
		.pids = pid,
		.npids = pid ? 1 : 0,
		.err = err,
		.errlen = sizeof(err),
	};
	int ret = kern_start(&ko, &ks);
	if (ret < 0)
		cli_err(trace, "kernel tracing off: %s; user-space tracing goes on",
			err[0] ? err : strerror(-ret));
	return ret < 0 ? NULL : ks;
}

void cli_kernel_stop(struct kern_session *ks, const char *trace)
{
	struct kern_stats kst;

	if (!ks)
		return;
	int ret = kern_stop(ks, &kst);
	if (ret < 0)
		cli_err(trace, "kernel streams: %s", strerror(-ret));
	fprintf(stderr, "strata: %s/kernel: %llu kernel events, %llu discarded%s\n",
		trace, (unsigned long long)kst.events,
		(unsigned long long)kst.discarded,
		kst.discarded ? " (raise the kernel buffer)" : "");
}
#endif

int cli_clock_opt(const char *arg)
{
	if (strcmp(arg, "tsc") && strcmp(arg, "mono")) {
		cli_err(NULL, "--clock %s: use tsc or mono", arg);
		return -1;
	}
	/* read by clock_init(), here and in every process */
	setenv("STRATA_CLOCK", arg, 1);
	clock_init(); /* no ring exists yet */
	if (!strcmp(arg, "tsc") && !strata_clock_tsc) {
		cli_err(NULL, "--clock tsc: this machine's TSC is not invariant "
			"(no constant_tsc and nonstop_tsc in /proc/cpuinfo); "
			"use --clock mono");
		return -1;
	}
	return 0;
}

int cli_ring_opt(struct cli_ring_opts *r, int opt, const char *arg)
{
	switch (opt) {
	case OPT_RING_PSIZE: r->psize = arg; return 1;
	case OPT_RING_PACKETS: r->packets = arg; return 1;
	case OPT_RING_MODE: r->mode = arg; return 1;
	case OPT_RING_MAJORS: r->majors = arg; return 1;
	case OPT_RING_GROUP: r->group = arg; return 1;
	case 'e':
		if (strlen(r->enable) + strlen(arg) + 2 > sizeof(r->enable)) {
			cli_err(NULL, "--enable: too many patterns");
			return -1;
		}
		if (*r->enable)
			strcat(r->enable, ",");
		strcat(r->enable, arg);
		return 1;
	}
	return 0;
}

/* Whether `dir` holds a file at any depth (up to a bound): an earlier
 * trace, or something else that is not ours to write into. */
static int holds_files(const char *dir, int depth)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int found = 0;

	if (!d)
		return -errno;
	while (!found && (e = readdir(d))) {
		char sub[4200];
		struct stat st;
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name) >=
			    sizeof(sub) ||
		    lstat(sub, &st) || !S_ISDIR(st.st_mode) || depth >= 8)
			found = 1;
		else
			found = holds_files(sub, depth + 1) != 0;
	}
	closedir(d);
	return found;
}

int cli_new_trace_dir(const char *dir, const char *cmd)
{
	int ret = tfile_mkdir(dir, 1);

	/* one that holds no file is as good as a new one (mktemp -d) */
	if (ret == -EEXIST) {
		ret = holds_files(dir, 0);
		ret = ret > 0 ? -EEXIST : ret;
	}
	if (ret)
		cli_err(dir, "%s: cannot create the trace directory: %s%s", cmd,
			strerror(-ret),
			ret == -EEXIST ? " (it holds an earlier trace: choose "
					 "another with -o)" : "");
	return ret ? -1 : 0;
}

int cli_command_runnable(const char *cmd)
{
	const char *path = getenv("PATH");
	char buf[4096];

	if (strchr(cmd, '/'))
		return access(cmd, X_OK) ? -1 : 0;
	for (const char *p = path && *path ? path : "/usr/bin:/bin"; ; ) {
		const char *end = strchr(p, ':');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, n ? p : ".", cmd);
		struct stat st;
		if (!stat(buf, &st) && S_ISREG(st.st_mode) && !access(buf, X_OK))
			return 0;
		if (!end)
			return -1;
		p = end + 1;
	}
}

int cli_ring_env(const struct cli_ring_opts *r, const char *cmd)
{
	const char *majors = r->majors;

	if ((r->psize && !valid_size(r->psize)) ||
	    (r->packets && !valid_size(r->packets))) {
		cli_err(NULL, "%s: '%s' is not a size (use e.g. 256K, 1M)", cmd,
			r->psize && !valid_size(r->psize) ? r->psize : r->packets);
		return -1;
	}
	if (r->mode && strcasecmp(r->mode, "discard") &&
	    strcasecmp(r->mode, "overwrite") && strcasecmp(r->mode, "block")) {
		cli_err(NULL, "%s: --mode %s: use discard, overwrite or block", cmd,
			r->mode);
		return -1;
	}
	if (r->group) {
		if (tfile_set_group(r->group)) {
			cli_err(NULL, "%s: --group %s: no such group", cmd, r->group);
			return -1;
		}
		setenv("STRATA_GROUP", r->group, 1);
	}
	if (r->psize)
		setenv("STRATA_PACKET_SIZE", r->psize, 1);
	if (r->packets)
		setenv("STRATA_PACKETS", r->packets, 1);
	if (r->mode)
		setenv("STRATA_MODE", r->mode, 1);
	if (*r->enable) {
		setenv("STRATA_ENABLE", r->enable, 1);
		if (!majors)
			majors = "none";
	}
	if (majors)
		setenv("STRATA_MAJORS", majors, 1);
	/* Every value as the library will take it, before anything runs: a
	 * size it refuses would trace nothing, and say so only at the
	 * program's start (a packet size of 3K ran a whole command
	 * untraced, exit 0). */
	struct strata_options o;
	if (strata_options_from_env(&o) || (o.output = ".", options_check(&o))) {
		cli_err(NULL, "%s: %s", cmd, strata_strerror_detail());
		return -1;
	}
	return 0;
}

/*
 * `strata record --guard FD -o DIR`: the guardian of a program recording
 * through STRATA_OUTPUT (src/lib/guard.c, docs/record.md "The embedded
 * mode"). No command to run: the program, started first, joins the
 * session whose socket path this writes to FD, and so do its fork and
 * exec children. It ends when none has been connected for half a second
 * (an exec reconnects within that), or when none came at all in 10 s.
 * It lives in a session of its own: the terminal's Ctrl-C reaches the
 * program only, whose death this then outlives to salvage its rings.
 */
static int record_guard(const char *out, const char *fdarg)
{
	char *end;
	long fd = strtol(fdarg, &end, 10);
	struct sessd_config scfg = {.trace_dir = out};
	struct sessd_totals t;
	struct sessd *d;
	const char *what = "";

	if (*end || fd < 0 || fd > 1024 || !out) {
		cli_err(NULL, "record: --guard FD -o DIR");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	signal(SIGINT, SIG_IGN); /* the program's, should one reach us */
	signal(SIGHUP, SIG_IGN);
	int ret = sessd_create(&scfg, &d, &what);
	if (ret) {
		cli_err(out, "guardian: %s: %s", what, strerror(-ret));
		return 1; /* the program sees the pipe close and falls back */
	}
	const char *sock = sessd_socket(d);
	if (write(fd, sock, strlen(sock)) < 0 || write(fd, "\n", 1) < 0) {
		sessd_destroy(d, NULL, &t);
		return 1;
	}
	close(fd);
	/* Where other programs recording into this directory find us
	 * (lib/guard.c, guard_running()): one recording, several programs
	 * at once. Written once the socket listens, removed as soon as no
	 * program is connected. */
	char sfile[4200];
	snprintf(sfile, sizeof(sfile), "%s/" GUARD_SESSION_FILE, out);
	int sfd = tfile_open(sfile, O_WRONLY | O_TRUNC);
	if (sfd >= 0) {
		if (write(sfd, sock, strlen(sock)) < 0 || write(sfd, "\n", 1) < 0)
			unlink(sfile);
		close(sfd);
	}

	double t0 = now_s(), idle = 0;
	int seen = 0;
	unsigned work = 0;
	for (;;) {
		work = sessd_step(d, work ? 1 : 20);
		if (sessd_live(d)) {
			seen = 1;
			idle = 0;
		} else if (seen) {
			if (!idle) {
				/* the recording's programs are gone: a program
				 * started now is another run, not ours (an exec
				 * reconnects through STRATA_SESSION) */
				unlink(sfile);
				idle = now_s();
			} else if (now_s() - idle >= 0.5) {
				break;
			}
		} else if (now_s() - t0 >= 10) {
			break;
		}
	}
	unlink(sfile);
	sessd_destroy(d, NULL, &t);
	/* A clean exit reports through the program (its DONE); a death is
	 * said here, on the program's stderr. */
	if (t.crashed)
		fprintf(stderr, "strata: %s: %llu process%s ended without "
			"goodbye: %llu packets salvaged, %llu not salvageable\n",
			out, (unsigned long long)t.crashed,
			t.crashed == 1 ? "" : "es", (unsigned long long)t.salvaged,
			(unsigned long long)t.unsalvageable);
	return t.err ? 1 : 0;
}

int cmd_record(int argc, char **argv)
{
	enum { O_DURATION = 1, O_KSYSTEM, O_START_ON, O_STOP_ON, O_CLOCK, O_GUARD };
	static const struct option opts[] = {
		{"output", required_argument, NULL, 'o'},
		CLI_RING_OPTIONS,
		{"duration", required_argument, NULL, O_DURATION},
		{"start-on", required_argument, NULL, O_START_ON},
		{"clock", required_argument, NULL, O_CLOCK},
		{"stop-on", required_argument, NULL, O_STOP_ON},
		{"verbose", no_argument, NULL, 'v'},
		{"kernel", required_argument, NULL, 'k'},
		{"kernel-system", no_argument, NULL, O_KSYSTEM},
		{"guard", required_argument, NULL, O_GUARD}, /* not in --help */
		{NULL, 0, NULL, 0},
	};
	const char *guard = NULL;
	const char *out = NULL;
	unsigned groups = 0; /* -k */
	struct cli_ring_opts ro;
	int ksystem = 0;
	char defout[64];
	double duration = 0;
	int verbose = 0, o, taken;

	memset(&ro, 0, sizeof(ro));
	optind = 1;
	while ((o = getopt_long(argc, argv, "+o:e:k:v", opts, NULL)) != -1) {
		if ((taken = cli_ring_opt(&ro, o, optarg))) {
			if (taken < 0)
				return 2;
			continue;
		}
		switch (o) {
		case 'o': out = optarg; break;
		case 'k':
			if (cli_kernel_opt("record", optarg, &groups))
				return 2;
			break;
		case O_KSYSTEM: ksystem = 1; break;
		case O_GUARD: guard = optarg; break;
		case 'v': verbose = 1; break;
		case O_CLOCK:
			if (cli_clock_opt(optarg))
				return 2;
			break;
		case O_START_ON:
		case O_STOP_ON: {
			/* checked here, applied by libstrata (control.c) */
			const char *c = strchr(optarg, ':');
			if (!c || c == optarg || !c[1] || strchr(c + 1, ':') ||
			    strlen(optarg) > 255) {
				cli_err(NULL, "--%s: '%s' is not SUB:EVENT",
					o == O_START_ON ? "start-on" : "stop-on", optarg);
				return 2;
			}
			setenv(o == O_START_ON ? "STRATA_START_ON" : "STRATA_STOP_ON",
			       optarg, 1);
			break;
		}
		case O_DURATION: {
			char *end;
			duration = strtod(optarg, &end);
			if (*end || !(duration > 0)) {
				cli_err(NULL, "--duration: '%s' is not a number of "
					"seconds", optarg);
				return 2;
			}
			break;
		}
		default:
			fputs(cmd_record_usage, stderr);
			return 2;
		}
	}
	if (guard)
		return record_guard(out, guard);
	if (optind >= argc) {
		cli_err(NULL, "record: no command to run; usage: strata record "
			"[OPTIONS] -- COMMAND [ARGS...]");
		return 2;
	}
	if (cli_command_runnable(argv[optind])) {
		cli_err(argv[optind], "record: command not found or not "
			"executable; nothing recorded");
		return 127;
	}
	if (cli_ring_env(&ro, "record"))
		return 2;
	(void)ksystem;
	if (!out) {
		time_t t = time(NULL);
		struct tm tm;
		localtime_r(&t, &tm);
		strftime(defout, sizeof(defout), "strata-%Y%m%d-%H%M%S", &tm);
		out = defout;
	}
	if (cli_new_trace_dir(out, "record"))
		return 1;

	struct sessd *d;
	struct sessd_config scfg = {.trace_dir = out};
	const char *what = "";
	int ret = sessd_create(&scfg, &d, &what);
	if (ret) {
		cli_err(NULL, "%s: %s", what, strerror(-ret));
		rmdir(out);
		return 1;
	}

	/* The system as the session starts (docs/record.md, "State dump"). */
	ret = cli_statedump_system(out);
	if (ret)
		cli_err(out, "state dump at start: %s (tracing goes on)", strerror(-ret));

	/* The environment the whole process tree inherits: libstrata
	 * reads the session and the ring geometry from it. */
	setenv("STRATA_SESSION", sessd_socket(d), 1);

	cli_session_signals();

	/* With kernel events, COMMAND waits on a pipe until the kernel side
	 * is recording (and its pid is in the filter): its first instruction
	 * is traced at both levels. */
	int gate[2] = {-1, -1};
	if (groups && pipe(gate) < 0) {
		cli_err(NULL, "record: pipe: %s", strerror(errno));
		return 1;
	}
	pid_t child = fork();
	if (child < 0) {
		cli_err(NULL, "cannot fork: %s", strerror(errno));
		struct sessd_totals t;
		sessd_destroy(d, NULL, &t);
		return 1;
	}
	if (child == 0) {
		if (gate[0] >= 0) {
			char b;
			close(gate[1]);
			while (read(gate[0], &b, 1) < 0 && errno == EINTR)
				;
			close(gate[0]);
		}
		execvp(argv[optind], argv + optind);
		fprintf(stderr, "strata: %s: cannot run: %s\n", argv[optind],
			strerror(errno));
		_exit(127);
	}

#ifdef STRATA_HAVE_KERNEL
	struct kern_session *ks = NULL;
	int pid = (int)child;
	if (groups)
		ks = cli_kernel_start(out, groups, ksystem ? NULL : &pid);
#endif
	if (gate[1] >= 0) {
		close(gate[0]);
		close(gate[1]); /* go */
	}

	int status = 0, exited = 0, stopping = 0;
	double t0 = now_s(), stop_at = 0;
	unsigned work = 0, nsnap = 0;
	for (;;) {
		work = sessd_step(d, work ? 1 : 5);
		if (cli_got_usr1) {
			char snap[4200];
			cli_got_usr1 = 0;
			snprintf(snap, sizeof(snap), "%s-snapshot-%u", out, ++nsnap);
			cli_snapshot(d, snap);
		}
		if (!exited && waitpid(child, &status, WNOHANG) == child)
			exited = 1;
		if (cli_got_signal && !stopping) {
			/* Ctrl-C reached the command too (same process
			 * group); SIGTERM/SIGHUP are passed on. */
			if (cli_got_signal != SIGINT && !exited)
				kill(child, cli_got_signal);
			stopping = 1;
			stop_at = now_s() + 2;
		}
		if (duration && !stopping && now_s() - t0 >= duration) {
			if (!exited)
				kill(child, SIGINT);
			stopping = 1;
			stop_at = now_s() + 2;
		}
		if (exited && !sessd_live(d))
			break;
		/* Processes that outlive the command (daemonized children) or
		 * that ignore the stop: 2 s more, then the trace is finished
		 * with what they committed. */
		if (exited && !stopping) {
			stopping = 1;
			stop_at = now_s() + 2;
		}
		if (stopping && now_s() >= stop_at)
			break;
	}

	struct sessd_totals t;
	sessd_destroy(d, verbose ? stderr : NULL, &t);
#ifdef STRATA_HAVE_KERNEL
	/* After the user side's metadata exists: the kernel sub-trace takes
	 * its clock class from it (docs/kernel.md). */
	cli_kernel_stop(ks, out);
#endif
	fprintf(stderr, "strata: %s: %llu process%s, %llu events, %llu bytes, "
		"%llu discarded", out, (unsigned long long)t.procs,
		t.procs == 1 ? "" : "es", (unsigned long long)t.events,
		(unsigned long long)t.bytes, (unsigned long long)t.discarded);
	if (t.crashed)
		fprintf(stderr, ", %llu ended without goodbye (%llu packets "
			"salvaged)", (unsigned long long)t.crashed,
			(unsigned long long)t.salvaged);
	fputc('\n', stderr);
	if (t.err)
		fprintf(stderr, "strata: %s: trace incomplete: %s; %llu events "
			"not written, the trace is readable up to there\n", out,
			strerror(-t.err), (unsigned long long)t.lost_io);
	if (t.discarded)
		fprintf(stderr, "strata: warning: %llu events were discarded "
			"(buffers full); raise --packets or --packet-size\n",
			(unsigned long long)t.discarded);
	if (t.unsalvageable || t.unsent)
		fprintf(stderr, "strata: warning: %llu packets could not be "
			"salvaged, %llu buffers never reached the session\n",
			(unsigned long long)t.unsalvageable,
			(unsigned long long)t.unsent);
	if (t.untraced)
		fprintf(stderr, "strata: warning: %llu process%s not traced (%s): "
			"%llu events not recorded\n", (unsigned long long)t.untraced,
			t.untraced == 1 ? "" : "es", strerror(-t.untraced_err),
			(unsigned long long)t.untraced_events);
	if (t.unjoined)
		fprintf(stderr, "strata: warning: %llu process%s could not join "
			"the session: %llu events not recorded (%s/unrecorded)\n",
			(unsigned long long)t.unjoined, t.unjoined == 1 ? "" : "es",
			(unsigned long long)t.unjoined_events, out);

	if (!exited && waitpid(child, &status, 0) == child)
		exited = 1;
	if (!exited)
		return 1;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}
