/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tcp frame header at the bounds of what a peer may say, each next to
 * the frame just inside them: an error answer carries neither data nor an
 * operand (an atomic's refusal with an old value is a lie); a length of
 * TCP_MAX_PAYLOAD is taken, one more refused; the last atomic kind is
 * taken, the next refused. Through rmca_tcp_frame_decode() as the receive
 * path calls it, and rmca_tcp_frame_decode_full() behind it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <rmca.h>

#include "frame.h"

static int decode(const struct tcp_frame *f)
{
	uint8_t buf[TCP_HDR_LEN];
	struct tcp_frame d;
	const char *why = NULL;
	int inl, full;

	rmca_tcp_frame_encode(f, buf);
	inl = rmca_tcp_frame_decode(buf, sizeof(buf), &d, &why);
	full = rmca_tcp_frame_decode_full(buf, sizeof(buf), &d, &why);
	assert_int_equal(inl, full);
	if (inl)
		assert_non_null(why);
	return inl;
}

static void error_answers_carry_no_operand_nor_data(void **state)
{
	const int errs[] = {RMCA_ERR_REMOTE_ACCESS, RMCA_ERR_TRUNCATED};
	struct tcp_frame f = {.type = TCP_F_RESP, .id = 3};

	(void)state;
	f.operand = 1; /* a success may carry an atomic's old value */
	assert_int_equal(decode(&f), 0);
	for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
		f = (struct tcp_frame){
			.type = TCP_F_RESP, .id = 3, .status = errs[i]};
		assert_int_equal(decode(&f), 0);
		f.operand = 1;
		assert_int_equal(decode(&f), RMCA_ERR_PROTOCOL);
		f.operand = 0;
		f.len = 1;
		assert_int_equal(decode(&f), RMCA_ERR_PROTOCOL);
	}
}

static void lengths_up_to_the_most_are_taken(void **state)
{
	const uint8_t types[] = {TCP_F_SEND, TCP_F_PUT, TCP_F_GET, TCP_F_RESP};

	(void)state;
	for (size_t i = 0; i < sizeof(types); i++) {
		struct tcp_frame f = {
			.type = types[i], .id = 1, .len = TCP_MAX_PAYLOAD};

		assert_int_equal(decode(&f), 0);
		f.len = TCP_MAX_PAYLOAD + 1;
		assert_int_equal(decode(&f), RMCA_ERR_PROTOCOL);
	}
}

static void atomic_kinds_end_at_the_last(void **state)
{
	struct tcp_frame f = {.type = TCP_F_ATOMIC,
			      .id = 1,
			      .len = 8,
			      .akind = RMCA_ATOMIC_MASKED_CSWAP,
			      .compare = 1,
			      .mask1 = 1,
			      .mask2 = 1};

	(void)state;
	assert_int_equal(decode(&f), 0);
	f.akind = RMCA_ATOMIC_MASKED_CSWAP + 1;
	assert_int_equal(decode(&f), RMCA_ERR_PROTOCOL);
	f.compare = f.mask1 = f.mask2 = 0;
	assert_int_equal(decode(&f), RMCA_ERR_PROTOCOL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(error_answers_carry_no_operand_nor_data),
		cmocka_unit_test(lengths_up_to_the_most_are_taken),
		cmocka_unit_test(atomic_kinds_end_at_the_last),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
