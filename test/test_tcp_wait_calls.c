/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Over tcp, through the whole library: the first rmca_poll after a post
 * does not look at the fds (what was posted cannot be answered yet), the wait
 * fd still becomes readable when the answer comes, and a caller that posts
 * before every poll still has every other poll look at the fds. In a
 * request/response exchange of an application that sleeps on the wait fd,
 * neither side makes an epoll_ctl() or an epoll_wait(): the count of a
 * message waits for the answer while the message, read with MSG_PEEK,
 * keeps the wait fd readable, and a woken poll reads the connection found
 * ready last before asking epoll (RMCA_FD_EAGER). When no answer comes the
 * wait fd wakes the receiver all the same, so the count goes and the send
 * completes. The test counts the library's epoll_wait(), epoll_ctl() and
 * socket reads by defining the functions itself: the executable's
 * definitions are the ones the library and its components bind to.
 */
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

#include "api_util.h"

#define TOKEN_DONE 0xd0e

#define ECHO_ROUNDS 64
#define ECHO_WARM   4

static long epoll_waits, epoll_ctls, reads;

int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	epoll_waits++;
	return epoll_pwait(epfd, ev, max, timeout, NULL);
}

int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	epoll_ctls++;
	return (int)syscall(SYS_epoll_ctl, epfd, op, fd, ev);
}

/* The tcp component reads its sockets with these (the test's pipes with
 * read()). */
ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	reads++;
	return (ssize_t)syscall(SYS_recvfrom, fd, buf, len, flags, NULL, NULL);
}

ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	reads++;
	return (ssize_t)syscall(SYS_recvmsg, fd, msg, flags);
}

/* The fds were looked at: epoll_wait(), or the eager read of the
 * connection found ready last (RMCA_FD_EAGER). */
static long looks(void)
{
	return epoll_waits + reads;
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
	int looked;
	rmca_mr_t *ms;

	API_CHECK_OK(rmca_mr_reg(p->ctx, src, 8, RMCA_ACCESS_LOCAL, &ms));

	/* post, poll: no look; the wait fd wakes the caller, and the next
	 * poll looks and finds the answer */
	API_CHECK_OK(API_POST(
		p, rmca_put(p->ep, src, 8, ms, addr, key, 0, API_CTX(1))));
	before = looks();
	API_CHECK(rmca_poll(p->ctx, &c, 1) == 0);
	API_CHECK_MSG(looks() == before,
		      "the poll right after a post made %ld epoll_wait() or "
		      "read",
		      looks() - before);
	API_CHECK_MSG(poll(&pf, 1, API_TIMEOUT_MS) == 1,
		      "the wait fd stayed silent after a poll that did not "
		      "look");
	poll_until(p, API_CTX(1));
	API_CHECK(looks() > before);

	/* without posts, every poll looks */
	for (int i = 0; i < 3; i++) {
		before = looks();
		API_CHECK(rmca_poll(p->ctx, &c, 1) == 0);
		API_CHECK_MSG(looks() > before, "poll %d did not look", i);
	}

	/* a post before every poll: every other poll still looks */
	looked = 0;
	for (int i = 0; i < 4; i++) {
		API_CHECK_OK(API_POST(p, rmca_put(p->ep, src, 8, ms, addr, key,
						  0, API_CTX(2 + i))));
		before = looks();
		API_CHECK(rmca_poll(p->ctx, &c, 1) >= 0);
		looked += looks() > before;
		if (c.user_ctx)
			memset(&c, 0, sizeof(c));
	}
	API_CHECK_MSG(looked == 2, "4 posts and polls, %d looked", looked);
	api_token(p, 0, TOKEN_DONE);
}

/*
 * Wait as an application that sleeps: one rmca_poll, and poll(2) on the
 * wait fd when it returned nothing, until the completion of ctx comes.
 */
static void sleep_until(struct api_peer *p, void *ctx)
{
	struct pollfd pf = {.fd = rmca_wait_fd(p->ctx), .events = POLLIN};
	struct rmca_completion c;
	long end = api_now_ms() + API_TIMEOUT_MS;

	while (!api_take(ctx, &c)) {
		API_CHECK_MSG(api_now_ms() < end, "no completion");
		if (!api_progress(p))
			API_CHECK_MSG(poll(&pf, 1, API_TIMEOUT_MS) == 1,
				      "the wait fd stayed silent");
	}
	API_CHECK_RC(c.status, RMCA_OK);
}

static void echo_server(struct api_peer *p)
{
	char *buf = api_alloc(64);
	struct pollfd pf = {.fd = rmca_wait_fd(p->ctx), .events = POLLIN};
	long ctls = 0, waits = 0;
	rmca_mr_t *mr;

	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 64, RMCA_ACCESS_LOCAL, &mr));
	API_CHECK_OK(rmca_recv(p->ep, buf, 8, mr, API_CTX(1)));
	api_token(p, 0, API_TOKEN_GO);
	for (int i = 0; i < ECHO_ROUNDS; i++) {
		if (i == ECHO_WARM) {
			ctls = epoll_ctls;
			waits = epoll_waits;
		}
		sleep_until(p, API_CTX(1));
		API_CHECK_OK(rmca_recv(p->ep, buf, 8, mr, API_CTX(1)));
		API_CHECK_OK(rmca_send(p->ep, buf + 32, 8, mr, API_CTX(2)));
		sleep_until(p, API_CTX(2));
	}
	API_CHECK_MSG(epoll_ctls == ctls && epoll_waits == waits,
		      "%d answered messages, %ld epoll_ctl(), %ld epoll_wait()",
		      ECHO_ROUNDS - ECHO_WARM, epoll_ctls - ctls,
		      epoll_waits - waits);

	/* No answer now: the wait fd still wakes this side, whose next
	 * poll lets the count go and the peer's send complete. */
	sleep_until(p, API_CTX(1));
	API_CHECK_MSG(poll(&pf, 1, API_TIMEOUT_MS) == 1,
		      "the wait fd stayed silent while a count was held");
	API_CHECK(api_progress(p) == 0);
	api_expect_token(p, 0, TOKEN_DONE);
}

static void echo_client(struct api_peer *p)
{
	char *buf = api_alloc(64);
	long ctls = 0, waits = 0;
	rmca_mr_t *mr;

	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 64, RMCA_ACCESS_LOCAL, &mr));
	api_expect_token(p, 0, API_TOKEN_GO);
	for (int i = 0; i < ECHO_ROUNDS; i++) {
		if (i == ECHO_WARM) {
			ctls = epoll_ctls;
			waits = epoll_waits;
		}
		API_CHECK_OK(rmca_recv(p->ep, buf, 8, mr, API_CTX(3)));
		API_CHECK_OK(rmca_send(p->ep, buf + 32, 8, mr, API_CTX(4)));
		sleep_until(p, API_CTX(4));
		sleep_until(p, API_CTX(3));
	}
	API_CHECK_MSG(epoll_ctls == ctls && epoll_waits == waits,
		      "%d answered messages, %ld epoll_ctl(), %ld epoll_wait()",
		      ECHO_ROUNDS - ECHO_WARM, epoll_ctls - ctls,
		      epoll_waits - waits);
	API_CHECK_OK(rmca_send(p->ep, buf + 32, 8, mr, API_CTX(5)));
	sleep_until(p, API_CTX(5));
	api_token(p, 0, TOKEN_DONE);
}

static void answered_messages_cost_no_epoll_calls(void **state)
{
	const struct api_test t = {.server = echo_server,
				   .client = echo_client};

	(void)state;
	setenv("RMCA_transports", "tcp", 1);
	unsetenv("RMCA_tcp_caps");
	api_run(&t);
}

/*
 * Echoes of every size while peeking: messages read whole into the read
 * buffer, cut across it (larger than it), and read straight into the
 * receive (TCP_RX_DIRECT and up), each answered, arrive byte for byte.
 */
#define ECHO_BUF (96 * 1024)
static const size_t echo_sizes[] = {8, 4096, 20000, 40000, 100, 70000, 1};
#define NSIZES (sizeof(echo_sizes) / sizeof(echo_sizes[0]))

static void size_server(struct api_peer *p)
{
	char *buf = api_alloc(ECHO_BUF);
	struct rmca_completion c;
	rmca_mr_t *mr;

	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, ECHO_BUF, RMCA_ACCESS_LOCAL, &mr));
	API_CHECK_OK(rmca_recv(p->ep, buf, ECHO_BUF, mr, API_CTX(1)));
	api_token(p, 0, API_TOKEN_GO);
	for (size_t i = 0; i < 4 * NSIZES; i++) {
		api_wait(p, API_CTX(1), &c);
		API_CHECK_RC(c.status, RMCA_OK);
		API_CHECK(c.len == echo_sizes[i % NSIZES]);
		API_CHECK_OK(rmca_send(p->ep, buf, c.len, mr, API_CTX(2)));
		api_wait_status(p, API_CTX(2), RMCA_OK);
		API_CHECK_OK(rmca_recv(p->ep, buf, ECHO_BUF, mr, API_CTX(1)));
	}
	api_expect_token(p, 0, TOKEN_DONE);
}

static void size_client(struct api_peer *p)
{
	char *out = api_alloc(ECHO_BUF), *in = api_alloc(ECHO_BUF);
	struct rmca_completion c;
	rmca_mr_t *mo, *mi;

	API_CHECK_OK(
		rmca_mr_reg(p->ctx, out, ECHO_BUF, RMCA_ACCESS_LOCAL, &mo));
	API_CHECK_OK(rmca_mr_reg(p->ctx, in, ECHO_BUF, RMCA_ACCESS_LOCAL, &mi));
	api_expect_token(p, 0, API_TOKEN_GO);
	for (size_t i = 0; i < 4 * NSIZES; i++) {
		size_t len = echo_sizes[i % NSIZES];

		api_pattern(out, len, (unsigned)i);
		memset(in, 0, len);
		API_CHECK_OK(rmca_recv(p->ep, in, ECHO_BUF, mi, API_CTX(3)));
		API_CHECK_OK(rmca_send(p->ep, out, len, mo, API_CTX(4)));
		api_wait_status(p, API_CTX(4), RMCA_OK);
		api_wait(p, API_CTX(3), &c);
		API_CHECK_RC(c.status, RMCA_OK);
		API_CHECK(c.len == len);
		API_CHECK_MSG(api_pattern_check(in, len, (unsigned)i) < 0,
			      "echo %zu of %zu bytes differs at %ld", i, len,
			      api_pattern_check(in, len, (unsigned)i));
	}
	api_token(p, 0, TOKEN_DONE);
}

static void answered_messages_of_every_size_arrive_whole(void **state)
{
	const struct api_test t = {.server = size_server,
				   .client = size_client};

	(void)state;
	setenv("RMCA_transports", "tcp", 1);
	unsetenv("RMCA_tcp_caps");
	api_run(&t);
}

static void first_poll_after_a_post_does_not_look(void **state)
{
	const struct api_test t = {.server = target, .client = initiator};

	(void)state;
	setenv("RMCA_transports", "tcp", 1);
	unsetenv("RMCA_tcp_caps");
	api_run(&t);
}

/*
 * A target that sleeps on the wait fd serves each put and fetch-add with
 * the eager read alone: the request makes no completion there, but the
 * module says its fd callback found work (RMCA_PROGRESS_SERVED), so the
 * poll does not go on to an epoll_wait() that would find nothing. An
 * initiator spinning idle on its one connection reads it at every poll,
 * and asks epoll_wait() at most every few polls.
 */
#define SERVE_ROUNDS 64
#define SERVE_WARM   4
#define IDLE_POLLS   64

static void serving_target(struct api_peer *p)
{
	volatile uint64_t *tgt = api_alloc(64);
	struct pollfd pf = {.fd = rmca_wait_fd(p->ctx), .events = POLLIN};
	long end = api_now_ms() + API_TIMEOUT_MS;
	long waits = -1, reads_at = 0, served = 0;
	rmca_mr_t *mr;

	API_CHECK_OK(rmca_mr_reg(
		p->ctx, (void *)tgt, 64,
		RMCA_ACCESS_REMOTE_WRITE | RMCA_ACCESS_REMOTE_ATOMIC, &mr));
	api_put_u64(p, 0, (uintptr_t)tgt);
	api_put_u64(p, 0, rmca_mr_rkey(mr, p->ep));
	/* tgt[0]: the puts (each writes its count), tgt[1]: the fetch-adds */
	while (tgt[1] < SERVE_ROUNDS / 2) {
		API_CHECK_MSG(api_now_ms() < end, "the requests stopped");
		if (waits < 0 && tgt[1] >= SERVE_WARM) {
			waits = epoll_waits;
			reads_at = reads;
			served = (long)tgt[0] + (long)tgt[1];
		}
		API_CHECK_MSG(poll(&pf, 1, API_TIMEOUT_MS) == 1,
			      "the wait fd stayed silent");
		API_CHECK(api_progress(p) == 0);
	}
	served = (long)tgt[0] + (long)tgt[1] - served;
	API_CHECK_MSG(epoll_waits == waits,
		      "%ld requests served, %ld epoll_wait() and %ld reads",
		      served, epoll_waits - waits, reads - reads_at);
	api_expect_token(p, 0, TOKEN_DONE);
}

static void requesting_initiator(struct api_peer *p)
{
	uint64_t *src = api_alloc(16);
	uint64_t addr = api_get_u64(p, 0), key = api_get_u64(p, 0);
	struct rmca_atomic op = {.kind = RMCA_ATOMIC_FADD,
				 .raddr = addr + 8,
				 .rkey = key,
				 .operand = 1};
	struct rmca_completion c;
	long waits;
	rmca_mr_t *ms;

	API_CHECK_OK(rmca_mr_reg(p->ctx, src, 16, RMCA_ACCESS_LOCAL, &ms));
	for (uint64_t i = 0; i < SERVE_ROUNDS; i++) {
		if (i % 2 == 0) {
			src[0] = i / 2 + 1;
			API_CHECK_OK(
				API_POST(p, rmca_put(p->ep, src, 8, ms, addr,
						     key, 0, API_CTX(1))));
			api_wait_status(p, API_CTX(1), RMCA_OK);
		} else {
			API_CHECK_OK(
				API_POST(p, rmca_atomic(p->ep, &op, src + 1, ms,
							API_CTX(2))));
			api_wait_status(p, API_CTX(2), RMCA_OK);
			API_CHECK(src[1] == i / 2);
		}
	}

	/* Spinning idle on its one connection, a poll's look at the fds is
	 * mostly the eager read alone (before: and an epoll_wait() each). */
	waits = epoll_waits;
	for (int i = 0; i < IDLE_POLLS; i++)
		API_CHECK(rmca_poll(p->ctx, &c, 1) == 0);
	API_CHECK_MSG((epoll_waits - waits) * 4 <= IDLE_POLLS,
		      "%d idle polls, %ld epoll_wait()", IDLE_POLLS,
		      epoll_waits - waits);
	api_token(p, 0, TOKEN_DONE);
}

static void a_sleeping_target_serves_requests_without_epoll(void **state)
{
	const struct api_test t = {.server = serving_target,
				   .client = requesting_initiator};

	(void)state;
	setenv("RMCA_transports", "tcp", 1);
	unsetenv("RMCA_tcp_caps");
	api_run(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(first_poll_after_a_post_does_not_look),
		cmocka_unit_test(answered_messages_cost_no_epoll_calls),
		cmocka_unit_test(answered_messages_of_every_size_arrive_whole),
		cmocka_unit_test(
			a_sleeping_target_serves_requests_without_epoll),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
