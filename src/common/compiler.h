/* SPDX-License-Identifier: MIT */
/* Compiler helpers shared by every internal module. */
#ifndef STRATA_COMMON_COMPILER_H
#define STRATA_COMMON_COMPILER_H

#include <strata/inline/atomic.h> /* strata_likely, strata_barrier */

#define STRATA_API __attribute__((visibility("default")))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define ALIGN_UP(x, a) (((x) + (a) - 1) & ~((__typeof__(x))(a) - 1))
#define noinline __attribute__((noinline))
#define cold __attribute__((cold))
#define printf_like(f, a) __attribute__((format(printf, f, a)))

/* Built with ThreadSanitizer (GCC says so one way, Clang another). */
#if defined(__SANITIZE_THREAD__)
#define STRATA_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STRATA_TSAN 1
#endif
#endif

/* Built with AddressSanitizer (likewise). */
#if defined(__SANITIZE_ADDRESS__)
#define STRATA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STRATA_ASAN 1
#endif
#endif

#endif /* STRATA_COMMON_COMPILER_H */
