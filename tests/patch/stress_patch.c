/* SPDX-License-Identifier: MIT */
/* Static branches under fire: thousands of sites run on every CPU while another thread patches them (docs/patch.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <strata/reader.h>
#include <strata/strata.h>

#include "text.h"

/*
 * stress_patch -o DIR -m patched|mask [-r ROUNDS] [-t TOGGLES]
 *
 * Logger threads (one per CPU) call every site once per round, each call
 * a one-word event whose payload names its thread and sequence number;
 * a toggler thread enables and disables the sites' major, at least
 * TOGGLES times, holding each state for about HOLD calls of the loggers
 * (the calls over twice TOGGLES: counted, not timed), and every 16
 * toggles sends a logger SIGUSR1, whose handler calls one more site.
 * Loggers wait for the toggler between rounds (round r starts after
 * r * TOGGLES / ROUNDS toggles), the toggler stops holding when every
 * logger waits: both paces meet, whatever the machine. Then the trace
 * must hold exactly the events logged while the major was on.
 *
 * The accounting: `epoch` counts the toggler's steps, +1 before and +1
 * after each strata_enable_majors()/strata_disable_majors() call, so
 * epoch % 4 is 0 (off), 1 (turning on), 2 (on), 3 (turning off). A
 * logger reads it before and after its call: the same value both times,
 * 2: the call ran wholly while on, the event must be in the trace; 0: it
 * must not; anything else: the call raced with a toggle, either is right.
 * (x86 keeps loads in order and the toggler's stores in order, so a call
 * that read the mask cleared reads the epoch moved past 2 after it.)
 */

#define PMAJ 9
#define OTHER 10
#define MAX_THREADS 64
#define SIG_SEQ_MAX 65536
#define PAYLOAD_SIG (UINT64_C(1) << 63)

enum { MUST_NOT, MUST, EITHER };

#define SITE(n)                                                                \
	static __attribute__((noinline)) void site_##n(uint64_t v)             \
	{                                                                      \
		STRATA_EVENT1(PMAJ, n, v);                                     \
	}
#include "sites.inc"
#undef SITE
#define SITE(n) site_##n,
static void (*const sites[])(uint64_t) = {
#include "sites.inc"
};
#undef SITE
#define NSITES (sizeof(sites) / sizeof(sites[0]))

static __attribute__((noinline)) void site_sig(uint64_t v)
{
	STRATA_EVENT1(PMAJ, 60000, v);
}

static unsigned long epoch;
static unsigned long toggles;
static int loggers_done;
static unsigned waiting; /* loggers waiting for toggles */
static unsigned nthreads, rounds;
static unsigned long min_toggles;
static pthread_t tids[MAX_THREADS];

struct logger {
	unsigned idx;
	uint8_t *cls;                 /* per call, MUST_NOT/MUST/EITHER */
	uint64_t n;
	uint8_t sig_cls[SIG_SEQ_MAX]; /* the same, for the handler's calls */
	uint32_t nsig;
	uint8_t *seen, *sig_seen;
};
static struct logger *lg;
static __thread struct logger *me;

static uint8_t classify(unsigned long e1, unsigned long e2)
{
	if (e1 != e2)
		return EITHER;
	return e1 % 4 == 2 ? MUST : e1 % 4 == 0 ? MUST_NOT : EITHER;
}

static void on_usr1(int sig)
{
	struct logger *l = me;
	(void)sig;
	if (!l || l->nsig >= SIG_SEQ_MAX)
		return;
	uint32_t s = l->nsig++;
	unsigned long e1 = __atomic_load_n(&epoch, __ATOMIC_SEQ_CST);
	site_sig(PAYLOAD_SIG | (uint64_t)l->idx << 48 | s);
	unsigned long e2 = __atomic_load_n(&epoch, __ATOMIC_SEQ_CST);
	l->sig_cls[s] = classify(e1, e2);
}

static void *logger_main(void *arg)
{
	struct logger *l = arg;

	me = l;
	/* The last logger blocks every signal, as servers' worker threads
	 * often do: patching must never need one (docs/patch.md: an int3
	 * on a site, with SIGTRAP blocked, would kill the process). */
	if (l->idx == nthreads - 1) {
		sigset_t all;
		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, NULL);
	}
	for (unsigned r = 0; r < rounds; r++) {
		__atomic_add_fetch(&waiting, 1, __ATOMIC_SEQ_CST);
		while (__atomic_load_n(&toggles, __ATOMIC_RELAXED) <
		       (unsigned long)r * min_toggles / rounds)
			sched_yield();
		__atomic_sub_fetch(&waiting, 1, __ATOMIC_SEQ_CST);
		for (size_t i = 0; i < NSITES; i++) {
			uint64_t s = l->n;
			__atomic_store_n(&l->n, s + 1, __ATOMIC_RELAXED);
			unsigned long e1 = __atomic_load_n(&epoch, __ATOMIC_SEQ_CST);
			sites[i]((uint64_t)l->idx << 48 | s);
			unsigned long e2 = __atomic_load_n(&epoch, __ATOMIC_SEQ_CST);
			l->cls[s] = classify(e1, e2);
		}
	}
	return NULL;
}

static uint64_t calls(void)
{
	uint64_t n = 0;
	for (unsigned i = 0; i < nthreads; i++)
		n += __atomic_load_n(&lg[i].n, __ATOMIC_RELAXED);
	return n;
}

/* Keep the state for `hold` calls of the loggers, or until they all
 * wait for us, or end. */
static void hold_state(uint64_t hold)
{
	uint64_t until = calls() + hold;
	while (calls() < until && !__atomic_load_n(&loggers_done, __ATOMIC_ACQUIRE) &&
	       __atomic_load_n(&waiting, __ATOMIC_SEQ_CST) < nthreads)
		sched_yield();
}

static void *toggler_main(void *arg)
{
	uint64_t hold = (uint64_t)nthreads * rounds * NSITES / (2 * min_toggles);

	(void)arg;
	while (!__atomic_load_n(&loggers_done, __ATOMIC_ACQUIRE)) {
		__atomic_add_fetch(&epoch, 1, __ATOMIC_SEQ_CST);
		strata_enable_majors(STRATA_MAJOR_BIT(PMAJ));
		__atomic_add_fetch(&epoch, 1, __ATOMIC_SEQ_CST);
		hold_state(hold);
		__atomic_add_fetch(&epoch, 1, __ATOMIC_SEQ_CST);
		strata_disable_majors(STRATA_MAJOR_BIT(PMAJ));
		__atomic_add_fetch(&epoch, 1, __ATOMIC_SEQ_CST);
		hold_state(hold);
		unsigned long t = __atomic_add_fetch(&toggles, 1, __ATOMIC_RELAXED);
		if (t % 16 == 0)
			pthread_kill(tids[t / 16 % nthreads], SIGUSR1);
	}
	return NULL;
}

/* The section of this program: every site a jump (on), or the no-op. */
extern const struct strata_site __start___strata_sites[] __attribute__((weak, visibility("hidden")));
extern const struct strata_site __stop___strata_sites[] __attribute__((weak, visibility("hidden")));

static int check_sites(int want_jump, const char *when)
{
	unsigned bad = 0, n = 0;

	for (const struct strata_site *s = __start___strata_sites; s < __stop___strata_sites; s++) {
		const uint8_t *at = (const uint8_t *)&s->site + s->site;
		const uint8_t *to = (const uint8_t *)&s->target + s->target;

		if (s->major != PMAJ)
			continue;
		n++;
		bad += site_state(at, to) != want_jump;
	}
	if (n < NSITES + 1 || bad) {
		fprintf(stderr, "stress_patch: FAIL: %s: %u of %u sites are not %s\n", when,
			bad, n, want_jump ? "jumps to their tracing code" : "no-ops");
		return 1;
	}
	return 0;
}

static int verify(const char *dir)
{
	struct strata_trace *t;
	struct strata_iter *it;
	const struct strata_event *ev;
	uint64_t recorded = 0, must = 0, mustnot = 0, either = 0, bad = 0;

	if (strata_trace_open(dir, NULL, &t) || strata_iter_create(t, &(struct strata_iter_options){-1, 0, NULL}, &it)) {
		fprintf(stderr, "stress_patch: FAIL: cannot read %s\n", dir);
		return 1;
	}
	while (strata_iter_next(it, &ev) > 0) {
		uint64_t w;
		if (ev->id >> 16 != PMAJ || ev->size < 8)
			continue;
		memcpy(&w, ev->payload, 8);
		unsigned ti = (unsigned)(w >> 48 & 0x7fff);
		uint64_t s = w & ((UINT64_C(1) << 48) - 1);
		int sig = !!(w & PAYLOAD_SIG);
		recorded++;
		if (ti >= nthreads || s >= (sig ? lg[ti].nsig : lg[ti].n) ||
		    (sig ? lg[ti].sig_seen : lg[ti].seen)[s]++) {
			if (bad++ < 5)
				fprintf(stderr, "stress_patch: event %#llx unknown or twice\n",
					(unsigned long long)w);
		}
	}
	strata_iter_destroy(it);
	strata_trace_close(t);
	for (unsigned ti = 0; ti < nthreads; ti++) {
		for (int sig = 0; sig < 2; sig++) {
			uint64_t n = sig ? lg[ti].nsig : lg[ti].n;
			const uint8_t *cls = sig ? lg[ti].sig_cls : lg[ti].cls;
			const uint8_t *seen = sig ? lg[ti].sig_seen : lg[ti].seen;
			for (uint64_t s = 0; s < n; s++) {
				must += cls[s] == MUST;
				either += cls[s] == EITHER;
				mustnot += cls[s] == MUST_NOT;
				if ((cls[s] == MUST && !seen[s]) || (cls[s] == MUST_NOT && seen[s])) {
					if (bad++ < 5)
						fprintf(stderr, "stress_patch: thread %u %s call %llu: %s\n",
							ti, sig ? "signal" : "site", (unsigned long long)s,
							seen[s] ? "recorded while disabled" : "lost while enabled");
				}
			}
		}
	}
	printf("stress_patch: %u threads x %zu sites x %u rounds, %lu toggles; %llu events "
	       "recorded, %llu had to be, %llu had not to be, %llu raced a toggle\n",
	       nthreads, NSITES, rounds, toggles, (unsigned long long)recorded,
	       (unsigned long long)must, (unsigned long long)mustnot, (unsigned long long)either);
	if (bad)
		fprintf(stderr, "stress_patch: FAIL: %llu events misaccounted\n", (unsigned long long)bad);
	return bad != 0;
}

int main(int argc, char **argv)
{
	struct strata_options opt;
	struct strata_stats st;
	const char *dir = NULL, *want_mode = "patched";
	pthread_t tog;
	int c, ret = 0;

	rounds = 200;
	min_toggles = 2000;
	while ((c = getopt(argc, argv, "o:m:r:t:")) != -1) {
		switch (c) {
		case 'o': dir = optarg; break;
		case 'm': want_mode = optarg; break;
		case 'r': rounds = (unsigned)atoi(optarg); break;
		case 't': min_toggles = strtoul(optarg, NULL, 0); break;
		default: return 2;
		}
	}
	if (!dir || !rounds)
		return 2;
	if (strcmp(strata_sites_mode(), want_mode)) {
		fprintf(stderr, "stress_patch: FAIL: mode %s, wanted %s\n", strata_sites_mode(), want_mode);
		return 1;
	}
	int patched = !strcmp(want_mode, "patched");
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	nthreads = ncpu < 2 ? 2 : ncpu > MAX_THREADS ? MAX_THREADS : (unsigned)ncpu;

	strata_options_from_env(&opt);
	opt.output = dir;
	opt.mode = STRATA_MODE_BLOCK; /* nothing dropped: the count is exact */
	opt.majors = STRATA_MAJOR_BIT(OTHER);
	if ((ret = strata_start(&opt))) {
		fprintf(stderr, "stress_patch: strata_start: %s\n", strerror(-ret));
		return 1;
	}
	/* the mask decides, before any thread runs */
	ret |= check_sites(!patched, "at start, disabled");
	strata_enable_majors(STRATA_MAJOR_BIT(PMAJ));
	ret |= check_sites(1, "enabled");
	strata_disable_majors(STRATA_MAJOR_BIT(PMAJ));
	ret |= check_sites(!patched, "disabled again");

	signal(SIGUSR1, on_usr1);
	lg = calloc(nthreads, sizeof(*lg));
	for (unsigned i = 0; i < nthreads; i++) {
		lg[i].idx = i;
		lg[i].cls = malloc((size_t)rounds * NSITES);
		lg[i].seen = calloc((size_t)rounds * NSITES, 1);
		lg[i].sig_seen = calloc(SIG_SEQ_MAX, 1);
		pthread_create(&tids[i], NULL, logger_main, &lg[i]);
	}
	pthread_create(&tog, NULL, toggler_main, NULL);
	for (unsigned i = 0; i < nthreads; i++)
		pthread_join(tids[i], NULL);
	__atomic_store_n(&loggers_done, 1, __ATOMIC_RELEASE);
	pthread_join(tog, NULL);

	ret |= check_sites(!patched, "after the run, disabled");
	if (toggles < 10)
		printf("stress_patch: note: only %lu toggles (the toggler hardly ran)\n", toggles);
	strata_get_stats(&st);
	strata_stop();
	if (st.lost_full + st.lost_busy + st.lost_nested + st.lost_no_ring + st.lost_io) {
		fprintf(stderr, "stress_patch: FAIL: events lost by the ring: the count cannot be exact\n");
		return 1;
	}
	ret |= verify(dir);
	return ret;
}
