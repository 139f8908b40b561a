/* SPDX-License-Identifier: MIT */
/* Files and directories of a trace: owner-only, or shared with one named group. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/tfile.h"

static pthread_once_t group_once = PTHREAD_ONCE_INIT;
static gid_t group = (gid_t)-1; /* -1: owner-only */

static int group_parse(const char *name, gid_t *out)
{
	char *end;
	struct group g, *res = NULL;
	char buf[4096];

	if (!name || !*name) {
		*out = (gid_t)-1;
		return 0;
	}
	unsigned long n = strtoul(name, &end, 10);
	if (!*end) {
		*out = (gid_t)n;
		return 0;
	}
	if (getgrnam_r(name, &g, buf, sizeof(buf), &res) || !res)
		return -EINVAL;
	*out = res->gr_gid;
	return 0;
}

static void group_from_env(void)
{
	gid_t g;

	if (!group_parse(getenv("STRATA_GROUP"), &g))
		group = g;
}

int tfile_set_group(const char *name)
{
	gid_t g;

	pthread_once(&group_once, group_from_env);
	if (group_parse(name, &g))
		return -EINVAL;
	group = g;
	return 0;
}

/* The exact mode and group of something just created, not the umask's. */
static int settle(int dirfd_or_fd, const char *path, mode_t owner_only)
{
	gid_t g = group;
	mode_t m = g == (gid_t)-1 ? owner_only
				  : owner_only | ((owner_only & 0500) >> 3);

	if (path ? chmod(path, m) : fchmod(dirfd_or_fd, m))
		return -errno;
	if (g != (gid_t)-1 &&
	    (path ? chown(path, (uid_t)-1, g) : fchown(dirfd_or_fd, (uid_t)-1, g)))
		return -errno;
	return 0;
}

int tfile_mkdir(const char *path, int excl)
{
	pthread_once(&group_once, group_from_env);
	if (mkdir(path, 0700) < 0)
		return errno == EEXIST && !excl ? 0 : -errno;
	return settle(-1, path, 0700);
}

int tfile_mkdir_p(const char *path)
{
	char buf[4096];
	size_t n = strlen(path);

	if (n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		int ret = tfile_mkdir(buf, 0);
		if (ret)
			return ret;
		*p = '/';
	}
	return tfile_mkdir(buf, 0);
}

int tfile_open(const char *path, int flags)
{
	int fd, ret;

	pthread_once(&group_once, group_from_env);
	fd = open(path, flags | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if ((ret = settle(fd, NULL, 0600))) {
		close(fd);
		return ret;
	}
	return fd;
}

static int has_files(const char *dir, const char *except, int depth)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int found = 0;

	if (!d)
		return -errno;
	while (!found && (e = readdir(d))) {
		char sub[PATH_MAX];
		struct stat st;
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    (except && !strcmp(e->d_name, except)))
			continue;
		if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name) >=
			    sizeof(sub) ||
		    lstat(sub, &st) || !S_ISDIR(st.st_mode) || depth >= 8)
			found = 1;
		else
			found = has_files(sub, NULL, depth + 1) > 0;
	}
	closedir(d);
	return found;
}

int tfile_dir_has_files(const char *dir, const char *except)
{
	return has_files(dir, except, 0);
}
