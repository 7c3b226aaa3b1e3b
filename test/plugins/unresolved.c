// SPDX-License-Identifier: BSD-3-Clause
/*
 * A component that needs a symbol nobody provides (as one built against a
 * newer library would): the loader refuses it, and its reason must reach
 * the user.
 */
#include <rmca/component.h>

extern int rmca_test_no_such_symbol;

static int unresolved_open(const struct rmca_core *core,
			   struct rmca_module ***modules, int *count)
{
	*count = rmca_test_no_such_symbol;
	return 0;
}

static void unresolved_close(const struct rmca_core *core,
			     struct rmca_module **modules, int count)
{
}

/* A data relocation, resolved at load time even under RTLD_LAZY. */
int *const unresolved_ref = &rmca_test_no_such_symbol;

RMCA_COMPONENT_EXPORT const struct rmca_component rmca_component = {
	.abi_version = RMCA_COMPONENT_ABI_VERSION,
	.name = "unresolved",
	.version = "0.0.1",
	.description = "test component with an undefined symbol",
	.open = unresolved_open,
	.close = unresolved_close,
};
