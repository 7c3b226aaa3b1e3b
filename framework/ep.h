/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Endpoints, requests and regions: what the framework keeps between a
 * public call and the completion it owes for it.
 */
#ifndef RMCA_EP_H
#define RMCA_EP_H

#include <stdbool.h>

#include "internal.h"

enum rmca_req_kind {
	RMCA_REQ_USER, /* owes the user one completion */
	RMCA_REQ_DELIVERY_FLUSH, /* internal: proves the puts it covers */
};

struct rmca_req {
	struct rmca_req *prev, *next; /* ep->reqs, in post order */
	struct rmca_ep *ep;
	void *user_ctx;
	enum rmca_op op;
	enum rmca_req_kind kind;
	bool done; /* the module completed it */
	bool needs_flush; /* a DELIVERED put on a module without remote completion */
	bool flushed; /* its delivery flush completed */
	bool emitted;
	bool uncovered; /* on ep->unflushed */
	int status;
	size_t len;
	uint64_t revoked_rkey;
	/* a delivery flush covers puts; a put points at its flush */
	struct rmca_req *cover_next;
	struct rmca_req *covers;
	struct rmca_req *flush;
};

struct rmca_ep {
	struct rmca_context *ctx;
	struct rmca_ep *prev, *next; /* ctx->eps */
	struct rmca_mod *mod;
	struct rmca_conn *conn;
	int ctrl_fd; /* the bootstrap socket, kept to notice the peer */
	uint64_t token;
	bool failed;
	int fail_status;
	struct rmca_ep_attr attr;
	char peer[96]; /* host:port, for logs */

	struct rmca_req *reqs_head, *reqs_tail; /* outstanding, post order */
	unsigned nflushes; /* user flushes outstanding */
	struct rmca_req *unflushed; /* DELIVERED puts not yet covered */
};

struct rmca_listener {
	struct rmca_context *ctx;
	struct rmca_listener *prev, *next;
	int fd;
	int port;
};

struct rmca_mr {
	struct rmca_context *ctx;
	struct rmca_mr *prev, *next;
	void *addr;
	size_t len;
	unsigned access;
	struct rmca_module_mr **mmr; /* one per ctx->mods entry; NULL if refused */
};

/* progress.c */
int rmca_cq_init(struct rmca_context *ctx);
void rmca_cq_fini(struct rmca_context *ctx);
int rmca_cq_push(struct rmca_context *ctx, const struct rmca_completion *c);
int rmca_progress(struct rmca_context *ctx, int timeout_ms);

/* ops.c */
struct rmca_req *rmca_req_new(struct rmca_ep *ep, enum rmca_op op,
			      enum rmca_req_kind kind, void *user_ctx);
void rmca_req_abandon(struct rmca_req *r);
void rmca_req_done(struct rmca_req *r, int status, size_t len,
		   uint64_t revoked_rkey);
void rmca_ep_flush_delivered(struct rmca_ep *ep);
void rmca_ep_cancel_all(struct rmca_ep *ep, int status);

/* ep.c */
void rmca_ep_destroy(struct rmca_ep *ep);

/* mr.c */
void rmca_mr_destroy(struct rmca_mr *mr);

/* Doubly linked lists with head pointers, for the context's lists. */
#define RMCA_LIST_ADD(head, e)            \
	do {                              \
		(e)->prev = NULL;         \
		(e)->next = (head);       \
		if (head)                 \
			(head)->prev = (e); \
		(head) = (e);             \
	} while (0)
#define RMCA_LIST_DEL(head, e)                    \
	do {                                      \
		if ((e)->prev)                    \
			(e)->prev->next = (e)->next; \
		else                              \
			(head) = (e)->next;       \
		if ((e)->next)                    \
			(e)->next->prev = (e)->prev; \
		(e)->prev = (e)->next = NULL;     \
	} while (0)

#endif
