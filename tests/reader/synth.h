/* SPDX-License-Identifier: MIT */
/* A tiny in-test writer of strata traces (format.md §2-§4) for the unit tests. */
#ifndef STRATA_TEST_SYNTH_H
#define STRATA_TEST_SYNTH_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* nftw */
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <ftw.h>

/* SYNTH_MARK: one field; SYNTH_LONG: a mem:free with a word more than
 * its fields (valid: readers take any payload that holds them) */
enum { SYNTH_ALLOC, SYNTH_OPEN, SYNTH_THREAD, SYNTH_CLOCK, SYNTH_FREE, SYNTH_MARK, SYNTH_LONG };

struct synth_ev {
	uint64_t ts;
	int kind;
	uint32_t arg; /* SYNTH_THREAD: tid */
};

static const char synth_metadata[] =
	"/* CTF 1.8 */\n"
	"typealias integer { size = 32; align = 32; signed = false; } := uint32_t;\n"
	"typealias integer { size = 64; align = 64; signed = false; } := uint64_t;\n"
	"typealias integer { size = 32; align = 32; signed = true; } := int32_t;\n"
	"typealias integer { size = 8; align = 8; signed = false; encoding = UTF8; } := char_t;\n"
	"trace { major = 1; minor = 8; byte_order = le;\n"
	"  packet.header := struct { uint32_t magic; integer { size = 8; align = 8; } uuid[16];\n"
	"  uint32_t stream_id; uint64_t stream_instance_id; }; };\n"
	"env { vpid = 100; procname = \"synth\"; strata_kind_65537 = \"begin\"; };\n"
	"clock { name = \"strata\"; freq = 1000000000; offset_s = 1700000000; offset = 0; };\n"
	"typealias integer { size = 64; align = 64; signed = false; map = clock.strata.value; } := uint64_clock_t;\n"
	"stream { id = 0; event.header := struct {\n"
	"  integer { size = 32; align = 64; signed = false; map = clock.strata.value; } timestamp;\n"
	"  integer { size = 22; align = 1; signed = false; } id; } align(64); };\n"
	"event { name = \"strata:thread\"; id = 1; stream_id = 0;\n"
	"  fields := struct { uint32_t tid; uint32_t pid; } align(64); };\n"
	"event { name = \"strata:clock\"; id = 2; stream_id = 0;\n"
	"  fields := struct { uint64_clock_t timestamp; } align(64); };\n"
	"event { name = \"mem:alloc\"; id = 65537; stream_id = 0;\n"
	"  strata_format = \"alloc %{size} at %{addr:x}\";\n"
	"  fields := struct { uint64_t size; integer { size = 64; align = 64; base = 16; } addr;\n"
	"  uint32_t flags; } align(64); };\n"
	"event { name = \"io:open\"; id = 65538; stream_id = 0;\n"
	"  fields := struct { uint32_t _path_len; char_t path[_path_len]; int32_t fd; } align(64); };\n"
	"event { name = \"mem:free\"; id = 65539; stream_id = 0;\n"
	"  fields := struct { integer { size = 64; align = 64; base = 16; } addr;\n"
	"  integer { size = 64; align = 64; signed = true; } delta; } align(64); };\n"
	"event { name = \"mem:mark\"; id = 65540; stream_id = 0;\n"
	"  fields := struct { integer { size = 64; align = 64; signed = true; } v; } align(64); };\n";

static inline void synth_put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/* Words of one record into w; returns the count. */
static inline unsigned synth_record(const struct synth_ev *e, uint32_t pid, uint64_t *w)
{
	uint64_t ts = e->ts & 0xffffffffu;
	switch (e->kind) {
	case SYNTH_ALLOC:
		w[0] = ts | (uint64_t)0x10001 << 32 | (uint64_t)4 << 54;
		w[1] = e->ts * 100;
		w[2] = e->ts;
		w[3] = e->ts & 3;
		return 4;
	case SYNTH_OPEN: {
		/* u32 len = 8, "/etc/tsN\0" padded: 4 + 12 bytes, then s32 fd */
		w[0] = ts | (uint64_t)0x10002 << 32 | (uint64_t)4 << 54;
		char b[24] = { 0 };
		uint32_t len = 12;
		memcpy(b, &len, 4);
		snprintf(b + 4, 12, "/etc/ts%u", (unsigned)(e->ts % 2));
		int32_t fd = (int32_t)e->ts - 1;
		memcpy(b + 16, &fd, 4);
		memcpy(&w[1], b, 24);
		return 4;
	}
	case SYNTH_THREAD:
		w[0] = ts | (uint64_t)1 << 32 | (uint64_t)2 << 54;
		w[1] = e->arg | (uint64_t)pid << 32;
		return 2;
	case SYNTH_FREE: /* whole-word fields, one signed */
		w[0] = ts | (uint64_t)0x10003 << 32 | (uint64_t)3 << 54;
		w[1] = e->ts * 8;
		w[2] = (uint64_t)-(int64_t)e->ts;
		return 3;
	case SYNTH_LONG:
		w[0] = ts | (uint64_t)0x10003 << 32 | (uint64_t)4 << 54;
		w[1] = e->ts * 8;
		w[2] = (uint64_t)-(int64_t)e->ts;
		w[3] = ~e->ts;
		return 4;
	case SYNTH_MARK:
		w[0] = ts | (uint64_t)0x10004 << 32 | (uint64_t)2 << 54;
		w[1] = (uint64_t)-(int64_t)e->ts;
		return 2;
	default:
		w[0] = ts | (uint64_t)2 << 32 | (uint64_t)2 << 54;
		w[1] = e->ts;
		return 2;
	}
}

/* The packet header and context (format.md §2) of packet pk, stream
 * class sid, its events ending at byte off. */
static inline void synth_header(uint8_t *pk, uint32_t sid, uint32_t cpu, uint32_t pid,
				uint32_t tid, uint64_t tb, uint64_t te, size_t off,
				unsigned psize, uint64_t seq)
{
	uint32_t magic = 0xC1FC1FC1;
	memcpy(pk, &magic, 4);
	memcpy(pk + 20, &sid, 4);
	synth_put64(pk + 24, (uint64_t)pid << 32 | cpu);
	synth_put64(pk + 32, tb);
	synth_put64(pk + 40, te);
	synth_put64(pk + 48, off * 8);
	synth_put64(pk + 56, (uint64_t)psize * 8);
	synth_put64(pk + 64, seq);
	memcpy(pk + 80, &cpu, 4);
	memcpy(pk + 84, &pid, 4);
	memcpy(pk + 88, &tid, 4);
}

/*
 * Stream class 1 (docs/compact.md): the same events, compact where their
 * length is their class's. mem:alloc, mem:free and mem:mark are compact
 * ids 10, 11 and 12 (plan, two words, one word); io:open (a string) and
 * SYNTH_LONG (a payload longer than its class) take the extended header,
 * SYNTH_CLOCK is a mem:alloc in the extended form (full timestamp), and
 * so is any event after a gap that 27 bits cannot carry.
 */
static const char synth_metadata1[] =
	"/* CTF 1.8 */\n"
	"typealias integer { size = 32; align = 32; signed = false; } := uint32_t;\n"
	"typealias integer { size = 64; align = 64; signed = false; } := uint64_t;\n"
	"typealias integer { size = 32; align = 32; signed = true; } := int32_t;\n"
	"typealias integer { size = 64; align = 32; signed = false; } := uint64_a32_t;\n"
	"typealias integer { size = 64; align = 32; signed = true; } := int64_a32_t;\n"
	"typealias integer { size = 64; align = 32; signed = false; base = 16; } := uint64_hex_a32_t;\n"
	"typealias integer { size = 8; align = 8; signed = false; encoding = UTF8; } := char_t;\n"
	"trace { major = 1; minor = 8; byte_order = le;\n"
	"  packet.header := struct { uint32_t magic; integer { size = 8; align = 8; } uuid[16];\n"
	"  uint32_t stream_id; uint64_t stream_instance_id; }; };\n"
	"env { vpid = 100; procname = \"synth\"; strata_kind_10 = \"begin\";\n"
	"  strata_id_10 = 65537; strata_id_11 = 65539; strata_id_12 = 65540; };\n"
	"clock { name = \"strata\"; freq = 1000000000; offset_s = 1700000000; offset = 0; };\n"
	"stream { id = 1; event.header := struct {\n"
	"  enum : integer { size = 5; align = 32; signed = false; }\n"
	"    { compact = 0 ... 30, extended = 31 } id;\n"
	"  variant <id> {\n"
	"    struct { integer { size = 27; align = 1; signed = false; map = clock.strata.value; } timestamp; } compact;\n"
	"    struct { uint32_t id; integer { size = 64; align = 32; signed = false; map = clock.strata.value; } timestamp; } extended;\n"
	"  } v; } align(32); };\n"
	"event { name = \"strata:thread\"; id = 1; stream_id = 1;\n"
	"  fields := struct { uint32_t tid; uint32_t pid; } align(32); };\n"
	"event { name = \"mem:alloc\"; id = 10; stream_id = 1;\n"
	"  strata_format = \"alloc %{size} at %{addr:x}\";\n"
	"  fields := struct { uint64_a32_t size; uint64_hex_a32_t addr; uint32_t flags; } align(32); };\n"
	"event { name = \"io:open\"; id = 65538; stream_id = 1;\n"
	"  fields := struct { uint32_t _path_len; char_t path[_path_len]; int32_t fd; } align(32); };\n"
	"event { name = \"mem:free\"; id = 11; stream_id = 1;\n"
	"  fields := struct { uint64_hex_a32_t addr; int64_a32_t delta; } align(32); };\n"
	"event { name = \"mem:mark\"; id = 12; stream_id = 1;\n"
	"  fields := struct { int64_a32_t v; } align(32); };\n";

/* Bytes of one stream class 1 record into b (prev: the last timestamp
 * written); returns the count. */
static inline unsigned synth_record1(const struct synth_ev *e, uint32_t pid, uint64_t prev,
				     uint8_t *b)
{
	uint64_t w[8];
	unsigned k = synth_record(e, pid, w); /* the payload of format.md §6 */
	uint32_t cid = 0, ext_id = 0;
	switch (e->kind) {
	case SYNTH_ALLOC: cid = 10; break;
	case SYNTH_FREE: cid = 11; break;
	case SYNTH_MARK: cid = 12; break;
	case SYNTH_THREAD: cid = 1; break;
	case SYNTH_OPEN: ext_id = 65538; break;
	case SYNTH_LONG: ext_id = 11; break;
	default: /* SYNTH_CLOCK: a mem:alloc with its full timestamp */
		ext_id = 10;
		w[1] = e->ts * 100;
		w[2] = e->ts;
		w[3] = e->ts & 3;
		k = 4;
		break;
	}
	if (cid && e->ts - prev >= (1u << 27)) {
		ext_id = cid;
		cid = 0;
	}
	unsigned pl = (k - 1) * 8, n;
	if (cid) {
		uint32_t h = cid | (uint32_t)(e->ts << 5);
		memcpy(b, &h, 4);
		n = 4;
	} else {
		uint32_t h[2] = { 31 | (16 + pl) / 4 << 5, ext_id };
		memcpy(b, h, 8);
		memcpy(b + 8, &e->ts, 8);
		n = 16;
	}
	memcpy(b + n, &w[1], pl);
	return n + pl;
}

/* Write dir/metadata (once) and dir/cpu<cpu>, packets of psize bytes, in
 * stream class sclass (0: format.md §3, 1: docs/compact.md). */
static inline void synth_write_class(const char *dir, unsigned sclass, unsigned cpu,
				     uint32_t pid, uint32_t tid, const struct synth_ev *evs,
				     unsigned n, unsigned psize)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/metadata", dir);
	FILE *m = fopen(path, "w");
	fputs(sclass ? synth_metadata1 : synth_metadata, m);
	fclose(m);
	snprintf(path, sizeof(path), "%s/cpu%u", dir, cpu);
	FILE *f = fopen(path, "w");
	uint8_t *pk = calloc(1, psize);
	unsigned i = 0;
	uint64_t seq = 0;
	while (i < n) {
		memset(pk, 0, psize);
		size_t off = 96;
		uint64_t tb = evs[i].ts, te = tb;
		while (i < n) {
			uint64_t w[10];
			unsigned k = sclass ? synth_record1(&evs[i], pid, te, (uint8_t *)w) :
					      synth_record(&evs[i], pid, w) * 8;
			if (off + k > psize)
				break;
			memcpy(pk + off, w, k);
			off += k;
			te = evs[i].ts;
			i++;
		}
		synth_header(pk, sclass, cpu, pid, tid, tb, te, off, psize, seq++);
		fwrite(pk, 1, psize, f);
	}
	free(pk);
	fclose(f);
}

static inline void synth_write(const char *dir, unsigned cpu, uint32_t pid, uint32_t tid,
			       const struct synth_ev *evs, unsigned n, unsigned psize)
{
	synth_write_class(dir, 0, cpu, pid, tid, evs, n, psize);
}

static inline void synth_write1(const char *dir, unsigned cpu, uint32_t pid, uint32_t tid,
				const struct synth_ev *evs, unsigned n, unsigned psize)
{
	synth_write_class(dir, 1, cpu, pid, tid, evs, n, psize);
}

static inline int synth_rm(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static inline void synth_rmdir(const char *dir)
{
	nftw(dir, synth_rm, 16, FTW_DEPTH | FTW_PHYS);
}

#endif /* STRATA_TEST_SYNTH_H */
