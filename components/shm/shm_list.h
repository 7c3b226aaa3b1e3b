/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An intrusive doubly-linked list (the kernel's list_head idiom): queues of
 * ops without an allocation per element. A shared support header for every
 * component is planned (issue 11, item 7); until then each keeps its own.
 */
#ifndef RMCA_SHM_LIST_H
#define RMCA_SHM_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct shm_list {
	struct shm_list *next, *prev;
};

#define shm_entry(ptr, type, member)                                           \
	((type *)((char *)(ptr)-offsetof(type, member)))

#define shm_first(head, type, member)                                          \
	(shm_list_empty(head) ? NULL : shm_entry((head)->next, type, member))

static inline void shm_list_init(struct shm_list *h)
{
	h->next = h;
	h->prev = h;
}

static inline bool shm_list_empty(const struct shm_list *h)
{
	return h->next == h;
}

static inline void shm_list_add_tail(struct shm_list *h, struct shm_list *n)
{
	n->prev = h->prev;
	n->next = h;
	h->prev->next = n;
	h->prev = n;
}

/* Leaves n self-linked, so deleting twice is harmless. */
static inline void shm_list_del(struct shm_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n;
	n->prev = n;
}

#endif
