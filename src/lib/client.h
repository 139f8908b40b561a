/* SPDX-License-Identifier: MIT */
/* The client of a session daemon (src/lib/client.c), as the session sees it. */
#ifndef STRATA_LIB_CLIENT_H
#define STRATA_LIB_CLIENT_H

#include <stdbool.h>

#include <strata/strata.h>

/*
 * Join the session whose socket is `path` (STRATA_SESSION, or a daemon's
 * default socket): the ring geometry, mode and initial majors come from
 * the daemon's state file when it has one (`strata daemon`), else from
 * the environment, which `strata record` sets for the whole process
 * tree. `output`: STRATA_OUTPUT or NULL (named in the guarded report);
 * `guarded`: the daemon is the embedded mode's guardian (lib/guard.c);
 * `enable`: STRATA_ENABLE or NULL. Returns 0, or a negative errno with
 * the detail set (the caller falls back). The caller calls
 * client_leave() at exit.
 */
int client_join(const char *path, const char *output, bool guarded,
		const char *enable);

/*
 * Leave the session (exit, or strata_stop()), if joined: stop the
 * tracepoints, close this process's open packets so that the daemon
 * writes them, send the last descriptors and BYE, and disconnect. A
 * guarded process puts what its guardian confirmed in *last. The
 * caller holds the session lock.
 */
void client_leave(struct strata_stats *last);

/* The trace directory of the `strata record` this process joins
 * (STRATA_RECORD_TRACE): where it counts its events itself if that
 * recorder dies before taking them. Before client_join(). */
void client_record_trace(const char *dir);

/* Whether the process is in a daemon's session (any state but off). */
bool client_joined(void);

/* fork() (lib/fork.c), in the child. Whether it keeps tracing into rings
 * of its own (its parent is connected, or about to be). */
bool client_traces_child(void);
/* The fork interrupted the library: the child leaves the session. */
void client_fork_untraced(void);
/* Drop the parent's connection; join afresh at the first ring.
 * Async-signal-safe. */
void client_after_fork_child(void);
/* After the rings are dropped: the helper thread, where the session
 * has a state file to follow. */
void client_fork_helper(void);

#endif /* STRATA_LIB_CLIENT_H */
