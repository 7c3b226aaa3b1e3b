/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Contract: every outstanding op completes exactly once when the peer dies
 * or the endpoint closes; a refused call posts nothing; rmca_strerror names
 * every status.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "api_util.h"

#define TOKEN_POSTED 0x9057
#define TOKEN_DONE   0xd0e

/*
 * Progress until every ctx in want[] has completed (or time is up), then a
 * little longer to catch duplicates. Checks each completed exactly once and
 * that nothing else completed.
 */
static void collect_once(struct api_peer *p, const int *want, int n)
{
	long end = api_now_ms() + API_TIMEOUT_MS;
	int i, j, count;

	for (;;) {
		int missing = 0;

		for (i = 0; i < n; i++) {
			for (j = 0; j < api_stashed(); j++)
				if (api_stash_at(j)->user_ctx ==
				    API_CTX(want[i]))
					break;
			missing += j == api_stashed();
		}
		if (!missing)
			break;
		API_CHECK_MSG(api_now_ms() < end,
			      "%d of %d outstanding ops never completed",
			      missing, n);
		if (!api_progress(p))
			api_sleep_ms(1);
	}
	api_progress_for(p, 200);
	for (i = 0; i < n; i++) {
		count = 0;
		for (j = 0; j < api_stashed(); j++)
			count += api_stash_at(j)->user_ctx == API_CTX(want[i]);
		API_CHECK_MSG(count == 1, "op %d completed %d times", want[i],
			      count);
	}
	API_CHECK_MSG(api_stashed() == n, "%d completions for %d ops",
		      api_stashed(), n);
}

static const struct rmca_completion *find(int uc)
{
	int j;

	for (j = 0; j < api_stashed(); j++)
		if (api_stash_at(j)->user_ctx == API_CTX(uc))
			return api_stash_at(j);
	return NULL;
}

/* An op posted on a failed endpoint completes, with an error. */
static void later_post_fails(struct api_peer *p, void *buf, rmca_mr_t *mr)
{
	struct rmca_completion c;
	int rc;

	rc = rmca_recv(p->ep, buf, 64, mr, API_CTX(90));
	API_CHECK_MSG(rc == RMCA_OK,
		      "recv on a failed endpoint returned %d (%s); the "
		      "contract says it completes with an error",
		      rc, api_strerror(rc));
	api_wait(p, API_CTX(90), &c);
	API_CHECK_MSG(c.status != RMCA_OK && c.status != RMCA_ERR_CANCELED,
		      "recv on a failed endpoint completed %d (%s)", c.status,
		      api_strerror(c.status));
	rc = rmca_send(p->ep, buf, 64, mr, API_CTX(91));
	API_CHECK_MSG(rc == RMCA_OK,
		      "send on a failed endpoint returned %d (%s); the "
		      "contract says it completes with an error",
		      rc, api_strerror(rc));
	api_wait(p, API_CTX(91), &c);
	API_CHECK_MSG(c.status != RMCA_OK && c.status != RMCA_ERR_CANCELED,
		      "send on a failed endpoint completed %d (%s)", c.status,
		      api_strerror(c.status));
}

/* ---- peer death ---- */

#define NRECV 5
#define NGET  3
#define GLEN  4096

static void death_server(struct api_peer *p)
{
	uint8_t *mem = api_alloc(GLEN);
	struct api_peer quiet = *p;
	rmca_mr_t *mr;

	api_pattern(mem, GLEN, 51);
	API_CHECK_OK(
		rmca_mr_reg(p->ctx, mem, GLEN, RMCA_ACCESS_REMOTE_READ, &mr));
	api_put_region(p, 0, mem, GLEN, mr, p->ep);
	/* Wait without progress, so that the gets stay outstanding where
	 * the target's core serves them. */
	quiet.ctx = NULL;
	api_expect_token(&quiet, 0, TOKEN_POSTED);
	_exit(0);
}

static void death_client(struct api_peer *p)
{
	uint8_t *buf = api_alloc(NRECV * 64 + NGET * GLEN + 64);
	int want[NRECV + NGET];
	struct api_region r;
	rmca_mr_t *mr;
	int i;

	api_get_region(p, 0, &r);
	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, NRECV * 64 + NGET * GLEN + 64,
				 RMCA_ACCESS_LOCAL, &mr));
	for (i = 0; i < NRECV; i++) {
		want[i] = 1 + i;
		API_CHECK_OK(rmca_recv(p->ep, buf + i * 64, 64, mr,
				       API_CTX(want[i])));
	}
	for (i = 0; i < NGET; i++) {
		want[NRECV + i] = 11 + i;
		API_CHECK_OK(rmca_get(p->ep, buf + NRECV * 64 + i * GLEN, GLEN,
				      mr, r.addr, r.rkey,
				      API_CTX(want[NRECV + i])));
	}
	api_token(p, 0, TOKEN_POSTED);
	collect_once(p, want, NRECV + NGET);
	for (i = 0; i < NRECV; i++) {
		const struct rmca_completion *c = find(want[i]);

		API_CHECK(c->op == RMCA_OP_RECV);
		API_CHECK_MSG(c->status == RMCA_ERR_CONNECTION,
			      "recv %d after peer death: %d (%s)", i, c->status,
			      api_strerror(c->status));
	}
	for (i = 0; i < NGET; i++) {
		const struct rmca_completion *c = find(want[NRECV + i]);

		API_CHECK(c->op == RMCA_OP_GET);
		/* A device may have served it before the peer died. */
		if (c->status == RMCA_OK)
			API_CHECK(api_pattern_check(buf + NRECV * 64 + i * GLEN,
						    GLEN, 51) < 0);
		else
			API_CHECK_MSG(c->status == RMCA_ERR_CONNECTION,
				      "get %d after peer death: %d (%s)", i,
				      c->status, api_strerror(c->status));
	}
	api_stash_clear();
	later_post_fails(p, buf + NRECV * 64 + NGET * GLEN, mr);
}

static void test_peer_death_completes_each_op_once(void **state)
{
	const struct api_test t = {.server = death_server,
				   .client = death_client,
				   .no_barrier = true};

	(void)state;
	api_run(&t);
}

/* ---- rmca_ep_close cancels ---- */

static void close_server(struct api_peer *p)
{
	api_expect_token(p, 0, TOKEN_DONE);
}

static void close_client(struct api_peer *p)
{
	uint8_t *buf = api_alloc(NRECV * 64);
	int want[NRECV];
	rmca_mr_t *mr;
	int i;

	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, NRECV * 64, RMCA_ACCESS_LOCAL, &mr));
	for (i = 0; i < NRECV; i++) {
		want[i] = 1 + i;
		API_CHECK_OK(rmca_recv(p->ep, buf + i * 64, 64, mr,
				       API_CTX(want[i])));
	}
	api_progress_for(p, 20);
	API_CHECK(api_stashed() == 0);
	rmca_ep_close(p->ep);
	p->ep = NULL;
	collect_once(p, want, NRECV);
	for (i = 0; i < NRECV; i++) {
		const struct rmca_completion *c = find(want[i]);

		API_CHECK(c->op == RMCA_OP_RECV);
		API_CHECK_MSG(c->status == RMCA_ERR_CANCELED,
			      "recv %d after ep_close: %d (%s)", i, c->status,
			      api_strerror(c->status));
	}
	api_stash_clear();
	api_token(p, 0, TOKEN_DONE);
}

static void test_ep_close_cancels_outstanding_recvs(void **state)
{
	const struct api_test t = {.server = close_server,
				   .client = close_client};

	(void)state;
	api_run(&t);
}

/* ---- a refused call posts nothing ---- */

static void nopost_server(struct api_peer *p)
{
	uint8_t *in = api_alloc(64);
	rmca_mr_t *mr;

	API_CHECK_OK(rmca_mr_reg(p->ctx, in, 64, RMCA_ACCESS_LOCAL, &mr));
	/* The first message is the only valid one the client sent. */
	API_CHECK(api_recv_wait(p, p->ep, in, 64, mr) == 3);
	API_CHECK_MSG(memcmp(in, "ok", 3) == 0, "first message \"%.3s\"",
		      (char *)in);
	api_expect_token(p, 0, TOKEN_DONE);
}

static void nopost_client(struct api_peer *p)
{
	uint8_t *buf = api_alloc(64);
	uint64_t *res = api_alloc(8);
	struct rmca_atomic op = {.kind = RMCA_ATOMIC_FADD,
				 .raddr = 4096,
				 .rkey = 1,
				 .operand = 1};
	rmca_listener_t *l = NULL;
	rmca_ep_t *ep = p->ep, *e2 = NULL;
	rmca_mr_t *mr, *mres, *m2 = NULL;
	struct rmca_completion c;
	void *uc = API_CTX(66);

	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 64, RMCA_ACCESS_LOCAL, &mr));
	API_CHECK_OK(rmca_mr_reg(p->ctx, res, 8, RMCA_ACCESS_LOCAL, &mres));
	memcpy(buf, "xx", 3);

	/* No endpoint. */
	API_CHECK_RC(rmca_send(NULL, buf, 3, mr, uc), RMCA_ERR_INVALID);
	API_CHECK_RC(rmca_send_inv(NULL, buf, 3, mr, 1ull << 63 | 1, uc),
		     RMCA_ERR_INVALID);
	API_CHECK_RC(rmca_recv(NULL, buf, 3, mr, uc), RMCA_ERR_INVALID);
	API_CHECK_RC(rmca_put(NULL, buf, 3, mr, 4096, 1, 0, uc),
		     RMCA_ERR_INVALID);
	API_CHECK_RC(rmca_get(NULL, buf, 3, mr, 4096, 1, uc), RMCA_ERR_INVALID);
	API_CHECK_RC(rmca_atomic(NULL, &op, res, mres, uc), RMCA_ERR_INVALID);
	API_CHECK_RC(rmca_flush(NULL, uc), RMCA_ERR_INVALID);

	/* A real endpoint, bad arguments. */
	API_CHECK_RC(rmca_send(ep, NULL, 3, mr, uc), RMCA_ERR_INVALID);
	API_CHECK_RC(rmca_send(ep, buf, 3, NULL, uc), RMCA_ERR_INVALID);
	API_CHECK_RC(rmca_recv(ep, NULL, 3, mr, uc), RMCA_ERR_INVALID);
	API_CHECK_RC(rmca_put(ep, NULL, 3, mr, 4096, 1, 0, uc),
		     RMCA_ERR_INVALID);
	API_CHECK_RC(rmca_get(ep, NULL, 3, mr, 4096, 1, uc), RMCA_ERR_INVALID);
	API_CHECK_RC(rmca_atomic(ep, NULL, res, mres, uc), RMCA_ERR_INVALID);
	API_CHECK_RC(rmca_atomic(ep, &op, NULL, mres, uc), RMCA_ERR_INVALID);
	op.kind = (enum rmca_atomic_kind)99;
	API_CHECK_RC(rmca_atomic(ep, &op, res, mres, uc), RMCA_ERR_INVALID);
	/* The region's edges: a byte before it, a byte past its end, more
	 * than it holds, an address far above it. */
	API_CHECK_RC(rmca_send(ep, (void *)((uintptr_t)buf - 1), 3, mr, uc),
		     RMCA_ERR_INVALID);
	API_CHECK_RC(rmca_send(ep, buf + 62, 3, mr, uc), RMCA_ERR_INVALID);
	API_CHECK_RC(rmca_send(ep, buf, 65, mr, uc), RMCA_ERR_INVALID);
	API_CHECK_RC(rmca_recv(ep, buf + 64, 1, mr, uc), RMCA_ERR_INVALID);
	API_CHECK_RC(rmca_recv(ep, (void *)(UINTPTR_MAX - 1), 2, mr, uc),
		     RMCA_ERR_INVALID);
	API_CHECK_RC(rmca_put(ep, buf + 1, 64, mr, 4096, 1, 0, uc),
		     RMCA_ERR_INVALID);
	API_CHECK_RC(rmca_get(ep, (void *)((uintptr_t)buf - 64), 64, mr, 4096,
			      1, uc),
		     RMCA_ERR_INVALID);

	/* Context-level calls. */
	API_CHECK_RC(rmca_init(NULL), RMCA_ERR_INVALID);
	API_CHECK_RC(rmca_mr_reg(p->ctx, NULL, 64, RMCA_ACCESS_LOCAL, &m2),
		     RMCA_ERR_INVALID);
	API_CHECK_RC(rmca_mr_reg(NULL, buf, 64, RMCA_ACCESS_LOCAL, &m2),
		     RMCA_ERR_INVALID);
	API_CHECK_RC(rmca_mr_reg(p->ctx, buf, 64, RMCA_ACCESS_LOCAL, NULL),
		     RMCA_ERR_INVALID);
	API_CHECK_RC(rmca_listen(p->ctx, NULL, &l), RMCA_ERR_INVALID);
	API_CHECK_RC(rmca_connect(p->ctx, NULL, 100, &e2), RMCA_ERR_INVALID);
	API_CHECK_RC(rmca_connect(NULL, "127.0.0.1:1", 100, &e2),
		     RMCA_ERR_INVALID);
	API_CHECK(rmca_listen(p->ctx, "no port here", &l) != RMCA_OK);
	API_CHECK(rmca_listener_port(NULL) < 0);
	API_CHECK(rmca_mr_dereg(NULL) == RMCA_ERR_INVALID);
	/* rmca_poll: no context, no room for what max allows, a negative
	 * max; nothing to hand out needs no room. */
	API_CHECK_RC(rmca_poll(NULL, &c, 1), RMCA_ERR_INVALID);
	API_CHECK_RC(rmca_poll(p->ctx, NULL, 1), RMCA_ERR_INVALID);
	API_CHECK_RC(rmca_poll(p->ctx, &c, -1), RMCA_ERR_INVALID);
	API_CHECK_RC(rmca_poll(p->ctx, NULL, -1), RMCA_ERR_INVALID);
	API_CHECK_RC(rmca_poll(p->ctx, &c, INT_MIN), RMCA_ERR_INVALID);
	API_CHECK(rmca_poll(p->ctx, NULL, 0) == 0);

	api_progress_for(p, 200);
	API_CHECK_MSG(api_stashed() == 0,
		      "a refused call produced a completion (ctx %p, op %d)",
		      api_stash_at(0)->user_ctx, api_stash_at(0)->op);

	/* The endpoint works, and carried nothing refused. */
	memcpy(buf, "ok", 3);
	api_send_wait(p, ep, buf, 3, mr);
	api_token(p, 0, TOKEN_DONE);
}

static void test_refused_call_posts_nothing(void **state)
{
	const struct api_test t = {.server = nopost_server,
				   .client = nopost_client};

	(void)state;
	api_run(&t);
}

/*
 * A local buffer outside the region named with it: refused at once
 * (RMCA_ERR_INVALID, nothing posted), or completed with an error, but never
 * carried out.
 */
static void outside_server(struct api_peer *p)
{
	uint8_t *in = api_alloc(64);
	rmca_mr_t *mr;

	API_CHECK_OK(rmca_mr_reg(p->ctx, in, 64, RMCA_ACCESS_LOCAL, &mr));
	API_CHECK_OK(rmca_recv(p->ep, in, 64, mr, API_CTX(1)));
	api_expect_token(p, 0, TOKEN_DONE);
	api_progress_for(p, 50);
	if (api_take(API_CTX(1), NULL))
		api_die(__FILE__, __LINE__,
			"a send from outside its region was delivered");
}

static void outside_client(struct api_peer *p)
{
	uint8_t *buf = api_alloc(2 * 4096);
	struct rmca_completion c;
	rmca_mr_t *mr;
	int rc;

	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 64, RMCA_ACCESS_LOCAL, &mr));
	rc = rmca_send(p->ep, buf + 4096, 16, mr, API_CTX(2));
	if (rc == RMCA_OK) {
		api_wait(p, API_CTX(2), &c);
		API_CHECK_MSG(c.status != RMCA_OK,
			      "a send from outside its region completed OK");
	} else {
		API_CHECK_RC(rc, RMCA_ERR_INVALID);
		api_progress_for(p, 100);
		API_CHECK(api_stashed() == 0);
	}
	api_token(p, 0, TOKEN_DONE);
}

static void test_buffer_outside_its_region_is_refused(void **state)
{
	const struct api_test t = {.server = outside_server,
				   .client = outside_client};

	(void)state;
	api_run(&t);
}

/* ---- rmca_strerror ---- */

static void test_strerror_names_every_status(void **state)
{
	const char *s[13];
	int i, j;

	(void)state;
	for (i = 0; i < 13; i++) {
		s[i] = rmca_strerror(-i);
		assert_non_null(s[i]);
		assert_true(s[i][0] != '\0');
		for (j = 0; j < i; j++)
			if (strcmp(s[i], s[j]) == 0)
				fail_msg("statuses %d and %d share \"%s\"", -i,
					 -j, s[i]);
	}
	assert_non_null(rmca_strerror(-1000));
	assert_non_null(rmca_strerror(1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_peer_death_completes_each_op_once),
		cmocka_unit_test(test_ep_close_cancels_outstanding_recvs),
		cmocka_unit_test(test_refused_call_posts_nothing),
		cmocka_unit_test(test_buffer_outside_its_region_is_refused),
		cmocka_unit_test(test_strerror_names_every_status),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
