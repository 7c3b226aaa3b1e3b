// SPDX-License-Identifier: BSD-3-Clause
/* The selection rule: both sides agree, loopback and caps are honoured,
 * and every skip leaves a reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <rmca.h>
#include <rmca/component.h>

#include "select.h"
#include "wire_util.h"

#define ALL (RMCA_CAP_LOOPBACK | RMCA_CAP_REMOTE_COMPLETION)

static void highest_priority_pair_wins(void **state)
{
	struct rmca_wire_mod a[] = {wu_mod("tcp", "lo", ALL, 10),
				    wu_mod("ib", "rxe0", ALL, 50)};
	struct rmca_wire_mod p[] = {wu_mod("ib", "rxe0", ALL, 50),
				    wu_mod("tcp", "lo", ALL, 10)};
	struct rmca_selection s;

	(void)state;
	assert_int_equal(rmca_select(a, 2, p, 2, 1, 0, 0, NULL, NULL, &s), 0);
	assert_int_equal(s.a, 1);
	assert_int_equal(s.p, 0);
	assert_non_null(strstr(s.reasons, "chose ib"));
}

static void both_sides_compute_the_same_pair(void **state)
{
	struct rmca_wire_mod a[] = {wu_mod("iwarp", "siw0", ALL, 40),
				    wu_mod("ib", "rxe0", ALL, 50),
				    wu_mod("ib", "rxe1", ALL, 50)};
	struct rmca_wire_mod p[] = {wu_mod("ib", "rxe1", ALL, 50),
				    wu_mod("ib", "rxe0", ALL, 50),
				    wu_mod("iwarp", "siw0", ALL, 40)};
	struct rmca_selection s1, s2;

	(void)state;
	assert_int_equal(rmca_select(a, 3, p, 3, 1, 0, 0, NULL, NULL, &s1), 0);
	assert_int_equal(rmca_select(a, 3, p, 3, 0, 0, 0, NULL, NULL, &s2), 0);
	assert_int_equal(s1.a, s2.a);
	assert_int_equal(s1.p, s2.p);
	assert_int_equal(s1.a, 1); /* ties: lowest active index, then passive */
	assert_int_equal(s1.p, 0);
}

static void local_peer_skips_module_without_loopback(void **state)
{
	struct rmca_wire_mod a[] = {
		wu_mod("iwarp", "siw0", RMCA_CAP_REMOTE_COMPLETION, 40),
		wu_mod("tcp", "lo", ALL, 10)};
	struct rmca_wire_mod p[] = {wu_mod("iwarp", "siw0", ALL, 40),
				    wu_mod("tcp", "lo", ALL, 10)};
	struct rmca_selection s;

	(void)state;
	assert_int_equal(rmca_select(a, 2, p, 2, 1, 1, 0, NULL, NULL, &s), 0);
	assert_int_equal(s.a, 1);
	assert_non_null(strstr(s.reasons, "cannot loop back"));
	/* the same pair is fine for a remote peer */
	assert_int_equal(rmca_select(a, 2, p, 2, 1, 0, 0, NULL, NULL, &s), 0);
	assert_int_equal(s.a, 0);
}

static void missing_component_on_one_side_is_explained(void **state)
{
	struct rmca_wire_mod a[] = {wu_mod("ib", "rxe0", ALL, 50)};
	struct rmca_wire_mod p[] = {wu_mod("tcp", "lo", ALL, 10)};
	struct rmca_selection s;

	(void)state;
	assert_int_equal(rmca_select(a, 1, p, 1, 1, 0, 0, NULL, NULL, &s),
			 RMCA_ERR_UNREACHABLE);
	assert_int_equal(s.a, -1);
	assert_non_null(strstr(s.reasons, "the passive side has no ib"));
	assert_non_null(strstr(s.reasons, "the active side has no tcp"));
}

static void required_caps_filter_pairs(void **state)
{
	struct rmca_wire_mod a[] = {
		wu_mod("ib", "rxe0", ALL, 50),
		wu_mod("tcp", "lo", ALL | RMCA_CAP_ATOMIC, 10)};
	struct rmca_wire_mod p[] = {
		wu_mod("ib", "rxe0", ALL, 50),
		wu_mod("tcp", "lo", ALL | RMCA_CAP_ATOMIC, 10)};
	struct rmca_selection s;

	(void)state;
	assert_int_equal(rmca_select(a, 2, p, 2, 1, 0, RMCA_CAP_ATOMIC, NULL,
				     NULL, &s), 0);
	assert_int_equal(s.a, 1);
}

static int refuse_ib(void *arg, int li, int pi, char *why, size_t len)
{
	const struct rmca_wire_mod *local = arg;

	(void)pi;
	if (!strcmp(local[li].component, "ib")) {
		strncpy(why, "no route", len);
		return 0;
	}
	return 1;
}

static void unreachable_pairs_are_skipped_with_the_modules_reason(void **state)
{
	struct rmca_wire_mod a[] = {wu_mod("ib", "rxe0", ALL, 50),
				    wu_mod("tcp", "lo", ALL, 10)};
	struct rmca_wire_mod p[] = {wu_mod("tcp", "lo", ALL, 10),
				    wu_mod("ib", "rxe0", ALL, 50)};
	struct rmca_selection s;

	(void)state;
	/* passive side judging its own modules (p is local) */
	assert_int_equal(rmca_select(a, 2, p, 2, 0, 0, 0, refuse_ib, p, &s), 0);
	assert_int_equal(s.a, 1);
	assert_int_equal(s.p, 0);
	assert_non_null(strstr(s.reasons, "unreachable: no route"));
}

/* Devices on two subnets: a device reaches only the peer's device on its
 * own subnet (rxe0 <-> rxe0, rxe1 <-> rxe1), and rxe1 carries the route the
 * peer was addressed on. */
static int route_of(void *arg, int li, int pi, char *why, size_t len)
{
	const struct rmca_wire_mod *local = arg;

	if (li != pi) {
		snprintf(why, len, "%s: route leaves through the other",
			 local[li].device);
		return 0;
	}
	if (!strcmp(local[li].device, "rxe1")) {
		snprintf(why, len, "rxe1 carries the route to 10.0.2.1");
		return 2;
	}
	return 1;
}

static void the_addressed_route_wins_among_equal_priorities(void **state)
{
	struct rmca_wire_mod a[] = {wu_mod("ib", "rxe0", ALL, 50),
				    wu_mod("ib", "rxe1", ALL, 50)};
	struct rmca_wire_mod p[] = {wu_mod("ib", "rxe0", ALL, 50),
				    wu_mod("ib", "rxe1", ALL, 50)};
	struct rmca_selection s;

	(void)state;
	assert_int_equal(rmca_select(a, 2, p, 2, 0, 1, 0, route_of, p, &s), 0);
	assert_int_equal(s.a, 1);
	assert_int_equal(s.p, 1);
	assert_non_null(strstr(s.reasons, "skip ib rxe0<->rxe1: unreachable: "
					  "rxe1: route leaves through"));
	assert_non_null(strstr(s.reasons,
			       "chose ib rxe1<->rxe1 (priority 50+50; rxe1 "
			       "carries the route to 10.0.2.1)"));
	/* but never over a higher priority */
	a[0].priority = p[0].priority = 60;
	assert_int_equal(rmca_select(a, 2, p, 2, 0, 1, 0, route_of, p, &s), 0);
	assert_int_equal(s.a, 0);
	assert_int_equal(s.p, 0);
}

/* Rails: the other pairs of the chosen transport at the chosen priority,
 * no device of either side in two pairs, other transports and lower
 * priorities never, and at most max - 1 of them. */
static void rails_pair_distinct_devices_of_equal_priority(void **state)
{
	struct rmca_wire_mod a[] = {
		wu_mod("ib", "rxe0", ALL, 50), wu_mod("ib", "rxe1", ALL, 50),
		wu_mod("ib", "rxe2", ALL, 40), wu_mod("tcp", "lo", ALL, 50)};
	struct rmca_wire_mod p[] = {
		wu_mod("ib", "rxe0", ALL, 50), wu_mod("ib", "rxe1", ALL, 50),
		wu_mod("ib", "rxe2", ALL, 40), wu_mod("tcp", "lo", ALL, 50)};
	uint8_t ra[8], rp[8];
	struct rmca_selection s;

	(void)state;
	assert_int_equal(rmca_select(a, 4, p, 4, 0, 1, 0, route_of, p, &s), 0);
	assert_int_equal(s.a, 1);
	assert_int_equal(
		rmca_select_rails(a, 4, p, 4, 0, 1, route_of, p, 4, &s, ra, rp),
		1);
	/* rxe0<->rxe1 is unreachable, rxe2 is of a lower priority, tcp is
	 * another transport: rxe0<->rxe0 alone */
	assert_int_equal(ra[0], 0);
	assert_int_equal(rp[0], 0);
	assert_non_null(strstr(s.reasons, "rail 1: ib rxe0<->rxe0"));
	/* max 1: none */
	assert_int_equal(
		rmca_select_rails(a, 4, p, 4, 0, 1, route_of, p, 1, &s, ra, rp),
		0);
	/* every pair reaches: still each device once */
	assert_int_equal(rmca_select(a, 2, p, 2, 0, 1, 0, NULL, NULL, &s), 0);
	assert_int_equal(
		rmca_select_rails(a, 2, p, 2, 0, 1, NULL, NULL, 4, &s, ra, rp),
		1);
	assert_int_equal(ra[0], s.a == 0 ? 1 : 0);
	assert_int_equal(rp[0], s.p == 0 ? 1 : 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(highest_priority_pair_wins),
		cmocka_unit_test(both_sides_compute_the_same_pair),
		cmocka_unit_test(local_peer_skips_module_without_loopback),
		cmocka_unit_test(missing_component_on_one_side_is_explained),
		cmocka_unit_test(required_caps_filter_pairs),
		cmocka_unit_test(
			unreachable_pairs_are_skipped_with_the_modules_reason),
		cmocka_unit_test(
			the_addressed_route_wins_among_equal_priorities),
		cmocka_unit_test(rails_pair_distinct_devices_of_equal_priority),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
