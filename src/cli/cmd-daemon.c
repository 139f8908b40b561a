/* SPDX-License-Identifier: MIT */
/* strata daemon: a long-lived tracing session that programs started later join. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <strata/strata.h>

#include "cli.h"
#ifdef STRATA_HAVE_KERNEL
#include "kernel/kernel.h"
#endif
#include "consumer/consumer.h"
#include "daemon/daemon.h"
#include "proto/paths.h"
#include "relay/proto.h"
#include "relay/sender.h"

const char cmd_daemon_usage[] =
	"usage: strata daemon [OPTIONS]\n"
	"       strata daemon --kill [--name NAME]\n\n"
	"Run a long-lived tracing session that programs started later join\n"
	"(docs/record.md): a program linked with libstrata joins the daemon\n"
	"named 'default' of its user when STRATA_SESSION and STRATA_OUTPUT are\n"
	"both unset (STRATA_SESSION=none opts out), or the one whose socket\n"
	"STRATA_SESSION names. It writes one trace directory per started\n"
	"trace; 'strata session' starts, stops, snapshots and shows it.\n"
	"SIGINT or SIGTERM (or --kill) finishes the trace and ends the daemon;\n"
	"SIGUSR1 writes a snapshot (overwrite mode).\n\n"
	"Options:\n"
	"  -o, --output DIR       the first trace directory (default\n"
	"                         strata-YYYYmmdd-HHMMSS; relative paths and the\n"
	"                         default are in the directory it starts in)\n"
	"  --name NAME            daemon name (default 'default'): its socket is\n"
	"                         /run/strata/NAME/sock for root, else\n"
	"                         $XDG_RUNTIME_DIR/strata/NAME/sock (or\n"
	"                         /tmp/strata-UID/NAME/sock); $STRATA_RUNTIME_DIR\n"
	"                         replaces the directory above NAME\n"
	"  --stopped              start without a trace ('strata session start')\n"
	"  --live[=MS]            for strata print --follow: joining programs\n"
	"                         close their quiet packets every MS (default\n"
	"                         100), which costs file size\n"
	CLI_RING_HELP
	"  --clock tsc|mono       the trace clock (default: the invariant TSC\n"
	"                         where the kernel or a KVM host vouches for\n"
	"                         it); joining programs\n"
	"                         follow it\n"
	"  -k, --kernel GROUPS    also record the whole system's kernel events\n"
	"                         (sched, irq, syscalls, all) into each trace,\n"
	"                         on the same clock (docs/kernel.md)\n"
	"  --kernel-buffer-kb N   kernel buffer per CPU in KiB (default 4096)\n"
	"  --relay HOST:PORT      also stream each trace to a strata relay\n"
	"  --token-file FILE      the relay's shared secret (docs/relay.md)\n"
	"  --relay-buffer MIB     memory for packets not yet sent (default 64)\n"
	"  --relay-zstd[=LEVEL]   compress what is sent with zstd (default 1)\n"
	"  --relay-timeout SEC    at each trace's end, wait this long for the\n"
	"                         relay (default 10)\n"
	"  -f, --foreground       stay in the foreground, messages on stderr\n"
	"                         (otherwise in the session directory's 'log')\n"
	"  --kill                 end the daemon NAME: its trace is finished first\n";

/* Detach: the parent returns once the daemon listens (or says why not);
 * the child's messages go to DIR/log. Returns the pipe's write end in
 * the child (-1 in the foreground), and never returns in the parent. */
static int go_background(void)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0) {
		cli_err(NULL, "daemon: pipe: %s", strerror(errno));
		exit(1);
	}
	pid = fork();
	if (pid < 0) {
		cli_err(NULL, "daemon: fork: %s", strerror(errno));
		exit(1);
	}
	if (pid > 0) {
		char buf[2048];
		ssize_t n, len = 0;
		close(p[1]);
		while (len < (ssize_t)sizeof(buf) - 1 &&
		       (n = read(p[0], buf + len, sizeof(buf) - 1 - (size_t)len)) != 0) {
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				break;
			len += n;
		}
		buf[len] = 0;
		/* "0 message" when it listens, "1 message" when it failed */
		if (len < 2) {
			cli_err(NULL, "daemon: it ended before it was ready");
			exit(1);
		}
		fputs(buf + 2, stderr);
		exit(buf[0] == '0' ? 0 : 1);
	}
	close(p[0]);
	setsid();
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		close(null);
	}
	return p[1];
}

/* Tell the waiting parent (background) or the terminal (foreground). */
static void ready(int fd, int ok, const char *line)
{
	if (fd < 0) {
		fputs(line, stderr);
		return;
	}
	char buf[2100];
	int n = snprintf(buf, sizeof(buf), "%c %s", ok ? '0' : '1', line);
	if (write(fd, buf, (size_t)n) < 0)
		(void)0;
	close(fd);
}

static unsigned kgroups;            /* -k: kernel groups of every trace */
static unsigned kbuffer_kb;         /* --kernel-buffer-kb, 0: the default */
#ifdef STRATA_HAVE_KERNEL
static struct kern_session *ksess;  /* of the trace being written */
#endif

/* --relay (docs/relay.md): one sender per trace, made when the trace
 * starts and finished when it stops; the consumers of the daemon get
 * the sink below, which passes on to the sender of the trace running. */
static struct cli_relay_opts relay_o; /* relay_o.relay: --relay */
static unsigned char relay_token[RELAY_TOKEN_MAX + 1];
static size_t relay_token_len;
static struct relay_sender *relay_cur;

static void fwd_create(void *ctx, const char *path)
{
	(void)ctx;
	if (relay_cur)
		relay_sender_sink(relay_cur)->on_file_create(relay_sender_sink(relay_cur)->ctx, path);
}

static void fwd_write(void *ctx, const char *path, uint64_t off,
		      const void *buf, size_t len)
{
	(void)ctx;
	if (relay_cur)
		relay_sender_sink(relay_cur)->on_write(relay_sender_sink(relay_cur)->ctx,
						       path, off, buf, len);
}

static void fwd_metadata(void *ctx, const char *path, const char *text,
			 size_t len)
{
	(void)ctx;
	if (relay_cur)
		relay_sender_sink(relay_cur)->on_metadata(relay_sender_sink(relay_cur)->ctx,
							  path, text, len);
}

static void fwd_close(void *ctx, const char *path, uint64_t size,
		      const char *final, int keep)
{
	(void)ctx;
	if (relay_cur)
		relay_sender_sink(relay_cur)->on_close(relay_sender_sink(relay_cur)->ctx,
						       path, size, final, keep);
}

static const struct cons_sink relay_fwd = {
	.on_file_create = fwd_create,
	.on_write = fwd_write,
	.on_metadata = fwd_metadata,
	.on_close = fwd_close,
};

static void relay_begin(const char *trace)
{
	const char *why;
	struct relay_sender_config rc = {
		.addr = relay_o.relay, .token = relay_token,
		.token_len = relay_token_len, .root = trace, .log = stderr,
		.budget = cli_relay_limits(&relay_o).budget,
		.zstd_level = relay_o.relay_zstd,
	};
	int ret = relay_sender_create(&rc, &relay_cur, &why);

	if (!ret && (ret = relay_sender_start(relay_cur))) {
		why = "cannot start the sender";
		relay_sender_finish(relay_cur, 0, NULL);
	}
	if (ret) {
		relay_cur = NULL;
		fprintf(stderr, "strata: relay %s: %s: %s; %s is written "
			"locally only\n", relay_o.relay, why, strerror(-ret), trace);
	}
}

static void relay_end(const char *trace)
{
	unsigned ms = cli_relay_limits(&relay_o).end_ms;

	if (!relay_cur)
		return;
	relay_sender_end(relay_cur, ms, relay_o.relay, trace, NULL);
	relay_cur = NULL;
}

/* Each new trace begins with the system's processes and threads
 * (docs/record.md, "State dump"), as under strata record, and with -k its
 * kernel streams start. */
static void trace_started(const char *trace)
{
	cli_state_at_start(trace);
#ifdef STRATA_HAVE_KERNEL
	if (kgroups)
		ksess = cli_kernel_start(trace, kgroups, NULL, NULL, kbuffer_kb);
#endif
	/* after the state dump's fork: the sender is a thread; what was
	 * written before it existed is sent whole at the end */
	if (relay_o.relay)
		relay_begin(trace);
}

/* The user side of `trace` is complete: finish its kernel streams (their
 * metadata takes the clock class from the user side's, docs/kernel.md). */
static void trace_stopped(const char *trace)
{
#ifdef STRATA_HAVE_KERNEL
	cli_kernel_stop(ksess, trace);
	ksess = NULL;
#endif
	relay_end(trace);
}

/* Ask the daemon NAME to end, and wait until it has (cmd-session.c does
 * the asking). */
static int kill_daemon(const char *name)
{
	char *argv[] = {"session", "quit", "--name", (char *)name, NULL};
	return cmd_session(4, argv);
}

struct daemon_opts {
	const char *out, *name;
	struct cli_ring_opts ro;
	int fg, kill_it, stopped;
};

/* The command line into *dopt (the kernel and clock options into this
 * file's statics and the environment): 0, or the exit status 2 after
 * the usage or one error line. */
static int daemon_parse(int argc, char **argv, struct daemon_opts *dopt)
{
	enum { O_NAME = 1, O_KILL, O_STOPPED, O_CLOCK, O_KBUF, O_LIVE };
	static const struct option opts[] = {
		{"output", required_argument, NULL, 'o'},
		{"name", required_argument, NULL, O_NAME},
		{"stopped", no_argument, NULL, O_STOPPED},
		{"foreground", no_argument, NULL, 'f'},
		{"kill", no_argument, NULL, O_KILL},
		{"clock", required_argument, NULL, O_CLOCK},
		{"kernel", required_argument, NULL, 'k'},
		{"kernel-buffer-kb", required_argument, NULL, O_KBUF},
		{"live", optional_argument, NULL, O_LIVE},
		CLI_RELAY_OPTIONS,
		CLI_RING_OPTIONS,
		{NULL, 0, NULL, 0},
	};
	int o, taken;

	memset(dopt, 0, sizeof(*dopt));
	dopt->name = "default";
	optind = 1;
	while ((o = getopt_long(argc, argv, "o:e:fk:", opts, NULL)) != -1) {
		if ((taken = cli_ring_opt(&dopt->ro, o, optarg)) ||
		    (taken = cli_relay_opt(&relay_o, o, optarg))) {
			if (taken < 0)
				return 2;
			continue;
		}
		switch (o) {
		case 'o': dopt->out = optarg; break;
		case 'f': dopt->fg = 1; break;
		case O_NAME: dopt->name = optarg; break;
		case O_KILL: dopt->kill_it = 1; break;
		case O_STOPPED: dopt->stopped = 1; break;
		case O_LIVE: /* checked with the ring options, told in `state` */
			setenv("STRATA_FLUSH_MS",
			       optarg ? optarg : DMN_LIVE_MS_DEFAULT, 1);
			break;
		case O_CLOCK:
			if (cli_clock_opt(optarg))
				return 2;
			break;
		case O_KBUF:
			if (cli_kernel_buffer_opt("daemon", optarg, &kbuffer_kb))
				return 2;
			break;
		case 'k':
			if (cli_kernel_opt("daemon", optarg, &kgroups))
				return 2;
			break;
		default:
			fputs(cmd_daemon_usage, stderr);
			return 2;
		}
	}
	if (optind < argc) {
		cli_err(NULL, "daemon: unexpected argument '%s'", argv[optind]);
		return 2;
	}
	if (cli_relay_check(&relay_o, "daemon"))
		return 2;
	if (relay_o.token_file) {
		int n = cli_relay_token(relay_o.token_file, relay_token,
					sizeof(relay_token));
		if (n < 0)
			return 1;
		relay_token_len = (size_t)n;
	}
	if (!proto_name_ok(dopt->name)) {
		cli_err(NULL, "daemon: --name %s: use letters, digits, '_', '-', '.'",
			dopt->name);
		return 2;
	}
	return 0;
}

/* The daemon's directories: its session directory (socket, log), the
 * one above it, and the first trace's. */
struct daemon_dirs {
	char session[4096], base[4096], trace[4200];
};

/* The daemon's configuration, from the environment and NAME's
 * directories: 0, or the exit status after one error line. */
static int daemon_config(const struct daemon_opts *dopt,
			 struct dmn_config *cfg, struct daemon_dirs *dirs)
{
	int ret;

	memset(cfg, 0, sizeof(*cfg));
	if (dmn_config_from_env(cfg)) {
		cli_err(NULL, "daemon: %s", strata_strerror_detail());
		return 2;
	}
	ret = proto_daemon_dir(dopt->name, dirs->session, sizeof(dirs->session),
			       dirs->base, sizeof(dirs->base));
	if (ret) {
		cli_err(NULL, "daemon: session directory for '%s': %s",
			dopt->name, strerror(-ret));
		return 1;
	}
	cfg->session_dir = dirs->session;
	cfg->on_start = trace_started;
	cfg->on_stop = trace_stopped;
	cfg->base_dir = dirs->base;
	if (relay_o.relay)
		cfg->sink = &relay_fwd;
	return 0;
}

/* Detach (unless in the foreground), create the first trace's directory
 * (unless --stopped) and the daemon, and say that it listens, or why
 * not. 0 with *d, or the exit status 1. */
static int daemon_listen(const struct daemon_opts *dopt,
			 struct dmn_config *cfg, struct daemon_dirs *dirs,
			 struct dmn **d)
{
	char line[8192];
	const char *what = "";
	int ret;

	int fd = dopt->fg ? -1 : go_background();
	if (!dopt->stopped) {
		if ((ret = dmn_mkdir_new(dopt->out, "strata", dirs->trace,
					 sizeof(dirs->trace)))) {
			snprintf(line, sizeof(line), "strata: %s: cannot create the "
				 "trace directory: %s%s\n",
				 dopt->out ? dopt->out : dirs->trace,
				 strerror(-ret), ret == -EEXIST ? " (choose another "
				 "with -o)" : "");
			ready(fd, 0, line);
			return 1;
		}
		cfg->trace_dir = dirs->trace;
	}
	if ((ret = dmn_create(cfg, d, &what))) {
		snprintf(line, sizeof(line), "strata: daemon %s: %s: %s (%s)\n",
			 dopt->name, what, strerror(-ret), dirs->session);
		if (!dopt->stopped)
			rmdir(dirs->trace);
		ready(fd, 0, line);
		return 1;
	}
	if (fd >= 0) {
		char log[4200];
		snprintf(log, sizeof(log), "%s/log", dirs->session);
		int lfd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (lfd >= 0) {
			dup2(lfd, 2);
			close(lfd);
		}
	}
	snprintf(line, sizeof(line), "strata: daemon %s (pid %d) listening on %s; "
		 "%s%s\n", dopt->name, (int)getpid(), dmn_socket(*d),
		 dopt->stopped ? "stopped (strata session start)" : "writing to ",
		 dopt->stopped ? "" : dirs->trace);
	if (fd >= 0)
		fputs(line, stderr); /* the log too */
	ready(fd, 1, line);
	return 0;
}

/* Serve until a signal or `strata daemon --kill`, then finish the trace
 * and end. */
static void daemon_run(struct dmn *d)
{
	struct dmn_totals t;
	unsigned work = 0;

	cli_session_signals();
	signal(SIGPIPE, SIG_IGN);
	while (!cli_got_signal && !dmn_quit_requested(d)) {
		work = dmn_step(d, work ? 1 : 5);
		if (cli_got_usr1) {
			cli_got_usr1 = 0;
			cli_snapshot(d, NULL);
		}
	}
	dmn_stop_wait(d, &t);
	dmn_destroy(d, NULL, &t);
}

int cmd_daemon(int argc, char **argv)
{
	struct daemon_opts dopt;
	struct daemon_dirs dirs;
	struct dmn_config cfg;
	struct dmn *d;
	int rc;

	if ((rc = daemon_parse(argc, argv, &dopt)))
		return rc;
	if (dopt.kill_it)
		return kill_daemon(dopt.name);
	if (cli_ring_env(&dopt.ro, "daemon"))
		return 2;
	if ((rc = daemon_config(&dopt, &cfg, &dirs)) ||
	    (rc = daemon_listen(&dopt, &cfg, &dirs, &d)))
		return rc;
	daemon_run(d);
	fprintf(stderr, "strata: daemon %s ended\n", dopt.name);
	return 0;
}
