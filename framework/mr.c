// SPDX-License-Identifier: BSD-3-Clause
/*
 * Memory regions. A region is registered with every module of the context
 * at once, so that it serves whichever transport an endpoint ends up on;
 * each module hands out its own key per connection (rmca_mr_rkey). The
 * self module (ctx->mods[ctx->nmods], self.c) registers it too.
 */
#include <stdlib.h>

#include "ep.h"
#include "rails.h"

#define RMCA_ACCESS_ALL                                                   \
	(RMCA_ACCESS_LOCAL | RMCA_ACCESS_REMOTE_READ | RMCA_ACCESS_REMOTE_WRITE | \
	 RMCA_ACCESS_REMOTE_ATOMIC | RMCA_MR_USE_ONCE)

static int self_reg(struct rmca_context *ctx, struct rmca_mr *mr)
{
	struct rmca_mod *self = &ctx->mods[ctx->nmods];

	return self->m ? self->m->ops->mr_reg(self->m, mr->addr, mr->len,
					      mr->access, &mr->mmr[ctx->nmods])
		       : RMCA_ERR_UNSUPPORTED;
}

int rmca_mr_reg(rmca_context_t *ctx, void *addr, size_t len, unsigned access,
		rmca_mr_t **out)
{
	struct rmca_mr *mr;
	size_t ok = 0;
	int rc = RMCA_ERR_NOT_FOUND;

	if (!ctx || !addr || !len || !out || (access & ~RMCA_ACCESS_ALL))
		return RMCA_ERR_INVALID;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return RMCA_ERR_NO_MEMORY;
	mr->mmr = calloc(ctx->nmods + 1, sizeof(*mr->mmr));
	if (!mr->mmr) {
		free(mr);
		return RMCA_ERR_NO_MEMORY;
	}
	mr->ctx = ctx;
	mr->addr = addr;
	mr->len = len;
	mr->access = access | RMCA_ACCESS_LOCAL;
	for (size_t i = 0; i < ctx->nmods; i++) {
		struct rmca_mod *mod = &ctx->mods[i];
		int r = RMCA_ERR_UNSUPPORTED;

		/* a module that registers nothing serves no region */
		if (mod->m->ops->mr_reg)
			r = mod->m->ops->mr_reg(mod->m, addr, len, mr->access,
						&mr->mmr[i]);
		if (!r) {
			struct rmca_module_mr *x = mr->mmr[i];

			r = rmca_registry_made_by(mod->m, x ? x->module : NULL,
						  "region");
			if (r && x)
				mod->m->ops->mr_dereg(x);
		}

		if (r) {
			/* The region still serves the other modules; an
			 * endpoint on this one refuses it with INVALID. */
			rmca_log(1, "%s %s: cannot register %zu bytes: %s",
				 mod->comp->comp->name, mod->m->device, len,
				 rmca_strerror(r));
			mr->mmr[i] = NULL;
			rc = r;
			continue;
		}
		ok++;
	}
	if (!ok) {
		free(mr->mmr);
		free(mr);
		return rc;
	}
	/* The endpoint to oneself; without it the region still serves the
	 * others (a self endpoint refuses it with INVALID). */
	if (self_reg(ctx, mr))
		rmca_log(1, "self: cannot register %zu bytes", len);
	rmca_list_add(&ctx->mrs, &mr->link);
	*out = mr;
	return 0;
}

uint64_t rmca_mr_rkey(rmca_mr_t *mr, rmca_ep_t *ep)
{
	struct rmca_module_mr *mmr;
	uint64_t key;

	if (!mr || !ep || mr->ctx != ep->ctx)
		return 0;
	mmr = mr->mmr[ep->mod->index];
	key = mmr ? ep->mod->m->ops->mr_rkey(mmr, ep->conn) : 0;
	if (key && ep->rails)
		rmca_rails_announce(mr, ep, key);
	return key;
}

void rmca_mr_destroy(struct rmca_mr *mr)
{
	struct rmca_context *ctx = mr->ctx;

	rmca_rails_mr_gone(mr);
	for (size_t i = 0; i <= ctx->nmods; i++) /* the self module too */
		if (mr->mmr[i])
			ctx->mods[i].m->ops->mr_dereg(mr->mmr[i]);
	rmca_list_del(&mr->link);
	free(mr->mmr);
	free(mr);
}

int rmca_mr_dereg(rmca_mr_t *mr)
{
	if (!mr)
		return RMCA_ERR_INVALID;
	rmca_mr_destroy(mr);
	return 0;
}

/* The region of ep's context behind rkey as handed out on ep (its module's
 * registration in *mmr), or NULL: what a peer's core names by key. */
struct rmca_mr *rmca_mr_by_key(struct rmca_ep *ep, uint64_t rkey,
				 struct rmca_module_mr **mmr)
{
	const struct rmca_module_ops *ops = ep->mod->m->ops;
	struct rmca_list *l;

	if (!rkey)
		return NULL;
	rmca_list_for_each(l, &ep->ctx->mrs)
	{
		struct rmca_mr *mr = rmca_list_entry(l, struct rmca_mr, link);
		struct rmca_module_mr *x = mr->mmr[ep->mod->index];

		if (x && (ops->key_match ? ops->key_match(x, ep->conn, rkey) :
					   ops->mr_rkey(x, ep->conn) == rkey)) {
			*mmr = x;
			return mr;
		}
	}
	return NULL;
}
