/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Over tcp, through the whole library: tcp orders its completions (a flush
 * ends after every op posted before it, RMCA_COMPONENT_ORDERED), so the
 * core keeps the operations it hands tcp whole on no list of its own and
 * reports each as tcp completes it. What the core still orders itself must
 * stay in order around them:
 *  - a put that failed as a lost connection and is being verified with the
 *    peer's core is held; a flush posted after it, which failed with it,
 *    is reported after it;
 *  - a window of sends, puts, gets and fetch-adds with flushes among them:
 *    each flush after every op posted before it, every op once; again
 *    with tcp's remote completion masked (DELIVERED puts proven by the
 *    core's delivery flushes) and with its atomics masked (atomics the
 *    core builds) and with its short reads masked (gets of 16 bytes the
 *    peer's core answers), each held by the core among tcp's own;
 *  - operations outstanding when the endpoint closes, a flush among them,
 *    each end once, RMCA_ERR_CANCELED, the flush after those before it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <cmocka.h>

#include "api_util.h"

#define TOKEN_DONE 0xd0e
#define PAGE	   4096

/* The position of user_ctx among the completions collected, or -1; it
 * must be there at most once. */
static int stash_pos(void *user_ctx)
{
	int at = -1;

	for (int i = 0; i < api_stashed(); i++) {
		if (api_stash_at(i)->user_ctx != user_ctx)
			continue;
		API_CHECK_MSG(at < 0, "operation %lu completed twice",
			      (unsigned long)(uintptr_t)user_ctx);
		at = i;
	}
	return at;
}

/* Progress until every one of ctxs[0..n-1] completed. */
static void collect(struct api_peer *p, const int *ctxs, int n)
{
	long end = api_now_ms() + API_TIMEOUT_MS;
	int missing = n;

	while (missing) {
		API_CHECK_MSG(api_now_ms() < end,
			      "%d operations never completed", missing);
		api_progress(p);
		missing = 0;
		for (int i = 0; i < n; i++)
			missing += stash_pos(API_CTX(ctxs[i])) < 0;
	}
}

static int status_of(int ctx)
{
	return api_stash_at(stash_pos(API_CTX(ctx)))->status;
}

static void region_server(struct api_peer *p)
{
	uint8_t *mem = api_alloc(2 * PAGE);
	rmca_mr_t *mr;

	API_CHECK_OK(rmca_mr_reg(p->ctx, mem, 2 * PAGE,
				 RMCA_ACCESS_REMOTE_READ |
					 RMCA_ACCESS_REMOTE_WRITE |
					 RMCA_ACCESS_REMOTE_ATOMIC,
				 &mr));
	api_put_region(p, 0, mem, 2 * PAGE, mr, p->ep);
	api_expect_token(p, 0, TOKEN_DONE);
}

/*
 * A put out of the region's bounds is refused by the target, which closes
 * the connection: the put after it fails as a lost connection and is
 * verified with the target's core (its access was valid: it stays a lost
 * connection), and the flush after it fails with it. The flush must wait
 * for the verification.
 */
static void verified_client(struct api_peer *p)
{
	uint8_t *buf = api_alloc(PAGE);
	struct api_region r;
	rmca_mr_t *mb;
	const int all[] = {1, 2, 3, 4};

	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, PAGE, RMCA_ACCESS_LOCAL, &mb));
	api_get_region(p, 0, &r);
	API_CHECK_OK(rmca_flush(p->ep, API_CTX(1)));
	API_CHECK_OK(rmca_put(p->ep, buf, 64, mb, r.addr + r.len, r.rkey, 0,
			      API_CTX(2)));
	API_CHECK_OK(
		rmca_put(p->ep, buf, 64, mb, r.addr, r.rkey, 0, API_CTX(3)));
	API_CHECK_OK(rmca_flush(p->ep, API_CTX(4)));
	collect(p, all, 4);
	API_CHECK_RC(status_of(1), RMCA_OK);
	API_CHECK_RC(status_of(2), RMCA_ERR_REMOTE_ACCESS);
	API_CHECK_RC(status_of(3), RMCA_ERR_CONNECTION);
	API_CHECK_RC(status_of(4), RMCA_ERR_CONNECTION);
	API_CHECK_MSG(stash_pos(API_CTX(4)) > stash_pos(API_CTX(3)),
		      "the flush was reported before the put being verified");
	API_CHECK_MSG(stash_pos(API_CTX(4)) > stash_pos(API_CTX(2)),
		      "the flush was reported before the refused put");
	api_token(p, 0, TOKEN_DONE);
}

static void a_flush_waits_for_a_put_being_verified(void **state)
{
	const struct api_test t = {.server = region_server,
				   .client = verified_client};

	(void)state;
	api_run(&t);
}

/*
 * Rounds of a window of operations of every kind with flushes among
 * them; the server keeps receives posted for the sends.
 */
#define ROUNDS 20
#define WINDOW 24 /* operations per round, every fifth a flush */

/* What the i-th operation of a round is: 0 a send, 1 a put, 2 a get, 3 a
 * fetch-add, 4 a flush. */
static int window_kind(int round, int i)
{
	return (i + round) % 5;
}

static uint64_t window_sends(void)
{
	uint64_t n = 0;

	for (int round = 0; round < ROUNDS; round++)
		for (int i = 0; i < WINDOW; i++)
			n += window_kind(round, i) == 0;
	return n;
}

static void window_server(struct api_peer *p)
{
	uint8_t *mem = api_alloc(2 * PAGE), *msg = api_alloc(64);
	struct rmca_completion c;
	rmca_mr_t *mr, *mm;
	uint64_t sends = 0;

	API_CHECK_OK(rmca_mr_reg(p->ctx, mem, 2 * PAGE,
				 RMCA_ACCESS_REMOTE_READ |
					 RMCA_ACCESS_REMOTE_WRITE |
					 RMCA_ACCESS_REMOTE_ATOMIC,
				 &mr));
	API_CHECK_OK(rmca_mr_reg(p->ctx, msg, 64, RMCA_ACCESS_LOCAL, &mm));
	for (int i = 0; i < 8; i++)
		API_CHECK_OK(rmca_recv(p->ep, msg, 64, mm, API_CTX(1)));
	api_put_region(p, 0, mem, 2 * PAGE, mr, p->ep);
	while (sends < window_sends()) {
		api_wait(p, API_CTX(1), &c);
		API_CHECK_RC(c.status, RMCA_OK);
		sends++;
		API_CHECK_OK(rmca_recv(p->ep, msg, 64, mm, API_CTX(1)));
	}
	api_expect_token(p, 0, TOKEN_DONE);
}

static void window_client(struct api_peer *p)
{
	uint8_t *buf = api_alloc(2 * PAGE);
	uint64_t *result = api_alloc(WINDOW * sizeof(uint64_t));
	int ctxs[WINDOW];
	struct api_region r;
	rmca_mr_t *mb, *mres;

	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, 2 * PAGE, RMCA_ACCESS_LOCAL, &mb));
	API_CHECK_OK(rmca_mr_reg(p->ctx, result, WINDOW * sizeof(uint64_t),
				 RMCA_ACCESS_LOCAL, &mres));
	api_get_region(p, 0, &r);
	for (int round = 0; round < ROUNDS; round++) {
		api_stash_clear();
		for (int i = 0; i < WINDOW; i++) {
			int ctx = 100 + i;
			struct rmca_atomic fadd = {.kind = RMCA_ATOMIC_FADD,
						   .raddr = r.addr + PAGE,
						   .rkey = r.rkey,
						   .operand = 1};

			ctxs[i] = ctx;
			switch (window_kind(round, i)) {
			case 0:
				API_CHECK_OK(API_POST(
					p, rmca_send(p->ep, buf, 16, mb,
						     API_CTX(ctx))));
				break;
			case 1:
				API_CHECK_OK(API_POST(
					p, rmca_put(p->ep, buf, 64, mb, r.addr,
						    r.rkey, RMCA_DELIVERED,
						    API_CTX(ctx))));
				break;
			case 2:
				API_CHECK_OK(API_POST(
					p, rmca_get(p->ep, buf + PAGE, 16, mb,
						    r.addr, r.rkey,
						    API_CTX(ctx))));
				break;
			case 3:
				API_CHECK_OK(API_POST(
					p, rmca_atomic(p->ep, &fadd, &result[i],
						       mres, API_CTX(ctx))));
				break;
			default:
				API_CHECK_OK(API_POST(
					p, rmca_flush(p->ep, API_CTX(ctx))));
				break;
			}
		}
		collect(p, ctxs, WINDOW);
		for (int i = 0; i < WINDOW; i++) {
			const struct rmca_completion *c =
				api_stash_at(stash_pos(API_CTX(ctxs[i])));

			API_CHECK_RC(c->status, RMCA_OK);
			if (c->op != RMCA_OP_FLUSH)
				continue;
			for (int j = 0; j < i; j++)
				API_CHECK_MSG(
					stash_pos(API_CTX(ctxs[j])) <
						stash_pos(API_CTX(ctxs[i])),
					"round %d: op %d reported after "
					"the flush %d behind it",
					round, j, i);
		}
	}
	api_token(p, 0, TOKEN_DONE);
}

static void window_run(const char *caps)
{
	const struct api_test t = {.server = window_server,
				   .client = window_client};

	if (caps)
		setenv("RMCA_tcp_caps", caps, 1);
	api_run(&t);
	unsetenv("RMCA_tcp_caps");
}

static void flushes_in_a_window_of_every_kind(void **state)
{
	(void)state;
	window_run(NULL);
}

static void flushes_in_a_window_with_delivery_flushes(void **state)
{
	(void)state;
	window_run("^remote_completion");
}

static void flushes_in_a_window_with_atomics_of_the_core(void **state)
{
	(void)state;
	window_run("^atomic,masked_atomic");
}

static void flushes_in_a_window_with_gets_of_the_core(void **state)
{
	(void)state;
	window_run("^short_read");
}

/*
 * Operations the peer does not answer (it stays deaf, and has no receive
 * posted for the sends), a flush among them, when the endpoint closes:
 * each ends once, canceled, the flush after the operations before it.
 */
#define CLOSED_OPS 12

static void deaf_server(struct api_peer *p)
{
	uint8_t *mem = api_alloc(PAGE);
	rmca_mr_t *mr;

	API_CHECK_OK(rmca_mr_reg(
		p->ctx, mem, PAGE,
		RMCA_ACCESS_REMOTE_READ | RMCA_ACCESS_REMOTE_WRITE, &mr));
	api_put_region(p, 0, mem, PAGE, mr, p->ep);
	api_expect_token_deaf(p, 0, TOKEN_DONE);
}

static void closing_client(struct api_peer *p)
{
	uint8_t *buf = api_alloc(PAGE);
	struct rmca_completion c[CLOSED_OPS + 4];
	int seen[CLOSED_OPS] = {0}, flush_at = -1, n = 0, got;
	struct api_region r;
	rmca_mr_t *mb;
	long end;

	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, PAGE, RMCA_ACCESS_LOCAL, &mb));
	api_get_region(p, 0, &r);
	for (int i = 0; i < CLOSED_OPS; i++) {
		void *ctx = API_CTX(200 + i);

		if (i == CLOSED_OPS / 2)
			API_CHECK_OK(rmca_flush(p->ep, ctx));
		else if (i % 3 == 0)
			API_CHECK_OK(rmca_send(p->ep, buf, 8, mb, ctx));
		else if (i % 3 == 1)
			API_CHECK_OK(rmca_put(p->ep, buf, 8, mb, r.addr, r.rkey,
					      0, ctx));
		else
			API_CHECK_OK(rmca_get(p->ep, buf, 8, mb, r.addr, r.rkey,
					      ctx));
	}
	rmca_ep_close(p->ep);
	p->ep = NULL;
	end = api_now_ms() + API_TIMEOUT_MS;
	while (n < CLOSED_OPS) {
		API_CHECK_MSG(api_now_ms() < end, "%d of %d ops completed", n,
			      CLOSED_OPS);
		got = rmca_poll(p->ctx, c, CLOSED_OPS + 4);
		API_CHECK(got >= 0);
		for (int i = 0; i < got; i++) {
			int k = (int)(uintptr_t)c[i].user_ctx - 200;

			API_CHECK(k >= 0 && k < CLOSED_OPS);
			API_CHECK_MSG(!seen[k], "op %d completed twice", k);
			seen[k] = 1;
			API_CHECK_RC(c[i].status, RMCA_ERR_CANCELED);
			if (k == CLOSED_OPS / 2) {
				flush_at = n;
				for (int j = 0; j < k; j++)
					API_CHECK_MSG(seen[j],
						      "op %d reported after "
						      "the flush behind it",
						      j);
			}
			n++;
		}
	}
	API_CHECK(flush_at >= 0);
	API_CHECK(rmca_poll(p->ctx, c, 1) == 0);
	api_token(p, 0, TOKEN_DONE);
}

static void closing_cancels_each_op_once_in_order(void **state)
{
	const struct api_test t = {.server = deaf_server,
				   .client = closing_client};

	(void)state;
	api_run(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_flush_waits_for_a_put_being_verified),
		cmocka_unit_test(flushes_in_a_window_of_every_kind),
		cmocka_unit_test(flushes_in_a_window_with_delivery_flushes),
		cmocka_unit_test(flushes_in_a_window_with_atomics_of_the_core),
		cmocka_unit_test(flushes_in_a_window_with_gets_of_the_core),
		cmocka_unit_test(closing_cancels_each_op_once_in_order),
	};

	setenv("RMCA_transports", "tcp", 1);
	unsetenv("RMCA_tcp_caps");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
