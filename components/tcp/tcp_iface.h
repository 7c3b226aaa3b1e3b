/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Interfaces a module serves: tcp_if_include / tcp_if_exclude against the
 * host's up interfaces that carry an IPv4 or IPv6 address.
 */
#ifndef RMCA_TCP_IFACE_H
#define RMCA_TCP_IFACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tcp_laddr {
	int family;
	uint8_t addr[16];
};

struct rmca_core;
/* 1 if the user's selection takes interface name: include (empty: all;
 * "^a,b": all but a, b) selects it and exclude does not, as the core's
 * list_selects reads lists. */
int rmca_tcp_if_selected(const struct rmca_core *core, const char *include,
			 const char *exclude, const char *name);
/* Selected interface names joined by ',' into names; their addresses into
 * *laddrs (malloc'ed). Returns the number of interfaces, or < 0. */
int rmca_tcp_iface_probe(const struct rmca_core *core, const char *include,
			 const char *exclude, char *names, size_t names_len,
			 struct tcp_laddr **laddrs, int *nladdrs);
/*
 * The user's selection, checked: not both include and exclude, every name
 * an interface of this host, and at least one interface up with an address
 * selected. 0, or RMCA_ERR_INVALID with err naming the parameter, its value
 * and the interfaces there are.
 */
int rmca_tcp_iface_check(const struct rmca_core *core, const char *include,
			 const char *exclude, char *err, size_t err_len);
/*
 * Whether the route to the numeric address host leaves through an interface
 * tcp_if_include / tcp_if_exclude select (for a local address: the interface
 * that owns it). An enum rmca_reach: RMCA_REACH_NO with why ("route to
 * 192.0.2.7 leaves through eth0, outside tcp_if_include=eth1"), else
 * RMCA_REACH_YES (also when host is no numeric address or the core cannot
 * look routes up: connect() decides then).
 */
int rmca_tcp_route_check(const struct rmca_core *core, const char *host,
			 char *why, size_t why_len);
/* Whether fd's local address is one of l[0..n). */
bool rmca_tcp_laddr_match(const struct tcp_laddr *l, int n, int fd);

#endif
