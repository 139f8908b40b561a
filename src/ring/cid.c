/* SPDX-License-Identifier: MIT */
/* The compact-id registry: which event class each compact id 10-30 stands for (docs/compact.md). */
#include <stdint.h>

#include "ring/ring.h"

/*
 * Compact ids (docs/compact.md). A call site's byte is 0 until its first
 * event, which comes here for an id: the one already given to the same
 * event class and length, or the first free one. Lock-free, since a
 * tracepoint in a signal handler may interrupt a thread in the middle of
 * giving an id: a thread claims a free slot of cid_table with a CAS
 * (PENDING set), writes the entry into the table of every ring, then
 * clears PENDING. Slots are claimed in order and a thread only passes
 * slots that hold another key, so a key never gets two ids. Until its id
 * is in every ring's table, an event of that class takes the extended
 * header with the id (a consumer walks it without the table); after, the
 * call site keeps the id in its byte and the inline path writes compact
 * headers. With all 21 user ids given: 31, and the call site's events
 * keep their full id and the extended header.
 */
#define CID_PENDING (UINT64_C(1) << 62)
static uint64_t cid_table[STRATA_NCIDS];

/* strata's own fixed-length records (format.md §4): compact id = minor */
#define OWN_CID(minor, words)                                                   \
	[minor] = (minor) | (uint64_t)(words) << 32 | STRATA_CID_VALID
static const uint64_t cid_own[STRATA_CID_USER] = {
	OWN_CID(STRATA_ID_THREAD, 2),
	OWN_CID(STRATA_ID_CALIB, 4),
	OWN_CID(STRATA_ID_LOST, 3),
	OWN_CID(STRATA_ID_STATEDUMP, 2),
};

uint64_t ring_cid_entry(uint32_t cid)
{
	if (cid >= STRATA_NCIDS)
		return 0;
	if (cid < STRATA_CID_USER)
		return cid_own[cid];
	return __atomic_load_n(&cid_table[cid], __ATOMIC_ACQUIRE) & ~CID_PENDING;
}

/*
 * Before and after a new ring is published (shm.c). A writer may take
 * the ring from strata_rings[] as soon as it is published and write an
 * event with an id given meanwhile: either the giver's walk over the
 * rings (cid_give) sees this ring, or this copy, after the publication,
 * sees the giver's entry -- the fences order each side's store before
 * its loads.
 */
void ring_cids_copy(struct strata_ring_ctl *c)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (uint32_t i = 1; i < STRATA_NCIDS; i++) {
		uint64_t e = ring_cid_entry(i);
		if (e)
			__atomic_store_n(&c->cids[i], e, __ATOMIC_RELAXED);
	}
}

/* The id of (id, words): 10-30, | CID_PENDING while it is not in every
 * ring's table yet; or 31, none left. */
static uint64_t cid_give(uint32_t id, uint32_t words)
{
	uint64_t key = id | (uint64_t)words << 32 | STRATA_CID_VALID;

	for (uint32_t c = STRATA_CID_USER; c < STRATA_CID_EXT; c++) {
		uint64_t e = __atomic_load_n(&cid_table[c], __ATOMIC_ACQUIRE);

		if (e == 0 && __atomic_compare_exchange_n(&cid_table[c], &e,
							  key | CID_PENDING, 0,
							  __ATOMIC_SEQ_CST,
							  __ATOMIC_ACQUIRE)) {
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
			for (uint32_t i = 0; i < STRATA_MAX_CPUS; i++) {
				struct strata_ring *r =
					strata_load_acquire(&strata_rings[i]);
				if (r)
					__atomic_store_n(&r->ctl->cids[c], key,
							 __ATOMIC_RELAXED);
			}
			__atomic_store_n(&cid_table[c], key, __ATOMIC_RELEASE);
			return c;
		}
		/* e: the slot's entry, read or found by the failed CAS */
		if ((e & ~CID_PENDING) == key)
			return c | (e & CID_PENDING);
	}
	return STRATA_CID_EXT;
}

/* ring.h */
uint32_t ring_hid_of(uint8_t *cidp, uint32_t id, uint32_t words)
{
	uint64_t c;

	if (!cidp)
		return id | STRATA_HID_EXT;
	c = __atomic_load_n(cidp, __ATOMIC_RELAXED);
	if (c == 0) {
		if (words == 0 || words > STRATA_MAX_WORDS)
			return id | STRATA_HID_EXT; /* refused and counted */
		c = cid_give(id, words);
		if (c & CID_PENDING)
			return (uint32_t)c | STRATA_HID_EXT;
		__atomic_store_n(cidp, (uint8_t)c, __ATOMIC_RELAXED);
	}
	return strata_hid_compact((uint32_t)c) ? (uint32_t)c : id | STRATA_HID_EXT;
}
