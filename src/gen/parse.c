/* SPDX-License-Identifier: MIT */
/* The DSL parser: syntax and includes (docs/dsl.md); the rules a definition must obey are checked by parse_check.c. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lex.h"
#include "parse_int.h"

static int load(struct gen_ctx *ctx, const char *name, const char *real,
		const char *data, size_t len, struct gen_file **out);

/* ---- types ------------------------------------------------------------- */

static const struct {
	const char *name;
	uint16_t type;
	uint8_t size;
} types[] = {
	{ "u8", STRATA_T_U8, 1 },       { "u16", STRATA_T_U16, 2 },
	{ "u32", STRATA_T_U32, 4 },     { "u64", STRATA_T_U64, 8 },
	{ "s8", STRATA_T_S8, 1 },       { "s16", STRATA_T_S16, 2 },
	{ "s32", STRATA_T_S32, 4 },     { "s64", STRATA_T_S64, 8 },
	{ "f64", STRATA_T_F64, 8 },     { "bool", STRATA_T_BOOL, 1 },
	{ "ptr", STRATA_T_PTR, 8 },     { "string", STRATA_T_STRING, 0 },
};

/* C spellings people will try, and what they mean here. */
static const struct {
	const char *c, *dsl;
} type_hints[] = {
	{ "uint8_t", "u8" },   { "uint16_t", "u16" }, { "uint32_t", "u32" },
	{ "uint64_t", "u64" }, { "int8_t", "s8" },    { "int16_t", "s16" },
	{ "int32_t", "s32" },  { "int64_t", "s64" },  { "int", "s32" },
	{ "unsigned", "u32" }, { "long", "s64" },     { "double", "f64" },
	{ "float", "f64" },    { "char", "string" },  { "str", "string" },
	{ "pointer", "ptr" },  { "void", "ptr" },     { "uintptr_t", "ptr" },
	{ "size_t", "u64" },   { "i32", "s32" },      { "i64", "s64" },
};

const char *gen_type_name(unsigned type)
{
	size_t i;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (types[i].type == type)
			return types[i].name;
	return "?";
}

unsigned gen_type_size(unsigned type)
{
	size_t i;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (types[i].type == type)
			return types[i].size;
	return 0;
}

/* ---- tokens -------------------------------------------------------------- */

static int next(struct parser *ps)
{
	ps->prev_end = ps->tok.end;
	return gen_lex_next(&ps->lx, &ps->tok);
}

static int syntax_error(struct parser *ps, const char *expected)
{
	const struct gen_loc *at = &ps->tok.loc;
	char buf[64];

	/* Like a C compiler: a missing ';' at the end of a line is reported
	 * where it belongs, not at the next line's first token. */
	if (ps->prev_end.line && ps->prev_end.line < ps->tok.loc.line)
		at = &ps->prev_end;
	gen_error(ps->ctx, at, "expected %s, found %s", expected,
		  gen_tok_describe(&ps->tok, buf, sizeof(buf)));
	return -EINVAL;
}

/* Check the current token is `kind`, then move past it. */
static int expect(struct parser *ps, int kind, const char *what)
{
	if (ps->tok.kind != kind)
		return syntax_error(ps, what);
	return next(ps);
}

static int is_word(const struct parser *ps, const char *w)
{
	return ps->tok.kind == TOK_IDENT && !strcmp(ps->tok.text, w);
}

/* ---- layout -------------------------------------------------------------- */

uint64_t gen_event_min_bytes(const struct gen_event *ev)
{
	uint64_t off = 0, total = 0;
	size_t i;

	/* format.md §3: natural alignment inside words; a string is a u32
	 * count then its bytes, padded to the word. */
	for (i = 0; i < ev->nfields; i++) {
		const struct gen_field *f = &ev->fields[i];
		unsigned size = gen_type_size(f->type);

		if (f->type == STRATA_T_STRING) {
			off = (off + 3) & ~(uint64_t)3;
			total += (off + 4 + 1 + 7) & ~(uint64_t)7;
			off = 0;
			continue;
		}
		off = (off + size - 1) & ~(uint64_t)(size - 1);
		off += (uint64_t)size * (f->count ? f->count : 1);
	}
	return total + ((off + 7) & ~(uint64_t)7);
}

/* ---- grammar ------------------------------------------------------------- */

static int parse_type(struct parser *ps, struct gen_field *f)
{
	size_t i;

	if (ps->tok.kind != TOK_IDENT)
		return syntax_error(ps, "a field type");
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		if (!strcmp(ps->tok.text, types[i].name)) {
			f->type = types[i].type;
			return next(ps);
		}
	}
	for (i = 0; i < sizeof(type_hints) / sizeof(type_hints[0]); i++) {
		if (!strcmp(ps->tok.text, type_hints[i].c)) {
			gen_error(ps->ctx, &ps->tok.loc,
				  "unknown type '%s' (did you mean '%s'?)",
				  ps->tok.text, type_hints[i].dsl);
			return -EINVAL;
		}
	}
	gen_error(ps->ctx, &ps->tok.loc,
		  "unknown type '%s' (expected u8..u64, s8..s64, f64, bool, ptr or string)",
		  ps->tok.text);
	return -EINVAL;
}

static int parse_field(struct parser *ps, struct gen_event *ev)
{
	struct gen_field *f;
	size_t i;
	int ret;

	f = gen_grow(ps->ctx, ev->fields, ev->nfields, sizeof(*f));
	if (!f)
		return -ENOMEM;
	ev->fields = f;
	f = &ev->fields[ev->nfields];
	ret = parse_type(ps, f);
	if (ret)
		return ret;
	if (ps->tok.kind != TOK_IDENT)
		return syntax_error(ps, "a field name");
	f->name = ps->tok.text;
	f->loc = ps->tok.loc;
	gen_check_field_name(ps, &ps->tok);
	for (i = 0; i < ev->nfields; i++) {
		if (!strcmp(ev->fields[i].name, f->name)) {
			gen_error(ps->ctx, &f->loc, "duplicate field '%s'", f->name);
			gen_note(ps->ctx, &ev->fields[i].loc,
				 "previous field '%s' is here", f->name);
			break;
		}
	}
	if (f->type == STRATA_T_PTR)
		f->flags |= STRATA_F_HEX;
	ret = next(ps);
	if (ret)
		return ret;
	if (ps->tok.kind == '[') {
		struct gen_loc l = ps->tok.loc;

		ret = next(ps);
		if (ret)
			return ret;
		if (ps->tok.kind != TOK_INT)
			return syntax_error(ps, "an array length");
		if (!gen_is_integer(f->type)) {
			gen_error(ps->ctx, &l,
				  "arrays must have an integer type (u8..u64, s8..s64), not %s",
				  gen_type_name(f->type));
		} else if (ps->tok.value < 1 ||
			   ps->tok.value > (GEN_MAX_WORDS - 1) * 8) {
			gen_error(ps->ctx, &ps->tok.loc,
				  "array length %llu out of range (1..%d)",
				  (unsigned long long)ps->tok.value,
				  (GEN_MAX_WORDS - 1) * 8);
		} else {
			f->count = (uint16_t)ps->tok.value;
		}
		ret = next(ps);
		if (ret)
			return ret;
		ret = expect(ps, ']', "']'");
		if (ret)
			return ret;
	}
	ev->nfields++;
	return 0;
}

/* `flow ( FIELD )` after the fields, where present, checked whether or
 * not it is (docs/dsl.md, "Flows"). */
static int parse_flow(struct parser *ps, struct gen_event *ev)
{
	struct gen_loc at = ps->tok.loc;
	struct gen_token key;
	int ret;

	if (!is_word(ps, "flow")) {
		gen_check_flow(ps, ev, NULL, &at);
		return 0;
	}
	ret = next(ps);
	if (!ret)
		ret = expect(ps, '(', "'('");
	if (ret)
		return ret;
	if (ps->tok.kind != TOK_IDENT)
		return syntax_error(ps, "a field name");
	key = ps->tok;
	ret = next(ps);
	if (!ret)
		ret = expect(ps, ')', "')'");
	if (!ret)
		gen_check_flow(ps, ev, &key, &at);
	return ret;
}

static int parse_event(struct parser *ps, struct gen_subsys *ss)
{
	struct gen_event *ev;
	uint64_t words;
	int ret;

	ev = gen_grow(ps->ctx, ss->events, ss->nevents, sizeof(*ev));
	if (!ev)
		return -ENOMEM;
	ss->events = ev;
	ev = &ss->events[ss->nevents];
	if (is_word(ps, "begin") || is_word(ps, "end")) {
		ev->kind = is_word(ps, "begin") ? STRATA_EV_BEGIN : STRATA_EV_END;
		ret = next(ps);
		if (ret)
			return ret;
	} else if (is_word(ps, "send") || is_word(ps, "receive")) {
		ev->flow = is_word(ps, "send") ? STRATA_F_FLOW_SEND : STRATA_F_FLOW_RECEIVE;
		ret = next(ps);
		if (ret)
			return ret;
	}
	if (!is_word(ps, "event"))
		return syntax_error(ps, ev->kind || ev->flow ? "'event'" : "'event' or '}'");
	ret = next(ps);
	if (ret)
		return ret;
	if (ps->tok.kind != TOK_IDENT)
		return syntax_error(ps, "an event name");
	ev->name = ps->tok.text;
	ev->loc = ps->tok.loc;
	gen_check_lower_name(ps, &ps->tok, "event");
	ret = next(ps);
	if (ret)
		return ret;
	if (ps->tok.kind != TOK_INT)
		return syntax_error(ps, "an event number");
	ev->minor = (unsigned)ps->tok.value;
	ev->minor_loc = ps->tok.loc;
	if (ps->tok.value > GEN_MINOR_MAX)
		gen_error(ps->ctx, &ps->tok.loc,
			  "event number %llu out of range (0..%d)",
			  (unsigned long long)ps->tok.value, GEN_MINOR_MAX);
	ret = next(ps);
	if (ret)
		return ret;
	ret = expect(ps, '(', "'('");
	if (ret)
		return ret;
	if (ps->tok.kind != ')') {
		for (;;) {
			ret = parse_field(ps, ev);
			if (ret)
				return ret;
			if (ps->tok.kind != ',')
				break;
			ret = next(ps);
			if (ret)
				return ret;
		}
	}
	ret = expect(ps, ')', "',' or ')'");
	if (ret)
		return ret;
	ret = parse_flow(ps, ev);
	if (ret)
		return ret;
	if (ps->tok.kind == TOK_STRING) {
		ev->format = ps->tok.text;
		gen_check_format(ps, &ps->tok, ev);
		ret = next(ps);
		if (ret)
			return ret;
		if (ps->tok.kind == TOK_STRING) {
			ev->description = ps->tok.text;
			ret = next(ps);
			if (ret)
				return ret;
		}
	}
	ret = expect(ps, ';', "';'");
	if (ret)
		return ret;
	words = 1 + gen_event_min_bytes(ev) / 8;
	if (words > GEN_MAX_WORDS)
		gen_error(ps->ctx, &ev->loc,
			  "event '%s:%s' needs %llu words, more than the %d an event may have",
			  ss->name, ev->name, (unsigned long long)words,
			  GEN_MAX_WORDS);
	gen_check_event_unique(ps, ss, ev);
	ss->nevents++;
	return 0;
}

static int parse_subsystem(struct parser *ps)
{
	struct gen_file *file = ps->file;
	struct gen_subsys *ss;
	int ret;

	ss = gen_grow(ps->ctx, file->subsys, file->nsubsys, sizeof(*ss));
	if (!ss)
		return -ENOMEM;
	file->subsys = ss;
	ss = &file->subsys[file->nsubsys];
	ret = next(ps);
	if (ret)
		return ret;
	if (ps->tok.kind != TOK_IDENT)
		return syntax_error(ps, "a subsystem name");
	ss->name = ps->tok.text;
	ss->loc = ps->tok.loc;
	gen_check_subsys_name(ps, &ps->tok);
	ret = next(ps);
	if (ret)
		return ret;
	if (ps->tok.kind != TOK_INT)
		return syntax_error(ps, "a subsystem number");
	ss->major = (unsigned)ps->tok.value;
	ss->major_loc = ps->tok.loc;
	if (ps->tok.value < GEN_MAJOR_MIN || ps->tok.value > GEN_MAJOR_MAX)
		gen_error(ps->ctx, &ps->tok.loc,
			  "subsystem number %llu out of range (%d..%d; 0 is strata's own, 63 is reserved)",
			  (unsigned long long)ps->tok.value, GEN_MAJOR_MIN,
			  GEN_MAJOR_MAX);
	ret = next(ps);
	if (ret)
		return ret;
	if (ps->tok.kind == TOK_STRING) {
		ss->description = ps->tok.text;
		ret = next(ps);
		if (ret)
			return ret;
	}
	gen_check_subsys_unique(ps, ss);
	/* Visible to the checks of its own events and of later subsystems. */
	file->nsubsys++;
	if (ps->ctx->subsys_last)
		ps->ctx->subsys_last->next_global = ss;
	else
		ps->ctx->subsys_first = ss;
	ps->ctx->subsys_last = ss;

	ret = expect(ps, '{', "'{'");
	if (ret)
		return ret;
	while (ps->tok.kind != '}') {
		if (ps->tok.kind == TOK_EOF)
			return syntax_error(ps, "'}'");
		ret = parse_event(ps, ss);
		if (ret)
			return ret;
		if (ps->ctx->nerrors >= GEN_MAX_ERRORS)
			return -EINVAL;
	}
	ret = next(ps);
	if (ret)
		return ret;
	if (ps->tok.kind == ';') /* tolerated after '}' */
		return next(ps);
	return 0;
}

/* ---- includes ------------------------------------------------------------ */

static int read_all(const char *path, char **data, size_t *len)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 4096, n = 0;
	char *p, *q;
	int ret = 0;

	if (!f)
		return -errno;
	p = malloc(cap);
	if (!p) {
		ret = -ENOMEM;
		goto out_close;
	}
	for (;;) {
		size_t r = fread(p + n, 1, cap - n, f);

		n += r;
		if (r == 0)
			break;
		if (n == cap) {
			if (cap >= (64u << 20)) {
				ret = -EFBIG;
				goto out_free;
			}
			q = realloc(p, cap * 2);
			if (!q) {
				ret = -ENOMEM;
				goto out_free;
			}
			p = q;
			cap *= 2;
		}
	}
	if (ferror(f)) {
		ret = -EIO;
		goto out_free;
	}
	*data = p;
	*len = n;
	goto out_close;
out_free:
	free(p);
out_close:
	fclose(f);
	return ret;
}

static struct gen_file *find_file(struct gen_ctx *ctx, const char *real)
{
	struct gen_file *f;

	for (f = ctx->files; f; f = f->next)
		if (!strcmp(f->real, real))
			return f;
	return NULL;
}

/* Candidate path for `inc` in `dir` ("" for the current directory). */
static char *join(struct gen_ctx *ctx, const char *dir, size_t dirlen,
		  const char *inc)
{
	size_t il = strlen(inc);
	char *p;

	if (inc[0] == '/' || !dirlen)
		return gen_strdup(ctx, inc);
	p = gen_alloc(ctx, dirlen + il + 2);
	if (!p)
		return NULL;
	memcpy(p, dir, dirlen);
	p[dirlen] = '/';
	memcpy(p + dirlen + 1, inc, il);
	return p;
}

static int parse_include(struct parser *ps)
{
	struct gen_ctx *ctx = ps->ctx;
	struct gen_file *file = ps->file, *f;
	struct gen_include *inc;
	const char *slash, *name = NULL;
	char real[PATH_MAX];
	size_t i;
	int ret;

	ret = next(ps);
	if (ret)
		return ret;
	if (ps->tok.kind != TOK_STRING)
		return syntax_error(ps, "a file name in quotes");
	inc = gen_grow(ctx, file->includes, file->nincludes, sizeof(*inc));
	if (!inc)
		return -ENOMEM;
	file->includes = inc;
	inc = &file->includes[file->nincludes++];
	inc->path = ps->tok.text;
	inc->loc = ps->tok.loc;
	ret = next(ps);
	if (ret)
		return ret;
	ret = expect(ps, ';', "';'");
	if (ret)
		return ret;
	/* The path is also written into '#include "..."' (docs/dsl.md). */
	if (!inc->path[0] || strpbrk(inc->path, "\"\\\n\t")) {
		gen_error(ctx, &inc->loc,
			  "include file name must be non-empty, without quotes, backslashes or control characters");
		return -EINVAL;
	}

	/* The includer's directory, then -I directories, in order. */
	if (!ctx->no_fs) {
		slash = strrchr(file->name, '/');
		for (i = 0; i <= ctx->nincdirs && !name; i++) {
			const char *dir = i ? ctx->incdirs[i - 1] : file->name;
			size_t dl = i ? strlen(dir) : (slash ? (size_t)(slash - dir) : 0);
			char *cand = join(ctx, dir, dl, inc->path);
			struct stat st;

			if (!cand)
				return -ENOMEM;
			if (!stat(cand, &st) && S_ISREG(st.st_mode) &&
			    realpath(cand, real))
				name = cand;
			if (inc->path[0] == '/')
				break;
		}
	}
	if (!name) {
		gen_error(ctx, &inc->loc, "cannot find include file '%s'", inc->path);
		return -EINVAL;
	}
	f = find_file(ctx, real);
	if (f && f->state == GEN_FILE_DONE)
		return 0; /* included once */
	if (f) {
		struct gen_buf b;

		gen_buf_init(&b);
		for (i = 0; i < ctx->depth; i++)
			if (!strcmp(ctx->stack[i]->real, real))
				break;
		for (; i < ctx->depth; i++)
			gen_buf_printf(&b, "%s -> ", ctx->stack[i]->name);
		gen_buf_puts(&b, name);
		gen_error(ctx, &inc->loc, "include cycle: %s",
			  b.oom ? "(out of memory)" : b.p);
		gen_buf_fini(&b);
		return -EINVAL;
	}
	if (ctx->depth >= GEN_MAX_INCLUDE_DEPTH) {
		gen_error(ctx, &inc->loc, "includes nested more than %d deep",
			  GEN_MAX_INCLUDE_DEPTH);
		return -EINVAL;
	}
	{
		char *data = NULL;
		size_t len = 0;
		char *rc = gen_strdup(ctx, real);

		if (!rc)
			return -ENOMEM;
		ret = read_all(name, &data, &len);
		if (ret) {
			gen_error(ctx, &inc->loc, "cannot read '%s': %s", name,
				  strerror(-ret));
			return ret == -ENOMEM ? ret : -EINVAL;
		}
		ret = load(ctx, name, rc, data, len, NULL);
		free(data);
	}
	return ret;
}

/* ---- files --------------------------------------------------------------- */

static int parse_file(struct parser *ps)
{
	int ret = next(ps);

	while (!ret && ps->tok.kind != TOK_EOF) {
		if (is_word(ps, "include"))
			ret = parse_include(ps);
		else if (is_word(ps, "subsystem"))
			ret = parse_subsystem(ps);
		else
			ret = syntax_error(ps, "'subsystem' or 'include'");
		if (!ret && ps->ctx->nerrors >= GEN_MAX_ERRORS)
			ret = -EINVAL;
	}
	return ret;
}

static int load(struct gen_ctx *ctx, const char *name, const char *real,
		const char *data, size_t len, struct gen_file **out)
{
	struct parser ps;
	struct gen_file *f;
	int ret;

	f = gen_alloc(ctx, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->name = gen_strdup(ctx, name);
	f->real = real;
	if (!f->name)
		return -ENOMEM;
	f->state = GEN_FILE_LOADING;
	f->next = ctx->files;
	ctx->files = f;
	ctx->stack[ctx->depth++] = f;

	memset(&ps, 0, sizeof(ps));
	ps.ctx = ctx;
	ps.file = f;
	gen_lex_init(&ps.lx, ctx, f->name, data, len);
	ret = parse_file(&ps);

	ctx->depth--;
	f->state = GEN_FILE_DONE;
	if (!ret && ctx->nerrors)
		ret = -EINVAL;
	if (out)
		*out = f;
	return ret;
}

int gen_load_buffer(struct gen_ctx *ctx, const char *name, const char *data,
		    size_t len, struct gen_file **out)
{
	ctx->no_fs = 1;
	return load(ctx, name, name, data, len, out);
}

int gen_load_file(struct gen_ctx *ctx, const char *path, struct gen_file **out)
{
	char real[PATH_MAX], *rc, *data = NULL;
	size_t len = 0;
	int ret;

	ret = read_all(path, &data, &len);
	if (ret) {
		gen_error(ctx, NULL, "cannot read '%s': %s", path, strerror(-ret));
		return ret;
	}
	rc = gen_strdup(ctx, realpath(path, real) ? real : path);
	if (!rc) {
		free(data);
		return -ENOMEM;
	}
	ret = load(ctx, path, rc, data, len, out);
	free(data);
	return ret;
}