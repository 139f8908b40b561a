/* SPDX-License-Identifier: MIT */
/* Stress test: many threads, signal handlers and migrations; every event accounted for. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <strata/strata.h>

/*
 * Each worker logs `nevents` events of major 5 whose first payload word is
 * (worker << 40 | seq), followed by k = size(seq) words of a pattern
 * derived from (worker, seq, i), k from 0 to 64 (minor = k). A signaller
 * thread interrupts the workers with SIGUSR1 while they are inside
 * tracepoints; the handler logs major 6 events with (worker << 40 | hseq).
 * Workers move between CPUs with sched_setaffinity. Then an independent
 * checker walks the trace files (docs/format.md) and verifies:
 *   - each (worker, seq) appears at most once, with its exact payload;
 *   - each event is attributed (format.md §4) to the thread that logged it;
 *   - timestamps never decrease within a stream;
 *   - packet_seq_num is contiguous (discard mode);
 *   - complete mode: every event logged is present;
 *   - loss mode: recorded + discarded == logged, exactly;
 *   - overwrite mode: the last event of every worker is present.
 */

#define MAJ_MAIN 5
#define MAJ_SIG 6
#define MAX_WORKERS 64

static int nworkers = 4;
static long nevents = 200000;
static int use_signals = 1, use_migrate = 1, pin_workers;
static const char *mode_name = "complete";
static const char *outdir;

static pid_t worker_tid[MAX_WORKERS];
static long sig_logged[MAX_WORKERS];
static pthread_t worker_th[MAX_WORKERS];
static volatile int workers_done;
static __thread int my_worker = -1;

static unsigned size_of(uint64_t seq)
{
	/* Mostly small events, every size from 0 to 64 words regularly. */
	return (seq % 16 == 0) ? (unsigned)((seq / 16) % 65) : (unsigned)(seq % 4);
}

static uint64_t pattern(uint64_t w, uint64_t seq, unsigned i)
{
	uint64_t x = (w << 40 | seq) * 0x9E3779B97F4A7C15ull + i;
	return x ^ (x >> 29);
}

static void on_signal(int sig)
{
	(void)sig;
	int w = my_worker, saved = errno;
	if (w < 0)
		return;
	uint64_t v = (uint64_t)w << 40 | (uint64_t)sig_logged[w]++;
	STRATA_EVENT1(MAJ_SIG, 1, v);
	if (errno != saved)
		abort(); /* the library must preserve errno */
}

static void *worker(void *arg)
{
	int w = (int)(intptr_t)arg;
	uint64_t words[65];
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	my_worker = w;
	/* pairs with the signaller's acquire of worker_tid */
	strata_store_release(&worker_tid[w], (pid_t)syscall(SYS_gettid));
	if (pin_workers) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(w % (int)ncpu, &set);
		sched_setaffinity(0, sizeof(set), &set);
	}
	for (uint64_t seq = 0; seq < (uint64_t)nevents; seq++) {
		unsigned k = size_of(seq);
		words[0] = (uint64_t)w << 40 | seq;
		for (unsigned i = 0; i < k; i++)
			words[1 + i] = pattern((uint64_t)w, seq, i);
		/* Fixed sizes from call sites of their own (compact headers,
		 * the inline path: docs/compact.md), the rest of any length
		 * (extended headers, out of line). */
		switch (k) {
		case 0: STRATA_EVENT1(MAJ_MAIN, 0, words[0]); break;
		case 1: STRATA_EVENT2(MAJ_MAIN, 1, words[0], words[1]); break;
		case 2: STRATA_EVENT3(MAJ_MAIN, 2, words[0], words[1], words[2]); break;
		case 3:
			STRATA_EVENT4(MAJ_MAIN, 3, words[0], words[1], words[2],
				      words[3]);
			break;
		default: strata_log_words(MAJ_MAIN, (uint16_t)k, words, 1 + k); break;
		}
		if (use_migrate && seq % 5000 == 4999 && ncpu > 1) {
			cpu_set_t set;
			CPU_ZERO(&set);
			CPU_SET((int)((seq / 5000 + (uint64_t)w) % (uint64_t)ncpu), &set);
			sched_setaffinity(0, sizeof(set), &set);
		}
	}
	return NULL;
}

static void *signaller(void *arg)
{
	(void)arg;
	unsigned i = 0;
	/* By tid, not pthread_t: the main thread joins workers (and frees
	 * their pthread_t) while this still runs; a tid that has exited
	 * gets ESRCH instead. */
	while (!strata_load_acquire(&workers_done)) {
		pid_t tid = strata_load_acquire(&worker_tid[i++ % (unsigned)nworkers]);
		if (tid > 0)
			syscall(SYS_tgkill, getpid(), tid, SIGUSR1);
		usleep(20);
	}
	return NULL;
}

/* ---- the checker ------------------------------------------------------- */

struct seen {
	uint8_t *main; /* per worker: nevents bits */
	uint8_t *sig;
	long nsig_cap;
};
static struct seen seen[MAX_WORKERS];
static long errors, recorded_main, recorded_sig, discarded_total;
static long ts_backwards, dup_main, dup_sig, misattributed, bad_payload;
static long recorded_internal; /* strata:calib, strata:lost and state dump records */

#define FAIL(...)                                                              \
	do {                                                                   \
		if (errors++ < 20)                                             \
			fprintf(stderr, "stress: " __VA_ARGS__);               \
	} while (0)

static int worker_of_tid(uint32_t tid)
{
	for (int i = 0; i < nworkers; i++)
		if ((uint32_t)worker_tid[i] == tid)
			return i;
	return -1;
}

/* Compact ids (docs/compact.md): the full id of each, from the
 * metadata's env (strata_id_<cid>); strata's own are their minor. */
static uint32_t cid_full[32];

static void read_cids(const char *dir)
{
	char path[4300], line[512];
	unsigned c, id;

	for (c = 1; c < 10; c++)
		cid_full[c] = c;
	snprintf(path, sizeof(path), "%s/metadata", dir);
	FILE *f = fopen(path, "re");
	if (!f) {
		FAIL("%s: %s\n", path, strerror(errno));
		return;
	}
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, " strata_id_%u = %u;", &c, &id) == 2 && c >= 10 &&
		    c < 31)
			cid_full[c] = id;
	fclose(f);
}

/* Payload words of a compact event of full id `id` (the stress test's
 * own events and strata's fixed records); 0 if unknown. */
static uint32_t compact_words(uint32_t id)
{
	uint32_t major = id >> 16, minor = id & 0xffff;

	if (major == MAJ_MAIN) /* 0-3: call sites, 4-64: strata_log_words() */
		return 1 + minor;
	if (major == MAJ_SIG && minor == 1)
		return 1;
	switch (id) {
	case 1: return 1; /* strata:thread */
	case 3: return 3; /* strata:calib */
	case 5: return 2; /* strata:lost */
	case 9: return 1; /* strata:statedump */
	}
	return 0;
}

static uint64_t pl_word(const unsigned char *pl, unsigned i)
{
	uint64_t v;
	memcpy(&v, pl + 8 * i, 8);
	return v;
}

/* One event at ev, before end (docs/compact.md: compact or extended
 * header): its length, or 0 when it is damaged (said); its full id, time
 * (ts follows the packet's clock), payload and payload words. */
static uint32_t decode_event(const char *path, const unsigned char *m,
			     const unsigned char *ev, const unsigned char *end,
			     uint64_t *ts, uint32_t *id, const unsigned char **pl,
			     uint32_t *nw)
{
	uint32_t h, len;

	memcpy(&h, ev, 4);
	if ((h & 31) == 31) {
		len = (h >> 5) * 4;
		if (end - ev < 16 || len < 16 || len > (uint64_t)(end - ev) || (len - 16) % 8) {
			FAIL("%s+%llu: bad extended length %u\n", path,
			     (unsigned long long)(ev - m), len);
			return 0;
		}
		memcpy(id, ev + 4, 4);
		memcpy(ts, ev + 8, 8);
		if (*id >= 10 && *id < 31)
			*id = cid_full[*id];
		*pl = ev + 16;
		*nw = (len - 16) / 8;
		return len;
	}
	*id = cid_full[h & 31];
	*nw = compact_words(*id);
	len = 4 + 8 * *nw;
	if (!*id || !*nw || len > (uint64_t)(end - ev)) {
		FAIL("%s+%llu: bad compact event (id %u)\n", path,
		     (unsigned long long)(ev - m), h & 31);
		return 0;
	}
	*ts += ((h >> 5) - *ts) & ((1u << 27) - 1);
	*pl = ev + 4;
	return len;
}

/* A worker's event from the main loop: its sequence number, size and
 * payload, seen once. */
static void note_main(const char *path, int wk, uint64_t seq, uint32_t minor,
		      const unsigned char *pl, uint32_t nw)
{
	unsigned k = size_of(seq);

	if (seq >= (uint64_t)nevents || minor != k || nw != 1 + k) {
		bad_payload++;
		FAIL("%s: bad main event seq %llu\n", path, (unsigned long long)seq);
		return;
	}
	for (unsigned i = 0; i < k; i++)
		if (pl_word(pl, 1 + i) != pattern((uint64_t)wk, seq, i)) {
			bad_payload++;
			FAIL("%s: payload of %d/%llu\n", path, wk, (unsigned long long)seq);
			break;
		}
	uint8_t *b = &seen[wk].main[seq / 8];
	if (*b & (1u << (seq % 8))) {
		dup_main++;
		FAIL("%s: duplicate %d/%llu\n", path, wk, (unsigned long long)seq);
	}
	*b |= (uint8_t)(1u << (seq % 8));
	recorded_main++;
}

/* Event `id` of the thread *cur names (a strata:thread record changes
 * it): counted, checked against what its worker logged. */
static void note_event(const char *path, uint32_t id, const unsigned char *pl,
		       uint32_t nw, uint32_t *cur)
{
	uint32_t major = id >> 16, minor = id & 0xffff;

	if (major == 0 && minor == 1) {
		*cur = (uint32_t)pl_word(pl, 0);
	} else if (major == 0 && (minor == 3 || minor >= 5)) {
		recorded_internal++;
	} else if (major == MAJ_MAIN || major == MAJ_SIG) {
		uint64_t v = pl_word(pl, 0);
		int wk = (int)(v >> 40);
		uint64_t seq = v & ((UINT64_C(1) << 40) - 1);
		if (wk >= nworkers) {
			FAIL("%s: bad worker %d\n", path, wk);
		} else if (worker_of_tid(*cur) != wk) {
			misattributed++;
			FAIL("%s: event of worker %d attributed to tid %u\n", path, wk, *cur);
		} else if (major == MAJ_MAIN) {
			note_main(path, wk, seq, minor, pl, nw);
		} else if ((long)seq >= sig_logged[wk]) {
			FAIL("%s: signal seq %llu never logged\n", path, (unsigned long long)seq);
		} else {
			uint8_t *b = &seen[wk].sig[seq / 8];
			if (*b & (1u << (seq % 8)))
				dup_sig++;
			*b |= (uint8_t)(1u << (seq % 8));
			recorded_sig++;
		}
	}
}

/* The events of the packet at p (content bytes), from time ts (its
 * timestamp_begin), checked; the program's events counted, which the
 * packet's `events` must equal (format.md §2: the consumer's exact count,
 * from its closer's or its walk). The last event's time. */
static uint64_t check_packet(const char *path, const unsigned char *m,
			     const unsigned char *p, uint64_t content, uint64_t ts)
{
	const unsigned char *ev = p + 96, *end = p + content;
	uint32_t cur, hdr_events, program = 0;

	memcpy(&cur, p + 88, 4); /* the opener's tid */
	memcpy(&hdr_events, p + 92, 4);
	while (ev < end) {
		uint32_t id, nw;
		const unsigned char *pl;
		uint64_t full = ts;
		uint32_t len = decode_event(path, m, ev, end, &full, &id, &pl, &nw);
		if (!len)
			return ts;
		if (full < ts) {
			ts_backwards++;
			FAIL("%s: timestamp goes backwards\n", path);
		}
		ts = full;
		program += (id >> 16) != 0;
		note_event(path, id, pl, nw, &cur);
		ev += len;
	}
	if (hdr_events != program)
		FAIL("%s+%llu: the packet says %u events, it holds %u\n", path,
		     (unsigned long long)(p - m), hdr_events, program);
	return ts;
}

static void check_stream(const char *path)
{
	int fd = open(path, O_RDONLY);
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0) {
		FAIL("%s: %s\n", path, strerror(errno));
		return;
	}
	if (st.st_size == 0) {
		close(fd);
		return;
	}
	const unsigned char *m = mmap(NULL, (size_t)st.st_size, PROT_READ,
				      MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED) {
		FAIL("%s: mmap: %s\n", path, strerror(errno));
		return;
	}
	uint64_t off = 0, prev_seq = 0, last_disc = 0, prev_ts = 0;
	int first = 1;
	while (off + 96 <= (uint64_t)st.st_size) {
		const unsigned char *p = m + off;
		uint32_t magic;
		uint64_t ts, ts_end, content, psize, seqn, disc;
		memcpy(&magic, p, 4);
		memcpy(&ts, p + 32, 8);
		memcpy(&ts_end, p + 40, 8);
		memcpy(&content, p + 48, 8);
		memcpy(&psize, p + 56, 8);
		memcpy(&seqn, p + 64, 8);
		memcpy(&disc, p + 72, 8);
		content /= 8;
		psize /= 8;
		if (magic != 0xC1FC1FC1u || psize < 16384 || content > psize ||
		    content < 96 || off + psize > (uint64_t)st.st_size) {
			FAIL("%s+%llu: bad packet header\n", path,
			     (unsigned long long)off);
			break;
		}
		if (!first && seqn != prev_seq + 1 && strcmp(mode_name, "overwrite") != 0)
			FAIL("%s: packet_seq_num %llu after %llu\n", path,
			     (unsigned long long)seqn, (unsigned long long)prev_seq);
		if (!first && ts < prev_ts) {
			ts_backwards++;
			FAIL("%s: packet begins before the previous one ended\n",
			     path);
		}
		first = 0;
		prev_seq = seqn;
		last_disc = disc;
		if (content % 4)
			FAIL("%s: content size %llu\n", path, (unsigned long long)content);
		ts = check_packet(path, m, p, content, ts);
		if (ts > ts_end && ts_end) {
			ts_backwards++;
			FAIL("%s: event after timestamp_end\n", path);
		}
		prev_ts = ts_end;
		off += psize;
	}
	discarded_total += (long)last_disc;
	munmap((void *)m, (size_t)st.st_size);
}

static void check_trace(void)
{
	char dir[4200];
	snprintf(dir, sizeof(dir), "%s/ust/pid-%d", outdir, getpid());
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d) {
		FAIL("%s: %s\n", dir, strerror(errno));
		return;
	}
	read_cids(dir);
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "cpu", 3))
			continue;
		char path[4200 + 256 + 2];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		check_stream(path);
	}
	closedir(d);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: stress -o DIR [-t THREADS] [-n EVENTS] [-m complete|loss|block|defaults|overwrite]\n"
		"              [--no-signals] [--no-migrate]\n");
	exit(2);
}

/* The options and the mode's ring geometry into *o (usage() on error). */
static void parse(int argc, char **argv, struct strata_options *o)
{
	static const struct option lo[] = {
		{"no-signals", no_argument, NULL, 'S'},
		{"no-migrate", no_argument, NULL, 'M'},
		{0, 0, 0, 0}};
	int c;

	nworkers = 2 * (int)sysconf(_SC_NPROCESSORS_ONLN);
	while ((c = getopt_long(argc, argv, "o:t:n:m:", lo, NULL)) != -1) {
		switch (c) {
		case 'o': outdir = optarg; break;
		case 't': nworkers = atoi(optarg); break;
		case 'n': nevents = atol(optarg); break;
		case 'm': mode_name = optarg; break;
		case 'S': use_signals = 0; break;
		case 'M': use_migrate = 0; break;
		default: usage();
		}
	}
	if (!outdir || nworkers < 1 || nworkers > MAX_WORKERS || nevents < 1)
		usage();

	o->output = outdir;
	if (!strcmp(mode_name, "complete")) {
		/* Room for the whole run: nothing may be lost. */
		o->packet_size = 1 << 20;
		o->npackets = 256;
	} else if (!strcmp(mode_name, "loss")) {
		o->packet_size = 16 << 10; /* far too small */
		o->npackets = 2;
	} else if (!strcmp(mode_name, "block")) {
		/* Rings far too small, in blocking mode: writers wait for
		 * the consumer, signal handlers included, and nothing is
		 * lost (4 packets: ring.md §4, "Blocking"). */
		o->packet_size = 16 << 10;
		o->npackets = 4;
		o->mode = STRATA_MODE_BLOCK;
	} else if (!strcmp(mode_name, "defaults")) {
		/* The default rings, flat out: heavy discards, as a new
		 * user's first run sees them (checked as loss mode). */
	} else if (!strcmp(mode_name, "overwrite")) {
		/* One pinned writer per ring (plus its signal handler): no
		 * writer is ever preempted inside another's packet, so the
		 * ring must hold exactly the newest events of its worker. */
		o->packet_size = 16 << 10;
		o->npackets = 4;
		o->mode = STRATA_MODE_OVERWRITE;
		pin_workers = 1;
		use_migrate = 0;
		if (nworkers > sysconf(_SC_NPROCESSORS_ONLN))
			nworkers = (int)sysconf(_SC_NPROCESSORS_ONLN);
	} else {
		usage();
	}
}

/* The workers (and the signaller) from start to join. */
static void run_workers(void)
{
	pthread_t sig_th;
	struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESTART};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	for (int i = 0; i < nworkers; i++)
		pthread_create(&worker_th[i], NULL, worker, (void *)(intptr_t)i);
	if (use_signals)
		pthread_create(&sig_th, NULL, signaller, NULL);
	for (int i = 0; i < nworkers; i++)
		pthread_join(worker_th[i], NULL);
	strata_store_release(&workers_done, 1); /* pairs with the signaller's acquire */
	if (use_signals)
		pthread_join(sig_th, NULL);
	signal(SIGUSR1, SIG_IGN);
}

/* Overwrite mode: each worker's recorded events are a contiguous suffix
 * of what it logged: the newest ones, none missing among them. */
static void check_overwrite(void)
{
	for (int i = 0; i < nworkers; i++) {
		uint64_t k = (uint64_t)nevents;
		while (k > 0 && (seen[i].main[(k - 1) / 8] & (1u << ((k - 1) % 8))))
			k--;
		long kept = nevents - (long)k, total = 0;
		for (uint64_t j = 0; j < (uint64_t)nevents; j++)
			total += !!(seen[i].main[j / 8] & (1u << (j % 8)));
		if (kept == 0 || total != kept)
			FAIL("overwrite: worker %d kept %ld events, %ld of them "
			     "the newest\n", i, total, kept);
	}
}

/* The mode's accounting: what was logged against what the trace holds
 * and what the library counted (st). */
static void check_counts(const struct strata_stats *st, long logged, long logged_sig,
			 long lost)
{
	long recorded = recorded_main + recorded_sig;

	if ((long)st->events_written != recorded + 0 && strcmp(mode_name, "overwrite"))
		FAIL("consumer counted %llu events, the checker %ld\n",
		     (unsigned long long)st->events_written, recorded);
	if (dup_main || dup_sig)
		FAIL("duplicated events\n");
	if (!strcmp(mode_name, "block")) {
		/* Nothing lost but what a signal handler logged while the
		 * tracepoint it interrupted held a reservation and the ring
		 * was full: it cannot wait for itself (ring.md §4). */
		if (recorded_main != (long)nworkers * nevents)
			FAIL("block mode: %ld of %ld events recorded\n",
			     recorded_main, (long)nworkers * nevents);
		if (recorded_sig + discarded_total != logged_sig)
			FAIL("block mode: %ld + %ld discarded != %ld logged in "
			     "signal handlers\n", recorded_sig, discarded_total,
			     logged_sig);
	} else if (!strcmp(mode_name, "complete")) {
		if (recorded != logged)
			FAIL("complete mode: %ld of %ld events recorded\n",
			     recorded, logged);
	} else if (!strcmp(mode_name, "loss") || !strcmp(mode_name, "defaults")) {
		/* What the program logged, exactly; strata's own records
		 * (calibration, loss reports, state dump) apart: their
		 * losses are not in events_discarded. */
		if (recorded + discarded_total != logged)
			FAIL("recorded %ld + discarded %ld != logged %ld\n",
			     recorded, discarded_total, logged);
		if (recorded_internal + (long)st->internal_lost !=
		    (long)st->internal_logged)
			FAIL("strata's own records: %ld recorded + %llu lost != "
			     "%llu logged\n", recorded_internal,
			     (unsigned long long)st->internal_lost,
			     (unsigned long long)st->internal_logged);
		if (discarded_total != lost)
			FAIL("trace says %ld discarded, library %ld\n",
			     discarded_total, lost);
		if (!discarded_total)
			FAIL("loss mode lost nothing: the test proves nothing\n");
	} else {
		check_overwrite();
	}
}

int main(int argc, char **argv)
{
	struct strata_options o = {0};
	struct strata_stats st;

	parse(argc, argv, &o);
	if (strata_start(&o)) {
		fprintf(stderr, "stress: strata_start: %s\n", strata_strerror_detail());
		return 1;
	}
	run_workers();
	int ret = strata_stop();
	strata_get_stats(&st);
	if (ret)
		FAIL("strata_stop: %s\n", strata_strerror_detail());

	long logged_sig = 0;
	for (int i = 0; i < nworkers; i++) {
		seen[i].main = calloc((size_t)nevents / 8 + 1, 1);
		seen[i].sig = calloc((size_t)sig_logged[i] / 8 + 1, 1);
		logged_sig += sig_logged[i];
	}
	check_trace();

	long logged = (long)nworkers * nevents + logged_sig;
	long lost = (long)(st.lost_full + st.lost_busy + st.lost_too_big +
			   st.lost_nested + st.lost_no_ring);
	static const char *const proto[] = {"CAS", "rseq", "rseq out of line"};
	printf("stress[%s, %s]: %d threads, logged %ld (%ld from signal handlers), "
	       "recorded %ld, discarded %ld in the trace (%ld counted by the "
	       "library: full %llu busy %llu nested %llu too_big %llu no_ring %llu), misattributed %ld, "
	       "duplicates %ld, bad payloads %ld, timestamps backwards %ld\n",
	       mode_name, proto[strata_rseq], /* 0, INLINE or OUTLINE */
	       nworkers, logged, logged_sig, recorded_main + recorded_sig,
	       discarded_total, lost, (unsigned long long)st.lost_full,
	       (unsigned long long)st.lost_busy,
	       (unsigned long long)st.lost_nested, (unsigned long long)st.lost_too_big,
	       (unsigned long long)st.lost_no_ring, misattributed,
	       dup_main + dup_sig, bad_payload, ts_backwards);
	check_counts(&st, logged, logged_sig, lost);
	if (errors) {
		fprintf(stderr, "stress: FAILED (%ld errors)\n", errors);
		return 1;
	}
	printf("stress[%s]: OK\n", mode_name);
	return 0;
}
