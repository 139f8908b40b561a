/* SPDX-License-Identifier: MIT */
/* strata breakdown: where each process and thread spent its time, from the kernel's sched and syscall events. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "cli.h"
#include "table.h"

const char cmd_breakdown_usage[] =
	"usage: strata breakdown [OPTIONS] TRACE\n\n"
	"Per process and thread, over the trace or a window: time running in user\n"
	"space, in system calls (per call: count, time, on-CPU part), runnable\n"
	"(preempted or woken, waiting for a CPU), blocked sleeping (S) and blocked\n"
	"uninterruptible (D, I/O wait), and on which CPUs; then per CPU busy and\n"
	"idle time. The states of each thread add up to the wall time exactly\n"
	"('other': before it was first seen, or after it exited). Needs kernel\n"
	"events (strata ktrace -k sched[,syscalls]).\n\n"
	"  --pid N, --tid N      only these (repeatable, comma lists)\n"
	"  --from SEC, --to SEC  window, seconds since the trace start\n"
	"  --format text|json    output format (default text)\n";

static const char *const state_names[BD_NSTATES] = {
	"user", "syscall", "runnable", "sleep", "io_wait", "irq", "other",
};

static bool wanted(const struct cli_filter_opts *fo, const struct bd_thread *th)
{
	if (!fo->npids && !fo->ntids)
		return true;
	for (unsigned i = 0; i < fo->npids; i++)
		if (fo->pids[i] == th->pid)
			return true;
	for (unsigned i = 0; i < fo->ntids; i++)
		if (fo->tids[i] == th->tid)
			return true;
	return false;
}

static double ms(struct strata_trace *t, uint64_t ticks)
{
	return (double)strata_trace_ticks_to_ns(t, ticks) / 1e6;
}

static void print_json(struct strata_trace *t, const struct bd_result *r,
		       const struct cli_filter_opts *fo)
{
	printf("{\"wall_ns\":%" PRIu64 ",\"wall_ticks\":%" PRIu64
	       ",\"syscalls_traced\":%s,\"threads\":[",
	       strata_trace_ticks_to_ns(t, r->end - r->begin), r->end - r->begin,
	       r->have_syscalls ? "true" : "false");
	bool first = true;
	for (unsigned i = 0; i < r->nthreads; i++) {
		const struct bd_thread *th = &r->threads[i];
		if (!wanted(fo, th))
			continue;
		printf("%s\n{\"pid\":%u,\"tid\":%u,\"comm\":\"", first ? "" : ",", th->pid,
		       th->tid);
		for (const char *p = th->comm; *p; p++)
			if (*p >= 0x20 && *p != '"' && *p != '\\')
				putchar(*p);
		printf("\"");
		for (int s = 0; s < BD_NSTATES; s++)
			printf(",\"%s_ns\":%" PRIu64, state_names[s],
			       strata_trace_ticks_to_ns(t, th->t[s]));
		printf(",\"ticks\":[");
		for (int s = 0; s < BD_NSTATES; s++)
			printf("%s%" PRIu64, s ? "," : "", th->t[s]);
		printf("],\"preempted\":%" PRIu64 ",\"switches\":%" PRIu64
		       ",\"wakeups\":%" PRIu64 ",\"user_events\":%" PRIu64 ",\"cpus\":{",
		       th->preempted, th->switches_in, th->wakeups, th->user_events);
		bool f2 = true;
		for (unsigned c = 0; c < r->ncpus; c++)
			if (th->cpu[c]) {
				printf("%s\"%u\":%" PRIu64, f2 ? "" : ",", c,
				       strata_trace_ticks_to_ns(t, th->cpu[c]));
				f2 = false;
			}
		printf("},\"syscalls\":[");
		for (unsigned k = 0; k < th->nsc; k++) {
			const char *nm = bd_syscall_name(t, th->sc[k].nr);
			printf("%s{\"nr\":%u,\"name\":\"%s\",\"count\":%" PRIu64
			       ",\"time_ns\":%" PRIu64 ",\"oncpu_ns\":%" PRIu64,
			       k ? "," : "", th->sc[k].nr, nm ? nm : "",
			       th->sc[k].count, strata_trace_ticks_to_ns(t, th->sc[k].time),
			       strata_trace_ticks_to_ns(t, th->sc[k].oncpu));
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
		       ",\"other_ns\":%" PRIu64 ",\"irq_ns\":%" PRIu64 ",\"softirq_ns\":%" PRIu64 "}",
		       c ? "," : "", c, strata_trace_ticks_to_ns(t, k->busy),
		       strata_trace_ticks_to_ns(t, k->idle), strata_trace_ticks_to_ns(t, k->other),
		       strata_trace_ticks_to_ns(t, k->irq), strata_trace_ticks_to_ns(t, k->softirq));
	}
	printf("]}\n");
}

static int cmp_sc(const void *a, const void *b)
{
	const struct bd_syscall *x = a, *y = b;
	return x->time < y->time ? 1 : x->time > y->time ? -1 : 0;
}

static void print_text(struct strata_trace *t, const struct bd_result *r,
		       const struct cli_filter_opts *fo)
{
	struct table tb;
	double wall = ms(t, r->end - r->begin);

	printf("Wall time: %.3f ms (times in ms; each row adds up to it)%s\n\n", wall,
	       r->have_syscalls ? "" :
				  "\nNo syscall events: 'user' is all on-CPU time "
				  "(record with -k sched,syscalls to split it)");
	table_init(&tb, 10, "rlrrrrrrrl");
	const char *hdr[10] = { "pid/tid", "comm", r->have_syscalls ? "user" : "running",
				"syscall", "runnable", "sleep", "io_wait", "irq", "other", "cpus" };
	for (int i = 0; i < 10; i++)
		table_cell(&tb, "%s", hdr[i]);
	for (unsigned i = 0; i < r->nthreads; i++) {
		const struct bd_thread *th = &r->threads[i];
		if (!wanted(fo, th) || th->t[BD_OTHER] == r->end - r->begin)
			continue;
		table_cell(&tb, "%u/%u", th->pid, th->tid);
		table_cell(&tb, "%s", th->comm[0] ? th->comm : "?");
		for (int s = 0; s < BD_NSTATES; s++)
			table_cell(&tb, "%.3f", ms(t, th->t[s]));
		char cpus[256] = "";
		size_t n = 0;
		for (unsigned c = 0; c < r->ncpus && n < sizeof(cpus) - 32; c++)
			if (th->cpu[c])
				n += snprintf(cpus + n, sizeof(cpus) - n, "%s%u:%.1f", n ? " " : "", c,
					      ms(t, th->cpu[c]));
		table_cell(&tb, "%s", cpus[0] ? cpus : "-");
	}
	table_print(&tb, stdout, "");
	table_fini(&tb);

	if (r->have_syscalls) {
		printf("\nSystem calls (time from entry to exit; on-CPU part):\n");
		table_init(&tb, 9, "rrlrrrrrl");
		const char *h2[9] = { "pid", "tid", "syscall", "count", "time", "on_cpu",
				      "blocked", "avg_us", "events inside" };
		for (int i = 0; i < 9; i++)
			table_cell(&tb, "%s", h2[i]);
		for (unsigned i = 0; i < r->nthreads; i++) {
			const struct bd_thread *th = &r->threads[i];
			if (!wanted(fo, th) || !th->nsc)
				continue;
			struct bd_syscall *sc = malloc(th->nsc * sizeof(*sc));
			if (!sc)
				break;
			memcpy(sc, th->sc, th->nsc * sizeof(*sc));
			qsort(sc, th->nsc, sizeof(*sc), cmp_sc);
			for (unsigned k = 0; k < th->nsc; k++) {
				const char *nm = bd_syscall_name(t, sc[k].nr);
				table_cell(&tb, "%u", th->pid);
				table_cell(&tb, "%u", th->tid);
				if (nm)
					table_cell(&tb, "%s", nm);
				else
					table_cell(&tb, "#%u", sc[k].nr);
				table_cell(&tb, "%" PRIu64, sc[k].count);
				table_cell(&tb, "%.3f", ms(t, sc[k].time));
				table_cell(&tb, "%.3f", ms(t, sc[k].oncpu));
				table_cell(&tb, "%.3f", ms(t, sc[k].time > sc[k].oncpu ?
								 sc[k].time - sc[k].oncpu : 0));
				table_cell(&tb, "%.1f", sc[k].count ? ms(t, sc[k].time) * 1e3 /
								      (double)sc[k].count : 0.0);
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
		table_print(&tb, stdout, "");
		table_fini(&tb);
	}

	printf("\nCPUs:\n");
	table_init(&tb, 6, "rrrrrr");
	const char *h3[6] = { "cpu", "busy", "idle", "other", "irq", "softirq" };
	for (int i = 0; i < 6; i++)
		table_cell(&tb, "%s", h3[i]);
	for (unsigned c = 0; c < r->ncpus; c++) {
		const struct bd_cpu *k = &r->cpus[c];
		table_cell(&tb, "%u", c);
		table_cell(&tb, "%.3f", ms(t, k->busy));
		table_cell(&tb, "%.3f", ms(t, k->idle));
		table_cell(&tb, "%.3f", ms(t, k->other));
		table_cell(&tb, "%.3f", ms(t, k->irq));
		table_cell(&tb, "%.3f", ms(t, k->softirq));
	}
	table_print(&tb, stdout, "");
	table_fini(&tb);
}

int cmd_breakdown(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "from", required_argument, NULL, OPT_FROM },
		{ "to", required_argument, NULL, OPT_TO },
		{ "pid", required_argument, NULL, OPT_PID },
		{ "tid", required_argument, NULL, OPT_TID },
		{ "help", no_argument, NULL, OPT_HELP },
		{ 0 },
	};
	struct cli_filter_opts fo = { 0 };
	bool json = false;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == OPT_FORMAT) {
			if (cli_text_json(optarg, &json))
				return 1;
		} else if (c == '?' || cli_filter_opt(&fo, c, optarg) < 0) {
			return 1;
		}
	}
	if (optind != argc - 1) {
		cli_err(NULL, "breakdown: expected one TRACE directory (see strata breakdown --help)");
		return 1;
	}
	struct cli_trace ct = { .quiet_lost = true };
	if (cli_open(&ct, argv[optind], NULL) < 0)
		return 1;
	struct bd_options bo = { .from = 0, .to = UINT64_MAX };
	uint64_t b = strata_trace_begin(ct.t);
	if (fo.has_from)
		bo.from = b + strata_trace_ns_to_ticks(ct.t, (uint64_t)llround(fo.from * 1e9));
	if (fo.has_to)
		bo.to = b + strata_trace_ns_to_ticks(ct.t, (uint64_t)llround(fo.to * 1e9));
	struct bd_result *r = NULL;
	int ret = bd_compute(ct.t, &bo, &r);
	if (ret == -ENOENT) {
		cli_err(ct.path, "no kernel sched events (record with strata ktrace -k sched)");
		cli_close(&ct);
		return 1;
	}
	if (ret < 0) {
		cli_err(ct.path, "%s", strerror(-ret));
		cli_close(&ct);
		return 1;
	}
	if (json)
		print_json(ct.t, r, &fo);
	else
		print_text(ct.t, r, &fo);
	bd_free(r);
	int rc = cli_status(&ct);
	cli_close(&ct);
	return rc;
}
