/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rmca/support/list.h - an intrusive doubly-linked list, the Linux kernel's
 * list_head idiom: an object queues itself through a struct rmca_list it
 * embeds, so a queue costs no allocation per element and an element leaves
 * any queue in O(1).
 *
 * A head is a struct rmca_list too, linked to itself while empty. An
 * element that was deleted is linked to itself as well, so deleting it
 * twice is harmless and rmca_list_linked() tells whether it is queued; an
 * element must be initialised (rmca_list_init) before that question is
 * asked of it.
 */
#ifndef RMCA_SUPPORT_LIST_H
#define RMCA_SUPPORT_LIST_H

#include <stdbool.h>
#include <stddef.h>

#include <rmca/support/container.h>

struct rmca_list {
	struct rmca_list *next, *prev;
};

/* A head initialised where it is defined: struct rmca_list h =
 * RMCA_LIST_INIT(h); */
#define RMCA_LIST_INIT(name)                                                   \
	{                                                                      \
		&(name), &(name)                                               \
	}

/* The object of type whose member (a struct rmca_list) l is. */
#define rmca_list_entry(l, type, member) rmca_container_of(l, type, member)

/* The first object of the list at head, or NULL when it is empty. */
#define rmca_list_first(head, type, member)                                    \
	(rmca_list_empty(head) ? NULL                                          \
			       : rmca_list_entry((head)->next, type, member))

/* Every element l of head, in order; the body must not unlink l. */
#define rmca_list_for_each(l, head)                                            \
	for ((l) = (head)->next; (l) != (head); (l) = (l)->next)

/* Every element l of head, in order; the body may unlink (and free) l,
 * but no other element. */
#define rmca_list_for_each_safe(l, tmp, head)                                  \
	for ((l) = (head)->next, (tmp) = (l)->next; (l) != (head);             \
	     (l) = (tmp), (tmp) = (l)->next)

static inline void rmca_list_init(struct rmca_list *h)
{
	h->next = h;
	h->prev = h;
}

static inline bool rmca_list_empty(const struct rmca_list *h)
{
	return h->next == h;
}

/* True if n is on a list (an initialised or deleted element is not). */
static inline bool rmca_list_linked(const struct rmca_list *n)
{
	return n->next != n;
}

static inline void rmca_list_insert_(struct rmca_list *n,
				     struct rmca_list *prev,
				     struct rmca_list *next)
{
	n->prev = prev;
	n->next = next;
	prev->next = n;
	next->prev = n;
}

/* n becomes the first element of h. */
static inline void rmca_list_add(struct rmca_list *h, struct rmca_list *n)
{
	rmca_list_insert_(n, h, h->next);
}

/* n becomes the last element of h. */
static inline void rmca_list_add_tail(struct rmca_list *h, struct rmca_list *n)
{
	rmca_list_insert_(n, h->prev, h);
}

/* n leaves its list, its own links left as they were: for an element that
 * is done with, which nothing asks rmca_list_linked() of before it is
 * added again. */
static inline void rmca_list_unlink(struct rmca_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
}

/* n leaves its list, and is left linked to itself. */
static inline void rmca_list_del(struct rmca_list *n)
{
	rmca_list_unlink(n);
	n->next = n;
	n->prev = n;
}

/* The number of elements of h (walks the list). */
static inline size_t rmca_list_count(const struct rmca_list *h)
{
	size_t n = 0;

	for (const struct rmca_list *l = h->next; l != h; l = l->next)
		n++;
	return n;
}

#endif
