/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Over tcp, through the whole library: a use-once key handed out on one
 * endpoint neither works nor can be revoked through another endpoint of the
 * same region's owner, on the native paths and on the core's (revoke
 * message, emulated atomics).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <cmocka.h>

#include "api_util.h"

#define LEN	    4096
#define TOKEN_TRIED 0x7e1ed
#define TOKEN_GO    0x60
#define TOKEN_DONE  0xd0e

/* The owner: client 0 gets the key of its endpoint, client 1 the same key. */
static void owner(struct api_peer *p)
{
	uint64_t *tgt = api_alloc(LEN);
	char *in = api_alloc(64);
	struct rmca_completion c;
	rmca_mr_t *mt, *mi;
	uint64_t key0, key1;
	long bad;

	API_CHECK_OK(rmca_mr_reg(p->ctx, tgt, LEN,
				 RMCA_MR_USE_ONCE | RMCA_ACCESS_REMOTE_WRITE |
					 RMCA_ACCESS_REMOTE_ATOMIC,
				 &mt));
	API_CHECK_OK(rmca_mr_reg(p->ctx, in, 64, RMCA_ACCESS_LOCAL, &mi));
	key0 = rmca_mr_rkey(mt, p->eps[0]);
	key1 = rmca_mr_rkey(mt, p->eps[1]);
	API_CHECK(key0 && key1 && key0 != key1);
	API_CHECK_OK(rmca_recv(p->eps[1], in, 64, mi, API_CTX(1)));
	for (int i = 0; i < 2; i++) {
		api_put_u64(p, i, (uintptr_t)tgt);
		api_put_u64(p, i, key0);
	}

	/* client 1's send_inv of key0 revokes nothing here */
	api_wait(p, API_CTX(1), &c);
	API_CHECK_RC(c.status, RMCA_OK);
	API_CHECK_MSG(c.revoked_rkey == 0,
		      "a send_inv through another endpoint revoked %#llx",
		      (unsigned long long)c.revoked_rkey);
	/* and its atomic with key0 was refused */
	api_expect_token(p, 1, TOKEN_TRIED);
	for (int i = 0; i < LEN / 8; i++)
		API_CHECK_MSG(tgt[i] == 0, "word %d is %#llx", i,
			      (unsigned long long)tgt[i]);

	/* key0 still works for the endpoint it was handed out on */
	api_token(p, 0, TOKEN_GO);
	api_expect_token(p, 0, TOKEN_DONE);
	bad = api_pattern_check(tgt, LEN, 41);
	API_CHECK_MSG(bad < 0, "client 0's put: byte %ld", bad);
}

static void user(struct api_peer *p)
{
	uint8_t *src = api_alloc(LEN), *msg = api_alloc(64);
	uint64_t *res = api_alloc(8);
	struct rmca_atomic a = {.kind = RMCA_ATOMIC_FADD, .operand = 1};
	rmca_mr_t *ms, *mm, *mres;
	uint64_t addr = api_get_u64(p, 0), key = api_get_u64(p, 0);

	API_CHECK_OK(rmca_mr_reg(p->ctx, src, LEN, RMCA_ACCESS_LOCAL, &ms));
	API_CHECK_OK(rmca_mr_reg(p->ctx, msg, 64, RMCA_ACCESS_LOCAL, &mm));
	API_CHECK_OK(rmca_mr_reg(p->ctx, res, 8, RMCA_ACCESS_LOCAL, &mres));
	if (p->index == 1) {
		memcpy(msg, "inv", 4);
		API_CHECK_OK(API_POST(
			p, rmca_send_inv(p->ep, msg, 4, mm, key, API_CTX(2))));
		api_wait_status(p, API_CTX(2), RMCA_OK);
		a.raddr = addr;
		a.rkey = key;
		API_CHECK_OK(API_POST(
			p, rmca_atomic(p->ep, &a, res, mres, API_CTX(3))));
		api_wait_status(p, API_CTX(3), RMCA_ERR_REMOTE_ACCESS);
		api_token(p, 0, TOKEN_TRIED);
		return;
	}
	api_expect_token(p, 0, TOKEN_GO);
	api_pattern(src, LEN, 41);
	API_CHECK_OK(API_POST(p, rmca_put(p->ep, src, LEN, ms, addr, key,
					  RMCA_DELIVERED, API_CTX(4))));
	api_wait_status(p, API_CTX(4), RMCA_OK);
	api_token(p, 0, TOKEN_DONE);
}

static void key_is_bound_to_its_endpoint(void **state)
{
	const struct api_test t = {
		.server = owner, .client = user, .nclients = 2};

	(void)state;
	setenv("RMCA_transports", "tcp", 1);
	unsetenv("RMCA_tcp_caps");
	api_run(&t);
}

/* The same where the core serves the accesses: revoke messages and
 * emulated atomics ask the module whether the key is live on that
 * endpoint. */
static void key_is_bound_on_core_paths(void **state)
{
	const struct api_test t = {
		.server = owner, .client = user, .nclients = 2};

	(void)state;
	setenv("RMCA_transports", "tcp", 1);
	setenv("RMCA_tcp_caps", "^atomic,^masked_atomic,^send_inv", 1);
	api_run(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(key_is_bound_to_its_endpoint),
		cmocka_unit_test(key_is_bound_on_core_paths),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
