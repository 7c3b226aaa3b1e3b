// SPDX-License-Identifier: BSD-3-Clause
/*
 * Atomics executed by the target's core: the initiator's core sends them
 * over the control channel, the target's core validates key, range,
 * alignment and permission, executes them on its CPU and answers in the
 * order it read them.
 */
#include <rmca/atomic_ops.h>
#include <rmca/support/range.h>

#include "ctrl.h"
#include "ep.h"
#include "paths.h"

int rmca_atomic_send(struct rmca_ep *ep, struct rmca_req *r)
{
	struct rmca_ctrl_msg m = {.type = RMCA_CTRL_ATOMIC_REQ,
				  .id = ep->am_next_id + 1,
				  .op = r->aop};
	int rc = rmca_ctrl_send(ep, &m);

	if (rc)
		return rc;
	ep->am_next_id++;
	r->am_id = m.id;
	r->ctrl_end = rmca_ctrl_sent_end(ep);
	rmca_core_add(&ep->am_wait, r);
	return 0;
}

/* The control channel is another connection than the data one: an atomic
 * waits for the puts posted before it as a get the peer's core answers
 * does (rmca_core_order), so that it sees them, as a device atomic behind
 * a WRITE on one QP does. */
int rmca_emul_atomic(struct rmca_ep *ep, struct rmca_req *r)
{
	int rc;

	if (ep->nheld >= ep->ctx->ep_max_core_ops)
		return RMCA_ERR_AGAIN;
	rc = rmca_core_order(ep, r);
	if (rc)
		return rc < 0 ? rc : 0;
	rc = rmca_atomic_send(ep, r);
	if (!rc)
		ep->nheld++;
	return rc;
}

void rmca_atomic_serve(struct rmca_ep *ep, const struct rmca_ctrl_msg *req)
{
	struct rmca_ctrl_msg resp = {.type = RMCA_CTRL_ATOMIC_RESP,
				     .id = req->id};
	struct rmca_module_mr *mmr;
	struct rmca_mr *mr = rmca_mr_by_key(ep, req->op.rkey, &mmr);
	uint64_t base, a = req->op.raddr;

	base = mr ? (uintptr_t)mr->addr : 0;
	if (!mr || !(mr->access & RMCA_ACCESS_REMOTE_ATOMIC) || (a & 7) ||
	    !rmca_range_inside(base, mr->len, a, 8)) {
		resp.status = RMCA_ERR_REMOTE_ACCESS;
		rmca_log(1, "%s: atomic at 0x%llx key 0x%llx refused", ep->peer,
			 (unsigned long long)a,
			 (unsigned long long)req->op.rkey);
	} else {
		resp.old = rmca_atomic_cpu((uint64_t *)(uintptr_t)a, &req->op);
	}
	rmca_ctrl_send_owed(ep, &resp);
}

/* The answer is for the oldest atomic: the peer's core answers in order,
 * and only what it read (ctrl.h: ids are guessed easily). */
int rmca_atomic_answered(struct rmca_ep *ep, const struct rmca_ctrl_msg *m)
{
	struct rmca_req *r = rmca_core_first(&ep->am_wait);

	if (!r || r->am_id != m->id)
		return RMCA_ERR_PROTOCOL;
	if (!rmca_ctrl_written(ep, r->ctrl_end)) {
		rmca_log(0, "%s: answer to atomic %llu, which is not sent yet",
			 ep->peer, (unsigned long long)m->id);
		return RMCA_ERR_PROTOCOL;
	}
	rmca_list_del(&r->core_link);
	ep->nheld--;
	if (!m->status)
		*r->result = m->old;
	rmca_req_done(r, m->status, 0, 0);
	return 0;
}

void rmca_atomic_lost(struct rmca_ep *ep, int status)
{
	struct rmca_req *r;

	while ((r = rmca_core_pop(&ep->am_wait))) {
		ep->nheld--;
		rmca_req_done(r, status, 0, 0);
	}
}
