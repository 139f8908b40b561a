/* SPDX-License-Identifier: MIT */
/* The session client's side of a long-lived daemon's state file: mapped, checked, followed by the helper thread. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <strata/strata.h>

#include "lib/client_int.h"
#include "lib/session.h"

/* ---- a long-lived daemon's state file (docs/record.md, "The control
 * file"): mapped read-only, polled by the helper thread, never waited on. */

/* A consistent, checked copy of the state (proto.h: the seqlock reader).
 * Returns 0, -EAGAIN (the daemon is writing it) or -EINVAL. */
static int state_read(struct proto_state *out)
{
	for (int tries = 0; tries < 16; tries++) {
		/* Pairs with the daemon's release store of the even gen
		 * (daemon/trace.c): the copy reads what it wrote before. */
		uint64_t g = strata_load_acquire(&client_cl.st->gen);
		if (g & 1)
			continue;
		memcpy(out, (const void *)client_cl.st, sizeof(*out));
		/* The copy's loads before the second load of gen (pairs with
		 * the daemon's release fence after its odd store). */
		strata_fence_acquire();
		if (strata_load_relaxed(&client_cl.st->gen) != g)
			continue;
		out->gen = g;
		out->enable[sizeof(out->enable) - 1] = 0;
		if (out->magic != PROTO_STATE_MAGIC || out->version != PROTO_VERSION ||
		    out->psize_shift < 14 || out->psize_shift > 26 ||
		    out->npackets_shift < 1 || out->npackets_shift > 16 ||
		    out->mode > STRATA_MODE_BLOCK)
			return -EINVAL;
		return 0;
	}
	return -EAGAIN;
}

/* Map DIR/state beside the socket, if there is one of ours. */
int client_state_map(const char *sock, struct proto_state *out)
{
	char path[sizeof(client_cl.sock) + 8];
	const char *slash = strrchr(sock, '/');
	struct stat st;
	int fd;
	void *p;

	if (!slash)
		return -ENOENT;
	snprintf(path, sizeof(path), "%.*s/state", (int)(slash - sock), sock);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || st.st_uid != getuid() || !S_ISREG(st.st_mode) ||
	    st.st_size < (off_t)PROTO_STATE_SIZE) {
		close(fd);
		return -EINVAL;
	}
	p = mmap(NULL, PROTO_STATE_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -errno;
	client_cl.st = p;
	if (state_read(out)) {
		munmap(p, PROTO_STATE_SIZE);
		client_cl.st = NULL;
		return -EINVAL;
	}
	return 0;
}

/* What the daemon says: the mask (and -e patterns) while a trace runs,
 * nothing while it is stopped. */
void client_state_apply(const struct proto_state *s)
{
	client_cl.disabled = !s->enabled;
	if (s->live_ms) /* `strata daemon --live`: wins over STRATA_FLUSH_MS */
		client_cl.live_ms = s->live_ms;
	control_enable_patterns(client_cl.enable, !client_cl.disabled);
	if (client_cl.disabled) {
		mask_set(0);
		return;
	}
	mask_set(s->majors & ~STRATA_MAJOR_BIT(63));
	if (client_cl.enable[0])
		client_apply_enable();
}

/*
 * Helper thread, every 10 ms: apply a new state. On a stop, close this
 * process's open packets (after 1 ms for writers that passed the mask
 * check, as at exit) so that the daemon can finish the trace, then ACK
 * (non-blocking; retried on the next round if the socket is full).
 */
void client_follow_state(void)
{
	struct proto_state s;

	if (state_read(&s) == 0 && s.gen != client_cl.st_gen) {
		client_cl.st_gen = s.gen;
		client_state_apply(&s);
		if (client_cl.disabled) {
			struct timespec ts = {0, 1000000};
			nanosleep(&ts, NULL);
			strata_flush();
		}
		client_cl.ack_due = 1;
	}
	if (client_cl.ack_due && strata_load_acquire(&client_cl.state) == CLIENT_ON) {
		struct proto_ack a = {{PROTO_ACK, sizeof(a)}, client_cl.st_gen};
		client_sweep(); /* the daemon has every ring before the ACK */
		int ret = client_send(&a, sizeof(a), -1);
		if (ret != -EAGAIN && ret != -ENOBUFS)
			client_cl.ack_due = 0;
	}
}