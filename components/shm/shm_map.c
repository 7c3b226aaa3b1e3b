/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The peer's allocations (rmca_mem_alloc), mapped here so that a put or
 * get under a key in one is a memcpy (shm_pub.h). The memfd comes from the
 * peer's own descriptor table with pidfd_getfd, which asks the same ptrace
 * permission as process_vm_writev: a connection that may use CMA may map.
 * Each connection keeps its mappings by the entry of the peer's mem[] they
 * came from, and drops those the peer no longer lists (its last key in
 * them deregistered or revoked), all of them when the connection fails or
 * closes.
 */
#define _GNU_SOURCE /* F_GET_SEALS */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shm.h"

#ifndef F_SEAL_SHRINK
#define F_SEAL_SHRINK 0x0002
#endif

static void unmap(struct shm_map *mp)
{
	if (mp->serial)
		munmap(mp->addr, mp->len);
	mp->serial = 0;
	mp->addr = NULL;
	mp->len = 0;
}

/* The peer's descriptor fd, here, or -1 (errno). */
static int fetch(const struct shm_conn *c, int fd)
{
#ifdef SYS_pidfd_getfd
	return (int)syscall(SYS_pidfd_getfd, c->pidfd, fd, 0);
#else
	(void)c;
	(void)fd;
	errno = ENOSYS;
	return -1;
#endif
}

/* fd is the memfd named: its inode, its size, and sealed so that the peer
 * cannot shrink it under our mapping (a SIGBUS here). */
static bool is_named(int fd, uint64_t id, uint64_t len)
{
	struct stat st;
	int seals = fcntl(fd, F_GET_SEALS);

	return seals >= 0 && (seals & F_SEAL_SHRINK) && !fstat(fd, &st) &&
	       S_ISREG(st.st_mode) && (uint64_t)st.st_ino == id &&
	       (uint64_t)st.st_size == len;
}

char *rmca_shm_map(struct shm_conn *c, unsigned mem, uint64_t serial,
		   uint64_t id, int fd, uint64_t len)
{
	struct shm_map *mp;
	int lfd;
	void *p;

	if (c->nomap || !mem || mem >= SHM_MEM_SLOTS || !serial || !id ||
	    fd < 0 || !len || len > SIZE_MAX)
		return NULL;
	if (!c->maps && !(c->maps = calloc(SHM_MEM_SLOTS, sizeof(*c->maps))))
		return NULL;
	mp = &c->maps[mem];
	if (mp->serial == serial && mp->len == len)
		return mp->addr;
	unmap(mp);
	lfd = fetch(c, fd);
	if (lfd < 0) {
		/* Not this kernel, or not allowed: CMA from now on. */
		if (errno == ENOSYS || errno == EPERM) {
			c->nomap = true;
			shm_log(c->mod, RMCA_LOG_INFO,
				"pid %d: cannot take its memfd (%s): puts "
				"and gets by cross-memory attach",
				(int)c->peer_pid, strerror(errno));
		}
		return NULL;
	}
	p = is_named(lfd, id, len)
		    ? mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE,
			   MAP_SHARED, lfd, 0)
		    : MAP_FAILED;
	close(lfd);
	if (p == MAP_FAILED)
		return NULL;
	(void)madvise(p, (size_t)len, MADV_DONTFORK);
	mp->serial = serial;
	mp->addr = p;
	mp->len = (size_t)len;
	return p;
}

void rmca_shm_map_sweep(struct shm_conn *c)
{
	uint64_t gen;

	if (!c->maps || !c->peer_keys)
		return;
	gen = __atomic_load_n(&c->peer_keys->mem_gen, __ATOMIC_ACQUIRE);
	if (gen == c->mem_gen)
		return;
	c->mem_gen = gen;
	for (unsigned i = 1; i < SHM_MEM_SLOTS; i++)
		if (c->maps[i].serial &&
		    __atomic_load_n(&c->peer_keys->mem[i], __ATOMIC_ACQUIRE) !=
			    c->maps[i].serial)
			unmap(&c->maps[i]);
}

void rmca_shm_map_release(struct shm_conn *c)
{
	if (!c->maps)
		return;
	for (unsigned i = 1; i < SHM_MEM_SLOTS; i++)
		unmap(&c->maps[i]);
	free(c->maps);
	c->maps = NULL;
}
