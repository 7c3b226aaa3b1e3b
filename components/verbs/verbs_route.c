/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which of a host's devices reaches a peer: the one the route to the peer's
 * device address leaves through, as rdma_cm would resolve it (on the same
 * host, the device that owns the address). With two devices on two subnets
 * the subnet a peer is addressed on picks the device, on both sides.
 *
 * A module's netdev is the interface holding its address (the one rdma_cm
 * bound it to, verbs_device.c); the route's interface comes from the core
 * (core op route: the kernel's routing table). A port that is not active
 * (its link is down) reaches nobody: a new endpoint is made of the device
 * pairs that remain (an endpoint using several, rails, among them).
 */
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>

#include "verbs.h"

/* The interface the route to a (from src, if not NULL) leaves through, or
 * 0 with why filled. */
static unsigned route_if(const struct rmca_core *core,
			 const struct sockaddr_in *a,
			 const struct sockaddr_in *src, char *why,
			 size_t why_len)
{
	unsigned idx = 0;

	if (core->ops->route(core, (const struct sockaddr *)a,
			     (const struct sockaddr *)src, &idx, why, why_len))
		return 0;
	return idx;
}

/* The RDMA device serving interface idx (rdma_cm binds one of its IPv4
 * addresses to it), into name; "" if none does. */
static void device_on(unsigned idx, char *name, size_t len)
{
	char ifname[IF_NAMESIZE];
	struct ifaddrs *ifs, *i;

	name[0] = '\0';
	if (!if_indextoname(idx, ifname) || getifaddrs(&ifs))
		return;
	for (i = ifs; i && !name[0]; i = i->ifa_next) {
		struct rdma_event_channel *ec;
		struct sockaddr_in sa;
		struct rdma_cm_id *id;

		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
		    strcmp(i->ifa_name, ifname))
			continue;
		memcpy(&sa, i->ifa_addr, sizeof(sa));
		sa.sin_port = 0;
		ec = rdma_create_event_channel();
		if (!ec)
			break;
		if (!rdma_create_id(ec, &id, NULL, RDMA_PS_TCP)) {
			if (!rdma_bind_addr(id, (struct sockaddr *)&sa) &&
			    id->verbs)
				snprintf(
					name, len, "%s",
					ibv_get_device_name(id->verbs->device));
			rdma_destroy_id(id);
		}
		rdma_destroy_event_channel(ec);
	}
	freeifaddrs(ifs);
}

/* "rxe1 (dummy2)", or "eth0 (no RDMA device)". */
static void if_describe(unsigned idx, char *buf, size_t len)
{
	char ifname[IF_NAMESIZE] = "?", dev[64];

	if_indextoname(idx, ifname);
	device_on(idx, dev, sizeof(dev));
	if (dev[0])
		snprintf(buf, len, "%s (%s)", dev, ifname);
	else
		snprintf(buf, len, "%s (no RDMA device)", ifname);
}

int rmca_verbs_reach(struct rmca_module *m, const struct rmca_reach_args *ra,
		     char *why, size_t why_len)
{
	struct rmca_verbs_module *vm = rmca_verbs_mod(m);
	const struct rmca_core *core = m->core;
	const struct rmca_verbs_addr *a = ra->peer_addr;
	struct sockaddr_in dst = {.sin_family = AF_INET};
	char ip[INET_ADDRSTRLEN], via[96], err[160];
	unsigned mine, out;

	struct ibv_port_attr pa;

	if (!rmca_verbs_reachable(m, ra->peer_addr, ra->peer_addr_len, why,
				  why_len))
		return RMCA_REACH_NO;
	if (!ibv_query_port(vm->dev->ctx, vm->port, &pa) &&
	    pa.state != IBV_PORT_ACTIVE) {
		snprintf(why, why_len, "%s: port %u is %s", m->device, vm->port,
			 ibv_port_state_str(pa.state));
		return RMCA_REACH_NO;
	}
	/* A core without route lookups: any device may try. */
	if (!core->ops->route)
		return RMCA_REACH_YES;
	mine = route_if(core, &vm->ip, NULL, err, sizeof(err));
	if (!mine) {
		snprintf(why, why_len, "%s: its own address: %s", m->device,
			 err);
		return RMCA_REACH_NO;
	}
	memcpy(&dst.sin_addr, a->ip, 4);
	inet_ntop(AF_INET, a->ip, ip, sizeof(ip));
	/* from our address, as start_active binds it before resolving */
	out = route_if(core, &dst, &vm->ip, err, sizeof(err));
	if (!out) {
		snprintf(why, why_len, "%s: %s", m->device, err);
		return RMCA_REACH_NO;
	}
	if (out != mine) {
		if_describe(out, via, sizeof(via));
		snprintf(why, why_len, "%s: route to %s leaves through %s",
			 m->device, ip, via);
		return RMCA_REACH_NO;
	}
	/* The path the peer was addressed on picks among the devices that
	 * reach it. */
	if (ra->peer_host &&
	    inet_pton(AF_INET, ra->peer_host, &dst.sin_addr) == 1 &&
	    route_if(core, &dst, NULL, err, sizeof(err)) == mine) {
		snprintf(why, why_len, "%s carries the route to %s", m->device,
			 ra->peer_host);
		return RMCA_REACH_ROUTE;
	}
	return RMCA_REACH_YES;
}
