/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Bootstrap hellos (framework/wire.h) built by hand, the one way the tests
 * that speak or check the wire need them: the codec's and the selection's
 * unit tests, and the peers that say hello by hand (attack_util.c).
 */
#ifndef RMCA_TEST_WIRE_UTIL_H
#define RMCA_TEST_WIRE_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "wire.h"

/* A hello of this wire version that has chosen nothing yet, from a peer
 * of this token, role, atomic mode and boot id, with no module yet. */
void wu_hello(struct rmca_hello *h, uint64_t token, uint8_t role,
	      uint8_t atomic_mode, const char *boot_id);

/* A module as a hello lists it, without an address. */
struct rmca_wire_mod wu_mod(const char *component, const char *device,
			    uint32_t caps, int priority);

/* The module's address blob: len bytes of addr (at most the field's). */
void wu_mod_addr(struct rmca_wire_mod *m, const void *addr, size_t len);

#endif
