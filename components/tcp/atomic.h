/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Atomics executed by the target's CPU on an 8-byte word.
 */
#ifndef RMCA_TCP_ATOMIC_H
#define RMCA_TCP_ATOMIC_H

#include <stdbool.h>
#include <stdint.h>

#include <rmca.h>

/* Field-wise a + b: boundary bit i set = bit i is the top of a field; no
 * carry leaves a field (bit 63 always ends the last one). */
uint64_t rmca_tcp_masked_add(uint64_t a, uint64_t b, uint64_t boundary);

/* The value MASKED_CSWAP leaves in a word holding old; *swap tells whether
 * the compare matched. */
uint64_t rmca_tcp_masked_swap(uint64_t old, const struct rmca_atomic *op,
			      bool *swap);

/* Run op on *word atomically with respect to other CPU atomics; returns the
 * old value. */
uint64_t rmca_tcp_atomic_exec(uint64_t *word, const struct rmca_atomic *op);

#endif
