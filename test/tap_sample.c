/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Cases with known verdicts for test_tap_rule.sh, which runs this program
 * and checks how each case is counted (never run by make check directly:
 * some of its cases fail on purpose).
 */
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "api_util.h"
#include "tap_skip.h"

static void case_pass(void **state)
{
	(void)state;
	assert_true(1);
}

static void case_skip_with_reason(void **state)
{
	(void)state;
	TAP_SKIP("nothing to run here (%d)", 42);
}

static void case_skip_without_reason(void **state)
{
	(void)state;
	skip();
}

static void case_fail(void **state)
{
	(void)state;
	fail_msg("failing on purpose");
}

/* api_run: the client skips; the server, waiting on it, skips too. */
static void client_skips(struct api_peer *p)
{
	api_skip(p, "the client cannot do this here");
}

static void server_waits(struct api_peer *p)
{
	api_expect_token(p, 0, API_TOKEN_GO);
}

static void case_api_client_skips(void **state)
{
	const struct api_test t = {
		.server = server_waits, .client = client_skips, .manual = true};

	(void)state;
	api_run(&t);
}

/* api_run: the server skips but a client fails: the case fails. */
static void server_skips(struct api_peer *p)
{
	api_skip(p, "the server cannot do this here");
}

static void client_fails(struct api_peer *p)
{
	API_CHECK_MSG(0, "client failing on purpose");
}

static void case_api_server_skips_client_fails(void **state)
{
	const struct api_test t = {
		.server = server_skips, .client = client_fails, .manual = true};

	(void)state;
	api_run(&t);
}

/* api_run: a child ends "skipped" but never said why: a failure. */
static void server_silent_skip(struct api_peer *p)
{
	_exit(API_EXIT_SKIP);
}

static void client_passes(struct api_peer *p)
{
}

static void case_api_skip_without_reason(void **state)
{
	const struct api_test t = {.server = server_silent_skip,
				   .client = client_passes,
				   .manual = true};

	(void)state;
	api_run(&t);
}

/* The other spelling of a reason, as some tests print it. */
static void case_skip_with_reason_spelt_skip(void **state)
{
	(void)state;
	print_message("# SKIP said the other way\n");
	skip();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(case_pass),
		cmocka_unit_test(case_skip_with_reason),
		cmocka_unit_test(case_skip_without_reason),
		cmocka_unit_test(case_fail),
		cmocka_unit_test(case_api_client_skips),
		cmocka_unit_test(case_api_server_skips_client_fails),
		cmocka_unit_test(case_api_skip_without_reason),
		cmocka_unit_test(case_skip_with_reason_spelt_skip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
