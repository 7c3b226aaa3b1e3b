/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Posting operations. Every op is remotely completed: its completion waits
 * for the target's word, sent after the target placed or refused the data.
 * For a send or a put that word is the target's cumulative count of them
 * (frame.h), on whatever frame goes back next; a get or an atomic waits for
 * its RESP.
 *
 * Flow control: every frame carries the count of receives its sender has
 * posted; a send goes on the wire only while that count exceeds the sends
 * already sent, so a message is never dropped and never buffered by the
 * target. A receive longer than its message is the target's business: it
 * places what fits and refuses the send (RESP, RMCA_ERR_TRUNCATED).
 *
 * A post writes its frame at once only when nothing is due to wake the
 * context: with requests out, their answers bring the next progress pass,
 * which writes every frame posted meanwhile with one sendmsg(). A new
 * receive is told only when the peer is short of credits (it knows of no
 * more than it has not been told of); otherwise the next frame takes the
 * count along.
 */
#include <stdlib.h>
#include <string.h>

#include "tcp.h"

/* Inline in every post: its frame's type is known there, and with it the
 * queue the op waits on. The frame itself is not queued yet, nor its
 * header encoded (op_frame, op_frame_post). */
static inline __attribute__((always_inline)) void
op_frame_meta(struct tcp_conn *c, struct tcp_op *op, const struct tcp_frame *f,
	      const void *pl, size_t len)
{
	bool by_count = f->type == TCP_F_SEND || f->type == TCP_F_PUT;

	op->out.payload = pl;
	op->out.len = len;
	op->out.off = 0;
	op->out.owned = false;
	op->out.by_count = by_count;
	rmca_list_add_tail(by_count ? &c->unacked : &c->inflight, &op->qlink);
}

/* The op's frame, its header encoded in it, not queued yet. */
static inline __attribute__((always_inline)) void
op_frame(struct tcp_conn *c, struct tcp_op *op, const struct tcp_frame *f,
	 const void *pl, size_t len)
{
	op_frame_meta(c, op, f, pl, len);
	rmca_tcp_frame_encode(f, op->out.hdr);
}

/* The op's frame posted (rmca_tcp_out_post_frame): written at once where
 * it can be, its header encoded where the write needs it. */
static inline __attribute__((always_inline)) void
op_frame_post(struct tcp_conn *c, struct tcp_op *op, const struct tcp_frame *f,
	      const void *pl, size_t len, bool defer)
{
	op_frame_meta(c, op, f, pl, len);
	rmca_tcp_out_post_frame(c, &op->out, f, defer);
}

/* The frame of a send the peer has a credit for: queued (post false), or
 * posted now or at the next pass (post, defer). */
static inline __attribute__((always_inline)) void
send_frame(struct tcp_conn *c, struct tcp_op *op, bool post, bool defer)
{
	struct tcp_frame f = {
		.type = TCP_F_SEND,
		.id = op->id,
		.len = op->len,
	};

	if (op->inv_rkey) {
		f.flags |= TCP_FF_INV;
		f.rkey = op->inv_rkey;
	}
	c->msgs_out++;
	if (post) {
		op_frame_post(c, op, &f, op->buf, op->len, defer);
		return;
	}
	op_frame(c, op, &f, op->buf, op->len);
	rmca_tcp_out_queue(c, &op->out);
}

void rmca_tcp_pump_sends(struct tcp_conn *c)
{
	struct tcp_op *op;

	while (c->credits != c->msgs_out &&
	       (op = rmca_list_first(&c->sendq, struct tcp_op, qlink))) {
		rmca_list_del(&op->qlink);
		send_frame(c, op, false, false);
	}
}

void rmca_tcp_ack_queue(struct tcp_conn *c)
{
	/* Its header is all zeros but the type, and the counts, which are
	 * stamped as it is written. */
	c->ack.off = 0;
	rmca_tcp_out_queue(c, &c->ack);
}

/*
 * Common start of every post: a failed connection completes the op at once
 * (returns NULL, *err 0); no room returns NULL with *err RMCA_ERR_AGAIN.
 * Inline in every post: the kind, and the list it picks, are known there.
 */
static inline __attribute__((always_inline)) struct tcp_op *
op_new(struct tcp_conn *c, enum tcp_op_kind kind, void *req, int *err)
{
	const struct rmca_core *core = c->mod->base.core;
	struct tcp_op *op;

	*err = 0;
	if (c->failed) {
		core->ops->complete(core, req, RMCA_ERR_CONNECTION, 0, 0);
		return NULL;
	}
	if (c->nops >= TCP_MAX_OPS) {
		*err = RMCA_ERR_AGAIN;
		return NULL;
	}
	/* The op's record is the request's (component.h, req_size), not
	 * cleared: every field the op's path reads is set here or by that
	 * path (the request frame's by op_frame). */
	op = tcp_op_of(c->mod, req);
	op->kind = kind;
	op->req = req;
	op->id = ++c->next_id;
	op->mr = NULL;
	/* A receive is on c->recvs alone, and has no frame: its qlink and
	 * frame are never read (rmca_tcp_op_release); a send sets its key. */
	if (kind != TCP_OP_RECV) {
		rmca_list_init(&op->qlink);
		rmca_list_init(&op->out.link);
		op->out.answer = false;
		op->out.mr = NULL;
	}
	rmca_list_add_tail(kind == TCP_OP_RECV ? &c->recvs : &c->ops,
			   &op->link);
	c->nops++;
	return op;
}

/* Inline in both entry points: a plain send folds the key's tests. */
static inline __attribute__((always_inline)) int
post_send(struct tcp_conn *c, const void *buf, size_t len,
	  const struct tcp_mr *mr, uint64_t rkey, void *req)
{
	bool defer = rmca_tcp_out_busy(c);
	struct tcp_op *op;
	int err;

	if (len > TCP_MAX_PAYLOAD)
		return RMCA_ERR_INVALID;
	op = op_new(c, TCP_OP_SEND, req, &err);
	if (!op)
		return err;
	op->buf = (char *)buf;
	op->len = len;
	op->mr = mr;
	op->inv_rkey = rkey;
	/* Sends go in post order: past those waiting for a credit, or at
	 * once with one. */
	if (rmca_list_empty(&c->sendq) && c->credits != c->msgs_out) {
		send_frame(c, op, true, defer);
		return 0;
	}
	rmca_list_add_tail(&c->sendq, &op->qlink);
	rmca_tcp_out_kick(c, defer);
	return 0;
}

int rmca_tcp_send(struct rmca_conn *c, const void *buf, size_t len,
		  struct rmca_module_mr *mr, void *req)
{
	return post_send(tcp_conn_from_base(c), buf, len, tcp_mr_from_base(mr),
			 0, req);
}

int rmca_tcp_send_inv(struct rmca_conn *c, const void *buf, size_t len,
		      struct rmca_module_mr *mr, uint64_t rkey, void *req)
{
	if (!(rkey & RMCA_KEY_USE_ONCE))
		return RMCA_ERR_INVALID;
	return post_send(tcp_conn_from_base(c), buf, len, tcp_mr_from_base(mr),
			 rkey, req);
}

int rmca_tcp_recv(struct rmca_conn *conn, void *buf, size_t len,
		  struct rmca_module_mr *mr, void *req)
{
	struct tcp_conn *c = tcp_conn_from_base(conn);
	struct tcp_op *op;
	bool tell;
	int err;

	op = op_new(c, TCP_OP_RECV, req, &err);
	if (!op)
		return err;
	op->buf = buf;
	op->len = len;
	op->mr = tcp_mr_from_base(mr);
	/* With nothing due to bring the connection back and nothing queued,
	 * a peer short of credits is told now, by the connection's ACK
	 * frame; otherwise the next frame, or the end of the next event,
	 * takes the count along. */
	c->granted++;
	tell = !rmca_tcp_out_busy(c) && !c->hold && rmca_list_empty(&c->outq) &&
	       rmca_tcp_counts_due(c);
	if (tell) {
		rmca_tcp_ack_queue(c);
		rmca_tcp_out_flush(c);
	}
	return 0;
}

/* Inline in both entry points: the kind is known in each. */
static inline __attribute__((always_inline)) int
post_rdma(struct tcp_conn *c, enum tcp_op_kind kind, void *buf, size_t len,
	  const struct tcp_mr *mr, uint64_t raddr, uint64_t rkey, void *req)
{
	struct tcp_frame f = {
		.type = kind == TCP_OP_PUT ? TCP_F_PUT : TCP_F_GET,
		.len = len,
		.raddr = raddr,
		.rkey = rkey,
	};
	bool defer = rmca_tcp_out_busy(c);
	struct tcp_op *op;
	int err;

	if (len > TCP_MAX_PAYLOAD)
		return RMCA_ERR_INVALID;
	op = op_new(c, kind, req, &err);
	if (!op)
		return err;
	op->buf = buf;
	op->len = len;
	op->mr = mr;
	f.id = op->id;
	op_frame_post(c, op, &f, kind == TCP_OP_PUT ? buf : NULL,
		      kind == TCP_OP_PUT ? len : 0, defer);
	return 0;
}

int rmca_tcp_put(struct rmca_conn *c, const void *buf, size_t len,
		 struct rmca_module_mr *mr, uint64_t raddr, uint64_t rkey,
		 void *req)
{
	return post_rdma(tcp_conn_from_base(c), TCP_OP_PUT, (void *)buf, len,
			 tcp_mr_from_base(mr), raddr, rkey, req);
}

int rmca_tcp_get(struct rmca_conn *c, void *buf, size_t len,
		 struct rmca_module_mr *mr, uint64_t raddr, uint64_t rkey,
		 void *req)
{
	return post_rdma(tcp_conn_from_base(c), TCP_OP_GET, buf, len,
			 tcp_mr_from_base(mr), raddr, rkey, req);
}

int rmca_tcp_atomic(struct rmca_conn *conn, const struct rmca_atomic *a,
		    uint64_t *result, struct rmca_module_mr *mr, void *req)
{
	struct tcp_conn *c = tcp_conn_from_base(conn);
	struct tcp_frame f = {
		.type = TCP_F_ATOMIC,
		.akind = (uint8_t)a->kind,
		.len = 8,
		.raddr = a->raddr,
		.rkey = a->rkey,
		.operand = a->operand,
	};
	bool defer = rmca_tcp_out_busy(c);
	struct tcp_op *op;
	int err;

	switch (a->kind) {
	case RMCA_ATOMIC_FADD:
		break;
	case RMCA_ATOMIC_CSWAP:
		f.compare = a->compare;
		break;
	case RMCA_ATOMIC_MASKED_FADD:
		f.mask1 = a->field_boundary;
		break;
	case RMCA_ATOMIC_MASKED_CSWAP:
		f.compare = a->compare;
		f.mask1 = a->compare_mask;
		f.mask2 = a->swap_mask;
		break;
	default:
		return RMCA_ERR_INVALID;
	}
	op = op_new(c, TCP_OP_ATOMIC, req, &err);
	if (!op)
		return err;
	op->result = result;
	op->mr = tcp_mr_from_base(mr);
	f.id = op->id;
	op_frame_post(c, op, &f, NULL, 0, defer);
	return 0;
}

int rmca_tcp_flush(struct rmca_conn *conn, void *req)
{
	struct tcp_conn *c = tcp_conn_from_base(conn);
	const struct rmca_core *core = c->mod->base.core;
	struct tcp_op *op;
	int err;

	op = op_new(c, TCP_OP_FLUSH, req, &err);
	if (!op)
		return err;
	/* Every op is remotely completed, so a flush only has to wait for
	 * those posted before it. */
	if (rmca_list_first(&c->ops, struct tcp_op, link) == op) {
		rmca_list_del(&op->link);
		c->nops--;
		core->ops->complete(core, req, RMCA_OK, 0, 0);
	}
	return 0;
}

void rmca_tcp_disconnect(struct rmca_conn *conn)
{
	struct tcp_conn *c = tcp_conn_from_base(conn);

	rmca_tcp_conn_close_out(c);
	rmca_tcp_conn_destroy(c);
}
