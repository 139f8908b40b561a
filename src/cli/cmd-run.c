/* SPDX-License-Identifier: MIT */
/* strata run: a command that joins a strata daemon's session with the lock tracer or the timer sampler preloaded (docs/locks.md, docs/profile.md). */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char cmd_run_usage[] =
	"usage: strata run [--locks] [--sample[=HZ]] -- COMMAND [ARGS...]\n\n"
	"Run COMMAND, in place of this strata, with what record --locks and\n"
	"record --sample-mode timer give a recorded command: the programs it\n"
	"starts load strata's libraries and join the session of the strata\n"
	"daemon that runs (the same STRATA_RUNTIME_DIR); without one they run\n"
	"untraced.\n\n"
	"  --locks               preload libstrata-locks.so (contended pthread\n"
	"                        locks, strata locks); at STRATA_LOCKS_LIB if set\n"
	"  --sample[=HZ]         preload libstrata.so.1 with STRATA_SAMPLE=HZ\n"
	"                        (1000 without HZ): the timer sampler, strata\n"
	"                        profile\n";

int cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "locks", no_argument, NULL, 'l' },
		{ "sample", optional_argument, NULL, 's' },
		{ 0 },
	};
	char locks[4096] = "", sample_lib[4096] = "";
	unsigned hz = 0;
	bool want_locks = false;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		if (c == 'l')
			want_locks = true;
		else if (c != 's' || cli_sample_opt(optarg, &hz) < 0)
			return 2;
	}
	if (optind >= argc || (!want_locks && !hz)) {
		cli_err(NULL, "run: %s; usage: strata run [--locks] [--sample[=HZ]] "
			"-- COMMAND [ARGS...]", optind >= argc ? "no command to run" :
			"nothing to add (--locks or --sample)");
		return 2;
	}
	if (cli_command_runnable(argv[optind])) {
		cli_err(argv[optind], "run: command not found or not executable");
		return 127;
	}
	/* the build tree's src/libstrata.so.1 is beside src/cli/, as for
	 * record (cmd-record.c) */
	if ((want_locks && cli_find_lib("--locks", "STRATA_LOCKS_LIB", "libstrata-locks.so",
					"locks", locks, sizeof(locks))) ||
	    (hz && cli_find_lib("--sample", NULL, "libstrata.so.1", ".", sample_lib,
				sizeof(sample_lib))))
		return 2;
	cli_preload_tracers(locks, sample_lib, hz);
	cli_exec(argv + optind);
}
