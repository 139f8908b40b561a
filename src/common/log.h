/* SPDX-License-Identifier: MIT */
/* Library diagnostics: silent unless STRATA_VERBOSE is set. */
#ifndef STRATA_COMMON_LOG_H
#define STRATA_COMMON_LOG_H

#include "common/compiler.h"

/*
 * A library never prints on its own (STYLE.md, errors): these write to
 * stderr only when the environment has STRATA_VERBOSE=1. slog_once prints
 * a message at most once per call site.
 */
void slog(const char *fmt, ...) printf_like(1, 2);

#define slog_once(...)                                                         \
	do {                                                                   \
		static int slog_done_;                                         \
		if (!strata_exchange_relaxed(&slog_done_, 1))                  \
			slog(__VA_ARGS__);                                     \
	} while (0)

/* The detail string returned by strata_strerror_detail(). */
void slog_detail(const char *fmt, ...) printf_like(1, 2);

#endif /* STRATA_COMMON_LOG_H */
