/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rmca/support/range.h - whether a peer's access falls inside a region.
 * Every target that serves a put, get or atomic itself (tcp, shm, the self
 * module, and the core for what it serves on the control channel) asks the
 * same question of bytes a peer chose: written once, by subtraction only,
 * so that an address and length the peer made wrap past 2^64 are refused
 * rather than passed.
 */
#ifndef RMCA_SUPPORT_RANGE_H
#define RMCA_SUPPORT_RANGE_H

#include <stdbool.h>
#include <stdint.h>

/* [addr, addr + len) lies within [base, base + size). */
static inline bool rmca_range_inside(uint64_t base, uint64_t size,
				     uint64_t addr, uint64_t len)
{
	return addr >= base && addr - base <= size &&
	       len <= size - (addr - base);
}

#endif
