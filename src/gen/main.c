/* SPDX-License-Identifier: MIT */
/* strata-gen: compile an event definition file (.strata) into a C/C++ header (docs/dsl.md). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gen.h"

#define MAX_INCDIRS 64

static void usage(FILE *f)
{
	fputs("usage: strata-gen [-o OUT.h] [-I DIR]... [-d DEPFILE] [--no-event-flags] FILE.strata\n"
	      "  -o OUT.h          output header (default: FILE.h beside FILE.strata; '-': stdout)\n"
	      "  -I DIR            search DIR for included files, after the includer's directory\n"
	      "  -d DEPFILE        also write a Makefile dependency rule: OUT.h and the files it was made from\n"
	      "  --no-event-flags  no per-event enable byte: events obey their subsystem's bit only\n",
	      f);
}

/* Write `len` bytes to `path` atomically: a temporary file beside it,
 * then rename(), so no reader ever sees a partial file. Returns 0 or
 * -errno. */
static int write_atomic(const char *path, const char *data, size_t len)
{
	size_t pl = strlen(path);
	char *tmp = malloc(pl + 8);
	mode_t mask;
	int fd, ret = 0;

	if (!tmp)
		return -ENOMEM;
	memcpy(tmp, path, pl);
	memcpy(tmp + pl, ".XXXXXX", 8);
	fd = mkstemp(tmp);
	if (fd < 0) {
		ret = -errno;
		goto out_free;
	}
	while (len) {
		ssize_t n = write(fd, data, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			goto out_unlink;
		}
		data += n;
		len -= (size_t)n;
	}
	/* mkstemp() makes 0600; a header is as readable as any file. */
	mask = umask(0);
	umask(mask);
	if (fchmod(fd, 0666 & ~mask) || close(fd)) {
		ret = -errno;
		fd = -1;
		goto out_unlink;
	}
	fd = -1;
	if (rename(tmp, path)) {
		ret = -errno;
		goto out_unlink;
	}
	goto out_free;
out_unlink:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
out_free:
	free(tmp);
	return ret;
}

/* Make-style path: spaces, '#' and '$' escaped. */
static void put_make_path(struct gen_buf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == ' ' || *s == '#' || *s == '\\')
			gen_buf_puts(b, "\\");
		if (*s == '$')
			gen_buf_puts(b, "$");
		gen_buf_printf(b, "%c", *s);
	}
}

static int write_depfile(const char *path, const char *target,
			 const struct gen_ctx *ctx)
{
	const struct gen_file *f;
	struct gen_buf b;
	int ret;

	gen_buf_init(&b);
	put_make_path(&b, target);
	gen_buf_puts(&b, ":");
	/* ctx->files is newest first; list the main file first. */
	for (f = ctx->files; f; f = f->next) {
		if (f->next)
			continue;
		gen_buf_puts(&b, " ");
		put_make_path(&b, f->name);
	}
	for (f = ctx->files; f && f->next; f = f->next) {
		gen_buf_puts(&b, " \\\n  ");
		put_make_path(&b, f->name);
	}
	gen_buf_puts(&b, "\n");
	ret = b.oom ? -ENOMEM : write_atomic(path, b.p, b.len);
	gen_buf_fini(&b);
	return ret;
}

static char *default_output(const char *in)
{
	size_t n = strlen(in);
	char *out;

	if (n > 7 && !strcmp(in + n - 7, ".strata"))
		n -= 7;
	out = malloc(n + 3);
	if (out) {
		memcpy(out, in, n);
		memcpy(out + n, ".h", 3);
	}
	return out;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "include-dir", required_argument, NULL, 'I' },
		{ "depfile", required_argument, NULL, 'd' },
		{ "no-event-flags", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *incdirs[MAX_INCDIRS];
	const char *out = NULL, *dep = NULL, *in, *base;
	struct gen_emit_opts opts = { NULL, 0 };
	struct gen_file *file = NULL;
	struct gen_ctx ctx;
	struct gen_buf b;
	char *defout = NULL;
	size_t nincdirs = 0;
	int c, ret, status = 1;

	while ((c = getopt_long(argc, argv, "o:I:d:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'I':
			if (nincdirs == MAX_INCDIRS) {
				fprintf(stderr, "strata-gen: error: more than %d -I options\n",
					MAX_INCDIRS);
				return 2;
			}
			incdirs[nincdirs++] = optarg;
			break;
		case 'd':
			dep = optarg;
			break;
		case 'n':
			opts.no_event_flags = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	in = argv[optind];
	if (!out) {
		defout = default_output(in);
		if (!defout) {
			fprintf(stderr, "strata-gen: error: out of memory\n");
			return 1;
		}
		out = defout;
	}
	if (dep && !strcmp(out, "-")) {
		fprintf(stderr, "strata-gen: error: -d needs -o FILE\n");
		free(defout);
		return 2;
	}
	base = strrchr(in, '/');
	opts.source_name = base ? base + 1 : in;

	gen_ctx_init(&ctx, stderr);
	ctx.incdirs = incdirs;
	ctx.nincdirs = nincdirs;
	gen_buf_init(&b);
	ret = gen_load_file(&ctx, in, &file);
	if (ret == -ENOMEM)
		fprintf(stderr, "strata-gen: error: out of memory\n");
	if (ret)
		goto out;
	ret = gen_emit_header(file, &opts, &b);
	if (ret) {
		fprintf(stderr, "strata-gen: error: out of memory\n");
		goto out;
	}
	if (!strcmp(out, "-")) {
		if (fwrite(b.p, 1, b.len, stdout) != b.len || fflush(stdout)) {
			fprintf(stderr, "strata-gen: error: writing the header: %s\n",
				strerror(errno));
			goto out;
		}
	} else {
		ret = write_atomic(out, b.p, b.len);
		if (ret) {
			fprintf(stderr, "strata-gen: error: cannot write '%s': %s\n", out,
				strerror(-ret));
			goto out;
		}
	}
	if (dep) {
		ret = write_depfile(dep, out, &ctx);
		if (ret) {
			fprintf(stderr, "strata-gen: error: cannot write '%s': %s\n", dep,
				strerror(-ret));
			goto out;
		}
	}
	status = 0;
out:
	gen_buf_fini(&b);
	gen_ctx_fini(&ctx);
	free(defout);
	return status;
}
