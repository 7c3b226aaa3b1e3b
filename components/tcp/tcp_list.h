/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A minimal intrusive doubly-linked list, as the kernel's list_head: the
 * component keeps its queues without allocating per element.
 */
#ifndef RMCA_TCP_LIST_H
#define RMCA_TCP_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct tcp_list {
	struct tcp_list *next, *prev;
};

#define tcp_entry(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

#define tcp_first(head, type, member) \
	(tcp_list_empty(head) ? NULL : tcp_entry((head)->next, type, member))

static inline void tcp_list_init(struct tcp_list *h)
{
	h->next = h;
	h->prev = h;
}

static inline bool tcp_list_empty(const struct tcp_list *h)
{
	return h->next == h;
}

static inline void tcp_list_add_tail(struct tcp_list *h, struct tcp_list *n)
{
	n->prev = h->prev;
	n->next = h;
	h->prev->next = n;
	h->prev = n;
}

static inline void tcp_list_del(struct tcp_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n;
	n->prev = n;
}

/* True if n is linked somewhere (tcp_list_del leaves it self-linked). */
static inline bool tcp_list_linked(const struct tcp_list *n)
{
	return n->next != n;
}

#endif
