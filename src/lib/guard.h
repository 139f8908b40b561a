/* SPDX-License-Identifier: MIT */
/* The guardian of the embedded mode (src/lib/guard.c). */
#ifndef STRATA_LIB_GUARD_H
#define STRATA_LIB_GUARD_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Start the guardian of trace directory `dir` (which exists): a private
 * `strata record --guard` that the program's processes join as a session
 * (docs/record.md, "The embedded mode"). `tool`: STRATA_TOOL, or NULL
 * for the strata beside this library. Its socket path goes to sock.
 * Waits for it up to 5 s. Returns 0, or a negative errno with the detail
 * set (the caller falls back to the in-process consumer).
 */
int guard_spawn(const char *dir, const char *tool, char *sock, size_t n);

/* The guardian of `dir` running now (its socket path in dir/.session,
 * GUARD_SESSION_FILE, written by the guardian while it runs): true with
 * the path in sock. Several programs recording into one directory at
 * once share it, as one recording. */
#define GUARD_SESSION_FILE ".session"
bool guard_running(const char *dir, char *sock, size_t n);

#endif /* STRATA_LIB_GUARD_H */
