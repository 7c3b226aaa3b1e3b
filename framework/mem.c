// SPDX-License-Identifier: BSD-3-Clause
/*
 * Memory the library allocates (rmca_mem_alloc), as ucp_mem_map(ALLOCATE)
 * or a provider's own buffers: a memfd mapped shared, so that a same-host
 * transport can map the same pages in the peer (shm fetches the memfd with
 * pidfd_getfd) and a put becomes a memcpy. To every other transport it is
 * ordinary memory.
 *
 * The memfd is sealed against shrinking and growing: a peer that holds it
 * can neither take pages from under this process (SIGBUS) nor pin more.
 * Nothing is named in the file system; the pages go with the last mapping
 * or descriptor, however the process ends. MADV_DONTFORK keeps a child from
 * sharing them, as rdma-core does for registered memory.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ep.h"
#include "internal.h"

struct rmca_mem {
	struct rmca_list link; /* ctx->mems */
	struct rmca_mem_info info;
};

static int mem_create(size_t len, struct rmca_mem_info *info)
{
	int seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
	int fd = memfd_create("rmca-mem", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	struct stat st;
	void *p;

	if (fd < 0)
		return RMCA_ERR_NO_MEMORY;
	if (ftruncate(fd, (off_t)len) || fcntl(fd, F_ADD_SEALS, seals) ||
	    fstat(fd, &st)) {
		close(fd);
		return RMCA_ERR_NO_MEMORY;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return RMCA_ERR_NO_MEMORY;
	}
	(void)madvise(p, len, MADV_DONTFORK);
	info->fd = fd;
	info->base = p;
	info->len = len;
	info->id = (uint64_t)st.st_ino;
	return 0;
}

int rmca_mem_alloc(rmca_context_t *ctx, size_t len, void **addr)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct rmca_mem *m;
	int r;

	if (!ctx || !len || !addr || len > SIZE_MAX - page)
		return RMCA_ERR_INVALID;
	m = calloc(1, sizeof(*m));
	if (!m)
		return RMCA_ERR_NO_MEMORY;
	r = mem_create((len + page - 1) & ~(page - 1), &m->info);
	if (r) {
		free(m);
		return r;
	}
	rmca_list_add_tail(&ctx->mems, &m->link);
	*addr = m->info.base;
	return 0;
}

static bool inside(const struct rmca_mem_info *i, const void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr, b = (uintptr_t)i->base;

	return a >= b && a - b < i->len && len <= i->len - (a - b);
}

static void mem_destroy(struct rmca_mem *m)
{
	rmca_list_del(&m->link);
	munmap(m->info.base, m->info.len);
	close(m->info.fd);
	free(m);
}

int rmca_mem_free(rmca_context_t *ctx, void *addr)
{
	struct rmca_list *l;

	if (!ctx || !addr)
		return RMCA_ERR_INVALID;
	rmca_list_for_each(l, &ctx->mems)
	{
		struct rmca_mem *m = rmca_list_entry(l, struct rmca_mem, link);
		struct rmca_list *r;

		if (m->info.base != addr)
			continue;
		/* A transport may have handed its pages to a peer under a
		 * region's key: the region goes first. */
		rmca_list_for_each(r, &ctx->mrs)
		{
			const struct rmca_mr *mr =
				rmca_list_entry(r, struct rmca_mr, link);

			uintptr_t a = (uintptr_t)mr->addr,
				  b = (uintptr_t)m->info.base;

			if (a < b + m->info.len && a + mr->len > b)
				return RMCA_ERR_INVALID;
		}
		mem_destroy(m);
		return 0;
	}
	return RMCA_ERR_INVALID;
}

int rmca_mem_find(const struct rmca_core *core, const void *addr, size_t len,
		  struct rmca_mem_info *out)
{
	struct rmca_context *ctx = rmca_core_ctx(core);
	struct rmca_list *l;

	rmca_list_for_each(l, &ctx->mems)
	{
		struct rmca_mem *m = rmca_list_entry(l, struct rmca_mem, link);

		if (inside(&m->info, addr, len)) {
			*out = m->info;
			return 0;
		}
	}
	return RMCA_ERR_NOT_FOUND;
}

void rmca_mem_free_all(struct rmca_context *ctx)
{
	while (!rmca_list_empty(&ctx->mems))
		mem_destroy(rmca_list_first(&ctx->mems, struct rmca_mem, link));
}
