/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Route lookups for components (core op route): which interface the kernel
 * sends a packet for an address through.
 */
#ifndef RMCA_ROUTE_H
#define RMCA_ROUTE_H

#include <rmca/component.h>

int rmca_route(const struct rmca_core *core, const struct sockaddr *dst,
	       const struct sockaddr *src, unsigned *ifindex, char *why,
	       size_t why_len);

#endif
