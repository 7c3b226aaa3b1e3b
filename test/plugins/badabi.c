// SPDX-License-Identifier: BSD-3-Clause
/*
 * A component built against a future ABI. Only abi_version may be read: the
 * rest is deliberately not a struct rmca_component, as it would not be.
 */
#include <stdint.h>

#include <rmca/component.h>

struct badabi_component {
	uint32_t abi_version;
	uint32_t poison[15];
};

RMCA_COMPONENT_EXPORT const struct badabi_component rmca_component = {
	.abi_version = RMCA_COMPONENT_ABI_VERSION + 1,
	.poison = { 0xdeadbeef, 0xdeadbeef, 0xdeadbeef, 0xdeadbeef },
};
