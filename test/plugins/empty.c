// SPDX-License-Identifier: BSD-3-Clause
/*
 * A component that finds nothing to drive and says why, as a verbs
 * component on a host without RDMA devices does: rmca_info must show the
 * reason beside "0 modules".
 */
#include <stdlib.h>

#include <rmca/component.h>

static int empty_open(const struct rmca_core *core,
		      struct rmca_module ***modules, int *count)
{
	*modules = NULL;
	*count = 0;
	core->ops->no_module(core, "no %s device here (a test component)",
			     "empty");
	return 0;
}

static void empty_close(const struct rmca_core *core,
			struct rmca_module **modules, int count)
{
	free(modules);
}

RMCA_COMPONENT_EXPORT const struct rmca_component rmca_component = {
	.abi_version = RMCA_COMPONENT_ABI_VERSION,
	.module_ops_size = sizeof(struct rmca_module_ops),
	.name = "empty",
	.version = "0.0.1",
	.description = "test component that finds no device",
	.priority = 1,
	.open = empty_open,
	.close = empty_close,
};
