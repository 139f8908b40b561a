/* SPDX-License-Identifier: MIT */
/* Library diagnostics: silent unless STRATA_VERBOSE is set. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <strata/strata.h>

#include "common/log.h"

static char detail[256];

void slog(const char *fmt, ...)
{
	static int verbose = -1;
	va_list ap;

	if (verbose < 0) {
		const char *v = getenv("STRATA_VERBOSE");
		verbose = v && *v && strcmp(v, "0") != 0;
	}
	if (!verbose)
		return;
	fputs("strata: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void slog_detail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	slog("%s", detail);
}

STRATA_API const char *strata_strerror_detail(void)
{
	return detail;
}
