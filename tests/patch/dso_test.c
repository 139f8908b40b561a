/* SPDX-License-Identifier: MIT */
/* Static branches across shared libraries: dlopen before and after enabling, dlclose while toggling, per-event flags, fork. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <strata/reader.h>
#include <strata/strata.h>

#include "text.h"

/*
 * dso_test -o DIR -m patched|mask LIB_A LIB_B LIB_C
 *
 * LIB_A, LIB_B and LIB_C are three builds of dso_lib.c: each has a site of major
 * 21 (STRATA_EVENT1) and the sites of dsoev:one and dsoev:two (major 22,
 * with flags). The phases below log with payloads that name them, and
 * the trace must hold exactly the events each phase expects.
 */

typedef void (*sites_fn)(const struct strata_site **, const struct strata_site **);
typedef void (*fire_fn)(uint64_t);

struct lib {
	void *h;
	sites_fn sites;
	fire_fn fire;
};

static int patched;
static int failures;

#define FAIL(...)                                                              \
	do {                                                                   \
		fprintf(stderr, "dso_test: FAIL: " __VA_ARGS__);               \
		fputc('\n', stderr);                                           \
		failures++;                                                    \
	} while (0)

static int lib_open(struct lib *l, const char *path)
{
	l->h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!l->h) {
		fprintf(stderr, "dso_test: %s\n", dlerror());
		return -1;
	}
	l->sites = (sites_fn)(uintptr_t)dlsym(l->h, "lib_sites");
	l->fire = (fire_fn)(uintptr_t)dlsym(l->h, "lib_fire");
	return l->sites && l->fire ? 0 : -1;
}

/* Each site of `l` is what the mask and its flag say: a jump to its
 * tracing code while its event may fire, the no-op otherwise (always the
 * jump in the mask fallback). Returns the number of sites seen. */
static unsigned check(const struct lib *l, const char *when)
{
	const struct strata_site *s, *e;
	unsigned n = 0;

	l->sites(&s, &e);
	for (; s < e; s++, n++) {
		const uint8_t *at = (const uint8_t *)&s->site + s->site;
		const uint8_t *to = (const uint8_t *)&s->target + s->target;
		const volatile uint8_t *flag =
			s->flag ? (const volatile uint8_t *)&s->flag + s->flag : NULL;
		int on = !patched || ((strata_majors() & STRATA_MAJOR_BIT(s->major)) &&
				      (!flag || *flag));
		int st = site_state(at, to);

		if (st != on)
			FAIL("%s: site of major %u (flag %s) is %s, wanted %s", when,
			     s->major, flag ? (*flag ? "on" : "off") : "none",
			     st == 1 ? "a jump" : st ? "neither" : "the no-op",
			     on ? "a jump" : "the no-op");
	}
	if (n != 3)
		FAIL("%s: %u sites in the library, wanted 3", when, n);
	return n;
}

static struct lib toggled;
static int stop_toggling;

static void *toggler(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop_toggling, __ATOMIC_ACQUIRE)) {
		strata_enable_majors(STRATA_MAJOR_BIT(21));
		strata_disable_majors(STRATA_MAJOR_BIT(21));
	}
	return NULL;
}

/* Phase 5 of main(): a library is opened and closed (unmapped: nothing
 * else holds it) again and again while another thread patches every site
 * of major 21, its own among them; then the sites are patched once more,
 * the library gone (a site left registered would be written unmapped). */
static void churn(const char *path)
{
	pthread_t t;

	pthread_create(&t, NULL, toggler, NULL);
	for (int i = 0; i < 200; i++) {
		if (lib_open(&toggled, path)) {
			FAIL("dlopen %s", path);
			break;
		}
		toggled.fire(500);
		dlclose(toggled.h);
	}
	__atomic_store_n(&stop_toggling, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	strata_enable_majors(STRATA_MAJOR_BIT(21));
	strata_disable_majors(STRATA_MAJOR_BIT(21));
}

/* fork after patching: the child's text is its parent's, and the child
 * (no consumer of its own) sets its mask to 0: every site must follow,
 * and patch again when the child enables a major. */
static void forked(struct lib *a, struct lib *b)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		failures = 0;
		if (strata_majors())
			FAIL("child: mask %#llx, wanted 0", (unsigned long long)strata_majors());
		check(a, "child, mask 0");
		strata_enable_majors(STRATA_MAJOR_BIT(21));
		check(b, "child, major 21 enabled");
		_exit(failures ? 1 : 0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		FAIL("fork child failed");
}

/* Events of the trace by (id, payload), against what the phases expect. */
static void verify(const char *dir)
{
	static const struct {
		uint32_t id;
		uint64_t v;
		unsigned n;
	} want[] = {
		{21 << 16 | 1, 100, 1}, /* phase 1: A loaded after enabling 21 */
		{21 << 16 | 1, 200, 0}, /* phase 2: 21 disabled */
		{22 << 16 | 1, 300, 1}, /* phase 3: dsoev:one on, in A */
		{22 << 16 | 1, 301, 1}, /* and in B, loaded while it was off */
		{22 << 16 | 2, 300, 0}, /* dsoev:two off */
		{22 << 16 | 2, 301, 0},
		{21 << 16 | 1, 600, 2}, /* phase 6: 21 on, both libraries */
		{22 << 16 | 2, 600, 0},
	};
	unsigned got[sizeof(want) / sizeof(want[0])] = {0};
	struct strata_trace *t;
	struct strata_iter *it;
	const struct strata_event *ev;

	if (strata_trace_open(dir, NULL, &t) ||
	    strata_iter_create(t, &(struct strata_iter_options){-1, 0, NULL}, &it)) {
		FAIL("cannot read %s", dir);
		return;
	}
	while (strata_iter_next(it, &ev) > 0) {
		uint64_t v;
		if (ev->size < 8)
			continue;
		memcpy(&v, ev->payload, 8);
		for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
			got[i] += want[i].id == ev->id && want[i].v == v;
	}
	strata_iter_destroy(it);
	strata_trace_close(t);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (got[i] != want[i].n)
			FAIL("event %u:%u payload %llu: %u in the trace, wanted %u",
			     want[i].id >> 16, want[i].id & 0xffff,
			     (unsigned long long)want[i].v, got[i], want[i].n);
}

int main(int argc, char **argv)
{
	struct strata_options opt;
	struct lib a, b;
	const char *dir = NULL, *mode = "patched";
	int c;

	while ((c = getopt(argc, argv, "o:m:")) != -1) {
		if (c == 'o')
			dir = optarg;
		else if (c == 'm')
			mode = optarg;
		else
			return 2;
	}
	if (!dir || optind + 3 != argc)
		return 2;
	patched = !strcmp(mode, "patched");
	strata_options_from_env(&opt);
	opt.output = dir;
	opt.mode = STRATA_MODE_BLOCK;
	opt.majors = STRATA_MAJOR_BIT(30);
	if (strata_start(&opt))
		return 1;
	if (strcmp(strata_sites_mode(), mode))
		FAIL("mode %s, wanted %s", strata_sites_mode(), mode);

	/* 1: a library loaded after its major was enabled */
	strata_enable_majors(STRATA_MAJOR_BIT(21));
	if (lib_open(&a, argv[optind]))
		return 1;
	check(&a, "A loaded after enabling 21");
	a.fire(100);
	/* 2: disabled */
	strata_disable_majors(STRATA_MAJOR_BIT(21));
	check(&a, "21 disabled");
	a.fire(200);
	/* 3: a library loaded while off; one event of a subsystem enabled */
	if (lib_open(&b, argv[optind + 1]))
		return 1;
	check(&b, "B loaded, all off");
	strata_disable("dsoev:two");
	if (strata_enable("dsoev:one") < 1)
		FAIL("strata_enable(dsoev:one) matched nothing");
	check(&a, "A, dsoev:one enabled");
	check(&b, "B, dsoev:one enabled");
	a.fire(300);
	b.fire(301);
	/* 4: fork after patching */
	forked(&a, &b);
	/* 5: dlclose and dlopen while other sites toggle */
	churn(argv[optind + 2]);
	/* 6: both on */
	strata_enable_majors(STRATA_MAJOR_BIT(21));
	check(&a, "A, 21 on after the churn");
	check(&b, "B, 21 on after the churn");
	a.fire(600);
	b.fire(600);
	strata_stop();
	verify(dir);
	printf("dso_test: %s, %d failures\n", mode, failures);
	return failures ? 1 : 0;
}
