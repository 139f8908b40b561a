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
 *
 * Each name says the operation and its memory order as C11 spells them
 * (relaxed, acquire, release, acq_rel, seq_cst); every use that is not
 * relaxed says at its call what it orders and where its pair is
 * (STYLE.md, "Comments").
 */
#define strata_load_relaxed(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define strata_load_acquire(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define strata_load_seq_cst(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define strata_store_relaxed(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define strata_store_release(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define strata_store_seq_cst(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)

/* Exchange: store v, return the previous value. */
#define strata_exchange_relaxed(p, v)                                          \
	__atomic_exchange_n((p), (v), __ATOMIC_RELAXED)
#define strata_exchange_acq_rel(p, v)                                          \
	__atomic_exchange_n((p), (v), __ATOMIC_ACQ_REL)

/* Read-modify-write arithmetic. strata_add_*, _sub_, _or_, _and_ return
 * the value before (fetch-add); strata_add_fetch_* the value after. */
#define strata_add_relaxed(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define strata_add_release(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELEASE)
#define strata_add_fetch_relaxed(p, v)                                         \
	__atomic_add_fetch((p), (v), __ATOMIC_RELAXED)
#define strata_add_fetch_release(p, v)                                         \
	__atomic_add_fetch((p), (v), __ATOMIC_RELEASE)
#define strata_add_fetch_seq_cst(p, v)                                         \
	__atomic_add_fetch((p), (v), __ATOMIC_SEQ_CST)
#define strata_sub_relaxed(p, v) __atomic_fetch_sub((p), (v), __ATOMIC_RELAXED)
#define strata_or_relaxed(p, v) __atomic_fetch_or((p), (v), __ATOMIC_RELAXED)
#define strata_and_relaxed(p, v) __atomic_fetch_and((p), (v), __ATOMIC_RELAXED)

/*
 * Compare and swap: if *p equals *expected, store desired and return
 * true; else copy *p into *expected and return false. Strong (no
 * spurious failure) unless _weak. One order is C11's one-order form,
 * whose failing load takes that order less its release part (acq_rel:
 * acquire, release: relaxed); a second names the failing load's order
 * where it differs.
 */
#define strata_cas_relaxed(p, expected, desired)                               \
	__atomic_compare_exchange_n((p), (expected), (desired), 0,             \
				    __ATOMIC_RELAXED, __ATOMIC_RELAXED)
#define strata_cas_release_acquire(p, expected, desired)                       \
	__atomic_compare_exchange_n((p), (expected), (desired), 0,             \
				    __ATOMIC_RELEASE, __ATOMIC_ACQUIRE)
#define strata_cas_weak_release(p, expected, desired)                          \
	__atomic_compare_exchange_n((p), (expected), (desired), 1,             \
				    __ATOMIC_RELEASE, __ATOMIC_RELAXED)
#define strata_cas_acq_rel(p, expected, desired)                               \
	__atomic_compare_exchange_n((p), (expected), (desired), 0,             \
				    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)
#define strata_cas_acq_rel_relaxed(p, expected, desired)                       \
	__atomic_compare_exchange_n((p), (expected), (desired), 0,             \
				    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)
#define strata_cas_seq_cst_acquire(p, expected, desired)                       \
	__atomic_compare_exchange_n((p), (expected), (desired), 0,             \
				    __ATOMIC_SEQ_CST, __ATOMIC_ACQUIRE)

/* Fences (C11 atomic_thread_fence). */
#define strata_fence_acquire() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#define strata_fence_release() __atomic_thread_fence(__ATOMIC_RELEASE)
#define strata_fence_seq_cst() __atomic_thread_fence(__ATOMIC_SEQ_CST)

/* A compiler barrier only: orders against a signal handler of this
 * thread, emits no instruction. */
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
