/* SPDX-License-Identifier: MIT */
/* taskstats over generic netlink (libnl-genl): live threads' utime/stime on demand, and every exiting thread's. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <linux/taskstats.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>

#include "kernel/taskstats.h"

/*
 * Two sockets: queries wait for their answer on one; exits arrive on the
 * other whenever a thread ends, so the listener never mixes with a reply.
 * The kernel sends the exit of each thread as TASKSTATS_TYPE_AGGR_PID
 * (and of the process's last thread also as AGGR_TGID, ignored here).
 */
struct kacct {
	struct nl_sock *query, *listen;
	int family;
	int overflowed;
	/* the message being parsed */
	struct kacct_times *got;
	int ngot;
	void (*fn)(const struct kacct_times *, void *);
	void *arg;
	char cpumask[32];
};

static int nl_errno(int nle)
{
	switch (nle < 0 ? -nle : nle) {
	case NLE_OBJ_NOTFOUND:
		return ESRCH;
	case NLE_PERM:
		return EPERM;
	case NLE_NOMEM:
		return ENOMEM;
	case NLE_AGAIN:
		return EAGAIN;
	default:
		return EIO;
	}
}

/* One TASKSTATS_TYPE_AGGR_PID attribute into *out; false when malformed. */
static bool parse_aggr(struct nlattr *aggr, struct kacct_times *out)
{
	struct nlattr *a[TASKSTATS_TYPE_MAX + 1];
	if (nla_parse_nested(a, TASKSTATS_TYPE_MAX, aggr, NULL) < 0 ||
	    !a[TASKSTATS_TYPE_PID] || !a[TASKSTATS_TYPE_STATS])
		return false;
	/* The struct grows by version (fields appended): copy what came. */
	struct taskstats ts;
	int len = nla_len(a[TASKSTATS_TYPE_STATS]);
	memset(&ts, 0, sizeof(ts));
	memcpy(&ts, nla_data(a[TASKSTATS_TYPE_STATS]),
	       len < (int)sizeof(ts) ? (size_t)len : sizeof(ts));
	out->tid = nla_get_u32(a[TASKSTATS_TYPE_PID]);
	out->pid = len >= (int)(offsetof(struct taskstats, ac_tgid) + sizeof(ts.ac_tgid)) ?
			   ts.ac_tgid : 0;
	out->utime_ns = ts.ac_utime * 1000;
	out->stime_ns = ts.ac_stime * 1000;
	return true;
}

static int on_message(struct nl_msg *msg, void *arg)
{
	struct kacct *a = arg;
	struct nlattr *attrs[TASKSTATS_TYPE_MAX + 1];
	struct kacct_times t;

	if (genlmsg_parse(nlmsg_hdr(msg), 0, attrs, TASKSTATS_TYPE_MAX, NULL) < 0 ||
	    !attrs[TASKSTATS_TYPE_AGGR_PID] || !parse_aggr(attrs[TASKSTATS_TYPE_AGGR_PID], &t))
		return NL_SKIP;
	if (a->got) {
		*a->got = t;
		a->ngot++;
	} else if (a->fn) {
		a->fn(&t, a->arg);
		a->ngot++;
	}
	return NL_OK;
}

static int request(struct kacct *a, struct nl_sock *sk, int attr, const void *val,
		   int len)
{
	struct nl_msg *m = nlmsg_alloc();
	int ret = -ENOMEM;

	if (m && genlmsg_put(m, NL_AUTO_PORT, NL_AUTO_SEQ, a->family, 0, NLM_F_REQUEST,
			     TASKSTATS_CMD_GET, TASKSTATS_VERSION) &&
	    nla_put(m, attr, len, val) == 0) {
		int r = nl_send_auto(sk, m);
		ret = r < 0 ? -nl_errno(r) : 0;
	}
	nlmsg_free(m);
	return ret;
}

static struct nl_sock *sock_new(struct kacct *a)
{
	struct nl_sock *sk = nl_socket_alloc();
	if (!sk)
		return NULL;
	if (genl_connect(sk) < 0) {
		nl_socket_free(sk);
		return NULL;
	}
	nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, on_message, a);
	return sk;
}

int kacct_open(unsigned ncpus, struct kacct **out)
{
	struct kacct *a = calloc(1, sizeof(*a));
	int ret = -ENOMEM;

	*out = NULL;
	if (!a)
		return -ENOMEM;
	if (!(a->query = sock_new(a)) || !(a->listen = sock_new(a)))
		goto fail;
	if ((a->family = genl_ctrl_resolve(a->query, TASKSTATS_GENL_NAME)) < 0) {
		ret = -ENOENT;
		goto fail;
	}
	/* Exits come in bursts (a make's jobs): a deep buffer, which root
	 * may take beyond rmem_max; an overflow is still counted. */
	int rcv = 8 << 20;
	setsockopt(nl_socket_get_fd(a->listen), SOL_SOCKET, SO_RCVBUFFORCE, &rcv, sizeof(rcv));
	nl_socket_disable_seq_check(a->listen);
	snprintf(a->cpumask, sizeof(a->cpumask), "0-%u", ncpus ? ncpus - 1 : 0);
	struct nl_msg *m = nlmsg_alloc();
	if (!m)
		goto fail;
	if (!genlmsg_put(m, NL_AUTO_PORT, NL_AUTO_SEQ, a->family, 0, NLM_F_REQUEST,
			 TASKSTATS_CMD_GET, TASKSTATS_VERSION) ||
	    nla_put_string(m, TASKSTATS_CMD_ATTR_REGISTER_CPUMASK, a->cpumask) < 0) {
		nlmsg_free(m);
		goto fail;
	}
	int r = nl_send_sync(a->listen, m); /* frees m; waits for the ack */
	if (r < 0) {
		ret = -nl_errno(r);
		goto fail;
	}
	nl_socket_set_nonblocking(a->listen);
	*out = a;
	return 0;
fail:
	kacct_close(a);
	return ret;
}

int kacct_fd(const struct kacct *a)
{
	return nl_socket_get_fd(a->listen);
}

int kacct_query(struct kacct *a, uint32_t tid, struct kacct_times *out)
{
	int ret = request(a, a->query, TASKSTATS_CMD_ATTR_PID, &tid, sizeof(tid));
	if (ret)
		return ret;
	a->got = out;
	a->ngot = 0;
	int r = nl_recvmsgs_default(a->query);
	a->got = NULL;
	if (r < 0)
		return -nl_errno(r);
	return a->ngot && out->tid == tid ? 0 : -EIO;
}

int kacct_exits(struct kacct *a, void (*fn)(const struct kacct_times *, void *),
		void *arg)
{
	int total = 0;

	a->fn = fn;
	a->arg = arg;
	for (;;) {
		a->ngot = 0;
		int r = nl_recvmsgs_default(a->listen);
		total += a->ngot;
		if (r >= 0)
			continue;
		if (r == -NLE_AGAIN)
			break;
		if (r == -NLE_NOMEM) { /* ENOBUFS: the kernel dropped some */
			a->overflowed = 1;
			continue;
		}
		a->fn = NULL;
		return -nl_errno(r);
	}
	a->fn = NULL;
	return total;
}

int kacct_overflowed(const struct kacct *a)
{
	return a->overflowed;
}

void kacct_close(struct kacct *a)
{
	if (!a)
		return;
	if (a->listen && a->family > 0) { /* stop the kernel sending */
		struct nl_msg *m = nlmsg_alloc();
		if (m && genlmsg_put(m, NL_AUTO_PORT, NL_AUTO_SEQ, a->family, 0, NLM_F_REQUEST,
				     TASKSTATS_CMD_GET, TASKSTATS_VERSION) &&
		    nla_put_string(m, TASKSTATS_CMD_ATTR_DEREGISTER_CPUMASK, a->cpumask) == 0)
			nl_send_auto(a->listen, m);
		nlmsg_free(m);
	}
	nl_socket_free(a->query);
	nl_socket_free(a->listen);
	free(a);
}
