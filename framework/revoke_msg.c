// SPDX-License-Identifier: BSD-3-Clause
/*
 * Send with invalidate as a revoke message, where it is not native: the
 * REVOKE goes first on the control channel, and the message itself is
 * posted only once the receiver acknowledged it, so the key is revoked
 * before the receive completes; the receive then carries revoked_rkey.
 * Sends posted behind an unacknowledged revoke are held, to keep order.
 */
#include <limits.h>
#include <stdlib.h>

#include "ctrl.h"
#include "ep.h"
#include "paths.h"
#include "rails.h"

int rmca_revoke_send(struct rmca_ep *ep, struct rmca_req *r)
{
	struct rmca_ctrl_msg m = { .type = RMCA_CTRL_REVOKE,
				   .id = r->seq,
				   .rkey = r->inv_rkey };
	int rc = rmca_ctrl_send(ep, &m);

	if (!rc)
		r->ctrl_end = rmca_ctrl_sent_end(ep);
	return rc;
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
	rmca_list_add_tail(&ep->deferred, &r->defer_link);
	ep->nheld++;
	rmca_core_work_due(ep->ctx);
	return 0;
}

static void deferred_unlink(struct rmca_ep *ep, struct rmca_req *r)
{
	rmca_list_del(&r->defer_link);
	ep->nheld--;
}

/* Post the held sends in order, up to the first revoke not yet acked. */
void rmca_deferred_post(struct rmca_ep *ep)
{
	struct rmca_req *r;

	if (rmca_rails_holding(ep))
		return; /* keys announced first (rails.c) */
	while ((r = rmca_list_first(&ep->deferred, struct rmca_req,
				    defer_link)) &&
	       (!r->inv_rkey || r->acked)) {
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

/*
 * A REVOKE for a message to come leaves a note until that message is
 * received: the key revoked for it, or, refused, that it never comes (its
 * sender numbered it, and posts it only once acknowledged without an
 * error: the messages after it are numbered one more than they arrive
 * here). An honest peer has at most RMCA_ep_max_core_ops sends held
 * behind its REVOKEs (rmca_deferred_add) and, once acknowledged, as many
 * more posted to its module (tcp and shm take 16,384, ib and iwarp 256)
 * that this side has not received yet: twice RMCA_ep_max_core_ops notes
 * at the same setting. A peer that names more messages to come (one far
 * in the future, say, that it never sends) breaks the protocol: the
 * control channel closes, logged, and the endpoint fails as on any other
 * protocol error, as a verbs QP goes to error on a request it cannot
 * serve. Refusing the REVOKE instead would need a note all the same.
 */
static unsigned revoke_notes_max(const struct rmca_ep *ep)
{
	unsigned n = ep->ctx->ep_max_core_ops;

	return n > UINT_MAX / 2 ? UINT_MAX : 2 * n;
}

#ifdef RMCA_REVOKE_STEPS
/* notes looked at on receives: the tests count them */
unsigned long rmca_revoke_steps;
#define NOTE_STEP() (rmca_revoke_steps++)
#else
#define NOTE_STEP() ((void)0)
#endif

/* Appended: REVOKEs come in message order (rmca_revoke_serve). */
static void revoke_note(struct rmca_ep *ep, struct rmca_revoke_note *n,
			uint64_t seq, uint64_t rkey)
{
	n->seq = seq;
	n->rkey = rkey; /* 0: message seq never comes */
	n->next = NULL;
	if (ep->revokes_tail)
		ep->revokes_tail->next = n;
	else
		ep->revokes = n;
	ep->revokes_tail = n;
	ep->nrevokes++;
}

int rmca_revoke_serve(struct rmca_ep *ep, const struct rmca_ctrl_msg *m)
{
	struct rmca_ctrl_msg ack = { .type = RMCA_CTRL_REVOKE_ACK, .id = m->id };
	struct rmca_module_mr *mmr;
	struct rmca_mr *mr = rmca_mr_by_key(ep, m->rkey, &mmr);
	struct rmca_revoke_note *n;

	/*
	 * The message it rides on is posted after the ack: one already
	 * received is a lie, refused, and noted nowhere (its note would wait
	 * for no receive, for the endpoint's life).
	 */
	if (m->id <= ep->recv_seq) {
		ack.status = RMCA_ERR_INVALID;
		rmca_ctrl_send_owed(ep, &ack);
		return 0;
	}
	/*
	 * A sender numbers its messages as it posts them and sends their
	 * REVOKEs on the one control channel as it numbers them: each names
	 * a message after the one before. So the notes stay in message order
	 * by being appended, and a receive looks at the oldest alone. A peer
	 * naming a message again, or an earlier one, breaks the protocol.
	 */
	if (ep->revokes_tail && m->id <= ep->revokes_tail->seq) {
		rmca_log(0,
			 "%s: REVOKE for message %llu after one for message "
			 "%llu: out of order",
			 ep->peer, (unsigned long long)m->id,
			 (unsigned long long)ep->revokes_tail->seq);
		return RMCA_ERR_PROTOCOL;
	}
	if (ep->nrevokes >= revoke_notes_max(ep)) {
		rmca_log(0,
			 "%s: REVOKE of key 0x%llx for message %llu (%llu "
			 "received): %u revokes already wait for messages to "
			 "come, twice RMCA_ep_max_core_ops",
			 ep->peer, (unsigned long long)m->rkey,
			 (unsigned long long)m->id,
			 (unsigned long long)ep->recv_seq, ep->nrevokes);
		return RMCA_ERR_PROTOCOL;
	}
	n = calloc(1, sizeof(*n));
	if (!n) {
		/* neither the key revoked nor the message's fate noted */
		rmca_log(0,
			 "%s: REVOKE for message %llu: out of memory for its "
			 "note",
			 ep->peer, (unsigned long long)m->id);
		return RMCA_ERR_NO_MEMORY;
	}
	/*
	 * Only a use-once key may be revoked. One that names nothing here
	 * (already revoked, deregistered) is as revoked as it gets, but this
	 * message revoked nothing, so its receive reports 0.
	 */
	if (!(m->rkey & RMCA_KEY_USE_ONCE) ||
	    (mr && !(mr->access & RMCA_MR_USE_ONCE)))
		ack.status = RMCA_ERR_INVALID;
	else if (mr)
		ack.status = ep->mod->m->ops->revoke(mmr, ep->conn, m->rkey);
	if (ack.status)
		revoke_note(ep, n, m->id, 0);
	else if (mr)
		revoke_note(ep, n, m->id, m->rkey);
	else
		free(n);
	rmca_ctrl_send_owed(ep, &ack);
	return 0;
}

/* The peer answers REVOKEs in the order it read them: an ack is for the
 * oldest revoke unacknowledged, one it can have read (ctrl.h: ids are
 * guessed easily), or the peer breaks the protocol. */
int rmca_revoke_acked(struct rmca_ep *ep, const struct rmca_ctrl_msg *m)
{
	struct rmca_req *r = ep->unacked;

	if (!r || r->seq != m->id)
		return RMCA_ERR_PROTOCOL;
	if (!rmca_ctrl_written(ep, r->ctrl_end)) {
		rmca_log(0,
			 "%s: ack of the REVOKE for message %llu, which is not "
			 "sent yet",
			 ep->peer, (unsigned long long)m->id);
		return RMCA_ERR_PROTOCOL;
	}
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

/* The note of message seq, of a key (0: of a message that never comes),
 * unlinked; NULL if none. The notes are in message order and none is for
 * a message received already: it can only be the oldest. */
static struct rmca_revoke_note *note_take(struct rmca_ep *ep, uint64_t seq,
					  bool key)
{
	struct rmca_revoke_note *n = ep->revokes;

	if (!n)
		return NULL;
	NOTE_STEP();
	if (n->seq != seq || !n->rkey != !key)
		return NULL;
	ep->revokes = n->next;
	if (!ep->revokes)
		ep->revokes_tail = NULL;
	ep->nrevokes--;
	return n;
}

void rmca_recv_revoked(struct rmca_ep *ep, struct rmca_req *r)
{
	struct rmca_revoke_note *n;
	uint64_t seq = ep->recv_seq + 1;

	/* messages whose REVOKE was refused were never sent */
	while ((n = note_take(ep, seq, false))) {
		free(n);
		seq++;
	}
	ep->recv_seq = seq;
	n = note_take(ep, seq, true);
	if (!n)
		return;
	if (!r->revoked_rkey)
		r->revoked_rkey = n->rkey;
	free(n);
}

void rmca_revoke_lost(struct rmca_ep *ep, int status)
{
	struct rmca_req *r;

	for (r = ep->unacked; r; r = ep->unacked) {
		ep->unacked = r->unacked_next;
		r->unacked_next = NULL;
	}
	ep->unacked_tail = NULL;
	while ((r = rmca_list_first(&ep->deferred, struct rmca_req,
				    defer_link))) {
		deferred_unlink(ep, r);
		rmca_req_done(r, status, 0, 0);
	}
}
