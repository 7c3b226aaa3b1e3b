// SPDX-License-Identifier: BSD-3-Clause
/*
 * Data operations: argument checks, the request each one owes a completion
 * through, and the order rules the contract adds on top of the modules:
 *  - a flush is reported after every send, put, get, atomic and flush
 *    posted before it; receives are kept apart and never hold it back (a
 *    receive completes when a message comes, which may be never);
 *  - a DELIVERED put on a module without remote completion is held until a
 *    delivery flush that covers it completes (one flush covers every such
 *    put posted since the last one), and carries that flush's error.
 */
#include <stdlib.h>
#include <string.h>

#include "ep.h"
#include "rails.h"

/* The list r belongs on: receives apart from what a flush orders. */
static struct rmca_list *req_list(struct rmca_ep *ep, enum rmca_op op)
{
	return op == RMCA_OP_RECV ? &ep->recvs : &ep->reqs;
}

/*
 * r, just taken from the pool, made ep's; linked on its list unless
 * ordered: then it goes whole to a module that orders its completions,
 * and stays on no list of the endpoint unless the core takes it on
 * (req_list_add). Plain (enum rmca_req_held) when nothing of the core's
 * can be on it yet: a user's request, no flush (flushes are ordered
 * against the rest), on an endpoint without rails (their parts go to other
 * modules; rails are set up with the endpoint, before any post). A
 * receive gets no post_no: only req_list_insert() reads one, for a put or
 * get put back among ep->reqs, where receives never are.
 */
static inline __attribute__((always_inline)) struct rmca_req *
req_fill(struct rmca_ep *ep, struct rmca_req *r, enum rmca_op op,
	 enum rmca_req_kind kind, bool ordered, bool plain)
{
	r->ep = ep; /* r->ctx is ep->ctx, its pool's */
	r->op = op;
	r->kind = kind;
	if (op != RMCA_OP_RECV)
		r->post_no = ++ep->nposted;
	if (ordered) {
		r->held = RMCA_REQ_ORDERED;
		rmca_list_init(&r->link);
		return r;
	}
	if (plain)
		r->held = RMCA_REQ_LISTED;
	rmca_list_add_tail(req_list(ep, op), &r->link);
	return r;
}

/* A request taken from the pool for ep (req_fill). */
static inline struct rmca_req *req_take(struct rmca_ep *ep, enum rmca_op op,
					enum rmca_req_kind kind, void *user_ctx,
					bool ordered)
{
	struct rmca_req *r = rmca_req_alloc_for(ep->ctx, user_ctx);

	if (!r)
		return NULL;
	req_fill(ep, r, op, kind, ordered,
		 kind == RMCA_REQ_USER && op != RMCA_OP_FLUSH && !ep->rails);
	if (op == RMCA_OP_FLUSH && kind == RMCA_REQ_USER && !ordered)
		ep->nflushes++;
	return r;
}

struct rmca_req *rmca_req_new(struct rmca_ep *ep, enum rmca_op op,
			      enum rmca_req_kind kind, void *user_ctx)
{
	return req_take(ep, op, kind, user_ctx, false);
}

/*
 * The core takes on r, just posted: it holds it (a held send, an atomic it
 * builds or sends to the peer's core, a get the peer's core answers) or
 * orders it (a put it proves with a delivery flush). On its list, last, as
 * a request posted now; held from now on, so that its completion takes
 * req_done_slow(). The one way a request stops being plain: every case
 * the slow path handles for a user's request starts here (or at the
 * completion itself: an error, a flush behind it, revokes).
 */
static void req_list_add(struct rmca_req *r)
{
	enum rmca_req_held was = r->held;

	r->held = RMCA_REQ_HELD;
	if (was == RMCA_REQ_ORDERED)
		rmca_list_add_tail(req_list(r->ep, r->op), &r->link);
}

/*
 * r, on no list, completed and is held (a verification): on the list at
 * its place in post order, so that a flush posted after it waits for it
 * and one posted before it does not.
 */
static void req_list_insert(struct rmca_req *r)
{
	struct rmca_list *h = req_list(r->ep, r->op), *l;

	r->held = RMCA_REQ_HELD;
	for (l = h->prev; l != h; l = l->prev)
		if (rmca_list_entry(l, struct rmca_req, link)->post_no <
		    r->post_no)
			break;
	rmca_list_insert_(&r->link, l, l->next);
}

static void req_unlink(struct rmca_req *r)
{
	rmca_list_del(&r->link);
}

/* The post failed: the request never existed. */
void rmca_req_abandon(struct rmca_req *r)
{
	if (r->op == RMCA_OP_FLUSH && r->kind == RMCA_REQ_USER)
		r->ep->nflushes--;
	req_unlink(r);
	rmca_req_free(r->ctx, r);
}

static bool req_ready(const struct rmca_req *r)
{
	return r->done && (!r->needs_flush || r->flushed || r->status) &&
	       !r->verifying;
}

/*
 * A put or get reported as a lost connection may have been refused by the
 * target: iWARP tears the connection down on a bad access and tells the
 * initiator nothing more. The peer's core, over the control channel, can
 * say whether the access was valid; until it answers (or the channel goes,
 * or RMCA_VERIFY_MS pass) the request waits.
 */
static void req_maybe_verify(struct rmca_req *r)
{
	/* the op first: only puts and gets have the fields after it */
	if ((r->op != RMCA_OP_PUT && r->op != RMCA_OP_GET) ||
	    r->kind != RMCA_REQ_USER || r->verified || r->verifying ||
	    r->status != RMCA_ERR_CONNECTION || !r->rkey)
		return;
	r->verifying = rmca_verify_start(r->ep, r);
	r->verified = !r->verifying;
}

static void req_emit(struct rmca_req *r)
{
	struct rmca_ep *ep = r->ep;

	if (r->op == RMCA_OP_FLUSH)
		ep->nflushes--;
	req_unlink(r);
	r->emitted = true;
	if (r->op != RMCA_OP_RECV)
		r->len = 0;
	rmca_cq_push(ep->ctx, r);
	/* An error other than a cancel fails the endpoint, as on a verbs QP;
	 * the module fails its own connection, this covers our paths. */
	if (r->status && r->status != RMCA_ERR_CANCELED && !ep->failed) {
		ep->failed = true;
		ep->fail_status = r->status;
	}
}

/* Report what may be reported: anything ready, but a flush only once every
 * request posted before it has been reported (receives are not on this
 * list: they go as soon as they are ready). */
void rmca_ep_advance(struct rmca_ep *ep)
{
	bool blocked = false;
	struct rmca_list *l, *next;

	rmca_list_for_each_safe(l, next, &ep->reqs)
	{
		struct rmca_req *r = rmca_list_entry(l, struct rmca_req, link);

		if (r->kind == RMCA_REQ_DELIVERY_FLUSH) {
			blocked = true;
			continue;
		}
		if (!req_ready(r) || (r->op == RMCA_OP_FLUSH && blocked)) {
			blocked = true;
			continue;
		}
		req_emit(r);
	}
}

static void flush_resolve(struct rmca_req *f, int status)
{
	struct rmca_req *p, *next;

	for (p = f->covers; p; p = next) {
		next = p->cover_next;
		p->flush = NULL;
		p->cover_next = NULL;
		if (p->emitted) {
			rmca_req_release(p);
			continue;
		}
		p->flushed = true;
		if (!p->status)
			p->status = status;
		if (p->done)
			req_maybe_verify(p);
	}
	f->covers = NULL;
}

/*
 * Whether r, completing now with status and revoked_rkey, needs more of
 * the core than being unlinked and queued: the one test of that, which
 * req_done_fast() asks and req_done_slow() answers case by case. What the
 * request carries is in one byte (enum rmca_req_held: the core took it
 * on, through req_list_add, or it is internal, a flush, on rails); what
 * the completion and the endpoint add is here: an error or a revoked key,
 * a second completion, a flush waiting behind it, revokes noted for the
 * messages to come.
 */
static inline bool req_held(const struct rmca_req *r, int status,
			    uint64_t revoked_rkey)
{
	const struct rmca_ep *ep = r->ep;

	if (status || revoked_rkey || r->done)
		return true;
	if (r->held == RMCA_REQ_ORDERED)
		return r->op == RMCA_OP_RECV && ep->revokes;
	if (r->held != RMCA_REQ_LISTED)
		return true;
	return r->op == RMCA_OP_RECV ? ep->revokes != NULL : ep->nflushes != 0;
}

/*
 * The common cases, inline: a user's request succeeded, and nothing waits
 * for it nor it for anything (req_held); it goes on the completion queue,
 * as req_done_slow() would put it there. True when that is what happened.
 */
static inline bool req_done_fast(struct rmca_req *r, int status, size_t len,
				 uint64_t revoked_rkey)
{
	struct rmca_ep *ep = r->ep;

	if (req_held(r, status, revoked_rkey))
		return false;
	/* Any other op's len is the pool's zero: only req_done_slow() and
	 * req_emit() set it, and a request they saw is done or held. */
	if (r->op == RMCA_OP_RECV) {
		ep->recv_seq++;
		r->len = len;
	}
	if (r->held == RMCA_REQ_LISTED) {
		/* Off its list for good: nothing unlinks a request that is
		 * done and emitted, nor walks its link, until the pool's
		 * next taker sets it; so it is not linked to itself. */
		r->link.prev->next = r->link.next;
		r->link.next->prev = r->link.prev;
	}
	r->done = true;
	r->emitted = true;
	rmca_cq_push(r->ctx, r);
	return true;
}

/* Everything req_held() says the common case (req_done_fast) is not. */
static __attribute__((noinline)) void
req_done_slow(struct rmca_req *r, int status, size_t len, uint64_t revoked_rkey)
{
	struct rmca_ep *ep = r->ep;

	if (r->kind > RMCA_REQ_DELIVERY_FLUSH) { /* internal, on no list */
		if (r->kind == RMCA_REQ_RAIL_PART)
			rmca_rails_part_done(r, status);
		else
			rmca_get_fence_done(r, status);
		return;
	}
	/* One rail failed, the others did not: what completes on them
	 * after it completes as on a failed connection. */
	if (ep->rails && ep->failed && !status && r->op != RMCA_OP_RECV)
		status = RMCA_ERR_CONNECTION;
	if (r->done) {
		/* A module broke the exactly-once rule; keep ours. */
		rmca_log(0, "%s: operation completed twice (ignored)",
			 ep->mod->comp->comp->name);
		return;
	}
	if (r->path == RMCA_PATH_CAS_LOOP && rmca_cas_step_done(r, status))
		return;
	/* A message: its number, and the key revoked for it if any (only
	 * where revokes are noted is there one to look for). */
	if (r->op == RMCA_OP_RECV && !status) {
		if (ep->revokes)
			rmca_recv_revoked(ep, r);
		else
			ep->recv_seq++;
	}
	r->done = true;
	/* A delivery flush may have told this put's fate already: more
	 * precisely than the bare "flushed" its own completion carries, and
	 * for certain better than its own success, which on a module without
	 * remote completion means only that the data left. */
	if (!(r->status &&
	      (status == RMCA_ERR_CONNECTION || (!status && r->flushed))))
		r->status = status;
	r->len = len;
	if (revoked_rkey)
		r->revoked_rkey = revoked_rkey;
	if (r->status == RMCA_ERR_CONNECTION)
		req_maybe_verify(r);
	if (r->kind == RMCA_REQ_DELIVERY_FLUSH) {
		flush_resolve(r, status);
		req_unlink(r);
		rmca_req_free(r->ctx, r);
	} else if (r->held == RMCA_REQ_ORDERED && !req_ready(r)) {
		/* Held now (verified): in post order among the rest, for the
		 * flushes that must wait for it. */
		req_list_insert(r);
	} else if (req_ready(r) &&
		   (r->op == RMCA_OP_RECV || r->held == RMCA_REQ_ORDERED ||
		    (!ep->nflushes && r->op != RMCA_OP_FLUSH))) {
		/* the common case: nothing to order against (an ordered
		 * request is no flush, and nothing waits for it) */
		req_emit(r);
		return;
	}
	rmca_ep_advance(ep);
}

void rmca_req_done(struct rmca_req *r, int status, size_t len,
		   uint64_t revoked_rkey)
{
	if (!req_done_fast(r, status, len, revoked_rkey))
		req_done_slow(r, status, len, revoked_rkey);
}

/* The slow path entered with rmca_core_complete's arguments where they
 * came: the inline path then tests them in place, without first moving
 * them to req_done_slow's (noipa: not even the unused core dropped). */
static __attribute__((noipa)) void core_done_slow(const struct rmca_core *core,
						  struct rmca_req *r,
						  int status, size_t len,
						  uint64_t revoked_rkey)
{
	(void)core;
	req_done_slow(r, status, len, revoked_rkey);
}

/* The core op complete: a module reports the end of the op of req. */
void rmca_core_complete(const struct rmca_core *core, void *req, int status,
			size_t len, uint64_t revoked_rkey)
{
	if (!req_done_fast(req, status, len, revoked_rkey))
		core_done_slow(core, req, status, len, revoked_rkey);
}

/* Cover every DELIVERED put not yet covered with one delivery flush. */
void rmca_ep_flush_delivered(struct rmca_ep *ep)
{
	struct rmca_req *f, *p, *next;
	int rc;

	if (!ep->unflushed)
		return;
	f = rmca_req_new(ep, RMCA_OP_FLUSH, RMCA_REQ_DELIVERY_FLUSH, NULL);
	if (!f)
		return; /* retried at the next progress */
	for (p = ep->unflushed; p; p = next) {
		next = p->cover_next;
		p->cover_next = NULL;
		p->uncovered = false;
		if (p->emitted) { /* failed before it was covered */
			rmca_req_release(p);
			continue;
		}
		p->flush = f;
		p->cover_next = f->covers;
		f->covers = p;
	}
	ep->unflushed = NULL;
	rc = rmca_rails_flush(ep, f);
	if (rc == RMCA_ERR_AGAIN) {
		/* Put them back: the next progress tries again. */
		for (p = f->covers; p; p = p->cover_next) {
			p->flush = NULL;
			p->uncovered = true;
		}
		ep->unflushed = f->covers;
		f->covers = NULL;
		rmca_core_work_due(ep->ctx);
		req_unlink(f);
		rmca_req_free(f->ctx, f);
	} else if (rc) {
		rmca_req_done(f, rc, 0, 0);
	}
}

/* Report everything still owed on ep with status, after the module's
 * disconnect reported what it held (so the module is not touched here). */
void rmca_ep_cancel_all(struct rmca_ep *ep, int status)
{
	struct rmca_req *r, *next;
	struct rmca_list *l;

	for (r = ep->unflushed; r; r = next) {
		next = r->cover_next;
		r->cover_next = NULL;
		r->uncovered = false;
		rmca_req_release(r);
	}
	ep->unflushed = NULL;
	rmca_list_for_each(l, &ep->reqs)
	{
		r = rmca_list_entry(l, struct rmca_req, link);
		if (r->kind == RMCA_REQ_DELIVERY_FLUSH && !r->done)
			flush_resolve(r, status);
	}
	while ((r = rmca_list_first(&ep->reqs, struct rmca_req, link)) ||
	       (r = rmca_list_first(&ep->recvs, struct rmca_req, link))) {
		if (r->kind == RMCA_REQ_DELIVERY_FLUSH) {
			req_unlink(r);
			rmca_req_free(r->ctx, r);
			continue;
		}
		if (!r->done) {
			r->done = true;
			r->status = status;
		}
		if (r->needs_flush && !r->flushed && !r->status)
			r->status = status;
		r->flush = NULL;
		req_emit(r);
	}
}

/* ---- argument checks ---- */

static inline __attribute__((always_inline)) int
local_check(struct rmca_ep *ep, const void *buf, size_t len, struct rmca_mr *mr,
	    struct rmca_module_mr **mmr)
{
	const char *b = buf, *base;

	if (!mr || mr->ctx != ep->ctx)
		return RMCA_ERR_INVALID;
	/* A region's address is never NULL (rmca_mr_reg): a NULL buf is
	 * below it. */
	base = mr->addr;
	if (len && (b < base || len > mr->len ||
		    (size_t)(b - base) > mr->len - len))
		return RMCA_ERR_INVALID;
	*mmr = mr->mmr[ep->mod->index];
	return *mmr ? 0 : RMCA_ERR_INVALID;
}

static const struct rmca_module_ops *ep_ops(const struct rmca_ep *ep)
{
	return ep->mod->m->ops;
}

/* A failed endpoint takes the post and fails it, as a QP in error does. */
static __attribute__((noinline)) int
post_on_failed(struct rmca_ep *ep, enum rmca_op op, void *user_ctx)
{
	struct rmca_req *r = rmca_req_new(ep, op, RMCA_REQ_USER, user_ctx);

	if (!r)
		return RMCA_ERR_NO_MEMORY;
	/* No address to verify a put or get against: nothing to ask. */
	rmca_req_path_clear(r);
	r->verified = true;
	rmca_req_done(r, RMCA_ERR_CONNECTION, 0, 0);
	return 0;
}

/* Hold a send behind a revoke message still unacknowledged: messages keep
 * their order. */
static int send_defer(struct rmca_ep *ep, struct rmca_req *r, const void *buf,
		      size_t len, struct rmca_module_mr *mmr, uint64_t inv_rkey,
		      uint64_t native_inv)
{
	req_list_add(r);
	rmca_req_path_clear(r);
	r->inv_rkey = inv_rkey;
	r->native_inv = native_inv;
	r->buf = buf;
	r->buf_len = len;
	r->mmr = mmr;
	return rmca_deferred_add(ep, r);
}

/*
 * What every data operation does first: check the local buffer, and on a
 * failed endpoint take the post and fail it. Returns a status for the
 * caller to return, or 1 with *r a fresh request to post. Inline into
 * each post: the op is a constant there, and the outputs stay in
 * registers instead of going through memory and a call.
 */
static inline __attribute__((always_inline)) int
op_begin(struct rmca_ep *ep, enum rmca_op op, const void *buf, size_t len,
	 struct rmca_mr *mr, void *user_ctx, struct rmca_module_mr **mmr,
	 struct rmca_req **r)
{
	int rc;

	*r = NULL; /* unused unless 1 is returned; the compiler cannot tell */
	if (!ep)
		return RMCA_ERR_INVALID;
	rc = local_check(ep, buf, len, mr, mmr);
	if (rc)
		return rc;
	if (ep->failed)
		return post_on_failed(ep, op, user_ctx);
	/* On a module that orders its completions, the core keeps the
	 * request on no list until it takes it on (req_list_add). With more
	 * rails, parts go to other modules too: the core keeps the order. */
	*r = req_take(ep, op, RMCA_REQ_USER, user_ctx,
		      ep->mod->ordered && !ep->rails);
	return *r ? 1 : RMCA_ERR_NO_MEMORY;
}

/* A put's or get's path state: what a verification would ask about. */
static void rma_path_init(struct rmca_req *r, uint64_t raddr, uint64_t rkey,
			  size_t len)
{
	r->raddr = raddr;
	r->rkey = rkey;
	r->rlen = len;
	r->verified = false;
	r->verify_deadline = 0;
	r->verify_next = NULL;
}

/* A put or get the module took whole: counted for rmca_ep_query_rail. */
static int rma_count(struct rmca_ep *ep, size_t len, int rc)
{
	if (!rc) {
		ep->rma_bytes += len;
		ep->rma_ops++;
	}
	return rc;
}

/* The module's answer to a post: refused, the request never existed. */
static int op_end(struct rmca_req *r, int rc)
{
	if (rc)
		rmca_req_abandon(r);
	return rc;
}

/*
 * A post that needs nothing of the core but a request, told apart inline
 * before anything is taken: ep and mr given, the buffer within mr, mr
 * registered with ep's module, ep not failed and on no rails (whose parts
 * and holds the core keeps), and a request spare in the pool (a new one
 * is a call). Every other post, and every argument error, goes the whole
 * way (op_begin, from the entry point's *_slow twin), which checks all of
 * it again: the codes returned are that path's. A fast post calls nothing
 * before its module, so its arguments go straight on to the module's op.
 */
static inline __attribute__((always_inline)) bool
post_fast(struct rmca_ep *ep, const void *buf, size_t len, struct rmca_mr *mr,
	  struct rmca_module_mr **mmr)
{
	return ep && !local_check(ep, buf, len, mr, mmr) && !ep->failed &&
	       !ep->rails && ep->ctx->req_spare;
}

/* A fast post's request (post_fast): a spare, ordered on a module that
 * orders its completions, else plain on its list. */
static inline __attribute__((always_inline)) struct rmca_req *
req_take_fast(struct rmca_ep *ep, enum rmca_op op, void *user_ctx)
{
	return req_fill(ep, rmca_req_spare_take(ep->ctx, user_ctx), op,
			RMCA_REQ_USER, ep->mod->ordered, true);
}

static __attribute__((noinline)) int send_slow(rmca_ep_t *ep, const void *buf,
					       size_t len, rmca_mr_t *mr,
					       void *user_ctx)
{
	struct rmca_module_mr *mmr;
	struct rmca_req *r;
	int rc = op_begin(ep, RMCA_OP_SEND, buf, len, mr, user_ctx, &mmr, &r);

	if (rc != 1)
		return rc;
	if (!rmca_list_empty(&ep->deferred) ||
	    (ep->rails && rmca_rails_holding(ep)))
		return op_end(r, send_defer(ep, r, buf, len, mmr, 0, 0));
	rc = op_end(r, ep_ops(ep)->send(ep->conn, buf, len, mmr, r));
	if (!rc)
		ep->send_seq++;
	return rc;
}

int rmca_send(rmca_ep_t *ep, const void *buf, size_t len, rmca_mr_t *mr,
	      void *user_ctx)
{
	struct rmca_module_mr *mmr;
	struct rmca_req *r;
	int rc;

	if (!post_fast(ep, buf, len, mr, &mmr) ||
	    !rmca_list_empty(&ep->deferred))
		return send_slow(ep, buf, len, mr, user_ctx);
	r = req_take_fast(ep, RMCA_OP_SEND, user_ctx);
	rc = ep_ops(ep)->send(ep->conn, buf, len, mmr, r);
	if (rc)
		return op_end(r, rc);
	ep->send_seq++;
	return 0;
}

int rmca_send_inv(rmca_ep_t *ep, const void *buf, size_t len, rmca_mr_t *mr,
		  uint64_t rkey_to_revoke, void *user_ctx)
{
	struct rmca_module_mr *mmr;
	struct rmca_req *r;
	int rc;

	/* Keys carry their use-once bit: a mistake is caught here and never
	 * reaches, let alone kills, the connection. */
	if (!ep || !(rkey_to_revoke & RMCA_KEY_USE_ONCE))
		return RMCA_ERR_INVALID;
	if (ep->attr.send_inv == RMCA_PATH_NONE)
		return RMCA_ERR_UNSUPPORTED;
	rc = op_begin(ep, RMCA_OP_SEND, buf, len, mr, user_ctx, &mmr, &r);
	if (rc != 1)
		return rc;
	if (ep->attr.send_inv == RMCA_PATH_REVOKE_MSG) {
		/* the revoke goes first; the message follows its ack */
		return op_end(
			r, send_defer(ep, r, buf, len, mmr, rkey_to_revoke, 0));
	}
	if (!rmca_list_empty(&ep->deferred) || rmca_rails_holding(ep)) {
		/* native, but behind held sends: keep the order */
		return op_end(
			r, send_defer(ep, r, buf, len, mmr, 0, rkey_to_revoke));
	}
	rc = op_end(r, ep_ops(ep)->send_inv(ep->conn, buf, len, mmr,
					    rkey_to_revoke, r));
	if (!rc)
		ep->send_seq++;
	return rc;
}

static __attribute__((noinline)) int
recv_slow(rmca_ep_t *ep, void *buf, size_t len, rmca_mr_t *mr, void *user_ctx)
{
	struct rmca_module_mr *mmr;
	struct rmca_req *r;
	int rc = op_begin(ep, RMCA_OP_RECV, buf, len, mr, user_ctx, &mmr, &r);

	if (rc != 1)
		return rc;
	return op_end(r, ep_ops(ep)->recv(ep->conn, buf, len, mmr, r));
}

int rmca_recv(rmca_ep_t *ep, void *buf, size_t len, rmca_mr_t *mr,
	      void *user_ctx)
{
	struct rmca_module_mr *mmr;
	struct rmca_req *r;
	int rc;

	if (!post_fast(ep, buf, len, mr, &mmr))
		return recv_slow(ep, buf, len, mr, user_ctx);
	r = req_take_fast(ep, RMCA_OP_RECV, user_ctx);
	rc = ep_ops(ep)->recv(ep->conn, buf, len, mmr, r);
	return rc ? op_end(r, rc) : 0;
}

static __attribute__((noinline)) int put_slow(rmca_ep_t *ep, const void *buf,
					      size_t len, rmca_mr_t *mr,
					      uint64_t raddr, uint64_t rkey,
					      unsigned flags, void *user_ctx)
{
	struct rmca_module_mr *mmr;
	struct rmca_req *r;
	int rc;

	if (flags & ~(unsigned)RMCA_DELIVERED)
		return RMCA_ERR_INVALID;
	rc = op_begin(ep, RMCA_OP_PUT, buf, len, mr, user_ctx, &mmr, &r);
	if (rc != 1)
		return rc;
	/* Queued for a delivery flush before the module sees it: the module
	 * may complete it inside the call. */
	if ((flags & RMCA_DELIVERED) &&
	    !(ep->mod->caps & RMCA_CAP_REMOTE_COMPLETION)) {
		req_list_add(r);
		r->needs_flush = true;
		r->uncovered = true;
		r->cover_next = ep->unflushed;
		ep->unflushed = r;
		rmca_core_work_due(ep->ctx);
	}
	rma_path_init(r, raddr, rkey, len);
	rc = rmca_rails_rma(ep, r, buf, len, mmr, mr, raddr, rkey);
	if (rc == 1)
		rc = rma_count(ep, len,
			       ep_ops(ep)->put(ep->conn, buf, len, mmr, raddr,
					       rkey, r));
	if (rc && r->needs_flush)
		ep->unflushed = r->cover_next;
	return op_end(r, rc);
}

/* A put without rails (rmca_rails_rma says 1 then) and, if DELIVERED, on
 * a module with remote completion: the core proves nothing of it. */
int rmca_put(rmca_ep_t *ep, const void *buf, size_t len, rmca_mr_t *mr,
	     uint64_t raddr, uint64_t rkey, unsigned flags, void *user_ctx)
{
	struct rmca_module_mr *mmr;
	struct rmca_req *r;

	if ((flags & ~(unsigned)RMCA_DELIVERED) ||
	    !post_fast(ep, buf, len, mr, &mmr) ||
	    ((flags & RMCA_DELIVERED) &&
	     !(ep->mod->caps & RMCA_CAP_REMOTE_COMPLETION)))
		return put_slow(ep, buf, len, mr, raddr, rkey, flags, user_ctx);
	r = req_take_fast(ep, RMCA_OP_PUT, user_ctx);
	rma_path_init(r, raddr, rkey, len);
	return op_end(r, rma_count(ep, len,
				   ep_ops(ep)->put(ep->conn, buf, len, mmr,
						   raddr, rkey, r)));
}

int rmca_get(rmca_ep_t *ep, void *buf, size_t len, rmca_mr_t *mr,
	     uint64_t raddr, uint64_t rkey, void *user_ctx)
{
	struct rmca_module_mr *mmr;
	struct rmca_req *r;
	int rc = op_begin(ep, RMCA_OP_GET, buf, len, mr, user_ctx, &mmr, &r);

	if (rc != 1)
		return rc;
	rma_path_init(r, raddr, rkey, len);
	if (rmca_get_short(ep, len)) { /* the peer's core answers it */
		req_list_add(r);
		return op_end(r, rmca_get_core(ep, r, buf, len));
	}
	rc = rmca_rails_rma(ep, r, buf, len, mmr, mr, raddr, rkey);
	if (rc == 1)
		rc = rma_count(ep, len,
			       ep_ops(ep)->get(ep->conn, buf, len, mmr, raddr,
					       rkey, r));
	return op_end(r, rc);
}

static __attribute__((noinline)) int
atomic_slow(rmca_ep_t *ep, const struct rmca_atomic *op, uint64_t *result,
	    rmca_mr_t *result_mr, void *user_ctx)
{
	struct rmca_module_mr *mmr;
	enum rmca_path path;
	struct rmca_req *r;
	int rc;

	if (!ep || !op || !result || ((uintptr_t)result & 7) || (op->raddr & 7))
		return RMCA_ERR_INVALID;
	switch (op->kind) {
	case RMCA_ATOMIC_FADD:
	case RMCA_ATOMIC_CSWAP:
		path = ep->attr.atomic;
		break;
	case RMCA_ATOMIC_MASKED_FADD:
	case RMCA_ATOMIC_MASKED_CSWAP:
		path = ep->attr.masked_atomic;
		break;
	default:
		return RMCA_ERR_INVALID;
	}
	if (path == RMCA_PATH_NONE) {
		rc = local_check(ep, result, sizeof(*result), result_mr, &mmr);
		return rc ? rc : RMCA_ERR_UNSUPPORTED;
	}
	rc = op_begin(ep, RMCA_OP_ATOMIC, result, sizeof(*result), result_mr,
		      user_ctx, &mmr, &r);
	if (rc != 1)
		return rc;
	r->aop = *op;
	r->result = result;
	r->result_mmr = mmr;
	r->cas_guess = 0;
	switch (path) {
	case RMCA_PATH_CAS_LOOP:
		req_list_add(r);
		r->path = path;
		rc = rmca_cas_start(ep, r);
		break;
	case RMCA_PATH_EMULATED:
		req_list_add(r);
		rc = rmca_emul_atomic(ep, r);
		break;
	default:
		rc = ep_ops(ep)->atomic(ep->conn, op, result, mmr, r);
		break;
	}
	return op_end(r, rc);
}

/* A fetch-add or compare-and-swap on an endpoint whose module does it
 * (RMCA_PATH_NATIVE): the core builds nothing. */
int rmca_atomic(rmca_ep_t *ep, const struct rmca_atomic *op, uint64_t *result,
		rmca_mr_t *result_mr, void *user_ctx)
{
	struct rmca_module_mr *mmr;
	struct rmca_req *r;

	if (!op || !result || ((uintptr_t)result & 7) || (op->raddr & 7) ||
	    (op->kind != RMCA_ATOMIC_FADD && op->kind != RMCA_ATOMIC_CSWAP) ||
	    !post_fast(ep, result, sizeof(*result), result_mr, &mmr) ||
	    ep->attr.atomic != RMCA_PATH_NATIVE)
		return atomic_slow(ep, op, result, result_mr, user_ctx);
	r = req_take_fast(ep, RMCA_OP_ATOMIC, user_ctx);
	r->aop = *op;
	r->result = result;
	r->result_mmr = mmr;
	r->cas_guess = 0;
	return op_end(r, ep_ops(ep)->atomic(ep->conn, op, result, mmr, r));
}

int rmca_flush(rmca_ep_t *ep, void *user_ctx)
{
	struct rmca_req *r;

	if (!ep)
		return RMCA_ERR_INVALID;
	if (ep->failed)
		return post_on_failed(ep, RMCA_OP_FLUSH, user_ctx);
	/* Delivery flushes owed go first: this flush is reported after the
	 * puts they prove. */
	rmca_ep_flush_delivered(ep);
	r = rmca_req_new(ep, RMCA_OP_FLUSH, RMCA_REQ_USER, user_ctx);
	if (!r)
		return RMCA_ERR_NO_MEMORY;
	return op_end(r, rmca_rails_flush(ep, r));
}
