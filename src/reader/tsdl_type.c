/* SPDX-License-Identifier: MIT */
/* TSDL values and types: integer, floating_point, enum, struct,
 * variant, string, arrays and sequences, and type aliases in use. */
#include <stdio.h>

#include "tsdl.h"

#define MAX_DEPTH 16
#define MAX_FIELDS 1024

bool tsdl_value(struct parser *ps, struct value *v)
{
	memset(v, 0, sizeof(*v));
	if (ps->t.kind == TK_NUM) {
		v->kind = TK_NUM;
		v->num = ps->t.num;
		v->neg = ps->t.neg;
		tsdl_next(ps);
		return true;
	}
	if (ps->t.kind == TK_STR) {
		v->kind = TK_STR;
		v->s = tsdl_strdup(ps, ps->t.s, ps->t.len);
		tsdl_next(ps);
		return v->s != NULL;
	}
	if (ps->t.kind == TK_ID) {
		char buf[256];
		size_t n = tsdl_dotted(ps, buf, sizeof(buf));
		if (!n) {
			tsdl_fail(ps, "malformed identifier value");
			return false;
		}
		v->kind = TK_ID;
		v->s = tsdl_strdup(ps, buf, n);
		return v->s != NULL;
	}
	char b[64];
	tsdl_fail(ps, "expected a value, found %s", tsdl_tok_desc(ps, b, sizeof(b)));
	return false;
}

bool tsdl_value_bool(struct parser *ps, const struct value *v)
{
	if (v->kind == TK_NUM)
		return v->num != 0;
	if (v->kind == TK_ID && (!strcmp(v->s, "true") || !strcmp(v->s, "TRUE")))
		return true;
	if (v->kind == TK_ID && (!strcmp(v->s, "false") || !strcmp(v->s, "FALSE")))
		return false;
	tsdl_fail(ps, "expected a boolean");
	return false;
}

uint64_t tsdl_value_num(struct parser *ps, const struct value *v,
			const char *what)
{
	if (v->kind != TK_NUM || v->neg) {
		tsdl_fail(ps, "%s: expected a non-negative integer", what);
		return 0;
	}
	return v->num;
}

/* A stream class strata writes: 0 (format.md §3) or 1 (docs/compact.md). */
int tsdl_stream_class(struct parser *ps, const struct value *v, const char *what)
{
	uint64_t id = tsdl_value_num(ps, v, what);
	if (id > 1) {
		tsdl_fail(ps, "stream class %llu: strata writes 0 and 1",
			  (unsigned long long)id);
		return 0;
	}
	return (int)id;
}

int64_t tsdl_value_snum(struct parser *ps, const struct value *v,
			const char *what)
{
	if (v->kind != TK_NUM || v->num > (uint64_t)INT64_MAX) {
		tsdl_fail(ps, "%s: expected an integer", what);
		return 0;
	}
	return v->neg ? -(int64_t)v->num : (int64_t)v->num;
}

bool tsdl_byte_order_be(struct parser *ps, const struct value *v)
{
	if (v->kind == TK_ID && (!strcmp(v->s, "le") || !strcmp(v->s, "native")))
		return false;
	if (v->kind == TK_ID && (!strcmp(v->s, "be") || !strcmp(v->s, "network")))
		return true;
	tsdl_fail(ps, "byte_order: expected le, be, native or network");
	return false;
}

/* `{ attr = value; ... }` of integer, floating_point and string. */
static void parse_int_attrs(struct parser *ps, struct ty *t, bool is_float,
			    unsigned *exp_dig, unsigned *mant_dig)
{
	bool have_align = false;
	if (!tsdl_expect(ps, '{'))
		return;
	while (!ps->failed && !tsdl_is_punct(ps, '}')) {
		char *k = tsdl_take_id(ps, "an attribute");
		if (!k || !tsdl_expect(ps, '='))
			return;
		struct value v;
		if (!tsdl_value(ps, &v))
			return;
		if (!strcmp(k, "size") && !is_float) {
			t->bits = tsdl_value_num(ps, &v, "size");
			if (t->bits == 0 || t->bits > 64)
				tsdl_fail(ps, "integer size %u out of range 1..64", t->bits);
		} else if (!strcmp(k, "align")) {
			t->align = tsdl_value_num(ps, &v, "align");
			if (t->align == 0 || (t->align & (t->align - 1)) || t->align > 4096)
				tsdl_fail(ps, "align %u is not a power of two up to 4096", t->align);
			have_align = true;
		} else if (!strcmp(k, "signed") && !is_float) {
			t->sgn = tsdl_value_bool(ps, &v);
		} else if (!strcmp(k, "byte_order")) {
			t->be = tsdl_byte_order_be(ps, &v);
		} else if (!strcmp(k, "base") && !is_float) {
			if (v.kind == TK_NUM)
				t->base = tsdl_value_num(ps, &v, "base");
			else if (v.kind == TK_ID && (!strcmp(v.s, "hex") || !strcmp(v.s, "x") ||
						     !strcmp(v.s, "X") || !strcmp(v.s, "p") ||
						     !strcmp(v.s, "hexadecimal")))
				t->base = 16;
			else if (v.kind == TK_ID && (!strcmp(v.s, "dec") || !strcmp(v.s, "d") ||
						     !strcmp(v.s, "i") || !strcmp(v.s, "u") ||
						     !strcmp(v.s, "decimal")))
				t->base = 10;
			else if (v.kind == TK_ID && (!strcmp(v.s, "oct") || !strcmp(v.s, "o") ||
						     !strcmp(v.s, "octal")))
				t->base = 8;
			else if (v.kind == TK_ID && (!strcmp(v.s, "bin") || !strcmp(v.s, "b") ||
						     !strcmp(v.s, "binary")))
				t->base = 2;
			if (t->base != 2 && t->base != 8 && t->base != 10 && t->base != 16)
				tsdl_fail(ps, "base: expected 2, 8, 10 or 16");
		} else if (!strcmp(k, "encoding")) {
			if (v.kind == TK_ID && (!strcmp(v.s, "UTF8") || !strcmp(v.s, "ASCII")))
				t->encoding = 1;
			else if (v.kind == TK_ID && !strcmp(v.s, "none"))
				t->encoding = 0;
			else
				tsdl_fail(ps, "encoding: expected UTF8, ASCII or none");
		} else if (!strcmp(k, "map") && !is_float) {
			t->mapped = true;
		} else if (!strcmp(k, "exp_dig") && is_float) {
			*exp_dig = tsdl_value_num(ps, &v, "exp_dig");
		} else if (!strcmp(k, "mant_dig") && is_float) {
			*mant_dig = tsdl_value_num(ps, &v, "mant_dig");
		} else {
			tsdl_fail(ps, "unknown %s attribute '%s'",
				  is_float ? "floating_point" : "integer", k);
		}
		tsdl_expect(ps, ';');
	}
	tsdl_expect(ps, '}');
	if (!have_align)
		t->align = (t->bits % 8) ? 1 : 8;
}

static void parse_enum_body(struct parser *ps, struct ty *t)
{
	unsigned cap = 0;
	int64_t nextv = 0;
	if (!tsdl_expect(ps, '{'))
		return;
	while (!ps->failed && !tsdl_is_punct(ps, '}')) {
		struct strata_enum_mapping mp = { 0 };
		if (ps->t.kind == TK_STR || ps->t.kind == TK_ID) {
			mp.label = tsdl_strdup(ps, ps->t.s, ps->t.len);
			tsdl_next(ps);
		} else {
			tsdl_fail(ps, "expected an enumerator label");
			return;
		}
		mp.lo = mp.hi = nextv;
		if (tsdl_is_punct(ps, '=')) {
			tsdl_next(ps);
			struct value v;
			if (!tsdl_value(ps, &v))
				return;
			mp.lo = mp.hi = tsdl_value_snum(ps, &v, "enumerator");
			if (ps->t.kind == TK_DOTS) {
				tsdl_next(ps);
				if (!tsdl_value(ps, &v))
					return;
				mp.hi = tsdl_value_snum(ps, &v, "enumerator");
			}
		}
		nextv = mp.hi + 1;
		if (t->nmaps == cap) {
			cap = cap ? cap * 2 : 8;
			if (cap > 65536) {
				tsdl_fail(ps, "too many enumerators");
				return;
			}
			struct strata_enum_mapping *n = tsdl_alloc(ps, cap * sizeof(*n));
			if (!n)
				return;
			if (t->nmaps)
				memcpy(n, t->maps, t->nmaps * sizeof(*n));
			t->maps = n; /* the old block stays in the arena */
		}
		t->maps[t->nmaps++] = mp;
		if (!tsdl_is_punct(ps, ','))
			break;
		tsdl_next(ps);
	}
	tsdl_expect(ps, '}');
}

static struct ty *apply_declarator(struct parser *ps, struct ty *base)
{
	/* `name[N]` or `name[len_field]`; nested dimensions are not in the subset */
	while (!ps->failed && tsdl_is_punct(ps, '[')) {
		tsdl_next(ps);
		struct ty *a = tsdl_alloc(ps, sizeof(*a));
		if (!a)
			return NULL;
		a->elem = base;
		a->align = base->align;
		if (ps->t.kind == TK_NUM && !ps->t.neg) {
			if (ps->t.num > (1u << 24))
				tsdl_fail(ps, "array length %llu too large",
					  (unsigned long long)ps->t.num);
			a->kind = TY_ARRAY;
			a->len = ps->t.num;
			tsdl_next(ps);
		} else if (ps->t.kind == TK_ID) {
			a->kind = TY_SEQ;
			a->lenname = tsdl_strdup(ps, ps->t.s, ps->t.len);
			tsdl_next(ps);
			if (tsdl_is_punct(ps, '.'))
				tsdl_fail(ps, "sequence length must be a field of the same struct");
		} else {
			tsdl_fail(ps, "expected an array length");
			return NULL;
		}
		tsdl_expect(ps, ']');
		if (base->kind == TY_ARRAY || base->kind == TY_SEQ)
			tsdl_fail(ps, "multi-dimensional arrays are not supported");
		base = a;
	}
	return base;
}

static void parse_struct_body(struct parser *ps, struct ty *t)
{
	unsigned cap = 0;
	if (!tsdl_expect(ps, '{'))
		return;
	while (!ps->failed && !tsdl_is_punct(ps, '}')) {
		struct ty *ft = tsdl_type(ps);
		if (!ft)
			return;
		char *name = tsdl_take_id(ps, "a field name");
		if (!name)
			return;
		ft = apply_declarator(ps, ft);
		if (!ft)
			return;
		tsdl_expect(ps, ';');
		if (t->nmembers == cap) {
			cap = cap ? cap * 2 : 8;
			if (cap > MAX_FIELDS) {
				tsdl_fail(ps, "more than %d fields", MAX_FIELDS);
				return;
			}
			struct member *n = tsdl_alloc(ps, cap * sizeof(*n));
			if (!n)
				return;
			if (t->nmembers)
				memcpy(n, t->members, t->nmembers * sizeof(*n));
			t->members = n;
		}
		t->members[t->nmembers].name = name;
		t->members[t->nmembers].type = ft;
		t->nmembers++;
	}
	tsdl_expect(ps, '}');
	t->align = 8;
	if (tsdl_is_id(ps, "align")) {
		tsdl_next(ps);
		tsdl_expect(ps, '(');
			    if (ps->t.kind != TK_NUM || ps->t.num == 0 || (ps->t.num & (ps->t.num - 1)) ||
		    ps->t.num > 4096)
			tsdl_fail(ps, "struct align must be a power of two up to 4096");
		else
			t->align = ps->t.num;
		tsdl_next(ps);
		tsdl_expect(ps, ')');
	}
	for (unsigned i = 0; i < t->nmembers; i++)
		if (t->members[i].type->align > t->align)
			t->align = t->members[i].type->align;
}

struct ty *tsdl_type(struct parser *ps)
{
	struct ty *t = NULL;
	if (ps->failed)
		return NULL;
	if (++ps->depth > MAX_DEPTH) {
		tsdl_fail(ps, "types nested deeper than %d", MAX_DEPTH);
		goto out;
	}
	if (tsdl_is_id(ps, "integer")) {
		tsdl_next(ps);
		if (!(t = tsdl_alloc(ps, sizeof(*t))))
			goto out;
		t->kind = TY_INT;
		t->base = 10;
		t->bits = 0;
		parse_int_attrs(ps, t, false, NULL, NULL);
		if (!ps->failed && t->bits == 0)
			tsdl_fail(ps, "integer without size");
	} else if (tsdl_is_id(ps, "floating_point")) {
		unsigned e = 0, mt = 0;
		tsdl_next(ps);
		if (!(t = tsdl_alloc(ps, sizeof(*t))))
			goto out;
		t->kind = TY_FLOAT;
		parse_int_attrs(ps, t, true, &e, &mt);
		t->bits = e + mt;
		if (!ps->failed && !((e == 8 && mt == 24) || (e == 11 && mt == 53)))
			tsdl_fail(ps, "floating_point: only binary32 and binary64 are supported");
	} else if (tsdl_is_id(ps, "enum")) {
		tsdl_next(ps);
		if (ps->t.kind == TK_ID)
			tsdl_next(ps); /* enum tag name */
		if (!(t = tsdl_alloc(ps, sizeof(*t))))
			goto out;
		t->kind = TY_ENUM;
		if (!tsdl_expect(ps, ':'))
			goto out;
		t->container = tsdl_type(ps);
		if (!t->container)
			goto out;
		if (t->container->kind != TY_INT) {
			tsdl_fail(ps, "enum container must be an integer");
			goto out;
		}
		t->bits = t->container->bits;
		t->align = t->container->align;
		t->sgn = t->container->sgn;
		parse_enum_body(ps, t);
	} else if (tsdl_is_id(ps, "struct")) {
		tsdl_next(ps);
		if (ps->t.kind == TK_ID && !tsdl_is_id(ps, "align"))
			tsdl_next(ps); /* struct tag name */
		if (!(t = tsdl_alloc(ps, sizeof(*t))))
			goto out;
		t->kind = TY_STRUCT;
		parse_struct_body(ps, t);
	} else if (tsdl_is_id(ps, "variant")) {
		/* `variant [tag] <selector> { members }`: only in the event
		 * header of stream class 1, whose layout the reader knows
		 * (docs/compact.md); a variant in an event's fields is
		 * refused by build_class */
		tsdl_next(ps);
		if (ps->t.kind == TK_ID)
			tsdl_next(ps); /* variant tag name */
		if (!tsdl_expect(ps, '<'))
			goto out;
		while (!ps->failed && ps->t.kind != TK_EOF && !tsdl_is_punct(ps, '>'))
			tsdl_next(ps);
		if (!tsdl_expect(ps, '>') || !(t = tsdl_alloc(ps, sizeof(*t))))
			goto out;
		t->kind = TY_STRUCT;
		parse_struct_body(ps, t);
		t->align = 8;
		t->nmembers = 0; /* alternatives, not members: never data */
	} else if (tsdl_is_id(ps, "string")) {
		tsdl_next(ps);
		if (!(t = tsdl_alloc(ps, sizeof(*t))))
			goto out;
		t->kind = TY_STRING;
		t->align = 8;
		if (tsdl_is_punct(ps, '{'))
			parse_int_attrs(ps, t, false, NULL, NULL);
	} else if (ps->t.kind == TK_ID) {
		for (unsigned i = 0; i < ps->naliases; i++)
			if (strlen(ps->aliases[i].name) == ps->t.len &&
			    !memcmp(ps->aliases[i].name, ps->t.s, ps->t.len)) {
				t = ps->aliases[i].type;
				break;
			}
		if (!t) {
			char b[64];
			tsdl_fail(ps, "unknown type %s", tsdl_tok_desc(ps, b, sizeof(b)));
		} else {
			tsdl_next(ps);
		}
	} else {
		char b[64];
		tsdl_fail(ps, "expected a type, found %s", tsdl_tok_desc(ps, b, sizeof(b)));
	}
out:
	ps->depth--;
	return ps->failed ? NULL : t;
}
