/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The data operations of the module ops table. Local buffers go by the lkey
 * of the user's region; remote ones by the 32-bit rkey inside the rmca key.
 */
#include <stdlib.h>

#include "verbs.h"

static struct rmca_verbs_op *op_local(struct rmca_verbs_conn *c,
				      enum rmca_verbs_op_kind kind, void *req,
				      const void *buf, size_t len,
				      struct rmca_verbs_mr *mr, uint32_t lkey)
{
	struct rmca_verbs_op *op = rmca_verbs_op_new(c, kind, req);

	if (!op)
		return NULL;
	op->sge.addr = (uintptr_t)buf;
	op->sge.length = len;
	op->sge.lkey = lkey;
	return op;
}

static int check(struct rmca_verbs_conn *c, const void *buf, size_t len,
		 struct rmca_verbs_mr *mr)
{
	if (len > UINT32_MAX)
		return RMCA_ERR_INVALID;
	if (len && (!mr || (const char *)buf < (char *)mr->addr ||
		    (const char *)buf + len > (char *)mr->addr + mr->len))
		return RMCA_ERR_INVALID;
	return 0;
}

/* Inlined into each caller: the kind is known there, and eight
 * arguments passed through the stack cost a send more than the work. */
static inline __attribute__((always_inline)) int
local_op(struct rmca_verbs_conn *c, enum rmca_verbs_op_kind kind,
	 const void *buf, size_t len, struct rmca_verbs_mr *mr, uint64_t raddr,
	 uint64_t rkey, void *req)
{
	struct rmca_verbs_op *op;
	uint32_t lkey;
	int ret = check(c, buf, len, mr);

	if (ret)
		return ret;
	lkey = !mr ? 0 : kind == RMCA_VOP_GET ? rmca_verbs_sink_lkey(mr) :
						mr->mr->lkey;
	if (mr && !lkey)
		return RMCA_ERR_NO_MEMORY;
	op = op_local(c, kind, req, buf, len, mr, lkey);
	if (!op)
		return RMCA_ERR_NO_MEMORY;
	op->raddr = raddr;
	op->rkey = rmca_verbs_rkey32(rkey);
	return rmca_verbs_submit(c, op);
}

static int v_send(struct rmca_conn *bc, const void *buf, size_t len,
		  struct rmca_module_mr *bmr, void *req)
{
	struct rmca_verbs_conn *c = rmca_verbs_conn_from_base(bc);
	struct rmca_verbs_mr *mr = rmca_verbs_mr_from_base(bmr);

	return local_op(c, RMCA_VOP_SEND, buf, len, mr, 0, 0, req);
}

static int v_send_inv(struct rmca_conn *bc, const void *buf, size_t len,
		      struct rmca_module_mr *bmr, uint64_t rkey, void *req)
{
	struct rmca_verbs_conn *c = rmca_verbs_conn_from_base(bc);
	struct rmca_verbs_mr *mr = rmca_verbs_mr_from_base(bmr);

	if (!(c->mod->m.caps & RMCA_CAP_SEND_INV))
		return RMCA_ERR_UNSUPPORTED;
	if (!(rkey & RMCA_KEY_USE_ONCE))
		return RMCA_ERR_INVALID;
	return local_op(c, RMCA_VOP_SEND_INV, buf, len, mr, 0, rkey, req);
}

static int v_recv(struct rmca_conn *bc, void *buf, size_t len,
		  struct rmca_module_mr *bmr, void *req)
{
	struct rmca_verbs_conn *c = rmca_verbs_conn_from_base(bc);
	struct rmca_verbs_mr *mr = rmca_verbs_mr_from_base(bmr);

	return local_op(c, RMCA_VOP_RECV, buf, len, mr, 0, 0, req);
}

static int v_put(struct rmca_conn *bc, const void *buf, size_t len,
		 struct rmca_module_mr *bmr, uint64_t raddr, uint64_t rkey,
		 void *req)
{
	struct rmca_verbs_conn *c = rmca_verbs_conn_from_base(bc);
	struct rmca_verbs_mr *mr = rmca_verbs_mr_from_base(bmr);

	return local_op(c, RMCA_VOP_PUT, buf, len, mr, raddr, rkey, req);
}

/*
 * siw serves an RDMA READ from any valid STag of the QP's PD, whether or not
 * it grants remote read: siw_qp_sq_proc_tx() checks the READ RESPONSE's
 * source with siw_check_sgl_tx(qp->pd, wqe, 0), i.e. no permission at all
 * (drivers/infiniband/sw/siw/siw_qp_tx.c, Linux 6.1), a kernel bug. So on
 * iwarp an rmca key carries RMCA_VERBS_KEY_READ when its region grants
 * remote read (verbs_mr.c), and a get with a key that lacks it is refused
 * here, before anything goes on the wire: it completes
 * RMCA_ERR_REMOTE_ACCESS and fails the connection as a refusal by the
 * target would. This protects honest rmca peers only: the target's memory
 * stays readable with the bare 32-bit STag by anyone who posts READs
 * himself; only a fixed kernel closes that.
 */
static int refuse_get(struct rmca_verbs_conn *c, void *req)
{
	struct rmca_verbs_op *op = rmca_verbs_op_new(c, RMCA_VOP_GET, req);

	if (!op)
		return RMCA_ERR_NO_MEMORY;
	op->status = RMCA_ERR_REMOTE_ACCESS;
	c->mod->m.core->ops->log(c->mod->m.core, RMCA_LOG_DEBUG,
				 "%s: get with a key without remote read "
				 "refused", c->mod->m.device);
	if (c->state != RMCA_VCONN_FAILED)
		rmca_verbs_conn_fail(c, RMCA_ERR_CONNECTION);
	/* on the failed connection: completed from the timer, in order */
	return rmca_verbs_submit(c, op);
}

static int v_get(struct rmca_conn *bc, void *buf, size_t len,
		 struct rmca_module_mr *bmr, uint64_t raddr, uint64_t rkey,
		 void *req)
{
	struct rmca_verbs_conn *c = rmca_verbs_conn_from_base(bc);
	struct rmca_verbs_mr *mr = rmca_verbs_mr_from_base(bmr);
	int ret = check(c, buf, len, mr);

	if (ret)
		return ret;
	if (rmca_verbs_flavour(c->mod)->read_key_bit &&
	    !(rkey & RMCA_VERBS_KEY_READ))
		return refuse_get(c, req);
	return local_op(c, RMCA_VOP_GET, buf, len, mr, raddr, rkey, req);
}

static int v_atomic(struct rmca_conn *bc, const struct rmca_atomic *a,
		    uint64_t *result, struct rmca_module_mr *bmr, void *req)
{
	struct rmca_verbs_conn *c = rmca_verbs_conn_from_base(bc);
	struct rmca_verbs_mr *mr = rmca_verbs_mr_from_base(bmr);
	struct rmca_verbs_op *op;
	int ret;

	if (!(c->mod->m.caps & RMCA_CAP_ATOMIC))
		return RMCA_ERR_UNSUPPORTED;
	if (a->kind != RMCA_ATOMIC_FADD && a->kind != RMCA_ATOMIC_CSWAP)
		return RMCA_ERR_UNSUPPORTED; /* no masked atomics in verbs */
	if ((a->raddr & 7) || ((uintptr_t)result & 7))
		return RMCA_ERR_INVALID;
	ret = check(c, result, 8, mr);
	if (ret)
		return ret;
	op = op_local(c, RMCA_VOP_ATOMIC, req, result, 8, mr, mr->mr->lkey);
	if (!op)
		return RMCA_ERR_NO_MEMORY;
	op->raddr = a->raddr;
	op->rkey = rmca_verbs_rkey32(a->rkey);
	op->cswap = a->kind == RMCA_ATOMIC_CSWAP;
	op->operand = a->operand;
	op->compare = a->compare;
	return rmca_verbs_submit(c, op);
}

/* Test-only (verbs_fault.c): a flush's op is not allocated. Looked up
 * only in a process started with RMCATEST_FAIL set. */
static bool flush_alloc_fails(void)
{
	static int knobs = -1;

	if (knobs < 0)
		knobs = getenv("RMCATEST_FAIL") != NULL;
	return knobs && rmca_verbs_fault("verbs_flush_alloc");
}

/* A flush that cannot be had now is to be asked again (RMCA_ERR_AGAIN),
 * never failed: a delivery flush's error becomes the status of every put
 * it covers (framework/ops.c), which no shortage here made wrong. */
static int v_flush(struct rmca_conn *bc, void *req)
{
	struct rmca_verbs_conn *c = rmca_verbs_conn_from_base(bc);
	struct rmca_verbs_op *op =
		flush_alloc_fails() ? NULL
				    : rmca_verbs_op_new(c, RMCA_VOP_FLUSH, req);

	if (!op)
		return RMCA_ERR_AGAIN;
	return rmca_verbs_submit(c, op);
}

/* The ops defined elsewhere, as the core calls them: its handles in, the
 * module's own objects on (verbs.h). */
static int v_connect_start(struct rmca_module *m,
			   const struct rmca_conn_args *args,
			   struct rmca_connecting **out)
{
	struct rmca_verbs_connecting *h;
	int r = rmca_verbs_connect_start(m, args, &h);

	if (!r)
		*out = rmca_verbs_connecting_base(h);
	return r;
}

static int v_connect_poll(struct rmca_connecting *h, struct rmca_conn **out)
{
	struct rmca_verbs_conn *c;
	int r = rmca_verbs_connect_poll(rmca_verbs_connecting_from_base(h), &c);

	if (!r)
		*out = rmca_verbs_conn_base(c);
	return r;
}

static void v_connect_abort(struct rmca_connecting *h)
{
	rmca_verbs_connect_abort(rmca_verbs_connecting_from_base(h));
}

static void v_disconnect(struct rmca_conn *c)
{
	rmca_verbs_disconnect(rmca_verbs_conn_from_base(c));
}

static int v_mr_reg(struct rmca_module *m, void *addr, size_t len,
		    unsigned access, struct rmca_module_mr **out)
{
	struct rmca_verbs_mr *mr;
	int r = rmca_verbs_mr_reg(m, addr, len, access, &mr);

	if (!r)
		*out = rmca_verbs_mr_base(mr);
	return r;
}

static int v_mr_dereg(struct rmca_module_mr *mr)
{
	return rmca_verbs_mr_dereg(rmca_verbs_mr_from_base(mr));
}

static uint64_t v_mr_rkey(struct rmca_module_mr *mr, struct rmca_conn *c)
{
	return rmca_verbs_mr_rkey(rmca_verbs_mr_from_base(mr),
				  rmca_verbs_conn_from_base(c));
}

static int v_key_match(struct rmca_module_mr *mr, struct rmca_conn *c,
		       uint64_t rkey)
{
	return rmca_verbs_key_match(rmca_verbs_mr_from_base(mr),
				    rmca_verbs_conn_from_base(c), rkey);
}

static int v_revoke(struct rmca_module_mr *mr, struct rmca_conn *c,
		    uint64_t rkey)
{
	return rmca_verbs_mr_revoke(rmca_verbs_mr_from_base(mr),
				    rmca_verbs_conn_from_base(c), rkey);
}

const struct rmca_module_ops rmca_verbs_ops = {
	.addr = rmca_verbs_addr,
	.atomic = v_atomic,
	.connect_abort = v_connect_abort,
	.connect_poll = v_connect_poll,
	.connect_start = v_connect_start,
	.disconnect = v_disconnect,
	.flush = v_flush,
	.get = v_get,
	.key_match = v_key_match,
	.mr_dereg = v_mr_dereg,
	.mr_reg = v_mr_reg,
	.mr_rkey = v_mr_rkey,
	.progress = rmca_verbs_progress,
	.put = v_put,
	.reach = rmca_verbs_reach,
	.reachable = rmca_verbs_reachable,
	.recv = v_recv,
	.revoke = v_revoke,
	.send = v_send,
	.send_inv = v_send_inv,
};
