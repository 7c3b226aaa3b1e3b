/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Posting work requests, in submission order.
 *
 * Flow control. iWARP has no RNR: a send without a receive breaks the
 * connection. On ib the device retries it (RNR retry 7), but only after the
 * responder's RNR timer, which rdma_cm leaves at 655 ms: one send that
 * overtakes the peer's receives costs more than thousands that don't. So a
 * send goes only with a credit: each side keeps a counter of the receives
 * the user posted in its control region, and the sender reads it with an
 * RDMA READ (which needs nothing from the peer's CPU) before it sends past
 * what it last saw. On ib every send also carries the counter's low 32 bits
 * as immediate data, so that a reply refreshes the credits and a
 * ping-pong needs no READ. While a send waits, everything submitted after
 * it waits behind it, so the order of operations stays the order of calls;
 * the counter is re-read on a timer (1 ms doubling to 64 ms) until the
 * peer has posted. Where sends had to wait for a READ (a stream that no
 * reply refreshes), the next READ goes once half of what the last one
 * granted is used, while the sends go on, so the stream does not stop for
 * a round trip each time the credits run out. The flush READ reads the
 * same counter and refreshes the credits too. Receives never wait.
 *
 * An iWARP send completes locally when its data has left; the peer may still
 * refuse it (its receive is too small). So on iwarp the completion of a send
 * is held until a READ posted after it (the next credit or flush READ) comes
 * back: RDMAP answers a READ only after the messages before it were placed,
 * and a refused message breaks the stream, which flushes the READ.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "verbs.h"

/* A new op's memory, when the pool has none: never given back to malloc
 * while the module lives (see rmca_verbs_wr_id in verbs.h). */
struct rmca_verbs_op *rmca_verbs_op_alloc(void)
{
	struct rmca_verbs_op *op = malloc(sizeof(*op));

	if (op && (uintptr_t)op >> WR_ID_ADDR_BITS) {
		free(op); /* no room for the generation */
		return NULL;
	}
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

/*
 * Inline data: the device copies a small payload at post time instead of
 * reading it later by its key. rdma_create_qp refuses a max_inline_data
 * above the device's limit, which no attribute reports, so the first QP of
 * a module finds it by halving; later QPs ask for that at once.
 */
#define INLINE_WANT 256

/*
 * Acknowledgement headers (flavours with ack_header, iWARP). An iWARP send
 * completes locally once its data has left; rmca reports it only once the
 * peer has it in a receive (a truncated message must fail its send). Every
 * message therefore starts with 8 bytes, little endian: the low 32 bits of
 * how many messages the sender has taken from this connection so far, then
 * of how many receives it has posted. RDMAP delivers in order, so a
 * message whose header says n proves the peer had placed our first n
 * messages, and every held send up to there completes: a reply confirms
 * all the sends before it, with nothing more on the wire. A send that no
 * message will confirm soon is confirmed by an RDMA READ, as before (see
 * rmca_verbs_confirm_soon). The count of receives is ib's immediate: a
 * reply refreshes the credits, and a ping-pong needs no credit READ (on
 * siw each READ's response leaves from the peer's kernel thread, ahead of
 * the peer's next message). Both counts are read relative to what the
 * reader knows already, so 32 bits are enough while fewer than 2^31 sends
 * are outstanding, which the queues bound. The headers live in one
 * registered array per connection: a slot per receive queue entry, then
 * one per send queue slot (a send too big for inline data reads its
 * header when it goes).
 */
static inline uint64_t hdr_word(const struct rmca_verbs_conn *c)
{
	return htole64((uint64_t)(uint32_t)c->taken |
		       (uint64_t)(uint32_t)c->rposted << 32);
}

static int hdr_init(struct rmca_verbs_conn *c,
		    const struct ibv_qp_init_attr *qa)
{
	size_t n = qa->cap.max_recv_wr + RMCA_VERBS_SQ_RING;

	rmca_verbs_post_fini(c); /* a QP made again (verbs_cm.c) */
	c->hdr_nr = qa->cap.max_recv_wr;
	c->hdr = calloc(n, sizeof(*c->hdr));
	if (!c->hdr)
		return -1;
	c->hdr_mr = ibv_reg_mr(c->mod->dev->pd, c->hdr, n * sizeof(*c->hdr),
			       IBV_ACCESS_LOCAL_WRITE);
	if (!c->hdr_mr) {
		free(c->hdr);
		c->hdr = NULL;
		return -1;
	}
	return 0;
}

/* What a message's WR keeps from one post to the next (see post_msg):
 * fill_send's choices for RMCA_VOP_SEND on this connection. */
static void msg_init(struct rmca_verbs_conn *c)
{
	memset(&c->msg_wr, 0, sizeof(c->msg_wr));
	memset(c->msg_sg, 0, sizeof(c->msg_sg));
	c->msg_wr.opcode = rmca_verbs_flavour(c->mod)->credit_imm
				   ? IBV_WR_SEND_WITH_IMM
				   : IBV_WR_SEND;
	c->msg_wr.sg_list = &c->msg_sg[1];
	if (c->hdr) {
		/* the header first; its address is the WR's slot's */
		c->msg_sg[0].length = sizeof(*c->hdr);
		c->msg_sg[0].lkey = c->hdr_mr->lkey;
		c->msg_wr.sg_list = &c->msg_sg[0];
	}
	c->msg_fast = true;
}

int rmca_verbs_qp_make(struct rmca_verbs_conn *c, struct rdma_cm_id *id,
		       struct ibv_qp_init_attr *qa)
{
	struct rmca_verbs_module *vm = c->mod;
	struct ibv_qp_cap want = qa->cap;
	uint32_t in = vm->inline_known ? vm->max_inline : INLINE_WANT;

	if (rmca_verbs_flavour(vm)->ack_header) {
		/* the header and the user's buffer */
		want.max_send_sge = want.max_send_sge < 2 ? 2 : want.max_send_sge;
		want.max_recv_sge = want.max_recv_sge < 2 ? 2 : want.max_recv_sge;
	}
	for (;;) {
		qa->cap = want;
		qa->cap.max_inline_data = in;
		if (!rdma_create_qp(id, vm->dev->pd, qa))
			break;
		if (!in)
			return RMCA_ERR_NO_MEMORY;
		in = in > 8 ? in / 2 : 0;
	}
	vm->max_inline = in;
	vm->inline_known = true;
	/* the provider may grant more than asked: use what it says */
	c->max_inline = qa->cap.max_inline_data;
	if (rmca_verbs_flavour(vm)->ack_header && hdr_init(c, qa)) {
		rdma_destroy_qp(id);
		return RMCA_ERR_NO_MEMORY;
	}
	msg_init(c);
	return 0;
}

void rmca_verbs_post_fini(struct rmca_verbs_conn *c)
{
	if (c->hdr_mr)
		ibv_dereg_mr(c->hdr_mr);
	c->hdr_mr = NULL;
	free(c->hdr);
	c->hdr = NULL;
}

static void link_out(struct rmca_verbs_conn *c, struct rmca_verbs_op *op)
{
	rmca_list_add_tail(&c->outstanding, &op->link);
	c->nout++;
	op->posted = true;
}

/*
 * Receives are posted in batches: a receive the user posts while at least
 * RECV_LOW others wait on the receive queue joins the connection's batch.
 * While fewer than RMCA_VERBS_RECV_HOLD wait there, the batch goes to the
 * device as one chained ibv_post_recv at the next progress
 * (rmca_verbs_cq_poll); from RMCA_VERBS_RECV_HOLD on it is held until it
 * has RMCA_VERBS_RECV_BATCH receives (then it goes at the next progress
 * too, not inside the user's rmca_recv), or until completions leave fewer
 * than RMCA_VERBS_RECV_HOLD on the queue (verbs.h, rmca_verbs_recv_due).
 * A ping-pong that keeps many receives posted (perftest's 512) reposts
 * one per message: before, each went alone at the next pass, a provider
 * call and a batch built for one WR per message; now one call per
 * RMCA_VERBS_RECV_BATCH. The peer cannot starve meanwhile: its next
 * message finds a posted receive, and its completion is what makes the
 * owner progress; the count the peer's credits come from (ctl->posted,
 * the immediate on ib) lags what the user posted by less than a batch,
 * while at least RMCA_VERBS_RECV_HOLD receives it does count are on the
 * queue. A full receive queue does not refuse a receive either: up to
 * rq_size more wait in the batch, posted as completions free the queue.
 */
#define RECV_LOW 8
#define RECV_BATCH RMCA_VERBS_RECV_BATCH

/* Test-only (verbs_fault.c): what ibv_post_recv returns instead of
 * posting (0: post); see post_fault. */
static int recv_fault(void)
{
	static int knobs = -1;

	if (knobs < 0)
		knobs = getenv("RMCATEST_FAIL") != NULL;
	return knobs && rmca_verbs_fault("verbs_recv_invalid") ? EINVAL : 0;
}

static int post_error(struct rmca_verbs_conn *c, int ret);
static void arm_timer(struct rmca_verbs_module *vm);

/* ibv_post_recv refused a batch with ret. A full queue waits for the next
 * flush (a receive completing frees it). Anything else is no fault of the
 * user's, whose receives we build: a QP out of RTS, or a queue we cannot
 * fill; the connection fails, from the timer (this may run inside the
 * user's post, whose receive must not complete there), and the receives
 * waiting complete with it. */
static void recv_refused(struct rmca_verbs_conn *c, int ret)
{
	int err = post_error(c, ret);

	if (err == RMCA_ERR_AGAIN)
		return;
	c->post_fail = RMCA_ERR_CONNECTION;
	c->mod->timer_ms = 0;
	arm_timer(c->mod);
}

void rmca_verbs_recv_flush(struct rmca_verbs_conn *c)
{
	struct ibv_recv_wr wr[RECV_BATCH], *bad = NULL;
	struct ibv_sge sg[RECV_BATCH][2];
	struct rmca_verbs_op *op;
	int n = 0, i, posted, user = 0, ret;
	bool hdr = c->hdr; /* only flavours with ack_header have them */

	while (c->nrbatch && c->state != RMCA_VCONN_FAILED && c->qp) {
		for (op = c->rbatch, n = 0;
		     op && n < RECV_BATCH && c->rq_used + n < c->rq_size;
		     op = op->next, n++) {
			wr[n] = (struct ibv_recv_wr){
				.wr_id = rmca_verbs_wr_id(op),
				.sg_list = &op->sge,
				.num_sge = 1,
				.next = NULL,
			};
			if (hdr && op->kind == RMCA_VOP_RECV) {
				/* the header first, then the user's buffer */
				op->seq = (c->rposted + (uint64_t)user) %
					  c->hdr_nr;
				sg[n][0] = (struct ibv_sge){
					.addr = (uintptr_t)&c->hdr[op->seq],
					.length = sizeof(*c->hdr),
					.lkey = c->hdr_mr->lkey,
				};
				sg[n][1] = op->sge;
				wr[n].sg_list = sg[n];
				wr[n].num_sge = op->sge.length ? 2 : 1;
				user++;
			}
			if (n)
				wr[n - 1].next = &wr[n];
		}
		user = 0;
		if (!n)
			return; /* the receive queue is full */
		ret = recv_fault();
		if (!ret)
			ret = ibv_post_recv(c->qp, wr, &bad);
		if (!ret)
			posted = n;
		else if (bad >= wr && bad < wr + n)
			posted = (int)(bad - wr);
		else
			posted = 0;
		for (i = 0; i < posted; i++) {
			op = c->rbatch;
			c->rbatch = op->next;
			link_out(c, op);
			user += op->kind == RMCA_VOP_RECV;
		}
		c->nrbatch -= posted;
		c->rq_used += posted;
		if (!c->rbatch)
			c->rbatch_tail = NULL;
		c->rposted += (uint64_t)user;
		if (user)
			__atomic_store_n(&c->ctl->posted,
					 c->ctl->posted + (uint64_t)user,
					 __ATOMIC_RELEASE);
		user = 0;
		if (posted < n) {
			recv_refused(c, ret);
			return;
		}
	}
}

/* Complete the receives still waiting in the batch (the connection failed
 * or closes), in posting order. */
void rmca_verbs_recv_cancel(struct rmca_verbs_conn *c, int status)
{
	struct rmca_verbs_op *op;

	while ((op = c->rbatch)) {
		c->rbatch = op->next;
		c->nrbatch--;
		rmca_verbs_op_done(op, status, 0, 0);
	}
	c->rbatch_tail = NULL;
}

static int post_recv(struct rmca_verbs_conn *c, struct rmca_verbs_op *op)
{
	if (c->rq_used + c->nrbatch >= 2 * c->rq_size)
		return RMCA_ERR_AGAIN;
	op->next = NULL;
	if (c->rbatch_tail)
		c->rbatch_tail->next = op;
	else
		c->rbatch = op;
	c->rbatch_tail = op;
	c->nrbatch++;
	/* a full batch goes at once only while the queue runs low: with
	 * RMCA_VERBS_RECV_HOLD posted, it goes at the next pass, which in a
	 * ping-pong comes after the caller's next send, not before it */
	if (c->rq_used < RECV_LOW || op->kind != RMCA_VOP_RECV ||
	    (c->nrbatch >= RECV_BATCH && c->rq_used < RMCA_VERBS_RECV_HOLD))
		rmca_verbs_recv_flush(c);
	else if (rmca_verbs_recv_due(c))
		c->mod->recv_due = true; /* at the next pass */
	return 0;
}

static bool with_hdr(const struct rmca_verbs_conn *c,
		     const struct rmca_verbs_op *op)
{
	return c->hdr && is_msg(op);
}

/* The bytes a send-side WR carries: its data and any header. */
static uint32_t wr_bytes(const struct rmca_verbs_conn *c,
			 const struct rmca_verbs_op *op)
{
	return op->sge.length + (with_hdr(c, op) ? sizeof(*c->hdr) : 0);
}

/*
 * slot: the send queue position the WR takes (its header slot). The WR is
 * not cleared first (a rep stos of 16 words per WR): the fields every
 * provider reads (wr_id to imm_data) are written here, and those of the
 * unions each opcode's own case writes; the next pointer is the caller's.
 */
static inline __attribute__((always_inline)) void
fill_send(struct rmca_verbs_conn *c, struct rmca_verbs_op *op,
	  struct ibv_send_wr *wr, struct ibv_sge *sg, uint64_t slot)
{
	bool hdr = with_hdr(c, op);
	uint32_t len = op->sge.length + (hdr ? sizeof(*c->hdr) : 0);
	/* the payload copied at post time (see INLINE_WANT) */
	bool inl = len && len <= c->max_inline &&
		   (is_msg(op) || op->kind == RMCA_VOP_PUT ||
		    op->kind == RMCA_VOP_HELLO_SEND);

	wr->wr_id = rmca_verbs_wr_id(op);
	wr->send_flags = (inl ? IBV_SEND_INLINE : 0) |
			 (op->signalled ? IBV_SEND_SIGNALED : 0);
	wr->imm_data = 0;
	wr->sg_list = &op->sge;
	wr->num_sge = op->sge.length ? 1 : 0;
	if (hdr) {
		uint64_t *h = &c->hdr[c->hdr_nr + slot % RMCA_VERBS_SQ_RING];

		*h = hdr_word(c);
		sg[0] = (struct ibv_sge){ .addr = (uintptr_t)h,
					  .length = sizeof(*h),
					  .lkey = c->hdr_mr->lkey };
		sg[1] = op->sge;
		wr->sg_list = sg;
		wr->num_sge = op->sge.length ? 2 : 1;
	}
	switch (op->kind) {
	case RMCA_VOP_SEND:
		if (rmca_verbs_flavour(c->mod)->credit_imm) {
			wr->opcode = IBV_WR_SEND_WITH_IMM;
			wr->imm_data = htobe32((uint32_t)c->rposted);
			break;
		}
		wr->opcode = IBV_WR_SEND;
		break;
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
		/* a READ of the peer's credit counter: a real region,
		 * which iWARP checks even for 0 bytes, and its whole line,
		 * never a short READ (RMCA_VERBS_CTL_READ, verbs.h) */
		op->sge.addr = (uintptr_t)c->ctl->sink;
		op->sge.length = RMCA_VERBS_CTL_READ;
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

/*
 * Selective signalling. A send-side WR asks for a completion only when
 * something must come of it: reads, atomics and binds always; a send or put
 * when no later WR is sure to be signalled behind it. Send queues complete
 * in order, so the completion of a signalled WR retires every unsignalled
 * one posted before it (rmca_verbs_sq_retire), and a WR that fails or is
 * flushed completes with its own error whether signalled or not (IBTA
 * 10.8.6; rxe and siw both do): each op still completes once, with its own
 * status. A signalled WR is sure to follow
 *  - inside one chained post, when a later WR of the chain is signalled;
 *  - behind an iWARP send: its completion is the peer's confirmation, and
 *    the confirming READ goes after it (rmca_verbs_release_held re-posts
 *    one while sends are held);
 *  - behind a put or an ib send posted alone while a signalled WR is still
 *    out and at least UNSIG_MIN_OUT WRs are in the queue (a stream): once
 *    no signalled WR is out and such WRs are left behind the last one, the
 *    next put or send is signalled, and if none is posted before the CQ
 *    is found empty (the caller waits for them), a READ of the peer's
 *    credit counter goes, signalled, to retire them (rmca_verbs_sq_close).
 *    A stream of puts posted one call at a time is thus signalled about
 *    once per SIGNAL_EVERY WRs; a lone put or a short burst is signalled as
 *    before, so it never waits for a READ's round trip.
 * Every SIGNAL_EVERY-th WR is signalled anyway (but an iWARP send: the READ
 * that confirms it retires it), and so is one that leaves
 * fewer than two free slots, so the queue never fills with WRs that no
 * completion would retire.
 */
#define SIGNAL_EVERY  32
#define UNSIG_MIN_OUT 4

static int sq_cap(const struct rmca_verbs_conn *c)
{
	return c->sq_size < RMCA_VERBS_SQ_RING ? c->sq_size :
						 RMCA_VERBS_SQ_RING;
}

/* op goes as the WR `at` of a chain (0: the first), with a signalled WR
 * behind it in the chain if chained; cap is sq_cap(c). */
static inline __attribute__((always_inline)) bool
want_signal(const struct rmca_verbs_conn *c, const struct rmca_verbs_op *op,
	    bool chained, int at, int cap)
{
	int every = cap / 4 < SIGNAL_EVERY ? cap / 4 : SIGNAL_EVERY;
	int used = c->sq_used + at;

	if (op->kind != RMCA_VOP_PUT && !is_msg(op))
		return true;
	if (used + 2 > cap)
		return true;
	if (c->mod->sig_from && wr_bytes(c, op) >= c->mod->sig_from)
		return true;
	/* the READ that confirms held sends retires them */
	if (rmca_verbs_flavour(c->mod)->confirm_sends && is_msg(op))
		return false;
	if (c->unsig + at + 1 >= every)
		return true;
	if (chained)
		return false;
	return !c->sig_out || used < UNSIG_MIN_OUT;
}

/* Whether an unsignalled op's completion must come from the CQ (iWARP
 * sends complete when the peer confirms them). */
static bool owed(const struct rmca_verbs_conn *c, const struct rmca_verbs_op *op)
{
	return op->kind == RMCA_VOP_PUT ||
	       (is_msg(op) && !rmca_verbs_flavour(c->mod)->confirm_sends);
}

/* The caller polled the CQ empty. No signalled WR is out any more, but
 * puts or sends posted after the last one are, and nothing was posted to
 * retire them; or held sends wait for the caller to be idle (see
 * confirm_when): a signalled READ retires or confirms them (see above). */
void rmca_verbs_sq_close(struct rmca_verbs_conn *c)
{
	bool confirm = c->confirm_idle && c->held;

	c->confirm_idle = false;
	if (((c->unsig_owed && !c->sig_out) || confirm) &&
	    c->state == RMCA_VCONN_UP)
		rmca_verbs_credit_read(c);
}

/*
 * How long a reply takes (ack headers only): one send at a time is timed,
 * from its posting to the first message of the peer whose header covers
 * it, whatever confirmed it first. Held sends wait for a reply twice that
 * long before a READ confirms them (confirm_wait): in the qemu guest a
 * ping-pong's reply takes milliseconds, and a fixed wait of 1 ms made
 * nearly every send of siw0's send_lat take a READ.
 *
 * Only every REPLY_EVERY-th send is timed once a reply was (reply_ns is
 * an average anyway): its clock is read before the post, and the reply's
 * when it comes, both on the message's path, where a ping-pong read the
 * clock twice per round trip and side. When the held list starts is read
 * after the post, off that path (the READ that confirms a send without a
 * reply may go that much later: a system call's time against at least
 * CONFIRM_MS).
 */
#define REPLY_EVERY 8

/* Whether the next message posted is timed (its clock read before the
 * post). */
static inline bool time_reply(const struct rmca_verbs_conn *c)
{
	return c->hdr && !c->timed_seq &&
	       (!c->reply_ns || !((c->send_seq + 1) % REPLY_EVERY));
}

/* Held sends no reply or READ has confirmed yet: what still waits for a
 * confirmation. Those up to confirmed may stay held until the module's
 * next pass (rmca_verbs_release_due). */
static inline bool held_open(const struct rmca_verbs_conn *c)
{
	return c->held && c->held_tail->seq > c->confirmed;
}

/* post_ns: when the chain was posted if read before it (a timed send),
 * else 0 (read here if the unconfirmed part of the held list starts,
 * after the post). */
static void held_append(struct rmca_verbs_conn *c, struct rmca_verbs_op *op,
			long long *post_ns, bool timed)
{
	if (c->hdr && !held_open(c)) {
		if (!*post_ns)
			*post_ns = rmca_now_ns();
		c->held_ns = *post_ns;
	}
	if (timed && !c->timed_seq) {
		c->timed_seq = op->seq;
		c->timed_ns = *post_ns;
	}
	op->hnext = NULL;
	if (c->held_tail)
		c->held_tail->hnext = op;
	else
		c->held = op;
	c->held_tail = op;
	op->held = true;
	c->nheld++;
}

/* Book-keeping of a WR the device took; post_ns, timed: see
 * held_append. */
static inline __attribute__((always_inline)) void
posted_send(struct rmca_verbs_conn *c, struct rmca_verbs_op *op,
	    long long *post_ns, bool timed)
{
	c->sq_ring[c->sq_tail % RMCA_VERBS_SQ_RING] = rmca_verbs_wr_id(op);
	c->sq_tail++;
	c->sq_used = (int)(c->sq_tail - c->sq_head);
	c->unsig = op->signalled ? 0 : c->unsig + 1;
	if (op->signalled) {
		c->unsig_owed = 0;
		c->sig_out++;
	} else if (owed(c, op)) {
		c->unsig_owed++;
	}
	link_out(c, op);
	if (is_msg(op)) {
		c->sends_posted++;
		op->seq = ++c->send_seq;
		/* its completion is the peer's confirmation */
		if (rmca_verbs_flavour(c->mod)->confirm_sends)
			held_append(c, op, post_ns, timed);
	} else if (op->kind == RMCA_VOP_FLUSH || op->kind == RMCA_VOP_CREDIT) {
		op->seq = c->send_seq; /* the sends this READ confirms */
		if (op->kind == RMCA_VOP_CREDIT)
			c->credit_inflight = true;
	}
	if (op->kind == RMCA_VOP_FLUSH) {
		c->mod->flushes++;
		rmca_verbs_detail_update(c->mod);
		c->mod->m.core->ops->log(c->mod->m.core, RMCA_LOG_DEBUG,
					 "%s: flush READ posted (%lu so far)",
					 c->mod->m.device, c->mod->flushes);
	}
}

#define POST_MAX 16

/* Test-only (verbs_fault.c): what ibv_post_send returns instead of posting
 * (0: post). Looked up only in a process started with RMCATEST_FAIL set:
 * posting costs nothing more otherwise. The knobs themselves stay out of
 * line: inlined, the clearing of their ibv_qp_attr (a rep stos of 17
 * words) went ahead of the check, into every post. */
static __attribute__((noinline)) int post_fault_knobs(struct rmca_verbs_conn *c)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};

	if (rmca_verbs_fault("verbs_post_refused"))
		return -ENOTCONN; /* siw, the QP out of RTS */
	if (rmca_verbs_fault("verbs_post_full"))
		return ENOMEM; /* rxe and siw, the send queue full */
	if (rmca_verbs_fault("verbs_post_invalid"))
		return EINVAL; /* a WR refused, the QP in RTS */
	if (rmca_verbs_fault("verbs_post_qp_error")) {
		/* the QP left RTS, and the device refuses as rxe's doorbell
		 * does below RTS */
		ibv_modify_qp(c->qp, &a, IBV_QP_STATE);
		return EINVAL;
	}
	return 0;
}

static int post_fault(struct rmca_verbs_conn *c)
{
	static int knobs = -1;

	if (knobs < 0)
		knobs = getenv("RMCATEST_FAIL") != NULL;
	return knobs ? post_fault_knobs(c) : 0;
}

/*
 * What a failed ibv_post_send means. rxe returns a positive errno, siw a
 * negative one, or -1 with errno set when its doorbell (a write() on the
 * device's fd) failed. Seen on rxe0 and siw0 (Linux 6.1, rdma-core 44):
 *  - ENOMEM: the send queue is full: the WRs wait, and go as completions
 *    free the queue, or, where none is due, at the module's timer
 *    (sq_retry);
 *  - ENOTCONN: siw refuses a QP that is not in RTS (the peer's TERMINATE
 *    took it out; it takes a post in INIT or ERR, and never completes it);
 *  - EINVAL: rxe says so of a WR it refuses and, from its doorbell, of a
 *    QP below RTS (RESET to RTR), whose WQEs stay queued (they come back
 *    flushed when the QP goes to error; in ERR and SQD rxe takes a post).
 *    The QP's state tells which: out of RTS, the connection failed, which
 *    is no mistake of the caller's.
 */
static int post_error(struct rmca_verbs_conn *c, int ret)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	int e = ret < 0 ? -ret : ret;

	if (ret == -1 && errno)
		e = errno;
	if (e == ENOMEM)
		return RMCA_ERR_AGAIN;
	if (e == ENOTCONN || ibv_query_qp(c->qp, &a, IBV_QP_STATE, &ia) ||
	    a.qp_state != IBV_QPS_RTS)
		return RMCA_ERR_CONNECTION;
	return RMCA_ERR_INVALID;
}

/* What the refusal err of op means for the connection: a user's WR the
 * device refused fails alone (its parameters), but one of the module's
 * own (a flush or credit READ, the hello) is never malformed; refused, the
 * connection can no longer keep what it promised, and fails. */
static int refusal(const struct rmca_verbs_op *op, int err)
{
	bool user = op->kind == RMCA_VOP_SEND ||
		    op->kind == RMCA_VOP_SEND_INV || op->kind == RMCA_VOP_PUT ||
		    op->kind == RMCA_VOP_GET || op->kind == RMCA_VOP_ATOMIC;

	return err == RMCA_ERR_INVALID && !user ? RMCA_ERR_CONNECTION : err;
}

/* ibv_post_send returned ret for the chain wr[0..n) of ops: how many of
 * them the device took (those before bad), and in *err why the next was
 * not. */
static __attribute__((noinline)) int post_refused(struct rmca_verbs_conn *c,
						  struct rmca_verbs_op **ops,
						  struct ibv_send_wr *wr, int n,
						  struct ibv_send_wr *bad,
						  int ret, int *err)
{
	n = bad >= wr && bad < wr + n ? (int)(bad - wr) : 0;
	*err = refusal(ops[n], post_error(c, ret));
	if (*err == RMCA_ERR_AGAIN) {
		/* no completion of ours may be due to free it */
		c->sq_retry = true;
		arm_timer(c->mod);
	}
	return n;
}

/* Post ops[0..n) as one chain. Returns how many the device took (in
 * order); *err says why the next one was not. Inlined into post_list and
 * post_one: most posts are of one WR, and with n known the loops and the
 * chain's book-keeping fold away. */
static inline __attribute__((always_inline)) int
post_chain(struct rmca_verbs_conn *c, struct rmca_verbs_op **ops, int n,
	   int *err)
{
	struct ibv_send_wr wr[POST_MAX], *bad = NULL;
	struct ibv_sge sg[POST_MAX][2];
	int i, ret, cap = sq_cap(c), room = cap - c->sq_used;
	bool later = false, timed = false;
	long long post_ns = 0;

	*err = 0;
	if (!c->qp) { /* destroyed: a closing connection's last poll */
		*err = RMCA_ERR_CONNECTION;
		return 0;
	}
	if (n > POST_MAX)
		n = POST_MAX;
	if (n > room) {
		n = room;
		*err = RMCA_ERR_AGAIN;
	}
	if (n <= 0)
		return 0;
	/* decide from the last: a WR is chained when a later one of the
	 * list is signalled */
	for (i = n - 1; i >= 0; i--) {
		ops[i]->signalled = want_signal(c, ops[i], later, i, cap);
		later |= ops[i]->signalled;
	}
	for (i = 0; i < n; i++) {
		fill_send(c, ops[i], &wr[i], sg[i], c->sq_tail + (uint64_t)i);
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	/*
	 * A reply is timed from before the post, not after it: a post that
	 * took long (siw's doorbell is a system call; a descheduled guest)
	 * may return after the reply came, and a reply timed from there
	 * looked nearly instant, so the next sends' replies were given
	 * 1 ms and a READ went behind each one that took longer.
	 */
	if (time_reply(c) && rmca_verbs_flavour(c->mod)->confirm_sends)
		for (i = 0; i < n && !timed; i++)
			timed = is_msg(ops[i]);
	if (timed)
		post_ns = rmca_now_ns();
	/* non-zero is failure: siw returns negative errnos */
	ret = post_fault(c);
	if (!ret)
		ret = ibv_post_send(c->qp, wr, &bad);
	if (ret)
		n = post_refused(c, ops, wr, n, bad, ret, err);
	for (i = 0; i < n; i++)
		posted_send(c, ops[i], &post_ns, timed);
	return n;
}

static int post_list(struct rmca_verbs_conn *c, struct rmca_verbs_op **ops,
		     int n, int *err)
{
	return post_chain(c, ops, n, err);
}

static int post_one(struct rmca_verbs_conn *c, struct rmca_verbs_op *op,
		    int *err)
{
	return post_chain(c, &op, 1, err);
}

/*
 * Retire the send queue up to the WR wr_id names, whose completion came:
 * every unsignalled WR posted before it is done (it would have completed
 * with its own error otherwise) and goes to done(). A wr_id not in
 * [sq_head, sq_tail) is a completion already accounted for (siw completes
 * a READ after the WRs behind it; a flushed READ may come twice).
 */
void rmca_verbs_sq_retire(struct rmca_verbs_conn *c, uint64_t wr_id,
			  void (*done)(struct rmca_verbs_conn *,
				       struct rmca_verbs_op *))
{
	uint64_t i, end;
	struct rmca_verbs_op *op;

	for (end = c->sq_head; end < c->sq_tail; end++)
		if (c->sq_ring[end % RMCA_VERBS_SQ_RING] == wr_id)
			break;
	if (end == c->sq_tail)
		return;
	for (i = c->sq_head; i < end; i++) {
		op = rmca_verbs_op_of(c->sq_ring[i % RMCA_VERBS_SQ_RING]);
		/* signalled ones still out complete by themselves */
		if (op && op->conn == c && !op->signalled)
			done(c, op);
	}
	c->sq_head = end + 1;
	c->sq_used = (int)(c->sq_tail - c->sq_head);
}

/* Post op now. 0, or an error and nothing was posted. */
int rmca_verbs_post(struct rmca_verbs_conn *c, struct rmca_verbs_op *op)
{
	int err;

	if (op->kind == RMCA_VOP_RECV || op->kind == RMCA_VOP_HELLO_RECV)
		return post_recv(c, op);
	return post_one(c, op, &err) ? 0 : err;
}

/* Would op, posted after `ahead` more sends, find no receive at the peer? */
static bool lacks_credit_after(struct rmca_verbs_conn *c,
			       struct rmca_verbs_op *op, uint64_t ahead)
{
	return rmca_verbs_flavour(c->mod)->credits && is_msg(op) &&
	       c->sends_posted + ahead >= c->peer_posted;
}

static bool lacks_credit(struct rmca_verbs_conn *c, struct rmca_verbs_op *op)
{
	return lacks_credit_after(c, op, 0);
}

/* A message of the peer said it had posted `low` receives (the low 32 bits
 * of its counter when it sent; a READ may have seen a later value). */
void rmca_verbs_credit_imm(struct rmca_verbs_conn *c, uint32_t low)
{
	int32_t ahead = (int32_t)(low - (uint32_t)c->peer_posted);

	if (ahead > 0) {
		c->peer_posted += (uint64_t)ahead;
		c->mod->timer_ms = 1;
	}
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

void rmca_verbs_credit_read(struct rmca_verbs_conn *c)
{
	struct rmca_verbs_op *op;
	int ret;

	if (c->credit_inflight || c->state != RMCA_VCONN_UP)
		return;
	op = rmca_verbs_op_new(c, RMCA_VOP_CREDIT, NULL);
	if (!op)
		return;
	ret = rmca_verbs_post(c, op);
	if (ret) {
		rmca_verbs_op_free(op);
		/* the SQ is full: a completion or sq_retry brings us back;
		 * refused, the connection fails, from the timer (the caller
		 * may be inside a post whose op must not complete yet) */
		if (ret != RMCA_ERR_AGAIN) {
			c->post_fail = ret;
			c->mod->timer_ms = 0;
			arm_timer(c->mod);
		}
		return;
	}
	c->credit_inflight = true;
}

static bool confirm_late(struct rmca_verbs_conn *c);

void rmca_verbs_timer_event(void *arg, uint32_t events)
{
	struct rmca_verbs_module *vm = arg;
	struct rmca_verbs_conn *c;
	bool again = false;
	uint64_t n;

	if (read(vm->timer_fd, &n, sizeof(n)) < 0)
		return;
	vm->timer_armed = false;
	for (c = vm->conns; c; c = c->next) {
		/* a READ of ours the device refused (credit_read) */
		if (c->post_fail && c->state != RMCA_VCONN_FAILED)
			rmca_verbs_conn_fail(c, c->post_fail);
		c->post_fail = 0;
		/* the device said its send queue was full (post_list) */
		if (c->sq_retry) {
			c->sq_retry = false;
			rmca_verbs_pending_run(c);
		}
		if (c->state == RMCA_VCONN_FAILED && c->nout) {
			/* see verbs_conn.c */
			if (rmca_now_ms() < c->abandon_ms) {
				again = true;
				continue;
			}
			rmca_verbs_abandon(c, 0);
			rmca_verbs_pending_run(c);
			continue;
		}
		/* held sends no reply confirmed in time */
		if (held_open(c) && !c->credit_inflight &&
		    c->state == RMCA_VCONN_UP)
			confirm_late(c);
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

/*
 * When held sends get their confirming READ:
 *  - at once once CONFIRM_BATCH sends are held: half the window of a
 *    stream of perftest's shape (64 out), so the READ goes while the other
 *    half is still on the wire, and one READ confirms CONFIRM_BATCH sends;
 *  - where no message of the peer can confirm them (no receive posted here
 *    for a reply), or replies came later than CONFIRM_MS (ack_late: the
 *    timer had to post the last READ), once the caller stops posting and
 *    polls the CQ empty (rmca_verbs_sq_close), so a send posted alone
 *    still gets its READ at once but a burst gets one for all of it;
 *    every ACK_PROBE-th send waits for the timer instead, to learn
 *    whether replies have become quick;
 *  - else only if no reply has done it within confirm_wait: twice what
 *    replies took lately, CONFIRM_MS to CONFIRM_MAX_MS (the module's
 *    timer posts the READ).
 * Before, a READ went behind every send once no READ was out where the
 * first two applied, and after 16 held sends anyway: a one-way stream took
 * one READ per 16 messages or more (siw0's send_bw: 0.03 to 0.07 per
 * message), where one per CONFIRM_BATCH suffices; and replies had 1 ms,
 * which in the qemu guest made a ping-pong ack_late, and nearly every send
 * of siw0's send_lat took a READ.
 */
#define CONFIRM_BATCH  32
#define CONFIRM_MS 1
#define CONFIRM_MAX_MS 64
#define ACK_PROBE 16

enum confirm_when {
	CONFIRM_NOW,
	CONFIRM_IDLE, /* at the caller's next empty poll */
	CONFIRM_TIMER,
};

static enum confirm_when confirm_when(const struct rmca_verbs_conn *c, int more)
{
	if (!rmca_verbs_flavour(c->mod)->ack_header || !c->hdr)
		return CONFIRM_NOW;
	if (c->nheld + more >= CONFIRM_BATCH)
		return CONFIRM_NOW;
	if (c->rq_used + c->nrbatch == 0)
		return CONFIRM_IDLE;
	if (c->ack_late && (c->send_seq + (uint64_t)more) % ACK_PROBE)
		return CONFIRM_IDLE;
	return CONFIRM_TIMER;
}

/* How long held sends wait for a reply: twice what replies took lately,
 * CONFIRM_MS to CONFIRM_MAX_MS. */
static long long confirm_wait(const struct rmca_verbs_conn *c)
{
	long long w = 2 * c->reply_ns;

	if (w < CONFIRM_MS * 1000000LL)
		return CONFIRM_MS * 1000000LL;
	return w < CONFIRM_MAX_MS * 1000000LL ? w : CONFIRM_MAX_MS * 1000000LL;
}

static void arm_ns(struct rmca_verbs_module *vm, long long ns)
{
	struct itimerspec its = { 0 };

	if (vm->timer_fd < 0 || vm->timer_armed)
		return;
	its.it_value.tv_sec = ns / 1000000000LL;
	its.it_value.tv_nsec = ns % 1000000000LL + 1000;
	if (!timerfd_settime(vm->timer_fd, 0, &its, NULL))
		vm->timer_armed = true;
}

/*
 * Whether somebody may sleep in the context's epoll set before the
 * module's next pass: the rule of the CQ's arming (arm_due, verbs_cq.c).
 * Read from the core's word, without a call: a spinning ping-pong asks
 * several times a message (rmca_verbs_sleepers).
 */
static inline bool sleeper(const struct rmca_verbs_module *vm)
{
	return vm->self_wait || rmca_verbs_sleepers(vm);
}

/*
 * Held sends wait confirm_wait for a reply. The module's timer wakes a
 * sleeper for them; a caller that spins on rmca_poll (nobody may sleep)
 * has its passes look instead (rmca_verbs_confirm_poll): arming the timer
 * after a ping-pong's sends (a timerfd_settime) and taking its expiry (an
 * epoll wakeup and a read()) were two system calls per confirm_wait that
 * a reply nearly always made useless.
 */
static void arm_confirm(struct rmca_verbs_conn *c)
{
	if (!sleeper(c->mod)) {
		c->mod->confirm_polled = true;
		return;
	}
	arm_ns(c->mod, confirm_wait(c));
}

/* Passes between two looks at the clock for held sends (a look costs a
 * clock read, in user space; confirm_wait is a millisecond or more). */
#define CONFIRM_POLL_EVERY 64

/* A pass of a caller whose held sends wait without the timer (see
 * arm_confirm): every CONFIRM_POLL_EVERY passes, held sends that waited
 * confirm_wait get their READ, as from the timer (confirm_late); once
 * somebody may sleep, the timer is armed for the rest of the wait. */
void rmca_verbs_confirm_poll(struct rmca_verbs_module *vm)
{
	struct rmca_verbs_conn *c;
	bool sleeps = sleeper(vm), waiting = false;
	long long now, left;

	if (!sleeps && ++vm->confirm_passes < CONFIRM_POLL_EVERY)
		return;
	vm->confirm_passes = 0;
	now = rmca_now_ns();
	for (c = vm->conns; c; c = c->next) {
		/* a READ out confirms them, and what it leaves held comes
		 * back through confirm_soon */
		if (!held_open(c) || c->credit_inflight ||
		    c->state != RMCA_VCONN_UP)
			continue;
		left = c->held_ns + confirm_wait(c) - now;
		if (left <= 0) {
			c->ack_late = true;
			rmca_verbs_credit_read(c);
		} else if (sleeps) {
			arm_ns(vm, left);
		} else {
			waiting = true;
		}
	}
	vm->confirm_polled = waiting;
}

/* The module's timer found held sends: a READ confirms them once they
 * waited confirm_wait for a reply; true if they wait on. */
static bool confirm_late(struct rmca_verbs_conn *c)
{
	long long left = c->held_ns + confirm_wait(c) - rmca_now_ns();

	if (c->hdr && left > 0) {
		arm_ns(c->mod, left);
		return true;
	}
	c->ack_late = true;
	rmca_verbs_credit_read(c);
	return false;
}

/* The READ goes at the caller's next poll that finds the CQ empty. */
static void confirm_idle(struct rmca_verbs_conn *c)
{
	c->confirm_idle = true;
	c->mod->close_due = true;
}

static void unlink_head(struct rmca_verbs_conn *c)
{
	struct rmca_verbs_op *op = c->pending;

	c->pending = op->next;
	if (!c->pending)
		c->pending_tail = NULL;
	op->next = NULL;
	c->npending--;
}

static void push_head(struct rmca_verbs_conn *c, struct rmca_verbs_op *op)
{
	op->next = c->pending;
	c->pending = op;
	if (!c->pending_tail)
		c->pending_tail = op;
	c->npending++;
}

/* A READ of the peer's counter to go behind the sends of a chain (it
 * confirms them), or NULL when one is out already or none can be made. */
static struct rmca_verbs_op *confirm_read(struct rmca_verbs_conn *c, int nmsg)
{
	if (!nmsg || !rmca_verbs_flavour(c->mod)->confirm_sends ||
	    c->credit_inflight || c->state != RMCA_VCONN_UP)
		return NULL;
	switch (confirm_when(c, nmsg)) {
	case CONFIRM_NOW:
		return rmca_verbs_op_new(c, RMCA_VOP_CREDIT, NULL);
	case CONFIRM_IDLE:
		confirm_idle(c);
		return NULL;
	default:
		arm_confirm(c);
		return NULL;
	}
}

void rmca_verbs_confirm_soon(struct rmca_verbs_conn *c)
{
	if (!held_open(c) || c->credit_inflight || c->state != RMCA_VCONN_UP)
		return;
	switch (confirm_when(c, 0)) {
	case CONFIRM_NOW:
		rmca_verbs_credit_read(c);
		break;
	case CONFIRM_IDLE:
		confirm_idle(c);
		break;
	default:
		arm_confirm(c);
		break;
	}
}

/*
 * A reply confirmed held sends. A caller that spins (nobody may sleep
 * before the module's next pass) gets their completions at that pass,
 * after the reply's: in a ping-pong the reply is what it waits for, and
 * it answers before it polls again, so the sends' completions are made
 * while the peer works instead of between the reply's arrival and the
 * answer's doorbell. Somebody who may sleep gets them at once: nothing
 * would wake the set for them. Receives and sends are not ordered with
 * each other (only a flush orders them, and a flush's completion releases
 * the held sends before its own).
 */
static void release_confirmed(struct rmca_verbs_conn *c)
{
	if (sleeper(c->mod)) {
		rmca_verbs_release_held(c, 0);
		return;
	}
	c->mod->release_due = true;
}

/* The module's pass: the held sends replies confirmed since the last
 * (release_held completes every one up to confirmed, so a connection whose
 * first held send is confirmed has some left from a deferred release). */
void rmca_verbs_release_due(struct rmca_verbs_module *vm)
{
	struct rmca_verbs_conn *c;

	vm->release_due = false;
	for (c = vm->conns; c; c = c->next)
		if (c->held && c->held->seq <= c->confirmed)
			rmca_verbs_release_held(c, 0);
}

/* A user receive completed (status 0): its header confirms our sends and
 * refreshes our credits. */
int rmca_verbs_taken(struct rmca_verbs_conn *c, struct rmca_verbs_op *op,
		     size_t *len)
{
	uint64_t w, n;
	int32_t ahead;

	if (!c->hdr)
		return 0;
	if (*len < sizeof(*c->hdr))
		return RMCA_ERR_PROTOCOL; /* a message without its header */
	*len -= sizeof(*c->hdr);
	c->taken++;
	w = le64toh(__atomic_load_n(&c->hdr[op->seq], __ATOMIC_ACQUIRE));
	rmca_verbs_credit_imm(c, (uint32_t)(w >> 32));
	/* how far past what a READ or an earlier reply confirmed; a peer
	 * cannot confirm what was never sent */
	ahead = (int32_t)((uint32_t)w - (uint32_t)c->confirmed);
	if (ahead >= 0)
		n = c->confirmed + (uint64_t)ahead;
	else
		n = (uint64_t)-(int64_t)ahead > c->confirmed ?
			    0 :
			    c->confirmed - (uint64_t)-(int64_t)ahead;
	if (n > c->send_seq)
		n = c->send_seq;
	if (c->timed_seq && n >= c->timed_seq) {
		long long t = rmca_now_ns() - c->timed_ns;

		/* a reply came: wait for the next as long as this one took */
		c->reply_ns = c->reply_ns ? (3 * c->reply_ns + t) / 4 : t;
		c->timed_seq = 0;
		c->ack_late = false;
	}
	if (n > c->confirmed) {
		c->confirmed = n;
		c->ack_late = false; /* a reply was quicker than a READ */
		release_confirmed(c);
	} else if (n == c->send_seq) {
		/* A reply to every send posted, after a READ confirmed them:
		 * replies come, and the next sends wait for theirs. Before,
		 * the connection stayed ack_late until a timed send's reply
		 * (one in REPLY_EVERY), and each send until then took a READ
		 * at the caller's next empty poll; on siw a READ's response
		 * goes from the peer's kernel thread, and the peer's next
		 * message waits behind it. */
		c->ack_late = false;
	}
	return 0;
}

/* Credits running low in a stream: read the counter before they are gone
 * (credit_low is set when a READ completes, see verbs_cq.c). */
static void credit_prefetch(struct rmca_verbs_conn *c)
{
	if (c->credit_low && !c->credit_inflight &&
	    c->peer_posted - c->sends_posted <= c->credit_low)
		rmca_verbs_credit_read(c);
}

/* Post what waits, in order and in chains; on a failed connection
 * complete it. */
void rmca_verbs_pending_run(struct rmca_verbs_conn *c)
{
	struct rmca_verbs_op *ops[POST_MAX], *op, *rd;
	int n, nmsg, i, posted, err;

	c->waiting = false;
	if (c->state == RMCA_VCONN_FAILED) {
		if (c->nout)
			return; /* after the ops posted before them */
		while ((op = c->pending)) {
			unlink_head(c);
			rmca_verbs_op_done(op, op->status ? op->status :
						RMCA_ERR_CONNECTION, 0, 0);
		}
		rmca_verbs_recv_cancel(c, RMCA_ERR_CONNECTION);
		return;
	}
	while (c->pending) {
		n = nmsg = 0;
		for (op = c->pending; op && n < POST_MAX - 1; op = op->next) {
			if (lacks_credit_after(c, op, (uint64_t)nmsg))
				break;
			ops[n++] = op;
			nmsg += is_msg(op);
		}
		if (!n) {
			c->waiting = true;
			if (!c->credit_inflight)
				arm_timer(c->mod);
			return;
		}
		/* off the queue first: posting links them elsewhere */
		for (i = 0; i < n; i++)
			unlink_head(c);
		rd = confirm_read(c, nmsg);
		if (rd)
			ops[n] = rd;
		posted = post_list(c, ops, n + !!rd, &err);
		if (rd && posted <= n)
			rmca_verbs_op_free(rd);
		if (nmsg)
			credit_prefetch(c);
		if (posted >= n)
			continue;
		/* the rest back at the head, in order */
		for (i = n - 1; i > posted; i--)
			push_head(c, ops[i]);
		if (err == RMCA_ERR_AGAIN) {
			push_head(c, ops[posted]);
			return; /* the next completion frees a slot */
		}
		if (err == RMCA_ERR_CONNECTION) {
			/* completes after the ops posted before it */
			push_head(c, ops[posted]);
			rmca_verbs_conn_fail(c, err);
			return;
		}
		/* the device refused this op: it alone fails */
		rmca_verbs_op_done(ops[posted], err, 0, 0);
	}
}

static void append(struct rmca_verbs_conn *c, struct rmca_verbs_op *op)
{
	op->next = NULL;
	if (c->pending_tail)
		c->pending_tail->next = op;
	else
		c->pending = op;
	c->pending_tail = op;
	c->npending++;
}

/*
 * A message posted alone, nothing waiting ahead of it and a receive known
 * at the peer (a ping-pong's every send): what post_one does for it, with
 * the kind known and the WR filled once per QP (msg_init), so that only
 * what changes is written: the data's SGE, the id, the flags, the
 * immediate or the header. The caller checked that the QP exists and has
 * a free slot. Returns 1, or 0 with *err as post_one.
 */
static inline __attribute__((always_inline)) int
post_msg(struct rmca_verbs_conn *c, struct rmca_verbs_op *op, bool timed,
	 int *err)
{
	struct ibv_send_wr *wr = &c->msg_wr, *bad = NULL;
	bool confirm = rmca_verbs_flavour(c->mod)->confirm_sends;
	uint32_t len = op->sge.length;
	uint32_t bytes = len + (c->hdr ? sizeof(*c->hdr) : 0);
	uint32_t sig_from = c->mod->sig_from;
	int cap = sq_cap(c), used = c->sq_used;
	int every = cap / 4 < SIGNAL_EVERY ? cap / 4 : SIGNAL_EVERY;
	long long post_ns = 0;
	bool sig;
	int ret;

	/* want_signal's rules for a message alone */
	sig = used + 2 > cap || (sig_from && bytes >= sig_from) ||
	      (!confirm &&
	       (c->unsig + 1 >= every || !c->sig_out || used < UNSIG_MIN_OUT));
	op->signalled = sig;
	wr->wr_id = rmca_verbs_wr_id(op);
	wr->send_flags =
		(bytes && bytes <= c->max_inline ? IBV_SEND_INLINE : 0) |
		(sig ? IBV_SEND_SIGNALED : 0);
	c->msg_sg[1] = op->sge;
	wr->num_sge = len ? 1 : 0;
	if (wr->opcode == IBV_WR_SEND_WITH_IMM)
		wr->imm_data = htobe32((uint32_t)c->rposted);
	if (c->hdr) {
		uint64_t *h =
			&c->hdr[c->hdr_nr + c->sq_tail % RMCA_VERBS_SQ_RING];

		*h = hdr_word(c);
		c->msg_sg[0].addr = (uintptr_t)h;
		wr->num_sge++;
	}
	if (timed)
		post_ns = rmca_now_ns(); /* see held_append */
	ret = post_fault(c);
	if (!ret)
		ret = ibv_post_send(c->qp, wr, &bad);
	if (ret)
		return post_refused(c, &op, wr, 1, bad, ret, err);
	/* posted_send's book-keeping for a message */
	c->sq_ring[c->sq_tail % RMCA_VERBS_SQ_RING] = wr->wr_id;
	c->sq_tail++;
	c->sq_used = used + 1;
	if (sig) {
		c->unsig = 0;
		c->unsig_owed = 0;
		c->sig_out++;
	} else {
		c->unsig++;
		c->unsig_owed += !confirm;
	}
	link_out(c, op);
	c->sends_posted++;
	op->seq = ++c->send_seq;
	if (confirm)
		held_append(c, op, &post_ns, timed);
	return 1;
}

/* Submit a user op: post it, queue it behind others, or complete it. */
int rmca_verbs_submit(struct rmca_verbs_conn *c, struct rmca_verbs_op *op)
{
	struct rmca_verbs_op *ops[2] = { op, NULL };
	int ret, posted;

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
		ret = post_recv(c, op);
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
	if (op->kind == RMCA_VOP_SEND && c->msg_fast && c->qp &&
	    c->sq_used < sq_cap(c)) {
		/* What confirm_read decides, once the message is on its way
		 * (its system call, if any, is not on the message's path):
		 * a READ to go with it takes the chain below. */
		bool confirm = rmca_verbs_flavour(c->mod)->confirm_sends &&
			       !c->credit_inflight && c->state == RMCA_VCONN_UP;
		enum confirm_when when =
			confirm ? confirm_when(c, 1) : CONFIRM_TIMER;

		if (when != CONFIRM_NOW) {
			posted = post_msg(c, op, time_reply(c), &ret);
			if (posted && confirm) {
				if (when == CONFIRM_IDLE)
					confirm_idle(c);
				else
					arm_confirm(c);
			}
			goto posted;
		}
	}
	/* an iWARP send and the READ that confirms it: one doorbell */
	if (is_msg(op) && rmca_verbs_flavour(c->mod)->confirm_sends)
		ops[1] = confirm_read(c, 1);
	posted = ops[1] ? post_list(c, ops, 2, &ret) : post_one(c, op, &ret);
	if (ops[1] && posted < 2)
		rmca_verbs_op_free(ops[1]);
posted:
	if (posted && is_msg(op))
		credit_prefetch(c);
	if (posted)
		return 0;
	/* the QP left RTS before we learnt of it: the op completes as on
	 * a failed connection, after the ops posted before it (a delivery
	 * flush READ after its puts) */
	if (ret == RMCA_ERR_CONNECTION) {
		rmca_verbs_conn_fail(c, ret);
		return rmca_verbs_submit(c, op);
	}
	/* a full send queue: up to its size more wait, and go out in
	 * chains as completions free it */
	if (ret == RMCA_ERR_AGAIN && c->npending < c->sq_size) {
		append(c, op);
		return 0;
	}
	rmca_verbs_op_free(op);
	return ret;
}

/* Report op to the core now. Its memory stays while the device may still
 * name it (its WR not retired yet): it becomes RMCA_VOP_DONE, freed when
 * the WR is retired. */
void rmca_verbs_user_complete(struct rmca_verbs_op *op, int status)
{
	const struct rmca_core *core;

	if (!op->posted) {
		rmca_verbs_op_done(op, status, 0, 0);
		return;
	}
	if (op->kind <= RMCA_VOP_FLUSH && op->req && op->conn) {
		core = op->conn->mod->m.core;
		core->ops->complete(core, op->req, status, 0, 0);
	}
	op->req = NULL;
	op->kind = RMCA_VOP_DONE;
}

/* Complete the held sends a READ or a reply confirmed (status 0), and with
 * status the rest of them; while some stay held, a READ is out to confirm
 * them. */
void rmca_verbs_release_held(struct rmca_verbs_conn *c, int status)
{
	struct rmca_verbs_op *op;

	while ((op = c->held) && (status || op->seq <= c->confirmed)) {
		c->held = op->hnext;
		if (!c->held)
			c->held_tail = NULL;
		op->hnext = NULL;
		op->held = false;
		c->nheld--;
		rmca_verbs_user_complete(op,
					 op->seq <= c->confirmed ? 0 : status);
	}
	rmca_verbs_confirm_soon(c);
}
