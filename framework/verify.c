// SPDX-License-Identifier: BSD-3-Clause
/*
 * Was that access refused? A put or get that failed as a lost connection
 * may have been refused by the target (a made-up key, a range outside the
 * region) on a transport that reports such a refusal by breaking the
 * connection: the target's core is asked, and the status becomes
 * RMCA_ERR_REMOTE_ACCESS when it says so.
 */
#include <rmca/support/range.h>

#include "bootstrap.h"
#include "ctrl.h"
#include "ep.h"
#include "paths.h"

#define RMCA_VERIFY_MS 3000

bool rmca_verify_start(struct rmca_ep *ep, struct rmca_req *r)
{
	struct rmca_ctrl_msg m = { .type = RMCA_CTRL_VERIFY,
				   .rkey = r->rkey,
				   .raddr = r->raddr,
				   .len = r->rlen,
				   .access = r->op == RMCA_OP_PUT ?
						     RMCA_ACCESS_REMOTE_WRITE :
						     RMCA_ACCESS_REMOTE_READ };

	if (rmca_ctrl_send_verify(ep, &m))
		return false;
	r->am_id = m.id;
	r->ctrl_end = rmca_ctrl_sent_end(ep);
	r->verify_deadline = rmca_now_ms() + RMCA_VERIFY_MS;
	r->verify_next = ep->verify_wait;
	ep->verify_wait = r;
	rmca_core_work_due(ep->ctx);
	return true;
}

void rmca_verify_serve(struct rmca_ep *ep, const struct rmca_ctrl_msg *m)
{
	struct rmca_ctrl_msg resp = { .type = RMCA_CTRL_VERIFY_RESP, .id = m->id };
	struct rmca_module_mr *mmr;
	struct rmca_mr *mr = rmca_mr_by_key(ep, m->rkey, &mmr);
	uint64_t base = mr ? (uintptr_t)mr->addr : 0;

	if (!mr || !(mr->access & m->access) ||
	    !rmca_range_inside(base, mr->len, m->raddr, m->len))
		resp.status = RMCA_ERR_REMOTE_ACCESS;
	rmca_ctrl_send_owed(ep, &resp);
}

/* r's verification is over: status is the refusal, or stays as it was. */
static void verify_end(struct rmca_ep *ep, struct rmca_req *r, int status)
{
	struct rmca_req **pp;

	for (pp = &ep->verify_wait; *pp && *pp != r; pp = &(*pp)->verify_next)
		;
	if (*pp)
		*pp = r->verify_next;
	r->verify_next = NULL;
	r->verifying = false;
	r->verified = true;
	if (status == RMCA_ERR_REMOTE_ACCESS)
		r->status = status;
}

/*
 * An answer is for the oldest verification not answered yet (ctrl.h); one
 * that is no longer waited for came after its deadline: the access's status
 * stood then, and the answer is dropped. Any other breaks the protocol.
 */
int rmca_verify_answered(struct rmca_ep *ep, const struct rmca_ctrl_msg *m)
{
	struct rmca_req *r;
	long late;

	for (r = ep->verify_wait; r && r->am_id != m->id; r = r->verify_next)
		;
	/* Only what the peer read is answered (ctrl.h: ids are guessed
	 * easily). One no longer waited for is dropped, whatever it says. */
	if (r && !rmca_ctrl_written(ep, r->ctrl_end)) {
		rmca_log(0,
			 "%s: answer to verification %llu, which is not sent "
			 "yet",
			 ep->peer, (unsigned long long)m->id);
		return RMCA_ERR_PROTOCOL;
	}
	late = rmca_ctrl_verify_answer(ep, m->id, !r);
	if (late < 0) {
		rmca_log(0,
			 "%s: answer to verification %llu, which is not the "
			 "oldest unanswered",
			 ep->peer, (unsigned long long)m->id);
		return RMCA_ERR_PROTOCOL;
	}
	if (!r) {
		rmca_log(2,
			 "%s: answer to verification %llu after %d ms, dropped "
			 "(%ld so late)",
			 ep->peer, (unsigned long long)m->id, RMCA_VERIFY_MS,
			 late);
		return 0;
	}
	verify_end(ep, r, m->status);
	rmca_ep_advance(ep);
	return 0;
}

/* Progress: a peer that does not answer in time leaves the status as is. */
void rmca_verify_expire(struct rmca_ep *ep)
{
	int64_t now = rmca_now_ms();
	struct rmca_req *r, *next;
	bool any = false;

	for (r = ep->verify_wait; r; r = next) {
		next = r->verify_next;
		if (now >= r->verify_deadline) {
			verify_end(ep, r, 0);
			any = true;
		}
	}
	if (any)
		rmca_ep_advance(ep);
}

void rmca_verify_lost(struct rmca_ep *ep)
{
	struct rmca_req *r;

	if (!ep->verify_wait)
		return;
	while ((r = ep->verify_wait))
		verify_end(ep, r, 0);
	rmca_ep_advance(ep);
}
