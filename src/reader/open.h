/* SPDX-License-Identifier: MIT */
/* What the files that open a trace share: discovery, packets, index,
 * streams, class lookups (not installed; rd.h is the reader's whole). */
#ifndef STRATA_RD_OPEN_H
#define STRATA_RD_OPEN_H

#include <sys/types.h>

#include "rd.h"

struct stat;

/* ---- file helpers and discovery (discover.c) ---------------------------- */

struct rd_strlist {
	char **v;
	size_t n, cap;
};

/* Append s (taken: freed on failure; NULL is -ENOMEM). */
int rd_sl_push(struct rd_strlist *l, char *s);
void rd_sl_free(struct rd_strlist *l);
char *rd_path_join(const char *a, const char *b);
/* qsort comparator of char *: "cpu10" after "cpu9" */
int rd_natcmp_p(const void *a, const void *b);
const char *rd_not_regular(mode_t m);
int rd_open_regular(const char *path, struct stat *st, const char **kind);
bool rd_stream_name(const char *s);

/* What discovery found: the sub-traces to read, and those that cannot be
 * (metadata missing or not a regular file), each with why. */
struct rd_found {
	struct rd_strlist subs;
	struct rd_strlist broken, why;
};

int rd_find_subtraces(const char *dir, int depth, struct rd_found *f);
int rd_one_recording(struct strata_trace *t, const struct rd_found *f, size_t top);
int rd_one_clock(struct strata_trace *t);
/* The recording root of sub-trace dir (format.md §1), not above its first
 * `top` bytes: its length in dir. */
size_t rd_recording_root(const char *dir, size_t top);

/* ---- putting a trace together (trace.c) ---------------------------------- */

int rd_load_metadata(struct strata_trace *t, struct rd_subtrace *sub);
int rd_trace_classes(struct strata_trace *t);
/* The trace's clock: its first sub-trace's (rd_one_clock checked the
 * others'); then rd_load_offsets may put the relay's wall clock on it. */
void rd_trace_clock(struct strata_trace *t);
/* Each stream's s->sub again (t->subs may have moved), and the size of
 * all the stream files. */
void rd_trace_sizes(struct strata_trace *t);

/* ---- a followed trace brought up to date (follow_read.c) ------------------ */

/* t (opened with STRATA_OPEN_FOLLOW from top, without its trailing
 * slashes) as its files are now; with t->follow cleared, the last pass
 * of a finished trace, which reports what is still missing. 0, -ENOMEM,
 * -ENOTUNIQ (a second recording or boot appeared). */
int rd_trace_refresh(struct strata_trace *t, const char *top, bool merge);

/* ---- the relay's clock offsets (offset.c) --------------------------------- */

/* Each sub-trace's shift from its recording's clock-offset file
 * (docs/relay.md §7); a damaged file is reported and ignored. Called
 * again as a followed trace grows: a recording's file is read again
 * until the follower keeps its offset (rd_offset_keep); a relay's copy
 * whose first offset is not there yet is counted in t->not_yet. 0 or
 * -ENOMEM. */
int rd_load_offsets(struct strata_trace *t, size_t top);
/* The offset of sub-trace dir's recording read no more: a follower is
 * handing out its events on it. */
void rd_offset_keep(struct strata_trace *t, const char *dir, size_t top);
void rd_offsets_free(struct strata_trace *t);

/* ---- packet headers and zero-filled stretches (packet.c) ---------------- */

const char *rd_check_header(const struct rd_stream *s, uint64_t off,
			    uint64_t psize, struct rd_packet *pk);
bool rd_all_zero(const uint8_t *p, size_t n);
uint64_t rd_skip_zeros(int fd, uint64_t off, uint64_t align, uint64_t end, bool *hole);
uint64_t rd_find_packet_size(const struct rd_stream *s, int fd);

/* A stretch of zero-filled packet slots: reported once, with its extent,
 * when it ends, not once per packet (a 10 GiB sparse tail is 655,360
 * packets of 16 KiB, and was as many lines). */
struct rd_zrun {
	uint64_t start, ts;
	bool on, hole;
};

void rd_zrun_end(struct strata_trace *t, const struct rd_stream *s, struct rd_zrun *z,
		 uint64_t end);

/* ---- the packet index (index.c) ----------------------------------------- */

uint64_t rd_index_packets(const char *path);
int rd_load_index(struct strata_trace *t, struct rd_stream *s, int sfd);
int rd_build_index(struct strata_trace *t, struct rd_stream *s, int fd, uint64_t nslots);
/* A followed stream's file grew to `size` (mapped already): its new whole
 * packets appended to its index, from where the last scan stopped. 0 or
 * -ENOMEM (the packets indexed until then kept). */
int rd_extend_index(struct strata_trace *t, struct rd_stream *s, int fd, uint64_t size);
void rd_stream_totals(struct rd_stream *s, uint64_t from);
void rd_trace_span(struct strata_trace *t);

/* ---- streams (stream.c) and class lookups (classes.c) ------------------- */

int rd_add_streams(struct strata_trace *t, unsigned subidx);
int rd_build_lookup(struct rd_subtrace *sub);
int rd_build_fast(struct rd_subtrace *sub);

#endif /* STRATA_RD_OPEN_H */
