/* SPDX-License-Identifier: MIT */
/* The metadata model: parsed TSDL (format.md §6, tsdl.h) made into event
 * classes, their ids, lengths and decode programs; its allocations. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "tsdl.h"

void *rd_meta_alloc(struct rd_meta *m, size_t n)
{
	if (m->nallocs == m->capallocs) {
		size_t cap = m->capallocs ? m->capallocs * 2 : 64;
		void **a = realloc(m->allocs, cap * sizeof(*a));
		if (!a)
			return NULL;
		m->allocs = a;
		m->capallocs = cap;
	}
	void *p = calloc(1, n ? n : 1);
	if (p)
		m->allocs[m->nallocs++] = p;
	return p;
}

char *rd_meta_strdup(struct rd_meta *m, const char *s, size_t n)
{
	char *d = rd_meta_alloc(m, n + 1);
	if (d)
		memcpy(d, s, n);
	return d;
}

void rd_meta_fini(struct rd_meta *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nallocs; i++)
		free(m->allocs[i]);
	free(m->allocs);
	free(m->classes);
	free(m->env);
	memset(m, 0, sizeof(*m));
}

const char *rd_meta_env(const struct rd_meta *m, const char *key)
{
	for (unsigned i = 0; i < m->nenv; i++)
		if (!strcmp(m->env[i].key, key))
			return m->env[i].value;
	return NULL;
}

/* ---- event classes -------------------------------------------------------- */

static const char *strip_(const char *s)
{
	return s[0] == '_' ? s + 1 : s; /* CTF 1.8 §4.1.8: '_' escapes names */
}

/* A gap that stream class 1 declares as a field (docs/compact.md): `_padK`. */
static bool is_gap(const char *name)
{
	if (strncmp(name, "_pad", 4) || !name[4])
		return false;
	for (const char *p = name + 4; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	return true;
}

/* Field i of event ev (member mbs[i]; fields 0 to i - 1 made already,
 * for a sequence's length) into fs[i]: its type, size and alignment; its
 * offset is the caller's. */
static int build_field(struct parser *ps, const struct ev_decl *ev,
		       struct member *const *mbs, struct strata_field_class *fs,
		       unsigned i, bool compact)
{
	struct member *mb = mbs[i];
	struct ty *t = mb->type, *e = t;
	struct strata_field_class *f = &fs[i];
	f->name = strip_(mb->name);
	f->length_field = -1;
	if (t->kind == TY_ARRAY || t->kind == TY_SEQ)
		e = t->elem;
	switch (e->kind) {
	case TY_INT:
		f->type = STRATA_FIELD_INT;
		break;
	case TY_ENUM:
		f->type = STRATA_FIELD_ENUM;
		f->mappings = e->maps;
		f->nmappings = e->nmaps;
		break;
	case TY_FLOAT:
		f->type = STRATA_FIELD_FLOAT;
		break;
	default:
		tsdl_fail(ps, "event '%s', field '%s': type not in strata's format",
			  ev->name, mb->name);
		return -EINVAL;
	}
	f->bits = e->bits;
	f->is_signed = e->sgn;
	f->base = e->kind == TY_ENUM ? e->container->base : e->base ? e->base : 10;
	f->text = e->encoding && e->bits == 8;
	if (e->be || (e->bits != 8 && e->bits != 16 && e->bits != 32 && e->bits != 64) ||
	    e->align % 8 || e->align > 64) {
		tsdl_fail(ps, "event '%s', field '%s': only little-endian 8/16/32/64-bit "
			  "byte-aligned fields are supported", ev->name, mb->name);
		return -EINVAL;
	}
	f->align = e->align / 8;
	/* stream class 1 declares 64-bit fields 4-byte aligned in the
	 * packet; in the payload they stay at 8 (docs/compact.md) */
	if (compact && e->bits == 64 && e->align == 32)
		f->align = 8;
	if (t->kind == TY_ARRAY) {
		if (e->kind != TY_INT) {
			tsdl_fail(ps, "event '%s', field '%s': arrays of integers only",
				  ev->name, mb->name);
			return -EINVAL;
		}
		f->type = STRATA_FIELD_ARRAY;
		f->length = t->len;
	} else if (t->kind == TY_SEQ) {
		if (e->kind != TY_INT) {
			tsdl_fail(ps, "event '%s', field '%s': sequences of integers only",
				  ev->name, mb->name);
			return -EINVAL;
		}
		f->type = STRATA_FIELD_SEQUENCE;
		for (unsigned j = 0; j < i; j++)
			if (!strcmp(mbs[j]->name, t->lenname) ||
			    !strcmp(fs[j].name, strip_(t->lenname)))
				f->length_field = j;
		if (f->length_field < 0 ||
		    fs[f->length_field].type != STRATA_FIELD_INT ||
		    fs[f->length_field].is_signed) {
			tsdl_fail(ps, "event '%s', field '%s': length '%s' is not an earlier "
				  "unsigned integer field", ev->name, mb->name, t->lenname);
			return -EINVAL;
		}
		if (f->text)
			fs[f->length_field].hidden = 1;
	}
	return 0;
}

/* The class's flow (format.md §6): "send" or "receive" keyed by one of its
 * integer fields. Anything else is no flow: the events still read, only
 * without arrows, as babeltrace2 reads them. */
static void set_flow(struct rd_class *c, const struct ev_decl *ev)
{
	int k = ev->flow_key ? strata_event_class_field(&c->pub, ev->flow_key) : -1;
	const struct strata_field_class *f = k >= 0 ? &c->pub.fields[k] : NULL;
	c->flow = STRATA_FLOW_NONE;
	c->flow_key = -1;
	if (!ev->flow || !f || (f->type != STRATA_FIELD_INT && f->type != STRATA_FIELD_ENUM))
		return;
	if (!strcmp(ev->flow, "send"))
		c->flow = STRATA_FLOW_SEND;
	else if (!strcmp(ev->flow, "receive"))
		c->flow = STRATA_FLOW_RECEIVE;
	if (c->flow)
		c->flow_key = k;
}

/* Event class c from declaration ev: its fields (build_field), their
 * offsets as long as they are fixed, and its decode programs (event.c). */
static int build_class(struct parser *ps, const struct ev_decl *ev,
		       struct rd_class *c)
{
	struct ty *st = ev->fields;
	unsigned nm = st ? st->nmembers : 0, nf = 0;
	const bool compact = ps->m->sclass == 1;
	/* Word padding that the writer declares only for babeltrace2's sake
	 * (format.md §6): a trailing `_pad`, or `_length` (the header's length
	 * bits) as the only member of an event without fields; in stream
	 * class 1 also the gaps of the payload's own 8-byte alignment, which
	 * the offsets below reproduce. Not data. */
	if (nm && !strcmp(st->members[nm - 1].name, "_pad"))
		nm--;
	if (nm == 1 && !strcmp(st->members[0].name, "_length"))
		nm = 0;
	struct member **mbs = tsdl_alloc(ps, (nm ? nm : 1) * sizeof(*mbs));
	if (!mbs)
		return -ENOMEM;
	for (unsigned i = 0; i < nm; i++)
		if (!compact || !is_gap(st->members[i].name))
			mbs[nf++] = &st->members[i];
	struct strata_field_class *fs = tsdl_alloc(ps, (nf ? nf : 1) * sizeof(*fs));
	if (!fs)
		return -ENOMEM;
	ps->t.line = ev->line;
	c->pub.name = ev->name;
	c->pub.id = (uint32_t)ev->id;
	c->pub.format = ev->format;
	c->pub.kind = ev->kind;
	c->pub.fields = fs;
	c->pub.nfields = nf;
	if (st && st->align > 64) {
		tsdl_fail(ps, "event '%s': payload alignment above 64 bits", ev->name);
		return -EINVAL;
	}
	uint64_t off = 0;
	bool fixed = true;
	for (unsigned i = 0; i < nf; i++) {
		struct strata_field_class *f = &fs[i];
		int rc = build_field(ps, ev, mbs, fs, i, compact);
		if (rc < 0)
			return rc;
		if (fixed) {
			off = (off + f->align - 1) & ~(uint64_t)(f->align - 1);
			f->offset = off;
			if (f->type == STRATA_FIELD_SEQUENCE) {
				fixed = false;
			} else {
				off += (uint64_t)f->bits / 8 *
				       (f->type == STRATA_FIELD_ARRAY ? f->length : 1);
				if (off > 8 * 1023) {
					tsdl_fail(ps, "event '%s' is longer than 1023 words", ev->name);
					return -EINVAL;
				}
			}
		} else {
			f->offset = STRATA_OFFSET_VARIABLE;
		}
	}
	c->pub.fixed = fixed;
	c->pub.min_size = off;
	set_flow(c, ev);
	return rd_class_compile_format(c, ps->m);
}

static int cmp_class(const void *a, const void *b)
{
	const struct rd_class *x = *(struct rd_class *const *)a;
	const struct rd_class *y = *(struct rd_class *const *)b;
	return x->ctf < y->ctf ? -1 : x->ctf > y->ctf;
}

/* The event class of each declaration, with what the producer put in env
 * for it, into m->classes sorted by id; -1 when the parse failed. */
static int make_classes(struct parser *ps)
{
	struct rd_meta *m = ps->m;
	m->classes = calloc(ps->nevs ? ps->nevs : 1, sizeof(*m->classes));
	if (!m->classes) {
		tsdl_fail(ps, "out of memory");
		return -1;
	}
	for (unsigned i = 0; i < ps->nevs; i++) {
		struct rd_class *c = tsdl_alloc(ps, sizeof(*c));
		/* the producer puts format strings and kinds in env, keyed by
		 * id, where babeltrace2 accepts them silently (format.md §6) */
		struct ev_decl *ev = &ps->evs[i];
		char key[64];
		snprintf(key, sizeof(key), "strata_format_%llu", (unsigned long long)ev->id);
		if (!ev->format)
			ev->format = (char *)rd_meta_env(m, key);
		snprintf(key, sizeof(key), "strata_kind_%llu", (unsigned long long)ev->id);
		const char *kind = rd_meta_env(m, key);
		if (kind && !strcmp(kind, "begin"))
			ev->kind = STRATA_KIND_BEGIN;
		else if (kind && !strcmp(kind, "end"))
			ev->kind = STRATA_KIND_END;
		snprintf(key, sizeof(key), "strata_flow_%llu", (unsigned long long)ev->id);
		if (!ev->flow)
			ev->flow = (char *)rd_meta_env(m, key);
		snprintf(key, sizeof(key), "strata_flow_key_%llu", (unsigned long long)ev->id);
		if (!ev->flow_key)
			ev->flow_key = (char *)rd_meta_env(m, key);
		if (!c || build_class(ps, &ps->evs[i], c) < 0) {
			tsdl_fail(ps, "out of memory");
			return -1;
		}
		/* stream class 1: a compact id 10-30 stands for the full id
		 * env names (docs/compact.md); the public id is the full one */
		c->ctf = (uint32_t)ev->id;
		snprintf(key, sizeof(key), "strata_id_%llu", (unsigned long long)ev->id);
		const char *full = m->sclass == 1 ? rd_meta_env(m, key) : NULL;
		if (full) {
			unsigned long long v = strtoull(full, NULL, 10);
			if (v >> 22 || !(v >> 16)) {
				ps->t.line = ev->line;
				tsdl_fail(ps, "%s = %s is not a user event id", key, full);
				return -1;
			}
			c->pub.id = (uint32_t)v;
		}
		/* a compact event's length: header + payload (whole words) */
		if (c->pub.fixed)
			c->clen = 4 + ((c->pub.min_size + 7) & ~7u);
		m->classes[m->nclasses++] = c;
	}
	qsort(m->classes, m->nclasses, sizeof(*m->classes), cmp_class);
	for (unsigned i = 1; i < m->nclasses; i++)
		if (m->classes[i]->ctf == m->classes[i - 1]->ctf) {
			ps->t.line = 0;
			tsdl_fail(ps, "two events with id %u", m->classes[i]->ctf);
			return -1;
		}
	return 0;
}

int rd_meta_parse(const char *text, size_t len, struct rd_meta *m, char *err,
		  size_t errlen)
{
	struct parser ps = { .p = text, .end = text + len, .line = 1, .m = m,
			     .err = err, .errlen = errlen };
	memset(m, 0, sizeof(*m));
	m->freq = 1000000000;
	if (errlen)
		err[0] = 0;
	if (len >= 4 && rd_le32((const uint8_t *)text) == 0x75D11D57u) {
		snprintf(err, errlen, "line 1: packetized metadata is not strata's format");
		return -EINVAL;
	}
	if (memchr(text, 0, len)) {
		ps.line = 1;
		for (const char *p = text; *p; p++)
			ps.line += *p == '\n';
		ps.t.line = ps.line;
		tsdl_fail(&ps, "NUL byte in metadata text");
		goto fail;
	}
	tsdl_parse(&ps);
	if (ps.failed || make_classes(&ps) < 0)
		goto fail;
	free(ps.aliases);
	free(ps.evs);
	return 0;
fail:
	free(ps.aliases);
	free(ps.evs);
	rd_meta_fini(m);
	return ps.failed && strstr(err, "out of memory") ? -ENOMEM : -EINVAL;
}
