/* SPDX-License-Identifier: MIT */
/* strata convert: stream a trace into Chrome trace-event JSON or a Paje file. */
#include <errno.h>
#include <string.h>

#include "convert.h"

const char cmd_convert_usage[] =
	"usage: strata convert [OPTIONS] TRACE -F chrome|paje -o OUT\n\n"
	"Convert a trace, streaming (memory grows with the number of threads,\n"
	"not of events):\n"
	"  chrome  Chrome trace-event JSON (open it in ui.perfetto.dev or\n"
	"          chrome://tracing): function probes (func:call_entry/exit)\n"
	"          become complete events (X) named by their functions, other\n"
	"          events with strata_kind \"begin\"/\"end\" B/E slices, all\n"
	"          others instant events; processes and threads\n"
	"          named as the trace names them; fields in \"args\" (pointers and\n"
	"          hex fields as \"0x...\" strings, integers beyond 2^53 as strings);\n"
	"          kernel scheduling as per-CPU tracks and thread states (Running,\n"
	"          Runnable, Sleeping, Uninterruptible), as systrace text.\n"
	"  paje    Paje trace (pajeng, ViTE): %EventDef header with the field\n"
	"          names of strict readers, containers per process and thread,\n"
	"          begin/end as push/pop of states, the other events as Paje\n"
	"          events, kernel scheduling as per-CPU and per-thread states.\n"
	"          Times in seconds since the trace start.\n"
	"With --from/--to, intervals that cross the window's edges are cut there:\n"
	"every begin has its end in the output (and every call its X).\n\n"
	"  -F, --format FORMAT   chrome or paje (required)\n"
	"  -o, --output FILE     where to write ('-' for stdout; required)\n" CLI_FILTER_HELP;

/* What the command line asks for. */
struct convert_opts {
	struct cli_filter_opts fo;
	const char *trace, *outpath;
	bool paje;
};

/* The options into *co; 0, or 1 (the exit status) after one error line. */
static int convert_parse(int argc, char **argv, struct convert_opts *co)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'F' },
		{ "output", required_argument, NULL, 'o' },
		CLI_FILTER_OPTIONS,
		{ 0 },
	};
	struct cli_filter_opts *fo = &co->fo;
	const char *fmt = NULL;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "F:o:", opts, NULL)) != -1) {
		if (c == 'F') {
			fmt = optarg;
		} else if (c == 'o') {
			co->outpath = optarg;
		} else if (c == OPT_TO && (!strcmp(optarg, "chrome") || !strcmp(optarg, "paje"))) {
			/* --to used to be the format: never take one for the other */
			cli_err(NULL, "convert: --to is the end of the window (seconds); "
				      "the format is --format %s (-F %s)", optarg, optarg);
			return 1;
		} else if (c == OPT_TO && fo->has_to) {
			cli_err(NULL, "convert: --to given twice (the window's end; "
				      "the format is --format)");
			return 1;
		} else if (c == '?' || cli_filter_opt(fo, c, optarg) < 0) {
			return 1;
		}
	}
	if (optind != argc - 1 || !fmt || !co->outpath) {
		cli_err(NULL, "convert: expected TRACE --format chrome|paje -o OUT "
			      "(see strata convert --help)");
		return 1;
	}
	co->trace = argv[optind];
	co->paje = !strcmp(fmt, "paje");
	if (!co->paje && strcmp(fmt, "chrome")) {
		cli_err(NULL, "--format: expected chrome or paje, not '%s'", fmt);
		return 1;
	}
	return 0;
}

/* The format's run into `f`, then the write's report: 0, 1 after one
 * error line (out of memory, a write error). */
static int convert_write(const struct convert_opts *co, struct conv *cv,
			 struct strata_iter *pre, struct strata_iter *it, FILE *f)
{
	struct cli_out o;
	struct cli_progress pg;
	int rc;

	if (cli_out_init(&o, f) < 0) {
		cli_err(NULL, "out of memory");
		if (f != stdout)
			fclose(f);
		return 1;
	}
	cv->o = &o;
	cli_progress_init(&pg, strata_trace_size(cv->t));
	rc = co->paje ? conv_paje_run(cv, pre, it, &pg) : conv_chrome_run(cv, it, &pg);
	if (rc < 0)
		cli_err(NULL, "out of memory");
	rc = rc < 0;
	cli_progress_done(&pg);
	if (cli_out_fini(&o) < 0 || (f != stdout && fclose(f))) {
		cli_err(co->outpath, "write error");
		rc = 1;
	}
	return rc;
}

/* Open the trace and the output, convert: the exit status. */
static int convert_run(const struct convert_opts *co)
{
	struct cli_trace ct = { 0 };
	struct strata_iter *it = NULL, *pre = NULL;
	struct conv cv = { 0 };
	FILE *f;
	int rc = 1;

	struct cli_filter_opts all_time = co->fo;
	all_time.has_from = all_time.has_to = false;
	if (cli_open(&ct, co->trace, &all_time) < 0 ||
	    cli_iter(&ct, co->fo.internal, &it) < 0 || conv_setup(&cv, &ct, &co->fo) < 0)
		goto out;
	if (co->paje && cv.intervals && cli_iter(&ct, co->fo.internal, &pre) < 0)
		goto out;
	if (!co->paje && !(cv.sys = tmpfile())) {
		cli_err(NULL, "temporary file: %s", strerror(errno));
		goto out;
	}
	f = strcmp(co->outpath, "-") ? fopen(co->outpath, "we") : stdout;
	if (!f) {
		cli_err(co->outpath, "%s", strerror(errno));
		goto out;
	}
	rc = convert_write(co, &cv, pre, it, f);
	if (!rc)
		rc = cli_status(&ct);
out:
	if (cv.sys)
		fclose(cv.sys);
	conv_fini(&cv);
	strata_iter_destroy(pre);
	strata_iter_destroy(it);
	cli_close(&ct);
	return rc;
}

int cmd_convert(int argc, char **argv)
{
	struct convert_opts co = { 0 };
	int rc = convert_parse(argc, argv, &co);

	return rc ? rc : convert_run(&co);
}
