/* SPDX-License-Identifier: MIT */
/* Generic events without a definition file: N words, byte blobs. */
#include <string.h>

#include <strata/strata.h>

#include "common/compiler.h"
#include "lib/registry.h"
#include "ring/ring.h"

static uint8_t words_cid[256]; /* strata_log_words(): compact ids by hash */

STRATA_API void strata_log_words(uint8_t major, uint16_t minor,
				 const uint64_t *words, size_t n)
{
	if (major > 63 || !(strata_mask & STRATA_MAJOR_BIT(major)))
		return;
	/* n + 1 > STRATA_MAX_WORDS is refused and counted by the slow
	 * path; clamp so that the 32-bit count cannot wrap. */
	if (n > STRATA_MAX_WORDS)
		n = STRATA_MAX_WORDS;
	/* A compact id per (id, length), as for a call site of fixed size
	 * (docs/compact.md), remembered in a small direct-mapped cache and
	 * checked against the process's table: a collision only costs the
	 * look-up of the slow path. */
	uint32_t id = STRATA_ID(major, minor), nw = (uint32_t)n + 1;
	uint8_t *slot = &words_cid[(id * 0x9E3779B1u + nw * 0x85EBCA6Bu) >> 24];
	/* relaxed: threads share the cache; what it says is checked */
	uint8_t cb = strata_load_relaxed(slot);

	if (cb && ring_cid_entry(cb) == (id | (uint64_t)nw << 32 | STRATA_CID_VALID)) {
		strata_log_fixed(&cb, id, nw, words);
		return;
	}
	cb = 0;
	strata_log_slow(&cb, id, nw, words);
	if (cb && cb < STRATA_CID_EXT)
		strata_store_relaxed(slot, cb);
}

STRATA_API void strata_log_blob(uint8_t major, uint16_t minor, const void *p,
				size_t size)
{
	struct strata_rsv r;
	/* u32 padded byte count, u32 size, then the bytes padded to a word:
	 * format.md §3 (string-like counted sequence). */
	size_t padded = ALIGN_UP(size, 8);
	size_t words = 1 + padded / 8;

	if (major > 63 || !(strata_mask & STRATA_MAJOR_BIT(major)))
		return;
	registry_mark_blob(STRATA_ID(major, minor));
	if (words + 1 > STRATA_MAX_WORDS)
		words = STRATA_MAX_WORDS; /* refused and counted as too big */
	if (!strata_reserve(&r, STRATA_HID_EXT | STRATA_ID(major, minor),
			    (uint32_t)words + 1))
		return;
	r.p[0] = (uint64_t)size << 32 | (uint32_t)padded;
	r.p[words - 1] = 0; /* the padding bytes */
	memcpy(&r.p[1], p, size);
	strata_commit(&r);
}
