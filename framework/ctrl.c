// SPDX-License-Identifier: BSD-3-Clause
/*
 * Control channel I/O: non-blocking, framed, on the context's event loop.
 * A malformed frame closes the channel of that one endpoint, with a logged
 * reason; what waited on it completes with RMCA_ERR_PROTOCOL.
 *
 * A peer is never trusted to read what it asks for: once the bytes queued
 * for it reach RMCA_ctrl_max_queued, its channel is not read any more until
 * they drain below half of that (pushback), so a peer that sends requests
 * and never reads the answers costs a bounded amount of memory.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctrl.h"
#include "ep.h"

/*
 * A well-behaved peer never reaches the bound (RMCA_ctrl_max_queued, 4 MiB
 * by default): what it can make us queue is one answer (at most 48 bytes
 * with its prefix: a get's, 23 an atomic's) per request it holds, and it
 * holds at most RMCA_ep_max_core_ops atomics and gets together, as many
 * revokes and a module's worth of verifications; our own requests to it
 * are bounded alike (at most 70 bytes each). At the default 16,384 that is
 * under 4 MiB, so two honest peers never both stop reading each other.
 */

struct rmca_ctrl {
	int fd;
	uint8_t rx[4 + RMCA_CTRL_MAX];
	size_t rx_len;
	uint8_t *tx;
	size_t tx_len, tx_off, tx_cap;
	/* Bytes ever queued: with what is still queued, where the socket's
	 * writes have got to in the stream (rmca_ctrl_written). */
	uint64_t tx_total;
	bool want_out;
	bool deaf; /* not reading: too much queued for the peer */
	/* A message the peer is owed that could not be queued
	 * (rmca_ctrl_send_owed): the status the channel fails with, from
	 * the parse of the message being answered or the next event, and
	 * the type of the message lost. */
	int owed_lost;
	uint8_t owed_type;
	/* VERIFYs sent, answered, and answered after their deadline */
	uint64_t verify_sent, verify_answered;
	unsigned long verify_late;
};

static size_t ctrl_queued(const struct rmca_ctrl *c)
{
	return c->tx_len - c->tx_off;
}

static void ctrl_lost(struct rmca_ep *ep, int status, const char *why)
{
	struct rmca_context *ctx = ep->ctx;
	struct rmca_ctrl *c = ep->ctrl;

	if (!c)
		return;
	if (status != RMCA_ERR_CONNECTION)
		rmca_log(0, "%s: control channel closed: %s", ep->peer, why);
	else
		rmca_log(2, "%s: control channel closed: %s", ep->peer, why);
	ctx->core.ops->fd_del(&ctx->core, c->fd);
	close(c->fd);
	free(c->tx);
	free(c);
	ep->ctrl = NULL;
	rmca_emul_ctrl_lost(ep, status);
}

static void ctrl_events(struct rmca_ep *ep, bool want_out, bool deaf)
{
	struct rmca_ctrl *c = ep->ctrl;

	if (c->want_out == want_out && c->deaf == deaf)
		return;
	c->want_out = want_out;
	c->deaf = deaf;
	ep->ctx->core.ops->fd_mod(&ep->ctx->core, c->fd,
				  (deaf ? 0 : EPOLLIN) |
					  (want_out ? EPOLLOUT : 0));
}

static void ctrl_want_out(struct rmca_ep *ep, bool on)
{
	ctrl_events(ep, on, ep->ctrl->deaf);
}

static int ctrl_flush_tx(struct rmca_ep *ep)
{
	struct rmca_ctrl *c = ep->ctrl;

	while (c->tx_off < c->tx_len) {
		ssize_t n = send(c->fd, c->tx + c->tx_off, c->tx_len - c->tx_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			c->tx_off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			ctrl_want_out(ep, true);
			return 0;
		}
		return RMCA_ERR_CONNECTION;
	}
	c->tx_off = c->tx_len = 0;
	ctrl_want_out(ep, false);
	return 0;
}

/* A message owed to the peer was not queued: the status the channel
 * fails with, and why. */
static int owed_lost(const struct rmca_ctrl *c, char *why, size_t why_len)
{
	snprintf(why, why_len, "control message %u to the peer not queued%s",
		 c->owed_type,
		 c->owed_lost == RMCA_ERR_NO_MEMORY ? ": out of memory" : "");
	return c->owed_lost;
}

/* Parse every complete frame in rx; returns 0 or a status with why. */
static int ctrl_parse(struct rmca_ep *ep, char *why, size_t why_len)
{
	struct rmca_ctrl *c = ep->ctrl;

	while (c && c->rx_len >= 4) {
		size_t n = c->rx[0] | c->rx[1] << 8 | c->rx[2] << 16 |
			   (size_t)c->rx[3] << 24;
		struct rmca_ctrl_msg m;
		int rc;

		if (ctrl_queued(c) >= ep->ctx->ctrl_max_queued) {
			/* the rest waits until the peer reads */
			ctrl_events(ep, c->want_out, true);
			return 0;
		}
		if (!n || n > RMCA_CTRL_MAX) {
			snprintf(why, why_len, "frame of %zu bytes", n);
			return RMCA_ERR_PROTOCOL;
		}
		if (c->rx_len < 4 + n)
			return 0;
		rc = rmca_ctrl_decode(c->rx + 4, n, &m, why, why_len);
		if (rc)
			return rc;
		memmove(c->rx, c->rx + 4 + n, c->rx_len - 4 - n);
		c->rx_len -= 4 + n;
		rc = rmca_emul_ctrl_msg(ep, &m);
		if (rc) {
			if (rc == RMCA_ERR_PROTOCOL)
				snprintf(why, why_len,
					 "unexpected control message %u",
					 m.type);
			else
				snprintf(why, why_len,
					 "control message %u not served "
					 "(status %d)",
					 m.type, rc);
			return rc;
		}
		c = ep->ctrl;
		if (c && c->owed_lost)
			return owed_lost(c, why, why_len);
	}
	return 0;
}

static void ctrl_event(void *arg, uint32_t events)
{
	struct rmca_ep *ep = arg;
	char why[160] = "";
	int rc;

	if (ep->ctrl->owed_lost) {
		/* lost outside a parse (rmca_ctrl_send_owed) */
		rc = owed_lost(ep->ctrl, why, sizeof(why));
		ctrl_lost(ep, rc, why);
		return;
	}
	if (events & EPOLLOUT) {
		if (ctrl_flush_tx(ep)) {
			ctrl_lost(ep, RMCA_ERR_CONNECTION, "send failed");
			return;
		}
		if (ep->ctrl->deaf &&
		    ctrl_queued(ep->ctrl) < ep->ctx->ctrl_max_queued / 2) {
			/* the peer read: listen again, frames held first */
			ctrl_events(ep, ep->ctrl->want_out, false);
			rc = ctrl_parse(ep, why, sizeof(why));
			if (rc) {
				ctrl_lost(ep, rc, why);
				return;
			}
			events |= EPOLLIN;
		}
	}
	if (!ep->ctrl || !(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		return;
	if (ep->ctrl->deaf) {
		/* not reading: only a hang-up or an error is news */
		if (events & (EPOLLHUP | EPOLLERR))
			ctrl_lost(ep, RMCA_ERR_CONNECTION, "connection lost");
		return;
	}
	/* A bounded number of reads: a peer that keeps writing does not keep
	 * this progress call from the others (the fd stays readable). */
	for (int budget = 64; budget; budget--) {
		struct rmca_ctrl *c = ep->ctrl;
		ssize_t n;

		if (!c || c->deaf)
			return;
		n = recv(c->fd, c->rx + c->rx_len, sizeof(c->rx) - c->rx_len,
			 MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
			       errno != EINTR)) {
			ctrl_lost(ep, RMCA_ERR_CONNECTION, "closed by the peer");
			return;
		}
		if (n < 0)
			return;
		rmca_progress_ctrl_busy(ep->ctx);
		c->rx_len += (size_t)n;
		rc = ctrl_parse(ep, why, sizeof(why));
		if (rc) {
			ctrl_lost(ep, rc, why);
			return;
		}
	}
}

int rmca_ctrl_open(struct rmca_ep *ep, int fd)
{
	struct rmca_ctrl *c = calloc(1, sizeof(*c));
	int rc;

	if (!c)
		return RMCA_ERR_NO_MEMORY;
	c->fd = fd;
	ep->ctrl = c;
	rc = ep->ctx->core.ops->fd_add(&ep->ctx->core, fd, EPOLLIN, ctrl_event,
				       ep);
	if (rc) {
		free(c);
		ep->ctrl = NULL;
	}
	return rc;
}

void rmca_ctrl_close(struct rmca_ep *ep)
{
	struct rmca_ctrl *c = ep->ctrl;

	if (!c)
		return;
	ep->ctx->core.ops->fd_del(&ep->ctx->core, c->fd);
	close(c->fd);
	free(c->tx);
	free(c);
	ep->ctrl = NULL;
}

int rmca_ctrl_send(struct rmca_ep *ep, const struct rmca_ctrl_msg *m)
{
	struct rmca_ctrl *c = ep->ctrl;
	int n;

	if (!c || c->owed_lost) /* gone, or about to go */
		return RMCA_ERR_CONNECTION;
	if (c->tx_cap - c->tx_len < 4 + RMCA_CTRL_MAX && c->tx_off &&
	    c->tx_off >= ctrl_queued(c)) {
		/* what was sent makes room (moving no more than it frees):
		 * the buffer grows with what is queued, not with what went
		 * through it */
		memmove(c->tx, c->tx + c->tx_off, ctrl_queued(c));
		c->tx_len -= c->tx_off;
		c->tx_off = 0;
	}
	if (c->tx_cap - c->tx_len < 4 + RMCA_CTRL_MAX) {
		size_t cap = c->tx_cap ? c->tx_cap * 2 : 1024;
		uint8_t *t = realloc(c->tx, cap);

		if (!t)
			return RMCA_ERR_AGAIN;
		c->tx = t;
		c->tx_cap = cap;
	}
	n = rmca_ctrl_encode(m, c->tx + c->tx_len, c->tx_cap - c->tx_len);
	if (n < 0)
		return n;
	c->tx_len += (size_t)n;
	c->tx_total += (uint64_t)n;
	rmca_progress_ctrl_busy(ep->ctx);
	if (!c->want_out && ctrl_flush_tx(ep)) {
		/* Report the loss from the event loop, not from inside the
		 * caller's post. */
		ctrl_want_out(ep, true);
	}
	return 0;
}

int rmca_ctrl_send_owed(struct rmca_ep *ep, const struct rmca_ctrl_msg *m)
{
	struct rmca_ctrl *c = ep->ctrl;
	int rc = rmca_ctrl_send(ep, m);

	if (!rc || !c || c->owed_lost)
		return rc;
	/* RMCA_ERR_AGAIN: the buffer could not grow */
	c->owed_lost = rc == RMCA_ERR_AGAIN ? RMCA_ERR_NO_MEMORY : rc;
	c->owed_type = m->type;
	/* the parse under way fails the channel after the message it
	 * answers; outside one, the next event (EPOLLOUT comes at once) */
	ctrl_want_out(ep, true);
	return c->owed_lost;
}

int rmca_ctrl_send_verify(struct rmca_ep *ep, struct rmca_ctrl_msg *m)
{
	int rc;

	if (!ep->ctrl)
		return RMCA_ERR_CONNECTION;
	m->id = ep->ctrl->verify_sent + 1;
	rc = rmca_ctrl_send(ep, m);
	if (!rc)
		ep->ctrl->verify_sent++;
	return rc;
}

long rmca_ctrl_verify_answer(struct rmca_ep *ep, uint64_t id, bool late)
{
	struct rmca_ctrl *c = ep->ctrl;

	/* the peer answers them in the order it read them */
	if (!c || c->verify_answered == c->verify_sent ||
	    id != c->verify_answered + 1)
		return RMCA_ERR_PROTOCOL;
	c->verify_answered++;
	if (late)
		c->verify_late++;
	return (long)c->verify_late;
}

uint64_t rmca_ctrl_sent_end(const struct rmca_ep *ep)
{
	return ep->ctrl ? ep->ctrl->tx_total : 0;
}

bool rmca_ctrl_written(const struct rmca_ep *ep, uint64_t end)
{
	const struct rmca_ctrl *c = ep->ctrl;

	return c && c->tx_total - ctrl_queued(c) >= end;
}

size_t rmca_ctrl_queued_bytes(const struct rmca_ep *ep)
{
	return ep->ctrl ? ctrl_queued(ep->ctrl) : 0;
}
