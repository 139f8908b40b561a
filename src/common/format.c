/* SPDX-License-Identifier: MIT */
/* Writing the on-disk format: index entries and headers, and fmt_write_all() (docs/format.md §7). */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/format.h"

static void put_be64(unsigned char *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, 8);
}

void fmt_idx_entry_put(unsigned char *out, const struct strata_idx_entry *e)
{
	put_be64(out + STRATA_IDX_OFF_OFFSET, e->offset);
	put_be64(out + STRATA_IDX_OFF_PACKET_SIZE, e->packet_size);
	put_be64(out + STRATA_IDX_OFF_CONTENT_SIZE, e->content_size);
	put_be64(out + STRATA_IDX_OFF_TS_BEGIN, e->ts_begin);
	put_be64(out + STRATA_IDX_OFF_TS_END, e->ts_end);
	put_be64(out + STRATA_IDX_OFF_DISCARDED, e->discarded);
	put_be64(out + STRATA_IDX_OFF_STREAM_ID, e->stream_id);
	put_be64(out + STRATA_IDX_OFF_STREAM_INSTANCE, e->stream_instance_id);
	put_be64(out + STRATA_IDX_OFF_SEQ, e->seq);
}

int fmt_idx_begin(int fd)
{
	uint32_t h[4] = {htobe32(STRATA_IDX_MAGIC), htobe32(1), htobe32(1),
			 htobe32(STRATA_IDX_ENTRY)};

	_Static_assert(sizeof(h) == STRATA_IDX_HEADER_SIZE, "format.md §7");
	return fmt_write_all(fd, h, sizeof(h), 0);
}

int fmt_unrecorded_line(int fd, uint32_t pid, const char *name, uint64_t events,
			const char *why)
{
	char line[320];
	int n = snprintf(line, sizeof(line), "pid %u (%.16s): %llu events not recorded (%s)\n",
			 pid, name && *name ? name : "?", (unsigned long long)events, why);

	if (n < 0)
		return -EINVAL;
	if ((size_t)n >= sizeof(line)) { /* a long `why`: cut, the line kept */
		n = sizeof(line) - 1;
		line[n - 1] = '\n';
	}
	return write(fd, line, (size_t)n) == n ? 0 : -EIO;
}

int fmt_write_all(int fd, const void *buf, size_t len, off_t off)
{
	const unsigned char *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

void fmt_counted_put(void *p, const void *fixed, size_t nfixed, const char *str, size_t room)
{
	unsigned char *b = p;
	size_t end = fmt_counted_size(nfixed, room);
	uint32_t count = (uint32_t)(end - nfixed);

	memset(b + nfixed, 0, end - nfixed);
	memcpy(b, fixed, nfixed - 4);
	memcpy(b + nfixed - 4, &count, 4);
	memcpy(b + nfixed, str, strnlen(str, room));
}
