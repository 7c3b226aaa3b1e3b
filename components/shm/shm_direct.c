/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Puts and gets the initiator's core copies itself, under a key of the
 * table the target publishes, and the target's side of that bargain:
 * waiting, when it withdraws a key, until no peer copies under it. The
 * protocol and why it lets revocation win are in shm_pub.h.
 */
#define _GNU_SOURCE /* process_vm_readv */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#include "shm.h"

static uint64_t ld(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/* What a slot says of the allocation its region lies in (mem 0: none). */
struct shm_grant {
	uint64_t mem, serial, id, fd, base, len;
};

/* The slot still grants [raddr, raddr + len) with need to this
 * connection, as of seq; false if it changed or never did. */
static bool slot_grants(const struct shm_conn *c, const struct shm_kslot *s,
			uint64_t seq, uint64_t rkey, uint64_t raddr,
			uint64_t len, unsigned need, struct shm_grant *g)
{
	uint64_t key = ld(&s->key), base = ld(&s->addr), size = ld(&s->len);
	uint64_t tag = ld(&s->tag), access = ld(&s->access);

	g->mem = ld(&s->mem);
	g->serial = ld(&s->mem_serial);
	g->id = ld(&s->mem_id);
	g->fd = ld(&s->mem_fd);
	g->base = ld(&s->mem_base);
	g->len = ld(&s->mem_len);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if ((seq & 1) || ld(&s->seq) != seq)
		return false;
	if (key != rkey || (access & need) != need)
		return false;
	if (tag && tag != ld(&c->r.peer->tag))
		return false;
	return raddr >= base && raddr - base <= size &&
	       len <= size - (raddr - base);
}

/* Withdrawn since seq: the rest lands nowhere. */
static bool withdrawn(const struct shm_kslot *s, uint64_t seq)
{
	return __atomic_load_n(&s->seq, __ATOMIC_SEQ_CST) != seq;
}

/* Through the peer's allocation, mapped here: a memcpy per chunk. */
static int copy_mapped(const struct shm_conn *c, const struct shm_kslot *s,
		       uint64_t seq, bool to_peer, char *local, char *remote,
		       size_t len)
{
	while (len) {
		size_t n = len < SHM_DIRECT_CHUNK ? len : SHM_DIRECT_CHUNK;

		if (to_peer)
			memcpy(remote, local, n);
		else
			memcpy(local, remote, n);
		local += n;
		remote += n;
		len -= n;
		if (len && withdrawn(s, seq))
			return RMCA_ERR_REMOTE_ACCESS;
	}
	/* The pages outlive the peer here, in the mapping: whether it was
	 * there to receive them is asked later, once for every copy made
	 * since (rmca_shm_confirm), not a system call per copy. */
	return SHM_COPIED;
}

/* Through the kernel (CMA). */
static int copy_cma(const struct shm_conn *c, const struct shm_kslot *s,
		    uint64_t seq, bool to_peer, char *local, uint64_t raddr,
		    size_t len)
{
	while (len) {
		size_t n = len < SHM_DIRECT_CHUNK ? len : SHM_DIRECT_CHUNK;
		struct iovec l = {.iov_base = local, .iov_len = n};
		struct iovec r = {.iov_base = (void *)(uintptr_t)raddr,
				  .iov_len = n};
		ssize_t got = to_peer ? process_vm_writev(c->peer_pid, &l, 1,
							  &r, 1, 0)
				      : process_vm_readv(c->peer_pid, &l, 1, &r,
							 1, 0);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return got < 0 && errno == ESRCH
				       ? RMCA_ERR_CONNECTION
				       : RMCA_ERR_REMOTE_ACCESS;
		local += got;
		raddr += (uint64_t)got;
		len -= (size_t)got;
		if (len && withdrawn(s, seq))
			return RMCA_ERR_REMOTE_ACCESS;
	}
	return 0;
}

int rmca_shm_direct(struct shm_conn *c, bool to_peer, char *local,
		    uint64_t raddr, uint64_t rkey, size_t len)
{
	unsigned slot = shm_key_slot(rkey);
	unsigned need =
		to_peer ? RMCA_ACCESS_REMOTE_WRITE : RMCA_ACCESS_REMOTE_READ;
	const struct shm_kslot *s;
	struct shm_grant g;
	char *map = NULL;
	uint64_t seq;
	int st;

	if (!c->cma || !c->peer_keys || !slot)
		return SHM_NOT_DIRECT;
	s = &c->peer_keys->slot[slot];
	/* Announce, then look (shm_pub.h). */
	__atomic_store_n(&c->r.me->access, slot, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&c->r.peer->closed, __ATOMIC_SEQ_CST)) {
		st = RMCA_ERR_CONNECTION;
		goto out;
	}
	seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
	if (!slot_grants(c, s, seq, rkey, raddr, len, need, &g)) {
		st = RMCA_ERR_REMOTE_ACCESS;
		goto out;
	}
	/* The region lies in the peer's allocation, whole: map that. The
	 * key stays granted while announced, so the memfd named is the
	 * one there. */
	if (g.mem && g.mem < SHM_MEM_SLOTS && g.fd <= INT_MAX &&
	    raddr >= g.base && raddr - g.base <= g.len &&
	    len <= g.len - (raddr - g.base))
		map = rmca_shm_map(c, (unsigned)g.mem, g.serial, g.id,
				   (int)g.fd, g.len);
	st = map ? copy_mapped(c, s, seq, to_peer, local,
			       map + (raddr - g.base), len)
		 : copy_cma(c, s, seq, to_peer, local, raddr, len);
out:
	__atomic_store_n(&c->r.me->access, 0, __ATOMIC_RELEASE);
	return st;
}

/* The peer exited: its memory, and any copy it was making, are gone (a
 * pidfd is readable only then). A peer without a pidfd was never shown
 * the table, so it copies under none of its slots. */
bool rmca_shm_peer_gone(const struct shm_conn *c)
{
	struct pollfd p = {.fd = c->pidfd, .events = POLLIN};

	return c->pidfd < 0 || (poll(&p, 1, 0) > 0 && p.revents);
}

static bool copying_under(const struct shm_conn *c, unsigned slot)
{
	return __atomic_load_n(&c->r.peer->access, __ATOMIC_SEQ_CST) == slot &&
	       !rmca_shm_peer_gone(c);
}

static void wait_conn(const struct shm_conn *c, unsigned slot)
{
	struct timespec ts = {.tv_nsec = 20000};

	/* One chunk at most, unless the peer is descheduled in it: spin a
	 * little, then give the CPU away. */
	for (int i = 0; copying_under(c, slot); i++) {
		if (i < 1000)
			sched_yield();
		else
			nanosleep(&ts, NULL);
	}
}

void rmca_shm_wait_accessors(struct shm_module *m, unsigned slot)
{
	struct rmca_list *l;

	for (l = m->conns.next; l != &m->conns; l = l->next)
		wait_conn(rmca_list_entry(l, struct shm_conn, link), slot);
	for (l = m->zombies.next; l != &m->zombies; l = l->next)
		wait_conn(rmca_list_entry(l, struct shm_conn, link), slot);
}

static void zombie_free(struct shm_conn *c)
{
	rmca_list_del(&c->link);
	rmca_shm_conn_unmap(c);
	free(c);
}

void rmca_shm_reap_zombies(struct shm_module *m, bool all)
{
	struct rmca_list *l, *next;

	for (l = m->zombies.next; l != &m->zombies; l = next) {
		struct shm_conn *c =
			rmca_list_entry(l, struct shm_conn, link);

		next = l->next;
		if (all ||
		    !__atomic_load_n(&c->r.peer->access, __ATOMIC_SEQ_CST) ||
		    rmca_shm_peer_gone(c))
			zombie_free(c);
	}
}
