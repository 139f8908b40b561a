/* SPDX-License-Identifier: MIT */
/* The header emitter: inline tracepoints packed per docs/format.md §3, descriptors, registration. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"

/* Weak and hidden: every translation unit of one module (executable or
 * shared object) that includes the header shares one copy, reached by a
 * PC-relative load (docs/dsl.md, "Generated code"). */
#define WEAK "__attribute__((weak, visibility(\"hidden\")))"

static const char *c_type(unsigned type)
{
	switch (type) {
	case STRATA_T_U8: return "uint8_t";
	case STRATA_T_U16: return "uint16_t";
	case STRATA_T_U32: return "uint32_t";
	case STRATA_T_U64: return "uint64_t";
	case STRATA_T_S8: return "int8_t";
	case STRATA_T_S16: return "int16_t";
	case STRATA_T_S32: return "int32_t";
	case STRATA_T_S64: return "int64_t";
	case STRATA_T_F64: return "double";
	case STRATA_T_BOOL: return "bool";
	case STRATA_T_PTR: return "const void *";
	case STRATA_T_STRING: return "const char *";
	}
	return "?";
}

static const char *type_enum(unsigned type)
{
	switch (type) {
	case STRATA_T_U8: return "STRATA_T_U8";
	case STRATA_T_U16: return "STRATA_T_U16";
	case STRATA_T_U32: return "STRATA_T_U32";
	case STRATA_T_U64: return "STRATA_T_U64";
	case STRATA_T_S8: return "STRATA_T_S8";
	case STRATA_T_S16: return "STRATA_T_S16";
	case STRATA_T_S32: return "STRATA_T_S32";
	case STRATA_T_S64: return "STRATA_T_S64";
	case STRATA_T_F64: return "STRATA_T_F64";
	case STRATA_T_BOOL: return "STRATA_T_BOOL";
	case STRATA_T_PTR: return "STRATA_T_PTR";
	case STRATA_T_STRING: return "STRATA_T_STRING";
	}
	return "0";
}

static const char *kind_enum(unsigned kind)
{
	return kind == STRATA_EV_BEGIN ? "STRATA_EV_BEGIN" :
	       kind == STRATA_EV_END   ? "STRATA_EV_END" : "STRATA_EV_POINT";
}

/* A field's flags as the C expression of their names. */
static void put_field_flags(struct gen_buf *b, uint32_t flags)
{
	static const struct {
		uint32_t bit;
		const char *name;
	} names[] = { { STRATA_F_HEX, "STRATA_F_HEX" },
		      { STRATA_F_FLOW_SEND, "STRATA_F_FLOW_SEND" },
		      { STRATA_F_FLOW_RECEIVE, "STRATA_F_FLOW_RECEIVE" } };
	const char *sep = "";
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (flags & names[i].bit) {
			gen_buf_printf(b, "%s%s", sep, names[i].name);
			sep = " | ";
		}
	if (!*sep)
		gen_buf_puts(b, "0");
}

/* The field an event's flow is keyed by, or NULL. */
static const struct gen_field *flow_key(const struct gen_event *ev)
{
	size_t i;

	for (i = 0; i < ev->nfields; i++)
		if (ev->fields[i].flags & (STRATA_F_FLOW_SEND | STRATA_F_FLOW_RECEIVE))
			return &ev->fields[i];
	return NULL;
}

static unsigned align_up(unsigned v, unsigned a)
{
	return (v + a - 1) & ~(a - 1);
}

/* A C string literal: ASCII only, no trigraphs, octal escapes that never
 * swallow a following digit. */
static void put_cstring(struct gen_buf *b, const char *s)
{
	char esc[8];

	if (!s) {
		gen_buf_puts(b, "NULL");
		return;
	}
	gen_buf_puts(b, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			esc[2] = 0;
		} else if (c == '\n') {
			strcpy(esc, "\\n");
		} else if (c == '\t') {
			strcpy(esc, "\\t");
		} else if (c == '?' && s[1] == '?') {
			strcpy(esc, "?\\");
		} else if (c < 0x20 || c >= 0x7f) {
			snprintf(esc, sizeof(esc), "\\%03o", c);
		} else {
			esc[0] = (char)c;
			esc[1] = 0;
		}
		gen_buf_puts(b, esc);
	}
	gen_buf_puts(b, "\"");
}

static void put_upper(struct gen_buf *b, const char *s)
{
	char c[2] = { 0, 0 };

	for (; *s; s++) {
		c[0] = (*s >= 'a' && *s <= 'z') ? (char)(*s - 'a' + 'A') :
		       ((*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')) ? *s : '_';
		gen_buf_puts(b, c);
	}
}

static void put_params(struct gen_buf *b, const struct gen_event *ev)
{
	size_t i;

	if (!ev->nfields)
		gen_buf_puts(b, "void");
	for (i = 0; i < ev->nfields; i++) {
		const struct gen_field *f = &ev->fields[i];
		const char *t = c_type(f->type);
		int star = t[strlen(t) - 1] == '*';

		if (i)
			gen_buf_puts(b, ", ");
		if (f->count)
			gen_buf_printf(b, "const %s %s[%u]", t, f->name, f->count);
		else
			gen_buf_printf(b, "%s%s%s", t, star ? "" : " ", f->name);
	}
}

static void put_signature(struct gen_buf *b, const struct gen_subsys *ss,
			  const struct gen_event *ev)
{
	gen_buf_printf(b, "static inline void strata_%s_%s(", ss->name, ev->name);
	put_params(b, ev);
	gen_buf_puts(b, ")\n");
}

/* Zero the padding between byte `from` and `to` of the current segment. */
static void put_pad(struct gen_buf *b, unsigned from, unsigned to)
{
	if (to > from)
		gen_buf_printf(b, "\tmemset(strata_p + %u, 0, %u);\n", from, to - from);
}

/*
 * Per-field layout (docs/format.md §3). A "segment" starts at a word
 * boundary: the payload start, or the end of a string. off[i] is the
 * field's byte offset in its segment (for strings, the offset of the u32
 * count; the bytes follow at off + 4).
 */
struct layout {
	unsigned *off;
	unsigned fixed;  /* bytes of the payload outside string bytes */
	unsigned min;    /* payload bytes with every string empty */
	unsigned nstr;
};

static int layout(const struct gen_event *ev, struct layout *lay)
{
	unsigned o = 0;
	size_t i;

	memset(lay, 0, sizeof(*lay));
	lay->off = calloc(ev->nfields + 1, sizeof(*lay->off));
	if (!lay->off)
		return -ENOMEM;
	for (i = 0; i < ev->nfields; i++) {
		const struct gen_field *f = &ev->fields[i];
		unsigned size = gen_type_size(f->type);

		if (f->type == STRATA_T_STRING) {
			o = align_up(o, 4);
			lay->off[i] = o;
			lay->fixed += o + 4;
			lay->min += align_up(o + 4 + 1, 8);
			lay->nstr++;
			o = 0;
			continue;
		}
		o = align_up(o, size);
		lay->off[i] = o;
		o += size * (f->count ? f->count : 1);
	}
	lay->fixed += align_up(o, 8);
	lay->min += align_up(o, 8);
	return 0;
}

static void put_layout_comment(struct gen_buf *b, const struct gen_subsys *ss,
			       const struct gen_event *ev,
			       const struct layout *lay)
{
	const struct gen_field *key = flow_key(ev);
	const char *after = NULL;
	size_t i;

	gen_buf_printf(b, "/*\n * %s:%s, id %u:%u%s", ss->name, ev->name,
		       ss->major, ev->minor,
		       ev->kind == STRATA_EV_BEGIN ? ", begins an interval" :
		       ev->kind == STRATA_EV_END ? ", ends an interval" : "");
	if (key)
		gen_buf_printf(b, ", %s a message by '%s'",
			       ev->flow == STRATA_F_FLOW_SEND ? "sends" : "receives", key->name);
	if (lay->nstr)
		gen_buf_printf(b, ", %u to %u words (strings may be truncated)",
			       1 + lay->min / 8, GEN_MAX_WORDS);
	else
		gen_buf_printf(b, ", %u word%s", 1 + lay->min / 8, lay->min ? "s" : "");
	gen_buf_puts(b, ".\n * Payload (docs/format.md §3):");
	if (!ev->nfields)
		gen_buf_puts(b, " none");
	for (i = 0; i < ev->nfields; i++) {
		const struct gen_field *f = &ev->fields[i];

		gen_buf_printf(b, "%s%s %s", i % 4 ? ", " : "\n *  ",
			       gen_type_name(f->type), f->name);
		if (f->count)
			gen_buf_printf(b, "[%u]", f->count);
		gen_buf_printf(b, " @%s%s%u", after ? after : "", after ? "+" : "",
			       lay->off[i]);
		if (f->type == STRATA_T_STRING)
			after = f->name;
	}
	gen_buf_puts(b, "\n");
	if (ev->format) {
		gen_buf_puts(b, " * Format: ");
		put_cstring(b, ev->format);
		gen_buf_puts(b, "\n");
	}
	gen_buf_puts(b, " */\n");
}

/* The tracepoint's opening brace and locals. Fixed size: the payload is
 * built in a local array and logged by strata_log_fixed() (it stays in
 * registers on the inline path, ring.md §7); with strings, the measured
 * size is reserved and written in place. */
static void put_locals(struct gen_buf *b, const struct gen_event *ev,
		       const struct layout *lay)
{
	size_t i;

	if (lay->nstr)
		gen_buf_puts(b, "{\n\tstruct strata_rsv strata_r;\n");
	else if (lay->min)
		gen_buf_printf(b, "{\n\tstatic uint8_t strata_cid;\n\tuint64_t strata_w[%u];\n",
			       lay->min / 8);
	else
		gen_buf_puts(b, "{\n\tstatic uint8_t strata_cid;\n");
	if (ev->nfields)
		gen_buf_puts(b, "\tunsigned char *strata_p;\n");
	if (lay->nstr)
		gen_buf_printf(b, "\tsize_t strata_room = (STRATA_MAX_WORDS - 1) * 8 - %u;\n",
			       lay->min);
	for (i = 0; i < ev->nfields; i++) {
		const struct gen_field *f = &ev->fields[i];

		if (f->type == STRATA_T_STRING)
			gen_buf_printf(b, "\tsize_t strata_n_%s;\n\tuint32_t strata_c_%s;\n",
				       f->name, f->name);
		else if (f->type == STRATA_T_BOOL && !f->count)
			gen_buf_printf(b, "\tconst uint8_t strata_v_%s = (uint8_t)%s;\n",
				       f->name, f->name);
		else if (f->type == STRATA_T_PTR)
			gen_buf_printf(b, "\tconst uint64_t strata_v_%s = (uintptr_t)%s;\n",
				       f->name, f->name);
	}
}

/* Return at once when the subsystem or the event is disabled: the site
 * (include/strata/inline/branch.h, docs/patch.md) is patched into a no-op
 * that returns while it is; otherwise it jumps on to the tests of today,
 * which stay the truth. The descriptor names the event's flag, so that
 * enabling or disabling one event patches its sites alone. */
static void put_enabled_checks(struct gen_buf *b, const struct gen_subsys *ss,
			       size_t index, const struct gen_emit_opts *opts)
{
	gen_buf_printf(b, "\n\tSTRATA_BRANCH(STRATA_MAJOR_");
	put_upper(b, ss->name);
	if (opts->no_event_flags)
		gen_buf_puts(b, ", \"0\", strata_on);\n");
	else
		gen_buf_printf(b, ", \"strata_gen_on_%s+%zu-.\", strata_on);\n",
			       ss->name, index);
	gen_buf_puts(b, "\treturn;\nstrata_on:\n");
	gen_buf_printf(b, "\tif (!strata_major_enabled(STRATA_MAJOR_");
	put_upper(b, ss->name);
	gen_buf_puts(b, "))\n\t\treturn;\n");
	if (!opts->no_event_flags)
		/* `!= 1`, not `!`: the same test, and an armed trigger
		 * (STRATA_FLAG_START/STOP) reaches strata_event_fire() */
		gen_buf_printf(b, "\tif (strata_unlikely(strata_gen_on_%s[%zu] != 1) &&\n"
			       "\t    !strata_event_fire(&strata_gen_on_%s[%zu]))\n\t\treturn;\n",
			       ss->name, index, ss->name, index);
}

/* Strings: measured now, cut so the event fits (docs/dsl.md, "Strings"). */
static void put_string_cuts(struct gen_buf *b, const struct gen_event *ev,
			    const struct layout *lay)
{
	size_t i, last_str = 0;

	for (i = 0; i < ev->nfields; i++)
		if (ev->fields[i].type == STRATA_T_STRING)
			last_str = i;
	for (i = 0; i < ev->nfields; i++) {
		const struct gen_field *f = &ev->fields[i];
		unsigned bstart, empty;

		if (f->type != STRATA_T_STRING)
			continue;
		bstart = lay->off[i] + 4;
		empty = align_up(bstart + 1, 8);
		gen_buf_printf(b, "\tif (!%s)\n\t\t%s = \"\";\n", f->name, f->name);
		gen_buf_printf(b, "\tstrata_n_%s = strlen(%s);\n", f->name, f->name);
		gen_buf_printf(b, "\tif (strata_n_%s > strata_room + %u) {\n", f->name,
			       empty - bstart - 1);
		gen_buf_printf(b, "\t\tstrata_n_%s = strata_room + %u;\n", f->name,
			       empty - bstart - 1);
		gen_buf_printf(b, "\t\twhile (strata_n_%s && ((unsigned char)%s[strata_n_%s] & 0xc0) == 0x80)\n"
			       "\t\t\tstrata_n_%s--; /* keep UTF-8 sequences whole */\n\t}\n",
			       f->name, f->name, f->name, f->name);
		gen_buf_printf(b, "\tstrata_c_%s = (uint32_t)(((%u + strata_n_%s + 8) & ~(size_t)7) - %u);\n",
			       f->name, bstart, f->name, bstart);
		if (i != last_str)
			gen_buf_printf(b, "\tstrata_room -= strata_c_%s - %u;\n", f->name,
				       empty - bstart);
	}
}

/* With strings, reserve the measured size: the extended header
 * (docs/compact.md), the event's length varying. */
static void put_reserve(struct gen_buf *b, const struct gen_subsys *ss,
			const struct gen_event *ev, const struct layout *lay)
{
	size_t i;

	gen_buf_printf(b, "\tif (!strata_reserve(&strata_r, STRATA_HID_EXT | STRATA_ID(STRATA_MAJOR_");
	put_upper(b, ss->name);
	gen_buf_printf(b, ", %u),\n\t\t\t    1 + (%u", ev->minor, lay->fixed);
	for (i = 0; i < ev->nfields; i++)
		if (ev->fields[i].type == STRATA_T_STRING)
			gen_buf_printf(b, " + strata_c_%s", ev->fields[i].name);
	gen_buf_puts(b, ") / 8))\n\t\treturn;\n");
}

/* The payload's stores, at the offsets of its layout, padding included. */
static void put_stores(struct gen_buf *b, const struct gen_event *ev,
		       const struct layout *lay)
{
	unsigned o = 0;
	size_t i;

	if (ev->nfields)
		gen_buf_puts(b, lay->nstr ? "\tstrata_p = (unsigned char *)strata_r.p;\n"
					  : "\tstrata_p = (unsigned char *)strata_w;\n");
	for (i = 0; i < ev->nfields; i++) {
		const struct gen_field *f = &ev->fields[i];
		unsigned size = gen_type_size(f->type), at = lay->off[i];

		put_pad(b, o, at);
		if (f->type == STRATA_T_STRING) {
			gen_buf_printf(b, "\tmemcpy(strata_p + %u, &strata_c_%s, 4);\n", at,
				       f->name);
			gen_buf_printf(b, "\tmemcpy(strata_p + %u, %s, strata_n_%s);\n",
				       at + 4, f->name, f->name);
			gen_buf_printf(b, "\tmemset(strata_p + %u + strata_n_%s, 0, strata_c_%s - strata_n_%s);\n",
				       at + 4, f->name, f->name, f->name);
			if (i + 1 < ev->nfields)
				gen_buf_printf(b, "\tstrata_p += %u + strata_c_%s;\n",
					       at + 4, f->name);
			o = 0;
			continue;
		}
		if (f->count)
			gen_buf_printf(b, "\tmemcpy(strata_p + %u, %s, %u);\n", at, f->name,
				       size * f->count);
		else if (f->type == STRATA_T_BOOL || f->type == STRATA_T_PTR)
			gen_buf_printf(b, "\tmemcpy(strata_p + %u, &strata_v_%s, %u);\n", at,
				       f->name, size);
		else
			gen_buf_printf(b, "\tmemcpy(strata_p + %u, &%s, %u);\n", at, f->name,
				       size);
		o = at + size * (f->count ? f->count : 1);
	}
	if (ev->nfields && ev->fields[ev->nfields - 1].type != STRATA_T_STRING)
		put_pad(b, o, align_up(o, 8));
}

/* Commit, or log the local array: the tracepoint's end. */
static void put_log(struct gen_buf *b, const struct gen_subsys *ss,
		    const struct gen_event *ev, const struct layout *lay)
{
	if (lay->nstr) {
		gen_buf_puts(b, "\tstrata_commit(&strata_r);\n}\n\n");
	} else {
		gen_buf_printf(b, "\tstrata_log_fixed(&strata_cid, STRATA_ID(STRATA_MAJOR_");
		put_upper(b, ss->name);
		gen_buf_printf(b, ", %u), %u, %s);\n}\n\n", ev->minor,
			       1 + lay->min / 8, lay->min ? "strata_w" : "0");
	}
}

static int put_event(struct gen_buf *b, const struct gen_subsys *ss,
		     const struct gen_event *ev, size_t index,
		     const struct gen_emit_opts *opts)
{
	struct layout lay;
	int ret;

	ret = layout(ev, &lay);
	if (ret)
		return ret;
	put_layout_comment(b, ss, ev, &lay);
	put_signature(b, ss, ev);
	put_locals(b, ev, &lay);
	put_enabled_checks(b, ss, index, opts);
	put_string_cuts(b, ev, &lay);
	if (lay.nstr)
		put_reserve(b, ss, ev, &lay);
	put_stores(b, ev, &lay);
	put_log(b, ss, ev, &lay);
	free(lay.off);
	return 0;
}

static void put_disabled_event(struct gen_buf *b, const struct gen_subsys *ss,
			       const struct gen_event *ev)
{
	size_t i;

	put_signature(b, ss, ev);
	gen_buf_puts(b, "{\n");
	for (i = 0; i < ev->nfields; i++)
		gen_buf_printf(b, "\t(void)%s;\n", ev->fields[i].name);
	gen_buf_puts(b, "}\n\n");
}

static void put_descriptors(struct gen_buf *b, const struct gen_subsys *ss,
			    const struct gen_emit_opts *opts)
{
	size_t i, j;

	for (i = 0; i < ss->nevents; i++) {
		const struct gen_event *ev = &ss->events[i];

		if (ev->nfields) {
			gen_buf_printf(b, "struct strata_field_desc strata_gen_fields_%s_%s[%zu] " WEAK " = {\n",
				       ss->name, ev->name, ev->nfields);
			for (j = 0; j < ev->nfields; j++) {
				const struct gen_field *f = &ev->fields[j];

				gen_buf_printf(b, "\t{ \"%s\", %s, %u, ", f->name,
					       type_enum(f->type), f->count);
				put_field_flags(b, f->flags);
				gen_buf_puts(b, " },\n");
			}
			gen_buf_puts(b, "};\n");
		}
		gen_buf_printf(b, "struct strata_event_desc strata_gen_event_%s_%s " WEAK " = {\n",
			       ss->name, ev->name);
		gen_buf_printf(b, "\t\"%s\", \"%s\", %u, %s, %u, %zu, 0,\n", ss->name,
			       ev->name, ss->major, kind_enum(ev->kind), ev->minor,
			       ev->nfields);
		if (ev->nfields)
			gen_buf_printf(b, "\tstrata_gen_fields_%s_%s,\n\t", ss->name, ev->name);
		else
			gen_buf_puts(b, "\tNULL,\n\t");
		put_cstring(b, ev->format);
		gen_buf_puts(b, ",\n\t");
		put_cstring(b, ev->description);
		if (opts->no_event_flags)
			gen_buf_puts(b, ",\n\tNULL\n};\n");
		else
			gen_buf_printf(b, ",\n\t&strata_gen_on_%s[%zu]\n};\n", ss->name, i);
	}
	if (ss->nevents) {
		gen_buf_printf(b, "const struct strata_event_desc *strata_gen_events_%s[%zu] " WEAK " = {\n",
			       ss->name, ss->nevents);
		for (i = 0; i < ss->nevents; i++)
			gen_buf_printf(b, "\t&strata_gen_event_%s_%s,\n", ss->name,
				       ss->events[i].name);
		gen_buf_puts(b, "};\n");
	}
	gen_buf_printf(b, "struct strata_subsys_desc strata_gen_subsys_%s " WEAK " = {\n\t\"%s\", %u, ",
		       ss->name, ss->name, ss->major);
	put_cstring(b, ss->description);
	gen_buf_puts(b, "\n};\n\n");
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

int gen_emit_header(const struct gen_file *file, const struct gen_emit_opts *opts,
		    struct gen_buf *b)
{
	const char *src = opts->source_name ? opts->source_name : base_name(file->name);
	size_t i, j;
	int ret;

	gen_buf_puts(b, "/* Generated by strata-gen from ");
	gen_buf_puts(b, src);
	gen_buf_puts(b, ". Do not edit: change the .strata file and rebuild. */\n");
	/* The guard names the first subsystem too (unique in a program):
	 * two files called events.strata can meet in one translation unit. */
	for (i = 0; i < 2; i++) {
		gen_buf_puts(b, i ? "#define STRATA_GEN_" : "#ifndef STRATA_GEN_");
		put_upper(b, src);
		if (file->nsubsys) {
			gen_buf_puts(b, "_");
			put_upper(b, file->subsys[0].name);
		}
		gen_buf_puts(b, "_H\n");
	}
	gen_buf_puts(b, "\n"
		     "#include <stdint.h>\n#include <string.h>\n"
		     "#ifndef __cplusplus\n#include <stdbool.h>\n#endif\n\n"
		     "#include <strata/strata.h>\n");
	for (i = 0; i < file->nincludes; i++) {
		const char *p = file->includes[i].path;
		size_t n = strlen(p);

		if (i == 0)
			gen_buf_puts(b, "\n");
		if (n > 7 && !strcmp(p + n - 7, ".strata"))
			n -= 7;
		gen_buf_printf(b, "#include \"%.*s.h\"\n", (int)n, p);
	}
	gen_buf_puts(b, "\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");

	for (i = 0; i < file->nsubsys; i++) {
		const struct gen_subsys *ss = &file->subsys[i];

		gen_buf_puts(b, "#define STRATA_MAJOR_");
		put_upper(b, ss->name);
		gen_buf_printf(b, " %u\n", ss->major);
	}

	gen_buf_puts(b, "\n#ifndef STRATA_DISABLE\n\n");
	for (i = 0; i < file->nsubsys; i++) {
		const struct gen_subsys *ss = &file->subsys[i];

		gen_buf_printf(b, "/* ---- subsystem %s (%u)", ss->name, ss->major);
		gen_buf_puts(b, " ---- */\n\n");
		if (!opts->no_event_flags && ss->nevents) {
			gen_buf_printf(b, "/* Per-event enable flags, one cache line for the subsystem\n"
				       " * (docs/dsl.md, \"Enabling events\"). */\n"
				       "volatile uint8_t strata_gen_on_%s[%zu]\n"
				       "\t__attribute__((weak, visibility(\"hidden\"), aligned(64))) = {",
				       ss->name, ss->nevents);
			for (j = 0; j < ss->nevents; j++)
				gen_buf_puts(b, j ? ", 1" : " 1");
			gen_buf_puts(b, " };\n\n");
		}
		for (j = 0; j < ss->nevents; j++) {
			ret = put_event(b, ss, &ss->events[j], j, opts);
			if (ret)
				return ret;
		}
	}
	if (file->nsubsys) {
		gen_buf_puts(b, "/* ---- descriptors (strata/events.h), registered at load time ---- */\n\n");
		for (i = 0; i < file->nsubsys; i++)
			put_descriptors(b, &file->subsys[i], opts);
		gen_buf_printf(b, "static void strata_gen_register_%s(void) __attribute__((constructor));\n"
			       "static void strata_gen_register_%s(void)\n{\n",
			       file->subsys[0].name, file->subsys[0].name);
		for (i = 0; i < file->nsubsys; i++) {
			const struct gen_subsys *ss = &file->subsys[i];

			if (ss->nevents)
				gen_buf_printf(b, "\t(void)strata_register(&strata_gen_subsys_%s, strata_gen_events_%s, %zu);\n",
					       ss->name, ss->name, ss->nevents);
			else
				gen_buf_printf(b, "\t(void)strata_register(&strata_gen_subsys_%s, NULL, 0);\n",
					       ss->name);
		}
		gen_buf_puts(b, "}\n\n");
	}

	gen_buf_puts(b, "#else /* STRATA_DISABLE: no code, no reference to libstrata */\n\n");
	for (i = 0; i < file->nsubsys; i++)
		for (j = 0; j < file->subsys[i].nevents; j++)
			put_disabled_event(b, &file->subsys[i], &file->subsys[i].events[j]);
	gen_buf_puts(b, "#endif /* STRATA_DISABLE */\n\n"
		     "#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
	return b->oom ? -ENOMEM : 0;
}
