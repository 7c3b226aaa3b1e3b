/* SPDX-License-Identifier: BSD-3-Clause */
/* The fake core of the shm tests (shm_fake_core.h). */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <setjmp.h>
#include <cmocka.h>

#include "fair.h"
#include "shm_fake_core.h"

struct shm_fake_fd shm_fake_fds[SHM_FAKE_MAX_FDS];

void (*shm_fake_on_complete)(struct treq *r);

static void t_log(const struct rmca_core *core, int level, const char *fmt, ...)
{
	va_list ap;

	if (level > RMCA_LOG_ERROR)
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static int t_param_register(const struct rmca_core *core,
			    const struct rmca_param_def *def)
{
	return 0;
}

static bool t_param_bool(const struct rmca_core *core, const char *name)
{
	return false; /* shm_cma=no: every byte through the rings */
}

static long long t_param_int(const struct rmca_core *core, const char *name)
{
	return 0;
}

static int t_fd_add(const struct rmca_core *core, int fd, uint32_t events,
		    rmca_fd_cb cb, void *arg)
{
	for (int i = 0; i < SHM_FAKE_MAX_FDS; i++)
		if (!shm_fake_fds[i].cb) {
			shm_fake_fds[i] =
				(struct shm_fake_fd){fd, events, cb, arg};
			return 0;
		}
	return RMCA_ERR_NO_MEMORY;
}

static int t_fd_mod(const struct rmca_core *core, int fd, uint32_t events)
{
	return 0;
}

static void t_fd_del(const struct rmca_core *core, int fd)
{
	for (int i = 0; i < SHM_FAKE_MAX_FDS; i++)
		if (shm_fake_fds[i].cb && shm_fake_fds[i].fd == fd)
			shm_fake_fds[i] = (struct shm_fake_fd){.fd = -1};
}

static int t_mem_find(const struct rmca_core *core, const void *addr,
		      size_t len, struct rmca_mem_info *out)
{
	return RMCA_ERR_NOT_FOUND;
}

static void t_complete(const struct rmca_core *core, void *req, int status,
		       size_t len, uint64_t revoked)
{
	struct treq *r = req;

	r->done++;
	r->status = status;
	r->len = len;
	if (shm_fake_on_complete)
		shm_fake_on_complete(r);
}

static void t_conn_failed(const struct rmca_core *core, void *cookie,
			  int status)
{
}

static int t_random(void *buf, size_t len)
{
	return getrandom(buf, len, 0) == (ssize_t)len ? 0 : -1;
}

/* The core's own choice at a listener's bound, on counts of the test's. */
static const void *t_fair_victim(const struct rmca_core *core, size_t n,
				 rmca_fair_next next, void *arg,
				 const struct rmca_fair_entry *newcomer)
{
	static struct rmca_fair counts;

	return rmca_fair_victim(&counts, n, next, arg, newcomer);
}

static const struct rmca_core_ops t_ops = {
	.complete = t_complete,
	.conn_failed = t_conn_failed,
	.fd_add = t_fd_add,
	.fd_del = t_fd_del,
	.fd_mod = t_fd_mod,
	.fair_victim = t_fair_victim,
	.log = t_log,
	.mem_find = t_mem_find,
	.param_bool = t_param_bool,
	.param_int = t_param_int,
	.param_register = t_param_register,
	.random = t_random,
};

static const struct rmca_core t_core = {
	.ops = &t_ops,
	.req_offset = offsetof(struct treq, mine),
};

struct shm_module *shm_fake_module(void)
{
	struct shm_module *m;

	for (int i = 0; i < SHM_FAKE_MAX_FDS; i++)
		shm_fake_fds[i] = (struct shm_fake_fd){.fd = -1};
	assert_int_equal(rmca_shm_module_create(&t_core, &m), 0);
	return m;
}

struct shm_conn *shm_fake_conn(struct shm_module *m,
			       const struct shm_conn_parts *parts,
			       struct shm_seg **seg, int sv[2])
{
	struct shm_conn_parts p = *parts;
	struct shm_conn *c;

	*seg = mmap(NULL, sizeof(**seg), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(*seg != MAP_FAILED);
	(*seg)->magic = SHM_SEG_MAGIC;
	(*seg)->version = SHM_PROTO_VERSION;
	assert_int_equal(
		socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	p.seg = *seg;
	assert_int_equal(rmca_shm_conn_create(m, sv[0], &p, NULL, &c), 0);
	return c;
}
