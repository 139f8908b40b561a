/* SPDX-License-Identifier: MIT */
/* Opening a trace: sub-trace discovery, metadata, stream mappings, packet index. */
#define _GNU_SOURCE /* SEEK_DATA */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rd.h"

#define MAX_DEPTH 8
#define MAX_METADATA (64u << 20)

void rd_report(struct strata_trace *t, int kind, const char *file,
	       uint64_t offset, uint64_t count, uint64_t ts, const char *fmt, ...)
{
	char what[512];
	va_list ap;
	t->nproblems++;
	if (!t->problem)
		return;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	struct strata_problem p = { kind, file, offset, count, ts, what };
	t->problem(&p, t->problem_arg);
}

/* ---- discovery -------------------------------------------------------------- */

struct strlist {
	char **v;
	size_t n, cap;
};

static int sl_push(struct strlist *l, char *s)
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

static void sl_free(struct strlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

static char *path_join(const char *a, const char *b)
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

static int natcmp_p(const void *a, const void *b)
{
	return natcmp(*(char *const *)a, *(char *const *)b);
}

/* How a path that is not a regular file is named in reports; NULL for a
 * regular file. */
static const char *not_regular(mode_t m)
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
 * *kind set to not_regular()'s name when that was the reason (-EINVAL).
 */
static int open_regular(const char *path, struct stat *st, const char **kind)
{
	*kind = NULL;
	if (stat(path, st) < 0)
		return -errno;
	if ((*kind = not_regular(st->st_mode)))
		return -EINVAL;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, st) < 0 || (*kind = not_regular(st->st_mode))) {
		int rc = *kind ? -EINVAL : -errno;
		close(fd);
		return rc;
	}
	return fd;
}

/* "cpu<N>": the name of a stream file (format.md §1) */
static bool stream_name(const char *s)
{
	return !strncmp(s, "cpu", 3) && s[3] && strspn(s + 3, "0123456789") == strlen(s + 3);
}

/* Whether dir/index holds a stream's index, index/cpu<N>.idx. */
static bool has_index(const char *dir)
{
	char *p = path_join(dir, "index");
	DIR *d = p ? opendir(p) : NULL;
	struct dirent *de;
	bool found = false;
	free(p);
	while (d && !found && (de = readdir(d))) {
		size_t n = strlen(de->d_name);
		if (n > 4 && !strcmp(de->d_name + n - 4, ".idx")) {
			de->d_name[n - 4] = 0;
			found = stream_name(de->d_name);
		}
	}
	if (d)
		closedir(d);
	return found;
}

/* What discovery found: the sub-traces to read, and those that cannot be
 * (metadata missing or not a regular file), each with why. */
struct found {
	struct strlist subs;
	struct strlist broken, why;
};

static int broken_push(struct found *f, const char *dir, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int broken_push(struct found *f, const char *dir, const char *fmt, ...)
{
	char why[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	int rc = sl_push(&f->broken, strdup(dir));
	return rc ? rc : sl_push(&f->why, strdup(why));
}

/*
 * Every sub-trace below dir: a directory holding `metadata` (format.md §1).
 * One whose metadata is not a regular file, or missing while the directory
 * holds stream files or their index, is a sub-trace that cannot be read:
 * it goes to f->broken, to be reported (its events would otherwise vanish
 * without a word).
 */
static int find_subtraces(const char *dir, int depth, struct found *f)
{
	struct stat st;
	char *mp = path_join(dir, "metadata");
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
		if (not_regular(st.st_mode))
			return broken_push(f, dir, "metadata is %s, not a regular file; "
					   "sub-trace skipped", not_regular(st.st_mode));
		return sl_push(&f->subs, strdup(dir));
	}
	free(mp);
	if (depth >= MAX_DEPTH)
		return 0;
	DIR *d = opendir(dir);
	if (!d)
		return depth ? 0 : -errno;
	struct strlist kids = { 0 };
	struct dirent *de;
	bool streams = false, tmp = false;
	int rc = 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		streams |= stream_name(de->d_name);
		tmp |= !strcmp(de->d_name, "metadata.tmp");
		char *p = path_join(dir, de->d_name);
		if (p && lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
			if ((rc = sl_push(&kids, p)) < 0)
				break;
		} else {
			free(p);
		}
	}
	closedir(d);
	if (!rc && (streams || has_index(dir))) {
		sl_free(&kids);
		return broken_push(f, dir, "no metadata file%s; sub-trace skipped",
				   tmp ? " (only metadata.tmp: its writer did not finish)" : "");
	}
	if (kids.n)
		qsort(kids.v, kids.n, sizeof(char *), natcmp_p);
	for (size_t i = 0; !rc && i < kids.n; i++)
		rc = find_subtraces(kids.v[i], depth + 1, f);
	sl_free(&kids);
	return rc;
}

/*
 * The recording a sub-trace directory belongs to: a recording's root
 * holds its sub-traces as ust/<proc>/, kernel/ and state/ (format.md §1,
 * docs/kernel.md, docs/record.md), so the root is the parent of the
 * nearest of those names on the way up from the sub-trace (not above the
 * directory opened); a sub-trace elsewhere is a recording of its own.
 * Returns the root's length in dir (a prefix of it).
 */
static size_t recording_root(const char *dir, size_t top)
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

/* ---- packet index ----------------------------------------------------------- */

static bool pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

/* Why the header at `off` is unusable, or NULL. Fills *pk from it. */
static const char *check_header(const struct rd_stream *s, uint64_t off,
				uint64_t psize, struct rd_packet *pk)
{
	const uint8_t *h = s->map + off;
	memset(pk, 0, sizeof(*pk));
	pk->offset = off;
	if (rd_le32(h) != RD_PACKET_MAGIC)
		return "bad packet magic";
	if (rd_le32(h + STRATA_PKT_OFF_STREAM_ID) != s->sclass)
		return "stream_id is not the metadata's stream class";
	uint64_t ps_bits = rd_le64(h + STRATA_PKT_OFF_PACKET_SIZE);
	uint64_t cs_bits = rd_le64(h + STRATA_PKT_OFF_CONTENT_SIZE);
	if (psize && ps_bits != psize * 8)
		return "packet_size differs from the stream's";
	if (!pow2(ps_bits / 8) || ps_bits % 8 || ps_bits / 8 < RD_MIN_PACKET ||
	    ps_bits / 8 > RD_MAX_PACKET)
		return "impossible packet_size";
	/* whole events: 64-bit words, or 32-bit ones in stream class 1 */
	if (cs_bits > ps_bits || cs_bits < RD_HEADER_SIZE * 8 ||
	    cs_bits % (s->sclass ? 32 : 64))
		return "impossible content_size";
	pk->ts_begin = rd_le64(h + STRATA_PKT_OFF_TS_BEGIN);
	pk->ts_end = rd_le64(h + STRATA_PKT_OFF_TS_END);
	if (pk->ts_end < pk->ts_begin)
		return "timestamp_end before timestamp_begin";
	pk->content = cs_bits / 8;
	pk->seq = rd_le64(h + STRATA_PKT_OFF_SEQ);
	pk->discarded = rd_le64(h + STRATA_PKT_OFF_DISCARDED);
	pk->cpu = rd_le32(h + STRATA_PKT_OFF_CPU);
	pk->pid = rd_le32(h + STRATA_PKT_OFF_PID);
	pk->tid = rd_le32(h + STRATA_PKT_OFF_TID);
	return NULL;
}

/* Whether the n bytes at p are all zero: where no packet header was ever
 * written (a hole of a sparse file, or zeros written in its place). */
static bool all_zero(const uint8_t *p, size_t n)
{
	uint64_t acc = 0;
	size_t i = 0;
	for (; i + 8 <= n; i += 8)
		acc |= rd_le64(p + i);
	for (; i < n; i++)
		acc |= p[i];
	return !acc;
}

/*
 * Past a zero-filled header at `off` (a multiple of align): where a header
 * may be again. The file system's next data (SEEK_DATA, on the stream's
 * descriptor fd) when it knows its holes, rounded up to a multiple of
 * align; `end` when the rest of the file is a hole; otherwise the next
 * slot, off + align (zeros were written: read on). *hole is set when a
 * hole was skipped: a 100 GiB sparse tail costs one system call, where
 * reading its headers took minutes.
 */
static uint64_t skip_zeros(int fd, uint64_t off, uint64_t align, uint64_t end, bool *hole)
{
	uint64_t next = off + align;
	if (fd >= 0) {
		off_t d = lseek(fd, (off_t)off, SEEK_DATA);
		if (d < 0 && errno == ENXIO) {
			*hole = true;
			next = end;
		} else if (d > (off_t)off) {
			*hole = true;
			next = ((uint64_t)d + align - 1) / align * align;
		}
	}
	return next < end ? next : end;
}

/* The stream's packet size: from the first header, or the first valid
 * header found at a power-of-two offset that is a multiple of its size
 * (zero-filled stretches skipped as skip_zeros says). */
static uint64_t find_packet_size(const struct rd_stream *s, int fd)
{
	struct rd_packet pk;
	if (!check_header(s, 0, 0, &pk))
		return rd_le64(s->map + STRATA_PKT_OFF_PACKET_SIZE) / 8;
	bool hole = false;
	for (uint64_t off = RD_MIN_PACKET; off + RD_HEADER_SIZE <= s->size;) {
		if (all_zero(s->map + off, RD_HEADER_SIZE)) {
			off = skip_zeros(fd, off, RD_MIN_PACKET, s->size, &hole);
			continue;
		}
		if (!check_header(s, off, 0, &pk)) {
			uint64_t p = rd_le64(s->map + off +
					     STRATA_PKT_OFF_PACKET_SIZE) / 8;
			if (off % p == 0)
				return p;
		}
		off += RD_MIN_PACKET;
	}
	return 0;
}

/* bytes as "10.0 GiB" */
static void fmt_size(char *buf, size_t n, uint64_t bytes)
{
	static const char *const u[] = { "bytes", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)bytes;
	unsigned i = 0;
	while (v >= 1024 && i < 5) {
		v /= 1024;
		i++;
	}
	if (i)
		snprintf(buf, n, "%.1f %s", v, u[i]);
	else
		snprintf(buf, n, "%" PRIu64 " bytes", bytes);
}

/* A stretch of zero-filled packet slots: reported once, with its extent,
 * when it ends, not once per packet (a 10 GiB sparse tail is 655,360
 * packets of 16 KiB, and was as many lines). */
struct zrun {
	uint64_t start, ts;
	bool on, hole;
};

static void zrun_end(struct strata_trace *t, const struct rd_stream *s, struct zrun *z,
		     uint64_t end)
{
	char sz[32];
	if (!z->on)
		return;
	z->on = false;
	fmt_size(sz, sizeof(sz), end - z->start);
	rd_report(t, STRATA_PROBLEM_DAMAGED, s->path, z->start, 0, z->ts,
		  "zero-filled up to offset %" PRIu64 " (%s%s): no packet there; skipped",
		  end, sz, z->hole ? ", a hole in the file" : "");
}

/* The packets index file `path` lists (format.md §7); 0 when it is
 * missing or unusable. */
static uint64_t index_packets(const char *path)
{
	struct stat st;
	const char *kind;
	uint8_t h[STRATA_IDX_HEADER_SIZE];
	uint64_t n = 0;
	int fd = open_regular(path, &st, &kind);
	if (fd < 0)
		return 0;
	if (st.st_size >= STRATA_IDX_HEADER_SIZE &&
	    pread(fd, h, sizeof(h), 0) == STRATA_IDX_HEADER_SIZE &&
	    rd_be32(h) == RD_INDEX_MAGIC &&
	    rd_be32(h + STRATA_IDX_HDR_OFF_ENTRY_SIZE) >= RD_INDEX_ENTRY)
		n = ((uint64_t)st.st_size - STRATA_IDX_HEADER_SIZE) /
		    rd_be32(h + STRATA_IDX_HDR_OFF_ENTRY_SIZE);
	close(fd);
	return n;
}

static int load_index(struct strata_trace *t, struct rd_stream *s, int sfd)
{
	struct stat st;
	const char *kind;
	int fd = open_regular(s->idxpath, &st, &kind);
	if (fd == -ENOENT)
		return -ENOENT; /* a cache: missing is normal */
	int rc = -EINVAL;
	uint8_t *buf = NULL;
	struct rd_packet *pk = NULL;
	char why[192] = "unreadable";
	if (fd < 0) {
		if (kind)
			snprintf(why, sizeof(why), "is %s, not a regular file", kind);
		else
			snprintf(why, sizeof(why), "cannot be opened: %s", strerror(-fd));
		goto bad;
	}
	if (st.st_size < 16 || st.st_size > (1ll << 32))
		goto bad;
	buf = malloc(st.st_size);
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}
	if (pread(fd, buf, st.st_size, 0) != st.st_size)
		goto bad;
	uint32_t esz = rd_be32(buf + STRATA_IDX_HDR_OFF_ENTRY_SIZE);
	snprintf(why, sizeof(why), "bad header");
	if (rd_be32(buf) != RD_INDEX_MAGIC ||
	    rd_be32(buf + STRATA_IDX_HDR_OFF_MAJOR) != 1 || esz < RD_INDEX_ENTRY)
		goto bad;
	uint64_t n = (st.st_size - STRATA_IDX_HEADER_SIZE) / esz;
	uint64_t want = (s->size + s->packet_size - 1) / s->packet_size;
	/* past the last packet listed, a hole to the end of the file (no
	 * data there for SEEK_DATA): nothing an index could list, a
	 * zero-filled tail reported below */
	uint64_t listed = n * s->packet_size;
	bool tail = n < want && sfd >= 0 && lseek(sfd, (off_t)listed, SEEK_DATA) < 0 &&
		    errno == ENXIO;
	snprintf(why, sizeof(why), "packet count differs from the stream file");
	if (n != want && !tail)
		goto bad;
	pk = calloc(n ? n : 1, sizeof(*pk));
	if (!pk) {
		rc = -ENOMEM;
		goto out;
	}
	for (uint64_t i = 0; i < n; i++) {
		const uint8_t *e = buf + STRATA_IDX_HEADER_SIZE + i * esz;
		pk[i].offset = rd_be64(e + STRATA_IDX_OFF_OFFSET);
		pk[i].content = rd_be64(e + STRATA_IDX_OFF_CONTENT_SIZE) / 8;
		pk[i].ts_begin = rd_be64(e + STRATA_IDX_OFF_TS_BEGIN);
		pk[i].ts_end = rd_be64(e + STRATA_IDX_OFF_TS_END);
		pk[i].discarded = rd_be64(e + STRATA_IDX_OFF_DISCARDED);
		pk[i].seq = rd_be64(e + STRATA_IDX_OFF_SEQ);
		snprintf(why, sizeof(why), "entry %" PRIu64 " inconsistent with the stream file", i);
		if (pk[i].offset != i * s->packet_size ||
		    rd_be64(e + STRATA_IDX_OFF_PACKET_SIZE) != s->packet_size * 8 ||
		    pk[i].content > s->packet_size || pk[i].content < RD_HEADER_SIZE ||
		    pk[i].content % (s->sclass ? 4 : 8) ||
		    pk[i].offset + pk[i].content > s->size ||
		    pk[i].ts_end < pk[i].ts_begin)
			goto bad;
		/* in a stream, packets follow each other in time, their
		 * sequence numbers grow and events_discarded never shrinks
		 * (format.md §2): the entries between the first and the last,
		 * which are checked against their headers at once
		 * (open_stream), cannot make the stream's totals lie */
		snprintf(why, sizeof(why), "entry %" PRIu64 " out of order with the one before "
			 "(timestamps, packet_seq_num or events_discarded)", i);
		if (i && (pk[i].ts_begin < pk[i - 1].ts_end || pk[i].seq <= pk[i - 1].seq ||
			  pk[i].discarded < pk[i - 1].discarded))
			goto bad;
		/* cpu/pid/tid come from the header, compared with the entry
		 * when the packet is entered (rd_packet_check) */
		pk[i].cpu = UINT32_MAX;
		pk[i].flags = RD_PK_UNCHECKED;
	}
	s->packets = pk;
	s->npackets = n;
	pk = NULL;
	rc = 0;
	if (tail) {
		struct zrun z = { listed, n ? s->packets[n - 1].ts_end : 0, true, true };
		zrun_end(t, s, &z, s->size);
	}
	goto out;
bad:
	rd_report(t, STRATA_PROBLEM_INDEX, s->idxpath, 0, 0, 0,
		  "index %s; rebuilt from packet headers", why);
out:
	free(pk);
	free(buf);
	if (fd >= 0)
		close(fd);
	return rc;
}

/*
 * The index from the packet headers (format.md §7: packets have a fixed
 * size, so this reads one header per packet and no events). nslots 0:
 * the whole file, zero-filled slots left out (a sparse tail of any size
 * costs no memory); else exactly nslots slots, zero-filled ones kept as
 * skipped entries: the rebuild of a loaded index keeps every packet at its
 * index, which cursors hold. fd: the stream file, for its holes
 * (skip_zeros), or -1.
 */
static int build_index(struct strata_trace *t, struct rd_stream *s, int fd, uint64_t nslots)
{
	const uint64_t psz = s->packet_size;
	uint64_t limit = nslots ? nslots * psz : s->size;
	if (limit > s->size)
		limit = s->size;
	uint64_t cap = nslots ? nslots : 64, n = 0;
	struct rd_packet *pk = calloc(cap, sizeof(*pk));
	if (!pk)
		return -ENOMEM;
	uint64_t last_end = 0, dropped = 0;
	struct zrun z = { 0 };
	for (uint64_t off = 0; off < limit;) {
		const char *why;
		if (off - dropped >= (8u << 20)) {
			/* header pages read so far (the kernel maps some around
			 * each): given back as we go, so that resident memory
			 * does not grow with the file */
			madvise((void *)s->map, off & ~(uint64_t)4095, MADV_DONTNEED);
			dropped = off;
		}
		uint64_t hl = s->size - off < RD_HEADER_SIZE ? s->size - off : RD_HEADER_SIZE;
		if (all_zero(s->map + off, hl)) {
			if (!z.on)
				z = (struct zrun){ off, last_end, true, false };
			uint64_t next = skip_zeros(fd, off, psz, limit, &z.hole);
			for (; nslots && off < next; off += psz)
				pk[n++] = (struct rd_packet){ .offset = off, .ts_begin = last_end,
							      .ts_end = last_end, .flags = RD_PK_BAD };
			off = next;
			continue;
		}
		zrun_end(t, s, &z, off);
		if (n == cap) {
			struct rd_packet *np = realloc(pk, 2 * cap * sizeof(*pk));
			if (!np) {
				free(pk);
				return -ENOMEM;
			}
			pk = np;
			cap *= 2;
		}
		struct rd_packet *p = &pk[n++];
		*p = (struct rd_packet){ .offset = off };
		if (hl < RD_HEADER_SIZE)
			why = "truncated packet header";
		else
			why = check_header(s, off, psz, p);
		off += psz;
		if (why) {
			rd_report(t, STRATA_PROBLEM_DAMAGED, s->path, p->offset, 0, last_end,
				  "%s; packet skipped", why);
			*p = (struct rd_packet){ .offset = off - psz, .ts_begin = last_end,
						 .ts_end = last_end, .flags = RD_PK_BAD };
			continue;
		}
		if (p->offset + p->content > s->size) {
			rd_report(t, STRATA_PROBLEM_DAMAGED, s->path, s->size, 0,
				  p->ts_begin,
				  "file truncated inside a packet (content ends at %" PRIu64
				  "); reading what is there", p->offset + p->content);
			p->content = (s->size - p->offset) & ~7ull;
			/* the event cut by the end of file is this same damage */
			p->flags |= RD_PK_DAMAGE_REPORTED;
		}
		if (p->ts_begin < last_end) {
			rd_report(t, STRATA_PROBLEM_DAMAGED, s->path, p->offset, 0, last_end,
				  "packet begins before the previous one ends; packet skipped");
			p->flags = RD_PK_BAD;
			p->ts_begin = p->ts_end = last_end;
			continue;
		}
		last_end = p->ts_end;
	}
	zrun_end(t, s, &z, limit);
	s->packets = pk;
	s->npackets = n;
	return 0;
}

/* Totals of a stream from its index (events_discarded is cumulative). */
static void stream_totals(struct rd_stream *s)
{
	const struct rd_packet *prev = NULL;
	s->begin = UINT64_MAX;
	s->end = 0;
	s->discarded = 0;
	s->packets_lost = 0;
	for (uint64_t i = 0; i < s->npackets; i++) {
		const struct rd_packet *p = &s->packets[i];
		if (p->flags & RD_PK_BAD)
			continue;
		if (p->ts_begin < s->begin)
			s->begin = p->ts_begin;
		if (p->ts_end > s->end)
			s->end = p->ts_end;
		if (p->discarded > s->discarded)
			s->discarded = p->discarded;
		if (prev) {
			/* damaged or zero-filled slots between the two explain
			 * part of a gap of packet_seq_num */
			uint64_t slots = (p->offset - prev->offset) / s->packet_size - 1;
			if (p->seq > prev->seq + 1 + slots)
				s->packets_lost += p->seq - prev->seq - 1 - slots;
		}
		prev = p;
	}
	if (!prev)
		s->begin = s->end = 0;
}

/* The trace's time span: its streams' (those with a readable packet). */
static void trace_span(struct strata_trace *t)
{
	t->begin = UINT64_MAX;
	t->end = 0;
	for (unsigned i = 0; i < t->nstreams; i++) {
		const struct rd_stream *s = &t->streams[i];
		bool any = false;
		for (uint64_t p = 0; p < s->npackets && !any; p++)
			any = !(s->packets[p].flags & RD_PK_BAD);
		if (!any)
			continue;
		if (s->begin < t->begin)
			t->begin = s->begin;
		if (s->end > t->end)
			t->end = s->end;
	}
	if (t->begin == UINT64_MAX)
		t->begin = 0;
}

/* Rebuild an index-loaded stream's index from its packet headers, the
 * same slots (build_index), keeping what was reported already. */
static int rebuild_index(struct strata_trace *t, struct rd_stream *s)
{
	struct rd_packet *old = s->packets;
	uint64_t n = s->npackets;
	struct stat st;
	const char *kind;
	int fd = open_regular(s->path, &st, &kind);
	int rc = build_index(t, s, fd < 0 ? -1 : fd, n);
	if (fd >= 0)
		close(fd);
	if (rc < 0)
		return rc;
	for (uint64_t i = 0; i < n; i++)
		s->packets[i].flags |= old[i].flags & (RD_PK_SEQ_REPORTED | RD_PK_DISC_REPORTED |
						       RD_PK_DAMAGE_REPORTED);
	free(old);
	stream_totals(s);
	trace_span(t);
	return 0;
}

/* Whether an index entry's field (idx) differs from its header's (hdr);
 * says how in why. */
static bool differs(char *why, size_t n, const char *name, uint64_t idx, uint64_t hdr)
{
	if (idx == hdr)
		return false;
	snprintf(why, n, "%s %" PRIu64 " where the header says %" PRIu64, name, idx, hdr);
	return true;
}

int rd_packet_check(struct strata_trace *t, struct rd_stream *s, uint64_t i)
{
	struct rd_packet *p = &s->packets[i], h;
	char why[256];
	if (!(p->flags & RD_PK_UNCHECKED))
		return 0;
	const char *bad = check_header(s, p->offset, s->packet_size, &h);
	if (bad)
		snprintf(why, sizeof(why), "the packet header: %s", bad);
	else if (!differs(why, sizeof(why), "content_size (bytes)", p->content, h.content) &&
		 !differs(why, sizeof(why), "timestamp_begin", p->ts_begin, h.ts_begin) &&
		 !differs(why, sizeof(why), "timestamp_end", p->ts_end, h.ts_end) &&
		 !differs(why, sizeof(why), "events_discarded", p->discarded, h.discarded) &&
		 !differs(why, sizeof(why), "packet_seq_num", p->seq, h.seq)) {
		p->cpu = h.cpu;
		p->pid = h.pid;
		p->tid = h.tid;
		p->flags &= ~RD_PK_UNCHECKED;
		return 0;
	}
	rd_report(t, STRATA_PROBLEM_INDEX, s->idxpath,
		  STRATA_IDX_HEADER_SIZE + i * RD_INDEX_ENTRY, 0, p->ts_begin,
		  "entry %" PRIu64 " (packet at offset %" PRIu64 "): %s; index rebuilt "
		  "from packet headers", i, p->offset, why);
	if (rebuild_index(t, s) == 0)
		return 1;
	/* no memory for another index: this packet alone is given up */
	rd_report(t, STRATA_PROBLEM_DAMAGED, s->path, p->offset, 0, p->ts_begin,
		  "out of memory rebuilding the index; packet skipped");
	p->flags = (p->flags & ~RD_PK_UNCHECKED) | RD_PK_BAD;
	return 0;
}

static char *index_path(const char *dir, const char *name)
{
	char *p = malloc(strlen(dir) + strlen(name) + 12);
	if (p)
		sprintf(p, "%s/index/%s.idx", dir, name);
	return p;
}

static int open_stream(struct strata_trace *t, struct rd_stream *s)
{
	struct stat st;
	const char *kind;
	int fd = open_regular(s->path, &st, &kind), rc = 0;
	if (fd < 0) {
		/* add_streams took a regular file: it changed since */
		rd_report(t, STRATA_PROBLEM_MISSING, s->path, 0, index_packets(s->idxpath), 0,
			  "%s%s; stream skipped", kind ? kind : "cannot open: ",
			  kind ? ", not a regular file" : strerror(-fd));
		return 0;
	}
	s->size = st.st_size;
	if (!s->size) {
		/* a stream with no packet yet is normal, unless its index
		 * lists some */
		uint64_t listed = index_packets(s->idxpath);
		if (listed)
			rd_report(t, STRATA_PROBLEM_MISSING, s->path, 0, listed, 0,
				  "empty file, but its index lists %" PRIu64 " packet%s; "
				  "not read", listed, listed == 1 ? "" : "s");
		goto out;
	}
	void *m = mmap(NULL, s->size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED) {
		rd_report(t, STRATA_PROBLEM_DAMAGED, s->path, 0, 0, 0, "cannot map: %s",
			  strerror(errno));
		s->size = 0;
		goto out;
	}
	s->map = m;
	madvise(m, s->size, MADV_SEQUENTIAL);
	if (s->size < RD_HEADER_SIZE) {
		rd_report(t, STRATA_PROBLEM_DAMAGED, s->path, 0, 0, 0,
			  "file of %" PRIu64 " bytes is shorter than a packet header", s->size);
		goto out;
	}
	s->packet_size = find_packet_size(s, fd);
	if (!s->packet_size) {
		rd_report(t, STRATA_PROBLEM_DAMAGED, s->path, 0, 0, 0,
			  "no valid packet header found; stream skipped");
		goto out;
	}
	rc = load_index(t, s, fd);
	if (rc == -ENOMEM)
		goto out;
	if (rc == 0) {
		/* the entries the stream's totals and time span rest on: the
		 * first and the last (load_index checked that the others lie
		 * in order between them) */
		if (s->npackets && !rd_packet_check(t, s, 0))
			rd_packet_check(t, s, s->npackets - 1);
	} else {
		if ((rc = build_index(t, s, fd, 0)) < 0)
			goto out;
		/* the header pages it touched are not needed until read:
		 * keep resident memory independent of the trace size */
		madvise((void *)s->map, s->size, MADV_DONTNEED);
	}
	stream_totals(s);
out:
	close(fd);
	return rc;
}

static int add_stream(struct strata_trace *t, unsigned subidx, const char *name)
{
	struct rd_subtrace *sub = &t->subs[subidx];
	struct rd_stream *ns = realloc(t->streams, (t->nstreams + 1) * sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	t->streams = ns;
	struct rd_stream *s = &ns[t->nstreams];
	memset(s, 0, sizeof(*s));
	s->sub = NULL; /* fixed up once t->subs stops moving */
	s->subidx = subidx;
	s->path = path_join(sub->dir, name);
	s->idxpath = index_path(sub->dir, name);
	if (!s->path || !s->idxpath) {
		free(s->path);
		free(s->idxpath);
		return -ENOMEM;
	}
	t->nstreams++;
	s->cpu = stream_name(name) ? (uint32_t)strtoul(name + 3, NULL, 10) : UINT32_MAX;
	s->sclass = sub->meta.sclass;
	int rc = open_stream(t, s);
	if (!rc && s->cpu == UINT32_MAX)
		for (uint64_t k = 0; k < s->npackets; k++)
			if (!(s->packets[k].flags & (RD_PK_BAD | RD_PK_UNCHECKED))) {
				s->cpu = s->packets[k].cpu;
				break;
			}
	return rc;
}

/*
 * A stream that cannot be read (name: not a regular file, or only its
 * index is there): reported when it would hold events, one line each,
 * instead of being passed over (format.md §1: cpu<N> and index/cpu<N>.idx
 * are a stream).
 */
static void missing_stream(struct strata_trace *t, const char *dir, const char *name)
{
	char *p = path_join(dir, name), *idx = index_path(dir, name);
	struct stat st;
	if (p && idx) {
		uint64_t listed = index_packets(idx);
		char lists[64] = "";
		if (listed)
			snprintf(lists, sizeof(lists), " (its index lists %" PRIu64 " packet%s)",
				 listed, listed == 1 ? "" : "s");
		int e = stat(p, &st) < 0 ? errno : 0;
		if (!e)
			rd_report(t, STRATA_PROBLEM_MISSING, p, 0, listed, 0,
				  "%s, not a regular file%s; not read", not_regular(st.st_mode),
				  lists);
		else if (lstat(p, &st) == 0 || listed)
			rd_report(t, STRATA_PROBLEM_MISSING, p, 0, listed, 0,
				  "cannot read: %s%s; not read", strerror(e), lists);
	}
	free(p);
	free(idx);
}

static int add_streams(struct strata_trace *t, unsigned subidx)
{
	const char *dir = t->subs[subidx].dir;
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct strlist names = { 0 };
	struct dirent *de;
	int rc = 0;
	while (!rc && (de = readdir(d)))
		if (de->d_name[0] != '.' && strncmp(de->d_name, "metadata", 8) &&
		    strcmp(de->d_name, "index"))
			rc = sl_push(&names, strdup(de->d_name));
	closedir(d);
	/* streams whose index alone is there */
	char *ip = path_join(dir, "index");
	d = ip ? opendir(ip) : NULL;
	free(ip);
	while (!rc && d && (de = readdir(d))) {
		size_t n = strlen(de->d_name);
		if (n <= 4 || strcmp(de->d_name + n - 4, ".idx"))
			continue;
		de->d_name[n - 4] = 0;
		if (stream_name(de->d_name))
			rc = sl_push(&names, strdup(de->d_name));
	}
	if (d)
		closedir(d);
	if (names.n)
		qsort(names.v, names.n, sizeof(char *), natcmp_p);
	for (size_t i = 0; !rc && i < names.n; i++) {
		if (i && !strcmp(names.v[i], names.v[i - 1]))
			continue;
		char *p = path_join(dir, names.v[i]);
		struct stat st;
		bool reg = p && stat(p, &st) == 0 && S_ISREG(st.st_mode);
		free(p);
		if (reg)
			rc = add_stream(t, subidx, names.v[i]);
		else if (stream_name(names.v[i]))
			missing_stream(t, dir, names.v[i]);
	}
	sl_free(&names);
	return rc;
}

static int load_metadata(struct strata_trace *t, struct rd_subtrace *sub)
{
	char *path = path_join(sub->dir, "metadata");
	if (!path)
		return -ENOMEM;
	struct stat st;
	const char *kind;
	int rc = 0, fd = open_regular(path, &st, &kind);
	char *text = NULL;
	if (fd < 0) {
		rd_report(t, STRATA_PROBLEM_METADATA, path, 0, 0, 0, "%s%s; sub-trace skipped",
			  kind ? kind : "cannot read: ",
			  kind ? ", not a regular file" : strerror(-fd));
		rc = -EINVAL;
		goto out;
	}
	if (st.st_size > MAX_METADATA) {
		rd_report(t, STRATA_PROBLEM_METADATA, path, 0, 0, 0,
			  "metadata larger than %u MiB", MAX_METADATA >> 20);
		rc = -EINVAL;
		goto out;
	}
	text = malloc(st.st_size + 1);
	if (!text) {
		rc = -ENOMEM;
		goto out;
	}
	ssize_t got = pread(fd, text, st.st_size, 0);
	if (got < 0)
		got = 0;
	char err[256];
	rc = rd_meta_parse(text, got, &sub->meta, err, sizeof(err));
	if (rc == -EINVAL) {
		long line = strtol(err + 5, NULL, 10);
		rd_report(t, STRATA_PROBLEM_METADATA, path, line, 0, 0,
			  "%s; sub-trace skipped", err);
	}
out:
	if (fd >= 0)
		close(fd);
	free(text);
	free(path);
	return rc;
}

static int build_lookup(struct rd_subtrace *sub)
{
	uint32_t maxminor[64] = { 0 };
	for (unsigned i = 0; i < sub->meta.nclasses; i++) {
		uint32_t id = sub->meta.classes[i]->ctf;
		uint32_t mj = (id >> 16) & 63, mn = id & 0xffff;
		if (mn + 1 > maxminor[mj])
			maxminor[mj] = mn + 1;
	}
	for (unsigned mj = 0; mj < 64; mj++) {
		if (!maxminor[mj])
			continue;
		sub->by_major[mj] = calloc(maxminor[mj], sizeof(struct rd_class *));
		if (!sub->by_major[mj])
			return -ENOMEM;
		sub->nminor[mj] = maxminor[mj];
	}
	for (unsigned i = 0; i < sub->meta.nclasses; i++) {
		struct rd_class *c = sub->meta.classes[i];
		uint32_t id = c->ctf;
		if (id >> 22)
			continue;
		sub->by_major[(id >> 16) & 63][id & 0xffff] = c;
	}
	return 0;
}

/* hi of the event a class's batch entry takes: its id and the length of
 * its fields (format.md §3), or 0 when the batch path cannot take it
 * (stream class 1 has its own table: build_fast1) */
static uint32_t fast_hi(const struct rd_subtrace *sub, const struct rd_class *c)
{
	uint32_t id = c->ctf;
	if (sub->meta.sclass || id >> 22 || !(id >> 16) || c->fast_min == UINT32_MAX ||
	    rd_lookup(sub, id) != c || c->plan_min / 8 + 1 > 1023)
		return 0;
	return (c->plan_min / 8 + 1) << 22 | id;
}

/* Slot of hi in a table of 1 << bits entries with multiplier mult (bits
 * 22.. of the product: rd_fast_slot). */
static uint32_t fast_idx(uint32_t hi, uint32_t mult, unsigned bits)
{
	return ((uint32_t)(hi * mult) >> 22) & ((1u << bits) - 1);
}

/* Entry e for class c, whose payload the batch path takes as `size`
 * bytes (stream class 0: the length hi says; 1: the class's). */
static void fast_fill(struct rd_fast *e, const struct rd_class *c, uint64_t size)
{
	unsigned nf = c->pub.nfields;
	e->nf = (uint16_t)nf;
	e->vbytes = (uint64_t)nf * sizeof(struct strata_value);
	e->size = size;
	e->id_hi = (uint64_t)c->pub.id << 32;
	e->cls = c;
	/* fields at payload bytes 0 (and 8), inside the event: the plan
	 * reads them (plan_min) */
	e->simple = c->plan && c->words && (nf == 1 || nf == 2) &&
		    c->plan[0].word == 0 && (nf == 1 || c->plan[1].word == 8);
	if (e->simple) {
		e->voff = 8 * (nf - 1);
		e->vh[0] = c->plan[0].vtype;
		e->vh[1] = c->plan[nf - 1].vtype;
	}
}

/*
 * Stream class 1's batch table (docs/compact.md): one entry per compact
 * id, indexed by the header's low 5 bits. A compact event's length is its
 * class's, so the entry says it (size: the payload); ids the batch path
 * does not take (0, strata's records, 31: the extended form, classes with
 * no plan) hold a size no content holds, which fails the bound that every
 * taken event is checked against anyway (iter.c fast_at).
 */
static int build_fast1(struct rd_subtrace *sub)
{
	sub->fast = calloc(32, sizeof(*sub->fast));
	if (!sub->fast)
		return -ENOMEM;
	sub->fast_mult = 0;
	sub->fast_mask = 31u << 6;
	for (uint32_t cid = 0; cid < 32; cid++) {
		struct rd_fast *e = &sub->fast[cid];
		const struct rd_class *c = cid && cid < 31 ? rd_lookup(sub, cid) : NULL;
		e->size = RD_FAST_NONE;
		if (!c || !(c->pub.id >> 16) || !c->clen || c->fast_min == UINT32_MAX ||
		    c->fast_min > c->clen - 4)
			continue;
		fast_fill(e, c, c->clen - 4);
		e->hi = cid;
	}
	return 0;
}

/*
 * The batch path's class table (struct rd_fast): the smallest size and
 * multiplier that put every class in a slot of its own (most traces have a
 * few dozen classes: found at once). Should none fit in 1024 slots, the
 * classes that collide are left to the general path.
 */
static int build_fast(struct rd_subtrace *sub)
{
	if (sub->meta.sclass)
		return build_fast1(sub);
	static const uint32_t mults[] = { 0x9e3779b1u, 0x85ebca6bu, 0xc2b2ae35u,
					  0x27d4eb2fu, 0x165667b1u, 0x7feb352du,
					  0x846ca68bu, 0x2c1b3c6du };
	unsigned n = 0, bits = 1, mi = 0;
	for (unsigned i = 0; i < sub->meta.nclasses; i++)
		n += fast_hi(sub, sub->meta.classes[i]) != 0;
	while (bits < 10 && (1u << bits) < 2 * n)
		bits++;
	uint8_t *used = calloc(1024, 1);
	if (!used)
		return -ENOMEM;
	for (;; mi++) {
		if (mi == sizeof(mults) / sizeof(mults[0])) {
			if (bits == 10) {
				mi = 0; /* collisions stay: first come */
				break;
			}
			bits++;
			mi = 0;
		}
		memset(used, 0, 1024);
		bool clash = false;
		for (unsigned i = 0; i < sub->meta.nclasses && !clash; i++) {
			uint32_t hi = fast_hi(sub, sub->meta.classes[i]);
			if (hi)
				clash = used[fast_idx(hi, mults[mi], bits)]++;
		}
		if (!clash)
			break;
	}
	free(used);
	sub->fast = calloc(1u << bits, sizeof(*sub->fast));
	if (!sub->fast)
		return -ENOMEM;
	sub->fast_mult = mults[mi];
	sub->fast_mask = ((1u << bits) - 1) << 6;
	for (uint32_t i = 0; i < 1u << bits; i++) {
		uint32_t h = 0;
		while (fast_idx(h, mults[mi], bits) == i)
			h++;
		sub->fast[i].hi = h; /* hashes elsewhere: no header matches it */
	}
	for (unsigned i = 0; i < sub->meta.nclasses; i++) {
		const struct rd_class *c = sub->meta.classes[i];
		uint32_t hi = fast_hi(sub, c);
		struct rd_fast *e = &sub->fast[fast_idx(hi, mults[mi], bits)];
		if (!hi || fast_idx(e->hi, mults[mi], bits) == fast_idx(hi, mults[mi], bits))
			continue; /* not taken, or its slot is taken */
		e->hi = hi;
		fast_fill(e, c, c->plan_min);
	}
	return 0;
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
static int one_recording(struct strata_trace *t, const struct found *f, size_t top)
{
	size_t n = f->subs.n + f->broken.n, distinct = 0;
	char **roots = calloc(n ? n : 1, sizeof(*roots));
	int rc = roots ? 0 : -ENOMEM;
	for (size_t i = 0; !rc && i < n; i++) {
		const char *d = i < f->subs.n ? f->subs.v[i] : f->broken.v[i - f->subs.n];
		if (!(roots[i] = strndup(d, recording_root(d, top))))
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
 * timeline: reported per boot, like one_recording's recordings. */
static int one_clock(struct strata_trace *t)
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

int strata_trace_open(const char *path, const struct strata_open_options *opt,
		      struct strata_trace **out)
{
	struct strata_trace *t = calloc(1, sizeof(*t));
	struct found f = { 0 };
	char *top = NULL;
	bool merge = opt && (opt->flags & STRATA_OPEN_MERGE);
	int rc;
	*out = NULL;
	if (!t)
		return -ENOMEM;
	if (opt) {
		t->problem = opt->problem;
		t->problem_arg = opt->problem_arg;
	}
	struct stat st;
	if (stat(path, &st) < 0) {
		rc = -errno;
		goto fail;
	}
	if (!S_ISDIR(st.st_mode)) {
		rc = -ENOTDIR;
		goto fail;
	}
	/* without its trailing slashes: the paths found below it are
	 * reported as the user wrote them */
	size_t tl = strlen(path);
	while (tl > 1 && path[tl - 1] == '/')
		tl--;
	if (!(top = strndup(path, tl))) {
		rc = -ENOMEM;
		goto fail;
	}
	if ((rc = find_subtraces(top, 0, &f)) < 0)
		goto fail;
	if (!f.subs.n && !f.broken.n) {
		rc = -ENOENT;
		goto fail;
	}
	if (!merge && (rc = one_recording(t, &f, tl)) < 0)
		goto fail;
	for (size_t i = 0; i < f.broken.n; i++)
		rd_report(t, STRATA_PROBLEM_METADATA, f.broken.v[i], 0, 0, 0, "%s", f.why.v[i]);
	t->subs = calloc(f.subs.n ? f.subs.n : 1, sizeof(*t->subs));
	if (!t->subs) {
		rc = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < f.subs.n; i++) {
		struct rd_subtrace *sub = &t->subs[t->nsubs];
		sub->dir = f.subs.v[i];
		f.subs.v[i] = NULL;
		rc = load_metadata(t, sub);
		if (rc == -ENOMEM)
			goto fail;
		if (rc < 0) {
			free(sub->dir);
			sub->dir = NULL;
			continue;
		}
		t->nsubs++;
	}
	if (!t->nsubs) {
		rc = -EINVAL;
		goto fail;
	}
	if (!merge && (rc = one_clock(t)) < 0)
		goto fail;
	for (unsigned i = 0; i < t->nsubs; i++) {
		struct rd_subtrace *sub = &t->subs[i];
		if ((rc = build_lookup(sub)) < 0 || (rc = build_fast(sub)) < 0)
			goto fail;
		const char *vpid = rd_meta_env(&sub->meta, "vpid");
		sub->vpid = vpid ? (uint32_t)strtoul(vpid, NULL, 10) : 0;
		if ((rc = add_streams(t, i)) < 0)
			goto fail;
	}
	/* class table, clock, time span */
	for (unsigned i = 0; i < t->nsubs; i++)
		t->nclasses += t->subs[i].meta.nclasses;
	t->classes = calloc(t->nclasses ? t->nclasses : 1, sizeof(*t->classes));
	if (!t->classes) {
		rc = -ENOMEM;
		goto fail;
	}
	unsigned k = 0;
	for (unsigned i = 0; i < t->nsubs; i++)
		for (unsigned j = 0; j < t->subs[i].meta.nclasses; j++) {
			struct rd_class *c = t->subs[i].meta.classes[j];
			c->pub.index = k;
			t->classes[k++] = &c->pub;
			if (c->pub.nfields > t->max_nf)
				t->max_nf = c->pub.nfields;
			if (c->fast_min != UINT32_MAX && c->pub.nfields > t->fast_nf)
				t->fast_nf = c->pub.nfields;
		}
	t->fast_nf = t->fast_nf < 2 ? 2 : (t->fast_nf + 1) & ~1u;
	t->freq = t->subs[0].meta.freq;
	t->offset_s = t->subs[0].meta.offset_s;
	t->offset = t->subs[0].meta.offset;
	t->clock_name = t->subs[0].meta.clock_name ? t->subs[0].meta.clock_name : "";
	t->clock_desc = t->subs[0].meta.clock_desc ? t->subs[0].meta.clock_desc : "";
	for (unsigned i = 0; i < t->nstreams; i++) {
		struct rd_stream *s = &t->streams[i];
		s->sub = &t->subs[s->subidx];
		t->total_size += s->size;
	}
	trace_span(t);
	rc = 0;
	*out = t;
	t = NULL;
fail:
	sl_free(&f.subs);
	sl_free(&f.broken);
	sl_free(&f.why);
	free(top);
	strata_trace_close(t);
	return rc;
}

void strata_trace_close(struct strata_trace *t)
{
	if (!t)
		return;
	for (unsigned i = 0; i < t->nstreams; i++) {
		struct rd_stream *s = &t->streams[i];
		if (s->map)
			munmap((void *)s->map, s->size);
		free(s->packets);
		free(s->path);
		free(s->idxpath);
	}
	free(t->streams);
	for (unsigned i = 0; i < t->nsubs; i++) {
		for (unsigned mj = 0; mj < 64; mj++)
			free(t->subs[i].by_major[mj]);
		free(t->subs[i].fast);
		rd_meta_fini(&t->subs[i].meta);
		free(t->subs[i].dir);
	}
	free(t->subs);
	free(t->classes);
	free(t);
}

/* ---- accessors ---------------------------------------------------------------- */

unsigned strata_trace_nstreams(const struct strata_trace *t)
{
	return t->nstreams;
}

int strata_trace_stream(const struct strata_trace *t, unsigned i,
			struct strata_stream_info *o)
{
	if (i >= t->nstreams)
		return -EINVAL;
	const struct rd_stream *s = &t->streams[i];
	const char *pn = rd_meta_env(&s->sub->meta, "procname");
	uint64_t good = 0;
	for (uint64_t p = 0; p < s->npackets; p++)
		good += !(s->packets[p].flags & RD_PK_BAD);
	*o = (struct strata_stream_info){
		.path = s->path, .trace_dir = s->sub->dir, .cpu = s->cpu,
		.pid = s->sub->vpid, .procname = pn ? pn : "", .file_size = s->size,
		.packet_size = s->packet_size, .npackets = good, .begin = s->begin,
		.end = s->end, .discarded = s->discarded,
		.packets_lost = s->packets_lost, .subtrace = s->subidx,
	};
	return 0;
}

unsigned strata_trace_nsubtraces(const struct strata_trace *t)
{
	return t->nsubs;
}

const char *strata_trace_env(const struct strata_trace *t, unsigned sub,
			     const char *key)
{
	return sub < t->nsubs ? rd_meta_env(&t->subs[sub].meta, key) : NULL;
}

unsigned strata_trace_nclasses(const struct strata_trace *t)
{
	return t->nclasses;
}

const struct strata_event_class *strata_trace_class(const struct strata_trace *t,
						    unsigned index)
{
	return index < t->nclasses ? t->classes[index] : NULL;
}

void strata_trace_clock(const struct strata_trace *t, struct strata_clock_info *o)
{
	o->name = t->clock_name;
	o->description = t->clock_desc;
	o->freq = t->freq;
	o->offset_s = t->offset_s;
	o->offset = t->offset;
}

uint64_t strata_trace_begin(const struct strata_trace *t)
{
	return t->begin;
}

uint64_t strata_trace_end(const struct strata_trace *t)
{
	return t->end;
}

uint64_t strata_trace_size(const struct strata_trace *t)
{
	return t->total_size;
}

uint64_t strata_trace_nproblems(const struct strata_trace *t)
{
	return t->nproblems;
}

uint64_t strata_trace_ticks_to_ns(const struct strata_trace *t, uint64_t ticks)
{
	if (t->freq == 1000000000)
		return ticks;
	return (uint64_t)((unsigned __int128)ticks * 1000000000u / t->freq);
}

uint64_t strata_trace_ns_to_ticks(const struct strata_trace *t, uint64_t ns)
{
	if (t->freq == 1000000000)
		return ns;
	unsigned __int128 v = (unsigned __int128)ns * t->freq / 1000000000u;
	return v > UINT64_MAX ? UINT64_MAX : (uint64_t)v;
}

int64_t strata_trace_wall_ns(const struct strata_trace *t, uint64_t ts)
{
	__int128 ticks = (__int128)ts + t->offset;
	__int128 ns = ticks * 1000000000 / (__int128)t->freq;
	return (int64_t)((__int128)t->offset_s * 1000000000 + ns);
}
