/* SPDX-License-Identifier: MIT */
/* Finding a trace's sub-traces below the directory opened, and telling
 * recordings and boots apart; the file helpers opening a trace uses. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "open.h"

#define MAX_DEPTH 8

int rd_sl_push(struct rd_strlist *l, char *s)
{
	if (!s)
		return -ENOMEM;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		char **v = realloc(l->v, cap * sizeof(*v));
		if (!v) {
			free(s);
			return -ENOMEM;
		}
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = s;
	return 0;
}

void rd_sl_free(struct rd_strlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

char *rd_path_join(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *s = malloc(la + lb + 2);
	if (!s)
		return NULL;
	memcpy(s, a, la);
	s[la] = '/';
	memcpy(s + la + 1, b, lb + 1);
	return s;
}

/* "cpu10" after "cpu9": compare digit runs by value. */
static int natcmp(const char *a, const char *b)
{
	while (*a && *b) {
		if (*a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
			unsigned long long x = strtoull(a, (char **)&a, 10);
			unsigned long long y = strtoull(b, (char **)&b, 10);
			if (x != y)
				return x < y ? -1 : 1;
			continue;
		}
		if (*a != *b)
			return (unsigned char)*a - (unsigned char)*b;
		a++;
		b++;
	}
	return (unsigned char)*a - (unsigned char)*b;
}

int rd_natcmp_p(const void *a, const void *b)
{
	return natcmp(*(char *const *)a, *(char *const *)b);
}

/* How a path that is not a regular file is named in reports; NULL for a
 * regular file. */
const char *rd_not_regular(mode_t m)
{
	if (S_ISREG(m))
		return NULL;
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	if (S_ISSOCK(m))
		return "a socket";
	return "not a regular file";
}

/*
 * Open a file of the trace for reading, only if it is a regular file: a
 * FIFO would block the reader (or read as empty), a device never ends
 * (/dev/zero) or acts on open. stat first, so that no device is opened at
 * all; then O_NONBLOCK (a FIFO put there in between does not block) and
 * fstat, which decides. Returns the descriptor, or a negative errno with
 * *kind set to rd_not_regular()'s name when that was the reason (-EINVAL).
 */
int rd_open_regular(const char *path, struct stat *st, const char **kind)
{
	*kind = NULL;
	if (stat(path, st) < 0)
		return -errno;
	if ((*kind = rd_not_regular(st->st_mode)))
		return -EINVAL;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, st) < 0 || (*kind = rd_not_regular(st->st_mode))) {
		int rc = *kind ? -EINVAL : -errno;
		close(fd);
		return rc;
	}
	return fd;
}

/* "cpu<N>": the name of a stream file (format.md §1) */
bool rd_stream_name(const char *s)
{
	return !strncmp(s, "cpu", 3) && s[3] && strspn(s + 3, "0123456789") == strlen(s + 3);
}

/* Whether dir/index holds a stream's index, index/cpu<N>.idx. */
static bool has_index(const char *dir)
{
	char *p = rd_path_join(dir, "index");
	DIR *d = p ? opendir(p) : NULL;
	struct dirent *de;
	bool found = false;
	free(p);
	while (d && !found && (de = readdir(d))) {
		size_t n = strlen(de->d_name);
		if (n > 4 && !strcmp(de->d_name + n - 4, ".idx")) {
			de->d_name[n - 4] = 0;
			found = rd_stream_name(de->d_name);
		}
	}
	if (d)
		closedir(d);
	return found;
}

static int broken_push(struct rd_found *f, const char *dir, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int broken_push(struct rd_found *f, const char *dir, const char *fmt, ...)
{
	char why[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	int rc = rd_sl_push(&f->broken, strdup(dir));
	return rc ? rc : rd_sl_push(&f->why, strdup(why));
}

/*
 * Every sub-trace below dir: a directory holding `metadata` (format.md §1).
 * One whose metadata is not a regular file, or missing while the directory
 * holds stream files or their index, is a sub-trace that cannot be read:
 * it goes to f->broken, to be reported (its events would otherwise vanish
 * without a word).
 */
int rd_find_subtraces(const char *dir, int depth, struct rd_found *f)
{
	struct stat st;
	char *mp = rd_path_join(dir, "metadata");
	if (!mp)
		return -ENOMEM;
	if (lstat(mp, &st) == 0) {
		/* there: a regular file (or a link to one) is read, nothing
		 * else, and nothing below it is another sub-trace */
		int e = stat(mp, &st) < 0 ? errno : 0;
		free(mp);
		if (e)
			return broken_push(f, dir, "metadata: %s; sub-trace skipped",
					   strerror(e));
		if (rd_not_regular(st.st_mode))
			return broken_push(f, dir, "metadata is %s, not a regular file; "
					   "sub-trace skipped", rd_not_regular(st.st_mode));
		return rd_sl_push(&f->subs, strdup(dir));
	}
	free(mp);
	if (depth >= MAX_DEPTH)
		return 0;
	DIR *d = opendir(dir);
	if (!d)
		return depth ? 0 : -errno;
	struct rd_strlist kids = { 0 };
	struct dirent *de;
	bool streams = false, tmp = false;
	int rc = 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		streams |= rd_stream_name(de->d_name);
		tmp |= !strcmp(de->d_name, "metadata.tmp");
		char *p = rd_path_join(dir, de->d_name);
		if (p && lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
			if ((rc = rd_sl_push(&kids, p)) < 0)
				break;
		} else {
			free(p);
		}
	}
	closedir(d);
	if (!rc && (streams || has_index(dir))) {
		rd_sl_free(&kids);
		return broken_push(f, dir, "no metadata file%s; sub-trace skipped",
				   tmp ? " (only metadata.tmp: its writer did not finish)" : "");
	}
	if (kids.n)
		qsort(kids.v, kids.n, sizeof(char *), rd_natcmp_p);
	for (size_t i = 0; !rc && i < kids.n; i++)
		rc = rd_find_subtraces(kids.v[i], depth + 1, f);
	rd_sl_free(&kids);
	return rc;
}

/*
 * The recording a sub-trace directory belongs to: a recording's root
 * holds its sub-traces as ust/<proc>/, kernel/, samples/ and state/
 * (format.md §1, docs/kernel.md, docs/record.md), so the root is the parent of the
 * nearest of those names on the way up from the sub-trace (not above the
 * directory opened); a sub-trace elsewhere is a recording of its own.
 * Returns the root's length in dir (a prefix of it).
 */
size_t rd_recording_root(const char *dir, size_t top)
{
	size_t n = strlen(dir);
	while (n > 0 && dir[n - 1] == '/')
		n--;
	for (size_t end = n; end >= top && end > 0;) {
		size_t b = end;
		while (b > 0 && dir[b - 1] != '/')
			b--;
		size_t len = end - b;
		if ((len == 3 && !strncmp(dir + b, "ust", 3)) ||
		    (len == 6 && !strncmp(dir + b, "kernel", 6)) ||
		    (len == 7 && !strncmp(dir + b, "samples", 7)) ||
		    (len == 5 && !strncmp(dir + b, "state", 5))) {
			while (b > 1 && dir[b - 1] == '/')
				b--;
			return b;
		}
		if (!b)
			break;
		end = b - 1;
		while (end > 0 && dir[end - 1] == '/')
			end--;
	}
	return n;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * A trace is one recording (format.md §1). The sub-traces found below
 * `top` (its length in every path) that sit below distinct recording roots
 * are several recordings: each is reported (STRATA_PROBLEM_RECORDING, with
 * its number of sub-traces) and the open refused, where merging them would
 * mix unrelated processes and times (`strata info /tmp` once merged 1234
 * streams of five days of traces).
 */
int rd_one_recording(struct strata_trace *t, const struct rd_found *f, size_t top)
{
	size_t n = f->subs.n + f->broken.n, distinct = 0;
	char **roots = calloc(n ? n : 1, sizeof(*roots));
	int rc = roots ? 0 : -ENOMEM;
	for (size_t i = 0; !rc && i < n; i++) {
		const char *d = i < f->subs.n ? f->subs.v[i] : f->broken.v[i - f->subs.n];
		if (!(roots[i] = strndup(d, rd_recording_root(d, top))))
			rc = -ENOMEM;
	}
	if (!rc) {
		qsort(roots, n, sizeof(*roots), cmp_str);
		for (size_t i = 0; i < n; i++)
			distinct += !i || strcmp(roots[i], roots[i - 1]);
	}
	for (size_t i = 0, j; !rc && distinct > 1 && i < n; i = j) {
		for (j = i; j < n && !strcmp(roots[j], roots[i]); j++)
			;
		rd_report(t, STRATA_PROBLEM_RECORDING, roots[i], 0, j - i, 0,
			  "a recording of %zu sub-trace%s", j - i, j - i == 1 ? "" : "s");
	}
	for (size_t i = 0; roots && i < n; i++)
		free(roots[i]);
	free(roots);
	return rc ? rc : distinct > 1 ? -ENOTUNIQ : 0;
}

/* The sub-traces of one recording share one clock (format.md §5: its uuid
 * is the boot id). Sub-traces of different boots cannot be put on one
 * timeline: reported per boot, like rd_one_recording's recordings. */
int rd_one_clock(struct strata_trace *t)
{
	const struct rd_meta *first = NULL;
	bool mixed = false;
	for (unsigned i = 0; i < t->nsubs; i++) {
		const struct rd_meta *m = &t->subs[i].meta;
		if (!m->has_clock_uuid)
			continue;
		if (!first)
			first = m;
		else
			mixed |= memcmp(m->clock_uuid, first->clock_uuid, 16) != 0;
	}
	if (!mixed)
		return 0;
	for (unsigned i = 0; i < t->nsubs; i++) {
		const struct rd_meta *m = &t->subs[i].meta;
		unsigned n = 0;
		bool seen = false;
		if (!m->has_clock_uuid)
			continue;
		for (unsigned j = 0; j < t->nsubs; j++) {
			const struct rd_meta *o = &t->subs[j].meta;
			if (o->has_clock_uuid && !memcmp(o->clock_uuid, m->clock_uuid, 16)) {
				seen |= j < i;
				n++;
			}
		}
		if (seen)
			continue;
		const uint8_t *u = m->clock_uuid;
		rd_report(t, STRATA_PROBLEM_RECORDING, t->subs[i].dir, 0, n, 0,
			  "%u sub-trace%s of boot %02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
			  "%02x%02x%02x%02x%02x%02x (clock uuid), this one among them",
			  n, n == 1 ? "" : "s", u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7],
			  u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
	}
	return -ENOTUNIQ;
}
