/* SPDX-License-Identifier: MIT */
/* strata relay: receive traces from `strata record --relay` senders over TCP, one directory per sender and trace. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cli.h"
#include "relay/proto.h"
#include "relay/relay.h"

const char cmd_relay_usage[] =
	"usage: strata relay --listen ADDR:PORT -o DIR --token-file FILE [OPTIONS]\n\n"
	"Receive traces streamed by `strata record --relay` (docs/relay.md) and\n"
	"write each to DIR/HOST/TRACE, as the sender writes it locally. Senders\n"
	"prove they hold the token in FILE (HMAC-SHA256 of a nonce); the stream\n"
	"itself is not encrypted. Ctrl-C or SIGTERM stops it.\n\n"
	"Options:\n"
	"  --listen ADDR:PORT     where to listen (default 127.0.0.1:5344)\n"
	"  -o, --output DIR       where traces go (made if missing)\n"
	"  --token-file FILE      the shared secret, 16 to 4096 bytes, mode 0600\n"
	"  --max-conns N          connections at once (default 256)\n"
	"  --max-per-peer N       connections from one address (default 64)\n"
	"  --auth-timeout SECONDS to authenticate after connecting (default 5)\n"
	"  --idle-timeout SECONDS between two frames of a sender (default 30)\n"
	"  --fsync                acknowledge only what is on stable storage\n"
	"                         (fdatasync before each ACK: survives a power\n"
	"                         loss, costs disk round trips)\n"
	"  -q, --quiet            no line per session\n";

enum { O_LISTEN = 1, O_TOKEN, O_MAXC, O_MAXP, O_AUTH, O_IDLE, O_FSYNC };

static int uint_opt(const char *arg, const char *what, unsigned *out)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);

	if (*end || !*arg || v == 0 || v > 1000000) {
		cli_err(NULL, "--%s: '%s' is not a positive number", what, arg);
		return -1;
	}
	*out = (unsigned)v;
	return 0;
}

static int ms_opt(const char *arg, const char *what, unsigned *out)
{
	double v;

	if (cli_parse_seconds(arg, &v, what))
		return -1;
	if (v <= 0 || v > 86400) {
		cli_err(NULL, "--%s: '%s' is not a time from 1 ms to a day", what, arg);
		return -1;
	}
	*out = (unsigned)(v * 1000 + 0.5);
	if (!*out)
		*out = 1;
	return 0;
}

int cmd_relay(int argc, char **argv)
{
	static const struct option opts[] = {
		{"listen", required_argument, NULL, O_LISTEN},
		{"output", required_argument, NULL, 'o'},
		{"token-file", required_argument, NULL, O_TOKEN},
		{"max-conns", required_argument, NULL, O_MAXC},
		{"max-per-peer", required_argument, NULL, O_MAXP},
		{"auth-timeout", required_argument, NULL, O_AUTH},
		{"idle-timeout", required_argument, NULL, O_IDLE},
		{"fsync", no_argument, NULL, O_FSYNC},
		{"quiet", no_argument, NULL, 'q'},
		{NULL, 0, NULL, 0},
	};
	struct relay_config cfg = {
		.listen = "127.0.0.1:5344", .max_conns = 256, .max_per_peer = 64,
		.auth_ms = 5000, .idle_ms = 30000, .log = stderr,
	};
	const char *token_file = NULL;
	unsigned char token[RELAY_TOKEN_MAX + 1];
	int o;

	optind = 1;
	while ((o = getopt_long(argc, argv, "o:q", opts, NULL)) != -1) {
		int bad = 0;
		switch (o) {
		case O_LISTEN: cfg.listen = optarg; break;
		case 'o': cfg.out_dir = optarg; break;
		case O_TOKEN: token_file = optarg; break;
		case O_MAXC: bad = uint_opt(optarg, "max-conns", &cfg.max_conns); break;
		case O_MAXP: bad = uint_opt(optarg, "max-per-peer", &cfg.max_per_peer); break;
		case O_AUTH: bad = ms_opt(optarg, "auth-timeout", &cfg.auth_ms); break;
		case O_IDLE: bad = ms_opt(optarg, "idle-timeout", &cfg.idle_ms); break;
		case O_FSYNC: cfg.fsync = 1; break;
		case 'q': cfg.log = NULL; break;
		default: fputs(cmd_relay_usage, stderr); return 2;
		}
		if (bad)
			return 2;
	}
	if (!cfg.out_dir || !token_file || optind < argc) {
		cli_err(NULL, "relay: -o DIR and --token-file FILE are needed; "
			"usage: strata relay --listen ADDR:PORT -o DIR --token-file FILE");
		return 2;
	}
	int n = cli_relay_token(token_file, token, sizeof(token));
	if (n < 0)
		return 1;
	cfg.token = token;
	cfg.token_len = (size_t)n;
	/* a file per open trace file and a socket per connection */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	signal(SIGPIPE, SIG_IGN);
	struct relay *r;
	int nonlocal = 0;
	const char *why;
	int ret = relay_create(&cfg, &r, &nonlocal, &why);
	explicit_bzero(token, sizeof(token));
	if (ret) {
		cli_err(cfg.listen, "relay: %s: %s", why, strerror(-ret));
		return 1;
	}
	if (nonlocal)
		fprintf(stderr, "strata: warning: relay listening on %s, not a "
			"loopback address: the traces it receives cross the "
			"network unencrypted (docs/relay.md, \"Security\")\n",
			cfg.listen);
	if (cfg.log) {
		fprintf(stderr, "strata relay: listening on port %u, writing to %s\n",
			relay_port(r), cfg.out_dir);
		fflush(stderr);
	}
	cli_session_signals();
	ret = relay_run(r, &cli_got_signal);
	struct relay_stats st;
	relay_destroy(r, &st);
	if (cfg.log)
		fprintf(stderr, "strata relay: %llu connections, %llu traces "
			"(%llu complete), %llu bytes; refused: %llu auth, %llu "
			"protocol, %llu timeouts, %llu full, %llu evicted, %llu "
			"names in use\n", (unsigned long long)st.accepted,
			(unsigned long long)st.sessions, (unsigned long long)st.ended,
			(unsigned long long)st.bytes, (unsigned long long)st.auth_failed,
			(unsigned long long)st.proto_errors,
			(unsigned long long)st.timeouts,
			(unsigned long long)st.refused_full,
			(unsigned long long)st.evicted,
			(unsigned long long)st.name_busy);
	if (ret) {
		cli_err(NULL, "relay: event loop: %s", strerror(-ret));
		return 1;
	}
	return 0;
}
