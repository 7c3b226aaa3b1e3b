// SPDX-License-Identifier: BSD-3-Clause
/*
 * The bootstrap handshake against peers that are not quite rmca: a hello of
 * another protocol version is refused with RMCA_ERR_PROTOCOL and a logged
 * reason, on either side, and the listener keeps serving real peers.
 * The odd peer is played here with the hello codec itself.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <rmca.h>

#include "bootstrap.h"
#include "wire.h"

/* stderr into a file while f runs; returns what was logged. */
static char logged[8192];

static void capture_start(int *saved, FILE **f)
{
	fflush(stderr);
	*f = tmpfile();
	assert_non_null(*f);
	*saved = dup(2);
	dup2(fileno(*f), 2);
}

static const char *capture_end(int saved, FILE *f)
{
	size_t n;

	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(f);
	n = fread(logged, 1, sizeof(logged) - 1, f);
	logged[n] = '\0';
	fclose(f);
	return logged;
}

static size_t odd_hello(uint8_t *buf, uint16_t version, uint8_t role)
{
	struct rmca_hello h = { .version = version, .kind = RMCA_WIRE_HELLO,
				.token = 7, .role = role,
				.choice_a = RMCA_WIRE_NO_CHOICE,
				.choice_p = RMCA_WIRE_NO_CHOICE };
	int n;

	strcpy(h.boot_id, "x");
	n = rmca_hello_encode(&h, buf, RMCA_HELLO_MAX);
	assert_true(n > 0);
	return (size_t)n;
}

static void listener_refuses_another_protocol_version(void **state)
{
	static uint8_t buf[RMCA_HELLO_MAX];
	rmca_context_t *ctx;
	rmca_listener_t *l;
	rmca_ep_t *ep, *cep;
	char port[8], why[128];
	struct rmca_hello reply;
	size_t n, len;
	const char *log;
	int fd, saved, pfd[2];
	pid_t pid;
	FILE *f;

	(void)state;
	/* the real peer: forked before any context exists, told the port
	 * through a pipe once the odd one has been dealt with */
	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		rmca_context_t *c2;
		rmca_ep_t *e2;
		char hp[32];
		int p = 0;

		close(pfd[1]);
		if (read(pfd[0], &p, sizeof(p)) != sizeof(p))
			_exit(1);
		snprintf(hp, sizeof(hp), "127.0.0.1:%d", p);
		if (rmca_init(&c2) || rmca_connect(c2, hp, 5000, &e2))
			_exit(1);
		rmca_finalize(c2);
		_exit(0);
	}
	close(pfd[0]);
	assert_int_equal(rmca_init(&ctx), 0);
	assert_int_equal(rmca_listen(ctx, "127.0.0.1:0", &l), 0);
	snprintf(port, sizeof(port), "%d", rmca_listener_port(l));
	fd = rmca_tcp_connect("127.0.0.1", port, rmca_now_ms() + 2000, why,
			      sizeof(why));
	assert_true(fd >= 0);
	/* the version before this one: a peer of the last release */
	n = odd_hello(buf, RMCA_WIRE_VERSION - 1, RMCA_ROLE_ACTIVE);
	assert_int_equal(rmca_msg_send(fd, buf, n, rmca_now_ms() + 2000), 0);

	capture_start(&saved, &f);
	assert_int_equal(rmca_accept(l, 2000, &ep), RMCA_ERR_PROTOCOL);
	log = capture_end(saved, f);
	snprintf(why, sizeof(why), "protocol version %d, expected %d",
		 RMCA_WIRE_VERSION - 1, RMCA_WIRE_VERSION);
	if (!strstr(log, why))
		fail_msg("no reason logged: '%s'", log);

	/* the odd peer is told why, in a reject it can read */
	assert_int_equal(rmca_msg_recv(fd, buf, sizeof(buf), &len,
				       rmca_now_ms() + 2000, why, sizeof(why)),
			 0);
	assert_int_equal(rmca_hello_decode(buf, len, &reply, why, sizeof(why)), 0);
	assert_int_equal(reply.kind, RMCA_WIRE_REJECT);
	assert_int_equal(reply.status, RMCA_ERR_PROTOCOL);
	close(fd);

	/* and a real peer is served next */
	{
		int p = rmca_listener_port(l), st;

		assert_int_equal(write(pfd[1], &p, sizeof(p)), sizeof(p));
		close(pfd[1]);
		assert_int_equal(rmca_accept(l, 5000, &cep), 0);
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	rmca_finalize(ctx);
}

/* A listener of another version: answers every hello with its own. */
static void *odd_listener(void *arg)
{
	static uint8_t buf[RMCA_HELLO_MAX];
	int lfd = *(int *)arg, fd;
	char why[128];
	size_t len, n;

	fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		return NULL;
	if (!rmca_msg_recv(fd, buf, sizeof(buf), &len, rmca_now_ms() + 5000,
			   why, sizeof(why))) {
		n = odd_hello(buf, RMCA_WIRE_VERSION - 1, RMCA_ROLE_PASSIVE);
		rmca_msg_send(fd, buf, n, rmca_now_ms() + 5000);
	}
	/* hold the socket until the connector gave up */
	rmca_msg_recv(fd, buf, sizeof(buf), &len, rmca_now_ms() + 5000, why,
		      sizeof(why));
	close(fd);
	return NULL;
}

static void connect_refuses_a_listener_of_another_version(void **state)
{
	rmca_context_t *ctx;
	rmca_ep_t *ep;
	const char *log;
	pthread_t t;
	char hp[32], want[64];
	int lfd, port, saved;
	FILE *f;

	(void)state;
	lfd = rmca_tcp_listen("127.0.0.1", "0", &port);
	assert_true(lfd >= 0);
	/* the thread waits in a blocking accept */
	fcntl(lfd, F_SETFL, fcntl(lfd, F_GETFL) & ~O_NONBLOCK);
	pthread_create(&t, NULL, odd_listener, &lfd);
	assert_int_equal(rmca_init(&ctx), 0);
	snprintf(hp, sizeof(hp), "127.0.0.1:%d", port);
	capture_start(&saved, &f);
	assert_int_equal(rmca_connect(ctx, hp, 3000, &ep), RMCA_ERR_PROTOCOL);
	log = capture_end(saved, f);
	rmca_finalize(ctx);
	pthread_join(t, NULL);
	close(lfd);
	snprintf(want, sizeof(want), "protocol version %d, expected %d",
		 RMCA_WIRE_VERSION - 1, RMCA_WIRE_VERSION);
	if (!strstr(log, want))
		fail_msg("no reason logged: '%s'", log);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(listener_refuses_another_protocol_version),
		cmocka_unit_test(connect_refuses_a_listener_of_another_version),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
