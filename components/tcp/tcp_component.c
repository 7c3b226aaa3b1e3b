/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tcp component: parameters, probe, and the exported descriptor.
 */
#include <stdlib.h>
#include <string.h>

#include "tcp.h"
#include "tcp_iface.h"

static const struct rmca_param_def tcp_params[] = {
	{ .name = "tcp_if_include",
	  .type = RMCA_PARAM_LIST,
	  .help = "Interfaces the tcp transport uses (\"eth0,lo\"); empty: all" },
	{ .name = "tcp_if_exclude",
	  .type = RMCA_PARAM_LIST,
	  .help = "Interfaces the tcp transport leaves alone (\"docker0\")" },
	{ .name = "tcp_port",
	  .type = RMCA_PARAM_INT,
	  .def = "0",
	  .help = "TCP port each context listens on; 0: any free port",
	  .min = 0,
	  .max = 65535 },
	{ .name = "tcp_sndbuf",
	  .type = RMCA_PARAM_SIZE,
	  .def = "0",
	  .help = "Socket send buffer size (SO_SNDBUF); 0: kernel default" },
	{ .name = "tcp_rcvbuf",
	  .type = RMCA_PARAM_SIZE,
	  .def = "0",
	  .help = "Socket receive buffer size (SO_RCVBUF); 0: kernel default" },
	{ .name = "tcp_max_pending_responses",
	  .type = RMCA_PARAM_INT,
	  .def = "16384",
	  .help = "Answers to a peer's requests queued unsent before its "
		  "connection stops reading from it (at least 16384, what a "
		  "peer may have outstanding)",
	  .min = TCP_MIN_PENDING_RESP,
	  .max = 1 << 24 },
};

static int tcp_register_params(const struct rmca_core *core)
{
	for (size_t i = 0; i < sizeof(tcp_params) / sizeof(tcp_params[0]);
	     i++) {
		int r = core->ops->param_register(core, &tcp_params[i]);

		if (r)
			return r;
	}
	return 0;
}

static const char *str_param(const struct rmca_core *core, const char *name)
{
	const char *s = core->ops->param_string(core, name);

	return s ? s : "";
}

static int tcp_open(const struct rmca_core *core,
		    struct rmca_module ***modules, int *count)
{
	const char *inc = str_param(core, "tcp_if_include");
	const char *exc = str_param(core, "tcp_if_exclude");
	struct tcp_module *m;
	struct tcp_laddr *laddrs;
	char names[64], err[768];
	int n, nladdrs, r;

	*modules = NULL;
	*count = 0;
	r = rmca_tcp_iface_check(core, inc, exc, err, sizeof(err));
	if (r) {
		core->ops->log(core, RMCA_LOG_ERROR, "tcp: %s", err);
		return r;
	}
	n = rmca_tcp_iface_probe(core, inc, exc, names, sizeof(names), &laddrs,
				 &nladdrs);
	if (n < 0)
		return n;
	if (n == 0) {
		free(laddrs);
		core->ops->log(core, RMCA_LOG_INFO,
			       "tcp: no usable interface selected");
		core->ops->no_module(
			core,
			"no usable interface (up, with an address)%s%s%s%s",
			*inc ? " among tcp_if_include=" : "", inc,
			*exc ? " outside tcp_if_exclude=" : "", exc);
		return 0;
	}
	r = rmca_tcp_module_create(core, names, &m);
	if (r) {
		free(laddrs);
		return r;
	}
	/* Accepts are filtered only when the user narrowed the set. */
	if (*inc || *exc) {
		m->laddrs = laddrs;
		m->nladdrs = nladdrs;
	} else {
		free(laddrs);
	}
	*modules = malloc(sizeof(**modules));
	if (!*modules) {
		rmca_tcp_module_destroy(m);
		return RMCA_ERR_NO_MEMORY;
	}
	(*modules)[0] = &m->base;
	*count = 1;
	return 0;
}

static void tcp_close(const struct rmca_core *core,
		      struct rmca_module **modules, int count)
{
	for (int i = 0; i < count; i++)
		rmca_tcp_module_destroy(
			rmca_container_of(modules[i], struct tcp_module, base));
	free(modules);
}

RMCA_COMPONENT_EXPORT const struct rmca_component rmca_component = {
	.abi_version = RMCA_COMPONENT_ABI_VERSION,
	.module_ops_size = sizeof(struct rmca_module_ops),
	.name = "tcp",
	.version = "0.1.0",
	.description = "Software RDMA semantics over TCP sockets",
	.priority = 10,
	.register_params = tcp_register_params,
	.open = tcp_open,
	.close = tcp_close,
	.req_size = sizeof(struct tcp_op),
	/* A flush ends after every op before it (tcp_ops.c, tcp_conn.c). */
	.flags = RMCA_COMPONENT_ORDERED,
};
