/* SPDX-License-Identifier: MIT */
/* TSDL blocks: typealias, and the trace, env, clock, stream and event
 * blocks, read into the metadata and the event declarations. */
#include <stdio.h>
#include <stdlib.h>

#include "tsdl.h"

static void add_alias(struct parser *ps, char *name, struct ty *t)
{
	if (ps->naliases == ps->capaliases) {
		unsigned cap = ps->capaliases ? ps->capaliases * 2 : 16;
		struct alias *a = realloc(ps->aliases, cap * sizeof(*a));
		if (!a) {
			tsdl_fail(ps, "out of memory");
			return;
		}
		ps->aliases = a;
		ps->capaliases = cap;
	}
	ps->aliases[ps->naliases].name = name;
	ps->aliases[ps->naliases].type = t;
	ps->naliases++;
}

static void parse_typealias(struct parser *ps)
{
	tsdl_next(ps);
	struct ty *t = tsdl_type(ps);
	if (!t)
		return;
	if (ps->t.kind != TK_ASSIGN_TYPE) {
		tsdl_fail(ps, "expected ':=' in typealias");
		return;
	}
	tsdl_next(ps);
	char buf[128];
	size_t n = 0;
	while (ps->t.kind == TK_ID) {
		if (n + ps->t.len + 2 > sizeof(buf)) {
			tsdl_fail(ps, "typealias name too long");
			return;
		}
		if (n)
			buf[n++] = ' ';
		memcpy(buf + n, ps->t.s, ps->t.len);
		n += ps->t.len;
		tsdl_next(ps);
	}
	if (!n) {
		tsdl_fail(ps, "typealias without a name");
		return;
	}
	char *name = tsdl_strdup(ps, buf, n);
	if (name)
		add_alias(ps, name, t);
	tsdl_expect(ps, ';');
}

static bool parse_uuid(const char *s, uint8_t out[16])
{
	unsigned n = 0;
	for (const char *p = s; *p; p++) {
		if (*p == '-')
			continue;
		int hi, lo;
		char c = *p;
		hi = (c >= '0' && c <= '9') ? c - '0' : (c | 32) >= 'a' && (c | 32) <= 'f' ? (c | 32) - 'a' + 10 : -1;
		c = p[1];
		lo = (c >= '0' && c <= '9') ? c - '0' : (c | 32) >= 'a' && (c | 32) <= 'f' ? (c | 32) - 'a' + 10 : -1;
		if (hi < 0 || lo < 0 || n >= 16)
			return false;
		out[n++] = hi << 4 | lo;
		p++;
	}
	return n == 16;
}

/* `key := type;` in a block: an event's fields; the trace's and the
 * stream's layouts are checked only for what strata does not write.
 * False where the parse failed and the block ends at once. */
static bool block_type(struct parser *ps, enum blk b, const char *key,
		       struct ev_decl *ev)
{
	tsdl_next(ps);
	struct ty *t = tsdl_type(ps);
	if (!t)
		return false;
	if (t->kind != TY_STRUCT)
		tsdl_fail(ps, "%s must be a struct", key);
	if (b == B_EVENT && !strcmp(key, "fields"))
		ev->fields = t;
	else if (b == B_EVENT && !strcmp(key, "context"))
		tsdl_fail(ps, "event context is not in strata's format");
	else if (b != B_TRACE && b != B_STREAM)
		tsdl_fail(ps, "unexpected type assignment '%s'", key);
	/* packet.header, packet.context, event.header: format.md §2/§3
	 * fixes their layout; the reader decodes them by hand. */
	else if (b == B_STREAM && !strcmp(key, "event.context") && t->nmembers)
		tsdl_fail(ps, "stream event.context is not in strata's format");
	tsdl_expect(ps, ';');
	return true;
}

static void trace_attr(struct parser *ps, const char *key, const struct value *v)
{
	if (!strcmp(key, "byte_order")) {
		if (tsdl_byte_order_be(ps, v))
			tsdl_fail(ps, "big-endian traces are not strata traces");
	} else if (!strcmp(key, "major")) {
		if (tsdl_value_num(ps, v, "major") != 1)
			tsdl_fail(ps, "CTF major version must be 1");
	} else if (!strcmp(key, "uuid") && v->kind == TK_STR) {
		if (!parse_uuid(v->s, ps->m->uuid))
			tsdl_fail(ps, "malformed uuid");
		ps->m->has_uuid = true;
	}
}

/* env: every key kept, as text (key: n bytes); false when out of memory */
static bool env_attr(struct parser *ps, const char *key, size_t n,
		     const struct value *v)
{
	struct rd_meta *m = ps->m;
	struct rd_env *e = realloc(m->env, (m->nenv + 1) * sizeof(*e));
	if (!e) {
		tsdl_fail(ps, "out of memory");
		return false;
	}
	m->env = e;
	e[m->nenv].key = tsdl_strdup(ps, key, n);
	if (v->kind == TK_NUM) {
		char num[32];
		snprintf(num, sizeof(num), "%s%llu", v->neg ? "-" : "",
			 (unsigned long long)v->num);
		e[m->nenv].value = tsdl_strdup(ps, num, strlen(num));
	} else {
		e[m->nenv].value = v->s;
	}
	if (e[m->nenv].key && e[m->nenv].value)
		m->nenv++;
	return true;
}

static void clock_attr(struct parser *ps, const char *key, const struct value *v)
{
	if (!strcmp(key, "name"))
		ps->m->clock_name = v->s;
	else if (!strcmp(key, "description"))
		ps->m->clock_desc = v->s;
	else if (!strcmp(key, "uuid") && v->kind == TK_STR)
		/* the boot id: tells recordings apart (discover.c) */
		ps->m->has_clock_uuid = parse_uuid(v->s, ps->m->clock_uuid);
	else if (!strcmp(key, "freq")) {
		ps->m->freq = tsdl_value_num(ps, v, "freq");
		if (!ps->m->freq)
			tsdl_fail(ps, "clock freq must not be 0");
	} else if (!strcmp(key, "offset_s"))
		ps->m->offset_s = tsdl_value_snum(ps, v, "offset_s");
	else if (!strcmp(key, "offset"))
		ps->m->offset = tsdl_value_snum(ps, v, "offset");
}

static void event_attr(struct parser *ps, const char *key, const struct value *v,
		       struct ev_decl *ev)
{
	if (!strcmp(key, "name")) {
		ev->name = v->s;
	} else if (!strcmp(key, "id")) {
		ev->id = tsdl_value_num(ps, v, "id");
		ev->has_id = true;
		if (ev->id >= (1u << 22))
			tsdl_fail(ps, "event id %llu does not fit 22 bits",
				  (unsigned long long)ev->id);
	} else if (!strcmp(key, "strata_format")) {
		if (v->kind != TK_STR)
			tsdl_fail(ps, "strata_format must be a string");
		ev->format = v->s;
	} else if (!strcmp(key, "strata_kind")) {
		if (v->kind == TK_STR && !strcmp(v->s, "begin"))
			ev->kind = STRATA_KIND_BEGIN;
		else if (v->kind == TK_STR && !strcmp(v->s, "end"))
			ev->kind = STRATA_KIND_END;
		else if (v->kind == TK_STR && !strcmp(v->s, "point"))
			ev->kind = STRATA_KIND_POINT;
		else
			tsdl_fail(ps, "strata_kind must be \"begin\", \"end\" or \"point\"");
	} else if (!strcmp(key, "strata_flow") || !strcmp(key, "strata_flow_key")) {
		if (v->kind != TK_STR)
			tsdl_fail(ps, "%s must be a string", key);
		else if (key[11])
			ev->flow_key = v->s;
		else
			ev->flow = v->s;
	} else if (!strcmp(key, "stream_id")) {
		ev->sclass = tsdl_stream_class(ps, v, "stream_id");
	}
}

/* An event block's declaration, checked, into ps->evs. */
static void add_event(struct parser *ps, const struct ev_decl *ev)
{
	if (!ev->name || !ev->has_id) {
		ps->t.line = ev->line;
		tsdl_fail(ps, "event without %s", ev->name ? "id" : "name");
		return;
	}
	if ((ev->sclass < 0 ? 0 : ev->sclass) != ps->m->sclass) {
		ps->t.line = ev->line;
		tsdl_fail(ps, "event '%s' is of stream class %d, the stream of %u",
			  ev->name, ev->sclass < 0 ? 0 : ev->sclass, ps->m->sclass);
		return;
	}
	if (ps->nevs == ps->capevs) {
		unsigned cap = ps->capevs ? ps->capevs * 2 : 64;
		if (cap > (1u << 22)) {
			tsdl_fail(ps, "too many events");
			return;
		}
		struct ev_decl *e = realloc(ps->evs, cap * sizeof(*e));
		if (!e) {
			tsdl_fail(ps, "out of memory");
			return;
		}
		ps->evs = e;
		ps->capevs = cap;
	}
	ps->evs[ps->nevs++] = *ev;
}

static void parse_block(struct parser *ps, enum blk b)
{
	struct ev_decl ev = { .line = ps->t.line, .sclass = -1 };
	tsdl_next(ps);
	if (!tsdl_expect(ps, '{'))
		return;
	while (!ps->failed && !tsdl_is_punct(ps, '}')) {
		char key[128];
		size_t n = tsdl_dotted(ps, key, sizeof(key));
		if (!n) {
			char d[64];
			tsdl_fail(ps, "expected an attribute name, found %s",
				  tsdl_tok_desc(ps, d, sizeof(d)));
			return;
		}
		key[n] = 0;
		if (ps->t.kind == TK_ASSIGN_TYPE) {
			if (!block_type(ps, b, key, &ev))
				return;
			continue;
		}
		if (!tsdl_expect(ps, '='))
			return;
		struct value v;
		if (!tsdl_value(ps, &v))
			return;
		switch (b) {
		case B_TRACE:
			trace_attr(ps, key, &v);
			break;
		case B_ENV:
			if (!env_attr(ps, key, n, &v))
				return;
			break;
		case B_CLOCK:
			clock_attr(ps, key, &v);
			break;
		case B_STREAM:
			/* one stream class per sub-trace: 0 (format.md §3) or
			 * 1 (docs/compact.md) */
			if (!strcmp(key, "id"))
				ps->m->sclass = (uint8_t)tsdl_stream_class(ps, &v, "id");
			break;
		case B_EVENT:
			event_attr(ps, key, &v, &ev);
			break;
		}
		tsdl_expect(ps, ';');
	}
	tsdl_expect(ps, '}');
	tsdl_expect(ps, ';');
	if (ps->failed || b != B_EVENT)
		return;
	add_event(ps, &ev);
}

void tsdl_parse(struct parser *ps)
{
	tsdl_next(ps);
	while (!ps->failed && ps->t.kind != TK_EOF) {
		if (tsdl_is_id(ps, "typealias"))
			parse_typealias(ps);
		else if (tsdl_is_id(ps, "trace"))
			parse_block(ps, B_TRACE);
		else if (tsdl_is_id(ps, "env"))
			parse_block(ps, B_ENV);
		else if (tsdl_is_id(ps, "clock"))
			parse_block(ps, B_CLOCK);
		else if (tsdl_is_id(ps, "stream"))
			parse_block(ps, B_STREAM);
		else if (tsdl_is_id(ps, "event"))
			parse_block(ps, B_EVENT);
		else {
			char b[64];
			tsdl_fail(ps, "unexpected %s at top level (expected typealias, trace, "
				  "env, clock, stream or event)", tsdl_tok_desc(ps, b, sizeof(b)));
		}
	}
}
