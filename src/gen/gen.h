/* SPDX-License-Identifier: MIT */
/* strata-gen internals: the event model, the DSL parser and the header emitter (docs/dsl.md). */
#ifndef STRATA_GEN_GEN_H
#define STRATA_GEN_GEN_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <strata/events.h>

/* Limits of the language (docs/dsl.md, "Limits"). */
#define GEN_MAJOR_MIN 1
#define GEN_MAJOR_MAX 62     /* STRATA_MAJOR_MAX; 0 is strata's own, 63 reserved */
#define GEN_MINOR_MAX 65535
#define GEN_MAX_WORDS 1023   /* STRATA_MAX_WORDS, header included */
#define GEN_MAX_STRING 4095  /* longest C string literal ISO C requires */
#define GEN_MAX_NAME 64
#define GEN_MAX_INCLUDE_DEPTH 32
#define GEN_MAX_ERRORS 20

/* A place in a source file: 1-based line and byte column. */
struct gen_loc {
	const char *file; /* display name, owned by the context */
	unsigned line;
	unsigned col;
};

struct gen_field {
	const char *name;
	struct gen_loc loc;
	uint16_t type;  /* enum strata_type */
	uint16_t count; /* 0: scalar, N: array */
	uint32_t flags; /* STRATA_F_HEX, STRATA_F_FLOW_* */
};

struct gen_event {
	const char *name;
	struct gen_loc loc;
	struct gen_loc minor_loc;
	unsigned minor;
	unsigned kind; /* enum strata_event_kind */
	unsigned flow; /* 0, STRATA_F_FLOW_SEND or _RECEIVE: "send"/"receive" */
	struct gen_field *fields;
	size_t nfields;
	const char *format;      /* NULL when absent */
	const char *description; /* NULL when absent */
};

struct gen_subsys {
	const char *name;
	struct gen_loc loc;
	struct gen_loc major_loc;
	unsigned major;
	const char *description;
	struct gen_event *events;
	size_t nevents;
	struct gen_subsys *next_global; /* every subsystem loaded, in order */
};

struct gen_include {
	const char *path; /* as written in the source */
	struct gen_loc loc;
};

enum gen_file_state { GEN_FILE_LOADING = 1, GEN_FILE_DONE };

struct gen_file {
	const char *name; /* display name: as given, or include dir + path */
	const char *real; /* canonical path, identifies the file */
	int state;        /* enum gen_file_state */
	struct gen_include *includes;
	size_t nincludes;
	struct gen_subsys *subsys;
	size_t nsubsys;
	struct gen_file *next;
};

struct gen_arena_block;

struct gen_ctx {
	const char *const *incdirs; /* -I, searched after the includer's dir */
	size_t nincdirs;
	int no_fs;       /* 1: includes never resolve (fuzzing) */
	FILE *err;       /* diagnostics; NULL: silent */
	unsigned nerrors;
	struct gen_file *files;      /* every file loaded */
	struct gen_file *stack[GEN_MAX_INCLUDE_DEPTH + 1]; /* includes in progress */
	size_t depth;
	struct gen_subsys *subsys_first, *subsys_last;
	struct gen_arena_block *arena;
};

/* Growable output text. */
struct gen_buf {
	char *p;
	size_t len, cap;
	int oom;
};

/* ---- context and memory (util.c) ---- */
void gen_ctx_init(struct gen_ctx *ctx, FILE *err);
void gen_ctx_fini(struct gen_ctx *ctx);
/* Zeroed memory that lives until gen_ctx_fini(); NULL when out of memory. */
void *gen_alloc(struct gen_ctx *ctx, size_t size);
char *gen_strndup(struct gen_ctx *ctx, const char *s, size_t n);
char *gen_strdup(struct gen_ctx *ctx, const char *s);
/* Grow an arena array of n elements to hold n + 1; NULL when out of memory. */
void *gen_grow(struct gen_ctx *ctx, void *array, size_t n, size_t elem);

/* "file:line:col: error: ..." on ctx->err, counted in ctx->nerrors. */
void gen_error(struct gen_ctx *ctx, const struct gen_loc *loc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* "file:line:col: note: ...", attached to the previous error. */
void gen_note(struct gen_ctx *ctx, const struct gen_loc *loc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

void gen_buf_init(struct gen_buf *b);
void gen_buf_fini(struct gen_buf *b);
void gen_buf_puts(struct gen_buf *b, const char *s);
void gen_buf_printf(struct gen_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---- parsing (parse.c) ---- */
/*
 * Load `path` and, recursively, the files it includes, checking the whole
 * set (docs/dsl.md, "Rules"). Diagnostics go to ctx->err.
 * Returns 0 with *out set, -EINVAL when the input has errors (all
 * reported), -ENOENT/-EIO when `path` cannot be read, or -ENOMEM.
 */
int gen_load_file(struct gen_ctx *ctx, const char *path, struct gen_file **out);
/* Same for a buffer named `name` (for the fuzzer): no include resolves. */
int gen_load_buffer(struct gen_ctx *ctx, const char *name, const char *data,
		    size_t len, struct gen_file **out);

/* Payload bytes of `ev` when every string is empty (docs/format.md §3). */
uint64_t gen_event_min_bytes(const struct gen_event *ev);
/* Name of the type as written in the DSL ("u32"). */
const char *gen_type_name(unsigned type);
/* Size in bytes of one element of the type; strings: 0. */
unsigned gen_type_size(unsigned type);

/* ---- code generation (emit.c) ---- */
struct gen_emit_opts {
	const char *source_name; /* basename of the .strata file, for comments and the guard */
	int no_event_flags;      /* 1: no per-event enable byte */
};

/* Append the header for `file` to `out`. Returns 0 or -ENOMEM. */
int gen_emit_header(const struct gen_file *file, const struct gen_emit_opts *opts,
		    struct gen_buf *out);

#endif /* STRATA_GEN_GEN_H */
