/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The atomics a tcp target runs on its CPU (rmca/atomic_ops.h): masked
 * fetch-and-add keeps every field to itself, masked compare-and-swap swaps
 * only the masked bits, and both stay atomic against concurrent atomics.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <rmca/atomic_ops.h>

/* Field by field, the slow way. */
static uint64_t reference_masked_add(uint64_t a, uint64_t b, uint64_t bnd)
{
	uint64_t out = 0;
	int lo = 0;

	bnd |= 1ull << 63;
	for (int hi = 0; hi < 64; hi++) {
		uint64_t mask, sum;

		if (!(bnd >> hi & 1))
			continue;
		mask = (hi - lo == 63) ? ~0ull : ((1ull << (hi - lo + 1)) - 1)
							 << lo;
		sum = ((a & mask) >> lo) + ((b & mask) >> lo);
		out |= (sum << lo) & mask;
		lo = hi + 1;
	}
	return out;
}

static uint64_t xorshift(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static void masked_fadd_wraps_within_each_field(void **state)
{
	/* bytes as fields: 0xff + 1 wraps to 0 in every byte, no carry */
	assert_true(rmca_masked_add(0x00ff00ff00ff00ffull,
				    0x0001000100010001ull,
				    0x8080808080808080ull) == 0);
	/* two 32-bit counters */
	assert_true(rmca_masked_add(0x00000001ffffffffull, 6, 1ull << 31) ==
		    0x0000000100000005ull);
	assert_true(rmca_masked_add(0xffffffff00000000ull,
				    0x0000000100000000ull,
				    1ull << 31) == 0);
	/* no boundary: a plain 64-bit add */
	assert_true(rmca_masked_add(0xffffffffffffffffull, 2, 0) == 1);
	/* one-bit fields: xor */
	assert_true(rmca_masked_add(0xf0f0, 0xff00, ~0ull) == (0xf0f0 ^ 0xff00));
}

static void masked_fadd_matches_fieldwise_reference(void **state)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;

	for (int i = 0; i < 100000; i++) {
		uint64_t a = xorshift(&x), b = xorshift(&x);
		uint64_t bnd = xorshift(&x) & xorshift(&x);

		assert_true(rmca_masked_add(a, b, bnd) ==
			    reference_masked_add(a, b, bnd));
	}
}

static void masked_cswap_swaps_only_masked_bits_on_match(void **state)
{
	struct rmca_atomic op = {
		.kind = RMCA_ATOMIC_MASKED_CSWAP,
		.compare = 0x00000000000000abull,
		.compare_mask = 0x00000000000000ffull,
		.operand = 0x1234567800000000ull,
		.swap_mask = 0xffff000000000000ull,
	};
	uint64_t w = 0x55555555555555abull;

	/* low byte matches, the rest of the word is ignored */
	assert_true(rmca_atomic_cpu(&w, &op) == 0x55555555555555abull);
	assert_true(w == 0x12345555555555abull);

	/* low byte differs: nothing changes, old value returned */
	w = 0x55555555555555acull;
	assert_true(rmca_atomic_cpu(&w, &op) == 0x55555555555555acull);
	assert_true(w == 0x55555555555555acull);

	/* empty compare mask: always swaps */
	op.compare_mask = 0;
	assert_true(rmca_atomic_cpu(&w, &op) == 0x55555555555555acull);
	assert_true(w == 0x12345555555555acull);
}

static void plain_fadd_and_cswap_return_old_value(void **state)
{
	struct rmca_atomic add = { .kind = RMCA_ATOMIC_FADD, .operand = 3 };
	struct rmca_atomic cas = { .kind = RMCA_ATOMIC_CSWAP, .compare = 13,
				   .operand = 99 };
	uint64_t w = 10;

	assert_true(rmca_atomic_cpu(&w, &add) == 10 && w == 13);
	assert_true(rmca_atomic_cpu(&w, &cas) == 13 && w == 99);
	assert_true(rmca_atomic_cpu(&w, &cas) == 99 && w == 99);
}

#define ROUNDS 200000
static uint64_t shared_word;

static void *masked_adder(void *arg)
{
	struct rmca_atomic op = { .kind = RMCA_ATOMIC_MASKED_FADD,
				  .operand = 1,
				  .field_boundary = 1ull << 31 };

	for (int i = 0; i < ROUNDS; i++)
		rmca_atomic_cpu(&shared_word, &op);
	return arg;
}

static void *plain_adder(void *arg)
{
	struct rmca_atomic op = { .kind = RMCA_ATOMIC_FADD,
				  .operand = 1ull << 32 };

	for (int i = 0; i < ROUNDS; i++)
		rmca_atomic_cpu(&shared_word, &op);
	return arg;
}

static void masked_fadd_is_atomic_against_fadd(void **state)
{
	pthread_t t[3];

	shared_word = 0;
	assert_int_equal(pthread_create(&t[0], NULL, masked_adder, NULL), 0);
	assert_int_equal(pthread_create(&t[1], NULL, masked_adder, NULL), 0);
	assert_int_equal(pthread_create(&t[2], NULL, plain_adder, NULL), 0);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	/* no lost update in either half */
	assert_true((shared_word & 0xffffffffull) == 2 * ROUNDS);
	assert_true((shared_word >> 32) == ROUNDS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(masked_fadd_wraps_within_each_field),
		cmocka_unit_test(masked_fadd_matches_fieldwise_reference),
		cmocka_unit_test(masked_cswap_swaps_only_masked_bits_on_match),
		cmocka_unit_test(plain_fadd_and_cswap_return_old_value),
		cmocka_unit_test(masked_fadd_is_atomic_against_fadd),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
