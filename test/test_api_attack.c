/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A listener under attack from a peer that speaks the wire by hand (the
 * bootstrap hello and the tcp data port's frames): each case replays a
 * sequence that once crashed or stalled a listener, then a real client
 * must still be served. tcp only (the frames are tcp's).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "api_util.h"
#include "attack_util.h"

#define TOKEN_DONE 0xd0e
#define ATOMIC_CPU 2 /* RMCA_atomic_mode=cpu, set for both sides below */

/* The real client, after the attack: it says hello, hears world. */
static void real_client(struct api_peer *p, int port)
{
	uint8_t *buf = api_alloc(64);
	char hp[128];
	rmca_mr_t *mr;

	API_CHECK_OK(rmca_init(&p->ctx));
	api_host_port(hp, sizeof(hp), api_host(), port);
	API_CHECK_OK(rmca_connect(p->ctx, hp, API_TIMEOUT_MS, &p->ep));
	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 64, RMCA_ACCESS_LOCAL, &mr));
	API_CHECK_OK(rmca_recv(p->ep, buf + 32, 32, mr, API_CTX(1)));
	memcpy(buf, "hello", 6);
	api_send_wait(p, p->ep, buf, 6, mr);
	api_wait_status(p, API_CTX(1), RMCA_OK);
	API_CHECK(memcmp(buf + 32, "world", 6) == 0);
	api_token(p, 0, TOKEN_DONE);
}

/*
 * The server: accepts until it has served `real` real clients (an endpoint
 * that says hello); endpoints the attacker completes are closed.
 */
static void serve(struct api_peer *p)
{
	uint8_t *buf = api_alloc(64);
	long end = api_now_ms() + API_RUN_TIMEOUT_MS;
	rmca_mr_t *mr;
	int rc;

	api_server_listen(p, api_host());
	api_put_u64(p, 0, (uint64_t)rmca_listener_port(p->l));
	api_put_u64(p, 0, (uint64_t)getpid());
	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 64, RMCA_ACCESS_LOCAL, &mr));
	for (;;) {
		rmca_ep_t *ep = NULL;
		struct rmca_completion c;

		rc = rmca_accept(p->l, 200, &ep);
		API_CHECK_MSG(rc == RMCA_OK || rc == RMCA_ERR_PROTOCOL ||
				      rc == RMCA_ERR_TIMEOUT ||
				      rc == RMCA_ERR_CONNECTION,
			      "rmca_accept returned %d (%s)", rc,
			      api_strerror(rc));
		API_CHECK_MSG(api_now_ms() < end,
			      "the real client was never served");
		if (rc)
			continue;
		/* The attacker's endpoints never send; the real one does. */
		API_CHECK_OK(rmca_recv(ep, buf, 64, mr, API_CTX(7)));
		api_wait(p, API_CTX(7), &c);
		if (c.status) {
			rmca_ep_close(ep);
			continue;
		}
		API_CHECK(c.len == 6 && !memcmp(buf, "hello", 6));
		memcpy(buf, "world", 6);
		api_send_wait(p, ep, buf, 6, mr);
		break;
	}
	api_expect_token(p, 0, TOKEN_DONE);
}

/*
 * Issue 7.1: while a handshake waits for its data connection, socket A
 * connects, socket B connects and parks under token X, then B sends one
 * byte more and A sends a hello with X, both seen in one wakeup: reading A
 * evicted B, which was then read (and freed) again.
 */
static void superseded_client(struct api_peer *p)
{
	const uint64_t t = 0x7e57ab1e0001ull, x = t + 1;
	int port = api_client_read_port(p);
	pid_t server = (pid_t)api_get_u64(p, 0);
	struct rmca_hello answer;
	int bfd, a, b, c, dport;

	bfd = atk_connect(api_host(), port);
	API_CHECK(!atk_hello(bfd, t, RMCA_ROLE_ACTIVE, ATOMIC_CPU, &answer));
	dport = atk_data_port(&answer);
	a = atk_connect(api_host(), dport);
	b = atk_connect(api_host(), dport);
	api_sleep_ms(100);
	atk_frame_hello(b, x);
	api_sleep_ms(100);
	atk_stop(server);
	atk_write(b, "!", 1);
	atk_frame_hello(a, x);
	atk_cont(server);
	api_sleep_ms(100);
	/* The handshake the server waits for, completed: it must be alive. */
	c = atk_connect(api_host(), dport);
	atk_frame_hello(c, t);
	atk_frame_ack(c, t);
	close(a);
	close(b);
	close(c);
	close(bfd);
	real_client(p, port);
}

static void test_superseded_pending_socket(void **state)
{
	const struct api_test t = {
		.server = serve, .client = superseded_client, .manual = true};

	(void)state;
	api_run(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_superseded_pending_socket),
	};

	setenv("RMCA_transports", "tcp", 1);
	setenv("RMCA_atomic_mode", "cpu", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
