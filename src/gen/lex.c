/* SPDX-License-Identifier: MIT */
/* The tokenizer of the event DSL: identifiers, integers, strings, punctuation, three comment styles. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lex.h"

void gen_lex_init(struct gen_lexer *lx, struct gen_ctx *ctx, const char *file,
		  const char *data, size_t len)
{
	lx->ctx = ctx;
	lx->file = file;
	lx->p = data;
	lx->end = data + len;
	lx->line = 1;
	lx->col = 1;
}

static int peek(const struct gen_lexer *lx, size_t ahead)
{
	return (size_t)(lx->end - lx->p) > ahead ? (unsigned char)lx->p[ahead] : -1;
}

static void advance(struct gen_lexer *lx)
{
	if (*lx->p == '\n') {
		lx->line++;
		lx->col = 1;
	} else {
		lx->col++;
	}
	lx->p++;
}

static struct gen_loc here(const struct gen_lexer *lx)
{
	struct gen_loc l = { lx->file, lx->line, lx->col };

	return l;
}

static int is_alpha(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int hex_value(int c)
{
	if (is_digit(c))
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* A character as it should appear in a message. */
static const char *show_char(int c, char *buf, size_t size)
{
	if (c > 0x20 && c < 0x7f && c != '\'')
		snprintf(buf, size, "%c", c);
	else
		snprintf(buf, size, "\\x%02x", (unsigned)c);
	return buf;
}

/* Skip blanks and comments. Returns 0 or -EINVAL. */
static int skip_space(struct gen_lexer *lx)
{
	for (;;) {
		int c = peek(lx, 0);

		if (c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
		    c == '\f' || c == '\v') {
			advance(lx);
		} else if (c == '#' || (c == '/' && peek(lx, 1) == '/')) {
			while (peek(lx, 0) >= 0 && peek(lx, 0) != '\n')
				advance(lx);
		} else if (c == '/' && peek(lx, 1) == '*') {
			struct gen_loc start = here(lx);

			advance(lx);
			advance(lx);
			while (!(peek(lx, 0) == '*' && peek(lx, 1) == '/')) {
				if (peek(lx, 0) < 0) {
					gen_error(lx->ctx, &start,
						  "unterminated comment");
					return -EINVAL;
				}
				advance(lx);
			}
			advance(lx);
			advance(lx);
		} else {
			return 0;
		}
	}
}

static int lex_number(struct gen_lexer *lx, struct gen_token *t)
{
	int base = 10, digits = 0, c;
	uint64_t v = 0;
	int big = 0;

	if (peek(lx, 0) == '0' && (peek(lx, 1) == 'x' || peek(lx, 1) == 'X')) {
		base = 16;
		advance(lx);
		advance(lx);
	} else if (peek(lx, 0) == '0' && is_digit(peek(lx, 1))) {
		gen_error(lx->ctx, &t->loc,
			  "leading zeros are not allowed (octal is not supported)");
		return -EINVAL;
	}
	while ((c = peek(lx, 0)) >= 0 &&
	       (base == 16 ? hex_value(c) >= 0 : is_digit(c))) {
		v = v * (unsigned)base + (unsigned)hex_value(c);
		if (v > UINT32_MAX) {
			big = 1;
			v = UINT32_MAX;
		}
		digits++;
		advance(lx);
	}
	if (!digits || (c >= 0 && (is_alpha(c) || is_digit(c)))) {
		gen_error(lx->ctx, &t->loc, "invalid number");
		return -EINVAL;
	}
	if (big) {
		gen_error(lx->ctx, &t->loc, "number too large");
		return -EINVAL;
	}
	t->kind = TOK_INT;
	t->value = v;
	return 0;
}

static int lex_string(struct gen_lexer *lx, struct gen_token *t)
{
	const char *p;
	size_t max = 0, n = 0;
	char *text;
	unsigned *cols;
	char cb[8];

	/* The decoded text is never longer than the source. */
	for (p = lx->p + 1; p < lx->end && *p != '"' && *p != '\n'; p++) {
		if (*p == '\\' && p + 1 < lx->end)
			p++;
		max++;
	}
	text = gen_alloc(lx->ctx, max + 1);
	cols = gen_alloc(lx->ctx, (max + 1) * sizeof(*cols));
	if (!text || !cols)
		return -ENOMEM;
	advance(lx); /* the opening quote */
	for (;;) {
		int c = peek(lx, 0);
		unsigned col = lx->col;

		if (c < 0 || c == '\n') {
			gen_error(lx->ctx, &t->loc,
				  "missing terminating '\"' character");
			return -EINVAL;
		}
		if (c == '"') {
			advance(lx);
			break;
		}
		if (c == '\\') {
			advance(lx);
			c = peek(lx, 0);
			switch (c) {
			case '\\':
			case '"':
				break;
			case 'n':
				c = '\n';
				break;
			case 't':
				c = '\t';
				break;
			default: {
				struct gen_loc l = { lx->file, lx->line, col };

				gen_error(lx->ctx, &l,
					  "unknown escape sequence '\\%s' (use \\\\, \\\", \\n or \\t)",
					  c < 0 ? "" : show_char(c, cb, sizeof(cb)));
				return -EINVAL;
			}
			}
		} else if (c < 0x20 || c == 0x7f) {
			struct gen_loc l = here(lx);

			gen_error(lx->ctx, &l, "control character '%s' in string",
				  show_char(c, cb, sizeof(cb)));
			return -EINVAL;
		}
		advance(lx);
		text[n] = (char)c;
		cols[n] = col;
		n++;
	}
	if (n > GEN_MAX_STRING) {
		gen_error(lx->ctx, &t->loc, "string longer than %d bytes",
			  GEN_MAX_STRING);
		return -EINVAL;
	}
	t->kind = TOK_STRING;
	t->text = text;
	t->len = n;
	t->cols = cols;
	return 0;
}

static int lex_token(struct gen_lexer *lx, struct gen_token *t);

int gen_lex_next(struct gen_lexer *lx, struct gen_token *t)
{
	int ret = lex_token(lx, t);

	t->end = here(lx);
	return ret;
}

static int lex_token(struct gen_lexer *lx, struct gen_token *t)
{
	int c, ret;
	char cb[8];

	memset(t, 0, sizeof(*t));
	ret = skip_space(lx);
	if (ret)
		return ret;
	t->loc = here(lx);
	c = peek(lx, 0);
	if (c < 0) {
		t->kind = TOK_EOF;
		return 0;
	}
	if (is_alpha(c)) {
		const char *start = lx->p;

		while (peek(lx, 0) >= 0 && (is_alpha(peek(lx, 0)) || is_digit(peek(lx, 0))))
			advance(lx);
		t->kind = TOK_IDENT;
		t->len = (size_t)(lx->p - start);
		t->text = gen_strndup(lx->ctx, start, t->len);
		return t->text ? 0 : -ENOMEM;
	}
	if (is_digit(c))
		return lex_number(lx, t);
	if (c == '"')
		return lex_string(lx, t);
	if (c && strchr("{}()[],;", c)) {
		t->kind = c;
		advance(lx);
		return 0;
	}
	gen_error(lx->ctx, &t->loc, "stray '%s' in input", show_char(c, cb, sizeof(cb)));
	return -EINVAL;
}

const char *gen_tok_describe(const struct gen_token *t, char *buf, size_t size)
{
	switch (t->kind) {
	case TOK_EOF:
		return "end of file";
	case TOK_IDENT:
		snprintf(buf, size, "'%.*s'", t->len > 32 ? 32 : (int)t->len, t->text);
		return buf;
	case TOK_INT:
		snprintf(buf, size, "number %llu", (unsigned long long)t->value);
		return buf;
	case TOK_STRING:
		return "string";
	default:
		snprintf(buf, size, "'%c'", t->kind);
		return buf;
	}
}
