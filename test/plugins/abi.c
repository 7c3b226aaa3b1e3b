// SPDX-License-Identifier: BSD-3-Clause
/*
 * Components at the edges of the component ABI, one per build of this file
 * (ABI_CASE, set by test/registry.am):
 *  abi4     built before the base objects (ABI 4), whose connections and
 *           regions the core cannot read: refused;
 *  short    a table that ends before send_inv, as a component built before
 *           an op was appended: it loads and send_inv reads as NULL although
 *           a function sits past its stated end;
 *  abi1     far older: refused;
 *  tiny     a table that stops short of the mandatory ops: refused;
 *  nomr     a module without mr_reg: refused when the component opens;
 *  bigreq   asks more bytes in each request than the core gives: refused;
 *  abi8     built before req_size (ABI 8), whose struct ends before it: it
 *           loads, and the core reads no req_size from it (one past the
 *           largest sits there, which would be refused).
 * (A newer ABI than the core's is badabi.c.)
 */
#include <stddef.h>
#include <stdlib.h>

#include <rmca/component.h>

#include "unsupported.h"

#define ABI_CASE_ABI4  1
#define ABI_CASE_SHORT 2
#define ABI_CASE_ABI1  3
#define ABI_CASE_TINY  4
#define ABI_CASE_NOMR  5
#define ABI_CASE_BIGREQ 6
#define ABI_CASE_ABI8	7 /* ABI 8, the last before req_size */

/* What send answers: the test knows the call reached this component. */
#define ABI_SEND_ANSWER (-4242)

static int abi_addr(struct rmca_module *m, void *buf, size_t *len)
{
	*len = 0;
	return 0;
}

static int abi_send(struct rmca_conn *c, const void *buf, size_t len,
		    struct rmca_module_mr *mr, void *req)
{
	return ABI_SEND_ANSWER;
}

static int abi_send_inv(struct rmca_conn *c, const void *buf, size_t len,
			struct rmca_module_mr *mr, uint64_t rkey, void *req)
{
	abort(); /* past the stated end of the table: never called */
}

static const struct rmca_module_ops abi_ops = {
	.addr = abi_addr,
	UNSUPPORTED_OPS_SOME,
#if ABI_CASE != ABI_CASE_NOMR
	.mr_reg = unsup_mr_reg,
#endif
	.send = abi_send,
	.send_inv = abi_send_inv,
};

static int abi_open(const struct rmca_core *core, struct rmca_module ***modules,
		    int *count)
{
	return test_open_one(core, &abi_ops, "abi0", "", modules, count);
}

RMCA_COMPONENT_EXPORT const struct rmca_component rmca_component = {
#if ABI_CASE == ABI_CASE_ABI4
	.abi_version = 4,
	.name = "abi4",
	.module_ops_size = sizeof(struct rmca_module_ops),
#elif ABI_CASE == ABI_CASE_SHORT
	.abi_version = RMCA_COMPONENT_ABI_VERSION,
	.name = "abishort",
	.module_ops_size = offsetof(struct rmca_module_ops, send_inv),
#elif ABI_CASE == ABI_CASE_ABI1
	.abi_version = 1,
	.name = "abi1",
	.module_ops_size = sizeof(struct rmca_module_ops),
#elif ABI_CASE == ABI_CASE_TINY
	.abi_version = RMCA_COMPONENT_ABI_VERSION,
	.name = "abitiny",
	.module_ops_size = offsetof(struct rmca_module_ops, send),
#elif ABI_CASE == ABI_CASE_NOMR
	.abi_version = RMCA_COMPONENT_ABI_VERSION,
	.name = "nomr",
	.module_ops_size = sizeof(struct rmca_module_ops),
#elif ABI_CASE == ABI_CASE_BIGREQ
	.abi_version = RMCA_COMPONENT_ABI_VERSION,
	.name = "bigreq",
	.module_ops_size = sizeof(struct rmca_module_ops),
	.req_size = RMCA_COMPONENT_REQ_MAX + 1,
#elif ABI_CASE == ABI_CASE_ABI8
	.abi_version = 8,
	.name = "abi8",
	.module_ops_size = sizeof(struct rmca_module_ops),
	.req_size = RMCA_COMPONENT_REQ_MAX + 1,
#else
#error "ABI_CASE names no case"
#endif
	.version = "0.0.1",
	.description = "test component at an edge of the ABI",
	.priority = 1,
	.open = abi_open,
	.close = test_close,
};
