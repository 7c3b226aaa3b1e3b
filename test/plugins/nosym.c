// SPDX-License-Identifier: BSD-3-Clause
/* A shared object named like a component that exports no rmca_component. */
#include <rmca/component.h>

RMCA_COMPONENT_EXPORT int rmca_not_a_component(void);

int rmca_not_a_component(void)
{
	return 0;
}
