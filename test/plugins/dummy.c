// SPDX-License-Identifier: BSD-3-Clause
/*
 * A valid component with one module that can do nothing: proves that the
 * broken plugins next to it do not stop it from loading.
 */
#include <rmca/component.h>

#include "unsupported.h"

static int dummy_addr(struct rmca_module *m, void *buf, size_t *len)
{
	return RMCA_ERR_UNSUPPORTED;
}

static const struct rmca_module_ops dummy_ops = {
	.addr = dummy_addr,
	UNSUPPORTED_OPS,
};

static int dummy_open(const struct rmca_core *core,
		      struct rmca_module ***modules, int *count)
{
	return test_open_one(core, &dummy_ops, "dummy0", "kind=test", modules,
			     count);
}

RMCA_COMPONENT_EXPORT const struct rmca_component rmca_component = {
	.abi_version = RMCA_COMPONENT_ABI_VERSION,
	.module_ops_size = sizeof(struct rmca_module_ops),
	.name = "dummy",
	.version = "0.0.1",
	.description = "test component with one module and no abilities",
	.priority = 1,
	.open = dummy_open,
	.close = test_close,
};
