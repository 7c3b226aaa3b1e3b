/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Regions at the bounds of what rmca_mr_reg and rmca_mr_rkey take, in one
 * process (the context's endpoint to itself, self.c, stands for a peer):
 *
 * - a region of no bytes, or with an access flag rmca.h does not define,
 *   is refused RMCA_ERR_INVALID; every flag it defines is taken;
 * - a key is handed out only for a region of the endpoint's own context:
 *   for another context's region the answer is 0, the no-key.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include <rmca.h>

#include "ep.h"
#include "self.h"

#define ALL_FLAGS                                                              \
	(RMCA_ACCESS_LOCAL | RMCA_ACCESS_REMOTE_READ |                         \
	 RMCA_ACCESS_REMOTE_WRITE | RMCA_ACCESS_REMOTE_ATOMIC |                \
	 RMCA_MR_USE_ONCE)

static _Alignas(64) char mem[4096];

/* The highest flag defined is the use-once one: the next bit up, and the
 * top bit, are no flags. */
static void region_of_no_bytes_or_unknown_flag_is_refused(void **state)
{
	rmca_context_t *ctx;
	rmca_mr_t *mr = NULL;

	(void)state;
	assert_int_equal(rmca_init(&ctx), 0);
	assert_int_equal(rmca_mr_reg(ctx, mem, 0, RMCA_ACCESS_LOCAL, &mr),
			 RMCA_ERR_INVALID);
	assert_null(mr);
	assert_int_equal(
		rmca_mr_reg(ctx, mem, sizeof(mem),
			    RMCA_ACCESS_REMOTE_READ | (RMCA_MR_USE_ONCE << 1),
			    &mr),
		RMCA_ERR_INVALID);
	assert_int_equal(rmca_mr_reg(ctx, mem, sizeof(mem), 1u << 31, &mr),
			 RMCA_ERR_INVALID);
	assert_null(mr);
	assert_int_equal(rmca_mr_reg(ctx, mem, 1, ALL_FLAGS, &mr), 0);
	assert_non_null(mr);
	assert_int_equal(rmca_mr_dereg(mr), 0);
	rmca_finalize(ctx);
}

/* Two contexts of one process, each with its endpoint to itself and a
 * region: each endpoint hands out a key for its own context's region and
 * none for the other's. */
static void key_for_another_contexts_region_is_none(void **state)
{
	rmca_context_t *a, *b;
	rmca_ep_t *ea, *eb;
	rmca_mr_t *ma, *mb;

	(void)state;
	assert_int_equal(rmca_init(&a), 0);
	assert_int_equal(rmca_init(&b), 0);
	assert_int_equal(
		rmca_mr_reg(a, mem, 2048, RMCA_ACCESS_REMOTE_READ, &ma), 0);
	assert_int_equal(
		rmca_mr_reg(b, mem + 2048, 2048, RMCA_ACCESS_REMOTE_READ, &mb),
		0);
	assert_int_equal(rmca_ep_self(a, &ea), 0);
	assert_int_equal(rmca_ep_self(b, &eb), 0);
	assert_true(rmca_mr_rkey(ma, ea) != 0);
	assert_true(rmca_mr_rkey(mb, eb) != 0);
	assert_true(rmca_mr_rkey(mb, ea) == 0);
	assert_true(rmca_mr_rkey(ma, eb) == 0);
	rmca_finalize(a);
	rmca_finalize(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(region_of_no_bytes_or_unknown_flag_is_refused),
		cmocka_unit_test(key_for_another_contexts_region_is_none),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
