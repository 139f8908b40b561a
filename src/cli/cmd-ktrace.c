/* SPDX-License-Identifier: MIT */
/* strata ktrace: record kernel events (sched, irq, syscalls) while a command records its own user events. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "kernel/kernel.h"

const char cmd_ktrace_usage[] =
	"usage: strata ktrace -k GROUPS -o TRACE [OPTIONS] [-- COMMAND [ARGS...]]\n\n"
	"Record kernel events into TRACE/kernel on the trace clock, while COMMAND\n"
	"runs with STRATA_OUTPUT=TRACE (its user events go to TRACE/ust/). Without\n"
	"COMMAND, records until Ctrl-C. Needs root and tracefs; without them, says\n"
	"so in one line and runs COMMAND anyway.\n\n"
	"  -k, --kernel GROUPS   comma list: sched, irq, syscalls (opt-in, ~0.4 us\n"
	"                        per system call), all\n"
	"  -e, --event SYS:EV    one more tracefs event (repeatable)\n"
	"  -o, --output TRACE    trace directory: a new one, or an empty one\n"
	"  -p, --pid PID         only this process and its children (repeatable)\n"
	"  -c, --command-only    only COMMAND and its children (default: the system)\n"
	"  --buffer-kb N         kernel buffer per CPU (default 4096)\n";

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

int cmd_ktrace(int argc, char **argv)
{
	enum { OPT_BUFKB = 2000 };
	static const struct option opts[] = {
		{ "kernel", required_argument, NULL, 'k' },
		{ "event", required_argument, NULL, 'e' },
		{ "output", required_argument, NULL, 'o' },
		{ "pid", required_argument, NULL, 'p' },
		{ "command-only", no_argument, NULL, 'c' },
		{ "buffer-kb", required_argument, NULL, OPT_BUFKB },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *events[65] = { 0 };
	unsigned nevents = 0, npids = 0, groups = 0;
	int pids[64];
	bool command_only = false;
	struct kern_options ko = { 0 };
	char err[512] = "";
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+k:e:o:p:c", opts, NULL)) != -1) {
		switch (c) {
		case 'k':
			if (cli_kernel_opt("ktrace", optarg, &groups))
				return 1;
			break;
		case 'e':
			if (nevents < 64)
				events[nevents++] = optarg;
			break;
		case 'o':
			ko.trace_dir = optarg;
			break;
		case 'p': {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (*end || v <= 0 || npids >= 63) {
				cli_err(NULL, "-p: expected a process id, not '%s'", optarg);
				return 1;
			}
			pids[npids++] = (int)v;
			break;
		}
		case 'c':
			command_only = true;
			break;
		case OPT_BUFKB:
			ko.buffer_kb = (unsigned)strtoul(optarg, NULL, 10);
			break;
		default:
			return 1;
		}
	}
	char **cmd = optind < argc ? argv + optind : NULL;
	if (!ko.trace_dir) {
		cli_err(NULL, "ktrace: -o TRACE is required (see strata ktrace --help)");
		return 1;
	}
	if (!groups && !nevents) {
		cli_err(NULL, "ktrace: -k GROUPS is required (sched, irq, syscalls)");
		return 1;
	}
	if (command_only && !cmd) {
		cli_err(NULL, "ktrace: --command-only needs a COMMAND");
		return 1;
	}
	if (cmd && cli_command_runnable(cmd[0])) {
		cli_err(cmd[0], "ktrace: command not found or not executable; "
			"nothing recorded");
		return 127;
	}
	/* never into an earlier trace, as record (it appended before) */
	if (cli_new_trace_dir(ko.trace_dir, "ktrace"))
		return 1;

	struct sigaction sa = { 0 };
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO; /* no SA_RESTART: waitpid returns EINTR */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	/* The command waits on a pipe until the kernel side is ready, so that
	 * its first instruction is already traced (and in the pid filter). */
	pid_t child = -1;
	int gate[2] = { -1, -1 };
	if (cmd) {
		if (pipe2(gate, O_CLOEXEC) < 0) {
			cli_err(NULL, "ktrace: pipe: %s", strerror(errno));
			return 1;
		}
		child = fork();
		if (child < 0) {
			cli_err(NULL, "ktrace: fork: %s", strerror(errno));
			return 1;
		}
		if (child == 0) {
			char b;
			close(gate[1]);
			while (read(gate[0], &b, 1) < 0 && errno == EINTR)
				;
			signal(SIGINT, SIG_DFL);
			signal(SIGTERM, SIG_DFL);
			signal(SIGHUP, SIG_DFL);
			setenv("STRATA_OUTPUT", ko.trace_dir, 1);
			/* the directory is this run's, kernel/ included,
			 * not an earlier trace (lib/session.c) */
			setenv("STRATA_KTRACE_DIR", ko.trace_dir, 1);
			execvp(cmd[0], cmd);
			cli_err(cmd[0], "cannot run: %s", strerror(errno));
			_exit(127);
		}
		close(gate[0]);
		if (command_only)
			pids[npids++] = child;
	}

	ko.groups = groups;
	ko.events = nevents ? events : NULL;
	ko.pids = npids ? pids : NULL;
	ko.npids = npids;
	ko.err = err;
	ko.errlen = sizeof(err);
	struct kern_session *ks = NULL;
	int ret = kern_start(&ko, &ks);
	if (ret < 0)
		cli_err(NULL, "kernel tracing off: %s%s", err[0] ? err : strerror(-ret),
			cmd ? "; user-space tracing goes on" : "");

	int status = 0, rc = 0;
	if (cmd) {
		close(gate[1]); /* go */
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
		rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	} else if (ks) {
		sigset_t none;
		sigemptyset(&none);
		while (!got_signal)
			sigsuspend(&none);
	} else {
		return 1;
	}

	if (ks) {
		struct kern_stats st;
		ret = kern_stop(ks, &st);
		if (ret < 0) {
			cli_err(ko.trace_dir, "kernel streams: %s", strerror(-ret));
			if (!rc)
				rc = 1;
		}
		fprintf(stderr, "strata: kernel: %llu events on %u CPUs, %llu lost, in %s/kernel\n",
			(unsigned long long)st.events, st.ncpus,
			(unsigned long long)st.discarded, ko.trace_dir);
	}
	return rc;
}
