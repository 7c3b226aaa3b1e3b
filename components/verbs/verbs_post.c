/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Posting work requests, in submission order.
 *
 * Flow control. On ib a send whose peer has no receive posted is retried by
 * the device for ever (RNR retry 7). iWARP has no RNR: a send without a
 * receive breaks the connection. So on iwarp each side keeps a counter of the
 * receives the user posted in its control region, and the sender reads it
 * with an RDMA READ (which needs nothing from the peer's CPU) before it sends
 * past what it last saw. While a send waits, everything submitted after it
 * waits behind it, so the order of operations stays the order of calls; the
 * counter is re-read on a timer (1 ms doubling to 64 ms) until the peer has
 * posted. The flush READ reads the same counter and refreshes the credits
 * too. Receives never wait.
 *
 * An iWARP send completes locally when its data has left; the peer may still
 * refuse it (its receive is too small). So on iwarp the completion of a send
 * is held until a READ posted after it (the next credit or flush READ) comes
 * back: RDMAP answers a READ only after the messages before it were placed,
 * and a refused message breaks the stream, which flushes the READ.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "verbs.h"

/*
 * Op memory is never given back to malloc while the module lives: a device
 * may name an op in a completion after the op is done (siw flushes a READ
 * that is queued but not yet sent twice, from the ORQ and as the WQE in
 * progress: siw_sq_flush()). The wr_id carries a generation besides the
 * address, so such a completion is recognised and dropped (verbs_cq.c).
 */
#define WR_ID_ADDR_BITS 48

struct rmca_verbs_op *rmca_verbs_op_new(struct rmca_conn *c,
					enum rmca_verbs_op_kind kind, void *req)
{
	struct rmca_verbs_module *vm = c->mod;
	struct rmca_verbs_op *op = vm->op_pool;
	uint16_t gen = 0;

	if (op) {
		vm->op_pool = op->next;
		gen = op->gen + 1;
	} else {
		op = malloc(sizeof(*op));
		if (!op)
			return NULL;
		if ((uintptr_t)op >> WR_ID_ADDR_BITS) {
			free(op); /* no room for the generation */
			return NULL;
		}
	}
	memset(op, 0, sizeof(*op));
	op->mod = vm;
	op->gen = gen;
	op->conn = c;
	op->kind = kind;
	op->req = req;
	return op;
}

void rmca_verbs_op_free(struct rmca_verbs_op *op)
{
	struct rmca_verbs_module *vm = op->mod;

	op->posted = false;
	op->conn = NULL;
	op->next = vm->op_pool;
	vm->op_pool = op;
}

uint64_t rmca_verbs_wr_id(const struct rmca_verbs_op *op)
{
	return (uintptr_t)op | (uint64_t)op->gen << WR_ID_ADDR_BITS;
}

/* The op a completion names, or NULL if it names none now. */
struct rmca_verbs_op *rmca_verbs_op_of(uint64_t wr_id)
{
	struct rmca_verbs_op *op = (void *)(uintptr_t)(wr_id &
		((1ull << WR_ID_ADDR_BITS) - 1));

	if (!op->posted || op->gen != wr_id >> WR_ID_ADDR_BITS)
		return NULL;
	return op;
}

void rmca_verbs_op_pool_fini(struct rmca_verbs_module *vm)
{
	struct rmca_verbs_op *op;

	while ((op = vm->op_pool)) {
		vm->op_pool = op->next;
		free(op);
	}
}

static bool is_msg(const struct rmca_verbs_op *op)
{
	return op->kind == RMCA_VOP_SEND || op->kind == RMCA_VOP_SEND_INV;
}

static void link_out(struct rmca_conn *c, struct rmca_verbs_op *op)
{
	op->prev = NULL;
	op->next = c->outstanding;
	if (c->outstanding)
		c->outstanding->prev = op;
	c->outstanding = op;
	c->nout++;
	op->posted = true;
}

static int post_recv(struct rmca_conn *c, struct rmca_verbs_op *op)
{
	struct ibv_recv_wr wr = { .wr_id = rmca_verbs_wr_id(op),
				  .sg_list = &op->sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	if (c->rq_used >= c->rq_size)
		return RMCA_ERR_AGAIN;
	if (ibv_post_recv(c->qp, &wr, &bad))
		return RMCA_ERR_AGAIN;
	c->rq_used++;
	link_out(c, op);
	if (op->kind == RMCA_VOP_RECV)
		__atomic_store_n(&c->ctl->posted, c->ctl->posted + 1,
				 __ATOMIC_RELEASE);
	return 0;
}

static void fill_send(struct rmca_conn *c, struct rmca_verbs_op *op,
		      struct ibv_send_wr *wr)
{
	wr->wr_id = rmca_verbs_wr_id(op);
	wr->send_flags = IBV_SEND_SIGNALED;
	wr->sg_list = &op->sge;
	wr->num_sge = op->sge.length ? 1 : 0;
	switch (op->kind) {
	case RMCA_VOP_SEND:
	case RMCA_VOP_HELLO_SEND:
		wr->opcode = IBV_WR_SEND;
		break;
	case RMCA_VOP_SEND_INV:
		wr->opcode = IBV_WR_SEND_WITH_INV;
		wr->invalidate_rkey = op->rkey;
		break;
	case RMCA_VOP_PUT:
	case RMCA_VOP_GET:
		wr->opcode = op->kind == RMCA_VOP_PUT ? IBV_WR_RDMA_WRITE :
							IBV_WR_RDMA_READ;
		wr->wr.rdma.remote_addr = op->raddr;
		wr->wr.rdma.rkey = op->rkey;
		break;
	case RMCA_VOP_ATOMIC:
		wr->opcode = op->cswap ? IBV_WR_ATOMIC_CMP_AND_SWP :
					 IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr->wr.atomic.remote_addr = op->raddr;
		wr->wr.atomic.rkey = op->rkey;
		wr->wr.atomic.compare_add = op->cswap ? op->compare :
							op->operand;
		wr->wr.atomic.swap = op->operand;
		break;
	case RMCA_VOP_FLUSH:
	case RMCA_VOP_CREDIT:
	case RMCA_VOP_HELLO_READ:
		/* an 8-byte READ of the peer's credit counter: a real
		 * region, which iWARP checks even for 0 bytes */
		op->sge.addr = (uintptr_t)&c->ctl->sink;
		op->sge.length = sizeof(c->ctl->sink);
		op->sge.lkey = c->ctl_sink->lkey;
		wr->num_sge = 1;
		wr->opcode = IBV_WR_RDMA_READ;
		wr->wr.rdma.remote_addr = c->peer_ctl_addr;
		wr->wr.rdma.rkey = c->peer_ctl_rkey;
		break;
	case RMCA_VOP_BIND:
		wr->opcode = IBV_WR_BIND_MW;
		wr->num_sge = 0;
		wr->sg_list = NULL;
		wr->bind_mw.mw = op->mw->mw;
		wr->bind_mw.rkey = op->mw->rkey;
		wr->bind_mw.bind_info.mr = op->mr->mr;
		wr->bind_mw.bind_info.addr = (uintptr_t)op->mr->addr;
		wr->bind_mw.bind_info.length = op->mr->len;
		wr->bind_mw.bind_info.mw_access_flags = (unsigned int)op->operand;
		break;
	default:
		break;
	}
}

/* Post op now. 0, or an error and nothing was posted. */
int rmca_verbs_post(struct rmca_conn *c, struct rmca_verbs_op *op)
{
	struct ibv_send_wr wr = { 0 }, *bad;
	int ret;

	if (op->kind == RMCA_VOP_RECV || op->kind == RMCA_VOP_HELLO_RECV)
		return post_recv(c, op);
	if (c->sq_used >= c->sq_size)
		return RMCA_ERR_AGAIN;
	fill_send(c, op, &wr);
	/* non-zero is failure: siw returns negative errnos */
	ret = ibv_post_send(c->qp, &wr, &bad);
	if (ret)
		return ret == ENOMEM || ret == -ENOMEM ? RMCA_ERR_AGAIN :
							 RMCA_ERR_INVALID;
	c->sq_used++;
	link_out(c, op);
	if (is_msg(op)) {
		c->sends_posted++;
		op->seq = ++c->send_seq;
	} else if (op->kind == RMCA_VOP_FLUSH || op->kind == RMCA_VOP_CREDIT) {
		op->seq = c->send_seq; /* the sends this READ confirms */
	}
	if (op->kind == RMCA_VOP_FLUSH) {
		c->mod->flushes++;
		rmca_verbs_detail_update(c->mod);
		c->mod->m.core->ops->log(c->mod->m.core, RMCA_LOG_DEBUG,
					 "%s: flush READ posted (%lu so far)",
					 c->mod->m.device, c->mod->flushes);
	}
	return 0;
}

static bool lacks_credit(struct rmca_conn *c, struct rmca_verbs_op *op)
{
	return c->mod->iwarp && is_msg(op) && c->sends_posted >= c->peer_posted;
}

long long rmca_verbs_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void arm_timer(struct rmca_verbs_module *vm)
{
	struct itimerspec its = { 0 };

	if (vm->timer_fd < 0 || vm->timer_armed)
		return;
	its.it_value.tv_sec = vm->timer_ms / 1000;
	its.it_value.tv_nsec = (vm->timer_ms % 1000) * 1000000L + 1000;
	if (!timerfd_settime(vm->timer_fd, 0, &its, NULL))
		vm->timer_armed = true;
	vm->timer_ms = vm->timer_ms < 1 ? 1 : vm->timer_ms;
	if (vm->timer_ms < 64)
		vm->timer_ms *= 2;
}

void rmca_verbs_credit_read(struct rmca_conn *c)
{
	struct rmca_verbs_op *op;

	if (c->credit_inflight || c->state != RMCA_VCONN_UP)
		return;
	op = rmca_verbs_op_new(c, RMCA_VOP_CREDIT, NULL);
	if (!op)
		return;
	if (rmca_verbs_post(c, op)) {
		/* the SQ is full: a completion will retry */
		rmca_verbs_op_free(op);
		return;
	}
	c->credit_inflight = true;
}

void rmca_verbs_timer_event(void *arg, uint32_t events)
{
	struct rmca_verbs_module *vm = arg;
	struct rmca_conn *c;
	bool again = false;
	uint64_t n;

	if (read(vm->timer_fd, &n, sizeof(n)) < 0)
		return;
	vm->timer_armed = false;
	for (c = vm->conns; c; c = c->next) {
		if (c->state == RMCA_VCONN_FAILED && c->nout) {
			/* see verbs_conn.c */
			if (rmca_verbs_now_ms() < c->abandon_ms) {
				again = true;
				continue;
			}
			rmca_verbs_abandon(c, 0);
			rmca_verbs_pending_run(c);
			continue;
		}
		if (!c->waiting)
			continue;
		if (c->state == RMCA_VCONN_FAILED)
			rmca_verbs_pending_run(c);
		else
			rmca_verbs_credit_read(c);
	}
	if (again)
		arm_timer(vm);
}

void rmca_verbs_timer_arm(struct rmca_verbs_module *vm)
{
	arm_timer(vm);
}

static void unlink_head(struct rmca_conn *c)
{
	struct rmca_verbs_op *op = c->pending;

	c->pending = op->next;
	if (!c->pending)
		c->pending_tail = NULL;
	op->next = NULL;
}

/* Post what waits, in order; on a failed connection complete it. */
void rmca_verbs_pending_run(struct rmca_conn *c)
{
	struct rmca_verbs_op *op;
	int ret;

	c->waiting = false;
	if (c->state == RMCA_VCONN_FAILED) {
		if (c->nout)
			return; /* after the ops posted before them */
		while ((op = c->pending)) {
			unlink_head(c);
			rmca_verbs_op_done(op, op->status ? op->status :
						RMCA_ERR_CONNECTION, 0, 0);
		}
		return;
	}
	while ((op = c->pending)) {
		if (lacks_credit(c, op)) {
			c->waiting = true;
			if (c->credit_inflight)
				return;
			arm_timer(c->mod);
			return;
		}
		unlink_head(c);
		ret = rmca_verbs_post(c, op);
		if (ret == RMCA_ERR_AGAIN) {
			/* back at the head: the next completion frees a slot */
			op->next = c->pending;
			c->pending = op;
			if (!c->pending_tail)
				c->pending_tail = op;
			return;
		}
		if (ret)
			rmca_verbs_op_done(op, ret, 0, 0);
	}
}

static void append(struct rmca_conn *c, struct rmca_verbs_op *op)
{
	op->next = NULL;
	if (c->pending_tail)
		c->pending_tail->next = op;
	else
		c->pending = op;
	c->pending_tail = op;
}

/* Submit a user op: post it, queue it behind others, or complete it. */
int rmca_verbs_submit(struct rmca_conn *c, struct rmca_verbs_op *op)
{
	int ret;

	if (c->state == RMCA_VCONN_FAILED) {
		/* completed from the timer, not inside the caller's post:
		 * the core may not be ready for its completion yet */
		append(c, op);
		c->waiting = true;
		c->mod->timer_ms = 0;
		arm_timer(c->mod);
		return 0;
	}
	if (op->kind == RMCA_VOP_RECV) {
		ret = rmca_verbs_post(c, op);
		if (ret)
			rmca_verbs_op_free(op);
		return ret;
	}
	if (c->pending || lacks_credit(c, op)) {
		append(c, op);
		if (lacks_credit(c, c->pending)) {
			c->waiting = true;
			rmca_verbs_credit_read(c);
		}
		return 0;
	}
	ret = rmca_verbs_post(c, op);
	if (ret)
		rmca_verbs_op_free(op);
	return ret;
}

/* iwarp: keep a locally completed send until a READ confirms it. */
void rmca_verbs_hold(struct rmca_conn *c, struct rmca_verbs_op *op)
{
	/* No READ will come: the connection failed before this completion
	 * was read (a peer's disconnect is dispatched before the CQ is
	 * polled), and what it held then was completed with the failure. */
	if (c->state == RMCA_VCONN_FAILED) {
		rmca_verbs_op_done(op, c->fail_status, 0, 0);
		return;
	}
	op->next = NULL;
	if (c->held_tail)
		c->held_tail->next = op;
	else
		c->held = op;
	c->held_tail = op;
	if (!c->credit_inflight)
		rmca_verbs_credit_read(c);
	else
		c->credit_wanted = true; /* once the READ in flight is back */
}

/* Complete the held sends the last READ covers (status 0), or all of them
 * with status. */
void rmca_verbs_release_held(struct rmca_conn *c, int status)
{
	struct rmca_verbs_op *op;

	while ((op = c->held) && (status || op->seq <= c->confirmed)) {
		c->held = op->next;
		if (!c->held)
			c->held_tail = NULL;
		rmca_verbs_op_done(op, status, 0, 0);
	}
	if (c->held && !c->credit_inflight)
		rmca_verbs_credit_read(c);
}
