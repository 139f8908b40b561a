/* SPDX-License-Identifier: MIT */
/* The TSDL tokenizer, and the parser's error and allocation helpers. */
#include <stdarg.h>
#include <stdio.h>

#include "tsdl.h"

void tsdl_fail(struct parser *ps, const char *fmt, ...)
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

void *tsdl_alloc(struct parser *ps, size_t n)
{
	void *p = rd_meta_alloc(ps->m, n);
	if (!p)
		tsdl_fail(ps, "out of memory");
	return p;
}

char *tsdl_strdup(struct parser *ps, const char *s, size_t n)
{
	char *d = rd_meta_strdup(ps->m, s, n);
	if (!d)
		tsdl_fail(ps, "out of memory");
	return d;
}

static bool is_id0(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_idc(char c)
{
	return is_id0(c) || (c >= '0' && c <= '9');
}

/* Past white space and comments from p; NULL, the parse failed, at an
 * unterminated comment. */
static const char *skip_blank(struct parser *ps, const char *p)
{
	const char *end = ps->end;
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
				tsdl_fail(ps, "unterminated comment");
				return NULL;
			}
			p += 2;
			continue;
		}
		if (p + 1 < end && p[0] == '/' && p[1] == '/') {
			while (p < end && *p != '\n')
				p++;
			continue;
		}
		return p;
	}
}

/* The number at p (decimal, 0x hex or 0 octal, an optional '-', C's
 * integer suffixes) into t; returns where it ends. */
static const char *lex_number(struct parser *ps, const char *p, struct tok *t)
{
	const char *end = ps->end;
	if (*p == '-') {
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
		tsdl_fail(ps, "malformed number");
	if (ovf)
		tsdl_fail(ps, "number out of range");
	return p;
}

/* The string whose opening quote is at p, unescaped into the arena, into
 * t; returns where it ends. */
static const char *lex_string(struct parser *ps, const char *p, struct tok *t)
{
	const char *end = ps->end;
	p++;
	char *buf = tsdl_alloc(ps, (size_t)(end - p) < 65536 ? (size_t)(end - p) + 1 : 65537);
	size_t n = 0;
	while (buf && p < end && *p != '"') {
		char ch = *p++;
		if (ch == '\n') {
			tsdl_fail(ps, "newline in string");
			break;
		}
		if (ch == '\\' && p < end) {
			ch = *p++;
			ch = ch == 'n' ? '\n' : ch == 't' ? '\t' : ch;
		}
		if (n >= 65536) {
			tsdl_fail(ps, "string longer than 64 KiB");
			break;
		}
		buf[n++] = ch;
	}
	if (p >= end)
		tsdl_fail(ps, "unterminated string");
	else
		p++;
	t->kind = TK_STR;
	t->s = buf ? buf : "";
	t->len = n;
	return p;
}

void tsdl_next(struct parser *ps)
{
	const char *p = ps->p, *end = ps->end;
	if (ps->failed) {
		ps->t.kind = TK_EOF;
		return;
	}
	p = skip_blank(ps, p);
	if (!p) {
		ps->t.kind = TK_EOF;
		ps->p = end;
		return;
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
		p = lex_number(ps, p, t);
	} else if (c == '"') {
		p = lex_string(ps, p, t);
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
		tsdl_fail(ps, "unexpected character 0x%02x", (unsigned char)c);
		t->kind = TK_EOF;
	}
	ps->p = p;
}

bool tsdl_is_punct(struct parser *ps, char c)
{
	return ps->t.kind == TK_PUNCT && ps->t.punct == c;
}

bool tsdl_is_id(struct parser *ps, const char *s)
{
	return ps->t.kind == TK_ID && ps->t.len == strlen(s) &&
	       !memcmp(ps->t.s, s, ps->t.len);
}

const char *tsdl_tok_desc(struct parser *ps, char *buf, size_t n)
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

bool tsdl_expect(struct parser *ps, char c)
{
	if (!tsdl_is_punct(ps, c)) {
		char b[64];
		tsdl_fail(ps, "expected '%c', found %s", c, tsdl_tok_desc(ps, b, sizeof(b)));
		return false;
	}
	tsdl_next(ps);
	return true;
}

char *tsdl_take_id(struct parser *ps, const char *what)
{
	if (ps->t.kind != TK_ID) {
		char b[64];
		tsdl_fail(ps, "expected %s, found %s", what, tsdl_tok_desc(ps, b, sizeof(b)));
		return NULL;
	}
	char *s = tsdl_strdup(ps, ps->t.s, ps->t.len);
	tsdl_next(ps);
	return s;
}

size_t tsdl_dotted(struct parser *ps, char *buf, size_t size)
{
	size_t n = 0;
	for (;;) {
		if (ps->t.kind != TK_ID || n + ps->t.len + 2 > size)
			return 0;
		memcpy(buf + n, ps->t.s, ps->t.len);
		n += ps->t.len;
		tsdl_next(ps);
		if (!tsdl_is_punct(ps, '.'))
			return n;
		buf[n++] = '.';
		tsdl_next(ps);
	}
}
