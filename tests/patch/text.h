/* SPDX-License-Identifier: MIT */
/* Reading a site's bytes in the tests: in assembly, which ThreadSanitizer does not instrument (it has no shadow for code). */
#ifndef PATCH_TEST_TEXT_H
#define PATCH_TEST_TEXT_H

#include <stdint.h>
#include <string.h>

static inline uint8_t text_byte(const uint8_t *p)
{
	uint8_t v;
	__asm__ __volatile__("movb %1, %0" : "=q"(v) : "m"(*p));
	return v;
}

/* The site at `at` is a jump to `to` (1), the 5-byte no-op (0), or
 * neither (-1); it must be 8-byte aligned and end with the 3-byte no-op
 * (inline/branch.h). */
static inline int site_state(const uint8_t *at, const uint8_t *to)
{
	static const uint8_t nop5[5] = {0x0f, 0x1f, 0x44, 0x00, 0x00};
	static const uint8_t nop3[3] = {0x0f, 0x1f, 0x00};
	uint8_t b[8];
	int32_t rel;

	for (int k = 0; k < 8; k++)
		b[k] = text_byte(at + k);
	memcpy(&rel, b + 1, 4);
	if (((uintptr_t)at & 7) || memcmp(b + 5, nop3, 3))
		return -1;
	if (b[0] == 0xe9)
		return at + 5 + rel == to ? 1 : -1;
	return memcmp(b, nop5, 5) ? -1 : 0;
}

#endif
