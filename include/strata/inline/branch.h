/* SPDX-License-Identifier: MIT */
/* Static branches: the patchable 5-byte jump at each tracepoint site (docs/patch.md). */
#ifndef STRATA_INLINE_BRANCH_H
#define STRATA_INLINE_BRANCH_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef STRATA_API
#define STRATA_API __attribute__((visibility("default")))
#endif

/*
 * Where the site can be patched: x86-64 ELF, and a compiler with
 * `asm goto` (GCC 5+, Clang 9+). Elsewhere, or with -DSTRATA_NO_STATIC_BRANCH,
 * STRATA_BRANCH() is a plain `goto`: the tracepoint is today's mask test
 * inline (docs/patch.md, "Fallback").
 */
#if !defined(STRATA_DISABLE) && !defined(STRATA_NO_STATIC_BRANCH) &&          \
	defined(__x86_64__) && defined(__ELF__)
#if defined(__clang__)
#if __clang_major__ >= 9
#define STRATA_HAVE_STATIC_BRANCH 1
#endif
#elif defined(__GNUC__) && __GNUC__ >= 5
#define STRATA_HAVE_STATIC_BRANCH 1
#endif
#endif

/*
 * One site descriptor (docs/patch.md, "The section"): 16 bytes in the
 * section __strata_sites of the binary or shared library the site is in.
 * Offsets are relative to the field that holds them, so the section needs
 * no dynamic relocation and stays read-only.
 */
struct strata_site {
	int32_t site;   /* the 5-byte instruction */
	int32_t target; /* the tracing code the jump goes to */
	int32_t flag;   /* the event's enable flag (volatile uint8_t), 0: none */
	uint16_t major;
	uint16_t reserved;
};

/*
 * Hand the library the sites of one binary or shared library, [start,
 * stop), and take them back before its code is unmapped (dlclose). Each
 * site is patched at once to what the mask and the flags say, and after
 * that whenever they change. Called by the constructor and destructor
 * below, once per translation unit: a range already registered is not
 * registered again. Not async-signal-safe (allocates). Returns 0,
 * -ENOMEM (the sites stay jumps to the mask test: correct, not patched),
 * or -EINVAL (a descriptor out of bounds).
 */
STRATA_API int strata_sites_register(const struct strata_site *start,
				     const struct strata_site *stop);
STRATA_API void strata_sites_unregister(const struct strata_site *start);

/* How this process's sites run: "patched" (static branches), or "mask"
 * (every site jumps to its mask test: STRATA_PATCH=0, or patching is
 * impossible here). Any thread. */
STRATA_API const char *strata_sites_mode(void);

#ifdef STRATA_HAVE_STATIC_BRANCH

/*
 * The site: 8 bytes on an 8-byte boundary, a `jmp rel32` to `label` (e9
 * and 4 bytes) then a 3-byte no-op (0f 1f 00). The library turns it off
 * by making the jump the 5-byte no-op (0f 1f 44 00 00) and on by making it
 * the jump again, each time with one aligned 8-byte store of the whole
 * site (docs/patch.md): a core that runs it meanwhile sees the old 8
 * bytes or the new ones, never a mix, and no int3 is needed. Before it,
 * .balign's no-ops (0 to 7 bytes). It is assembled as the jump, so that
 * a site the library never patches (not yet registered, or patching
 * refused) takes the mask test: always correct, and the library only ever
 * turns off what is off.
 * The descriptor's section takes the group of the code's ("a?"): a C++
 * inline function emitted in several objects keeps one copy, and the
 * descriptors of the copies the linker drops go with them.
 * `flagrel` is the flag's descriptor field as assembler text: "0" (no
 * flag), or "SYMBOL+INDEX-." (strata-gen). A major that is not a
 * constant (STRATA_EVENTn of a variable) is recorded as 63, which the
 * library never turns off: that site always takes the mask test.
 */
#define STRATA_BRANCH(major, flagrel, label)                                   \
	__asm__ goto(".balign 8\n"                                             \
		     "1:\t.byte 0xe9\n\t.long %l1 - 2f\n"                       \
		     "2:\t.byte 0x0f, 0x1f, 0x00\n\t"                            \
		     ".pushsection __strata_sites,\"a?\",@progbits\n\t"         \
		     ".balign 4\n\t"                                           \
		     ".long 1b - ., %l1 - ., " flagrel ", %c0\n\t"             \
		     ".popsection"                                             \
		     : : "i"(__builtin_constant_p(major) ? (major) : 63)     \
		     : : label)

/*
 * Each binary and shared library registers its own section: the linker
 * defines __start_/__stop_ for a section named like a C identifier (the
 * names are the linker's, hence their leading underscores). Hidden, so
 * that each DSO sees its own and not the first one loaded; weak, so that
 * a DSO without a site links (both are then null). The constructor is
 * weak and hidden too: one per DSO, run once per translation unit that
 * included this header, which strata_sites_register() tolerates. The
 * destructor unregisters before dlclose() unmaps the code.
 */
extern const struct strata_site __start___strata_sites[]
	__attribute__((weak, visibility("hidden")));
extern const struct strata_site __stop___strata_sites[]
	__attribute__((weak, visibility("hidden")));
void strata_sites_dso_register(void);
void strata_sites_dso_unregister(void);

/* The library's two calls again, weak: a program that includes this
 * header for its constants only, and has no site, links without
 * libstrata (the calls are then null and never made). Not where they are
 * defined (lib/patch.c), which would make the definitions weak. */
#ifndef STRATA_SITES_DEFINE
extern int strata_sites_register_weak(const struct strata_site *,
				      const struct strata_site *)
	__asm__("strata_sites_register") __attribute__((weak));
extern void strata_sites_unregister_weak(const struct strata_site *)
	__asm__("strata_sites_unregister") __attribute__((weak));

__attribute__((weak, visibility("hidden"), constructor)) void
strata_sites_dso_register(void)
{
	if (&__start___strata_sites[0] != &__stop___strata_sites[0] &&
	    strata_sites_register_weak)
		(void)strata_sites_register_weak(&__start___strata_sites[0],
						 &__stop___strata_sites[0]);
}

__attribute__((weak, visibility("hidden"), destructor)) void
strata_sites_dso_unregister(void)
{
	if (&__start___strata_sites[0] != &__stop___strata_sites[0] &&
	    strata_sites_unregister_weak)
		strata_sites_unregister_weak(&__start___strata_sites[0]);
}
#endif /* STRATA_SITES_DEFINE */

#else /* no static branch: the site always goes on to the mask test */

#define STRATA_BRANCH(major, flagrel, label) goto label

#endif /* STRATA_HAVE_STATIC_BRANCH */

#ifdef __cplusplus
}
#endif

#endif /* STRATA_INLINE_BRANCH_H */
