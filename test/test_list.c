/* SPDX-License-Identifier: BSD-3-Clause */
/* Include/exclude lists and the edit distance behind "did you mean". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "params.h"

static void include_list_selects_only_named(void **state)
{
	assert_int_equal(rmca_list_validate("ib,tcp", NULL, 0), 0);
	assert_int_equal(rmca_list_selects("ib,tcp", "ib"), 1);
	assert_int_equal(rmca_list_selects("ib,tcp", "tcp"), 1);
	assert_int_equal(rmca_list_selects("ib,tcp", "iwarp"), 0);
	assert_int_equal(rmca_list_selects("tcp", "tcp"), 1);
	assert_int_equal(rmca_list_selects("tcp", "ib"), 0);
}

static void exclude_list_selects_all_but_named(void **state)
{
	assert_int_equal(rmca_list_validate("^iwarp", NULL, 0), 0);
	assert_int_equal(rmca_list_selects("^iwarp", "iwarp"), 0);
	assert_int_equal(rmca_list_selects("^iwarp", "ib"), 1);
	assert_int_equal(rmca_list_selects("^iwarp,ib", "ib"), 0);
	assert_int_equal(rmca_list_selects("^iwarp,ib", "iwarp"), 0);
	assert_int_equal(rmca_list_selects("^iwarp,ib", "tcp"), 1);
}

static void empty_or_null_list_selects_all(void **state)
{
	assert_int_equal(rmca_list_validate(NULL, NULL, 0), 0);
	assert_int_equal(rmca_list_validate("", NULL, 0), 0);
	assert_int_equal(rmca_list_validate("  \t", NULL, 0), 0);
	assert_int_equal(rmca_list_selects(NULL, "tcp"), 1);
	assert_int_equal(rmca_list_selects("", "tcp"), 1);
	assert_int_equal(rmca_list_selects(" ", "ib"), 1);
}

static void mixing_include_and_exclude_is_an_error(void **state)
{
	char err[128] = "";

	assert_int_equal(rmca_list_validate("a,^b", err, sizeof(err)),
			 RMCA_ERR_INVALID);
	assert_string_equal(err, "cannot mix include and exclude");
	/* An invalid list selects nothing, whatever the name. */
	assert_int_equal(rmca_list_selects("a,^b", "a"), 0);
	assert_int_equal(rmca_list_selects("a,^b", "b"), 0);
	assert_int_equal(rmca_list_selects("a,^b", "c"), 0);
}

static void caret_only_starts_an_exclude_list(void **state)
{
	char err[128] = "";

	assert_int_equal(rmca_list_validate("^a,^b", err, sizeof(err)),
			 RMCA_ERR_INVALID);
	assert_non_null(strstr(err, "'^' may only start the list"));
	assert_int_equal(rmca_list_selects("^a,^b", "c"), 0);
	/* A caret inside a name is no name character either. */
	assert_int_equal(rmca_list_validate("a^b", err, sizeof(err)),
			 RMCA_ERR_INVALID);
	assert_non_null(strstr(err, "bad character"));
}

static void empty_elements_and_whitespace_are_ignored(void **state)
{
	assert_int_equal(rmca_list_validate("ib,,tcp,", NULL, 0), 0);
	assert_int_equal(rmca_list_selects("ib,,tcp,", "tcp"), 1);
	assert_int_equal(rmca_list_selects("ib,,tcp,", "iwarp"), 0);
	assert_int_equal(rmca_list_selects(" ib , tcp ", "ib"), 1);
	assert_int_equal(rmca_list_selects(" ib , tcp ", "tcp"), 1);
	assert_int_equal(rmca_list_selects(" ^ iwarp ,ib", "iwarp"), 0);
	assert_int_equal(rmca_list_selects(" ^ iwarp ,ib", "tcp"), 1);
	assert_int_equal(rmca_list_selects(",ib", "ib"), 1);
}

static void list_without_names_is_an_error(void **state)
{
	char err[128] = "";

	assert_int_equal(rmca_list_validate(",", err, sizeof(err)),
			 RMCA_ERR_INVALID);
	assert_string_equal(err, "no names in the list");
	assert_int_equal(rmca_list_validate("^", NULL, 0), RMCA_ERR_INVALID);
	assert_int_equal(rmca_list_validate("^ , ,", NULL, 0),
			 RMCA_ERR_INVALID);
	assert_int_equal(rmca_list_selects("^", "tcp"), 0);
}

static void names_are_compared_exactly(void **state)
{
	assert_int_equal(rmca_list_selects("tcp", "tc"), 0);
	assert_int_equal(rmca_list_selects("tc", "tcp"), 0);
	assert_int_equal(rmca_list_selects("tcp", "TCP"), 0);
	assert_int_equal(rmca_list_selects("^tcp", "tcp0"), 1);
	assert_int_equal(
		rmca_list_selects("eth0,192.168.0.0/24", "192.168.0.0/24"), 1);
}

static void whitespace_inside_a_name_is_an_error(void **state)
{
	char err[128] = "";

	assert_int_equal(rmca_list_validate("i b,tcp", err, sizeof(err)),
			 RMCA_ERR_INVALID);
	assert_non_null(strstr(err, "\"i b\""));
	assert_int_equal(rmca_list_selects("i b,tcp", "tcp"), 0);
}

static void validate_clears_err_and_tolerates_no_buffer(void **state)
{
	char err[16] = "stale";
	char tiny[4];

	assert_int_equal(rmca_list_validate("a,b", err, sizeof(err)), 0);
	assert_string_equal(err, "");
	/* A short buffer truncates, never overflows. */
	assert_int_equal(rmca_list_validate("a,^b", tiny, sizeof(tiny)),
			 RMCA_ERR_INVALID);
	assert_string_equal(tiny, "can");
	assert_int_equal(rmca_list_validate("a,^b", NULL, 0), RMCA_ERR_INVALID);
	assert_int_equal(rmca_list_selects("tcp", NULL), 0);
}

static void edit_distance_is_levenshtein(void **state)
{
	assert_int_equal(rmca_edit_distance("", ""), 0);
	assert_int_equal(rmca_edit_distance("abc", "abc"), 0);
	assert_int_equal(rmca_edit_distance("", "abc"), 3);
	assert_int_equal(rmca_edit_distance("abc", ""), 3);
	assert_int_equal(rmca_edit_distance("kitten", "sitting"), 3);
	assert_int_equal(rmca_edit_distance("sitting", "kitten"), 3);
	assert_int_equal(rmca_edit_distance("ab", "ba"), 2);
	assert_int_equal(rmca_edit_distance("flaw", "lawn"), 2);
	assert_int_equal(rmca_edit_distance("ib_priorty", "ib_priority"), 1);
	assert_int_equal(rmca_edit_distance("tcp_priority", "ib_priority"), 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(include_list_selects_only_named),
		cmocka_unit_test(exclude_list_selects_all_but_named),
		cmocka_unit_test(empty_or_null_list_selects_all),
		cmocka_unit_test(mixing_include_and_exclude_is_an_error),
		cmocka_unit_test(caret_only_starts_an_exclude_list),
		cmocka_unit_test(empty_elements_and_whitespace_are_ignored),
		cmocka_unit_test(list_without_names_is_an_error),
		cmocka_unit_test(names_are_compared_exactly),
		cmocka_unit_test(whitespace_inside_a_name_is_an_error),
		cmocka_unit_test(validate_clears_err_and_tolerates_no_buffer),
		cmocka_unit_test(edit_distance_is_levenshtein),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
