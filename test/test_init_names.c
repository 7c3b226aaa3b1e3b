/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A parameter value that names nothing that exists is an error: rmca_init
 * fails with RMCA_ERR_INVALID and one line names the parameter, the value
 * and what exists (components for RMCA_transports, the host's interfaces
 * for RMCA_tcp_if_include/exclude). rmca_init_inspect still starts, so
 * rmca_info can show the bad value.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <rmca.h>
#include <rmca/info.h>

static char logbuf[8192];

/* rmca_init (or _inspect) with var=value set, its log in logbuf. */
static int init_with(const char *var, const char *value, bool inspect,
		     rmca_context_t **ctx)
{
	FILE *f = tmpfile();
	int saved, rc;
	size_t n;

	assert_non_null(f);
	if (var)
		assert_int_equal(setenv(var, value, 1), 0);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	assert_true(saved >= 0);
	assert_true(dup2(fileno(f), STDERR_FILENO) >= 0);
	*ctx = NULL;
	rc = inspect ? rmca_init_inspect(ctx) : rmca_init(ctx);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(f);
	n = fread(logbuf, 1, sizeof(logbuf) - 1, f);
	logbuf[n] = 0;
	fclose(f);
	if (var)
		unsetenv(var);
	/* Shown in the test's log, for whoever reads a failure. */
	fprintf(stderr, "[%s=%s] rc %d, log:\n%s", var ? var : "-",
		var ? value : "", rc, logbuf);
	return rc;
}

static void expect_invalid(const char *var, const char *value,
			   const char *const *says)
{
	rmca_context_t *ctx;

	assert_int_equal(init_with(var, value, false, &ctx), RMCA_ERR_INVALID);
	assert_null(ctx);
	for (; *says; says++)
		if (!strstr(logbuf, *says))
			fail_msg("the error for %s=%s does not say \"%s\": %s",
				 var, value, *says, logbuf);
}

static void expect_ok(const char *var, const char *value)
{
	rmca_context_t *ctx;

	assert_int_equal(init_with(var, value, false, &ctx), RMCA_OK);
	assert_non_null(ctx);
	rmca_finalize(ctx);
}

static void test_transports_unknown_name_fails(void **state)
{
	(void)state;
	expect_invalid("RMCA_transports", "foo",
		       (const char *const[]){"RMCA_transports=foo",
					     "no component 'foo'",
					     "there are:", "tcp", NULL});
}

static void test_transports_case_differs_fails_with_hint(void **state)
{
	(void)state;
	expect_invalid("RMCA_transports", "TCP",
		       (const char *const[]){"RMCA_transports=TCP",
					     "did you mean 'tcp'?",
					     "case-sensitive", NULL});
}

static void test_transports_one_unknown_among_known_fails(void **state)
{
	(void)state;
	expect_invalid("RMCA_transports", "tcp,foo",
		       (const char *const[]){"RMCA_transports=tcp,foo",
					     "no component 'foo'", NULL});
}

static void test_transports_excluding_unknown_fails(void **state)
{
	(void)state;
	expect_invalid("RMCA_transports", "^foo",
		       (const char *const[]){"RMCA_transports=^foo",
					     "no component 'foo'", NULL});
}

static void test_transports_known_names_work(void **state)
{
	(void)state;
	expect_ok("RMCA_transports", "tcp");
	expect_ok("RMCA_transports", " tcp ,");
	/* Excluding one that exists leaves the others. */
	expect_ok("RMCA_transports", "^tcp");
}

static void test_if_include_unknown_interface_fails(void **state)
{
	(void)state;
	setenv("RMCA_transports", "tcp", 1);
	expect_invalid("RMCA_tcp_if_include", "nonexistent0",
		       (const char *const[]){"RMCA_tcp_if_include=nonexistent0",
					     "no interface 'nonexistent0'",
					     "lo", NULL});
	expect_invalid(
		"RMCA_tcp_if_include", "lo,nonexistent0",
		(const char *const[]){"no interface 'nonexistent0'", NULL});
	unsetenv("RMCA_transports");
}

static void test_if_exclude_unknown_interface_fails(void **state)
{
	(void)state;
	setenv("RMCA_transports", "tcp", 1);
	expect_invalid("RMCA_tcp_if_exclude", "nonexistent0",
		       (const char *const[]){"RMCA_tcp_if_exclude=nonexistent0",
					     "no interface 'nonexistent0'",
					     NULL});
	unsetenv("RMCA_transports");
}

static void test_if_include_and_exclude_fails(void **state)
{
	(void)state;
	setenv("RMCA_transports", "tcp", 1);
	setenv("RMCA_tcp_if_exclude", "lo", 1);
	expect_invalid("RMCA_tcp_if_include", "lo",
		       (const char *const[]){"RMCA_tcp_if_include=lo",
					     "RMCA_tcp_if_exclude=lo",
					     "not both", NULL});
	unsetenv("RMCA_tcp_if_exclude");
	unsetenv("RMCA_transports");
}

static void test_if_include_known_interface_works(void **state)
{
	rmca_context_t *ctx;
	struct rmca_info_module m;

	(void)state;
	setenv("RMCA_transports", "tcp", 1);
	setenv("RMCA_tcp_if_include", " lo", 1);
	assert_int_equal(init_with(NULL, NULL, false, &ctx), RMCA_OK);
	assert_int_equal(rmca_info_module(ctx, 0, &m), 0);
	assert_string_equal(m.component, "tcp");
	assert_string_equal(m.device, "lo");
	rmca_finalize(ctx);
	unsetenv("RMCA_tcp_if_include");
	unsetenv("RMCA_transports");
}

static void test_bad_caps_fails_too(void **state)
{
	(void)state;
	expect_invalid("RMCA_tcp_caps", "^atomics",
		       (const char *const[]){"RMCA_tcp_caps=^atomics",
					     "unknown capability", NULL});
}

/* rmca_info starts in inspect mode and shows the value that was refused. */
static void test_inspect_starts_and_shows_the_value(void **state)
{
	struct rmca_info_param p;
	rmca_context_t *ctx;
	bool seen = false;

	(void)state;
	assert_int_equal(init_with("RMCA_transports", "tcp,foo", true, &ctx),
			 RMCA_OK);
	assert_non_null(ctx);
	assert_non_null(strstr(logbuf, "no component 'foo'"));
	for (int i = 0; !rmca_info_param(ctx, i, &p); i++)
		if (!strcmp(p.name, "transports")) {
			assert_string_equal(p.value, "tcp,foo");
			seen = true;
		}
	assert_true(seen);
	rmca_finalize(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_transports_unknown_name_fails),
		cmocka_unit_test(test_transports_case_differs_fails_with_hint),
		cmocka_unit_test(test_transports_one_unknown_among_known_fails),
		cmocka_unit_test(test_transports_excluding_unknown_fails),
		cmocka_unit_test(test_transports_known_names_work),
		cmocka_unit_test(test_if_include_unknown_interface_fails),
		cmocka_unit_test(test_if_exclude_unknown_interface_fails),
		cmocka_unit_test(test_if_include_and_exclude_fails),
		cmocka_unit_test(test_if_include_known_interface_works),
		cmocka_unit_test(test_bad_caps_fails_too),
		cmocka_unit_test(test_inspect_starts_and_shows_the_value),
	};

	/* The environment is this test's: nothing inherited may select. */
	unsetenv("RMCA_transports");
	unsetenv("RMCA_tcp_if_include");
	unsetenv("RMCA_tcp_if_exclude");
	unsetenv("RMCA_tcp_caps");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
