/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A connection's own resources: its control memory (credits and the flush
 * READ's source and sink, see verbs.h), its QP on the module's CQ and the
 * device's shared PD, and its teardown.
 *
 * A failed connection's QP is in error, so the device flushes whatever it
 * still holds; the ops come back from the CQ and complete there. siw does
 * not always: after the peer refused an access (a TERMINATE), the flush
 * READ behind it sometimes never comes back, flushed or not (a dozen times
 * in five runs of the RMA tests; siw_qp_nextstate_from_term() flushes the
 * send side only while a WQE is being sent, and a READ already sent waits
 * in the ORQ, not there). So what the device has not given back ABANDON_MS
 * after the failure is completed from the module's timer as a flushed
 * completion would be, and kept as a zombie for a completion that comes
 * late.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "verbs.h"

/*
 * Queue depths: the send queue's 128 as perftest's ib_send_bw, and the
 * receive queue perftest's 512. A receive the user posts reaches the device
 * at once, and the peer learns of it from the counter it reads (verbs_post.c):
 * the more receives one READ of it finds, the fewer READs a stream takes
 * (a stream 512 receives ahead reads it about once per 256 messages, one
 * 128 ahead once per 32 or less). The bound on the receives accepted while
 * the queue is full is the queue's depth again (verbs_post.c), so a
 * receiver may also post perftest's 512 before the first message arrives.
 */
#define SQ_DEPTH   128
#define RQ_DEPTH   512
#define ABANDON_MS 1000

struct rmca_verbs_conn *rmca_verbs_conn_new(struct rmca_verbs_module *vm,
					    uint64_t token, bool active,
					    void *cookie)
{
	struct rmca_verbs_conn *c = calloc(1, sizeof(*c));
	struct ibv_pd *pd;
	int sink_access = IBV_ACCESS_LOCAL_WRITE;

	if (!c)
		return NULL;
	c->base.module = &vm->m;
	c->hs.base.module = &vm->m;
	c->mod = vm;
	rmca_list_init(&c->outstanding);
	c->token = token;
	c->active = active;
	c->cookie = cookie;
	c->state = RMCA_VCONN_CONNECTING;
	c->port_hold = -1;
	c->ctl = rmca_verbs_fault("verbs_conn_alloc")
			 ? NULL
			 : aligned_alloc(64, sizeof(*c->ctl));
	if (!c->ctl)
		goto err;
	/* only once nothing else can fail before has_pd says so */
	pd = rmca_verbs_pd_get(vm->dev);
	if (!pd)
		goto err;
	c->has_pd = true;
	memset(c->ctl, 0, sizeof(*c->ctl));
	/* The peer reads our credit counter; the flush and credit READs of
	 * the peer's counter land in our sink, which iWARP wants writable
	 * (an RDMA READ response is a tagged write into the sink). The sink's
	 * key is never published. */
	if (rmca_verbs_flavour(vm)->read_sink_remote_write)
		sink_access |= IBV_ACCESS_REMOTE_WRITE;
	c->ctl_pub = ibv_reg_mr(pd, (void *)&c->ctl->posted,
				RMCA_VERBS_CTL_READ, IBV_ACCESS_REMOTE_READ);
	/* the sink, then the hello's buffers */
	c->ctl_sink = ibv_reg_mr(pd, c->ctl->sink,
				 sizeof(*c->ctl) -
					 offsetof(struct rmca_verbs_ctl, sink),
				 sink_access);
	if (!c->ctl_pub || !c->ctl_sink)
		goto err;
	c->next = vm->conns;
	vm->conns = c;
	return c;
err:
	if (c->ctl_pub)
		ibv_dereg_mr(c->ctl_pub);
	if (c->ctl_sink)
		ibv_dereg_mr(c->ctl_sink);
	if (c->has_pd)
		rmca_verbs_pd_put(vm->dev);
	free(c->ctl);
	free(c);
	return NULL;
}

int rmca_verbs_qp_create(struct rmca_verbs_conn *c, struct rdma_cm_id *id)
{
	struct rmca_verbs_module *vm = c->mod;
	struct ibv_qp_init_attr qa = { 0 };
	int sq = SQ_DEPTH, rq = RQ_DEPTH;

	if ((int)vm->max_qp_wr < sq)
		sq = (int)vm->max_qp_wr;
	if ((int)vm->max_qp_wr < rq)
		rq = (int)vm->max_qp_wr;
	if (vm->cq_used + sq + rq > vm->cq_size)
		return RMCA_ERR_AGAIN;
	qa.qp_context = c;
	qa.send_cq = vm->cq;
	qa.recv_cq = vm->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = (uint32_t)sq;
	qa.cap.max_recv_wr = (uint32_t)rq;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if (rmca_verbs_qp_make(c, id, &qa))
		return RMCA_ERR_NO_MEMORY;
	c->qp = id->qp;
	c->sq_size =
		(int)qa.cap.max_send_wr < sq ? (int)qa.cap.max_send_wr : sq;
	c->rq_size =
		(int)qa.cap.max_recv_wr < rq ? (int)qa.cap.max_recv_wr : rq;
	c->cq_share = sq + rq;
	vm->cq_used += c->cq_share;
	return 0;
}

static void unlink_conn(struct rmca_verbs_conn *c)
{
	struct rmca_verbs_conn **p;

	for (p = &c->mod->conns; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			return;
		}
}

/* Move the QP to error so that everything posted on it comes back. */
static void qp_to_error(struct rmca_verbs_conn *c)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	if (c->qp)
		ibv_modify_qp(c->qp, &a, IBV_QP_STATE);
}

void rmca_verbs_conn_fail(struct rmca_verbs_conn *c, int status)
{
	const struct rmca_core *core = c->mod->m.core;
	bool was_up = c->state == RMCA_VCONN_UP;

	if (!c->fail_status)
		c->fail_status = status;
	if (c->state != RMCA_VCONN_FAILED)
		c->abandon_ms = rmca_now_ms() + ABANDON_MS;
	c->made |= was_up;
	c->state = RMCA_VCONN_FAILED;
	qp_to_error(c);
	rmca_verbs_release_held(c, c->fail_status);
	/* tell the peer: a QP in error serves nothing (iWARP in particular
	 * may stop a stream without telling the other side) */
	if (was_up && c->id)
		rdma_disconnect(c->id);
	if (was_up && !c->failed_reported && c->cookie) {
		c->failed_reported = true;
		core->ops->conn_failed(core, c->cookie, c->fail_status);
	}
	if (!c->nout)
		rmca_verbs_pending_run(c);
	else
		rmca_verbs_timer_arm(c->mod);
}

static void zombie_add(struct rmca_verbs_module *vm, struct rmca_verbs_op *op)
{
	op->conn = NULL;
	rmca_list_del(&op->link);
	rmca_list_add(&vm->zombies, &op->link);
}

/*
 * Give up on the ops c still has on the device: each completes now, with
 * status, or (status 0) with what a flushed completion would have said, and
 * stays a zombie for its completion, should it come.
 */
void rmca_verbs_abandon(struct rmca_verbs_conn *c, int status)
{
	static const struct ibv_wc flushed = { .status = IBV_WC_WR_FLUSH_ERR };
	struct rmca_verbs_module *vm = c->mod;
	struct rmca_list *l, *tmp;
	int st;

	if (c->nout)
		vm->m.core->ops->log(vm->m.core, RMCA_LOG_DEBUG,
				     "%s: %d ops the device did not give back, "
				     "given up", vm->m.device, c->nout);
	/* in posting order */
	rmca_list_for_each_safe(l, tmp, &c->outstanding)
	{
		struct rmca_verbs_op *op =
			rmca_list_entry(l, struct rmca_verbs_op, link);

		st = status ? status : rmca_verbs_wc_status(&flushed, op);
		if (op->kind == RMCA_VOP_CREDIT)
			c->credit_inflight = false;
		if (op->kind <= RMCA_VOP_FLUSH)
			vm->m.core->ops->complete(vm->m.core, op->req, st, 0,
						  0);
		zombie_add(vm, op);
	}
	c->nout = 0;
}

/* Free c; every op it still holds completes `status` first (unless the
 * connection never came up: then there is none). */
void rmca_verbs_conn_destroy(struct rmca_verbs_conn *c, int status)
{
	struct rmca_verbs_module *vm = c->mod;
	struct rmca_verbs_op *op, *next;
	struct rmca_list *l;

	c->cookie = NULL; /* no conn_failed from here on */
	c->closing_status = status;
	rmca_list_for_each(l, &c->outstanding)
		rmca_list_entry(l, struct rmca_verbs_op, link)
			->canceled = true;
	for (op = c->pending; op; op = next) {
		next = op->next;
		rmca_verbs_op_done(op, status, 0, 0);
	}
	c->pending = c->pending_tail = NULL;
	rmca_verbs_recv_cancel(c, status);
	rmca_verbs_release_held(c, status);
	if (c->qp) {
		if (c->state == RMCA_VCONN_UP)
			rdma_disconnect(c->id);
		qp_to_error(c);
		rmca_verbs_async_drain(vm->dev);
		rmca_verbs_cq_poll(vm);
		/* Nothing waits for the device's flush: once the QP is
		 * destroyed the device touches none of the buffers of what
		 * it still held. What the flush (or the destroy, on rxe)
		 * put in the CQ completes in order; the rest completes
		 * below, and those ops stay zombies for a late completion. */
		rdma_destroy_qp(c->id);
		c->qp = NULL;
		rmca_verbs_cq_poll(vm);
		vm->cq_used -= c->cq_share;
	}
	rmca_verbs_abandon(c, status);
	rmca_verbs_mw_conn_gone(c);
	if (c->id)
		rdma_destroy_id(c->id);
	rmca_verbs_port_release(&c->port_hold);
	unlink_conn(c);
	ibv_dereg_mr(c->ctl_pub);
	ibv_dereg_mr(c->ctl_sink);
	rmca_verbs_post_fini(c);
	free(c->ctl);
	rmca_verbs_pd_put(vm->dev);
	free(c);
}

void rmca_verbs_disconnect(struct rmca_verbs_conn *c)
{
	rmca_verbs_conn_destroy(c, RMCA_ERR_CANCELED);
}
