/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Endpoints, requests and regions: what the framework keeps between a
 * public call and the completion it owes for it.
 */
#ifndef RMCA_EP_H
#define RMCA_EP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <rmca/support/list.h>

#include "internal.h"

enum rmca_req_kind {
	RMCA_REQ_USER,		 /* owes the user one completion */
	RMCA_REQ_DELIVERY_FLUSH, /* internal: proves the puts it covers */
	RMCA_REQ_RAIL_PART,	 /* internal: one rail's part of a request
				  * (rails.c); on no list of the endpoint */
	RMCA_REQ_GET_FENCE,	 /* internal: the flush a get the peer's core
				  * answers waits for (get_core.c); on no
				  * list of the endpoint */
};

/*
 * What the core keeps of a request: the one fact of the request itself
 * that the inline path of its completion reads (ops.c, req_held). A
 * request leaves the pool held; the taker makes it plain (listed or
 * ordered) only when nothing of the core's is on it, and the core takes
 * it back on through one function (ops.c, req_list_add) before it does
 * anything with it: holds a send, builds an atomic or has the peer's core
 * do it, proves a put with a delivery flush, has the peer's core answer a
 * get. A new case of req_done_slow() for a request the core works on thus
 * reaches the inline path without a second list of conditions there; what
 * the completion brings (an error, which a verification may follow, a
 * second completion) and the endpoint's state (a flush behind it, revokes
 * noted) are req_held()'s to test.
 */
enum rmca_req_held {
	/* the core holds it or watches it (an internal request, a user's
	 * flush, one on an endpoint with rails, one the core took on): its
	 * completion goes through req_done_slow() */
	RMCA_REQ_HELD,
	/* a user's request on its list (ep->reqs or ep->recvs), nothing of
	 * the core's on it: a success is unlinked and queued at once unless
	 * a flush waits behind it, or, for a receive, revokes are noted */
	RMCA_REQ_LISTED,
	/* posted whole to a module that orders its completions (struct
	 * rmca_mod, ordered), on no list of the endpoint: a success is
	 * queued at once (a receive's unless revokes are noted) */
	RMCA_REQ_ORDERED,
};

struct rmca_req {
	/* Set by whoever takes the request from the pool (rmca_req_new, a
	 * rail's part_new): */
	struct rmca_list link;	  /* ep->reqs or ep->recvs, post order; or on
				   * neither (RMCA_REQ_ORDERED): linked to
				   * itself */
	struct rmca_context *ctx; /* its pool: ep may be gone when it is freed;
				   * set when the pool made it, and never
				   * changed (it goes back to that pool) */
	unsigned long post_no;	  /* ep->nposted when it was posted */
	/* Its control message (an atomic or get the peer's core answers, a
	 * verification): set by the path that sends it, before the request
	 * goes on the one list where the answer looks for it (ep->am_wait,
	 * ep->get_wait, ep->verify_wait), and read nowhere else: not
	 * cleared. */
	uint64_t am_id;
	/* ... and where that message ends in the channel's send stream
	 * (rmca_ctrl_sent_end): its answer is taken only once it was
	 * written that far. Set and read as am_id; for a send by revoke
	 * message, where its REVOKE ends (ep->unacked). */
	uint64_t ctrl_end;

	/* From here to the per-path union, zero when it leaves the pool
	 * (rmca_req_alloc clears each member RMCA_REQ_CLEARED lists, and a
	 * static check below fails the build on a member it does not), but
	 * for ep, op and kind, which the taker sets; the union is the path's
	 * to set (below). First what rmca_poll hands out, in the order of
	 * struct rmca_completion, which copies it whole (checked below). */
	void *user_ctx;
	int status;
	enum rmca_op op; /* the taker's */
	size_t len;
	struct rmca_ep *ep; /* the taker's */
	uint64_t revoked_rkey;
	uint8_t held; /* enum rmca_req_held (a byte: the span has no padding) */
	bool done; /* the module completed it */
	bool needs_flush; /* a DELIVERED put on a module without remote completion */
	bool flushed; /* its delivery flush completed */
	bool emitted; /* reported: queued for rmca_poll, or returned by it */
	bool queued; /* on the completion queue (cq_next) */
	bool uncovered; /* on ep->unflushed */
	bool verifying; /* a put or get being verified (below) */
	enum rmca_path path; /* RMCA_PATH_CAS_LOOP: an atomic the core builds */
	enum rmca_req_kind kind; /* the taker's */
	/* split across rails (rails.c): parts not yet completed, and the
	 * first error among them */
	unsigned rail_parts;
	int rail_status;
	struct rmca_req *cq_next; /* the completion queue: the request is its
				   * own slot, so reporting cannot fail */
	/* a delivery flush covers puts; a put points at its flush */
	struct rmca_req *cover_next;
	struct rmca_req *covers;
	struct rmca_req *flush;

	/* What one kind of operation needs, apart: an operation is of one
	 * kind, so the paths share the space. Not cleared by the pool: the
	 * code that takes a request down a path sets every field of that
	 * path's member before anything reads it (rmca_req_path_clear where
	 * that is most of them). */
	union {
		struct {
			/* An atomic or get the peer's core answers
			 * (get_core.c): its place on ep->get_held, then on
			 * ep->am_wait or ep->get_wait, and the fence it waits
			 * for. A fence (RMCA_REQ_GET_FENCE): its place on
			 * ep->get_fences, and its number. */
			struct rmca_list core_link;
			uint64_t core_fence;
			union {
				/* atomics the core builds (CAS loop) or sends
				 * to the peer's core */
				struct {
					struct rmca_atomic aop;
					uint64_t *result;
					struct rmca_module_mr *result_mmr;
					uint64_t cas_guess;
				};
				/* a put or get that failed as a lost
				 * connection: the peer's core is asked
				 * whether the access itself was refused
				 * (ep->verify_wait) */
				struct {
					uint64_t raddr, rkey;
					size_t rlen;
					bool verified;
					int64_t verify_deadline;
					struct rmca_req *verify_next;
					/* a get the peer's core answers: its
					 * buffer */
					void *get_buf;
				};
			};
		};
		/* sends held back behind a revoke message (ep->deferred) */
		struct {
			const void *buf;
			size_t buf_len;
			struct rmca_module_mr *mmr;
			uint64_t inv_rkey; /* a send_inv by revoke message */
			uint64_t native_inv; /* a native send_inv held behind */
			uint64_t seq; /* its message number */
			bool acked;
			struct rmca_list defer_link; /* ep->deferred */
			struct rmca_req *unacked_next; /* ep->unacked, seq order */
		};
		/* one rail's part of a put, get or flush (RMCA_REQ_RAIL_PART)
		 */
		struct {
			struct rmca_req *parent;
			const void *part_buf;
			size_t part_len;
			struct rmca_module_mr *part_mmr;
			uint64_t part_raddr, part_rkey;
			int rail; /* 0: ep->conn, else rails->r[rail - 1] */
			struct rmca_req *part_next; /* rails->pending */
		};
	};
};

/* Where the per-path union starts: every one of its members starts there. */
#define RMCA_REQ_PATH_OFFSET offsetof(struct rmca_req, core_link)
_Static_assert(offsetof(struct rmca_req, buf) == RMCA_REQ_PATH_OFFSET &&
		       offsetof(struct rmca_req, parent) ==
			       RMCA_REQ_PATH_OFFSET,
	       "RMCA_REQ_PATH_OFFSET is where the union starts");

/* The common state rmca_req_alloc clears, member by member: a few stores,
 * where a memset of the span is a string instruction with its start-up. */
#define RMCA_REQ_CLEARED(X)                                                    \
	X(user_ctx)                                                            \
	X(held)                                                                \
	X(done)                                                                \
	X(needs_flush)                                                         \
	X(flushed)                                                             \
	X(emitted)                                                             \
	X(queued)                                                              \
	X(uncovered)                                                           \
	X(verifying)                                                           \
	X(status)                                                              \
	X(path)                                                                \
	X(len)                                                                 \
	X(revoked_rkey)                                                        \
	X(cq_next)                                                             \
	X(cover_next)                                                          \
	X(covers)                                                              \
	X(flush)                                                               \
	X(rail_parts)                                                          \
	X(rail_status)

/* Every byte from user_ctx to the union is a member the list names: a
 * member added to the span and not to the list makes the span longer than
 * the sum (so does padding, which the span's order avoids: keep it so). */
#define RMCA_REQ_SIZEOF_(m) +sizeof(((struct rmca_req *)0)->m)
_Static_assert(RMCA_REQ_PATH_OFFSET - offsetof(struct rmca_req, user_ctx) ==
		       0 RMCA_REQ_CLEARED(RMCA_REQ_SIZEOF_) RMCA_REQ_SIZEOF_(ep)
			       RMCA_REQ_SIZEOF_(op) RMCA_REQ_SIZEOF_(kind),
	       "a member between user_ctx and the union that rmca_req_alloc "
	       "does not clear: add it to RMCA_REQ_CLEARED (without padding)");
#undef RMCA_REQ_SIZEOF_

/* rmca_poll copies a request's completion whole from user_ctx on. */
#define RMCA_REQ_AT_(m)                                                        \
	(offsetof(struct rmca_req, m) - offsetof(struct rmca_req, user_ctx) == \
	 offsetof(struct rmca_completion, m))
_Static_assert(RMCA_REQ_AT_(status) && RMCA_REQ_AT_(op) && RMCA_REQ_AT_(len) &&
		       RMCA_REQ_AT_(ep) && RMCA_REQ_AT_(revoked_rkey) &&
		       offsetof(struct rmca_req, held) -
				       offsetof(struct rmca_req, user_ctx) ==
			       sizeof(struct rmca_completion),
	       "struct rmca_req's completion is not a struct rmca_completion");
#undef RMCA_REQ_AT_

/* A module's own bytes in a request (component.h, req_size) follow the
 * core's, at this offset from the request, ctx->req_module_size of them. */
#define RMCA_REQ_MODULE_OFFSET                                                 \
	((sizeof(struct rmca_req) + RMCA_REQ_ALIGN - 1) &                      \
	 ~(size_t)(RMCA_REQ_ALIGN - 1))

struct rmca_revoke_note {
	struct rmca_revoke_note *next;
	uint64_t seq, rkey;
};

struct rmca_ep {
	struct rmca_context *ctx;
	struct rmca_list link; /* ctx->eps */
	struct rmca_mod *mod;
	struct rmca_conn *conn;
	uint64_t token;
	bool failed;
	int fail_status;
	struct rmca_ep_attr attr;
	char peer[96]; /* host:port, for logs */
	char peer_device[64]; /* the peer's module's device */

	/* outstanding, in post order: every op a flush waits for, and apart
	 * the receives, which never hold a flush back */
	struct rmca_list reqs, recvs;
	unsigned nflushes; /* user flushes outstanding */
	struct rmca_req *unflushed; /* DELIVERED puts not yet covered */

	uint32_t peer_caps; /* of the peer's module, from its hello */
	struct rmca_ctrl *ctrl; /* the core's channel to the peer's core */
	int boot_fd; /* its socket (the bootstrap connection) */
	uint64_t am_next_id;
	/* atomics sent to the peer's core, in post order (it answers them
	 * in that order): core_link */
	struct rmca_list am_wait;
	uint64_t send_seq; /* messages posted (sends and send_invs) */
	unsigned long nposted; /* requests taken, for their post_no */
	uint64_t recv_seq; /* messages received */
	/* keys revoked for messages to come, in message order: the oldest
	 * first, where receives look, the newest last, where REVOKEs add */
	struct rmca_revoke_note *revokes, *revokes_tail;
	unsigned nrevokes; /* notes on revokes: revoke_msg.c bounds them */
	struct rmca_list deferred; /* sends behind a revoke */
	struct rmca_req *unacked, *unacked_tail; /* revokes the peer owes acks */
	/* on am_wait or deferred: at most ctx->ep_max_core_ops (by default
	 * the modules' own limit of outstanding operations), then AGAIN */
	unsigned nheld;
	struct rmca_req *verify_wait; /* failed accesses being checked */
	struct rmca_rails *rails;     /* more pairs used beside mod (rails.c) */
	uint64_t rma_bytes, rma_ops;  /* puts and gets posted on mod */
	/* Gets and atomics the peer's core answers (get_core.c), in post
	 * order: held until the fence posted for them completes, then sent
	 * (answered in order); the fences outstanding, in post order, their
	 * numbers up to fences_done all completed; rma_ops when the last one
	 * was posted. get_wait: the gets sent (atomics: am_wait). Each
	 * request on them through its core_link. */
	enum rmca_path get_short; /* gets of 1..RMCA_CTRL_GET_MAX bytes */
	struct rmca_list get_held, get_wait, get_fences;
	uint64_t fences_posted, fences_done, fenced_ops;
	int fence_status; /* the first error of a fence */
};

/* A handshake of a set (rmca_handshakes_open) ended: its endpoint, or
 * NULL and why not. */
typedef void (*rmca_handshake_done_fn)(void *owner, uintptr_t tag, int status,
				       struct rmca_ep *ep);

struct rmca_listener {
	struct rmca_context *ctx;
	struct rmca_list link; /* ctx->listeners */
	int fd;
	/* A handshake set (fd -1, no socket of its own): its owner hears of
	 * each handshake's end, and its tick runs while ticking. */
	rmca_handshake_done_fn done;
	void (*tick)(void *owner, int64_t now);
	bool ticking;
	void *owner;
	int port;
	int spare_fd; /* given up to shed a peer when out of descriptors */
	bool armed; /* fd in the epoll set for new connections */
	int64_t rest_until; /* out of descriptors: disarmed until then */
	int64_t shed_said; /* when that may be logged again */
	int64_t log_window; /* rate limit of lines about failed handshakes */
	unsigned log_lines, log_suppressed;
	/* Handshakes in progress, then endpoints ready for rmca_accept,
	 * oldest first; at most ctx->handshake_max of them. */
	struct rmca_incoming *incoming;
	int nincoming;
	unsigned refused; /* peers refused for what they sent */
	int refused_status; /* the last one's status */
};

struct rmca_mr {
	struct rmca_context *ctx;
	struct rmca_list link; /* ctx->mrs */
	void *addr;
	size_t len;
	unsigned access;
	struct rmca_module_mr **mmr; /* one per ctx->mods entry; NULL if refused */
};

/* progress.c: the completion queue, and what the event loop keeps */
struct rmca_cq {
	/* Reported requests in order, through cq_next; tailp is where the
	 * next one goes (the last one's cq_next, or head when there is none):
	 * a push takes no branch, and whether any is left is head alone. */
	struct rmca_req *head, **tailp;
	int efd;
	bool signaled;
	bool polling;	      /* inside rmca_poll: it signals what is left */
	bool work_due;	      /* some endpoint has core work (core_work) */
	/* Who may sleep in the epoll set (rmca_core.sleepers):
	 * RMCA_SLEEPER_APP once rmca_wait_fd() handed it out,
	 * RMCA_SLEEPER_CORE while the progress ops run right before the
	 * core sleeps itself. */
	uint8_t sleepers;
	bool looked;	      /* the last pass looked at the fds */
	unsigned long pushed; /* completions queued, ever */
	int hot_fd;	      /* eager fd found ready last, or -1 */
	unsigned eager_run;   /* passes in a row done by reading hot_fd */
	unsigned idle_run;    /* of those, passes that found nothing */
	bool served;	      /* the last pass's eager read served a request */
	/* Spinning without system calls (rmca_progress). */
	uint32_t polled;      /* modules that said RMCA_PROGRESS_POLLED */
	bool eps_polled;      /* every endpoint is on such a module */
	long long last_epoll; /* ns */
	unsigned spin_passes; /* since the clock was last read */
	unsigned ctrl_hot;    /* passes left that look at every one */

	/* A look that does not wait calls the kernel itself (progress.c). */
	bool epoll_direct;
	/* The context's one module with a progress op, when that module
	 * gave its word (progress_due): a pass tests that word alone. */
	const struct rmca_mod *one;
};

int rmca_cq_init(struct rmca_context *ctx);
/* ctx->mods is set (or was changed): what the passes ask of the modules'
 * progress ops, summed up (progress.c). */
void rmca_progress_mods(struct rmca_context *ctx);
/* A control channel sent or read a frame: an answer or the next request
 * is likely soon, and a spinning context looks for it at every pass for a
 * while (progress.c). */
void rmca_progress_ctrl_busy(struct rmca_context *ctx);
void rmca_cq_fini(struct rmca_context *ctx);
/* The eventfd made readable (on) or not. */
void rmca_cq_signal_set(struct rmca_cq *cq, bool on);

/* Asked at every rmca_poll and push: the eventfd is touched only on a
 * change. */
static inline void rmca_cq_signal(struct rmca_cq *cq, bool on)
{
	if (on != cq->signaled)
		rmca_cq_signal_set(cq, on);
}

/* r is reported: queued for rmca_poll (inline: every completion). */
static inline void rmca_cq_push(struct rmca_context *ctx, struct rmca_req *r)
{
	struct rmca_cq *cq = ctx->cq;

	r->cq_next = NULL;
	r->queued = true;
	*cq->tailp = r;
	cq->tailp = &r->cq_next;
	cq->pushed++;
	if (!cq->polling)
		rmca_cq_signal(cq, true);
}

/* Requests kept for reuse: as many as were ever outstanding at once, up
 * to this many, so that a post does not allocate. */
#define RMCA_REQ_SPARE_MAX 4096

/* A request the pool had none of; NULL without memory. */
struct rmca_req *rmca_req_alloc_new(struct rmca_context *ctx);

/* The pool's first spare (ctx->req_spare, which the caller saw is not
 * NULL), taken: the common state cleared, user_ctx stored where it is
 * (a store of zero the taker then overwrote was not left out by the
 * compiler, the pool's pointers in between). Inline: every operation takes
 * one; a post that saw the spare itself calls nothing before its module. */
static inline struct rmca_req *rmca_req_spare_take(struct rmca_context *ctx,
						   void *user_ctx)
{
	struct rmca_req *r = ctx->req_spare;

	ctx->posted = true;
	ctx->req_spare = r->cq_next;
	ctx->req_nspare--;
	/* Only the common state: the taker sets the fields before it, the
	 * path the union after it. */
#define RMCA_REQ_CLEAR_(m) r->m = 0;
	RMCA_REQ_CLEARED(RMCA_REQ_CLEAR_)
#undef RMCA_REQ_CLEAR_
	r->user_ctx = user_ctx;
	return r;
}

/* Requests come from, and go back to, the context's pool (inline: every
 * operation takes one and gives it back). */
static inline struct rmca_req *rmca_req_alloc_for(struct rmca_context *ctx,
						  void *user_ctx)
{
	struct rmca_req *r;

	if (!ctx->req_spare) {
		ctx->posted = true;
		r = rmca_req_alloc_new(ctx);
		if (r)
			r->user_ctx = user_ctx;
		return r;
	}
	return rmca_req_spare_take(ctx, user_ctx);
}

static inline struct rmca_req *rmca_req_alloc(struct rmca_context *ctx)
{
	return rmca_req_alloc_for(ctx, NULL);
}

static inline void rmca_req_free(struct rmca_context *ctx, struct rmca_req *r)
{
	if (ctx->req_nspare >= RMCA_REQ_SPARE_MAX) {
		free(r);
		return;
	}
	r->cq_next = ctx->req_spare;
	ctx->req_spare = r;
	ctx->req_nspare++;
}

/* The per-path union of r, zeroed: for the paths that set few of its
 * fields (held sends). */
static inline void rmca_req_path_clear(struct rmca_req *r)
{
	memset((char *)r + RMCA_REQ_PATH_OFFSET, 0,
	       sizeof(*r) - RMCA_REQ_PATH_OFFSET);
}
/* An endpoint was given work for the core's progress: delivery flushes
 * owed, held sends, accesses being verified. */
void rmca_core_work_due(struct rmca_context *ctx);
int rmca_progress(struct rmca_context *ctx, int timeout_ms);
/* fd left the event loop: it is not read eagerly any more. */
void rmca_progress_fd_gone(struct rmca_context *ctx, int fd);
/* The core op may_sleep: rmca_wait_fd() handed the epoll set out. */
bool rmca_core_may_sleep(const struct rmca_core *core);
/* The core op will_sleep: the progress ops run right before the core's
 * own sleep in the set. */
bool rmca_core_will_sleep(const struct rmca_core *core);

/* ops.c */
struct rmca_req *rmca_req_new(struct rmca_ep *ep, enum rmca_op op,
			      enum rmca_req_kind kind, void *user_ctx);
void rmca_req_abandon(struct rmca_req *r);
/* Freed once nobody holds it any more: the completion queue until
 * rmca_poll returned it, a delivery flush until that flush resolved. */
static inline void rmca_req_release(struct rmca_req *r)
{
	if (r->emitted && !r->queued && !r->flush && !r->uncovered)
		rmca_req_free(r->ctx, r);
}
void rmca_req_done(struct rmca_req *r, int status, size_t len,
		   uint64_t revoked_rkey);
/* The core op complete (component.h). */
void rmca_core_complete(const struct rmca_core *core, void *req, int status,
			size_t len, uint64_t revoked_rkey);
void rmca_ep_flush_delivered(struct rmca_ep *ep);
void rmca_ep_cancel_all(struct rmca_ep *ep, int status);
void rmca_ep_advance(struct rmca_ep *ep);

/* The paths the core builds from capabilities: paths.c chooses them,
 * atomic_core.c, cas_loop.c, revoke_msg.c and verify.c build one each,
 * core_msg.c hands them the peer core's messages (paths.h). */
void rmca_paths_choose(struct rmca_ep *ep);
void rmca_paths_describe(const struct rmca_ep *ep, char *buf, size_t len);
int rmca_emul_atomic(struct rmca_ep *ep, struct rmca_req *r);
/* Send an atomic to the peer's core now (atomic_core.c). */
int rmca_atomic_send(struct rmca_ep *ep, struct rmca_req *r);
/* Order r, a get or an atomic the peer's core answers, behind the puts and
 * gets posted on the data connection before it (get_core.c): 1 held (sent
 * once its fence completed), 0 to be sent now, or a negative status. */
int rmca_core_order(struct rmca_ep *ep, struct rmca_req *r);
/* The queues of requests the peer's core answers, and of their fences
 * (struct rmca_ep: am_wait, get_held, get_wait, get_fences): linked
 * through core_link, oldest first. */
static inline void rmca_core_add(struct rmca_list *q, struct rmca_req *r)
{
	rmca_list_add_tail(q, &r->core_link);
}

static inline struct rmca_req *rmca_core_first(struct rmca_list *q)
{
	return rmca_list_first(q, struct rmca_req, core_link);
}

static inline struct rmca_req *rmca_core_pop(struct rmca_list *q)
{
	struct rmca_req *r = rmca_core_first(q);

	if (r)
		rmca_list_del(&r->core_link);
	return r;
}
/* get_core.c: gets of 1..RMCA_GET_SHORT_MAX bytes on an endpoint whose
 * get_short path is RMCA_PATH_EMULATED are answered by the peer's core */
#define RMCA_GET_SHORT_MAX 32
static inline bool rmca_get_short(const struct rmca_ep *ep, size_t len)
{
	return len - 1 < RMCA_GET_SHORT_MAX &&
	       ep->get_short == RMCA_PATH_EMULATED;
}
int rmca_get_core(struct rmca_ep *ep, struct rmca_req *r, void *buf,
		  size_t len);
void rmca_get_fence_done(struct rmca_req *f, int status);
void rmca_get_core_close(struct rmca_ep *ep);
int rmca_cas_start(struct rmca_ep *ep, struct rmca_req *r);
bool rmca_cas_step_done(struct rmca_req *r, int status);
int rmca_revoke_send(struct rmca_ep *ep, struct rmca_req *r);
int rmca_deferred_add(struct rmca_ep *ep, struct rmca_req *r);
void rmca_deferred_post(struct rmca_ep *ep);
void rmca_recv_revoked(struct rmca_ep *ep, struct rmca_req *r);
struct rmca_ctrl_msg;
int rmca_emul_ctrl_msg(struct rmca_ep *ep, const struct rmca_ctrl_msg *m);
void rmca_emul_ctrl_lost(struct rmca_ep *ep, int status);
bool rmca_verify_start(struct rmca_ep *ep, struct rmca_req *r);
void rmca_verify_expire(struct rmca_ep *ep);

/* ep.c */
void rmca_ep_destroy(struct rmca_ep *ep);
/* A new endpoint's lists, empty; its link to ctx->eps, unlinked. */
static inline void rmca_ep_lists_init(struct rmca_ep *ep)
{
	rmca_list_init(&ep->link);
	rmca_list_init(&ep->reqs);
	rmca_list_init(&ep->recvs);
	rmca_list_init(&ep->deferred);
	rmca_list_init(&ep->am_wait);
	rmca_list_init(&ep->get_held);
	rmca_list_init(&ep->get_wait);
	rmca_list_init(&ep->get_fences);
}
/* jobs: the active half of the handshake on a bootstrap connection job.c
 * opened; fd consumed */
int rmca_ep_connect_fd(struct rmca_context *ctx, int fd, int timeout_ms,
		       struct rmca_ep **out);
/* jobs: passive handshakes on connections job.c accepted, each advanced by
 * the event loop as a listener's, never waiting; done tells each one's end,
 * from the event loop. Closed by rmca_listener_close (no done then). */
struct rmca_listener *
rmca_handshakes_open(struct rmca_context *ctx, rmca_handshake_done_fn done,
		     void (*tick)(void *owner, int64_t now), void *owner);
/* The owner's tick runs every pass of the event loop while on (its own
 * deadlines: the job's unanswered requests). */
void rmca_handshakes_tick(struct rmca_listener *l, bool on);
/* fd (consumed, also on failure) starts with the peer's hello. */
int rmca_handshakes_add(struct rmca_listener *l, int fd, uintptr_t tag);
/* Drop the handshake tagged so, without done; false if there is none. */
bool rmca_handshakes_cancel(struct rmca_listener *l, uintptr_t tag);
/* The sockets the set waits on, as poll(2) takes them: how many. */
struct pollfd;
int rmca_handshakes_pollfds(const struct rmca_listener *l, struct pollfd *pfd,
			    int max);
/* A listening socket out of descriptors (err from accept4): one waiting
 * peer closed with the spare descriptor *spare; false if none could be
 * (the caller stops watching lfd for a while). Logged as what, once a
 * minute at most (*said). */
bool rmca_listen_shed(int lfd, int *spare, int64_t *said, const char *what,
		      int port, int err);
/* The peer closed its end in an orderly way (rmca_ep_close, or its process
 * ended), rather than the connection breaking. */
bool rmca_ep_peer_closed(const struct rmca_ep *ep);
/* Handshakes of ctx's listeners: deadlines, module connects (each pass of
 * the event loop, from the first listener that has work: busy, a listener
 * of ctx->listeners that rmca_listener_busy said has some; those after it
 * are asked here). */
void rmca_listeners_progress(struct rmca_context *ctx,
			     struct rmca_listener *busy);
/* l rests, handshakes or ticks: rmca_listeners_progress has work for it. */
static inline bool rmca_listener_busy(const struct rmca_listener *l)
{
	return l->rest_until || l->incoming || l->ticking;
}

/* mr.c */
void rmca_mr_destroy(struct rmca_mr *mr);
struct rmca_mr *rmca_mr_by_key(struct rmca_ep *ep, uint64_t rkey,
			       struct rmca_module_mr **mmr);

#endif
