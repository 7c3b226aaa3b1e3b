// SPDX-License-Identifier: BSD-3-Clause
/*
 * Rails: several pairs of devices used together by one endpoint.
 *
 * When more pairs of modules of the chosen transport reach the peer at the
 * chosen pair's priority, the passive side lists them in its answer
 * (select.c, at most RMCA_max_rails pairs in all, no device in two pairs),
 * and each becomes one more connection of the endpoint, named by a token
 * derived from the endpoint's. Rail 0 is the chosen pair (ep->mod,
 * ep->conn); it alone carries messages, atomics, send-with-invalidate and
 * the core's own paths, so their order and coherence are those of one
 * connection. Puts and gets of RMCA_rail_min_size bytes or more are split
 * into page-aligned parts, one per rail; the request completes once, when
 * every part has, with the first error among them. A flush (the user's, or
 * a delivery flush) goes on every rail and completes when all have.
 *
 * Keys: a region is registered with every module (mr.c), but the key a
 * user passes is the one rail 0 handed out. When rmca_mr_rkey hands a key
 * out on a rails endpoint, the core tells the peer's core the region's key
 * on every other rail (RAIL_KEY on the control channel), and holds the
 * endpoint's sends until the peer acknowledged: a message that carries the
 * key arrives after the peer learnt its counterparts. A put or get whose
 * key the peer never announced (a key learnt another way, one not yet
 * acknowledged, a use-once key, whose revocation covers rail 0's only)
 * goes whole on rail 0. A deregistered region's key is withdrawn.
 *
 * Failure: a rail's connection reports its failure against the endpoint,
 * as rail 0 does; its parts carry their errors into their requests, and
 * from then on whatever completes on the endpoint without an error of its
 * own completes RMCA_ERR_CONNECTION (ops.c), as on a failed single
 * connection. A new endpoint is made of the pairs that still reach.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap.h"
#include "ctrl.h"
#include "ep.h"
#include "rails.h"

#define RAIL_PAGE 4096u
/* Keys of the peer remembered per endpoint; the oldest goes first (a key
 * forgotten only means whole operations on rail 0). */
#define RAIL_PEER_KEYS 256

struct rmca_rail {
	struct rmca_mod *mod; /* NULL: this side cannot use the pair */
	struct rmca_conn *conn;
	struct rmca_connecting *h;
	struct rmca_wire_mod peer;
	uint64_t token;
	uint64_t bytes, ops;
};

/* A region of the peer: its key on rail 0 and on each other rail. */
struct peer_keys {
	uint64_t key, addr, len;
	uint64_t k[RMCA_WIRE_MAX_RAILS];
};

/* What this side announced for one of its regions. */
struct sent_keys {
	struct sent_keys *next;
	struct rmca_mr *mr;
	uint64_t key;
	uint64_t k[RMCA_WIRE_MAX_RAILS];
};

/* RAIL_KEYs of one hand-out the peer has still to acknowledge: it answers
 * them in the order it read them, so an ack is for the oldest of these. */
struct key_wait {
	struct key_wait *next;
	uint64_t key;
	unsigned left, acked;
	/* where each RAIL_KEY ends in the channel's send stream: its ack is
	 * taken once the peer can have read it (ctrl.h) */
	uint64_t end[RMCA_WIRE_MAX_RAILS];
};

struct rmca_rails {
	int n;
	struct rmca_rail r[RMCA_WIRE_MAX_RAILS];
	struct peer_keys peer[RAIL_PEER_KEYS];
	unsigned peer_next;
	struct sent_keys *sent;
	unsigned unacked; /* RAIL_KEYs the peer has not acknowledged */
	struct key_wait *wait, *wait_tail;	 /* the same, oldest first */
	struct rmca_req *pending, *pending_tail; /* parts refused for now */
};

/* Tokens of the other rails: distinct from the endpoint's and from each
 * other, the same on both sides. */
static uint64_t rail_token(uint64_t token, int i)
{
	uint64_t t = token ^ (0x9e3779b97f4a7c15ull * (uint64_t)(i + 1));

	return t ? t : 0x9e3779b97f4a7c15ull;
}

int rmca_rails_new(struct rmca_ep *ep, const struct rmca_rail_plan *plan)
{
	struct rmca_rails *rs;

	if (!plan || !plan->n)
		return 0;
	rs = calloc(1, sizeof(*rs));
	if (!rs)
		return RMCA_ERR_NO_MEMORY;
	rs->n = plan->n;
	for (int i = 0; i < plan->n; i++) {
		rs->r[i].mod = plan->mod[i];
		rs->r[i].peer = plan->peer[i];
		rs->r[i].token = rail_token(ep->token, i);
	}
	ep->rails = rs;
	return 0;
}

static void rail_log_fail(struct rmca_ep *ep, int i, const char *what)
{
	struct rmca_rail *r = &ep->rails->r[i];

	rmca_log(0,
		 "%s: rail %d (%s %s<->%s) %s; the endpoint goes on without it",
		 ep->peer, i + 1, r->mod ? r->mod->comp->comp->name : "-",
		 r->mod ? r->mod->m->device : "-", r->peer.device, what);
}

/* What the rail's module just handed out (its connection, or the handle
 * of one being set up) is its own, or it is given back and the rail fails
 * to connect. */
static int rail_made(struct rmca_rail *r)
{
	struct rmca_module *m = r->mod->m;
	int rc;

	if (r->h) {
		rc = rmca_registry_made_by(m, r->h->module,
					   "connecting handle");
		if (rc)
			m->ops->connect_abort(r->h);
		return rc;
	}
	rc = rmca_registry_made_by(m, r->conn ? r->conn->module : NULL,
				   "connection");
	if (rc && r->conn)
		m->ops->disconnect(r->conn);
	return rc;
}

void rmca_rails_connect(struct rmca_ep *ep, int active, int peer_is_local,
			const char *peer_host, int64_t deadline)
{
	struct rmca_rails *rs = ep->rails;

	for (int i = 0; rs && i < rs->n; i++) {
		struct rmca_rail *r = &rs->r[i];
		const struct rmca_module_ops *ops;
		struct rmca_conn_args args = {
			.active = active,
			.peer_addr = r->peer.addr,
			.peer_addr_len = r->peer.addr_len,
			.token = r->token,
			.timeout_ms = rmca_ms_left(deadline),
			.peer_is_local = peer_is_local,
			.cookie = ep,
		};
		char why[64];
		int rc;

		if (!r->mod)
			continue;
		ops = r->mod->m->ops;
		snprintf(args.peer_host, sizeof(args.peer_host), "%s",
			 peer_host);
		if (ops->connect_start)
			rc = ops->connect_start(r->mod->m, &args, &r->h);
		else
			rc = ops->connect(r->mod->m, &args, &r->conn);
		if (!rc)
			rc = rail_made(r);
		if (rc) {
			r->h = NULL;
			r->conn = NULL;
			snprintf(why, sizeof(why), "could not connect: %s",
				 rmca_strerror(rc));
			rail_log_fail(ep, i, why);
		}
	}
}

int rmca_rails_connect_poll(struct rmca_ep *ep)
{
	struct rmca_rails *rs = ep->rails;
	bool again = false;

	for (int i = 0; rs && i < rs->n; i++) {
		struct rmca_rail *r = &rs->r[i];
		char why[64];
		int rc;

		if (!r->h)
			continue;
		rc = r->mod->m->ops->connect_poll(r->h, &r->conn);
		if (rc == RMCA_ERR_AGAIN) {
			again = true;
			continue;
		}
		r->h = NULL;
		if (!rc)
			rc = rail_made(r);
		if (rc) {
			r->conn = NULL;
			snprintf(why, sizeof(why), "could not connect: %s",
				 rmca_strerror(rc));
			rail_log_fail(ep, i, why);
		}
	}
	return again ? RMCA_ERR_AGAIN : 0;
}

/* A rail's connect still under way is abandoned, its connection closed. */
static void rail_close(struct rmca_rail *r)
{
	if (r->h)
		r->mod->m->ops->connect_abort(r->h);
	r->h = NULL;
	if (r->conn)
		r->mod->m->ops->disconnect(r->conn);
	r->conn = NULL;
}

void rmca_rails_refused(struct rmca_ep *ep, int i)
{
	struct rmca_rail *r = &ep->rails->r[i];

	if (!r->mod)
		return;
	rmca_log(1, "%s: rail %d (%s %s<->%s) not taken by the peer", ep->peer,
		 i + 1, r->mod->comp->comp->name, r->mod->m->device,
		 r->peer.device);
	/* a peer that connected a rail it then refuses gets it closed */
	rail_close(r);
	r->mod = NULL;
}

void rmca_rails_connect_drop(struct rmca_ep *ep)
{
	struct rmca_rails *rs = ep->rails;

	for (int i = 0; rs && i < rs->n; i++) {
		struct rmca_rail *r = &rs->r[i];

		if (!r->h)
			continue;
		r->mod->m->ops->connect_abort(r->h);
		r->h = NULL;
		rail_log_fail(ep, i,
			      "did not connect in time (RMCA_connect_timeout)");
	}
}

void rmca_rails_ready(struct rmca_ep *ep)
{
	struct rmca_rails *rs = ep->rails;

	for (int i = 0; rs && i < rs->n; i++)
		if (rs->r[i].conn)
			rmca_log(1, "%s: rail %d over %s %s<->%s", ep->peer,
				 i + 1, rs->r[i].mod->comp->comp->name,
				 rs->r[i].mod->m->device, rs->r[i].peer.device);
}

void rmca_rails_destroy(struct rmca_ep *ep)
{
	struct rmca_rails *rs = ep->rails;
	struct rmca_req *p;

	if (!rs)
		return;
	for (int i = 0; i < rs->n; i++) {
		/* its parts complete RMCA_ERR_CANCELED into their requests */
		rail_close(&rs->r[i]);
	}
	while ((p = rs->pending)) {
		rs->pending = p->part_next;
		rmca_rails_part_done(p, RMCA_ERR_CANCELED);
	}
	while (rs->sent) {
		struct sent_keys *s = rs->sent;

		rs->sent = s->next;
		free(s);
	}
	while (rs->wait) {
		struct key_wait *w = rs->wait;

		rs->wait = w->next;
		free(w);
	}
	free(rs);
	ep->rails = NULL;
}

/* ---- parts ---- */

static struct rmca_req *part_new(struct rmca_ep *ep, struct rmca_req *parent,
				 int rail)
{
	struct rmca_req *p = rmca_req_alloc(ep->ctx);

	if (!p)
		return NULL;
	p->ctx = ep->ctx;
	p->ep = ep;
	p->op = parent->op;
	p->kind = RMCA_REQ_RAIL_PART;
	p->parent = parent;
	p->rail = rail;
	parent->rail_parts++;
	return p;
}

static int part_post(struct rmca_ep *ep, struct rmca_req *p)
{
	struct rmca_rail *r = p->rail ? &ep->rails->r[p->rail - 1] : NULL;
	struct rmca_conn *c = r ? r->conn : ep->conn;
	const struct rmca_module_ops *ops =
		r ? r->mod->m->ops : ep->mod->m->ops;
	int rc;

	if (!c)
		return RMCA_ERR_CONNECTION;
	switch (p->op) {
	case RMCA_OP_PUT:
		rc = ops->put(c, p->part_buf, p->part_len, p->part_mmr,
			      p->part_raddr, p->part_rkey, p);
		break;
	case RMCA_OP_GET:
		rc = ops->get(c, (void *)p->part_buf, p->part_len, p->part_mmr,
			      p->part_raddr, p->part_rkey, p);
		break;
	default:
		return ops->flush(c, p);
	}
	if (!rc) {
		uint64_t *bytes = r ? &r->bytes : &ep->rma_bytes;
		uint64_t *ops_n = r ? &r->ops : &ep->rma_ops;

		*bytes += p->part_len;
		(*ops_n)++;
	}
	return rc;
}

static void pending_add(struct rmca_ep *ep, struct rmca_req *p)
{
	struct rmca_rails *rs = ep->rails;

	p->part_next = NULL;
	if (rs->pending_tail)
		rs->pending_tail->part_next = p;
	else
		rs->pending = p;
	rs->pending_tail = p;
	rmca_core_work_due(ep->ctx);
}

/* The parent's own hold on itself, taken while its parts are posted. */
static void parent_release(struct rmca_req *parent)
{
	if (--parent->rail_parts)
		return;
	rmca_req_done(parent, parent->rail_status, 0, 0);
}

void rmca_rails_part_done(struct rmca_req *p, int status)
{
	struct rmca_req *parent = p->parent;

	if (status && !parent->rail_status)
		parent->rail_status = status;
	rmca_req_free(p->ctx, p);
	parent_release(parent);
}

/*
 * Post part p (not the first of its parent): refused for now, it waits
 * for the next progress; any other refusal is its completion.
 */
static void part_post_later(struct rmca_ep *ep, struct rmca_req *p)
{
	int rc = ep->rails->pending ? RMCA_ERR_AGAIN : part_post(ep, p);

	if (rc == RMCA_ERR_AGAIN)
		pending_add(ep, p);
	else if (rc)
		rmca_rails_part_done(p, rc);
}

bool rmca_rails_work(struct rmca_ep *ep)
{
	struct rmca_rails *rs = ep->rails;
	struct rmca_req *p;

	while (rs && (p = rs->pending)) {
		int rc = ep->failed ? RMCA_ERR_CONNECTION : part_post(ep, p);

		if (rc == RMCA_ERR_AGAIN)
			return true;
		rs->pending = p->part_next;
		if (!rs->pending)
			rs->pending_tail = NULL;
		if (rc)
			rmca_rails_part_done(p, rc);
	}
	return false;
}

static struct peer_keys *peer_keys_find(struct rmca_rails *rs, uint64_t key)
{
	for (unsigned i = 0; i < RAIL_PEER_KEYS; i++)
		if (rs->peer[i].key == key)
			return &rs->peer[i];
	return NULL;
}

int rmca_rails_rma(struct rmca_ep *ep, struct rmca_req *r, const void *buf,
		   size_t len, struct rmca_module_mr *mmr, struct rmca_mr *mr,
		   uint64_t raddr, uint64_t rkey)
{
	struct rmca_rails *rs = ep->rails;
	int use[RMCA_WIRE_MAX_RAILS + 1], nuse = 1;
	struct peer_keys *k;
	size_t chunk, off;
	int rc;

	/* Keys learnt over a channel that is gone are kept current by no
	 * one (a withdrawal comes over it): none is used then. */
	if (!rs || len < ep->ctx->rail_min_size || (rkey & RMCA_KEY_USE_ONCE) ||
	    rs->pending || !ep->ctrl)
		return 1;
	k = peer_keys_find(rs, rkey);
	if (!k || raddr < k->addr || len > k->len ||
	    raddr - k->addr > k->len - len)
		return 1;
	use[0] = 0;
	for (int i = 0; i < rs->n; i++)
		if (rs->r[i].conn && k->k[i] && mr->mmr[rs->r[i].mod->index])
			use[nuse++] = i + 1;
	if (nuse < 2)
		return 1;
	chunk = (len + (size_t)nuse - 1) / (size_t)nuse;
	chunk = (chunk + RAIL_PAGE - 1) & ~(size_t)(RAIL_PAGE - 1);
	r->rail_parts = 1; /* held while the parts are posted */
	r->rail_status = 0;
	for (int j = 0; j < nuse && (off = (size_t)j * chunk) < len; j++) {
		struct rmca_req *p = part_new(ep, r, use[j]);

		if (!p) {
			if (!j) {
				r->rail_parts = 0;
				return RMCA_ERR_NO_MEMORY;
			}
			r->rail_status = RMCA_ERR_NO_MEMORY;
			break;
		}
		p->part_buf = (const char *)buf + off;
		p->part_len = len - off < chunk ? len - off : chunk;
		p->part_mmr = j ? mr->mmr[rs->r[use[j] - 1].mod->index] : mmr;
		p->part_raddr = raddr + off;
		p->part_rkey = j ? k->k[use[j] - 1] : rkey;
		if (j) {
			part_post_later(ep, p);
			continue;
		}
		/* the first part decides whether the request exists */
		rc = part_post(ep, p);
		if (rc) {
			rmca_req_free(p->ctx, p);
			r->rail_parts = 0;
			return rc;
		}
	}
	parent_release(r);
	return 0;
}

int rmca_rails_flush(struct rmca_ep *ep, struct rmca_req *f)
{
	struct rmca_rails *rs = ep->rails;
	struct rmca_req *p;
	bool others = false;
	int rc;

	for (int i = 0; rs && i < rs->n; i++)
		others |= rs->r[i].conn != NULL;
	if (!others)
		return ep->mod->m->ops->flush(ep->conn, f);
	/* A flush follows every part posted before it: none may wait. */
	if (rmca_rails_work(ep))
		return RMCA_ERR_AGAIN;
	f->rail_parts = 1;
	f->rail_status = 0;
	p = part_new(ep, f, 0);
	if (!p) {
		f->rail_parts = 0;
		return RMCA_ERR_NO_MEMORY;
	}
	rc = part_post(ep, p);
	if (rc) {
		rmca_req_free(p->ctx, p);
		f->rail_parts = 0;
		return rc;
	}
	for (int i = 0; i < rs->n; i++) {
		if (!rs->r[i].conn)
			continue;
		p = part_new(ep, f, i + 1);
		if (!p) {
			f->rail_status = RMCA_ERR_NO_MEMORY;
			break;
		}
		part_post_later(ep, p);
	}
	parent_release(f);
	return 0;
}

/* ---- keys ---- */

bool rmca_rails_holding(const struct rmca_ep *ep)
{
	return ep->rails && ep->rails->unacked && ep->ctrl;
}

/* The oldest hand-out is acknowledged: the next is the oldest. */
static void key_wait_pop(struct rmca_rails *rs)
{
	struct key_wait *w = rs->wait;

	rs->wait = w->next;
	if (!rs->wait)
		rs->wait_tail = NULL;
	free(w);
}

void rmca_rails_announce(struct rmca_mr *mr, struct rmca_ep *ep, uint64_t key)
{
	struct rmca_rails *rs = ep->rails;
	uint64_t k[RMCA_WIRE_MAX_RAILS] = {0};
	struct sent_keys *s;
	struct key_wait *w;
	bool any = false;

	if (!rs || !key || (key & RMCA_KEY_USE_ONCE) || !ep->ctrl)
		return;
	for (int i = 0; i < rs->n; i++) {
		struct rmca_rail *r = &rs->r[i];
		struct rmca_module_mr *x;

		if (!r->conn || !(x = mr->mmr[r->mod->index]))
			continue;
		k[i] = r->mod->m->ops->mr_rkey(x, r->conn);
		any |= k[i] != 0;
	}
	for (s = rs->sent; s && s->mr != mr; s = s->next)
		;
	if (!any || (s && s->key == key && !memcmp(s->k, k, sizeof(k))))
		return;
	w = calloc(1, sizeof(*w));
	if (!w)
		return; /* the key serves on rail 0 alone */
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s) {
			free(w);
			return;
		}
		s->mr = mr;
		s->next = rs->sent;
		rs->sent = s;
	}
	s->key = key;
	memcpy(s->k, k, sizeof(k));
	w->key = key;
	for (int i = 0; i < rs->n; i++) {
		struct rmca_ctrl_msg m = {.type = RMCA_CTRL_RAIL_KEY,
					  .id = key,
					  .rkey = k[i],
					  .raddr = (uintptr_t)mr->addr,
					  .len = mr->len,
					  .access = (uint8_t)(i + 1)};

		if (rmca_ctrl_send(ep, &m)) {
			/* the rest not told: the next hand-out tells all
			 * again, rather than never */
			memset(s->k, 0, sizeof(s->k));
			break;
		}
		rs->unacked++;
		w->end[w->left++] = rmca_ctrl_sent_end(ep);
	}
	if (!w->left) {
		free(w);
		return;
	}
	if (rs->wait_tail)
		rs->wait_tail->next = w;
	else
		rs->wait = w;
	rs->wait_tail = w;
}

void rmca_rails_mr_gone(struct rmca_mr *mr)
{
	struct rmca_list *l;

	rmca_list_for_each(l, &mr->ctx->eps) {
		struct rmca_ep *ep = rmca_list_entry(l, struct rmca_ep, link);
		struct sent_keys **pp, *s;

		if (!ep->rails)
			continue;
		for (pp = &ep->rails->sent; (s = *pp); pp = &s->next)
			if (s->mr == mr)
				break;
		if (!s)
			continue;
		*pp = s->next;
		if (ep->ctrl) {
			struct rmca_ctrl_msg m = {.type = RMCA_CTRL_RAIL_KEY,
						  .id = s->key};

			/* not queued: the channel goes, and the peer stops
			 * using every key it announced */
			rmca_ctrl_send_owed(ep, &m);
		}
		free(s);
	}
}

static int rail_key(struct rmca_ep *ep, const struct rmca_ctrl_msg *m)
{
	struct rmca_rails *rs = ep->rails;
	struct rmca_ctrl_msg ack = {.type = RMCA_CTRL_RAIL_KEY_ACK,
				    .id = m->id};
	struct peer_keys *k;

	if (!rs || m->access > rs->n)
		return RMCA_ERR_PROTOCOL;
	k = peer_keys_find(rs, m->id);
	if (!m->access) { /* withdrawn, not acknowledged */
		if (k)
			memset(k, 0, sizeof(*k));
		return 0;
	}
	if (!k || k->addr != m->raddr || k->len != m->len) {
		if (!k)
			k = &rs->peer[rs->peer_next++ % RAIL_PEER_KEYS];
		memset(k, 0, sizeof(*k));
		k->key = m->id;
		k->addr = m->raddr;
		k->len = m->len;
	}
	k->k[m->access - 1] = m->rkey;
	/* the peer holds its sends until then: not queued, the channel
	 * goes (and with it that hold) */
	rmca_ctrl_send_owed(ep, &ack);
	return 0;
}

int rmca_rails_ctrl_msg(struct rmca_ep *ep, const struct rmca_ctrl_msg *m)
{
	struct rmca_rails *rs = ep->rails;

	if (m->type == RMCA_CTRL_RAIL_KEY)
		return rail_key(ep, m);
	/* An ack names the key of the oldest RAIL_KEY unacknowledged (the
	 * decoder took its status: 0, the only one rail_key gives): one for
	 * a key never told, or one more than was told, breaks the protocol. */
	if (!rs || !rs->wait || rs->wait->key != m->id)
		return RMCA_ERR_PROTOCOL;
	if (!rmca_ctrl_written(ep, rs->wait->end[rs->wait->acked])) {
		rmca_log(0,
			 "%s: ack of rail key 0x%llx, whose RAIL_KEY is not "
			 "sent yet",
			 ep->peer, (unsigned long long)m->id);
		return RMCA_ERR_PROTOCOL;
	}
	rs->wait->acked++;
	if (!--rs->wait->left)
		key_wait_pop(rs);
	if (!--rs->unacked && !rmca_list_empty(&ep->deferred)) {
		rmca_deferred_post(ep);
		rmca_core_work_due(ep->ctx);
	}
	return 0;
}

/* ---- rmca_ep_query_rail ---- */

int rmca_ep_query_rail(const rmca_ep_t *ep, int index, struct rmca_ep_rail *out)
{
	const struct rmca_rail *r;

	if (!ep || !out || index < 0)
		return RMCA_ERR_INVALID;
	memset(out, 0, sizeof(*out));
	if (!index) {
		snprintf(out->transport, sizeof(out->transport), "%s",
			 ep->attr.transport);
		snprintf(out->device, sizeof(out->device), "%s",
			 ep->attr.device);
		snprintf(out->peer_device, sizeof(out->peer_device), "%s",
			 ep->peer_device);
		out->up = !ep->failed;
		out->bytes = ep->rma_bytes;
		out->ops = ep->rma_ops;
		return 0;
	}
	if (!ep->rails || index > ep->rails->n)
		return RMCA_ERR_NOT_FOUND;
	r = &ep->rails->r[index - 1];
	snprintf(out->transport, sizeof(out->transport), "%s",
		 ep->attr.transport);
	snprintf(out->device, sizeof(out->device), "%s",
		 r->mod ? r->mod->m->device : "");
	snprintf(out->peer_device, sizeof(out->peer_device), "%s",
		 r->peer.device);
	out->up = r->conn && !ep->failed;
	out->bytes = r->bytes;
	out->ops = r->ops;
	return 0;
}
