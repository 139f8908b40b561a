/* SPDX-License-Identifier: MIT */
/* Where a long-lived daemon's session directory is (docs/record.md, "strata
 * daemon"): one rule for libstrata, the daemon and `strata session`. */
#ifndef STRATA_PROTO_PATHS_H
#define STRATA_PROTO_PATHS_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Daemon names: [A-Za-z0-9_.-], not starting with '.', up to 64. */
static inline int proto_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > 64 || s[0] == '.')
		return 0;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789_.-") == n;
}

/*
 * The session directory of daemon `name`, holding `sock`, `ctl` and
 * `state`: $STRATA_RUNTIME_DIR/NAME when that is set (tests, several
 * daemons side by side); else /run/strata/NAME for root, and
 * $XDG_RUNTIME_DIR/strata/NAME, or /tmp/strata-UID/NAME without it, for
 * other users. *base gets the parent of NAME (created 0700 by the
 * daemon). Returns 0, -EINVAL (bad name) or -ENAMETOOLONG.
 */
static inline int proto_daemon_dir(const char *name, char *buf, size_t n,
				   char *base, size_t nbase)
{
	const char *rt = getenv("STRATA_RUNTIME_DIR");
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int len;

	if (!proto_name_ok(name))
		return -EINVAL;
	if (rt && *rt)
		len = snprintf(base, nbase, "%s", rt);
	else if (getuid() == 0)
		len = snprintf(base, nbase, "/run/strata");
	else if (xdg && *xdg == '/')
		len = snprintf(base, nbase, "%s/strata", xdg);
	else
		len = snprintf(base, nbase, "/tmp/strata-%u", (unsigned)getuid());
	if (len < 0 || (size_t)len >= nbase)
		return -ENAMETOOLONG;
	len = snprintf(buf, n, "%s/%s", base, name);
	/* room for "/sock" and friends, inside sun_path (108) */
	if (len < 0 || (size_t)len + 6 >= n || len + 6 >= 108)
		return -ENAMETOOLONG;
	return 0;
}

/* Whether `path` is ours alone: owned by this uid and, for a directory,
 * with no access for group or others (a /tmp path another user made
 * first must not receive our rings). */
static inline int proto_path_private(const char *path, int dir)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return 0;
	if (st.st_uid != getuid())
		return 0;
	if (dir)
		return S_ISDIR(st.st_mode) && !(st.st_mode & 077);
	return S_ISSOCK(st.st_mode) || S_ISREG(st.st_mode);
}

#endif /* STRATA_PROTO_PATHS_H */
