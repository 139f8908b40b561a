/* SPDX-License-Identifier: MIT */
/* Atomics with named memory orders, usable from C11 and C++ alike. */
#ifndef STRATA_INLINE_ATOMIC_H
#define STRATA_INLINE_ATOMIC_H

/*
 * These wrap the compiler's __atomic builtins, which implement exactly the
 * C11/C++11 memory model, on plain integer lvalues. Plain types rather
 * than _Atomic because this header is included by C++ programs too, and
 * because the ring's shared fields live in a memory mapping that another
 * process maps as well (docs/ring.md §1).
 */
#define strata_load_relaxed(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define strata_load_acquire(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define strata_store_relaxed(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define strata_store_release(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define strata_add_release(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELEASE)
#define strata_add_relaxed(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define strata_or_relaxed(p, v) __atomic_fetch_or((p), (v), __ATOMIC_RELAXED)
#define strata_and_relaxed(p, v) __atomic_fetch_and((p), (v), __ATOMIC_RELAXED)
/* Strong CAS; on failure *expected is reloaded (acquire). */
#define strata_cas_acq_rel(p, expected, desired)                               \
	__atomic_compare_exchange_n((p), (expected), (desired), 0,             \
				    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)
#define strata_barrier() __asm__ __volatile__("" ::: "memory")

/* The fast path must be inlined into every tracepoint whatever the
 * caller's size (GCC otherwise emits an out-of-line copy called with the
 * reservation on the stack). */
#define strata_always_inline inline __attribute__((always_inline))

#define strata_likely(x) __builtin_expect(!!(x), 1)
#define strata_unlikely(x) __builtin_expect(!!(x), 0)

/* A macro's value as a string (for asm immediates). */
#define STRATA_STR_(x) #x
#define STRATA_STR(x) STRATA_STR_(x)

#endif /* STRATA_INLINE_ATOMIC_H */
