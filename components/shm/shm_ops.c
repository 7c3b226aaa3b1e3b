/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Posting operations. Every op but a receive is a request in the ring,
 * answered by the target once it placed, read or refused the data, so every
 * completion is remote. An op that finds no room (ring space, a response
 * slot, or for a send a receive posted by the peer) waits in the backlog in
 * post order; sends keep their order among themselves.
 *
 * Large puts and gets under a published key are copied by this core
 * (shm_direct.c) and complete at once, the data in place. They wait their
 * turn: only once every request posted before them has been answered, so
 * that they are executed in post order with the rest as on the rings.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "shm.h"

enum push_result { PUSHED, PARTIAL, NO_CREDIT, NO_ROOM, DONE };

/* Ops kept for reuse, at most this many: as many as were ever
 * outstanding at once, up to a bound. */
#define SHM_SPARE_OPS 4096

static void op_release(struct shm_module *m, struct shm_op *op)
{
	rmca_list_del(&op->link);
	rmca_list_del(&op->qlink);
	if (m->nspare >= SHM_SPARE_OPS) {
		free(op);
		return;
	}
	op->spare = m->spare;
	m->spare = op;
	m->nspare++;
}

void rmca_shm_ops_free_spare(struct shm_module *m)
{
	struct shm_op *op;

	while ((op = m->spare)) {
		m->spare = op->spare;
		free(op);
	}
	m->nspare = 0;
}

void rmca_shm_op_done(struct shm_conn *c, struct shm_op *op, int status,
		      size_t len, uint64_t revoked)
{
	const struct rmca_core *core = c->mod->base.core;
	void *req = op->req;

	op_release(c->mod, op);
	c->nops--;
	core->ops->complete(core, req, status, len, revoked);

	/* A flush ends once everything posted before it has ended. */
	while ((op = rmca_list_first(&c->ops, struct shm_op, link)) &&
	       op->kind == SHM_OP_FLUSH) {
		req = op->req;
		op_release(c->mod, op);
		c->nops--;
		core->ops->complete(core, req, RMCA_OK, 0, 0);
	}
}

/* Every op still outstanding ends with status, in post order. */
void rmca_shm_complete_all(struct shm_conn *c, int status)
{
	const struct rmca_core *core = c->mod->base.core;
	struct shm_op *op;
	void *req;

	while ((op = rmca_list_first(&c->ops, struct shm_op, link)) ||
	       (op = rmca_list_first(&c->recvs, struct shm_op, link))) {
		req = op->req;
		op_release(c->mod, op);
		c->nops--;
		core->ops->complete(core, req, status, 0, 0);
	}
}

/* A put or get this core may copy itself: SHM_NOT_DIRECT if not, else
 * its status once done. */
static int direct(struct shm_conn *c, struct shm_op *op)
{
	if (op->kind == SHM_OP_PUT && op->len > SHM_INLINE_MAX)
		return rmca_shm_direct(c, true, op->buf, op->raddr, op->rkey,
				       op->len);
	if (op->kind == SHM_OP_GET && op->len > SHM_RESP_INLINE)
		return rmca_shm_direct(c, false, op->buf, op->raddr, op->rkey,
				       op->len);
	return SHM_NOT_DIRECT;
}

size_t rmca_shm_piece(const struct shm_op *op, size_t off)
{
	size_t max = op->kind == SHM_OP_GET ? SHM_GET_PIECE : SHM_INLINE_MAX;

	if (!op->pieced)
		return op->len;
	return op->len - off < max ? op->len - off : max;
}

/* A receive posted by the peer for one more message. Its count comes with
 * each of its requests; its line is read only when that is used up. */
bool rmca_shm_credit(struct shm_conn *c)
{
	uint64_t v;

	if (c->sends_pushed < c->peer_recvs)
		return true;
	v = shm_load(&c->r.peer->recvs_posted);
	if (v > c->peer_recvs)
		c->peer_recvs = v;
	return c->sends_pushed < c->peer_recvs;
}

/* The next request of op: all of it, or (without CMA) its next piece. */
static enum push_result push(struct shm_conn *c, struct shm_op *op, int *st)
{
	bool inl = op->len <= SHM_INLINE_MAX, more = false;
	uint32_t units = 1, nslots = 0;
	struct shm_flight *f;
	size_t piece;
	struct shm_req *q;
	uint8_t type;

	if (c->reqs_pushed - c->resps_seen >= SHM_RESP_SLOTS)
		return NO_ROOM;
	if (!op->off && c->peer_keys && op->len > SHM_RESP_INLINE &&
	    (op->kind == SHM_OP_PUT || op->kind == SHM_OP_GET) &&
	    shm_key_slot(op->rkey)) {
		if (c->reqs_pushed != c->resps_seen)
			return NO_ROOM; /* after those in flight */
		*st = direct(c, op);
		if (*st != SHM_NOT_DIRECT)
			return DONE;
	}
	/* Without CMA every byte goes through the rings. */
	op->pieced =
		!c->cma && op->len > (op->kind == SHM_OP_GET ? SHM_RESP_INLINE
							     : SHM_INLINE_MAX);
	piece = rmca_shm_piece(op, op->off);
	switch (op->kind) {
	case SHM_OP_SEND:
		if (!op->off && !rmca_shm_credit(c))
			return NO_CREDIT;
		type = SHM_R_SEND;
		inl = inl || op->pieced;
		more = op->off + piece < op->len;
		units = inl ? shm_units(type, piece) : 1;
		break;
	case SHM_OP_PUT:
		type = SHM_R_PUT;
		inl = inl || op->pieced;
		units = inl ? shm_units(type, piece) : 1;
		break;
	case SHM_OP_GET:
		type = SHM_R_GET;
		inl = op->pieced; /* the answer carries the data */
		if (inl || op->len <= SHM_RESP_INLINE)
			nslots = shm_resp_slots(piece);
		break;
	default:
		type = SHM_R_ATOMIC;
		inl = false;
		units = shm_units(type, 2 * sizeof(uint64_t)); /* masks */
		nslots = 1;
		break;
	}
	/* One slot stays free for the error answer that ends a
	 * connection, whichever request it is for. */
	if (c->slots_pushed - c->slots_seen + nslots > SHM_RESP_SLOTS - 1)
		return NO_ROOM;
	q = rmca_shm_req_reserve(&c->r, units);
	if (!q)
		return NO_ROOM;
	*q = (struct shm_req){
		.type = type,
		.flags = (inl ? SHM_RF_INLINE : 0) | (more ? SHM_RF_MORE : 0),
		.units = (uint16_t)units,
		.credit = (uint32_t)c->recvs_posted,
		.len = piece,
		.raddr = op->raddr + op->off,
		.rkey = op->rkey,
		.laddr = (uint64_t)(uintptr_t)op->buf,
	};
	if (inl && piece && type != SHM_R_GET)
		memcpy((uint8_t *)q + shm_pl_off(type), op->buf + op->off,
		       piece);
	/* The key dies with the last piece, before the receive is
	 * reported. */
	if (op->kind == SHM_OP_SEND && op->inv_rkey && !more) {
		q->flags |= SHM_RF_INV;
		q->rkey = op->inv_rkey;
	}
	if (op->kind == SHM_OP_ATOMIC) {
		uint64_t *masks = (uint64_t *)(void *)(q + 1);

		q->akind = (uint8_t)op->atomic.kind;
		q->operand = op->atomic.operand;
		q->compare = op->atomic.compare;
		masks[0] = op->atomic.kind == RMCA_ATOMIC_MASKED_FADD
				   ? op->atomic.field_boundary
				   : op->atomic.compare_mask;
		masks[1] = op->atomic.swap_mask;
	}
	f = &c->fifo[c->reqs_pushed % SHM_RESP_SLOTS];
	f->op = op;
	f->pos = c->r.req_tail;
	f->nslots = nslots;
	rmca_shm_req_commit(&c->r, q, units);
	f->end = c->r.req_tail;
	c->reqs_pushed++;
	c->slots_pushed += nslots;
	if (op->kind == SHM_OP_SEND && !op->off)
		c->sends_pushed++;
	op->off += piece;
	return op->off < op->len ? PARTIAL : PUSHED;
}

/*
 * A copy into the peer's allocation mapped here lands in pages that outlive
 * the peer, so unlike process_vm_writev it does not say whether the peer
 * was still there: its pidfd does. Asking that once per copy was a system
 * call per put (3% of a 1 MiB put's time, more for smaller ones); so the
 * copies wait in c->copied and the next pass of the progress op asks once
 * for all of them, after the last one. The module's eventfd is readable
 * meanwhile, so that a caller sleeping on rmca_wait_fd comes back for
 * them at once; without it, a copy is confirmed where it was made.
 */
static void efd_cb(void *arg, uint32_t events)
{
	(void)events;
	rmca_shm_confirm_all(arg);
}

static bool efd_signal(struct shm_module *m)
{
	const struct rmca_core *core = m->base.core;
	uint64_t one = 1;

	if (m->efd_on)
		return true;
	if (m->efd < 0) {
		m->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (m->efd < 0)
			return false;
		if (core->ops->fd_add(core, m->efd, EPOLLIN, efd_cb, m)) {
			close(m->efd);
			m->efd = -1;
			return false;
		}
	}
	if (write(m->efd, &one, sizeof(one)) != sizeof(one))
		return false;
	m->efd_on = true;
	return true;
}

void rmca_shm_confirm(struct shm_conn *c)
{
	struct shm_op *op;
	int st;

	if (rmca_list_empty(&c->copied))
		return;
	st = rmca_shm_peer_gone(c) ? RMCA_ERR_CONNECTION : RMCA_OK;
	while ((op = rmca_list_first(&c->copied, struct shm_op, qlink)))
		rmca_shm_op_done(c, op, st, 0, 0);
	if (st)
		rmca_shm_conn_fail(c, st);
}

void rmca_shm_confirm_all(struct shm_module *m)
{
	struct rmca_list *l, *next;
	uint64_t v;

	for (l = m->conns.next; l != &m->conns; l = next) {
		next = l->next;
		rmca_shm_confirm(rmca_list_entry(l, struct shm_conn, link));
	}
	if (m->efd_on && read(m->efd, &v, sizeof(v)) == sizeof(v))
		m->efd_on = false;
}

/* op was copied by this core with status st: true if that ended the
 * connection, refused or gone, as an answer would have said. */
static bool copied(struct shm_conn *c, struct shm_op *op, int st)
{
	if (st == SHM_COPIED) {
		rmca_list_del(&op->qlink);
		rmca_list_add_tail(&c->copied, &op->qlink);
		if (!efd_signal(c->mod))
			rmca_shm_confirm(c);
		return c->failed;
	}
	/* Those copied before it end first, as they would have. */
	if (st) {
		rmca_shm_confirm(c);
		if (c->failed) /* op too, with the rest */
			return true;
	}
	rmca_shm_op_done(c, op, st, 0, 0);
	if (!st)
		return false;
	rmca_shm_conn_fail(c, st);
	return true;
}

void rmca_shm_pump(struct shm_conn *c)
{
	struct rmca_list *l, *next;
	bool pushed = false, sends_wait = false;
	int st;

	for (l = c->backlog.next; l != &c->backlog; l = next) {
		struct shm_op *op = rmca_list_entry(l, struct shm_op, qlink);
		enum push_result r;

		next = l->next;
		if (op->kind == SHM_OP_SEND && sends_wait)
			continue;
		while ((r = push(c, op, &st)) == PARTIAL)
			pushed = true;
		if (r == PUSHED) {
			rmca_list_del(&op->qlink);
			pushed = true;
			continue;
		}
		if (r == DONE) {
			if (!copied(c, op, st))
				continue;
			return;
		}
		/* A piece pushed holds back everything behind it. */
		if (r == NO_ROOM || op->off)
			break;
		sends_wait = true;
	}
	if (pushed)
		rmca_shm_wake_peer(c);
}

/*
 * Common start of every post: a failed connection completes the op at once
 * (returns NULL, *err 0); no room returns NULL with *err RMCA_ERR_AGAIN.
 */
static struct shm_op *op_new(struct shm_conn *c, enum shm_op_kind kind,
			     void *req, int *err)
{
	const struct rmca_core *core = c->mod->base.core;
	struct shm_op *op;

	*err = 0;
	if (c->failed) {
		core->ops->complete(core, req, RMCA_ERR_CONNECTION, 0, 0);
		return NULL;
	}
	if (c->nops >= SHM_MAX_OPS) {
		*err = RMCA_ERR_AGAIN;
		return NULL;
	}
	op = c->mod->spare;
	if (op) {
		c->mod->spare = op->spare;
		c->mod->nspare--;
	} else if (!(op = calloc(1, sizeof(*op)))) {
		*err = RMCA_ERR_AGAIN;
		return NULL;
	}
	/* Every member but atomic (set by the atomic post alone), one by
	 * one: a memset of them is a rep stos, four of them per round trip
	 * of a ping-pong. */
	op->kind = kind;
	op->req = req;
	op->buf = NULL;
	op->len = 0;
	op->raddr = 0;
	op->rkey = 0;
	op->inv_rkey = 0;
	op->result = NULL;
	op->pieced = false;
	op->off = 0;
	op->done = 0;
	rmca_list_init(&op->link);
	rmca_list_init(&op->qlink);
	rmca_list_add_tail(kind == SHM_OP_RECV ? &c->recvs : &c->ops,
			   &op->link);
	c->nops++;
	return op;
}

/* Into the ring now if nothing waits before it, else behind the backlog. */
static void post(struct shm_conn *c, struct shm_op *op)
{
	enum push_result r = NO_ROOM;
	int st;

	if (rmca_list_empty(&c->backlog)) {
		r = push(c, op, &st);
		if (r == PUSHED) {
			rmca_shm_wake_peer(c);
			return;
		}
		if (r == DONE) {
			copied(c, op, st);
			return;
		}
	}
	rmca_list_add_tail(&c->backlog, &op->qlink);
	rmca_shm_pump(c);
	if (r == PARTIAL) /* its first piece, if the pump pushed nothing */
		rmca_shm_wake_peer(c);
}

static int post_send(struct shm_conn *c, const void *buf, size_t len,
		     uint64_t rkey, void *req)
{
	struct shm_op *op;
	int err;

	op = op_new(c, SHM_OP_SEND, req, &err);
	if (!op)
		return err;
	op->buf = (char *)buf;
	op->len = len;
	op->inv_rkey = rkey;
	post(c, op);
	return 0;
}

int rmca_shm_send(struct rmca_conn *c, const void *buf, size_t len,
		  struct rmca_module_mr *mr, void *req)
{
	(void)mr;
	return post_send(shm_conn_from_base(c), buf, len, 0, req);
}

int rmca_shm_send_inv(struct rmca_conn *c, const void *buf, size_t len,
		      struct rmca_module_mr *mr, uint64_t rkey, void *req)
{
	(void)mr;
	if (!(rkey & RMCA_KEY_USE_ONCE))
		return RMCA_ERR_INVALID;
	return post_send(shm_conn_from_base(c), buf, len, rkey, req);
}

int rmca_shm_recv(struct rmca_conn *conn, void *buf, size_t len,
		  struct rmca_module_mr *mr, void *req)
{
	struct shm_conn *c = shm_conn_from_base(conn);
	struct shm_op *op;
	int err;

	(void)mr;
	op = op_new(c, SHM_OP_RECV, req, &err);
	if (!op)
		return err;
	op->buf = buf;
	op->len = len;
	c->recvs_posted++;
	shm_store(&c->r.me->recvs_posted, c->recvs_posted);
	rmca_shm_wake_peer(c);
	return 0;
}

static int post_rma(struct shm_conn *c, enum shm_op_kind kind, void *buf,
		    size_t len, uint64_t raddr, uint64_t rkey, void *req)
{
	struct shm_op *op;
	int err;

	op = op_new(c, kind, req, &err);
	if (!op)
		return err;
	op->buf = buf;
	op->len = len;
	op->raddr = raddr;
	op->rkey = rkey;
	post(c, op);
	return 0;
}

int rmca_shm_put(struct rmca_conn *c, const void *buf, size_t len,
		 struct rmca_module_mr *mr, uint64_t raddr, uint64_t rkey,
		 void *req)
{
	(void)mr;
	return post_rma(shm_conn_from_base(c), SHM_OP_PUT, (void *)buf, len,
			raddr, rkey, req);
}

int rmca_shm_get(struct rmca_conn *c, void *buf, size_t len,
		 struct rmca_module_mr *mr, uint64_t raddr, uint64_t rkey,
		 void *req)
{
	(void)mr;
	return post_rma(shm_conn_from_base(c), SHM_OP_GET, buf, len, raddr,
			rkey, req);
}

int rmca_shm_atomic(struct rmca_conn *conn, const struct rmca_atomic *a,
		    uint64_t *result, struct rmca_module_mr *mr, void *req)
{
	struct shm_conn *c = shm_conn_from_base(conn);
	struct shm_op *op;
	int err;

	(void)mr;
	if ((unsigned)a->kind > RMCA_ATOMIC_MASKED_CSWAP)
		return RMCA_ERR_INVALID;
	op = op_new(c, SHM_OP_ATOMIC, req, &err);
	if (!op)
		return err;
	op->atomic = *a;
	op->raddr = a->raddr;
	op->rkey = a->rkey;
	op->len = 8;
	op->result = result;
	post(c, op);
	return 0;
}

int rmca_shm_flush(struct rmca_conn *conn, void *req)
{
	struct shm_conn *c = shm_conn_from_base(conn);
	const struct rmca_core *core = c->mod->base.core;
	struct shm_op *op;
	int err;

	op = op_new(c, SHM_OP_FLUSH, req, &err);
	if (!op)
		return err;
	/* Every op is remotely completed, so a flush only waits for those
	 * posted before it. */
	if (rmca_list_first(&c->ops, struct shm_op, link) == op) {
		op_release(c->mod, op);
		c->nops--;
		core->ops->complete(core, req, RMCA_OK, 0, 0);
	}
	return 0;
}
