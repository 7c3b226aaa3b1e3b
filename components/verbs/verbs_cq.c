/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completions. Every work request carries its op; the first error on a
 * connection fails it (the QP is in error, everything else on it comes back
 * flushed) and each op completes once with the most precise status known.
 */
#include <endian.h>
#include <stdlib.h>

#include "verbs.h"

static bool is_send_side(enum rmca_verbs_op_kind k)
{
	return k != RMCA_VOP_RECV && k != RMCA_VOP_HELLO_RECV;
}

int rmca_verbs_wc_status(const struct ibv_wc *wc, struct rmca_verbs_op *op)
{
	struct rmca_verbs_conn *c = op->conn;
	bool msg = op->kind == RMCA_VOP_SEND || op->kind == RMCA_VOP_SEND_INV;

	switch (wc->status) {
	case IBV_WC_SUCCESS:
		return 0;
	case IBV_WC_LOC_LEN_ERR:
		/* a receive too small for the message */
		return op->kind == RMCA_VOP_RECV ? RMCA_ERR_TRUNCATED :
						   RMCA_ERR_INVALID;
	case IBV_WC_REM_INV_REQ_ERR:
		/* the peer's receive was too small (rxe reports it so on
		 * the receive too), or it refused the access */
		return msg || op->kind == RMCA_VOP_RECV ?
			       RMCA_ERR_TRUNCATED :
			       RMCA_ERR_REMOTE_ACCESS;
	case IBV_WC_REM_ACCESS_ERR:
		return RMCA_ERR_REMOTE_ACCESS;
	case IBV_WC_LOC_PROT_ERR:
	case IBV_WC_LOC_ACCESS_ERR:
		/* iWARP reports a peer's refusal of a READ this way too */
		return c->remote_err ? c->remote_err : RMCA_ERR_REMOTE_ACCESS;
	case IBV_WC_WR_FLUSH_ERR:
		/* A flush READ stands for the writes before it: if the
		 * device told us the peer refused an access, that is the
		 * answer for them (iWARP learns of it only here). */
		if (op->kind == RMCA_VOP_FLUSH && c->remote_err)
			return c->remote_err;
		return RMCA_ERR_CONNECTION;
	case IBV_WC_LOC_QP_OP_ERR:
		/* rxe's answer on a receive too small for the message */
		return op->kind == RMCA_VOP_RECV ? RMCA_ERR_TRUNCATED :
						   RMCA_ERR_CONNECTION;
	case IBV_WC_REM_OP_ERR:
		return msg ? RMCA_ERR_TRUNCATED : RMCA_ERR_PROTOCOL;
	default:
		return RMCA_ERR_CONNECTION;
	}
}

void rmca_verbs_op_done(struct rmca_verbs_op *op, int status, size_t len,
			uint64_t revoked)
{
	if (op->kind <= RMCA_VOP_FLUSH && op->req) {
		const struct rmca_core *core = op->conn ?
			op->conn->mod->m.core : NULL;

		if (core)
			core->ops->complete(core, op->req, status, len,
					    revoked);
	}
	rmca_verbs_op_free(op);
}

static void credit_update(struct rmca_verbs_conn *c)
{
	uint64_t v = __atomic_load_n(&c->ctl->sink[0], __ATOMIC_ACQUIRE);

	if (v > c->peer_posted) {
		c->peer_posted = v;
		c->mod->timer_ms = 1;
	}
}

static void on_success(struct rmca_verbs_conn *c, struct rmca_verbs_op *op,
		       const struct ibv_wc *wc, size_t *len, uint64_t *revoked)
{
	switch (op->kind) {
	case RMCA_VOP_RECV:
		*len = wc->byte_len;
		if (wc->wc_flags & IBV_WC_WITH_IMM)
			rmca_verbs_credit_imm(c, be32toh(wc->imm_data));
		/* rxe does not set IBV_WC_WITH_INV but does fill in
		 * invalidated_rkey; accept either, but only a key we bound
		 * for this connection counts. invalidated_rkey shares its
		 * word with imm_data: a message with an immediate (the
		 * peer's count of receives, on ib) invalidated nothing, and
		 * its count, read as a key, could name a window of ours. */
		if ((wc->wc_flags & IBV_WC_WITH_INV) ||
		    (!(wc->wc_flags & IBV_WC_WITH_IMM) && wc->invalidated_rkey))
			*revoked = rmca_verbs_revoke(c, wc->invalidated_rkey);
		break;
	case RMCA_VOP_HELLO_RECV:
		c->hello_seen = true;
		if (c->state == RMCA_VCONN_WAIT_HELLO)
			c->state = RMCA_VCONN_UP;
		break;
	case RMCA_VOP_HELLO_READ:
		/* RDMAP answers a READ only after the messages before it
		 * were placed: the peer has the hello */
		credit_update(c);
		if (c->state == RMCA_VCONN_CONFIRM)
			c->state = RMCA_VCONN_UP;
		break;
	case RMCA_VOP_CREDIT:
	case RMCA_VOP_FLUSH:
		credit_update(c);
		/* sends waited for this READ, or a READ went early last time:
		 * the next goes when half of what it granted is left */
		if (op->kind == RMCA_VOP_CREDIT &&
		    (c->waiting || c->credit_low))
			c->credit_low = (c->peer_posted - c->sends_posted) / 2;
		if (op->seq > c->confirmed)
			c->confirmed = op->seq;
		rmca_verbs_release_held(c, 0);
		break;
	case RMCA_VOP_BIND:
		if (op->mw) /* NULL: the window went first */
			op->mw->bound = true;
		break;
	default:
		break;
	}
}

/* op's WR is done (wc says how); it leaves the outstanding list. */
static void finish(struct rmca_verbs_module *vm, struct rmca_verbs_conn *c,
		   struct rmca_verbs_op *op, const struct ibv_wc *wc)
{
	size_t len = 0;
	uint64_t revoked = 0;
	int status;

	op->posted = false; /* a second completion naming it is dropped */
	rmca_list_del(&op->link);
	c->nout--;
	if (op->signalled && is_send_side(op->kind) && c->sig_out &&
	    !--c->sig_out && c->unsig_owed)
		vm->close_due = true;
	if (!is_send_side(op->kind))
		c->rq_used--;
	if (op->kind == RMCA_VOP_CREDIT)
		c->credit_inflight = false;
	if (op->kind == RMCA_VOP_BIND && wc->status && op->mw)
		op->mw->bind_failed = true;
	if (op->kind == RMCA_VOP_DONE || op->canceled) {
		/* reported already (DONE), or to report as canceled */
		status = wc->status && op->kind == RMCA_VOP_DONE ?
				 rmca_verbs_wc_status(wc, op) :
				 0;
		if (!op->held)
			rmca_verbs_op_done(op, c->closing_status, 0, 0);
		if (status && c->state != RMCA_VCONN_FAILED)
			rmca_verbs_conn_fail(c, status);
		return;
	}
	status = wc->status ? rmca_verbs_wc_status(wc, op) : 0;
	if (wc->status)
		vm->m.core->ops->log(vm->m.core, RMCA_LOG_DEBUG,
				     "%s: op %d: %s -> %d", vm->m.device,
				     op->kind, ibv_wc_status_str(wc->status),
				     status);
	if (!status)
		on_success(c, op, wc, &len, &revoked);
	if (!status && op->kind == RMCA_VOP_RECV && c->hdr)
		status = rmca_verbs_taken(c, op, &len);
	/* a held send completes when confirmed, or with the connection's
	 * failure (rmca_verbs_release_held) */
	if (!op->held)
		rmca_verbs_op_done(op, status, len, revoked);
	if (status && c->state != RMCA_VCONN_FAILED)
		rmca_verbs_conn_fail(c, status);
	else if (status)
		rmca_verbs_release_held(c, c->fail_status);
}

/* Test-only (verbs_fault.c): completions stay on the CQ. Looked up only
 * in a process started with RMCATEST_FAIL set, so that polling costs
 * nothing more otherwise. */
static bool cq_unread(void)
{
	static int knobs = -1;

	if (knobs < 0)
		knobs = getenv("RMCATEST_FAIL") != NULL;
	return knobs && rmca_verbs_fault("verbs_cq_unread");
}

/* An unsignalled WR retired by a later completion: it succeeded. */
static void retired(struct rmca_verbs_conn *c, struct rmca_verbs_op *op)
{
	static const struct ibv_wc ok = { .status = IBV_WC_SUCCESS };

	finish(c->mod, c, op, &ok);
}

/*
 * A user receive that succeeded (a ping-pong's every reply): what finish
 * and on_success do for it, without the tests of the other kinds and
 * statuses, on the path from the message's arrival to the caller's
 * answer.
 */
static inline __attribute__((always_inline)) void
recv_ok(struct rmca_verbs_conn *c, struct rmca_verbs_op *op,
	const struct ibv_wc *wc)
{
	const struct rmca_core *core = c->mod->m.core;
	size_t len = wc->byte_len;
	uint64_t revoked = 0;
	int status = 0;

	op->posted = false; /* a second completion naming it is dropped */
	rmca_list_del(&op->link);
	c->nout--;
	c->rq_used--;
	if (wc->wc_flags & IBV_WC_WITH_IMM)
		rmca_verbs_credit_imm(c, be32toh(wc->imm_data));
	/* see on_success */
	if ((wc->wc_flags & IBV_WC_WITH_INV) ||
	    (!(wc->wc_flags & IBV_WC_WITH_IMM) && wc->invalidated_rkey))
		revoked = rmca_verbs_revoke(c, wc->invalidated_rkey);
	if (c->hdr)
		status = rmca_verbs_taken(c, op, &len);
	if (op->req)
		core->ops->complete(core, op->req, status, len, revoked);
	rmca_verbs_op_free(op);
	if (status && c->state != RMCA_VCONN_FAILED)
		rmca_verbs_conn_fail(c, status);
	else if (status)
		rmca_verbs_release_held(c, c->fail_status);
}

static inline __attribute__((always_inline)) void
one(struct rmca_verbs_module *vm, const struct ibv_wc *wc)
{
	struct rmca_verbs_op *op = rmca_verbs_op_of(wc->wr_id);
	struct rmca_verbs_conn *c;

	if (!op) {
		vm->m.core->ops->log(vm->m.core, RMCA_LOG_DEBUG,
				     "%s: completion (%s) of no op now, "
				     "dropped", vm->m.device,
				     ibv_wc_status_str(wc->status));
		return;
	}
	c = op->conn;
	if (!c) { /* canceled by a disconnect that could not wait */
		op->posted = false;
		rmca_list_del(&op->link);
		rmca_verbs_op_free(op);
		return;
	}
	if (op->kind == RMCA_VOP_RECV && !wc->status && !op->canceled) {
		recv_ok(c, op, wc);
	} else {
		if (is_send_side(op->kind))
			rmca_verbs_sq_retire(c, wc->wr_id, retired);
		finish(vm, c, op, wc);
	}
	c->kick = true; /* once the batch is read: chains post more at once */
}

/* What the batch's completions freed: post what waits, confirm what is
 * held, in one pass per connection. */
static void kick(struct rmca_verbs_module *vm)
{
	struct rmca_verbs_conn *c;

	for (c = vm->conns; c; c = c->next) {
		/* each call only when it has something to do: a
		 * ping-pong's every completion comes here */
		if (c->kick) {
			c->kick = false;
			if (c->held)
				rmca_verbs_confirm_soon(c);
			if (c->pending || c->state == RMCA_VCONN_FAILED)
				rmca_verbs_pending_run(c);
		}
		if (rmca_verbs_recv_due(c))
			rmca_verbs_recv_flush(c);
	}
	/* what is left waits for its batch to fill, for completions (which
	 * kick again), or for a full receive queue to drain */
	vm->recv_due = false;
}

/* Until the CQ is found empty, or a batch was short: a short batch took
 * all the CQ held when it was read, and a poll that would only say so
 * again costs a ping-pong's every pass the provider's lock and checks
 * (what came since is found by the next pass, and wakes a sleeper as
 * ever: the channel is armed or readable). */
static inline __attribute__((always_inline)) int
drain(struct rmca_verbs_module *vm)
{
	struct ibv_wc wc[16];
	int n = 16, i, total = 0;

	while (n == 16 && (n = ibv_poll_cq(vm->cq, 16, wc)) > 0) {
		/* a QP error event explains the flushed completions: read it
		 * first (a system call, so only when a completion failed) */
		for (i = 0; i < n; i++)
			if (wc[i].status != IBV_WC_SUCCESS) {
				rmca_verbs_async_drain(vm->dev);
				break;
			}
		for (i = 0; i < n; i++)
			one(vm, &wc[i]);
		total += n;
		kick(vm);
	}
	return total;
}

/*
 * The completion channel. An armed CQ queues one event on the channel at
 * its next completion, which makes the channel's fd, and so the wait fd,
 * readable. Taking that event (a read()) and arming the CQ again
 * (ibv_req_notify_cq, a system call on rxe and siw) after every completion
 * costs a caller that spins on rmca_poll two system calls per operation,
 * where reading the CQ itself (ibv_poll_cq) costs none: the CQ is read on
 * every pass anyway (rmca_verbs_progress). So the event is taken and the
 * CQ armed again (and read once more for what came before the arming)
 * only when somebody may sleep in the context's epoll set before the next
 * pass; until then the event stays unread, the channel's fd readable
 * (spuriously at times, which the contract allows) and nothing is lost:
 * the channel is always either armed or readable. Who may sleep:
 *  - the core, right before it sleeps itself (a blocking rmca_accept or
 *    rmca_connect: core op will_sleep), and this module in its loopback
 *    probe (self_wait): the CQ is armed at once;
 *  - the application, once rmca_wait_fd handed the set out (core op
 *    may_sleep): the CQ is armed once no completion came for idle_ns, so
 *    that one that spins on rmca_poll while completions keep coming is
 *    spared the arming, and one that sleeps while the module is busy
 *    returns at once and polls until then. The clock is read only every
 *    QUIET_CLOCK_EVERY quiet passes.
 * A context whose wait fd was never asked for, spinning on rmca_poll, thus
 * never takes an event nor arms its CQ after the first completion.
 */
#define QUIET_CLOCK_EVERY 16

static void rearm(struct rmca_verbs_module *vm)
{
	struct ibv_cq *cq;
	void *ctx;

	/* at most one event per arming, none if it is still on its way (it
	 * is then taken at the next idle time: the callback marks busy) */
	if (!ibv_get_cq_event(vm->chan, &cq, &ctx))
		ibv_ack_cq_events(cq, 1);
	ibv_req_notify_cq(vm->cq, 0);
	vm->cq_busy = false;
	vm->quiet_since = 0;
	vm->quiet_polls = 0;
}

static inline __attribute__((always_inline)) bool
idle(struct rmca_verbs_module *vm)
{
	long long now;

	if (vm->quiet_since && ++vm->quiet_polls < QUIET_CLOCK_EVERY)
		return false;
	vm->quiet_polls = 0;
	if (!vm->idle_ns)
		return true;
	now = rmca_now_ns();
	if (!vm->quiet_since) {
		vm->quiet_since = now;
		return false;
	}
	return now - vm->quiet_since >= vm->idle_ns;
}

/* The CQ was quiet this pass and its arming is used up: arm it now? A
 * core that does not say when it sleeps itself is taken to have a sleeper
 * at any time (armed once idle, as for an application that may sleep). */
static inline __attribute__((always_inline)) bool
arm_due(struct rmca_verbs_module *vm)
{
	unsigned s = rmca_verbs_sleepers(vm);

	if (vm->self_wait || (s & RMCA_SLEEPER_CORE))
		return true;
	if (!(s & RMCA_SLEEPER_APP))
		return false;
	return idle(vm);
}

/* The read after an arming (rare: out of line, drain's one copy inline
 * is the pass's). */
static __attribute__((noinline)) int drain_armed(struct rmca_verbs_module *vm)
{
	rearm(vm);
	return drain(vm);
}

/*
 * Inline into rmca_verbs_progress, with drain: the pass of a caller
 * spinning on rmca_poll goes from the core's call of the progress op to
 * the provider's poll_cq without a call of the module's own in between
 * (each cost a prologue and an epilogue saving six registers, per pass).
 */
static inline __attribute__((always_inline)) int
cq_poll(struct rmca_verbs_module *vm)
{
	int total;

	if (cq_unread())
		return 0;
	/* before this pass's completions: the sends a reply of the last
	 * pass confirmed */
	if (vm->release_due)
		rmca_verbs_release_due(vm);
	total = drain(vm);
	if (!total && vm->cq_busy && arm_due(vm))
		total = drain_armed(vm);
	/* unsignalled WRs no signalled one follows: the caller did not post
	 * another behind them and waits (or two more passes went by) */
	if (vm->close_due && (!total || ++vm->close_passes > 2)) {
		struct rmca_verbs_conn *c;

		vm->close_due = false;
		vm->close_passes = 0;
		for (c = vm->conns; c; c = c->next)
			rmca_verbs_sq_close(c);
	}
	if (vm->confirm_polled)
		rmca_verbs_confirm_poll(vm);
	if (total) {
		vm->cq_found = true;
		vm->cq_busy = true;
		vm->quiet_since = 0;
		vm->quiet_polls = 0;
	} else if (vm->recv_due) {
		kick(vm);
	}
	return total;
}

int rmca_verbs_cq_poll(struct rmca_verbs_module *vm)
{
	return cq_poll(vm);
}

/*
 * The module's progress op. Completions; rdma_cm events come through the
 * channel's callback (verbs_module.c, cm_cb). The CQ is read here with
 * ibv_poll_cq, in user space, on every pass, so the module says
 * RMCA_PROGRESS_POLLED once completions were found (here or by an fd
 * callback since the last pass, which reads the CQ first while the core
 * still looks at the fds on every pass): while the caller spins, the
 * core then looks at the fds once a millisecond instead of every pass, and
 * the completion channel's event (a read() and the re-arming
 * ibv_req_notify_cq, a system call each) is taken at most that often
 * instead of once per completion, and not at all while nobody may sleep
 * (above). The channel stays armed or readable meanwhile, so the wait
 * fd is readable whenever a completion waits: a caller that stops spinning
 * and sleeps on it is woken as before.
 */
int rmca_verbs_progress(struct rmca_module *m)
{
	struct rmca_verbs_module *vm = rmca_verbs_mod(m);
	int n;

	if (rmca_verbs_cm_due(vm))
		rmca_verbs_cm_tick(vm);
	n = cq_poll(vm);
	if (!vm->cq_found)
		return n;
	vm->cq_found = false;
	return n | RMCA_PROGRESS_POLLED;
}

/* The channel is readable: its event is taken once the module is idle. */
void rmca_verbs_cq_event(void *arg, uint32_t events)
{
	struct rmca_verbs_module *vm = arg;

	vm->cq_busy = true;
	rmca_verbs_cq_poll(vm);
}
