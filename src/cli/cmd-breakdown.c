/* SPDX-License-Identifier: MIT */
/* strata breakdown: where each process and thread spent its time, from the kernel's sched and syscall events. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "cli.h"
#include "table.h"

const char cmd_breakdown_usage[] =
	"usage: strata breakdown [OPTIONS] TRACE\n\n"
	"Per thread (or process, or command), over the trace or a window: time on\n"
	"a CPU in user space and traps, in system calls (per call: count, time,\n"
	"on-CPU part) and in interrupt handlers; runnable (waiting for a CPU);\n"
	"blocked sleeping (S) and uninterruptible (D, I/O wait); page faults; on\n"
	"which CPUs. Then per CPU: busy, idle and unknown time. Each thread's\n"
	"states add up to the wall time, and so do each CPU's. A thread whose\n"
	"switches the trace lacks (lost, or outside the scope of record -k's\n"
	"command) is marked partial: its 'unknown' time is when the trace lost\n"
	"track of it. A thread outside that scope is partial (seen 'outside')\n"
	"even when its switches pair up: those to other outside threads were\n"
	"never recorded. Needs kernel events (strata record -k sched[,syscalls]).\n\n"
	"  --by process|command  one row per process, or per command name, summing\n"
	"                        their threads (default: one row per thread)\n"
	"  --complete            leave out the threads only partly seen\n"
	"  --pid N, --tid N      only these (repeatable, comma lists)\n"
	"  --from SEC, --to SEC  window, seconds since the trace start\n"
	"  --format text|json    output format (default text)\n";

/* JSON keys and text headers, by enum bd_state */
static const char *const state_keys[BD_NSTATES] = {
	"user_trap", "syscall", "runnable", "sleep", "io_wait", "irq", "unknown", "unseen",
};

/* A thread with nothing but unseen time in the window says nothing. */
static bool shown(const struct bd_result *r, const struct cli_filter_opts *fo,
		  const struct bd_thread *th, bool complete)
{
	return cli_wants_thread(fo, th->pid, th->tid) && th->t[BD_UNSEEN] != r->end - r->begin &&
	       !(complete && th->partial);
}

static const char *running_key(const struct bd_result *r)
{
	return r->have_syscalls ? "user_trap" : "running";
}

static void json_states(struct strata_trace *t, const struct bd_result *r, const uint64_t *st)
{
	for (int s = 0; s < BD_NSTATES; s++)
		printf(",\"%s_ns\":%" PRIu64, s == BD_USER ? running_key(r) : state_keys[s],
		       strata_trace_ticks_to_ns(t, st[s]));
	printf(",\"ticks\":[");
	for (int s = 0; s < BD_NSTATES; s++)
		printf("%s%" PRIu64, s ? "," : "", st[s]);
	printf("]");
}

static void print_json(struct strata_trace *t, const struct bd_result *r,
		       const struct cli_filter_opts *fo, const struct an_loss *loss,
		       enum bd_by by, bool complete)
{
#define NS(x) strata_trace_ticks_to_ns(t, (x))
	printf("{\"wall_ns\":%" PRIu64 ",\"wall_ticks\":%" PRIu64
	       ",\"syscalls_traced\":%s,\"faults_traced\":%s,\"irq_traced\":%s",
	       NS(r->end - r->begin), r->end - r->begin, r->have_syscalls ? "true" : "false",
	       r->have_faults ? "true" : "false", r->have_irq ? "true" : "false");
	report_loss_json(stdout, loss);
	if (by) {
		struct bd_group *g;
		int n = bd_group(r, by, &g);
		printf(",\"by\":\"%s\",\"groups\":[", by == BD_BY_PROCESS ? "process" : "command");
		for (int i = 0; i < n; i++) {
			printf("%s\n{\"pid\":%u,\"comm\":", i ? "," : "", g[i].pid);
			cli_json_name(g[i].comm);
			printf(",\"processes\":%u,\"threads\":%u,\"partial_threads\":%u",
			       g[i].nprocs, g[i].nthreads, g[i].npartial);
			json_states(t, r, g[i].t);
			if (g[i].split)
				printf(",\"split\":{\"user_ns\":%" PRIu64 ",\"trap_ns\":%" PRIu64
				       ",\"kernel_utime_ns\":%" PRIu64 ",\"kernel_stime_ns\":%" PRIu64 "}",
				       NS(g[i].t[BD_USER] - g[i].trap), NS(g[i].trap), g[i].kutime,
				       g[i].kstime);
			printf(",\"faults_user\":%" PRIu64 ",\"faults_kernel\":%" PRIu64 "}",
			       g[i].faults_user, g[i].faults_kernel);
		}
		printf("]");
		free(g);
	}
	printf(",\"threads\":[");
	bool first = true;
	for (unsigned i = 0; i < r->nthreads; i++) {
		const struct bd_thread *th = &r->threads[i];
		if (!shown(r, fo, th, complete))
			continue;
		printf("%s\n{\"pid\":%u,\"tid\":%u,\"comm\":", first ? "" : ",", th->pid, th->tid);
		cli_json_name(th->comm);
		printf(",\"partial\":%s,\"outside_scope\":%s,\"created\":%s,\"exited\":%s",
		       th->partial ? "true" : "false", th->outside ? "true" : "false",
		       th->created ? "true" : "false", th->exited ? "true" : "false");
		json_states(t, r, th->t);
		if (th->split)
			printf(",\"split\":{\"user_ns\":%" PRIu64 ",\"trap_ns\":%" PRIu64
			       ",\"kernel_utime_ns\":%" PRIu64 ",\"kernel_stime_ns\":%" PRIu64 "}",
			       NS(th->user), NS(th->trap), th->kutime, th->kstime);
		printf(",\"preempted\":%" PRIu64 ",\"switches\":%" PRIu64 ",\"wakeups\":%" PRIu64
		       ",\"user_events\":%" PRIu64 ",\"faults_user\":%" PRIu64
		       ",\"faults_kernel\":%" PRIu64 ",\"lost_track\":%" PRIu64 ",\"cpus\":{",
		       th->preempted, th->switches_in, th->wakeups, th->user_events,
		       th->faults_user, th->faults_kernel, th->lost);
		bool f2 = true;
		for (unsigned c = 0; c < r->ncpus; c++)
			if (th->cpu[c]) {
				printf("%s\"%u\":%" PRIu64, f2 ? "" : ",", c, NS(th->cpu[c]));
				f2 = false;
			}
		printf("},\"cpu_ticks\":{");
		f2 = true;
		for (unsigned c = 0; c < r->ncpus; c++)
			if (th->cpu[c]) {
				printf("%s\"%u\":%" PRIu64, f2 ? "" : ",", c, th->cpu[c]);
				f2 = false;
			}
		printf("},\"syscalls\":[");
		for (unsigned k = 0; k < th->nsc; k++) {
			const char *nm = bd_syscall_name(t, th->sc[k].nr);
			printf("%s{\"nr\":%u,\"name\":\"%s\",\"count\":%" PRIu64
			       ",\"time_ns\":%" PRIu64 ",\"oncpu_ns\":%" PRIu64,
			       k ? "," : "", th->sc[k].nr, nm ? nm : "",
			       th->sc[k].count, NS(th->sc[k].time), NS(th->sc[k].oncpu));
			/* K42's events inside the system call */
			printf(",\"inside\":[");
			for (unsigned j = 0; j < BD_INSIDE && th->sc[k].in[j].cls; j++)
				printf("%s{\"event\":\"%s\",\"count\":%" PRIu64 "}", j ? "," : "",
				       th->sc[k].in[j].cls->name, th->sc[k].in[j].count);
			printf("],\"inside_other\":%" PRIu64 "}", th->sc[k].in_other);
		}
		printf("]}");
		first = false;
	}
	printf("],\n\"cpus\":[");
	for (unsigned c = 0; c < r->ncpus; c++) {
		const struct bd_cpu *k = &r->cpus[c];
		printf("%s{\"cpu\":%u,\"busy_ns\":%" PRIu64 ",\"idle_ns\":%" PRIu64
		       ",\"unknown_ns\":%" PRIu64 ",\"irq_ns\":%" PRIu64 ",\"softirq_ns\":%" PRIu64
		       ",\"ticks\":[%" PRIu64 ",%" PRIu64 ",%" PRIu64 "],\"lost_track\":%" PRIu64 "}",
		       c ? "," : "", c, NS(k->busy), NS(k->idle), NS(k->unknown), NS(k->irq),
		       NS(k->softirq), k->busy, k->idle, k->unknown, k->lost);
	}
	printf("]}\n");
#undef NS
}

static int cmp_sc(const void *a, const void *b)
{
	const struct bd_syscall *x = a, *y = b;
	return x->time < y->time ? 1 : x->time > y->time ? -1 : 0;
}

/* The state columns of the text tables, in this order. */
static const int text_states[] = { BD_USER, BD_SYS, BD_IRQ, BD_RUNNABLE, BD_SLEEP,
				   BD_IO, BD_UNKNOWN, BD_UNSEEN };
#define NTEXT (sizeof(text_states) / sizeof(text_states[0]))

static const char *text_header(const struct bd_result *r, int s)
{
	static const char *const h[BD_NSTATES] = {
		"user+trap", "syscall", "runnable", "sleep", "io_wait", "irq", "unknown", "unseen",
	};
	return s == BD_USER && !r->have_syscalls ? "running" : h[s];
}

static void cell_time(struct table *tb, struct strata_trace *t, struct dur_unit u,
		      uint64_t ticks)
{
	char b[40];
	table_cell(tb, "%s", dur_in(u, strata_trace_ticks_to_ns(t, ticks), b, sizeof(b)));
}

static void print_threads(struct strata_trace *t, const struct bd_result *r,
			  const struct cli_filter_opts *fo, struct dur_unit u, bool complete)
{
	struct table tb;
	unsigned npartial = 0, nleft = 0;
	uint64_t left_oncpu = 0;

	table_init(&tb, 5 + NTEXT + r->have_split, "rlrrrrrrrrrrll");
	table_cell(&tb, "pid/tid");
	table_cell(&tb, "comm");
	for (size_t s = 0; s < NTEXT; s++) {
		table_cell(&tb, "%s", text_header(r, text_states[s]));
		if (text_states[s] == BD_USER && r->have_split)
			table_cell(&tb, "of it kernel*");
	}
	table_cell(&tb, "faults u/k");
	table_cell(&tb, "cpus (%s on each)", u.name);
	table_cell(&tb, "seen");
	for (unsigned i = 0; i < r->nthreads; i++) {
		const struct bd_thread *th = &r->threads[i];
		if (!shown(r, fo, th, false))
			continue;
		if (th->partial && complete) {
			nleft++;
			left_oncpu += th->t[BD_USER] + th->t[BD_SYS] + th->t[BD_IRQ];
			continue;
		}
		npartial += th->partial;
		table_cell(&tb, "%u/%u", th->pid, th->tid);
		table_cell(&tb, "%s", th->comm[0] ? th->comm : "?");
		for (size_t s = 0; s < NTEXT; s++) {
			cell_time(&tb, t, u, th->t[text_states[s]]);
			if (text_states[s] != BD_USER || !r->have_split)
				continue;
			if (th->split)
				cell_time(&tb, t, u, th->trap);
			else
				table_cell(&tb, "-");
		}
		if (r->have_faults)
			table_cell(&tb, "%" PRIu64 "/%" PRIu64, th->faults_user, th->faults_kernel);
		else
			table_cell(&tb, "-");
		char cpus[256] = "", v[40];
		size_t n = 0;
		for (unsigned c = 0; c < r->ncpus && n < sizeof(cpus) - 48; c++)
			if (th->cpu[c])
				n += (size_t)snprintf(cpus + n, sizeof(cpus) - n, "%s%u:%s",
						      n ? " " : "", c,
						      dur_in(u, strata_trace_ticks_to_ns(t, th->cpu[c]),
							     v, sizeof(v)));
		table_cell(&tb, "%s", cpus[0] ? cpus : "-");
		table_cell(&tb, "%s", th->outside ? "outside" : th->partial ? "partial" : "all");
	}
	table_print(&tb, stdout, "  ");
	table_fini(&tb);
	if (npartial)
		printf("  %u thread%s only partly seen: the trace lost track of %s for its "
		       "'unknown' time (switches\n  lost, or outside the scope of record -k's "
		       "command: an 'outside' thread's switches to\n  other outside threads "
		       "were never recorded); --complete leaves them out.\n", npartial,
		       npartial == 1 ? "" : "s", npartial == 1 ? "it" : "each");
	if (nleft) {
		char d[40];
		printf("  %u thread%s only partly seen left out (--complete), %s on CPU "
		       "among them.\n", nleft, nleft == 1 ? "" : "s",
		       dur_fmt(strata_trace_ticks_to_ns(t, left_oncpu), d, sizeof(d)));
	}
}

static void print_groups(struct strata_trace *t, const struct bd_result *r, enum bd_by by,
			 struct dur_unit u)
{
	struct bd_group *g;
	int n = bd_group(r, by, &g);
	struct table tb;

	if (n < 0) {
		cli_err(NULL, "breakdown: out of memory");
		return;
	}
	printf("  Times summed over each %s's threads.\n\n",
	       by == BD_BY_PROCESS ? "process" : "command");
	table_init(&tb, 6 + NTEXT - 1 + r->have_split, "rlrrrrrrrrrrrl");
	table_cell(&tb, by == BD_BY_PROCESS ? "pid" : "procs");
	table_cell(&tb, "comm");
	table_cell(&tb, "threads");
	for (size_t s = 0; s + 1 < NTEXT; s++) { /* no unseen: it says nothing summed */
		table_cell(&tb, "%s", text_header(r, text_states[s]));
		if (text_states[s] == BD_USER && r->have_split)
			table_cell(&tb, "of it kernel*");
	}
	table_cell(&tb, "faults u/k");
	table_cell(&tb, "on_cpu");
	table_cell(&tb, "seen");
	for (int i = 0; i < n; i++) {
		if (g[i].t[BD_UNSEEN] == (uint64_t)g[i].nthreads * (r->end - r->begin))
			continue;
		if (by == BD_BY_PROCESS)
			table_cell(&tb, "%u", g[i].pid);
		else
			table_cell(&tb, "%u", g[i].nprocs);
		table_cell(&tb, "%s", g[i].comm[0] ? g[i].comm : "?");
		table_cell(&tb, "%u", g[i].nthreads);
		for (size_t s = 0; s + 1 < NTEXT; s++) {
			cell_time(&tb, t, u, g[i].t[text_states[s]]);
			if (text_states[s] != BD_USER || !r->have_split)
				continue;
			if (g[i].split)
				cell_time(&tb, t, u, g[i].trap);
			else
				table_cell(&tb, "-");
		}
		if (r->have_faults)
			table_cell(&tb, "%" PRIu64 "/%" PRIu64, g[i].faults_user, g[i].faults_kernel);
		else
			table_cell(&tb, "-");
		cell_time(&tb, t, u, g[i].t[BD_USER] + g[i].t[BD_SYS] + g[i].t[BD_IRQ]);
		if (g[i].npartial)
			table_cell(&tb, "%u partial", g[i].npartial);
		else
			table_cell(&tb, "all");
	}
	table_print(&tb, stdout, "  ");
	table_fini(&tb);
	free(g);
}

static void print_syscalls(struct strata_trace *t, const struct bd_result *r,
			   const struct cli_filter_opts *fo, struct dur_unit u, bool complete)
{
	struct table tb;
	printf("\nSystem calls (%s; time from entry to exit, or to the thread's end for "
	       "exit and exit_group):\n", u.name);
	table_init(&tb, 9, "rrlrrrrrl");
	const char *h2[9] = { "pid", "tid", "syscall", "count", "time", "on_cpu",
			      "blocked", "average", "events inside" };
	for (int i = 0; i < 9; i++)
		table_cell(&tb, "%s", h2[i]);
	for (unsigned i = 0; i < r->nthreads; i++) {
		const struct bd_thread *th = &r->threads[i];
		if (!shown(r, fo, th, complete) || !th->nsc)
			continue;
		struct bd_syscall *sc = malloc(th->nsc * sizeof(*sc));
		if (!sc)
			break;
		memcpy(sc, th->sc, th->nsc * sizeof(*sc));
		qsort(sc, th->nsc, sizeof(*sc), cmp_sc);
		for (unsigned k = 0; k < th->nsc; k++) {
			const char *nm = bd_syscall_name(t, sc[k].nr);
			char avg[40];
			table_cell(&tb, "%u", th->pid);
			table_cell(&tb, "%u", th->tid);
			if (nm)
				table_cell(&tb, "%s", nm);
			else
				table_cell(&tb, "#%u", sc[k].nr);
			table_cell(&tb, "%" PRIu64, sc[k].count);
			cell_time(&tb, t, u, sc[k].time);
			cell_time(&tb, t, u, sc[k].oncpu);
			cell_time(&tb, t, u, sc[k].time > sc[k].oncpu ? sc[k].time - sc[k].oncpu : 0);
			if (sc[k].count)
				table_cell(&tb, "%s", dur_fmt(strata_trace_ticks_to_ns(t, sc[k].time) /
							      sc[k].count, avg, sizeof(avg)));
			else
				table_cell(&tb, "-");
			char in[256] = "";
			size_t o = 0;
			for (unsigned j = 0; j < BD_INSIDE && sc[k].in[j].cls; j++) {
				const char *en = strchr(sc[k].in[j].cls->name, ':');
				o += (size_t)snprintf(in + o, o < sizeof(in) ? sizeof(in) - o : 0,
						      "%s%s x%" PRIu64, o ? ", " : "",
						      en ? en + 1 : sc[k].in[j].cls->name,
						      sc[k].in[j].count);
			}
			if (sc[k].in_other && o < sizeof(in))
				snprintf(in + o, sizeof(in) - o, "%s+%" PRIu64 " more",
					 o ? ", " : "", sc[k].in_other);
			table_cell(&tb, "%s", in[0] ? in : "-");
		}
		free(sc);
	}
	table_print(&tb, stdout, "  ");
	table_fini(&tb);
}

static void print_cpus(struct strata_trace *t, const struct bd_result *r, struct dur_unit u)
{
	struct table tb;
	printf("\nCPUs (%s; busy + idle + unknown = the wall time):\n", u.name);
	table_init(&tb, 7, "rrrrrrr");
	const char *h3[7] = { "cpu", "busy", "idle", "unknown", "irq", "softirq", "lost_track" };
	for (int i = 0; i < 7; i++)
		table_cell(&tb, "%s", h3[i]);
	for (unsigned c = 0; c < r->ncpus; c++) {
		const struct bd_cpu *k = &r->cpus[c];
		table_cell(&tb, "%u", c);
		cell_time(&tb, t, u, k->busy);
		cell_time(&tb, t, u, k->idle);
		cell_time(&tb, t, u, k->unknown);
		cell_time(&tb, t, u, k->irq);
		cell_time(&tb, t, u, k->softirq);
		table_cell(&tb, "%" PRIu64, k->lost);
	}
	table_print(&tb, stdout, "  ");
	table_fini(&tb);
}

static void print_text(struct strata_trace *t, const struct bd_result *r,
		       const struct cli_filter_opts *fo, const struct an_loss *loss,
		       enum bd_by by, bool complete)
{
	uint64_t wall = strata_trace_ticks_to_ns(t, r->end - r->begin);
	struct dur_unit u = dur_unit_for(wall);
	char w[40];

	(void)loss; /* said before the report (report_loss) */
	printf("Window: %s, from %.6f s to %.6f s of the trace; times in %s.\n",
	       dur_fmt(wall, w, sizeof(w)),
	       (double)strata_trace_ticks_to_ns(t, r->begin - strata_trace_begin(t)) / 1e9,
	       (double)strata_trace_ticks_to_ns(t, r->end - strata_trace_begin(t)) / 1e9, u.name);
	if (by)
		print_groups(t, r, by, u);
	else
		print_threads(t, r, fo, u, complete);
	if (r->have_syscalls && !by)
		print_syscalls(t, r, fo, u, complete);
	print_cpus(t, r, u);

	printf("\nColumns:\n");
	if (r->have_syscalls)
		printf("  user+trap  on a CPU outside system calls and interrupt handlers: user code,\n"
		       "             and the page faults and other kernel entries no event times\n"
		       "  syscall    on a CPU inside a system call (raw_syscalls)\n");
	else
		printf("  running    on a CPU outside interrupt handlers (system calls were not\n"
		       "             traced: record with -k sched,syscalls to split them out)\n");
	printf("  irq        on a CPU in interrupt and softirq handlers%s\n"
	       "  runnable   ready, waiting for a CPU (woken, or preempted)\n"
	       "  sleep      blocked, interruptible (S, also I, T)\n"
	       "  io_wait    blocked, uninterruptible (D)\n"
	       "  unknown    alive, but the trace lacks a switch or wakeup of it\n"
	       "  unseen     before its first event (or its fork), or after its exit\n"
	       "  faults u/k page faults taken in user mode / kernel mode%s\n",
	       r->have_irq ? "" : " (not traced: -k irq)",
	       r->have_faults ? "" : " (not traced: -k faults)");
	if (r->have_split)
		printf("  of it kernel* the part of %s the kernel's own accounting puts in the\n"
		       "             kernel (page faults, the entry and exit path): the share\n"
		       "             of its ticks that found the thread in the kernel, applied\n"
		       "             to its on-CPU time, less the traced system calls and\n"
		       "             handlers. Statistical: right to a few ticks per thread.\n"
		       "             '-': a thread not seen whole, without a tick, or a window;\n"
		       "             a group pools its threads' ticks, if all are seen whole\n",
		       r->have_syscalls ? "user+trap" : "running");
}

int cmd_breakdown(int argc, char **argv)
{
	enum { O_BY = 3200, O_COMPLETE };
	static const struct option opts[] = {
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "from", required_argument, NULL, OPT_FROM },
		{ "to", required_argument, NULL, OPT_TO },
		{ "since", required_argument, NULL, OPT_FROM }, /* old spellings */
		{ "until", required_argument, NULL, OPT_TO },
		{ "pid", required_argument, NULL, OPT_PID },
		{ "tid", required_argument, NULL, OPT_TID },
		{ "by", required_argument, NULL, O_BY },
		{ "complete", no_argument, NULL, O_COMPLETE },
		{ "help", no_argument, NULL, OPT_HELP },
		{ 0 },
	};
	struct cli_filter_opts fo = { 0 };
	enum bd_by by = 0;
	bool json = false, complete = false;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == OPT_FORMAT) {
			if (cli_text_json(optarg, &json))
				return 1;
		} else if (c == O_BY) {
			if (!strcmp(optarg, "process"))
				by = BD_BY_PROCESS;
			else if (!strcmp(optarg, "command"))
				by = BD_BY_COMMAND;
			else {
				cli_err(NULL, "--by: expected process or command, not '%s'", optarg);
				return 1;
			}
		} else if (c == O_COMPLETE) {
			complete = true;
		} else if (c == '?' || cli_filter_opt(&fo, c, optarg) < 0) {
			return 1;
		}
	}
	if (optind != argc - 1) {
		cli_err(NULL, "breakdown: expected one TRACE directory (see strata breakdown --help)");
		return 1;
	}
	struct cli_trace ct = { 0 };
	struct bd_options bo = { .from = 0, .to = UINT64_MAX };
	if (report_open_window("breakdown", argv[optind], &fo, &ct, &bo.from, &bo.to) < 0)
		return 1;
	struct bd_result *r = NULL;
	int ret = bd_compute(ct.t, &bo, &r);
	if (ret == -ENOENT) {
		cli_err(ct.path, "no sched:sched_switch event%s: breakdown needs the kernel's "
			"scheduling events (record with strata record -k sched)",
			fo.has_to ? " up to --to" : "");
		cli_close(&ct);
		return 1;
	}
	if (ret < 0) {
		cli_err(ct.path, "%s", strerror(-ret));
		cli_close(&ct);
		return 1;
	}
	struct an_loss loss;
	an_loss_get(ct.t, &loss);
	report_loss(ct.path, &loss, json ? NULL : stdout);
	if (json)
		print_json(ct.t, r, &fo, &loss, by, complete);
	else
		print_text(ct.t, r, &fo, &loss, by, complete);
	bd_free(r);
	int rc = cli_status(&ct);
	cli_close(&ct);
	return rc;
}
