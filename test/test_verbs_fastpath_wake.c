/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Who the completion channel is armed for, on a real device (rxe0, siw0)
 * inside the VM. A verbs module arms its CQ (ibv_req_notify_cq, and the
 * event taken before, ibv_get_cq_event: a system call each on rxe and
 * siw) only when somebody may sleep in the context's epoll set:
 *  - a ping-pong whose both sides spin on rmca_poll and never ask for the
 *    wait fd takes no completion channel event and arms no CQ, however
 *    quiet the CQ gets between messages (RMCA_*_idle_us=0: before, each
 *    side did both once per message);
 *  - the same context, once it asks for the wait fd, sleeps on it in
 *    poll() with no timeout that matters and is woken by a message the
 *    peer sends only later, after few empty wakeups (a module that left
 *    its CQ unarmed would leave it asleep; one that never armed it again
 *    would return it at once for ever);
 *  - a context that spun that way and never asked for the fd sleeps in a
 *    blocking rmca_accept (the core arms before it sleeps itself) and is
 *    woken by the second connection's events: a few epoll_wait calls, not
 *    a spin through the 200 ms before the peer connects.
 *
 * verbs_interpose.c's ibv_get_cq_event, ibv_open_device (its contexts'
 * req_notify_cq, patched here, counts armings) and epoll_wait come first
 * in the lookup scope (it is linked -rdynamic): the components and the
 * core call these, which count, then the real ones. No side uses the
 * harness's pipe waits that progress the context (they sleep on the wait
 * fd) until the case allows it: the set-up is done here and tokens are
 * awaited deaf.
 *
 * Device from RMCA_transports (ib or iwarp), address from RMCATEST_HOST.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "api_util.h"
#include "verbs_interpose.h"

#define PINGS	    100
#define WARMUP	    4
#define TOKEN_SLEEP 0x51ee9u /* the server sleeps from now on */
#define TOKEN_DONE  0xd0e
/* Empty returns of the wait fd allowed while the server sleeps: the
 * first sleep after rmca_wait_fd returns at once (the fd is left readable
 * once), and internal completions (a READ retiring unsignalled sends) may
 * each wake it once. A CQ never armed again returns it thousands of
 * times before the message comes. */
#define MAX_EMPTY_WAKES 16
/* epoll_wait calls allowed in the blocking rmca_accept: its 100 ms
 * slices and one per event of the handshake; spinning through the
 * PEER_DELAY_MS before the peer connects makes thousands. */
#define MAX_ACCEPT_EPOLLS 100
#define PEER_DELAY_MS	  200

/* CQ armings, counted while vi_counting is set (verbs_interpose.h) */
static long arms;

static int counted_req_notify_cq(struct ibv_cq *cq, int solicited)
{
	arms += vi_counting;
	return vi_real_ops(cq->context)->req_notify_cq(cq, solicited);
}

void vi_patch_ops(struct ibv_context_ops *ops)
{
	ops->req_notify_cq = counted_req_notify_cq;
}

static const char *side(const struct api_peer *p)
{
	return p->is_server ? "server" : "client";
}

/* Set-up without the harness's progressing pipe waits: the server
 * listens, writes its port and accepts (blocking: the core sleeps); the
 * client reads the port before it has a context. */
static char server_hp[128]; /* client: the server's host:port */

static void setup(struct api_peer *p)
{
	if (p->is_server) {
		api_server_listen(p, api_host());
		api_server_accept_all(p);
		return;
	}
	api_host_port(server_hp, sizeof(server_hp), api_host(),
		      api_client_read_port(p));
	API_CHECK_OK(rmca_init(&p->ctx));
	API_CHECK_OK(rmca_connect(p->ctx, server_hp, API_TIMEOUT_MS, &p->ep));
}

/* Both sides done with the endpoint before either closes it. */
static void finish(struct api_peer *p)
{
	if (p->is_server) {
		api_token(p, 0, TOKEN_DONE);
		api_expect_token_deaf(p, 0, TOKEN_DONE);
	} else {
		api_expect_token_deaf(p, 0, TOKEN_DONE);
		api_token(p, 0, TOKEN_DONE);
	}
	rmca_ep_close(p->ep);
	if (p->l)
		rmca_listener_close(p->l);
	rmca_finalize(p->ctx);
	p->ctx = NULL;
}

/* Spin on rmca_poll until ctx completes (RMCA_OK). */
static void spin_wait(struct api_peer *p, void *ctx)
{
	struct rmca_completion c;
	long end = api_now_ms() + API_TIMEOUT_MS;
	long polls = 0;

	while (!api_take(ctx, &c)) {
		api_progress(p);
		if (!(++polls & 0xfff))
			API_CHECK_MSG(api_now_ms() < end,
				      "%s: ctx %p never came", side(p), ctx);
	}
	API_CHECK_MSG(c.status == RMCA_OK, "%s: ctx %p: %s", side(p), ctx,
		      api_strerror(c.status));
}

/* A spinning ping-pong of PINGS round trips after WARMUP, counted; the
 * sends complete before it returns. buf: 64 bytes in mr. */
static void spin_ping_pong(struct api_peer *p, uint8_t *buf, rmca_mr_t *mr)
{
	for (int i = 0; i < PINGS + WARMUP; i++) {
		if (i == WARMUP) {
			vi_cq_events = arms = vi_epolls = 0;
			vi_counting = true;
		}
		API_CHECK_OK(rmca_recv(p->ep, buf + 32, 8, mr, API_CTX(1)));
		if (!p->is_server)
			API_CHECK_OK(rmca_send(p->ep, buf, 8, mr, API_CTX(2)));
		spin_wait(p, API_CTX(1));
		if (p->is_server)
			API_CHECK_OK(rmca_send(p->ep, buf, 8, mr, API_CTX(2)));
		spin_wait(p, API_CTX(2));
	}
	vi_counting = false;
}

/* Every quiet pass may arm at once: the CQ goes quiet between messages,
 * and a sleeper's CQ is armed at its first quiet pass. */
static bool idle_is_zero;

static void idle_zero(void)
{
	setenv("RMCA_ib_idle_us", "0", 1);
	setenv("RMCA_iwarp_idle_us", "0", 1);
	idle_is_zero = true;
}

/* With an idle time, a sleeper returns at once and polls until the module
 * was quiet that long (at least QUIET_CLOCK_EVERY passes): its empty
 * wakeups are not counted then. */
static void idle_default(void)
{
	unsetenv("RMCA_ib_idle_us");
	unsetenv("RMCA_iwarp_idle_us");
	idle_is_zero = false;
}

/* ---- a spinner that never asked for the fd arms nothing ---- */

static void spinner(struct api_peer *p)
{
	uint8_t *buf = api_alloc(64);
	rmca_mr_t *mr;

	setup(p);
	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 64, RMCA_ACCESS_LOCAL, &mr));
	spin_ping_pong(p, buf, mr);
	API_CHECK_MSG(vi_cq_events == 0 && arms == 0,
		      "%s: %ld completion channel events taken and %ld CQ "
		      "armings in %d round trips spinning, with no wait fd "
		      "asked for",
		      side(p), vi_cq_events, arms, PINGS);
	API_CHECK_OK(rmca_mr_dereg(mr));
	finish(p);
	free(buf);
}

static void test_spinner_without_wait_fd_arms_no_cq(void **state)
{
	const struct api_test t = {
		.server = spinner, .client = spinner, .manual = true};

	(void)state;
	idle_zero(); /* each case sets its own: a failed one returns early */
	api_run(&t);
}

/* ---- then it sleeps on the fd and is woken ---- */

static void sleeper_server(struct api_peer *p)
{
	uint8_t *buf = api_alloc(64);
	struct rmca_completion c;
	long empty = 0, sleeps = 0;
	struct pollfd pf;
	rmca_mr_t *mr;

	setup(p);
	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 64, RMCA_ACCESS_LOCAL, &mr));
	spin_ping_pong(p, buf, mr);
	/* From now on the application may sleep on the fd. */
	pf = (struct pollfd){.fd = rmca_wait_fd(p->ctx), .events = POLLIN};
	API_CHECK(pf.fd >= 0);
	API_CHECK_OK(rmca_recv(p->ep, buf + 32, 8, mr, API_CTX(3)));
	api_token(p, 0, TOKEN_SLEEP);
	while (!api_take(API_CTX(3), &c)) {
		int n = poll(&pf, 1, API_TIMEOUT_MS);

		sleeps++;
		API_CHECK_MSG(n == 1,
			      "asleep on the wait fd for %d ms, the message "
			      "sent %d ms after the sleep began never woke it "
			      "(%ld sleeps, %ld empty)",
			      API_TIMEOUT_MS, PEER_DELAY_MS, sleeps, empty);
		if (!api_progress(p))
			empty++;
		API_CHECK_MSG(!idle_is_zero || empty <= MAX_EMPTY_WAKES,
			      "the wait fd returned %ld times with nothing to "
			      "take while the server waited for one message: "
			      "the CQ was not armed again",
			      empty);
	}
	API_CHECK_MSG(c.status == RMCA_OK && c.len == 8, "receive: %s, %zu",
		      api_strerror(c.status), c.len);
	API_CHECK_OK(rmca_mr_dereg(mr));
	finish(p);
	free(buf);
}

static void sleeper_client(struct api_peer *p)
{
	uint8_t *buf = api_alloc(64);
	rmca_mr_t *mr;

	setup(p);
	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 64, RMCA_ACCESS_LOCAL, &mr));
	spin_ping_pong(p, buf, mr);
	api_expect_token_deaf(p, 0, TOKEN_SLEEP);
	/* the server is asleep by then (if not, it finds the message) */
	api_sleep_ms(PEER_DELAY_MS);
	API_CHECK_OK(rmca_send(p->ep, buf, 8, mr, API_CTX(4)));
	spin_wait(p, API_CTX(4));
	API_CHECK_OK(rmca_mr_dereg(mr));
	finish(p);
	free(buf);
}

static void test_sleeper_after_spinning_is_woken(void **state)
{
	const struct api_test t = {.server = sleeper_server,
				   .client = sleeper_client,
				   .manual = true};

	(void)state;
	idle_zero(); /* each case sets its own: a failed one returns early */
	api_run(&t);
}

/* The same with the default idle time: the CQ is armed once the module
 * was quiet that long, and the sleeper is woken all the same (the empty
 * wakeups before are not counted: idle_default). */
static void test_sleeper_after_spinning_is_woken_idle(void **state)
{
	const struct api_test t = {.server = sleeper_server,
				   .client = sleeper_client,
				   .manual = true};

	(void)state;
	idle_default();
	api_run(&t);
}

/* ---- a blocking call after spinning sleeps, and is woken ---- */

static void accept_server(struct api_peer *p)
{
	uint8_t *buf = api_alloc(64);
	rmca_ep_t *ep2 = NULL;
	rmca_mr_t *mr;

	setup(p);
	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 64, RMCA_ACCESS_LOCAL, &mr));
	spin_ping_pong(p, buf, mr);
	api_token(p, 0, TOKEN_SLEEP);
	vi_epolls = 0;
	vi_counting = true;
	API_CHECK_OK(rmca_accept(p->l, API_TIMEOUT_MS, &ep2));
	vi_counting = false;
	API_CHECK_MSG(vi_epolls <= MAX_ACCEPT_EPOLLS,
		      "a blocking rmca_accept, its peer connecting %d ms "
		      "later, called epoll_wait %ld times: it spun",
		      PEER_DELAY_MS, vi_epolls);
	/* the new endpoint works */
	API_CHECK_OK(rmca_recv(ep2, buf + 32, 8, mr, API_CTX(5)));
	api_token(p, 0, TOKEN_SLEEP);
	spin_wait(p, API_CTX(5));
	/* not before the client's send completed: on iWARP its completion
	 * waits for the READ that confirms it, which a closed endpoint
	 * leaves unanswered (the send then completes as on a lost
	 * connection, delivered or not) */
	api_expect_token(p, 0, TOKEN_DONE);
	rmca_ep_close(ep2);
	API_CHECK_OK(rmca_mr_dereg(mr));
	finish(p);
	free(buf);
}

static void accept_client(struct api_peer *p)
{
	uint8_t *buf = api_alloc(64);
	rmca_ep_t *ep2 = NULL;
	rmca_mr_t *mr;

	setup(p);
	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 64, RMCA_ACCESS_LOCAL, &mr));
	spin_ping_pong(p, buf, mr);
	api_expect_token_deaf(p, 0, TOKEN_SLEEP);
	api_sleep_ms(PEER_DELAY_MS);
	API_CHECK_OK(rmca_connect(p->ctx, server_hp, API_TIMEOUT_MS, &ep2));
	api_expect_token_deaf(p, 0, TOKEN_SLEEP);
	API_CHECK_OK(rmca_send(ep2, buf, 8, mr, API_CTX(6)));
	spin_wait(p, API_CTX(6));
	api_token(p, 0, TOKEN_DONE);
	rmca_ep_close(ep2);
	API_CHECK_OK(rmca_mr_dereg(mr));
	finish(p);
	free(buf);
}

static void test_blocking_accept_after_spinning_sleeps(void **state)
{
	const struct api_test t = {.server = accept_server,
				   .client = accept_client,
				   .manual = true};

	(void)state;
	idle_zero(); /* each case sets its own: a failed one returns early */
	api_run(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spinner_without_wait_fd_arms_no_cq),
		cmocka_unit_test(test_sleeper_after_spinning_is_woken),
		cmocka_unit_test(test_sleeper_after_spinning_is_woken_idle),
		cmocka_unit_test(test_blocking_accept_after_spinning_sleeps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
