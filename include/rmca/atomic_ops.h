/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rmca/atomic_ops.h - the arithmetic of rmca's atomics, for code that runs
 * them on a CPU: the core's emulation and its compare-and-swap loops, and
 * components whose target executes atomics in software. One definition, so
 * every path computes the same value.
 */
#ifndef RMCA_ATOMIC_OPS_H
#define RMCA_ATOMIC_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include <rmca.h>

/*
 * Field-wise a + b. Bit i of boundary set = bit i is the top of a field;
 * bit 63 always ends the last field. Each field adds modulo its width: the
 * add runs with every top bit cleared, so a carry can reach a top bit but
 * never pass it, and the top bit is then the carry plus both top bits,
 * modulo 2.
 */
static inline uint64_t rmca_masked_add(uint64_t a, uint64_t b,
				       uint64_t boundary)
{
	uint64_t top = boundary | (1ull << 63);

	return ((a & ~top) + (b & ~top)) ^ ((a ^ b) & top);
}

/*
 * The value op leaves in a word that held old. *write is false when the
 * word keeps its value (a CSWAP or MASKED_CSWAP whose compare fails).
 */
static inline uint64_t rmca_atomic_next(uint64_t old,
					const struct rmca_atomic *op,
					bool *write)
{
	*write = true;
	switch (op->kind) {
	case RMCA_ATOMIC_FADD:
		return old + op->operand;
	case RMCA_ATOMIC_CSWAP:
		*write = old == op->compare;
		return *write ? op->operand : old;
	case RMCA_ATOMIC_MASKED_FADD:
		return rmca_masked_add(old, op->operand, op->field_boundary);
	case RMCA_ATOMIC_MASKED_CSWAP:
		*write = ((old ^ op->compare) & op->compare_mask) == 0;
		return *write ? (old & ~op->swap_mask) |
					(op->operand & op->swap_mask) :
				old;
	}
	*write = false;
	return old;
}

/* Run op on *word, atomic with respect to every other CPU atomic on it;
 * returns the old value. */
static inline uint64_t rmca_atomic_cpu(uint64_t *word,
				       const struct rmca_atomic *op)
{
	uint64_t old = __atomic_load_n(word, __ATOMIC_SEQ_CST), val;
	bool write;

	if (op->kind == RMCA_ATOMIC_FADD)
		return __atomic_fetch_add(word, op->operand, __ATOMIC_SEQ_CST);
	for (;;) {
		val = rmca_atomic_next(old, op, &write);
		if (!write)
			return old;
		/* on failure old is reloaded with the current value */
		if (__atomic_compare_exchange_n(word, &old, val, false,
						__ATOMIC_SEQ_CST,
						__ATOMIC_SEQ_CST))
			return old;
	}
}

#endif
