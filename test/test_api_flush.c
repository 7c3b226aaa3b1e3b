/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Contract: a flush completes once every send, put, get, atomic and flush
 * posted before it has completed, and is reported after them; receives
 * never hold it back. Middleware keeps receives posted ahead and flushes
 * while its peer is silent: the flush must still complete.
 */
#include <stdlib.h>
#include <string.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "api_util.h"

#define TOKEN_DONE 0xd0e
#define NRECV	   4
#define MSG	   64
#define PAGE	   4096
#define RECV_CTX   50 /* receives: RECV_CTX .. RECV_CTX + NRECV - 1 */

static void post_recvs(struct api_peer *p, uint8_t *buf, rmca_mr_t *mr)
{
	for (int i = 0; i < NRECV; i++)
		API_CHECK_OK(rmca_recv(p->ep, buf + i * MSG, MSG, mr,
				       API_CTX(RECV_CTX + i)));
}

/* How many of our receives have completed (collected, not taken). */
static int recvs_done(void)
{
	int n = 0;

	for (int i = 0; i < api_stashed(); i++)
		if (api_stash_at(i)->op == RMCA_OP_RECV)
			n++;
	return n;
}

/*
 * Progress until the flush `flush` completes: it must be RMCA_OK and come
 * after each of ops[0..n-1], which must be RMCA_OK too. Receives collected
 * meanwhile stay collected; everything else is dropped.
 */
static void flush_after(struct api_peer *p, int flush, const int *ops, int n)
{
	long end = api_now_ms() + API_TIMEOUT_MS;
	int i, j, at = -1;

	while (at < 0) {
		API_CHECK_MSG(api_now_ms() < end,
			      "flush %d never completed (receives posted, the "
			      "peer sends nothing)",
			      flush);
		api_progress(p);
		for (i = 0; i < api_stashed(); i++)
			if (api_stash_at(i)->user_ctx == API_CTX(flush))
				at = i;
	}
	API_CHECK(api_stash_at(at)->op == RMCA_OP_FLUSH);
	API_CHECK_RC(api_stash_at(at)->status, RMCA_OK);
	for (j = 0; j < n; j++) {
		for (i = 0; i < at; i++)
			if (api_stash_at(i)->user_ctx == API_CTX(ops[j]))
				break;
		API_CHECK_MSG(i < at, "op %d was not reported before flush %d",
			      ops[j], flush);
		API_CHECK_RC(api_stash_at(i)->status, RMCA_OK);
	}
	/* keep the receives' completions, forget the rest */
	while (api_stashed() > recvs_done()) {
		struct rmca_completion c;

		for (i = 0; api_stash_at(i)->op == RMCA_OP_RECV; i++)
			;
		API_CHECK(api_take(api_stash_at(i)->user_ctx, &c));
	}
}

static void server(struct api_peer *p)
{
	uint8_t *mem = api_alloc(2 * PAGE), *msg = api_alloc(NRECV * MSG);
	rmca_mr_t *mr, *mm;
	struct rmca_completion c;

	API_CHECK_OK(rmca_mr_reg(p->ctx, mem, 2 * PAGE,
				 RMCA_ACCESS_REMOTE_READ |
					 RMCA_ACCESS_REMOTE_WRITE |
					 RMCA_ACCESS_REMOTE_ATOMIC,
				 &mr));
	API_CHECK_OK(
		rmca_mr_reg(p->ctx, msg, NRECV * MSG, RMCA_ACCESS_LOCAL, &mm));
	api_pattern(mem + PAGE, PAGE, 9); /* what the client gets */
	post_recvs(p, msg, mm);

	/* Nothing but receives outstanding: the flush completes at once. */
	API_CHECK_OK(API_POST(p, rmca_flush(p->ep, API_CTX(1))));
	flush_after(p, 1, NULL, 0);
	API_CHECK(recvs_done() == 0);

	api_put_region(p, 0, mem, 2 * PAGE, mr, p->ep);
	api_expect_token(p, 0, TOKEN_DONE);

	/* The one message the client sent went to the first receive. */
	api_wait(p, API_CTX(RECV_CTX), &c);
	API_CHECK_RC(c.status, RMCA_OK);
	API_CHECK(c.len == MSG);
	API_CHECK_MSG(api_pattern_check(msg, MSG, 5) < 0, "message differs");
	API_CHECK_MSG(api_pattern_check(mem, PAGE, 7) < 0,
		      "put not in memory after the flush");
	API_CHECK_OK(rmca_mr_dereg(mr));
	API_CHECK_OK(rmca_mr_dereg(mm));
}

static void client(struct api_peer *p)
{
	uint8_t *buf = api_alloc(3 * PAGE), *msg = api_alloc(NRECV * MSG);
	uint64_t *result = (uint64_t *)(buf + 2 * PAGE);
	struct api_region r;
	rmca_mr_t *mb, *mm;
	struct rmca_atomic fadd;
	int rc, ops[2];

	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, 3 * PAGE, RMCA_ACCESS_LOCAL, &mb));
	API_CHECK_OK(
		rmca_mr_reg(p->ctx, msg, NRECV * MSG, RMCA_ACCESS_LOCAL, &mm));
	post_recvs(p, msg, mm);
	api_get_region(p, 0, &r);

	/* a put, then a DELIVERED put of the same bytes */
	api_pattern(buf, PAGE, 7);
	API_CHECK_OK(API_POST(p, rmca_put(p->ep, buf, PAGE, mb, r.addr, r.rkey,
					  0, API_CTX(10))));
	API_CHECK_OK(API_POST(p, rmca_flush(p->ep, API_CTX(11))));
	ops[0] = 10;
	flush_after(p, 11, ops, 1);
	API_CHECK_OK(API_POST(p, rmca_put(p->ep, buf, PAGE, mb, r.addr, r.rkey,
					  RMCA_DELIVERED, API_CTX(12))));
	API_CHECK_OK(API_POST(p, rmca_flush(p->ep, API_CTX(13))));
	ops[0] = 12;
	flush_after(p, 13, ops, 1);

	/* a get */
	API_CHECK_OK(API_POST(p, rmca_get(p->ep, buf + PAGE, PAGE, mb,
					  r.addr + PAGE, r.rkey, API_CTX(20))));
	API_CHECK_OK(API_POST(p, rmca_flush(p->ep, API_CTX(21))));
	ops[0] = 20;
	flush_after(p, 21, ops, 1);
	API_CHECK_MSG(api_pattern_check(buf + PAGE, PAGE, 9) < 0,
		      "get returned other bytes");

	/* an atomic, where this endpoint has one */
	fadd = (struct rmca_atomic){.kind = RMCA_ATOMIC_FADD,
				    .raddr = r.addr + PAGE,
				    .rkey = r.rkey,
				    .operand = 1};
	rc = API_POST(p, rmca_atomic(p->ep, &fadd, result, mb, API_CTX(30)));
	if (rc != RMCA_ERR_UNSUPPORTED) {
		API_CHECK_OK(rc);
		API_CHECK_OK(API_POST(p, rmca_flush(p->ep, API_CTX(31))));
		ops[0] = 30;
		flush_after(p, 31, ops, 1);
	}

	/* a send (the peer has a receive posted), then a flush behind a
	 * flush */
	api_pattern(buf, MSG, 5);
	API_CHECK_OK(API_POST(p, rmca_send(p->ep, buf, MSG, mb, API_CTX(40))));
	API_CHECK_OK(API_POST(p, rmca_flush(p->ep, API_CTX(41))));
	API_CHECK_OK(API_POST(p, rmca_flush(p->ep, API_CTX(42))));
	ops[0] = 40;
	ops[1] = 41;
	flush_after(p, 42, ops, 2);

	/* The peer sent nothing: every receive is still posted. */
	API_CHECK_MSG(recvs_done() == 0, "%d receives completed", recvs_done());
	api_token(p, 0, TOKEN_DONE);
}

static void test_flush_ignores_posted_receives(void **state)
{
	const struct api_test t = {.server = server, .client = client};

	(void)state;
	api_run(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flush_ignores_posted_receives),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
