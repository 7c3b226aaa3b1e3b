/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A connection: its life in the event loop, its output queue (partial
 * writes resume where they stopped), and how it fails.
 *
 * Writes are batched: what one wakeup of a connection queues (answers,
 * sends a credit released) leaves in one sendmsg() when it is done, every
 * header stamped with the connection's counts as it goes; a frame of
 * counts alone (ACK) goes only when no other frame carries them and they
 * are due. A post writes at once only when nothing else would bring the
 * context back soon, and otherwise waits for the next progress pass.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "tcp.h"

#define TCP_IOV_MAX 64
/* Bytes offered to one sendmsg(): as much as a socket's largest send
 * buffer by default (tcp_wmem), so that a stream of large frames neither
 * builds and copies in an iovec of 64 entries for the socket to take part
 * of one, nor needs more than one call where the socket has room. */
#define TCP_TX_BATCH ((size_t)4 << 20)

static __attribute__((noinline)) void fd_mod(struct tcp_conn *c, uint32_t ev)
{
	const struct rmca_core *core = c->mod->base.core;

	if (!core->ops->fd_mod(core, c->fd, ev))
		c->events = ev;
}

/* Asked at every write, and mostly a change of nothing: inline. */
static inline void set_events(struct tcp_conn *c, uint32_t ev)
{
	if (c->registered && c->events != ev)
		fd_mod(c, ev);
}

static void conn_close_fd(struct tcp_conn *c)
{
	const struct rmca_core *core = c->mod->base.core;

	if (c->fd < 0)
		return;
	if (c->registered)
		core->ops->fd_del(core, c->fd);
	c->registered = false;
	close(c->fd);
	c->fd = -1;
}

static void dirty_del(struct tcp_conn *c)
{
	if (rmca_list_linked(&c->dirty_link)) {
		rmca_list_del(&c->dirty_link);
		if (rmca_list_empty(&c->mod->dirty))
			c->mod->progress_due &= ~TCP_DUE_DIRTY;
	}
}

static void dirty_add(struct tcp_conn *c)
{
	rmca_tcp_dirty_add(c);
}

/* Off the held list; the last one off takes the list's bit back. */
static inline void held_unlink(struct tcp_conn *c)
{
	rmca_list_del(&c->held_link);
	if (rmca_list_empty(&c->mod->held))
		c->mod->progress_due &= ~TCP_DUE_HELD;
}

static void held_del(struct tcp_conn *c)
{
	if (rmca_list_linked(&c->held_link))
		held_unlink(c);
}

/* May the application sleep on the wait fd (rmca_wait_fd handed it out)?
 * A core that cannot say is taken to allow it. */
static bool may_sleep(const struct tcp_conn *c)
{
	const struct rmca_core *core = c->mod->base.core;

	return !core->ops->may_sleep || core->ops->may_sleep(core);
}

/* No request frame queued: what is queued may wait. */
static bool no_requests(const struct tcp_conn *c)
{
	for (const struct rmca_list *l = c->outq.next; l != &c->outq;
	     l = l->next)
		if (!rmca_list_entry(l, struct tcp_out, link)->owned)
			return false;
	return true;
}

/*
 * The counts and answers of a wakeup that delivered a message wait for the
 * next pass, unless they waited already: the application's answer to the
 * message, posted meanwhile, carries them in its header (a reply costs the
 * peer one wakeup, not two). If none comes, the next pass comes at once
 * all the same. Where the application may sleep on the wait fd, the
 * message read with MSG_PEEK, still in the socket, keeps it readable at no
 * cost, or else EPOLLOUT is armed. Where it may not, only the core can
 * sleep, and it runs the progress op first: that ends the hold from the
 * next pass on, and the message was read once, as on a plain socket.
 */
static bool hold_answers(struct tcp_conn *c)
{
	bool hold = c->delivered && !c->hold && !c->failed && !c->closing &&
		    no_requests(c) &&
		    (!rmca_list_empty(&c->outq) || rmca_tcp_counts_due(c));

	c->delivered = false;
	if (!hold)
		return false;
	c->hold = true;
	if (c->peeked)
		return true;
	if (may_sleep(c)) {
		set_events(c, (rmca_tcp_rx_held(c) ? 0 : EPOLLIN) | EPOLLOUT);
	} else {
		c->hold_pass = c->mod->pass;
		if (!rmca_list_linked(&c->held_link))
			rmca_list_add_tail(&c->mod->held, &c->held_link);
		c->mod->progress_due |= TCP_DUE_HELD;
	}
	return true;
}

/* The counts go alone if they are due and no frame would carry them. */
static void counts_out(struct tcp_conn *c)
{
	if (c->failed || !rmca_list_empty(&c->outq) || !rmca_tcp_counts_due(c))
		return;
	rmca_tcp_ack_queue(c);
}

/* Nothing for rmca_tcp_out_flush to do: nothing queued or held, nothing
 * peeked, and the events it would ask for are those asked already. A pass
 * that read nothing, or only what it holds the answer of, stops here. */
static bool out_idle(const struct tcp_conn *c)
{
	return rmca_list_empty(&c->outq) && !c->hold && !c->peeked &&
	       !c->closing && c->events == (rmca_tcp_rx_held(c) ? 0u : EPOLLIN);
}

/*
 * counts_out() of a wakeup: with nothing held or peeked (the answer to a
 * put placed) the counts alone are written as a post's frame is, without
 * the queue, and then true: nothing is left for rmca_tcp_out_flush().
 */
static inline bool counts_alone(struct tcp_conn *c)
{
	if (c->failed || !rmca_list_empty(&c->outq) || !rmca_tcp_counts_due(c))
		return false;
	if (c->hold || c->peeked) {
		rmca_tcp_ack_queue(c);
		return false;
	}
	c->ack.off = 0;
	rmca_tcp_out_direct(c, &c->ack);
	return true;
}

/* Read what there is, then write what that queued, once; go on with
 * frames left buffered while the connection held off reading if the
 * write let it read again. */
static void conn_serve(struct tcp_conn *c, bool readable)
{
	for (int i = 0; i < 2 && c->fd >= 0; i++) {
		if (readable || rmca_tcp_rx_ready(c))
			rmca_tcp_rx(c);
		if (c->fd >= 0 && !hold_answers(c) && !counts_alone(c) &&
		    c->fd >= 0 && !out_idle(c))
			rmca_tcp_out_flush(c);
		if (!rmca_tcp_rx_ready(c))
			return;
		readable = false;
	}
	if (c->fd >= 0)
		dirty_add(c); /* the rest at the next pass */
}

/*
 * A stream being written: its frames wait for room in the socket, and no
 * answer is held. What the peer sends it then is acknowledgements, which
 * can wait for the core's next look at the fds (a few passes at most).
 */
static bool write_bound(const struct tcp_conn *c)
{
	return !c->hold && !c->failed && (c->events & EPOLLOUT) &&
	       !rmca_list_empty(&c->outq);
}

static void conn_cb(void *arg, uint32_t events)
{
	struct tcp_conn *c = arg;

	/* Called before the core knew of anything ready (RMCA_FD_EAGER):
	 * a stream being written is written, not read too, as a plain
	 * socket's sender does; epoll tells when there is room. */
	if ((events & RMCA_FD_EAGER) && write_bound(c)) {
		rmca_tcp_out_flush(c);
		return;
	}

	/* An error or hang-up fails the connection here even while it holds
	 * off reading (EPOLLIN off): its write fails. */
	conn_serve(c, events & (EPOLLIN | EPOLLERR | EPOLLHUP));
}

/* A pass with connections held back or holding, or sockets parked or a
 * port resting: each connection once (serving may queue it again, for the
 * next pass). */
static __attribute__((noinline)) int progress_work(struct tcp_module *m)
{
	struct tcp_conn *c;
	struct rmca_list todo;

	rmca_list_init(&todo);
	if (!rmca_list_empty(&m->dirty)) {
		todo.next = m->dirty.next;
		todo.prev = m->dirty.prev;
		todo.next->prev = &todo;
		todo.prev->next = &todo;
		rmca_list_init(&m->dirty);
	}
	while ((c = rmca_list_first(&todo, struct tcp_conn, dirty_link))) {
		dirty_del(c);
		if (c->fd >= 0)
			conn_serve(c, false);
	}
	/* Holds from before this pass end (the answer did not come); held
	 * is in hold order, and serving takes c off it. */
	while ((c = rmca_list_first(&m->held, struct tcp_conn, held_link)) &&
	       c->hold_pass != m->pass) {
		held_del(c);
		if (c->fd >= 0)
			conn_serve(c, false);
	}
	m->pass++;
	/* Holds begun in this pass end in a later one; parked sockets and a
	 * resting port are watched every pass (dirty_add set it already for
	 * a connection queued again). */
	if (!rmca_list_empty(&m->held))
		m->progress_due |= TCP_DUE_HELD;
	if (m->npending || m->lfd_rest_until)
		m->progress_due |= TCP_DUE_PARKED;
	/* Parked sockets and a resting port are rare: no call without. */
	if (m->npending || m->lfd_rest_until)
		return rmca_tcp_pending_expire(&m->base);
	m->next_expiry = 0;
	return 0;
}

/* A hold begun before this pass: held is in hold order. */
static inline bool holds_due(const struct tcp_module *m)
{
	const struct tcp_conn *c =
		rmca_list_first(&m->held, struct tcp_conn, held_link);

	return c && c->hold_pass != m->pass;
}

/* Says RMCA_PROGRESS_SERVED after input was read: on the target of a put or
 * an atomic, the request an eager read served makes no completion, and the
 * core would otherwise go on to an epoll_wait() that finds nothing. */
int rmca_tcp_progress(struct rmca_module *mod)
{
	struct tcp_module *m = rmca_container_of(mod, struct tcp_module, base);
	int r = 0;

	/* The common pass: nothing held back, no hold from before this pass
	 * (one begun in it, the message's reply still to come, waits), nothing
	 * parked or resting. */
	if (rmca_list_empty(&m->dirty) && !holds_due(m) && !m->npending &&
	    !m->lfd_rest_until) {
		m->next_expiry = 0;
		m->pass++;
		/* a hold begun in this pass ends in the next */
		if (!rmca_list_empty(&m->held))
			m->progress_due |= TCP_DUE_HELD;
	} else {
		r = progress_work(m);
	}
	if (!m->served)
		return r;
	m->served = false;
	return r | RMCA_PROGRESS_SERVED;
}

/* The core calls rmca_tcp_progress only while this is set: a pass with
 * nothing held, dirty, served or parked costs the core a load. */
unsigned *rmca_tcp_progress_due(struct rmca_module *mod)
{
	return &rmca_container_of(mod, struct tcp_module, base)->progress_due;
}

int rmca_tcp_conn_create(struct tcp_module *m, int fd, void *cookie,
			 struct tcp_conn **out)
{
	const struct rmca_core *core = m->base.core;
	struct tcp_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return RMCA_ERR_NO_MEMORY;
	c->base.module = &m->base;
	c->mod = m;
	c->fd = fd;
	c->cookie = cookie;
	c->rx.buf = malloc(TCP_RX_BUF);
	if (!c->rx.buf) {
		free(c);
		return RMCA_ERR_NO_MEMORY;
	}
	rmca_list_init(&c->link);
	rmca_list_init(&c->dirty_link);
	rmca_list_init(&c->held_link);
	rmca_list_init(&c->keys);
	rmca_list_init(&c->ops);
	rmca_list_init(&c->recvs);
	rmca_list_init(&c->sendq);
	rmca_list_init(&c->unacked);
	rmca_list_init(&c->inflight);
	rmca_list_init(&c->outq);
	rmca_list_init(&c->ack.link);
	c->ack.hdr[0] = TCP_F_ACK; /* the rest zero (calloc), counts stamped */
	c->ack.owned = true;
	c->ack.kept = true;
	rmca_tcp_sockname(fd, true, c->peer, sizeof(c->peer));
	/* Eager: the core may read a busy connection without asking epoll
	 * first; conn_serve() finds nothing to do when nothing is there. */
	if (core->ops->fd_add(core, fd, EPOLLIN | RMCA_FD_EAGER, conn_cb, c)) {
		free(c->rx.buf);
		free(c);
		return RMCA_ERR_NO_MEMORY;
	}
	c->registered = true;
	c->events = EPOLLIN;
	rmca_list_add_tail(&m->conns, &c->link);
	*out = c;
	return 0;
}

void rmca_tcp_out_free(struct tcp_module *m, struct tcp_out *o)
{
	if (!o || o->kept)
		return;
	if (m->nspare_outs >= TCP_SPARE_MAX) {
		free(o);
		return;
	}
	rmca_list_add_tail(&m->spare_outs, &o->link);
	m->nspare_outs++;
}

void rmca_tcp_spares_free(struct tcp_module *m)
{
	struct tcp_out *o;

	while ((o = rmca_list_first(&m->spare_outs, struct tcp_out, link))) {
		rmca_list_del(&o->link);
		free(o);
	}
	m->nspare_outs = 0;
}

static void out_drop(struct tcp_conn *c, struct tcp_out *o)
{
	if (o->answer)
		c->nanswers--;
	rmca_list_del(&o->link);
	if (o->owned)
		rmca_tcp_out_free(c->mod, o);
}

/* o is on the wire, whole: a send or put may now be acknowledged. */
static void out_written(struct tcp_conn *c, struct tcp_out *o)
{
	if (o->by_count)
		c->by_count_out++;
	out_drop(c, o);
}

/* Account n written bytes against the queue head onwards. */
static void out_advance(struct tcp_conn *c, size_t n)
{
	struct tcp_out *o;

	while (n && (o = rmca_list_first(&c->outq, struct tcp_out, link))) {
		size_t left = TCP_HDR_LEN + o->len - o->off;

		if (n < left) {
			o->off += n;
			return;
		}
		n -= left;
		out_written(c, o);
	}
	/* Zero-payload frames fully covered by an earlier write. */
	while ((o = rmca_list_first(&c->outq, struct tcp_out, link)) &&
	       o->off == TCP_HDR_LEN + o->len)
		out_written(c, o);
}

/*
 * The queue as an iovec, each header not started yet stamped with the
 * counts as they are now: the frame about to go carries the latest, and
 * the peer is told them once it is written (a queued frame is written, or
 * the connection fails).
 */
static int out_iov(struct tcp_conn *c, struct iovec *iov)
{
	size_t bytes = 0;
	int n = 0;

	for (struct rmca_list *l = c->outq.next;
	     l != &c->outq && n + 2 <= TCP_IOV_MAX && bytes < TCP_TX_BATCH;
	     l = l->next) {
		struct tcp_out *o = rmca_list_entry(l, struct tcp_out, link);

		if (!o->off) {
			rmca_tcp_frame_counts(o->hdr, c->done_in, c->granted);
			c->done_told = c->done_in;
			c->granted_told = c->granted;
		}
		if (o->off < TCP_HDR_LEN) {
			iov[n].iov_base = o->hdr + o->off;
			iov[n++].iov_len = TCP_HDR_LEN - o->off;
			if (o->len) {
				iov[n].iov_base = (void *)o->payload;
				iov[n++].iov_len = o->len;
			}
		} else if (o->off < TCP_HDR_LEN + o->len) {
			size_t done = o->off - TCP_HDR_LEN;

			iov[n].iov_base = (void *)(o->payload + done);
			iov[n++].iov_len = o->len - done;
		}
		bytes += TCP_HDR_LEN + o->len - o->off;
	}
	return n;
}

/* The frame queued alone and not begun, the common case of a post or an
 * answer, or NULL. */
static inline struct tcp_out *out_lone(const struct tcp_conn *c)
{
	struct tcp_out *o = rmca_list_entry(c->outq.next, struct tcp_out, link);

	return c->outq.next == c->outq.prev && !o->off ? o : NULL;
}

/* What out_iov() does to that frame's header, without the walk. */
static inline void out_lone_told(struct tcp_conn *c, struct tcp_out *o)
{
	rmca_tcp_frame_counts(o->hdr, c->done_in, c->granted);
	c->done_told = c->done_in;
	c->granted_told = c->granted;
}

/* frame_write() of a frame whose payload is not copied: header and
 * payload from where they are, with one sendmsg(). */
static __attribute__((noinline)) ssize_t
frame_writev(struct tcp_conn *c, const uint8_t *hdr, const char *pl, size_t len)
{
	struct iovec iov[2] = {
		{.iov_base = (void *)hdr, .iov_len = TCP_HDR_LEN},
		{.iov_base = (void *)pl, .iov_len = len},
	};
	struct msghdr msg = {.msg_iov = iov, .msg_iovlen = 2};
	ssize_t n;

	do {
		n = rmca_tcp_io_sendmsg(c->mod->io_direct, c->fd, &msg,
					MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	return n;
}

/*
 * One write of a frame not begun: header hdr and len payload bytes at pl.
 * A small one is copied whole into the module's scratch buffer and goes
 * with send(), a header alone straight from hdr: the kernel's sendmsg()
 * first copies in the message header and the iovec array and walks two
 * segments, which a small frame's round trip pays for measurably (timed
 * on loopback: see doc/bench.md). A larger payload is written from where
 * it is, header and payload in one sendmsg().
 */
static inline __attribute__((always_inline)) ssize_t
frame_write(struct tcp_conn *c, const uint8_t *hdr, const char *pl, size_t len)
{
	const void *buf = hdr;
	char *s = c->mod->scratch;
	ssize_t n;

	if (len > TCP_TX_COPY)
		return frame_writev(c, hdr, pl, len);
	if (len) {
		memcpy(s, hdr, TCP_HDR_LEN);
		rmca_tcp_copy(s + TCP_HDR_LEN, pl, len);
		buf = s;
	}
	do {
		n = rmca_tcp_io_send(c->mod->io_direct, c->fd, buf,
				     TCP_HDR_LEN + len, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	return n;
}

/* What a MSG_PEEK left in the socket leaves it: no hold needs it.
 * MSG_TRUNC discards it without copying it out (the buffer is there for
 * a kernel that copies all the same). */
static void peeked_drop(struct tcp_conn *c)
{
	ssize_t n;

	while (c->peeked && c->fd >= 0) {
		n = rmca_tcp_io_recv(c->mod->io_direct, c->fd, c->mod->scratch,
				     c->peeked, MSG_TRUNC | MSG_DONTWAIT);
		if (n > 0)
			c->peeked -= (size_t)n;
		else if (n < 0 && errno == EINTR)
			continue;
		else
			return; /* the next read takes the rest, or fails */
	}
}

/* A write failed (errno): c fails, or closes once it has failed. */
static __attribute__((noinline)) void out_error(struct tcp_conn *c)
{
	if (c->failed) {
		conn_close_fd(c);
		return;
	}
	tcp_log(c->mod, RMCA_LOG_INFO, "connection to %s: %s", c->peer,
		strerror(errno));
	rmca_tcp_conn_fail(c, RMCA_ERR_CONNECTION, NULL);
}

/* After the writes: what was peeked goes, a closing connection half-closes
 * once its final frame is out, and the events follow the queue. Inline:
 * every flush ends with it. */
static inline __attribute__((always_inline)) void out_after(struct tcp_conn *c)
{
	peeked_drop(c);
	if (c->closing && rmca_list_empty(&c->outq)) {
		/* The final frame is out: half-close, then read until the
		 * peer closes so that no reset overtakes it. */
		shutdown(c->fd, SHUT_WR);
		c->closing = false;
	}
	set_events(c, (rmca_tcp_rx_held(c) ? 0 : EPOLLIN) |
			      (rmca_list_empty(&c->outq) ? 0 : EPOLLOUT));
	/* Reading again, with whole frames buffered: the socket may stay
	 * silent, so the next pass goes on with them. */
	if (rmca_tcp_rx_ready(c))
		dirty_add(c);
}

void rmca_tcp_out_flush(struct tcp_conn *c)
{
	struct iovec iov[TCP_IOV_MAX];
	struct msghdr msg = { .msg_iov = iov };
	struct tcp_out *o;
	ssize_t n;

	dirty_del(c);
	/* Counts held for a frame that did not come (a post queued nothing
	 * that can go) go alone; peek while the application answers. */
	if (c->hold) {
		c->hold = false;
		held_del(c);
		c->peek = !rmca_list_empty(&c->outq) && may_sleep(c);
		counts_out(c);
	} else if (c->peeked) {
		c->peek = false; /* peeked for a hold that did not come */
	}
	while (c->fd >= 0 && !rmca_list_empty(&c->outq)) {
		o = out_lone(c);
		if (o) {
			out_lone_told(c, o);
			n = frame_write(c, o->hdr, o->payload, o->len);
		} else {
			msg.msg_iovlen = (size_t)out_iov(c, iov);
			n = rmca_tcp_io_sendmsg(c->mod->io_direct, c->fd, &msg,
						MSG_NOSIGNAL);
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n < 0) {
			out_error(c);
			return;
		}
		if (o && (size_t)n == TCP_HDR_LEN + o->len)
			out_written(c, o); /* the queue is empty */
		else
			out_advance(c, (size_t)n);
	}
	if (c->fd >= 0)
		out_after(c);
}

/*
 * rmca_tcp_out_flush() of a post's frame o, or of the counts alone
 * (conn_serve), on a connection with nothing queued (rmca_tcp_out_post),
 * without the queue: o is written at once, and queued only if the socket
 * does not take all of it, with the part it took; the rest goes once
 * there is room (EPOLLOUT), as from the queue. A reply's post ends the
 * hold of the counts it carries, and the message peeked for that hold is
 * dropped after it, as the flush does.
 */
static inline __attribute__((always_inline)) void
direct_hold_end(struct tcp_conn *c)
{
	if (c->hold) {
		c->hold = false;
		/* A hold on the module's held list began where nobody may
		 * sleep on the wait fd: without asking again, the next
		 * message is read out, not peeked (should the application
		 * have taken the wait fd since, its next hold arms EPOLLOUT
		 * instead, and peeks from then on). */
		if (rmca_list_linked(&c->held_link)) {
			held_unlink(c);
			c->peek = false;
		} else {
			c->peek = may_sleep(c);
		}
	} else if (c->peeked) {
		c->peek = false; /* peeked for a hold that did not come */
	}
}

/* What a direct write of o that wrote n bytes leaves: o on the wire, or
 * queued from where it stopped. */
static inline __attribute__((always_inline)) void
direct_written(struct tcp_conn *c, struct tcp_out *o, ssize_t n)
{
	if (n == (ssize_t)(TCP_HDR_LEN + o->len)) {
		if (o->by_count)
			c->by_count_out++;
		if (c->peeked)
			peeked_drop(c);
		set_events(c, rmca_tcp_rx_held(c) ? 0 : EPOLLIN);
		return;
	}
	o->off = n > 0 ? (size_t)n : 0;
	rmca_tcp_out_queue(c, o);
	if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
		out_error(c);
		return;
	}
	out_after(c);
}

void rmca_tcp_out_direct(struct tcp_conn *c, struct tcp_out *o)
{
	direct_hold_end(c);
	out_lone_told(c, o);
	direct_written(c, o, frame_write(c, o->hdr, o->payload, o->len));
}

/*
 * rmca_tcp_out_direct() of a post's frame of up to TCP_TX_COPY payload
 * bytes whose header the post encoded straight into the module's scratch
 * buffer (rmca_tcp_out_post_scratch): the payload is copied after it and
 * the whole goes with one send(), without first encoding the header in o
 * and copying it over. Only a write the socket does not take whole copies
 * the header (with the counts it carries) into o, to be finished from
 * the queue.
 */
void rmca_tcp_out_direct_scratch(struct tcp_conn *c, struct tcp_out *o)
{
	uint8_t *s = (uint8_t *)c->mod->scratch;
	ssize_t n;

	direct_hold_end(c);
	rmca_tcp_frame_counts(s, c->done_in, c->granted);
	c->done_told = c->done_in;
	c->granted_told = c->granted;
	if (o->len)
		rmca_tcp_copy((char *)s + TCP_HDR_LEN, o->payload, o->len);
	do {
		n = rmca_tcp_io_send(c->mod->io_direct, c->fd, s,
				     TCP_HDR_LEN + o->len, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n != (ssize_t)(TCP_HDR_LEN + o->len))
		memcpy(o->hdr, s, TCP_HDR_LEN);
	direct_written(c, o, n);
}

/*
 * The answer f to a request of the peer (a fetch-add's, a short GET's,
 * its payload pl in region), on a connection with nothing queued, held
 * or peeked and nothing more buffered to read (rmca_tcp_answer_now()):
 * written at once as a post's frame is, without the queue and without
 * taking a frame to build it in. Only what the socket does not take is
 * queued, as a counted answer, from where it stopped; the rest goes once
 * there is room (EPOLLOUT). False when nothing was written and the caller
 * is to queue it as usual (a full socket, or an error, which the flush
 * that follows meets again and fails c with).
 */
bool rmca_tcp_answer_direct(struct tcp_conn *c, const struct tcp_frame *f,
			    const char *pl, size_t len,
			    const struct tcp_mr *region)
{
	uint8_t hdr[TCP_HDR_LEN];
	struct tcp_out *o;
	ssize_t n;

	rmca_tcp_frame_encode(f, hdr);
	rmca_tcp_frame_counts(hdr, c->done_in, c->granted);
	n = frame_write(c, hdr, pl, len);
	if (n <= 0)
		return false;
	c->done_told = c->done_in;
	c->granted_told = c->granted;
	if (n == (ssize_t)(TCP_HDR_LEN + len))
		return true;
	o = rmca_tcp_out_new(c->mod, f, pl, len);
	if (!o) {
		rmca_tcp_conn_fail(c, RMCA_ERR_NO_MEMORY, NULL);
		return true;
	}
	memcpy(o->hdr, hdr, TCP_HDR_LEN);
	o->off = (size_t)n;
	o->mr = len ? region : NULL;
	rmca_tcp_answer_queue(c, o);
	out_after(c);
	return true;
}

void rmca_tcp_flushes_done(struct tcp_conn *c)
{
	const struct rmca_core *core = c->mod->base.core;
	struct tcp_op *op;
	void *req;

	while ((op = rmca_list_first(&c->ops, struct tcp_op, link)) &&
	       op->kind == TCP_OP_FLUSH) {
		req = op->req;
		rmca_tcp_op_release(op);
		c->nops--;
		core->ops->complete(core, req, RMCA_OK, 0, 0);
	}
}

/* Every op still outstanding ends with status, in post order. */
void rmca_tcp_complete_all(struct tcp_conn *c, int status)
{
	const struct rmca_core *core = c->mod->base.core;
	struct tcp_op *op;
	void *req;

	while ((op = rmca_list_first(&c->ops, struct tcp_op, link)) ||
	       (op = rmca_list_first(&c->recvs, struct tcp_op, link))) {
		req = op->req;
		rmca_tcp_op_release(op);
		c->nops--;
		core->ops->complete(core, req, status, 0, 0);
	}
	c->rx.op = NULL;
}

/*
 * Fail c; final (may be NULL) is the frame that explains why to the peer.
 * The answers queued before it (before stop, if not NULL) go out first, so
 * that the peer's operations before the refused one end with their own
 * status; without a final frame the connection just closes.
 */
static void conn_fail_at(struct tcp_conn *c, int status, struct tcp_out *stop,
			 struct tcp_out *final)
{
	const struct rmca_core *core = c->mod->base.core;
	struct tcp_out *head = rmca_list_first(&c->outq, struct tcp_out, link);
	struct rmca_list *l, *next;
	bool before = final != NULL;

	if (c->failed) {
		if (final)
			rmca_tcp_out_free(c->mod, final);
		return;
	}
	c->failed = true;
	c->fail_status = status;

	/*
	 * A frame already half written must end first; if it carries a user
	 * buffer that is about to be handed back, the stream is cut instead.
	 */
	if (head && head->off && !head->owned) {
		rmca_tcp_out_free(c->mod, final);
		final = NULL;
	}
	for (l = c->outq.next; l != &c->outq; l = next) {
		struct tcp_out *o = rmca_list_entry(l, struct tcp_out, link);

		next = l->next;
		if (o == stop)
			before = false;
		if (o->owned && (before || (o == head && o->off)))
			continue;
		out_drop(c, o);
	}
	rmca_tcp_complete_all(c, status == RMCA_ERR_PROTOCOL ?
					 RMCA_ERR_PROTOCOL :
					 RMCA_ERR_CONNECTION);
	if (final && c->fd >= 0) {
		rmca_tcp_out_queue(c, final);
		c->closing = true;
		rmca_tcp_out_flush(c);
	} else {
		rmca_tcp_out_free(c->mod, final);
		conn_close_fd(c);
	}
	core->ops->conn_failed(core, c->cookie, status);
}

void rmca_tcp_conn_fail(struct tcp_conn *c, int status, struct tcp_out *final)
{
	conn_fail_at(c, status, NULL, final);
}

/* The answer to request o (a queued GET answer) becomes a refusal. */
static struct tcp_out *refusal_of(struct tcp_conn *c, const struct tcp_out *o)
{
	struct tcp_frame f;
	const char *why;

	if (rmca_tcp_frame_decode(o->hdr, TCP_HDR_LEN, &f, &why))
		return NULL; /* we encoded it: cannot happen */
	f.status = RMCA_ERR_REMOTE_ACCESS;
	f.len = 0;
	f.operand = 0;
	return rmca_tcp_out_new(c->mod, &f, NULL, 0);
}

/* Does an op of list h use mr's memory? */
static bool ops_use(const struct rmca_list *h, const struct tcp_mr *mr)
{
	for (const struct rmca_list *l = h->next; l != h; l = l->next)
		if (rmca_list_entry(l, struct tcp_op, link)->mr == mr)
			return true;
	return false;
}

/*
 * mr is being deregistered: once this returns, nothing on c reads or writes
 * its memory. A put streaming into it drains the rest of its payload and is
 * refused when it ends. A queued answer that would read from it is refused
 * as any access to a gone region, and c fails after it (as a verbs QP does
 * on a remote access error); answers queued before it still go out. An
 * answer partly on the wire cannot be refused any more: the stream is cut.
 */
void rmca_tcp_conn_mr_gone(struct tcp_conn *c, const struct tcp_mr *mr)
{
	struct tcp_rx *rx = &c->rx;
	struct tcp_out *o = NULL, *refusal;
	struct rmca_list *l;

	/*
	 * Our own operations on its memory cannot go on either: as a verbs
	 * QP whose work request meets a deregistered region, the connection
	 * fails, cut where it stands, and every op ends.
	 */
	if (!c->failed && (ops_use(&c->ops, mr) || ops_use(&c->recvs, mr))) {
		tcp_log(c->mod, RMCA_LOG_INFO,
			"closing connection to %s: a region deregistered "
			"under its operations",
			c->peer);
		while ((o = rmca_list_first(&c->outq, struct tcp_out, link)))
			out_drop(c, o);
		conn_fail_at(c, RMCA_ERR_CONNECTION, NULL, NULL);
		return;
	}

	if (rx->payload && rx->mr == mr) {
		rx->drain_left += rx->dst_left;
		rx->dst_left = 0;
		rx->dst = NULL;
		rx->mr = NULL;
		rx->status = RMCA_ERR_REMOTE_ACCESS;
	}
	for (l = c->outq.next; l != &c->outq; l = l->next) {
		o = rmca_list_entry(l, struct tcp_out, link);
		if (o->mr == mr)
			break;
		o = NULL;
	}
	if (!o)
		return;
	refusal = o->off || c->failed ? NULL : refusal_of(c, o);
	if (!refusal) {
		while ((o = rmca_list_first(&c->outq, struct tcp_out, link)))
			out_drop(c, o);
		if (c->failed)
			conn_close_fd(c);
		else
			conn_fail_at(c, RMCA_ERR_REMOTE_ACCESS, NULL, NULL);
		return;
	}
	tcp_log(c->mod, RMCA_LOG_INFO,
		"refused a read from %s: its region was deregistered", c->peer);
	conn_fail_at(c, RMCA_ERR_REMOTE_ACCESS, o, refusal);
}

/* After a failure: read and drop until the peer closes. */
void rmca_tcp_discard(struct tcp_conn *c)
{
	ssize_t n;

	c->peeked = 0; /* read again below, as everything else */
	for (int i = 0; i < TCP_RX_BUDGET; i++) {
		n = recv(c->fd, c->mod->scratch, TCP_SCRATCH_LEN, 0);
		if (n > 0)
			continue;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		conn_close_fd(c);
		return;
	}
}

/*
 * Closing: counts and answers still held for a reply leave first, with one
 * non-blocking write and no error handling (the connection is going). The
 * peer's sends they acknowledge were delivered, and the application saw
 * them arrive before it closed: they complete RMCA_OK, as they did when
 * every answer left before the receive was reported.
 */
void rmca_tcp_conn_close_out(struct tcp_conn *c)
{
	struct iovec iov[TCP_IOV_MAX];
	struct msghdr msg = {.msg_iov = iov};

	if (!c->hold || c->failed || c->fd < 0)
		return;
	if (rmca_list_empty(&c->outq))
		rmca_tcp_ack_queue(c);
	msg.msg_iovlen = (size_t)out_iov(c, iov);
	if (sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		return;
}

void rmca_tcp_conn_destroy(struct tcp_conn *c)
{
	struct tcp_rkey *k;
	struct tcp_out *o;

	rmca_tcp_complete_all(c, RMCA_ERR_CANCELED);
	while ((o = rmca_list_first(&c->outq, struct tcp_out, link)))
		out_drop(c, o);
	conn_close_fd(c);
	dirty_del(c);
	held_del(c);
	/* Keys bound to c die with it. */
	while ((k = rmca_list_first(&c->keys, struct tcp_rkey, conn_link)))
		rmca_tcp_rkey_free(k);
	rmca_list_del(&c->link);
	free(c->rx.buf);
	free(c);
}
