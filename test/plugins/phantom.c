// SPDX-License-Identifier: BSD-3-Clause
/*
 * A component whose one module offers an address but reaches no peer (and
 * no loopback): wire-up skips it, with a reason, which is what
 * rmca_info --explain must show as a field. It is never connected, so it
 * provides no data operations.
 */
#include <string.h>

#include <rmca/component.h>

#include "unsupported.h"

static int phantom_addr(struct rmca_module *m, void *buf, size_t *len)
{
	static const char blob[] = "phantom";

	if (*len < sizeof(blob))
		return RMCA_ERR_INVALID;
	memcpy(buf, blob, sizeof(blob));
	*len = sizeof(blob);
	return 0;
}

static int phantom_reachable(struct rmca_module *m, const void *peer_addr,
			     size_t len, char *why, size_t why_len)
{
	strncpy(why, "a test module reaches nobody", why_len - 1);
	why[why_len - 1] = '\0';
	return 0;
}

static const struct rmca_module_ops phantom_ops = {
	.addr = phantom_addr,
	.reachable = phantom_reachable,
	UNSUPPORTED_OPS,
};

static int phantom_open(const struct rmca_core *core,
			struct rmca_module ***modules, int *count)
{
	return test_open_one(core, &phantom_ops, "phantom0", "kind=test",
			     modules, count);
}

RMCA_COMPONENT_EXPORT const struct rmca_component rmca_component = {
	.abi_version = RMCA_COMPONENT_ABI_VERSION,
	.module_ops_size = sizeof(struct rmca_module_ops),
	.name = "phantom",
	.version = "0.0.1",
	.description = "test component whose module reaches nobody",
	.priority = 1,
	.open = phantom_open,
	.close = test_close,
};
