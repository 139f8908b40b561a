/* SPDX-License-Identifier: MIT */
/* The DSL's rules beyond the grammar: names, format strings and uniqueness (docs/dsl.md, "Rules"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lex.h"
#include "parse_int.h"

/* ---- names ------------------------------------------------------------- */

/* Field names become C and C++ parameter names: no keywords, no macros
 * the system headers define. */
static const char *const reserved_fields[] = {
	"auto", "break", "case", "char", "const", "continue", "default", "do",
	"double", "else", "enum", "extern", "float", "for", "goto", "if",
	"inline", "int", "long", "register", "restrict", "return", "short",
	"signed", "sizeof", "static", "struct", "switch", "typedef", "union",
	"unsigned", "void", "volatile", "while", "alignas", "alignof", "and",
	"and_eq", "asm", "bitand", "bitor", "bool", "catch", "char8_t",
	"class", "compl", "concept", "consteval", "constexpr", "constinit",
	"const_cast", "co_await", "co_return", "co_yield", "decltype",
	"delete", "dynamic_cast", "explicit", "export", "false", "friend",
	"mutable", "namespace", "new", "noexcept", "not", "not_eq", "nullptr",
	"operator", "or", "or_eq", "private", "protected", "public",
	"reinterpret_cast", "requires", "static_assert", "static_cast",
	"template", "this", "thread_local", "throw", "true", "try", "typeid",
	"typename", "typeof", "using", "virtual", "xor", "xor_eq", "complex",
	"imaginary", "noreturn", "NULL", "EOF", "errno", "assert", "offsetof",
	"stdin", "stdout", "stderr", "linux", "unix", "i386",
};

/* Subsystem names that would make strata_<sub>_<event>() or
 * STRATA_MAJOR_<SUB> collide with libstrata's own names (strata.h,
 * events.h, inline/). */
static const char *const reserved_subsys[] = {
	"add", "and", "barrier", "bit", "cas", "clock", "commit", "consumer",
	"cpu", "disable", "enable", "event", "field", "filter", "flush",
	"format", "gen", "get", "header", "id", "iter", "kind", "likely",
	"load", "log", "lost", "major", "majors", "mask", "max", "mode",
	"open", "options", "or", "pid", "reader", "register", "registry",
	"reserve", "ring", "rings", "rsv", "session", "start", "stats", "stop",
	"store", "strata", "stream", "strerror", "subsys", "tls", "trace",
	"type", "unlikely", "value",
};

static int in_list(const char *s, const char *const *list, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(s, list[i]))
			return 1;
	return 0;
}

/* Subsystem and event names: lowercase C identifiers. */
int gen_check_lower_name(struct parser *ps, const struct gen_token *t,
			 const char *what)
{
	size_t i;

	if (t->len > GEN_MAX_NAME) {
		gen_error(ps->ctx, &t->loc, "%s name longer than %d characters",
			  what, GEN_MAX_NAME);
		return -EINVAL;
	}
	for (i = 0; i < t->len; i++) {
		char c = t->text[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) {
			gen_error(ps->ctx, &t->loc,
				  "%s name '%s' must be lowercase (a-z, 0-9, _)",
				  what, t->text);
			return -EINVAL;
		}
	}
	return 0;
}

/* A subsystem name: a lowercase one, and none of libstrata's own. */
void gen_check_subsys_name(struct parser *ps, const struct gen_token *t)
{
	if (!gen_check_lower_name(ps, t, "subsystem") &&
	    in_list(t->text, reserved_subsys,
		    sizeof(reserved_subsys) / sizeof(reserved_subsys[0])))
		gen_error(ps->ctx, &t->loc,
			  "subsystem name '%s' is reserved (it would clash with libstrata's names)",
			  t->text);
}

int gen_check_field_name(struct parser *ps, const struct gen_token *t)
{
	const char *s = t->text;

	if (t->len > GEN_MAX_NAME) {
		gen_error(ps->ctx, &t->loc, "field name longer than %d characters",
			  GEN_MAX_NAME);
		return -EINVAL;
	}
	if (s[0] == '_' || !strncmp(s, "strata_", 7) ||
	    (t->len >= 2 && !strcmp(s + t->len - 2, "_t")) ||
	    in_list(s, reserved_fields,
		    sizeof(reserved_fields) / sizeof(reserved_fields[0]))) {
		gen_error(ps->ctx, &t->loc,
			  "field name '%s' is reserved (C/C++ keyword or library name)",
			  s);
		return -EINVAL;
	}
	return 0;
}

/* ---- formats ------------------------------------------------------------- */

static struct gen_loc string_loc(const struct gen_token *t, size_t i)
{
	struct gen_loc l = t->loc;

	if (i < t->len)
		l.col = t->cols[i];
	return l;
}

/* "%{name}", "%{name:x}" and "%%" (docs/dsl.md, "Format strings"). Marks
 * fields shown in hex. */
void gen_check_format(struct parser *ps, const struct gen_token *t,
		      struct gen_event *ev)
{
	const char *s = t->text;
	size_t i, j, k;

	for (i = 0; i < t->len; i++) {
		struct gen_field *f = NULL;
		struct gen_loc l;
		size_t name_end;

		if (s[i] != '%')
			continue;
		if (i + 1 < t->len && s[i + 1] == '%') {
			i++;
			continue;
		}
		l = string_loc(t, i);
		if (i + 1 >= t->len || s[i + 1] != '{') {
			gen_error(ps->ctx, &l,
				  "stray '%%' in format (write %%{field} or %%%% for a literal '%%')");
			return;
		}
		for (j = i + 2; j < t->len && s[j] != '}'; j++)
			;
		if (j >= t->len) {
			gen_error(ps->ctx, &l, "unterminated '%%{' in format");
			return;
		}
		for (name_end = i + 2; name_end < j && s[name_end] != ':'; name_end++)
			;
		l = string_loc(t, i + 2);
		if (name_end == i + 2) {
			gen_error(ps->ctx, &l, "empty field name in format");
			i = j;
			continue;
		}
		for (k = 0; k < ev->nfields; k++) {
			if (strlen(ev->fields[k].name) == name_end - i - 2 &&
			    !memcmp(ev->fields[k].name, s + i + 2, name_end - i - 2)) {
				f = &ev->fields[k];
				break;
			}
		}
		if (!f) {
			gen_error(ps->ctx, &l, "format names unknown field '%.*s'",
				  (int)(name_end - i - 2), s + i + 2);
			i = j;
			continue;
		}
		if (name_end < j) {
			struct gen_loc sl = string_loc(t, name_end + 1);

			if (j - name_end != 2 || s[name_end + 1] != 'x') {
				gen_error(ps->ctx, &sl,
					  "unknown format specifier '%.*s' (only ':x' is supported)",
					  (int)(j - name_end - 1), s + name_end + 1);
			} else if (!gen_is_integer(f->type) && f->type != STRATA_T_PTR) {
				gen_error(ps->ctx, &sl,
					  "':x' needs an integer field; '%s' is %s",
					  f->name, gen_type_name(f->type));
			} else {
				f->flags |= STRATA_F_HEX;
			}
		}
		i = j;
	}
}

/* ---- flows --------------------------------------------------------------- */

/* A `send` or `receive` event names its key, `flow(FIELD)`, an integer or
 * ptr scalar that the reader matches sends and receives by; no other
 * event has one (docs/dsl.md, "Flows"). key is NULL when there is no
 * flow clause, and `at` where it would be. Marks the key field. */
void gen_check_flow(struct parser *ps, struct gen_event *ev,
		    const struct gen_token *key, const struct gen_loc *at)
{
	const char *role = ev->flow == STRATA_F_FLOW_SEND ? "send" : "receive";
	struct gen_field *f = NULL;

	if (!key) {
		if (ev->flow)
			gen_error(ps->ctx, at,
				  "'%s' event '%s' needs flow(FIELD): the field that matches it "
				  "with its %s", role, ev->name,
				  ev->flow == STRATA_F_FLOW_SEND ? "receive" : "send");
		return;
	}
	if (ev->kind) {
		gen_error(ps->ctx, at,
			  "flow(...) on a '%s' event: an event ends an interval or a flow, not both",
			  ev->kind == STRATA_EV_BEGIN ? "begin" : "end");
		return;
	}
	if (!ev->flow) {
		gen_error(ps->ctx, at,
			  "flow(...) on a point event: declare it 'send event' or 'receive event'");
		return;
	}
	for (size_t i = 0; i < ev->nfields && !f; i++)
		if (!strcmp(ev->fields[i].name, key->text))
			f = &ev->fields[i];
	if (!f)
		gen_error(ps->ctx, &key->loc, "flow names unknown field '%s'", key->text);
	else if (f->count || (!gen_is_integer(f->type) && f->type != STRATA_T_PTR))
		gen_error(ps->ctx, &key->loc,
			  "flow key '%s' is %s%s; a flow is matched by an integer or ptr field",
			  f->name, f->count ? "an array of " : "", gen_type_name(f->type));
	else
		f->flags |= ev->flow;
}

/* ---- uniqueness ---------------------------------------------------------- */

void gen_check_event_unique(struct parser *ps, struct gen_subsys *ss,
			    struct gen_event *ev)
{
	struct gen_subsys *o;
	size_t i;

	for (i = 0; i < ss->nevents; i++) {
		struct gen_event *e = &ss->events[i];

		if (!strcmp(e->name, ev->name)) {
			gen_error(ps->ctx, &ev->loc, "duplicate event '%s:%s'",
				  ss->name, ev->name);
			gen_note(ps->ctx, &e->loc, "previous definition is here");
			return;
		}
		if (e->minor == ev->minor) {
			gen_error(ps->ctx, &ev->minor_loc,
				  "duplicate event number %s %u ('%s' and '%s')",
				  ss->name, ev->minor, e->name, ev->name);
			gen_note(ps->ctx, &e->minor_loc, "previous definition is here");
			return;
		}
	}
	/* strata_<sub>_<event> must name one event: "a_b" + "c" vs "a" + "b_c". */
	for (o = ps->ctx->subsys_first; o; o = o->next_global) {
		size_t ol = strlen(o->name), sl = strlen(ss->name);

		if (o == ss || ol == sl || strncmp(o->name, ss->name, ol < sl ? ol : sl))
			continue;
		for (i = 0; i < o->nevents; i++) {
			char a[2 * GEN_MAX_NAME + 2], b[2 * GEN_MAX_NAME + 2];

			snprintf(a, sizeof(a), "%s_%s", o->name, o->events[i].name);
			snprintf(b, sizeof(b), "%s_%s", ss->name, ev->name);
			if (!strcmp(a, b)) {
				gen_error(ps->ctx, &ev->loc,
					  "'%s:%s' and '%s:%s' would both generate strata_%s()",
					  ss->name, ev->name, o->name,
					  o->events[i].name, b);
				gen_note(ps->ctx, &o->events[i].loc,
					 "previous definition is here");
				return;
			}
		}
	}
}

void gen_check_subsys_unique(struct parser *ps, struct gen_subsys *ss)
{
	struct gen_subsys *o;

	for (o = ps->ctx->subsys_first; o; o = o->next_global) {
		if (!strcmp(o->name, ss->name)) {
			gen_error(ps->ctx, &ss->loc, "duplicate subsystem '%s'",
				  ss->name);
			gen_note(ps->ctx, &o->loc, "previous definition is here");
			return;
		}
		if (o->major == ss->major) {
			gen_error(ps->ctx, &ss->major_loc,
				  "duplicate subsystem number %u ('%s' and '%s')",
				  ss->major, o->name, ss->name);
			gen_note(ps->ctx, &o->major_loc, "previous definition is here");
			return;
		}
	}
}
