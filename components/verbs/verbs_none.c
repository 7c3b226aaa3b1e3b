// SPDX-License-Identifier: BSD-3-Clause
/*
 * Why a verbs component found no module, in one line for rmca_info
 * ("ib: no RDMA device found", "iwarp: rxe0 is InfiniBand/RoCE: the ib
 * component serves it"): a user who expected a device learns what rmca
 * saw, without RMCA_verbose.
 */
#include <stdio.h>
#include <string.h>

#include "verbs.h"

static const char *kind_of(enum ibv_transport_type tt)
{
	switch (tt) {
	case IBV_TRANSPORT_IB:
		return "InfiniBand/RoCE: the ib component serves it";
	case IBV_TRANSPORT_IWARP:
		return "iWARP: the iwarp component serves it";
	default:
		return "of a transport rmca does not use";
	}
}

void rmca_verbs_why_none(const struct rmca_core *core,
			 const struct rmca_verbs_cfg *cfg,
			 struct ibv_context **list, int nlist, int nports)
{
	char why[256] = "";
	size_t used = 0;
	int mine = 0;

	if (!list || nlist <= 0) {
		core->ops->no_module(core, "no RDMA device found");
		return;
	}
	for (int i = 0; i < nlist; i++)
		if (list[i]->device->transport_type == cfg->transport)
			mine++;
	if (nports) {
		core->ops->no_module(
			core,
			"no port could be set up (RMCA_verbose=1 says why)");
		return;
	}
	for (int i = 0; i < nlist && used < sizeof(why); i++) {
		const char *name = ibv_get_device_name(list[i]->device);
		int w;

		if (mine)
			w = list[i]->device->transport_type == cfg->transport
				    ? snprintf(why + used, sizeof(why) - used,
					       "%s%s", used ? ", " : "", name)
				    : 0;
		else
			w = snprintf(why + used, sizeof(why) - used,
				     "%s%s is %s", used ? "; " : "", name,
				     kind_of(list[i]->device->transport_type));
		if (w > 0)
			used += (size_t)w;
	}
	if (mine)
		core->ops->no_module(
			core, "%s: no active port with an IPv4 address", why);
	else
		core->ops->no_module(core, "%s", why);
}
