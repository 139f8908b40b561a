/* SPDX-License-Identifier: MIT */
/* Writing the TSDL metadata of a sub-trace (format.md §6), for the consumer, the kernel source and the sampler alike. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <strata/strata.h>

#include <strata/inline/ring.h>

#include "common/format.h"
#include "common/tfile.h"
#include "common/metadata.h"

static const char preamble[] =
	"/* CTF 1.8 */\n"
	"/* Written by strata: docs/format.md describes every field. */\n\n"
	"typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
	"typealias integer { size = 16; align = 16; signed = false; } := uint16_t;\n"
	"typealias integer { size = 32; align = 32; signed = false; } := uint32_t;\n"
	"typealias integer { size = 64; align = 64; signed = false; } := uint64_t;\n"
	"typealias integer { size = 8; align = 8; signed = true; } := int8_t;\n"
	"typealias integer { size = 16; align = 16; signed = true; } := int16_t;\n"
	"typealias integer { size = 32; align = 32; signed = true; } := int32_t;\n"
	"typealias integer { size = 64; align = 64; signed = true; } := int64_t;\n"
	"typealias integer { size = 8; align = 8; signed = false; base = 16; } := uint8_hex_t;\n"
	"typealias integer { size = 16; align = 16; signed = false; base = 16; } := uint16_hex_t;\n"
	"typealias integer { size = 32; align = 32; signed = false; base = 16; } := uint32_hex_t;\n"
	"typealias integer { size = 64; align = 64; signed = false; base = 16; } := uint64_hex_t;\n"
	"typealias floating_point { exp_dig = 11; mant_dig = 53; align = 64; } := double_t;\n"
	"typealias integer { size = 8; align = 8; signed = false; encoding = UTF8; } := char_t;\n\n";

/* Stream class 1 (docs/compact.md): payloads are only 4-byte aligned. */
static const char preamble_a32[] =
	"typealias integer { size = 64; align = 32; signed = false; } := uint64_a32_t;\n"
	"typealias integer { size = 64; align = 32; signed = true; } := int64_a32_t;\n"
	"typealias integer { size = 64; align = 32; signed = false; base = 16; } := uint64_hex_a32_t;\n"
	"typealias floating_point { exp_dig = 11; mant_dig = 53; align = 32; } := double_a32_t;\n\n";

/* What put_event() and put_event_env() need besides the descriptor. */
struct meta_put {
	FILE *f;
	const uint64_t *cids; /* stream class 1; NULL: class 0 */
	const struct meta_info *mi;
};

/* The CTF id of event class `id` of `words` words (0: any): its compact id
 * in stream class 1 if it has one (docs/compact.md), else itself. */
static uint32_t ctf_id(const uint64_t *cids, uint32_t id, uint32_t words)
{
	for (uint32_t c = STRATA_CID_USER; cids && c < STRATA_CID_EXT; c++)
		if (cids[c] && (uint32_t)cids[c] == id &&
		    (!words || (uint32_t)(cids[c] >> 32 & 0xffff) == words))
			return c;
	return id;
}

static void put_uuid(FILE *f, const uint8_t u[16])
{
	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			fputc('-', f);
		fprintf(f, "%02x", u[i]);
	}
}

/* A string literal of TSDL: escape quotes and backslashes, drop controls. */
static void put_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		if ((unsigned char)*s >= 0x20)
			fputc(*s, f);
	}
	fputc('"', f);
}

static const char *type_name(const struct strata_field_desc *fd, int a32)
{
	int hex = fd->flags & STRATA_F_HEX;

	if (a32) {
		switch (fd->type) {
		case STRATA_T_U64: return hex ? "uint64_hex_a32_t" : "uint64_a32_t";
		case STRATA_T_S64: return "int64_a32_t";
		case STRATA_T_F64: return "double_a32_t";
		case STRATA_T_PTR: return "uint64_hex_a32_t";
		default: break;
		}
	}
	switch (fd->type) {
	case STRATA_T_BOOL: return "uint8_t";
	case STRATA_T_U8: return hex ? "uint8_hex_t" : "uint8_t";
	case STRATA_T_U16: return hex ? "uint16_hex_t" : "uint16_t";
	case STRATA_T_U32: return hex ? "uint32_hex_t" : "uint32_t";
	case STRATA_T_U64: return hex ? "uint64_hex_t" : "uint64_t";
	case STRATA_T_S8: return "int8_t";
	case STRATA_T_S16: return "int16_t";
	case STRATA_T_S32: return "int32_t";
	case STRATA_T_S64: return "int64_t";
	case STRATA_T_F64: return "double_t";
	case STRATA_T_PTR: return "uint64_hex_t";
	default: return NULL;
	}
}

static unsigned type_bytes(unsigned type)
{
	switch (type) {
	case STRATA_T_U8: case STRATA_T_S8: case STRATA_T_BOOL: return 1;
	case STRATA_T_U16: case STRATA_T_S16: return 2;
	case STRATA_T_U32: case STRATA_T_S32: return 4;
	default: return 8;
	}
}

/*
 * Bytes between the end of an event's last field and the next 64-bit word
 * (format.md §3 layout: natural alignment from a word-aligned start; a
 * string ends on a word boundary). babeltrace2 2.0 must see every event
 * end exactly on a word, or it looks for one more event header in the
 * padding of the packet's last event: they are declared as a trailing
 * `_pad` field (put_gap).
 */
static unsigned tail_pad_bytes(const struct strata_event_desc *e)
{
	uint64_t pos = 0; /* bytes, modulo the word */

	for (unsigned i = 0; i < e->nfields; i++) {
		const struct strata_field_desc *fd = &e->fields[i];
		if (fd->type == STRATA_T_STRING) {
			pos = 0; /* u32 count, then bytes to the next word */
			continue;
		}
		unsigned sz = type_bytes(fd->type);
		pos = (pos + sz - 1) / sz * sz + (uint64_t)sz * (fd->count ? fd->count : 1);
	}
	return (unsigned)((8 - pos % 8) % 8);
}

/*
 * Padding of `bytes` bytes declared as the field `name` (format.md §6,
 * docs/compact.md). babeltrace2 2.0's CTF writer (sink.ctf.fs) writes a
 * byte-aligned integer only when it is 8, 16, 32 or 64 bits long and
 * aborts on any other size: a gap of 3, 5, 6 or 7 bytes is an array of
 * bytes. Readers drop the field by its name, whatever its type.
 */
static void put_gap(FILE *f, unsigned bytes, const char *name)
{
	if (bytes == 1 || bytes == 2 || bytes == 4)
		fprintf(f, "\t\tinteger { size = %u; align = 1; signed = false; } %s;\n",
			bytes * 8, name);
	else
		fprintf(f, "\t\tinteger { size = 8; align = 8; signed = false; } %s[%u];\n",
			name, bytes);
}

/* The 10 length bits of the header (54-63) as the payload of an event
 * with no field, so that it too ends on a word (see tail_pad_bytes). */
static const char no_fields[] =
	"\tfields := struct {\n\t\tinteger { size = 10; align = 1; "
	"signed = false; } _length;\n\t};\n";

/* The names of field `fd` of event `full`, if its values have them. */
static const struct meta_enum *field_enum(const struct meta_info *mi, const char *full,
					  const struct strata_field_desc *fd)
{
	for (size_t i = 0; i < mi->nenums; i++)
		if (!strcmp(mi->enums[i].event, full) && !strcmp(mi->enums[i].field, fd->name))
			return &mi->enums[i];
	return NULL;
}

/* An integer field whose values have names: enum : TYPE { "name" = v, ... } */
static void put_enum_field(FILE *f, const char *type, const char *name,
			   const struct meta_enum *en)
{
	fprintf(f, "		enum : %s {", type);
	for (size_t i = 0; i < en->nlabels; i++) {
		fprintf(f, "%s\n\t\t\t", i ? "," : "");
		put_str(f, en->labels[i].label);
		fprintf(f, " = %lld", (long long)en->labels[i].value);
	}
	fprintf(f, "\n\t\t} %s;\n", name);
}

static int put_event(const struct strata_event_desc *e, void *arg)
{
	const struct meta_put *mp = arg;
	FILE *f = mp->f;
	int a32 = mp->cids != NULL;
	uint64_t pos = 0; /* bytes from the payload's start, modulo the word */
	unsigned npad = 0;

	fprintf(f, "event {\n\tname = ");
	char full[256];
	snprintf(full, sizeof(full), "%s:%s", e->subsystem, e->name);
	put_str(f, full);
	fprintf(f, ";\n\tid = %u;\n\tstream_id = %d;\n",
		ctf_id(mp->cids, STRATA_ID(e->major, e->minor), 0), a32);
	if (e->nfields) {
		fprintf(f, "\tfields := struct {\n");
		for (unsigned i = 0; i < e->nfields; i++) {
			const struct strata_field_desc *fd = &e->fields[i];
			/* Stream class 1: no alignment above 32 bits, so the
			 * gaps of the payload's own alignment (format.md §6,
			 * from its start) are fields (docs/compact.md). */
			unsigned al = fd->type == STRATA_T_STRING ? 4 : type_bytes(fd->type);
			uint64_t at = (pos + al - 1) / al * al;
			if (a32 && at > pos) {
				char gap[16];
				snprintf(gap, sizeof(gap), "_pad%u", npad++);
				put_gap(f, (unsigned)(at - pos), gap);
			}
			pos = at + (uint64_t)al * (fd->count ? fd->count : 1);
			if (fd->type == STRATA_T_STRING) {
				pos = 0;
				fprintf(f, "\t\tuint32_t _%s_len;\n"
					   "\t\tchar_t %s[_%s_len];\n",
					fd->name, fd->name, fd->name);
				continue;
			}
			const char *t = type_name(fd, a32);
			if (!t)
				t = a32 ? "uint64_a32_t" : "uint64_t"; /* unknown type: keep the size */
			const struct meta_enum *en = fd->count || fd->type == STRATA_T_F64
							     ? NULL
							     : field_enum(mp->mi, full, fd);
			if (en)
				put_enum_field(f, t, fd->name, en);
			else if (fd->count)
				fprintf(f, "\t\t%s %s[%u];\n", t, fd->name, fd->count);
			else
				fprintf(f, "\t\t%s %s;\n", t, fd->name);
		}
		unsigned pad = tail_pad_bytes(e);
		if (pad)
			put_gap(f, pad, "_pad");
		fprintf(f, "\t} align(%d);\n", a32 ? 32 : 64);
	} else if (!a32) {
		fputs(no_fields, f);
	} /* stream class 1: the event ends with its header */
	fprintf(f, "};\n\n");
	return 0;
}

/* An event class with no descriptor: `ctf` its CTF id, `id` its full id. */
static void put_raw(FILE *f, const struct meta_raw *r, uint32_t ctf, int a32)
{
	unsigned major = r->id >> 16, minor = r->id & 0xffff;

	fprintf(f, "event {\n\tname = \"%u:%u\";\n\tid = %u;\n\tstream_id = %d;\n",
		major, minor, ctf, a32);
	if (r->blob) {
		fprintf(f, "\tfields := struct {\n\t\tuint32_t _data_len;\n"
			   "\t\tuint32_t size;\n\t\tuint8_t data[_data_len];\n"
			   "\t} align(%d);\n", a32 ? 32 : 64);
	} else if (r->words > 1) {
		fprintf(f, "\tfields := struct {\n");
		for (unsigned i = 0; i + 1 < r->words; i++)
			fprintf(f, "\t\t%s w%u;\n", a32 ? "uint64_hex_a32_t" : "uint64_hex_t", i);
		fprintf(f, "\t} align(%d);\n", a32 ? 32 : 64);
	} else if (!a32) {
		fputs(no_fields, f);
	}
	fprintf(f, "};\n\n");
}

/* Format strings, kinds and flows go in `env`, keyed by event id: babeltrace2
 * warns about unknown event attributes but accepts any env entry
 * (format.md §6). */
static int put_event_env(const struct strata_event_desc *e, void *arg)
{
	const struct meta_put *mp = arg;
	FILE *f = mp->f;
	uint32_t id = ctf_id(mp->cids, STRATA_ID(e->major, e->minor), 0);

	if (e->format) {
		fprintf(f, "\tstrata_format_%u = ", id);
		put_str(f, e->format);
		fprintf(f, ";\n");
	}
	if (e->kind == STRATA_EV_BEGIN || e->kind == STRATA_EV_END)
		fprintf(f, "\tstrata_kind_%u = \"%s\";\n", id,
			e->kind == STRATA_EV_BEGIN ? "begin" : "end");
	/* a flow's key: the first field marked (docs/dsl.md, "Flows") */
	for (unsigned i = 0; i < e->nfields; i++) {
		uint32_t fl = e->fields[i].flags;
		if (!(fl & (STRATA_F_FLOW_SEND | STRATA_F_FLOW_RECEIVE)))
			continue;
		fprintf(f, "\tstrata_flow_%u = \"%s\";\n\tstrata_flow_key_%u = ", id,
			fl & STRATA_F_FLOW_SEND ? "send" : "receive", id);
		put_str(f, e->fields[i].name);
		fprintf(f, ";\n");
		break;
	}
	if (e->description) {
		fprintf(f, "\tstrata_description_%u = ", id);
		put_str(f, e->description);
		fprintf(f, ";\n");
	}
	return 0;
}

static int is_id(const struct strata_event_desc *e, void *arg)
{
	return STRATA_ID(e->major, e->minor) == *(const uint32_t *)arg;
}

/* Whether the metadata declares event `id` from a descriptor. */
static bool meta_has_event(const struct meta_info *mi, uint32_t id)
{
	if (!mi->events)
		return mi->each_event && mi->each_event(is_id, &id) != 0;
	for (size_t i = 0; i < mi->nevents; i++)
		if (STRATA_ID(mi->events[i]->major, mi->events[i]->minor) == id)
			return true;
	return false;
}

/* The trace block: the packet header (format.md §2). */
static void put_trace(FILE *f, const struct meta_info *mi, int sc)
{
	fputs(preamble, f);
	if (sc)
		fputs(preamble_a32, f);
	fprintf(f, "trace {\n\tmajor = 1;\n\tminor = 8;\n\tuuid = \"");
	put_uuid(f, mi->uuid);
	fprintf(f, "\";\n\tbyte_order = le;\n"
		   "\tpacket.header := struct {\n"
		   "\t\tuint32_t magic;\n\t\tuint8_t uuid[16];\n"
		   "\t\tuint32_t stream_id;\n\t\tuint64_t stream_instance_id;\n"
		   "\t};\n};\n\n");
}

/* The env block: the tracer, the host, the caller's entries, each event's
 * format string and kind, and the compact ids of stream class 1. */
static void put_env(FILE *f, const struct meta_info *mi, struct meta_put *mp,
		    int sc)
{
	char host[256] = "", date[64];
	time_t now = time(NULL);
	struct tm tm;

	gethostname(host, sizeof(host) - 1);
	gmtime_r(&now, &tm);
	strftime(date, sizeof(date), "%Y%m%dT%H%M%S+0000", &tm);

	fprintf(f, "env {\n\tdomain = ");
	put_str(f, mi->domain ? mi->domain : "ust");
	fprintf(f, ";\n\ttracer_name = \"strata\";\n"
		   "\ttracer_major = %d;\n\ttracer_minor = %d;\n"
		   "\tvpid = %u;\n\tprocname = ",
		0, 1, mi->pid);
	put_str(f, mi->procname ? mi->procname : "");
	fprintf(f, ";\n\thostname = ");
	put_str(f, host);
	fprintf(f, ";\n\ttrace_creation_datetime = \"%s\";\n", date);
	for (const char *const *e = mi->env; e && e[0] && e[1]; e += 2) {
		fprintf(f, "\t%s = ", e[0]);
		put_str(f, e[1]);
		fprintf(f, ";\n");
	}
	if (mi->events)
		for (size_t i = 0; i < mi->nevents; i++)
			put_event_env(mi->events[i], mp);
	else if (mi->each_event)
		mi->each_event(put_event_env, mp);
	for (uint32_t c = STRATA_CID_USER; sc && c < STRATA_CID_EXT; c++)
		if (mi->cids[c])
			fprintf(f, "\tstrata_id_%u = %u;\n", c, (uint32_t)mi->cids[c]);
	/* enum strata_lost_cause's order, then the disk (consumer.c) */
	static const char *const lost_name[META_LOST_NCAUSES] = {
		"full", "busy", "too_big", "nested", "no_ring", "disk"};
	_Static_assert(META_LOST_NCAUSES == STRATA_LOST_NCAUSES + 1 &&
			       STRATA_LOST_NO_RING == 4,
		       "format.md §6, lost_*");
	for (int k = 0; mi->lost && k < META_LOST_NCAUSES; k++)
		fprintf(f, "\tlost_%s = %llu;\n", lost_name[k],
			(unsigned long long)mi->lost[k]);
	fprintf(f, "};\n\n");
}

/* The clock block: its frequency and its offset from the Unix epoch. */
static void put_clock(FILE *f, const struct meta_info *mi)
{
	/* offset = Unix time of clock value 0, split in seconds + cycles. */
	int64_t off_s = mi->offset_ns / 1000000000;
	int64_t rem_ns = mi->offset_ns % 1000000000;
	if (rem_ns < 0) {
		rem_ns += 1000000000;
		off_s--;
	}
	uint64_t off_cycles =
		(uint64_t)((double)rem_ns * (double)mi->freq_hz / 1e9);
	fprintf(f, "clock {\n\tname = \"strata\";\n\tuuid = \"%s\";\n"
		   "\tdescription = \"%s\";\n\tfreq = %llu;\n"
		   "\tprecision = %llu;\n\toffset_s = %lld;\n\toffset = %llu;\n"
		   "\tabsolute = TRUE;\n};\n\n",
		mi->clock_uuid, mi->clock_desc ? mi->clock_desc : "",
		(unsigned long long)mi->freq_hz,
		(unsigned long long)(mi->freq_hz / 1000000 + 1),
		(long long)off_s, (unsigned long long)off_cycles);
}

/* The stream class: packet context and event header, class 1
 * (docs/compact.md) or 0 (format.md §3). */
static void put_stream(FILE *f, int sc)
{
	fprintf(f,
		"typealias integer { size = 64; align = 64; signed = false; "
		"map = clock.strata.value; } := uint64_clock_t;\n\n");
	if (sc)
		fprintf(f,
			"typealias integer { size = 64; align = 32; signed = false; "
			"map = clock.strata.value; } := uint64_clock_a32_t;\n\n");
	fprintf(f,
		"stream {\n\tid = %d;\n"
		"\tpacket.context := struct {\n"
		"\t\tuint64_clock_t timestamp_begin;\n"
		"\t\tuint64_clock_t timestamp_end;\n"
		"\t\tuint64_t content_size;\n\t\tuint64_t packet_size;\n"
		"\t\tuint64_t packet_seq_num;\n\t\tuint64_t events_discarded;\n"
		"\t\tuint32_t cpu_id;\n\t\tuint32_t pid;\n\t\tuint32_t tid;\n"
		"\t\tuint32_t events;\n\t};\n", sc);
	if (sc)
		fputs("\t/* docs/compact.md: compact (ids 1-30) or extended (31);\n"
		      "\t * bits 5-31 of an extended header (its length in 32-bit\n"
		      "\t * words) are alignment padding */\n"
		      "\tevent.header := struct {\n"
		      "\t\tenum : integer { size = 5; align = 32; signed = false; }\n"
		      "\t\t\t{ compact = 0 ... 30, extended = 31 } id;\n"
		      "\t\tvariant <id> {\n"
		      "\t\t\tstruct {\n"
		      "\t\t\t\tinteger { size = 27; align = 1; signed = false; "
		      "map = clock.strata.value; } timestamp;\n"
		      "\t\t\t} compact;\n"
		      "\t\t\tstruct {\n"
		      "\t\t\t\tuint32_t id;\n"
		      "\t\t\t\tuint64_clock_a32_t timestamp;\n"
		      "\t\t\t} extended;\n"
		      "\t\t} v;\n"
		      "\t} align(32);\n};\n\n", f);
	else
		fputs("\t/* format.md §3: bits 54-63 (length) are alignment padding */\n"
		      "\tevent.header := struct {\n"
		      "\t\tinteger { size = 32; align = 64; signed = false; "
		      "map = clock.strata.value; } timestamp;\n"
		      "\t\tinteger { size = 22; align = 1; signed = false; } id;\n"
		      "\t} align(64);\n};\n\n", f);
}

/* strata's own records, format.md §4. */
static void put_own_events(FILE *f, int sc)
{
	const char *al = sc ? "32" : "64", *u64 = sc ? "uint64_a32_t" : "uint64_t";
	const char *u64x = sc ? "uint64_hex_a32_t" : "uint64_hex_t";

	fprintf(f,
		"event {\n\tname = \"strata:thread\";\n\tid = %u;\n\tstream_id = %d;\n"
		"\tfields := struct {\n\t\tuint32_t tid;\n\t\tuint32_t pid;\n"
		"\t} align(%s);\n};\n\n"
		"event {\n\tname = \"strata:clock\";\n\tid = %u;\n\tstream_id = %d;\n"
		"\tfields := struct {\n\t\t%s timestamp;\n"
		"\t} align(%s);\n};\n\n",
		STRATA_ID_THREAD, sc, al, STRATA_ID_CLOCK, sc,
		sc ? "uint64_clock_a32_t" : "uint64_clock_t", al);
	fprintf(f,
		"event {\n\tname = \"strata:calib\";\n\tid = %u;\n\tstream_id = %d;\n"
		"\tfields := struct {\n\t\t%s mono_ns;\n\t\t%s real_ns;\n"
		"\t\t%s freq_hz;\n\t} align(%s);\n};\n\n"
		"event {\n\tname = \"strata:lost\";\n\tid = %u;\n\tstream_id = %d;\n"
		"\tfields := struct {\n\t\t%s count;\n\t\tuint32_t cause;\n"
		"\t\tuint32_t pad;\n\t} align(%s);\n};\n\n",
		STRATA_ID_CALIB, sc, u64, u64, u64, al, STRATA_ID_LOST, sc, u64, al);
	/* the state dump, format.md §4 */
	fprintf(f,
		"event {\n\tname = \"strata:process\";\n\tid = %u;\n\tstream_id = %d;\n"
		"\tfields := struct {\n\t\tuint32_t pid;\n\t\tuint32_t ppid;\n"
		"\t\tuint32_t _name_len;\n\t\tchar_t name[_name_len];\n"
		"\t} align(%s);\n};\n\n"
		"event {\n\tname = \"strata:thread_name\";\n\tid = %u;\n\tstream_id = %d;\n"
		"\tfields := struct {\n\t\tuint32_t tid;\n\t\tuint32_t pid;\n"
		"\t\tuint32_t _name_len;\n\t\tchar_t name[_name_len];\n"
		"\t} align(%s);\n};\n\n",
		STRATA_ID_PROCESS, sc, al, STRATA_ID_THREAD_NAME, sc, al);
	fprintf(f,
		"event {\n\tname = \"strata:map\";\n\tid = %u;\n\tstream_id = %d;\n"
		"\tfields := struct {\n\t\t%s start;\n"
		"\t\t%s end;\n"
		"\t\t%s offset;\n"
		"\t\t%s inode;\n\t\tuint32_t prot;\n"
		"\t\tuint32_t _path_len;\n\t\tchar_t path[_path_len];\n"
		"\t} align(%s);\n};\n\n"
		"event {\n\tname = \"strata:statedump\";\n\tid = %u;\n\tstream_id = %d;\n"
		"\tfields := struct {\n\t\tuint32_t phase;\n\t\tuint32_t pad;\n"
		"\t} align(%s);\n};\n\n",
		STRATA_ID_MAP, sc, u64x, u64x, u64x, u64, al,
		STRATA_ID_STATEDUMP, sc, al);
	fprintf(f,
		"event {\n\tname = \"strata:build_id\";\n\tid = %u;\n\tstream_id = %d;\n"
		"\tfields := struct {\n\t\t%s addr;\n"
		"\t\tuint32_t _build_id_len;\n\t\tchar_t build_id[_build_id_len];\n"
		"\t} align(%s);\n};\n\n",
		STRATA_ID_BUILD_ID, sc, u64x, al);
}

/* The program's event classes: from descriptors, raw ones, and the
 * compact ids that have no descriptor. */
static void put_events(FILE *f, const struct meta_info *mi,
		       struct meta_put *mp, int sc)
{
	if (mi->events)
		for (size_t i = 0; i < mi->nevents; i++)
			put_event(mi->events[i], mp);
	else if (mi->each_event)
		mi->each_event(put_event, mp);
	for (size_t i = 0; i < mi->nraw; i++)
		put_raw(f, &mi->raw[i], mi->raw[i].id, sc);
	/* compact ids with no descriptor: the generic events of a call site
	 * (the descriptor of a class is sought by its full id) */
	for (uint32_t c = STRATA_CID_USER; sc && c < STRATA_CID_EXT; c++) {
		uint32_t id = (uint32_t)mi->cids[c];
		struct meta_raw r = {.id = id, .words = (uint16_t)(mi->cids[c] >> 32)};
		if (!mi->cids[c] || meta_has_event(mi, id))
			continue;
		put_raw(f, &r, c, 1);
	}
}

/* The metadata file (TSDL, format.md §6), block by block. */
static void put_body(FILE *f, const struct meta_info *mi)
{
	/* stream class 1 (docs/compact.md) or 0 (format.md §3) */
	int sc = mi->cids != NULL;
	struct meta_put mp = {.f = f, .cids = mi->cids, .mi = mi};

	put_trace(f, mi, sc);
	put_env(f, mi, &mp, sc);
	put_clock(f, mi);
	put_stream(f, sc);
	put_own_events(f, sc);
	put_events(f, mi, &mp, sc);
}

int meta_write(const char *dir, const struct meta_info *mi)
{
	char tmp[4200], path[4200];
	int ret = 0;
	FILE *f;

	/* A dot file: babeltrace2 skips it, so that no moment of the trace
	 * on disk, a kill between the fsync and the rename included, makes
	 * it refuse the trace (it reads any other file as a stream). */
	snprintf(tmp, sizeof(tmp), "%s/.metadata.tmp", dir);
	snprintf(path, sizeof(path), "%s/metadata", dir);
	int fd = tfile_open(tmp, O_WRONLY | O_TRUNC);
	if (fd < 0)
		return fd;
	f = fdopen(fd, "w");
	if (!f) {
		ret = -errno;
		close(fd);
		unlink(tmp);
		return ret;
	}
	put_body(f, mi);
	if (fflush(f) || ferror(f) || fsync(fileno(f)) < 0)
		ret = -(errno ? errno : EIO);
	if (fclose(f) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path) < 0)
		ret = -errno;
	if (ret)
		unlink(tmp);
	return ret;
}
