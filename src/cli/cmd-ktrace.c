/* SPDX-License-Identifier: MIT */
/* strata ktrace: record kernel events (sched, irq, syscalls) while a command records its own user events. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "kernel/kernel.h"

const char cmd_ktrace_usage[] =
	"usage: strata ktrace -k GROUPS [OPTIONS] [-- COMMAND [ARGS...]]\n\n"
	"Record kernel events into TRACE/kernel on the trace clock, while COMMAND\n"
	"runs with STRATA_OUTPUT=TRACE (its user events go to TRACE/ust/). Without\n"
	"COMMAND, records until Ctrl-C. Needs root and tracefs; without them, says\n"
	"so in one line and runs COMMAND anyway. Its options mean what they mean\n"
	"for strata record -k (docs/kernel.md, \"Recording\").\n\n"
	"  -k, --kernel GROUPS     comma list: sched, irq, syscalls (opt-in, ~0.4 us\n"
	"                          per system call), faults, all\n"
	"  --kernel-event SYS:EV   one more tracefs event (repeatable)\n"
	"  -o, --output TRACE      a new or empty directory (default\n"
	"                          strata-YYYYmmdd-HHMMSS)\n"
	"  -e, --enable PATTERN    COMMAND's user events: only those this glob names\n"
	"                          (repeatable), as strata record -e\n"
	"  --kernel-system         the whole system's kernel events; the default\n"
	"                          with COMMAND is COMMAND and its children, without\n"
	"                          COMMAND the whole system\n"
	"  -p, --pid PID           (also) this process and its children (repeatable)\n"
	"  --kernel-buffer-kb N    kernel buffer per CPU in KiB (default 4096;\n"
	"                          --buffer-kb is the same)\n";

static volatile sig_atomic_t got_signal;
static volatile sig_atomic_t forward_signal;

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	got_signal = sig;
	/* From the terminal (si_pid 0), the command got it too; from kill(1),
	 * pass it on. */
	if (si && si->si_pid != 0)
		forward_signal = sig;
}

enum { OPT_BUFKB = 2000, OPT_KEVENT, OPT_KSYSTEM, OPT_COMMAND_ONLY };

/* What the command line asks for, and the kernel options it makes. */
struct ktrace_opts {
	const char *events[65];
	unsigned nevents, npids, groups;
	int pids[64];
	bool system; /* --kernel-system */
	char enable[4096]; /* -e patterns, comma-separated */
	char defout[64];   /* the default output directory's name */
	char **cmd;
	struct kern_options ko;
	char err[512];
};

/* One option into *kt: 0, or -1 (exit status 1) after saying why. */
static int ktrace_opt(struct ktrace_opts *kt, int c, const char *arg)
{
	char *end;
	long v;

	switch (c) {
	case 'k':
		return cli_kernel_opt("ktrace", arg, &kt->groups) ? -1 : 0;
	case OPT_KEVENT:
		if (kt->nevents < 64)
			kt->events[kt->nevents++] = arg;
		return 0;
	case 'e':
		return cli_enable_add(kt->enable, sizeof(kt->enable), arg);
	case OPT_KSYSTEM:
		kt->system = true;
		return 0;
	case 'o':
		kt->ko.trace_dir = arg;
		return 0;
	case 'p':
		v = strtol(arg, &end, 10);
		if (*end || v <= 0 || kt->npids >= 63) {
			cli_err(NULL, "-p: expected a process id, not '%s'", arg);
			return -1;
		}
		kt->pids[kt->npids++] = (int)v;
		return 0;
	case OPT_COMMAND_ONLY:
		/* the default with a COMMAND; kept for the scripts that
		 * asked for it when the whole system was the default */
		return 0;
	case OPT_BUFKB:
		if (cli_kernel_buffer_opt("ktrace", arg, &kt->ko.buffer_kb))
			return -1;
		return 0;
	}
	return -1;
}

/* The options into *kt, checked, the trace directory made: 0, or the
 * exit status after saying why. */
static int ktrace_parse(int argc, char **argv, struct ktrace_opts *kt)
{
	static const struct option opts[] = {
		{ "kernel", required_argument, NULL, 'k' },
		{ "kernel-event", required_argument, NULL, OPT_KEVENT },
		{ "enable", required_argument, NULL, 'e' },
		{ "output", required_argument, NULL, 'o' },
		{ "pid", required_argument, NULL, 'p' },
		{ "kernel-system", no_argument, NULL, OPT_KSYSTEM },
		{ "command-only", no_argument, NULL, OPT_COMMAND_ONLY },
		{ "kernel-buffer-kb", required_argument, NULL, OPT_BUFKB },
		{ "buffer-kb", required_argument, NULL, OPT_BUFKB },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+k:e:o:p:c", opts, NULL)) != -1) {
		if (c == 'c')
			c = OPT_COMMAND_ONLY;
		if (ktrace_opt(kt, c, optarg) < 0)
			return 1;
	}
	kt->cmd = optind < argc ? argv + optind : NULL;
	if (!kt->groups && !kt->nevents) {
		cli_err(NULL, "ktrace: -k GROUPS is required (sched, irq, syscalls)");
		return 1;
	}
	if (kt->system && kt->npids) {
		cli_err(NULL, "ktrace: --kernel-system records every process; "
			"-p PID names some: choose one");
		return 1;
	}
	/* -e names user events: a tracefs event there was --kernel-event's
	 * (what ktrace's -e meant before; said, never silently ignored) */
	for (char *p = kt->enable; *p;) {
		size_t n = strcspn(p, ",");
		char ev[256];
		const char *colon = memchr(p, ':', n);
		if (colon && n < sizeof(ev)) {
			memcpy(ev, p, n);
			ev[n] = 0;
			ev[colon - p] = 0;
			int known = kern_event_exists(ev, ev + (colon - p) + 1);
			if (known > 0) {
				ev[colon - p] = ':';
				cli_err(NULL, "ktrace: -e %s: -e selects COMMAND's user "
					"events, as strata record -e; for this tracefs "
					"event use --kernel-event %s", ev, ev);
				return 1;
			}
		}
		p += n + (p[n] == ',');
	}
	if (!kt->ko.trace_dir) {
		time_t now = time(NULL);
		struct tm tm;
		localtime_r(&now, &tm);
		strftime(kt->defout, sizeof(kt->defout), "strata-%Y%m%d-%H%M%S", &tm);
		kt->ko.trace_dir = kt->defout;
	}
	if (kt->cmd && cli_command_runnable(kt->cmd[0])) {
		cli_err(kt->cmd[0], "ktrace: command not found or not executable; "
			"nothing recorded");
		return 127;
	}
	/* never into an earlier trace, as record (it appended before) */
	return cli_new_trace_dir(kt->ko.trace_dir, "ktrace") ? 1 : 0;
}

/* Fork the command, which waits on gate until the kernel side is ready,
 * so that its first instruction is already traced (and in the pid
 * filter). The child's pid, or -1 after saying why. */
static pid_t ktrace_spawn(struct ktrace_opts *kt, int gate[2])
{
	if (pipe2(gate, O_CLOEXEC) < 0) {
		cli_err(NULL, "ktrace: pipe: %s", strerror(errno));
		return -1;
	}
	pid_t child = fork();
	if (child < 0) {
		cli_err(NULL, "ktrace: fork: %s", strerror(errno));
		return -1;
	}
	if (child == 0) {
		cli_gate_wait(gate);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		setenv("STRATA_OUTPUT", kt->ko.trace_dir, 1);
		if (*kt->enable) {
			/* as strata record -e (recording.c): only the
			 * majors of what the patterns name come on */
			setenv("STRATA_ENABLE", kt->enable, 1);
			setenv("STRATA_MAJORS", "none", 0);
		}
		/* the directory is this run's, kernel/ included,
		 * not an earlier trace (lib/session.c) */
		setenv("STRATA_KTRACE_DIR", kt->ko.trace_dir, 1);
		cli_exec(kt->cmd);
	}
	close(gate[0]);
	/* with a COMMAND, its tree unless --kernel-system (strata record
	 * -k's scope); -p adds processes of its own */
	if (!kt->system)
		kt->pids[kt->npids++] = child;
	return child;
}

/* Wait for the command, passing on the signals kill(1) sent: its exit
 * status as the shell gives it. */
static int ktrace_wait(pid_t child)
{
	int status = 0;

	for (;;) {
		pid_t w = waitpid(child, &status, 0);
		if (w == child)
			break;
		if (w < 0 && errno != EINTR) {
			cli_err(NULL, "ktrace: waitpid: %s", strerror(errno));
			break;
		}
		if (forward_signal) {
			kill(child, forward_signal);
			forward_signal = 0;
		}
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Finish the kernel streams, one line of what they hold: rc, or 1 where
 * rc was 0 and they could not be finished. */
static int ktrace_report(struct kern_session *ks, const char *trace, int rc)
{
	struct kern_stats st;
	int ret = kern_stop(ks, &st);

	if (ret < 0) {
		cli_err(trace, "kernel streams: %s", strerror(-ret));
		if (!rc)
			rc = 1;
	}
	fprintf(stderr, "strata: kernel: %llu events on %u CPUs, %llu lost, in %s/kernel\n",
		(unsigned long long)st.events, st.ncpus,
		(unsigned long long)st.discarded, trace);
	return rc;
}

int cmd_ktrace(int argc, char **argv)
{
	struct ktrace_opts kt = { 0 };
	struct kern_options *ko = &kt.ko;
	int rc = ktrace_parse(argc, argv, &kt);

	if (rc)
		return rc;
	struct sigaction sa = { 0 };
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO; /* no SA_RESTART: waitpid returns EINTR */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	pid_t child = -1;
	int gate[2] = { -1, -1 };
	if (kt.cmd && (child = ktrace_spawn(&kt, gate)) < 0)
		return 1;

	ko->groups = kt.groups;
	ko->events = kt.nevents ? kt.events : NULL;
	ko->pids = kt.npids ? kt.pids : NULL;
	ko->npids = kt.npids;
	ko->err = kt.err;
	ko->errlen = sizeof(kt.err);
	struct kern_session *ks = NULL;
	int ret = kern_start(ko, &ks);
	if (ret < 0)
		cli_err(NULL, "kernel tracing off: %s%s", kt.err[0] ? kt.err : strerror(-ret),
			kt.cmd ? "; user-space tracing goes on" : "");

	if (kt.cmd) {
		close(gate[1]); /* go */
		rc = ktrace_wait(child);
	} else if (ks) {
		sigset_t none;
		sigemptyset(&none);
		while (!got_signal)
			sigsuspend(&none);
	} else {
		return 1;
	}
	return ks ? ktrace_report(ks, ko->trace_dir, rc) : rc;
}
