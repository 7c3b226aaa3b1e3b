/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The parameters every verbs component has, defined once and registered
 * under each component's name: RMCA_ib_idle_us, RMCA_iwarp_idle_us.
 */
#include <stdio.h>

#include "verbs.h"

static void idle_name(const char *comp, char *buf, size_t len)
{
	snprintf(buf, len, "%s_idle_us", comp);
}

int rmca_verbs_params_register(const struct rmca_core *core, const char *comp)
{
	char name[64];
	const struct rmca_param_def idle = {
		.name = name,
		.type = RMCA_PARAM_INT,
		.def = "100",
		.help = "Microseconds a busy module keeps polling its "
			"completion queue before it re-arms its completion "
			"channel for a caller that may sleep on the wait fd "
			"(0: after every completion, the fewest spurious "
			"returns of the wait fd; more: fewer system calls "
			"while completions keep coming); a context whose wait "
			"fd was never asked for re-arms only before the "
			"library sleeps itself",
		.min = 0,
		.max = 1000000,
	};

	idle_name(comp, name, sizeof(name));
	return core->ops->param_register(core, &idle);
}

long long rmca_verbs_idle_us(const struct rmca_core *core, const char *comp)
{
	char name[64];

	idle_name(comp, name, sizeof(name));
	return core->ops->param_int(core, name);
}
