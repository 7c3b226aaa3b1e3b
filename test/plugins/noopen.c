// SPDX-License-Identifier: BSD-3-Clause
/* Right ABI, but no open(): the core must refuse it instead of crashing. */
#include <rmca/component.h>

RMCA_COMPONENT_EXPORT const struct rmca_component rmca_component = {
	.abi_version = RMCA_COMPONENT_ABI_VERSION,
	.module_ops_size = sizeof(struct rmca_module_ops),
	.name = "noopen",
	.version = "0.0.1",
	.description = "test component without entry points",
};
