// SPDX-License-Identifier: BSD-3-Clause
/* The core around a control channel under test: see ctrl_stub_core.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "ctrl.h"

#include "ctrl_stub_core.h"
#include "log.h"

struct ctrl_stub_watched ctrl_stub_watched = {.fd = -1};
unsigned ctrl_stub_advanced;

static int t_fd_add(const struct rmca_core *core, int fd, uint32_t events,
		    rmca_fd_cb cb, void *arg)
{
	(void)core;
	(void)events;
	ctrl_stub_watched.fd = fd;
	ctrl_stub_watched.cb = cb;
	ctrl_stub_watched.arg = arg;
	return 0;
}

static int t_fd_mod(const struct rmca_core *core, int fd, uint32_t events)
{
	(void)core;
	(void)fd;
	(void)events;
	return 0;
}

static void t_fd_del(const struct rmca_core *core, int fd)
{
	(void)core;
	(void)fd;
	ctrl_stub_watched.cb = NULL;
	ctrl_stub_watched.fd = -1;
}

const struct rmca_core_ops ctrl_stub_ops = {
	.fd_add = t_fd_add,
	.fd_del = t_fd_del,
	.fd_mod = t_fd_mod,
};

void ctrl_stub_event(uint32_t events)
{
	if (ctrl_stub_watched.cb)
		ctrl_stub_watched.cb(ctrl_stub_watched.arg, events);
}

void rmca_log(int level, const char *fmt, ...)
{
	va_list ap;

	(void)level;
	va_start(ap, fmt);
	fprintf(stderr, "# ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

void rmca_progress_ctrl_busy(struct rmca_context *ctx)
{
	(void)ctx;
}

void rmca_core_work_due(struct rmca_context *ctx)
{
	(void)ctx;
}

void rmca_ep_advance(struct rmca_ep *ep)
{
	(void)ep;
	ctrl_stub_advanced++;
}

struct rmca_mr *rmca_mr_by_key(struct rmca_ep *ep, uint64_t rkey,
			       struct rmca_module_mr **mmr)
{
	(void)ep;
	(void)rkey;
	*mmr = NULL;
	return NULL;
}

int ctrl_stub_open(struct rmca_context *ctx, struct rmca_ep *ep, int bufsize)
{
	int sv[2];

	ctx->core.ops = &ctrl_stub_ops;
	ctx->ctrl_max_queued = 1 << 20;
	ep->ctx = ctx;
	snprintf(ep->peer, sizeof(ep->peer), "peer");
	assert_int_equal(socketpair(AF_UNIX,
				    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
				    0, sv),
			 0);
	if (bufsize > 0) {
		assert_int_equal(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF,
					    &bufsize, sizeof(bufsize)),
				 0);
		assert_int_equal(setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF,
					    &bufsize, sizeof(bufsize)),
				 0);
	}
	assert_int_equal(rmca_ctrl_open(ep, sv[0]), 0);
	return sv[1];
}
