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

static char dir[] = "/tmp/rmca-null-ops-XXXXXX";
static char so[PATH_MAX];

static int setup(void **state)
{
	const char *b = getenv("RMCATEST_BUILDDIR");
	char cmd[2 * PATH_MAX];

	(void)state;
	if (!mkdtemp(dir))
		return -1;
	snprintf(so, sizeof(so), "%s/rmca_nomr.so", dir);
	snprintf(cmd, sizeof(cmd), "cp '%s/.libs/rmca_nomr.so' '%s'",
		 b ? b : ".", so);
	if (system(cmd) != 0)
		return -1;
	/* only the nomr component: no module can register memory */
	setenv("RMCA_component_path", dir, 1);
	unsetenv("RMCA_transports");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(so);
	rmdir(dir);
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
