/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rest of the core, as tests that run ctrl.c over a socket pair need
 * it (test_ctrl_verify, test_atk_ctrl_seq): the one fd the channel
 * watches, called by the test instead of an event loop, and the core
 * functions ctrl.c, verify.c, atomic_core.c and get_core.c call, doing
 * nothing but count. Each test still supplies rmca_emul_ctrl_msg and
 * rmca_emul_ctrl_lost, which say what it plays.
 */
#ifndef RMCA_TEST_CTRL_STUB_CORE_H
#define RMCA_TEST_CTRL_STUB_CORE_H

#include <stdint.h>

#include "ep.h"

/* The channel's fd and its callback (fd -1: none watched). */
struct ctrl_stub_watched {
	int fd;
	rmca_fd_cb cb;
	void *arg;
};
extern struct ctrl_stub_watched ctrl_stub_watched;
/* rmca_ep_advance calls since the test last set it to 0. */
extern unsigned ctrl_stub_advanced;
extern const struct rmca_core_ops ctrl_stub_ops;

/* The watched callback run for events, if an fd is watched. */
void ctrl_stub_event(uint32_t events);

/* ep, named "peer", on ctx (this core's ops, RMCA_ctrl_max_queued 1 MiB),
 * its control channel open on one end of a socket pair; the other end,
 * the peer core's, is returned. bufsize > 0: our end's send buffer and
 * the peer's receive buffer that small. */
int ctrl_stub_open(struct rmca_context *ctx, struct rmca_ep *ep, int bufsize);

#endif
