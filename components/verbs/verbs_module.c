/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Per-module resources: the CQ every connection of the module shares (its
 * completion channel is in the context's epoll set), the rdma_cm event
 * channel (also in epoll) with the listener that accepts this module's
 * connections, and the timer that re-reads credits.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>

#include "verbs.h"

/* Completion queue entries per module: 25 connections of 640 (verbs_conn.c). */
#define CQ_SIZE 16384

static int nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/*
 * The rdma_cm channel is read only when epoll says it is readable: reading
 * it costs a system call (a command write() on the ucma fd) even when no
 * event waits. Completions the device gave before the event are read
 * first, so that a peer's disconnect cannot overtake them: a send it
 * confirmed, or a receive it filled, completes with its own status rather
 * than with the connection's failure.
 */
static void cm_cb(void *arg, uint32_t events)
{
	struct rmca_verbs_module *vm = arg;

	rmca_verbs_async_drain(vm->dev);
	rmca_verbs_cq_poll(vm);
	rmca_verbs_cm_dispatch(vm);
}

int rmca_verbs_module_init(struct rmca_verbs_module *vm)
{
	const struct rmca_core *core = vm->m.core;
	struct ibv_context *ctx = vm->dev->ctx;
	const char *step = "completion queue";

	vm->timer_fd = -1;
	vm->cq_size = vm->dev->attr.max_cqe < CQ_SIZE ? vm->dev->attr.max_cqe
						      : CQ_SIZE;
	vm->chan = ibv_create_comp_channel(ctx);
	if (!vm->chan)
		return RMCA_ERR_NO_MEMORY;
	vm->cq = ibv_create_cq(ctx, vm->cq_size, vm, vm->chan, 0);
	if (!vm->cq)
		goto err;
	if (nonblock(vm->chan->fd) || ibv_req_notify_cq(vm->cq, 0))
		goto err;
	step = "rdma_cm channel";
	vm->ec = rdma_create_event_channel();
	if (!vm->ec || nonblock(vm->ec->fd))
		goto err;
	step = "listener";
	if (rmca_verbs_fault("verbs_module_init") || rmca_verbs_cm_listen(vm))
		goto err;
	step = "event loop";
	{
		vm->timer_fd = timerfd_create(CLOCK_MONOTONIC,
					      TFD_NONBLOCK | TFD_CLOEXEC);
		if (vm->timer_fd < 0)
			goto err;
	}
	if (rmca_verbs_async_register(vm->dev))
		goto err;
	if (core->ops->fd_add(core, vm->chan->fd, EPOLLIN, rmca_verbs_cq_event,
			      vm))
		goto err;
	if (core->ops->fd_add(core, vm->ec->fd, EPOLLIN, cm_cb, vm)) {
		core->ops->fd_del(core, vm->chan->fd);
		goto err;
	}
	if (vm->timer_fd >= 0 &&
	    core->ops->fd_add(core, vm->timer_fd, EPOLLIN,
			      rmca_verbs_timer_event, vm)) {
		core->ops->fd_del(core, vm->chan->fd);
		core->ops->fd_del(core, vm->ec->fd);
		goto err;
	}
	return 0;
err:
	core->ops->log(core, RMCA_LOG_WARN, "%s: setting up the %s failed",
		       vm->m.device, step);
	if (vm->timer_fd >= 0)
		close(vm->timer_fd);
	if (vm->listen_id)
		rdma_destroy_id(vm->listen_id);
	if (vm->ec)
		rdma_destroy_event_channel(vm->ec);
	if (vm->cq)
		ibv_destroy_cq(vm->cq);
	ibv_destroy_comp_channel(vm->chan);
	return RMCA_ERR_NO_MEMORY;
}

void rmca_verbs_module_fini(struct rmca_verbs_module *vm)
{
	const struct rmca_core *core = vm->m.core;
	struct rmca_verbs_parked *p;
	struct rmca_verbs_op *op;

	while (vm->conns)
		rmca_verbs_disconnect(vm->conns);
	while ((p = vm->parked)) {
		vm->parked = p->next;
		rdma_reject(p->id, NULL, 0);
		rdma_destroy_id(p->id);
		free(p);
	}
	core->ops->fd_del(core, vm->chan->fd);
	core->ops->fd_del(core, vm->ec->fd);
	if (vm->timer_fd >= 0) {
		core->ops->fd_del(core, vm->timer_fd);
		close(vm->timer_fd);
	}
	rdma_destroy_id(vm->listen_id);
	rdma_destroy_event_channel(vm->ec);
	ibv_destroy_cq(vm->cq);
	ibv_destroy_comp_channel(vm->chan);
	while ((op = rmca_list_first(&vm->zombies, struct rmca_verbs_op,
				     link))) {
		rmca_list_del(&op->link);
		free(op);
	}
	rmca_verbs_op_pool_fini(vm);
}

int rmca_verbs_addr(struct rmca_module *m, void *buf, size_t *len)
{
	struct rmca_verbs_module *vm = rmca_verbs_mod(m);
	struct rmca_verbs_addr a = { .version = 1, .family = 4 };

	if (*len < sizeof(a))
		return RMCA_ERR_INVALID;
	a.port = vm->ip.sin_port;
	memcpy(a.ip, &vm->ip.sin_addr, 4);
	snprintf(a.device, sizeof(a.device), "%.23s", m->device);
	memcpy(buf, &a, sizeof(a));
	*len = sizeof(a);
	return 0;
}

int rmca_verbs_reachable(struct rmca_module *m, const void *peer_addr,
			 size_t len, char *why, size_t why_len)
{
	const struct rmca_verbs_addr *a = peer_addr;

	if (len != sizeof(*a) || a->version != 1 || a->family != 4) {
		snprintf(why, why_len, "malformed %s address", m->device);
		return 0;
	}
	return 1;
}
