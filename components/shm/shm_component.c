/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shm component: one module per context, reaching the processes of this
 * host that may share memory with this one.
 */
#include <stdlib.h>

#include "shm.h"

static const struct rmca_param_def shm_params[] = {
	{.name = "shm_idle_us",
	 .type = RMCA_PARAM_INT,
	 .def = "10",
	 .help = "Microseconds a busy side keeps polling before it asks its "
		 "peer for wakeups (0: at once; more: fewer system calls, "
		 "more spurious returns of the wait fd)",
	 .min = 0,
	 .max = 1000000},
	{.name = "shm_cma",
	 .type = RMCA_PARAM_BOOL,
	 .def = "yes",
	 .help = "Copy large data straight between the two processes "
		 "(cross-memory attach) where the kernel allows it; no: "
		 "every byte through the shared rings"},
};

static int shm_register_params(const struct rmca_core *core)
{
	for (size_t i = 0; i < sizeof(shm_params) / sizeof(shm_params[0]);
	     i++) {
		int r = core->ops->param_register(core, &shm_params[i]);

		if (r)
			return r;
	}
	return 0;
}

static int shm_open(const struct rmca_core *core, struct rmca_module ***modules,
		    int *count)
{
	struct shm_module *m;
	int r;

	*modules = NULL;
	*count = 0;
	r = rmca_shm_module_create(core, &m);
	if (r)
		return r == RMCA_ERR_NO_MEMORY ? r : 0;
	*modules = malloc(sizeof(**modules));
	if (!*modules) {
		rmca_shm_module_destroy(m);
		return RMCA_ERR_NO_MEMORY;
	}
	(*modules)[0] = &m->base;
	*count = 1;
	return 0;
}

static void shm_close(const struct rmca_core *core,
		      struct rmca_module **modules, int count)
{
	(void)core;
	for (int i = 0; i < count; i++)
		rmca_shm_module_destroy(
			rmca_container_of(modules[i], struct shm_module, base));
	free(modules);
}

RMCA_COMPONENT_EXPORT const struct rmca_component rmca_component = {
	.abi_version = RMCA_COMPONENT_ABI_VERSION,
	.module_ops_size = sizeof(struct rmca_module_ops),
	.name = "shm",
	.version = "0.1.0",
	.description = "Peers on the same host: shared-memory rings and "
		       "cross-memory attach",
	.priority = 60,
	.register_params = shm_register_params,
	.open = shm_open,
	.close = shm_close,
};
