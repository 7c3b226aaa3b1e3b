// SPDX-License-Identifier: BSD-3-Clause
/*
 * The status a control answer carries becomes the completion of an
 * operation here, so the decoder takes only the statuses the sender's
 * core can give for that kind of answer: an atomic's, a get's and a
 * verification's answer say the access was valid or RMCA_ERR_REMOTE_ACCESS;
 * a rail key's ack says nothing else than 0; a revoke's ack the revoke's
 * error, but never RMCA_ERR_AGAIN (what a post returns) nor
 * RMCA_ERR_CANCELED (this side's own cancel, which leaves the endpoint
 * up). Any other is a protocol error.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "ctrl.h"

/* Whether the decoder takes an answer of type carrying status. */
static bool taken(uint8_t type, int status)
{
	struct rmca_ctrl_msg m = {.type = type, .id = 7, .status = status}, d;
	uint8_t buf[4 + RMCA_CTRL_MAX];
	char why[160];
	int n = rmca_ctrl_encode(&m, buf, sizeof(buf));

	assert_true(n > 4);
	return !rmca_ctrl_decode(buf + 4, (size_t)n - 4, &d, why, sizeof(why));
}

static void test_access_answers_carry_ok_or_remote_access(void **state)
{
	static const uint8_t types[] = {RMCA_CTRL_ATOMIC_RESP,
					RMCA_CTRL_GET_RESP,
					RMCA_CTRL_VERIFY_RESP};

	(void)state;
	for (size_t t = 0; t < sizeof(types); t++) {
		for (int st = 0; st >= RMCA_ERR_TIMEOUT - 1; st--) {
			bool want = !st || st == RMCA_ERR_REMOTE_ACCESS;

			if (taken(types[t], st) != want)
				fail_msg("type %u status %d: %s", types[t], st,
					 want ? "refused" : "taken");
		}
	}
}

static void test_rail_key_ack_carries_no_error(void **state)
{
	(void)state;
	assert_true(taken(RMCA_CTRL_RAIL_KEY_ACK, 0));
	for (int st = -1; st >= RMCA_ERR_TIMEOUT - 1; st--)
		if (taken(RMCA_CTRL_RAIL_KEY_ACK, st))
			fail_msg("rail key ack of status %d taken", st);
}

static void test_revoke_ack_carries_no_again_nor_cancel(void **state)
{
	(void)state;
	for (int st = 0; st >= RMCA_ERR_TIMEOUT - 1; st--) {
		bool want = st >= RMCA_ERR_TIMEOUT && st != RMCA_ERR_AGAIN &&
			    st != RMCA_ERR_CANCELED;

		if (taken(RMCA_CTRL_REVOKE_ACK, st) != want)
			fail_msg("revoke ack of status %d: %s", st,
				 want ? "refused" : "taken");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_access_answers_carry_ok_or_remote_access),
		cmocka_unit_test(test_rail_key_ack_carries_no_error),
		cmocka_unit_test(test_revoke_ack_carries_no_again_nor_cancel),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
