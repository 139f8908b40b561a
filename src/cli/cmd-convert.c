/* SPDX-License-Identifier: MIT */
/* strata convert: stream a trace into Chrome trace-event JSON or a Paje file. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char cmd_convert_usage[] =
	"usage: strata convert [OPTIONS] TRACE --to chrome|paje -o OUT\n\n"
	"Convert a trace, streaming (memory grows with the number of threads,\n"
	"not of events):\n"
	"  chrome  Chrome trace-event JSON (open it in ui.perfetto.dev or\n"
	"          chrome://tracing): events with strata_kind \"begin\"/\"end\" become\n"
	"          B/E slices, all others instant events (\"ph\":\"i\"); process and\n"
	"          thread names as metadata events. Fields go to \"args\".\n"
	"  paje    Paje trace (ViTE, Paje): %%EventDef header, then containers per\n"
	"          process and thread, begin/end as push/pop of states, the other\n"
	"          events as Paje events. Times in seconds since the trace start.\n\n"
	"  --to FORMAT           chrome or paje (required)\n"
	"  -o, --output FILE     where to write ('-' for stdout; required)\n" CLI_FILTER_HELP;

/* (pid, tid) pairs already announced: an open-addressing set */
struct tset {
	uint64_t *v;
	size_t cap, n;
};

/* Returns 1 if added, 0 if present, -1 out of memory. */
static int tset_add(struct tset *s, uint64_t key)
{
	key++; /* 0 marks an empty slot */
	if (s->n * 2 >= s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		uint64_t *v = calloc(cap, sizeof(*v));
		if (!v)
			return -1;
		for (size_t i = 0; i < s->cap; i++)
			if (s->v[i]) {
				size_t h = s->v[i] * 0x9E3779B97F4A7C15ull >> 17;
				while (v[h & (cap - 1)])
					h++;
				v[h & (cap - 1)] = s->v[i];
			}
		free(s->v);
		s->v = v;
		s->cap = cap;
	}
	for (size_t h = key * 0x9E3779B97F4A7C15ull >> 17;; h++) {
		uint64_t *slot = &s->v[h & (s->cap - 1)];
		if (*slot == key)
			return 0;
		if (!*slot) {
			*slot = key;
			s->n++;
			return 1;
		}
	}
}

static void us(struct cli_out *o, uint64_t ns)
{
	char b[8];
	cli_out_u64(o, ns / 1000);
	b[0] = '.';
	b[1] = '0' + ns % 1000 / 100;
	b[2] = '0' + ns % 100 / 10;
	b[3] = '0' + ns % 10;
	cli_out_mem(o, b, 4);
}

static void secs(struct cli_out *o, uint64_t ns)
{
	char b[12];
	cli_out_u64(o, ns / 1000000000);
	b[0] = '.';
	uint32_t r = ns % 1000000000;
	for (int i = 9; i >= 1; i--) {
		b[i] = '0' + r % 10;
		r /= 10;
	}
	cli_out_mem(o, b, 10);
}

static const char *procname(struct strata_trace *t, uint32_t pid)
{
	for (unsigned s = 0; s < strata_trace_nsubtraces(t); s++) {
		const char *vp = strata_trace_env(t, s, "vpid");
		if (vp && (uint32_t)strtoul(vp, NULL, 10) == pid) {
			const char *pn = strata_trace_env(t, s, "procname");
			return pn ? pn : "";
		}
	}
	return NULL;
}

static void chrome_event(struct cli_out *o, const struct cli_time *tm,
			 const struct strata_event *ev, struct strata_value *vals)
{
	const struct strata_event_class *c = ev->cls;
	const char *ph = c->kind == STRATA_KIND_BEGIN ? "B" : c->kind == STRATA_KIND_END ? "E" : "i";
	const char *colon = strchr(c->name, ':');
	cli_out_str(o, ",\n{\"name\":");
	cli_out_json_str(o, c->name, strlen(c->name));
	cli_out_str(o, ",\"cat\":");
	cli_out_json_str(o, c->name, colon ? (size_t)(colon - c->name) : strlen(c->name));
	cli_out_str(o, ",\"ph\":\"");
	cli_out_str(o, ph);
	cli_out_str(o, ph[0] == 'i' ? "\",\"s\":\"t\",\"ts\":" : "\",\"ts\":");
	us(o, cli_time_ns(tm, ev->timestamp));
	cli_out_str(o, ",\"pid\":");
	cli_out_u64(o, ev->pid);
	cli_out_str(o, ",\"tid\":");
	cli_out_u64(o, ev->tid);
	cli_out_str(o, ",\"args\":{\"cpu\":");
	cli_out_u64(o, ev->cpu);
	int n = strata_event_fields(ev, vals, c->nfields);
	for (int i = 0; i < n; i++) {
		const struct strata_field_class *f = &c->fields[i];
		if (f->hidden)
			continue;
		cli_out_mem(o, ",", 1);
		cli_out_json_str(o, f->name, strlen(f->name));
		cli_out_mem(o, ":", 1);
		cli_json_value(o, f, &vals[i]);
	}
	cli_out_str(o, "}}");
}

static const char paje_header[] =
	"%EventDef PajeDefineContainerType 1\n%       Alias string\n"
	"%       ContainerType string\n%       Name string\n%EndEventDef\n"
	"%EventDef PajeDefineStateType 3\n%       Alias string\n"
	"%       ContainerType string\n%       Name string\n%EndEventDef\n"
	"%EventDef PajeDefineEventType 4\n%       Alias string\n"
	"%       ContainerType string\n%       Name string\n%EndEventDef\n"
	"%EventDef PajeDefineEntityValue 6\n%       Alias string\n"
	"%       EntityType string\n%       Name string\n%       Color color\n%EndEventDef\n"
	"%EventDef PajeCreateContainer 7\n%       Time date\n%       Alias string\n"
	"%       Type string\n%       Container string\n%       Name string\n%EndEventDef\n"
	"%EventDef PajeDestroyContainer 8\n%       Time date\n%       Name string\n"
	"%       Type string\n%EndEventDef\n"
	"%EventDef PajePushState 11\n%       Time date\n%       Type string\n"
	"%       Container string\n%       Value string\n%EndEventDef\n"
	"%EventDef PajePopState 12\n%       Time date\n%       Type string\n"
	"%       Container string\n%EndEventDef\n"
	"%EventDef PajeNewEvent 20\n%       Time date\n%       Type string\n"
	"%       Container string\n%       Value string\n%EndEventDef\n";

/* A Paje string: no quotes or newlines inside. */
static void paje_str(struct cli_out *o, const char *s)
{
	cli_out_mem(o, "\"", 1);
	for (; *s; s++)
		cli_out_mem(o, (*s == '"' || *s == '\n') ? "_" : s, 1);
	cli_out_mem(o, "\"", 1);
}

static void paje_thread(struct cli_out *o, uint64_t ns, uint32_t pid, uint32_t tid)
{
	cli_out_str(o, "7 ");
	secs(o, ns);
	cli_out_str(o, " t");
	cli_out_u64(o, pid);
	cli_out_mem(o, "_", 1);
	cli_out_u64(o, tid);
	cli_out_str(o, " T p");
	cli_out_u64(o, pid);
	cli_out_str(o, " \"");
	cli_out_u64(o, tid);
	cli_out_str(o, "\"\n");
}

int cmd_convert(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "to", required_argument, NULL, OPT_TO_FMT },
		{ "output", required_argument, NULL, 'o' },
		CLI_FILTER_OPTIONS,
		{ 0 },
	};
	struct cli_filter_opts fo = { 0 };
	const char *to = NULL, *outpath = NULL;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
		if (c == OPT_TO_FMT)
			to = optarg;
		else if (c == 'o')
			outpath = optarg;
		else if (c == '?' || cli_filter_opt(&fo, c, optarg) < 0)
			return 1;
	}
	if (optind != argc - 1 || !to || !outpath) {
		cli_err(NULL, "convert: expected TRACE --to chrome|paje -o OUT "
			      "(see strata convert --help)");
		return 1;
	}
	bool paje = !strcmp(to, "paje");
	if (!paje && strcmp(to, "chrome")) {
		cli_err(NULL, "--to: expected chrome or paje, not '%s'", to);
		return 1;
	}
	struct cli_trace ct = { 0 };
	struct strata_iter *it = NULL;
	if (cli_open(&ct, argv[optind], &fo) < 0 || cli_iter(&ct, fo.internal, &it) < 0) {
		cli_close(&ct);
		return 1;
	}
	FILE *f = strcmp(outpath, "-") ? fopen(outpath, "we") : stdout;
	if (!f) {
		cli_err(outpath, "%s", strerror(errno));
		strata_iter_destroy(it);
		cli_close(&ct);
		return 1;
	}
	struct cli_out o;
	struct strata_trace *t = ct.t;
	struct cli_time tm;
	struct tset threads = { 0 };
	unsigned maxf = 0;
	for (unsigned i = 0; i < strata_trace_nclasses(t); i++)
		if (strata_trace_class(t, i)->nfields > maxf)
			maxf = strata_trace_class(t, i)->nfields;
	struct strata_value *vals = calloc(maxf + 1, sizeof(*vals));
	int rc = 0;
	if (!vals || cli_out_init(&o, f) < 0) {
		cli_err(NULL, "out of memory");
		free(vals);
		strata_iter_destroy(it);
		cli_close(&ct);
		if (f != stdout)
			fclose(f);
		return 1;
	}
	cli_time_init(&tm, t, false);
	struct cli_progress pg;
	cli_progress_init(&pg, strata_trace_size(t));

	/* processes first: their names come from each sub-trace's env */
	if (paje) {
		cli_out_str(&o, paje_header);
		cli_out_str(&o, "1 P 0 \"Process\"\n1 T P \"Thread\"\n"
				 "3 S T \"State\"\n4 E T \"Event\"\n");
		for (unsigned i = 0; i < strata_trace_nclasses(t); i++) {
			const struct strata_event_class *cl = strata_trace_class(t, i);
			if (cl->kind != STRATA_KIND_BEGIN)
				continue;
			cli_out_str(&o, "6 ");
			paje_str(&o, cl->name);
			cli_out_str(&o, " S ");
			paje_str(&o, cl->name);
			cli_out_str(&o, " \"");
			char col[32];
			unsigned h = cl->index * 2654435761u;
			snprintf(col, sizeof(col), "%.2f %.2f %.2f", (h & 255) / 255.0,
				 (h >> 8 & 255) / 255.0, (h >> 16 & 255) / 255.0);
			cli_out_str(&o, col);
			cli_out_str(&o, "\"\n");
		}
	} else {
		cli_out_str(&o, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"
				 "{\"name\":\"strata\",\"ph\":\"M\",\"pid\":0,\"tid\":0,"
				 "\"args\":{\"name\":\"strata trace\"}}");
	}
	for (unsigned s = 0; s < strata_trace_nsubtraces(t); s++) {
		const char *vp = strata_trace_env(t, s, "vpid");
		const char *pn = strata_trace_env(t, s, "procname");
		uint32_t pid = vp ? (uint32_t)strtoul(vp, NULL, 10) : 0;
		if (tset_add(&threads, (uint64_t)pid << 32 | 0xffffffffu) != 1)
			continue; /* same pid twice (pid reuse): one container */
		if (paje) {
			cli_out_str(&o, "7 0.000000000 p");
			cli_out_u64(&o, pid);
			cli_out_str(&o, " P 0 ");
			char nm[300];
			snprintf(nm, sizeof(nm), "%s %u", pn ? pn : "", pid);
			paje_str(&o, nm);
			cli_out_str(&o, "\n");
		} else {
			cli_out_str(&o, ",\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":");
			cli_out_u64(&o, pid);
			cli_out_str(&o, ",\"tid\":0,\"args\":{\"name\":");
			cli_out_json_str(&o, pn ? pn : "", pn ? strlen(pn) : 0);
			cli_out_str(&o, "}}");
		}
	}

	const struct strata_event *ev;
	uint64_t n = 0, last_ns = 0;
	while (strata_iter_next(it, &ev) > 0) {
		uint64_t ns = cli_time_ns(&tm, ev->timestamp);
		last_ns = ns;
		if (!(++n & 0xffff))
			cli_progress_tick(&pg, strata_iter_progress(it));
		int added = tset_add(&threads, (uint64_t)ev->pid << 32 | ev->tid);
		if (added < 0) {
			cli_err(NULL, "out of memory");
			rc = 1;
			break;
		}
		if (added && paje) {
			if (tset_add(&threads, (uint64_t)ev->pid << 32 | 0xffffffffu) == 1) {
				/* a pid no sub-trace announced (packet context) */
				cli_out_str(&o, "7 0.000000000 p");
				cli_out_u64(&o, ev->pid);
				cli_out_str(&o, " P 0 \"");
				cli_out_u64(&o, ev->pid);
				cli_out_str(&o, "\"\n");
			}
			paje_thread(&o, ns, ev->pid, ev->tid);
		} else if (added) {
			const char *pn = procname(t, ev->pid);
			cli_out_str(&o, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":");
			cli_out_u64(&o, ev->pid);
			cli_out_str(&o, ",\"tid\":");
			cli_out_u64(&o, ev->tid);
			cli_out_str(&o, ",\"args\":{\"name\":\"");
			if (pn && *pn && ev->pid == ev->tid)
				cli_out_str(&o, "main ");
			cli_out_str(&o, "tid ");
			cli_out_u64(&o, ev->tid);
			cli_out_str(&o, "\"}}");
		}
		if (!paje) {
			chrome_event(&o, &tm, ev, vals);
			continue;
		}
		int k = ev->cls->kind;
		cli_out_str(&o, k == STRATA_KIND_BEGIN ? "11 " : k == STRATA_KIND_END ? "12 " : "20 ");
		secs(&o, ns);
		cli_out_str(&o, k == STRATA_KIND_BEGIN || k == STRATA_KIND_END ? " S t" : " E t");
		cli_out_u64(&o, ev->pid);
		cli_out_mem(&o, "_", 1);
		cli_out_u64(&o, ev->tid);
		if (k != STRATA_KIND_END) {
			cli_out_mem(&o, " ", 1);
			paje_str(&o, ev->cls->name);
		}
		cli_out_mem(&o, "\n", 1);
	}
	if (paje) {
		/* destroy threads, then processes, at the last event's time */
		for (int pass = 0; pass < 2; pass++)
			for (size_t i = 0; i < threads.cap; i++) {
				uint64_t key = threads.v[i];
				if (!key)
					continue;
				key--;
				bool proc = (uint32_t)key == 0xffffffffu;
				if (proc != (pass == 1))
					continue;
				cli_out_str(&o, "8 ");
				secs(&o, last_ns);
				cli_out_str(&o, proc ? " p" : " t");
				cli_out_u64(&o, key >> 32);
				if (!proc) {
					cli_out_mem(&o, "_", 1);
					cli_out_u64(&o, (uint32_t)key);
				}
				cli_out_str(&o, proc ? " P\n" : " T\n");
			}
	} else {
		cli_out_str(&o, "\n]}\n");
	}
	cli_progress_done(&pg);
	if (cli_out_fini(&o) < 0 || (f != stdout && fclose(f))) {
		cli_err(outpath, "write error");
		rc = 1;
	}
	free(threads.v);
	free(vals);
	strata_iter_destroy(it);
	if (!rc)
		rc = cli_status(&ct);
	cli_close(&ct);
	return rc;
}
