/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The iwarp component: iWARP RNICs (IBV_TRANSPORT_IWARP), one module per
 * port with an IP address. Completions are local only (no remote
 * completion cap: the core adds a flush for delivery), sends wait for
 * credits read from the peer (no RNR in iWARP), and the active side speaks
 * first (see verbs_cm.c).
 */
#include "verbs.h"

static const char *const loopback_values[] = { "auto", "yes", "no", NULL };

static const struct rmca_param_def loopback_param = {
	.name = "iwarp_loopback",
	.type = RMCA_PARAM_ENUM,
	.def = "auto",
	.help = "Whether an iWARP device reaches its own host: auto probes it "
		"by connecting to itself",
	.values = loopback_values,
};

static int iwarp_register_params(const struct rmca_core *core)
{
	int r = core->ops->param_register(core, &loopback_param);

	return r ? r : rmca_verbs_params_register(core, "iwarp");
}

static int iwarp_open(const struct rmca_core *core,
		      struct rmca_module ***modules, int *count)
{
	struct rmca_verbs_cfg cfg = {
		.name = "iwarp",
		.transport = IBV_TRANSPORT_IWARP,
		.loopback = -1,
		.idle_us = rmca_verbs_idle_us(core, "iwarp"),
	};

	switch (core->ops->param_enum(core, loopback_param.name)) {
	case 1:
		cfg.loopback = 1;
		break;
	case 2:
		cfg.loopback = 0;
		break;
	default:
		break;
	}
	return rmca_verbs_probe(core, &cfg, modules, count);
}

RMCA_COMPONENT_EXPORT const struct rmca_component rmca_component = {
	.abi_version = RMCA_COMPONENT_ABI_VERSION,
	.module_ops_size = sizeof(struct rmca_module_ops),
	.name = "iwarp",
	.version = "0.1.0",
	.description = "iWARP RNICs over libibverbs and librdmacm",
	.priority = 40,
	.register_params = iwarp_register_params,
	.open = iwarp_open,
	.close = rmca_verbs_release,
};
