/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A listener's handshake slots (RMCA_handshake_max, 4 here) against one
 * address that connects and sends whole hellos as fast as it is answered
 * (127.0.0.2: loopback has the whole of 127/8), while an honest client
 * from another address (127.0.0.1) is in the middle of its handshake.
 * The slot that gives way to a newcomer was the oldest whose handshake was
 * not done, whoever held it: the flood pushed the honest client out, one
 * newcomer after the other. Now it comes from the address that holds the
 * most slots: the flooder pushes out its own connections only, and the
 * honest client completes its handshake and is accepted, whether it had
 * its answer when the flood began or had not sent its hello yet (a slow
 * client, which gave way first before: the silent went first whoever
 * they were).
 *
 * tcp only, the hellos and the data connection by hand (attack_util), the
 * listener on 127.0.0.1 whatever RMCATEST_HOST says.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "api_util.h"
#include "attack_util.h"

#define ATOMIC_CPU 2 /* RMCA_atomic_mode=cpu, set for both sides below */
#define SLOTS	   4 /* RMCA_handshake_max, set for both sides below */
#define FLOOD	   (2 * SLOTS) /* the flooder's connections */
#define HONEST	   "127.0.0.1"
#define FLOODER	   "127.0.0.2"
#define STEP	   0x57e9 /* the client's word: accept now */
#define TOKEN	   0x6a00ull

/* The server progresses until the client's word, then accepts once and
 * says how that went. */
static void server(struct api_peer *p)
{
	rmca_ep_t *ep = NULL;
	int rc;

	api_server_listen(p, HONEST);
	api_put_u64(p, 0, (uint64_t)rmca_listener_port(p->l));
	/* Each wait keeps rmca progressing; a step word restarts it. */
	while (api_get_u64(p, 0) != STEP)
		;
	rc = rmca_accept(p->l, API_TIMEOUT_MS, &ep);
	api_put_u64(p, 0, (uint64_t)(int64_t)rc);
	while (api_get_u64(p, 0) != ATK_DONE)
		;
	if (ep)
		rmca_ep_close(ep);
}

/* A blocking connection to 127.0.0.1:port from the address from. */
static int connect_from(const char *from, int port)
{
	struct sockaddr_in me = {.sin_family = AF_INET}, to = me;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	API_CHECK(fd >= 0);
	API_CHECK(inet_pton(AF_INET, from, &me.sin_addr) == 1);
	API_CHECK(inet_pton(AF_INET, HONEST, &to.sin_addr) == 1);
	to.sin_port = htons((uint16_t)port);
	API_CHECK_MSG(!bind(fd, (struct sockaddr *)&me, sizeof(me)),
		      "cannot bind to %s: %s", from, strerror(errno));
	API_CHECK_MSG(!connect(fd, (struct sockaddr *)&to, sizeof(to)),
		      "cannot connect from %s: %s", from, strerror(errno));
	return fd;
}

/* Whether fd is still open (the listener has not closed it): nothing to
 * read and no end, now. */
static bool still_open(int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};

	return poll(&pfd, 1, 0) == 0;
}

/*
 * The honest client connects (and, unless slow, sends its hello and reads
 * the answer: its data connection is due); then the flooder's FLOOD
 * connections, each hello answered, each past SLOTS - 1 taking the slot of
 * its oldest; then the honest client completes and the server accepts it.
 */
static void flood_client(struct api_peer *p, bool slow)
{
	int port = api_client_read_port(p);
	struct rmca_hello answer;
	int h, d, fds[FLOOD];

	h = connect_from(HONEST, port);
	if (!slow)
		API_CHECK(!atk_hello(h, TOKEN, RMCA_ROLE_ACTIVE, ATOMIC_CPU,
				     &answer));
	for (int i = 0; i < FLOOD; i++) {
		fds[i] = connect_from(FLOODER, port);
		API_CHECK_MSG(!atk_hello(fds[i], TOKEN + 1 + (uint64_t)i,
					 RMCA_ROLE_ACTIVE, ATOMIC_CPU, &answer),
			      "flooder's connection %d was not answered", i);
		API_CHECK_MSG(still_open(h),
			      "the honest client was closed for the "
			      "flooder's connection %d",
			      i);
	}
	/* the flooder's oldest gave way, one per newcomer past the bound */
	for (int i = 0; i < FLOOD; i++) {
		if (i < FLOOD - (SLOTS - 1))
			API_CHECK_MSG(atk_closed(fds[i], API_TIMEOUT_MS),
				      "flooder's connection %d is still open",
				      i);
		else
			API_CHECK_MSG(still_open(fds[i]),
				      "flooder's connection %d was closed", i);
	}
	if (slow)
		API_CHECK_MSG(!atk_hello(h, TOKEN, RMCA_ROLE_ACTIVE, ATOMIC_CPU,
					 &answer),
			      "the slow client's hello was not answered");
	d = connect_from(HONEST, atk_data_port(&answer));
	atk_frame_hello(d, TOKEN);
	atk_frame_ack(d, TOKEN);
	api_token(p, 0, STEP);
	API_CHECK_MSG((int64_t)api_get_u64(p, 0) == RMCA_OK,
		      "the honest client's endpoint was not accepted");
	for (int i = 0; i < FLOOD; i++)
		close(fds[i]);
	close(d);
	close(h);
	api_token(p, 0, ATK_DONE);
}

static void answered_client(struct api_peer *p)
{
	flood_client(p, false);
}

static void slow_client(struct api_peer *p)
{
	flood_client(p, true);
}

/* Both sides: SLOTS handshakes at once, a listener that waits long. */
static char *run_log(const struct api_test *t)
{
	return atk_run_log_slots(t, SLOTS);
}

static void test_flood_of_hellos_spares_a_client_mid_handshake(void **state)
{
	const struct api_test t = {
		.server = server, .client = answered_client, .manual = true};
	char *log;

	(void)state;
	log = run_log(&t);
	if (!atk_log_says(log, FLOODER, "closed for a newer connection"))
		fail_msg("the listener did not say why it closed the "
			 "flooder's connections: %s",
			 log);
	if (atk_log_says(log, HONEST ":", "closed for a newer connection"))
		fail_msg("the honest client was closed: %s", log);
	free(log);
}

static void test_flood_of_hellos_spares_a_slow_client(void **state)
{
	const struct api_test t = {
		.server = server, .client = slow_client, .manual = true};

	(void)state;
	free(run_log(&t));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(
			test_flood_of_hellos_spares_a_client_mid_handshake,
			api_log_show),
		cmocka_unit_test_teardown(
			test_flood_of_hellos_spares_a_slow_client,
			api_log_show),
	};

	setenv("RMCA_transports", "tcp", 1);
	setenv("RMCA_atomic_mode", "cpu", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
