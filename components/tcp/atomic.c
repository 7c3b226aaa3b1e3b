/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CPU atomics for the tcp target. The masked kinds are compare-and-swap
 * loops so that they stay atomic against FADD/CSWAP from other peers and
 * against the core's own CAS-loop emulation.
 */
#include "atomic.h"

uint64_t rmca_tcp_masked_add(uint64_t a, uint64_t b, uint64_t boundary)
{
	uint64_t top = boundary | (1ull << 63);
	uint64_t low = ~top;

	/*
	 * Add with every field's top bit cleared: a carry can reach the top
	 * bit but never pass it. The top bit itself is the carry plus both
	 * top bits, modulo 2, and its carry out is dropped.
	 */
	return ((a & low) + (b & low)) ^ ((a ^ b) & top);
}

uint64_t rmca_tcp_masked_swap(uint64_t old, const struct rmca_atomic *op,
			      bool *swap)
{
	*swap = ((old ^ op->compare) & op->compare_mask) == 0;
	if (!*swap)
		return old;
	return (old & ~op->swap_mask) | (op->operand & op->swap_mask);
}

static uint64_t next_value(uint64_t old, const struct rmca_atomic *op,
			   bool *write)
{
	*write = true;
	switch (op->kind) {
	case RMCA_ATOMIC_MASKED_FADD:
		return rmca_tcp_masked_add(old, op->operand,
					   op->field_boundary);
	case RMCA_ATOMIC_MASKED_CSWAP:
		return rmca_tcp_masked_swap(old, op, write);
	default:
		*write = false;
		return old;
	}
}

uint64_t rmca_tcp_atomic_exec(uint64_t *word, const struct rmca_atomic *op)
{
	uint64_t old, val;
	bool write;

	switch (op->kind) {
	case RMCA_ATOMIC_FADD:
		return __atomic_fetch_add(word, op->operand, __ATOMIC_SEQ_CST);
	case RMCA_ATOMIC_CSWAP:
		old = op->compare;
		__atomic_compare_exchange_n(word, &old, op->operand, false,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		return old;
	default:
		break;
	}

	old = __atomic_load_n(word, __ATOMIC_SEQ_CST);
	for (;;) {
		val = next_value(old, op, &write);
		if (!write)
			return old;
		/* On failure old is reloaded with the current value. */
		if (__atomic_compare_exchange_n(word, &old, val, false,
						__ATOMIC_SEQ_CST,
						__ATOMIC_SEQ_CST))
			return old;
	}
}
