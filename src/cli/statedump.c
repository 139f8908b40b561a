/* SPDX-License-Identifier: MIT */
/* The system's processes and threads when a session starts, into TRACE/state (format.md §4). */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <strata/strata.h>

#include "cli.h"
#include "common/tool.h"

/*
 * LTT's trace daemon began every trace with the system's state from /proc.
 * The tool records it through libstrata's own in-process consumer (so the
 * records, their clock and their metadata are those of any sub-trace),
 * into a hidden directory renamed `TRACE/state` when complete: readers
 * find it like any sub-trace, and a failure leaves no half of it.
 */
static int remove_one(const char *path, const struct stat *st, int flag,
		      struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	remove(path);
	return 0;
}

static int statedump_here(const char *trace)
{
	char tmp[4200], sub[4300], dst[4200];
	struct strata_options o = {
		.output = tmp,
		.packet_size = 64u << 10,
		.npackets = 16,
		.mode = STRATA_MODE_DISCARD,
	};
	int ret;

	snprintf(tmp, sizeof(tmp), "%s/.state", trace);
	snprintf(sub, sizeof(sub), "%s/ust/pid-%u", tmp, (unsigned)getpid());
	snprintf(dst, sizeof(dst), "%s/state", trace);
	if ((ret = strata_start(&o)))
		return ret;
	tool_statedump_system();
	ret = strata_stop();
	if (!ret && rename(sub, dst) < 0)
		ret = -errno;
	/* what is left: nothing after the rename, all of it after a failure */
	nftw(tmp, remove_one, 16, FTW_DEPTH | FTW_PHYS);
	return ret;
}

/*
 * In a child process: libstrata never unmaps the rings of a session it
 * stopped (a thread that passed the mask check may still write there),
 * so a long-lived daemon that dumped in-process at every session start
 * kept one ring (1 MiB of memfd) per start; reliability-soak saw 5 fds
 * more after 5 starts. The child's rings go with it.
 */
int cli_statedump_system(const char *trace)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return statedump_here(trace); /* no process to spare: here */
	if (pid == 0) {
		int ret = statedump_here(trace);
		_exit(-ret); /* 0, or an errno (all below 256) */
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (WIFEXITED(st))
		return -WEXITSTATUS(st);
	return -EINTR; /* killed */
}
