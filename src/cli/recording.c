/* SPDX-License-Identifier: MIT */
/* What record, daemon and ktrace share: ring, clock and kernel options, the trace directory, the command, signals, snapshots. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <strata/strata.h>

#include "cli.h"
#include "common/tfile.h"
#include "common/tool.h"
#ifdef STRATA_HAVE_KERNEL
#include "kernel/kernel.h"
#include "kernel/sample.h"
#endif
#include "daemon/daemon.h"
#include "relay/proto.h"

volatile sig_atomic_t cli_got_signal, cli_got_usr1;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		cli_got_usr1 = 1;
	else
		cli_got_signal = sig;
}

void cli_session_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal; /* no SA_RESTART: poll() returns */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
}

/* A size as libstrata's environment parser accepts it: digits and an
 * optional K/M/G suffix. */
static int valid_size(const char *s)
{
	size_t n = strspn(s, "0123456789");
	return n > 0 && (!s[n] || (strchr("kKmMgG", s[n]) && (!s[n + 1] ||
		!strcmp(s + n + 1, "i") || !strcmp(s + n + 1, "iB") ||
		!strcmp(s + n + 1, "B"))));
}

/* SIGUSR1: a snapshot into `dir`, one line on stderr (cli.h). */
void cli_snapshot(struct dmn *d, const char *dir)
{
	struct dmn_snap sn;
	char line[1024], made[4200];
	int ret;

	if ((ret = dmn_mkdir_new(dir, "strata-snapshot", made, sizeof(made)))) {
		cli_err(dir, "cannot create the snapshot directory: %s",
			strerror(-ret));
		return;
	}
	ret = dmn_snapshot(d, made, &sn);
	if (ret == -ENOENT)
		rmdir(made);
	dmn_snap_line(made, ret, &sn, line, sizeof(line));
	fprintf(stderr, "strata: %s\n", line);
}

int cli_kernel_buffer_opt(const char *cmd, const char *arg, unsigned *kb)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	/* tracefs takes any size; past 1 GiB per CPU is a typo */
	if (errno || end == arg || *end || *arg == '-' || v < 4 || v > 1u << 20) {
		cli_err(NULL, "%s: kernel buffer '%s' is not a size in KiB "
			"from 4 to 1048576", cmd, arg);
		return -1;
	}
	*kb = (unsigned)v;
	return 0;
}

int cli_kernel_opt(const char *cmd, const char *arg, unsigned *groups)
{
#ifdef STRATA_HAVE_KERNEL
	const char *bad = NULL;
	unsigned g;
	if (kern_groups_parse(arg, &g, &bad) < 0) {
		cli_err(NULL, "%s: --kernel: unknown group '%s' (sched, irq, "
			"syscalls, all)", cmd, bad ? bad : arg);
		return -1;
	}
	*groups |= g;
	return 0;
#else
	(void)arg;
	(void)groups;
	cli_err(NULL, "%s: --kernel: this strata was built without kernel "
		"support (install libtracefs-dev libtraceevent-dev libnl-genl-3-dev and rebuild)",
		cmd);
	return -1;
#endif
}

#ifdef STRATA_HAVE_KERNEL
struct kern_session *cli_kernel_start(const char *trace, unsigned groups,
				      const char *const *events, const int *pid,
				      unsigned buffer_kb)
{
	struct kern_session *ks = NULL;
	char err[512] = "";
	/* --live (STRATA_FLUSH_MS, checked with the ring options): the
	 * kernel's streams follow the same timer (docs/kernel.md, "Live") */
	const char *live = getenv("STRATA_FLUSH_MS");
	struct kern_options ko = {
		.live_ms = live ? (unsigned)strtoul(live, NULL, 10) : 0,
		.trace_dir = trace,
		.groups = groups,
		.events = events,
		.pids = pid,
		.npids = pid ? 1 : 0,
		.buffer_kb = buffer_kb, /* 0: kernel.c's default */
		.err = err,
		.errlen = sizeof(err),
	};
	int ret = kern_start(&ko, &ks);
	if (ret < 0)
		cli_err(trace, "kernel tracing off: %s; user-space tracing goes on",
			err[0] ? err : strerror(-ret));
	return ret < 0 ? NULL : ks;
}

void cli_kernel_stop(struct kern_session *ks, const char *trace)
{
	struct kern_stats kst;

	if (!ks)
		return;
	int ret = kern_stop(ks, &kst);
	if (ret < 0)
		cli_err(trace, "kernel streams: %s", strerror(-ret));
	fprintf(stderr, "strata: %s/kernel: %llu kernel events, %llu discarded%s\n",
		trace, (unsigned long long)kst.events,
		(unsigned long long)kst.discarded,
		kst.discarded ? " (raise the kernel buffer: --kernel-buffer-kb)" : "");
}
#endif

int cli_clock_opt(const char *arg)
{
	int ret = tool_clock_choose(arg);

	if (ret == -EINVAL) {
		cli_err(NULL, "--clock %s: use tsc or mono", arg);
		return -1;
	}
	if (ret == -ENODEV) {
		cli_err(NULL, "--clock tsc: this machine's TSC is not invariant "
			"(no constant_tsc and nonstop_tsc in /proc/cpuinfo); "
			"use --clock mono");
		return -1;
	}
	return 0;
}

int cli_enable_add(char *enable, size_t size, const char *pattern)
{
	if (strlen(enable) + strlen(pattern) + 2 > size) {
		cli_err(NULL, "--enable: too many patterns");
		return -1;
	}
	if (*enable)
		strcat(enable, ",");
	strcat(enable, pattern);
	return 0;
}

int cli_ring_opt(struct cli_ring_opts *r, int opt, const char *arg)
{
	switch (opt) {
	case OPT_RING_PSIZE: r->psize = arg; return 1;
	case OPT_RING_PACKETS: r->packets = arg; return 1;
	case OPT_RING_MODE: r->mode = arg; return 1;
	case OPT_RING_MAJORS: r->majors = arg; return 1;
	case OPT_RING_GROUP: r->group = arg; return 1;
	case 'e':
		return cli_enable_add(r->enable, sizeof(r->enable), arg) ? -1 : 1;
	}
	return 0;
}

int cli_relay_opt(struct cli_relay_opts *r, int opt, const char *arg)
{
	char *end;

	switch (opt) {
	case OPT_RELAY: r->relay = arg; return 1;
	case OPT_RELAY_TOKEN: r->token_file = arg; return 1;
	case OPT_RELAY_BUFFER:
		r->relay_mib = strtod(arg, &end);
		if (*end || !(r->relay_mib >= 1) || r->relay_mib > 65536) {
			cli_err(NULL, "--relay-buffer: '%s' is not a number of "
				"MiB from 1 to 65536", arg);
			return -1;
		}
		return 1;
	case OPT_RELAY_TIMEOUT:
		return cli_parse_seconds(arg, &r->relay_timeout, "relay-timeout") ? -1 : 1;
	case OPT_RELAY_ZSTD:
		r->relay_zstd = arg ? (int)strtol(arg, &end, 10) : 1;
		if ((arg && *end) || r->relay_zstd < 1 || r->relay_zstd > 19) {
			cli_err(NULL, "--relay-zstd: '%s' is not a level from 1 to 19", arg);
			return -1;
		}
		return 1;
	}
	return 0;
}

struct cli_relay_limits cli_relay_limits(const struct cli_relay_opts *r)
{
	return (struct cli_relay_limits){
		.budget = r->relay_mib ? (size_t)(r->relay_mib * (1 << 20)) : 0,
		.end_ms = (unsigned)((r->relay_timeout ? r->relay_timeout : 10) * 1000),
	};
}

int cli_relay_check(const struct cli_relay_opts *r, const char *cmd)
{
	if (!r->relay != !r->token_file) {
		cli_err(NULL, "%s: --relay and --token-file go together", cmd);
		return -1;
	}
	return 0;
}

int cli_relay_token(const char *file, unsigned char *token, size_t size)
{
	const char *why;
	int n = relay_token_load(file, token, size, &why);

	if (n < 0) {
		cli_err(file, "%s: %s", why, strerror(-n));
		return -1;
	}
	return n;
}

int cli_new_trace_dir(const char *dir, const char *cmd)
{
	int ret = tfile_mkdir(dir, 1);

	/* one that holds no file is as good as a new one (mktemp -d) */
	if (ret == -EEXIST) {
		ret = tfile_dir_has_files(dir, NULL);
		ret = ret > 0 ? -EEXIST : ret;
	}
	if (ret)
		cli_err(dir, "%s: cannot create the trace directory: %s%s", cmd,
			strerror(-ret),
			ret == -EEXIST ? " (it holds an earlier trace: choose "
					 "another with -o)" : "");
	return ret ? -1 : 0;
}

int cli_sample_opt(const char *arg, unsigned *hz)
{
#ifdef STRATA_HAVE_KERNEL
	char *end;
	unsigned long v = arg ? strtoul(arg, &end, 10) : 1000;
	if (arg && (!*arg || *end || !v || v > 100000)) {
		cli_err(NULL, "--sample=%s: expected samples per second, 1 to 100000", arg);
		return -1;
	}
	*hz = (unsigned)v;
	return 0;
#else
	(void)arg;
	(void)hz;
	cli_err(NULL, "--sample: this strata was built without kernel support "
		"(install libtracefs-dev libtraceevent-dev libnl-genl-3-dev and rebuild)");
	return -1;
#endif
}

#ifdef STRATA_HAVE_KERNEL
struct samp_session *cli_sample_start(const char *trace, int pid, unsigned hz,
				      unsigned stack_bytes)
{
	struct samp_session *ss = NULL;
	char err[512] = "";
	struct samp_options so = {
		.trace_dir = trace, .pid = pid, .hz = hz, .stack_bytes = stack_bytes,
		.err = err, .errlen = sizeof(err),
	};
	int ret = samp_start(&so, &ss);
	if (ret < 0)
		cli_err(trace, "sampling off: %s; the recording goes on",
			err[0] ? err : strerror(-ret));
	return ret < 0 ? NULL : ss;
}

void cli_sample_stop(struct samp_session *ss, const char *trace)
{
	struct samp_stats st;

	if (!ss)
		return;
	int ret = samp_stop(ss, &st);
	if (ret < 0)
		cli_err(trace, "sample streams: %s", strerror(-ret));
	char dwarf[64] = "";
	if (st.dwarf)
		snprintf(dwarf, sizeof(dwarf), " (%llu unwound with DWARF)",
			 (unsigned long long)st.unwound);
	fprintf(stderr, "strata: %s/samples: %llu samples%s, %llu lost%s\n", trace,
		(unsigned long long)st.samples, dwarf, (unsigned long long)st.lost,
		st.lost ? " (the kernel's sample buffers overflowed)" : "");
}
#endif

int cli_find_lib(const char *what, const char *env_name, const char *name,
		 const char *build_rel, char *buf, size_t len)
{
	const char *env = env_name ? getenv(env_name) : NULL;
	char exe[4096] = "?";
	ssize_t n;

	if (env && *env) {
		if (access(env, R_OK)) {
			cli_err(env, "%s: %s: %s", what, env_name, strerror(errno));
			return -1;
		}
		snprintf(buf, len, "%s", env);
		return 0;
	}
	if ((n = readlink("/proc/self/exe", exe, sizeof(exe) - 1)) > 0) {
		exe[n] = 0;
		char *slash = strrchr(exe, '/');
		if (slash)
			*slash = 0;
		/* installed (bin/ and LIBDIR/ under one prefix), then the build tree */
		const char *rel[] = { STRATA_LIBDIR, build_rel };
		for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
			char p[8192], real[4096];
			snprintf(p, sizeof(p), "%s/../%s/%s", exe, rel[i], name);
			if (realpath(p, real) && !access(real, R_OK)) {
				snprintf(buf, len, "%s", real);
				return 0;
			}
		}
	}
	cli_err(NULL, "%s: %s is not beside this strata (%s/../%s): install it%s%s", what,
		name, exe, STRATA_LIBDIR, env_name ? ", or give its path in " : "",
		env_name ? env_name : "");
	return -1;
}

void cli_preload(const char *lib)
{
	const char *old = getenv("LD_PRELOAD");
	char pre[8192];

	snprintf(pre, sizeof(pre), "%s%s%s", lib, old && *old ? ":" : "", old ? old : "");
	setenv("LD_PRELOAD", pre, 1);
}

void cli_preload_tracers(const char *locks, const char *sample_lib, unsigned hz)
{
	if (locks[0])
		cli_preload(locks);
	if (sample_lib[0]) { /* the timer sampler: src/lib/sampler.c */
		char v[16];
		cli_preload(sample_lib);
		snprintf(v, sizeof(v), "%u", hz);
		setenv("STRATA_SAMPLE", v, 1);
	}
}

int cli_command_runnable(const char *cmd)
{
	const char *path = getenv("PATH");
	char buf[4096];

	if (strchr(cmd, '/'))
		return access(cmd, X_OK) ? -1 : 0;
	for (const char *p = path && *path ? path : "/usr/bin:/bin"; ; ) {
		const char *end = strchr(p, ':');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, n ? p : ".", cmd);
		struct stat st;
		if (!stat(buf, &st) && S_ISREG(st.st_mode) && !access(buf, X_OK))
			return 0;
		if (!end)
			return -1;
		p = end + 1;
	}
}

int cli_ring_env(const struct cli_ring_opts *r, const char *cmd)
{
	const char *majors = r->majors;

	if ((r->psize && !valid_size(r->psize)) ||
	    (r->packets && !valid_size(r->packets))) {
		cli_err(NULL, "%s: '%s' is not a size (use e.g. 256K, 1M)", cmd,
			r->psize && !valid_size(r->psize) ? r->psize : r->packets);
		return -1;
	}
	if (r->mode && strcasecmp(r->mode, "discard") &&
	    strcasecmp(r->mode, "overwrite") && strcasecmp(r->mode, "block")) {
		cli_err(NULL, "%s: --mode %s: use discard, overwrite or block", cmd,
			r->mode);
		return -1;
	}
	if (r->group) {
		if (tfile_set_group(r->group)) {
			cli_err(NULL, "%s: --group %s: no such group", cmd, r->group);
			return -1;
		}
		setenv("STRATA_GROUP", r->group, 1);
	}
	if (r->psize)
		setenv("STRATA_PACKET_SIZE", r->psize, 1);
	if (r->packets)
		setenv("STRATA_PACKETS", r->packets, 1);
	if (r->mode)
		setenv("STRATA_MODE", r->mode, 1);
	if (*r->enable) {
		setenv("STRATA_ENABLE", r->enable, 1);
		if (!majors)
			majors = "none";
	}
	if (majors)
		setenv("STRATA_MAJORS", majors, 1);
	/* Every value as the library will take it, before anything runs: a
	 * size it refuses would trace nothing, and say so only at the
	 * program's start (a packet size of 3K ran a whole command
	 * untraced, exit 0). */
	if (tool_options_check_env()) {
		cli_err(NULL, "%s: %s", cmd, strata_strerror_detail());
		return -1;
	}
	return 0;
}


void cli_state_at_start(const char *trace)
{
	/* docs/record.md, "State dump" */
	int ret = cli_statedump_system(trace);

	if (ret)
		cli_err(trace, "state dump at start: %s (tracing goes on)",
			strerror(-ret));
}

void cli_gate_wait(const int gate[2])
{
	char b;

	if (gate[0] < 0)
		return;
	close(gate[1]);
	while (read(gate[0], &b, 1) < 0 && errno == EINTR)
		;
	close(gate[0]);
}

void cli_exec(char **cmd)
{
	execvp(cmd[0], cmd);
	cli_err(cmd[0], "cannot run: %s", strerror(errno));
	_exit(127);
}
