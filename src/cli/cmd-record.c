/* SPDX-License-Identifier: MIT */
/* strata record: run a command and every process it starts under a tracing session. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <strata/strata.h>

#include "cli.h"
#include "common/tfile.h"
#include "common/tool.h"
#include "daemon/daemon.h"
#ifdef STRATA_HAVE_KERNEL
#include "kernel/sample.h" /* samp_probe() */
#endif
#include "relay/proto.h"
#include "relay/sender.h"

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
	"  --kernel-event SYS:EV  one more tracefs event (repeatable)\n"
	"  --kernel-buffer-kb N   kernel buffer per CPU in KiB (default 4096)\n"
	"  --sample[=HZ]          sample every thread's program counter and call\n"
	"                         chain HZ times a second of CPU time (default\n"
	"                         1000; perf cpu-clock; then strata profile DIR)\n"
	"  --sample-mode perf|timer  perf_event_open, or timers and a signal in\n"
	"                         COMMAND (libstrata preloaded); default: perf\n"
	"                         where the kernel allows it, else timer\n"
	"  --call-graph fp|dwarf[,BYTES]  the samples' call chains: frame pointers\n"
	"                         (default), or BYTES of stack (8192) unwound\n"
	"                         with DWARF for code built without them (perf)\n"
	"  --locks                trace COMMAND's pthread locks (libstrata-locks.so\n"
	"                         preloaded; then strata locks DIR, docs/locks.md)\n"
	"  --functions            turn on the function probes of code built with\n"
	"                         -finstrument-functions and linked with\n"
	"                         libstrata-func (then strata profile DIR)\n"
	"  --relay HOST:PORT      also stream the trace to a strata relay as it is\n"
	"                         written (docs/relay.md); a slow network loses\n"
	"                         packets there (counted), never here\n"
	"  --token-file FILE      the relay's shared secret (with --relay)\n"
	"  --relay-buffer MIB     memory for packets not yet sent (default 64)\n"
	"  --relay-zstd[=LEVEL]   compress what is sent with zstd (level 1-19,\n"
	"                         default 1)\n"
	"  --relay-timeout SEC    at the end, wait this long for the relay (default 10)\n"
	"  --live[=MS]            for strata print --follow: every process\n"
	"                         closes its quiet packets every MS (default\n"
	"                         100; STRATA_FLUSH_MS), which costs file size\n"
	"  -v, --verbose          one line per traced process at the end\n\n"
	"SIGUSR1 writes a snapshot of the buffers (overwrite mode) to\n"
	"DIR-snapshot-N while tracing goes on.\n";

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
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
	struct dmn_config scfg = {.trace_dir = out};
	struct dmn_totals t;
	struct dmn *d;
	const char *what = "";

	if (*end || fd < 0 || fd > 1024 || !out) {
		cli_err(NULL, "record: --guard FD -o DIR");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	signal(SIGINT, SIG_IGN); /* the program's, should one reach us */
	signal(SIGHUP, SIG_IGN);
	int ret = dmn_create(&scfg, &d, &what);
	if (ret) {
		cli_err(out, "guardian: %s: %s", what, strerror(-ret));
		return 1; /* the program sees the pipe close and falls back */
	}
	const char *sock = dmn_socket(d);
	if (write(fd, sock, strlen(sock)) < 0 || write(fd, "\n", 1) < 0) {
		dmn_destroy(d, NULL, &t);
		return 1;
	}
	close(fd);
	/* Where other programs recording into this directory find us
	 * (guard_running() in libstrata): one recording, several programs
	 * at once. Written once the socket listens, removed as soon as no
	 * program is connected. */
	char sfile[4200];
	tool_guard_session_file(out, sfile, sizeof(sfile));
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
		work = dmn_step(d, work ? 1 : 20);
		if (dmn_live(d)) {
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
	dmn_destroy(d, NULL, &t);
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

/* What the command line asks for. */
struct record_opts {
	const char *guard, *out;
	unsigned groups; /* -k */
	struct cli_ring_opts ro;
	int ksystem, verbose;
	char locks[4096]; /* --locks: the preload's path, or "" */
	int want_locks;
	int functions; /* --functions: STRATA_FUNCTIONS=1 for the command */
	unsigned sample_hz; /* --sample: per thread and second of CPU time, or 0 */
	const char *sample_mode; /* --sample-mode perf|timer, or NULL: either */
	unsigned stack_bytes; /* --call-graph dwarf: per sample; 0: fp */
	char sample_lib[4096]; /* the timer sampler: libstrata to preload, or "" */
	unsigned kbuffer_kb; /* --kernel-buffer-kb, 0: the default */
	const char *kevents[65]; /* --kernel-event, NULL-terminated */
	unsigned nkevents;
	double duration;
	struct cli_relay_opts rl;
	char **cmd;
	char defout[64];
};

/* --start-on, --stop-on: checked here, applied by libstrata (control.c). */
static int record_trigger(int start, const char *arg)
{
	const char *c = strchr(arg, ':');

	if (!c || c == arg || !c[1] || strchr(c + 1, ':') || strlen(arg) > 255) {
		cli_err(NULL, "--%s: '%s' is not SUB:EVENT",
			start ? "start-on" : "stop-on", arg);
		return -1;
	}
	setenv(start ? "STRATA_START_ON" : "STRATA_STOP_ON", arg, 1);
	return 0;
}

enum { O_DURATION = 1, O_KSYSTEM, O_START_ON, O_STOP_ON, O_CLOCK, O_GUARD,
       O_KBUF, O_KEVENT, O_LOCKS, O_SAMPLE, O_FUNCTIONS, O_SAMPLE_MODE, O_LIVE,
       O_CALL_GRAPH };

/* --call-graph fp|dwarf[,BYTES] (perf's spelling): 0, or -1 after saying
 * why. */
static int record_call_graph(struct record_opts *ro, const char *arg)
{
	char *end;

	if (!strcmp(arg, "fp")) {
		ro->stack_bytes = 0;
		return 0;
	}
	if (strncmp(arg, "dwarf", 5) || (arg[5] && arg[5] != ',')) {
		cli_err(NULL, "--call-graph: '%s' is not fp or dwarf[,BYTES]", arg);
		return -1;
	}
	ro->stack_bytes = 8192;
	if (!arg[5])
		return 0;
	errno = 0;
	unsigned long n = strtoul(arg + 6, &end, 10);
	if (errno || *end || end == arg + 6 || n < 64 || n > 65000) {
		cli_err(NULL, "--call-graph dwarf,%s: the stack bytes per sample "
			"are 64 to 65000", arg + 6);
		return -1;
	}
	ro->stack_bytes = (unsigned)n;
	return 0;
}

/* One option that is not a ring option: 0, or -1 when the exit status
 * is 2 (said on stderr). */
static int record_opt(struct record_opts *ro, int o, const char *arg)
{
	char *end;

	switch (o) {
	case 'o': ro->out = arg; break;
	case 'k': return cli_kernel_opt("record", arg, &ro->groups) ? -1 : 0;
	case O_KSYSTEM: ro->ksystem = 1; break;
	case O_KEVENT:
		if (ro->nkevents >= 64) {
			cli_err(NULL, "--kernel-event: at most 64");
			return -1;
		}
		ro->kevents[ro->nkevents++] = arg;
		break;
	case O_KBUF:
		return cli_kernel_buffer_opt("record", arg, &ro->kbuffer_kb);
	case O_GUARD: ro->guard = arg; break;
	case O_LOCKS: ro->want_locks = 1; break;
	case O_FUNCTIONS: ro->functions = 1; break;
	case O_LIVE: /* checked with the ring options (cli_ring_env()) */
		setenv("STRATA_FLUSH_MS", arg ? arg : DMN_LIVE_MS_DEFAULT, 1);
		break;
	case O_SAMPLE:
		return cli_sample_opt(arg, &ro->sample_hz);
	case O_CALL_GRAPH:
		return record_call_graph(ro, arg);
	case O_SAMPLE_MODE:
		if (strcmp(arg, "perf") && strcmp(arg, "timer")) {
			cli_err(NULL, "--sample-mode: '%s' is not perf or timer", arg);
			return -1;
		}
		ro->sample_mode = arg;
		break;
	case 'v': ro->verbose = 1; break;
	case O_CLOCK: return cli_clock_opt(arg) ? -1 : 0;
	case O_START_ON:
	case O_STOP_ON: return record_trigger(o == O_START_ON, arg);
	case O_DURATION:
		ro->duration = strtod(arg, &end);
		if (*end || !(ro->duration > 0)) {
			cli_err(NULL, "--duration: '%s' is not a number of "
				"seconds", arg);
			return -1;
		}
		break;
	default:
		fputs(cmd_record_usage, stderr);
		return -1;
	}
	return 0;
}

/* The options into *ro; 0, or 2 (the exit status) after saying why. */
static int record_parse(int argc, char **argv, struct record_opts *ro)
{
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
		{"kernel-buffer-kb", required_argument, NULL, O_KBUF},
		{"kernel-event", required_argument, NULL, O_KEVENT},
		{"locks", no_argument, NULL, O_LOCKS},
		{"functions", no_argument, NULL, O_FUNCTIONS},
		{"sample", optional_argument, NULL, O_SAMPLE},
		{"sample-mode", required_argument, NULL, O_SAMPLE_MODE},
		{"call-graph", required_argument, NULL, O_CALL_GRAPH},
		{"live", optional_argument, NULL, O_LIVE},
		CLI_RELAY_OPTIONS,
		{"guard", required_argument, NULL, O_GUARD}, /* not in --help */
		{NULL, 0, NULL, 0},
	};
	int o, taken;

	optind = 1;
	while ((o = getopt_long(argc, argv, "+o:e:k:v", opts, NULL)) != -1) {
		if ((taken = cli_ring_opt(&ro->ro, o, optarg)) ||
		    (taken = cli_relay_opt(&ro->rl, o, optarg))) {
			if (taken < 0)
				return 2;
			continue;
		}
		if (record_opt(ro, o, optarg))
			return 2;
	}
	ro->cmd = optind < argc ? argv + optind : NULL;
	return 0;
}

/* What the session gave: a line of totals and one per problem. */
static void record_report(const char *out, const struct dmn_totals *t)
{
	fprintf(stderr, "strata: %s: %llu process%s, %llu events, %llu bytes, "
		"%llu discarded", out, (unsigned long long)t->procs,
		t->procs == 1 ? "" : "es", (unsigned long long)t->events,
		(unsigned long long)t->bytes, (unsigned long long)t->discarded);
	if (t->crashed)
		fprintf(stderr, ", %llu ended without goodbye (%llu packets "
			"salvaged)", (unsigned long long)t->crashed,
			(unsigned long long)t->salvaged);
	fputc('\n', stderr);
	if (t->err)
		fprintf(stderr, "strata: %s: trace incomplete: %s; %llu events "
			"not written, the trace is readable up to there\n", out,
			strerror(-t->err), (unsigned long long)t->lost_io);
	if (t->discarded)
		fprintf(stderr, "strata: warning: %llu events were discarded "
			"(buffers full); raise --packets or --packet-size\n",
			(unsigned long long)t->discarded);
	if (t->unsalvageable || t->unsent)
		fprintf(stderr, "strata: warning: %llu packets could not be "
			"salvaged, %llu buffers never reached the session\n",
			(unsigned long long)t->unsalvageable,
			(unsigned long long)t->unsent);
	if (t->untraced)
		fprintf(stderr, "strata: warning: %llu process%s not traced (%s): "
			"%llu events not recorded\n", (unsigned long long)t->untraced,
			t->untraced == 1 ? "" : "es", strerror(-t->untraced_err),
			(unsigned long long)t->untraced_events);
	if (t->unjoined)
		fprintf(stderr, "strata: warning: %llu process%s could not join "
			"the session: %llu events not recorded (%s/unrecorded)\n",
			(unsigned long long)t->unjoined, t->unjoined == 1 ? "" : "es",
			(unsigned long long)t->unjoined_events, out);
}

/*
 * Serve the session until the command has exited and no process is
 * connected, or until a stop (a signal, --duration) has had 2 s to
 * take: SIGUSR1 snapshots on the way. Returns whether the command was
 * reaped (its wait status in *status).
 */
static int record_serve(const struct record_opts *ro, struct dmn *d, pid_t child,
			int *status)
{
	int exited = 0, stopping = 0;
	double t0 = now_s(), stop_at = 0;
	unsigned work = 0, nsnap = 0;

	for (;;) {
		work = dmn_step(d, work ? 1 : 5);
		if (cli_got_usr1) {
			char snap[4200];
			cli_got_usr1 = 0;
			snprintf(snap, sizeof(snap), "%s-snapshot-%u", ro->out, ++nsnap);
			cli_snapshot(d, snap);
		}
		if (!exited && waitpid(child, status, WNOHANG) == child)
			exited = 1;
		if (cli_got_signal && !stopping) {
			/* Ctrl-C reached the command too (same process
			 * group); SIGTERM/SIGHUP are passed on. */
			if (cli_got_signal != SIGINT && !exited)
				kill(child, cli_got_signal);
			stopping = 1;
			stop_at = now_s() + 2;
		}
		if (ro->duration && !stopping && now_s() - t0 >= ro->duration) {
			if (!exited)
				kill(child, SIGINT);
			stopping = 1;
			stop_at = now_s() + 2;
		}
		if (exited && !dmn_live(d))
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
	return exited;
}

/*
 * --sample: perf_event_open where the kernel allows it (nothing runs in
 * the program), else the timer sampler in the program (lib/sampler.c,
 * libstrata preloaded, STRATA_SAMPLE set); one line says which. 0, or -1
 * after saying why.
 */
static int record_sample_mode(struct record_opts *ro)
{
	char err[256] = "", what[320];
	const char *mode = ro->sample_mode;

	if (!mode || !strcmp(mode, "perf")) {
#ifdef STRATA_HAVE_KERNEL
		if (!samp_probe(err, sizeof(err)))
			return 0;
#else
		snprintf(err, sizeof(err), "built without kernel support");
#endif
		if (mode) {
			cli_err(NULL, "--sample-mode perf: %s", err);
			return -1;
		}
	}
	if (ro->stack_bytes && mode) {
		cli_err(NULL, "--call-graph dwarf: perf's stack copies only; the "
			"timer sampler walks frame pointers (--call-graph fp)");
		return -1;
	}
	/* the build tree's src/libstrata.so.1 is beside src/cli/ */
	snprintf(what, sizeof(what), "--sample%s%s%s", err[0] ? ": " : "", err,
		 err[0] ? "; the timer sampler" : "");
	if (cli_find_lib(what, NULL, "libstrata.so.1", ".", ro->sample_lib,
			 sizeof(ro->sample_lib)))
		return -1;
	fprintf(stderr, "strata: sampling with timers and a signal in the program%s%s%s\n",
		err[0] ? ": " : " (--sample-mode timer)", err,
		ro->stack_bytes ? "; frame-pointer chains only (--call-graph "
				  "dwarf needs perf)" : "");
	return 0;
}

/* Check what runs and where it goes, before anything is created: 0, or
 * the exit status after saying why. */
static int record_check(struct record_opts *ro)
{
	if (!ro->cmd) {
		cli_err(NULL, "record: no command to run; usage: strata record "
			"[OPTIONS] -- COMMAND [ARGS...]");
		return 2;
	}
	if (cli_command_runnable(ro->cmd[0])) {
		cli_err(ro->cmd[0], "record: command not found or not "
			"executable; nothing recorded");
		return 127;
	}
	if (cli_ring_env(&ro->ro, "record"))
		return 2;
	if (cli_relay_check(&ro->rl, "record"))
		return 2;
	if (ro->want_locks && cli_find_lib("--locks", "STRATA_LOCKS_LIB", "libstrata-locks.so",
					   "locks", ro->locks, sizeof(ro->locks)))
		return 2;
	if (ro->sample_hz && record_sample_mode(ro))
		return 2;
	if (!ro->out) {
		time_t t = time(NULL);
		struct tm tm;
		localtime_r(&t, &tm);
		strftime(ro->defout, sizeof(ro->defout), "strata-%Y%m%d-%H%M%S", &tm);
		ro->out = ro->defout;
	}
	return cli_new_trace_dir(ro->out, "record") ? 1 : 0;
}

/* Fork the command; with kernel events it waits on gate until the
 * kernel side is recording (and its pid is in the filter): its first
 * instruction is traced at both levels. After saying why: -1 (no pipe),
 * -2 (no fork). */
static pid_t record_spawn(const struct record_opts *ro, int gate[2])
{
	if ((ro->groups || ro->sample_hz) && pipe(gate) < 0) {
		cli_err(NULL, "record: pipe: %s", strerror(errno));
		return -1;
	}
	pid_t child = fork();
	if (child < 0) {
		cli_err(NULL, "cannot fork: %s", strerror(errno));
		return -2;
	}
	if (child == 0) {
		cli_gate_wait(gate);
		if (ro->functions) /* src/func/probes.c */
			setenv("STRATA_FUNCTIONS", "1", 1);
		cli_preload_tracers(ro->locks, ro->sample_lib, ro->sample_hz);
		cli_exec(ro->cmd);
	}
	return child;
}

/* --relay: the sender, whose sink every sub-trace's consumer gets
 * (docs/relay.md). 0, or 1 after saying why. */
static int record_relay_start(const struct record_opts *ro,
			      struct relay_sender **out)
{
	unsigned char token[RELAY_TOKEN_MAX + 1];
	const char *why;
	int n = cli_relay_token(ro->rl.token_file, token, sizeof(token));

	if (n < 0)
		return 1;
	struct relay_sender_config rc = {
		.addr = ro->rl.relay, .token = token, .token_len = (size_t)n,
		.root = ro->out, .log = stderr,
		.budget = cli_relay_limits(&ro->rl).budget,
		.zstd_level = ro->rl.relay_zstd,
	};
	int ret = relay_sender_create(&rc, out, &why);
	explicit_bzero(token, sizeof(token));
	if (ret) {
		cli_err(ro->rl.relay, "relay: %s: %s", why, strerror(-ret));
		return 1;
	}
	return 0;
}

/* The end of --relay: the files no consumer wrote, then END; one line. */
static void record_relay_end(const struct record_opts *ro,
			     struct relay_sender *rs)
{
	unsigned ms = cli_relay_limits(&ro->rl).end_ms;

	relay_sender_end(rs, ms, ro->rl.relay, NULL, ro->out);
}

/* Run the command under a session into ro->out: the exit status. */
static int record_run(const struct record_opts *ro)
{
	struct dmn *d;
	struct dmn_totals t;
	struct dmn_config scfg = {.trace_dir = ro->out};
	struct relay_sender *rs = NULL;
	const char *what = "";
	if (ro->rl.relay && record_relay_start(ro, &rs)) {
		rmdir(ro->out);
		return 1;
	}
	if (rs)
		scfg.sink = relay_sender_sink(rs);
	int ret = dmn_create(&scfg, &d, &what);
	if (ret) {
		cli_err(NULL, "%s: %s", what, strerror(-ret));
		if (rs)
			relay_sender_finish(rs, 0, NULL);
		rmdir(ro->out);
		return 1;
	}
	cli_state_at_start(ro->out);
	/* The environment the whole process tree inherits: libstrata
	 * reads the session and the ring geometry from it. */
	setenv("STRATA_SESSION", dmn_socket(d), 1);
	/* where a process counts its events itself if we are killed before
	 * taking them (lib/client_leave.c, trace_note_unrecorded()) */
	char abs[4200];
	if (realpath(ro->out, abs))
		setenv("STRATA_RECORD_TRACE", abs, 1);
	cli_session_signals();

	int gate[2] = {-1, -1};
	pid_t child = record_spawn(ro, gate);
	if (child < 0) {
		if (child == -2)
			dmn_destroy(d, NULL, &t);
		if (rs)
			relay_sender_finish(rs, 0, NULL);
		return 1;
	}
#ifdef STRATA_HAVE_KERNEL
	struct kern_session *ks = NULL;
	int pid = (int)child;
	if (ro->groups || ro->nkevents)
		ks = cli_kernel_start(ro->out, ro->groups,
				      ro->nkevents ? ro->kevents : NULL,
				      ro->ksystem ? NULL : &pid,
				      ro->kbuffer_kb);
	/* gated too: the first sample is of the command's first instruction */
	struct samp_session *ss = ro->sample_hz && !ro->sample_lib[0] ?
		cli_sample_start(ro->out, child, ro->sample_hz, ro->stack_bytes) : NULL;
#endif
	/* after the forks that do not exec at once (the state dump) */
	if (rs && (ret = relay_sender_start(rs)))
		cli_err(ro->rl.relay, "relay: cannot start the sender: %s; the "
			"trace is written locally only", strerror(-ret));
	if (gate[1] >= 0) {
		close(gate[0]);
		close(gate[1]); /* go */
	}
	int status = 0;
	int exited = record_serve(ro, d, child, &status);
	dmn_destroy(d, ro->verbose ? stderr : NULL, &t);
#ifdef STRATA_HAVE_KERNEL
	/* After the user side's metadata exists: the kernel sub-trace takes
	 * its clock class from it (docs/kernel.md). */
	cli_kernel_stop(ks, ro->out);
	cli_sample_stop(ss, ro->out);
#endif
	record_report(ro->out, &t);
	if (rs)
		record_relay_end(ro, rs);
	if (!exited && waitpid(child, &status, 0) == child)
		exited = 1;
	if (!exited)
		return 1;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

int cmd_record(int argc, char **argv)
{
	struct record_opts ro;
	int rc;

	memset(&ro, 0, sizeof(ro));
	if ((rc = record_parse(argc, argv, &ro)))
		return rc;
	if (ro.guard)
		return record_guard(ro.out, ro.guard);
	if ((rc = record_check(&ro)))
		return rc;
	return record_run(&ro);
}
