/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What test components share: the mandatory module ops of one that can do
 * nothing (each answers RMCA_ERR_UNSUPPORTED, so the core loads the module,
 * which it refuses when one is lacking, and any attempt to use it fails
 * cleanly), and an open() that gives one module, with its close().
 */
#ifndef RMCA_TEST_UNSUPPORTED_H
#define RMCA_TEST_UNSUPPORTED_H

#include <stdio.h>
#include <stdlib.h>

#include <rmca/component.h>

static inline int unsup_connect(struct rmca_module *m,
				const struct rmca_conn_args *args,
				struct rmca_conn **out)
{
	return RMCA_ERR_UNSUPPORTED;
}

static inline void unsup_disconnect(struct rmca_conn *c)
{
}

static inline int unsup_flush(struct rmca_conn *c, void *req)
{
	return RMCA_ERR_UNSUPPORTED;
}

static inline int unsup_rma(struct rmca_conn *c, void *buf, size_t len,
			    struct rmca_module_mr *mr, uint64_t raddr,
			    uint64_t rkey, void *req)
{
	return RMCA_ERR_UNSUPPORTED;
}

static inline int unsup_put(struct rmca_conn *c, const void *buf, size_t len,
			    struct rmca_module_mr *mr, uint64_t raddr,
			    uint64_t rkey, void *req)
{
	return RMCA_ERR_UNSUPPORTED;
}

static inline int unsup_mr_dereg(struct rmca_module_mr *mr)
{
	return RMCA_ERR_UNSUPPORTED;
}

static inline int unsup_mr_reg(struct rmca_module *m, void *addr, size_t len,
			       unsigned access, struct rmca_module_mr **out)
{
	return RMCA_ERR_UNSUPPORTED;
}

static inline uint64_t unsup_mr_rkey(struct rmca_module_mr *mr,
				     struct rmca_conn *c)
{
	return 0;
}

static inline int unsup_recv(struct rmca_conn *c, void *buf, size_t len,
			     struct rmca_module_mr *mr, void *req)
{
	return RMCA_ERR_UNSUPPORTED;
}

static inline int unsup_send(struct rmca_conn *c, const void *buf, size_t len,
			     struct rmca_module_mr *mr, void *req)
{
	return RMCA_ERR_UNSUPPORTED;
}

/* Every mandatory op but addr, mr_reg and send (which a test may want). */
#define UNSUPPORTED_OPS_SOME                                                   \
	.connect = unsup_connect, .disconnect = unsup_disconnect,              \
	.flush = unsup_flush, .get = unsup_rma, .mr_dereg = unsup_mr_dereg,    \
	.mr_rkey = unsup_mr_rkey, .put = unsup_put, .recv = unsup_recv

/* Every mandatory op but addr. */
#define UNSUPPORTED_OPS                                                        \
	UNSUPPORTED_OPS_SOME, .mr_reg = unsup_mr_reg, .send = unsup_send

/* An open() that gives one module with ops, named device, with detail. */
static inline int test_open_one(const struct rmca_core *core,
				const struct rmca_module_ops *ops,
				const char *device, const char *detail,
				struct rmca_module ***modules, int *count)
{
	struct rmca_module **mods = calloc(1, sizeof(*mods));

	if (!mods)
		return RMCA_ERR_NO_MEMORY;
	mods[0] = calloc(1, sizeof(**mods));
	if (!mods[0]) {
		free(mods);
		return RMCA_ERR_NO_MEMORY;
	}
	mods[0]->ops = ops;
	mods[0]->core = core;
	snprintf(mods[0]->device, sizeof(mods[0]->device), "%s", device);
	snprintf(mods[0]->detail, sizeof(mods[0]->detail), "%s", detail);
	*modules = mods;
	*count = 1;
	return 0;
}

/* The close() of what test_open_one opened. */
static inline void test_close(const struct rmca_core *core,
			      struct rmca_module **modules, int count)
{
	for (int i = 0; i < count; i++)
		free(modules[i]);
	free(modules);
}

#endif
