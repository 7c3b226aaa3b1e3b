/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The receive side of a connection: one recv() takes in every frame the
 * socket holds (up to TCP_RX_BUF bytes); each header is validated in full,
 * then its payload is copied where it belongs (a posted receive, the target
 * region, the initiator's get buffer) or dropped when refused; a large
 * payload is read straight to its place. A read shorter than asked for
 * emptied the socket, so no recv() is spent to learn it would block.
 * Every header's counts are taken first (frame.h): they acknowledge the
 * sends and puts written, oldest first, and open credits for sends. Gets
 * and atomics are answered in the order they arrive, so responses match
 * the initiator's in-flight queue head; a refusal names the oldest request
 * not acknowledged. The answers of one wakeup leave together, with one
 * write, when the connection's event is done.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <rmca/atomic_ops.h>
#include "tcp.h"

static void protocol_error(struct tcp_conn *c, const char *why)
{
	tcp_log(c->mod, RMCA_LOG_ERROR, "closing connection to %s: %s frame: %s",
		c->peer, rmca_tcp_frame_name(c->rx.f.type), why);
	rmca_tcp_conn_fail(c, RMCA_ERR_PROTOCOL, NULL);
}

/*
 * May an answer of len payload bytes go at once (rmca_tcp_answer_direct)?
 * Where it is the next frame written anyway, and alone: nothing queued,
 * held or peeked, no message delivered by this wakeup (whose reply may
 * carry its counts), and no more frames buffered, whose answers would go
 * with it in one write.
 */
static inline bool answer_now(const struct tcp_conn *c, size_t len)
{
	return len <= TCP_TX_COPY && c->rx.start == c->rx.end &&
	       rmca_list_empty(&c->outq) && !c->hold && !c->peeked &&
	       !c->delivered && !c->closing && !c->failed && c->fd >= 0;
}

/* Answer request id with success: the operand of an atomic, or the len
 * bytes of a GET at pl in region; written at once where it can be, else
 * queued. Inline where the answer is built, so that its frame's known
 * fields are stores. */
static inline __attribute__((always_inline)) void
answer(struct tcp_conn *c, uint64_t id, uint64_t operand, const char *pl,
       size_t len, const struct tcp_mr *region)
{
	struct tcp_frame f = {
		.type = TCP_F_RESP,
		.id = id,
		.len = len,
		.operand = operand,
	};
	struct tcp_out *o;

	if (answer_now(c, len) &&
	    rmca_tcp_answer_direct(c, &f, pl, len, region))
		return;
	o = rmca_tcp_out_new(c->mod, &f, pl, len);
	if (!o) {
		rmca_tcp_conn_fail(c, RMCA_ERR_NO_MEMORY, NULL);
		return;
	}
	/* Read from the region when written out: mr_dereg must know. */
	o->mr = len ? region : NULL;
	rmca_tcp_answer_queue(c, o);
}

/* Queue the answer to request id of type type; an error answer (which a
 * SEND or PUT only gets) ends the connection. Given the request's type
 * and id, not its frame: the caller mostly has them in registers. */
static void respond(struct tcp_conn *c, unsigned type, uint64_t id, int status,
		    uint64_t operand, const char *pl, size_t len,
		    const struct tcp_mr *region)
{
	struct tcp_frame f = {
		.type = TCP_F_RESP,
		.status = status,
		.id = id,
	};
	struct tcp_out *o;

	if (!status) {
		answer(c, id, operand, pl, len, region);
		return;
	}
	o = rmca_tcp_out_new(c->mod, &f, NULL, 0);
	if (!o) {
		rmca_tcp_conn_fail(c, RMCA_ERR_NO_MEMORY, NULL);
		return;
	}
	tcp_log(c->mod, RMCA_LOG_INFO, "refused %s from %s: %s",
		rmca_tcp_frame_name(type), c->peer,
		status == RMCA_ERR_TRUNCATED ? "receive too small" :
					       "remote access denied");
	rmca_tcp_conn_fail(c, status, o);
}

static void expect_payload(struct tcp_conn *c, char *dst, uint64_t dst_len,
			   uint64_t drain, const struct tcp_mr *region)
{
	c->rx.payload = true;
	c->rx.hdr_alone = dst_len + drain >= TCP_RX_BUF;
	c->rx.dst = dst;
	c->rx.mr = region;
	c->rx.dst_left = (size_t)dst_len;
	c->rx.drain_left = (size_t)drain;
}

static void on_send(struct tcp_conn *c, const struct tcp_frame *f)
{
	struct tcp_op *r = rmca_list_first(&c->recvs, struct tcp_op, link);

	if (!r) {
		protocol_error(c, "message without a credit");
		return;
	}
	c->msgs_in++;
	c->rx.op = r;
	/* Too long for the receive: what fits lands, the rest is dropped,
	 * and the send is refused. */
	if (f->len > r->len) {
		c->rx.status = RMCA_ERR_TRUNCATED;
		expect_payload(c, r->buf, r->len, f->len - r->len, NULL);
		return;
	}
	/* All of it read already, as a small message mostly is: delivered
	 * at once, as finish_frame() would once the payload is in. */
	if (f->len <= c->rx.end - c->rx.start && !(f->flags & TCP_FF_INV)) {
		if (f->len) { /* a receive of no bytes may have no buffer */
			rmca_tcp_copy(r->buf, c->rx.buf + c->rx.start,
				      (size_t)f->len);
			c->rx.hdr_alone = false;
		}
		c->rx.start += (size_t)f->len;
		c->rx.op = NULL;
		rmca_tcp_recv_done(c, r, (size_t)f->len);
		c->done_in++;
		c->delivered = true;
		return;
	}
	expect_payload(c, r->buf, f->len, 0, NULL);
}

static void on_atomic(struct tcp_conn *c, const struct tcp_frame *f)
{
	struct rmca_atomic a = {
		.kind = (enum rmca_atomic_kind)f->akind,
		.raddr = f->raddr,
		.rkey = f->rkey,
		.operand = f->operand,
		.compare = f->compare,
	};
	char *p;
	int r;

	if (a.kind == RMCA_ATOMIC_MASKED_FADD)
		a.field_boundary = f->mask1;
	else
		a.compare_mask = f->mask1;
	a.swap_mask = f->mask2;
	r = rmca_tcp_access(c->mod, c, f->rkey, f->raddr, 8,
			    RMCA_ACCESS_REMOTE_ATOMIC, &p, NULL);
	if (r) {
		respond(c, f->type, f->id, r, 0, NULL, 0, NULL);
		return;
	}
	answer(c, f->id, rmca_atomic_cpu((uint64_t *)(void *)p, &a), NULL, 0,
	       NULL);
}

static void on_resp(struct tcp_conn *c, const struct tcp_frame *f)
{
	struct tcp_op *op = rmca_list_first(&c->inflight, struct tcp_op, qlink);
	int st = f->status;

	/* A refused send or put: the oldest not acknowledged, written. */
	if (st && (!op || op->id != f->id) && c->acked != c->by_count_out)
		op = rmca_list_first(&c->unacked, struct tcp_op, qlink);
	/* Ids go 1, 2, ...: a peer knows the next without reading it. Only
	 * a request whose frame is written whole (off the queue) can have
	 * been read, and answered. */
	if (!op || op->id != f->id || rmca_list_linked(&op->out.link)) {
		protocol_error(c, "answer to no outstanding request");
		return;
	}
	/* A send touches no region: only a receive too small refuses it. */
	if ((op->kind != TCP_OP_GET && f->len) ||
	    (op->kind == TCP_OP_GET && !st && f->len != op->len) ||
	    (op->kind != TCP_OP_ATOMIC && f->operand) ||
	    (op->kind != TCP_OP_SEND && st == RMCA_ERR_TRUNCATED) ||
	    (op->kind == TCP_OP_SEND && st && st != RMCA_ERR_TRUNCATED)) {
		protocol_error(c, "answer does not fit its request");
		return;
	}
	rmca_list_del(&op->qlink);
	if (st) {
		rmca_tcp_op_done(c, op, st, 0, 0);
		rmca_tcp_conn_fail(c, st, NULL);
		return;
	}
	switch (op->kind) {
	case TCP_OP_GET:
		c->rx.op = op;
		expect_payload(c, op->buf, f->len, 0, NULL);
		return;
	case TCP_OP_ATOMIC:
		*op->result = f->operand;
		break;
	default:
		break;
	}
	rmca_tcp_op_done(c, op, RMCA_OK, 0, 0);
}

/*
 * The peer's counts: each goes forward by no more than there can be, or
 * the connection ends. Sends and puts written are acknowledged, oldest
 * first; new credits release waiting sends. False once c failed.
 */
static inline __attribute__((always_inline)) bool
take_counts(struct tcp_conn *c, const struct tcp_frame *f)
{
	uint32_t acks = f->acked - c->acked;
	uint32_t grants = f->credits - c->credits;
	struct tcp_op *op;

	if (acks > (uint32_t)(c->by_count_out - c->acked)) {
		protocol_error(c, acks > UINT32_MAX / 2
					  ? "acknowledged count went backwards"
					  : "acknowledges more than was sent");
		return false;
	}
	if (grants > UINT32_MAX / 2) {
		protocol_error(c, "credit count went backwards");
		return false;
	}
	/* A peer has at most TCP_MAX_OPS receives posted. */
	if ((uint32_t)(f->credits - c->msgs_out) > TCP_MAX_OPS) {
		protocol_error(c, "more credits than receives");
		return false;
	}
	c->credits = f->credits;
	for (; acks && !c->failed; acks--) {
		op = rmca_list_first(&c->unacked, struct tcp_op, qlink);
		c->acked++;
		rmca_list_unlink(&op->qlink);
		rmca_tcp_acked_done(c, op);
	}
	if (grants && !rmca_list_empty(&c->sendq))
		rmca_tcp_pump_sends(c);
	return !c->failed;
}

/* A header of type t (a constant: one copy per type of the data path)
 * was validated: act on it, or arrange for its payload. A hello never
 * comes here (rx_frame). */
static inline __attribute__((always_inline)) void
start_frame(struct tcp_conn *c, unsigned t)
{
	const struct tcp_frame *f = &c->rx.f;
	const struct tcp_mr *region = NULL;
	char *p = NULL;
	int r;

	c->rx.status = 0;
	c->rx.op = NULL;
	if (!take_counts(c, f))
		return;
	switch (t) {
	case TCP_F_ACK:
		return;
	case TCP_F_SEND:
		on_send(c, f);
		return;
	case TCP_F_PUT:
		r = rmca_tcp_access(c->mod, c, f->rkey, f->raddr, f->len,
				    RMCA_ACCESS_REMOTE_WRITE, &p, &region);
		c->rx.status = r;
		if (r) {
			expect_payload(c, NULL, 0, f->len, NULL);
		} else if (f->len <= c->rx.end - c->rx.start) {
			/* All of it read already: placed at once. */
			if (f->len) {
				rmca_tcp_copy(p, c->rx.buf + c->rx.start,
					      (size_t)f->len);
				c->rx.hdr_alone = false;
			}
			c->rx.start += (size_t)f->len;
			c->done_in++;
		} else {
			expect_payload(c, p, f->len, 0, region);
		}
		return;
	case TCP_F_GET:
		r = rmca_tcp_access(c->mod, c, f->rkey, f->raddr, f->len,
				    RMCA_ACCESS_REMOTE_READ, &p, &region);
		respond(c, f->type, f->id, r, 0, p, f->len, region);
		return;
	case TCP_F_ATOMIC:
		on_atomic(c, f);
		return;
	case TCP_F_RESP:
		on_resp(c, f);
		return;
	default:
		return; /* the decoder knows no other type */
	}
}

/* The header at start, of type t, validated and acted on; false once c
 * failed. Inline per type: its rules fold into the checks, and the type
 * is not switched on again to act on it. */
static inline __attribute__((always_inline)) bool
frame_as(struct tcp_conn *c, const uint8_t *h, unsigned t)
{
	const char *why;

	if (rmca_tcp_frame_decode_as(h, &c->rx.f, &why, t)) {
		protocol_error(c, why);
		return false;
	}
	c->rx.start += TCP_HDR_LEN;
	start_frame(c, t);
	return true;
}

/* The whole header buffered at start: rmca_tcp_frame_decode(), each
 * type of the data path on its own copy of the checks and of the work;
 * any other frame is refused, a valid hello too (the connection is
 * established). False when c failed. */
static inline __attribute__((always_inline)) bool rx_frame(struct tcp_conn *c)
{
	const uint8_t *h = (const uint8_t *)c->rx.buf + c->rx.start;
	const char *why;

	switch (h[0]) {
	case TCP_F_SEND:
		return frame_as(c, h, TCP_F_SEND);
	case TCP_F_ACK:
		return frame_as(c, h, TCP_F_ACK);
	case TCP_F_PUT:
		return frame_as(c, h, TCP_F_PUT);
	case TCP_F_GET:
		return frame_as(c, h, TCP_F_GET);
	case TCP_F_ATOMIC:
		return frame_as(c, h, TCP_F_ATOMIC);
	case TCP_F_RESP:
		return frame_as(c, h, TCP_F_RESP);
	default:
		if (!rmca_tcp_frame_decode_full(h, TCP_HDR_LEN, &c->rx.f, &why))
			why = "hello on an established connection";
		protocol_error(c, why);
		return false;
	}
}

/* The payload of the current frame is in. */
static void finish_frame(struct tcp_conn *c)
{
	const struct tcp_frame *f = &c->rx.f;
	uint64_t revoked = 0;
	int st;

	c->rx.payload = false;
	switch (f->type) {
	case TCP_F_SEND:
		/* The key is dead before the receive is reported. */
		if (f->flags & TCP_FF_INV)
			revoked = rmca_tcp_revoke(c->mod, c, f->rkey);
		st = c->rx.status;
		rmca_tcp_op_done(c, c->rx.op, st,
				 st ? c->rx.op->len : (size_t)f->len, revoked);
		c->rx.op = NULL;
		if (st) {
			respond(c, f->type, f->id, st, 0, NULL, 0, NULL);
			return;
		}
		c->done_in++;
		c->delivered = true;
		return;
	case TCP_F_PUT:
		if (c->rx.status)
			respond(c, f->type, f->id, c->rx.status, 0, NULL, 0,
				NULL);
		else
			c->done_in++;
		return;
	case TCP_F_RESP:
		rmca_tcp_op_done(c, c->rx.op, RMCA_OK, 0, 0);
		c->rx.op = NULL;
		return;
	default:
		return;
	}
}

/* What rx_read() makes of a read that found nothing, or of an error:
 * 0 when nothing is there now, else c fails and -1. */
static __attribute__((noinline)) ssize_t rx_read_none(struct tcp_conn *c,
						      ssize_t n)
{
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	tcp_log(c->mod, RMCA_LOG_INFO, "connection to %s: %s", c->peer,
		n ? strerror(errno) : "closed by peer");
	rmca_tcp_conn_fail(c, RMCA_ERR_CONNECTION, NULL);
	return -1;
}

/* rx_read() with bytes an earlier MSG_PEEK left at the head of the
 * socket: the same call takes them out (into scratch) before the new
 * ones, which are all it counts. Only after a hold: not inline. */
static __attribute__((noinline)) ssize_t rx_read_peeked(struct tcp_conn *c,
							void *buf, size_t len)
{
	size_t skip = c->peeked;
	struct iovec iov[2] = {
		{.iov_base = c->mod->scratch, .iov_len = skip},
		{.iov_base = buf, .iov_len = len},
	};
	struct msghdr msg = {.msg_iov = iov, .msg_iovlen = 2};
	ssize_t n;

	do {
		n = rmca_tcp_io_recvmsg(c->mod->io_direct, c->fd, &msg, 0);
	} while (n < 0 && errno == EINTR);
	if (n <= 0)
		return rx_read_none(c, n);
	if ((size_t)n <= skip) {
		c->peeked -= (size_t)n;
		return 0;
	}
	c->peeked = 0;
	return n - (ssize_t)skip;
}

/*
 * One read; returns the new bytes, 0 when nothing new is there now, < 0
 * once c failed. Bytes an earlier MSG_PEEK left at the head of the socket
 * are taken out by the same call, and not counted; peek leaves what it
 * reads there (c->peeked), for a hold to keep the wait fd readable.
 */
static inline ssize_t rx_read(struct tcp_conn *c, void *buf, size_t len,
			      bool peek)
{
	ssize_t n;

	if (c->peeked)
		return rx_read_peeked(c, buf, len);
	do {
		n = rmca_tcp_io_recv(c->mod->io_direct, c->fd, buf, len,
				     peek ? MSG_PEEK : 0);
	} while (n < 0 && errno == EINTR);
	if (n <= 0)
		return rx_read_none(c, n);
	if (peek)
		c->peeked = (size_t)n;
	return n;
}

static size_t min_size(size_t a, size_t b)
{
	return a < b ? a : b;
}

/*
 * Act on the buffered bytes: whole headers, and payload bytes to their
 * place. Returns false when c may not go on reading now (it failed, or it
 * holds off until its answers are written).
 */
static inline __attribute__((always_inline)) bool rx_consume(struct tcp_conn *c)
{
	struct tcp_rx *rx = &c->rx;
	size_t k;

	/* Nothing buffered, as before a wakeup's first read: the next read
	 * goes to the front, unless c may not read. */
	if (rx->start == rx->end && !rx->payload) {
		rx->start = rx->end = 0;
		return !c->failed && c->fd >= 0 && !rmca_tcp_rx_held(c);
	}
	for (;;) {
		if (c->failed || c->fd < 0)
			return false;
		if (!rx->payload) {
			/* Each request gets one answer: none is read while
			 * the peer leaves the answers it has unread. */
			if (rmca_tcp_rx_held(c))
				return false;
			if (rx->end - rx->start < TCP_HDR_LEN)
				break;
			if (!rx_frame(c))
				return false;
			continue;
		}
		if (rx->start == rx->end && (rx->dst_left || rx->drain_left))
			break;
		if (rx->dst_left) {
			k = min_size(rx->end - rx->start, rx->dst_left);
			memcpy(rx->dst, rx->buf + rx->start, k);
			rx->dst += k;
			rx->dst_left -= k;
			rx->start += k;
		} else if (rx->drain_left) {
			k = min_size(rx->end - rx->start, rx->drain_left);
			rx->drain_left -= k;
			rx->start += k;
		}
		if (!rx->dst_left && !rx->drain_left)
			finish_frame(c);
	}
	/* Room for the rest of a frame: what is left moves to the front. */
	if (rx->start == rx->end) {
		rx->start = rx->end = 0;
	} else if (rx->start) {
		memmove(rx->buf, rx->buf + rx->start, rx->end - rx->start);
		rx->end -= rx->start;
		rx->start = 0;
	}
	return true;
}

/* One recv() of what the frame being read needs next. Returns the bytes
 * read (0: none now), -1 once c failed; *drained: a short read, so the
 * socket held no more. */
static ssize_t rx_fill(struct tcp_conn *c, bool *drained)
{
	struct tcp_rx *rx = &c->rx;
	bool front = rx->payload && rx->start == rx->end;
	size_t want;
	ssize_t n;

	/* A payload with none of it buffered is read straight to its place
	 * once at least TCP_RX_DIRECT of it is left, and to its end in a
	 * stream of large payloads (the next header is read alone). The
	 * bytes that land come first, then those dropped. */
	if (front && rx->dst_left &&
	    (rx->dst_left >= TCP_RX_DIRECT || rx->hdr_alone)) {
		want = min_size(rx->dst_left, (size_t)1 << 30);
		n = rx_read(c, rx->dst, want, false);
		if (n > 0) {
			rx->dst += n;
			rx->dst_left -= (size_t)n;
			if (!rx->dst_left && !rx->drain_left)
				finish_frame(c);
		}
	} else if (front && !rx->dst_left &&
		   (rx->drain_left >= TCP_RX_DIRECT || rx->hdr_alone)) {
		want = min_size(rx->drain_left, TCP_SCRATCH_LEN);
		n = rx_read(c, c->mod->scratch, want, false);
		if (n > 0) {
			rx->drain_left -= (size_t)n;
			if (!rx->drain_left)
				finish_frame(c);
		}
	} else {
		/* A message delivered from this read may wait for the
		 * application's reply to carry its count: peeking leaves
		 * it in the socket, which keeps the wait fd readable. In a
		 * stream of large payloads, the header alone: a read of
		 * TCP_RX_BUF would take TCP_RX_BUF - TCP_HDR_LEN bytes of
		 * the payload after it into buf, to be copied again. */
		want = TCP_RX_BUF - rx->end;
		if (rx->hdr_alone && !rx->payload && rx->end < TCP_HDR_LEN)
			want = TCP_HDR_LEN - rx->end;
		n = rx_read(c, rx->buf + rx->end, want, c->peek);
		if (n > 0)
			rx->end += (size_t)n;
	}
	*drained = n > 0 && (size_t)n < want;
	return n;
}

void rmca_tcp_rx(struct tcp_conn *c)
{
	bool drained = false;

	for (int budget = TCP_RX_BUDGET; c->fd >= 0; budget--) {
		if (c->failed) {
			rmca_tcp_discard(c);
			return;
		}
		if (!rx_consume(c) || drained || !budget)
			return;
		if (rx_fill(c, &drained) <= 0)
			return;
		c->mod->served = true;
		c->mod->progress_due |= TCP_DUE_SERVED;
	}
}
