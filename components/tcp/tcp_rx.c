/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The receive side of a connection: a header is read and validated in full,
 * then its payload lands straight where it belongs (a posted receive, the
 * target region, the initiator's get buffer) or, when refused, in a scratch
 * buffer. Requests are answered in the order they arrive, so responses
 * match the initiator's in-flight queue head.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <rmca/atomic_ops.h>
#include "tcp.h"

static void protocol_error(struct rmca_conn *c, const char *why)
{
	tcp_log(c->mod, RMCA_LOG_ERROR, "closing connection to %s: %s frame: %s",
		c->peer, rmca_tcp_frame_name(c->rx.f.type), why);
	rmca_tcp_conn_fail(c, RMCA_ERR_PROTOCOL, NULL);
}

/* Queue the answer to request f; an error answer ends the connection. */
static void respond(struct rmca_conn *c, const struct tcp_frame *req,
		    int status, uint64_t operand, const char *pl, size_t len,
		    const struct rmca_module_mr *region)
{
	struct tcp_frame f = {
		.type = TCP_F_RESP,
		.status = status,
		.id = req->id,
		.len = status ? 0 : len,
		.operand = status ? 0 : operand,
	};
	struct tcp_out *o = rmca_tcp_out_new(&f, pl, f.len);

	if (!o) {
		rmca_tcp_conn_fail(c, RMCA_ERR_NO_MEMORY, NULL);
		return;
	}
	if (status) {
		tcp_log(c->mod, RMCA_LOG_INFO, "refused %s from %s: %s",
			rmca_tcp_frame_name(req->type), c->peer,
			status == RMCA_ERR_TRUNCATED ? "receive too small" :
						       "remote access denied");
		rmca_tcp_conn_fail(c, status, o);
		return;
	}
	/* Read from the region when written out: mr_dereg must know. */
	o->mr = f.len ? region : NULL;
	rmca_tcp_answer_queue(c, o);
	rmca_tcp_out_flush(c);
}

static void expect_payload(struct rmca_conn *c, char *dst, uint64_t dst_len,
			   uint64_t drain, const struct rmca_module_mr *region)
{
	c->rx.payload = true;
	c->rx.dst = dst;
	c->rx.mr = region;
	c->rx.dst_left = (size_t)dst_len;
	c->rx.drain_left = (size_t)drain;
}

static void on_send(struct rmca_conn *c, const struct tcp_frame *f)
{
	struct tcp_op *r = tcp_first(&c->recvs, struct tcp_op, link);

	if (!r) {
		protocol_error(c, "message without a credit");
		return;
	}
	if (f->len > r->len) {
		protocol_error(c, "message longer than its credit");
		return;
	}
	c->rx.op = r;
	expect_payload(c, r->buf, f->len, 0, NULL);
}

static void on_atomic(struct rmca_conn *c, const struct tcp_frame *f)
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
		respond(c, f, r, 0, NULL, 0, NULL);
		return;
	}
	respond(c, f, 0, rmca_atomic_cpu((uint64_t *)(void *)p, &a), NULL, 0,
		NULL);
}

static void on_resp(struct rmca_conn *c, const struct tcp_frame *f)
{
	struct tcp_op *op = tcp_first(&c->inflight, struct tcp_op, qlink);
	int st = f->status;

	if (!op || op->id != f->id) {
		protocol_error(c, "answer to no outstanding request");
		return;
	}
	if ((op->kind != TCP_OP_GET && f->len) ||
	    (op->kind == TCP_OP_GET && !st && f->len != op->len) ||
	    (op->kind != TCP_OP_ATOMIC && f->operand) ||
	    (op->kind != TCP_OP_SEND && st == RMCA_ERR_TRUNCATED)) {
		protocol_error(c, "answer does not fit its request");
		return;
	}
	tcp_list_del(&op->qlink);
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

/* A header was validated: act on it, or arrange for its payload. */
static void start_frame(struct rmca_conn *c)
{
	const struct tcp_frame *f = &c->rx.f;
	const struct rmca_module_mr *region = NULL;
	char *p = NULL;
	int r;

	c->rx.status = 0;
	c->rx.op = NULL;
	switch (f->type) {
	case TCP_F_CREDIT:
		if (rmca_tcp_credit_push(c, f->len)) {
			protocol_error(c, "more credits than receives");
			return;
		}
		rmca_tcp_pump_sends(c);
		rmca_tcp_out_flush(c);
		return;
	case TCP_F_SEND:
		on_send(c, f);
		return;
	case TCP_F_PUT:
		r = rmca_tcp_access(c->mod, c, f->rkey, f->raddr, f->len,
				    RMCA_ACCESS_REMOTE_WRITE, &p, &region);
		c->rx.status = r;
		if (r)
			expect_payload(c, NULL, 0, f->len, NULL);
		else
			expect_payload(c, p, f->len, 0, region);
		return;
	case TCP_F_GET:
		r = rmca_tcp_access(c->mod, c, f->rkey, f->raddr, f->len,
				    RMCA_ACCESS_REMOTE_READ, &p, &region);
		respond(c, f, r, 0, p, f->len, region);
		return;
	case TCP_F_ATOMIC:
		on_atomic(c, f);
		return;
	case TCP_F_RESP:
		on_resp(c, f);
		return;
	default:
		protocol_error(c, "hello on an established connection");
		return;
	}
}

/* The payload of the current frame is in. */
static void finish_frame(struct rmca_conn *c)
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
		st = (f->flags & TCP_FF_TRUNC) ? RMCA_ERR_TRUNCATED : RMCA_OK;
		rmca_tcp_op_done(c, c->rx.op, st, f->len, revoked);
		c->rx.op = NULL;
		respond(c, f, st, 0, NULL, 0, NULL);
		return;
	case TCP_F_PUT:
		respond(c, f, c->rx.status, 0, NULL, 0, NULL);
		return;
	case TCP_F_RESP:
		rmca_tcp_op_done(c, c->rx.op, RMCA_OK, 0, 0);
		c->rx.op = NULL;
		return;
	default:
		return;
	}
}

/* One recv(); returns bytes, 0 when nothing is there now, < 0 when the
 * connection has failed. */
static ssize_t rx_read(struct rmca_conn *c, void *buf, size_t len)
{
	ssize_t n;

	do {
		n = recv(c->fd, buf, len, 0);
	} while (n < 0 && errno == EINTR);
	if (n > 0)
		return n;
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	tcp_log(c->mod, RMCA_LOG_INFO, "connection to %s: %s", c->peer,
		n ? strerror(errno) : "closed by peer");
	rmca_tcp_conn_fail(c, RMCA_ERR_CONNECTION, NULL);
	return -1;
}

static bool rx_step(struct rmca_conn *c)
{
	struct tcp_rx *rx = &c->rx;
	const char *why;
	ssize_t n;

	if (!rx->payload) {
		/* Each request gets one answer: none is read while the peer
		 * leaves the answers it has unread (out_flush reads on). */
		if (rmca_tcp_rx_held(c)) {
			rmca_tcp_out_flush(c);
			return false;
		}
		n = rx_read(c, rx->hdr + rx->got, TCP_HDR_LEN - rx->got);
		if (n <= 0)
			return false;
		rx->got += (size_t)n;
		if (rx->got < TCP_HDR_LEN)
			return false;
		rx->got = 0;
		if (rmca_tcp_frame_decode(rx->hdr, TCP_HDR_LEN, &rx->f, &why)) {
			protocol_error(c, why);
			return false;
		}
		start_frame(c);
	} else if (rx->dst_left) {
		n = rx_read(c, rx->dst,
			    rx->dst_left > (1u << 30) ? 1u << 30 :
							rx->dst_left);
		if (n <= 0)
			return false;
		rx->dst += n;
		rx->dst_left -= (size_t)n;
	} else if (rx->drain_left) {
		n = rx_read(c, c->mod->scratch,
			    rx->drain_left > TCP_SCRATCH_LEN ? TCP_SCRATCH_LEN :
							       rx->drain_left);
		if (n <= 0)
			return false;
		rx->drain_left -= (size_t)n;
	}
	if (!c->failed && rx->payload && !rx->dst_left && !rx->drain_left)
		finish_frame(c);
	return true;
}

void rmca_tcp_rx(struct rmca_conn *c)
{
	for (int budget = TCP_RX_BUDGET; budget > 0 && c->fd >= 0; budget--) {
		if (c->failed) {
			rmca_tcp_discard(c);
			return;
		}
		if (!rx_step(c))
			return;
	}
}
