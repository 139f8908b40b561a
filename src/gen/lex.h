/* SPDX-License-Identifier: MIT */
/* The tokenizer of the event DSL (docs/dsl.md, "Lexical rules"). */
#ifndef STRATA_GEN_LEX_H
#define STRATA_GEN_LEX_H

#include <stdint.h>

#include "gen.h"

enum gen_tok {
	TOK_EOF = 0,
	TOK_IDENT = 256,
	TOK_INT,
	TOK_STRING,
	/* punctuation is the character itself: { } ( ) [ ] , ; */
};

struct gen_token {
	int kind;              /* enum gen_tok or a punctuation character */
	struct gen_loc loc;
	const char *text;      /* identifier, or decoded string (NUL-free) */
	size_t len;            /* bytes in text */
	const unsigned *cols;  /* strings: source column of each decoded byte */
	uint64_t value;        /* integers */
	struct gen_loc end;    /* just past the token's last character */
};

struct gen_lexer {
	struct gen_ctx *ctx;
	const char *file; /* display name */
	const char *p, *end;
	unsigned line, col;
};

void gen_lex_init(struct gen_lexer *lx, struct gen_ctx *ctx, const char *file,
		  const char *data, size_t len);
/* Next token into *t. Returns 0, -EINVAL (error reported) or -ENOMEM. */
int gen_lex_next(struct gen_lexer *lx, struct gen_token *t);
/* "identifier 'x'", "';'", "end of file": for messages. */
const char *gen_tok_describe(const struct gen_token *t, char *buf, size_t size);

#endif /* STRATA_GEN_LEX_H */
