/* SPDX-License-Identifier: MIT */
/* libFuzzer target: packet index, event decoding and rendering on arbitrary stream bytes. */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <strata/reader.h>

#include "../synth.h"

static char dir[64];
static int sclass = -1; /* the stream class of the metadata written */

/* The metadata of the stream class the input's first packet names
 * (stream_id, format.md §2): 0, or 1 (docs/compact.md). */
static void setup(int want)
{
	char p[128];
	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/strata-fuzz-%d", (int)getpid());
		mkdir(dir, 0755);
	}
	snprintf(p, sizeof(p), "%s/metadata", dir);
	FILE *f = fopen(p, "w");
	fputs(want ? synth_metadata1 : synth_metadata, f);
	fclose(f);
	sclass = want;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char p[128];
	int want = size > 20 && data[20] == 1;
	if (want != sclass)
		setup(want);
	snprintf(p, sizeof(p), "%s/cpu0", dir);
	FILE *f = fopen(p, "w");
	if (!f)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);
	struct strata_trace *t;
	if (strata_trace_open(dir, NULL, &t) < 0)
		return 0;
	struct strata_iter_options io = { .stream = -1, .flags = STRATA_ITER_INTERNAL };
	struct strata_iter *it;
	const struct strata_event *ev;
	char buf[512];
	struct strata_value v[8];
	if (strata_iter_create(t, &io, &it) == 0) {
		while (strata_iter_next(it, &ev) > 0) {
			strata_event_fields(ev, v, 8);
			strata_event_describe(ev, buf, sizeof(buf));
		}
		strata_iter_seek(it, 150);
		while (strata_iter_next(it, &ev) > 0)
			;
		strata_iter_destroy(it);
	}
	/* the batch path: its hot loop reads the stream bytes directly */
	struct strata_batch *b;
	io.flags = 0;
	if (strata_iter_create(t, &io, &it) == 0) {
		if (strata_batch_alloc(t, 3, &b) == 0) {
			while (strata_iter_decode(it, b) > 0)
				if (strata_iter_next(it, &ev) <= 0)
					break;
			strata_batch_free(b);
		}
		strata_iter_destroy(it);
	}
	/* stream after stream, events without values, one at a time between */
	struct strata_event evs[4];
	io.flags = STRATA_ITER_UNORDERED;
	if (strata_iter_create(t, &io, &it) == 0) {
		while (strata_iter_read(it, evs, 4) > 0)
			if (strata_iter_next(it, &ev) <= 0)
				break;
		strata_iter_destroy(it);
	}
	strata_trace_close(t);
	return 0;
}
