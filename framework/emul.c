// SPDX-License-Identifier: BSD-3-Clause
/*
 * The paths the core builds where a module has no native one:
 *  - masked atomics as a compare-and-swap loop over the native CSWAP;
 *  - atomics executed by the target's core, sent over the control channel
 *    (the target validates key, range, alignment and permission);
 *  - send with invalidate as a revoke message: the REVOKE goes first on the
 *    control channel, and the message itself is posted only once the
 *    receiver acknowledged it, so the key is revoked before the receive
 *    completes; the receive then carries revoked_rkey.
 * One atomic mode per context keeps device and CPU atomics from mixing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rmca/atomic_ops.h>

#include "bootstrap.h"
#include "ctrl.h"
#include "ep.h"

void rmca_paths_choose(struct rmca_ep *ep)
{
	const struct rmca_module_ops *ops = ep->mod->m->ops;
	uint32_t local = ep->mod->caps, both = local & ep->peer_caps;
	bool have = both & RMCA_CAP_ATOMIC, masked = both & RMCA_CAP_MASKED_ATOMIC;
	bool cpu_domain = both & RMCA_CAP_ATOMIC_CPU;
	struct rmca_ep_attr *a = &ep->attr;

	a->put_delivered = (local & RMCA_CAP_REMOTE_COMPLETION) ?
				   RMCA_PATH_NATIVE :
				   RMCA_PATH_FLUSH;
	if (!ops->atomic)
		have = masked = false;
	if (ep->ctx->atomic_resolved == RMCA_ATOMIC_MODE_DEVICE) {
		/* Only the NIC may touch the word: no emulation. */
		a->atomic = have && !cpu_domain ? RMCA_PATH_NATIVE : RMCA_PATH_NONE;
		a->masked_atomic = masked && !cpu_domain ? RMCA_PATH_NATIVE :
				   have && !cpu_domain	 ? RMCA_PATH_CAS_LOOP :
							   RMCA_PATH_NONE;
	} else {
		/* Only CPUs may touch the word: native where the target's
		 * atomics run on its CPU, else its core runs them. */
		a->atomic = have && cpu_domain ? RMCA_PATH_NATIVE :
						 RMCA_PATH_EMULATED;
		a->masked_atomic = masked && cpu_domain ? RMCA_PATH_NATIVE :
				   have && cpu_domain	? RMCA_PATH_CAS_LOOP :
							  RMCA_PATH_EMULATED;
	}
	if ((both & RMCA_CAP_SEND_INV) && ops->send_inv)
		a->send_inv = RMCA_PATH_NATIVE;
	else if (ops->revoke)
		a->send_inv = RMCA_PATH_REVOKE_MSG;
	else
		a->send_inv = RMCA_PATH_NONE;
}

/* ---- atomics by the target's core ---- */

int rmca_emul_atomic(struct rmca_ep *ep, struct rmca_req *r)
{
	struct rmca_ctrl_msg m = { .type = RMCA_CTRL_ATOMIC_REQ,
				   .id = ep->am_next_id + 1,
				   .op = r->aop };
	int rc;

	if (ep->nheld >= ep->ctx->ep_max_core_ops)
		return RMCA_ERR_AGAIN;
	rc = rmca_ctrl_send(ep, &m);
	if (rc)
		return rc;
	ep->am_next_id++;
	r->am_id = m.id;
	if (ep->am_wait_tail)
		ep->am_wait_tail->am_next = r;
	else
		ep->am_wait = r;
	ep->am_wait_tail = r;
	ep->nheld++;
	return 0;
}

/* The region of ctx behind rkey as handed out on ep, or NULL. */
static struct rmca_mr *mr_by_key(struct rmca_ep *ep, uint64_t rkey,
				 struct rmca_module_mr **mmr)
{
	const struct rmca_module_ops *ops = ep->mod->m->ops;

	if (!rkey)
		return NULL;
	for (struct rmca_mr *mr = ep->ctx->mrs; mr; mr = mr->next) {
		struct rmca_module_mr *x = mr->mmr[ep->mod->index];

		if (x && (ops->key_match ? ops->key_match(x, ep->conn, rkey) :
					   ops->mr_rkey(x, ep->conn) == rkey)) {
			*mmr = x;
			return mr;
		}
	}
	return NULL;
}

static void atomic_serve(struct rmca_ep *ep, const struct rmca_ctrl_msg *req)
{
	struct rmca_ctrl_msg resp = { .type = RMCA_CTRL_ATOMIC_RESP,
				      .id = req->id };
	struct rmca_module_mr *mmr;
	struct rmca_mr *mr = mr_by_key(ep, req->op.rkey, &mmr);
	uint64_t base, a = req->op.raddr;

	base = mr ? (uintptr_t)mr->addr : 0;
	if (!mr || !(mr->access & RMCA_ACCESS_REMOTE_ATOMIC) || (a & 7) ||
	    a < base || mr->len < 8 || a - base > mr->len - 8) {
		resp.status = RMCA_ERR_REMOTE_ACCESS;
		rmca_log(1, "%s: atomic at 0x%llx key 0x%llx refused", ep->peer,
			 (unsigned long long)a, (unsigned long long)req->op.rkey);
	} else {
		resp.old = rmca_atomic_cpu((uint64_t *)(uintptr_t)a, &req->op);
	}
	rmca_ctrl_send(ep, &resp);
}

/* The answer is for the oldest atomic: the peer's core answers in order. */
static int atomic_answered(struct rmca_ep *ep, const struct rmca_ctrl_msg *m)
{
	struct rmca_req *r = ep->am_wait;

	if (!r || r->am_id != m->id)
		return RMCA_ERR_PROTOCOL;
	ep->am_wait = r->am_next;
	if (!ep->am_wait)
		ep->am_wait_tail = NULL;
	r->am_next = NULL;
	ep->nheld--;
	if (!m->status)
		*r->result = m->old;
	rmca_req_done(r, m->status, 0, 0);
	return 0;
}

/* ---- masked atomics as a CAS loop ---- */

/*
 * Guess the word's value (0 first), CSWAP the guess for what the op would
 * make of it; the CSWAP returns the real value: equal means done, else
 * guess again with it. A guess that needs no write swaps it for itself.
 */
static int cas_post(struct rmca_ep *ep, struct rmca_req *r)
{
	struct rmca_atomic cas = { .kind = RMCA_ATOMIC_CSWAP,
				   .raddr = r->aop.raddr,
				   .rkey = r->aop.rkey,
				   .compare = r->cas_guess };
	bool write;

	cas.operand = rmca_atomic_next(r->cas_guess, &r->aop, &write);
	return ep->mod->m->ops->atomic(ep->conn, &cas, r->result,
				       r->result_mmr, r);
}

int rmca_cas_start(struct rmca_ep *ep, struct rmca_req *r)
{
	r->cas_guess = 0;
	return cas_post(ep, r);
}

/* A step completed: true when the loop goes on (the completion is ours). */
bool rmca_cas_step_done(struct rmca_req *r, int status)
{
	uint64_t got;
	int rc;

	if (status)
		return false;
	got = __atomic_load_n(r->result, __ATOMIC_ACQUIRE);
	if (got == r->cas_guess)
		return false;
	r->cas_guess = got;
	rc = cas_post(r->ep, r);
	if (rc) {
		r->path = RMCA_PATH_NONE; /* ends the loop */
		rmca_req_done(r, rc == RMCA_ERR_AGAIN ? RMCA_ERR_CONNECTION : rc,
			      0, 0);
	}
	return true;
}

/* ---- send with invalidate by revoke message ---- */

int rmca_revoke_send(struct rmca_ep *ep, struct rmca_req *r)
{
	struct rmca_ctrl_msg m = { .type = RMCA_CTRL_REVOKE,
				   .id = r->seq,
				   .rkey = r->inv_rkey };

	return rmca_ctrl_send(ep, &m);
}

/*
 * Hold r, a send, behind the revoke messages not yet acknowledged; a
 * send_inv by revoke message (r->inv_rkey) sends its REVOKE now, naming
 * the message it rides on, and waits for the ack itself. Bounded: past
 * RMCA_ep_max_core_ops nothing is held and the caller says RMCA_ERR_AGAIN.
 */
int rmca_deferred_add(struct rmca_ep *ep, struct rmca_req *r)
{
	int rc;

	if (ep->nheld >= ep->ctx->ep_max_core_ops)
		return RMCA_ERR_AGAIN;
	r->seq = ep->send_seq + 1;
	if (r->inv_rkey) {
		rc = rmca_revoke_send(ep, r);
		if (rc)
			return rc;
		if (ep->unacked_tail)
			ep->unacked_tail->unacked_next = r;
		else
			ep->unacked = r;
		ep->unacked_tail = r;
	}
	ep->send_seq++;
	r->defer_prev = ep->deferred_tail;
	if (ep->deferred_tail)
		ep->deferred_tail->defer_next = r;
	else
		ep->deferred = r;
	ep->deferred_tail = r;
	ep->nheld++;
	rmca_core_work_due(ep->ctx);
	return 0;
}

static void deferred_unlink(struct rmca_ep *ep, struct rmca_req *r)
{
	if (r->defer_prev)
		r->defer_prev->defer_next = r->defer_next;
	else
		ep->deferred = r->defer_next;
	if (r->defer_next)
		r->defer_next->defer_prev = r->defer_prev;
	else
		ep->deferred_tail = r->defer_prev;
	r->defer_prev = r->defer_next = NULL;
	ep->nheld--;
}

/* Post the held sends in order, up to the first revoke not yet acked. */
void rmca_deferred_post(struct rmca_ep *ep)
{
	struct rmca_req *r;

	while ((r = ep->deferred) && (!r->inv_rkey || r->acked)) {
		const struct rmca_module_ops *ops = ep->mod->m->ops;
		int rc = r->native_inv ?
				 ops->send_inv(ep->conn, r->buf, r->buf_len,
					       r->mmr, r->native_inv, r) :
				 ops->send(ep->conn, r->buf, r->buf_len, r->mmr,
					   r);

		if (rc == RMCA_ERR_AGAIN)
			return; /* the next progress retries */
		deferred_unlink(ep, r);
		if (rc)
			rmca_req_done(r, rc, 0, 0);
	}
}

static void revoke_serve(struct rmca_ep *ep, const struct rmca_ctrl_msg *m)
{
	struct rmca_ctrl_msg ack = { .type = RMCA_CTRL_REVOKE_ACK, .id = m->id };
	struct rmca_module_mr *mmr;
	struct rmca_mr *mr = mr_by_key(ep, m->rkey, &mmr);
	struct rmca_revoke_note *n;

	/*
	 * Only a use-once key may be revoked. One that names nothing here
	 * (already revoked, deregistered) is as revoked as it gets, but this
	 * message revoked nothing, so its receive reports 0.
	 */
	if (!(m->rkey & RMCA_KEY_USE_ONCE) ||
	    (mr && !(mr->access & RMCA_MR_USE_ONCE))) {
		ack.status = RMCA_ERR_INVALID;
	} else if (mr) {
		n = calloc(1, sizeof(*n));
		if (!n)
			ack.status = RMCA_ERR_NO_MEMORY;
		else
			ack.status = ep->mod->m->ops->revoke(mmr, ep->conn,
							     m->rkey);
		if (!ack.status) {
			n->seq = m->id;
			n->rkey = m->rkey;
			n->next = ep->revokes;
			ep->revokes = n;
		} else {
			free(n);
		}
	}
	rmca_ctrl_send(ep, &ack);
}

/* The peer answers REVOKEs in the order it read them: an ack is for the
 * oldest revoke unacknowledged, or the peer breaks the protocol. */
static int revoke_acked(struct rmca_ep *ep, const struct rmca_ctrl_msg *m)
{
	struct rmca_req *r = ep->unacked;

	if (!r || r->seq != m->id)
		return RMCA_ERR_PROTOCOL;
	ep->unacked = r->unacked_next;
	if (!ep->unacked)
		ep->unacked_tail = NULL;
	r->unacked_next = NULL;
	if (m->status) {
		/* The receiver refused: the message is not sent. */
		deferred_unlink(ep, r);
		rmca_req_done(r, m->status, 0, 0);
	} else {
		r->acked = true;
	}
	rmca_deferred_post(ep);
	return 0;
}

void rmca_recv_revoked(struct rmca_ep *ep, struct rmca_req *r)
{
	struct rmca_revoke_note **pp, *n;

	ep->recv_seq++;
	for (pp = &ep->revokes; (n = *pp); pp = &n->next) {
		if (n->seq != ep->recv_seq)
			continue;
		*pp = n->next;
		if (!r->revoked_rkey)
			r->revoked_rkey = n->rkey;
		free(n);
		return;
	}
}

/* ---- was that access refused? ---- */

#define RMCA_VERIFY_MS 3000

bool rmca_verify_start(struct rmca_ep *ep, struct rmca_req *r)
{
	struct rmca_ctrl_msg m = { .type = RMCA_CTRL_VERIFY,
				   .id = ++ep->am_next_id,
				   .rkey = r->rkey,
				   .raddr = r->raddr,
				   .len = r->rlen,
				   .access = r->op == RMCA_OP_PUT ?
						     RMCA_ACCESS_REMOTE_WRITE :
						     RMCA_ACCESS_REMOTE_READ };

	if (rmca_ctrl_send(ep, &m))
		return false;
	r->am_id = m.id;
	r->verify_deadline = rmca_now_ms() + RMCA_VERIFY_MS;
	r->verify_next = ep->verify_wait;
	ep->verify_wait = r;
	rmca_core_work_due(ep->ctx);
	return true;
}

static void verify_serve(struct rmca_ep *ep, const struct rmca_ctrl_msg *m)
{
	struct rmca_ctrl_msg resp = { .type = RMCA_CTRL_VERIFY_RESP, .id = m->id };
	struct rmca_module_mr *mmr;
	struct rmca_mr *mr = mr_by_key(ep, m->rkey, &mmr);
	uint64_t base = mr ? (uintptr_t)mr->addr : 0;

	if (!mr || !(mr->access & m->access) || m->raddr < base ||
	    m->len > mr->len || m->raddr - base > mr->len - m->len)
		resp.status = RMCA_ERR_REMOTE_ACCESS;
	rmca_ctrl_send(ep, &resp);
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

static int verify_answered(struct rmca_ep *ep, const struct rmca_ctrl_msg *m)
{
	struct rmca_req *r;

	for (r = ep->verify_wait; r && r->am_id != m->id; r = r->verify_next)
		;
	if (!r)
		return RMCA_ERR_PROTOCOL;
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

int rmca_emul_ctrl_msg(struct rmca_ep *ep, const struct rmca_ctrl_msg *m)
{
	switch (m->type) {
	case RMCA_CTRL_ATOMIC_REQ:
		atomic_serve(ep, m);
		return 0;
	case RMCA_CTRL_ATOMIC_RESP:
		return atomic_answered(ep, m);
	case RMCA_CTRL_REVOKE:
		revoke_serve(ep, m);
		return 0;
	case RMCA_CTRL_REVOKE_ACK:
		return revoke_acked(ep, m);
	case RMCA_CTRL_VERIFY:
		verify_serve(ep, m);
		return 0;
	case RMCA_CTRL_VERIFY_RESP:
		return verify_answered(ep, m);
	}
	return RMCA_ERR_PROTOCOL;
}

/* The channel is gone: what waited on the peer's core fails. */
void rmca_emul_ctrl_lost(struct rmca_ep *ep, int status)
{
	struct rmca_req *r;

	while ((r = ep->am_wait)) {
		ep->am_wait = r->am_next;
		r->am_next = NULL;
		ep->nheld--;
		rmca_req_done(r, status, 0, 0);
	}
	ep->am_wait_tail = NULL;
	for (r = ep->unacked; r; r = ep->unacked) {
		ep->unacked = r->unacked_next;
		r->unacked_next = NULL;
	}
	ep->unacked_tail = NULL;
	while ((r = ep->deferred)) {
		deferred_unlink(ep, r);
		rmca_req_done(r, status, 0, 0);
	}
	if (ep->verify_wait) {
		while ((r = ep->verify_wait))
			verify_end(ep, r, 0);
		rmca_ep_advance(ep);
	}
}

static const char *path_word(enum rmca_path p)
{
	static const char *const w[] = { "none", "native", "flush", "cas_loop",
					 "emulated", "revoke_msg" };

	return (unsigned)p < RMCA_ARRAY_SIZE(w) ? w[p] : "?";
}

/* One line per kind of operation: the path and why, for RMCA_verbose and
 * rmca_info --explain. */
void rmca_paths_describe(const struct rmca_ep *ep, char *buf, size_t len)
{
	const struct rmca_ep_attr *a = &ep->attr;
	uint32_t both = ep->mod->caps & ep->peer_caps;
	const char *mode = ep->ctx->atomic_resolved == RMCA_ATOMIC_MODE_DEVICE ?
				   "device" :
				   "cpu";
	const char *why_atomic, *why_masked, *why_inv;

	switch (a->atomic) {
	case RMCA_PATH_NATIVE:
		why_atomic = (both & RMCA_CAP_ATOMIC_CPU) ?
				     "the target executes FADD/CSWAP on its CPU" :
				     "the NIC executes FADD/CSWAP";
		break;
	case RMCA_PATH_EMULATED:
		why_atomic = !(both & RMCA_CAP_ATOMIC) ?
				     "no atomics on both sides: the target's core executes them" :
				     "the NIC's atomics would not be coherent with CPU atomics: the target's core executes them";
		break;
	default:
		why_atomic = "no device atomics, and emulation would mix CPU and device atomics";
	}
	switch (a->masked_atomic) {
	case RMCA_PATH_NATIVE:
		why_masked = "executed natively";
		break;
	case RMCA_PATH_CAS_LOOP:
		why_masked = "no masked atomics: a compare-and-swap loop over the native CSWAP";
		break;
	case RMCA_PATH_EMULATED:
		why_masked = "the target's core executes them";
		break;
	default:
		why_masked = "no device atomics to build them on";
	}
	switch (a->send_inv) {
	case RMCA_PATH_NATIVE:
		why_inv = "the receiving device invalidates the key";
		break;
	case RMCA_PATH_REVOKE_MSG:
		why_inv = "no send with invalidate on both sides: a control message revokes the key before the message is sent";
		break;
	default:
		why_inv = "no way to revoke a key on this transport";
	}
	snprintf(buf, len,
		 "put_delivered: %s (%s)\n"
		 "atomic: %s (atomic mode %s; %s)\n"
		 "masked_atomic: %s (%s)\n"
		 "send_inv: %s (%s)\n",
		 path_word(a->put_delivered),
		 a->put_delivered == RMCA_PATH_NATIVE ?
			 "a completion means the data is at the target" :
			 "completions are local only: a flush follows, the put completes with it",
		 path_word(a->atomic), mode, why_atomic,
		 path_word(a->masked_atomic), why_masked,
		 path_word(a->send_inv), why_inv);
}
