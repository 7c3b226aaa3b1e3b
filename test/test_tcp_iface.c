/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tcp_if_include / tcp_if_exclude matching, as the core reads lists.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rmca/component.h>
#include <rmca/support/names.h>

#include "params.h"
#include "tcp_iface.h"

/* A core that reads lists as librmca does (the parameters stay empty). */
static const char *no_param(const struct rmca_core *core, const char *name)
{
	return "";
}

static const struct rmca_core_ops list_ops = {
	.list_selects = rmca_list_selects,
	.param_string = no_param,
};
static const struct rmca_core core = {.ops = &list_ops};

static void names_match_whole_entries_only(void **state)
{
	assert_true(rmca_tcp_if_selected(&core, "eth0,lo", "", "lo"));
	assert_true(rmca_tcp_if_selected(&core, "eth0,lo", "", "eth0"));
	assert_false(rmca_tcp_if_selected(&core, "eth0,lo", "", "eth"));
	assert_false(rmca_tcp_if_selected(&core, "eth0,lo", "", "eth01"));
	assert_false(rmca_tcp_if_selected(&core, "", "eth0, lo", "lo"));
	assert_true(rmca_tcp_if_selected(&core, "", "eth0,lo", "eth01"));
}

static void include_and_exclude_select(void **state)
{
	assert_true(rmca_tcp_if_selected(&core, "", "", "eth0"));
	assert_true(rmca_tcp_if_selected(&core, NULL, NULL, "eth0"));
	assert_true(rmca_tcp_if_selected(&core, "eth0", "", "eth0"));
	assert_false(rmca_tcp_if_selected(&core, "eth0", "", "lo"));
	assert_false(rmca_tcp_if_selected(&core, "", "lo", "lo"));
	assert_true(rmca_tcp_if_selected(&core, "", "lo", "eth0"));
	/* an include list in exclude form */
	assert_false(rmca_tcp_if_selected(&core, "^lo", "", "lo"));
	assert_true(rmca_tcp_if_selected(&core, "^lo", "", "eth0"));
}

/*
 * tcp reads tcp_if_include and tcp_if_exclude as the core reads every list
 * (rmca_list_selects): include takes what its list selects, exclude leaves
 * alone what its list selects, and a list of nothing but whitespace is
 * empty. Before, tcp read "^" only as the very first character, took a
 * blank include for a list of no names, and ignored '^' in exclude.
 */
static void selection_is_the_cores_list_reading(void **state)
{
	static const char *const lists[] = {
		"lo",	      " lo ",	  "eth0,,lo,", "^lo", " ^lo",
		"^ lo ,eth0", "  ^ eth0", "eth0",      "\t",  "",
	};
	static const char *const names[] = {"lo", "eth0", "eth01", "l"};

	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		const char *l = lists[i];
		bool blank = !*l || !strcmp(l, "\t");

		assert_int_equal(rmca_list_validate(l, NULL, 0), 0);
		for (size_t j = 0; j < sizeof(names) / sizeof(names[0]); j++) {
			const char *n = names[j];
			int sel = rmca_list_selects(l, n);
			int inc = rmca_tcp_if_selected(&core, l, "", n);
			int exc = rmca_tcp_if_selected(&core, "", l, n);

			if (inc != sel || exc != (blank ? 1 : !sel))
				print_message("# list '%s', name %s: include "
					      "%d exclude %d, the core %d\n",
					      l, n, inc, exc, sel);
			assert_int_equal(inc, sel);
			assert_int_equal(exc, blank ? 1 : !sel);
		}
	}
	/* the same reading decides what the probe takes */
	{
		struct tcp_laddr *la;
		char nm[64];
		int nl;

		assert_int_equal(rmca_tcp_iface_probe(&core, " ^lo", "", nm,
						      sizeof(nm), &la,
						      &nl) >= 0,
				 1);
		assert_false(rmca_names_has(nm, "lo"));
		free(la);
		assert_int_equal(rmca_tcp_iface_probe(&core, "", "^lo", nm,
						      sizeof(nm), &la, &nl),
				 1);
		assert_string_equal(nm, "lo");
		free(la);
		assert_int_equal(rmca_tcp_iface_probe(&core, " ", "", nm,
						      sizeof(nm), &la,
						      &nl) >= 1,
				 1);
		assert_true(rmca_names_has(nm, "lo"));
		free(la);
	}
}

static void probe_finds_loopback(void **state)
{
	struct tcp_laddr *l;
	char names[64];
	int n, nl;

	n = rmca_tcp_iface_probe(&core, "lo", "", names, sizeof(names), &l,
				 &nl);
	assert_int_equal(n, 1);
	assert_string_equal(names, "lo");
	assert_true(nl >= 1);
	free(l);
	n = rmca_tcp_iface_probe(&core, "", "", names, sizeof(names), &l, &nl);
	assert_true(n >= 1 && rmca_names_has(names, "lo"));
	free(l);
	n = rmca_tcp_iface_probe(&core, "no-such-if0", "", names, sizeof(names),
				 &l, &nl);
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
		cmocka_unit_test(selection_is_the_cores_list_reading),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
