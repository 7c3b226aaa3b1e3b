/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tcp module's data port parks at most TCP_MAX_PENDING sockets whose
 * connect has not started yet; at the bound one gives way to a new one.
 * It was the oldest, whoever sent it: one address that dialed and sent
 * whole hellos as fast as it could (127.0.0.2: loopback has the whole of
 * 127/8) pushed out an honest peer's socket (127.0.0.1) that waited for
 * its connect to start. Now the socket that gives way is the oldest of the
 * address that parks the most, the newcomer counted with its own: the
 * flooder pushes out its own sockets only, and the honest one is there
 * when its connect comes. The module in-process (tcp_harness), the peers
 * plain blocking sockets.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tcp_harness.h"

#define HONEST	"127.0.0.1"
#define FLOODER "127.0.0.2"
#define TOKEN	0x7a00ull

/* A connection to 127.0.0.1:port from the address from, that sends a
 * hello carrying token (the module is pumped until it parked it). */
static int hello_from(const char *from, int port, uint64_t token)
{
	struct sockaddr_in me = {.sin_family = AF_INET}, to = me;
	const struct tcp_frame f = {
		.type = TCP_F_HELLO, .id = token, .operand = TCP_HELLO_WORD};
	uint8_t buf[TCP_HDR_LEN];
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(inet_pton(AF_INET, from, &me.sin_addr), 1);
	assert_int_equal(inet_pton(AF_INET, HONEST, &to.sin_addr), 1);
	to.sin_port = htons((uint16_t)port);
	if (bind(fd, (struct sockaddr *)&me, sizeof(me)))
		fail_msg("cannot bind to %s: %s", from, strerror(errno));
	if (connect(fd, (struct sockaddr *)&to, sizeof(to)))
		fail_msg("cannot connect from %s: %s", from, strerror(errno));
	rmca_tcp_frame_encode(&f, buf);
	assert_int_equal(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	th_pump_idle();
	return fd;
}

/* Whether the module still parks a socket under token (taken: closed). */
static bool parked(struct tcp_module *m, uint64_t token)
{
	int fd = rmca_tcp_pending_take(m, token);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

static void test_flood_of_hellos_spares_a_parked_peer(void **state)
{
	struct tcp_module *m = th_module();
	int honest, fds[TCP_MAX_PENDING + 8];
	const int nflood = TCP_MAX_PENDING + 8;

	(void)state;
	assert_int_equal(rmca_tcp_listen(m), 0);
	honest = hello_from(HONEST, m->port, TOKEN);
	assert_int_equal(m->npending, 1);
	for (int i = 0; i < nflood; i++)
		fds[i] = hello_from(FLOODER, m->port, TOKEN + 1 + (uint64_t)i);
	assert_int_equal(m->npending, TCP_MAX_PENDING);
	if (!parked(m, TOKEN))
		fail_msg("the honest peer's socket was closed for the "
			 "flooder's");
	/* the flooder's oldest gave way, one per socket past the bound */
	for (int i = 0; i < nflood; i++) {
		bool want = i >= nflood - (TCP_MAX_PENDING - 1);

		if (parked(m, TOKEN + 1 + (uint64_t)i) != want)
			fail_msg("flooder's socket %d %s", i,
				 want ? "was closed" : "is still parked");
	}
	for (int i = 0; i < nflood; i++)
		close(fds[i]);
	close(honest);
	th_module_free(m);
}

/* Peers that each park one socket: the oldest gives way, as before. */
static void test_one_socket_each_the_oldest_gives_way(void **state)
{
	struct tcp_module *m = th_module();
	int fds[TCP_MAX_PENDING + 1];
	char from[32];

	(void)state;
	assert_int_equal(rmca_tcp_listen(m), 0);
	for (int i = 0; i <= TCP_MAX_PENDING; i++) {
		snprintf(from, sizeof(from), "127.0.1.%d", i + 1);
		fds[i] = hello_from(from, m->port, TOKEN + (uint64_t)i);
	}
	assert_int_equal(m->npending, TCP_MAX_PENDING);
	assert_false(parked(m, TOKEN));
	for (int i = 1; i <= TCP_MAX_PENDING; i++)
		assert_true(parked(m, TOKEN + (uint64_t)i));
	for (int i = 0; i <= TCP_MAX_PENDING; i++)
		close(fds[i]);
	th_module_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		/* first: a failure of the other leaves the harness full */
		cmocka_unit_test(test_one_socket_each_the_oldest_gives_way),
		cmocka_unit_test(test_flood_of_hellos_spares_a_parked_peer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
