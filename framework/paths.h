/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Between the paths the core builds (one file each) and core_msg.c, which
 * hands them the peer core's control messages: what each serves, what each
 * waits for, and what each fails when the control channel is lost.
 */
#ifndef RMCA_PATHS_H
#define RMCA_PATHS_H

struct rmca_ctrl_msg;
struct rmca_ep;

/* atomic_core.c: atomics executed by the target's core */
void rmca_atomic_serve(struct rmca_ep *ep, const struct rmca_ctrl_msg *req);
int rmca_atomic_answered(struct rmca_ep *ep, const struct rmca_ctrl_msg *m);
void rmca_atomic_lost(struct rmca_ep *ep, int status);

/* get_core.c: gets of at most 32 bytes answered by the target's core */
void rmca_get_serve(struct rmca_ep *ep, const struct rmca_ctrl_msg *req);
int rmca_get_answered(struct rmca_ep *ep, const struct rmca_ctrl_msg *m);
void rmca_get_lost(struct rmca_ep *ep, int status);

/* revoke_msg.c: send with invalidate by revoke message */
int rmca_revoke_serve(struct rmca_ep *ep, const struct rmca_ctrl_msg *m);
int rmca_revoke_acked(struct rmca_ep *ep, const struct rmca_ctrl_msg *m);
void rmca_revoke_lost(struct rmca_ep *ep, int status);

/* verify.c: was a failed access refused by the target? */
void rmca_verify_serve(struct rmca_ep *ep, const struct rmca_ctrl_msg *m);
int rmca_verify_answered(struct rmca_ep *ep, const struct rmca_ctrl_msg *m);
void rmca_verify_lost(struct rmca_ep *ep);

#endif
