// SPDX-License-Identifier: BSD-3-Clause
/*
 * The endpoint of a context to itself, as a verbs QP connected to its own
 * QP number: its messages land in the receives posted on it, its puts,
 * gets and atomics act on this context's registered memory through the
 * same key checks a peer meets, and a bad access or a receive too small
 * fails it as it fails any endpoint.
 *
 * It is a module of the core ("self", as Open MPI's btl/self and UCX's
 * self transport), not of a component: no transport can connect a context
 * to itself without a second thread (shm and the verbs components connect
 * in one blocking call per side), and none is needed to copy within one
 * address space. The core's request lists, flush ordering and failure
 * rules apply to it unchanged: it is driven through the ordinary module
 * ops. Its atomics run on the CPU, so in atomic mode device (only the NIC
 * may touch a word) it has none, as a peer over a CPU-executing transport.
 *
 * Everything completes inside the call that makes it possible: a send when
 * a receive takes it (it waits for one, as flow control makes it wait on
 * any endpoint), everything else at once.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rmca/atomic_ops.h>
#include <rmca/support/range.h>

#include "ep.h"
#include "self.h"

/* Messages waiting for a receive; past that a send is refused with
 * RMCA_ERR_AGAIN. */
#define SELF_MAX_SENDS 4096

struct self_module {
	struct rmca_module base;
	struct rmca_comp comp;
	struct rmca_list mrs; /* every registration: the key table */
};

/* A use-once key, valid on the connection it was handed out on. */
struct self_key {
	struct self_key *next;
	uint64_t key;
	struct self_conn *conn;
};

struct self_mr {
	struct rmca_module_mr base;
	struct self_module *m;
	struct rmca_list link; /* m->mrs */
	char *addr;
	size_t len;
	unsigned access;
	uint64_t key;	       /* regions not use-once: one key */
	struct self_key *once; /* use-once regions: one per connection */
};

/* A posted send or receive, waiting for its other half. */
struct self_msg {
	struct self_msg *next;
	void *req;
	void *buf;
	size_t len;
	uint64_t inv; /* send_inv: the key it revokes */
};

struct self_queue {
	struct self_msg *head, **tail;
	unsigned n;
};

struct self_conn {
	struct rmca_conn base;
	struct self_module *m;
	void *cookie;
	struct self_queue sends, recvs;
	bool failed;
};

/* The core's handles of a connection and a region, and back. NULL stays
 * NULL (a send without a region). */
static struct self_conn *self_conn_from_base(struct rmca_conn *c)
{
	return c ? rmca_container_of(c, struct self_conn, base) : NULL;
}

static struct rmca_conn *self_conn_base(struct self_conn *c)
{
	return c ? &c->base : NULL;
}

static struct self_mr *self_mr_from_base(struct rmca_module_mr *mr)
{
	return mr ? rmca_container_of(mr, struct self_mr, base) : NULL;
}

static struct rmca_module_mr *self_mr_base(struct self_mr *mr)
{
	return mr ? &mr->base : NULL;
}

static const struct rmca_component self_component = {
	.abi_version = RMCA_COMPONENT_ABI_VERSION,
	.name = "self",
	.version = PACKAGE_VERSION,
	.description = "a context's endpoint to itself (core)",
};

static struct self_module *self_of(struct rmca_module *mod)
{
	return rmca_container_of(mod, struct self_module, base);
}

static const struct rmca_core *core_of(const struct self_conn *c)
{
	return c->m->base.core;
}

/* ---- keys ---- */

/* The region and the connection a key belongs to (conn NULL: any). */
static struct self_mr *key_find(struct self_module *m, uint64_t key,
				struct self_conn **conn)
{
	struct rmca_list *l;

	if (!key)
		return NULL;
	rmca_list_for_each(l, &m->mrs)
	{
		struct self_mr *mr = rmca_list_entry(l, struct self_mr, link);

		if (mr->key == key) {
			*conn = NULL;
			return mr;
		}
		for (struct self_key *k = mr->once; k; k = k->next) {
			if (k->key == key) {
				*conn = k->conn;
				return mr;
			}
		}
	}
	return NULL;
}

/* A fresh random key, non-zero, bit 63 set exactly for use-once. */
static uint64_t key_new(struct self_module *m, bool once)
{
	struct self_conn *c;

	for (int tries = 0; tries < 16; tries++) {
		uint64_t k = 0;

		if (m->base.core->ops->random(&k, sizeof(k)))
			return 0;
		k = once ? k | RMCA_KEY_USE_ONCE : k & ~RMCA_KEY_USE_ONCE;
		if (k && !key_find(m, k, &c))
			return k;
	}
	return 0;
}

static int self_mr_reg(struct rmca_module *mod, void *addr, size_t len,
		       unsigned access, struct rmca_module_mr **out)
{
	struct self_module *m = self_of(mod);
	struct self_mr *mr = calloc(1, sizeof(*mr));

	if (!mr)
		return RMCA_ERR_NO_MEMORY;
	mr->base.module = &m->base;
	mr->m = m;
	mr->addr = addr;
	mr->len = len;
	mr->access = access;
	if (!(access & RMCA_MR_USE_ONCE) && !(mr->key = key_new(m, false))) {
		free(mr);
		return RMCA_ERR_AGAIN;
	}
	rmca_list_add(&m->mrs, &mr->link);
	*out = self_mr_base(mr);
	return 0;
}

static int self_mr_dereg(struct rmca_module_mr *bmr)
{
	struct self_mr *mr = self_mr_from_base(bmr);

	while (mr->once) {
		struct self_key *k = mr->once;

		mr->once = k->next;
		free(k);
	}
	rmca_list_del(&mr->link);
	free(mr);
	return 0;
}

static uint64_t self_mr_rkey(struct rmca_module_mr *bmr, struct rmca_conn *bc)
{
	struct self_conn *c = self_conn_from_base(bc);
	struct self_mr *mr = self_mr_from_base(bmr);
	struct self_key *k;

	if (!(mr->access & RMCA_MR_USE_ONCE))
		return mr->key;
	for (k = mr->once; k; k = k->next)
		if (k->conn == c)
			return k->key;
	k = calloc(1, sizeof(*k));
	if (!k)
		return 0;
	k->key = key_new(mr->m, true);
	if (!k->key) {
		free(k);
		return 0;
	}
	k->conn = c;
	k->next = mr->once;
	mr->once = k;
	return k->key;
}

static int self_key_match(struct rmca_module_mr *bmr, struct rmca_conn *bc,
			  uint64_t rkey)
{
	struct self_conn *c = self_conn_from_base(bc);
	struct self_mr *mr = self_mr_from_base(bmr);
	struct self_conn *kc;

	return key_find(mr->m, rkey, &kc) == mr && (!kc || kc == c);
}

/* End a use-once key of c; 1 if it was one. */
static int key_revoke(struct self_mr *mr, struct self_conn *c, uint64_t rkey)
{
	for (struct self_key **pp = &mr->once; *pp; pp = &(*pp)->next) {
		struct self_key *k = *pp;

		if (k->key == rkey && k->conn == c) {
			*pp = k->next;
			free(k);
			return 1;
		}
	}
	return 0;
}

static int self_revoke(struct rmca_module_mr *mr, struct rmca_conn *c,
		       uint64_t rkey)
{
	key_revoke(self_mr_from_base(mr), self_conn_from_base(c), rkey);
	return 0;
}

/* What a remote access with rkey may touch: 0 and *p, or
 * RMCA_ERR_REMOTE_ACCESS (unknown or revoked key, a key of another
 * connection, no permission, out of bounds). */
static int access_check(struct self_conn *c, uint64_t rkey, uint64_t raddr,
			size_t len, unsigned need, char **p)
{
	struct self_conn *kc;
	struct self_mr *mr = key_find(c->m, rkey, &kc);
	uint64_t base;

	if (!mr || (kc && kc != c) || (mr->access & need) != need)
		return RMCA_ERR_REMOTE_ACCESS;
	base = (uint64_t)(uintptr_t)mr->addr;
	if (!rmca_range_inside(base, mr->len, raddr, len))
		return RMCA_ERR_REMOTE_ACCESS;
	*p = mr->addr + (raddr - base);
	return 0;
}

/* ---- the connection ---- */

static void queue_init(struct self_queue *q)
{
	q->head = NULL;
	q->tail = &q->head;
	q->n = 0;
}

static int queue_add(struct self_queue *q, void *req, const void *buf,
		     size_t len, uint64_t inv)
{
	struct self_msg *s = calloc(1, sizeof(*s));

	if (!s)
		return RMCA_ERR_NO_MEMORY;
	s->req = req;
	s->buf = (void *)(uintptr_t)buf;
	s->len = len;
	s->inv = inv;
	*q->tail = s;
	q->tail = &s->next;
	q->n++;
	return 0;
}

static struct self_msg *queue_pop(struct self_queue *q)
{
	struct self_msg *s = q->head;

	if (!s)
		return NULL;
	q->head = s->next;
	if (!q->head)
		q->tail = &q->head;
	q->n--;
	return s;
}

static void complete(struct self_conn *c, void *req, int status, size_t len,
		     uint64_t revoked)
{
	core_of(c)->ops->complete(core_of(c), req, status, len, revoked);
}

static void queue_complete(struct self_conn *c, struct self_queue *q,
			   int status)
{
	struct self_msg *s;

	while ((s = queue_pop(q))) {
		complete(c, s->req, status, 0, 0);
		free(s);
	}
}

/* The endpoint fails as a QP in error: what waits completes
 * RMCA_ERR_CONNECTION (the core refuses what is posted later). */
static void conn_fail(struct self_conn *c, int status)
{
	if (c->failed)
		return;
	c->failed = true;
	queue_complete(c, &c->sends, RMCA_ERR_CONNECTION);
	queue_complete(c, &c->recvs, RMCA_ERR_CONNECTION);
	core_of(c)->ops->conn_failed(core_of(c), c->cookie, status);
}

/* Revoke a use-once key of c's; the key, or 0 when it named none. */
static uint64_t revoke_inv(struct self_conn *c, uint64_t rkey)
{
	struct self_conn *kc;
	struct self_mr *mr = key_find(c->m, rkey, &kc);

	return mr && kc == c && key_revoke(mr, c, rkey) ? rkey : 0;
}

/* Messages meet receives, in the order each was posted. */
static void match(struct self_conn *c)
{
	while (!c->failed && c->sends.head && c->recvs.head) {
		struct self_msg *s = queue_pop(&c->sends);
		struct self_msg *r = queue_pop(&c->recvs);
		size_t n = s->len > r->len ? r->len : s->len;
		int st = s->len > r->len ? RMCA_ERR_TRUNCATED : RMCA_OK;
		uint64_t revoked = 0;

		/* nothing past the receive is written */
		if (n)
			memmove(r->buf, s->buf, n);
		/* the key is dead before the receive is reported */
		if (s->inv)
			revoked = revoke_inv(c, s->inv);
		complete(c, r->req, st, n, revoked);
		complete(c, s->req, st, 0, 0);
		free(s);
		free(r);
		if (st)
			conn_fail(c, st);
	}
}

static int post_send(struct self_conn *c, const void *buf, size_t len,
		     uint64_t inv, void *req)
{
	int rc;

	if (c->failed)
		return RMCA_ERR_CONNECTION;
	if (c->sends.n >= SELF_MAX_SENDS)
		return RMCA_ERR_AGAIN;
	rc = queue_add(&c->sends, req, buf, len, inv);
	if (!rc)
		match(c);
	return rc;
}

static int self_send(struct rmca_conn *bc, const void *buf, size_t len,
		     struct rmca_module_mr *mr, void *req)
{
	struct self_conn *c = self_conn_from_base(bc);

	(void)mr;
	return post_send(c, buf, len, 0, req);
}

static int self_send_inv(struct rmca_conn *bc, const void *buf, size_t len,
			 struct rmca_module_mr *mr, uint64_t rkey, void *req)
{
	struct self_conn *c = self_conn_from_base(bc);

	(void)mr;
	return post_send(c, buf, len, rkey, req);
}

static int self_recv(struct rmca_conn *bc, void *buf, size_t len,
		     struct rmca_module_mr *mr, void *req)
{
	struct self_conn *c = self_conn_from_base(bc);
	int rc;

	(void)mr;
	if (c->failed)
		return RMCA_ERR_CONNECTION;
	rc = queue_add(&c->recvs, req, buf, len, 0);
	if (!rc)
		match(c);
	return rc;
}

/* A refused access is reported on the operation and fails the endpoint,
 * as the target's answer does on every transport. */
static int refused(struct self_conn *c, void *req, int status)
{
	complete(c, req, status, 0, 0);
	conn_fail(c, status);
	return 0;
}

static int self_put(struct rmca_conn *bc, const void *buf, size_t len,
		    struct rmca_module_mr *mr, uint64_t raddr, uint64_t rkey,
		    void *req)
{
	struct self_conn *c = self_conn_from_base(bc);
	char *p;
	int st;

	(void)mr;
	if (c->failed)
		return RMCA_ERR_CONNECTION;
	st = access_check(c, rkey, raddr, len, RMCA_ACCESS_REMOTE_WRITE, &p);
	if (st)
		return refused(c, req, st);
	if (len)
		memmove(p, buf, len);
	complete(c, req, RMCA_OK, 0, 0);
	return 0;
}

static int self_get(struct rmca_conn *bc, void *buf, size_t len,
		    struct rmca_module_mr *mr, uint64_t raddr, uint64_t rkey,
		    void *req)
{
	struct self_conn *c = self_conn_from_base(bc);
	char *p;
	int st;

	(void)mr;
	if (c->failed)
		return RMCA_ERR_CONNECTION;
	st = access_check(c, rkey, raddr, len, RMCA_ACCESS_REMOTE_READ, &p);
	if (st)
		return refused(c, req, st);
	if (len)
		memmove(buf, p, len);
	complete(c, req, RMCA_OK, 0, 0);
	return 0;
}

static int self_atomic(struct rmca_conn *bc, const struct rmca_atomic *op,
		       uint64_t *result, struct rmca_module_mr *mr, void *req)
{
	struct self_conn *c = self_conn_from_base(bc);
	char *p;
	int st;

	(void)mr;
	if (c->failed)
		return RMCA_ERR_CONNECTION;
	st = access_check(c, op->rkey, op->raddr, sizeof(uint64_t),
			  RMCA_ACCESS_REMOTE_ATOMIC, &p);
	if (st)
		return refused(c, req, st);
	/* raddr is 8-byte aligned (the core checked) */
	*result = rmca_atomic_cpu((uint64_t *)(void *)p, op);
	complete(c, req, RMCA_OK, 0, 0);
	return 0;
}

/* Every earlier put is in memory already; the core reports the flush
 * after the sends still waiting for a receive. */
static int self_flush(struct rmca_conn *bc, void *req)
{
	struct self_conn *c = self_conn_from_base(bc);

	if (c->failed)
		return RMCA_ERR_CONNECTION;
	complete(c, req, RMCA_OK, 0, 0);
	return 0;
}

static void self_disconnect(struct rmca_conn *bc)
{
	struct self_conn *c = self_conn_from_base(bc);
	struct rmca_list *l;

	if (!c)
		return;
	queue_complete(c, &c->sends, RMCA_ERR_CANCELED);
	queue_complete(c, &c->recvs, RMCA_ERR_CANCELED);
	/* its use-once keys end with it */
	rmca_list_for_each(l, &c->m->mrs)
	{
		struct self_mr *mr = rmca_list_entry(l, struct self_mr, link);

		for (struct self_key **pp = &mr->once; *pp;) {
			struct self_key *k = *pp;

			if (k->conn == c) {
				*pp = k->next;
				free(k);
			} else {
				pp = &k->next;
			}
		}
	}
	free(c);
}

static const struct rmca_module_ops self_ops = {
	.atomic = self_atomic,
	.disconnect = self_disconnect,
	.flush = self_flush,
	.get = self_get,
	.key_match = self_key_match,
	.mr_dereg = self_mr_dereg,
	.mr_reg = self_mr_reg,
	.mr_rkey = self_mr_rkey,
	.put = self_put,
	.recv = self_recv,
	.revoke = self_revoke,
	.send = self_send,
	.send_inv = self_send_inv,
};

int rmca_self_open(struct rmca_context *ctx, struct rmca_mod *mod)
{
	struct self_module *m = calloc(1, sizeof(*m));

	if (!m)
		return RMCA_ERR_NO_MEMORY;
	rmca_list_init(&m->mrs);
	m->base.ops = &self_ops;
	m->base.core = &ctx->core;
	snprintf(m->base.device, sizeof(m->base.device), "self");
	m->base.caps = RMCA_CAP_ATOMIC | RMCA_CAP_MASKED_ATOMIC |
		       RMCA_CAP_SEND_INV | RMCA_CAP_LOOPBACK |
		       RMCA_CAP_REMOTE_COMPLETION | RMCA_CAP_ATOMIC_CPU |
		       RMCA_CAP_SHORT_READ;
	m->comp.comp = &self_component;
	m->comp.enabled = true;
	mod->m = &m->base;
	mod->comp = &m->comp;
	mod->caps = m->base.caps;
	mod->index = (int)ctx->nmods;
	return 0;
}

void rmca_self_close(struct rmca_mod *mod)
{
	if (mod->m)
		free(self_of(mod->m));
	mod->m = NULL;
}

int rmca_ep_self(struct rmca_context *ctx, struct rmca_ep **out)
{
	struct rmca_mod *mod = &ctx->mods[ctx->nmods];
	struct rmca_ep *ep;
	struct self_conn *c;

	if (!mod->m)
		return RMCA_ERR_UNSUPPORTED;
	ep = calloc(1, sizeof(*ep));
	c = calloc(1, sizeof(*c));
	if (!ep || !c) {
		free(ep);
		free(c);
		return RMCA_ERR_NO_MEMORY;
	}
	rmca_ep_lists_init(ep);
	c->base.module = mod->m;
	c->m = self_of(mod->m);
	c->cookie = ep;
	queue_init(&c->sends);
	queue_init(&c->recvs);
	ep->ctx = ctx;
	ep->mod = mod;
	ep->conn = self_conn_base(c);
	ep->boot_fd = -1;
	while (!ep->token)
		ctx->core.ops->random(&ep->token, sizeof(ep->token));
	ep->peer_caps = mod->caps;
	snprintf(ep->peer, sizeof(ep->peer), "self");
	snprintf(ep->attr.transport, sizeof(ep->attr.transport), "self");
	snprintf(ep->attr.device, sizeof(ep->attr.device), "self");
	ep->attr.peer_is_local = 1;
	rmca_paths_choose(ep);
	rmca_list_add(&ctx->eps, &ep->link);
	rmca_log(1, "self: an endpoint to this context itself");
	*out = ep;
	return 0;
}
