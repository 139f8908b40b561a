/* SPDX-License-Identifier: MIT */
/* The on-disk format in one place: packet header layout, magics, index entries and their writer, fmt_write_all() (docs/format.md §2, §7). */
#ifndef STRATA_COMMON_FORMAT_H
#define STRATA_COMMON_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Every writer of a trace (the ring's packet opener and closer in
 * src/ring/slow.c, the consumer, the kernel streams) and its reader take
 * the layout from here, so that the byte offsets are written out once.
 * The header part (the macros and the struct) needs no library: the
 * reader uses it alone; the functions are in libstrata (format.c).
 */

/* ---- §2: packet header and context (96 bytes, little-endian) ---------- */

#define STRATA_PKT_MAGIC 0xC1FC1FC1u
#define STRATA_PKT_HEADER_SIZE 96u

struct strata_pkt_header {
	uint32_t magic;
	uint8_t uuid[16];
	uint32_t stream_id;
	uint64_t stream_instance_id; /* pid << 32 | cpu */
	uint64_t timestamp_begin;
	uint64_t timestamp_end;
	uint64_t content_size; /* bits */
	uint64_t packet_size;  /* bits */
	uint64_t packet_seq_num;
	uint64_t events_discarded; /* free-running, per stream */
	uint32_t cpu_id;
	uint32_t pid;
	uint32_t tid;
	uint32_t events; /* ring.md §7: the closer's count, the consumer's exact one on disk */
};

/* Byte offsets of the fields, for code that reads or writes a packet as
 * bytes (a copy of untrusted memory, a file). */
#define STRATA_PKT_OFF_MAGIC 0u
#define STRATA_PKT_OFF_UUID 4u
#define STRATA_PKT_OFF_STREAM_ID 20u
#define STRATA_PKT_OFF_STREAM_INSTANCE 24u
#define STRATA_PKT_OFF_TS_BEGIN 32u
#define STRATA_PKT_OFF_TS_END 40u
#define STRATA_PKT_OFF_CONTENT_SIZE 48u
#define STRATA_PKT_OFF_PACKET_SIZE 56u
#define STRATA_PKT_OFF_SEQ 64u
#define STRATA_PKT_OFF_DISCARDED 72u
#define STRATA_PKT_OFF_CPU 80u
#define STRATA_PKT_OFF_PID 84u
#define STRATA_PKT_OFF_TID 88u
#define STRATA_PKT_OFF_EVENTS 92u
/* `events` as a ring's closer publishes it (ring.md §7): the count in
 * bits 0-30, and this bit when an event has a full id (STRATA_XR_*). On
 * disk the consumer's exact count, the bit clear. */
#define STRATA_PKT_EVENTS_FULL_ID (1u << 31)

#define STRATA_PKT_CHECK_OFF(field, off)                                     \
	_Static_assert(offsetof(struct strata_pkt_header, field) == (off),  \
		       "format.md §2: " #field)
STRATA_PKT_CHECK_OFF(uuid, STRATA_PKT_OFF_UUID);
STRATA_PKT_CHECK_OFF(stream_id, STRATA_PKT_OFF_STREAM_ID);
STRATA_PKT_CHECK_OFF(stream_instance_id, STRATA_PKT_OFF_STREAM_INSTANCE);
STRATA_PKT_CHECK_OFF(timestamp_begin, STRATA_PKT_OFF_TS_BEGIN);
STRATA_PKT_CHECK_OFF(timestamp_end, STRATA_PKT_OFF_TS_END);
STRATA_PKT_CHECK_OFF(content_size, STRATA_PKT_OFF_CONTENT_SIZE);
STRATA_PKT_CHECK_OFF(packet_size, STRATA_PKT_OFF_PACKET_SIZE);
STRATA_PKT_CHECK_OFF(packet_seq_num, STRATA_PKT_OFF_SEQ);
STRATA_PKT_CHECK_OFF(events_discarded, STRATA_PKT_OFF_DISCARDED);
STRATA_PKT_CHECK_OFF(cpu_id, STRATA_PKT_OFF_CPU);
STRATA_PKT_CHECK_OFF(pid, STRATA_PKT_OFF_PID);
STRATA_PKT_CHECK_OFF(tid, STRATA_PKT_OFF_TID);
STRATA_PKT_CHECK_OFF(events, STRATA_PKT_OFF_EVENTS);
_Static_assert(sizeof(struct strata_pkt_header) == STRATA_PKT_HEADER_SIZE,
	       "format.md §2: the header is 96 bytes");

/* ---- §4: strata's own records beyond the inline header's (1-9) -------- */

/* 0:10, kernel streams only (src/kernel/ktimes.c): u32 tid, u32 pid,
 * u64 utime_ns, u64 stime_ns, u32 when, u32 pad */
#define STRATA_ID_THREAD_TIMES 10u
/* 0:32, the state dump (src/lib/statedump.c): u64 addr, string build_id
 * (hex). Its id is above the compact ids (1-30) so that its CTF id in
 * stream class 1, its full id, is never one of theirs. */
#define STRATA_ID_BUILD_ID 32u

enum strata_times_when {
	STRATA_TIMES_FIRST = 0,  /* in scope when the recording started */
	STRATA_TIMES_EXITED = 1, /* its final values, at its exit */
	STRATA_TIMES_END = 2,    /* alive when the recording stopped */
};

/*
 * A record of fields then one string (strata:process, thread_name, map):
 * `nfixed` bytes of fields whose last u32 is the string's byte count, then
 * the string, its NUL and zeros to a multiple of 8 bytes; the count covers
 * all three. fmt_counted_size() is its payload size for a string of up to
 * `room` bytes; fmt_counted_put() lays it out at p (that many bytes):
 * fixed's first nfixed - 4 bytes, the count, and up to room bytes of str.
 */
static inline size_t fmt_counted_size(size_t nfixed, size_t room)
{
	return (nfixed + room + 1 + 7) & ~(size_t)7;
}
void fmt_counted_put(void *p, const void *fixed, size_t nfixed, const char *str, size_t room);

/* ---- §7: index files (CTF index v1.1, big-endian) --------------------- */

#define STRATA_IDX_MAGIC 0xC1F1DCC1u
#define STRATA_IDX_HEADER_SIZE 16u
#define STRATA_IDX_ENTRY 72u
/* Byte offsets in the header: magic at 0, then major, minor, entry size. */
#define STRATA_IDX_HDR_OFF_MAJOR 4u
#define STRATA_IDX_HDR_OFF_ENTRY_SIZE 12u

/* Byte offsets in an entry. */
#define STRATA_IDX_OFF_OFFSET 0u
#define STRATA_IDX_OFF_PACKET_SIZE 8u
#define STRATA_IDX_OFF_CONTENT_SIZE 16u
#define STRATA_IDX_OFF_TS_BEGIN 24u
#define STRATA_IDX_OFF_TS_END 32u
#define STRATA_IDX_OFF_DISCARDED 40u
#define STRATA_IDX_OFF_STREAM_ID 48u
#define STRATA_IDX_OFF_STREAM_INSTANCE 56u
#define STRATA_IDX_OFF_SEQ 64u

/* One entry, host order; sizes in bits as in the file. */
struct strata_idx_entry {
	uint64_t offset; /* bytes, in the stream file */
	uint64_t packet_size;
	uint64_t content_size;
	uint64_t ts_begin;
	uint64_t ts_end;
	uint64_t discarded;
	uint64_t stream_id;
	uint64_t stream_instance_id;
	uint64_t seq;
};

/* Encode `e` at `out` (STRATA_IDX_ENTRY bytes, big-endian). The one
 * index-entry writer: the consumer's streams and the kernel's use it. */
void fmt_idx_entry_put(unsigned char *out, const struct strata_idx_entry *e);

/* Write the index header (magic, version 1.1, entry size) at offset 0 of
 * `fd`. Returns 0 or a negative errno. */
int fmt_idx_begin(int fd);

/* pwrite() all `len` bytes of `buf` at `off`, through short writes and
 * EINTR. Returns 0, a negative errno, or -EIO (a write of 0 bytes). */
int fmt_write_all(int fd, const void *buf, size_t len, off_t off);

/* Append to TRACE/unrecorded (open with O_APPEND at `fd`) the line
 * "pid P (NAME): N events not recorded (WHY)" (docs/format.md §1), in one
 * write(), whole among the other processes appending. Async-signal-safe
 * (snprintf of integers and strings only). Returns 0 or a negative errno. */
int fmt_unrecorded_line(int fd, uint32_t pid, const char *name, uint64_t events,
			const char *why);

#endif /* STRATA_COMMON_FORMAT_H */
