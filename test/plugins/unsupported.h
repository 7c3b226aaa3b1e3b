/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The mandatory module ops of a test component that can do nothing: each
 * answers RMCA_ERR_UNSUPPORTED, so the core loads the module (it refuses a
 * module lacking one) and any attempt to use it fails cleanly.
 */
#ifndef RMCA_TEST_UNSUPPORTED_H
#define RMCA_TEST_UNSUPPORTED_H

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

/* Every mandatory op but addr. */
#define UNSUPPORTED_OPS                                                        \
	.connect = unsup_connect, .disconnect = unsup_disconnect,              \
	.flush = unsup_flush, .get = unsup_rma, .mr_dereg = unsup_mr_dereg,    \
	.mr_reg = unsup_mr_reg, .mr_rkey = unsup_mr_rkey, .put = unsup_put,    \
	.recv = unsup_recv, .send = unsup_send

#endif
