/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Interface selection (tcp_if_include / tcp_if_exclude).
 */
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <rmca.h>

#include "tcp_iface.h"

int rmca_tcp_name_in_list(const char *list, const char *name)
{
	size_t n = strlen(name);
	const char *p = list, *e;

	if (*p == '^')
		p++;
	while (*p) {
		e = strchr(p, ',');
		if (!e)
			e = p + strlen(p);
		if ((size_t)(e - p) == n && !strncmp(p, name, n))
			return 1;
		p = *e ? e + 1 : e;
	}
	return 0;
}

int rmca_tcp_if_selected(const char *include, const char *exclude,
			 const char *name)
{
	if (include && *include) {
		int in = rmca_tcp_name_in_list(include, name);

		if (include[0] == '^' ? in : !in)
			return 0;
	}
	if (exclude && *exclude && rmca_tcp_name_in_list(exclude, name))
		return 0;
	return 1;
}

static void add_name(char *names, size_t len, const char *name)
{
	size_t used = strlen(names), n = strlen(name);

	if (rmca_tcp_name_in_list(names, name))
		return;
	/* The device name is for people: drop what does not fit. */
	if (used + n + 2 > len)
		return;
	if (used)
		names[used++] = ',';
	memcpy(names + used, name, n + 1);
}

int rmca_tcp_iface_probe(const char *include, const char *exclude,
			 char *names, size_t names_len,
			 struct tcp_laddr **laddrs, int *nladdrs)
{
	struct ifaddrs *ifs, *i;
	struct tcp_laddr *l;
	int count = 0, n = 0;

	names[0] = 0;
	*laddrs = NULL;
	*nladdrs = 0;
	if (getifaddrs(&ifs))
		return RMCA_ERR_NOT_FOUND;
	for (i = ifs; i; i = i->ifa_next)
		n++;
	l = calloc(n ? (size_t)n : 1, sizeof(*l));
	if (!l) {
		freeifaddrs(ifs);
		return RMCA_ERR_NO_MEMORY;
	}
	n = 0;
	for (i = ifs; i; i = i->ifa_next) {
		int fam = i->ifa_addr ? i->ifa_addr->sa_family : AF_UNSPEC;

		if (fam != AF_INET && fam != AF_INET6)
			continue;
		if (!(i->ifa_flags & IFF_UP) ||
		    !rmca_tcp_if_selected(include, exclude, i->ifa_name))
			continue;
		if (!rmca_tcp_name_in_list(names, i->ifa_name))
			count++;
		add_name(names, names_len, i->ifa_name);
		l[n].family = fam;
		if (fam == AF_INET)
			memcpy(l[n].addr,
			       &((struct sockaddr_in *)i->ifa_addr)->sin_addr, 4);
		else
			memcpy(l[n].addr,
			       &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr,
			       16);
		n++;
	}
	freeifaddrs(ifs);
	*laddrs = l;
	*nladdrs = n;
	return count;
}

bool rmca_tcp_laddr_match(const struct tcp_laddr *l, int n, int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct tcp_laddr me = { 0 };

	if (getsockname(fd, (struct sockaddr *)&ss, &sl))
		return false;
	if (ss.ss_family == AF_INET) {
		me.family = AF_INET;
		memcpy(me.addr, &((struct sockaddr_in *)&ss)->sin_addr, 4);
	} else {
		const struct in6_addr *a =
			&((struct sockaddr_in6 *)&ss)->sin6_addr;

		/* IPv4 accepted on the dual-stack socket. */
		if (IN6_IS_ADDR_V4MAPPED(a)) {
			me.family = AF_INET;
			memcpy(me.addr, &a->s6_addr[12], 4);
		} else {
			me.family = AF_INET6;
			memcpy(me.addr, a, 16);
		}
	}
	for (int i = 0; i < n; i++)
		if (l[i].family == me.family &&
		    !memcmp(l[i].addr, me.addr, me.family == AF_INET ? 4 : 16))
			return true;
	return false;
}
