/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A post the device refuses, on a real device (rxe0, siw0) inside the VM,
 * through the test-only fault points of RMCATEST_FAIL
 * (components/verbs/verbs_fault.c). Whatever the refusal, every operation
 * accepted completes once, with a status that says what happened to it:
 *  - a send queue the device calls full, though nothing of ours is out to
 *    free it (verbs_post_full): the puts and the flush behind them wait,
 *    and go once the device takes them (before, they waited for a
 *    completion that never came);
 *  - a flush, and on iwarp the delivery flush of a DELIVERED put before it,
 *    refused as a bad WR while the QP is in RTS (verbs_post_invalid): a
 *    flush is the module's own READ, never malformed; the connection fails
 *    and both complete RMCA_ERR_CONNECTION (before: rmca_flush returned
 *    RMCA_ERR_INVALID, and the put completed so, a fault of the caller's
 *    it never made);
 *  - a QP gone to error and a post refused as rxe's doorbell refuses a QP
 *    not ready to send, EINVAL (verbs_post_qp_error): a put posted then
 *    completes RMCA_ERR_CONNECTION, and so do a flush and the put it
 *    covers (before: the posts returned RMCA_ERR_INVALID, and the
 *    delivered put completed so);
 *  - the delivery flush of a DELIVERED put (iwarp) whose op cannot be
 *    allocated (verbs_flush_alloc) is asked for again, and the put
 *    completes RMCA_OK (before: RMCA_ERR_NO_MEMORY, the flush's error);
 *  - a receive refused by the device while the QP is in RTS
 *    (verbs_recv_invalid): the connection fails and the receive completes
 *    RMCA_ERR_CONNECTION (before: it was offered to the device again at
 *    every progress, and never completed).
 *
 * RMCATEST_FAIL is set, empty, before the children start: the fault points
 * are looked up only in a process started with it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "api_util.h"

#define TOKEN_DONE 0xd0e
#define LEN	   4096
#define NPUT	   4
#define SEED	   7

enum kind {
	FULL_QUEUE,
	FLUSH_INVALID,
	QP_ERROR_PUT,
	QP_ERROR_FLUSH,
	RECV_INVALID,
	FLUSH_ALLOC,
};

static void fault(const char *point)
{
	setenv("RMCATEST_FAIL", point, 1);
}

/* Nothing more completes in a while: each op completed once. */
static void no_more(struct api_peer *p)
{
	api_stash_clear();
	api_progress_for(p, 100);
	API_CHECK_MSG(api_stashed() == 0, "%d more completions, first %p (%s)",
		      api_stashed(), api_stash_at(0)->user_ctx,
		      api_strerror(api_stash_at(0)->status));
}

static void target(struct api_peer *p)
{
	enum kind k = *(enum kind *)p->arg;
	uint8_t *mem = api_alloc(LEN);
	rmca_mr_t *mr;
	long bad;

	API_CHECK_OK(rmca_mr_reg(p->ctx, mem, LEN,
				 RMCA_ACCESS_LOCAL | RMCA_ACCESS_REMOTE_WRITE,
				 &mr));
	api_put_region(p, 0, mem, LEN, mr, p->ep);
	api_expect_token(p, 0, TOKEN_DONE);
	if (k == FULL_QUEUE) {
		bad = api_pattern_check(mem, LEN, SEED);
		API_CHECK_MSG(bad < 0, "the puts left byte %ld wrong", bad);
	}
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(mem);
}

/* The puts and a flush wait while the device says full, then go. */
static void full_queue(struct api_peer *p, uint8_t *src, rmca_mr_t *ms,
		       const struct api_region *r)
{
	const size_t part = LEN / NPUT;

	fault("verbs_post_full");
	for (int i = 0; i < NPUT; i++)
		API_CHECK_OK(rmca_put(p->ep, src + i * part, part, ms,
				      r->addr + i * part, r->rkey,
				      RMCA_DELIVERED, API_CTX(1 + i)));
	API_CHECK_OK(rmca_flush(p->ep, API_CTX(0x10)));
	/* a pass: the delivery flush is refused too */
	api_progress(p);
	fault("");
	for (int i = 0; i < NPUT; i++)
		api_wait_status(p, API_CTX(1 + i), RMCA_OK);
	api_wait_status(p, API_CTX(0x10), RMCA_OK);
}

static void initiator(struct api_peer *p)
{
	enum kind k = *(enum kind *)p->arg;
	uint8_t *src = api_alloc(LEN);
	struct rmca_completion c;
	struct api_region r;
	rmca_mr_t *ms;
	int rc;

	api_get_region(p, 0, &r);
	API_CHECK_OK(rmca_mr_reg(p->ctx, src, LEN, RMCA_ACCESS_LOCAL, &ms));
	api_pattern(src, LEN, SEED);
	switch (k) {
	case FULL_QUEUE:
		full_queue(p, src, ms, &r);
		break;
	case FLUSH_INVALID:
	case QP_ERROR_FLUSH:
		API_CHECK_OK(rmca_put(p->ep, src, 64, ms, r.addr, r.rkey,
				      RMCA_DELIVERED, API_CTX(1)));
		/* on iwarp the put's delivery flush goes first, inside
		 * rmca_flush: both are refused */
		fault(k == FLUSH_INVALID ? "verbs_post_invalid"
					 : "verbs_post_qp_error");
		rc = rmca_flush(p->ep, API_CTX(2));
		fault("");
		API_CHECK_MSG(rc == RMCA_OK,
			      "a flush the device refused returned %d (%s): "
			      "the connection failed, not the flush",
			      rc, api_strerror(rc));
		api_wait(p, API_CTX(1), &c);
		/* ib: the put's own completion says it was delivered, and
		 * may have come before the failure */
		API_CHECK_MSG(c.status == RMCA_ERR_CONNECTION ||
				      (c.status == RMCA_OK &&
				       !strcmp(api_transport(), "ib")),
			      "the delivered put whose flush was refused "
			      "completed %d (%s)",
			      c.status, api_strerror(c.status));
		api_wait_status(p, API_CTX(2), RMCA_ERR_CONNECTION);
		break;
	case QP_ERROR_PUT:
		fault("verbs_post_qp_error");
		rc = rmca_put(p->ep, src, 64, ms, r.addr, r.rkey, 0,
			      API_CTX(1));
		fault("");
		API_CHECK_MSG(rc == RMCA_OK,
			      "a put posted on a QP gone to error returned %d "
			      "(%s): the connection failed, not the put",
			      rc, api_strerror(rc));
		api_wait_status(p, API_CTX(1), RMCA_ERR_CONNECTION);
		break;
	case FLUSH_ALLOC:
		API_CHECK_OK(rmca_put(p->ep, src, 64, ms, r.addr, r.rkey,
				      RMCA_DELIVERED, API_CTX(1)));
		/* one pass: its delivery flush (iwarp) is not had */
		fault("verbs_flush_alloc");
		api_progress(p);
		fault("");
		api_wait_status(p, API_CTX(1), RMCA_OK);
		break;
	case RECV_INVALID:
		/* refused each time it is offered, as long as it is */
		fault("verbs_recv_invalid");
		API_CHECK_OK(rmca_recv(p->ep, src, 64, ms, API_CTX(1)));
		api_wait_status(p, API_CTX(1), RMCA_ERR_CONNECTION);
		fault("");
		break;
	}
	no_more(p);
	api_token(p, 0, TOKEN_DONE);
	API_CHECK_OK(rmca_mr_dereg(ms));
	free(src);
}

static void run(enum kind k)
{
	const struct api_test t = {
		.server = target, .client = initiator, .arg = &k};

	/* set (and empty) from the start: see verbs_fault.c */
	setenv("RMCATEST_FAIL", "", 1);
	api_run(&t);
	unsetenv("RMCATEST_FAIL");
}

static void test_puts_wait_out_a_full_send_queue(void **state)
{
	(void)state;
	run(FULL_QUEUE);
}

static void test_refused_delivery_flush_fails_the_connection(void **state)
{
	(void)state;
	run(FLUSH_INVALID);
}

static void
test_put_on_a_qp_in_error_completes_as_a_lost_connection(void **state)
{
	(void)state;
	run(QP_ERROR_PUT);
}

static void
test_delivery_flush_on_a_qp_in_error_is_a_lost_connection(void **state)
{
	(void)state;
	run(QP_ERROR_FLUSH);
}

static void test_refused_receive_completes_with_the_connection(void **state)
{
	(void)state;
	run(RECV_INVALID);
}

static void test_delivery_flush_without_memory_is_asked_again(void **state)
{
	(void)state;
	run(FLUSH_ALLOC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_puts_wait_out_a_full_send_queue),
		cmocka_unit_test(
			test_refused_delivery_flush_fails_the_connection),
		cmocka_unit_test(
			test_put_on_a_qp_in_error_completes_as_a_lost_connection),
		cmocka_unit_test(
			test_delivery_flush_on_a_qp_in_error_is_a_lost_connection),
		cmocka_unit_test(
			test_refused_receive_completes_with_the_connection),
		cmocka_unit_test(
			test_delivery_flush_without_memory_is_asked_again),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
