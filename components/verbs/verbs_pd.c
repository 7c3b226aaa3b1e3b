/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One protection domain per device, shared by every region and connection of
 * every module on it: a region registered once serves all connections. It is
 * allocated with its first user and freed with its last.
 */
#include "verbs.h"

static void details(struct rmca_verbs_dev *dev)
{
	int i;

	for (i = 0; i < dev->nmods; i++)
		rmca_verbs_detail_update(dev->mods[i]);
}

struct ibv_pd *rmca_verbs_pd_get(struct rmca_verbs_dev *dev)
{
	if (!dev->pd) {
		dev->pd = ibv_alloc_pd(dev->ctx);
		if (!dev->pd)
			return NULL;
	}
	dev->pd_users++;
	details(dev);
	return dev->pd;
}

void rmca_verbs_pd_put(struct rmca_verbs_dev *dev)
{
	if (--dev->pd_users == 0) {
		ibv_dealloc_pd(dev->pd);
		dev->pd = NULL;
	}
	details(dev);
}
