/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The ib component: InfiniBand and RoCE devices (IBV_TRANSPORT_IB), one
 * module per port that carries an IP address. RC completion means the
 * responder acknowledged, so completions are remote; the device retries a
 * send until the peer posts a receive (RNR retry 7).
 */
#include "verbs.h"

static int ib_register_params(const struct rmca_core *core)
{
	return rmca_verbs_params_register(core, "ib");
}

static int ib_open(const struct rmca_core *core, struct rmca_module ***modules,
		   int *count)
{
	/* an IB/RoCE port always reaches its own host */
	const struct rmca_verbs_cfg cfg = {
		.name = "ib",
		.transport = IBV_TRANSPORT_IB,
		.loopback = 1,
		.idle_us = rmca_verbs_idle_us(core, "ib"),
	};

	return rmca_verbs_probe(core, &cfg, modules, count);
}

RMCA_COMPONENT_EXPORT const struct rmca_component rmca_component = {
	.abi_version = RMCA_COMPONENT_ABI_VERSION,
	.module_ops_size = sizeof(struct rmca_module_ops),
	.name = "ib",
	.version = "0.1.0",
	.description = "InfiniBand and RoCE over libibverbs and librdmacm",
	.priority = 50,
	.register_params = ib_register_params,
	.open = ib_open,
	.close = rmca_verbs_release,
};
