/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Device discovery. A module needs an IP address (rdma_cm is how peers reach
 * it), so modules are found from the host's IPv4 addresses: each one is
 * bound with rdma_cm, which names the device and port that serve it. The
 * contexts are librdmacm's own (from rdma_get_devices()), so the PD allocated here
 * is the one every rdma_cm QP on that device can use.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "verbs.h"

struct found {
	struct ibv_context *ctx;
	uint8_t port;
	struct sockaddr_in ip;
};

/* Which device and port serve addr? 0 (and *ctx, *port) or a negative
 * errno: -ENODEV when no device does. */
static int bind_probe(const struct sockaddr_in *addr, struct ibv_context **ctx,
		      uint8_t *port)
{
	struct rdma_event_channel *ec;
	struct rdma_cm_id *id;
	struct sockaddr_in a = *addr;
	int ret = -ENOMEM;

	ec = rdma_create_event_channel();
	if (!ec)
		return ret;
	if (rdma_create_id(ec, &id, NULL, RDMA_PS_TCP))
		goto out_ec;
	a.sin_port = 0;
	if (rdma_bind_addr(id, (struct sockaddr *)&a))
		ret = errno ? -errno : -ENODEV;
	else if (!id->verbs)
		ret = -ENODEV;
	else {
		*ctx = id->verbs;
		*port = id->port_num;
		ret = 0;
	}
	rdma_destroy_id(id);
out_ec:
	rdma_destroy_event_channel(ec);
	return ret;
}

/*
 * An address no device serves is refused with ENODEV (no RDMA device
 * has its netdev) or EADDRNOTAVAIL: that is the answer, not asked again.
 * Any other refusal (rdma_cm out of ports for a moment, its ids of
 * processes that just exited still being torn down) is asked again at
 * once, a few times: each bind picks another port, so there is nothing
 * to wait for.
 */
/* vendor_id of the Linux soft-iWARP driver (ASCII "bmt") */
#define SIW_VENDOR_ID 0x626d74

#define BIND_PROBE_TRIES 3

static int bind_probe_retry(const struct sockaddr_in *addr,
			    struct ibv_context **ctx, uint8_t *port)
{
	int k, ret = -ENODEV;

	for (k = 0; k < BIND_PROBE_TRIES; k++) {
		ret = bind_probe(addr, ctx, port);
		if (!ret || ret == -ENODEV || ret == -EADDRNOTAVAIL)
			break;
	}
	return ret;
}

static int find_ports(enum ibv_transport_type tt, struct found *out, int max)
{
	struct ifaddrs *ifa, *i;
	int n = 0;

	if (getifaddrs(&ifa))
		return 0;
	for (i = ifa; i && n < max; i = i->ifa_next) {
		struct ibv_context *ctx;
		uint8_t port;
		int k;

		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
		    (i->ifa_flags & IFF_LOOPBACK) || !(i->ifa_flags & IFF_UP))
			continue;
		if (bind_probe_retry((struct sockaddr_in *)i->ifa_addr, &ctx,
				     &port))
			continue;
		if (ctx->device->transport_type != tt)
			continue;
		for (k = 0; k < n; k++)
			if (out[k].ctx == ctx && out[k].port == port)
				break;
		if (k < n)
			continue; /* first address of a port serves it */
		out[n].ctx = ctx;
		out[n].port = port;
		memcpy(&out[n].ip, i->ifa_addr, sizeof(out[n].ip));
		n++;
	}
	freeifaddrs(ifa);
	return n;
}

/* Can a type-2 window be allocated here? (Binding needs a connected QP: it
 * is done for real, per connection, by mr_rkey; the tests prove it.) */
static bool probe_mw2(struct rmca_verbs_dev *dev)
{
	struct ibv_pd *pd = rmca_verbs_pd_get(dev);
	struct ibv_mw *mw;

	if (!pd)
		return false;
	mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	if (mw)
		ibv_dealloc_mw(mw);
	rmca_verbs_pd_put(dev);
	return mw != NULL;
}

static const char *atomic_name(enum ibv_atomic_cap a)
{
	switch (a) {
	case IBV_ATOMIC_HCA:
		return "HCA";
	case IBV_ATOMIC_GLOB:
		return "GLOB";
	default:
		return "NONE";
	}
}

void rmca_verbs_detail_update(struct rmca_verbs_module *vm)
{
	snprintf(vm->m.detail, sizeof(vm->m.detail),
		 "%s pd_users=%d flushes=%lu", vm->facts, vm->dev->pd_users,
		 vm->flushes);
}

static void probe_caps(struct rmca_verbs_module *vm,
		       const struct rmca_verbs_cfg *cfg)
{
	struct ibv_device_attr *a = &vm->dev->attr;
	bool mw2 = probe_mw2(vm->dev);
	bool mme = a->device_cap_flags & IBV_DEVICE_MEM_MGT_EXTENSIONS;
	char ip[INET_ADDRSTRLEN];
	uint32_t caps = 0;

	if (a->atomic_cap != IBV_ATOMIC_NONE)
		caps |= RMCA_CAP_ATOMIC;
	if (a->atomic_cap == IBV_ATOMIC_GLOB)
		caps |= RMCA_CAP_ATOMIC_CPU;
	if (mw2 && mme)
		caps |= RMCA_CAP_SEND_INV;
	/* RC completion on IB means the responder acked the data; an iWARP
	 * completion only means the data left (RDMAP has no such ack). */
	if (rmca_verbs_flavour(vm)->remote_completion)
		caps |= RMCA_CAP_REMOTE_COMPLETION;
	/* siw answers a READ of at most 32 bytes from a context where it
	 * may fail and drop the connection (verbs.h, RMCA_VERBS_CTL_READ):
	 * its peers send such gets to this side's core instead. */
	if (a->vendor_id != SIW_VENDOR_ID)
		caps |= RMCA_CAP_SHORT_READ;
	vm->m.caps = caps;
	vm->max_sge = a->max_sge;
	vm->max_qp_wr = a->max_qp_wr;
	/* siw transmits an unsignalled WR of a page or more straight from
	 * the registered pages (its zero-copy path, taken only when nobody
	 * asked for the WR's completion); in the guest a 4 KiB send then
	 * takes 2.5x as long as one siw copies (doc/bench.md). A completion
	 * per such WR costs far less. */
	if (a->vendor_id == SIW_VENDOR_ID)
		vm->sig_from = (uint32_t)sysconf(_SC_PAGESIZE);
	inet_ntop(AF_INET, &vm->ip.sin_addr, ip, sizeof(ip));
	snprintf(vm->facts, sizeof(vm->facts),
		 "ip=%s port=%u atomic_cap=%s mw=%s mem_mgt_ext=%d max_sge=%d "
		 "max_qp_wr=%d max_cqe=%d",
		 ip, vm->port, atomic_name(a->atomic_cap),
		 mw2 ? "type2" : "none", mme, a->max_sge, a->max_qp_wr,
		 a->max_cqe);
	(void)cfg;
}

/*
 * The device of ctx, from devs[] or new. Every device listed in devs[] holds
 * one reference of the probe's own, dropped once every port is done, so a
 * module that fails (or is never allocated) can drop its own at once: the
 * device lives on for the next port of the same HCA, and goes with the probe
 * when no module took it.
 */
static struct rmca_verbs_dev *dev_get(const struct rmca_core *core,
				      struct rmca_verbs_dev **devs, int *ndev,
				      struct ibv_context *ctx)
{
	struct rmca_verbs_dev *d;
	int i;

	for (i = 0; i < *ndev; i++)
		if (devs[i]->ctx == ctx)
			return devs[i];
	if (*ndev == RMCA_VERBS_MAX_DEVS)
		return NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->ctx = ctx;
	d->core = core;
	if (ibv_query_device(ctx, &d->attr)) {
		free(d);
		return NULL;
	}
	d->refs = 1;
	devs[(*ndev)++] = d;
	rmca_verbs_debug_devs++;
	return d;
}

static void dev_put(struct rmca_verbs_dev *d)
{
	if (--d->refs > 0)
		return;
	if (d->async_registered)
		d->core->ops->fd_del(d->core, d->ctx->async_fd);
	free(d);
	rmca_verbs_debug_devs--;
}

/*
 * Whether a device reaches itself is asked of the device (a connection to
 * its own listener, verbs_cm.c), for every module at once. A missing
 * loopback cap reroutes every local peer, so it is said.
 */
static void loopback_probe(const struct rmca_core *core,
			   const struct rmca_verbs_cfg *cfg,
			   struct rmca_module **mods, int nmod)
{
	struct rmca_verbs_module *vms[RMCA_VERBS_MAX_MODULES];
	bool ok[RMCA_VERBS_MAX_MODULES];
	int i;

	for (i = 0; i < nmod; i++) {
		vms[i] = rmca_verbs_mod(mods[i]);
		ok[i] = cfg->loopback == 1;
	}
	if (cfg->loopback < 0)
		rmca_verbs_loopback_probe(vms, nmod, ok);
	for (i = 0; i < nmod; i++) {
		if (ok[i])
			vms[i]->m.caps |= RMCA_CAP_LOOPBACK;
		else if (cfg->loopback < 0)
			core->ops->log(core, RMCA_LOG_WARN,
				       "%s: cannot reach itself: no loopback "
				       "(RMCA_%s_loopback=yes overrides)",
				       vms[i]->m.device, cfg->name);
		rmca_verbs_detail_update(vms[i]);
	}
}

/* What a peer may make a module hold: connection requests that wait for
 * their handshake, at most RMCA_handshake_max, each for at most
 * RMCA_connect_timeout (the core's own bounds for its handshakes). */
static void park_limits(const struct rmca_core *core,
			struct rmca_verbs_module *vm)
{
	long long max = core->ops->param_int(core, "handshake_max");
	long long ms = core->ops->param_int(core, "connect_timeout");

	vm->park_max = max > 0 && max < 1 << 20 ? (int)max : 64;
	vm->park_ms = ms > 0 && ms < 1 << 30 ? (int)ms : 10000;
}

int rmca_verbs_probe(const struct rmca_core *core,
		     const struct rmca_verbs_cfg *cfg,
		     struct rmca_module ***modules, int *count)
{
	struct found f[RMCA_VERBS_MAX_MODULES];
	struct rmca_verbs_dev *devs[RMCA_VERBS_MAX_DEVS];
	struct rmca_module **mods;
	struct ibv_context **list;
	int n, i, ndev = 0, nmod = 0, nlist;

	*modules = NULL;
	*count = 0;
	if (!rmca_verbs_flavour_of(cfg->transport))
		return RMCA_ERR_INVALID;
	/* opens every device in librdmacm, so that bound ids share them */
	list = rdma_get_devices(&nlist);
	if (!list) {
		rmca_verbs_why_none(core, cfg, NULL, 0, 0);
		return 0;
	}
	n = find_ports(cfg->transport, f, RMCA_VERBS_MAX_MODULES);
	mods = calloc(n ? n : 1, sizeof(*mods));
	if (!mods) {
		rdma_free_devices(list);
		return RMCA_ERR_NO_MEMORY;
	}
	for (i = 0; i < n; i++) {
		struct rmca_verbs_module *vm;
		struct ibv_port_attr pa;
		struct rmca_verbs_dev *d;

		if (ibv_query_port(f[i].ctx, f[i].port, &pa) ||
		    pa.state != IBV_PORT_ACTIVE) {
			core->ops->log(core, RMCA_LOG_INFO,
				       "%s: %s port %u not active, skipped",
				       cfg->name,
				       ibv_get_device_name(f[i].ctx->device),
				       f[i].port);
			continue;
		}
		d = dev_get(core, devs, &ndev, f[i].ctx);
		if (!d)
			continue;
		vm = rmca_verbs_fault("verbs_module_alloc")
			     ? NULL
			     : calloc(1, sizeof(*vm));
		if (!vm) {
			core->ops->log(
				core, RMCA_LOG_WARN,
				"%s: %s: no memory for a module, skipped",
				cfg->name,
				ibv_get_device_name(f[i].ctx->device));
			continue;
		}
		vm->dev = d;
		rmca_list_init(&vm->zombies);
		d->refs++;
		vm->port = f[i].port;
		vm->ip = f[i].ip;
		vm->flavour = rmca_verbs_flavour_of(cfg->transport);
		vm->m.ops = &rmca_verbs_ops;
		vm->m.core = core;
		snprintf(vm->m.device, sizeof(vm->m.device), "%s",
			 ibv_get_device_name(f[i].ctx->device));
		probe_caps(vm, cfg);
		if (rmca_verbs_module_init(vm)) {
			core->ops->log(core, RMCA_LOG_WARN,
				       "%s: %s: cannot set up, skipped",
				       cfg->name, vm->m.device);
			dev_put(d);
			free(vm);
			continue;
		}
		d->mods[d->nmods++] = vm;
		park_limits(core, vm);
		vm->idle_ns = cfg->idle_us * 1000;
		mods[nmod++] = &vm->m;
	}
	loopback_probe(core, cfg, mods, nmod);
	for (i = 0; i < ndev; i++)
		dev_put(devs[i]); /* the probe's: freed if no module took it */
	if (!nmod)
		rmca_verbs_why_none(core, cfg, list, nlist, n);
	rdma_free_devices(list);
	*modules = mods;
	*count = nmod;
	return 0;
}

void rmca_verbs_release(const struct rmca_core *core,
			struct rmca_module **modules, int count)
{
	int i;

	for (i = 0; i < count; i++) {
		struct rmca_verbs_module *vm = rmca_verbs_mod(modules[i]);
		struct rmca_verbs_dev *d = vm->dev;

		rmca_verbs_module_fini(vm);
		free(vm);
		dev_put(d);
	}
	free(modules);
}
