/* SPDX-License-Identifier: MIT */
/* Files and directories of a trace: owner-only, or shared with one named group. */
#ifndef STRATA_COMMON_TFILE_H
#define STRATA_COMMON_TFILE_H

#include <sys/types.h>

/*
 * A trace holds the program's data and the layout of its address space
 * (strata:map records, which /proc/PID/maps denies other users), so it
 * is created owner-only: directories 0700, files 0600, whatever the
 * umask (LTTng does the same for per-user sessions). STRATA_GROUP=NAME
 * (or a gid; `--group` of strata record/daemon) shares it with that
 * group, read-only: 0750 and 0640, owned by the group
 * (docs/format.md §1, "Permissions").
 */

/* Create one directory; one that exists is fine (its mode is left
 * alone) unless `excl`. Returns 0 or a negative errno. */
int tfile_mkdir(const char *path, int excl);
/* Create it and every missing parent, all with the trace's mode (those
 * that exist are left alone). */
int tfile_mkdir_p(const char *path);
/* open(path, flags | O_CREAT | O_CLOEXEC) with the trace's mode. Returns
 * the fd or a negative errno. */
int tfile_open(const char *path, int flags);
/* The group to share traces with, by name or number; NULL or "": none.
 * Returns 0 or -EINVAL (no such group). Overrides STRATA_GROUP. */
int tfile_set_group(const char *name);
/* Whether a file lies below `dir` (directories alone, nested at most 8
 * deep, do not count; past that depth anything does), `except` (NULL:
 * none) skipped in `dir` itself: 1 or 0, or a negative errno if `dir`
 * cannot be read. What tells a trace directory that holds an earlier
 * recording from a new or empty one. */
int tfile_dir_has_files(const char *dir, const char *except);

#endif /* STRATA_COMMON_TFILE_H */
