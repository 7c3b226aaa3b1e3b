/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Error paths of the verbs code that real devices never take, run on a real
 * device (rxe0 or siw0, inside the VM) through the test-only fault points of
 * RMCATEST_FAIL (components/verbs/verbs_fault.c):
 *
 * - a connection whose control memory cannot be allocated must not keep a
 *   reference on the device's PD (it did: the reference was taken after the
 *   failed allocation and never put back);
 * - a module that cannot be allocated must not leak its new device (it
 *   did), and a module whose set-up fails must not free a device that the
 *   probe still lists for the next port of the same HCA (it did; rxe and
 *   siw have one port, so here the case shows only that the device is
 *   freed, once, and that the failed set-up leaves nothing behind).
 *
 * The devices the component holds are counted by rmca_verbs_debug_devs, a
 * debug counter read from the loaded component with dlsym().
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <rmca/component.h> /* the cap bits */
#include <rmca/info.h>

#include "api_util.h"

/* A counter "name=N" from the module's detail line, -1 if absent. */
static long detail_counter(const struct rmca_info_module *m, const char *name)
{
	char key[64];
	const char *s;

	snprintf(key, sizeof(key), " %s=", name);
	s = strstr(m->detail, key);
	return s ? strtol(s + strlen(key), NULL, 10) : -1;
}

/* The loaded component's device counter (NULL when not loaded). */
static int *debug_devs(void)
{
	const char *path = getenv("RMCA_component_path");
	char file[4096];
	void *h = NULL;

	while (path && *path && !h) {
		size_t len = strcspn(path, ":");

		snprintf(file, sizeof(file), "%.*s/rmca_%s.so", (int)len, path,
			 api_transport());
		h = dlopen(file, RTLD_NOW | RTLD_NOLOAD);
		path += len;
		path += *path == ':';
	}
	return h ? dlsym(h, "rmca_verbs_debug_devs") : NULL;
}

struct opened {
	bool found;
	unsigned caps;
	long pd_users;
	int devs; /* devices held with the context open */
};

/* Open a context with RMCATEST_FAIL=fault, look, close it. */
static struct opened open_with(const char *fault)
{
	struct opened o = {0};
	struct rmca_info_module m;
	rmca_context_t *ctx;
	int *devs;

	setenv("RMCATEST_FAIL", fault, 1);
	assert_int_equal(rmca_init_inspect(&ctx), 0);
	unsetenv("RMCATEST_FAIL");
	o.found = api_find_module(ctx, &m);
	if (o.found) {
		o.caps = m.caps_probed;
		o.pd_users = detail_counter(&m, "pd_users");
	}
	devs = debug_devs();
	o.devs = devs ? *devs : -1;
	print_message("# RMCATEST_FAIL=%s: module %s, pd_users %ld, "
		      "devices %d\n",
		      fault, o.found ? "up" : "none", o.pd_users, o.devs);
	rmca_finalize(ctx);
	return o;
}

/*
 * Skips when this host has no module of our transport at all; else the
 * devices held while a context with the module is open (1, unless an
 * earlier case leaked one).
 */
static int need_module(void)
{
	struct opened o = open_with("");

	if (!o.found) {
		print_message("# SKIP no %s module here\n", api_transport());
		skip();
	}
	/* the counter is there and counts the module's device */
	assert_true(o.devs >= 1);
	return o.devs;
}

static void test_module_alloc_failure_frees_the_device(void **state)
{
	int base = need_module();
	struct opened o;

	(void)state;
	o = open_with("verbs_module_alloc");
	assert_false(o.found);
	assert_int_equal(o.devs, base - 1);
}

static void test_module_init_failure_frees_the_device_once(void **state)
{
	int base = need_module();
	struct opened o;

	(void)state;
	o = open_with("verbs_module_init");
	assert_false(o.found);
	assert_int_equal(o.devs, base - 1);
	/* and the device is whole for the next context */
	o = open_with("");
	assert_true(o.found);
	assert_int_equal(o.devs, base);
}

static void test_conn_alloc_failure_puts_the_pd_back(void **state)
{
	struct opened o;

	(void)state;
	(void)need_module();
	if (strcmp(api_transport(), "iwarp")) {
		/* only iwarp opens connections at init (its loopback
		 * probe); the iwarp run covers this path */
		print_message("# SKIP %s opens no connection at init\n",
			      api_transport());
		skip();
	}
	o = open_with("verbs_conn_alloc");
	assert_true(o.found);
	/* every probe connection failed, and gave its PD reference back */
	assert_false(o.caps & RMCA_CAP_LOOPBACK);
	assert_int_equal(o.pd_users, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_module_alloc_failure_frees_the_device),
		cmocka_unit_test(
			test_module_init_failure_frees_the_device_once),
		cmocka_unit_test(test_conn_alloc_failure_puts_the_pd_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
