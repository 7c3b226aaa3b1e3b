// SPDX-License-Identifier: BSD-3-Clause
/*
 * The peer dies with every kind of operation outstanding on the control
 * channel: atomics its core executes (sent, and one held behind a put's
 * flush), a send_inv by revoke message waiting for its ack and a send held
 * behind it. Each completes exactly once, RMCA_ERR_CONNECTION (the put
 * too), within a number of event-loop passes that each wait for an event
 * (the wait a hang detector, not a measure), and nothing else completes.
 * (The gets the peer's core answers: test_api_get_short.)
 */
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "api_util.h"

#define LEN	 4096
#define NATOMIC	 8
#define PASSES	 256
#define T_POSTED 0x905ed
/* ctx: 1..NATOMIC atomics sent, then these */
#define C_PUT  (NATOMIC + 1)
#define C_HELD (NATOMIC + 2) /* an atomic behind the put's flush */
#define C_INV  (NATOMIC + 3) /* send_inv waiting for its ack */
#define C_SEND (NATOMIC + 4) /* a send held behind it */
#define NCTX   (NATOMIC + 4)

static void dying(struct api_peer *p)
{
	uint64_t *w = api_alloc(LEN), *u = api_alloc(LEN);
	rmca_mr_t *mr, *umr;

	API_CHECK_OK(rmca_mr_reg(
		p->ctx, w, LEN,
		RMCA_ACCESS_REMOTE_ATOMIC | RMCA_ACCESS_REMOTE_WRITE, &mr));
	API_CHECK_OK(rmca_mr_reg(p->ctx, u, LEN,
				 RMCA_ACCESS_REMOTE_WRITE | RMCA_MR_USE_ONCE,
				 &umr));
	api_put_region(p, 0, w, LEN, mr, p->ep);
	api_put_region(p, 0, u, LEN, umr, p->ep);
	/* deaf: nothing is answered, then the process is gone */
	api_expect_token_deaf(p, 0, T_POSTED);
	_exit(0);
}

static void survivor(struct api_peer *p)
{
	uint64_t *buf = api_alloc(LEN);
	struct rmca_atomic op = {.kind = RMCA_ATOMIC_FADD, .operand = 1};
	int count[NCTX + 1] = {0}, pass, missing = 0;
	struct rmca_ep_attr attr;
	struct api_region w, u;
	rmca_mr_t *mr;

	API_CHECK_OK(rmca_ep_query(p->ep, &attr));
	API_CHECK_MSG(attr.atomic == RMCA_PATH_EMULATED &&
			      attr.send_inv == RMCA_PATH_REVOKE_MSG,
		      "paths: atomic %d, send_inv %d", attr.atomic,
		      attr.send_inv);
	api_get_region(p, 0, &w);
	api_get_region(p, 0, &u);
	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, LEN, RMCA_ACCESS_LOCAL, &mr));
	op.rkey = w.rkey;
	for (int k = 1; k <= NATOMIC; k++) {
		op.raddr = w.addr + 8 * (uint64_t)k;
		API_CHECK_OK(rmca_atomic(p->ep, &op, buf + k, mr, API_CTX(k)));
	}
	API_CHECK_OK(rmca_put(p->ep, buf + 64, 64, mr, w.addr + 1024, w.rkey, 0,
			      API_CTX(C_PUT)));
	op.raddr = w.addr;
	API_CHECK_OK(rmca_atomic(p->ep, &op, buf, mr, API_CTX(C_HELD)));
	API_CHECK_OK(
		rmca_send_inv(p->ep, buf + 128, 8, mr, u.rkey, API_CTX(C_INV)));
	API_CHECK_OK(rmca_send(p->ep, buf + 129, 8, mr, API_CTX(C_SEND)));
	api_token(p, 0, T_POSTED);
	for (pass = 0; pass < PASSES; pass++) {
		struct pollfd pf = {.fd = rmca_wait_fd(p->ctx),
				    .events = POLLIN};

		missing = 0;
		for (int k = 1; k <= NCTX; k++) {
			struct rmca_completion c;

			while (api_take(API_CTX(k), &c)) {
				count[k]++;
				API_CHECK_MSG(c.status == RMCA_ERR_CONNECTION,
					      "op %d completed %s", k,
					      api_strerror(c.status));
			}
			missing += !count[k];
		}
		if (!missing)
			break;
		if (!api_progress(p))
			API_CHECK_MSG(poll(&pf, 1, API_TIMEOUT_MS) == 1,
				      "%d operations never completed", missing);
	}
	API_CHECK_MSG(!missing, "%d operations never completed in %d passes",
		      missing, PASSES);
	for (pass = 0; pass < PASSES; pass++)
		api_progress(p);
	for (int k = 1; k <= NCTX; k++) {
		struct rmca_completion c;

		while (api_take(API_CTX(k), &c))
			count[k]++;
		API_CHECK_MSG(count[k] == 1, "op %d completed %d times", k,
			      count[k]);
	}
	API_CHECK_MSG(api_stashed() == 0, "%d completions nobody asked for",
		      api_stashed());
	API_CHECK_OK(rmca_mr_dereg(mr));
}

static void test_ops_on_the_channel_end_once_when_the_peer_dies(void **state)
{
	const struct api_test t = {
		.server = dying, .client = survivor, .no_barrier = true};

	(void)state;
	setenv("RMCA_transports", "tcp", 1);
	api_caps_mask_push("^atomic,masked_atomic,send_inv");
	api_run(&t);
	api_caps_mask_pop();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
			test_ops_on_the_channel_end_once_when_the_peer_dies),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
