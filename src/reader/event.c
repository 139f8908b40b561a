/* SPDX-License-Identifier: MIT */
/* Lazy field decoding and description rendering of one event (format.md §3). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/numfmt.h"
#include "rd.h"

/* The per-class decode plan of fixed-layout scalar events. */
static int compile_plan(struct rd_class *c, struct rd_meta *m)
{
	c->fast_min = UINT32_MAX;
	if (!c->pub.nfields)
		c->fast_min = 0; /* nothing to decode: any payload */
	if (!c->pub.fixed || !c->pub.nfields)
		return 0;
	for (unsigned i = 0; i < c->pub.nfields; i++) {
		const struct strata_field_class *f = &c->pub.fields[i];
		if (!(f->type == STRATA_FIELD_INT || f->type == STRATA_FIELD_ENUM ||
		      (f->type == STRATA_FIELD_FLOAT && f->bits == 64)) ||
		    f->offset % (f->bits / 8))
			return 0;
	}
	/* padded to a multiple of RD_PLAN_STEP entries that read word 0
	 * with mask 0: the decode loop runs whole steps, so its exit does not
	 * depend on each event's field count (a mispredict per event when
	 * classes with different counts alternate) */
	unsigned np = (c->pub.nfields + RD_PLAN_STEP - 1) / RD_PLAN_STEP * RD_PLAN_STEP;
	struct rd_plan *p = rd_meta_alloc(m, np * sizeof(*p));
	if (!p)
		return -ENOMEM;
	memset(p, 0, np * sizeof(*p));
	c->nplan = np;
	c->plan_min = (c->pub.min_size + 7) & ~7u;
	for (unsigned i = 0; i < c->pub.nfields; i++) {
		const struct strata_field_class *f = &c->pub.fields[i];
		p[i].word = f->offset & ~7u;
		p[i].shift = (f->offset & 7) * 8;
		p[i].mask = f->bits == 64 ? UINT64_MAX : (UINT64_C(1) << f->bits) - 1;
		p[i].sx = f->is_signed && f->type != STRATA_FIELD_FLOAT ? 64 - f->bits : 0;
		p[i].vtype = f->type == STRATA_FIELD_FLOAT ? STRATA_VALUE_DOUBLE :
			     f->is_signed ? STRATA_VALUE_SINT : STRATA_VALUE_UINT;
	}
	c->plan = p;
	c->words = 1;
	for (unsigned i = 0; i < c->pub.nfields; i++)
		c->words &= c->pub.fields[i].bits == 64;
	if (c->pub.nfields <= RD_FAST_MAX)
		c->fast_min = c->plan_min;
	return 0;
}

/* The first field at or after i that descriptions show, or -1. */
static int next_shown(const struct rd_class *c, unsigned i)
{
	for (; i < c->pub.nfields; i++)
		if (!c->pub.fields[i].hidden)
			return (int)i;
	return -1;
}

/* How put_value renders field f with spec: an RD_OUT_* kind, or -1 when
 * it is not a plain integer (render_fast does not do it). */
static int out_kind(const struct strata_field_class *f, char spec)
{
	if (f->type != STRATA_FIELD_INT)
		return -1; /* enum labels, floats, text, arrays */
	if (spec == 'x' || (!spec && f->base == 16))
		return RD_OUT_HEX;
	if (spec == 'u')
		return RD_OUT_DEC;
	if (spec == 'd' || (!spec && f->base == 10))
		return f->is_signed || spec == 'd' ? RD_OUT_SDEC : RD_OUT_DEC;
	return -1; /* octal, binary */
}

/* The description as an out program (rd_class.out), from the format
 * parts, or "name=value" pairs when there is no format string. */
static int compile_out(struct rd_class *c, struct rd_meta *m)
{
	unsigned nf = c->pub.nfields, n = c->fmt ? c->nfmt : nf + 1;
	struct rd_out_part *out = rd_meta_alloc(m, n * sizeof(*out));
	if (!out)
		return -ENOMEM;
	unsigned k = 0;
	uint64_t max = 16; /* put_hex stores 16 bytes */
	if (c->fmt) {
		for (unsigned i = 0; i < c->nfmt; i++) {
			const struct rd_fmt_part *pt = &c->fmt[i];
			int kind = pt->field < 0 ? RD_OUT_NONE :
				   out_kind(&c->pub.fields[pt->field], pt->spec);
			if (kind < 0)
				return 0;
			out[k++] = (struct rd_out_part){ pt->lit, pt->litlen,
							 (uint16_t)(pt->field < 0 ? 0 : pt->field),
							 (uint8_t)kind };
			max += pt->litlen + 22;
		}
	} else {
		/* "name=" literals, a space before all but the first */
		for (int i = next_shown(c, 0); i >= 0; i = next_shown(c, i + 1)) {
			const struct strata_field_class *f = &c->pub.fields[i];
			int kind = out_kind(f, 0);
			if (kind < 0 || i > UINT16_MAX)
				return 0;
			size_t nl = strlen(f->name);
			char *lit = rd_meta_alloc(m, nl + 3);
			if (!lit)
				return -ENOMEM;
			size_t ll = 0;
			if (k)
				lit[ll++] = ' ';
			memcpy(lit + ll, f->name, nl);
			ll += nl;
			lit[ll++] = '=';
			out[k++] = (struct rd_out_part){ lit, (uint32_t)ll, (uint16_t)i, (uint8_t)kind };
			max += ll + 22;
		}
	}
	if (max > UINT32_MAX / 2)
		return 0;
	c->out = out;
	c->nout = k;
	c->out_max = (uint32_t)max;
	return 0;
}

/* "%{name}" / "%{name:x}" / "%%" -> parts, resolved to field indexes once. */
int rd_class_compile_format(struct rd_class *c, struct rd_meta *m)
{
	if (compile_plan(c, m) < 0)
		return -ENOMEM;
	const char *f = c->pub.format;
	if (!f)
		return compile_out(c, m);
	size_t cap = 2;
	for (const char *p = f; *p; p++)
		cap += *p == '%';
	c->fmt = rd_meta_alloc(m, cap * sizeof(*c->fmt));
	if (!c->fmt)
		return -ENOMEM;
	const char *lit = f;
	const char *p = f;
	unsigned n = 0;
	while (*p) {
		if (p[0] == '%' && p[1] == '%') {
			/* literal '%': end the run after the first '%' */
			c->fmt[n++] = (struct rd_fmt_part){ lit, (uint32_t)(p + 1 - lit), -1, 0 };
			p += 2;
			lit = p;
			continue;
		}
		if (p[0] == '%' && p[1] == '{') {
			const char *b = p + 2, *e = strchr(b, '}');
			if (!e)
				break;
			const char *colon = memchr(b, ':', e - b);
			size_t nl = (colon ? colon : e) - b;
			int idx = -1;
			for (unsigned i = 0; i < c->pub.nfields; i++)
				if (strlen(c->pub.fields[i].name) == nl &&
				    !memcmp(c->pub.fields[i].name, b, nl))
					idx = i;
			if (idx >= 0) {
				char spec = colon && colon + 1 < e ? colon[1] : 0;
				c->fmt[n++] = (struct rd_fmt_part){ lit, (uint32_t)(p - lit), idx, spec };
				lit = e + 1;
			}
			p = e + 1;
			continue;
		}
		p++;
	}
	c->fmt[n++] = (struct rd_fmt_part){ lit, (uint32_t)strlen(lit), -1, 0 };
	c->nfmt = n;
	return compile_out(c, m);
}

int strata_event_class_field(const struct strata_event_class *cls, const char *name)
{
	for (unsigned i = 0; i < cls->nfields; i++)
		if (!strcmp(cls->fields[i].name, name))
			return i;
	return -ENOENT;
}

static inline uint64_t load(const uint8_t *p, unsigned bits, bool sgn)
{
	switch (bits) {
	case 8:
		return sgn ? (uint64_t)(int64_t)(int8_t)p[0] : p[0];
	case 16: {
		uint16_t v;
		memcpy(&v, p, 2);
		return sgn ? (uint64_t)(int64_t)(int16_t)v : v;
	}
	case 32: {
		uint32_t v;
		memcpy(&v, p, 4);
		return sgn ? (uint64_t)(int64_t)(int32_t)v : v;
	}
	default:
		return rd_le64(p);
	}
}

uint64_t strata_value_elem(const struct strata_value *v, uint32_t i)
{
	if (v->type != STRATA_VALUE_ARRAY || i >= v->count)
		return 0;
	return load((const uint8_t *)v->data + (size_t)i * (v->elem_bits / 8),
		    v->elem_bits, v->elem_signed);
}

/* Decode field f at byte offset off of the payload; *end gets the offset
 * after it. The caller has checked nothing: every read is bounds-checked. */
static int decode_at(const struct strata_event *ev,
		     const struct strata_field_class *f, const struct strata_value *prev,
		     uint32_t off, uint32_t *end, struct strata_value *v)
{
	const uint8_t *p = ev->payload;
	uint32_t size = ev->size, esz = f->bits / 8;
	memset(v, 0, sizeof(*v));
	if (f->type == STRATA_FIELD_INT || f->type == STRATA_FIELD_ENUM) {
		if (off > size || size - off < esz)
			return -EBADMSG;
		v->u = load(p + off, f->bits, f->is_signed);
		v->type = f->is_signed ? STRATA_VALUE_SINT : STRATA_VALUE_UINT;
		*end = off + esz;
		return 0;
	}
	if (f->type == STRATA_FIELD_FLOAT) {
		if (off > size || size - off < esz)
			return -EBADMSG;
		if (f->bits == 32) {
			float x;
			memcpy(&x, p + off, 4);
			v->d = x;
		} else {
			memcpy(&v->d, p + off, 8);
		}
		v->type = STRATA_VALUE_DOUBLE;
		*end = off + esz;
		return 0;
	}
	uint64_t count = f->length;
	if (f->type == STRATA_FIELD_SEQUENCE)
		count = prev[f->length_field].u;
	uint64_t bytes = count * esz;
	if (off > size || size - off < bytes)
		return -EBADMSG;
	*end = off + (uint32_t)bytes;
	if (f->text) {
		/* text: the count includes the NUL and padding (format.md §3) */
		const char *s = (const char *)p + off;
		const char *z = memchr(s, 0, bytes);
		v->type = STRATA_VALUE_STRING;
		v->str = s;
		v->count = z ? (uint32_t)(z - s) : (uint32_t)bytes;
		return 0;
	}
	v->type = STRATA_VALUE_ARRAY;
	v->elem_bits = f->bits;
	v->elem_signed = f->is_signed;
	v->count = (uint32_t)count;
	v->data = p + off;
	return 0;
}

int strata_event_fields(const struct strata_event *ev, struct strata_value *vals,
			unsigned n)
{
	const struct strata_event_class *c = ev->cls;
	if (n < c->nfields)
		return -EINVAL;
	const struct rd_class *rc = (const struct rd_class *)c;
	const struct rd_plan *plan = rc->plan;
	if (strata_likely(plan != NULL)) {
		/* specialised path: one bounds check, then branch-free loads
		 * of whole words (min_size rounds up within the payload) */
		if (strata_unlikely(ev->size < rc->plan_min))
			return -EBADMSG;
		const uint8_t *p = ev->payload;
		if (strata_likely(n >= rc->nplan)) {
			/* whole steps; the padding writes zeros past nfields,
			 * inside the caller's n */
			for (unsigned i = 0; i < rc->nplan; i += RD_PLAN_STEP)
				for (unsigned j = i; j < i + RD_PLAN_STEP; j++)
					rd_plan_value(&plan[j], p, &vals[j]);
			return c->nfields;
		}
		for (unsigned i = 0; i < c->nfields; i++)
			rd_plan_value(&plan[i], p, &vals[i]);
		return c->nfields;
	}
	if (strata_likely(c->fixed)) {
		/* offsets precomputed, one bounds check */
		if (strata_unlikely(ev->size < c->min_size))
			return -EBADMSG;
		for (unsigned i = 0; i < c->nfields; i++) {
			const struct strata_field_class *f = &c->fields[i];
			struct strata_value *v = &vals[i];
			const uint8_t *p = ev->payload + f->offset;
			if (strata_likely(f->type == STRATA_FIELD_INT ||
					  f->type == STRATA_FIELD_ENUM)) {
				v->type = f->is_signed ? STRATA_VALUE_SINT : STRATA_VALUE_UINT;
				v->u = load(p, f->bits, f->is_signed);
			} else {
				uint32_t end;
				decode_at(ev, f, vals, f->offset, &end, v);
			}
		}
		return c->nfields;
	}
	uint32_t off = 0;
	for (unsigned i = 0; i < c->nfields; i++) {
		const struct strata_field_class *f = &c->fields[i];
		off = (off + f->align - 1) & ~(uint32_t)(f->align - 1);
		if (decode_at(ev, f, vals, off, &off, &vals[i]) < 0)
			return -EBADMSG;
	}
	return c->nfields;
}

int strata_event_field(const struct strata_event *ev, unsigned idx,
		       struct strata_value *out)
{
	const struct strata_event_class *c = ev->cls;
	if (idx >= c->nfields)
		return -EINVAL;
	const struct strata_field_class *f = &c->fields[idx];
	uint32_t end;
	if (f->offset != STRATA_OFFSET_VARIABLE && f->type != STRATA_FIELD_SEQUENCE)
		return decode_at(ev, f, NULL, f->offset, &end, out);
	/* a field after a sequence: walk from the start */
	struct strata_value tmp[64], *vals = tmp;
	if (idx >= 64) {
		vals = malloc((idx + 1) * sizeof(*vals));
		if (!vals)
			return -ENOMEM;
	}
	uint32_t off = 0;
	int rc = 0;
	for (unsigned i = 0; i <= idx && !rc; i++) {
		const struct strata_field_class *fi = &c->fields[i];
		off = (off + fi->align - 1) & ~(uint32_t)(fi->align - 1);
		rc = decode_at(ev, fi, vals, off, &off, &vals[i]);
	}
	if (!rc)
		*out = vals[idx];
	if (vals != tmp)
		free(vals);
	return rc;
}

/* ---- rendering -------------------------------------------------------------- */

struct sbuf {
	char *p;
	size_t len, n; /* capacity, bytes wanted so far */
};

static inline void put(struct sbuf *b, const char *s, size_t n)
{
	if (strata_likely(b->len - b->n >= n && b->n <= b->len)) {
		fmt_copy_small(b->p + b->n, s, n);
	} else if (b->n < b->len) {
		size_t room = b->len - b->n;
		memcpy(b->p + b->n, s, n < room ? n : room);
	}
	b->n += n;
}

/* "00" .. "ff" */
static const char hex2[513] =
	"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	"202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
	"404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
	"606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
	"808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
	"a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
	"c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf"
	"e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";


static const char *enum_label(const struct strata_field_class *f, uint64_t u)
{
	for (unsigned i = 0; i < f->nmappings; i++) {
		const struct strata_enum_mapping *m = &f->mappings[i];
		if (f->is_signed ? ((int64_t)u >= m->lo && (int64_t)u <= m->hi)
				 : (u >= (uint64_t)m->lo && u <= (uint64_t)m->hi))
			return m->label;
	}
	return NULL;
}

static void put_int(struct sbuf *b, uint64_t u, bool sgn, char spec, int base)
{
	char tmp[72], *e = tmp + sizeof(tmp), *p = e;
	bool hex = spec == 'x' || (!spec && base == 16);
	if (hex || (!spec && base == 10) || spec == 'd' || spec == 'u') {
		/* the common cases, straight into the output when it has room */
		bool neg = !hex && spec != 'u' && (sgn || spec == 'd') && (int64_t)u < 0;
		if (neg)
			u = -u;
		unsigned nd = hex ? (u ? (67 - (unsigned)__builtin_clzll(u)) / 4 : 1) : numfmt_dec_len(u);
		unsigned n = nd + (hex ? 2 : neg);
		char *d = b->n <= b->len && b->len - b->n >= n ? b->p + b->n : tmp;
		char *q = d;
		if (hex) {
			*q++ = '0';
			*q++ = 'x';
			unsigned i = nd;
			for (; i >= 2; i -= 2, u >>= 8)
				memcpy(q + i - 2, hex2 + 2 * (u & 255), 2);
			if (i)
				q[0] = "0123456789abcdef"[u & 15];
		} else {
			if (neg)
				*q++ = '-';
			numfmt_dec_put(q, u, nd);
		}
		if (d == tmp)
			put(b, tmp, n);
		else
			b->n += n;
		return;
	}
	if (spec == 'o' || (!spec && base == 8)) {
		do {
			*--p = '0' + (u & 7);
			u >>= 3;
		} while (u);
		*--p = '0';
	} else {
		do {
			*--p = '0' + (u & 1);
			u >>= 1;
		} while (u);
		*--p = 'b';
		*--p = '0';
	}
	put(b, p, e - p);
}

static void put_value(struct sbuf *b, const struct strata_field_class *f,
		      const struct strata_value *v, char spec, bool quote)
{
	char tmp[64];
	switch (v->type) {
	case STRATA_VALUE_UINT:
	case STRATA_VALUE_SINT:
		if (f->type == STRATA_FIELD_ENUM && !spec) {
			const char *l = enum_label(f, v->u);
			if (l) {
				put(b, l, strlen(l));
				return;
			}
		}
		put_int(b, v->u, v->type == STRATA_VALUE_SINT, spec, f->base);
		return;
	case STRATA_VALUE_DOUBLE:
		put(b, tmp, snprintf(tmp, sizeof(tmp), "%g", v->d));
		return;
	case STRATA_VALUE_STRING:
		if (quote)
			put(b, "\"", 1);
		put(b, v->str, v->count);
		if (quote)
			put(b, "\"", 1);
		return;
	case STRATA_VALUE_ARRAY:
		put(b, "[", 1);
		for (uint32_t i = 0; i < v->count; i++) {
			if (i)
				put(b, ", ", 2);
			put_int(b, strata_value_elem(v, i), v->elem_signed, spec, f->base);
		}
		put(b, "]", 1);
		return;
	}
}

/* The 8 hex digits of x, most significant first, as the memory image of
 * a word: nibbles spread to bytes, then to ASCII, all in-register. */
static inline uint64_t hex8(uint32_t x32)
{
	uint64_t x = x32;
	x = (x | x << 16) & UINT64_C(0x0000ffff0000ffff);
	x = (x | x << 8) & UINT64_C(0x00ff00ff00ff00ff);
	x = (x | x << 4) & UINT64_C(0x0f0f0f0f0f0f0f0f); /* byte i: nibble i */
	uint64_t ge10 = ((x + UINT64_C(0x0606060606060606)) >> 4) & UINT64_C(0x0101010101010101);
	x += UINT64_C(0x3030303030303030) + ge10 * ('a' - '0' - 10);
	return __builtin_bswap64(x);
}

/* "0x" and the digits of u without leading zeros at d; stores 18 bytes
 * (the caller's room), returns the end of what counts. */
static inline char *put_hex(char *d, uint64_t u)
{
	unsigned nd = u ? (67 - (unsigned)__builtin_clzll(u)) / 4 : 1;
	unsigned __int128 s = (unsigned __int128)hex8((uint32_t)u) << 64 | hex8((uint32_t)(u >> 32));
	s >>= 8 * (16 - nd); /* drop the leading zeros */
	d[0] = '0';
	d[1] = 'x';
	memcpy(d + 2, &s, 16);
	return d + 2 + nd;
}

/* The out program (compile_out) into d, which has c->out_max bytes. */
static size_t render_fast(const struct rd_class *c, const struct strata_value *vals,
			  char *d0)
{
	char *d = d0;
	for (unsigned i = 0; i < c->nout; i++) {
		const struct rd_out_part *pt = &c->out[i];
		fmt_copy_small(d, pt->lit, pt->litlen);
		d += pt->litlen;
		uint64_t u;
		unsigned nd;
		switch (pt->kind) {
		case RD_OUT_SDEC:
			u = vals[pt->field].u;
			if ((int64_t)u < 0) {
				*d++ = '-';
				u = -u;
			}
			nd = numfmt_dec_len(u);
			numfmt_dec_put(d, u, nd);
			d += nd;
			break;
		case RD_OUT_DEC:
			u = vals[pt->field].u;
			nd = numfmt_dec_len(u);
			numfmt_dec_put(d, u, nd);
			d += nd;
			break;
		case RD_OUT_HEX:
			d = put_hex(d, vals[pt->field].u);
			break;
		}
	}
	return (size_t)(d - d0);
}

/* The description from decoded values: the body of both describe calls. */
static int render(const struct rd_class *c, const struct strata_value *vals,
		  char *buf, size_t len)
{
	if (c->out && len > c->out_max) {
		size_t n = render_fast(c, vals, buf);
		buf[n] = 0;
		return (int)n;
	}
	struct sbuf b = { buf, len ? len - 1 : 0, 0 };
	if (c->fmt) {
		for (unsigned i = 0; i < c->nfmt; i++) {
			const struct rd_fmt_part *pt = &c->fmt[i];
			put(&b, pt->lit, pt->litlen);
			if (pt->field >= 0)
				put_value(&b, &c->pub.fields[pt->field], &vals[pt->field],
					  pt->spec, false);
		}
	} else {
		for (int i = next_shown(c, 0); i >= 0; i = next_shown(c, i + 1)) {
			const struct strata_field_class *f = &c->pub.fields[i];
			if (b.n)
				put(&b, " ", 1);
			put(&b, f->name, strlen(f->name));
			put(&b, "=", 1);
			put_value(&b, f, &vals[i], 0, true);
		}
	}
	if (len)
		buf[b.n < len ? b.n : len - 1] = 0;
	return b.n > INT32_MAX ? INT32_MAX : (int)b.n;
}

int strata_event_describe_values(const struct strata_event *ev,
				 const struct strata_value *vals, unsigned nvals,
				 char *buf, size_t len)
{
	const struct rd_class *c = (const struct rd_class *)ev->cls;
	if (nvals < c->pub.nfields)
		return -EINVAL;
	return render(c, vals, buf, len);
}

int strata_event_describe(const struct strata_event *ev, char *buf, size_t len)
{
	const struct rd_class *c = (const struct rd_class *)ev->cls;
	struct strata_value stack[32], *vals = stack;
	unsigned nf = c->pub.nfields;
	int rc;
	if (nf > 32) {
		vals = malloc(nf * sizeof(*vals));
		if (!vals)
			return -ENOMEM;
	}
	rc = strata_event_fields(ev, vals, nf);
	if (rc >= 0)
		rc = render(c, vals, buf, len);
	if (vals != stack)
		free(vals);
	return rc;
}
