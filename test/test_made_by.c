// SPDX-License-Identifier: BSD-3-Clause
/*
 * The core takes from a module only objects that module made: a region or
 * a connection whose base names another module (the stray test plugin's)
 * given back to the module and the call fails RMCA_ERR_PROTOCOL (on the
 * listening side the handshake fails and nothing is accepted); nothing
 * leaks (the sanitizer run checks).
 */
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdbool.h>
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
	/* only the stray component */
	return lone_plugin_setup(&plugin, "rmca_stray.so");
}

static int teardown(void **state)
{
	(void)state;
	lone_plugin_teardown(&plugin);
	return 0;
}

static void test_region_of_another_module_is_refused(void **state)
{
	static char buf[64];
	rmca_context_t *ctx = NULL;
	rmca_mr_t *mr = NULL;

	(void)state;
	assert_int_equal(rmca_init(&ctx), RMCA_OK);
	assert_int_equal(
		rmca_mr_reg(ctx, buf, sizeof(buf), RMCA_ACCESS_LOCAL, &mr),
		RMCA_ERR_PROTOCOL);
	assert_null(mr);
	rmca_finalize(ctx);
}

struct dialer {
	char where[64];
	int rc;
	atomic_bool done;
};

static void *dial(void *arg)
{
	struct dialer *d = arg;
	rmca_context_t *ctx = NULL;
	rmca_ep_t *ep = NULL;

	d->rc = rmca_init(&ctx);
	if (d->rc) {
		atomic_store(&d->done, true);
		return NULL;
	}
	d->rc = rmca_connect(ctx, d->where, 10000, &ep);
	if (!d->rc)
		rmca_ep_close(ep);
	rmca_finalize(ctx);
	atomic_store(&d->done, true);
	return NULL;
}

static void test_connection_of_another_module_is_refused(void **state)
{
	struct dialer d = {.rc = 1};
	rmca_context_t *ctx = NULL;
	rmca_listener_t *l = NULL;
	rmca_ep_t *ep = NULL;
	pthread_t t;
	int rc;

	(void)state;
	assert_int_equal(rmca_init(&ctx), RMCA_OK);
	assert_int_equal(rmca_listen(ctx, "127.0.0.1:0", &l), RMCA_OK);
	snprintf(d.where, sizeof(d.where), "127.0.0.1:%d",
		 rmca_listener_port(l));
	assert_int_equal(pthread_create(&t, NULL, dial, &d), 0);
	/* The listener serves the handshake until the dialer is done; the
	 * failed one is no endpoint to accept. */
	while (!atomic_load(&d.done)) {
		rc = rmca_accept(l, 20, &ep);
		assert_int_not_equal(rc, RMCA_OK);
		assert_null(ep);
	}
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(d.rc, RMCA_ERR_PROTOCOL);
	rmca_listener_close(l);
	rmca_finalize(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_region_of_another_module_is_refused),
		cmocka_unit_test(test_connection_of_another_module_is_refused),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
