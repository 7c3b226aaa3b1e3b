/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rmca/support/container.h - from an embedded member to the object around
 * it. A component's module embeds the struct rmca_module the core sees
 * (struct tcp_module { struct rmca_module base; ... }) and gets back to its
 * own object from the core's pointer with rmca_container_of, wherever the
 * member sits: no cast that silently breaks when the member moves.
 */
#ifndef RMCA_SUPPORT_CONTAINER_H
#define RMCA_SUPPORT_CONTAINER_H

#include <stddef.h>

/*
 * The type object whose member ptr points to. The unevaluated branch of
 * the conditional makes a ptr of another type than the member's a
 * compile-time diagnostic (an error under -Werror).
 */
#define rmca_container_of(ptr, type, member)                                   \
	((type *)(void *)((char *)(1 ? (ptr) : &((type *)0)->member) -         \
			  offsetof(type, member)))

#endif
