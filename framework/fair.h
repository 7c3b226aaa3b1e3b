/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fair.h - at a listener's bound, which waiting connection gives way: the
 * one rule behind every listener (the core's, tcp's data port, shm's
 * socket, the verbs modules' parked requests), offered to the modules as
 * the core op fair_victim (rmca/component.h says the rule).
 */
#ifndef RMCA_FAIR_H
#define RMCA_FAIR_H

#include <stddef.h>
#include <stdint.h>

#include <rmca/component.h>

struct rmca_fair_slot;

/* The counts of a call, kept for the next one (all zero: none yet). */
struct rmca_fair {
	struct rmca_fair_slot *t;
	size_t cap;   /* slots, a power of two */
	uint32_t gen; /* the current call's: slots of another call are free */
	uint64_t key[2]; /* the hash's, drawn with each new table */
};

/* SipHash-2-4 of len bytes at data under key k (k[0] the key's first 8
 * bytes, little-endian). */
uint64_t rmca_fair_hash(const uint64_t k[2], const void *data, size_t len);

/* fair_victim, its counts in f: see rmca_core_ops.fair_victim. */
const void *rmca_fair_victim(struct rmca_fair *f, size_t n, rmca_fair_next next,
			     void *arg, const struct rmca_fair_entry *newcomer);
void rmca_fair_fini(struct rmca_fair *f);

#endif
