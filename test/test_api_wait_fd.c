/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Contract: rmca_wait_fd becomes readable when rmca_poll may return
 * something. Each client here sleeps in poll(2) on that fd alone and calls
 * rmca_poll only when it is readable: if the fd stayed quiet, the
 * completion would never come and the test would time out.
 */
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "api_util.h"

#define TOKEN_GO   0x60
#define TOKEN_DONE 0xd0e

/* Nothing pending: rmca_poll returns 0 now. */
static void drain(struct api_peer *p)
{
	api_progress_for(p, 20);
	API_CHECK_MSG(api_stashed() == 0, "unexpected completion");
}

static void wait_by_fd(struct api_peer *p, void *uc, int want_status)
{
	int fd = rmca_wait_fd(p->ctx);
	long end = api_now_ms() + 3000;
	struct rmca_completion c;

	API_CHECK_MSG(fd >= 0, "rmca_wait_fd: %d", fd);
	API_CHECK(rmca_wait_fd(p->ctx) == fd);
	for (;;) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		long left = end - api_now_ms();
		int n;

		API_CHECK_MSG(
			left > 0,
			"wait fd not readable although a completion is due");
		n = poll(&pf, 1, (int)left);
		if (n <= 0)
			continue;
		memset(&c, 0, sizeof(c));
		n = rmca_poll(p->ctx, &c, 1);
		API_CHECK(n >= 0);
		if (n == 1)
			break;
	}
	API_CHECK_MSG(c.user_ctx == uc, "completion for %p, expected %p",
		      c.user_ctx, uc);
	API_CHECK_MSG(c.status == want_status, "status %d (%s)", c.status,
		      api_strerror(c.status));
}

/* ---- a message arrives ---- */

static void msg_server(struct api_peer *p)
{
	uint8_t *buf = api_alloc(64);
	rmca_mr_t *mr;

	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 64, RMCA_ACCESS_LOCAL, &mr));
	api_expect_token(p, 0, TOKEN_GO);
	api_progress_for(p, 100);
	api_send_wait(p, p->ep, buf, 64, mr);
	api_expect_token(p, 0, TOKEN_DONE);
}

static void msg_client(struct api_peer *p)
{
	uint8_t *buf = api_alloc(64);
	rmca_mr_t *mr;

	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 64, RMCA_ACCESS_LOCAL, &mr));
	API_CHECK_OK(rmca_recv(p->ep, buf, 64, mr, API_CTX(1)));
	drain(p);
	api_token(p, 0, TOKEN_GO);
	wait_by_fd(p, API_CTX(1), RMCA_OK);
	api_token(p, 0, TOKEN_DONE);
}

static void test_wait_fd_readable_when_message_arrives(void **state)
{
	const struct api_test t = {.server = msg_server, .client = msg_client};

	(void)state;
	api_run(&t);
}

/* ---- a put is acknowledged ---- */

static void put_server(struct api_peer *p)
{
	uint8_t *mem = api_alloc(4096);
	rmca_mr_t *mr;

	API_CHECK_OK(
		rmca_mr_reg(p->ctx, mem, 4096, RMCA_ACCESS_REMOTE_WRITE, &mr));
	api_put_region(p, 0, mem, 4096, mr, p->ep);
	api_expect_token(p, 0, TOKEN_DONE);
	API_CHECK(api_pattern_check(mem, 4096, 61) < 0);
}

static void put_client(struct api_peer *p)
{
	uint8_t *src = api_alloc(4096);
	struct api_region r;
	rmca_mr_t *mr;

	api_get_region(p, 0, &r);
	API_CHECK_OK(rmca_mr_reg(p->ctx, src, 4096, RMCA_ACCESS_LOCAL, &mr));
	api_pattern(src, 4096, 61);
	drain(p);
	API_CHECK_OK(rmca_put(p->ep, src, 4096, mr, r.addr, r.rkey,
			      RMCA_DELIVERED, API_CTX(1)));
	wait_by_fd(p, API_CTX(1), RMCA_OK);
	api_token(p, 0, TOKEN_DONE);
}

static void test_wait_fd_readable_when_put_completes(void **state)
{
	const struct api_test t = {.server = put_server, .client = put_client};

	(void)state;
	api_run(&t);
}

/* ---- a completion made locally: ep_close's cancel ---- */

static void cancel_server(struct api_peer *p)
{
	api_expect_token(p, 0, TOKEN_DONE);
}

static void cancel_client(struct api_peer *p)
{
	uint8_t *buf = api_alloc(64);
	rmca_mr_t *mr;

	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 64, RMCA_ACCESS_LOCAL, &mr));
	API_CHECK_OK(rmca_recv(p->ep, buf, 64, mr, API_CTX(1)));
	drain(p);
	rmca_ep_close(p->ep);
	p->ep = NULL;
	wait_by_fd(p, API_CTX(1), RMCA_ERR_CANCELED);
	api_token(p, 0, TOKEN_DONE);
}

static void test_wait_fd_readable_after_ep_close(void **state)
{
	const struct api_test t = {.server = cancel_server,
				   .client = cancel_client};

	(void)state;
	api_run(&t);
}

/* ---- completions left behind by rmca_poll keep the fd readable ---- */

#define NMSG	   3
#define TOKEN_SENT 0x5e7

static bool readable_now(struct api_peer *p)
{
	struct pollfd pf = {.fd = rmca_wait_fd(p->ctx), .events = POLLIN};

	return poll(&pf, 1, 0) == 1;
}

static void left_server(struct api_peer *p)
{
	uint8_t *buf = api_alloc(64);
	rmca_mr_t *mr;
	int i;

	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 64, RMCA_ACCESS_LOCAL, &mr));
	api_expect_token(p, 0, TOKEN_GO);
	for (i = 0; i < NMSG; i++)
		API_CHECK_OK(API_POST(
			p, rmca_send(p->ep, buf, 64, mr, API_CTX(10 + i))));
	/* A send completes once its message is in the client's receive:
	 * the client's rmca_poll calls have queued its completions. */
	for (i = 0; i < NMSG; i++)
		api_wait_status(p, API_CTX(10 + i), RMCA_OK);
	api_token(p, 0, TOKEN_SENT);
	api_expect_token(p, 0, TOKEN_DONE);
}

static void left_client(struct api_peer *p)
{
	uint8_t *buf = api_alloc(NMSG * 64);
	struct pollfd pf = {.fd = p->link[0].rd, .events = POLLIN};
	long end = api_now_ms() + API_TIMEOUT_MS;
	struct rmca_completion c;
	rmca_mr_t *mr;
	uint64_t v;
	int i;

	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, NMSG * 64, RMCA_ACCESS_LOCAL, &mr));
	for (i = 0; i < NMSG; i++)
		API_CHECK_OK(
			rmca_recv(p->ep, buf + i * 64, 64, mr, API_CTX(1 + i)));
	drain(p);
	api_token(p, 0, TOKEN_GO);
	/* Progress without taking anything (max 0) until the server saw
	 * every message placed: the receives completed inside these calls. */
	while (poll(&pf, 1, 1) == 0) { /* a short nap: the device needs CPU */
		API_CHECK_MSG(api_now_ms() < end, "no word from the server");
		API_CHECK(rmca_poll(p->ctx, &c, 0) == 0);
	}
	API_CHECK(read(pf.fd, &v, sizeof(v)) == sizeof(v) && v == TOKEN_SENT);
	for (i = 0; i < NMSG; i++) {
		API_CHECK_MSG(
			readable_now(p),
			"%d completions wait, the wait fd is not readable",
			NMSG - i);
		API_CHECK(rmca_poll(p->ctx, &c, 1) == 1);
		API_CHECK(c.user_ctx == API_CTX(1 + i) && c.status == RMCA_OK);
	}
	api_token(p, 0, TOKEN_DONE);
}

static void test_wait_fd_readable_while_completions_wait(void **state)
{
	const struct api_test t = {.server = left_server,
				   .client = left_client};

	(void)state;
	api_run(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wait_fd_readable_when_message_arrives),
		cmocka_unit_test(test_wait_fd_readable_when_put_completes),
		cmocka_unit_test(test_wait_fd_readable_after_ep_close),
		cmocka_unit_test(test_wait_fd_readable_while_completions_wait),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
