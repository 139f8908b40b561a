/* SPDX-License-Identifier: MIT */
/* Restartable sequences for the ring: CPU-local reserve and commit (docs/ring.md §7). */
#ifndef STRATA_INLINE_RSEQ_H
#define STRATA_INLINE_RSEQ_H

#include <stdint.h>

#include <strata/inline/atomic.h>

/*
 * With rseq, every store to a ring's `write` offset and every local commit
 * is done by a thread running on the ring's CPU, inside a critical section
 * that the kernel aborts if the thread is preempted, migrated or
 * interrupted by a signal before its last instruction (the commit). Such
 * a section is atomic with respect to every other writer of the ring
 * without a locked instruction. glibc (>= 2.35) registers the rseq area of
 * every thread; its signature on x86 is 0x53053053, which the abort
 * handler must carry.
 */
#if defined(__x86_64__) && defined(STRATA_HAVE_RSEQ)
#define STRATA_RSEQ_X86 1

/* Outcome of strata_rseq_reserve(). */
enum {
	STRATA_RSEQ_OK = 0,
	STRATA_RSEQ_RETRY = 1,   /* preempted, migrated or signalled: retry */
	STRATA_RSEQ_STALE = 2,   /* `write` moved since it was read: retry */
};

/*
 * The frame of a critical section. BEGIN emits its descriptor (struct
 * rseq_cs: version, flags, start = 1f, length up to 2f, abort = 4f) and
 * points the thread's rseq area at it; the section runs from label 1 to
 * its commit instruction, which must be the last before END. END places
 * the abort handler out of line, preceded by the signature glibc
 * registered (ud1 <sig>(%rip), %edi), and jumps to the C label `abort`.
 * The section must name its rseq area's rseq_cs as the operand
 * [rseq_cs] and clobber rax.
 */
#define STRATA_RSEQ_BEGIN                                                      \
	".pushsection __rseq_cs, \"aw\"\n\t"                                   \
	".balign 32\n\t"                                                       \
	"3:\n\t"                                                               \
	".long 0x0, 0x0\n\t"                                                   \
	".quad 1f, (2f - 1f), 4f\n\t"                                          \
	".popsection\n\t"                                                      \
	"leaq 3b(%%rip), %%rax\n\t"                                            \
	"movq %%rax, %[rseq_cs]\n\t"                                           \
	"1:\n\t"
#define STRATA_RSEQ_CLOBBER_CX_DX , "rcx", "rdx"
#define STRATA_RSEQ_END(abort)                                                 \
	"2:\n\t"                                                               \
	".pushsection __rseq_failure, \"ax\"\n\t"                              \
	".byte 0x0f, 0xb9, 0x3d\n\t"                                           \
	".long 0x53053053\n\t"                                                 \
	"4:\n\t"                                                               \
	"jmp %l[" #abort "]\n\t"                                               \
	".popsection\n\t"

/* R1 (still on the ring's CPU), R2 (`write` unchanged) and R4 (the owner
 * hint, when own != 0) of a reservation section (ring.md §7): operands
 * [cpu], [cur_cpu], [wp], [w], [own], [ownp]; the C labels `retry` and
 * `stale`. */
#define STRATA_RSEQ_R1_R2_R4(retry, stale)                                    \
	"cmpl %[cpu], %[cur_cpu]\n\t"                                          \
	"jnz %l[" #retry "]\n\t"                                               \
	"cmpq %[w], (%[wp])\n\t"                                               \
	"jnz %l[" #stale "]\n\t"                                               \
	"testl %[own], %[own]\n\t"                                             \
	"jz 6f\n\t"                                                            \
	"movl %[own], (%[ownp])\n\t"                                           \
	"6:\n\t"
/* R5, the commit: `write` and `xr` = [neww], [newx] by one 16-byte store
 * at [wp] (clobbers xmm0 and xmm1); the section's last instruction. */
#define STRATA_RSEQ_R5                                                        \
	"movq %[neww], %%xmm0\n\t"                                             \
	"movq %[newx], %%xmm1\n\t"                                             \
	"punpcklqdq %%xmm1, %%xmm0\n\t"                                        \
	"movdqa %%xmm0, (%[wp])\n\t"

/* The parenthesised list's contents: operands passed as one argument. */
#define STRATA_RSEQ_LIST(...) __VA_ARGS__
/*
 * A reservation section (ring.md §7): R1, R2, R4, then `stores` (more
 * stores made in the same section, "" for none), then R5. Its operands
 * are the caller's rs, cpu, wp, w, neww, newx, ownp and own, and
 * `operands`, the stores' own in parentheses: `(, [a] "r"(a))`, or `()`.
 * The C labels `retry` and `stale`.
 */
#define STRATA_RSEQ_RESERVE_SECTION(stores, operands)                          \
	__asm__ __volatile__ goto(                                             \
		STRATA_RSEQ_BEGIN                                              \
		STRATA_RSEQ_R1_R2_R4(retry, stale)                             \
		stores                                                         \
		STRATA_RSEQ_R5                                                 \
		STRATA_RSEQ_END(retry)                                         \
		:                                                              \
		: [cpu] "r"(cpu), [cur_cpu] "m"(rs->cpu_id),                   \
		  [rseq_cs] "m"(rs->rseq_cs), [wp] "r"(wp), [w] "r"(w),        \
		  [neww] "r"(neww), [newx] "r"(newx), [ownp] "r"(ownp),        \
		  [own] "r"(own) STRATA_RSEQ_LIST operands                     \
		: "memory", "cc", "rax", "xmm0", "xmm1"                        \
		: retry, stale)

static strata_always_inline struct rseq *strata_rseq_area(void)
{
	char *tp;
	__asm__("mov %%fs:0, %0" : "=r"(tp));
	return (struct rseq *)(tp + __rseq_offset);
}

/*
 * On CPU `cpu`, if *wp is still w: store own into *ownp when own != 0, and
 * commit by storing neww into wp[0] and newx into wp[1] (`write` and `xr`)
 * with one 16-byte store. The caller has read the clock after loading w
 * (ring.md §7: any clock will do, since the section fails if another
 * writer moved `write` since) and checked it for a gap.
 * ring.md §7 labels: R1 (cpu check), R2 (write unchanged), R4 (owner),
 * R5 (commit).
 */
static strata_always_inline int strata_rseq_reserve(struct rseq *rs, uint32_t cpu,
				      uint64_t *wp, uint64_t w, uint64_t neww,
				      uint64_t newx, uint32_t *ownp, uint32_t own)
{
	STRATA_RSEQ_RESERVE_SECTION("", ());
	return STRATA_RSEQ_OK;
retry:
	return STRATA_RSEQ_RETRY;
stale:
	return STRATA_RSEQ_STALE;
}

/*
 * The inline path's section (ring.md §7, "The inline path"): R1 and R2
 * of strata_rseq_reserve(), then the event itself -- header `h` at `p`,
 * the payload words after it -- and the commit: `write` and `xr` become
 * the two halves of `wx` (the event's end, and the packet's count with
 * the event in it) by one 16-byte store, the section being atomic on
 * its CPU. The event is whole once `write` passes it, so it needs no
 * commit count. Stores of an aborted section land past `write`, in bytes
 * nobody has reserved (and that nobody can reserve while the section
 * runs), so they are harmless. `stores` are the payload's stores,
 * operands follow as `, [a] "r"(...)`; the C label `fail` is taken on any
 * failure.
 */
#define STRATA_RSEQ_LOG(stores, clobbers, ...)                                 \
	__asm__ __volatile__ goto(                                             \
		STRATA_RSEQ_BEGIN                                              \
		"cmpl %[cpu], %[cur_cpu]\n\t"     /* R1 */                     \
		"jnz %l[fail]\n\t"                                             \
		"cmpq %[w], (%[wp])\n\t"          /* R2 */                     \
		"jnz %l[fail]\n\t"                                             \
		"movl %[h], (%[p])\n\t"                                        \
		stores                                                         \
		"movdqa %[wx], (%[wp])\n\t"       /* R5: commit */             \
		STRATA_RSEQ_END(fail)                                          \
		:                                                              \
		: [cpu] "r"(cpu), [cur_cpu] "m"(rs->cpu_id),                   \
		  [rseq_cs] "m"(rs->rseq_cs), [wp] "r"(wp), [w] "r"(w),        \
		  [wx] "x"(wx), [p] "r"(p), [h] "r"(h) __VA_ARGS__             \
		: "memory", "cc", "rax" clobbers                               \
		: fail)

/* `write` and `xr` as one 16-byte value (write in the low half). */
typedef uint64_t strata_u64x2 __attribute__((vector_size(16)));

/*
 * Write the event of words - 1 payload words (compact header h, payload
 * pl[0 .. words-2] at p + 4, docs/compact.md) at p = the ring's bytes at
 * offset w, and move *wp from w to w + 8 * words - 4 and wp[1] (`xr`) to
 * newx, on CPU `cpu` and only if *wp is still w. Returns 1, or 0 having
 * moved nothing. With constant `words` the switch folds to one case and
 * up to four payload words stay in registers.
 */
static strata_always_inline int strata_rseq_log(struct rseq *rs, uint32_t cpu,
				  uint64_t *wp, uint64_t w, uint64_t newx,
				  unsigned char *p, uint32_t h, uint32_t words,
				  const uint64_t *pl)
{
	const strata_u64x2 wx = {w + (uint64_t)words * 8 - 4, newx};

	switch (words) {
	case 1:
		STRATA_RSEQ_LOG("", , );
		return 1;
	case 2:
		STRATA_RSEQ_LOG("movq %[a], 4(%[p])\n\t", , , [a] "r"(pl[0]));
		return 1;
	case 3:
		STRATA_RSEQ_LOG("movq %[a], 4(%[p])\n\t"
				"movq %[b], 12(%[p])\n\t", ,
				, [a] "r"(pl[0]), [b] "r"(pl[1]));
		return 1;
	case 4:
		STRATA_RSEQ_LOG("movq %[a], 4(%[p])\n\t"
				"movq %[b], 12(%[p])\n\t"
				"movq %[c], 20(%[p])\n\t", ,
				, [a] "r"(pl[0]), [b] "r"(pl[1]), [c] "r"(pl[2]));
		return 1;
	case 5:
		STRATA_RSEQ_LOG("movq %[a], 4(%[p])\n\t"
				"movq %[b], 12(%[p])\n\t"
				"movq %[c], 20(%[p])\n\t"
				"movq %[d], 28(%[p])\n\t", ,
				, [a] "r"(pl[0]), [b] "r"(pl[1]), [c] "r"(pl[2]),
				[d] "r"(pl[3]));
		return 1;
	default: /* a copy loop from memory */
		STRATA_RSEQ_LOG("xorl %%ecx, %%ecx\n\t"
				"5:\n\t"
				"movq (%[src], %%rcx, 8), %%rdx\n\t"
				"movq %%rdx, 4(%[p], %%rcx, 8)\n\t"
				"incq %%rcx\n\t"
				"cmpq %[n], %%rcx\n\t"
				"jb 5b\n\t",
				STRATA_RSEQ_CLOBBER_CX_DX,
				, [src] "r"(pl), [n] "r"((uint64_t)words - 1));
		return 1;
	}
fail:
	return 0;
}

/* Outcome of strata_rseq_commit(). */
enum strata_rseq_commit_outcome {
	STRATA_RSEQ_COMMITTED = 0, /* added to the local counter */
	STRATA_RSEQ_MIGRATED = 1,  /* on another CPU: nothing added */
	STRATA_RSEQ_ABORTED = 2,   /* preempted or signalled: nothing added */
};

/*
 * Add `bytes` to the local commit counter *cc if running on `cpu` (a
 * plain add: the section's commit): STRATA_RSEQ_COMMITTED. Otherwise
 * nothing is added: STRATA_RSEQ_MIGRATED if the thread is on another CPU
 * now (the caller adds to the remote counter with a locked instruction),
 * STRATA_RSEQ_ABORTED if the section was aborted (the caller may retry).
 */
static strata_always_inline enum strata_rseq_commit_outcome
strata_rseq_commit(struct rseq *rs, uint32_t cpu, uint64_t *cc, uint64_t bytes)
{
	__asm__ __volatile__ goto(
		STRATA_RSEQ_BEGIN
		"cmpl %[cpu], %[cur_cpu]\n\t"
		"jnz %l[moved]\n\t"
		"addq %[bytes], (%[cc])\n\t"            /* commit */
		STRATA_RSEQ_END(aborted)
		:
		: [cpu] "r"(cpu), [cur_cpu] "m"(rs->cpu_id),
		  [rseq_cs] "m"(rs->rseq_cs), [cc] "r"(cc), [bytes] "r"(bytes)
		: "memory", "cc", "rax"
		: moved, aborted);
	return STRATA_RSEQ_COMMITTED;
moved:
	return STRATA_RSEQ_MIGRATED;
aborted:
	return STRATA_RSEQ_ABORTED;
}

#endif /* __x86_64__ && STRATA_HAVE_RSEQ */

#endif /* STRATA_INLINE_RSEQ_H */
