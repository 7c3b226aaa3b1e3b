// SPDX-License-Identifier: BSD-3-Clause
/*
 * Masked atomics as a compare-and-swap loop over the native CSWAP, where
 * the module has atomics but no masked ones.
 */
#include <rmca/atomic_ops.h>

#include "ep.h"

/*
 * Guess the word's value (0 first), CSWAP the guess for what the op would
 * make of it; the CSWAP returns the real value: equal means done, else
 * guess again with it. A guess that needs no write swaps it for itself.
 */
static int cas_post(struct rmca_ep *ep, struct rmca_req *r)
{
	struct rmca_atomic cas = { .kind = RMCA_ATOMIC_CSWAP,
				   .raddr = r->aop.raddr,
				   .rkey = r->aop.rkey,
				   .compare = r->cas_guess };
	bool write;

	cas.operand = rmca_atomic_next(r->cas_guess, &r->aop, &write);
	return ep->mod->m->ops->atomic(ep->conn, &cas, r->result,
				       r->result_mmr, r);
}

int rmca_cas_start(struct rmca_ep *ep, struct rmca_req *r)
{
	r->cas_guess = 0;
	return cas_post(ep, r);
}

/* A step completed: true when the loop goes on (the completion is ours). */
bool rmca_cas_step_done(struct rmca_req *r, int status)
{
	uint64_t got;
	int rc;

	if (status)
		return false;
	got = __atomic_load_n(r->result, __ATOMIC_ACQUIRE);
	if (got == r->cas_guess)
		return false;
	r->cas_guess = got;
	rc = cas_post(r->ep, r);
	if (rc) {
		r->path = RMCA_PATH_NONE; /* ends the loop */
		rmca_req_done(r, rc == RMCA_ERR_AGAIN ? RMCA_ERR_CONNECTION : rc,
			      0, 0);
	}
	return true;
}
