// SPDX-License-Identifier: BSD-3-Clause
/*
 * A component whose module hands out connections and regions whose base
 * names another module (as one that copies a base, or forgets to set it,
 * would): the core must give each back and fail the call that asked for
 * it, never keep an object it cannot trust. It reaches every peer that
 * has it, so that wire-up picks it.
 */
#include <stdlib.h>
#include <string.h>

#include <rmca/component.h>
#include <rmca/support/container.h>

#include "unsupported.h"

/* What the objects claim: a module that is not the one asked. */
static struct rmca_module stray_other;

struct stray_conn {
	struct rmca_conn base;
};

struct stray_mr {
	struct rmca_module_mr base;
};

static int stray_addr(struct rmca_module *m, void *buf, size_t *len)
{
	static const char blob[] = "stray";

	if (*len < sizeof(blob))
		return RMCA_ERR_INVALID;
	memcpy(buf, blob, sizeof(blob));
	*len = sizeof(blob);
	return 0;
}

static int stray_connect(struct rmca_module *m,
			 const struct rmca_conn_args *args,
			 struct rmca_conn **out)
{
	struct stray_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return RMCA_ERR_NO_MEMORY;
	c->base.module = &stray_other;
	*out = &c->base;
	return 0;
}

/* Given back by the core: freed (a leak shows in the sanitizer run). */
static void stray_disconnect(struct rmca_conn *c)
{
	free(rmca_container_of(c, struct stray_conn, base));
}

static int stray_mr_reg(struct rmca_module *m, void *addr, size_t len,
			unsigned access, struct rmca_module_mr **out)
{
	struct stray_mr *mr = calloc(1, sizeof(*mr));

	if (!mr)
		return RMCA_ERR_NO_MEMORY;
	mr->base.module = &stray_other;
	*out = &mr->base;
	return 0;
}

static int stray_mr_dereg(struct rmca_module_mr *mr)
{
	free(rmca_container_of(mr, struct stray_mr, base));
	return 0;
}

static const struct rmca_module_ops stray_ops = {
	.addr = stray_addr,
	.connect = stray_connect,
	.disconnect = stray_disconnect,
	.flush = unsup_flush,
	.get = unsup_rma,
	.mr_dereg = stray_mr_dereg,
	.mr_reg = stray_mr_reg,
	.mr_rkey = unsup_mr_rkey,
	.put = unsup_put,
	.recv = unsup_recv,
	.send = unsup_send,
};

static int stray_open(const struct rmca_core *core,
		      struct rmca_module ***modules, int *count)
{
	int rc = test_open_one(core, &stray_ops, "stray0", "kind=test", modules,
			       count);

	if (!rc) /* the test's peer is on this host */
		(*modules)[0]->caps = RMCA_CAP_LOOPBACK;
	return rc;
}

RMCA_COMPONENT_EXPORT const struct rmca_component rmca_component = {
	.abi_version = RMCA_COMPONENT_ABI_VERSION,
	.module_ops_size = sizeof(struct rmca_module_ops),
	.name = "stray",
	.version = "0.0.1",
	.description = "test component whose objects name another module",
	.priority = 1,
	.open = stray_open,
	.close = test_close,
};
