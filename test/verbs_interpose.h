/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Counting what a process asks of its verbs devices, by interposition: a
 * program linked -rdynamic with verbs_interpose.c (or a library preloaded
 * with it) defines ibv_open_device, ibv_get_cq_event and epoll_wait, which
 * come first in the lookup scope, so the components (and the core) call
 * these, which count, then the real ones.
 *
 * Each device context opened has its ops table saved (vi_real_ops) and
 * then handed to the program's vi_patch_ops, which puts its own counting
 * wrappers in front of the ops it counts (post_send, req_notify_cq, ...);
 * a wrapper calls on through vi_real_ops(its object's context).
 *
 * No cmocka, no rmca: contrib/bench/verbs_count.c builds on it too.
 */
#ifndef RMCA_VERBS_INTERPOSE_H
#define RMCA_VERBS_INTERPOSE_H

#include <stdbool.h>

#include <infiniband/verbs.h>

/* The counters below move only while this is set. */
extern bool vi_counting;
/* ibv_get_cq_event calls, and those that took an event */
extern long vi_cq_event_calls, vi_cq_events;
/* epoll_wait calls */
extern long vi_epolls;

/* Defined by the program: patch the ops of a context just opened. */
void vi_patch_ops(struct ibv_context_ops *ops);

/* The ops ctx came with, before vi_patch_ops; aborts for a context not
 * opened through the wrapper (the program's count would be wrong). */
const struct ibv_context_ops *vi_real_ops(const struct ibv_context *ctx);

/* The real fn of lib, which a component may have dlopen()ed with a local
 * scope (not in RTLD_NEXT's then); aborts when there is none. */
void *vi_real_fn(const char *lib, const char *fn);

#endif
