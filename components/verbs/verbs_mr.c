/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory registration on the device's shared PD, and the keys of a region.
 *
 * Keys: an rmca key holds the 32-bit rkey in its low bits, bit 32 always set
 * (a key is never 0) and RMCA_KEY_USE_ONCE (bit 63) for use-once regions.
 * On iwarp, bit 33 (RMCA_VERBS_KEY_READ) says the region grants remote
 * read, and the initiator refuses a get with a key that lacks it (see
 * verbs_ops.c): siw answers an RDMA READ from any valid STag, read right or
 * not. key_match() compares all 64 bits, so a key with the bit forged in
 * or out is not a key of the region.
 *
 * Use-once regions on a device that can send-with-invalidate: a plain MR key
 * cannot be invalidated by a peer, a type-2 memory window's can. So such a
 * region is registered with no remote rights of its own (LOCAL_WRITE |
 * MW_BIND) and the key handed to a peer is that of a window bound over it
 * for that connection (binding needs the connection's QP: it is posted by
 * the first mr_rkey(), which returns without waiting for it). A bind is a
 * work request on the connection's send queue, executed in order with the
 * others: every message the caller posts on that connection after
 * mr_rkey() leaves once the window is bound, so a peer that learns the key
 * from it finds the window usable (and rxe binds inside the posting call
 * itself). A bind that fails fails the connection, as any work request
 * does. Once the peer's send-with-invalidate revokes a key, the next
 * mr_rkey() binds the window again under a fresh key. The core's revoke
 * message path (revoke op) deallocates the window instead: that kills its
 * key at once, without a work request on a connection that may be busy or
 * failed, and the next mr_rkey() binds a new window.
 *
 * Use-once regions without windows (siw has none): the remote rights live on
 * a second registration ("pub") whose rkey is the published key; local work
 * requests use the first one. Revoking deregisters pub, so the key dies on
 * every connection (an MR key is not per connection) while local operations
 * in flight on the region are untouched; the next mr_rkey() registers a
 * fresh pub. A just-freed STag could in principle be handed out again at
 * once (siw picks a random index, rxe cycles): the key just revoked is
 * never published again.
 *
 * iWARP READ sinks: the response to an RDMA READ is a tagged write into the
 * sink, so iWARP wants IBV_ACCESS_REMOTE_WRITE on the sink's registration.
 * Granting that on the region itself would let any peer that holds its
 * published key write into memory the user opened for reading only. So a
 * region whose main registration lacks REMOTE_WRITE gets, on iwarp, a
 * second registration with it, made on its first use as a get sink, whose
 * key is never published: its lkey serves only as READ sink.
 */
#include <stdlib.h>

#include "verbs.h"

/* The rmca key of mr whose device rkey is rkey. */
static uint64_t key_of(const struct rmca_verbs_mr *mr, uint32_t rkey)
{
	uint64_t k = rmca_verbs_key(rkey, mr->access & RMCA_MR_USE_ONCE);

	if (rmca_verbs_flavour(mr->mod)->read_key_bit &&
	    (mr->access & RMCA_ACCESS_REMOTE_READ))
		k |= RMCA_VERBS_KEY_READ;
	return k;
}

static int ib_access(struct rmca_verbs_module *vm, unsigned access)
{
	int a = IBV_ACCESS_LOCAL_WRITE;

	if (access & RMCA_ACCESS_REMOTE_READ)
		a |= IBV_ACCESS_REMOTE_READ;
	if (access & RMCA_ACCESS_REMOTE_WRITE)
		a |= IBV_ACCESS_REMOTE_WRITE;
	/* a device without atomics refuses the flag; nothing could use it */
	if ((access & RMCA_ACCESS_REMOTE_ATOMIC) &&
	    (vm->m.caps & RMCA_CAP_ATOMIC))
		a |= IBV_ACCESS_REMOTE_ATOMIC;
	return a;
}

/* The registration that carries a use-once region's published key. */
static struct ibv_mr *pub_reg(struct rmca_verbs_mr *mr)
{
	struct ibv_pd *pd = mr->mod->dev->pd;
	int a = ib_access(mr->mod, mr->access);
	struct ibv_mr *p = ibv_reg_mr(pd, mr->addr, mr->len, a), *again;

	if (p && mr->dead_rkey && p->rkey == mr->dead_rkey) {
		again = ibv_reg_mr(pd, mr->addr, mr->len, a);
		ibv_dereg_mr(p);
		p = again;
	}
	return p;
}

int rmca_verbs_mr_reg(struct rmca_module *m, void *addr, size_t len,
		      unsigned access, struct rmca_verbs_mr **out)
{
	struct rmca_verbs_module *vm = rmca_verbs_mod(m);
	struct rmca_verbs_mr *mr = calloc(1, sizeof(*mr));
	struct ibv_pd *pd;
	int a;

	if (!mr)
		return RMCA_ERR_NO_MEMORY;
	pd = rmca_verbs_pd_get(vm->dev);
	if (!pd) {
		free(mr);
		return RMCA_ERR_NO_MEMORY;
	}
	mr->base.module = &vm->m;
	mr->mod = vm;
	mr->addr = addr;
	mr->len = len;
	mr->access = access;
	mr->use_mw = (access & RMCA_MR_USE_ONCE) &&
		     (m->caps & RMCA_CAP_SEND_INV);
	if (mr->use_mw)
		a = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND;
	else if (access & RMCA_MR_USE_ONCE)
		a = IBV_ACCESS_LOCAL_WRITE; /* remote rights: pub */
	else
		a = ib_access(vm, access);
	mr->mr_rw = a & IBV_ACCESS_REMOTE_WRITE;
	mr->mr = ibv_reg_mr(pd, addr, len, a);
	if (mr->mr && (access & RMCA_MR_USE_ONCE) && !mr->use_mw) {
		mr->pub = pub_reg(mr);
		if (!mr->pub) {
			ibv_dereg_mr(mr->mr);
			mr->mr = NULL;
		}
	}
	if (!mr->mr) {
		rmca_verbs_pd_put(vm->dev);
		free(mr);
		return RMCA_ERR_NO_MEMORY;
	}
	mr->next = vm->mrs;
	vm->mrs = mr;
	*out = mr;
	return 0;
}

/* w goes: a bind of it still on the device must not name it. */
static void mw_free(struct rmca_verbs_mw *w)
{
	struct rmca_list *l;

	rmca_list_for_each(l, &w->conn->outstanding)
	{
		struct rmca_verbs_op *op =
			rmca_list_entry(l, struct rmca_verbs_op, link);

		if (op->kind == RMCA_VOP_BIND && op->mw == w)
			op->mw = NULL;
	}
	if (w->mw)
		ibv_dealloc_mw(w->mw);
	free(w);
}

int rmca_verbs_mr_dereg(struct rmca_verbs_mr *mr)
{
	struct rmca_verbs_module *vm = mr->mod;
	struct rmca_verbs_mr **p;
	struct rmca_verbs_mw *w;

	while ((w = mr->mws)) {
		mr->mws = w->next;
		mw_free(w);
	}
	for (p = &vm->mrs; *p; p = &(*p)->next)
		if (*p == mr) {
			*p = mr->next;
			break;
		}
	if (mr->sink)
		ibv_dereg_mr(mr->sink);
	if (mr->pub)
		ibv_dereg_mr(mr->pub);
	ibv_dereg_mr(mr->mr);
	rmca_verbs_pd_put(vm->dev);
	free(mr);
	return 0;
}

uint32_t rmca_verbs_sink_lkey(struct rmca_verbs_mr *mr)
{
	if (!rmca_verbs_flavour(mr->mod)->read_sink_remote_write || mr->mr_rw)
		return mr->mr->lkey;
	if (!mr->sink)
		mr->sink = ibv_reg_mr(mr->mod->dev->pd, mr->addr, mr->len,
				      IBV_ACCESS_LOCAL_WRITE |
					      IBV_ACCESS_REMOTE_WRITE);
	return mr->sink ? mr->sink->lkey : 0;
}

static struct rmca_verbs_mw *mw_for(struct rmca_verbs_mr *mr,
				    struct rmca_verbs_conn *c)
{
	struct rmca_verbs_mw *w;

	for (w = mr->mws; w; w = w->next)
		if (w->conn == c)
			return w;
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->mw = ibv_alloc_mw(mr->mod->dev->pd, IBV_MW_TYPE_2);
	if (!w->mw) {
		free(w);
		return NULL;
	}
	w->conn = c;
	w->rkey = w->mw->rkey;
	w->revoked = true; /* not bound yet */
	w->next = mr->mws;
	mr->mws = w;
	return w;
}

static int mw_bind(struct rmca_verbs_mr *mr, struct rmca_verbs_mw *w)
{
	struct rmca_verbs_conn *c = w->conn;
	struct rmca_verbs_op *op = rmca_verbs_op_new(c, RMCA_VOP_BIND, NULL);

	if (!op)
		return RMCA_ERR_NO_MEMORY;
	if (!w->mw) { /* deallocated by a revoke */
		w->mw = ibv_alloc_mw(mr->mod->dev->pd, IBV_MW_TYPE_2);
		if (!w->mw) {
			rmca_verbs_op_free(op);
			return RMCA_ERR_NO_MEMORY;
		}
		w->rkey = w->mw->rkey;
	}
	w->rkey = ibv_inc_rkey(w->rkey);
	w->bound = w->bind_failed = false;
	op->mw = w;
	op->mr = mr;
	op->rkey = w->rkey;
	op->operand = ib_access(mr->mod, mr->access);
	op->operand &= ~IBV_ACCESS_LOCAL_WRITE; /* not a window right */
	if (rmca_verbs_post(c, op)) {
		rmca_verbs_op_free(op);
		return RMCA_ERR_AGAIN;
	}
	/* live from here on: ordered before whatever is posted next */
	w->revoked = false;
	return 0;
}

uint64_t rmca_verbs_mr_rkey(struct rmca_verbs_mr *mr, struct rmca_verbs_conn *c)
{
	bool once = mr->access & RMCA_MR_USE_ONCE;
	struct rmca_verbs_mw *w;

	if (!mr->use_mw && !once)
		return key_of(mr, mr->mr->rkey);
	if (!mr->use_mw) {
		if (!mr->pub)
			mr->pub = pub_reg(mr);
		return mr->pub ? key_of(mr, mr->pub->rkey) : 0;
	}
	if (!c || c->state != RMCA_VCONN_UP)
		return 0;
	w = mw_for(mr, c);
	if (!w)
		return 0;
	if (w->revoked && mw_bind(mr, w))
		return 0;
	return key_of(mr, w->rkey);
}

/*
 * Is rkey a key of mr that works on c now? What mr_rkey() would answer,
 * without binding a window or registering pub: the core asks when it serves
 * a remote access itself, and a question must not make a key live.
 */
int rmca_verbs_key_match(struct rmca_verbs_mr *mr, struct rmca_verbs_conn *c,
			 uint64_t rkey)
{
	uint32_t k = rmca_verbs_rkey32(rkey);
	struct rmca_verbs_mw *w;

	if (!rkey || rkey != key_of(mr, k))
		return 0; /* bit 63, bit 33 or a stray high bit is wrong */
	if (!(mr->access & RMCA_MR_USE_ONCE))
		return mr->mr->rkey == k;
	if (!mr->use_mw)
		return mr->pub && mr->pub->rkey == k;
	for (w = mr->mws; w; w = w->next)
		if (w->conn == c && w->mw && !w->bind_failed && !w->revoked &&
		    w->rkey == k)
			return 1;
	return 0;
}

/* The peer's send-with-invalidate revoked rkey on c: if it is a window we
 * bound for c, return its rmca key (now dead), else 0. */
uint64_t rmca_verbs_revoke(struct rmca_verbs_conn *c, uint32_t rkey)
{
	struct rmca_verbs_mr *mr;
	struct rmca_verbs_mw *w;

	for (mr = c->mod->mrs; mr; mr = mr->next)
		for (w = mr->mws; w; w = w->next)
			if (w->conn == c && w->rkey == rkey && !w->revoked) {
				w->revoked = true;
				return key_of(mr, rkey);
			}
	return 0;
}

/* The core's revoke message path: kill rkey, a key of mr handed out on c. A
 * key that is not current is dead already. */
int rmca_verbs_mr_revoke(struct rmca_verbs_mr *mr, struct rmca_verbs_conn *c,
			 uint64_t rkey)
{
	uint32_t k = rmca_verbs_rkey32(rkey);
	struct rmca_verbs_mw *w;

	if (!(mr->access & RMCA_MR_USE_ONCE) || !(rkey & RMCA_KEY_USE_ONCE))
		return RMCA_ERR_INVALID;
	if (!mr->use_mw) {
		if (!mr->pub || mr->pub->rkey != k)
			return 0;
		if (ibv_dereg_mr(mr->pub))
			return RMCA_ERR_INVALID; /* still alive: say so */
		mr->pub = NULL;
		mr->dead_rkey = k;
		return 0;
	}
	for (w = mr->mws; w; w = w->next) {
		if (w->conn != c || w->rkey != k || w->revoked || !w->mw)
			continue;
		if (ibv_dealloc_mw(w->mw))
			return RMCA_ERR_INVALID;
		w->mw = NULL;
		w->revoked = true;
	}
	return 0;
}

void rmca_verbs_mw_conn_gone(struct rmca_verbs_conn *c)
{
	struct rmca_verbs_mr *mr;
	struct rmca_verbs_mw **p, *w;

	for (mr = c->mod->mrs; mr; mr = mr->next) {
		p = &mr->mws;
		while ((w = *p)) {
			if (w->conn != c) {
				p = &w->next;
				continue;
			}
			*p = w->next;
			mw_free(w);
		}
	}
}
