/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Asynchronous device events. A QP error found by the responder (a remote
 * access with a bad key, a broken stream) shows up here, not in the CQ; it
 * is recorded on the connection so that the operations it flushes complete
 * with that status rather than a bare "connection" error. The fd is drained
 * before the CQ is polled, so the record is there in time.
 *
 * A port whose link goes down (IBV_EVENT_PORT_ERR: rxe and siw report it
 * when their netdev goes down) fails every connection on it, as UCX fails
 * an interface's endpoints: iWARP would otherwise wait for TCP to give up
 * (many minutes) with its operations outstanding, and an endpoint using
 * the port as one of its rails must learn of it to fail and be remade on
 * the rails that remain.
 */
#include <fcntl.h>
#include <sys/epoll.h>

#include "verbs.h"

static void port_down(struct rmca_verbs_dev *dev, uint8_t port)
{
	for (int i = 0; i < dev->nmods; i++) {
		struct rmca_verbs_module *vm = dev->mods[i];

		if (vm->port != port)
			continue;
		for (struct rmca_verbs_conn *c = vm->conns; c; c = c->next)
			if (c->state == RMCA_VCONN_UP)
				rmca_verbs_conn_fail(c, RMCA_ERR_CONNECTION);
	}
}

static void handle(struct rmca_verbs_dev *dev, struct ibv_async_event *ev)
{
	struct rmca_verbs_conn *c;

	if (ev->event_type <= IBV_EVENT_QP_ACCESS_ERR)
		dev->core->ops->log(dev->core, RMCA_LOG_DEBUG, "async: %s",
				    ibv_event_type_str(ev->event_type));
	switch (ev->event_type) {
	case IBV_EVENT_QP_ACCESS_ERR:
		c = ev->element.qp->qp_context;
		if (c) {
			c->remote_err = RMCA_ERR_REMOTE_ACCESS;
			rmca_verbs_conn_fail(c, RMCA_ERR_REMOTE_ACCESS);
		}
		break;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
		c = ev->element.qp->qp_context;
		if (c)
			rmca_verbs_conn_fail(c, RMCA_ERR_CONNECTION);
		break;
	case IBV_EVENT_PORT_ERR:
		dev->core->ops->log(dev->core, RMCA_LOG_INFO,
				    "%s port %d: link down, its connections fail",
				    ibv_get_device_name(dev->ctx->device),
				    ev->element.port_num);
		port_down(dev, (uint8_t)ev->element.port_num);
		break;
	default:
		break;
	}
}

void rmca_verbs_async_drain(struct rmca_verbs_dev *dev)
{
	struct ibv_async_event ev;

	if (!dev->async_registered)
		return;
	while (!ibv_get_async_event(dev->ctx, &ev)) {
		handle(dev, &ev);
		ibv_ack_async_event(&ev);
	}
}

static void async_cb(void *arg, uint32_t events)
{
	rmca_verbs_async_drain(arg);
}

int rmca_verbs_async_register(struct rmca_verbs_dev *dev)
{
	int fd = dev->ctx->async_fd;
	int fl = fcntl(fd, F_GETFL);

	if (dev->async_registered)
		return 0;
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return RMCA_ERR_INVALID;
	if (dev->core->ops->fd_add(dev->core, fd, EPOLLIN, async_cb, dev))
		return RMCA_ERR_NO_MEMORY;
	dev->async_registered = true;
	return 0;
}
