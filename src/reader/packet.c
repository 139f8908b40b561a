/* SPDX-License-Identifier: MIT */
/* Packet headers in a stream file that may be damaged: checked, the
 * packet size found, zero-filled stretches skipped and reported once. */
#define _GNU_SOURCE /* SEEK_DATA */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "open.h"

static bool pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

/* Why the header at `off` is unusable, or NULL. Fills *pk from it. */
const char *rd_check_header(const struct rd_stream *s, uint64_t off,
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
bool rd_all_zero(const uint8_t *p, size_t n)
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
uint64_t rd_skip_zeros(int fd, uint64_t off, uint64_t align, uint64_t end, bool *hole)
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
 * (zero-filled stretches skipped as rd_skip_zeros says). */
uint64_t rd_find_packet_size(const struct rd_stream *s, int fd)
{
	struct rd_packet pk;
	if (!rd_check_header(s, 0, 0, &pk))
		return rd_le64(s->map + STRATA_PKT_OFF_PACKET_SIZE) / 8;
	bool hole = false;
	for (uint64_t off = RD_MIN_PACKET; off + RD_HEADER_SIZE <= s->size;) {
		if (rd_all_zero(s->map + off, RD_HEADER_SIZE)) {
			off = rd_skip_zeros(fd, off, RD_MIN_PACKET, s->size, &hole);
			continue;
		}
		if (!rd_check_header(s, off, 0, &pk)) {
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

void rd_zrun_end(struct strata_trace *t, const struct rd_stream *s, struct rd_zrun *z,
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
