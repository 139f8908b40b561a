/* SPDX-License-Identifier: MIT */
/* The strata command: its table of subcommands, help, and dispatch. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static int cmd_help(int argc, char **argv);

/* Kernel and time-breakdown commands (docs/kernel.md). */
int cmd_ktrace(int argc, char **argv);
int cmd_breakdown(int argc, char **argv);
int cmd_latency(int argc, char **argv);
int cmd_switches(int argc, char **argv);
int cmd_intervals(int argc, char **argv);
extern const char cmd_ktrace_usage[], cmd_breakdown_usage[], cmd_latency_usage[],
	cmd_switches_usage[], cmd_intervals_usage[];
int cmd_view(int argc, char **argv); /* src/view/, docs/view.md */
extern const char cmd_view_usage[];
int cmd_locks(int argc, char **argv); /* docs/locks.md */
extern const char cmd_locks_usage[];
int cmd_profile(int argc, char **argv); /* docs/profile.md */
extern const char cmd_profile_usage[];
int cmd_relay(int argc, char **argv); /* docs/relay.md */
extern const char cmd_relay_usage[];
int cmd_run(int argc, char **argv); /* docs/locks.md, docs/profile.md */
extern const char cmd_run_usage[];

static const char cmd_help_usage[] =
	"usage: strata help [COMMAND]\n\nShow the list of commands, or one command's help.\n";

/* Like git's commands[]: one line per subcommand, in the order of `strata help`. */
static const struct cli_cmd commands[] = {
	{ "record", cmd_record, "trace a command and its children (session daemon)",
	  cmd_record_usage },
	{ "daemon", cmd_daemon, "long-lived session that programs started later join",
	  cmd_daemon_usage },
	{ "session", cmd_session, "start, stop, snapshot or show a daemon's trace",
	  cmd_session_usage },
	{ "relay", cmd_relay, "receive traces streamed over TCP by record --relay",
	  cmd_relay_usage },
	{ "run", cmd_run, "run a command that joins a daemon, with --locks or --sample",
	  cmd_run_usage },
	{ "info", cmd_info, "streams, CPUs, processes, threads, time span, counts",
	  cmd_info_usage },
	{ "print", cmd_print, "one line per event (text, JSON or CSV)", cmd_print_usage },
	{ "stats", cmd_stats, "counts and rates per event, CPU and thread",
	  cmd_stats_usage },
	{ "convert", cmd_convert, "convert to Chrome trace JSON or Paje",
	  cmd_convert_usage },
#ifdef STRATA_HAVE_KERNEL
	{ "ktrace", cmd_ktrace, "record kernel events while a command runs",
	  cmd_ktrace_usage },
#endif
	{ "breakdown", cmd_breakdown, "per-thread time: user, syscalls, runnable, blocked",
	  cmd_breakdown_usage },
	{ "latency", cmd_latency, "latency from one event to the next matching one; per task wait for a CPU",
	  cmd_latency_usage },
	{ "intervals", cmd_intervals, "begin/end intervals per kind and thread: count, total, p50, p99",
	  cmd_intervals_usage },
	{ "locks", cmd_locks, "contended pthread locks (traced with libstrata-locks.so)",
	  cmd_locks_usage },
	{ "profile", cmd_profile, "where the CPU time went, from record --sample",
	  cmd_profile_usage },
	{ "switches", cmd_switches, "context switches of a thread inside a pair of its events",
	  cmd_switches_usage },
#ifdef STRATA_HAVE_VIEW
	{ "view", cmd_view, "interactive timeline in a browser (HTTP server)",
	  cmd_view_usage },
#endif
	{ "help", cmd_help, "show help", cmd_help_usage },
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct cli_cmd *find(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

static void overview(FILE *f)
{
	fputs("usage: strata COMMAND [OPTIONS] TRACE\n\nCommands:\n", f);
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
	fputs("\n'strata COMMAND --help' shows a command's options; docs/cli.md has them all.\n",
	      f);
}

static int cmd_help(int argc, char **argv)
{
	if (argc < 2) {
		overview(stdout);
		return 0;
	}
	const struct cli_cmd *c = find(argv[1]);
	if (!c) {
		cli_err(NULL, "'%s' is not a strata command; see 'strata help'", argv[1]);
		return 1;
	}
	fputs(c->usage, stdout);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		overview(stderr);
		return 1;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
		return cmd_help(1, argv);
	if (!strcmp(argv[1], "--version")) {
		puts("strata 0.1.0");
		return 0;
	}
	const struct cli_cmd *c = find(argv[1]);
	if (!c) {
		cli_err(NULL, "'%s' is not a strata command; see 'strata help'", argv[1]);
		return 1;
	}
	for (int i = 2; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(c->usage, stdout);
			return 0;
		}
	return c->fn(argc - 1, argv + 1);
}
