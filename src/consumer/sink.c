/* SPDX-License-Identifier: MIT */
/* The consumer's second destination: every file it writes, passed on to a sink (the relay's sender, docs/relay.md §5). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "consumer/cons_int.h"

void cons_sink_stream_open(struct cons *c, struct cons_stream *s)
{
	const struct cons_sink *k = c->sink;
	unsigned char hdr[STRATA_IDX_HEADER_SIZE];
	char path[4200];

	if (!k)
		return;
	if (s->fd >= 0) {
		snprintf(path, sizeof(path), "%s/cpu%u", c->dir, s->ring->cpu);
		k->on_file_create(k->ctx, path);
	}
	/* the index header, as fmt_idx_begin() wrote it: read back (one
	 * writer of the format) through a descriptor of its own, idx_fd
	 * being write-only */
	snprintf(path, sizeof(path), "%s/index/.cpu%u.idx", c->dir, s->ring->cpu);
	int fd = s->idx_fd >= 0 ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	if (fd >= 0 && pread(fd, hdr, sizeof(hdr), 0) == (ssize_t)sizeof(hdr)) {
		k->on_file_create(k->ctx, path);
		k->on_write(k->ctx, path, 0, hdr, sizeof(hdr));
	}
	if (fd >= 0)
		close(fd);
}

void cons_sink_packet(struct cons *c, struct cons_stream *s, uint64_t off,
		      const unsigned char *pkt, uint64_t content)
{
	const struct cons_sink *k = c->sink;
	char path[4200];

	if (!k)
		return;
	snprintf(path, sizeof(path), "%s/cpu%u", c->dir, s->ring->cpu);
	k->on_write(k->ctx, path, off, pkt, content);
}

void cons_sink_index(struct cons *c, struct cons_stream *s, uint64_t off,
		     const void *buf, size_t len)
{
	const struct cons_sink *k = c->sink;
	char path[4200];

	if (!k)
		return;
	snprintf(path, sizeof(path), "%s/index/.cpu%u.idx", c->dir, s->ring->cpu);
	k->on_write(k->ctx, path, off, buf, len);
}

void cons_sink_stream_close(struct cons *c, struct cons_stream *s,
			    int idx_published)
{
	const struct cons_sink *k = c->sink;
	char path[4200], final[4200];

	if (!k)
		return;
	snprintf(path, sizeof(path), "%s/cpu%u", c->dir, s->ring->cpu);
	k->on_close(k->ctx, path, s->dead ? UINT64_MAX : s->file_off, NULL, 1);
	snprintf(path, sizeof(path), "%s/index/.cpu%u.idx", c->dir, s->ring->cpu);
	snprintf(final, sizeof(final), "%s/index/cpu%u.idx", c->dir, s->ring->cpu);
	k->on_close(k->ctx, path, UINT64_MAX, final, idx_published);
}

/* The live timer's beacon (consumer.c live_beacon()): made (`create`),
 * rewritten in place, or gone at the end (`rec` NULL). Sent as any file,
 * after the packets it vouches for: the sender's queue keeps their order,
 * so that a follower of the relay's copy is not held back by a quiet CPU
 * (docs/relay.md §4). */
void cons_sink_beacon(struct cons *c, const char *path, int create,
		      const uint64_t rec[2])
{
	const struct cons_sink *k = c->sink;

	if (!k)
		return;
	if (!rec) {
		k->on_close(k->ctx, path, 0, NULL, 0);
		return;
	}
	if (create)
		k->on_file_create(k->ctx, path);
	k->on_write(k->ctx, path, 0, rec, 2 * sizeof(rec[0]));
}

/* The metadata just written (meta_write()), read back: it is written
 * through stdio, and is small (kilobytes). */
void cons_sink_metadata(struct cons *c)
{
	const struct cons_sink *k = c->sink;
	char path[4200];
	struct stat st;
	char *buf;

	if (!k)
		return;
	snprintf(path, sizeof(path), "%s/metadata", c->dir);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && st.st_size > 0 && st.st_size < (64 << 20) &&
	    (buf = malloc((size_t)st.st_size))) {
		if (pread(fd, buf, (size_t)st.st_size, 0) == st.st_size)
			k->on_metadata(k->ctx, path, buf, (size_t)st.st_size);
		free(buf);
	}
	close(fd);
}
