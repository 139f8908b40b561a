/* SPDX-License-Identifier: MIT */
/* Decimal formatting and short copies without libc calls, for the reader's and the CLI's hot paths. */
#ifndef STRATA_COMMON_NUMFMT_H
#define STRATA_COMMON_NUMFMT_H

#include <stdint.h>
#include <string.h>

/* "00" .. "99": two digits per lookup when formatting numbers */
static const char numfmt_dig2[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

static const uint64_t numfmt_pow10[20] = {
	1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull,
	100000000ull, 1000000000ull, 10000000000ull, 100000000000ull,
	1000000000000ull, 10000000000000ull, 100000000000000ull,
	1000000000000000ull, 10000000000000000ull, 100000000000000000ull,
	1000000000000000000ull, 10000000000000000000ull,
};

/* Number of decimal digits of v (1 for 0), without a loop. */
static inline unsigned numfmt_dec_len(uint64_t v)
{
	v |= 1; /* same digit count (10^k is even), and 0 has one */
	unsigned t = ((64 - (unsigned)__builtin_clzll(v | 1)) * 1233) >> 12;
	return t + (v >= numfmt_pow10[t]);
}

/* v as exactly n = numfmt_dec_len(v) digits at d, written in place: formatting
 * into a scratch buffer and copying it reloads bytes just stored, which
 * stalls on store forwarding. */
static inline void numfmt_dec_put(char *d, uint64_t v, unsigned n)
{
	char *e = d + n;
	while (v >= 100) {
		e -= 2;
		memcpy(e, numfmt_dig2 + 2 * (v % 100), 2);
		v /= 100;
	}
	if (v >= 10)
		memcpy(e - 2, numfmt_dig2 + 2 * v, 2);
	else
		e[-1] = (char)('0' + v);
}

/* Short copies without a libc call: most pieces of a line (literals,
 * numbers) are under 16 bytes. Reads and writes stay within [s, s + n)
 * and [d, d + n). */
static inline void fmt_copy_small(char *d, const char *s, size_t n)
{
	if (n >= 8) {
		if (n > 16) {
			memcpy(d, s, n);
			return;
		}
		uint64_t a, b;
		memcpy(&a, s, 8);
		memcpy(&b, s + n - 8, 8);
		memcpy(d, &a, 8);
		memcpy(d + n - 8, &b, 8);
	} else if (n >= 4) {
		uint32_t a, b;
		memcpy(&a, s, 4);
		memcpy(&b, s + n - 4, 4);
		memcpy(d, &a, 4);
		memcpy(d + n - 4, &b, 4);
	} else if (n) {
		d[0] = s[0];
		d[n / 2] = s[n / 2];
		d[n - 1] = s[n - 1];
	}
}

#endif /* STRATA_COMMON_NUMFMT_H */
