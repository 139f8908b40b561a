/* SPDX-License-Identifier: MIT */
/* Leaving a daemon's session: the last packets and BYE, what was lost said once, and the guardian's DONE awaited. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <strata/strata.h>

#include "common/log.h"
#include "common/mono.h"
#include "consumer/consumer.h"
#include "lib/client.h"
#include "lib/client_int.h"
#include "lib/session.h"
#include "lib/statedump.h"
#include "ring/ring.h"

#define CLIENT_DONE_WAIT_MS 10000

static void client_wait_done(const struct proto_bye *bye,
			     struct strata_stats *last);

/* How long leaving waits, at most, for a daemon whose backlog was full
 * when this process joined (CLIENT_PENDING): it is stopped or swamped, and
 * everything the process logged is in its rings. */
#define CLIENT_JOIN_EXIT_MS 3000

/* At exit, still CLIENT_PENDING: try to connect for CLIENT_JOIN_EXIT_MS,
 * waiting 10 ms doubling to 200 ms. Returns the state then. */
static int client_leave_retry(void)
{
	long waited = 0, nap = 10;

	for (;;) {
		int ret = client_retry();
		if (ret != -EAGAIN)
			return ret ? CLIENT_DEAD : CLIENT_ON;
		if (waited >= CLIENT_JOIN_EXIT_MS)
			return CLIENT_PENDING;
		struct timespec ts = {0, nap * 1000000};
		nanosleep(&ts, NULL);
		waited += nap;
		nap = nap < 200 ? nap * 2 : 200;
	}
}

/*
 * Events that never reached the daemon: say so where it looks, so that
 * the trace counts them (docs/record.md, "Processes that could not
 * join"): a file `unrecorded.PID` in the session directory, "PID NAME
 * EVENTS". Best effort: a daemon that is gone reads nothing; a `strata
 * record` that is gone (killed) left its trace, which is told directly.
 */
static void trace_note_unrecorded(uint64_t events)
{
	session_note_unrecorded(client_cl.record_trace, events,
				"the recorder was gone when it left");
}

static void client_report_unrecorded(uint64_t events, bool recorder_gone)
{
	char path[sizeof(client_cl.sock) + 32], line[96], name[17] = "";
	const char *slash = strrchr(client_cl.sock, '/');
	int fd;

	if (!slash || !events)
		return;
	if (recorder_gone && client_cl.record_trace[0]) {
		trace_note_unrecorded(events);
		return;
	}
	snprintf(path, sizeof(path), "%.*s/unrecorded.%u", (int)(slash - client_cl.sock),
		 client_cl.sock, strata_pid);
	prctl(PR_GET_NAME, name, 0, 0, 0);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return;
	int n = snprintf(line, sizeof(line), "%u %s %llu\n", strata_pid,
			 name[0] ? name : "?", (unsigned long long)events);
	if (write(fd, line, (size_t)n) < 0) {
		/* nothing more to do */
	}
	close(fd);
}

void client_record_trace(const char *dir)
{
	if (dir && *dir && strlen(dir) < sizeof(client_cl.record_trace))
		memcpy(client_cl.record_trace, dir, strlen(dir) + 1);
}

/*
 * Leave the session (exit, or strata_stop()): stop the tracepoints, close
 * this process's open packets so that the daemon writes them, send the
 * last descriptors and BYE, and disconnect. One line on stderr if the
 * daemon could not be reached, with what was lost.
 */
void client_leave(struct strata_stats *last)
{
	int st = strata_load_acquire(&client_cl.state);
	struct proto_bye bye;

	if (st == CLIENT_OFF)
		return;
	bool wanted = mask_wanted() != 0;
	/* a library loaded since the helper's last update: mapped */
	statedump_objects_update();
	mask_set(0);
	if (client_cl.thread_on && !client_stop_helper()) {
		/* The helper may still use the connection: leave it open
		 * (the process is on its way out) and say so. */
		fprintf(stderr, "strata: session %s: the helper thread did not "
			"stop within %d ms; leaving without BYE\n", client_cl.sock,
			CLIENT_HELPER_JOIN_MS);
		return;
	}
	/* Writers that passed the mask check may still be between reserve
	 * and commit: the daemon salvages what they leave, so 1 ms is only
	 * a courtesy. */
	struct timespec ts = {0, 1000000};
	nanosleep(&ts, NULL);
	/* A program that ends before its helper's first act has had no
	 * state dump (mask_set(0) above makes the helper skip it): no maps,
	 * so no symbols for its addresses. The helper is stopped: ours. */
	if (wanted && !client_cl.dumped)
		client_cl.dumped = statedump_self(true);
	strata_flush();
	memset(&bye, 0, sizeof(bye));
	bye.h.type = PROTO_BYE;
	bye.h.len = sizeof(bye);
	for (unsigned i = 0; i < STRATA_MAX_CPUS; i++) {
		struct strata_ring *r = strata_load_acquire(&strata_rings[i]);
		for (int k = 0; r && k < STRATA_LOST_NCAUSES; k++)
			bye.lost[k] += strata_load_relaxed(&r->ctl->lost[k]);
	}
	for (int k = 0; k < STRATA_LOST_NCAUSES; k++)
		bye.lost[k] += strata_load_relaxed(&ring_lost_global[k]);
	if (st == CLIENT_PENDING)
		st = client_leave_retry();
	if (st == CLIENT_ON) {
		client_send_descs();
		client_sweep();
	}
	bye.rings_unsent = strata_load_relaxed(&client_cl.rings_unsent);
	bye.internal_lost = 0; /* strata's own records are not in lost[] */
	bye.flags = client_cl.guarded ? PROTO_BYE_DONE : 0;
	st = strata_load_acquire(&client_cl.state);
	if (st == CLIENT_ON && client_send(&bye, sizeof(bye), -1))
		st = CLIENT_DEAD;
	if (st == CLIENT_ON && client_cl.guarded) {
		client_wait_done(&bye, last);
	} else if (st == CLIENT_ON && !bye.rings_unsent) {
		/* fine: the daemon reports */
	} else if (st != CLIENT_NEED) {
		uint64_t lost = 0, held = 0;
		for (int k = 0; k < STRATA_LOST_NCAUSES; k++)
			lost += bye.lost[k];
		/* what sits in the rings, which nobody will write now */
		for (unsigned i = 0; st != CLIENT_ON && i < STRATA_MAX_CPUS; i++) {
			struct strata_ring *r = strata_load_acquire(&strata_rings[i]);
			if (r)
				held += cons_ring_pending(r, 0);
		}
		fprintf(stderr, "strata: session %s: the daemon %s; %llu events "
			"in the buffers not recorded, %llu dropped when they "
			"filled\n", client_cl.sock,
			st == CLIENT_ON ? "did not take every buffer"
			: st == CLIENT_PENDING ? "never took this process (its backlog stayed full)"
					     : "is gone or stalled",
			(unsigned long long)held, (unsigned long long)lost);
		client_report_unrecorded(held + lost, st != CLIENT_ON && st != CLIENT_PENDING);
	}
	/* One closer takes the fd; acquire pairs with client_connect()'s
	 * store, release with the senders' loads (struct client). */
	int s = strata_exchange_acq_rel(&client_cl.fd, -1);
	if (s >= 0)
		close(s);
	/* Closers wake futexes again (an in-process consumer may come);
	 * pairs with ring_doorbell()'s acquire load. */
	strata_store_release(&ring_bellfd, -1);
	/* after the fd is gone: pairs with the loads of state */
	strata_store_release(&client_cl.state, CLIENT_OFF);
}

/* ---- STRATA_OUTPUT: the embedded mode's guardian (docs/record.md) ---- */

/*
 * After a BYE that asked for it: wait for DONE, which says this
 * process's sub-trace is on disk, then say in one line, as the in-process
 * consumer does, if anything was lost. Bounded: a guardian that does not
 * answer costs CLIENT_DONE_WAIT_MS once, and is reported.
 */
static void client_wait_done(const struct proto_bye *bye,
			     struct strata_stats *last)
{
	struct proto_done m;
	struct strata_stats st;
	int fd = strata_load_acquire(&client_cl.fd), got = 0;
	uint64_t deadline = mono_ms() + CLIENT_DONE_WAIT_MS;

	while (mono_poll_in(fd, deadline) > 0) {
		ssize_t n = recv(fd, &m, sizeof(m), MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n == (ssize_t)sizeof(m) && m.h.type == PROTO_DONE &&
		    m.h.len == sizeof(m)) {
			got = 1;
			break;
		}
		if (n <= 0)
			break; /* the guardian is gone */
	}
	if (!got) {
		fprintf(stderr, "strata: %s: the recorder did not confirm the "
			"trace within %d s; it may be incomplete\n",
			client_cl.output, CLIENT_DONE_WAIT_MS / 1000);
		return;
	}
	memset(&st, 0, sizeof(st));
	st.events_written = m.events;
	st.bytes_written = m.bytes;
	st.packets_written = m.packets;
	st.lost_io = m.lost_io;
	st.lost_full = bye->lost[STRATA_LOST_FULL];
	st.lost_busy = bye->lost[STRATA_LOST_BUSY];
	st.lost_too_big = bye->lost[STRATA_LOST_TOO_BIG];
	st.lost_nested = bye->lost[STRATA_LOST_NESTED];
	st.lost_no_ring = bye->lost[STRATA_LOST_NO_RING];
	st.internal_logged = statedump_logged();
	*last = st;
	if (m.err)
		slog_detail("%s: %s", client_cl.output, strerror(-m.err));
	session_report_exit(client_cl.output, m.err, &st);
}