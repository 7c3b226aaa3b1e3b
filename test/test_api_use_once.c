/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Contract: a use-once key is revoked by the peer's send_inv before the
 * RECV completion reports it; afterwards the key touches nothing. A
 * send_inv naming any other key is refused at once and posts nothing.
 */
#include <stdlib.h>
#include <string.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "api_util.h"

#define LEN	      4096
#define TOKEN_REVOKED 0x7e40
#define TOKEN_DONE    0xd0e

struct key_msg {
	uint64_t addr;
	uint64_t rkey;
};

static void once_server(struct api_peer *p)
{
	struct key_msg *km = api_alloc(sizeof(*km));
	uint8_t *src = api_alloc(LEN), *reply = api_alloc(64);
	struct rmca_completion c;
	rmca_mr_t *mk, *ms, *mrep;

	API_CHECK_OK(
		rmca_mr_reg(p->ctx, km, sizeof(*km), RMCA_ACCESS_LOCAL, &mk));
	API_CHECK_OK(rmca_mr_reg(p->ctx, src, LEN, RMCA_ACCESS_LOCAL, &ms));
	API_CHECK_OK(rmca_mr_reg(p->ctx, reply, 64, RMCA_ACCESS_LOCAL, &mrep));
	API_CHECK(api_recv_wait(p, p->ep, km, sizeof(*km), mk) == sizeof(*km));
	API_CHECK(km->rkey != 0);

	/* The transaction: the key works until the reply. */
	api_pattern(src, LEN, 41);
	API_CHECK_OK(
		API_POST(p, rmca_put(p->ep, src, LEN, ms, km->addr, km->rkey,
				     RMCA_DELIVERED, API_CTX(2))));
	api_wait_status(p, API_CTX(2), RMCA_OK);
	memcpy(reply, "done", 5);
	API_CHECK_OK(API_POST(
		p, rmca_send_inv(p->ep, reply, 5, mrep, km->rkey, API_CTX(3))));
	api_wait(p, API_CTX(3), &c);
	API_CHECK_RC(c.status, RMCA_OK);
	API_CHECK(c.op == RMCA_OP_SEND);

	api_expect_token(p, 0, TOKEN_REVOKED);
	api_pattern(src, LEN, 42);
	API_CHECK_OK(
		API_POST(p, rmca_put(p->ep, src, LEN, ms, km->addr, km->rkey,
				     RMCA_DELIVERED, API_CTX(4))));
	api_wait_status(p, API_CTX(4), RMCA_ERR_REMOTE_ACCESS);
	api_token(p, 0, TOKEN_DONE);
}

static void once_client(struct api_peer *p)
{
	uint8_t *tgt = api_alloc(LEN), *reply = api_alloc(64);
	struct key_msg *km = api_alloc(sizeof(*km));
	struct rmca_completion c;
	rmca_mr_t *mt, *mk, *mrep;
	uint64_t key;
	long bad;

	API_CHECK_OK(rmca_mr_reg(p->ctx, tgt, LEN,
				 RMCA_MR_USE_ONCE | RMCA_ACCESS_REMOTE_WRITE,
				 &mt));
	API_CHECK_OK(
		rmca_mr_reg(p->ctx, km, sizeof(*km), RMCA_ACCESS_LOCAL, &mk));
	API_CHECK_OK(rmca_mr_reg(p->ctx, reply, 64, RMCA_ACCESS_LOCAL, &mrep));
	key = rmca_mr_rkey(mt, p->ep);
	API_CHECK(key != 0);
	km->addr = (uint64_t)(uintptr_t)tgt;
	km->rkey = key;

	API_CHECK_OK(rmca_recv(p->ep, reply, 64, mrep, API_CTX(1)));
	api_send_wait(p, p->ep, km, sizeof(*km), mk);
	api_wait(p, API_CTX(1), &c);
	API_CHECK_RC(c.status, RMCA_OK);
	API_CHECK(c.op == RMCA_OP_RECV);
	API_CHECK(c.len == 5 && memcmp(reply, "done", 5) == 0);
	API_CHECK_MSG(c.revoked_rkey == key,
		      "RECV of a send_inv: revoked_rkey %#llx, key %#llx",
		      (unsigned long long)c.revoked_rkey,
		      (unsigned long long)key);
	bad = api_pattern_check(tgt, LEN, 41);
	API_CHECK_MSG(bad < 0, "the put before the reply: byte %ld", bad);

	api_token(p, 0, TOKEN_REVOKED);
	/* Serve the server's put with the revoked key. */
	api_expect_token(p, 0, TOKEN_DONE);
	bad = api_pattern_check(tgt, LEN, 41);
	API_CHECK_MSG(bad < 0, "a put with a revoked key wrote byte %ld", bad);
}

static void test_send_inv_revokes_use_once_key(void **state)
{
	const struct api_test t = {.server = once_server,
				   .client = once_client};

	(void)state;
	api_run(&t);
}

/* ---- send_inv of a key that is not use-once ---- */

static void plain_server(struct api_peer *p)
{
	uint8_t *msg = api_alloc(64);
	struct api_region r;
	rmca_mr_t *mm;

	api_get_region(p, 0, &r);
	API_CHECK_OK(rmca_mr_reg(p->ctx, msg, 64, RMCA_ACCESS_LOCAL, &mm));
	memcpy(msg, "bad", 4);
	API_CHECK_RC(rmca_send_inv(p->ep, msg, 4, mm, r.rkey, API_CTX(5)),
		     RMCA_ERR_INVALID);
	API_CHECK_RC(rmca_send_inv(p->ep, msg, 4, mm, 0, API_CTX(6)),
		     RMCA_ERR_INVALID);
	/* Nothing was posted, so nothing completes. */
	api_progress_for(p, 200);
	API_CHECK_MSG(api_stashed() == 0,
		      "a refused send_inv produced a completion (ctx %p)",
		      api_stash_at(0)->user_ctx);
	/* And the endpoint still works. */
	memcpy(msg, "good", 5);
	api_send_wait(p, p->ep, msg, 5, mm);
	api_expect_token(p, 0, TOKEN_DONE);
}

static void plain_client(struct api_peer *p)
{
	uint8_t *tgt = api_alloc(LEN), *in = api_alloc(64);
	rmca_mr_t *mt, *mi;

	API_CHECK_OK(
		rmca_mr_reg(p->ctx, tgt, LEN, RMCA_ACCESS_REMOTE_WRITE, &mt));
	API_CHECK_OK(rmca_mr_reg(p->ctx, in, 64, RMCA_ACCESS_LOCAL, &mi));
	API_CHECK_OK(rmca_recv(p->ep, in, 64, mi, API_CTX(1)));
	api_put_region(p, 0, tgt, LEN, mt, p->ep);
	{
		struct rmca_completion c;

		api_wait(p, API_CTX(1), &c);
		API_CHECK_RC(c.status, RMCA_OK);
		API_CHECK_MSG(c.len == 5 && memcmp(in, "good", 5) == 0,
			      "first message is \"%.*s\", not \"good\"",
			      (int)(c.len < 64 ? c.len : 64), (char *)in);
		API_CHECK(c.revoked_rkey == 0);
	}
	api_token(p, 0, TOKEN_DONE);
}

static void test_send_inv_of_ordinary_key_is_invalid(void **state)
{
	const struct api_test t = {.server = plain_server,
				   .client = plain_client};

	(void)state;
	api_run(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_send_inv_revokes_use_once_key),
		cmocka_unit_test(test_send_inv_of_ordinary_key_is_invalid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
