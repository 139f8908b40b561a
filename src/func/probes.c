/* SPDX-License-Identifier: MIT */
/* libstrata-func.so: the hooks of gcc's and clang's -finstrument-functions, logging each call's entry and exit (docs/profile.md, "Function probes"). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <strata/strata.h>

#include "func.h"

/* The library's own code is built with -fno-instrument-functions; the
 * hooks say so again, since a hook that called itself would never end. */
#define FN_API __attribute__((visibility("default"), no_instrument_function))
#define FN_TLS __thread __attribute__((tls_model("initial-exec")))

/*
 * Per thread, in static TLS (initial-exec: no allocation at a first call,
 * so that the hooks are safe in signal handlers and before main). `depth`
 * counts the calls entered since tracing was on and not yet left, logged
 * or not, so that a call's exit is skipped exactly when its entry was.
 */
struct fn_thread {
	uint32_t depth;
	bool resolving; /* in dladdr(): a nested call is not excluded */
	bool keyed;     /* the exit destructor is armed */
	uint64_t skipped;
};

static FN_TLS struct fn_thread fn_t;
/* Asked for (STRATA_FUNCTIONS=1) and registered: a session that turns
 * every major class on does not turn on probes nobody asked for. */
static bool fn_on;
static uint32_t fn_max_depth = 256; /* STRATA_FUNCTIONS_DEPTH */
static pthread_key_t fn_key;
static bool fn_have_key;

/* ---- exclusions: STRATA_FUNCTIONS_EXCLUDE=GLOB,GLOB... ------------------- */

/*
 * A glob matches a function's symbol or the path of the file it is in
 * (dladdr()). The verdict of each function is kept the first time it is
 * called, in a table that only grows (an address and its verdict, the
 * verdict stored first and the address published with a release), so a
 * call pays dladdr() once per function; when the table is full, calls of
 * functions not in it are logged. A function without a dynamic symbol
 * (static, in an executable not linked with -rdynamic) is matched by its
 * file only.
 */
#define FN_EXCL_SLOTS 8192
static char *fn_globs[32];
static unsigned fn_nglobs;
static uintptr_t fn_excl_addr[FN_EXCL_SLOTS];
static uint8_t fn_excl_verdict[FN_EXCL_SLOTS];

__attribute__((no_instrument_function)) static bool fn_match(const void *f)
{
	Dl_info di;

	if (!dladdr(f, &di))
		return false;
	for (unsigned i = 0; i < fn_nglobs; i++)
		if ((di.dli_sname && !fnmatch(fn_globs[i], di.dli_sname, 0)) ||
		    (di.dli_fname && !fnmatch(fn_globs[i], di.dli_fname, 0)))
			return true;
	return false;
}

__attribute__((no_instrument_function)) static bool fn_excluded(struct fn_thread *t,
								 const void *f)
{
	uintptr_t a = (uintptr_t)f;
	size_t h = (size_t)((a * 0x9E3779B97F4A7C15ull) >> 51);

	for (unsigned probe = 0; probe < 16; probe++, h++) {
		size_t i = h & (FN_EXCL_SLOTS - 1);
		uintptr_t k = __atomic_load_n(&fn_excl_addr[i], __ATOMIC_ACQUIRE);
		if (k == a)
			return fn_excl_verdict[i];
		if (k)
			continue;
		if (t->resolving) /* a call from inside dladdr()'s own */
			return false;
		t->resolving = true;
		bool v = fn_match(f);
		t->resolving = false;
		/* the verdict, then the address (another thread may have
		 * taken the slot meanwhile: then the next one) */
		uintptr_t none = 0;
		fn_excl_verdict[i] = v;
		if (__atomic_compare_exchange_n(&fn_excl_addr[i], &none, a, false,
						__ATOMIC_RELEASE, __ATOMIC_RELAXED) ||
		    none == a)
			return v;
	}
	return false; /* the table is full around it: logged */
}

/* ---- the hooks -------------------------------------------------------------- */

/*
 * Off (the usual case: STRATA_FUNCTIONS not set, or tracing stopped), a
 * hook costs a load of the mask and a branch (and one more load when
 * the session has every major class on). On, an entry is one
 * compact event of two words and an exit one of one word, written inline
 * through strata's fast path; deeper than the bound or excluded, a call
 * is counted instead, and its exit matched by depth.
 */
FN_API void __cyg_profile_func_enter(void *f, void *site)
{
	if (strata_likely(!strata_major_enabled(FUNC_MAJOR)) || !fn_on)
		return;
	struct fn_thread *t = &fn_t;
	if (t->depth++ >= fn_max_depth || (fn_nglobs && fn_excluded(t, f))) {
		t->skipped++;
		return;
	}
	STRATA_EVENT2(FUNC_MAJOR, FUNC_ENTRY, (uintptr_t)f, (uintptr_t)site);
}

FN_API void __cyg_profile_func_exit(void *f, void *site)
{
	(void)site;
	if (strata_likely(!strata_major_enabled(FUNC_MAJOR)) || !fn_on)
		return;
	struct fn_thread *t = &fn_t;
	if (!t->depth) /* entered before tracing was on */
		return;
	if (--t->depth >= fn_max_depth || (fn_nglobs && fn_excluded(t, f)))
		return;
	STRATA_EVENT1(FUNC_MAJOR, FUNC_EXIT, (uintptr_t)f);
	/* the thread's count of calls not logged, at its exit: armed at
	 * its first logged return, outside any signal handler's reach of
	 * the entry path */
	if (strata_unlikely(!t->keyed) && fn_have_key) {
		t->keyed = true;
		pthread_setspecific(fn_key, t);
	}
}

__attribute__((no_instrument_function)) static void fn_log_skipped(struct fn_thread *t)
{
	if (t->skipped)
		STRATA_EVENT1(FUNC_MAJOR, FUNC_SKIPPED, t->skipped);
}

__attribute__((no_instrument_function)) static void fn_thread_exit(void *p)
{
	fn_log_skipped(p);
}

/* ---- descriptors, set-up ---------------------------------------------------- */

static const struct strata_field_desc fn_f_entry[] = {
	{ "fn", STRATA_T_PTR, 0, STRATA_F_HEX },
	{ "site", STRATA_T_PTR, 0, STRATA_F_HEX },
};
static const struct strata_field_desc fn_f_exit[] = {
	{ "fn", STRATA_T_PTR, 0, STRATA_F_HEX },
};
static const struct strata_field_desc fn_f_skipped[] = {
	{ "calls", STRATA_T_U64, 0, 0 },
};

#define FN_DESC(nm, minor_, kind_, f, desc)                                    \
	{ .subsystem = "func", .name = nm, .major = FUNC_MAJOR,                \
	  .kind = kind_, .minor = minor_,                                      \
	  .nfields = sizeof(f) / sizeof(f[0]), .fields = f, .description = desc }

/* call_entry / call_exit: `strata intervals` and the viewer pair them
 * per thread by their names (docs/cli.md), as nested intervals. */
static const struct strata_event_desc fn_d_entry = FN_DESC(
	"call_entry", FUNC_ENTRY, STRATA_EV_BEGIN, fn_f_entry,
	"%{fn:x} called from %{site:x}");
static const struct strata_event_desc fn_d_exit = FN_DESC(
	"call_exit", FUNC_EXIT, STRATA_EV_END, fn_f_exit, "%{fn:x} returns");
static const struct strata_event_desc fn_d_skipped = FN_DESC(
	"skipped", FUNC_SKIPPED, STRATA_EV_POINT, fn_f_skipped,
	"the thread's calls not logged: deeper than STRATA_FUNCTIONS_DEPTH, or excluded");

static const struct strata_event_desc *const fn_events[] = {
	&fn_d_entry, &fn_d_exit, &fn_d_skipped,
};
static const struct strata_subsys_desc fn_subsys = {
	"func", FUNC_MAJOR, "function entry and exit (libstrata-func.so)"
};

/* STRATA_FUNCTIONS_EXCLUDE's globs, comma-separated, into fn_globs. */
__attribute__((no_instrument_function)) static void fn_parse_excludes(const char *s)
{
	char *copy = s ? strdup(s) : NULL, *save = NULL;

	for (char *g = copy ? strtok_r(copy, ",", &save) : NULL;
	     g && fn_nglobs < sizeof(fn_globs) / sizeof(fn_globs[0]);
	     g = strtok_r(NULL, ",", &save))
		fn_globs[fn_nglobs++] = g; /* kept: the process's lifetime */
}

/*
 * After libstrata's constructor (it is our dependency), before the
 * program's: the probes stay off unless STRATA_FUNCTIONS=1 (`strata record
 * --functions`), so that a program built with them costs one load per
 * call when nobody asked.
 */
__attribute__((constructor, no_instrument_function)) static void fn_init(void)
{
	const char *on = getenv("STRATA_FUNCTIONS");
	const char *depth = getenv("STRATA_FUNCTIONS_DEPTH");

	if (depth && atoi(depth) > 0)
		fn_max_depth = (uint32_t)atoi(depth);
	fn_parse_excludes(getenv("STRATA_FUNCTIONS_EXCLUDE"));
	fn_have_key = pthread_key_create(&fn_key, fn_thread_exit) == 0;
	fn_on = on && !strcmp(on, "1") &&
		!strata_register(&fn_subsys, fn_events, sizeof(fn_events) / sizeof(fn_events[0]));
	if (!fn_on)
		strata_disable_majors(STRATA_MAJOR_BIT(FUNC_MAJOR));
}

/* The main thread's count: it runs no key destructor at exit. Before
 * libstrata's own destructor stops the trace (we depend on it). */
__attribute__((destructor, no_instrument_function)) static void fn_fini(void)
{
	fn_log_skipped(&fn_t);
}
