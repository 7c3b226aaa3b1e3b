/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A connection's life: its socket in the event loop, wakeups, and failure.
 *
 * Wakeups: a side sets its armed flag (in the segment) before it may sleep,
 * then looks at the rings once more. A producer publishes, then takes the
 * peer's armed flag back to 0 and writes one byte on the socket, only if it
 * was set. With a full fence between each side's store and load, either the
 * sleeper sees the new entry or the producer sees the flag: nothing is ever
 * left in a ring while its consumer sleeps on rmca_wait_fd.
 *
 * A side that keeps busy leaves that byte unread: its socket stays readable
 * (so rmca_wait_fd never sleeps on work), its flag stays 0, and the peer's
 * pushes cost no system call at all. Only once its wakeups found nothing
 * new for shm_idle_us (a parameter) does it read the byte and arm again: a
 * caller that sleeps on rmca_wait_fd sees spurious returns for that long at
 * most (the spin-then-sleep of MPI and UCX progress loops). 0 arms at once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "shm.h"

void rmca_shm_wake_peer(struct shm_conn *c)
{
	uint64_t *armed = &c->r.peer->armed;
	ssize_t n;

	if (c->fd < 0)
		return;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!__atomic_load_n(armed, __ATOMIC_RELAXED) ||
	    !__atomic_exchange_n(armed, 0, __ATOMIC_SEQ_CST))
		return;
	/* A full socket already holds a wake byte: nothing is lost. */
	do {
		n = send(c->fd, "w", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
}

static void close_fd(struct shm_conn *c)
{
	const struct rmca_core *core = c->mod->base.core;

	if (c->fd < 0)
		return;
	core->ops->fd_del(core, c->fd);
	close(c->fd);
	c->fd = -1;
}

void rmca_shm_conn_fail(struct shm_conn *c, int status)
{
	const struct rmca_core *core = c->mod->base.core;

	if (c->failed)
		return;
	c->failed = true;
	c->fail_status = status;
	/* The peer starts no copy into our memory from now on. */
	__atomic_store_n(&c->r.me->closed, 1, __ATOMIC_SEQ_CST);
	rmca_shm_complete_all(c, status == RMCA_ERR_PROTOCOL
					 ? RMCA_ERR_PROTOCOL
					 : RMCA_ERR_CONNECTION);
	/* Nothing copies into the peer's memory any more. */
	rmca_shm_map_release(c);
	/* The hang-up tells the peer at once; answers already in the rings
	 * stay readable for it. */
	close_fd(c);
	core->ops->conn_failed(core, c->cookie, status);
}

void rmca_shm_conn_poll(struct shm_conn *c)
{
	if (c->failed || !rmca_shm_rx(c))
		return;
	if (!rmca_list_empty(&c->backlog))
		rmca_shm_pump(c);
}

static void conn_gone(struct shm_conn *c, int err)
{
	/* The peer closed or died: what it answered before still counts,
	 * what it asked for is void (its side completed it already). */
	rmca_shm_rx_answers(c);
	if (!c->failed) {
		shm_log(c->mod, RMCA_LOG_INFO, "connection to pid %d: %s",
			(int)c->peer_pid, err ? strerror(err) : "peer gone");
		rmca_shm_conn_fail(c, RMCA_ERR_CONNECTION);
	}
}

/* Take the wake byte and arm: from now on the peer wakes us. */
static void arm(struct shm_conn *c)
{
	char buf[16];
	ssize_t n;

	c->idle_since = 0;
	/* At most one byte is in flight: the peer sends one per arming. */
	do {
		n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
	} while (n < 0 && errno == EINTR);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
		conn_gone(c, n ? errno : 0);
		return;
	}
	__atomic_store_n(&c->r.me->armed, 1, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	rmca_shm_conn_poll(c);
}

/* Quiet passes between two looks at the clock: a spinning caller makes
 * millions of passes a second, and the clock is the dearest part of one
 * that finds nothing. */
#define SHM_IDLE_CLOCK_EVERY 16

/* Arm once nothing new came for shm_idle_us. */
static void idle_check(struct shm_conn *c)
{
	long long now;

	if (!c->mod->idle_ns) {
		arm(c);
		return;
	}
	if (c->activity != c->activity_seen) {
		/* busy: keep the byte, stay disarmed */
		c->activity_seen = c->activity;
		c->idle_since = 0;
		c->idle_polls = 0;
		return;
	}
	if (c->idle_since && ++c->idle_polls < SHM_IDLE_CLOCK_EVERY)
		return;
	c->idle_polls = 0;
	now = rmca_now_ns();
	if (!c->idle_since) {
		c->idle_since = now;
		return;
	}
	if (now - c->idle_since >= c->mod->idle_ns)
		arm(c);
}

/* The socket is readable: a wake byte is there, or the peer is gone. */
static void conn_cb(void *arg, uint32_t events)
{
	struct shm_conn *c = arg;

	if (events & (EPOLLHUP | EPOLLRDHUP | EPOLLERR)) {
		conn_gone(c, 0);
		return;
	}
	rmca_shm_conn_poll(c);
	if (!c->failed)
		idle_check(c);
}

int rmca_shm_conn_create(struct shm_module *m, int fd,
			 const struct shm_conn_parts *p, void *cookie,
			 struct shm_conn **out)
{
	const struct rmca_core *core = m->base.core;
	struct shm_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return RMCA_ERR_NO_MEMORY;
	c->base.module = &m->base;
	c->mod = m;
	c->fd = fd;
	c->cookie = cookie;
	c->side = p->side;
	c->peer_pid = p->peer_pid;
	c->pidfd = p->pidfd;
	c->cma = p->cma;
	c->peer_keys = p->peer_keys;
	c->seg = p->seg;
	rmca_shm_rings_init(&c->r, p->seg, p->side);
	if (core->ops->random(&c->tag, sizeof(c->tag)) || !c->tag) {
		free(c);
		return RMCA_ERR_AGAIN;
	}
	__atomic_store_n(&c->r.me->tag, c->tag, __ATOMIC_RELEASE);
	rmca_list_init(&c->ops);
	rmca_list_init(&c->recvs);
	rmca_list_init(&c->backlog);
	rmca_list_init(&c->copied);
	if (core->ops->fd_add(core, fd, EPOLLIN | EPOLLRDHUP, conn_cb, c)) {
		free(c);
		return RMCA_ERR_NO_MEMORY;
	}
	rmca_list_add_tail(&m->conns, &c->link);
	*out = c;
	return 0;
}

void rmca_shm_conn_unmap(struct shm_conn *c)
{
	rmca_shm_map_release(c);
	munmap(c->seg, sizeof(*c->seg));
	if (c->peer_keys)
		munmap((void *)c->peer_keys, sizeof(*c->peer_keys));
	if (c->pidfd >= 0)
		close(c->pidfd);
}

void rmca_shm_disconnect(struct rmca_conn *conn)
{
	struct shm_conn *c = shm_conn_from_base(conn);
	struct shm_module *m = c->mod;

	rmca_shm_complete_all(c, RMCA_ERR_CANCELED);
	__atomic_store_n(&c->r.me->closed, 1, __ATOMIC_SEQ_CST);
	rmca_shm_map_release(c);
	close_fd(c);
	rmca_shm_keys_drop_conn(m, c);
	/* The peer may be copying under one of our keys still: the
	 * connection stays, as a zombie, until it no longer is. */
	rmca_list_del(&c->link);
	rmca_list_add_tail(&m->zombies, &c->link);
	rmca_shm_reap_zombies(m, false);
}

/*
 * Polled by every rmca_poll: the rings, without a system call. It says
 * RMCA_PROGRESS_POLLED when it found something: shm needs no fd to move
 * data, and the core then looks at the fds only once a millisecond while
 * the caller spins. So a disarmed side also arms from here once idle, not
 * only when the core reports its socket readable.
 */
int rmca_shm_progress(struct rmca_module *mod)
{
	struct shm_module *m = rmca_container_of(mod, struct shm_module, base);
	struct rmca_list *l, *next;
	int work = 0;

	if (!rmca_list_empty(&m->zombies))
		rmca_shm_reap_zombies(m, false);
	if (m->efd_on) {
		rmca_shm_confirm_all(m);
		work = RMCA_PROGRESS_POLLED;
	}
	for (l = m->conns.next; l != &m->conns; l = next) {
		struct shm_conn *c = rmca_list_entry(l, struct shm_conn, link);

		next = l->next;
		rmca_shm_conn_poll(c);
		if (c->failed)
			continue;
		/* Out of the peer's receives: read its count now, while
		 * waiting, rather than when the next send is posted. */
		rmca_shm_credit(c);
		rmca_shm_map_sweep(c);
		/* Since the last pass: the fd callback may have read it. */
		if (c->activity != c->activity_polled) {
			c->activity_polled = c->activity;
			work = RMCA_PROGRESS_POLLED;
		}
		if (!__atomic_load_n(&c->r.me->armed, __ATOMIC_RELAXED))
			idle_check(c);
	}
	return work;
}
