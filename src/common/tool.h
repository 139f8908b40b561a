/* SPDX-License-Identifier: MIT */
/* What libstrata offers the strata tool beyond its public API (src/lib/tool.c): the tool includes nothing from src/lib/. */
#ifndef STRATA_COMMON_TOOL_H
#define STRATA_COMMON_TOOL_H

#include <stddef.h>

/*
 * The few internals that strata record, daemon and the state dump at a
 * session's start need, stated once. They are compiled into libstrata
 * hidden (-fvisibility=hidden): the tool links the static library, and
 * libstrata.so's exported ABI does not change (make abi).
 */

/* --clock NAME, "tsc" or "mono", for this process and every process it
 * starts (STRATA_CLOCK), decided at once: before any ring exists. 0,
 * -EINVAL for another name (nothing set), -ENODEV for tsc where this
 * machine's TSC is not invariant. */
int tool_clock_choose(const char *name);

/* The ring options in the environment (STRATA_PACKET_SIZE, STRATA_MODE,
 * STRATA_MAJORS, ...) checked whole, as the library will take them at a
 * program's start: 0, or -EINVAL with strata_strerror_detail() saying
 * why. */
int tool_options_check_env(void);

/* Every process of the system and its threads, named, as strata records
 * of the session this process runs (strata_start()): format.md §4. */
void tool_statedump_system(void);

/* The path of the file by which programs recording into trace directory
 * `dir` find its guardian (docs/record.md, "The embedded mode"): 0, or
 * -ENAMETOOLONG (cut to n bytes). */
int tool_guard_session_file(const char *dir, char *path, size_t n);

/* Defined as 1 by a program that links libstrata for its consumer (the
 * tool): the library then starts no session of its own from
 * STRATA_OUTPUT or STRATA_SESSION (weak in src/lib/session.c). */
extern const int strata_no_autostart;

#endif /* STRATA_COMMON_TOOL_H */
