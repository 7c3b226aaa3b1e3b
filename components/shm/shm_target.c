/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What arrives in the rings: the peer's answers to our requests, and the
 * peer's requests, served here by this process's core. Every remote access
 * is checked against the key table before a byte moves; data moves by
 * memcpy from the ring or by cross-memory attach between the two address
 * spaces, never through a mapping of the target's memory in the initiator.
 * Requests are answered in the order they arrive, so an answer always
 * matches the head of the initiator's in-flight queue.
 */
#define _GNU_SOURCE /* process_vm_readv */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include <rmca/atomic_ops.h>
#include "shm.h"

static void protocol_error(struct shm_conn *c, const char *why)
{
	shm_log(c->mod, RMCA_LOG_ERROR, "closing connection to pid %d: %s",
		(int)c->peer_pid, why);
	rmca_shm_conn_fail(c, RMCA_ERR_PROTOCOL);
}

/* Copy between our buffer and the peer's, as much as len; 0 or a status. */
static int cma(struct shm_conn *c, bool to_peer, char *local, uint64_t remote,
	       size_t len)
{
	while (len) {
		struct iovec l = {.iov_base = local, .iov_len = len};
		struct iovec r = {.iov_base = (void *)(uintptr_t)remote,
				  .iov_len = len};
		ssize_t n = to_peer ? process_vm_writev(c->peer_pid, &l, 1, &r,
							1, 0)
				    : process_vm_readv(c->peer_pid, &l, 1, &r,
						       1, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 && errno == ESRCH ? RMCA_ERR_CONNECTION
						       : RMCA_ERR_PROTOCOL;
		local += n;
		remote += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

/* Answer the request being served: with data (a get's, an atomic's old
 * value) or an error. An error answer ends the connection (as a verbs QP's
 * would), once the answer is visible to the peer. A request that succeeds
 * with nothing to return is answered by the head passing it. */
static void respond(struct shm_conn *c, int status, uint64_t operand,
		    const void *data, size_t len)
{
	uint32_t nslots = shm_resp_slots(status ? 0 : len);
	struct shm_resp *s = rmca_shm_resp_slot(&c->r, nslots);

	if (!s) {
		protocol_error(c, "more requests than answer slots");
		return;
	}
	*s = (struct shm_resp){
		.id = c->rx_pos,
		.status = status,
		.len = status ? 0 : (uint32_t)len,
		.operand = status ? 0 : operand,
	};
	if (!status && len)
		rmca_shm_resp_put_data(&c->r, data, len);
	rmca_shm_resp_commit(&c->r, nslots);
	if (status) {
		shm_log(c->mod, RMCA_LOG_INFO,
			"refused a request of pid %d: %s", (int)c->peer_pid,
			status == RMCA_ERR_TRUNCATED ? "receive too small"
			: status == RMCA_ERR_REMOTE_ACCESS
				? "remote access denied"
				: "cannot copy");
		rmca_shm_conn_fail(c, status);
	}
}

/* Data of a SEND or PUT: from the ring, or pulled from the initiator. */
static int fetch(struct shm_conn *c, const struct shm_req *h, const uint8_t *pl,
		 char *dst, size_t len)
{
	if (h->flags & SHM_RF_INLINE) {
		memcpy(dst, pl, len);
		return 0;
	}
	return cma(c, false, dst, h->laddr, len);
}

/* A message, or one piece of it (SHM_RF_MORE: more follow): into the
 * oldest receive, which completes with the last piece. */
static void on_send(struct shm_conn *c, const struct shm_req *h,
		    const uint8_t *pl)
{
	struct shm_op *r = rmca_list_first(&c->recvs, struct shm_op, link);
	bool more = h->flags & SHM_RF_MORE;
	uint64_t revoked = 0, off = c->rx_off, total;
	size_t n = 0;
	int st = 0;

	if (!r) {
		protocol_error(c, "message without a receive");
		return;
	}
	/* Its pieces add up to its length: one past 2^64 bytes would wrap
	 * to a total any receive holds, and end it RMCA_OK short. */
	if (h->len > UINT64_MAX - off) {
		protocol_error(c, "message longer than 2^64 bytes");
		return;
	}
	/* What does not fit is not copied: the end says TRUNCATED. */
	if (off < r->len)
		n = h->len > r->len - off ? r->len - (size_t)off
					  : (size_t)h->len;
	if (n)
		st = fetch(c, h, pl, r->buf + off, n);
	if (st == RMCA_ERR_CONNECTION) {
		rmca_shm_conn_fail(c, st);
		return;
	}
	if (more && !st) {
		c->rx_off = off + h->len;
		return;
	}
	c->rx_off = 0;
	total = off + h->len;
	if (!st && total > r->len)
		st = RMCA_ERR_TRUNCATED;
	/* The key is dead before the receive is reported. */
	if (h->flags & SHM_RF_INV)
		revoked = rmca_shm_revoke_inv(c, h->rkey);
	rmca_shm_op_done(c, r, st, total > r->len ? r->len : (size_t)total,
			 revoked);
	if (st)
		respond(c, st, 0, NULL, 0);
}

static void on_put(struct shm_conn *c, const struct shm_req *h,
		   const uint8_t *pl)
{
	char *p = NULL;
	int st;

	st = rmca_shm_access(c, h->rkey, h->raddr, h->len,
			     RMCA_ACCESS_REMOTE_WRITE, &p);
	if (!st)
		st = fetch(c, h, pl, p, (size_t)h->len);
	if (st == RMCA_ERR_CONNECTION)
		rmca_shm_conn_fail(c, st);
	else if (st)
		respond(c, st, 0, NULL, 0);
}

static void on_get(struct shm_conn *c, const struct shm_req *h)
{
	char *p = NULL;
	int st;

	st = rmca_shm_access(c, h->rkey, h->raddr, h->len,
			     RMCA_ACCESS_REMOTE_READ, &p);
	if (!st && ((h->flags & SHM_RF_INLINE) || h->len <= SHM_RESP_INLINE)) {
		respond(c, 0, 0, p, (size_t)h->len);
		return;
	}
	if (!st)
		st = cma(c, true, p, h->laddr, (size_t)h->len);
	if (st == RMCA_ERR_CONNECTION)
		rmca_shm_conn_fail(c, st);
	else if (st)
		respond(c, st, 0, NULL, 0);
}

static void on_atomic(struct shm_conn *c, const struct shm_req *h,
		      const uint8_t *pl)
{
	struct rmca_atomic a = {
		.kind = (enum rmca_atomic_kind)h->akind,
		.raddr = h->raddr,
		.rkey = h->rkey,
		.operand = h->operand,
		.compare = h->compare,
	};
	uint64_t masks[2];
	char *p = NULL;
	int st;

	if (h->akind > RMCA_ATOMIC_MASKED_CSWAP) {
		protocol_error(c, "unknown atomic");
		return;
	}
	memcpy(masks, pl, sizeof(masks));
	if (a.kind == RMCA_ATOMIC_MASKED_FADD)
		a.field_boundary = masks[0];
	else
		a.compare_mask = masks[0];
	a.swap_mask = masks[1];
	st = rmca_shm_access(c, h->rkey, h->raddr, 8, RMCA_ACCESS_REMOTE_ATOMIC,
			     &p);
	respond(c, st, st ? 0 : rmca_atomic_cpu((uint64_t *)(void *)p, &a),
		NULL, 0);
}

/* One request, its header already copied out of the ring and its size
 * (pl_len bytes from pl, where its type's payload starts) checked against
 * the ring. */
static void serve(struct shm_conn *c, const struct shm_req *h,
		  const uint8_t *pl, size_t pl_len)
{
	bool inl = h->flags & SHM_RF_INLINE;
	unsigned f = h->flags;

	if (h->zero[0] || h->zero[1] || h->zero[2] ||
	    (f & ~(SHM_RF_INLINE | SHM_RF_INV | SHM_RF_MORE)) ||
	    (inl && h->type != SHM_R_GET && h->len > pl_len) ||
	    ((f & (SHM_RF_INV | SHM_RF_MORE)) && h->type != SHM_R_SEND) ||
	    ((f & SHM_RF_MORE) && (!inl || (f & SHM_RF_INV))) ||
	    (inl && h->type == SHM_R_GET && h->len > SHM_GET_PIECE)) {
		protocol_error(c, "malformed request");
		return;
	}
	/* Without cross-memory attach the data must be in the rings. */
	if (!c->cma && !inl && h->len &&
	    (h->type == SHM_R_SEND || h->type == SHM_R_PUT ||
	     (h->type == SHM_R_GET && h->len > SHM_RESP_INLINE))) {
		protocol_error(c, "data outside the rings without "
				  "cross-memory attach");
		return;
	}
	switch (h->type) {
	case SHM_R_PAD:
		return;
	case SHM_R_SEND:
		on_send(c, h, pl);
		return;
	case SHM_R_PUT:
		on_put(c, h, pl);
		return;
	case SHM_R_GET:
		on_get(c, h);
		return;
	case SHM_R_ATOMIC:
		if (pl_len < 16 || inl)
			protocol_error(c, "malformed request");
		else
			on_atomic(c, h, pl);
		return;
	default:
		protocol_error(c, "unknown request");
		return;
	}
}

/* The oldest request in flight, or NULL. */
static struct shm_flight *in_flight(struct shm_conn *c)
{
	return c->resps_seen == c->reqs_pushed
		       ? NULL
		       : &c->fifo[c->resps_seen % SHM_RESP_SLOTS];
}

/* The oldest request in flight has its answer (st, and a get's data at
 * answer slot at when get_data): its op advances, and completes with its
 * last piece. */
static void answered(struct shm_conn *c, struct shm_flight *f, int st,
		     uint64_t operand, uint64_t at, bool get_data)
{
	struct shm_op *op = f->op;
	size_t piece = rmca_shm_piece(op, op->done);

	f->op = NULL;
	c->resps_seen++;
	c->activity++;
	if (st) {
		rmca_shm_op_done(c, op, st, 0, 0);
		rmca_shm_conn_fail(c, st);
		return;
	}
	if (get_data && piece)
		rmca_shm_resp_get_data(&c->r, at, op->buf + op->done, piece);
	op->done += piece;
	if (op->done < op->len)
		return; /* more pieces to come */
	if (op->kind == SHM_OP_ATOMIC)
		*op->result = operand;
	rmca_shm_op_done(c, op, RMCA_OK, 0, 0);
}

/* The answer s, whose header is at slot index at, to the oldest request in
 * flight that the head has not answered already. */
static void on_resp(struct shm_conn *c, const struct shm_resp *s, uint64_t at)
{
	struct shm_flight *f;
	struct shm_op *op;
	int st = s->status;
	bool get_inline;
	size_t piece;

	/* Those before it were served, without an answer. */
	while ((f = in_flight(c)) && f->pos != s->id && !f->nslots)
		answered(c, f, 0, 0, 0, false);
	if (!f || f->pos != s->id || c->failed) {
		if (!c->failed)
			protocol_error(c, "answer to no outstanding request");
		return;
	}
	op = f->op;
	piece = rmca_shm_piece(op, op->done);
	get_inline = op->kind == SHM_OP_GET &&
		     (op->pieced || op->len <= SHM_RESP_INLINE);
	if ((st && st != RMCA_ERR_REMOTE_ACCESS && st != RMCA_ERR_PROTOCOL &&
	     st != RMCA_ERR_TRUNCATED) ||
	    (st == RMCA_ERR_TRUNCATED && op->kind != SHM_OP_SEND) ||
	    (st == RMCA_ERR_REMOTE_ACCESS && op->kind == SHM_OP_SEND) ||
	    (!st && !f->nslots) ||
	    (!st && s->len != (get_inline ? piece : 0)) ||
	    (!st && op->kind != SHM_OP_ATOMIC && s->operand)) {
		protocol_error(c, "answer does not fit its request");
		return;
	}
	answered(c, f, st, s->operand, at, get_inline);
}

/* What the peer's core did with our requests: the answers it wrote, then
 * every request its head has passed, which it served without an answer.
 * The head is read first: whatever it answered before it moved the head
 * is then in the response ring too. */
static void rx_resps(struct shm_conn *c)
{
	struct shm_rings *r = &c->r;
	uint64_t head = shm_load(&r->req_out->head);
	uint64_t tail = shm_load(&r->resp_in->tail);
	struct shm_flight *f;

	if (head - r->req_head_seen > r->req_tail - r->req_head_seen) {
		protocol_error(c, "request ring head out of range");
		return;
	}
	r->req_head_seen = head;
	while (!c->failed && r->resp_in_head != tail) {
		uint64_t at = r->resp_in_head;
		uint32_t nslots;
		struct shm_resp s;

		if (tail - at > SHM_RESP_SLOTS) {
			protocol_error(c, "answer ring index out of range");
			return;
		}
		memcpy(&s,
		       r->resp_in_buf + (at % SHM_RESP_SLOTS) * SHM_RESP_SLOT,
		       sizeof(s));
		nslots = shm_resp_slots(s.status ? 0 : s.len);
		if (nslots > tail - at) {
			protocol_error(c, "answer overruns the ring");
			return;
		}
		on_resp(c, &s, at);
		r->resp_in_head += nslots;
		c->slots_seen += nslots;
		shm_store(&r->resp_in->head, r->resp_in_head);
	}
	while (!c->failed && (f = in_flight(c)) && f->end <= head) {
		if (f->nslots) {
			protocol_error(c, "request passed without its answer");
			return;
		}
		answered(c, f, 0, 0, 0, false);
	}
}

/*
 * One lap of the ring per pass at most. An honest peer cannot push more
 * before it sees our head, which moves only at the end of the pass; a peer
 * that writes stamps right behind the consumer, heedless of the head,
 * would otherwise keep this loop (and the caller's progress call, and
 * every other connection) going for as long as it likes. What it wrote
 * past the lap is served by the next pass.
 */
static void rx_reqs(struct shm_conn *c)
{
	struct shm_rings *r = &c->r;
	uint64_t start = r->req_in_head;
	bool served = false;
	const uint8_t *e;
	struct shm_req h;

	while (!c->failed && r->req_in_head - start < SHM_REQ_BYTES &&
	       (e = rmca_shm_req_peek(r, &h))) {
		size_t pos = (size_t)(r->req_in_head % SHM_REQ_BYTES);
		size_t bytes = (size_t)h.units * SHM_UNIT;
		size_t off = shm_pl_off(h.type);
		uint64_t credit = (uint32_t)h.credit - (uint32_t)c->peer_recvs;

		if (!h.units || bytes > SHM_REQ_BYTES - pos) {
			protocol_error(c, "request overruns the ring");
			return;
		}
		/* The receives it had posted when it pushed this: credit
		 * without reading its line. */
		if (credit && credit < 1u << 31)
			c->peer_recvs += credit;
		c->rx_pos = r->req_in_head;
		serve(c, &h, e + off, bytes > off ? bytes - off : 0);
		rmca_shm_req_consume(r, h.units);
		c->activity++;
		served = true;
	}
	if (served) {
		/* Room for the peer, and answers for it: one wakeup. */
		shm_store(&r->req_in->head, r->req_in_head);
		rmca_shm_wake_peer(c);
	}
}

void rmca_shm_rx_answers(struct shm_conn *c)
{
	rx_resps(c);
}

bool rmca_shm_rx(struct shm_conn *c)
{
	rx_resps(c);
	rx_reqs(c);
	return !c->failed;
}
