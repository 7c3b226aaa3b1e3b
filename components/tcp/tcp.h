/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tcp component: the whole rmca ABI in software over non-blocking TCP
 * sockets, driven by the context's epoll set. One module per context; its
 * data port opens when a first hello needs it, on the addresses of the
 * interfaces tcp_if_include/tcp_if_exclude select (or one dual-stack
 * socket on every address when neither is set), and it serves every
 * connection from the core's event loop.
 */
#ifndef RMCA_TCP_H
#define RMCA_TCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include <rmca/component.h>
#include <rmca/support/clock.h>
#include <rmca/support/container.h>
#include <rmca/support/list.h>
#include <rmca/support/range.h>

#include "frame.h"
#include "keytab.h"
#include "tcp_io.h"

#define TCP_MAX_OPS 16384 /* outstanding ops per connection, then AGAIN */
#define TCP_MAX_PENDING 64 /* accepted sockets awaiting their connect() */
#define TCP_MAX_LISTEN 16 /* data port sockets (one per selected address) */
#define TCP_SCRATCH_LEN 65536 /* where refused payloads are drained */
#define TCP_RX_BUDGET 16 /* recv() calls per wakeup, for fairness */
/* Bytes read at once: every frame that is in the socket, up to this much,
 * comes in with one recv(). A payload at least TCP_RX_DIRECT long that
 * starts at a frame boundary is read straight where it belongs; after a
 * payload of TCP_RX_BUF or more, the next header is read alone. */
#define TCP_RX_BUF 32768
#define TCP_RX_DIRECT 16384
#define TCP_SPARE_MAX 1024
/* A frame with at most this much payload is copied whole and written with
 * send() rather than sendmsg() from header and payload (tcp_conn.c). */
#define TCP_TX_COPY 1024
_Static_assert(TCP_HDR_LEN + TCP_TX_COPY <= TCP_SCRATCH_LEN,
	       "a frame copied whole fits the scratch buffer");
/* Least RMCA_tcp_max_pending_responses: a connection holds off reading only
 * with every one of a peer's outstanding requests (at most TCP_MAX_OPS)
 * read and unanswered, so nothing of the peer's waits in the socket and
 * two peers never both stop reading from each other. */
#define TCP_MIN_PENDING_RESP TCP_MAX_OPS

/* The addr() blob: versioned, little-endian. */
struct tcp_addr_blob {
	uint8_t magic[4]; /* "RTCP" */
	uint8_t version; /* TCP_PROTO_VERSION */
	uint8_t reserved[1];
	uint8_t port[2]; /* little-endian */
};

/* Why the progress op has work (tcp_module.progress_due). */
enum {
	TCP_DUE_DIRTY = 1u << 0,  /* connections on the dirty list */
	TCP_DUE_HELD = 1u << 1,	  /* connections on the held list */
	TCP_DUE_SERVED = 1u << 2, /* input read: the op says served */
	TCP_DUE_PARKED = 1u << 3, /* sockets parked, or the port resting */
};

/* One listening socket of the data port. */
struct tcp_lsock {
	struct tcp_module *m;
	int fd;
};

struct tcp_module {
	struct rmca_module base;
	/* The data port, opened when the first hello needs its address: one
	 * socket per address of the selected interfaces, or one on every
	 * address when no interface list is set. */
	struct tcp_lsock ls[TCP_MAX_LISTEN];
	int nls;
	int want_port; /* tcp_port; 0: any free port */
	int spare_fd; /* kept to shed a peer when out of descriptors */
	long long lfd_rest_until; /* sockets disarmed until then (ms); 0: armed */
	int port;
	size_t sndbuf, rcvbuf; /* 0: kernel default */
	struct tcp_keytab keys;
	struct rmca_list pending; /* struct tcp_pending */
	int npending;
	struct rmca_list conns; /* struct tcp_conn, for mr_dereg */
	/* Connections with frames held back for the next progress pass, or
	 * with buffered input to go on with (struct tcp_conn, dirty_link). */
	struct rmca_list dirty;
	bool served; /* input read since the last progress op */
	/* Non-zero when the progress op has work (the core's word,
	 * progress_due), a bit per reason (TCP_DUE_*). Set by whatever makes
	 * such work; the core zeroes it before each call, and the op sets
	 * it again for what it leaves. A list emptied elsewhere (a reply's
	 * post ends the hold) takes its bit back: no call for nothing. */
	unsigned progress_due;
	/* Connections holding counts for a reply with nothing armed to bring
	 * them back (struct tcp_conn, held_link): no one sleeps on the set
	 * yet (may_sleep), so the progress op after the next one ends their
	 * hold. pass counts the progress ops. */
	struct rmca_list held;
	unsigned long pass;
	/* Frames of answers and counts kept for reuse (at most TCP_SPARE_MAX),
	 * so that a message costs no allocation; an op's own record is in
	 * the core's request, at req_offset (component.h, req_size). */
	struct rmca_list spare_outs;
	int nspare_outs;
	size_t req_offset;
	int max_answers; /* RMCA_tcp_max_pending_responses */
	struct rmca_list awaiting; /* passive connects without their socket */
	long long next_expiry; /* of pending sockets, in ms; 0: none */
	int pending_ms; /* how long one may wait: RMCA_connect_timeout */
	long long log_next_ms; /* rate limit of eviction lines */
	unsigned log_suppressed;
	char *scratch;
	/* The socket calls of the data path go straight to the kernel
	 * (tcp_io.h): recv() and the rest are the C library's own. */
	bool io_direct;
	/* With an interface list in force, accepts must arrive on one of
	 * these local addresses. */
	struct tcp_laddr *laddrs;
	int nladdrs;
};

struct tcp_mr {
	struct rmca_module_mr base;
	struct tcp_module *mod;
	char *addr;
	size_t len;
	unsigned access;
	struct rmca_list keys; /* struct tcp_rkey, live ones only */
};

/*
 * A live key of a region. A use-once region's keys are each bound to the
 * connection they were handed out on, as a verbs memory window to its QP:
 * through any other they name nothing. Other keys serve every connection.
 */
struct tcp_rkey {
	struct rmca_list mr_link; /* mr->keys */
	struct rmca_list conn_link; /* conn->keys, when bound */
	struct tcp_mr *mr;
	const struct tcp_conn *conn; /* NULL: not bound */
	uint64_t key;
};

/* One frame on a connection's output queue. */
struct tcp_out {
	struct rmca_list link;
	uint8_t hdr[TCP_HDR_LEN];
	const char *payload;
	size_t len; /* payload bytes */
	size_t off; /* bytes of hdr + payload already written */
	bool owned; /* control/response frame: freed once written */
	bool answer; /* counted in the connection's nanswers */
	bool by_count; /* a SEND or PUT: answered by the peer's acked count */
	bool kept; /* a connection's own ACK frame: never freed */
	/* A GET answer: the registered region its payload is read from. */
	const struct tcp_mr *mr;
};

enum tcp_op_kind {
	TCP_OP_SEND,
	TCP_OP_RECV,
	TCP_OP_PUT,
	TCP_OP_GET,
	TCP_OP_ATOMIC,
	TCP_OP_FLUSH,
};

/* An operation posted on a connection: kept in the core's request
 * (component.h, req_size), from the post until it completes. */
struct tcp_op {
	struct rmca_list link; /* c->ops in post order, or c->recvs */
	struct rmca_list qlink; /* c->sendq, then c->unacked or c->inflight */
	enum tcp_op_kind kind;
	void *req;
	uint64_t id;
	char *buf;
	size_t len;
	uint64_t inv_rkey; /* send_inv */
	uint64_t *result; /* atomic */
	const struct tcp_mr *mr; /* region of buf or result */
	struct tcp_out out; /* the request frame */
};

_Static_assert(sizeof(struct tcp_op) <= RMCA_COMPONENT_REQ_MAX &&
		       _Alignof(struct tcp_op) <= RMCA_REQ_ALIGN,
	       "an op fits the bytes of a request a module may have");

/* The op kept in the request req, the cookie of the core's post. */
static inline struct tcp_op *tcp_op_of(const struct tcp_module *m, void *req)
{
	return (struct tcp_op *)(void *)((char *)req + m->req_offset);
}

struct tcp_rx {
	char *buf; /* TCP_RX_BUF bytes read ahead ... */
	size_t start, end; /* ... of which [start, end) are not used yet */
	bool payload; /* reading the payload of f */
	/* The last payload was at least TCP_RX_BUF long: the next header is
	 * read alone, so that a payload as long after it is read straight
	 * to its place too, not into buf and copied from there. */
	bool hdr_alone;
	struct tcp_frame f;
	char *dst; /* payload destination ... */
	const struct tcp_mr *mr; /* ... in this region (PUT) */
	size_t dst_left; /* ... bytes still to land there */
	size_t drain_left; /* then bytes to discard */
	int status; /* outcome of the frame being read */
	uint64_t revoked; /* SEND: key revoked by it */
	struct tcp_op *op; /* RECV or GET being filled */
};

struct tcp_conn {
	struct rmca_conn base;
	struct tcp_module *mod;
	struct rmca_list link; /* in mod->conns */
	struct rmca_list dirty_link; /* in mod->dirty, when linked */
	struct rmca_list held_link; /* in mod->held, when linked */
	unsigned long hold_pass; /* mod->pass when the hold began */
	struct rmca_list keys; /* struct tcp_rkey bound to this connection */
	int fd; /* -1 once closed */
	void *cookie;
	bool registered; /* fd in the core's epoll set */
	bool failed;
	bool closing; /* failed, final frame still going out */
	/* A message was delivered into a receive by this wakeup: the
	 * application may answer it, and the counts and answers of the
	 * wakeup may wait for that message to carry them ... */
	bool delivered;
	/* ... for one pass at most. Once the application may sleep on the
	 * wait fd (may_sleep), something must keep it readable meanwhile,
	 * so that they go even if it does: the message itself, when it was
	 * read with MSG_PEEK and left in the socket (peeked), else EPOLLOUT.
	 * Before that, nothing sleeps but the core, which runs the progress
	 * op first: the connection waits on mod->held. */
	bool hold;
	/* The last hold ended with a frame to carry the counts (the
	 * application answers) and the application may sleep: read with
	 * MSG_PEEK while that lasts. */
	bool peek;
	/* Bytes at the head of the socket already in rx.buf (read with
	 * MSG_PEEK): taken out when the hold ends or before the next read. */
	size_t peeked;
	int fail_status;
	uint32_t events;
	uint64_t next_id;
	int nops;
	/* Answers to the peer's requests not yet written; at max_answers the
	 * connection stops reading until some are. */
	int nanswers;
	struct rmca_list ops; /* send/put/get/atomic/flush, post order */
	struct rmca_list recvs; /* posted receives, oldest first */
	struct rmca_list sendq; /* sends waiting for a credit */
	struct rmca_list unacked; /* sends and puts queued, awaiting the count */
	struct rmca_list inflight; /* gets and atomics, awaiting their RESP */
	struct rmca_list outq; /* struct tcp_out */
	/* The frame of the counts alone: encoded once, queued only on an
	 * empty queue, so never twice (rmca_tcp_ack_queue). */
	struct tcp_out ack;
	/*
	 * The counts of the wire (frame.h), all modulo 2^32. As the target:
	 * SENDs delivered plus PUTs placed, receives posted, SENDs that
	 * arrived, and the first two as last written. As the initiator: the
	 * peer's two counts as last read, SEND and PUT frames written whole,
	 * SENDs queued against the peer's credits.
	 */
	uint32_t done_in, granted, msgs_in, done_told, granted_told;
	uint32_t acked, credits, by_count_out, msgs_out;
	struct tcp_rx rx;
	char peer[80]; /* "host:port", for log lines */
};

/*
 * The core holds a connection, a connection being set up and a region by
 * the base each embeds (component.h). The entry points the ops table names
 * take the core's types and go from the base to tcp's own object and back
 * through these helpers, first thing; below them tcp sees its own objects
 * only. NULL stays NULL (a send without a region, mr_rkey without a
 * connection); with the base first that costs no branch.
 */
static inline struct tcp_conn *tcp_conn_from_base(struct rmca_conn *c)
{
	return c ? rmca_container_of(c, struct tcp_conn, base) : NULL;
}

static inline struct rmca_conn *tcp_conn_base(struct tcp_conn *c)
{
	return c ? &c->base : NULL;
}

static inline struct tcp_mr *tcp_mr_from_base(struct rmca_module_mr *mr)
{
	return mr ? rmca_container_of(mr, struct tcp_mr, base) : NULL;
}

static inline struct rmca_module_mr *tcp_mr_base(struct tcp_mr *mr)
{
	return mr ? &mr->base : NULL;
}

/* tcp_module.c */
int rmca_tcp_module_create(const struct rmca_core *core, const char *device,
			   struct tcp_module **out);
void rmca_tcp_module_destroy(struct tcp_module *m);
/* 1 if addr is a tcp addr() blob this module speaks to, else 0 and why. */
int rmca_tcp_addr_check(const void *addr, size_t len, char *why,
			size_t why_len);
/* The mr_* ops. */
int rmca_tcp_mr_reg(struct rmca_module *mod, void *addr, size_t len,
		    unsigned access, struct rmca_module_mr **out);
int rmca_tcp_mr_dereg(struct rmca_module_mr *mr);
/* mr's key for c (NULL: a key any connection may use); 0 without one. */
uint64_t rmca_tcp_mr_rkey(struct rmca_module_mr *mr, struct rmca_conn *c);

/* tcp_sock.c */
int rmca_tcp_sock_setup(struct tcp_module *m, int fd);
void rmca_tcp_sockname(int fd, bool peer, char *buf, size_t len);

/* tcp_listen.c */
/* Open the data port if it is not open yet. */
int rmca_tcp_listen(struct tcp_module *m);
void rmca_tcp_listen_close(struct tcp_module *m);
void rmca_tcp_pending_free_all(struct tcp_module *m);
/* The socket parked under token (taken out of the epoll set), or -1. */
int rmca_tcp_pending_take(struct tcp_module *m, uint64_t token);
/* Close parked sockets past their deadline (the module's progress op). */
int rmca_tcp_pending_expire(struct rmca_module *mod);

/* tcp_connect.c: the connect_* ops */
int rmca_tcp_connect_start(struct rmca_module *mod,
			   const struct rmca_conn_args *a,
			   struct rmca_connecting **out);
int rmca_tcp_connect_poll(struct rmca_connecting *h, struct rmca_conn **out);
void rmca_tcp_connect_abort(struct rmca_connecting *h);
/* A socket presented token: hand it to the connect awaiting it (true). */
bool rmca_tcp_connecting_claim(struct tcp_module *m, uint64_t token, int fd);

/* tcp_conn.c */
int rmca_tcp_conn_create(struct tcp_module *m, int fd, void *cookie,
			 struct tcp_conn **out);
void rmca_tcp_conn_destroy(struct tcp_conn *c);
/* Before a disconnect: answers held for a reply go out if they can. */
void rmca_tcp_conn_close_out(struct tcp_conn *c);
void rmca_tcp_conn_fail(struct tcp_conn *c, int status, struct tcp_out *final);
void rmca_tcp_out_free(struct tcp_module *m, struct tcp_out *o);
void rmca_tcp_spares_free(struct tcp_module *m);
void rmca_tcp_out_flush(struct tcp_conn *c);
/* Write a post's frame o, not queued, on a connection with nothing queued:
 * see rmca_tcp_out_post(). */
void rmca_tcp_out_direct(struct tcp_conn *c, struct tcp_out *o);
/* rmca_tcp_out_direct() of a frame of at most TCP_TX_COPY payload bytes
 * whose header is encoded in the module's scratch buffer: see
 * rmca_tcp_out_post_scratch(). */
void rmca_tcp_out_direct_scratch(struct tcp_conn *c, struct tcp_out *o);
/* Write the answer f (payload pl of len bytes, in region) at once: see
 * rmca_tcp_answer_now(). False: nothing written, queue it. */
bool rmca_tcp_answer_direct(struct tcp_conn *c, const struct tcp_frame *f,
			    const char *pl, size_t len,
			    const struct tcp_mr *region);
/* The module's progress op: held-back frames, then parked sockets; and
 * the word that says it has some (module op progress_due). */
int rmca_tcp_progress(struct rmca_module *mod);
unsigned *rmca_tcp_progress_due(struct rmca_module *mod);
/* The flushes now at the head of c->ops end: all before them have. */
void rmca_tcp_flushes_done(struct tcp_conn *c);
void rmca_tcp_complete_all(struct tcp_conn *c, int status);
void rmca_tcp_discard(struct tcp_conn *c);
void rmca_tcp_conn_mr_gone(struct tcp_conn *c, const struct tcp_mr *mr);

/* tcp_rx.c */
void rmca_tcp_rx(struct tcp_conn *c);

/* tcp_target.c */
uint64_t rmca_tcp_revoke(struct tcp_module *m, const struct tcp_conn *c,
			 uint64_t rkey);
/* A fresh key of mr, bound to c if not NULL; NULL without memory or key. */
struct tcp_rkey *rmca_tcp_rkey_new(struct tcp_mr *mr, struct tcp_conn *c);
void rmca_tcp_rkey_free(struct tcp_rkey *k);

/* tcp_ops.c: the data operations of the ops table */
void rmca_tcp_pump_sends(struct tcp_conn *c);
/* Queue the frame of nothing but the counts, c->ack (outq is empty). */
void rmca_tcp_ack_queue(struct tcp_conn *c);
int rmca_tcp_send(struct rmca_conn *c, const void *buf, size_t len,
		  struct rmca_module_mr *mr, void *req);
int rmca_tcp_send_inv(struct rmca_conn *c, const void *buf, size_t len,
		      struct rmca_module_mr *mr, uint64_t rkey, void *req);
int rmca_tcp_recv(struct rmca_conn *c, void *buf, size_t len,
		  struct rmca_module_mr *mr, void *req);
int rmca_tcp_put(struct rmca_conn *c, const void *buf, size_t len,
		 struct rmca_module_mr *mr, uint64_t raddr, uint64_t rkey,
		 void *req);
int rmca_tcp_get(struct rmca_conn *c, void *buf, size_t len,
		 struct rmca_module_mr *mr, uint64_t raddr, uint64_t rkey,
		 void *req);
int rmca_tcp_atomic(struct rmca_conn *c, const struct rmca_atomic *op,
		    uint64_t *result, struct rmca_module_mr *mr, void *req);
int rmca_tcp_flush(struct rmca_conn *c, void *req);
void rmca_tcp_disconnect(struct rmca_conn *c);

/*
 * Asked several times per message on the fast path: inline.
 */
static inline void rmca_tcp_out_queue(struct tcp_conn *c, struct tcp_out *o)
{
	rmca_list_add_tail(&c->outq, &o->link);
}

/* n bytes from s to d: a payload of 8 to 16 bytes, the common small
 * message, as two words that overlap unless n is 16, without a call. */
static inline void rmca_tcp_copy(char *d, const char *s, size_t n)
{
	uint64_t a, b;

	if (n < 8 || n > 16) {
		memcpy(d, s, n);
		return;
	}
	memcpy(&a, s, 8);
	memcpy(&b, s + n - 8, 8);
	memcpy(d, &a, 8);
	memcpy(d + n - 8, &b, 8);
}

/* A frame of f and its payload pl, from the spares or allocated; NULL
 * without memory. Inline: an answer takes one, and its header's zero
 * fields are known where it is built. */
static inline struct tcp_out *rmca_tcp_out_new(struct tcp_module *m,
					       const struct tcp_frame *f,
					       const void *pl, size_t len)
{
	struct tcp_out *o =
		rmca_list_first(&m->spare_outs, struct tcp_out, link);

	if (o) {
		rmca_list_del(&o->link);
		m->nspare_outs--;
	} else if (!(o = malloc(sizeof(*o)))) {
		return NULL;
	}
	rmca_tcp_frame_encode(f, o->hdr);
	rmca_list_init(&o->link);
	o->payload = pl;
	o->len = len;
	o->off = 0;
	o->owned = true;
	o->answer = false;
	o->by_count = false;
	o->kept = false;
	o->mr = NULL;
	return o;
}

/* An answer to the peer: counted, so that the peer cannot queue more. */
static inline void rmca_tcp_answer_queue(struct tcp_conn *c, struct tcp_out *o)
{
	o->answer = true;
	c->nanswers++;
	rmca_tcp_out_queue(c, o);
}

/* True while c holds off reading: too many answers wait to be written. */
static inline bool rmca_tcp_rx_held(const struct tcp_conn *c)
{
	return !c->failed && c->nanswers >= c->mod->max_answers;
}

/* True when a request posted now may wait for the next pass: answers to
 * requests already out will wake the context, or the socket is full. */
static inline bool rmca_tcp_out_busy(const struct tcp_conn *c)
{
	return !rmca_list_empty(&c->inflight) ||
	       !rmca_list_empty(&c->unacked) ||
	       (!rmca_list_empty(&c->outq) && (c->events & EPOLLOUT) &&
		!c->hold);
}

/* Complete frames are buffered and c may read them. */
static inline bool rmca_tcp_rx_ready(const struct tcp_conn *c)
{
	const struct tcp_rx *rx = &c->rx;

	/* What is buffered first: after a read, mostly nothing is left. */
	if (rx->payload ? rx->start == rx->end
			: rx->end - rx->start < TCP_HDR_LEN)
		return false;
	return !c->failed && c->fd >= 0 && !rmca_tcp_rx_held(c);
}

/*
 * The counts the peer has not been told should go without waiting for
 * another frame to carry them. A send or put done waits for no other
 * frame: its initiator may wait for nothing else. Receives wait while the
 * peer knows of more unused ones than there are untold.
 */
static inline bool rmca_tcp_counts_due(const struct tcp_conn *c)
{
	uint32_t untold = c->granted - c->granted_told;
	uint32_t usable = c->granted_told - c->msgs_in;

	return c->done_in != c->done_told || (untold && untold >= usable);
}

/* c has frames to write or to read at the next progress pass. */
static inline void rmca_tcp_dirty_add(struct tcp_conn *c)
{
	if (!rmca_list_linked(&c->dirty_link))
		rmca_list_add_tail(&c->mod->dirty, &c->dirty_link);
	c->mod->progress_due |= TCP_DUE_DIRTY;
}

/* Frames were queued by a post: write them now, or (defer) leave them for
 * the next progress pass, which the caller knows is coming. Inline in
 * every post. */
static inline void rmca_tcp_out_kick(struct tcp_conn *c, bool defer)
{
	if (defer && c->fd >= 0 && !c->failed)
		rmca_tcp_dirty_add(c);
	else
		rmca_tcp_out_flush(c);
}

/*
 * A post's frame o, not queued yet. With nothing queued before it and
 * nothing due to bring the context back (!defer), it is written at once,
 * without going through the queue; a
 * socket that takes only part of it, or none, leaves the rest queued
 * (rmca_tcp_out_direct). Otherwise it is queued, and written now or at the
 * next pass, as rmca_tcp_out_kick() says.
 */
static inline void rmca_tcp_out_post(struct tcp_conn *c, struct tcp_out *o,
				     bool defer)
{
	if (!defer && rmca_list_empty(&c->outq) && c->fd >= 0 && !c->failed) {
		rmca_tcp_out_direct(c, o);
		return;
	}
	rmca_tcp_out_queue(c, o);
	rmca_tcp_out_kick(c, defer);
}

/*
 * rmca_tcp_out_post() of a post's frame o whose header is not encoded
 * yet: f. Where o goes at once and is copied whole anyway (at most
 * TCP_TX_COPY payload bytes), the header is encoded straight into the
 * module's scratch buffer, where the write copies the frame to; else
 * into o, as rmca_tcp_out_post() takes it.
 */
static inline __attribute__((always_inline)) void
rmca_tcp_out_post_frame(struct tcp_conn *c, struct tcp_out *o,
			const struct tcp_frame *f, bool defer)
{
	if (!defer && o->len <= TCP_TX_COPY && rmca_list_empty(&c->outq) &&
	    c->fd >= 0 && !c->failed) {
		rmca_tcp_frame_encode(f, (uint8_t *)c->mod->scratch);
		rmca_tcp_out_direct_scratch(c, o);
		return;
	}
	rmca_tcp_frame_encode(f, o->hdr);
	rmca_tcp_out_post(c, o, defer);
}

/* The live key rkey as seen from c, or NULL. */
static inline struct tcp_rkey *rmca_tcp_key_on(struct tcp_module *m,
					       const struct tcp_conn *c,
					       uint64_t rkey)
{
	struct tcp_rkey *k = rmca_tcp_keytab_find(&m->keys, rkey);

	return k && (!k->conn || k->conn == c) ? k : NULL;
}

/*
 * May c's peer have need on [raddr, raddr + len) under rkey? 0 with *ptr
 * (and *region, if not NULL) set, or RMCA_ERR_REMOTE_ACCESS. Inline: every
 * put, get and atomic served asks, each with its own need.
 */
static inline int rmca_tcp_access(struct tcp_module *m,
				  const struct tcp_conn *c, uint64_t rkey,
				  uint64_t raddr, uint64_t len, unsigned need,
				  char **ptr, const struct tcp_mr **region)
{
	struct tcp_rkey *k = rmca_tcp_key_on(m, c, rkey);
	struct tcp_mr *mr = k ? k->mr : NULL;
	uint64_t base;

	if (!mr || (mr->access & need) != need)
		return RMCA_ERR_REMOTE_ACCESS;
	base = (uint64_t)(uintptr_t)mr->addr;
	if (!rmca_range_inside(base, mr->len, raddr, len))
		return RMCA_ERR_REMOTE_ACCESS;
	if (need == RMCA_ACCESS_REMOTE_ATOMIC && (raddr & 7))
		return RMCA_ERR_REMOTE_ACCESS;
	*ptr = mr->addr + (raddr - base);
	if (region)
		*region = mr;
	return 0;
}

/* Off every list: the op's bytes go back with its request. */
static inline void rmca_tcp_op_release(struct tcp_op *op)
{
	rmca_list_del(&op->link);
	if (op->kind == TCP_OP_RECV)
		return; /* on c->recvs alone, with no frame (op_new) */
	rmca_list_del(&op->qlink);
	if (rmca_list_linked(&op->out.link))
		rmca_list_del(&op->out.link);
}

/* op ends with status. Inline: every message or answer read ends one. */
static inline void rmca_tcp_op_done(struct tcp_conn *c, struct tcp_op *op,
				    int status, size_t len, uint64_t revoked)
{
	const struct rmca_core *core = c->mod->base.core;
	void *req = op->req;

	rmca_tcp_op_release(op);
	c->nops--;
	core->ops->complete(core, req, status, len, revoked);
	/* A flush ends once everything posted before it has ended. */
	op = rmca_list_first(&c->ops, struct tcp_op, link);
	if (op && op->kind == TCP_OP_FLUSH)
		rmca_tcp_flushes_done(c);
}

/* A receive delivered, inline where a message lands: on c->recvs alone
 * (its qlink and frame are never linked), and no flush waits for a
 * receive, so none is looked for. */
static inline void rmca_tcp_recv_done(struct tcp_conn *c, struct tcp_op *op,
				      size_t len)
{
	const struct rmca_core *core = c->mod->base.core;

	rmca_list_unlink(&op->link);
	c->nops--;
	core->ops->complete(core, op->req, RMCA_OK, len, 0);
}

/* A send or put acknowledged by the peer's count, its qlink already off
 * c->unacked: written whole before it could be counted, so its frame is
 * on no queue either; a flush may wait behind it. */
static inline void rmca_tcp_acked_done(struct tcp_conn *c, struct tcp_op *op)
{
	const struct rmca_core *core = c->mod->base.core;

	rmca_list_unlink(&op->link);
	c->nops--;
	core->ops->complete(core, op->req, RMCA_OK, 0, 0);
	op = rmca_list_first(&c->ops, struct tcp_op, link);
	if (op && op->kind == TCP_OP_FLUSH)
		rmca_tcp_flushes_done(c);
}

#define tcp_log(m, lvl, fmt, ...)                                   \
	(m)->base.core->ops->log((m)->base.core, (lvl), "tcp: " fmt, \
				 ##__VA_ARGS__)

#endif
