// SPDX-License-Identifier: MIT
/* The viewer's JSON writer: a growable buffer and the escaping of strings and field values. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

void vw_buf_fini(struct vw_buf *b)
{
	free(b->p);
	*b = (struct vw_buf){ 0 };
}

static bool grow(struct vw_buf *b, size_t n)
{
	if (b->failed)
		return false;
	if (b->len + n + 1 <= b->cap)
		return true;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap < b->len + n + 1)
		cap *= 2;
	char *p = realloc(b->p, cap);
	if (!p) {
		b->failed = true;
		return false;
	}
	b->p = p;
	b->cap = cap;
	return true;
}

void vw_put(struct vw_buf *b, const char *s, size_t n)
{
	if (!grow(b, n))
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void vw_puts(struct vw_buf *b, const char *s)
{
	vw_put(b, s, strlen(s));
}

/* Formatted once into the room left (the buffer grows by doubling, so
 * there nearly always is room), twice only when it did not fit. */
void vw_printf(struct vw_buf *b, const char *fmt, ...)
{
	va_list ap;
	if (!grow(b, 128))
		return;
	va_start(ap, fmt);
	int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->p[b->len] = '\0';
		return;
	}
	if ((size_t)n >= b->cap - b->len) {
		if (!grow(b, (size_t)n)) {
			b->p[b->len] = '\0';
			return;
		}
		va_start(ap, fmt);
		vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
}

/* Digits of v, backwards from end: where they begin. */
static char *digits(char *end, uint64_t v)
{
	do {
		*--end = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return end;
}

/* x as %.2f does for the pixel positions the windows hold (rounded to
 * the nearest hundredth; -0.00 written 0.00), without printf's
 * conversion, which was most of a window's answer time (docs/view.md,
 * "Speed"), backwards from end: where it begins. Beyond 2^53
 * hundredths, or not finite: NULL (printf's, then). */
static char *fix2(char *end, double x)
{
	if (!(x > -9e15 && x < 9e15))
		return NULL;
	long long c = llround(x * 100.0);
	uint64_t u = c < 0 ? (uint64_t)-c : (uint64_t)c;
	*--end = (char)('0' + u % 10);
	*--end = (char)('0' + u / 10 % 10);
	*--end = '.';
	char *p = digits(end, u / 100);
	if (c < 0)
		*--p = '-';
	return p;
}

/* Each number is written backwards into its own slot of a row's buffer,
 * then the row is put in one go: a row is a few numbers, thousands of
 * rows an answer, and a vw_put per number was a third of their cost. */
#define ROW_MAX 16 /* numbers in a row, beyond which rows are put in parts */
#define NUM_MAX 32 /* a number's room: 20 digits and a sign, or a %.2f */

void vw_row(struct vw_buf *b, bool first, const char *spec, ...)
{
	char row[ROW_MAX * (NUM_MAX + 1)], *o = row;
	va_list ap;

	va_start(ap, spec);
	for (const char *s = spec; *s; s++) {
		char tmp[NUM_MAX], *end = tmp + sizeof(tmp), *p;
		if (o - row > (ROW_MAX - 1) * (NUM_MAX + 1)) {
			vw_put(b, row, (size_t)(o - row));
			o = row;
		}
		if (!first || s != spec)
			*o++ = ',';
		if (*s == 'f') {
			double x = va_arg(ap, double);
			if (!(p = fix2(end, x))) {
				vw_put(b, row, (size_t)(o - row));
				o = row;
				vw_printf(b, "%.2f", x);
				continue;
			}
		} else if (*s == 'u') {
			p = digits(end, va_arg(ap, uint64_t));
		} else { /* 'd' */
			int64_t v = va_arg(ap, int64_t);
			p = digits(end, v < 0 ? -(uint64_t)v : (uint64_t)v);
			if (v < 0)
				*--p = '-';
		}
		memcpy(o, p, (size_t)(end - p));
		o += end - p;
	}
	va_end(ap);
	vw_put(b, row, (size_t)(o - row));
}

void vw_put_u64(struct vw_buf *b, uint64_t v)
{
	char tmp[24], *p = digits(tmp + sizeof(tmp), v);

	vw_put(b, p, (size_t)(tmp + sizeof(tmp) - p));
}

void vw_put_str(struct vw_buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	vw_put(b, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char e[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
		if (c == '"' || c == '\\') {
			char q[2] = { '\\', (char)c };
			vw_put(b, q, 2);
		} else if (c < 0x20 || c == 0x7f) {
			vw_put(b, e, 6);
		} else {
			vw_put(b, (const char *)&c, 1);
		}
	}
	vw_put(b, "\"", 1);
}

#define JS_SAFE (1ull << 53)

static void put_int(struct vw_buf *b, const struct strata_value *v, unsigned base)
{
	if (base == 16) {
		vw_printf(b, "\"0x%llx\"", (unsigned long long)v->u);
	} else if (v->type == STRATA_VALUE_SINT) {
		bool safe = v->s < (int64_t)JS_SAFE && v->s > -(int64_t)JS_SAFE;
		vw_printf(b, safe ? "%lld" : "\"%lld\"", (long long)v->s);
	} else {
		vw_printf(b, v->u < JS_SAFE ? "%llu" : "\"%llu\"",
			  (unsigned long long)v->u);
	}
}

void vw_put_value(struct vw_buf *b, const struct strata_field_class *f,
		  const struct strata_value *v)
{
	switch (v->type) {
	case STRATA_VALUE_UINT:
	case STRATA_VALUE_SINT:
		for (unsigned i = 0; f->type == STRATA_FIELD_ENUM && i < f->nmappings; i++) {
			const struct strata_enum_mapping *m = &f->mappings[i];
			bool in = f->is_signed ? v->s >= m->lo && v->s <= m->hi :
				  v->u >= (uint64_t)m->lo && v->u <= (uint64_t)m->hi;
			if (in) {
				vw_put_str(b, m->label, strlen(m->label));
				return;
			}
		}
		put_int(b, v, f->base);
		return;
	case STRATA_VALUE_DOUBLE:
		/* JSON has no NaN or infinity */
		if (v->d != v->d || v->d > 1e308 || v->d < -1e308)
			vw_printf(b, "\"%g\"", v->d);
		else
			vw_printf(b, "%.17g", v->d);
		return;
	case STRATA_VALUE_STRING: {
		size_t n = v->count;
		const char *nul = memchr(v->str, '\0', n);
		vw_put_str(b, v->str, nul ? (size_t)(nul - v->str) : n);
		return;
	}
	case STRATA_VALUE_ARRAY:
		vw_put(b, "[", 1);
		for (uint32_t i = 0; i < v->count; i++) {
			struct strata_value e = { .type = v->elem_signed ?
				STRATA_VALUE_SINT : STRATA_VALUE_UINT };
			e.u = strata_value_elem(v, i);
			if (i)
				vw_put(b, ",", 1);
			put_int(b, &e, f->base);
		}
		vw_put(b, "]", 1);
		return;
	default:
		vw_puts(b, "null");
	}
}
