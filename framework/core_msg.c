// SPDX-License-Identifier: BSD-3-Clause
/*
 * The core's own messages on the control channel, handed to the path that
 * owns them; and, when the channel is lost, what each path was waiting for
 * on the peer's core fails.
 */
#include "ctrl.h"
#include "ep.h"
#include "paths.h"
#include "rails.h"

int rmca_emul_ctrl_msg(struct rmca_ep *ep, const struct rmca_ctrl_msg *m)
{
	switch (m->type) {
	case RMCA_CTRL_ATOMIC_REQ:
		rmca_atomic_serve(ep, m);
		return 0;
	case RMCA_CTRL_ATOMIC_RESP:
		return rmca_atomic_answered(ep, m);
	case RMCA_CTRL_REVOKE:
		return rmca_revoke_serve(ep, m);
	case RMCA_CTRL_REVOKE_ACK:
		return rmca_revoke_acked(ep, m);
	case RMCA_CTRL_VERIFY:
		rmca_verify_serve(ep, m);
		return 0;
	case RMCA_CTRL_VERIFY_RESP:
		return rmca_verify_answered(ep, m);
	case RMCA_CTRL_RAIL_KEY:
	case RMCA_CTRL_RAIL_KEY_ACK:
		return rmca_rails_ctrl_msg(ep, m);
	case RMCA_CTRL_GET_REQ:
		rmca_get_serve(ep, m);
		return 0;
	case RMCA_CTRL_GET_RESP:
		return rmca_get_answered(ep, m);
	}
	return RMCA_ERR_PROTOCOL;
}

/* The channel is gone: what waited on the peer's core fails. */
void rmca_emul_ctrl_lost(struct rmca_ep *ep, int status)
{
	rmca_atomic_lost(ep, status);
	rmca_get_lost(ep, status);
	rmca_revoke_lost(ep, status);
	rmca_verify_lost(ep);
}
