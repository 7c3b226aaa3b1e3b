// SPDX-License-Identifier: BSD-3-Clause
/*
 * Gets the target's core answers: a get of 1..RMCA_CTRL_GET_MAX bytes from
 * a peer whose device may not answer such a READ safely (siw: component.h,
 * RMCA_CAP_SHORT_READ) goes over the control channel. The target's core
 * checks key, range and permission as for any remote access and answers
 * with the bytes, in the order it read the requests.
 *
 * Order: an RDMA READ behind a WRITE on one connection sees the write; the
 * control channel is another connection. So a get waits behind a flush of
 * the data connection (a fence: every op posted on it before is delivered
 * at the target) when puts or gets went there since the last fence, and is
 * sent once every fence posted up to its own has completed. Atomics the
 * peer's core executes (atomic_core.c) wait the same way, on the same
 * queue, so that gets and atomics also go in the order they were posted.
 */
#include <string.h>

#include <rmca/support/range.h>

#include "ctrl.h"
#include "ep.h"
#include "paths.h"
#include "rails.h"

_Static_assert(RMCA_GET_SHORT_MAX == RMCA_CTRL_GET_MAX,
	       "the get_short path covers the gets the wire carries");

/* r completes with status (its answer, or why it never came). */
static void get_end(struct rmca_ep *ep, struct rmca_req *r, int status)
{
	ep->nheld--;
	rmca_req_done(r, status, 0, 0);
}

static int get_send(struct rmca_ep *ep, struct rmca_req *r)
{
	struct rmca_ctrl_msg m = {.type = RMCA_CTRL_GET_REQ,
				  .id = ep->am_next_id + 1,
				  .raddr = r->raddr,
				  .rkey = r->rkey,
				  .len = r->rlen};
	int rc = rmca_ctrl_send(ep, &m);

	if (rc)
		return rc;
	ep->am_next_id++;
	r->am_id = m.id;
	r->ctrl_end = rmca_ctrl_sent_end(ep);
	rmca_core_add(&ep->get_wait, r);
	return 0;
}

/* Send the held gets and atomics whose fences have all completed, in post
 * order. */
static void held_release(struct rmca_ep *ep)
{
	struct rmca_req *r;

	while ((r = rmca_core_first(&ep->get_held)) &&
	       r->core_fence <= ep->fences_done) {
		int rc = ep->fence_status;

		rmca_list_del(&r->core_link);
		if (!rc)
			rc = r->op == RMCA_OP_ATOMIC ? rmca_atomic_send(ep, r)
						     : get_send(ep, r);
		/* RMCA_ERR_AGAIN, which a post returns, is no status for a
		 * completion: it is the channel's buffer that could not grow */
		if (rc == RMCA_ERR_AGAIN)
			rc = RMCA_ERR_NO_MEMORY;
		if (rc)
			get_end(ep, r, rc);
	}
}

/* A fence for the gets to come: a flush of every rail. */
static int fence_post(struct rmca_ep *ep)
{
	struct rmca_req *f = rmca_req_alloc(ep->ctx);
	int rc;

	if (!f)
		return RMCA_ERR_NO_MEMORY;
	f->ctx = ep->ctx;
	f->ep = ep;
	f->op = RMCA_OP_FLUSH;
	f->kind = RMCA_REQ_GET_FENCE;
	rmca_req_path_clear(f);
	f->core_fence = ep->fences_posted + 1;
	/* on the list first: the module may complete it inside the call */
	rmca_core_add(&ep->get_fences, f);
	rc = rmca_rails_flush(ep, f);
	if (rc) {
		/* not taken, so not completed: still on the list */
		rmca_list_del(&f->core_link);
		rmca_req_free(f->ctx, f);
		return rc;
	}
	ep->fences_posted++;
	ep->fenced_ops = ep->rma_ops;
	return 0;
}

int rmca_get_core(struct rmca_ep *ep, struct rmca_req *r, void *buf, size_t len)
{
	int rc;

	if (ep->nheld >= ep->ctx->ep_max_core_ops)
		return RMCA_ERR_AGAIN;
	if (!ep->ctrl)
		return RMCA_ERR_CONNECTION;
	r->path = RMCA_PATH_EMULATED;
	r->get_buf = buf;
	r->rlen = len;
	/* Its answer comes from the target's core, or from no one: nothing
	 * to ask that core about later (verify.c). */
	r->verified = true;
	rc = rmca_core_order(ep, r);
	if (rc)
		return rc < 0 ? rc : 0;
	ep->nheld++;
	rc = get_send(ep, r);
	if (rc)
		ep->nheld--;
	return rc;
}

int rmca_core_order(struct rmca_ep *ep, struct rmca_req *r)
{
	int rc;

	if (ep->rma_ops != ep->fenced_ops) {
		rc = fence_post(ep);
		if (rc)
			return rc;
	}
	r->core_fence = ep->fences_posted;
	if (rmca_list_empty(&ep->get_held) && r->core_fence <= ep->fences_done)
		return 0;
	rmca_core_add(&ep->get_held, r);
	ep->nheld++;
	return 1;
}

void rmca_get_fence_done(struct rmca_req *f, int status)
{
	struct rmca_ep *ep = f->ep;
	struct rmca_req *h;

	f->done = true;
	if (status && !ep->fence_status)
		ep->fence_status = status;
	/* fences_done: every fence up to it completed (rails may complete
	 * them out of order) */
	while ((h = rmca_core_first(&ep->get_fences)) && h->done) {
		rmca_list_del(&h->core_link);
		ep->fences_done = h->core_fence;
		rmca_req_free(h->ctx, h);
	}
	held_release(ep);
}

void rmca_get_serve(struct rmca_ep *ep, const struct rmca_ctrl_msg *req)
{
	struct rmca_ctrl_msg resp = {.type = RMCA_CTRL_GET_RESP, .id = req->id};
	struct rmca_module_mr *mmr;
	struct rmca_mr *mr = rmca_mr_by_key(ep, req->rkey, &mmr);
	uint64_t base = mr ? (uintptr_t)mr->addr : 0, a = req->raddr;

	/* req->len is 1..RMCA_CTRL_GET_MAX (the decoder checked) */
	if (!mr || !(mr->access & RMCA_ACCESS_REMOTE_READ) ||
	    !rmca_range_inside(base, mr->len, a, req->len)) {
		resp.status = RMCA_ERR_REMOTE_ACCESS;
		rmca_log(1,
			 "%s: get of %llu bytes at 0x%llx key 0x%llx refused",
			 ep->peer, (unsigned long long)req->len,
			 (unsigned long long)a, (unsigned long long)req->rkey);
	} else {
		resp.len = req->len;
		memcpy(resp.data, (const void *)(uintptr_t)a, (size_t)req->len);
	}
	rmca_ctrl_send_owed(ep, &resp);
}

/* The answer is for the oldest get sent: the peer's core answers in order,
 * and only what it read (ctrl.h: ids are guessed easily). */
int rmca_get_answered(struct rmca_ep *ep, const struct rmca_ctrl_msg *m)
{
	struct rmca_req *r = rmca_core_first(&ep->get_wait);

	if (!r || r->am_id != m->id) {
		rmca_log(0,
			 "%s: answer to get %llu, which is not the oldest "
			 "outstanding",
			 ep->peer, (unsigned long long)m->id);
		return RMCA_ERR_PROTOCOL;
	}
	if (!rmca_ctrl_written(ep, r->ctrl_end)) {
		rmca_log(0, "%s: answer to get %llu, which is not sent yet",
			 ep->peer, (unsigned long long)m->id);
		return RMCA_ERR_PROTOCOL;
	}
	if (!m->status && m->len != r->rlen) {
		rmca_log(0, "%s: answer of %llu bytes to a get of %zu",
			 ep->peer, (unsigned long long)m->len, r->rlen);
		return RMCA_ERR_PROTOCOL;
	}
	rmca_list_del(&r->core_link);
	if (!m->status)
		memcpy(r->get_buf, m->data, r->rlen);
	get_end(ep, r, m->status);
	return 0;
}

void rmca_get_lost(struct rmca_ep *ep, int status)
{
	struct rmca_req *r;

	while ((r = rmca_core_pop(&ep->get_wait)))
		get_end(ep, r, status);
	while ((r = rmca_core_pop(&ep->get_held)))
		get_end(ep, r, status);
}

/* The endpoint goes: its module completed the fences; the gets and
 * atomics are on the request list, which is cancelled next. */
void rmca_get_core_close(struct rmca_ep *ep)
{
	while (rmca_core_pop(&ep->get_wait))
		;
	while (rmca_core_pop(&ep->am_wait))
		;
	while (rmca_core_pop(&ep->get_held))
		;
}
