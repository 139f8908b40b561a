/* SPDX-License-Identifier: MIT */
/* strata relay's files: a session's files, opened beneath its directory only, and the data frames (CREATE, WRITE, WRITEZ, CLOSE, METADATA) that write them (docs/relay.md §1, §2). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "relay/server_int.h"

/* ---- files, beneath the session's directory ----------------------------- */

/* openat2 with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS: no path a sender
 * names can leave its trace directory, whatever is on disk
 * (docs/relay.md §4); relay_path_ok() has refused ".." already. */
int srv_open_beneath(int dirfd, const char *path, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW),
		.mode = (flags & O_CREAT) ? mode : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
			   RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	return fd < 0 ? -errno : (int)fd;
}

/* --fsync: a directory's entries (a file made, renamed or removed in
 * it) on stable storage. 0 or a negative errno; 0 without --fsync. */
int srv_sync_dir(int sync, int dirfd)
{
	return sync && fsync(dirfd) < 0 ? -errno : 0;
}

/* The directories above `path` (made 0700 where missing, and with --fsync
 * (`sync`) each one made synced into its parent); the fd of the last one
 * and the file's name in it to *name. */
static int parent_dir(int sync, int dirfd, const char *path, const char **name)
{
	char buf[RELAY_MAX_PATH + 1];
	int fd = dup(dirfd);

	if (fd < 0)
		return -errno;
	snprintf(buf, sizeof(buf), "%s", path);
	char *p = buf, *slash;
	while ((slash = strchr(p, '/'))) {
		*slash = 0;
		int made = mkdirat(fd, p, 0700) == 0, e = 0;
		if (!made && errno != EEXIST)
			e = -errno;
		else if (made)
			e = srv_sync_dir(sync, fd);
		if (e) {
			close(fd);
			return e;
		}
		int nfd = srv_open_beneath(fd, p, O_RDONLY | O_DIRECTORY, 0);
		close(fd);
		if (nfd < 0)
			return nfd;
		fd = nfd;
		p = slash + 1;
	}
	*name = path + (p - buf);
	return fd;
}

static struct rfile *file_find(struct rsession *s, uint32_t id)
{
	for (unsigned i = 0; i < s->nfiles; i++)
		if (s->files[i].id == id)
			return &s->files[i];
	return NULL;
}

static void file_drop(struct rsession *s, struct rfile *f)
{
	close(f->fd);
	*f = s->files[--s->nfiles];
}

/*
 * --fsync: what the session's frames wrote, on stable storage, before the
 * relay acknowledges them (docs/relay.md §3): one fdatasync per file
 * written since the last, so per batch of frames read, not per frame.
 * The frames that change names (CREATE, CLOSE, METADATA) sync their
 * directories as they are applied: they are a few per file. 0, or a
 * negative errno with *why; 0 at once without --fsync.
 */
int srv_session_sync(struct rsession *s, const char **why)
{
	for (unsigned i = 0; s->sync && i < s->nfiles; i++) {
		struct rfile *f = &s->files[i];
		if (!f->dirty)
			continue;
		if (fdatasync(f->fd) < 0) {
			*why = "cannot sync a file (--fsync)";
			return -errno;
		}
		f->dirty = 0;
	}
	return 0;
}

void srv_session_close_files(struct rsession *s)
{
	while (s->nfiles)
		file_drop(s, &s->files[0]);
}

void srv_session_free(struct relay *r, struct rsession *s)
{
	for (struct rsession **pp = &r->sessions; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	srv_session_close_files(s);
	free(s->files);
	if (s->dirfd >= 0)
		close(s->dirfd);
	free(s);
}


/* ---- data frames -------------------------------------------------------- */

static int write_all(int fd, const unsigned char *p, size_t n, uint64_t off)
{
	while (n) {
		ssize_t w = pwrite(fd, p, n, (off_t)off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -ENOSPC;
		p += w;
		n -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

int srv_op_create(struct rsession *s, const unsigned char *p, size_t n,
		  const char **why)
{
	*why = "malformed CREATE";
	if (n < 6)
		return -EPROTO;
	uint32_t id = get32(p);
	size_t pl = get16(p + 4);
	const char *path = (const char *)p + 6;
	if (6 + pl != n || id > RELAY_MAX_FILE_ID)
		return -EPROTO;
	*why = "refused path";
	if (!relay_path_ok(path, pl))
		return -EPERM;
	char name[RELAY_MAX_PATH + 1];
	memcpy(name, path, pl);
	name[pl] = 0;
	if (srv_reserved_name(name))
		return -EPERM;
	struct rfile *f = file_find(s, id);
	if (f) {
		/* a replay after a reconnect: the same file, or an error */
		*why = "file id in use";
		return strcmp(f->path, name) ? -EEXIST : 0;
	}
	*why = "too many open files";
	if (s->nfiles >= MAX_FILES)
		return -EMFILE;
	const char *leaf;
	*why = "cannot create directory";
	int dfd = parent_dir(s->sync, s->dirfd, name, &leaf);
	if (dfd < 0)
		return dfd;
	/* no O_TRUNC: a replayed CREATE must not lose what was written */
	int fd = srv_open_beneath(dfd, leaf, O_WRONLY | O_CREAT, 0600);
	int ret = fd < 0 ? fd : srv_sync_dir(s->sync, dfd);
	close(dfd);
	*why = "cannot create file";
	if (ret) {
		if (fd >= 0)
			close(fd);
		return ret;
	}
	if (!(s->nfiles & (s->nfiles + 1))) { /* grow at 0, 1, 3, 7 ... */
		struct rfile *nf = realloc(s->files, (size_t)(2 * s->nfiles + 1) * sizeof(*nf));
		if (!nf) {
			close(fd);
			return -ENOMEM;
		}
		s->files = nf;
	}
	f = &s->files[s->nfiles++];
	f->id = id;
	f->fd = fd;
	f->dirty = 0;
	memcpy(f->path, name, pl + 1);
	return 0;
}

int srv_op_write(struct rsession *s, const unsigned char *p, size_t n,
		 const char **why)
{
	*why = "malformed WRITE";
	if (n < 12)
		return -EPROTO;
	struct rfile *f = file_find(s, get32(p));
	uint64_t off = get64(p + 4);
	*why = "WRITE to a file not created";
	if (!f)
		return -EBADF;
	*why = "offset out of bounds";
	if (off > RELAY_MAX_OFFSET || n - 12 > RELAY_MAX_OFFSET - off)
		return -EFBIG;
	*why = "cannot write";
	f->dirty = 1;
	return write_all(f->fd, p + 12, n - 12, off);
}

/* A compressed WRITE: the frame must say its size, which must be the one
 * announced; the output buffer (RELAY_CHUNK) bounds what any frame can
 * make the relay write, whatever it claims. */
int srv_op_writez(struct relay *r, struct rsession *s, const unsigned char *p,
		  size_t n, const char **why)
{
	*why = "malformed WRITEZ";
	if (n < 16)
		return -EPROTO;
	uint32_t raw = get32(p + 12);
	if (raw > RELAY_CHUNK)
		return -EPROTO;
	struct rfile *f = file_find(s, get32(p));
	uint64_t off = get64(p + 4);
	*why = "WRITE to a file not created";
	if (!f)
		return -EBADF;
	*why = "offset out of bounds";
	if (off > RELAY_MAX_OFFSET || raw > RELAY_MAX_OFFSET - off)
		return -EFBIG;
	*why = "out of memory";
	if (!r->zd && !(r->zd = ZSTD_createDCtx()))
		return -ENOMEM;
	if (!r->zbuf && !(r->zbuf = malloc(RELAY_CHUNK)))
		return -ENOMEM;
	*why = "bad zstd frame";
	unsigned long long want = ZSTD_getFrameContentSize(p + 16, n - 16);
	if (want != raw)
		return -EBADMSG;
	size_t got = ZSTD_decompressDCtx(r->zd, r->zbuf, RELAY_CHUNK, p + 16, n - 16);
	if (ZSTD_isError(got) || got != raw)
		return -EBADMSG;
	*why = "cannot write";
	f->dirty = 1;
	return write_all(f->fd, r->zbuf, raw, off);
}

/* --fsync: the directory holding `path` (below the session's), synced. */
static int sync_parent(struct rsession *s, const char *path)
{
	const char *leaf;

	if (!s->sync)
		return 0;
	int dfd = parent_dir(1, s->dirfd, path, &leaf);
	if (dfd < 0)
		return dfd;
	int ret = srv_sync_dir(1, dfd);
	close(dfd);
	return ret;
}

int srv_op_close(struct rsession *s, const unsigned char *p, size_t n,
		 const char **why)
{
	*why = "malformed CLOSE";
	if (n < 18)
		return -EPROTO;
	uint32_t id = get32(p), flags = get32(p + 12);
	uint64_t size = get64(p + 4);
	size_t fl = get16(p + 16);
	const char *final = (const char *)p + 18;
	if (18 + fl != n)
		return -EPROTO;
	struct rfile *f = file_find(s, id);
	*why = "CLOSE of a file not created";
	if (!f)
		return -EBADF;
	*why = "refused path";
	if (fl && !relay_path_ok(final, fl))
		return -EPERM;
	char fin[RELAY_MAX_PATH + 1];
	memcpy(fin, final, fl);
	fin[fl] = 0;
	int ret = 0;
	if (flags & RELAY_CLOSE_UNLINK) {
		*why = "cannot remove";
		if (unlinkat(s->dirfd, f->path, 0) < 0 && errno != ENOENT)
			ret = -errno;
		if (!ret)
			ret = sync_parent(s, f->path);
	} else {
		*why = "cannot set the size";
		if (size != RELAY_SIZE_KEEP &&
		    (size > RELAY_MAX_OFFSET || ftruncate(f->fd, (off_t)size) < 0))
			ret = size > RELAY_MAX_OFFSET ? -EFBIG : -errno;
		*why = "cannot sync (--fsync)";
		if (!ret && s->sync && fdatasync(f->fd) < 0)
			ret = -errno;
		*why = "cannot rename";
		/* the parents exist (made for the file) or are made */
		const char *leaf;
		if (!ret && fl && srv_reserved_name(fin))
			ret = -EPERM;
		if (!ret && fl) {
			int dfd = parent_dir(s->sync, s->dirfd, fin, &leaf);
			if (dfd < 0)
				ret = dfd;
			else
				close(dfd);
		}
		/* RENAME_NOREPLACE is not asked: a replay renames over
		 * its own earlier result */
		if (!ret && fl && renameat(s->dirfd, f->path, s->dirfd, fin) < 0 &&
		    errno != ENOENT)
			ret = -errno;
		/* --fsync: both names' directories (one, for an index) */
		if (!ret && fl)
			ret = sync_parent(s, fin);
		if (!ret && fl)
			ret = sync_parent(s, f->path);
	}
	file_drop(s, f);
	return ret;
}

int srv_op_metadata(struct rsession *s, const unsigned char *p, size_t n,
		    const char **why)
{
	char path[RELAY_MAX_PATH + 1], tmp[RELAY_MAX_PATH + 16];

	*why = "malformed METADATA";
	if (n < 2)
		return -EPROTO;
	size_t pl = get16(p);
	if (2 + pl > n)
		return -EPROTO;
	*why = "refused path";
	if (!relay_path_ok((const char *)p + 2, pl))
		return -EPERM;
	memcpy(path, p + 2, pl);
	path[pl] = 0;
	const char *slash = strrchr(path, '/');
	const char *leaf = slash ? slash + 1 : path;
	if (strcmp(leaf, "metadata"))
		return -EPERM;
	snprintf(tmp, sizeof(tmp), "%.*s.metadata.tmp", (int)(leaf - path), path);
	const char *tleaf;
	*why = "cannot create directory";
	int dfd = parent_dir(s->sync, s->dirfd, tmp, &tleaf);
	if (dfd < 0)
		return dfd;
	*why = "cannot write the metadata";
	int fd = srv_open_beneath(dfd, tleaf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int ret = fd < 0 ? fd : write_all(fd, p + 2 + pl, n - 2 - pl, 0);
	/* --fsync: its bytes before its name, or a power loss could leave
	 * an empty metadata in place of the old one */
	if (!ret && s->sync && fdatasync(fd) < 0)
		ret = -errno;
	if (fd >= 0)
		close(fd);
	if (!ret && renameat(dfd, tleaf, dfd, "metadata") < 0)
		ret = -errno;
	if (!ret)
		ret = srv_sync_dir(s->sync, dfd);
	close(dfd);
	return ret;
}
