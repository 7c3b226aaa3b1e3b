// SPDX-License-Identifier: BSD-3-Clause
/*
 * Every operation that waits on the control channel completes once, with
 * a status that says why, when the other side's core runs out of memory:
 *
 * - an answer (an atomic's, a get's, a revoke's ack) that the target's
 *   core cannot queue fails the channel: the initiator sees it close and
 *   its operation completes RMCA_ERR_CONNECTION, instead of waiting for an
 *   answer that never comes; at the target, what waited on the channel
 *   (here a get of its own, held behind a flush) completes
 *   RMCA_ERR_NO_MEMORY;
 * - a get held behind a flush whose request cannot be queued once the
 *   flush completed ends RMCA_ERR_NO_MEMORY (RMCA_ERR_AGAIN is what a post
 *   returns, not a completion's status).
 *
 * Every path is the emulated one (capabilities masked). Allocations fail
 * in one process while a flag is set (malloc is interposed, as in
 * test_core_nomem). The checks are counts: a completion must come within
 * a number of passes of the event loop, each woken by an event (the wait
 * for one is a hang detector, not a measure), and come once.
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
#include "nomem.h"
#include "tap_skip.h"

#define LEN	 64
#define PASSES	 64	 /* event-loop passes a completion may take */
#define T_HELD	 0x4e1d	 /* the server's own get is held */
#define T_ASKED	 0xa5ced /* the client's request is on the channel */
#define T_ENDED	 0xe9ded /* the client's operation completed */
#define CTX_MINE API_CTX(0x301)
#define CTX_PUT	 API_CTX(0x302)

enum ask { ASK_ATOMIC, ASK_GET, ASK_SEND_INV };

/* The completion of ctx within PASSES passes that each wait for an event
 * (a hang detector, not a measure); false when none came. */
static bool wait_passes(struct api_peer *p, void *ctx,
			struct rmca_completion *c)
{
	for (int pass = 0; pass < PASSES; pass++) {
		struct pollfd pf = {.fd = rmca_wait_fd(p->ctx),
				    .events = POLLIN};

		if (api_take(ctx, c))
			return true;
		if (api_progress(p))
			continue;
		/* half the other side's wait: this side says what is
		 * missing first */
		if (poll(&pf, 1, API_TIMEOUT_MS / 2) != 1)
			return false;
	}
	return api_take(ctx, c);
}

/* No second completion of ctx within PASSES passes. */
static void once(struct api_peer *p, void *ctx)
{
	struct rmca_completion c;

	for (int pass = 0; pass < PASSES; pass++)
		api_progress(p);
	API_CHECK_MSG(!api_take(ctx, &c), "ctx %p completed twice", ctx);
}

static void set_caps(void)
{
	setenv("RMCA_transports", "tcp", 1);
	api_caps_mask_push("^atomic,masked_atomic,short_read,send_inv");
}

/* ---- an answer that cannot be queued ---- */

static void target(struct api_peer *p)
{
	uint64_t *w = api_alloc(LEN), *u = api_alloc(LEN);
	char *mine = api_alloc(LEN);
	struct rmca_completion c;
	struct api_region r;
	rmca_mr_t *mr, *umr, *lmr;

	API_CHECK_OK(rmca_mr_reg(
		p->ctx, w, LEN,
		RMCA_ACCESS_REMOTE_READ | RMCA_ACCESS_REMOTE_ATOMIC, &mr));
	API_CHECK_OK(rmca_mr_reg(p->ctx, u, LEN,
				 RMCA_ACCESS_REMOTE_WRITE | RMCA_MR_USE_ONCE,
				 &umr));
	API_CHECK_OK(rmca_mr_reg(p->ctx, mine, LEN, RMCA_ACCESS_LOCAL, &lmr));
	api_put_region(p, 0, w, LEN, mr, p->ep);
	api_put_region(p, 0, u, LEN, umr, p->ep);
	api_get_region(p, 0, &r);
	/* The client is deaf now: the put is not acknowledged, so the get
	 * behind it waits for its flush, not yet sent (nothing of this
	 * side's is queued on the channel: its buffer is not there yet). */
	API_CHECK_OK(rmca_put(p->ep, mine, 8, lmr, r.addr, r.rkey, 0, CTX_PUT));
	API_CHECK_OK(rmca_get(p->ep, mine + 8, 8, lmr, r.addr + 8, r.rkey,
			      CTX_MINE));
	api_token(p, 0, T_HELD);
	api_expect_token_deaf(p, 0, T_ASKED);
	/* The client's request is waiting: nothing can be allocated while
	 * it is read and answered. */
	no_memory = 1;
	api_expect_token(p, 0, T_ENDED);
	no_memory = 0;
	API_CHECK_MSG(wait_passes(p, CTX_MINE, &c),
		      "the get held on a lost channel never completed");
	API_CHECK_MSG(c.status == RMCA_ERR_NO_MEMORY,
		      "the held get completed %s", api_strerror(c.status));
	API_CHECK_MSG(wait_passes(p, CTX_PUT, &c), "the put never completed");
	once(p, CTX_MINE);
	once(p, CTX_PUT);
	api_expect_token(p, 0, API_TOKEN_GO);
	API_CHECK_OK(rmca_mr_dereg(lmr));
	API_CHECK_OK(rmca_mr_dereg(umr));
	API_CHECK_OK(rmca_mr_dereg(mr));
}

static void asker(struct api_peer *p)
{
	enum ask ask = *(const enum ask *)p->arg;
	uint64_t *mine = api_alloc(LEN), *theirs = api_alloc(LEN);
	struct rmca_atomic op = {.kind = RMCA_ATOMIC_FADD, .operand = 1};
	struct rmca_completion c;
	struct api_region w, u;
	rmca_mr_t *mr, *lmr;

	API_CHECK_OK(rmca_mr_reg(
		p->ctx, theirs, LEN,
		RMCA_ACCESS_REMOTE_READ | RMCA_ACCESS_REMOTE_WRITE, &mr));
	API_CHECK_OK(rmca_mr_reg(p->ctx, mine, LEN, RMCA_ACCESS_LOCAL, &lmr));
	api_get_region(p, 0, &w);
	api_get_region(p, 0, &u);
	api_put_region(p, 0, theirs, LEN, mr, p->ep);
	api_expect_token_deaf(p, 0, T_HELD);
	switch (ask) {
	case ASK_ATOMIC:
		op.raddr = w.addr;
		op.rkey = w.rkey;
		API_CHECK_OK(rmca_atomic(p->ep, &op, mine, lmr, CTX_MINE));
		break;
	case ASK_GET:
		API_CHECK_OK(rmca_get(p->ep, mine, 8, lmr, w.addr, w.rkey,
				      CTX_MINE));
		break;
	case ASK_SEND_INV:
		API_CHECK_OK(
			rmca_send_inv(p->ep, mine, 8, lmr, u.rkey, CTX_MINE));
		break;
	}
	api_token(p, 0, T_ASKED);
	API_CHECK_MSG(wait_passes(p, CTX_MINE, &c),
		      "no completion in %d passes: the target's answer never "
		      "came and its channel stayed open",
		      PASSES);
	API_CHECK_MSG(c.status == RMCA_ERR_CONNECTION, "completed %s",
		      api_strerror(c.status));
	api_token(p, 0, T_ENDED);
	once(p, CTX_MINE);
	api_token(p, 0, API_TOKEN_GO);
	API_CHECK_OK(rmca_mr_dereg(lmr));
	API_CHECK_OK(rmca_mr_dereg(mr));
}

static void run_ask(enum ask ask)
{
	const struct api_test t = {
		.server = target, .client = asker, .arg = &ask};

#ifdef __SANITIZE_ADDRESS__
	TAP_SKIP("malloc cannot be interposed under AddressSanitizer");
#endif
	set_caps();
	api_run(&t);
	api_caps_mask_pop();
}

static void
test_atomic_unanswered_for_want_of_memory_fails_channel(void **state)
{
	(void)state;
	run_ask(ASK_ATOMIC);
}

static void test_get_unanswered_for_want_of_memory_fails_channel(void **state)
{
	(void)state;
	run_ask(ASK_GET);
}

static void test_revoke_unacked_for_want_of_memory_fails_channel(void **state)
{
	(void)state;
	run_ask(ASK_SEND_INV);
}

/* ---- a held request that cannot be queued ---- */

static void held_getter(struct api_peer *p)
{
	char *mine = api_alloc(LEN);
	struct rmca_completion c;
	struct api_region r;
	rmca_mr_t *lmr;

	API_CHECK_OK(rmca_mr_reg(p->ctx, mine, LEN, RMCA_ACCESS_LOCAL, &lmr));
	api_get_region(p, 0, &r);
	/* The client is deaf: the get waits behind the put's flush. */
	API_CHECK_OK(rmca_put(p->ep, mine, 8, lmr, r.addr, r.rkey, 0, CTX_PUT));
	API_CHECK_OK(rmca_get(p->ep, mine + 8, 8, lmr, r.addr + 8, r.rkey,
			      CTX_MINE));
	no_memory = 1;
	api_token(p, 0, T_HELD); /* the client serves the put now */
	/* The flush completes; the get's request finds no memory. */
	if (!wait_passes(p, CTX_MINE, &c)) {
		no_memory = 0;
		API_CHECK_MSG(0, "the held get never completed");
	}
	no_memory = 0;
	API_CHECK_MSG(c.status == RMCA_ERR_NO_MEMORY,
		      "the held get completed %s (%d)", api_strerror(c.status),
		      c.status);
	API_CHECK_MSG(wait_passes(p, CTX_PUT, &c), "the put never completed");
	once(p, CTX_MINE);
	api_token(p, 0, API_TOKEN_GO);
	API_CHECK_OK(rmca_mr_dereg(lmr));
}

static void held_target(struct api_peer *p)
{
	char *theirs = api_alloc(LEN);
	rmca_mr_t *mr;

	API_CHECK_OK(rmca_mr_reg(
		p->ctx, theirs, LEN,
		RMCA_ACCESS_REMOTE_READ | RMCA_ACCESS_REMOTE_WRITE, &mr));
	api_put_region(p, 0, theirs, LEN, mr, p->ep);
	api_expect_token_deaf(p, 0, T_HELD);
	api_expect_token(p, 0, API_TOKEN_GO); /* serves meanwhile */
	API_CHECK_OK(rmca_mr_dereg(mr));
}

static void test_held_get_unsent_for_want_of_memory_ends_no_memory(void **state)
{
	/* the client gets; the server (a target) only serves */
	const struct api_test t = {.server = held_target,
				   .client = held_getter};

	(void)state;
#ifdef __SANITIZE_ADDRESS__
	TAP_SKIP("malloc cannot be interposed under AddressSanitizer");
#endif
	set_caps();
	api_run(&t);
	api_caps_mask_pop();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
			test_atomic_unanswered_for_want_of_memory_fails_channel),
		cmocka_unit_test(
			test_get_unanswered_for_want_of_memory_fails_channel),
		cmocka_unit_test(
			test_revoke_unacked_for_want_of_memory_fails_channel),
		cmocka_unit_test(
			test_held_get_unsent_for_want_of_memory_ends_no_memory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
