/* SPDX-License-Identifier: MIT */
/* The caller's error buffer (char *err, size_t errlen): one message written into it. */
#ifndef STRATA_COMMON_ERRBUF_H
#define STRATA_COMMON_ERRBUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include "common/compiler.h"

/* fmt into err, truncated to errlen bytes and terminated; nothing when
 * the caller gave no buffer (err NULL or errlen 0). */
static inline printf_like(3, 4) void errbuf_printf(char *err, size_t errlen,
						    const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

#endif /* STRATA_COMMON_ERRBUF_H */
