/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared verbs + rdma_cm code of the ib and iwarp components.
 *
 * One device (struct rmca_verbs_dev) is an rdma_cm ibv_context with its one
 * protection domain, shared by every module, region and connection on it.
 * One module (struct rmca_verbs_module) is one port with an IPv4 address:
 * its own CQ + completion channel, rdma_cm event channel and listener.
 * One connection (struct rmca_verbs_conn) is one RC QP set up by rdma_cm.
 */
#ifndef RMCA_VERBS_H
#define RMCA_VERBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <time.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <rmca/component.h>
#include <rmca/support/clock.h>
#include <rmca/support/container.h>
#include <rmca/support/list.h>

#include "verbs_flavour.h"

#define RMCA_VERBS_MAX_DEVS 16
#define RMCA_VERBS_MAX_MODULES 16
/* send queue slots tracked for selective signalling (verbs_post.c): a
 * QP's send queue never counts more */
#define RMCA_VERBS_SQ_RING 128

struct rmca_verbs_dev {
	struct ibv_context *ctx; /* owned by librdmacm (rdma_get_devices) */
	const struct rmca_core *core;
	struct ibv_pd *pd; /* allocated with the first user */
	int pd_users;
	int refs; /* modules */
	bool async_registered;
	struct rmca_verbs_module *mods[RMCA_VERBS_MAX_MODULES];
	int nmods;
	struct ibv_device_attr attr;
};

/* What the component asks of the shared code. */
struct rmca_verbs_cfg {
	const char *name; /* "ib" */
	enum ibv_transport_type transport;
	/* Loopback: -1 auto (probe), 0 no, 1 yes. */
	int loopback;
	/* Microseconds a busy module keeps polling its CQ before it takes
	 * the completion channel's event and arms it again (<name>_idle_us,
	 * verbs_cq.c). */
	long long idle_us;
};

struct rmca_verbs_op;

struct rmca_verbs_module {
	struct rmca_module m; /* first: the core's view */
	struct rmca_verbs_dev *dev;
	uint8_t port;
	const struct rmca_verbs_flavour *flavour; /* ib or iwarp */
	struct sockaddr_in ip; /* the device's address, port = listener's */
	struct ibv_comp_channel *chan;
	struct ibv_cq *cq;
	int cq_size, cq_used;
	/* The channel's event is left unread while completions keep coming
	 * or nobody may sleep (verbs_cq.c): busy since the last arming,
	 * quiet since when. */
	bool cq_busy;
	/* The module sleeps on the channel itself (its loopback probe). */
	bool self_wait;
	bool cq_found; /* completions read since the last progress op */
	/* a connection may need its unsignalled tail retired (sq_close) */
	bool close_due;
	int close_passes;
	int quiet_polls;
	long long quiet_since, idle_ns; /* CLOCK_MONOTONIC ns; ns */
	struct rdma_event_channel *ec;
	struct rdma_cm_id *listen_id;
	int timer_fd; /* credit re-read (iwarp) */
	bool timer_armed;
	/* Held sends wait for a reply with nobody who may sleep: their
	 * wait is checked from the caller's passes, not the timer
	 * (rmca_verbs_confirm_poll, verbs_post.c); passes since the last
	 * look. */
	bool confirm_polled;
	int confirm_passes;
	/* a connection has held sends a reply confirmed, to complete at
	 * the next pass (rmca_verbs_release_due, verbs_post.c) */
	bool release_due;
	struct rmca_verbs_conn *conns;	  /* every live connection */
	struct rmca_verbs_parked *parked; /* requests waiting for connect() */
	int nparked, park_max; /* RMCA_handshake_max */
	int park_ms; /* how long one waits: RMCA_connect_timeout */
	struct rmca_list zombies;      /* canceled ops the CQ may still name */
	struct rmca_verbs_op *op_pool; /* done ops: their memory stays ours */
	struct rmca_verbs_mr *mrs;
	int timer_ms; /* credit re-read backoff */
	char facts[160]; /* static probed facts; detail = facts + counters */
	unsigned long flushes; /* flush READs posted (visible in detail) */
	uint32_t max_sge, max_qp_wr;
	/* Bytes from which a send-side WR is always signalled, 0: never
	 * for that reason (verbs_post.c, want_signal). */
	uint32_t sig_from;
	uint32_t max_inline; /* learnt with the first QP (inline_known) */
	bool inline_known;
	/* a connection's receive batch is due at the next pass
	 * (rmca_verbs_recv_due; verbs_post.c) */
	bool recv_due;
};

static inline struct rmca_verbs_module *rmca_verbs_mod(struct rmca_module *m)
{
	return rmca_container_of(m, struct rmca_verbs_module, m);
}

static inline const struct rmca_verbs_flavour *
rmca_verbs_flavour(const struct rmca_verbs_module *vm)
{
	return vm->flavour;
}

/*
 * Who may sleep in the context's epoll set before the module's next pass:
 * RMCA_SLEEPER_APP (the application, may_sleep), RMCA_SLEEPER_CORE (the
 * core, right after this pass: will_sleep). The core's word where it keeps
 * one; else its ops, and a core that cannot say is taken to have an
 * application that may sleep at any time.
 */
static inline unsigned rmca_verbs_sleepers(const struct rmca_verbs_module *vm)
{
	const struct rmca_core *core = vm->m.core;
	const struct rmca_core_ops *ops = core->ops;

	if (core->sleepers)
		return *core->sleepers;
	if (!ops->will_sleep || !ops->may_sleep)
		return RMCA_SLEEPER_APP;
	return (ops->may_sleep(core) ? RMCA_SLEEPER_APP : 0) |
	       (ops->will_sleep(core) ? RMCA_SLEEPER_CORE : 0);
}

/* Connection request private data (both directions), little endian. */
struct rmca_verbs_pdata {
	uint32_t magic;
	uint32_t ctl_rkey; /* the sender's control region (REMOTE_READ) */
	uint64_t token;
	uint64_t ctl_addr;
} __attribute__((packed));
/* "rmc" and the wire version: 2 since iWARP headers carry the count of
 * receives (verbs_post.c); a peer of another version is refused. */
#define RMCA_VERBS_MAGIC      0x726d6332u /* "rmc2" */
#define RMCA_VERBS_MAGIC_MASK 0xffffff00u

/* addr() blob. */
struct rmca_verbs_addr {
	uint8_t version;
	uint8_t family; /* 4 */
	uint16_t port; /* network order */
	uint8_t ip[4];
	char device[24];
} __attribute__((packed));

/*
 * Per-connection control memory: the peer reads the line that starts with
 * `posted` (credits), and the credit and flush READs of the peer's line land
 * in `sink`. A control READ is a whole line, RMCA_VERBS_CTL_READ bytes, not
 * the 8 of the counter: siw (Linux 6.1) answers a READ of at most 32 bytes
 * from one SGE with copy_from_user() whenever its QP-wide "in syscall" flag
 * is set, which its transmit kthread also sees when it takes over the send
 * queue while the owner's ibv_post_send is still inside siw; from the
 * kthread that copy fails, and siw drops the connection with
 * IB_EVENT_QP_REQ_ERR. A longer READ is answered from the pinned pages, in
 * any context.
 */
#define RMCA_VERBS_CTL_READ 64
struct rmca_verbs_ctl {
	volatile uint64_t posted; /* user receives ever posted here */
	uint64_t pad[7];	  /* read with it, always zero */
	uint64_t sink[RMCA_VERBS_CTL_READ / 8]; /* RDMA READ sink (iwarp:
						   needs REMOTE_WRITE) */
	uint64_t hello; /* receive buffer of the active side's first send */
	uint64_t hello_src;
	uint64_t pad2[6];
};

enum rmca_verbs_op_kind {
	RMCA_VOP_SEND,
	RMCA_VOP_SEND_INV,
	RMCA_VOP_RECV,
	RMCA_VOP_PUT,
	RMCA_VOP_GET,
	RMCA_VOP_ATOMIC,
	RMCA_VOP_FLUSH,
	RMCA_VOP_HELLO_SEND, /* internal from here on: never reach the core */
	RMCA_VOP_HELLO_RECV,
	RMCA_VOP_HELLO_READ, /* iwarp active: proves the hello was taken */
	RMCA_VOP_CREDIT,
	RMCA_VOP_BIND,
	RMCA_VOP_DONE, /* reported to the core, its WR not retired yet */
};

struct rmca_verbs_op {
	struct rmca_verbs_op *next; /* pending list, receive batch or pool */
	struct rmca_list link;	    /* conn->outstanding, then mod->zombies */
	struct rmca_verbs_module *mod;
	struct rmca_verbs_conn *conn; /* NULL once canceled (zombie) */
	uint16_t gen; /* in the wr_id: a completion of an earlier use of
			 this memory is not this op's (see verbs_cq.c) */
	enum rmca_verbs_op_kind kind;
	void *req; /* the core's cookie */
	bool canceled;
	bool posted;
	bool signalled; /* its WR asks for a completion */
	bool held; /* on the connection's held list (iwarp sends) */
	struct rmca_verbs_op *hnext; /* held list */
	/* what to post when it leaves the pending queue */
	struct ibv_sge sge;
	uint64_t raddr;
	uint32_t rkey;
	uint64_t operand, compare;
	bool cswap;
	struct rmca_verbs_mw *mw; /* BIND */
	struct rmca_verbs_mr *mr; /* BIND */
	uint64_t seq; /* iwarp sends: position; confirming READs: cover */
	int status; /* refused before posting: completed with it (else
		       RMCA_ERR_CONNECTION) once its failed connection drains */
};

enum rmca_verbs_conn_state {
	RMCA_VCONN_RESOLVING,
	RMCA_VCONN_CONNECTING,
	RMCA_VCONN_CONFIRM, /* active, iwarp: hello sent, no READ back yet */
	RMCA_VCONN_WAIT_HELLO, /* passive: established, first send not seen */
	RMCA_VCONN_UP,
	RMCA_VCONN_FAILED,
};

/*
 * A connection being set up (component ABI 2) is the connection itself, in a
 * state before UP; connect_poll hands the conn out once it is UP. The
 * core's cookie stays here until then, so that nothing reports a failure
 * of a connection the core does not have yet.
 */
struct rmca_verbs_connecting {
	struct rmca_connecting base;
	long long deadline; /* CLOCK_MONOTONIC ms */
	void *cookie;
};

struct rmca_verbs_conn {
	struct rmca_conn base;
	struct rmca_verbs_module *mod;
	struct rmca_verbs_connecting hs;
	struct rmca_verbs_conn *next;
	struct rdma_cm_id *id;
	struct ibv_qp *qp;
	uint64_t token;
	bool active;
	void *cookie;
	enum rmca_verbs_conn_state state;
	int fail_status; /* the first error seen */
	int remote_err; /* RMCA_ERR_REMOTE_ACCESS learnt from the device */
	bool failed_reported;
	bool made; /* was UP: handed out even if it failed since */
	bool has_pd;
	bool waiting; /* a send waits for credits */
	/* the device said its send queue was full: the timer posts what
	 * waits (verbs_post.c) */
	bool sq_retry;
	/* a READ of ours the device refused: the timer fails the connection
	 * with this status (verbs_post.c) */
	int post_fail;
	struct rmca_verbs_ctl *ctl;
	struct ibv_mr *ctl_pub, *ctl_sink;
	uint64_t peer_ctl_addr;
	uint32_t peer_ctl_rkey;
	struct rmca_list outstanding; /* posted WRs, in posting order */
	int nout;
	int sq_used, rq_used, sq_size, rq_size;
	struct rmca_verbs_op *pending, *pending_tail; /* not yet posted */
	int npending;
	bool kick; /* pending_run once the CQ batch is read */
	/* iwarp credits */
	uint64_t sends_posted;
	uint64_t peer_posted;
	bool credit_inflight;
	bool credit_wanted;
	/* credits left at which the next READ goes before they run out
	 * (0: none goes early; see credit_prefetch in verbs_post.c) */
	uint64_t credit_low;
	/* iwarp: sends whose local completion came, held until a READ
	 * posted after them proves the peer took them (see verbs_post.c) */
	uint64_t send_seq, confirmed;
	struct rmca_verbs_op *held, *held_tail;
	/* selective signalling: the wr_ids of the send queue's WRs in
	 * posting order, [sq_head, sq_tail) not yet retired (verbs_post.c) */
	uint64_t sq_ring[RMCA_VERBS_SQ_RING];
	uint64_t sq_head, sq_tail;
	int unsig; /* WRs posted since the last signalled one */
	/* of them, puts and (ib) sends: their completion is owed to the
	 * core and only a later signalled WR brings it */
	int unsig_owed;
	int sig_out; /* signalled send queue WRs not completed yet */
	uint32_t max_inline; /* bytes a send may carry inline */
	/* A message's WR, filled once per QP (opcode, the header's SGE,
	 * the chain's end): a send posted alone writes only what changes
	 * (verbs_post.c, post_msg). The data's SGE is msg_sg[1]. */
	struct ibv_send_wr msg_wr;
	struct ibv_sge msg_sg[2];
	bool msg_fast;
	/* iwarp message headers (ack_header): receive slots [0, rq_size),
	 * then one per send queue slot */
	uint64_t *hdr;
	struct ibv_mr *hdr_mr;
	uint32_t hdr_nr; /* receive slots */
	uint64_t taken; /* messages of the peer received (in order) */
	uint64_t rposted; /* user receives ever posted: header slot */
	int nheld;
	bool ack_late; /* the last held sends needed the timer's READ */
	bool confirm_idle; /* held sends: READ at the next empty CQ poll */
	/* replies (verbs_post.c): the send timed (0: none) and when it was
	 * posted, how long replies take, when the held list last started */
	uint64_t timed_seq;
	long long timed_ns, reply_ns, held_ns;
	/* user receives accepted, not yet on the receive queue */
	struct rmca_verbs_op *rbatch, *rbatch_tail;
	int nrbatch;
	int closing_status; /* set by destroy: what canceled ops get */
	long long abandon_ms; /* failed: when the ops the device still holds
				 are given up (see verbs_conn.c) */
	int cq_share; /* CQ entries reserved for this QP */
	bool hello_seen;
	int nudges; /* CONFIRM: READs posted behind the hello */
	long long nudge_ms; /* CONFIRM: when the next one is due */
	uint8_t rd_in, rd_out; /* from the request: its depth, its resources */
	int port_hold; /* active iwarp: our socket on the local port, or -1 */
};

/*
 * The core holds a connection, a connection being set up and a region by
 * the base each embeds (component.h); the ops table (verbs_ops.c) goes from
 * the base to the module's own object and back through these helpers only.
 * NULL stays NULL (a send without a region, mr_rkey without a connection);
 * with the base first that costs no branch.
 */
static inline struct rmca_verbs_conn *
rmca_verbs_conn_from_base(struct rmca_conn *c)
{
	return c ? rmca_container_of(c, struct rmca_verbs_conn, base) : NULL;
}

static inline struct rmca_conn *rmca_verbs_conn_base(struct rmca_verbs_conn *c)
{
	return c ? &c->base : NULL;
}

static inline struct rmca_verbs_connecting *
rmca_verbs_connecting_from_base(struct rmca_connecting *h)
{
	return rmca_container_of(h, struct rmca_verbs_connecting, base);
}

static inline struct rmca_connecting *
rmca_verbs_connecting_base(struct rmca_verbs_connecting *h)
{
	return &h->base;
}

struct rmca_verbs_parked {
	struct rmca_verbs_parked *next;
	struct rdma_cm_id *id;
	struct rmca_verbs_pdata pd;
	long long expires; /* CLOCK_MONOTONIC ms */
	uint8_t key[16];   /* its peer's address (verbs_cm.c, peer_key) */
};

/* A type-2 memory window over a use-once region, bound for one connection. */
struct rmca_verbs_mw {
	struct rmca_verbs_mw *next;
	struct rmca_verbs_conn *conn;
	struct ibv_mw *mw;
	uint32_t rkey; /* as bound */
	bool bound, revoked, bind_failed;
};

struct rmca_verbs_mr {
	struct rmca_module_mr base;
	struct rmca_verbs_mr *next; /* the module's regions */
	struct rmca_verbs_module *mod;
	struct ibv_mr *mr; /* local keys (and the remote one, unless below) */
	bool mr_rw; /* mr has IBV_ACCESS_REMOTE_WRITE */
	struct ibv_mr *sink; /* iwarp: READ-sink twin with REMOTE_WRITE */
	void *addr;
	size_t len;
	unsigned access;
	bool use_mw; /* use-once on a device with SEND_INV: keys are MWs */
	struct rmca_verbs_mw *mws;
	/* use-once without windows: the registration whose rkey is the
	 * published key, NULL once revoked (re-made by the next mr_rkey) */
	struct ibv_mr *pub;
	uint32_t dead_rkey; /* the last key revoked, never handed out again */
};

static inline struct rmca_verbs_mr *
rmca_verbs_mr_from_base(struct rmca_module_mr *mr)
{
	return mr ? rmca_container_of(mr, struct rmca_verbs_mr, base) : NULL;
}

static inline struct rmca_module_mr *
rmca_verbs_mr_base(struct rmca_verbs_mr *mr)
{
	return mr ? &mr->base : NULL;
}

/* device + PD (verbs_device.c, verbs_pd.c) */
int rmca_verbs_probe(const struct rmca_core *core,
		     const struct rmca_verbs_cfg *cfg,
		     struct rmca_module ***modules, int *count);
void rmca_verbs_release(const struct rmca_core *core,
			struct rmca_module **modules, int count);
/* verbs_params.c: the parameters of component comp ("ib"), registered
 * (its register_params op) and read. */
int rmca_verbs_params_register(const struct rmca_core *core, const char *comp);
long long rmca_verbs_idle_us(const struct rmca_core *core, const char *comp);
/* verbs_none.c: tell the core why the probe found no module; nports is
 * how many ports of cfg's transport carried an address. */
void rmca_verbs_why_none(const struct rmca_core *core,
			 const struct rmca_verbs_cfg *cfg,
			 struct ibv_context **list, int nlist, int nports);
struct ibv_pd *rmca_verbs_pd_get(struct rmca_verbs_dev *dev);
void rmca_verbs_pd_put(struct rmca_verbs_dev *dev);
void rmca_verbs_detail_update(struct rmca_verbs_module *vm);
int rmca_verbs_async_register(struct rmca_verbs_dev *dev);
void rmca_verbs_async_drain(struct rmca_verbs_dev *dev);

/* module resources (verbs_module.c) */
int rmca_verbs_module_init(struct rmca_verbs_module *vm);
void rmca_verbs_module_fini(struct rmca_verbs_module *vm);
extern const struct rmca_module_ops rmca_verbs_ops;

/* test-only fault injection (verbs_fault.c) */
bool rmca_verbs_fault(const char *point);
extern int rmca_verbs_debug_devs;

/* local ports (verbs_port.c) */
int rmca_verbs_cm_bind(struct rmca_verbs_module *vm, struct rdma_cm_id *id,
		       int *hold);
void rmca_verbs_port_release(int *hold);

/* rdma_cm (verbs_cm.c) */
int rmca_verbs_cm_listen(struct rmca_verbs_module *vm);
void rmca_verbs_cm_dispatch(struct rmca_verbs_module *vm);
int rmca_verbs_connect_start(struct rmca_module *m,
			     const struct rmca_conn_args *args,
			     struct rmca_verbs_connecting **out);
int rmca_verbs_connect_poll(struct rmca_verbs_connecting *h,
			    struct rmca_verbs_conn **out);
void rmca_verbs_connect_abort(struct rmca_verbs_connecting *h);
void rmca_verbs_cm_tick(struct rmca_verbs_module *vm);
void rmca_verbs_disconnect(struct rmca_verbs_conn *c);
int rmca_verbs_addr(struct rmca_module *m, void *buf, size_t *len);
int rmca_verbs_reachable(struct rmca_module *m, const void *peer_addr,
			 size_t len, char *why, size_t why_len);
void rmca_verbs_conn_fail(struct rmca_verbs_conn *c, int status);
struct rmca_verbs_conn *rmca_verbs_conn_new(struct rmca_verbs_module *vm,
					    uint64_t token, bool active,
					    void *cookie);
int rmca_verbs_qp_create(struct rmca_verbs_conn *c, struct rdma_cm_id *id);
void rmca_verbs_conn_destroy(struct rmca_verbs_conn *c, int status);
void rmca_verbs_abandon(struct rmca_verbs_conn *c, int status);
void rmca_verbs_loopback_probe(struct rmca_verbs_module **vms, int n,
			       bool *ok);

/* Whether connection set-up has something a clock advances: a parked
 * request to expire, an iwarp hello waiting for its next READ (asked on
 * every pass: inline). */
static inline bool rmca_verbs_cm_due(const struct rmca_verbs_module *vm)
{
	const struct rmca_verbs_conn *c;

	if (vm->parked)
		return true;
	for (c = vm->conns; c; c = c->next)
		if (c->state == RMCA_VCONN_CONFIRM)
			return true;
	return false;
}

/* completions (verbs_cq.c) */
int rmca_verbs_cq_poll(struct rmca_verbs_module *vm);
void rmca_verbs_cq_event(void *arg, uint32_t events);
int rmca_verbs_progress(struct rmca_module *m);
int rmca_verbs_wc_status(const struct ibv_wc *wc, struct rmca_verbs_op *op);

/* posting (verbs_post.c, verbs_ops.c) */
struct rmca_verbs_op *rmca_verbs_op_alloc(void);
int rmca_verbs_submit(struct rmca_verbs_conn *c, struct rmca_verbs_op *op);
int rmca_verbs_post(struct rmca_verbs_conn *c, struct rmca_verbs_op *op);
void rmca_verbs_op_done(struct rmca_verbs_op *op, int status, size_t len,
			uint64_t revoked);

/*
 * Op memory is never given back to malloc while the module lives: a device
 * may name an op in a completion after the op is done (siw flushes a READ
 * that is queued but not yet sent twice, from the ORQ and as the WQE in
 * progress: siw_sq_flush()). The wr_id carries a generation besides the
 * address, so such a completion is recognised and dropped (verbs_cq.c).
 * These three run for every operation, from several files: inline here.
 */
#define WR_ID_ADDR_BITS 48

static inline void rmca_verbs_op_free(struct rmca_verbs_op *op)
{
	struct rmca_verbs_module *vm = op->mod;

	op->posted = false;
	op->conn = NULL;
	op->next = vm->op_pool;
	vm->op_pool = op;
}

static inline uint64_t rmca_verbs_wr_id(const struct rmca_verbs_op *op)
{
	return (uintptr_t)op | (uint64_t)op->gen << WR_ID_ADDR_BITS;
}

/* The op a completion names, or NULL if it names none now. */
static inline struct rmca_verbs_op *rmca_verbs_op_of(uint64_t wr_id)
{
	struct rmca_verbs_op *op =
		(void *)(uintptr_t)(wr_id & ((1ull << WR_ID_ADDR_BITS) - 1));

	if (!op->posted || op->gen != wr_id >> WR_ID_ADDR_BITS)
		return NULL;
	return op;
}
/*
 * An op for c, from the module's pool (inline: two per round trip). Not a
 * memset of the whole op (a rep stos of 20 words, about half of a send's
 * op_new): what posting and completing read whatever the kind is starts
 * out zero; raddr, rkey, operand, compare, cswap, mw and mr are read only
 * for the kinds whose makers set them (verbs_ops.c, verbs_mr.c).
 */
static inline struct rmca_verbs_op *
rmca_verbs_op_new(struct rmca_verbs_conn *c, enum rmca_verbs_op_kind kind,
		  void *req)
{
	struct rmca_verbs_module *vm = c->mod;
	struct rmca_verbs_op *op = vm->op_pool;
	uint16_t gen = 0;

	if (op) {
		vm->op_pool = op->next;
		gen = op->gen + 1;
	} else if (!(op = rmca_verbs_op_alloc())) {
		return NULL;
	}
	op->next = NULL;
	op->mod = vm;
	op->conn = c;
	op->gen = gen;
	op->kind = kind;
	op->req = req;
	op->canceled = false;
	op->posted = false;
	op->signalled = false;
	op->held = false;
	op->hnext = NULL;
	op->sge.addr = 0;
	op->sge.length = 0;
	op->sge.lkey = 0;
	op->seq = 0;
	op->status = 0;
	return op;
}

/*
 * Receives the user posts wait in the connection's batch (verbs_post.c):
 * it goes to the device once it holds RMCA_VERBS_RECV_BATCH, and while
 * fewer than RMCA_VERBS_RECV_HOLD receives are on the receive queue at
 * the next pass; with that many there, the peer has room for as many
 * messages, and the batch waits to be filled (or for completions to take
 * the queue below RMCA_VERBS_RECV_HOLD).
 */
#define RMCA_VERBS_RECV_BATCH 16
#define RMCA_VERBS_RECV_HOLD  (2 * RMCA_VERBS_RECV_BATCH)

static inline bool rmca_verbs_recv_due(const struct rmca_verbs_conn *c)
{
	return c->nrbatch && (c->rq_used < RMCA_VERBS_RECV_HOLD ||
			      c->nrbatch >= RMCA_VERBS_RECV_BATCH);
}

void rmca_verbs_op_pool_fini(struct rmca_verbs_module *vm);
void rmca_verbs_pending_run(struct rmca_verbs_conn *c);
void rmca_verbs_credit_read(struct rmca_verbs_conn *c);
void rmca_verbs_credit_imm(struct rmca_verbs_conn *c, uint32_t low);
void rmca_verbs_timer_event(void *arg, uint32_t events);
void rmca_verbs_confirm_poll(struct rmca_verbs_module *vm);
void rmca_verbs_timer_arm(struct rmca_verbs_module *vm);
void rmca_verbs_release_held(struct rmca_verbs_conn *c, int status);
void rmca_verbs_release_due(struct rmca_verbs_module *vm);
int rmca_verbs_qp_make(struct rmca_verbs_conn *c, struct rdma_cm_id *id,
		       struct ibv_qp_init_attr *qa);
void rmca_verbs_sq_close(struct rmca_verbs_conn *c);
void rmca_verbs_sq_retire(struct rmca_verbs_conn *c, uint64_t wr_id,
			  void (*done)(struct rmca_verbs_conn *,
				       struct rmca_verbs_op *));
void rmca_verbs_recv_flush(struct rmca_verbs_conn *c);
void rmca_verbs_recv_cancel(struct rmca_verbs_conn *c, int status);
void rmca_verbs_post_fini(struct rmca_verbs_conn *c);
void rmca_verbs_confirm_soon(struct rmca_verbs_conn *c);
int rmca_verbs_taken(struct rmca_verbs_conn *c, struct rmca_verbs_op *op,
		     size_t *len);
void rmca_verbs_user_complete(struct rmca_verbs_op *op, int status);

/* memory (verbs_mr.c) */
int rmca_verbs_mr_reg(struct rmca_module *m, void *addr, size_t len,
		      unsigned access, struct rmca_verbs_mr **out);
int rmca_verbs_mr_dereg(struct rmca_verbs_mr *mr);
uint64_t rmca_verbs_mr_rkey(struct rmca_verbs_mr *mr,
			    struct rmca_verbs_conn *c);
int rmca_verbs_key_match(struct rmca_verbs_mr *mr, struct rmca_verbs_conn *c,
			 uint64_t rkey);
uint32_t rmca_verbs_sink_lkey(struct rmca_verbs_mr *mr);
uint64_t rmca_verbs_revoke(struct rmca_verbs_conn *c, uint32_t rkey);
int rmca_verbs_mr_revoke(struct rmca_verbs_mr *mr, struct rmca_verbs_conn *c,
			 uint64_t rkey);
void rmca_verbs_mw_conn_gone(struct rmca_verbs_conn *c);

/* iwarp keys only: the region grants remote read (see verbs_mr.c). Bits
 * 34..62 stay zero. */
#define RMCA_VERBS_KEY_READ (1ull << 33)

static inline uint64_t rmca_verbs_key(uint32_t rkey, bool use_once)
{
	/* bit 32 keeps the key non-zero even for an rkey of 0 */
	return (1ull << 32) | rkey | (use_once ? RMCA_KEY_USE_ONCE : 0);
}

static inline uint32_t rmca_verbs_rkey32(uint64_t key)
{
	return (uint32_t)key;
}

/* routes (verbs_route.c): the device the route to the peer leaves through */
int rmca_verbs_reach(struct rmca_module *m, const struct rmca_reach_args *ra,
		     char *why, size_t why_len);

#endif
