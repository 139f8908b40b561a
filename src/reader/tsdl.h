/* SPDX-License-Identifier: MIT */
/* A focused TSDL (CTF 1.8) parser for the metadata strata writes
 * (format.md §6): its tokens, types and state, shared by its files
 * (tsdl_lex.c, tsdl_type.c, tsdl.c) and the metadata model that turns
 * what it parsed into event classes (metadata.c); not installed. Its
 * functions carry tsdl_, the parser's prefix inside the reader. */
#ifndef STRATA_RD_TSDL_H
#define STRATA_RD_TSDL_H

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
	char *flow, *flow_key; /* strata_flow and its key (format.md §6) */
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

struct value {
	enum tk kind; /* TK_NUM, TK_STR, TK_ID (dotted identifiers joined) */
	uint64_t num;
	bool neg;
	char *s;
};

enum blk { B_TRACE, B_ENV, B_CLOCK, B_STREAM, B_EVENT };

/* ---- tokens and errors (tsdl_lex.c) ------------------------------------ */

/* The first error, as "line N: problem", in ps->err; later ones are
 * dropped and the tokenizer returns TK_EOF from then on. */
void tsdl_fail(struct parser *ps, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* rd_meta_alloc/rd_meta_strdup, failing the parse when out of memory */
void *tsdl_alloc(struct parser *ps, size_t n);
char *tsdl_strdup(struct parser *ps, const char *s, size_t n);
/* Read the next token into ps->t. */
void tsdl_next(struct parser *ps);
bool tsdl_is_punct(struct parser *ps, char c);
bool tsdl_is_id(struct parser *ps, const char *s);
const char *tsdl_tok_desc(struct parser *ps, char *buf, size_t n);
bool tsdl_expect(struct parser *ps, char c);
char *tsdl_take_id(struct parser *ps, const char *what);
/* Identifiers joined by dots (`a.b.c`) from the current token into buf,
 * NUL not added; their length, or 0 when a piece is not an identifier or
 * buf is too short (nothing reported: the caller says what it expected). */
size_t tsdl_dotted(struct parser *ps, char *buf, size_t size);

/* ---- values and types (tsdl_type.c) ------------------------------------- */

bool tsdl_value(struct parser *ps, struct value *v);
bool tsdl_value_bool(struct parser *ps, const struct value *v);
uint64_t tsdl_value_num(struct parser *ps, const struct value *v, const char *what);
int tsdl_stream_class(struct parser *ps, const struct value *v, const char *what);
int64_t tsdl_value_snum(struct parser *ps, const struct value *v, const char *what);
bool tsdl_byte_order_be(struct parser *ps, const struct value *v);
struct ty *tsdl_type(struct parser *ps);

/* ---- blocks (tsdl.c) ----------------------------------------------------- */

/* The metadata text: its blocks into ps->m, its event blocks into
 * ps->evs; ps->failed and ps->err say where it stopped. */
void tsdl_parse(struct parser *ps);

#endif /* STRATA_RD_TSDL_H */
