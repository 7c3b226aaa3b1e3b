/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A listener's handshake slots (RMCA_handshake_max, 4 here) against peers
 * that connect and say nothing, drip their hello, or send it whole and
 * never make their data connection. Full of them, the listener stopped
 * accepting until RMCA_connect_timeout (600 s here) closed them, so that an
 * attacker who kept reconnecting kept everyone out. Now a new connection
 * takes the slot of the oldest that has not sent its whole hello, one per
 * newcomer, and with none of those left the slot of the oldest whose
 * handshake is not done: a real client (its own timeout far below the
 * listener's) is served, and a peer past its hello outlives the silent
 * ones. tcp only (the hello is sent by hand as attack_util does).
 */
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

#define ATOMIC_CPU 2	  /* RMCA_atomic_mode=cpu, set for both sides below */
#define SLOTS	   4	  /* RMCA_handshake_max, set for both sides below */
#define STEP	   0x57e9 /* the client's word between steps */

/* The server only progresses (rmca_accept is never called): endpoints
 * made keep their slot, as a busy application's would. */
static void server(struct api_peer *p)
{
	api_server_listen(p, api_host());
	api_put_u64(p, 0, (uint64_t)rmca_listener_port(p->l));
	api_put_u64(p, 0, (uint64_t)getpid());
	/* Each wait keeps rmca progressing; a step word restarts it. */
	while (api_get_u64(p, 0) != ATK_DONE)
		;
}

/* Whether fd is still open (the listener has not closed it): nothing to
 * read and no end, now. */
static bool still_open(int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};

	return poll(&pfd, 1, 0) == 0;
}

/* A real client's endpoint to port, within the client's own timeout. */
static rmca_ep_t *newcomer(struct api_peer *p, int port)
{
	rmca_ep_t *ep = NULL;
	char hp[128];
	int rc;

	if (!p->ctx)
		API_CHECK_OK(rmca_init(&p->ctx));
	api_host_port(hp, sizeof(hp), api_host(), port);
	rc = rmca_connect(p->ctx, hp, API_TIMEOUT_MS, &ep);
	API_CHECK_MSG(rc == RMCA_OK,
		      "a client behind %d full slots was not served: %d (%s)",
		      SLOTS, rc, api_strerror(rc));
	api_token(p, 0, STEP);
	return ep;
}

/* The silent fds[0..n): exactly the first closed ones are closed. */
static void check_closed(const int *fds, int n, int closed)
{
	for (int i = 0; i < n; i++) {
		if (i < closed)
			API_CHECK_MSG(atk_closed(fds[i], API_TIMEOUT_MS),
				      "silent peer %d of %d is still open "
				      "after %d newcomers",
				      i, n, closed);
		else
			API_CHECK_MSG(still_open(fds[i]),
				      "silent peer %d of %d was closed after "
				      "%d newcomers",
				      i, n, closed);
	}
}

/* SLOTS newcomers, each served and each closing the oldest of the
 * holders fds[0..SLOTS) still open; then the holders go and the server
 * is told. */
static void newcomers_close_in_order(struct api_peer *p, int port,
				     const int *fds)
{
	for (int k = 1; k <= SLOTS; k++) {
		(void)newcomer(p, port);
		check_closed(fds, SLOTS, k);
	}
	for (int i = 0; i < SLOTS; i++)
		close(fds[i]);
	api_token(p, 0, ATK_DONE);
}

/* A length-prefixed hello as atk_hello sends it, into buf: its length. */
static size_t hello_bytes(uint64_t token, uint8_t *buf, size_t cap)
{
	int n = atk_hello_encode(token, RMCA_ROLE_ACTIVE, ATOMIC_CPU, buf + 4,
				 cap - 4);

	buf[0] = (uint8_t)n;
	buf[1] = (uint8_t)(n >> 8);
	buf[2] = (uint8_t)(n >> 16);
	buf[3] = (uint8_t)(n >> 24);
	return 4 + (size_t)n;
}

/* The listener's answer to a hello on fd: 0, or -1 when none came. */
static int read_answer(int fd)
{
	static uint8_t buf[RMCA_HELLO_MAX];
	uint32_t n;

	if (atk_read(fd, buf, 4))
		return -1;
	n = buf[0] | buf[1] << 8 | buf[2] << 16 | (uint32_t)buf[3] << 24;
	API_CHECK_MSG(n <= RMCA_HELLO_MAX, "answer of %u bytes", n);
	return atk_read(fd, buf, n);
}

/*
 * Every slot held by a silent peer: a real client is served (the listener
 * waited RMCA_connect_timeout before, far past the client's own timeout),
 * the oldest silent peer is closed for it and no other.
 */
static void silent_client(struct api_peer *p)
{
	int port = api_client_read_port(p);
	int fds[SLOTS];

	(void)api_get_u64(p, 0);
	for (int i = 0; i < SLOTS; i++)
		fds[i] = atk_connect(api_host(), port);
	(void)newcomer(p, port);
	check_closed(fds, SLOTS, 1);
	for (int i = 0; i < SLOTS; i++)
		close(fds[i]);
	api_token(p, 0, ATK_DONE);
}

/* Both sides: SLOTS handshakes at once, a listener that waits long. */
static char *run_log(const struct api_test *t)
{
	return atk_run_log_slots(t, SLOTS);
}

static void test_silent_peers_give_way_to_a_client(void **state)
{
	const struct api_test t = {
		.server = server, .client = silent_client, .manual = true};
	char *log;

	(void)state;
	log = run_log(&t);
	if (!atk_log_says(log, "closed for a newer connection",
		      "RMCA_handshake_max"))
		fail_msg("the listener did not say why it closed a peer: %s",
			 log);
	free(log);
}

/*
 * One silent peer closed per newcomer, oldest first, whether it said
 * nothing or dripped part of its hello; the endpoints made meanwhile keep
 * their slots.
 */
static void one_per_newcomer_client(struct api_peer *p)
{
	int port = api_client_read_port(p);
	uint8_t hello[4 + RMCA_HELLO_MAX];
	int fds[SLOTS];

	(void)api_get_u64(p, 0);
	for (int i = 0; i < SLOTS; i++)
		fds[i] = atk_connect(api_host(), port);
	/* The second drips its hello: the prefix and one byte of it. */
	(void)hello_bytes(0x5107, hello, sizeof(hello));
	atk_write(fds[1], hello, 5);
	newcomers_close_in_order(p, port, fds);
}

static void test_each_newcomer_closes_one_silent_peer(void **state)
{
	const struct api_test t = {.server = server,
				   .client = one_per_newcomer_client,
				   .manual = true};

	(void)state;
	free(run_log(&t));
}

/*
 * The oldest peer sent its whole hello and was answered (its data
 * connection never comes: it waits in the module's connect): the silent
 * ones behind it give way to newcomers before it does, and it gives way to
 * the next newcomer (the others' slots hold endpoints, which never do).
 */
static void answered_client(struct api_peer *p)
{
	int port = api_client_read_port(p);
	struct rmca_hello answer;
	int fds[SLOTS - 1], m;

	(void)api_get_u64(p, 0);
	m = atk_connect(api_host(), port);
	API_CHECK(!atk_hello(m, 0x5108, RMCA_ROLE_ACTIVE, ATOMIC_CPU, &answer));
	for (int i = 0; i < SLOTS - 1; i++)
		fds[i] = atk_connect(api_host(), port);
	for (int k = 1; k <= SLOTS - 1; k++) {
		(void)newcomer(p, port);
		check_closed(fds, SLOTS - 1, k);
		API_CHECK_MSG(still_open(m),
			      "the answered peer was closed for newcomer %d",
			      k);
	}
	(void)newcomer(p, port);
	API_CHECK_MSG(atk_closed(m, API_TIMEOUT_MS),
		      "the answered peer is still open after %d newcomers",
		      SLOTS);
	for (int i = 0; i < SLOTS - 1; i++)
		close(fds[i]);
	close(m);
	api_token(p, 0, ATK_DONE);
}

static void test_answered_peer_outlives_silent_ones(void **state)
{
	const struct api_test t = {
		.server = server, .client = answered_client, .manual = true};

	(void)state;
	free(run_log(&t));
}

/*
 * Every slot held by a peer that sent its whole hello, read the answer and
 * never makes its data connection (a listener's RMCA_connect_timeout, 10 s
 * by default, would hold each; an attacker that repeats keeps everyone
 * out): each newcomer is served, the oldest such peer closed for it and no
 * other, with a line that says why.
 */
static void hello_complete_client(struct api_peer *p)
{
	int port = api_client_read_port(p);
	struct rmca_hello answer;
	int fds[SLOTS];

	(void)api_get_u64(p, 0);
	for (int i = 0; i < SLOTS; i++) {
		fds[i] = atk_connect(api_host(), port);
		API_CHECK(!atk_hello(fds[i], 0x5200 + (uint64_t)i,
				     RMCA_ROLE_ACTIVE, ATOMIC_CPU, &answer));
	}
	newcomers_close_in_order(p, port, fds);
}

static void test_hello_complete_peers_give_way(void **state)
{
	const struct api_test t = {.server = server,
				   .client = hello_complete_client,
				   .manual = true};
	char *log;

	(void)state;
	log = run_log(&t);
	if (!atk_log_says(log, "handshake not done",
			  "closed for a newer connection"))
		fail_msg("the listener did not say why it closed an answered "
			 "peer: %s",
			 log);
	free(log);
}

/*
 * The oldest peer's hello is whole but not read yet when a newcomer waits
 * (all of it reaches the stopped server at once, so that the listener
 * takes the SLOTS peers and meets the newcomer before any of them is
 * read). The oldest is served (it is read before it could give way), the
 * next one, silent, is closed for the newcomer, which is served.
 */
static void completing_client(struct api_peer *p)
{
	int port = api_client_read_port(p);
	pid_t server_pid = (pid_t)api_get_u64(p, 0);
	static uint8_t mh[4 + RMCA_HELLO_MAX], nh[4 + RMCA_HELLO_MAX];
	size_t mlen = hello_bytes(0x5109, mh, sizeof(mh));
	size_t nlen = hello_bytes(0x510a, nh, sizeof(nh));
	int fds[SLOTS - 1], m, n;

	atk_stop(server_pid);
	/* The kernel's backlog holds them all meanwhile, in this order. */
	m = atk_connect(api_host(), port);
	atk_write(m, mh, mlen / 2);
	for (int i = 0; i < SLOTS - 1; i++)
		fds[i] = atk_connect(api_host(), port);
	n = atk_connect(api_host(), port);
	atk_write(n, nh, nlen);
	atk_write(m, mh + mlen / 2, mlen - mlen / 2);
	atk_cont(server_pid);
	API_CHECK_MSG(!read_answer(m),
		      "the peer that completed its hello was not answered");
	API_CHECK_MSG(!read_answer(n), "the newcomer was not answered");
	check_closed(fds, SLOTS - 1, 1);
	API_CHECK_MSG(still_open(m), "the answered peer was closed");
	for (int i = 0; i < SLOTS - 1; i++)
		close(fds[i]);
	close(m);
	close(n);
	api_token(p, 0, ATK_DONE);
}

static void test_hello_completed_with_a_newcomer_is_served(void **state)
{
	const struct api_test t = {
		.server = server, .client = completing_client, .manual = true};

	(void)state;
	free(run_log(&t));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(
			test_silent_peers_give_way_to_a_client, api_log_show),
		cmocka_unit_test_teardown(
			test_each_newcomer_closes_one_silent_peer,
			api_log_show),
		cmocka_unit_test_teardown(
			test_answered_peer_outlives_silent_ones, api_log_show),
		cmocka_unit_test_teardown(
			test_hello_completed_with_a_newcomer_is_served,
			api_log_show),
		cmocka_unit_test_teardown(test_hello_complete_peers_give_way,
					  api_log_show),
	};

	setenv("RMCA_transports", "tcp", 1);
	setenv("RMCA_atomic_mode", "cpu", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
