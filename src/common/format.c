/* SPDX-License-Identifier: MIT */
/* Writing the on-disk format: index headers and fmt_write_all() (docs/format.md §7). */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "common/format.h"

int fmt_idx_begin(int fd)
{
	uint32_t h[4] = {htobe32(STRATA_IDX_MAGIC), htobe32(1), htobe32(1),
			 htobe32(STRATA_IDX_ENTRY)};

	_Static_assert(sizeof(h) == STRATA_IDX_HEADER_SIZE, "format.md §7");
	return fmt_write_all(fd, h, sizeof(h), 0);
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
