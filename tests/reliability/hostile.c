/* SPDX-License-Identifier: MIT */
/* A hostile (or buggy) client of a session daemon's sockets: the attacks of issue 24, items 2-6. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <strata/strata.h>

#include "proto/proto.h"

/*
 * hostile [-c CLOCK] SOCK ATTACK [ARGS...]
 *
 *   zerofd CONNS MSGS     per connection, MSGS zero-byte messages each
 *                         carrying 8 fds (SCM_RIGHTS), then close
 *   ctrunc CONNS          per connection, a HELLO and a RING carrying 40
 *                         fds each (more than the daemon's control
 *                         buffer: MSG_CTRUNC), then bad messages with fds
 *   descdup MIB           HELLO, then MIB MiB of DESC messages repeating
 *                         one descriptor of 512 fields
 *   nfields N             HELLO, then N DESC messages of 28 bytes, each a
 *                         record that claims 65535 fields and has none
 *   descmany MIB          HELLO, then MIB MiB of distinct descriptors,
 *                         each with a 4000-byte description
 *   bigring PSHIFT NSHIFT STOPFILE
 *                         HELLO (overwrite mode) and one forged sparse
 *                         ring of 2^PSHIFT x 2^NSHIFT bytes, held until
 *                         STOPFILE exists
 *   rings N PSHIFT NSHIFT STOPFILE
 *                         HELLO (overwrite mode) and N forged sparse
 *                         rings of 2^PSHIFT x 2^NSHIFT bytes, one per CPU
 *                         0 to N-1 (a machine of N CPUs), held until
 *                         STOPFILE exists
 *   idle CONNS PROCS STOPFILE
 *                         PROCS processes holding CONNS connections in
 *                         all that never speak, until STOPFILE exists
 *   churn N               N connections one after another: HELLO, close
 *
 * SOCK is the daemon's `sock`, or its `ctl` for idle (control clients
 * that never send their request). CLOCK: the daemon's trace clock, 0 for
 * CLOCK_MONOTONIC (the tests run daemons with --clock mono), 1 for the
 * TSC. Every send blocks: the attacker may wait, the daemon may not.
 * Exits 0 unless it could not attack at all (socket missing).
 */

static const char *sock_path;
static uint32_t clock_tsc;
static uint8_t uuid[16];

static void die(const char *what)
{
	fprintf(stderr, "hostile: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* A connection to SOCK, retried while the backlog is full (up to 2 s);
 * -1 if refused. */
static int dial(void)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock_path);
	for (int tries = 0; tries < 2000; tries++) {
		int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (s < 0)
			die("socket");
		if (connect(s, (struct sockaddr *)&a, sizeof(a)) == 0) {
			int fl = fcntl(s, F_GETFL);
			fcntl(s, F_SETFL, fl & ~O_NONBLOCK);
			return s;
		}
		int err = errno;
		close(s);
		if (err == ENOENT)
			die(sock_path);
		if (err != EAGAIN)
			return -1;
		usleep(1000);
	}
	return -1;
}

/* One message with `nfd` fds of /dev/null attached; errors ignored (the
 * daemon may have closed the connection: that is its right). */
static void send_fds(int s, const void *msg, size_t len, int nfd)
{
	union {
		char b[CMSG_SPACE(sizeof(int) * 64)];
		struct cmsghdr align;
	} u;
	int fds[64];
	struct iovec iov = {(void *)msg, len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};

	for (int i = 0; i < nfd; i++)
		if ((fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
			die("/dev/null");
	if (nfd) {
		memset(&u, 0, sizeof(u));
		mh.msg_control = u.b;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfd);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfd);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfd);
	}
	if (sendmsg(s, &mh, MSG_NOSIGNAL) < 0) {
		/* EPIPE, ECONNRESET: closed by the daemon */
	}
	for (int i = 0; i < nfd; i++)
		close(fds[i]);
}

/* A HELLO the daemon takes (our pid, its clock), with a new uuid. */
static void hello_fill(struct proto_hello *h, uint32_t mode)
{
	memset(h, 0, sizeof(*h));
	h->h.type = PROTO_HELLO;
	h->h.len = sizeof(*h);
	h->version = PROTO_VERSION;
	h->pid = (uint32_t)getpid();
	h->ppid = (uint32_t)getppid();
	h->clock_tsc = clock_tsc;
	h->mode = mode;
	for (int i = 0; i < 16; i++)
		uuid[i] = (uint8_t)(rand() >> 7);
	memcpy(h->uuid, uuid, 16);
	snprintf(h->name, sizeof(h->name), "hostile");
}

static void hello(int s, uint32_t mode)
{
	struct proto_hello h;

	hello_fill(&h, mode);
	send_fds(s, &h, sizeof(h), 0);
}

/* A connection that said HELLO. */
static int joined(uint32_t mode)
{
	int s = dial();

	if (s < 0)
		die("connect");
	hello(s, mode);
	return s;
}

/* A DESC message being built. */
struct dbuf {
	unsigned char p[PROTO_MAX_MSG];
	size_t len;
	uint32_t count;
};

static void dbuf_reset(struct dbuf *b)
{
	b->len = sizeof(struct proto_desc);
	b->count = 0;
}

static void dbuf_send(int s, struct dbuf *b)
{
	struct proto_desc d = {{PROTO_DESC, (uint32_t)b->len}, b->count, 0};

	if (!b->count)
		return;
	memcpy(b->p, &d, sizeof(d));
	send_fds(s, b->p, b->len, 0);
	dbuf_reset(b);
}

static void put(struct dbuf *b, const void *v, size_t n)
{
	memcpy(b->p + b->len, v, n);
	b->len += n;
}

/* One descriptor record (proto.h, DESC): major, minor, nfields fields
 * named "f", a description of `dlen` bytes. Sent first if it would not
 * fit. */
static void desc_rec(int s, struct dbuf *b, uint8_t major, uint16_t minor,
		     uint16_t nfields, size_t dlen)
{
	static char text[8192];
	unsigned char rec[8] = {major, STRATA_EV_POINT};
	size_t need = 8 + 4 + 4 + 2 + dlen + 1 + (size_t)nfields * 10;

	if (b->len + need > sizeof(b->p))
		dbuf_send(s, b);
	memset(text, 'x', dlen);
	text[dlen] = 0;
	memcpy(rec + 2, &minor, 2);
	memcpy(rec + 4, &nfields, 2);
	put(b, rec, 8);
	put(b, "sub", 4);
	put(b, "ev", 3);
	put(b, "", 1);
	put(b, text, dlen + 1);
	for (unsigned i = 0; i < nfields; i++) {
		unsigned char fr[8] = {0};
		uint16_t type = STRATA_T_U64;
		memcpy(fr, &type, 2);
		put(b, fr, 8);
		put(b, "f", 2);
	}
	b->count++;
}

static int stop_wait(const char *stopfile)
{
	while (access(stopfile, F_OK) != 0)
		usleep(20000);
	return 0;
}

/* A sparse ring memfd of CPU `cpu` whose control block passes every
 * check of cons_ring_map() (consumer/mapped.c): 2^pshift x 2^nshift
 * bytes of data, none of it ever written. */
static int forged_ring(unsigned cpu, unsigned pshift, unsigned nshift)
{
	struct strata_ring_ctl ctl;
	uint64_t np = UINT64_C(1) << nshift;
	int fd = memfd_create("hostile-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		die("memfd_create");
	memset(&ctl, 0, sizeof(ctl));
	ctl.magic = STRATA_RING_MAGIC;
	ctl.version = STRATA_RING_VERSION;
	ctl.cpu = cpu;
	ctl.pid = (uint32_t)getpid();
	ctl.psize_shift = pshift;
	ctl.npackets_shift = nshift;
	ctl.mode = STRATA_MODE_OVERWRITE;
	ctl.commit_offset = (uint32_t)sizeof(ctl);
	uint64_t commit_end = ctl.commit_offset + np * STRATA_COMMIT_STRIDE * 8;
	ctl.data_offset = (commit_end + 4095) & ~UINT64_C(4095);
	ctl.map_size = ctl.data_offset + (np << pshift);
	memcpy(ctl.uuid, uuid, 16);
	if (ftruncate(fd, (off_t)(4096 + ctl.map_size)) < 0 ||
	    pwrite(fd, &ctl, sizeof(ctl), 4096) != (ssize_t)sizeof(ctl) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		die("forged ring");
	return fd;
}

static void send_ring(int s, unsigned cpu, int fd)
{
	union {
		char b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct proto_ring m = {{PROTO_RING, sizeof(m)}, cpu, (uint32_t)getpid()};
	struct iovec iov = {&m, sizeof(m)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = u.b, .msg_controllen = sizeof(u.b)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	if (sendmsg(s, &mh, MSG_NOSIGNAL) < 0)
		die("send ring");
}

/* ---- the attacks: one function each, ARGS as strings ------------------------- */

static struct dbuf attack_buf;

static void attack_zerofd(char **arg)
{
	for (int k = 0; k < atoi(arg[0]); k++) {
		int s = dial();
		for (int i = 0; s >= 0 && i < atoi(arg[1]); i++)
			send_fds(s, "", 0, 8);
		if (s >= 0)
			close(s);
	}
}

static void attack_ctrunc(char **arg)
{
	for (int k = 0; k < atoi(arg[0]); k++) {
		struct proto_hello h;
		struct proto_ring r = {{PROTO_RING, sizeof(r)}, 0, (uint32_t)getpid()};
		struct proto_hdr junk = {99, sizeof(junk)};
		static unsigned char big[PROTO_MAX_MSG + 100];
		int s = dial();
		if (s < 0)
			continue;
		hello_fill(&h, STRATA_MODE_DISCARD);
		send_fds(s, &h, sizeof(h), 40);
		send_fds(s, &r, sizeof(r), 40);
		send_fds(s, &junk, sizeof(junk), 3);  /* unknown type */
		send_fds(s, &junk, 3, 2);             /* shorter than a header */
		memset(big, 0, sizeof(big));
		send_fds(s, big, sizeof(big), 2);     /* longer than any (MSG_TRUNC) */
		close(s);
	}
}

static void attack_descdup(char **arg)
{
	struct dbuf *b = &attack_buf;
	int s = joined(STRATA_MODE_DISCARD);
	size_t sent = 0, want = (size_t)atoi(arg[0]) << 20;
	dbuf_reset(b);
	while (sent < want) {
		desc_rec(s, b, 7, 1, 512, 0);
		if (b->len > sizeof(b->p) - 6000) {
			sent += b->len;
			dbuf_send(s, b);
		}
	}
	close(s);
}

static void attack_nfields(char **arg)
{
	int s = joined(STRATA_MODE_DISCARD);
	for (int i = 0; i < atoi(arg[0]); i++) {
		unsigned char m[28] = {0};
		struct proto_desc d = {{PROTO_DESC, sizeof(m)}, 1, 0};
		uint16_t nf = 65535, minor = (uint16_t)i;
		memcpy(m, &d, sizeof(d));
		m[16] = 1; /* major */
		memcpy(m + 18, &minor, 2);
		memcpy(m + 20, &nf, 2);
		/* four empty strings, then no field at all */
		send_fds(s, m, sizeof(m), 0);
	}
	close(s);
}

static void attack_descmany(char **arg)
{
	struct dbuf *b = &attack_buf;
	int s = joined(STRATA_MODE_DISCARD);
	size_t sent = 0, want = (size_t)atoi(arg[0]) << 20;
	dbuf_reset(b);
	for (uint32_t i = 0; sent < want; i++) {
		size_t before = b->len;
		desc_rec(s, b, (uint8_t)(1 + i / 65536), (uint16_t)i, 1, 4000);
		if (b->len < before)
			sent += before;
	}
	dbuf_send(s, b);
	close(s);
}

static void attack_bigring(char **arg)
{
	int s = joined(STRATA_MODE_OVERWRITE);
	int fd = forged_ring(0, (unsigned)atoi(arg[0]), (unsigned)atoi(arg[1]));
	send_ring(s, 0, fd);
	close(fd);
	stop_wait(arg[2]);
	close(s);
}

static void attack_rings(char **arg)
{
	int s = joined(STRATA_MODE_OVERWRITE);
	for (unsigned cpu = 0; cpu < (unsigned)atoi(arg[0]); cpu++) {
		int fd = forged_ring(cpu, (unsigned)atoi(arg[1]), (unsigned)atoi(arg[2]));
		send_ring(s, cpu, fd);
		close(fd);
	}
	stop_wait(arg[3]);
	close(s);
}

static void attack_idle(char **arg)
{
	int conns = atoi(arg[0]), procs = atoi(arg[1]);
	for (int p = 0; p < procs; p++) {
		pid_t pid = fork();
		if (pid < 0)
			die("fork");
		if (pid)
			continue;
		int n = conns / procs + (p < conns % procs);
		int *fds = calloc((size_t)n, sizeof(int));
		for (int i = 0; i < n; i++)
			fds[i] = dial();
		stop_wait(arg[2]);
		_exit(0);
	}
	while (wait(NULL) > 0)
		;
}

static void attack_churn(char **arg)
{
	int refused = 0;
	for (int i = 0; i < atoi(arg[0]); i++) {
		int s = dial();
		if (s < 0) {
			refused++;
			continue;
		}
		hello(s, STRATA_MODE_DISCARD);
		close(s);
	}
	if (refused)
		fprintf(stderr, "hostile: churn: %d connections refused\n", refused);
}

static const struct {
	const char *name;
	int nargs;
	void (*run)(char **arg);
} attacks[] = {
	{"zerofd", 2, attack_zerofd},   {"ctrunc", 1, attack_ctrunc},
	{"descdup", 1, attack_descdup}, {"nfields", 1, attack_nfields},
	{"descmany", 1, attack_descmany}, {"bigring", 3, attack_bigring},
	{"rings", 4, attack_rings},     {"idle", 3, attack_idle},
	{"churn", 1, attack_churn},
};

int main(int argc, char **argv)
{
	int o;

	while ((o = getopt(argc, argv, "+c:")) != -1) {
		if (o != 'c')
			return 2;
		clock_tsc = (uint32_t)atoi(optarg);
	}
	if (argc - optind < 2) {
		fprintf(stderr, "usage: hostile [-c CLOCK] SOCK ATTACK [ARGS...]\n");
		return 2;
	}
	sock_path = argv[optind];
	const char *what = argv[optind + 1];
	char **arg = argv + optind + 2;
	int narg = argc - optind - 2;
	srand((unsigned)getpid() ^ (unsigned)time(NULL));
	signal(SIGPIPE, SIG_IGN);
	for (size_t i = 0; i < sizeof(attacks) / sizeof(attacks[0]); i++)
		if (!strcmp(what, attacks[i].name) && narg == attacks[i].nargs) {
			attacks[i].run(arg);
			return 0;
		}
	fprintf(stderr, "hostile: unknown attack or arguments: %s\n", what);
	return 2;
}
