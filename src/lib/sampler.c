/* SPDX-License-Identifier: MIT */
/* The in-process CPU-time sampler (STRATA_SAMPLE=HZ): a timer per thread on its CPU clock, and a signal handler that logs the interrupted pc and call chain (docs/profile.md, "The timer sampler"). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <strata/strata.h>

#include "lib/sampler.h"

/*
 * Where perf_event_open is refused (kernel.perf_event_paranoid, a
 * container's seccomp filter), the program samples itself: each of its
 * threads gets a POSIX timer on that thread's own CPU clock that sends it
 * a real-time signal (SIGEV_THREAD_ID) every 1/HZ s of its CPU time, and
 * the handler logs the interrupted pc and a frame-pointer call chain as
 * sample:cpu_clock, through strata's async-signal-safe fast path, on the
 * trace clock. `strata profile` reads them as it reads the kernel's.
 *
 * Threads are found by a watcher thread of ours that lists
 * /proc/self/task every SAMPLER_SCAN_MS: strata has no hook at a thread's
 * start (ring_thread_hook runs at its first event, and a thread that logs
 * nothing, the usual case for a profiled one, would never be sampled),
 * and interposing pthread_create from libstrata would reach every program
 * linked with it. A thread is so sampled from at most SAMPLER_SCAN_MS
 * after its start; timer_create() on another thread's CPU clock with
 * SIGEV_THREAD_ID to it is allowed within a process.
 *
 * Per thread, a slot that the watcher owns (tid, timer, its CPU time at
 * the last scan) and the handler counts into (samples, overruns: the
 * timer's expirations that one signal stands for: the kernel checks
 * CPU-time timers at its tick, so above CONFIG_HZ a signal comes for
 * several periods, and each sample carries that weight). When the thread
 * is gone, or at exit, the watcher logs its totals as sample:thread; a
 * thread that blocks the signal is never interrupted (the kernel keeps one
 * signal pending), and its CPU time x HZ minus the periods its samples
 * stood for is counted as `unavailable`.
 */

#define SAMPLER_SLOTS 4096   /* threads sampled at once; more are not */
#define SAMPLER_SCAN_MS 10   /* how late a new thread may be armed */
#define SAMPLER_RESCAN 10    /* list the threads at least every 10 looks */
#define SAMPLER_REFIND 4     /* stack look-ups per thread after its first */

struct sampler_slot {
	int tid;      /* 0: free (the watcher's) */
	bool armed;   /* timer is ours to delete */
	bool seen;    /* listed at this scan */
	timer_t timer;
	uint64_t cpu0;   /* the thread's CPU time when armed */
	uint64_t cpu_ns; /* the thread's CPU time at the last scan */
	/* the handler's, in its thread only (the watcher reads them once
	 * the timer is deleted and the thread gone, or at exit) */
	uint64_t samples, overruns; /* signals, and periods beyond one each */
	uintptr_t stack_lo, stack_hi; /* the mapping the thread's sp is in */
	unsigned refinds;
};

static struct sampler_slot *slots; /* SAMPLER_SLOTS, mmap()ed once */
static unsigned slots_hw;          /* slots past this were never used */
static unsigned sampler_hz;
static int sampler_sig;       /* the real-time signal we took */
static volatile int sampler_on; /* the handler logs only while set */
static pthread_t watcher;
static bool watcher_running;
static int watcher_tid;
static int stop_fd = -1;      /* an eventfd: the watcher's wake-up */

/* ---- the stack's bounds, from the signal handler ------------------------ */

/*
 * The frame-pointer walk reads only inside the mapping the interrupted sp
 * is in: from sp up to its end, the thread's stack is mapped and
 * readable, so a damaged or absent frame pointer stops the walk instead
 * of faulting. The mapping is found once per thread from
 * /proc/self/maps with open() and read() (both async-signal-safe) into a
 * buffer on the stack; again, a few times, when sp leaves it (the main
 * thread's stack grows; a handler of the program's own on an alternate
 * stack).
 */
static bool hex_range(const char *l, const char *end, uintptr_t *lo, uintptr_t *hi)
{
	uintptr_t v[2] = { 0, 0 };
	int k = 0;

	for (; l < end && k < 2; l++) {
		char c = *l;
		if (c == '-' || c == ' ') {
			k++;
			continue;
		}
		unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0') :
			     c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10) : 16u;
		if (d > 15)
			return false;
		v[k] = v[k] << 4 | d;
	}
	*lo = v[0];
	*hi = v[1];
	return k == 2;
}

static bool stack_find(uintptr_t sp, uintptr_t *lo, uintptr_t *hi)
{
	char buf[4096];
	size_t have = 0;
	bool found = false;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - have);
		if (n <= 0)
			break;
		have += (size_t)n;
		char *line = buf, *nl;
		while ((nl = memchr(line, '\n', have - (size_t)(line - buf)))) {
			uintptr_t a, b;
			if (hex_range(line, nl, &a, &b) && sp >= a && sp < b) {
				*lo = a;
				*hi = b;
				found = true;
				goto out;
			}
			line = nl + 1;
		}
		have -= (size_t)(line - buf);
		if (have == sizeof(buf))
			break; /* a line longer than the buffer: give up */
		memmove(buf, line, have);
	}
out:
	close(fd);
	return found;
}

/* The return addresses above fp, the caller's first, into out. */
static unsigned walk_frames(struct sampler_slot *s, uintptr_t sp, uintptr_t fp, uint64_t *out)
{
	unsigned n = 0;

	if ((sp < s->stack_lo || sp >= s->stack_hi) &&
	    (s->refinds++ > SAMPLER_REFIND || !stack_find(sp, &s->stack_lo, &s->stack_hi)))
		return 0; /* no chain: the pc alone */
	while (n < SAMPLER_FRAMES && fp >= sp && !(fp & 7) && fp < s->stack_hi - 16) {
		const uintptr_t *f = (const uintptr_t *)fp;
		if (!f[1])
			break;
		out[n++] = f[1];
		if (f[0] <= fp) /* frames go up the stack, or it is not one */
			break;
		fp = f[0];
	}
	return n;
}

/* ---- the signal handler -------------------------------------------------- */

static void sampler_handler(int sig, siginfo_t *si, void *ucv)
{
	int saved = errno;
	struct sampler_slot *s = si->si_value.sival_ptr;
	const ucontext_t *uc = ucv;
	uintptr_t pc, sp, fp;

	(void)sig;
	/* a kill() of the same signal, or a timer of a thread gone */
	if (si->si_code != SI_TIMER || !sampler_on || s < slots || s >= slots + SAMPLER_SLOTS)
		goto out;
#if defined(__x86_64__)
	pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
	fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
#elif defined(__aarch64__)
	pc = (uintptr_t)uc->uc_mcontext.pc;
	sp = (uintptr_t)uc->uc_mcontext.sp;
	fp = (uintptr_t)uc->uc_mcontext.regs[29];
#else
	pc = sp = fp = 0; /* no chain, no pc: counted only */
#endif
	/* the periods that ended since the last signal: the kernel checks
	 * CPU-time timers at its tick, so above CONFIG_HZ one signal stands
	 * for several; a signal kept pending longer adds its periods too */
	int over = timer_getoverrun(s->timer);
	uint64_t weight = 1 + (over > 0 ? (uint64_t)over : 0);
	s->overruns += weight - 1;
	s->samples++;
	uint64_t w[3 + SAMPLER_FRAMES] = { pc, 0 };
	if (sp)
		w[1] = walk_frames(s, sp, fp, w + 2);
	w[2 + SAMPLER_FRAMES] = weight;
	strata_log_words(SAMPLER_MAJOR, SAMPLER_CPU_CLOCK, w, 3 + SAMPLER_FRAMES);
out:
	errno = saved;
}

/* ---- arming threads: the watcher ----------------------------------------- */

/* The CPU clock of thread tid (the kernel's encoding, as glibc's
 * pthread_getcpuclockid() makes it: CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED). */
static clockid_t thread_clock(int tid)
{
	return (clockid_t)((~(unsigned)tid << 3) | 6);
}

static uint64_t thread_cpu_ns(int tid)
{
	struct timespec ts;

	if (clock_gettime(thread_clock(tid), &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void arm(struct sampler_slot *s, int tid)
{
	struct sigevent ev = {
		.sigev_notify = SIGEV_THREAD_ID,
		.sigev_signo = sampler_sig,
		.sigev_value.sival_ptr = s,
	};
	long period = 1000000000L / (long)sampler_hz;
	struct itimerspec its = {
		.it_interval = { period / 1000000000L, period % 1000000000L },
		.it_value = { period / 1000000000L, period % 1000000000L },
	};

	memset(s, 0, sizeof(*s));
	s->tid = tid;
	s->seen = true;
	if ((unsigned)(s - slots) >= slots_hw)
		slots_hw = (unsigned)(s - slots) + 1;
	ev._sigev_un._tid = tid;
	if (timer_create(thread_clock(tid), &ev, &s->timer))
		return; /* gone already: freed at the next scan */
	s->armed = true;
	s->cpu0 = s->cpu_ns = thread_cpu_ns(tid);
	if (timer_settime(s->timer, 0, &its, NULL)) {
		timer_delete(s->timer);
		s->armed = false;
	}
}

/* A thread's totals, then its slot freed. `alive`: read its CPU time now
 * (at exit); else, or when it has ended meanwhile, the last scan's
 * reading is all there is (up to SAMPLER_SCAN_MS old). */
static void retire(struct sampler_slot *s, bool alive)
{
	if (s->armed)
		timer_delete(s->timer);
	uint64_t now = alive ? thread_cpu_ns(s->tid) : 0;
	if (now) /* else gone since the last scan: its reading then */
		s->cpu_ns = now;
	uint64_t cpu = s->cpu_ns > s->cpu0 ? s->cpu_ns - s->cpu0 : 0;
	uint64_t expect = cpu * sampler_hz / 1000000000u;
	uint64_t got = s->samples + s->overruns;
	uint64_t w[6] = {
		(uint64_t)s->tid, cpu, sampler_hz, s->samples, got,
		expect > got ? expect - got : 0,
	};
	if (s->armed)
		strata_log_words(SAMPLER_MAJOR, SAMPLER_THREAD, w, 6);
	memset(s, 0, sizeof(*s));
}

static struct sampler_slot *slot_of(int tid, struct sampler_slot **free_slot)
{
	*free_slot = slots_hw < SAMPLER_SLOTS ? &slots[slots_hw] : NULL;
	for (unsigned i = 0; i < slots_hw; i++) {
		if (slots[i].tid == tid)
			return &slots[i];
		if (!slots[i].tid && (!*free_slot || *free_slot == &slots[slots_hw]))
			*free_slot = &slots[i]; /* a used one first */
	}
	return NULL;
}

/* One look at /proc/self/task: new threads armed, gone ones retired. */
static void scan(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		int tid = atoi(de->d_name);
		struct sampler_slot *s, *fr;
		if (tid <= 0 || tid == watcher_tid)
			continue;
		if ((s = slot_of(tid, &fr))) {
			s->seen = true;
			s->cpu_ns = thread_cpu_ns(tid);
		} else if (fr) {
			arm(fr, tid);
		} /* else no slot left: not sampled (docs/profile.md, Limits) */
	}
	closedir(d);
	for (unsigned i = 0; i < slots_hw; i++) {
		if (slots[i].tid && !slots[i].seen)
			retire(&slots[i], false);
		slots[i].seen = false;
	}
}

static void *watch(void *arg)
{
	struct pollfd p = { .fd = stop_fd, .events = POLLIN };
	sigset_t all;

	(void)arg;
	sigfillset(&all); /* never sampled, never a program's signal */
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	watcher_tid = gettid();
	/*
	 * Listing /proc/self/task costs about 100 us here (1 % of a CPU every
	 * 10 ms); its link count, 2 + the threads, one stat(): the list is
	 * read when the count changes, and every SAMPLER_RESCAN looks for a
	 * thread that ended while another began. In between, only the CPU
	 * times of the threads known (for `unavailable`).
	 */
	nlink_t links = 0;
	unsigned looks = 0;
	do {
		struct stat st;
		if (stat("/proc/self/task", &st) || st.st_nlink != links ||
		    ++looks % SAMPLER_RESCAN == 0) {
			links = st.st_nlink;
			scan();
		} else {
			for (unsigned i = 0; i < slots_hw; i++) {
				uint64_t now = slots[i].tid ? thread_cpu_ns(slots[i].tid) : 0;
				if (now)
					slots[i].cpu_ns = now;
			}
		}
	} while (poll(&p, 1, SAMPLER_SCAN_MS) == 0 || (p.revents == 0 && errno == EINTR));
	return NULL;
}

static void watcher_start(void)
{
	if (stop_fd >= 0)
		close(stop_fd);
	stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (stop_fd < 0)
		return;
	/* the main thread at once: a short program's first 10 ms too */
	struct sampler_slot *fr;
	if (!slot_of(gettid(), &fr) && fr)
		arm(fr, gettid());
	watcher_running = pthread_create(&watcher, NULL, watch, NULL) == 0;
}

/* ---- start, stop, fork ----------------------------------------------------- */

/* At exit, before libstrata's destructor stops the trace (atexit handlers
 * run before the libraries' destructors): every thread's totals. */
static void sampler_stop(void)
{
	uint64_t one = 1;

	if (!slots || !watcher_running)
		return;
	if (write(stop_fd, &one, sizeof(one)) < 0)
		return; /* cannot happen (the count would overflow): never
			 * join a watcher that was not told */
	pthread_join(watcher, NULL);
	watcher_running = false;
	sampler_on = 0; /* the handler stays: a signal already pending on a
			 * thread must not find SIG_DFL, which kills */
	for (unsigned i = 0; i < slots_hw; i++)
		if (slots[i].tid)
			retire(&slots[i], true);
}

/* The child has one thread and none of the parent's timers (POSIX timers
 * are not inherited): its own watcher, its own slots. */
static void sampler_after_fork_child(void)
{
	if (!slots)
		return;
	memset(slots, 0, SAMPLER_SLOTS * sizeof(*slots));
	slots_hw = 0;
	watcher_running = false;
	watcher_start();
}

/* A real-time signal nobody handles now, from the top (glibc and
 * libraries take theirs from SIGRTMIN up). */
static int pick_signal(void)
{
	for (int sig = SIGRTMAX - 1; sig > SIGRTMIN + 4; sig--) {
		struct sigaction old;
		if (!sigaction(sig, NULL, &old) && !(old.sa_flags & SA_SIGINFO) &&
		    old.sa_handler == SIG_DFL)
			return sig;
	}
	return 0;
}

extern const int strata_no_autostart __attribute__((weak));

/*
 * After libstrata's own constructor (this file is linked after
 * session.c, and a library's constructors without a priority run in
 * link order), so that a session is joined before the first sample.
 */
__attribute__((constructor)) static void sampler_init(void)
{
	struct sigaction sa = { .sa_sigaction = sampler_handler,
				.sa_flags = SA_SIGINFO | SA_RESTART };
	static const struct strata_field_desc f_sample[] = {
		{ "ip", STRATA_T_PTR, 0, STRATA_F_HEX },
		{ "n", STRATA_T_U64, 0, 0 },
		{ "frames", STRATA_T_PTR, SAMPLER_FRAMES, STRATA_F_HEX },
		{ "weight", STRATA_T_U64, 0, 0 },
	};
	static const struct strata_field_desc f_thread[] = {
		{ "tid", STRATA_T_U64, 0, 0 },
		{ "cpu_ns", STRATA_T_U64, 0, 0 },
		{ "hz", STRATA_T_U64, 0, 0 },
		{ "samples", STRATA_T_U64, 0, 0 },
		{ "periods", STRATA_T_U64, 0, 0 },
		{ "unavailable", STRATA_T_U64, 0, 0 },
	};
	static const struct strata_event_desc d_sample = {
		.subsystem = "sample", .name = "cpu_clock", .major = SAMPLER_MAJOR,
		.minor = SAMPLER_CPU_CLOCK, .nfields = 4, .fields = f_sample,
		.description = "the thread was on a CPU (timer sampler): its program "
			       "counter and call chain (n frames, the ip's caller "
			       "first), standing for `weight` periods of CPU time",
	};
	static const struct strata_event_desc d_thread = {
		.subsystem = "sample", .name = "thread", .major = SAMPLER_MAJOR,
		.minor = SAMPLER_THREAD, .nfields = 6, .fields = f_thread,
		.description = "thread %{tid}: %{samples} signals for %{periods} "
			       "periods of %{cpu_ns} ns of CPU time since it was "
			       "armed, at %{hz} Hz, "
			       "%{unavailable} periods unavailable (the signal blocked)",
	};
	static const struct strata_event_desc *const events[] = { &d_sample, &d_thread };
	static const struct strata_subsys_desc subsys = {
		"sample", SAMPLER_MAJOR, "CPU-time samples taken in the program (STRATA_SAMPLE)"
	};

	if (&strata_no_autostart && strata_no_autostart)
		return; /* the strata tool itself */
	if (env_sample_hz(&sampler_hz) < 0) {
		fprintf(stderr, "strata: %s\n", strata_strerror_detail());
		return;
	}
	if (!sampler_hz)
		return;
	if (!(sampler_sig = pick_signal())) {
		fprintf(stderr, "strata: STRATA_SAMPLE: every real-time signal is "
			"taken; not sampling\n");
		return;
	}
	if (strata_register(&subsys, events, 2)) {
		fprintf(stderr, "strata: STRATA_SAMPLE: major class %d is taken by "
			"the program's events; not sampling\n", SAMPLER_MAJOR);
		return;
	}
	slots = mmap(NULL, SAMPLER_SLOTS * sizeof(*slots), PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (slots == MAP_FAILED) {
		slots = NULL;
		return;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(sampler_sig, &sa, NULL);
	sampler_on = 1;
	pthread_atfork(NULL, NULL, sampler_after_fork_child);
	atexit(sampler_stop);
	watcher_start();
}
