/* SPDX-License-Identifier: MIT */
/* A growable text buffer that the viewer's JSON answers are written into. */
#ifndef STRATA_VIEW_JSON_H
#define STRATA_VIEW_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <strata/reader.h>

/* Out of memory is sticky: the writers stop writing and `failed` says so,
 * so a handler checks once, at the end, instead of after every call. */
struct vw_buf {
	char *p;
	size_t len, cap;
	bool failed;
};

void vw_buf_fini(struct vw_buf *b);
void vw_put(struct vw_buf *b, const char *s, size_t n);
void vw_puts(struct vw_buf *b, const char *s);
void vw_printf(struct vw_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void vw_put_u64(struct vw_buf *b, uint64_t v);
/* One row of numbers of a window's arrays, comma-separated (and after a
 * comma unless `first`): for each letter of `spec`, 'f' a double written
 * as %.2f, 'u' a uint64_t, 'd' an int64_t (pass exactly these types). */
void vw_row(struct vw_buf *b, bool first, const char *spec, ...);
/* A JSON string of s[0..n), quoted and escaped (control bytes as \u00XX;
 * bytes >= 0x80 are passed through: the trace's text is UTF-8 or ASCII,
 * and a bad byte costs a replacement character in the browser, not a
 * broken answer). */
void vw_put_str(struct vw_buf *b, const char *s, size_t n);
/* A decoded field as a JSON value: integers beyond 2^53 as strings (a
 * JavaScript number would round them), enums as their label, text as a
 * string, arrays as lists. */
void vw_put_value(struct vw_buf *b, const struct strata_field_class *f,
		  const struct strata_value *v);

#endif /* STRATA_VIEW_JSON_H */
