// SPDX-License-Identifier: MIT
/* strata view: the command, its HTTP server (libmicrohttpd) and who may ask it what (docs/view.md). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "api.h"
#include "server_int.h"

const char cmd_view_usage[] =
	"usage: strata view TRACE [--port N] [--bind ADDR] [--no-cache] [--wait] [--live]\n"
	"                         [--activity NAME=BEGIN..END[,by=FIELD]]...\n"
	"\n"
	"Serve an interactive timeline of TRACE to a browser. The first line on\n"
	"stdout is the URL to open; it carries a secret token, and requests\n"
	"without it, or whose Host or Origin is not this server's, get 403.\n"
	"Ctrl-C stops it. docs/view.md has the page's keys and the JSON API.\n"
	"\n"
	"  --port N      listen on port N (default: any free port)\n"
	"  --bind ADDR   listen on ADDR (default 127.0.0.1; ::1 for IPv6). Any\n"
	"                other address lets the network reach the trace; the\n"
	"                token still guards it\n"
	"  --activity NAME=BEGIN..END[,by=FIELD]\n"
	"                pair BEGIN and END events (names or globs) per thread,\n"
	"                or by FIELD's value, into intervals of kind NAME, drawn\n"
	"                and listed as the trace's own (up to 16 rules)\n"
	"  --no-cache    build the model from the trace, and write no cache\n"
	"                (default: kept in $XDG_CACHE_HOME/strata/view/)\n"
	"  --wait        print the URL once the model is built (default: at once,\n"
	"                the packets' overview served while the model is built)\n"
	"  --live        follow TRACE while it is written (strata record --live,\n"
	"                a daemon session, a relay's copy): the page grows with\n"
	"                it and shows the newest time until scrolled back; once\n"
	"                the recording ends, the finished trace (not with\n"
	"                --activity)\n";

/* ---- who may ask ---------------------------------------------------------- */

/* Whether s[0..n) is an IP address literal: a DNS name can be rebound to
 * this machine by a page of another site, an address cannot (view.md). */
static bool ip_literal(const char *s, size_t n)
{
	char buf[64];
	unsigned char a[16];
	if (n >= sizeof(buf) || !n)
		return false;
	if (s[0] == '[') {
		if (n < 3 || s[n - 1] != ']')
			return false;
		memcpy(buf, s + 1, n - 2);
		buf[n - 2] = '\0';
		return inet_pton(AF_INET6, buf, a) == 1;
	}
	memcpy(buf, s, n);
	buf[n] = '\0';
	return inet_pton(AF_INET, buf, a) == 1;
}

/* Host must name this server: localhost or an IP address, and our port. */
static bool host_ok(const struct server *s, const char *host)
{
	if (!host)
		return false;
	const char *colon = strrchr(host, ':');
	if (!colon || (strchr(host, ']') && colon < strchr(host, ']')))
		return false;
	char *end;
	errno = 0;
	unsigned long port = strtoul(colon + 1, &end, 10);
	if (errno || *end || end == colon + 1 || port != s->port)
		return false;
	size_t n = (size_t)(colon - host);
	return (n == 9 && !strncasecmp(host, "localhost", 9)) || ip_literal(host, n);
}

/* Origin, when the browser sends one, must be this very page's. */
static bool origin_ok(const char *origin, const char *host)
{
	if (!origin)
		return true;
	return !strncmp(origin, "http://", 7) && !strcasecmp(origin + 7, host);
}

/* The token, compared in constant time; *rest is what follows it. */
static bool token_ok(const struct server *s, const char *url, const char **rest)
{
	if (url[0] != '/' || strnlen(url + 1, TOKEN_HEX) < TOKEN_HEX)
		return false;
	unsigned char d = 0;
	for (int i = 0; i < TOKEN_HEX; i++)
		d |= (unsigned char)(url[1 + i] ^ s->token[i]);
	*rest = url + 1 + TOKEN_HEX;
	return !d;
}

/* ---- answers ---------------------------------------------------------------- */

/* When the API call being answered began (CLOCK_MONOTONIC ns; 0: none):
 * its answer says how long it took in a Server-Timing header, which the
 * page reads from its Resource Timing (tests/view/bench_view.mjs): the
 * server's part of a request, apart from the transfer and the page's own
 * work. One thread answers every request (below), so one variable. */
static uint64_t answer_since;

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status,
			    const char *type, void *data, size_t len,
			    enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, data, mode);
	if (!r) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(data);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", type);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	if (status == 503) /* the model is being built (quick.c) */
		MHD_add_response_header(r, "Retry-After", "1");
	if (answer_since) {
		char t[48];
		snprintf(t, sizeof(t), "answer;dur=%.2f", (double)(mono_ns() - answer_since) / 1e6);
		MHD_add_response_header(r, "Server-Timing", t);
	}
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, "X-Frame-Options", "DENY");
	/* the URL holds the token: never send it elsewhere */
	MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
	MHD_add_response_header(r, "Content-Security-Policy",
				"default-src 'self'; img-src 'self' data:; "
				"frame-ancestors 'none'");
	enum MHD_Result ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result send_text(struct MHD_Connection *c, unsigned status,
				 const char *msg)
{
	return reply(c, status, "text/plain; charset=utf-8", (void *)msg,
		    strlen(msg), MHD_RESPMEM_PERSISTENT);
}

/* b's bytes as an answer of that type (b emptied); none: "{}". */
static enum MHD_Result send_buf(struct MHD_Connection *c, unsigned status, const char *type,
				struct vw_buf *b)
{
	if (b->failed) {
		vw_buf_fini(b);
		return send_text(c, 500, "out of memory\n");
	}
	char *p = b->p;
	size_t n = b->len;
	*b = (struct vw_buf){ 0 };
	return reply(c, status, type, p ? p : strdup("{}"), p ? n : 2, MHD_RESPMEM_MUST_FREE);
}

static enum MHD_Result send_json(struct MHD_Connection *c, unsigned status,
				 struct vw_buf *b)
{
	return send_buf(c, status, "application/json", b);
}

static const char *mime(const char *name)
{
	const char *dot = strrchr(name, '.');
	static const char *const types[][2] = {
		{ ".html", "text/html; charset=utf-8" },
		{ ".js", "text/javascript; charset=utf-8" },
		{ ".css", "text/css; charset=utf-8" },
		{ ".svg", "image/svg+xml" },
	};
	for (size_t i = 0; dot && i < sizeof(types) / sizeof(types[0]); i++)
		if (!strcmp(dot, types[i][0]))
			return types[i][1];
	return "application/octet-stream";
}

/* Only the embedded files: a name is looked up, never opened. */
static enum MHD_Result send_asset(struct MHD_Connection *c, const char *name)
{
	if (!*name)
		name = "index.html";
	for (unsigned i = 0; i < vw_nassets; i++)
		if (!strcmp(vw_assets[i].name, name))
			return reply(c, 200, mime(name), (void *)vw_assets[i].data,
				    vw_assets[i].size, MHD_RESPMEM_PERSISTENT);
	return send_text(c, 404, "no such page\n");
}

/* Query argument `key` as an integer in [lo, hi]; absent: def. */
static bool arg(struct MHD_Connection *c, const char *key, int64_t lo, int64_t hi,
		int64_t def, int64_t *out, struct vw_buf *err)
{
	const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, key);
	*out = def;
	if (!v)
		return true;
	char *end;
	errno = 0;
	long long x = strtoll(v, &end, 10);
	if (errno || end == v || *end || x < lo || x > hi) {
		vw_printf(err, "{\"error\":\"%s: not an integer in [%lld, %lld]\"}", key,
			  (long long)lo, (long long)hi);
		return false;
	}
	*out = x;
	return true;
}

/* Query argument `key` as text: up to max printable bytes (UTF-8 beyond
 * ASCII allowed); absent or empty: NULL. */
static bool text_arg(struct MHD_Connection *c, const char *key, size_t max, const char **out,
		     struct vw_buf *err)
{
	const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, key);
	*out = v && *v ? v : NULL;
	if (!v)
		return true;
	size_t n = strnlen(v, max + 1);
	bool ok = n <= max;
	for (size_t i = 0; ok && i < n; i++)
		ok = (unsigned char)v[i] >= 0x20 && v[i] != 0x7f;
	if (!ok)
		vw_printf(err, "{\"error\":\"%s: not text of at most %zu printable bytes\"}",
			  key, max);
	return ok;
}

/* Query argument `key` as text of up to VW_ARG_MAX bytes. */
static bool sarg(struct MHD_Connection *c, const char *key, const char **out,
		 struct vw_buf *err)
{
	return text_arg(c, key, VW_ARG_MAX, out, err);
}

/* Query argument `key` as up to VW_FILTER_IDS comma-separated integers in
 * [0, hi]; absent or empty: none. */
static bool ids_arg(struct MHD_Connection *c, const char *key, int64_t hi, uint32_t *ids,
		    unsigned *n, struct vw_buf *err)
{
	const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, key);
	*n = 0;
	for (const char *p = v; p && *p;) {
		char *end;
		errno = 0;
		long long x = strtoll(p, &end, 10);
		if (errno || end == p || x < 0 || x > hi || *n == VW_FILTER_IDS ||
		    (*end && *end != ',') || !isdigit((unsigned char)*p)) {
			vw_printf(err, "{\"error\":\"%s: up to %d integers in [0, %lld], "
				  "comma-separated\"}", key, VW_FILTER_IDS, (long long)hi);
			return false;
		}
		ids[(*n)++] = (uint32_t)x;
		p = *end ? end + 1 : end;
	}
	return true;
}

/* The page's filter (view.md, "Filters"): cpus, tids, pids (their
 * threads), ev (globs), expr. */
static bool filter_args(struct server *s, struct MHD_Connection *c, struct vw_filter *q,
			struct vw_buf *err)
{
	uint32_t pids[VW_FILTER_IDS];
	unsigned npids;
	q->ncpus = q->ntids = 0;
	q->events = q->expr = NULL;
	q->none = false;
	return ids_arg(c, "cpus", 4095, q->cpus, &q->ncpus, err) &&
	       ids_arg(c, "tids", UINT32_MAX, q->tids, &q->ntids, err) &&
	       ids_arg(c, "pids", UINT32_MAX, pids, &npids, err) &&
	       sarg(c, "ev", &q->events, err) && sarg(c, "expr", &q->expr, err) &&
	       !vw_filter_procs(&s->m, q, pids, npids, err);
}

static enum MHD_Result api(struct server *s, struct MHD_Connection *c, const char *what)
{
	struct vw_buf b = { 0 };
	int64_t span = (int64_t)vw_ns(&s->m, s->m.end - s->m.begin) + 1;
	int64_t t0, t1, w, t, nb, na, cpu, tid, dir, skip, kind, index, stream, off;
	struct vw_filter q;
	const char *find, *where, *rules, *fmt;
	bool bin = false;
	int err = 0;
	if (!strcmp(what, "summary")) {
		err = vw_api_summary(&s->m, &b);
	} else if (!strcmp(what, "overview")) {
		if (!arg(c, "w", 1, 8192, 1000, &w, &b))
			return send_json(c, 400, &b);
		return send_json(c, vw_quick_overview(s->quick, (unsigned)w, &b), &b);
	} else if (!strcmp(what, "live")) {
		/* what the page polls for (view.md, "Live"): small, no argument */
		vw_printf(&b, "{\"live\":%s,\"partial\":%s,\"seq\":%llu,\"span_ns\":%lld,"
			  "\"events\":%llu}", s->m.live ? "true" : "false",
			  s->m.partial ? "true" : "false",
			  (unsigned long long)vw_live_seq(s->live), (long long)span - 1,
			  (unsigned long long)s->m.nevents);
	} else if (!strcmp(what, "window")) {
		if (!arg(c, "t0", 0, span, 0, &t0, &b) || !arg(c, "t1", 0, span, span, &t1, &b) ||
		    !arg(c, "w", 1, 8192, 1000, &w, &b) || !filter_args(s, c, &q, &b) ||
		    !sarg(c, "fmt", &fmt, &b))
			return send_json(c, 400, &b);
		/* fmt=bin: the page's compact form (view.md, "The binary
		 * window"); JSON stays the default, for scripts */
		bin = fmt && !strcmp(fmt, "bin");
		if (fmt && !bin && strcmp(fmt, "json")) {
			vw_puts(&b, "{\"error\":\"fmt: json or bin\"}");
			return send_json(c, 400, &b);
		}
		/* marks=only: the other lists empty (the page's marked
		 * events: view.md, "Marked and counted") */
		const char *marks = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "marks");
		if (marks && strcmp(marks, "only")) {
			vw_puts(&b, "{\"error\":\"marks: only, or nothing\"}");
			return send_json(c, 400, &b);
		}
		err = vw_api_window(&s->m, (uint64_t)t0, (uint64_t)t1, (unsigned)w, &q, bin,
				    marks != NULL, &b);
	} else if (!strcmp(what, "stats")) {
		if (!arg(c, "t0", 0, span, 0, &t0, &b) || !arg(c, "t1", 0, span, span, &t1, &b) ||
		    !arg(c, "kind", -1, 65535, -1, &kind, &b) || !filter_args(s, c, &q, &b) ||
		    !text_arg(c, "rules", VW_RULES_MAX * (VW_RULE_MAX + 1) - 1, &rules, &b))
			return send_json(c, 400, &b);
		err = vw_api_stats(&s->m, (uint64_t)t0, (uint64_t)t1, (int)kind, rules, &q, &b);
	} else if (!strcmp(what, "intervals")) {
		if (!arg(c, "t0", 0, span, 0, &t0, &b) || !arg(c, "t1", 0, span, span, &t1, &b) ||
		    !arg(c, "kind", 0, 65535, 0, &kind, &b) || !arg(c, "by", 0, 1, 0, &dir, &b) ||
		    !arg(c, "n", 1, 1000, 100, &nb, &b) || !filter_args(s, c, &q, &b))
			return send_json(c, 400, &b);
		err = vw_api_intervals(&s->m, (uint64_t)t0, (uint64_t)t1, (int)kind, (int)dir,
				       (unsigned)nb, &q, &b);
	} else if (!strcmp(what, "activity")) {
		/* the page's rules: VW_RULES_MAX of VW_RULE_MAX bytes, ';' between */
		if (!arg(c, "t0", 0, span, 0, &t0, &b) || !arg(c, "t1", 0, span, span, &t1, &b) ||
		    !arg(c, "by", 0, 1, 0, &dir, &b) || !arg(c, "n", 1, 1000, 100, &nb, &b) ||
		    !text_arg(c, "rules", VW_RULES_MAX * (VW_RULE_MAX + 1) - 1, &rules, &b) ||
		    !filter_args(s, c, &q, &b))
			return send_json(c, 400, &b);
		err = vw_api_activity(&s->m, rules ? rules : "", (uint64_t)t0, (uint64_t)t1,
				      (int)dir, (unsigned)nb, &q, &b);
	} else if (!strcmp(what, "breakdown")) {
		if (!arg(c, "t0", 0, span, 0, &t0, &b) || !arg(c, "t1", 0, span, span, &t1, &b) ||
		    !arg(c, "tid", 0, UINT32_MAX, 0, &tid, &b))
			return send_json(c, 400, &b);
		err = vw_api_breakdown(&s->m, (uint32_t)tid, (uint64_t)t0, (uint64_t)t1, &b);
	} else if (!strcmp(what, "list")) {
		/* index, stream and offset: the virtualised list's pages
		 * (view.md, "List") */
		if (!arg(c, "t", 0, span, 0, &t, &b) || !arg(c, "before", 0, 1000, 20, &nb, &b) ||
		    !arg(c, "after", 0, 1000, 50, &na, &b) ||
		    !arg(c, "index", -1, INT64_MAX, -1, &index, &b) ||
		    !arg(c, "stream", -1, UINT32_MAX, -1, &stream, &b) ||
		    !arg(c, "offset", 0, INT64_MAX, 0, &off, &b) ||
		    !arg(c, "cpu", -1, 4095, -1, &cpu, &b) ||
		    !arg(c, "tid", -1, UINT32_MAX, -1, &tid, &b) || !filter_args(s, c, &q, &b))
			return send_json(c, 400, &b);
		/* a row the page asks about (cpu, tid) narrows its filter */
		if (cpu >= 0)
			vw_filter_only(&q, 'c', (uint32_t)cpu);
		if (tid >= 0)
			vw_filter_only(&q, 't', (uint32_t)tid);
		err = vw_api_list_at(&s->m, &(struct vw_list_at){ .t = (uint64_t)t,
				     .index = index, .stream = stream, .offset = (uint64_t)off,
				     .before = (unsigned)nb, .after = (unsigned)na }, &q, &b);
	} else if (!strcmp(what, "event")) {
		if (!arg(c, "t", 0, span, 0, &t, &b) ||
		    !arg(c, "stream", 0, UINT32_MAX, 0, &stream, &b) ||
		    !arg(c, "offset", 0, INT64_MAX, 0, &off, &b))
			return send_json(c, 400, &b);
		err = vw_api_event(&s->m, (uint64_t)t, (uint32_t)stream, (uint64_t)off, &b);
	} else if (!strcmp(what, "search")) {
		if (!arg(c, "t", 0, span, 0, &t, &b) || !arg(c, "dir", -1, 1, 1, &dir, &b) ||
		    !arg(c, "skip", 0, 1000, 0, &skip, &b) || !filter_args(s, c, &q, &b) ||
		    !sarg(c, "find", &find, &b) || !sarg(c, "where", &where, &b) || !dir) {
			if (!b.len)
				vw_puts(&b, "{\"error\":\"dir: -1 or 1\"}");
			return send_json(c, 400, &b);
		}
		err = vw_api_search(&s->m, &q, find, where, (uint64_t)t, (int)dir,
				    (unsigned)skip, &b);
	} else {
		vw_buf_fini(&b);
		return send_text(c, 404, "no such API\n");
	}
	if (err == 400 || err == 404)
		return send_json(c, err, &b);
	if (err) {
		vw_buf_fini(&b);
		return send_text(c, 500, "the answer failed\n");
	}
	return send_buf(c, 200, bin ? "application/octet-stream" : "application/json", &b);
}

/* While the model is built behind (quick.c): what the packets answer. */
static enum MHD_Result building(struct server *s, struct MHD_Connection *c, const char *what)
{
	struct vw_buf b = { 0 };
	int64_t w;
	if (!arg(c, "w", 1, 8192, 1000, &w, &b))
		return send_json(c, 400, &b);
	unsigned status = srv_quick_api(s, what, (unsigned)w, &b);
	return send_json(c, status, &b);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version,
			      const char *upload, size_t *upload_size, void **state)
{
	struct server *s = cls;
	(void)version;
	(void)upload;
	(void)state;
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return send_text(c, 405, "only GET\n");
	if (*upload_size)
		return send_text(c, 400, "no body expected\n");
	const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
	const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
	const char *rest;
	if (!host_ok(s, host) || !origin_ok(origin, host))
		return send_text(c, 403, "Host or Origin is not this server's\n");
	if (!token_ok(s, url, &rest))
		return send_text(c, 403, "the URL lacks the token strata view printed\n");
	if (!*rest) { /* "/TOKEN": the page's relative links need the slash */
		struct MHD_Response *r = MHD_create_response_from_buffer(0, NULL,
						MHD_RESPMEM_PERSISTENT);
		if (!r)
			return MHD_NO;
		char loc[TOKEN_HEX + 3];
		snprintf(loc, sizeof(loc), "/%s/", s->token);
		MHD_add_response_header(r, "Location", loc);
		enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_FOUND, r);
		MHD_destroy_response(r);
		return ret;
	}
	rest++; /* the '/' after the token */
	if (strncmp(rest, "api/", 4))
		return send_asset(c, rest);
	answer_since = mono_ns(); /* the wait for the lock included */
	pthread_mutex_lock(&s->lock);
	enum MHD_Result r;
	if (s->building || s->build_err) {
		r = building(s, c, rest + 4);
	} else {
		srv_adopt_cache(s);
		r = api(s, c, rest + 4);
		srv_trim(s);
	}
	pthread_mutex_unlock(&s->lock);
	answer_since = 0;
	return r;
}

/* ---- the command -------------------------------------------------------- */

static int listen_on(const char *addr, unsigned port, bool *v6, unsigned *bound)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
	socklen_t len;
	if (!strcmp(addr, "localhost"))
		addr = "127.0.0.1";
	if (inet_pton(AF_INET, addr, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
		len = sizeof(*a4);
		*v6 = false;
	} else if (inet_pton(AF_INET6, addr, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		len = sizeof(*a6);
		*v6 = true;
	} else {
		fprintf(stderr, "strata: view: --bind: '%s' is not an IP address\n", addr);
		return -1;
	}
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, (struct sockaddr *)&ss, len) || listen(fd, 128) ||
	    getsockname(fd, (struct sockaddr *)&ss, &len)) {
		fprintf(stderr, "strata: view: cannot listen on %s port %u: %s\n", addr,
			port, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*bound = ntohs(*v6 ? a6->sin6_port : a4->sin_port);
	return fd;
}

static int parse(int argc, char **argv, const char **trace, const char **bind_to,
		 unsigned *port, struct vw_activity *acts, unsigned *nacts, bool *nocache,
		 bool *live, bool *wait)
{
	static const struct option opts[] = {
		{ "live", no_argument, NULL, 'l' },
		{ "wait", no_argument, NULL, 'w' },
		{ "port", required_argument, NULL, 'p' },
		{ "bind", required_argument, NULL, 'b' },
		{ "activity", required_argument, NULL, 'a' },
		{ "no-cache", no_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	int o;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		char *end;
		switch (o) {
		case 'p':
			errno = 0;
			unsigned long p = strtoul(optarg, &end, 10);
			if (errno || *end || end == optarg || p > 65535) {
				fprintf(stderr, "strata: view: --port: '%s' is not a port\n",
					optarg);
				return -1;
			}
			*port = (unsigned)p;
			break;
		case 'b':
			*bind_to = optarg;
			break;
		case 'a':
			if (*nacts == VW_ACT_MAX) {
				fprintf(stderr, "strata: view: more than %d --activity rules\n",
					VW_ACT_MAX);
				return -1;
			}
			char why[512];
			if (vw_activity_parse(optarg, &acts[*nacts], why, sizeof(why))) {
				fprintf(stderr, "strata: view: --activity %s\n", why);
				return -1;
			}
			++*nacts;
			break;
		case 'n':
			*nocache = true;
			break;
		case 'l':
			*live = true;
			break;
		case 'w':
			*wait = true;
			break;
		default:
			fputs(cmd_view_usage, stderr);
			return -1;
		}
	}
	if (optind != argc - 1) {
		fputs(cmd_view_usage, stderr);
		return -1;
	}
	*trace = argv[optind];
	return 0;
}

/* Damage is said on stderr, as every strata command says it; damage and
 * loss with a time are kept for the page to mark. */
static void on_problem(const struct strata_problem *p, void *arg)
{
	struct vw_problems *ps = arg;
	if (p->kind != STRATA_PROBLEM_DISCARDED && p->kind != STRATA_PROBLEM_PACKETS_LOST)
		fprintf(stderr, "strata: %s: %s\n", p->file, p->what);
	if (p->timestamp && ps->n < VW_MAX_PROBLEMS)
		ps->v[ps->n++] = (struct vw_problem){ .ts = p->timestamp, .count = p->count,
			.offset = p->offset, .file = p->file ? vw_path_hash(p->file) : 0,
			.kind = p->kind };
}

static int serve(struct server *s, const char *bind_to, unsigned port)
{
	bool v6;
	int fd = listen_on(bind_to, port, &v6, &s->port);
	if (fd < 0)
		return 1;
	unsigned char raw[TOKEN_HEX / 2];
	if (getrandom(raw, sizeof(raw), 0) != sizeof(raw)) {
		fprintf(stderr, "strata: view: no random token: %s\n", strerror(errno));
		close(fd);
		return 1;
	}
	for (int i = 0; i < TOKEN_HEX / 2; i++)
		snprintf(s->token + 2 * i, 3, "%02x", raw[i]);
	/* Ctrl-C is taken by sigwait below; the server's thread, made after
	 * this, inherits the mask and never sees it */
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* one thread answers every request: the trace belongs to one thread
	 * at a time (reader.h), and each answer is bounded (view.md) */
	struct MHD_Daemon *d = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | (v6 ? MHD_USE_IPv6 : 0),
		0, NULL, NULL, handle, s, MHD_OPTION_LISTEN_SOCKET, fd,
		MHD_OPTION_CONNECTION_LIMIT, 1024u, MHD_OPTION_CONNECTION_TIMEOUT, 30u,
		MHD_OPTION_END);
	if (!d) {
		fprintf(stderr, "strata: view: the HTTP server did not start\n");
		close(fd);
		return 1;
	}
	int err = s->live ? vw_live_start(s->live, &s->lock, srv_live_done, s) : 0;
	if (err)
		fprintf(stderr, "strata view: no thread to follow %s: %s; serving what was "
			"read\n", s->trace, strerror(-err));
	printf("http://%s%s%s:%u/%s/\n", v6 ? "[" : "", bind_to, v6 ? "]" : "", s->port,
	       s->token);
	fflush(stdout);
	pthread_mutex_lock(&s->lock); /* the builder may be swapping the model in */
	if (s->building)
		fprintf(stderr, "strata view: serving the packets' overview while the model is "
			"built; Ctrl-C stops\n");
	else
		fprintf(stderr, "strata view: %llu events in %.0f ms%s; Ctrl-C stops\n",
			(unsigned long long)s->m.nevents, s->m.build_ms,
			s->live ? ", following the trace" : "");
	pthread_mutex_unlock(&s->lock);
	int sig;
	sigwait(&sigs, &sig);
	MHD_stop_daemon(d);
	vw_live_destroy(s->live); /* after the last answer: it holds the trace */
	s->live = NULL;
	close(fd);
	return 0;
}

int cmd_view(int argc, char **argv)
{
	const char *trace = NULL, *bind_to = "127.0.0.1";
	unsigned port = 0, nacts = 0;
	static struct vw_activity acts[VW_ACT_MAX];
	static struct vw_problems problems;
	static struct server s;
	bool nocache = false, live = false, wait = false;
	int ret = 1, err;
	if (parse(argc, argv, &trace, &bind_to, &port, acts, &nacts, &nocache, &live, &wait))
		goto out;
	s.trace = trace;
	s.acts = acts;
	s.nacts = nacts;
	s.nocache = nocache;
	s.early = !wait && !live;
	s.oo = (struct strata_open_options){ .problem = on_problem, .problem_arg = &problems };
	pthread_mutex_init(&s.lock, NULL);
	err = live ? srv_open_live(&s) : 1;
	if (err == 1)
		err = srv_open_whole(&s);
	if (!err)
		ret = serve(&s, bind_to, port);
	vw_live_destroy(s.live);
	srv_quick_stop(&s); /* before the writer: the builder may start it */
	srv_join_writer(&s);
	vw_model_fini(&s.m);
	strata_trace_close(s.t);
out:
	for (unsigned i = 0; i < nacts; i++)
		vw_activity_fini(&acts[i]);
	return ret;
}
