/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tcp_if_include / tcp_if_exclude matching.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "tcp_iface.h"

static void names_match_whole_entries_only(void **state)
{
	assert_true(rmca_tcp_name_in_list("eth0,lo", "lo"));
	assert_true(rmca_tcp_name_in_list("eth0,lo", "eth0"));
	assert_false(rmca_tcp_name_in_list("eth0,lo", "eth"));
	assert_false(rmca_tcp_name_in_list("eth0,lo", "eth01"));
	assert_false(rmca_tcp_name_in_list("", "lo"));
	assert_true(rmca_tcp_name_in_list("^lo", "lo"));
}

static void include_and_exclude_select(void **state)
{
	assert_true(rmca_tcp_if_selected("", "", "eth0"));
	assert_true(rmca_tcp_if_selected(NULL, NULL, "eth0"));
	assert_true(rmca_tcp_if_selected("eth0", "", "eth0"));
	assert_false(rmca_tcp_if_selected("eth0", "", "lo"));
	assert_false(rmca_tcp_if_selected("", "lo", "lo"));
	assert_true(rmca_tcp_if_selected("", "lo", "eth0"));
	/* an include list in exclude form */
	assert_false(rmca_tcp_if_selected("^lo", "", "lo"));
	assert_true(rmca_tcp_if_selected("^lo", "", "eth0"));
}

static void probe_finds_loopback(void **state)
{
	struct tcp_laddr *l;
	char names[64];
	int n, nl;

	n = rmca_tcp_iface_probe("lo", "", names, sizeof(names), &l, &nl);
	assert_int_equal(n, 1);
	assert_string_equal(names, "lo");
	assert_true(nl >= 1);
	free(l);
	n = rmca_tcp_iface_probe("", "", names, sizeof(names), &l, &nl);
	assert_true(n >= 1 && rmca_tcp_name_in_list(names, "lo"));
	free(l);
	n = rmca_tcp_iface_probe("no-such-if0", "", names, sizeof(names), &l,
				 &nl);
	assert_int_equal(n, 0);
	assert_string_equal(names, "");
	free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(names_match_whole_entries_only),
		cmocka_unit_test(include_and_exclude_select),
		cmocka_unit_test(probe_finds_loopback),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
