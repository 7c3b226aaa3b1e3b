/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Contract: messages arrive byte for byte, in order, never dropped, and a
 * receive that is too small is truncated without overrun.
 */
#include <stdlib.h>
#include <string.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "api_util.h"

#define GUARD	   256
#define GUARD_SEED 0xa5

static void check_guard(const uint8_t *g, const char *what)
{
	long bad = api_pattern_check(g, GUARD, GUARD_SEED);

	API_CHECK_MSG(bad < 0, "%s: guard byte %ld overwritten", what, bad);
}

/*
 * The client sends len bytes of a pattern; the server receives them into a
 * larger buffer whose tail is a guard, checks, and echoes them back.
 */
static void echo_server(struct api_peer *p)
{
	size_t len = *(size_t *)p->arg;
	uint8_t *buf = api_alloc(len + 2 * GUARD);
	struct rmca_completion c;
	rmca_mr_t *mr;
	long bad;

	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, len + 2 * GUARD,
				 RMCA_ACCESS_LOCAL, &mr));
	api_pattern(buf + len, 2 * GUARD, GUARD_SEED);
	API_CHECK_OK(rmca_recv(p->ep, buf, len + GUARD, mr, API_CTX(1)));
	api_wait(p, API_CTX(1), &c);
	API_CHECK_RC(c.status, RMCA_OK);
	API_CHECK(c.op == RMCA_OP_RECV);
	API_CHECK(c.ep == p->ep);
	API_CHECK(c.revoked_rkey == 0);
	API_CHECK_MSG(c.len == len, "received %zu bytes of %zu", c.len, len);
	bad = api_pattern_check(buf, len, 7);
	API_CHECK_MSG(bad < 0, "byte %ld of %zu differs", bad, len);
	check_guard(buf + len, "after the message");
	api_send_wait(p, p->ep, buf, len, mr);
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(buf);
}

static void echo_client(struct api_peer *p)
{
	size_t len = *(size_t *)p->arg;
	uint8_t *out = api_alloc(len), *in = api_alloc(len + GUARD);
	struct rmca_completion c;
	rmca_mr_t *mo, *mi;
	long bad;

	API_CHECK_OK(rmca_mr_reg(p->ctx, out, len, RMCA_ACCESS_LOCAL, &mo));
	API_CHECK_OK(
		rmca_mr_reg(p->ctx, in, len + GUARD, RMCA_ACCESS_LOCAL, &mi));
	api_pattern(out, len, 7);
	API_CHECK_OK(rmca_recv(p->ep, in, len + GUARD, mi, API_CTX(2)));
	api_send_wait(p, p->ep, out, len, mo);
	api_wait(p, API_CTX(2), &c);
	API_CHECK_RC(c.status, RMCA_OK);
	API_CHECK_MSG(c.len == len, "echo: %zu bytes of %zu", c.len, len);
	bad = api_pattern_check(in, len, 7);
	API_CHECK_MSG(bad < 0, "echo: byte %ld of %zu differs", bad, len);
	API_CHECK_OK(rmca_mr_dereg(mo));
	API_CHECK_OK(rmca_mr_dereg(mi));
	free(out);
	free(in);
}

static void run_echo(size_t len)
{
	const struct api_test t = {
		.server = echo_server, .client = echo_client, .arg = &len};

	api_run(&t);
}

static void test_send_recv_small_byte_for_byte(void **state)
{
	(void)state;
	run_echo(1);
	run_echo(100);
}

static void test_send_recv_64k_byte_for_byte(void **state)
{
	(void)state;
	run_echo(64 * 1024);
}

static void test_send_recv_1m_byte_for_byte(void **state)
{
	(void)state;
	run_echo((1u << 20) + 13);
}

/* ---- order: 100 sends into 100 receives ---- */

#define NMSG 100
#define SLOT 64

static size_t msg_len(int i)
{
	return 8 + (size_t)(i % 50);
}

static void order_server(struct api_peer *p)
{
	uint8_t *buf = api_alloc(NMSG * SLOT);
	rmca_mr_t *mr;
	int i, n, seen = 0;
	long end;

	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, NMSG * SLOT, RMCA_ACCESS_LOCAL, &mr));
	for (i = 0; i < NMSG; i++)
		API_CHECK_OK(API_POST(p, rmca_recv(p->ep, buf + i * SLOT, SLOT,
						   mr, API_CTX(100 + i))));
	api_token(p, 0, API_TOKEN_GO);

	end = api_now_ms() + API_TIMEOUT_MS;
	while (seen < NMSG) {
		API_CHECK_MSG(api_now_ms() < end, "only %d of %d messages",
			      seen, NMSG);
		api_progress(p);
		n = api_stashed();
		for (; seen < n; seen++) {
			const struct rmca_completion *c = api_stash_at(seen);
			uint32_t seq;

			/* Receives complete in the order they were posted. */
			API_CHECK_MSG(c->user_ctx == API_CTX(100 + seen),
				      "completion %d is for receive %ld", seen,
				      (long)(uintptr_t)c->user_ctx - 100);
			API_CHECK_RC(c->status, RMCA_OK);
			API_CHECK(c->op == RMCA_OP_RECV);
			API_CHECK_MSG(c->len == msg_len(seen),
				      "receive %d: %zu bytes, expected %zu",
				      seen, c->len, msg_len(seen));
			memcpy(&seq, buf + seen * SLOT, 4);
			API_CHECK_MSG(seq == (uint32_t)seen,
				      "receive %d holds message %u", seen, seq);
			API_CHECK(api_pattern_check(buf + seen * SLOT + 4,
						    c->len - 4, seq) < 0);
		}
	}
	api_stash_clear();
}

static void order_client(struct api_peer *p)
{
	uint8_t *buf = api_alloc(NMSG * SLOT);
	rmca_mr_t *mr;
	int i;

	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, NMSG * SLOT, RMCA_ACCESS_LOCAL, &mr));
	for (i = 0; i < NMSG; i++) {
		uint32_t seq = (uint32_t)i;

		memcpy(buf + i * SLOT, &seq, 4);
		api_pattern(buf + i * SLOT + 4, msg_len(i) - 4, seq);
	}
	api_expect_token(p, 0, API_TOKEN_GO);
	for (i = 0; i < NMSG; i++)
		API_CHECK_OK(
			API_POST(p, rmca_send(p->ep, buf + i * SLOT, msg_len(i),
					      mr, API_CTX(200 + i))));
	for (i = 0; i < NMSG; i++)
		api_wait_status(p, API_CTX(200 + i), RMCA_OK);
}

static void test_hundred_messages_arrive_in_order(void **state)
{
	const struct api_test t = {.server = order_server,
				   .client = order_client};

	(void)state;
	api_run(&t);
}

/* ---- a send before the receive is posted waits ---- */

#define EARLY	    4
#define EARLY_POLLS 20000

static void early_server(struct api_peer *p)
{
	uint8_t *buf = api_alloc(EARLY * 4096);
	struct rmca_completion c;
	rmca_mr_t *mr;
	int i;

	/* No receive until the client has posted every send and seen none
	 * complete; meanwhile we progress, so the sends reach us and must
	 * wait (nothing dropped, nothing failed). */
	api_expect_token(p, 0, API_TOKEN_GO);
	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, EARLY * 4096, RMCA_ACCESS_LOCAL, &mr));
	for (i = 0; i < EARLY; i++)
		API_CHECK_OK(rmca_recv(p->ep, buf + i * 4096, 4096, mr,
				       API_CTX(1 + i)));
	for (i = 0; i < EARLY; i++) {
		api_wait(p, API_CTX(1 + i), &c);
		API_CHECK_RC(c.status, RMCA_OK);
		API_CHECK(c.len == 1000u + (size_t)i);
		API_CHECK_MSG(api_pattern_check(buf + i * 4096, c.len,
						(unsigned)i) < 0,
			      "message %d corrupted", i);
	}
}

static void early_client(struct api_peer *p)
{
	uint8_t *buf = api_alloc(EARLY * 4096);
	rmca_mr_t *mr;
	int i;

	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, EARLY * 4096, RMCA_ACCESS_LOCAL, &mr));
	for (i = 0; i < EARLY; i++) {
		api_pattern(buf + i * 4096, 1000u + (size_t)i, (unsigned)i);
		API_CHECK_OK(API_POST(p, rmca_send(p->ep, buf + i * 4096,
						   1000u + (size_t)i, mr,
						   API_CTX(10 + i))));
	}
	/* The peer has no receive yet, and posts none until our token: a
	 * send completing now would not be in a receive, whatever the
	 * timing. Progress a good while (a count, not a time) to give a
	 * wrong completion every chance to show. */
	for (i = 0; i < EARLY_POLLS; i++)
		api_progress(p);
	API_CHECK_MSG(api_stashed() == 0,
		      "%d completion(s) (first: op %d, status %d) before the "
		      "peer posted any receive",
		      api_stashed(),
		      api_stashed() ? (int)api_stash_at(0)->op : -1,
		      api_stashed() ? api_stash_at(0)->status : 0);
	api_token(p, 0, API_TOKEN_GO);
	for (i = 0; i < EARLY; i++)
		api_wait_status(p, API_CTX(10 + i), RMCA_OK);
}

static void test_send_before_recv_is_not_lost(void **state)
{
	const struct api_test t = {.server = early_server,
				   .client = early_client};

	(void)state;
	api_run(&t);
}

/* ---- truncation ---- */

#define SMALL 64
#define BIG   100

static void trunc_server(struct api_peer *p)
{
	uint8_t *buf = api_alloc(SMALL + GUARD);
	struct rmca_completion c;
	rmca_mr_t *mr;

	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, SMALL + GUARD, RMCA_ACCESS_LOCAL,
				 &mr));
	api_pattern(buf + SMALL, GUARD, GUARD_SEED);
	API_CHECK_OK(rmca_recv(p->ep, buf, SMALL, mr, API_CTX(1)));
	api_token(p, 0, API_TOKEN_GO);
	api_wait(p, API_CTX(1), &c);
	API_CHECK_RC(c.status, RMCA_ERR_TRUNCATED);
	API_CHECK(c.op == RMCA_OP_RECV);
	check_guard(buf + SMALL, "truncated receive");
	/* Keep serving until the sender has its answer. */
	api_expect_token(p, 0, API_TOKEN_GO);
	check_guard(buf + SMALL, "truncated receive, later");
}

static void trunc_client(struct api_peer *p)
{
	uint8_t buf[BIG];
	struct rmca_completion c;
	rmca_mr_t *mr;

	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, sizeof(buf), RMCA_ACCESS_LOCAL, &mr));
	api_pattern(buf, sizeof(buf), 3);
	api_expect_token(p, 0, API_TOKEN_GO);
	API_CHECK_OK(rmca_send(p->ep, buf, BIG, mr, API_CTX(2)));
	api_wait(p, API_CTX(2), &c);
	API_CHECK(c.op == RMCA_OP_SEND);
	API_CHECK_MSG(c.status != RMCA_OK,
		      "the send of a truncated message completed OK");
	api_token(p, 0, API_TOKEN_GO);
}

static void test_recv_smaller_than_message_is_truncated(void **state)
{
	const struct api_test t = {.server = trunc_server,
				   .client = trunc_client};

	(void)state;
	api_run(&t);
}

/* ---- a truncated send when the peer's disconnect is read first ---- */

/*
 * The sender meets the peer's disconnect before the send's own completion
 * (a busy process finds both waiting; verbs reads its connection events
 * before its completions). The send must still complete, with an error:
 * on iWARP its local completion would otherwise wait for ever for a READ
 * on a connection that is gone. The CQ is left unread (RMCATEST_FAIL=
 * verbs_cq_unread, nothing elsewhere) until a receive posted as a probe
 * completes at once: the endpoint has failed.
 */
#define TOKEN_SEEN 0x5ee

static void late_server(struct api_peer *p)
{
	uint8_t *buf = api_alloc(2 * SMALL + GUARD);
	struct rmca_completion c;
	rmca_mr_t *mr;

	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 2 * SMALL + GUARD,
				 RMCA_ACCESS_LOCAL, &mr));
	api_pattern(buf + 2 * SMALL, GUARD, GUARD_SEED);
	API_CHECK_OK(rmca_recv(p->ep, buf, SMALL, mr, API_CTX(1)));
	API_CHECK_OK(rmca_recv(p->ep, buf + SMALL, SMALL, mr, API_CTX(2)));
	api_token(p, 0, API_TOKEN_GO);
	api_wait(p, API_CTX(1), &c);
	API_CHECK_RC(c.status, RMCA_OK);
	api_wait(p, API_CTX(2), &c);
	API_CHECK_RC(c.status, RMCA_ERR_TRUNCATED);
	check_guard(buf + 2 * SMALL, "truncated receive");
	api_token(p, 0, TOKEN_SEEN);
	api_expect_token(p, 0, API_TOKEN_GO);
}

static void late_client(struct api_peer *p)
{
	uint8_t *buf = api_alloc(BIG + SMALL);
	struct rmca_completion c, pc;
	long end;
	int probes = 0;
	bool failed = false, done = false;
	rmca_mr_t *mr;

	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, BIG + SMALL, RMCA_ACCESS_LOCAL, &mr));
	api_pattern(buf, BIG, 5);
	api_expect_token(p, 0, API_TOKEN_GO);
	/* one message that fits: the peer's receives are known (credits) */
	API_CHECK_OK(rmca_send(p->ep, buf, 8, mr, API_CTX(1)));
	api_wait_status(p, API_CTX(1), RMCA_OK);

	setenv("RMCATEST_FAIL", "verbs_cq_unread", 1);
	API_CHECK_OK(rmca_send(p->ep, buf, BIG, mr, API_CTX(2)));
	api_expect_token(p, 0, TOKEN_SEEN);
	end = api_now_ms() + API_TIMEOUT_MS;
	while (!done && !failed) {
		/* a probe a millisecond, at most 64 waiting on a live
		 * endpoint */
		if (probes < 64) {
			int rc = rmca_recv(p->ep, buf + BIG, SMALL, mr,
					   API_CTX(100 + probes));

			API_CHECK_MSG(rc == RMCA_OK || rc == RMCA_ERR_AGAIN,
				      "a probe: %s", api_strerror(rc));
			probes += rc == RMCA_OK;
		}
		api_progress(p);
		done = api_take(API_CTX(2), &c);
		for (int i = 0; i < probes && !failed; i++)
			failed = api_take(API_CTX(100 + i), &pc) &&
				 pc.status != RMCA_OK;
		API_CHECK_MSG(api_now_ms() < end,
			      "the peer's disconnect never arrived");
		api_sleep_ms(1);
	}
	unsetenv("RMCATEST_FAIL");
	if (!done)
		api_wait(p, API_CTX(2), &c);
	API_CHECK(c.op == RMCA_OP_SEND);
	API_CHECK_MSG(c.status != RMCA_OK,
		      "the send of a truncated message completed OK");
	api_token(p, 0, API_TOKEN_GO);
}

static void test_truncated_send_completes_after_disconnect(void **state)
{
	const struct api_test t = {.server = late_server,
				   .client = late_client};

	(void)state;
	/* set (and empty) from the start: see verbs_fault.c */
	setenv("RMCATEST_FAIL", "", 1);
	api_run(&t);
	unsetenv("RMCATEST_FAIL");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_send_recv_small_byte_for_byte),
		cmocka_unit_test(test_send_recv_64k_byte_for_byte),
		cmocka_unit_test(test_send_recv_1m_byte_for_byte),
		cmocka_unit_test(test_hundred_messages_arrive_in_order),
		cmocka_unit_test(test_send_before_recv_is_not_lost),
		cmocka_unit_test(test_recv_smaller_than_message_is_truncated),
		cmocka_unit_test(
			test_truncated_send_completes_after_disconnect),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
