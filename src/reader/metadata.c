/* SPDX-License-Identifier: MIT */
/* A focused TSDL (CTF 1.8) parser for the metadata strata writes (format.md §6). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "rd.h"

/*
 * The subset: typealias, trace, env, clock, stream and event blocks; types
 * integer, floating_point, enum, struct (with align), arrays and sequences,
 * encoding on byte integers, and variants where the reader decodes by hand
 * (stream class 1's event.header, docs/compact.md); plus the event
 * attributes strata_format and strata_kind. Unknown attributes inside a
 * known block are ignored, as babeltrace2 does; any other construct is an
 * error naming its line.
 * Everything allocated here goes to m->allocs and dies with rd_meta_fini().
 */

#define MAX_DEPTH 16
#define MAX_FIELDS 1024

enum tk { TK_EOF, TK_ID, TK_NUM, TK_STR, TK_PUNCT, TK_ASSIGN_TYPE, TK_DOTS };

struct tok {
	enum tk kind;
	int line;
	char punct;
	bool neg;
	uint64_t num;
	const char *s; /* TK_ID/TK_STR: text (STR unescaped into arena) */
	size_t len;
};

enum ty_kind { TY_INT, TY_FLOAT, TY_ENUM, TY_STRUCT, TY_STRING, TY_ARRAY, TY_SEQ };

struct member;

struct ty {
	enum ty_kind kind;
	unsigned bits, align; /* align in bits */
	bool sgn, be;
	int base, encoding;
	bool mapped;
	struct ty *container, *elem;
	struct strata_enum_mapping *maps;
	unsigned nmaps;
	struct member *members;
	unsigned nmembers;
	uint32_t len;
	char *lenname;
};

struct member {
	char *name;
	struct ty *type;
};

struct alias {
	char *name;
	struct ty *type;
};

struct ev_decl {
	char *name;
	uint64_t id;
	bool has_id;
	char *format;
	int kind;
	struct ty *fields;
	int line;
	int sclass; /* stream_id; -1: not said (0) */
};

struct parser {
	const char *p, *end;
	int line;
	struct tok t; /* current token */
	struct rd_meta *m;
	char *err;
	size_t errlen;
	bool failed;
	struct alias *aliases;
	unsigned naliases, capaliases;
	struct ev_decl *evs;
	unsigned nevs, capevs;
	int depth;
};

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

__attribute__((format(printf, 2, 3))) static void fail(struct parser *ps,
						       const char *fmt, ...)
{
	if (ps->failed)
		return;
	ps->failed = true;
	int n = snprintf(ps->err, ps->errlen, "line %d: ", ps->t.line);
	if (n < 0 || (size_t)n >= ps->errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ps->err + n, ps->errlen - n, fmt, ap);
	va_end(ap);
}

static void *palloc(struct parser *ps, size_t n)
{
	void *p = rd_meta_alloc(ps->m, n);
	if (!p)
		fail(ps, "out of memory");
	return p;
}

static char *pstrdup(struct parser *ps, const char *s, size_t n)
{
	char *d = rd_meta_strdup(ps->m, s, n);
	if (!d)
		fail(ps, "out of memory");
	return d;
}

/* ---- tokenizer ------------------------------------------------------------ */

static bool is_id0(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_idc(char c)
{
	return is_id0(c) || (c >= '0' && c <= '9');
}

static void next(struct parser *ps)
{
	const char *p = ps->p, *end = ps->end;
	if (ps->failed) {
		ps->t.kind = TK_EOF;
		return;
	}
	for (;;) {
		while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' ||
				   *p == '\r' || *p == '\f' || *p == '\v')) {
			if (*p == '\n')
				ps->line++;
			p++;
		}
		if (p + 1 < end && p[0] == '/' && p[1] == '*') {
			p += 2;
			while (p + 1 < end && !(p[0] == '*' && p[1] == '/')) {
				if (*p == '\n')
					ps->line++;
				p++;
			}
			if (p + 1 >= end) {
				ps->t.line = ps->line;
				fail(ps, "unterminated comment");
				ps->t.kind = TK_EOF;
				ps->p = end;
				return;
			}
			p += 2;
			continue;
		}
		if (p + 1 < end && p[0] == '/' && p[1] == '/') {
			while (p < end && *p != '\n')
				p++;
			continue;
		}
		break;
	}
	struct tok *t = &ps->t;
	memset(t, 0, sizeof(*t));
	t->line = ps->line;
	if (p >= end) {
		t->kind = TK_EOF;
		ps->p = p;
		return;
	}
	char c = *p;
	if (is_id0(c)) {
		const char *b = p;
		while (p < end && is_idc(*p))
			p++;
		t->kind = TK_ID;
		t->s = b;
		t->len = p - b;
	} else if ((c >= '0' && c <= '9') || (c == '-' && p + 1 < end && p[1] >= '0' && p[1] <= '9')) {
		if (c == '-') {
			t->neg = true;
			p++;
		}
		int base = 10;
		if (p + 1 < end && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
			base = 16;
			p += 2;
		} else if (*p == '0' && p + 1 < end && p[1] >= '0' && p[1] <= '7') {
			base = 8;
			p++;
		}
		uint64_t v = 0;
		bool any = false, ovf = false;
		while (p < end) {
			int d;
			char ch = *p;
			if (ch >= '0' && ch <= '9')
				d = ch - '0';
			else if (ch >= 'a' && ch <= 'f')
				d = ch - 'a' + 10;
			else if (ch >= 'A' && ch <= 'F')
				d = ch - 'A' + 10;
			else
				break;
			if (d >= base)
				break;
			if (v > (UINT64_MAX - d) / base)
				ovf = true;
			v = v * base + d;
			any = true;
			p++;
		}
		while (p < end && (*p == 'u' || *p == 'U' || *p == 'l' || *p == 'L'))
			p++;
		t->kind = TK_NUM;
		t->num = v;
		if (!any && base == 16)
			fail(ps, "malformed number");
		if (ovf)
			fail(ps, "number out of range");
	} else if (c == '"') {
		p++;
		char *buf = palloc(ps, (size_t)(end - p) < 65536 ? (size_t)(end - p) + 1 : 65537);
		size_t n = 0;
		while (buf && p < end && *p != '"') {
			char ch = *p++;
			if (ch == '\n') {
				fail(ps, "newline in string");
				break;
			}
			if (ch == '\\' && p < end) {
				ch = *p++;
				ch = ch == 'n' ? '\n' : ch == 't' ? '\t' : ch;
			}
			if (n >= 65536) {
				fail(ps, "string longer than 64 KiB");
				break;
			}
			buf[n++] = ch;
		}
		if (p >= end)
			fail(ps, "unterminated string");
		else
			p++;
		t->kind = TK_STR;
		t->s = buf ? buf : "";
		t->len = n;
	} else if (c == ':' && p + 1 < end && p[1] == '=') {
		t->kind = TK_ASSIGN_TYPE;
		p += 2;
	} else if (c == '.' && p + 2 < end && p[1] == '.' && p[2] == '.') {
		t->kind = TK_DOTS;
		p += 3;
	} else if (strchr("{}()[];=,.:<>*+", c)) {
		t->kind = TK_PUNCT;
		t->punct = c;
		p++;
	} else {
		fail(ps, "unexpected character 0x%02x", (unsigned char)c);
		t->kind = TK_EOF;
	}
	ps->p = p;
}

static bool is_punct(struct parser *ps, char c)
{
	return ps->t.kind == TK_PUNCT && ps->t.punct == c;
}

static bool is_id(struct parser *ps, const char *s)
{
	return ps->t.kind == TK_ID && ps->t.len == strlen(s) &&
	       !memcmp(ps->t.s, s, ps->t.len);
}

static const char *tok_desc(struct parser *ps, char *buf, size_t n)
{
	switch (ps->t.kind) {
	case TK_EOF:
		return "end of file";
	case TK_ID:
		snprintf(buf, n, "'%.*s'", (int)(ps->t.len > 40 ? 40 : ps->t.len), ps->t.s);
		return buf;
	case TK_NUM:
		return "a number";
	case TK_STR:
		return "a string";
	case TK_ASSIGN_TYPE:
		return "':='";
	case TK_DOTS:
		return "'...'";
	default:
		snprintf(buf, n, "'%c'", ps->t.punct);
		return buf;
	}
}

static bool expect(struct parser *ps, char c)
{
	if (!is_punct(ps, c)) {
		char b[64];
		fail(ps, "expected '%c', found %s", c, tok_desc(ps, b, sizeof(b)));
		return false;
	}
	next(ps);
	return true;
}

static char *take_id(struct parser *ps, const char *what)
{
	if (ps->t.kind != TK_ID) {
		char b[64];
		fail(ps, "expected %s, found %s", what, tok_desc(ps, b, sizeof(b)));
		return NULL;
	}
	char *s = pstrdup(ps, ps->t.s, ps->t.len);
	next(ps);
	return s;
}

/* ---- values --------------------------------------------------------------- */

struct value {
	enum tk kind; /* TK_NUM, TK_STR, TK_ID (dotted identifiers joined) */
	uint64_t num;
	bool neg;
	char *s;
};

static bool parse_value(struct parser *ps, struct value *v)
{
	memset(v, 0, sizeof(*v));
	if (ps->t.kind == TK_NUM) {
		v->kind = TK_NUM;
		v->num = ps->t.num;
		v->neg = ps->t.neg;
		next(ps);
		return true;
	}
	if (ps->t.kind == TK_STR) {
		v->kind = TK_STR;
		v->s = pstrdup(ps, ps->t.s, ps->t.len);
		next(ps);
		return v->s != NULL;
	}
	if (ps->t.kind == TK_ID) {
		char buf[256];
		size_t n = 0;
		for (;;) {
			if (ps->t.kind != TK_ID || n + ps->t.len + 2 > sizeof(buf)) {
				fail(ps, "malformed identifier value");
				return false;
			}
			memcpy(buf + n, ps->t.s, ps->t.len);
			n += ps->t.len;
			next(ps);
			if (!is_punct(ps, '.'))
				break;
			buf[n++] = '.';
			next(ps);
		}
		v->kind = TK_ID;
		v->s = pstrdup(ps, buf, n);
		return v->s != NULL;
	}
	char b[64];
	fail(ps, "expected a value, found %s", tok_desc(ps, b, sizeof(b)));
	return false;
}

static bool value_bool(struct parser *ps, const struct value *v)
{
	if (v->kind == TK_NUM)
		return v->num != 0;
	if (v->kind == TK_ID && (!strcmp(v->s, "true") || !strcmp(v->s, "TRUE")))
		return true;
	if (v->kind == TK_ID && (!strcmp(v->s, "false") || !strcmp(v->s, "FALSE")))
		return false;
	fail(ps, "expected a boolean");
	return false;
}

static uint64_t value_num(struct parser *ps, const struct value *v,
			  const char *what)
{
	if (v->kind != TK_NUM || v->neg) {
		fail(ps, "%s: expected a non-negative integer", what);
		return 0;
	}
	return v->num;
}

/* A stream class strata writes: 0 (format.md §3) or 1 (docs/compact.md). */
static int stream_class(struct parser *ps, const struct value *v, const char *what)
{
	uint64_t id = value_num(ps, v, what);
	if (id > 1) {
		fail(ps, "stream class %llu: strata writes 0 and 1",
		     (unsigned long long)id);
		return 0;
	}
	return (int)id;
}

static int64_t value_snum(struct parser *ps, const struct value *v,
			  const char *what)
{
	if (v->kind != TK_NUM || v->num > (uint64_t)INT64_MAX) {
		fail(ps, "%s: expected an integer", what);
		return 0;
	}
	return v->neg ? -(int64_t)v->num : (int64_t)v->num;
}

static bool byte_order_be(struct parser *ps, const struct value *v)
{
	if (v->kind == TK_ID && (!strcmp(v->s, "le") || !strcmp(v->s, "native")))
		return false;
	if (v->kind == TK_ID && (!strcmp(v->s, "be") || !strcmp(v->s, "network")))
		return true;
	fail(ps, "byte_order: expected le, be, native or network");
	return false;
}

/* ---- types ----------------------------------------------------------------- */

static struct ty *parse_type(struct parser *ps);

/* `{ attr = value; ... }` of integer, floating_point and string. */
static void parse_int_attrs(struct parser *ps, struct ty *t, bool is_float,
			    unsigned *exp_dig, unsigned *mant_dig)
{
	bool have_align = false;
	if (!expect(ps, '{'))
		return;
	while (!ps->failed && !is_punct(ps, '}')) {
		char *k = take_id(ps, "an attribute");
		if (!k || !expect(ps, '='))
			return;
		struct value v;
		if (!parse_value(ps, &v))
			return;
		if (!strcmp(k, "size") && !is_float) {
			t->bits = value_num(ps, &v, "size");
			if (t->bits == 0 || t->bits > 64)
				fail(ps, "integer size %u out of range 1..64", t->bits);
		} else if (!strcmp(k, "align")) {
			t->align = value_num(ps, &v, "align");
			if (t->align == 0 || (t->align & (t->align - 1)) || t->align > 4096)
				fail(ps, "align %u is not a power of two up to 4096", t->align);
			have_align = true;
		} else if (!strcmp(k, "signed") && !is_float) {
			t->sgn = value_bool(ps, &v);
		} else if (!strcmp(k, "byte_order")) {
			t->be = byte_order_be(ps, &v);
		} else if (!strcmp(k, "base") && !is_float) {
			if (v.kind == TK_NUM)
				t->base = value_num(ps, &v, "base");
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
				fail(ps, "base: expected 2, 8, 10 or 16");
		} else if (!strcmp(k, "encoding")) {
			if (v.kind == TK_ID && (!strcmp(v.s, "UTF8") || !strcmp(v.s, "ASCII")))
				t->encoding = 1;
			else if (v.kind == TK_ID && !strcmp(v.s, "none"))
				t->encoding = 0;
			else
				fail(ps, "encoding: expected UTF8, ASCII or none");
		} else if (!strcmp(k, "map") && !is_float) {
			t->mapped = true;
		} else if (!strcmp(k, "exp_dig") && is_float) {
			*exp_dig = value_num(ps, &v, "exp_dig");
		} else if (!strcmp(k, "mant_dig") && is_float) {
			*mant_dig = value_num(ps, &v, "mant_dig");
		} else {
			fail(ps, "unknown %s attribute '%s'",
			     is_float ? "floating_point" : "integer", k);
		}
		expect(ps, ';');
	}
	expect(ps, '}');
	if (!have_align)
		t->align = (t->bits % 8) ? 1 : 8;
}

static void parse_enum_body(struct parser *ps, struct ty *t)
{
	unsigned cap = 0;
	int64_t nextv = 0;
	if (!expect(ps, '{'))
		return;
	while (!ps->failed && !is_punct(ps, '}')) {
		struct strata_enum_mapping mp = { 0 };
		if (ps->t.kind == TK_STR || ps->t.kind == TK_ID) {
			mp.label = pstrdup(ps, ps->t.s, ps->t.len);
			next(ps);
		} else {
			fail(ps, "expected an enumerator label");
			return;
		}
		mp.lo = mp.hi = nextv;
		if (is_punct(ps, '=')) {
			next(ps);
			struct value v;
			if (!parse_value(ps, &v))
				return;
			mp.lo = mp.hi = value_snum(ps, &v, "enumerator");
			if (ps->t.kind == TK_DOTS) {
				next(ps);
				if (!parse_value(ps, &v))
					return;
				mp.hi = value_snum(ps, &v, "enumerator");
			}
		}
		nextv = mp.hi + 1;
		if (t->nmaps == cap) {
			cap = cap ? cap * 2 : 8;
			if (cap > 65536) {
				fail(ps, "too many enumerators");
				return;
			}
			struct strata_enum_mapping *n = palloc(ps, cap * sizeof(*n));
			if (!n)
				return;
			if (t->nmaps)
				memcpy(n, t->maps, t->nmaps * sizeof(*n));
			t->maps = n; /* the old block stays in the arena */
		}
		t->maps[t->nmaps++] = mp;
		if (!is_punct(ps, ','))
			break;
		next(ps);
	}
	expect(ps, '}');
}

static struct ty *apply_declarator(struct parser *ps, struct ty *base)
{
	/* `name[N]` or `name[len_field]`; nested dimensions are not in the subset */
	while (!ps->failed && is_punct(ps, '[')) {
		next(ps);
		struct ty *a = palloc(ps, sizeof(*a));
		if (!a)
			return NULL;
		a->elem = base;
		a->align = base->align;
		if (ps->t.kind == TK_NUM && !ps->t.neg) {
			if (ps->t.num > (1u << 24))
				fail(ps, "array length %llu too large",
				     (unsigned long long)ps->t.num);
			a->kind = TY_ARRAY;
			a->len = ps->t.num;
			next(ps);
		} else if (ps->t.kind == TK_ID) {
			a->kind = TY_SEQ;
			a->lenname = pstrdup(ps, ps->t.s, ps->t.len);
			next(ps);
			if (is_punct(ps, '.'))
				fail(ps, "sequence length must be a field of the same struct");
		} else {
			fail(ps, "expected an array length");
			return NULL;
		}
		expect(ps, ']');
		if (base->kind == TY_ARRAY || base->kind == TY_SEQ)
			fail(ps, "multi-dimensional arrays are not supported");
		base = a;
	}
	return base;
}

static void parse_struct_body(struct parser *ps, struct ty *t)
{
	unsigned cap = 0;
	if (!expect(ps, '{'))
		return;
	while (!ps->failed && !is_punct(ps, '}')) {
		struct ty *ft = parse_type(ps);
		if (!ft)
			return;
		char *name = take_id(ps, "a field name");
		if (!name)
			return;
		ft = apply_declarator(ps, ft);
		if (!ft)
			return;
		expect(ps, ';');
		if (t->nmembers == cap) {
			cap = cap ? cap * 2 : 8;
			if (cap > MAX_FIELDS) {
				fail(ps, "more than %d fields", MAX_FIELDS);
				return;
			}
			struct member *n = palloc(ps, cap * sizeof(*n));
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
	expect(ps, '}');
	t->align = 8;
	if (is_id(ps, "align")) {
		next(ps);
		expect(ps, '(');
		if (ps->t.kind != TK_NUM || ps->t.num == 0 || (ps->t.num & (ps->t.num - 1)) ||
		    ps->t.num > 4096)
			fail(ps, "struct align must be a power of two up to 4096");
		else
			t->align = ps->t.num;
		next(ps);
		expect(ps, ')');
	}
	for (unsigned i = 0; i < t->nmembers; i++)
		if (t->members[i].type->align > t->align)
			t->align = t->members[i].type->align;
}

static struct ty *parse_type(struct parser *ps)
{
	struct ty *t = NULL;
	if (ps->failed)
		return NULL;
	if (++ps->depth > MAX_DEPTH) {
		fail(ps, "types nested deeper than %d", MAX_DEPTH);
		goto out;
	}
	if (is_id(ps, "integer")) {
		next(ps);
		if (!(t = palloc(ps, sizeof(*t))))
			goto out;
		t->kind = TY_INT;
		t->base = 10;
		t->bits = 0;
		parse_int_attrs(ps, t, false, NULL, NULL);
		if (!ps->failed && t->bits == 0)
			fail(ps, "integer without size");
	} else if (is_id(ps, "floating_point")) {
		unsigned e = 0, mt = 0;
		next(ps);
		if (!(t = palloc(ps, sizeof(*t))))
			goto out;
		t->kind = TY_FLOAT;
		parse_int_attrs(ps, t, true, &e, &mt);
		t->bits = e + mt;
		if (!ps->failed && !((e == 8 && mt == 24) || (e == 11 && mt == 53)))
			fail(ps, "floating_point: only binary32 and binary64 are supported");
	} else if (is_id(ps, "enum")) {
		next(ps);
		if (ps->t.kind == TK_ID)
			next(ps); /* enum tag name */
		if (!(t = palloc(ps, sizeof(*t))))
			goto out;
		t->kind = TY_ENUM;
		if (!expect(ps, ':'))
			goto out;
		t->container = parse_type(ps);
		if (!t->container)
			goto out;
		if (t->container->kind != TY_INT) {
			fail(ps, "enum container must be an integer");
			goto out;
		}
		t->bits = t->container->bits;
		t->align = t->container->align;
		t->sgn = t->container->sgn;
		parse_enum_body(ps, t);
	} else if (is_id(ps, "struct")) {
		next(ps);
		if (ps->t.kind == TK_ID && !is_id(ps, "align"))
			next(ps); /* struct tag name */
		if (!(t = palloc(ps, sizeof(*t))))
			goto out;
		t->kind = TY_STRUCT;
		parse_struct_body(ps, t);
	} else if (is_id(ps, "variant")) {
		/* `variant [tag] <selector> { members }`: only in the event
		 * header of stream class 1, whose layout the reader knows
		 * (docs/compact.md); a variant in an event's fields is
		 * refused by build_class */
		next(ps);
		if (ps->t.kind == TK_ID)
			next(ps); /* variant tag name */
		if (!expect(ps, '<'))
			goto out;
		while (!ps->failed && ps->t.kind != TK_EOF && !is_punct(ps, '>'))
			next(ps);
		if (!expect(ps, '>') || !(t = palloc(ps, sizeof(*t))))
			goto out;
		t->kind = TY_STRUCT;
		parse_struct_body(ps, t);
		t->align = 8;
		t->nmembers = 0; /* alternatives, not members: never data */
	} else if (is_id(ps, "string")) {
		next(ps);
		if (!(t = palloc(ps, sizeof(*t))))
			goto out;
		t->kind = TY_STRING;
		t->align = 8;
		if (is_punct(ps, '{'))
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
			fail(ps, "unknown type %s", tok_desc(ps, b, sizeof(b)));
		} else {
			next(ps);
		}
	} else {
		char b[64];
		fail(ps, "expected a type, found %s", tok_desc(ps, b, sizeof(b)));
	}
out:
	ps->depth--;
	return ps->failed ? NULL : t;
}

/* ---- blocks ------------------------------------------------------------------ */

static void add_alias(struct parser *ps, char *name, struct ty *t)
{
	if (ps->naliases == ps->capaliases) {
		unsigned cap = ps->capaliases ? ps->capaliases * 2 : 16;
		struct alias *a = realloc(ps->aliases, cap * sizeof(*a));
		if (!a) {
			fail(ps, "out of memory");
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
	next(ps);
	struct ty *t = parse_type(ps);
	if (!t)
		return;
	if (ps->t.kind != TK_ASSIGN_TYPE) {
		fail(ps, "expected ':=' in typealias");
		return;
	}
	next(ps);
	char buf[128];
	size_t n = 0;
	while (ps->t.kind == TK_ID) {
		if (n + ps->t.len + 2 > sizeof(buf)) {
			fail(ps, "typealias name too long");
			return;
		}
		if (n)
			buf[n++] = ' ';
		memcpy(buf + n, ps->t.s, ps->t.len);
		n += ps->t.len;
		next(ps);
	}
	if (!n) {
		fail(ps, "typealias without a name");
		return;
	}
	char *name = pstrdup(ps, buf, n);
	if (name)
		add_alias(ps, name, t);
	expect(ps, ';');
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

enum blk { B_TRACE, B_ENV, B_CLOCK, B_STREAM, B_EVENT };

static void parse_block(struct parser *ps, enum blk b)
{
	struct ev_decl ev = { .line = ps->t.line, .sclass = -1 };
	next(ps);
	if (!expect(ps, '{'))
		return;
	while (!ps->failed && !is_punct(ps, '}')) {
		char key[128];
		size_t n = 0;
		for (;;) {
			if (ps->t.kind != TK_ID || n + ps->t.len + 2 > sizeof(key)) {
				char d[64];
				fail(ps, "expected an attribute name, found %s",
				     tok_desc(ps, d, sizeof(d)));
				return;
			}
			memcpy(key + n, ps->t.s, ps->t.len);
			n += ps->t.len;
			next(ps);
			if (!is_punct(ps, '.'))
				break;
			key[n++] = '.';
			next(ps);
		}
		key[n] = 0;
		if (ps->t.kind == TK_ASSIGN_TYPE) {
			next(ps);
			struct ty *t = parse_type(ps);
			if (!t)
				return;
			if (t->kind != TY_STRUCT)
				fail(ps, "%s must be a struct", key);
			if (b == B_EVENT && !strcmp(key, "fields"))
				ev.fields = t;
			else if (b == B_EVENT && !strcmp(key, "context"))
				fail(ps, "event context is not in strata's format");
			else if (b != B_TRACE && b != B_STREAM)
				fail(ps, "unexpected type assignment '%s'", key);
			/* packet.header, packet.context, event.header: format.md §2/§3
			 * fixes their layout; the reader decodes them by hand. */
			else if (b == B_STREAM && !strcmp(key, "event.context") && t->nmembers)
				fail(ps, "stream event.context is not in strata's format");
			expect(ps, ';');
			continue;
		}
		if (!expect(ps, '='))
			return;
		struct value v;
		if (!parse_value(ps, &v))
			return;
		switch (b) {
		case B_TRACE:
			if (!strcmp(key, "byte_order")) {
				if (byte_order_be(ps, &v))
					fail(ps, "big-endian traces are not strata traces");
			} else if (!strcmp(key, "major")) {
				if (value_num(ps, &v, "major") != 1)
					fail(ps, "CTF major version must be 1");
			} else if (!strcmp(key, "uuid") && v.kind == TK_STR) {
				if (!parse_uuid(v.s, ps->m->uuid))
					fail(ps, "malformed uuid");
				ps->m->has_uuid = true;
			}
			break;
		case B_ENV: {
			struct rd_meta *m = ps->m;
			struct rd_env *e = realloc(m->env, (m->nenv + 1) * sizeof(*e));
			if (!e) {
				fail(ps, "out of memory");
				return;
			}
			m->env = e;
			e[m->nenv].key = pstrdup(ps, key, n);
			if (v.kind == TK_NUM) {
				char num[32];
				snprintf(num, sizeof(num), "%s%llu", v.neg ? "-" : "",
					 (unsigned long long)v.num);
				e[m->nenv].value = pstrdup(ps, num, strlen(num));
			} else {
				e[m->nenv].value = v.s;
			}
			if (e[m->nenv].key && e[m->nenv].value)
				m->nenv++;
			break;
		}
		case B_CLOCK:
			if (!strcmp(key, "name"))
				ps->m->clock_name = v.s;
			else if (!strcmp(key, "description"))
				ps->m->clock_desc = v.s;
			else if (!strcmp(key, "uuid") && v.kind == TK_STR)
				/* the boot id: tells recordings apart (discover.c) */
				ps->m->has_clock_uuid = parse_uuid(v.s, ps->m->clock_uuid);
			else if (!strcmp(key, "freq")) {
				ps->m->freq = value_num(ps, &v, "freq");
				if (!ps->m->freq)
					fail(ps, "clock freq must not be 0");
			} else if (!strcmp(key, "offset_s"))
				ps->m->offset_s = value_snum(ps, &v, "offset_s");
			else if (!strcmp(key, "offset"))
				ps->m->offset = value_snum(ps, &v, "offset");
			break;
		case B_STREAM:
			/* one stream class per sub-trace: 0 (format.md §3) or
			 * 1 (docs/compact.md) */
			if (!strcmp(key, "id"))
				ps->m->sclass = (uint8_t)stream_class(ps, &v, "id");
			break;
		case B_EVENT:
			if (!strcmp(key, "name")) {
				ev.name = v.s;
			} else if (!strcmp(key, "id")) {
				ev.id = value_num(ps, &v, "id");
				ev.has_id = true;
				if (ev.id >= (1u << 22))
					fail(ps, "event id %llu does not fit 22 bits",
					     (unsigned long long)ev.id);
			} else if (!strcmp(key, "strata_format")) {
				if (v.kind != TK_STR)
					fail(ps, "strata_format must be a string");
				ev.format = v.s;
			} else if (!strcmp(key, "strata_kind")) {
				if (v.kind == TK_STR && !strcmp(v.s, "begin"))
					ev.kind = STRATA_KIND_BEGIN;
				else if (v.kind == TK_STR && !strcmp(v.s, "end"))
					ev.kind = STRATA_KIND_END;
				else if (v.kind == TK_STR && !strcmp(v.s, "point"))
					ev.kind = STRATA_KIND_POINT;
				else
					fail(ps, "strata_kind must be \"begin\", \"end\" or \"point\"");
			} else if (!strcmp(key, "stream_id")) {
				ev.sclass = stream_class(ps, &v, "stream_id");
			}
			break;
		}
		expect(ps, ';');
	}
	expect(ps, '}');
	expect(ps, ';');
	if (ps->failed || b != B_EVENT)
		return;
	if (!ev.name || !ev.has_id) {
		ps->t.line = ev.line;
		fail(ps, "event without %s", ev.name ? "id" : "name");
		return;
	}
	if ((ev.sclass < 0 ? 0 : ev.sclass) != ps->m->sclass) {
		ps->t.line = ev.line;
		fail(ps, "event '%s' is of stream class %d, the stream of %u",
		     ev.name, ev.sclass < 0 ? 0 : ev.sclass, ps->m->sclass);
		return;
	}
	if (ps->nevs == ps->capevs) {
		unsigned cap = ps->capevs ? ps->capevs * 2 : 64;
		if (cap > (1u << 22)) {
			fail(ps, "too many events");
			return;
		}
		struct ev_decl *e = realloc(ps->evs, cap * sizeof(*e));
		if (!e) {
			fail(ps, "out of memory");
			return;
		}
		ps->evs = e;
		ps->capevs = cap;
	}
	ps->evs[ps->nevs++] = ev;
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
	struct member **mbs = palloc(ps, (nm ? nm : 1) * sizeof(*mbs));
	if (!mbs)
		return -ENOMEM;
	for (unsigned i = 0; i < nm; i++)
		if (!compact || !is_gap(st->members[i].name))
			mbs[nf++] = &st->members[i];
	struct strata_field_class *fs = palloc(ps, (nf ? nf : 1) * sizeof(*fs));
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
		fail(ps, "event '%s': payload alignment above 64 bits", ev->name);
		return -EINVAL;
	}
	uint64_t off = 0;
	bool fixed = true;
	for (unsigned i = 0; i < nf; i++) {
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
			fail(ps, "event '%s', field '%s': type not in strata's format",
			     ev->name, mb->name);
			return -EINVAL;
		}
		f->bits = e->bits;
		f->is_signed = e->sgn;
		f->base = e->kind == TY_ENUM ? e->container->base : e->base ? e->base : 10;
		f->text = e->encoding && e->bits == 8;
		if (e->be || (e->bits != 8 && e->bits != 16 && e->bits != 32 && e->bits != 64) ||
		    e->align % 8 || e->align > 64) {
			fail(ps, "event '%s', field '%s': only little-endian 8/16/32/64-bit "
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
				fail(ps, "event '%s', field '%s': arrays of integers only",
				     ev->name, mb->name);
				return -EINVAL;
			}
			f->type = STRATA_FIELD_ARRAY;
			f->length = t->len;
		} else if (t->kind == TY_SEQ) {
			if (e->kind != TY_INT) {
				fail(ps, "event '%s', field '%s': sequences of integers only",
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
				fail(ps, "event '%s', field '%s': length '%s' is not an earlier "
					 "unsigned integer field", ev->name, mb->name, t->lenname);
				return -EINVAL;
			}
			if (f->text)
				fs[f->length_field].hidden = 1;
		}
		if (fixed) {
			off = (off + f->align - 1) & ~(uint64_t)(f->align - 1);
			f->offset = off;
			if (f->type == STRATA_FIELD_SEQUENCE) {
				fixed = false;
			} else {
				off += (uint64_t)f->bits / 8 *
				       (f->type == STRATA_FIELD_ARRAY ? f->length : 1);
				if (off > 8 * 1023) {
					fail(ps, "event '%s' is longer than 1023 words", ev->name);
					return -EINVAL;
				}
			}
		} else {
			f->offset = STRATA_OFFSET_VARIABLE;
		}
	}
	c->pub.fixed = fixed;
	c->pub.min_size = off;
	return rd_class_compile_format(c, ps->m);
}

static int cmp_class(const void *a, const void *b)
{
	const struct rd_class *x = *(struct rd_class *const *)a;
	const struct rd_class *y = *(struct rd_class *const *)b;
	return x->ctf < y->ctf ? -1 : x->ctf > y->ctf;
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
		fail(&ps, "NUL byte in metadata text");
		goto fail;
	}
	next(&ps);
	while (!ps.failed && ps.t.kind != TK_EOF) {
		if (is_id(&ps, "typealias"))
			parse_typealias(&ps);
		else if (is_id(&ps, "trace"))
			parse_block(&ps, B_TRACE);
		else if (is_id(&ps, "env"))
			parse_block(&ps, B_ENV);
		else if (is_id(&ps, "clock"))
			parse_block(&ps, B_CLOCK);
		else if (is_id(&ps, "stream"))
			parse_block(&ps, B_STREAM);
		else if (is_id(&ps, "event"))
			parse_block(&ps, B_EVENT);
		else {
			char b[64];
			fail(&ps, "unexpected %s at top level (expected typealias, trace, "
				  "env, clock, stream or event)", tok_desc(&ps, b, sizeof(b)));
		}
	}
	if (ps.failed)
		goto fail;
	m->classes = calloc(ps.nevs ? ps.nevs : 1, sizeof(*m->classes));
	if (!m->classes) {
		fail(&ps, "out of memory");
		goto fail;
	}
	for (unsigned i = 0; i < ps.nevs; i++) {
		struct rd_class *c = palloc(&ps, sizeof(*c));
		/* the producer puts format strings and kinds in env, keyed by
		 * id, where babeltrace2 accepts them silently (format.md §6) */
		struct ev_decl *ev = &ps.evs[i];
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
		if (!c || build_class(&ps, &ps.evs[i], c) < 0) {
			fail(&ps, "out of memory");
			goto fail;
		}
		/* stream class 1: a compact id 10-30 stands for the full id
		 * env names (docs/compact.md); the public id is the full one */
		c->ctf = (uint32_t)ev->id;
		snprintf(key, sizeof(key), "strata_id_%llu", (unsigned long long)ev->id);
		const char *full = m->sclass == 1 ? rd_meta_env(m, key) : NULL;
		if (full) {
			unsigned long long v = strtoull(full, NULL, 10);
			if (v >> 22 || !(v >> 16)) {
				ps.t.line = ev->line;
				fail(&ps, "%s = %s is not a user event id", key, full);
				goto fail;
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
			ps.t.line = 0;
			fail(&ps, "two events with id %u", m->classes[i]->ctf);
			goto fail;
		}
	free(ps.aliases);
	free(ps.evs);
	return 0;
fail:
	free(ps.aliases);
	free(ps.evs);
	rd_meta_fini(m);
	return ps.failed && strstr(err, "out of memory") ? -ENOMEM : -EINVAL;
}
