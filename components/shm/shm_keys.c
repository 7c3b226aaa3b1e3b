/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory registrations and the module's table of remote keys. Keys are
 * random, non-zero, with bit 63 (RMCA_KEY_USE_ONCE) set exactly for
 * use-once regions. A region that is not use-once has one key for every
 * connection; a use-once region gets one key per connection it is handed
 * to, valid on that connection only, until the peer's send-with-invalidate
 * (or the core's revoke) ends it.
 *
 * The table lives in the target's private memory and serves the requests
 * that reach the target's core. Each key is also published, while a slot
 * is free, in the table peers read (shm_pub.h): its low bits name the slot
 * (0: not published). Removing a published key waits until no peer copies
 * under it, so once a removal returns nothing can reach the region, through
 * the rings (served by this thread, between requests) or directly.
 */
#define _GNU_SOURCE /* memfd_create */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rmca/support/range.h>

#include "shm.h"

struct shm_key {
	uint64_t key;
	struct shm_mr *mr;
	struct shm_conn *conn;	 /* use-once: the connection it was handed to */
	struct shm_key *next;	 /* hash chain */
	struct rmca_list mr_link; /* use-once: mr->once */
	unsigned slot;		 /* in the published table, 0: none */
	unsigned mem;		 /* its allocation's entry there, 0: none */
};

#define KEYTAB_MIN   64
#define KEYTAB_TRIES 16

static size_t slot(const struct shm_keytab *t, uint64_t key)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 32) &
	       (t->nbuckets - 1);
}

int rmca_shm_pub_create(struct shm_module *m)
{
	struct shm_keypub *p;
	int fd = memfd_create("rmca-keys", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	int seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

	m->pub_fd = -1;
	m->pub = NULL;
	if (fd < 0)
		return RMCA_ERR_NO_MEMORY;
	if (ftruncate(fd, sizeof(*p))) {
		close(fd);
		return RMCA_ERR_NO_MEMORY;
	}
	p = mmap(NULL, sizeof(*p), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return RMCA_ERR_NO_MEMORY;
	}
#ifdef F_SEAL_FUTURE_WRITE
	/* Only this mapping may write: peers get to read it. */
	seals |= F_SEAL_FUTURE_WRITE;
#endif
	if (fcntl(fd, F_ADD_SEALS, seals)) {
		munmap(p, sizeof(*p));
		close(fd);
		return RMCA_ERR_NO_MEMORY;
	}
	p->magic = SHM_PUB_MAGIC;
	p->version = SHM_PROTO_VERSION;
	m->pub = p;
	m->pub_fd = fd;
	m->nfree = 0;
	for (unsigned i = SHM_KEY_SLOTS - 1; i > 0; i--)
		m->free_slots[m->nfree++] = (uint16_t)i;
	return 0;
}

void rmca_shm_pub_destroy(struct shm_module *m)
{
	if (m->pub)
		munmap(m->pub, sizeof(*m->pub));
	if (m->pub_fd >= 0)
		close(m->pub_fd);
	m->pub = NULL;
	m->pub_fd = -1;
}

static void slot_store(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
}

/* The entry of pub->mem[] for allocation id, with one more key in it;
 * 0 when every entry is taken (the key is then reached by CMA). */
static unsigned mem_ref(struct shm_module *m, uint64_t id)
{
	unsigned i, spare = 0;

	for (i = 1; i < SHM_MEM_SLOTS; i++) {
		if (m->mems[i].id == id) {
			m->mems[i].refs++;
			return i;
		}
		if (!m->mems[i].id && !spare)
			spare = i;
	}
	if (spare) {
		m->mems[spare].id = id;
		m->mems[spare].serial = ++m->mem_serial;
		m->mems[spare].refs = 1;
		__atomic_store_n(&m->pub->mem[spare], m->mem_serial,
				 __ATOMIC_RELEASE);
	}
	return spare;
}

/* The last key in it gone: peers unmap it at their next look. */
static void mem_unref(struct shm_module *m, unsigned i)
{
	if (--m->mems[i].refs)
		return;
	m->mems[i].id = 0;
	__atomic_store_n(&m->pub->mem[i], 0, __ATOMIC_RELEASE);
	__atomic_store_n(&m->pub->mem_gen, m->pub->mem_gen + 1,
			 __ATOMIC_RELEASE);
}

/* A seqlock write: readers that overlap it see seq odd or changed. */
static void publish(struct shm_module *m, const struct shm_key *e,
		    const struct shm_mr *mr, uint64_t tag)
{
	struct shm_kslot *s = &m->pub->slot[e->slot];
	uint64_t seq = s->seq;
	bool mem = e->mem != 0;

	slot_store(&s->seq, seq + 1);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	slot_store(&s->addr, (uint64_t)(uintptr_t)mr->addr);
	slot_store(&s->len, mr->len);
	slot_store(&s->tag, tag);
	slot_store(&s->access, mr->access);
	slot_store(&s->mem, e->mem);
	slot_store(&s->mem_id, mem ? mr->mem.id : 0);
	slot_store(&s->mem_fd, mem ? (uint64_t)mr->mem.fd : 0);
	slot_store(&s->mem_base, mem ? (uint64_t)(uintptr_t)mr->mem.base : 0);
	slot_store(&s->mem_len, mem ? mr->mem.len : 0);
	slot_store(&s->mem_serial, mem ? m->mems[e->mem].serial : 0);
	slot_store(&s->key, e->key);
	__atomic_store_n(&s->seq, seq + 2, __ATOMIC_RELEASE);
}

/* The slot names nothing any more; returns once no peer copies under it. */
static void unpublish(struct shm_module *m, unsigned slot)
{
	struct shm_kslot *s = &m->pub->slot[slot];
	uint64_t seq = s->seq;

	__atomic_store_n(&s->seq, seq + 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&s->key, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&s->seq, seq + 2, __ATOMIC_SEQ_CST);
	/* Dekker with rmca_shm_direct(): our store, then their marks. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	rmca_shm_wait_accessors(m, slot);
	m->free_slots[m->nfree++] = (uint16_t)slot;
}

int rmca_shm_keytab_init(struct shm_keytab *t,
			 int (*random)(void *buf, size_t len))
{
	t->buckets = calloc(KEYTAB_MIN, sizeof(*t->buckets));
	if (!t->buckets)
		return RMCA_ERR_NO_MEMORY;
	t->nbuckets = KEYTAB_MIN;
	t->count = 0;
	t->random = random;
	return 0;
}

void rmca_shm_keytab_fini(struct shm_keytab *t)
{
	for (size_t i = 0; i < t->nbuckets; i++) {
		struct shm_key *e = t->buckets[i], *n;

		/* The core deregistered every region before it closes the
		 * module: their lists are gone, only the entries are left. */
		for (; e; e = n) {
			n = e->next;
			free(e);
		}
	}
	free(t->buckets);
	t->buckets = NULL;
	t->nbuckets = 0;
	t->count = 0;
}

static void grow(struct shm_keytab *t)
{
	size_t n = t->nbuckets * 2, old_n = t->nbuckets;
	struct shm_key **old = t->buckets, **b = calloc(n, sizeof(*b));

	/* Without memory the table keeps working, with longer chains. */
	if (!b)
		return;
	t->buckets = b;
	t->nbuckets = n;
	for (size_t i = 0; i < old_n; i++) {
		struct shm_key *e = old[i], *next;

		for (; e; e = next) {
			size_t s = slot(t, e->key);

			next = e->next;
			e->next = b[s];
			b[s] = e;
		}
	}
	free(old);
}

static struct shm_key *find(const struct shm_keytab *t, uint64_t key)
{
	struct shm_key *e;

	if (!key)
		return NULL;
	for (e = t->buckets[slot(t, key)]; e; e = e->next)
		if (e->key == key)
			return e;
	return NULL;
}

static struct shm_key *add(struct shm_module *m, struct shm_mr *mr,
			   struct shm_conn *conn)
{
	struct shm_keytab *t = &m->keys;
	bool once = mr->access & RMCA_MR_USE_ONCE;
	unsigned remote = RMCA_ACCESS_REMOTE_READ | RMCA_ACCESS_REMOTE_WRITE;
	/* Published if a peer's core may copy under it; not for atomics,
	 * which the target executes. */
	unsigned ps = m->pub && m->nfree && (mr->access & remote)
			      ? m->free_slots[m->nfree - 1]
			      : 0;
	struct shm_key *e;
	uint64_t k = 0;
	int tries;

	for (tries = 0; tries < KEYTAB_TRIES; tries++) {
		if (t->random(&k, sizeof(k)))
			return NULL;
		k = once ? k | RMCA_KEY_USE_ONCE : k & ~RMCA_KEY_USE_ONCE;
		k = (k & ~SHM_SLOT_MASK) | ps;
		if ((k & ~SHM_SLOT_MASK) && !find(t, k))
			break;
	}
	if (tries == KEYTAB_TRIES)
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	if (t->count >= t->nbuckets)
		grow(t);
	e->key = k;
	e->mr = mr;
	e->conn = conn;
	e->slot = ps;
	if (ps) {
		m->nfree--;
		e->mem = mr->mem.id ? mem_ref(m, mr->mem.id) : 0;
		publish(m, e, mr, conn ? conn->tag : 0);
	}
	rmca_list_init(&e->mr_link);
	e->next = t->buckets[slot(t, k)];
	t->buckets[slot(t, k)] = e;
	t->count++;
	if (once)
		rmca_list_add_tail(&mr->once, &e->mr_link);
	return e;
}

static void del(struct shm_module *m, struct shm_key *e)
{
	struct shm_keytab *t = &m->keys;
	struct shm_key **pp;

	if (e->slot)
		unpublish(m, e->slot);
	/* After: no peer copies under the key, so none uses the mapping. */
	if (e->mem)
		mem_unref(m, e->mem);
	for (pp = &t->buckets[slot(t, e->key)]; *pp; pp = &(*pp)->next) {
		if (*pp == e) {
			*pp = e->next;
			t->count--;
			break;
		}
	}
	rmca_list_del(&e->mr_link);
	free(e);
}

int rmca_shm_mr_reg(struct rmca_module *mod, void *addr, size_t len,
		    unsigned access, struct rmca_module_mr **out)
{
	struct shm_module *m = rmca_container_of(mod, struct shm_module, base);
	struct shm_mr *mr = calloc(1, sizeof(*mr));
	struct shm_key *e;

	if (!mr)
		return RMCA_ERR_NO_MEMORY;
	mr->base.module = &m->base;
	mr->mod = m;
	mr->addr = addr;
	mr->len = len;
	mr->access = access;
	/* In an allocation of rmca_mem_alloc: peers may map it. */
	if (mod->core->ops->mem_find(mod->core, addr, len, &mr->mem))
		mr->mem.id = 0;
	rmca_list_init(&mr->once);
	if (!(access & RMCA_MR_USE_ONCE)) {
		e = add(m, mr, NULL);
		if (!e) {
			free(mr);
			return RMCA_ERR_AGAIN;
		}
		mr->key = e->key;
	}
	*out = shm_mr_base(mr);
	return 0;
}

/* Once this returns no request can reach the region: the table is only
 * read by this thread, between requests. */
int rmca_shm_mr_dereg(struct rmca_module_mr *base)
{
	struct shm_mr *mr = shm_mr_from_base(base);
	struct shm_module *m = mr->mod;
	struct shm_key *e;

	if (mr->key)
		del(m, find(&m->keys, mr->key));
	while ((e = rmca_list_first(&mr->once, struct shm_key, mr_link)))
		del(m, e);
	free(mr);
	return 0;
}

static struct shm_key *once_key(struct shm_mr *mr, const struct shm_conn *c)
{
	for (struct rmca_list *l = mr->once.next; l != &mr->once; l = l->next) {
		struct shm_key *e = rmca_list_entry(l, struct shm_key, mr_link);

		if (e->conn == c)
			return e;
	}
	return NULL;
}

uint64_t rmca_shm_mr_rkey(struct rmca_module_mr *base, struct rmca_conn *conn)
{
	struct shm_mr *mr = shm_mr_from_base(base);
	struct shm_conn *c = shm_conn_from_base(conn);
	struct shm_key *e;

	if (!(mr->access & RMCA_MR_USE_ONCE))
		return mr->key;
	e = once_key(mr, c);
	if (!e)
		e = add(mr->mod, mr, c);
	return e ? e->key : 0;
}

int rmca_shm_key_match(struct rmca_module_mr *base, struct rmca_conn *conn,
		       uint64_t rkey)
{
	struct shm_mr *mr = shm_mr_from_base(base);
	struct shm_conn *c = shm_conn_from_base(conn);
	struct shm_key *e = find(&mr->mod->keys, rkey);

	return e && e->mr == mr && (!e->conn || e->conn == c);
}

int rmca_shm_revoke(struct rmca_module_mr *base, struct rmca_conn *conn,
		    uint64_t rkey)
{
	struct shm_mr *mr = shm_mr_from_base(base);
	struct shm_conn *c = shm_conn_from_base(conn);
	struct shm_key *e = find(&mr->mod->keys, rkey);

	if (e && e->mr == mr && e->conn == c)
		del(mr->mod, e);
	return 0;
}

uint64_t rmca_shm_revoke_inv(struct shm_conn *c, uint64_t rkey)
{
	struct shm_key *e = find(&c->mod->keys, rkey);

	if (!e || !e->conn || e->conn != c)
		return 0; /* revoked nothing: the completion says 0 */
	del(c->mod, e);
	return rkey;
}

int rmca_shm_access(struct shm_conn *c, uint64_t rkey, uint64_t raddr,
		    uint64_t len, unsigned need, char **ptr)
{
	struct shm_key *e = find(&c->mod->keys, rkey);
	struct shm_mr *mr;
	uint64_t base;

	if (!e || (e->conn && e->conn != c))
		return RMCA_ERR_REMOTE_ACCESS;
	mr = e->mr;
	if ((mr->access & need) != need)
		return RMCA_ERR_REMOTE_ACCESS;
	base = (uint64_t)(uintptr_t)mr->addr;
	if (!rmca_range_inside(base, mr->len, raddr, len))
		return RMCA_ERR_REMOTE_ACCESS;
	if (need == RMCA_ACCESS_REMOTE_ATOMIC && (raddr & 7))
		return RMCA_ERR_REMOTE_ACCESS;
	*ptr = mr->addr + (raddr - base);
	return 0;
}

void rmca_shm_keys_drop_conn(struct shm_module *m, struct shm_conn *c)
{
	struct shm_keytab *t = &m->keys;

	for (size_t i = 0; i < t->nbuckets; i++) {
		struct shm_key *e = t->buckets[i], *n;

		for (; e; e = n) {
			n = e->next;
			if (e->conn == c)
				del(m, e);
		}
	}
}
