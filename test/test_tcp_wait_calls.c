/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Over tcp, through the whole library: the first rmca_poll after a post
 * makes no epoll_wait() (what was posted cannot be answered yet), the wait
 * fd still becomes readable when the answer comes, and a caller that posts
 * before every poll still has every other poll look at the fds. The test
 * counts the library's epoll_wait() calls by defining the function itself:
 * the executable's definition is the one the library binds to.
 */
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include <setjmp.h>
#include <cmocka.h>

#include "api_util.h"

#define TOKEN_DONE 0xd0e

static long epoll_waits;

int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	epoll_waits++;
	return epoll_pwait(epfd, ev, max, timeout, NULL);
}

static void target(struct api_peer *p)
{
	uint64_t *tgt = api_alloc(64);
	rmca_mr_t *mr;

	API_CHECK_OK(
		rmca_mr_reg(p->ctx, tgt, 64, RMCA_ACCESS_REMOTE_WRITE, &mr));
	api_put_u64(p, 0, (uintptr_t)tgt);
	api_put_u64(p, 0, rmca_mr_rkey(mr, p->ep));
	api_expect_token(p, 0, TOKEN_DONE);
}

/* Poll until the completion of ctx comes; returns the polls it took. */
static int poll_until(struct api_peer *p, void *ctx)
{
	struct rmca_completion c;
	long end = api_now_ms() + API_TIMEOUT_MS;
	int polls = 0;

	for (;;) {
		int n = rmca_poll(p->ctx, &c, 1);

		polls++;
		API_CHECK_MSG(n >= 0, "rmca_poll: %s", api_strerror(n));
		if (n == 1) {
			API_CHECK(c.user_ctx == ctx);
			API_CHECK_RC(c.status, RMCA_OK);
			return polls;
		}
		API_CHECK_MSG(api_now_ms() < end, "no completion");
	}
}

static void initiator(struct api_peer *p)
{
	uint64_t *src = api_alloc(8);
	uint64_t addr = api_get_u64(p, 0), key = api_get_u64(p, 0);
	struct pollfd pf = {.fd = rmca_wait_fd(p->ctx), .events = POLLIN};
	struct rmca_completion c;
	long before;
	rmca_mr_t *ms;

	API_CHECK_OK(rmca_mr_reg(p->ctx, src, 8, RMCA_ACCESS_LOCAL, &ms));

	/* post, poll: no epoll_wait; the wait fd wakes the caller, and the
	 * next poll looks and finds the answer */
	API_CHECK_OK(API_POST(
		p, rmca_put(p->ep, src, 8, ms, addr, key, 0, API_CTX(1))));
	before = epoll_waits;
	API_CHECK(rmca_poll(p->ctx, &c, 1) == 0);
	API_CHECK_MSG(epoll_waits == before,
		      "the poll right after a post made %ld epoll_wait()",
		      epoll_waits - before);
	API_CHECK_MSG(poll(&pf, 1, API_TIMEOUT_MS) == 1,
		      "the wait fd stayed silent after a poll that did not "
		      "look");
	poll_until(p, API_CTX(1));
	API_CHECK(epoll_waits > before);

	/* without posts, every poll looks */
	before = epoll_waits;
	for (int i = 0; i < 3; i++)
		API_CHECK(rmca_poll(p->ctx, &c, 1) == 0);
	API_CHECK_MSG(epoll_waits - before == 3, "3 polls, %ld epoll_wait()",
		      epoll_waits - before);

	/* a post before every poll: every other poll still looks */
	before = epoll_waits;
	for (int i = 0; i < 4; i++) {
		API_CHECK_OK(API_POST(p, rmca_put(p->ep, src, 8, ms, addr, key,
						  0, API_CTX(2 + i))));
		API_CHECK(rmca_poll(p->ctx, &c, 1) >= 0);
		if (c.user_ctx)
			memset(&c, 0, sizeof(c));
	}
	API_CHECK_MSG(epoll_waits - before == 2,
		      "4 posts and polls, %ld epoll_wait()",
		      epoll_waits - before);
	api_token(p, 0, TOKEN_DONE);
}

static void first_poll_after_a_post_does_not_look(void **state)
{
	const struct api_test t = {.server = target, .client = initiator};

	(void)state;
	setenv("RMCA_transports", "tcp", 1);
	unsetenv("RMCA_tcp_caps");
	api_run(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(first_poll_after_a_post_does_not_look),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
