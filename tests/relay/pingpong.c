/* SPDX-License-Identifier: MIT */
/* A ping-pong over TCP between two hosts, logging each message's send and receive with its id: the program that relay-clock merges from the relay and checks for a receive before its send. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <strata/strata.h>

static const struct strata_field_desc f[] = {{"msg", STRATA_T_U64, 0, 0},
					     {"mono_ns", STRATA_T_U64, 0, 0}};
static const struct strata_event_desc e_send = {
	"pp", "send", 3, STRATA_EV_POINT, 1, 2, 0, f, "msg=%{msg}", NULL, NULL};
static const struct strata_event_desc e_recv = {
	"pp", "recv", 3, STRATA_EV_POINT, 2, 2, 0, f, "msg=%{msg}", NULL, NULL};
static const struct strata_event_desc *const evs[] = {&e_send, &e_recv};

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int xfer(int fd, uint64_t *v, int out)
{
	size_t done = 0;
	while (done < 8) {
		ssize_t n = out ? send(fd, (char *)v + done, 8 - done, MSG_NOSIGNAL)
				: recv(fd, (char *)v + done, 8 - done, 0);
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

/* Message 2i is ping i (client to server), 2i + 1 its pong. */
static int play(int fd, unsigned n, int client)
{
	for (unsigned i = 0; i < n; i++) {
		uint64_t m = 2 * (uint64_t)i;
		if (client) {
			STRATA_EVENT2(3, 1, m, mono_ns());
			if (xfer(fd, &m, 1) || xfer(fd, &m, 0))
				return -1;
			STRATA_EVENT2(3, 2, m, mono_ns());
			/* paced: the run lasts seconds, the relay's clock
			 * exchanges (one a second) go on meanwhile */
			usleep(3000);
		} else {
			if (xfer(fd, &m, 0))
				return -1;
			STRATA_EVENT2(3, 2, m, mono_ns());
			m++;
			STRATA_EVENT2(3, 1, m, mono_ns());
			if (xfer(fd, &m, 1))
				return -1;
		}
	}
	return 0;
}

/* pingpong serve PORT N | pingpong client ADDR PORT N */
int main(int argc, char **argv)
{
	int client = argc == 5 && !strcmp(argv[1], "client");
	if (!client && !(argc == 4 && !strcmp(argv[1], "serve"))) {
		fprintf(stderr, "usage: pingpong serve PORT N | client ADDR PORT N\n");
		return 2;
	}
	struct sockaddr_in a = {.sin_family = AF_INET};
	a.sin_port = htons((uint16_t)atoi(argv[client ? 3 : 2]));
	unsigned n = (unsigned)atoi(argv[client ? 4 : 3]);
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);

	strata_register(NULL, evs, 2);
	if (client) {
		inet_pton(AF_INET, argv[2], &a.sin_addr);
		/* the server may still be starting under its recorder */
		int tries = 0;
		while (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
			if (++tries > 200) {
				perror("pingpong: connect");
				return 1;
			}
			close(fd);
			fd = socket(AF_INET, SOCK_STREAM, 0);
			usleep(50000);
		}
	} else {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 1) < 0) {
			perror("pingpong: listen");
			return 1;
		}
		int c = accept(fd, NULL, NULL);
		close(fd);
		fd = c;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	int rc = play(fd, n, client);
	close(fd);
	if (rc)
		fprintf(stderr, "pingpong: the peer went away\n");
	return rc ? 1 : 0;
}
