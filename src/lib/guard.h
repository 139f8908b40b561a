/* SPDX-License-Identifier: MIT */
/* The guardian of the embedded mode (src/lib/guard.c). */
#ifndef STRATA_LIB_GUARD_H
#define STRATA_LIB_GUARD_H

#include <stddef.h>

/*
 * Start the guardian of trace directory `dir` (which exists): a private
 * `strata record --guard` that the program's processes join as a session
 * (docs/record.md, "The embedded mode"). Its socket path goes to sock.
 * Waits for it up to 5 s. Returns 0, or a negative errno with the detail
 * set (the caller falls back to the in-process consumer).
 */
int guard_spawn(const char *dir, char *sock, size_t n);

#endif /* STRATA_LIB_GUARD_H */
