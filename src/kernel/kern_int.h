/* SPDX-License-Identifier: MIT */
/* Internals of the kernel source shared by its files: event classes, per-CPU stream writers and the session. */
#ifndef STRATA_KERNEL_KERN_INT_H
#define STRATA_KERNEL_KERN_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <pthread.h>
#include <sys/types.h>

#include <strata/events.h>

#include "common/errbuf.h"
#include "kernel/kernel.h"
#include "lib/clock.h"

struct kbuffer;
struct pollfd;
struct tep_event;
struct tep_handle;
struct tracefs_cpu;
struct tracefs_instance;

/* How one tracefs field becomes payload bytes (format.md §3). */
enum kfield_kind {
	KF_INT,    /* scalar integer of 1, 2, 4 or 8 bytes */
	KF_ARRAY,  /* fixed array of integers */
	KF_CHARS,  /* fixed char array (comm[16]): a format.md string */
	KF_DYNSTR, /* __data_loc char[]: a format.md string */
};

struct kfield {
	uint8_t kind;     /* enum kfield_kind */
	uint8_t elem;     /* element bytes */
	uint8_t relative; /* __rel_loc: offset relative to the field's end */
	uint16_t count;   /* KF_ARRAY elements */
	uint16_t off;     /* in the raw record */
	uint16_t size;    /* in the raw record */
};

/* One kernel event class: its strata descriptor (for the metadata) and
 * how to convert its raw records. */
struct kclass {
	struct strata_event_desc desc;
	struct strata_field_desc *fdesc;
	struct kfield *kf;
	unsigned nkf;
	int tep_id;
	char *subsys, *name;
};

/* Build the class of `ev` (major, minor given). Returns 0 or -ENOMEM. */
int kclass_init(struct kclass *c, struct tep_event *ev, unsigned major,
		unsigned minor);
void kclass_fini(struct kclass *c);

/* Convert one raw record into payload words (format.md §3). Returns the
 * payload length in words (0..1022). */
unsigned kclass_pack(const struct kclass *c, const uint8_t *data, unsigned size,
		     uint64_t *words);

/* One kernel stream file, TRACE/kernel/cpuN, written by the reader thread
 * only (format.md §2-§4, §7). */
struct kstream {
	int fd, idx_fd;
	unsigned cpu;
	uint8_t uuid[16];
	uint8_t *pkt;
	uint32_t psize, pos; /* bytes */
	bool open;
	uint64_t ts_begin, last_ts;
	uint64_t seq, discarded, file_off;
	uint32_t tid, pid; /* attribution of the following events */
	uint64_t events, clamped;
	int err; /* first write error, negative errno */
	char *idx_tmp; /* the index while written (a dot file), renamed at close */
};

int kstream_open(struct kstream *s, const char *dir, unsigned cpu,
		 const uint8_t uuid[16], uint32_t psize);
/* Append one event at `ts`, logged by tid/pid, with `n` payload words. */
void kstream_event(struct kstream *s, uint64_t ts, uint32_t tid, uint32_t pid,
		   uint32_t id, const uint64_t *words, unsigned n);
/* Write the open packet, if any, now (the live timer's). */
void kstream_flush(struct kstream *s);
/* Close the open packet, if any (or write one empty packet stamped `now`
 * when the stream has none), and the files. Returns s->err. */
int kstream_close(struct kstream *s, uint64_t now);


/* The clock of a user sub-trace beside TRACE/kernel (TRACE/ust/ * /metadata):
 * its freq and offset, so that another sub-trace written here shares its
 * clock class exactly (format.md §1, §5). false: none there. */
bool kern_ust_clock(const char *trace_dir, uint64_t *freq, int64_t *off_ns);

/* The kernel's per-thread accounting, as strata:thread_times records
 * (ktimes.c; format.md §4). Main thread: start before tracing is on and
 * before the reader runs, stop after the reader is joined; the reader
 * calls ktimes_poll() when ktimes_fd() is readable. */
struct ktimes;
const struct strata_event_desc *ktimes_desc(void);
/* Open taskstats and write the baselines of `scope` ("tid tid ...", or
 * NULL: every thread) into ks. Returns 0 or a negative errno (no split:
 * the recording goes on without it). */
int ktimes_start(struct ktimes **out, unsigned ncpus, const char *scope,
		 struct kstream *ks);
int ktimes_fd(const struct ktimes *k); /* -1 for NULL */
void ktimes_poll(struct ktimes *k);    /* NULL ok */
/* Write the exits and the live threads' final values into ks (NULL: none,
 * a failed start) and free k.
 * Returns the exits not kept (0, or a lower bound when the socket
 * overflowed). NULL ok. */
uint64_t ktimes_stop(struct ktimes *k, struct kstream *ks);

/* ---- the session (kernel.c; ksetup.c, kread.c, kmeta.c) ---- */

#define TRACEFS_DIR "/sys/kernel/tracing"

/* A tid -> tgid cache: ftrace records name the thread only. */
#define TGID_SLOTS 16384u

struct kern_session {
	struct tracefs_instance *inst;
	char name[64];
	char dir[4200]; /* TRACE/kernel */
	char trace_dir[4096];
	bool mounted; /* tracefs was mounted by kern_start */
	bool inst_created;
	struct tep_handle *tep;
	struct kclass *classes;
	unsigned nclasses;
	struct kclass **by_id; /* tep id -> class */
	int max_id;
	unsigned ncpus;
	struct kstream *streams;
	struct tracefs_cpu **tcpu;
	struct pollfd *pfd; /* per CPU trace_pipe_raw, then wake_fd */
	int wake_fd;        /* an eventfd: the reader stops (kern_reader_join()) */
	struct kbuffer *kbuf;
	void *page;
	int page_size;
	uint64_t *words;
	pthread_t thread;
	bool thread_started;
	/* Set with release by kern_reader_join(); reader_main()'s acquire loads
	 * pair with it: its last drain sees what the stopper did before. */
	int stop;
	/* Set with release by kern_start() once the classes are made; the
	 * reader reads no record before (reader_main()). */
	int ready;
	pid_t reader_tid;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned flush_ms;
	unsigned live_ms;     /* kern_options' */
	int live_fd;          /* kernel/.live-time, or -1 */
	uint64_t live_time;   /* the last beacon */
	bool meta_ust;        /* the metadata written has a user sub-trace's clock */
	uint8_t uuid[16];
	struct clock_point p0;
	uint32_t tgid_key[TGID_SLOTS], tgid_val[TGID_SLOTS];
	char *scope; /* the threads set_event_pid was given, "tid tid ...", or NULL */
	struct ktimes *times; /* strata:thread_times, or NULL (ktimes.c) */
	int times_err;        /* why there is none: a negative errno, or 0 */
	int err;
};

#define set_err(o, ...) errbuf_printf((o)->err, (o)->errlen, __VA_ARGS__)

/* ksetup.c: the instance and the output directory. Each returns 0, or a
 * negative errno after set_err(). */
int kern_instance(struct kern_session *s, const struct kern_options *o);
int kern_outputs(struct kern_session *s, const struct kern_options *o, uint32_t psize,
		 bool *made);
/* Undo kern_instance() and kern_reader_start(): reader joined, tracing
 * off, instance removed, tracefs unmounted if we mounted it. */
void kern_teardown(struct kern_session *s);
void kern_session_free(struct kern_session *s);
void kern_remove_outputs(struct kern_session *s);

/* kread.c: the reader thread. */
int kern_reader_start(struct kern_session *s, const struct kern_options *o);
void kern_reader_join(struct kern_session *s);
/* Drain every CPU's buffer (whole pages only unless final). */
void kern_drain_all(struct kern_session *s, bool final);
/* The live timer's round (docs/kernel.md, "Live"): every buffer drained,
 * every open packet written, then the beacon; the metadata rewritten
 * once a user sub-trace's clock is there. */
void kern_live_round(struct kern_session *s);
uint64_t kern_cpu_lost(struct kern_session *s, unsigned cpu);

/* kmeta.c: TRACE/kernel/metadata, on a user sub-trace's clock when one
 * is there (s->meta_ust says so), else on its own fit. Returns 0 or a
 * negative errno. */
int kern_write_metadata(struct kern_session *s);

#endif /* STRATA_KERNEL_KERN_INT_H */
