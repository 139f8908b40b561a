/* SPDX-License-Identifier: MIT */
/* strata locks: contended pthread locks of a trace taken under libstrata-locks.so, per lock address (docs/locks.md). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/locks.h"
#include "cli.h"
#include "table.h"

const char cmd_locks_usage[] =
	"usage: strata locks [OPTIONS] TRACE\n\n"
	"Lock contention per lock (address and process; mutexes and rwlocks) from\n"
	"a trace taken under LD_PRELOAD=libstrata-locks.so: contended acquisitions,\n"
	"total, mean and longest wait, total and longest hold of the contended\n"
	"acquisitions, and the threads that waited. Uncontended acquisitions are\n"
	"only counted per thread, unless the program ran with\n"
	"STRATA_LOCKS_CHAINS=all (JSON: `acquired`, `acquire_chains`). A lock\n"
	"with a wait still open at the end is [partial] (docs/locks.md).\n\n"
	"  --sort wait|count|max|hold|spin|acq  order: total wait (default),\n"
	"                        contended count, longest wait, total hold,\n"
	"                        spins (spin locks' turns waiting), acquisitions\n"
	"  --top N               the first N locks only (0: all; default 20)\n"
	"  --pid N               the locks of this process only\n"
	"  --format text|json|csv  output format (default text); csv: one row\n"
	"                        per lock, times in ns, for spreadsheets\n";

static int parse_sort(const char *s, enum lock_sort *out)
{
	static const char *const names[] = { "wait", "count", "max", "hold", "spin", "acq" };
	for (int i = 0; i < 6; i++)
		if (!strcmp(s, names[i])) {
			*out = (enum lock_sort)i;
			return 0;
		}
	cli_err(NULL, "locks: --sort %s: expected wait, count, max, hold, spin or acq", s);
	return -1;
}

static const char *const kind_names[LOCK_KINDS] = { "?",    "mutex",    "rwlock-r",
						    "rwlock-w", "spin", "semaphore" };

/* What the lock's waits waited for: "rwlock-rw" for an rwlock waited on
 * both to read and to write (by_kind has each apart), else the kind. */
static const char *kind_name(const struct lock_stats *l)
{
	if (l->by_kind[2].waits && l->by_kind[3].waits)
		return "rwlock-rw";
	return kind_names[l->kind < LOCK_KINDS ? l->kind : 0];
}

static void tids_text(const struct lock_stats *l, char *buf, size_t len)
{
	size_t o = 0;
	buf[0] = 0;
	for (unsigned i = 0; i < l->ntids && o + 12 < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%u", i ? "," : "", l->tids[i]);
	if (o + 12 >= len)
		snprintf(buf + o, len - o, ",...");
}

static const char *lock_name(struct strata_symbolizer *sy, const struct lock_stats *l,
			     char *buf, size_t len, struct strata_symbol *sym);

#define CHAIN_LOCKS 5 /* locks whose call chains the text shows */
#define CHAIN_TOP 3   /* chains shown per lock */

/* One frame of process pid, symbolized into buf; its file's name (or
 * "") in *module, when asked. */
static const char *frame_text_in(struct strata_symbolizer *sy, uint32_t pid, uint64_t pc,
				 char *buf, size_t len, const char **module)
{
	struct strata_symbol sym;
	memset(&sym, 0, sizeof(sym));
	sym.status = STRATA_SYM_UNKNOWN;
	if (sy)
		strata_symbolize_return(sy, pid, pc, &sym);
	if (module)
		*module = sym.module ? sym.module : "";
	return strata_symbol_format(&sym, pc, buf, len);
}

static const char *frame_text(struct strata_symbolizer *sy, uint32_t pid, uint64_t pc,
			      char *buf, size_t len)
{
	return frame_text_in(sy, pid, pc, buf, len, NULL);
}

static void print_causes(struct strata_trace *t, const struct lock_result *r,
			 const struct lock_stats *l);

/* K42's lock tool: where the waits for the most contended locks came from. */
static void print_chains(struct strata_trace *t, const struct lock_result *r, size_t n,
			 struct strata_symbolizer *sy)
{
	bool any = false;
	for (size_t i = 0; i < n; i++) {
		const struct lock_stats *l = &r->locks[i];
		char name[300], b[40], fb[600];
		struct strata_symbol sym;
		for (unsigned k = 0; k < l->nchains && k < CHAIN_TOP; k++) {
			const struct lock_chain_use *u = &l->chains[k];
			const struct lock_chain *c = lock_chain_find(r, l->pid, u->id);
			if (!any)
				printf("\nCall chains of the waits (most wait first; the lock call's "
				       "caller first):\n");
			any = true;
			if (!k) {
				printf("\n  %s (pid %u)\n", lock_name(sy, l, name, sizeof(name), &sym),
				       l->pid);
				if (r->have_sched && l->holds)
					printf("    longest hold %s (tid %u): switched out %" PRIu64
					       " time%s meanwhile, %" PRIu64 " preempted, %" PRIu64
					       " blocked\n", dur_fmt(l->hold_max, b, sizeof(b)),
					       l->max_hold_tid, l->max_hold_preempted + l->max_hold_blocked,
					       l->max_hold_preempted + l->max_hold_blocked == 1 ? "" : "s",
					       l->max_hold_preempted, l->max_hold_blocked);
				if (r->have_sched && l->holds && l->max_hold_ncauses)
					print_causes(t, r, l);
			}
			printf("    %" PRIu64 " wait%s, %s:\n", u->waits, u->waits == 1 ? "" : "s",
			       dur_fmt(u->wait_total, b, sizeof(b)));
			if (!c) {
				printf("      (no chain recorded)\n");
				continue;
			}
			for (unsigned f = 0; f < c->n; f++)
				printf("      %s\n", frame_text(sy, l->pid, c->frames[f], fb, sizeof(fb)));
		}
	}
}

#define PARTIAL_TOP 10 /* threads still running at the end the text lists */
#define PARTIAL_MARK "[partial]" /* a lock with waits open at the end */

/* Threads that still ran at the end: their totals are partial (lower
 * bounds), the wait they were in so far. */
static void print_partial(const struct lock_result *r)
{
	size_t np = 0, shown = 0;
	char b[40];
	for (size_t i = 0; i < r->nthreads_listed; i++)
		np += r->threads[i].partial;
	if (!np)
		return;
	printf("\n  %zu thread%s still running at the end, totals partial (lower bounds):\n", np,
	       np == 1 ? "" : "s");
	for (size_t i = 0; i < r->nthreads_listed && shown < PARTIAL_TOP; i++) {
		const struct lock_thread *lt = &r->threads[i];
		if (!lt->partial)
			continue;
		shown++;
		const char *tn = lock_name_of(r, lt->tid);
		printf("    tid %u%s%s%s (pid %u): %" PRIu64 " acquisitions, %" PRIu64 " contended%s",
		       lt->tid, tn ? " (" : "", tn ? tn : "", tn ? ")" : "", lt->pid, lt->acquisitions, lt->contended,
		       lt->alive ? "" : " (as of its last release)");
		if (lt->holding)
			printf(", holding %u", lt->holding);
		if (lt->wait_addr)
			printf(", waiting for 0x%" PRIx64 " for %s", lt->wait_addr,
			       dur_fmt(lt->wait_ns, b, sizeof(b)));
		printf("\n");
	}
	if (shown < np)
		printf("    (%zu more: --format json lists every thread)\n", np - shown);
}

static void print_text(struct strata_trace *t, const struct lock_result *r, size_t n,
		       struct strata_symbolizer *sy)
{
	uint64_t mw = 0, mh = 0, mm = 0;
	for (size_t i = 0; i < n; i++) {
		const struct lock_stats *l = &r->locks[i];
		uint64_t waits = l->contended + l->failed + l->open_waits;
		if (l->wait_total > mw)
			mw = l->wait_total;
		if (l->hold_total > mh)
			mh = l->hold_total;
		if (waits && l->wait_total / waits > mm)
			mm = l->wait_total / waits;
	}
	/* the mean its own unit: a wait of 0.2 us is no "0.000 ms" */
	struct dur_unit uw = dur_unit_for(mw), uh = dur_unit_for(mh), um = dur_unit_for(mm);
	struct table tb;
	char b[40], tids[128], name[300];

	printf("Contended pthread locks: %zu lock%s, %" PRIu64 " contended of %" PRIu64
	       " acquisitions in %u thread%s.\n\n", r->nlocks, r->nlocks == 1 ? "" : "s",
	       r->contended, r->acquisitions, r->nthreads, r->nthreads == 1 ? "" : "s");
	table_init(&tb, 13 + r->have_futex, "lllrrrrrrrrrrl");
	table_cell(&tb, "lock");
	table_cell(&tb, "kind");
	table_cell(&tb, "process");
	table_cell(&tb, "contended");
	table_cell(&tb, "acquired");
	table_cell(&tb, "wait (%s)", uw.name);
	table_cell(&tb, "mean (%s)", um.name);
	table_cell(&tb, "max (%s)", uw.name);
	if (r->have_futex)
		table_cell(&tb, "in futex (%s)", uw.name);
	table_cell(&tb, "hold (%s)", uh.name);
	table_cell(&tb, "max hold (%s)", uh.name);
	table_cell(&tb, "failed");
	table_cell(&tb, "spins");
	table_cell(&tb, "threads");
	for (size_t i = 0; i < n; i++) {
		const struct lock_stats *l = &r->locks[i];
		uint64_t waits = l->contended + l->failed + l->open_waits;
		struct strata_symbol sym;
		table_cell(&tb, "%s%s", lock_name(sy, l, name, sizeof(name), &sym),
			   l->open_waits ? " " PARTIAL_MARK : "");
		table_cell(&tb, "%s", kind_name(l));
		const char *pn = lock_name_of(r, l->pid);
		table_cell(&tb, "%s%s%u", pn ? pn : "", pn ? " " : "", l->pid);
		table_cell(&tb, "%" PRIu64, l->contended);
		if (r->have_tally) /* a killed process's last counts: "≥" */
			table_cell(&tb, "%s%" PRIu64, l->acquisitions_partial ? ">=" : "",
				   l->acquisitions);
		else
			table_cell(&tb, "-");
		table_cell(&tb, "%s", dur_in(uw, l->wait_total, b, sizeof(b)));
		table_cell(&tb, "%s", dur_in(um, waits ? l->wait_total / waits : 0, b, sizeof(b)));
		table_cell(&tb, "%s", dur_in(uw, l->wait_max, b, sizeof(b)));
		if (r->have_futex)
			table_cell(&tb, "%s", dur_in(uw, l->futex_total, b, sizeof(b)));
		table_cell(&tb, "%s", dur_in(uh, l->hold_total, b, sizeof(b)));
		table_cell(&tb, "%s", dur_in(uh, l->hold_max, b, sizeof(b)));
		table_cell(&tb, "%" PRIu64, l->failed);
		if (l->kind == 4) /* spin */
			table_cell(&tb, "%" PRIu64, l->spins);
		else
			table_cell(&tb, "-");
		tids_text(l, tids, sizeof(tids));
		table_cell(&tb, "%s", tids);
	}
	table_print(&tb, stdout, "  ");
	table_fini(&tb);
	if (!r->nlocks)
		printf("  (no contended acquisition in this trace)\n");
	if (n < r->nlocks)
		printf("  (%zu more: --top 0 shows all)\n", r->nlocks - n);
	if (r->open_waits || r->open_holds || r->orphans)
		printf("\n  %" PRIu64 " waits and %" PRIu64 " holds still open at the end, %" PRIu64
		       " ends with nothing open\n", r->open_waits, r->open_holds, r->orphans);
	for (size_t i = 0; i < n; i++)
		if (r->locks[i].open_waits) {
			printf("  " PARTIAL_MARK ": waits still open at the end (a hang, a "
			       "deadlock) counted in wait and max up to the trace's last event, "
			       "lower bounds\n");
			break;
		}
	print_partial(r);
	print_chains(t, r, n < CHAIN_LOCKS ? n : CHAIN_LOCKS, sy);
}

/* A lock by its symbol when it is a static one ("hot", "locks+0x28");
 * else by the call site that initialised it when the preload saw the
 * init ("init@make_a+0x1f (heap.c:12)": a heap lock has no name of its
 * own); else by its address. */
static const char *lock_name(struct strata_symbolizer *sy, const struct lock_stats *l,
			     char *buf, size_t len, struct strata_symbol *sym)
{
	memset(sym, 0, sizeof(*sym));
	sym->status = STRATA_SYM_UNKNOWN;
	if (sy)
		strata_symbolize(sy, l->pid, l->addr, sym);
	if (sym->status == STRATA_SYM_FUNCTION && sym->offset)
		snprintf(buf, len, "%s+0x%" PRIx64, sym->function, sym->offset);
	else if (sym->status == STRATA_SYM_FUNCTION)
		snprintf(buf, len, "%s", sym->function);
	else if (sym->status == STRATA_SYM_CHANGED || sym->status == STRATA_SYM_REBUILT)
		strata_symbol_format(sym, l->addr, buf, len);
	else if (l->init_site && len > 5) {
		snprintf(buf, len, "init@");
		frame_text(sy, l->pid, l->init_site, buf + 5, len - 5);
	} else
		snprintf(buf, len, "0x%" PRIx64, l->addr);
	return buf;
}

/* The frames of chain id of pid, symbolized, and beside them each
 * frame's file (which the text leaves out); then the object's end. */
static void print_chain_json(const struct lock_result *r, uint32_t pid, uint64_t id,
			     struct strata_symbolizer *sy)
{
	const struct lock_chain *c = lock_chain_find(r, pid, id);
	const char *mod[LOCK_FRAMES];
	char fb[600];

	printf(",\"frames\":[");
	for (unsigned f = 0; c && f < c->n; f++) {
		printf("%s", f ? "," : "");
		cli_json_name(frame_text_in(sy, pid, c->frames[f], fb, sizeof(fb), &mod[f]));
	}
	printf("],\"modules\":[");
	for (unsigned f = 0; c && f < c->n; f++) {
		printf("%s", f ? "," : "");
		cli_json_name(mod[f]);
	}
	printf("]}");
}

/* ,"key":"the name of tid" when the trace names it */
static void json_name_of(const struct lock_result *r, const char *key, uint32_t tid)
{
	const char *nm = lock_name_of(r, tid);
	if (!nm)
		return;
	printf(",\"%s\":", key);
	cli_json_name(nm);
}

/* A cause of the longest hold's switches, into buf: "blocked in futex",
 * "blocked (no system call seen)", "preempted by kworker/0:1 (51)". */
static const char *cause_text(struct strata_trace *t, const struct lock_result *r,
			      const struct lock_cause *c, char *buf, size_t len)
{
	if (c->blocked) {
		const char *sn = c->sys1 ? bd_syscall_name(t, c->sys1 - 1) : NULL;
		if (sn)
			snprintf(buf, len, "blocked in %s", sn);
		else if (c->sys1)
			snprintf(buf, len, "blocked in system call %u", c->sys1 - 1);
		else
			snprintf(buf, len, "blocked%s", r->have_syscalls ?
				 " outside system calls (a page fault?)" : "");
	} else {
		const char *nm = lock_name_of(r, c->next);
		snprintf(buf, len, "preempted by %s%s%u%s", nm ? nm : "tid ", nm ? " (" : "",
			 c->next, nm ? ")" : "");
	}
	return buf;
}

static void print_causes(struct strata_trace *t, const struct lock_result *r,
			 const struct lock_stats *l)
{
	char b[200];
	printf("      ");
	for (unsigned i = 0; i < l->max_hold_ncauses; i++)
		printf("%s%s x%" PRIu64, i ? ", " : "",
		       cause_text(t, r, &l->max_hold_causes[i], b, sizeof(b)),
		       l->max_hold_causes[i].n);
	if (l->max_hold_other)
		printf(", other x%" PRIu64, l->max_hold_other);
	printf("\n");
}

static void print_json(struct strata_trace *t, const struct lock_result *r, size_t n,
		       const struct an_loss *loss, struct strata_symbolizer *sy)
{
	printf("{\"acquisitions\":%" PRIu64 ",\"contended\":%" PRIu64 ",\"threads\":%u"
	       ",\"open_waits\":%" PRIu64 ",\"open_holds\":%" PRIu64 ",\"orphans\":%" PRIu64,
	       r->acquisitions, r->contended, r->nthreads, r->open_waits, r->open_holds,
	       r->orphans);
	report_loss_json(stdout, loss);
	/* every thread's totals; those still running at the end partial */
	printf(",\"per_thread\":[");
	for (size_t i = 0; i < r->nthreads_listed; i++) {
		const struct lock_thread *lt = &r->threads[i];
		printf("%s{\"tid\":%u,\"pid\":%u,\"acquisitions\":%" PRIu64
		       ",\"contended\":%" PRIu64 ",\"partial\":%s,\"alive_at_exit\":%s"
		       ",\"holding\":%u",
		       i ? "," : "", lt->tid, lt->pid, lt->acquisitions, lt->contended,
		       lt->partial ? "true" : "false", lt->alive ? "true" : "false", lt->holding);
		json_name_of(r, "name", lt->tid);
		if (lt->wait_addr)
			printf(",\"waiting\":{\"addr\":\"0x%" PRIx64 "\",\"wait_ns\":%" PRIu64 "}",
			       lt->wait_addr, lt->wait_ns);
		printf("}");
	}
	printf("]");
	printf(",\"locks\":[");
	for (size_t i = 0; i < n; i++) {
		const struct lock_stats *l = &r->locks[i];
		struct strata_symbol sym;
		char name[300];
		lock_name(sy, l, name, sizeof(name), &sym);
		printf("%s\n{\"addr\":\"0x%" PRIx64 "\",\"name\":", i ? "," : "", l->addr);
		cli_json_name(name);
		printf(",\"symbolized\":%s", sym.status == STRATA_SYM_FUNCTION ? "true" : "false");
		if (l->init_site) {
			char fb[600];
			printf(",\"init_site\":");
			cli_json_name(frame_text(sy, l->pid, l->init_site, fb, sizeof(fb)));
		}
		printf(",\"kind\":\"%s\",\"pid\":%u"
		       ",\"contended\":%" PRIu64 ",\"failed\":%" PRIu64 ",\"wait_ns\":%" PRIu64
		       ",\"max_wait_ns\":%" PRIu64 ",\"spins\":%" PRIu64
		       ",\"holds\":%" PRIu64 ",\"hold_ns\":%" PRIu64
		       ",\"max_hold_ns\":%" PRIu64 ",\"tids\":[",
		       kind_name(l), l->pid, l->contended, l->failed, l->wait_total,
		       l->wait_max, l->spins, l->holds, l->hold_total, l->hold_max);
		for (unsigned k = 0; k < l->ntids; k++)
			printf("%s%u", k ? "," : "", l->tids[k]);
		printf("]");
		json_name_of(r, "process", l->pid);
		printf(",\"thread_names\":[");
		for (unsigned k = 0; k < l->ntids; k++) {
			const char *tn = lock_name_of(r, l->tids[k]);
			printf("%s", k ? "," : "");
			if (tn)
				cli_json_name(tn);
			else
				printf("null");
		}
		printf("]");
		printf(",\"open_waits\":%" PRIu64 ",\"open_wait_ns\":%" PRIu64
		       ",\"partial\":%s", l->open_waits, l->open_wait_total,
		       l->open_waits ? "true" : "false");
		if (r->have_tally)
			printf(",\"acquisitions\":%" PRIu64 ",\"acquisitions_partial\":%s",
			       l->acquisitions, l->acquisitions_partial ? "true" : "false");
		printf(",\"by_kind\":{");
		for (unsigned k = 0, any = 0; k < LOCK_KINDS; k++) {
			const struct lock_kind_stats *bk = &l->by_kind[k];
			if (!bk->waits)
				continue;
			printf("%s\"%s\":{\"contended\":%" PRIu64 ",\"failed\":%" PRIu64
			       ",\"wait_ns\":%" PRIu64 "}", any++ ? "," : "", kind_names[k],
			       bk->contended, bk->waits - bk->contended, bk->wait_total);
		}
		printf("}");
		if (r->have_futex)
			printf(",\"futex_ns\":%" PRIu64, l->futex_total);
		if (r->have_sched && l->holds) {
			printf(",\"max_hold\":{\"tid\":%u,\"preempted\":%" PRIu64
			       ",\"blocked\":%" PRIu64 ",\"causes\":[", l->max_hold_tid,
			       l->max_hold_preempted, l->max_hold_blocked);
			for (unsigned k = 0; k < l->max_hold_ncauses; k++) {
				const struct lock_cause *c = &l->max_hold_causes[k];
				char b[200];
				printf("%s{\"n\":%" PRIu64 ",\"blocked\":%s", k ? "," : "", c->n,
				       c->blocked ? "true" : "false");
				if (c->blocked && c->sys1)
					printf(",\"syscall\":%u", c->sys1 - 1);
				if (!c->blocked)
					printf(",\"next_tid\":%u", c->next);
				printf(",\"text\":");
				cli_json_name(cause_text(t, r, c, b, sizeof(b)));
				printf("}");
			}
			printf("],\"other\":%" PRIu64 "}", l->max_hold_other);
		}
		printf(",\"chains\":[");
		for (unsigned k = 0; k < l->nchains; k++) {
			const struct lock_chain_use *u = &l->chains[k];
			printf("%s{\"waits\":%" PRIu64 ",\"wait_ns\":%" PRIu64, k ? "," : "",
			       u->waits, u->wait_total);
			print_chain_json(r, l->pid, u->id, sy);
		}
		printf("]");
		if (l->acquired) { /* STRATA_LOCKS_CHAINS=all */
			printf(",\"acquired\":%" PRIu64 ",\"acquire_chains\":[", l->acquired);
			for (unsigned k = 0; k < l->nacq_chains; k++) {
				printf("%s{\"acquisitions\":%" PRIu64, k ? "," : "",
				       l->acq_chains[k].waits);
				print_chain_json(r, l->pid, l->acq_chains[k].id, sy);
			}
			printf("]");
		}
		printf("}");
	}
	printf("]}\n");
}

/* A CSV field: as is, or quoted with its quotes doubled when it holds a
 * comma, a quote or a line break (RFC 4180). */
static void csv_field(const char *s, const char *sep)
{
	if (!strpbrk(s, ",\"\r\n")) {
		printf("%s%s", s, sep);
		return;
	}
	putchar('"');
	for (; *s; s++) {
		if (*s == '"')
			putchar('"');
		putchar(*s);
	}
	printf("\"%s", sep);
}

/* One row per lock, the JSON's numbers (times in ns) without its chains;
 * threads joined by ';'. */
static void print_csv(const struct lock_result *r, size_t n, struct strata_symbolizer *sy)
{
	printf("lock,addr,kind,pid,contended,acquisitions,failed,wait_ns,max_wait_ns,%sholds,"
	       "hold_ns,max_hold_ns,spins,threads\n", r->have_futex ? "futex_ns," : "");
	for (size_t i = 0; i < n; i++) {
		const struct lock_stats *l = &r->locks[i];
		struct strata_symbol sym;
		char name[300], tids[128];
		csv_field(lock_name(sy, l, name, sizeof(name), &sym), ",");
		printf("0x%" PRIx64 ",%s,%u,%" PRIu64 ",", l->addr, kind_name(l), l->pid,
		       l->contended);
		if (r->have_tally) /* empty: the trace has no counts per lock */
			printf("%" PRIu64, l->acquisitions);
		printf(",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",", l->failed, l->wait_total,
		       l->wait_max);
		if (r->have_futex)
			printf("%" PRIu64 ",", l->futex_total);
		printf("%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",", l->holds, l->hold_total,
		       l->hold_max, l->spins);
		tids_text(l, tids, sizeof(tids));
		for (char *t = tids; *t; t++)
			if (*t == ',')
				*t = ';';
		csv_field(tids, "\n");
	}
}

int cmd_locks(int argc, char **argv)
{
	enum { O_SORT = 3400, O_TOP };
	static const struct option opts[] = {
		{ "sort", required_argument, NULL, O_SORT },
		{ "top", required_argument, NULL, O_TOP },
		{ "pid", required_argument, NULL, OPT_PID },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "help", no_argument, NULL, OPT_HELP },
		{ 0 },
	};
	enum lock_sort by = LOCK_SORT_WAIT;
	long top = 20;
	int format = 0; /* 0 text, 1 json, 2 csv */
	uint32_t pid = 0;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case O_SORT:
			if (parse_sort(optarg, &by))
				return 1;
			break;
		case O_TOP:
			if (report_top(optarg, &top))
				return 1;
			break;
		case OPT_PID: {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);
			if (!*optarg || *end || !v || v > UINT32_MAX) {
				cli_err(NULL, "locks: --pid %s: expected a process id", optarg);
				return 1;
			}
			pid = (uint32_t)v;
			break;
		}
		case OPT_FORMAT:
			if (strcmp(optarg, "text") && strcmp(optarg, "json") &&
			    strcmp(optarg, "csv")) {
				cli_err(NULL, "--format: expected text, json or csv, not '%s'",
					optarg);
				return 1;
			}
			format = optarg[0] == 't' ? 0 : optarg[0] == 'j' ? 1 : 2;
			break;
		default: return 1;
		}
	}
	if (optind != argc - 1) {
		cli_err(NULL, "locks: expected one TRACE directory (see strata locks --help)");
		return 1;
	}
	struct cli_trace ct = { .quiet_lost = true };
	if (cli_open(&ct, argv[optind], NULL) < 0)
		return 1;
	struct lock_result *r;
	int ret = lock_compute(ct.t, pid, &r);
	if (ret < 0) {
		cli_err(ct.path, "%s", ret == -ENOENT ? "no lock:* events: trace the program with "
			"LD_PRELOAD=libstrata-locks.so (docs/locks.md)" : strerror(-ret));
		cli_close(&ct);
		return 1;
	}
	lock_sort(r, by);
	size_t n = top && (size_t)top < r->nlocks ? (size_t)top : r->nlocks;
	struct an_loss loss;
	an_loss_get(ct.t, &loss);
	/* the loss line goes to stderr with json and csv (report_loss()) */
	report_loss(ct.path, &loss, format ? NULL : stdout);
	/* static locks by their symbols; without maps or libdw, addresses */
	struct strata_symbolizer *sy = NULL;
	if (strata_symbolizer_create(ct.t, &sy) < 0)
		sy = NULL;
	if (format == 1)
		print_json(ct.t, r, n, &loss, sy);
	else if (format == 2)
		print_csv(r, n, sy);
	else
		print_text(ct.t, r, n, sy);
	strata_symbolizer_destroy(sy);
	lock_free(r);
	int rc = cli_status(&ct);
	cli_close(&ct);
	return rc;
}
