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
	/* Pairs with cid_give()'s release store that clears PENDING: an
	 * entry seen whole is in the table of every ring it walked. */
	return strata_load_acquire(&cid_table[cid]) & ~CID_PENDING;
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
	/* The publication before our loads of cid_table; pairs with the
	 * fence in cid_give(), after its claim, before its walk. */
	strata_fence_seq_cst();
	for (uint32_t i = 1; i < STRATA_NCIDS; i++) {
		uint64_t e = ring_cid_entry(i);
		if (e)
			strata_store_relaxed(&c->cids[i], e);
	}
}

/* The id of (id, words): 10-30, | CID_PENDING while it is not in every
 * ring's table yet; or 31, none left. */
static uint64_t cid_give(uint32_t id, uint32_t words)
{
	uint64_t key = id | (uint64_t)words << 32 | STRATA_CID_VALID;

	for (uint32_t c = STRATA_CID_USER; c < STRATA_CID_EXT; c++) {
		/* Pairs with the release store below, of another giver. */
		uint64_t e = strata_load_acquire(&cid_table[c]);

		/* The claim; a failure reads the entry as the load above. */
		if (e == 0 && strata_cas_seq_cst_acquire(&cid_table[c], &e,
							 key | CID_PENDING)) {
			/* Our claim before our loads of strata_rings[];
			 * pairs with ring_cids_copy()'s fence (see there). */
			strata_fence_seq_cst();
			for (uint32_t i = 0; i < STRATA_MAX_CPUS; i++) {
				/* pairs with the publishing CAS (shm.c) */
				struct strata_ring *r =
					strata_load_acquire(&strata_rings[i]);
				if (r)
					strata_store_relaxed(&r->ctl->cids[c],
							     key);
			}
			/* The rings' entries before the clear of PENDING;
			 * pairs with the acquire loads of cid_table. */
			strata_store_release(&cid_table[c], key);
			return c;
		}
		/* e: the slot's entry, read or found by the failed CAS */
		if ((e & ~CID_PENDING) == key)
			return c | (e & CID_PENDING);
	}
	return STRATA_CID_EXT;
}

/* ring.h */
uint32_t ring_header_id_of(uint8_t *cidp, uint32_t id, uint32_t words)
{
	uint64_t c;

	if (!cidp)
		return id | STRATA_HID_EXT;
	c = strata_load_relaxed(cidp);
	if (c == 0) {
		if (words == 0 || words > STRATA_MAX_WORDS)
			return id | STRATA_HID_EXT; /* refused and counted */
		c = cid_give(id, words);
		if (c & CID_PENDING)
			return (uint32_t)c | STRATA_HID_EXT;
		strata_store_relaxed(cidp, (uint8_t)c);
	}
	return strata_header_id_compact((uint32_t)c) ? (uint32_t)c
						     : id | STRATA_HID_EXT;
}
