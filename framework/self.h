/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The endpoint of a context to itself (self.c).
 */
#ifndef RMCA_SELF_H
#define RMCA_SELF_H

#include "internal.h"

struct rmca_ep;

/* The context's self module, at ctx->mods[ctx->nmods] (never offered to a
 * peer, never counted in nmods). */
int rmca_self_open(struct rmca_context *ctx, struct rmca_mod *mod);
void rmca_self_close(struct rmca_mod *mod);

/* A new endpoint whose peer is this context itself. */
int rmca_ep_self(struct rmca_context *ctx, struct rmca_ep **out);

#endif
