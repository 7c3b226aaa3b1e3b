// SPDX-License-Identifier: BSD-3-Clause
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire_util.h"

void wu_hello(struct rmca_hello *h, uint64_t token, uint8_t role,
	      uint8_t atomic_mode, const char *boot_id)
{
	memset(h, 0, sizeof(*h));
	h->version = RMCA_WIRE_VERSION;
	h->kind = RMCA_WIRE_HELLO;
	h->token = token;
	h->role = role;
	h->atomic_mode = atomic_mode;
	h->choice_a = h->choice_p = RMCA_WIRE_NO_CHOICE;
	snprintf(h->boot_id, sizeof(h->boot_id), "%s", boot_id);
}

struct rmca_wire_mod wu_mod(const char *component, const char *device,
			    uint32_t caps, int priority)
{
	struct rmca_wire_mod m = {.caps = caps, .priority = priority};

	snprintf(m.component, sizeof(m.component), "%s", component);
	snprintf(m.device, sizeof(m.device), "%s", device);
	return m;
}

void wu_mod_addr(struct rmca_wire_mod *m, const void *addr, size_t len)
{
	if (len > sizeof(m->addr))
		abort(); /* a test's own mistake */
	m->addr_len = (uint16_t)len;
	memcpy(m->addr, addr, len);
}
