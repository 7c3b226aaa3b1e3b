/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shm module: who this process is (boot, namespaces, user), what the
 * peer's address must match for the two to share memory, and the ops table.
 */
#define _GNU_SOURCE /* process_vm_readv */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "shm.h"

static int read_boot_id(uint8_t id[16])
{
	char s[64];
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
	int n = 0;

	if (!f)
		return -1;
	if (!fgets(s, sizeof(s), f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	memset(id, 0, 16);
	for (const char *p = s; *p && n < 32; p++) {
		int v;

		if (*p >= '0' && *p <= '9')
			v = *p - '0';
		else if (*p >= 'a' && *p <= 'f')
			v = *p - 'a' + 10;
		else if (*p >= 'A' && *p <= 'F')
			v = *p - 'A' + 10;
		else
			continue;
		id[n / 2] |= (uint8_t)(n % 2 ? v : v << 4);
		n++;
	}
	return n == 32 ? 0 : -1;
}

static uint64_t ns_inode(const char *name)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/self/ns/%s", name);
	return stat(path, &st) ? 0 : (uint64_t)st.st_ino;
}

/* Yama's ptrace_scope: above 0, a process may attach only to its own
 * descendants, so two peers could disagree on whether they reach each
 * other. The value is host-wide, so both sides decide alike. */
static int read_yama(void)
{
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	int v = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%d", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

static int identity(struct shm_module *m)
{
	struct shm_addr_blob *b = &m->self;

	memcpy(b->magic, "RSHM", 4);
	b->version = SHM_PROTO_VERSION;
	if (read_boot_id(b->boot_id))
		return RMCA_ERR_NOT_FOUND;
	b->ns_ipc = ns_inode("ipc");
	b->ns_mnt = ns_inode("mnt");
	b->ns_net = ns_inode("net");
	b->ns_pid = ns_inode("pid");
	if (!b->ns_ipc || !b->ns_mnt || !b->ns_net || !b->ns_pid)
		return RMCA_ERR_NOT_FOUND;
	b->uid = (uint32_t)geteuid();
	b->gid = (uint32_t)getegid();
	b->pid = (uint32_t)getpid();
	b->dumpable = (uint32_t)prctl(PR_GET_DUMPABLE);
	m->yama = read_yama();
	if (m->base.core->ops->random(&m->probe_word, sizeof(m->probe_word)) ||
	    m->base.core->ops->random(&b->sock_id, sizeof(b->sock_id)))
		return RMCA_ERR_AGAIN;
	b->probe_addr = (uint64_t)(uintptr_t)&m->probe_word;
	b->probe_val = m->probe_word;
	return 0;
}

static int shm_addr(struct rmca_module *mod, void *buf, size_t *len)
{
	struct shm_module *m = rmca_container_of(mod, struct shm_module, base);

	if (*len < sizeof(m->self))
		return RMCA_ERR_INVALID;
	memcpy(buf, &m->self, sizeof(m->self));
	*len = sizeof(m->self);
	return 0;
}

/* Cross-memory attach to the peer: read the word its blob names. */
static int probe(const struct shm_addr_blob *b, char *why, size_t why_len)
{
	uint64_t v = 0;
	struct iovec l = {.iov_base = &v, .iov_len = sizeof(v)};
	struct iovec r = {.iov_base = (void *)(uintptr_t)b->probe_addr,
			  .iov_len = sizeof(v)};
	ssize_t n = process_vm_readv((pid_t)b->pid, &l, 1, &r, 1, 0);

	if (n != (ssize_t)sizeof(v)) {
		snprintf(why, why_len,
			 "cross-memory attach to pid %u refused: %s",
			 (unsigned)b->pid, n < 0 ? strerror(errno) : "short");
		return 0;
	}
	if (v != b->probe_val) {
		snprintf(why, why_len,
			 "pid %u is not the process that sent the address",
			 (unsigned)b->pid);
		return 0;
	}
	return 1;
}

int rmca_shm_addr_check(struct rmca_module *mod, const void *addr, size_t len,
			char *why, size_t why_len)
{
	const struct shm_module *m =
		rmca_container_of(mod, struct shm_module, base);
	const struct shm_addr_blob *me = &m->self;
	struct shm_addr_blob b;

	if (len != sizeof(b) || memcmp(addr, "RSHM", 4)) {
		snprintf(why, why_len, "not a shm address");
		return 0;
	}
	memcpy(&b, addr, sizeof(b));
	if (b.version != SHM_PROTO_VERSION) {
		snprintf(why, why_len, "shm protocol version %u, want %u",
			 b.version, SHM_PROTO_VERSION);
		return 0;
	}
	if (memcmp(b.boot_id, me->boot_id, sizeof(b.boot_id))) {
		snprintf(why, why_len, "another host (boot id differs)");
		return 0;
	}
	if (b.ns_ipc != me->ns_ipc || b.ns_mnt != me->ns_mnt ||
	    b.ns_net != me->ns_net || b.ns_pid != me->ns_pid) {
		snprintf(why, why_len, "another %s namespace",
			 b.ns_ipc != me->ns_ipc	  ? "ipc"
			 : b.ns_mnt != me->ns_mnt ? "mount"
			 : b.ns_net != me->ns_net ? "network"
						  : "pid");
		return 0;
	}
	if (!b.pid || !b.sock_id) {
		snprintf(why, why_len, "peer address without pid or socket");
		return 0;
	}
	return 1;
}

bool rmca_shm_may_attach(const struct shm_module *m,
			 const struct shm_addr_blob *b, char *why,
			 size_t why_len)
{
	const struct shm_addr_blob *me = &m->self;

	if (!m->cma) {
		snprintf(why, why_len, "RMCA_shm_cma=no");
		return false;
	}
	if (b->uid != me->uid || b->gid != me->gid) {
		snprintf(why, why_len,
			 "another user or group (uid %u gid %u, we are %u %u)",
			 (unsigned)b->uid, (unsigned)b->gid, (unsigned)me->uid,
			 (unsigned)me->gid);
		return false;
	}
	if (m->yama > 0) {
		snprintf(why, why_len,
			 "kernel.yama.ptrace_scope=%d forbids cross-memory "
			 "attach between peers",
			 m->yama);
		return false;
	}
	if (b->dumpable != 1 || me->dumpable != 1) {
		snprintf(why, why_len,
			 "%s process is not dumpable: no cross-memory attach",
			 me->dumpable != 1 ? "this" : "the peer");
		return false;
	}
	return probe(b, why, why_len);
}

static const struct rmca_module_ops shm_module_ops = {
	.addr = shm_addr,
	.atomic = rmca_shm_atomic,
	.connect_abort = rmca_shm_connect_abort,
	.connect_poll = rmca_shm_connect_poll,
	.connect_start = rmca_shm_connect_start,
	.disconnect = rmca_shm_disconnect,
	.flush = rmca_shm_flush,
	.get = rmca_shm_get,
	.key_match = rmca_shm_key_match,
	.mr_dereg = rmca_shm_mr_dereg,
	.mr_reg = rmca_shm_mr_reg,
	.mr_rkey = rmca_shm_mr_rkey,
	.progress = rmca_shm_progress,
	.put = rmca_shm_put,
	.reachable = rmca_shm_addr_check,
	.recv = rmca_shm_recv,
	.revoke = rmca_shm_revoke,
	.send = rmca_shm_send,
	.send_inv = rmca_shm_send_inv,
};

int rmca_shm_module_create(const struct rmca_core *core,
			   struct shm_module **out)
{
	struct shm_module *m = calloc(1, sizeof(*m));
	int r;

	if (!m)
		return RMCA_ERR_NO_MEMORY;
	m->base.ops = &shm_module_ops;
	m->base.core = core;
	snprintf(m->base.device, sizeof(m->base.device), "shm");
	m->base.caps = RMCA_CAP_ATOMIC | RMCA_CAP_MASKED_ATOMIC |
		       RMCA_CAP_SEND_INV | RMCA_CAP_LOOPBACK |
		       RMCA_CAP_REMOTE_COMPLETION | RMCA_CAP_ATOMIC_CPU |
		       RMCA_CAP_SHORT_READ;
	m->lfd = -1;
	m->idle_ns = core->ops->param_int(core, "shm_idle_us") * 1000;
	m->cma = core->ops->param_bool(core, "shm_cma");
	m->pub_fd = -1;
	m->efd = -1;
	rmca_list_init(&m->pending);
	rmca_list_init(&m->conns);
	rmca_list_init(&m->zombies);
	r = identity(m);
	if (r) {
		shm_log(m, RMCA_LOG_INFO, "cannot tell this host's identity");
		free(m);
		return r;
	}
	r = rmca_shm_keytab_init(&m->keys, core->ops->random);
	if (r) {
		free(m);
		return r;
	}
	/* Without a published table every access goes through the rings. */
	if (rmca_shm_pub_create(m))
		shm_log(m, RMCA_LOG_INFO,
			"no key table to publish: the target "
			"serves every access");
	r = rmca_shm_listen(m);
	if (r) {
		rmca_shm_pub_destroy(m);
		rmca_shm_keytab_fini(&m->keys);
		free(m);
		return r;
	}
	snprintf(m->base.detail, sizeof(m->base.detail),
		 "uid=%u rings=%uKiB inline=%u copy=%s atomics=cpu",
		 (unsigned)m->self.uid, SHM_REQ_BYTES / 1024, SHM_INLINE_MAX,
		 !m->cma       ? "rings(shm_cma=no)"
		 : m->yama > 0 ? "rings(yama ptrace_scope)"
			       : "cma");
	*out = m;
	return 0;
}

void rmca_shm_module_destroy(struct shm_module *m)
{
	rmca_shm_pending_free_all(m);
	rmca_shm_reap_zombies(m, true);
	rmca_shm_pub_destroy(m);
	rmca_shm_listen_close(m);
	if (m->efd >= 0) {
		m->base.core->ops->fd_del(m->base.core, m->efd);
		close(m->efd);
	}
	/* Regions still registered are the core's, deregistered before it
	 * closes modules; connections were disconnected by then too. */
	rmca_shm_keytab_fini(&m->keys);
	rmca_shm_ops_free_spare(m);
	free(m);
}
