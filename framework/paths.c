// SPDX-License-Identifier: BSD-3-Clause
/*
 * Which path each kind of operation takes on an endpoint: chosen from the
 * capabilities of both modules and the context's atomic mode (one mode per
 * context keeps device and CPU atomics from mixing), and explained in words
 * for RMCA_verbose and rmca_info --explain.
 */
#include <stdio.h>

#include "ep.h"

void rmca_paths_choose(struct rmca_ep *ep)
{
	const struct rmca_module_ops *ops = ep->mod->m->ops;
	uint32_t local = ep->mod->caps, both = local & ep->peer_caps;
	bool have = both & RMCA_CAP_ATOMIC, masked = both & RMCA_CAP_MASKED_ATOMIC;
	bool cpu_domain = both & RMCA_CAP_ATOMIC_CPU;
	struct rmca_ep_attr *a = &ep->attr;

	a->put_delivered = (local & RMCA_CAP_REMOTE_COMPLETION) ?
				   RMCA_PATH_NATIVE :
				   RMCA_PATH_FLUSH;
	if (!ops->atomic)
		have = masked = false;
	if (ep->ctx->atomic_resolved == RMCA_ATOMIC_MODE_DEVICE) {
		/* Only the NIC may touch the word: no emulation. */
		a->atomic = have && !cpu_domain ? RMCA_PATH_NATIVE : RMCA_PATH_NONE;
		a->masked_atomic = masked && !cpu_domain ? RMCA_PATH_NATIVE :
				   have && !cpu_domain	 ? RMCA_PATH_CAS_LOOP :
							   RMCA_PATH_NONE;
	} else {
		/* Only CPUs may touch the word: native where the target's
		 * atomics run on its CPU, else its core runs them. */
		a->atomic = have && cpu_domain ? RMCA_PATH_NATIVE :
						 RMCA_PATH_EMULATED;
		a->masked_atomic = masked && cpu_domain ? RMCA_PATH_NATIVE :
				   have && cpu_domain	? RMCA_PATH_CAS_LOOP :
							  RMCA_PATH_EMULATED;
	}
	/* The peer's device answers a get's READ; a mask here is the user's
	 * word that this side must not ask for one either. */
	if ((ep->peer_caps & RMCA_CAP_SHORT_READ) &&
	    !(ep->mod->comp->caps_mask & RMCA_CAP_SHORT_READ))
		ep->get_short = RMCA_PATH_NATIVE;
	else
		ep->get_short = RMCA_PATH_EMULATED;
	if ((both & RMCA_CAP_SEND_INV) && ops->send_inv)
		a->send_inv = RMCA_PATH_NATIVE;
	else if (ops->revoke)
		a->send_inv = RMCA_PATH_REVOKE_MSG;
	else
		a->send_inv = RMCA_PATH_NONE;
}

static const char *path_word(enum rmca_path p)
{
	static const char *const w[] = { "none", "native", "flush", "cas_loop",
					 "emulated", "revoke_msg" };

	return (unsigned)p < RMCA_ARRAY_SIZE(w) ? w[p] : "?";
}

/* One line per kind of operation: the path and why, for RMCA_verbose and
 * rmca_info --explain. */
void rmca_paths_describe(const struct rmca_ep *ep, char *buf, size_t len)
{
	const struct rmca_ep_attr *a = &ep->attr;
	uint32_t both = ep->mod->caps & ep->peer_caps;
	const char *mode = ep->ctx->atomic_resolved == RMCA_ATOMIC_MODE_DEVICE ?
				   "device" :
				   "cpu";
	const char *why_atomic, *why_masked, *why_inv, *why_get;

	switch (a->atomic) {
	case RMCA_PATH_NATIVE:
		why_atomic = (both & RMCA_CAP_ATOMIC_CPU) ?
				     "the target executes FADD/CSWAP on its CPU" :
				     "the NIC executes FADD/CSWAP";
		break;
	case RMCA_PATH_EMULATED:
		why_atomic = !(both & RMCA_CAP_ATOMIC) ?
				     "no atomics on both sides: the target's core executes them" :
				     "the NIC's atomics would not be coherent with CPU atomics: the target's core executes them";
		break;
	default:
		why_atomic = "no device atomics, and emulation would mix CPU and device atomics";
	}
	switch (a->masked_atomic) {
	case RMCA_PATH_NATIVE:
		why_masked = "executed natively";
		break;
	case RMCA_PATH_CAS_LOOP:
		why_masked = "no masked atomics: a compare-and-swap loop over the native CSWAP";
		break;
	case RMCA_PATH_EMULATED:
		why_masked = "the target's core executes them";
		break;
	default:
		why_masked = "no device atomics to build them on";
	}
	switch (a->send_inv) {
	case RMCA_PATH_NATIVE:
		why_inv = "the receiving device invalidates the key";
		break;
	case RMCA_PATH_REVOKE_MSG:
		why_inv = "no send with invalidate on both sides: a control message revokes the key before the message is sent";
		break;
	default:
		why_inv = "no way to revoke a key on this transport";
	}
	if (ep->get_short == RMCA_PATH_NATIVE)
		why_get = "the peer's device answers READs of at most 32 bytes";
	else if (ep->mod->comp->caps_mask & RMCA_CAP_SHORT_READ)
		why_get = "short_read masked here: the target's core answers gets of 1 to 32 bytes";
	else
		why_get = "the peer's device may drop the connection over a READ of at most 32 bytes (siw): the target's core answers gets of 1 to 32 bytes";
	snprintf(buf, len,
		 "put_delivered: %s (%s)\n"
		 "atomic: %s (atomic mode %s; %s)\n"
		 "masked_atomic: %s (%s)\n"
		 "send_inv: %s (%s)\n"
		 "get_short: %s (%s)\n",
		 path_word(a->put_delivered),
		 a->put_delivered == RMCA_PATH_NATIVE ?
			 "a completion means the data is at the target" :
			 "completions are local only: a flush follows, the put completes with it",
		 path_word(a->atomic), mode, why_atomic,
		 path_word(a->masked_atomic), why_masked,
		 path_word(a->send_inv), why_inv, path_word(ep->get_short),
		 why_get);
}
