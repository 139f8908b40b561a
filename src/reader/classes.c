/* SPDX-License-Identifier: MIT */
/* A sub-trace's event class lookups: by id, and the batch path's table
 * (struct rd_fast); what a class says beyond its fields (its flow). */
#include <errno.h>
#include <stdlib.h>

#include "open.h"

int rd_build_lookup(struct rd_subtrace *sub)
{
	uint32_t maxminor[64] = { 0 };
	for (unsigned i = 0; i < sub->meta.nclasses; i++) {
		uint32_t id = sub->meta.classes[i]->ctf;
		uint32_t mj = (id >> 16) & 63, mn = id & 0xffff;
		if (mn + 1 > maxminor[mj])
			maxminor[mj] = mn + 1;
	}
	for (unsigned mj = 0; mj < 64; mj++) {
		if (!maxminor[mj])
			continue;
		sub->by_major[mj] = calloc(maxminor[mj], sizeof(struct rd_class *));
		if (!sub->by_major[mj])
			return -ENOMEM;
		sub->nminor[mj] = maxminor[mj];
	}
	for (unsigned i = 0; i < sub->meta.nclasses; i++) {
		struct rd_class *c = sub->meta.classes[i];
		uint32_t id = c->ctf;
		if (id >> 22)
			continue;
		sub->by_major[(id >> 16) & 63][id & 0xffff] = c;
	}
	return 0;
}

/* hi of the event a class's batch entry takes: its id and the length of
 * its fields (format.md §3), or 0 when the batch path cannot take it
 * (stream class 1 has its own table: build_fast1) */
static uint32_t fast_hi(const struct rd_subtrace *sub, const struct rd_class *c)
{
	uint32_t id = c->ctf;
	if (sub->meta.sclass || id >> 22 || !(id >> 16) || c->fast_min == UINT32_MAX ||
	    rd_lookup(sub, id) != c || c->plan_min / 8 + 1 > 1023)
		return 0;
	return (c->plan_min / 8 + 1) << 22 | id;
}

/* Slot of hi in a table of 1 << bits entries with multiplier mult (bits
 * 22.. of the product: rd_fast_slot). */
static uint32_t fast_idx(uint32_t hi, uint32_t mult, unsigned bits)
{
	return ((uint32_t)(hi * mult) >> 22) & ((1u << bits) - 1);
}

/* Entry e for class c, whose payload the batch path takes as `size`
 * bytes (stream class 0: the length hi says; 1: the class's). */
static void fast_fill(struct rd_fast *e, const struct rd_class *c, uint64_t size)
{
	unsigned nf = c->pub.nfields;
	e->nf = (uint16_t)nf;
	e->vbytes = (uint64_t)nf * sizeof(struct strata_value);
	e->size = size;
	e->id_hi = (uint64_t)c->pub.id << 32;
	e->cls = c;
	/* fields at payload bytes 0 (and 8), inside the event: the plan
	 * reads them (plan_min) */
	e->simple = c->plan && c->words && (nf == 1 || nf == 2) &&
		    c->plan[0].word == 0 && (nf == 1 || c->plan[1].word == 8);
	if (e->simple) {
		e->voff = 8 * (nf - 1);
		e->vh[0] = c->plan[0].vtype;
		e->vh[1] = c->plan[nf - 1].vtype;
	}
}

/*
 * Stream class 1's batch table (docs/compact.md): one entry per compact
 * id, indexed by the header's low 5 bits. A compact event's length is its
 * class's, so the entry says it (size: the payload); ids the batch path
 * does not take (0, strata's records, 31: the extended form, classes with
 * no plan) hold a size no content holds, which fails the bound that every
 * taken event is checked against anyway (batch.c fast_at).
 */
static int build_fast1(struct rd_subtrace *sub)
{
	sub->fast = calloc(32, sizeof(*sub->fast));
	if (!sub->fast)
		return -ENOMEM;
	sub->fast_mult = 0;
	sub->fast_mask = 31u << 6;
	for (uint32_t cid = 0; cid < 32; cid++) {
		struct rd_fast *e = &sub->fast[cid];
		const struct rd_class *c = cid && cid < 31 ? rd_lookup(sub, cid) : NULL;
		e->size = RD_FAST_NONE;
		if (!c || !(c->pub.id >> 16) || !c->clen || c->fast_min == UINT32_MAX ||
		    c->fast_min > c->clen - 4)
			continue;
		fast_fill(e, c, c->clen - 4);
		e->hi = cid;
	}
	return 0;
}

/*
 * The batch path's class table (struct rd_fast): the smallest size and
 * multiplier that put every class in a slot of its own (most traces have a
 * few dozen classes: found at once). Should none fit in 1024 slots, the
 * classes that collide are left to the general path.
 */
int rd_build_fast(struct rd_subtrace *sub)
{
	if (sub->meta.sclass)
		return build_fast1(sub);
	static const uint32_t mults[] = { 0x9e3779b1u, 0x85ebca6bu, 0xc2b2ae35u,
					  0x27d4eb2fu, 0x165667b1u, 0x7feb352du,
					  0x846ca68bu, 0x2c1b3c6du };
	unsigned n = 0, bits = 1, mi = 0;
	for (unsigned i = 0; i < sub->meta.nclasses; i++)
		n += fast_hi(sub, sub->meta.classes[i]) != 0;
	while (bits < 10 && (1u << bits) < 2 * n)
		bits++;
	uint8_t *used = calloc(1024, 1);
	if (!used)
		return -ENOMEM;
	for (;; mi++) {
		if (mi == sizeof(mults) / sizeof(mults[0])) {
			if (bits == 10) {
				mi = 0; /* collisions stay: first come */
				break;
			}
			bits++;
			mi = 0;
		}
		memset(used, 0, 1024);
		bool clash = false;
		for (unsigned i = 0; i < sub->meta.nclasses && !clash; i++) {
			uint32_t hi = fast_hi(sub, sub->meta.classes[i]);
			if (hi)
				clash = used[fast_idx(hi, mults[mi], bits)]++;
		}
		if (!clash)
			break;
	}
	free(used);
	sub->fast = calloc(1u << bits, sizeof(*sub->fast));
	if (!sub->fast)
		return -ENOMEM;
	sub->fast_mult = mults[mi];
	sub->fast_mask = ((1u << bits) - 1) << 6;
	for (uint32_t i = 0; i < 1u << bits; i++) {
		uint32_t h = 0;
		while (fast_idx(h, mults[mi], bits) == i)
			h++;
		sub->fast[i].hi = h; /* hashes elsewhere: no header matches it */
	}
	for (unsigned i = 0; i < sub->meta.nclasses; i++) {
		const struct rd_class *c = sub->meta.classes[i];
		uint32_t hi = fast_hi(sub, c);
		struct rd_fast *e = &sub->fast[fast_idx(hi, mults[mi], bits)];
		if (!hi || fast_idx(e->hi, mults[mi], bits) == fast_idx(hi, mults[mi], bits))
			continue; /* not taken, or its slot is taken */
		e->hi = hi;
		fast_fill(e, c, c->plan_min);
	}
	return 0;
}

enum strata_flow_role strata_event_class_flow(const struct strata_event_class *cls, int *key)
{
	/* every class the reader hands out is the pub of an rd_class */
	const struct rd_class *c = (const struct rd_class *)cls;
	if (key)
		*key = c->flow_key;
	return (enum strata_flow_role)c->flow;
}
