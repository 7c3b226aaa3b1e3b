// SPDX-License-Identifier: BSD-3-Clause
/*
 * The core never calls an op a module left NULL: a third-party component
 * whose module has no mr_reg (the nomr test plugin) is refused when it opens,
 * rmca_init goes on without it, and a region no module could take is
 * refused at once (RMCA_ERR_NOT_FOUND: no module at all).
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>
#include <rmca.h>

#include "lone_plugin.h"

static struct lone_plugin plugin;

static int setup(void **state)
{
	(void)state;
	/* only the nomr component: no module can register memory */
	return lone_plugin_setup(&plugin, "rmca_nomr.so");
}

static int teardown(void **state)
{
	(void)state;
	lone_plugin_teardown(&plugin);
	return 0;
}

static void test_mr_reg_without_module_op_is_refused(void **state)
{
	static char buf[64];
	rmca_context_t *ctx = NULL;
	rmca_mr_t *mr = NULL;

	(void)state;
	assert_int_equal(rmca_init(&ctx), RMCA_OK);
	assert_int_equal(
		rmca_mr_reg(ctx, buf, sizeof(buf), RMCA_ACCESS_LOCAL, &mr),
		RMCA_ERR_NOT_FOUND);
	assert_null(mr);
	rmca_finalize(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mr_reg_without_module_op_is_refused),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
