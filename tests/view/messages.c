/* SPDX-License-Identifier: MIT */
/* The viewer's message arrows' test program: a producer passes messages through a queue to two consumers, and says which thread sent and received each. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <strata/strata.h>

#include "messages.h" /* strata-gen'd from messages.strata */

/*
 * Ids are reused (KEYS of them, more messages than that and a queue
 * longer than KEYS), so that one key is in flight twice and the viewer
 * must pair each receive with the earliest unreceived send of its key.
 * The tracepoints are logged inside the queue's lock: the trace's order
 * of sends and receives is the queue's, which the program's log gives.
 * Printed, one line each: "msg ID SENDER RECEIVER" in send order, then
 * "lone_send ID TID" (never received) and "lone_recv ID TID" (never sent).
 */
#define KEYS 8
#define QLEN 16
#define LONE_SEND 1000000u
#define LONE_RECV 2000000u

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static uint64_t queue[QLEN];
static unsigned head, tail, nmsgs;
static int done;
static pid_t producer, *receiver; /* per message, in send order */

static void *produce(void *arg)
{
	(void)arg;
	producer = gettid();
	for (unsigned i = 0; i < nmsgs; i++) {
		pthread_mutex_lock(&lock);
		while (tail - head == QLEN)
			pthread_cond_wait(&changed, &lock);
		queue[tail % QLEN] = i % KEYS;
		strata_msg_post(i % KEYS, 64 + i);
		tail++;
		pthread_cond_broadcast(&changed);
		pthread_mutex_unlock(&lock);
	}
	pthread_mutex_lock(&lock);
	strata_msg_post(LONE_SEND, 0);
	done = 1;
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&lock);
	printf("lone_send %u %d\n", LONE_SEND, (int)producer);
	return NULL;
}

static void *consume(void *arg)
{
	uint32_t me = (uint32_t)(uintptr_t)arg;
	if (me == 0) {
		pthread_mutex_lock(&lock);
		strata_msg_take(me, LONE_RECV);
		pthread_mutex_unlock(&lock);
		printf("lone_recv %u %d\n", LONE_RECV, (int)gettid());
	}
	for (;;) {
		pthread_mutex_lock(&lock);
		while (head == tail && !done)
			pthread_cond_wait(&changed, &lock);
		if (head == tail) {
			pthread_mutex_unlock(&lock);
			return NULL;
		}
		strata_msg_take(me, queue[head % QLEN]);
		receiver[head++] = gettid();
		pthread_cond_broadcast(&changed);
		pthread_mutex_unlock(&lock);
	}
}

int main(int argc, char **argv)
{
	pthread_t p, c[2];
	nmsgs = argc > 1 ? (unsigned)atoi(argv[1]) : 2000;
	receiver = calloc(nmsgs ? nmsgs : 1, sizeof(*receiver));
	if (!receiver || nmsgs < 1 || nmsgs > 10000000) {
		fprintf(stderr, "usage: %s [MESSAGES (1-10000000)]\n", argv[0]);
		return 2;
	}
	for (int i = 0; i < 2; i++)
		pthread_create(&c[i], NULL, consume, (void *)(uintptr_t)i);
	pthread_create(&p, NULL, produce, NULL);
	pthread_join(p, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(c[i], NULL);
	for (unsigned i = 0; i < nmsgs; i++)
		printf("msg %u %d %d\n", i % KEYS, (int)producer, (int)receiver[i]);
	free(receiver);
	return 0;
}
