/* SPDX-License-Identifier: MIT */
/* Internals of the DSL parser shared by its files: the parser's state and the rule checks it calls. */
#ifndef STRATA_GEN_PARSE_INT_H
#define STRATA_GEN_PARSE_INT_H

#include "lex.h"

struct parser {
	struct gen_ctx *ctx;
	struct gen_lexer lx;
	struct gen_token tok;
	struct gen_loc prev_end; /* end of the token before tok */
	struct gen_file *file;
};

static inline int gen_is_integer(unsigned type)
{
	return type >= STRATA_T_U8 && type <= STRATA_T_S64;
}

/* ---- the rules (parse_check.c): each reports what it finds (gen_error)
 * and lets the parser go on. ---- */

int gen_check_lower_name(struct parser *ps, const struct gen_token *t,
			 const char *what);
void gen_check_subsys_name(struct parser *ps, const struct gen_token *t);
int gen_check_field_name(struct parser *ps, const struct gen_token *t);
void gen_check_format(struct parser *ps, const struct gen_token *t,
		      struct gen_event *ev);
void gen_check_flow(struct parser *ps, struct gen_event *ev,
		    const struct gen_token *key, const struct gen_loc *at);
void gen_check_event_unique(struct parser *ps, struct gen_subsys *ss,
			    struct gen_event *ev);
void gen_check_subsys_unique(struct parser *ps, struct gen_subsys *ss);

#endif /* STRATA_GEN_PARSE_INT_H */
