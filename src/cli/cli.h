/* SPDX-License-Identifier: MIT */
/* Shared helpers of the strata subcommands: options, errors, output, progress. */
#ifndef STRATA_CLI_H
#define STRATA_CLI_H

#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <strata/reader.h>

struct cli_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
	const char *usage; /* full --help text */
};

int cmd_info(int argc, char **argv);
int cmd_print(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_convert(int argc, char **argv);
extern const char cmd_info_usage[], cmd_print_usage[], cmd_stats_usage[],
	cmd_convert_usage[];

/* strata record: the session daemon (docs/record.md). The helpers below
 * that record shares with daemon and ktrace are in recording.c. */
int cmd_record(int argc, char **argv);
/* Processes and threads of the system into TRACE/state (src/cli/statedump.c):
 * 0 or a negative errno. */
int cli_statedump_system(const char *trace);
/* --clock tsc|mono of record and daemon: sets STRATA_CLOCK and this
 * process's clock; 0, or -1 after one error line. */
int cli_clock_opt(const char *arg);
/* -k GROUPS of record, daemon and ktrace: ORed into *groups; 0, or -1
 * after one error line (also where strata has no kernel support). */
int cli_kernel_opt(const char *cmd, const char *arg, unsigned *groups);
/* The kernel buffer per CPU in KiB (record's and daemon's
 * --kernel-buffer-kb, ktrace's --buffer-kb): 0, or -1 after one line. */
int cli_kernel_buffer_opt(const char *cmd, const char *arg, unsigned *kb);
#ifdef STRATA_HAVE_KERNEL
struct kern_session;
/* -k of record and daemon: start kernel streams into TRACE (pid: that
 * process and its children, NULL: the system); NULL after one line saying
 * why. Stop: finish them, one summary line (NULL ks: nothing). */
struct kern_session *cli_kernel_start(const char *trace, unsigned groups,
				      const char *const *events, const int *pid,
				      unsigned buffer_kb);
void cli_kernel_stop(struct kern_session *ks, const char *trace);
#endif
extern const char cmd_record_usage[];

/* strata daemon, strata session: a long-lived session (docs/record.md). */
int cmd_daemon(int argc, char **argv);
int cmd_session(int argc, char **argv);
extern const char cmd_daemon_usage[], cmd_session_usage[];

/* The ring options of record and daemon (cmd-record.c). */
enum { OPT_RING_PSIZE = 1100, OPT_RING_PACKETS, OPT_RING_MODE, OPT_RING_MAJORS,
       OPT_RING_GROUP };
#define CLI_RING_OPTIONS                                           \
	{ "packet-size", required_argument, NULL, OPT_RING_PSIZE },  \
	{ "packets", required_argument, NULL, OPT_RING_PACKETS },    \
	{ "mode", required_argument, NULL, OPT_RING_MODE },          \
	{ "majors", required_argument, NULL, OPT_RING_MAJORS },      \
	{ "enable", required_argument, NULL, 'e' },                 \
	{ "group", required_argument, NULL, OPT_RING_GROUP }
#define CLI_RING_HELP                                                           \
	"  --packet-size SIZE     packet (sub-buffer) size, e.g. 256K (default)\n" \
	"  --packets N            packets per CPU ring (default 64 up to 8 CPUs)\n"  \
	"  --mode discard|overwrite|block   drop new events when full (default),\n" \
	"                         keep the newest (flight recorder), or wait\n"   \
	"                         for room (STRATA_BLOCK_TIMEOUT_MS, default 1 s)\n" \
	"  --majors LIST          majors enabled at start: all, none, 1,2,5-9, 0x...\n" \
	"  -e, --enable PATTERN   enable a subsystem or SUB:EVENT glob (repeatable;\n" \
	"                         then only what is enabled is traced)\n"       \
	"  --group GROUP          share the trace read-only with this group (it\n" \
	"                         is owner-only otherwise: 0700/0600)\n"
struct cli_ring_opts {
	const char *psize, *packets, *mode, *majors, *group;
	char enable[4096]; /* comma-separated -e patterns */
};
/* One option of CLI_RING_OPTIONS: 1 taken, 0 not one of them, -1 bad
 * (said on stderr). */
int cli_ring_opt(struct cli_ring_opts *r, int opt, const char *arg);
/* The --relay options of record and daemon (recording.c, docs/relay.md);
 * each command has its own help lines for them. */
enum { OPT_RELAY = 1200, OPT_RELAY_TOKEN, OPT_RELAY_BUFFER, OPT_RELAY_TIMEOUT,
       OPT_RELAY_ZSTD };
#define CLI_RELAY_OPTIONS                                                \
	{ "relay", required_argument, NULL, OPT_RELAY },                 \
	{ "token-file", required_argument, NULL, OPT_RELAY_TOKEN },      \
	{ "relay-buffer", required_argument, NULL, OPT_RELAY_BUFFER },   \
	{ "relay-timeout", required_argument, NULL, OPT_RELAY_TIMEOUT }, \
	{ "relay-zstd", optional_argument, NULL, OPT_RELAY_ZSTD }
struct cli_relay_opts {
	const char *relay, *token_file; /* --relay, --token-file */
	double relay_mib, relay_timeout;
	int relay_zstd; /* --relay-zstd level, 0: none */
};
/* One option of CLI_RELAY_OPTIONS: 1 taken, 0 not one of them, -1 bad
 * (said on stderr). */
int cli_relay_opt(struct cli_relay_opts *r, int opt, const char *arg);
/* What the relay options ask of the sender: its memory in bytes (0: the
 * sender's default) and how long the end waits for the relay, in ms. */
struct cli_relay_limits {
	size_t budget;
	unsigned end_ms;
};
struct cli_relay_limits cli_relay_limits(const struct cli_relay_opts *r);
/* --relay and --token-file go together: 0, or -1 after saying so. */
int cli_relay_check(const struct cli_relay_opts *r, const char *cmd);
/* The relay's token from `file` into token[size]: its length, or -1
 * after saying why (record, daemon and relay exit 1 then). */
int cli_relay_token(const char *file, unsigned char *token, size_t size);
/* -e PATTERN appended to a comma list of `size` bytes: 0, or -1 after one
 * line (too many). */
int cli_enable_add(char *enable, size_t size, const char *pattern);
/* Check them and export them as STRATA_PACKET_SIZE, ..., STRATA_ENABLE
 * (-e alone starts from no majors), checked whole as the library will
 * take them. 0, or -1 after saying why. */
int cli_ring_env(const struct cli_ring_opts *r, const char *cmd);
/* Make the trace directory of record, daemon or ktrace: a new one, or an
 * existing empty one; never an earlier trace's. 0, or -1 after saying
 * why. */
int cli_new_trace_dir(const char *dir, const char *cmd);
/* 0 if `cmd` would be found and run by execvp (PATH search), -1 if not:
 * checked before anything is created. */
int cli_command_runnable(const char *cmd);
/* The real path of our library `name` into buf: $env_name when that is
 * set (env_name may be NULL), else beside this strata (installed:
 * ../LIBDIR/name, the build tree: ../build_rel/name). 0, or -1 after one
 * error line that begins with `what` (the option asking). */
int cli_find_lib(const char *what, const char *env_name, const char *name,
		 const char *build_rel, char *buf, size_t len);
/* Put `lib` first in LD_PRELOAD, before the user's (in the command's
 * child, before its exec). */
void cli_preload(const char *lib);
/* In the command's process, before its exec: the lock tracer `locks`
 * and the timer sampler's `sample_lib` (either may be "") first in
 * LD_PRELOAD, and STRATA_SAMPLE=hz with the latter (record, run). */
void cli_preload_tracers(const char *locks, const char *sample_lib, unsigned hz);
/* --sample[=HZ]: HZ into *hz (1000 without one). 0, or -1 after one
 * error line (not a number, out of 1..100000, no kernel support). */
int cli_sample_opt(const char *arg, unsigned *hz);
#ifdef STRATA_HAVE_KERNEL
struct samp_session;
/* Sampling of pid's tree into TRACE/samples (src/kernel/sample.c), or NULL
 * after one line saying why (the recording goes on without it). */
struct samp_session *cli_sample_start(const char *trace, int pid, unsigned hz,
				      unsigned stack_bytes);
/* Stop it and say what it wrote (NULL: nothing). */
void cli_sample_stop(struct samp_session *ss, const char *trace);
#endif
/* The state dump of TRACE as a session starts (cli_statedump_system);
 * a failure is said in one line and tracing goes on. */
void cli_state_at_start(const char *trace);
/* In the child that runs the COMMAND of record or ktrace: wait until the
 * parent closes gate[1] (its kernel side records, so that the command's
 * first instruction is traced); no wait when gate[0] is -1. Then
 * cli_exec: execvp, or one line saying why not and _exit(127). */
void cli_gate_wait(const int gate[2]);
__attribute__((noreturn)) void cli_exec(char **cmd);
/* SIGUSR1 of record and daemon: a snapshot of every overwrite-mode
 * buffer into the new directory `dir`, one line on stderr. */
struct dmn;
void cli_snapshot(struct dmn *d, const char *dir);
/* SIGINT, SIGTERM, SIGHUP (the last one in cli_got_signal) and SIGUSR1
 * (cli_got_usr1) of record and daemon, without SA_RESTART (poll returns). */
extern volatile sig_atomic_t cli_got_signal, cli_got_usr1;
void cli_session_signals(void);

/* Option values, checked: seconds (>= 0, "--WHAT: 'x' is not a time in
 * seconds") and --format text|json; 0, or -1 after one error line. */
int cli_parse_seconds(const char *arg, double *out, const char *what);
int cli_text_json(const char *arg, bool *json);
/* A name (command, lock, path) as a JSON string on stdout: printable
 * characters only, quotes and backslashes left out. NULL: "". */
void cli_json_name(const char *s);

/* "strata: <file>: <problem>" on stderr. */
void cli_err(const char *file, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Filter options shared by print, stats and convert. */
enum {
	OPT_FROM = 1000, OPT_TO, OPT_CPU, OPT_PID, OPT_TID, OPT_EVENT, OPT_FILTER,
	OPT_ABS, OPT_FORMAT, OPT_INTERNAL, OPT_HELP, OPT_TO_FMT, OPT_OUTPUT,
	OPT_MERGE,
};
#define CLI_FILTER_OPTIONS                                       \
	{ "from", required_argument, NULL, OPT_FROM },           \
	{ "to", required_argument, NULL, OPT_TO },               \
	{ "cpu", required_argument, NULL, OPT_CPU },             \
	{ "pid", required_argument, NULL, OPT_PID },             \
	{ "tid", required_argument, NULL, OPT_TID },             \
	{ "event", required_argument, NULL, OPT_EVENT },         \
	{ "filter", required_argument, NULL, OPT_FILTER },       \
	{ "internal", no_argument, NULL, OPT_INTERNAL },         \
	{ "merge", no_argument, NULL, OPT_MERGE },               \
	{ "help", no_argument, NULL, OPT_HELP }

#define CLI_FILTER_HELP                                                        \
	"  --from SEC, --to SEC  keep events in this range (seconds since the\n"  \
	"                        trace start; fractions allowed)\n"               \
	"  --cpu N, --pid N, --tid N   keep these (repeatable, comma lists)\n"    \
	"  --event GLOB          keep events whose name matches (repeatable)\n"   \
	"  --filter EXPR         field expression, e.g. 'size > 4096 && flags & 1'\n" \
	"  --internal            also show strata's own records (major 0)\n"    \
	"  --merge               read a directory of several recordings as one\n"

struct cli_filter_opts {
	double from, to;
	bool has_from, has_to, internal, merge;
	uint32_t cpus[64], pids[64], tids[64];
	unsigned ncpus, npids, ntids;
	const char *events[64];
	unsigned nevents;
	const char *exprs[16];
	unsigned nexprs;
};

/* Handle one filter option; returns 0, or -1 after printing why. */
int cli_filter_opt(struct cli_filter_opts *o, int opt, const char *arg);
/* Whether --pid/--tid keep this thread (all when neither was given). */
static inline bool cli_wants_thread(const struct cli_filter_opts *o, uint32_t pid,
				    uint32_t tid)
{
	if (!o->npids && !o->ntids)
		return true;
	for (unsigned i = 0; i < o->npids; i++)
		if (o->pids[i] == pid)
			return true;
	for (unsigned i = 0; i < o->ntids; i++)
		if (o->tids[i] == tid)
			return true;
	return false;
}

/* An opened trace plus what the CLI keeps beside it. */
struct cli_trace {
	const char *path;
	struct strata_trace *t;
	struct strata_filter *f;
	uint64_t damaged;   /* damaged or metadata problems reported */
	uint64_t discarded; /* events reported lost while reading */
	uint64_t packets_lost;
	bool quiet_lost;    /* do not print lost-event lines */
	bool merge;         /* several recordings read as one (--merge) */
	unsigned nrecordings;  /* found by an open that refused them */
	char *recordings[8];   /* the first of them, to name */
};

/* Open the trace, build the filter; prints the error and returns -1. */
int cli_open(struct cli_trace *ct, const char *path, const struct cli_filter_opts *fo);
/* What cli_open gives strata_trace_open: problems printed and counted in
 * ct, --merge. */
void cli_open_options(struct cli_trace *ct, const struct cli_filter_opts *fo,
		      struct strata_open_options *oo);
/* cli_open's filter for ct->t from fo into ct->f; live: the trace is
 * still growing (an --event matching nothing yet is not said). Prints the
 * error and returns -1. */
int cli_filter_build(struct cli_trace *ct, const struct cli_filter_opts *fo, bool live);
void cli_close(struct cli_trace *ct);
/* Exit status after a run: 0, or 2 when the input was damaged or a part
 * of it missing. */
int cli_status(const struct cli_trace *ct);
/* After a run of print, stats or convert that gave n events: when the
 * filters fo let none through, one line on stderr says so (docs/cli.md:
 * the exit status stays 0, an answer of no events is an answer). */
void cli_none_matched(const struct cli_trace *ct, const struct cli_filter_opts *fo,
		      uint64_t n);
int cli_iter(struct cli_trace *ct, bool internal, struct strata_iter **it);
/* --follow: an iterator over the follower's window [from, to) of trace t
 * (the follower's), with fo's filters, into *it; ct holds t and the
 * filter until cli_window_end(). 0, or -1 after one line (then call
 * cli_window_end too). */
int cli_window_iter(struct cli_trace *ct, const struct cli_filter_opts *fo,
		    struct strata_trace *t, uint64_t from, uint64_t to, struct strata_iter **it);
void cli_window_end(struct cli_trace *ct, struct strata_iter *it);
/* The line for a follower's poll that failed with err (< 0). */
void cli_follow_err(const char *path, int err);

/* Progress on stderr when it is a terminal and the work lasts > 1 s. */
struct cli_progress {
	bool on;
	uint64_t total, t0_ns, last_ns;
	bool shown;
};
void cli_progress_init(struct cli_progress *p, uint64_t total);
void cli_progress_tick(struct cli_progress *p, uint64_t done);
void cli_progress_done(struct cli_progress *p);

/* Buffered stdout writer: no stdio on the per-event path. */
struct cli_out {
	FILE *f;
	char *buf;
	size_t len, cap;
	bool failed;
};
int cli_out_init(struct cli_out *o, FILE *f);
void cli_out_flush(struct cli_out *o);
int cli_out_fini(struct cli_out *o); /* flush, report write errors: 0/-1 */
static inline char *cli_out_reserve(struct cli_out *o, size_t n)
{
	if (o->len + n > o->cap)
		cli_out_flush(o);
	return o->buf + o->len;
}
void cli_out_mem(struct cli_out *o, const char *s, size_t n);
void cli_out_str(struct cli_out *o, const char *s);
void cli_out_u64(struct cli_out *o, uint64_t v);
void cli_out_json_str(struct cli_out *o, const char *s, size_t n);

/* A decoded field as a JSON value (enums as their label). */
void cli_json_value(struct cli_out *o, const struct strata_field_class *f,
		    const struct strata_value *v);

/* Ticks since the trace start -> "S.NNNNNNNNN". */
struct cli_time {
	uint64_t freq, begin;
	int64_t offset_s, offset;
	bool abs;
	/* x / freq as (x * div_m) >> div_shift for x < 2^63, when div_ok
	 * (Granlund-Montgomery): no 128-bit division per printed event */
	bool div_ok;
	unsigned div_shift;
	uint64_t div_m;
	/* cli_time_fmt_seq: the text up to the '.' of the second that
	 * starts at tick sec_lo (relative or wall ticks, as abs says) */
	uint64_t sec_lo;
	uint32_t sec_len;  /* 0: none yet */
	char sec_txt[40];
};
void cli_time_init(struct cli_time *ct, struct strata_trace *t, bool abs);
size_t cli_time_fmt(const struct cli_time *ct, uint64_t ts, char *buf);
/* cli_time_fmt for timestamps that mostly follow each other (a listing):
 * the seconds are formatted once per second of trace time. Writes up to
 * 48 bytes at buf (the text is what cli_time_fmt gives); returns the length. */
size_t cli_time_fmt_seq(struct cli_time *ct, uint64_t ts, char *buf);
uint64_t cli_time_ns(const struct cli_time *ct, uint64_t ts); /* since start */

/* Plain "1.5 MiB". */
void cli_human_size(uint64_t bytes, char *buf, size_t n);

#endif /* STRATA_CLI_H */
