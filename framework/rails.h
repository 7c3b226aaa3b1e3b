/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Rails: more pairs of devices that serve one endpoint beside its own
 * (ep->mod, ep->conn), and what the core does with them (rails.c).
 */
#ifndef RMCA_RAILS_H
#define RMCA_RAILS_H

#include <stdbool.h>
#include <stdint.h>

#include "wire.h"

struct rmca_ep;
struct rmca_mr;
struct rmca_mod;
struct rmca_req;
struct rmca_ctrl_msg;

/* The pairs the passive side chose beside rail 0, as modules of this side
 * and the peer's modules from its hello. */
struct rmca_rail_plan {
	int n;
	struct rmca_mod *mod[RMCA_WIRE_MAX_RAILS];
	struct rmca_wire_mod peer[RMCA_WIRE_MAX_RAILS];
};

/* Both sides, after ep_new: the extra rails of plan (none: nothing). */
int rmca_rails_new(struct rmca_ep *ep, const struct rmca_rail_plan *plan);
/* Start connecting them, beside rail 0 (args as rail 0's). */
void rmca_rails_connect(struct rmca_ep *ep, int active, int peer_is_local,
			const char *peer_host, int64_t deadline);
/* RMCA_ERR_AGAIN while one is still connecting, else 0 (a rail that could
 * not connect is left out, and logged). */
int rmca_rails_connect_poll(struct rmca_ep *ep);
/* The peer does not take rail i (its route check refused the pair): it
 * is dropped, keeping its index, and nothing waits for it. */
void rmca_rails_refused(struct rmca_ep *ep, int i);
/* The deadline passed: rails still connecting are left out. */
void rmca_rails_connect_drop(struct rmca_ep *ep);
/* The endpoint is made: say which rails it has. */
void rmca_rails_ready(struct rmca_ep *ep);
/* Disconnect and free them: their parts complete RMCA_ERR_CANCELED into
 * their requests. Before the endpoint's own requests are cancelled. */
void rmca_rails_destroy(struct rmca_ep *ep);

/* A put or get: split across the rails, or 1 when it goes whole on rail 0
 * (the caller posts it). Else what a post returns. */
int rmca_rails_rma(struct rmca_ep *ep, struct rmca_req *r, const void *buf,
		   size_t len, struct rmca_module_mr *mmr, struct rmca_mr *mr,
		   uint64_t raddr, uint64_t rkey);
/* A flush (user's or delivery): on every rail that is up. */
int rmca_rails_flush(struct rmca_ep *ep, struct rmca_req *f);
/* A part completed (rmca_req_done of a RMCA_REQ_RAIL_PART). */
void rmca_rails_part_done(struct rmca_req *part, int status);
/* Parts the modules refused for now: post them. True while some wait. */
bool rmca_rails_work(struct rmca_ep *ep);

/* Sends are held while the peer has not acknowledged keys announced to
 * it: a key a message carries is known on every rail when it arrives. */
bool rmca_rails_holding(const struct rmca_ep *ep);
/* rmca_mr_rkey handed out key (rail 0's) for mr on ep: tell the peer the
 * region's keys on the other rails. */
void rmca_rails_announce(struct rmca_mr *mr, struct rmca_ep *ep, uint64_t key);
/* mr is deregistered: its keys name nothing any more. */
void rmca_rails_mr_gone(struct rmca_mr *mr);
/* RAIL_KEY and RAIL_KEY_ACK from the peer's core; RMCA_ERR_PROTOCOL for
 * one that breaks the rules. */
int rmca_rails_ctrl_msg(struct rmca_ep *ep, const struct rmca_ctrl_msg *m);

#endif
