/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Interface selection (tcp_if_include / tcp_if_exclude).
 */
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <arpa/inet.h>

#include <rmca/component.h>
#include <rmca/support/names.h>

#include "tcp_iface.h"

/*
 * Whether the user's selection takes interface name. The core says what a
 * list selects (core->ops->list_selects, as for RMCA_transports): include
 * "a,b" only those, "^a,b" all but those, nothing but whitespace all; and
 * exclude leaves alone what its list selects (nothing when it is empty).
 */
int rmca_tcp_if_selected(const struct rmca_core *core, const char *include,
			 const char *exclude, const char *name)
{
	if (!rmca_names_empty(include) &&
	    !core->ops->list_selects(include, name))
		return 0;
	return rmca_names_empty(exclude) ||
	       !core->ops->list_selects(exclude, name);
}

static void add_name(char *names, size_t len, const char *name)
{
	size_t used = strlen(names), n = strlen(name);

	if (rmca_names_has(names, name))
		return;
	/* The device name is for people: drop what does not fit. */
	if (used + n + 2 > len)
		return;
	if (used)
		names[used++] = ',';
	memcpy(names + used, name, n + 1);
}

int rmca_tcp_iface_probe(const struct rmca_core *core, const char *include,
			 const char *exclude, char *names, size_t names_len,
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
		    !rmca_tcp_if_selected(core, include, exclude, i->ifa_name))
			continue;
		if (!rmca_names_has(names, i->ifa_name))
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

/* Names of the host's interfaces (all, or only those up with an IPv4 or
 * IPv6 address), joined by ", " into buf. */
static void host_ifaces(char *buf, size_t len, bool usable)
{
	struct ifaddrs *ifs, *i;
	size_t used = 0;

	buf[0] = 0;
	if (getifaddrs(&ifs))
		return;
	for (i = ifs; i; i = i->ifa_next) {
		int fam = i->ifa_addr ? i->ifa_addr->sa_family : AF_UNSPEC;
		char quoted[IF_NAMESIZE + 4];
		int n;

		if (usable && (!(i->ifa_flags & IFF_UP) ||
			       (fam != AF_INET && fam != AF_INET6)))
			continue;
		/* ", name," so that "eth0" is not found inside "eth01". */
		snprintf(quoted, sizeof(quoted), " %s,", i->ifa_name);
		if (used && strstr(buf, quoted))
			continue;
		n = snprintf(buf + used, len - used, " %s,", i->ifa_name);
		if (n < 0 || (size_t)n >= len - used)
			break;
		used += (size_t)n;
	}
	freeifaddrs(ifs);
	/* " a, b," -> "a, b" */
	if (used) {
		buf[used - 1] = 0;
		memmove(buf, buf + 1, used - 1);
	}
}

int rmca_tcp_iface_check(const struct rmca_core *core, const char *include,
			 const char *exclude, char *err, size_t err_len)
{
	const char *param = "tcp_if_include", *list = include, *p, *q;
	char name[IF_NAMESIZE + 1], there[512];
	struct tcp_laddr *laddrs;
	char names[64];
	size_t n;
	int count, nladdrs;

	if (!rmca_names_empty(include) && !rmca_names_empty(exclude)) {
		snprintf(err, err_len,
			 "RMCA_tcp_if_include=%s and RMCA_tcp_if_exclude=%s: "
			 "set one or the other, not both",
			 include, exclude);
		return RMCA_ERR_INVALID;
	}
	if (rmca_names_empty(list)) {
		param = "tcp_if_exclude";
		list = exclude;
	}
	if (rmca_names_empty(list))
		return 0;

	/* Every name must be an interface of this host (up or not). */
	p = rmca_names_start(list);
	while ((n = rmca_names_next(&p, &q))) {
		if (n <= IF_NAMESIZE) {
			memcpy(name, q, n);
			name[n] = 0;
			if (if_nametoindex(name))
				continue;
		}
		host_ifaces(there, sizeof(there), false);
		snprintf(err, err_len,
			 "RMCA_%s=%s: no interface '%.*s' on this host; there "
			 "are: %s",
			 param, list, (int)n, q, there[0] ? there : "none");
		return RMCA_ERR_INVALID;
	}

	/* And the selection must leave tcp something to use. */
	count = rmca_tcp_iface_probe(core, include, exclude, names,
				     sizeof(names), &laddrs, &nladdrs);
	if (count < 0) {
		snprintf(err, err_len,
			 "RMCA_%s=%s: cannot list the host's interfaces", param,
			 list);
		return count;
	}
	free(laddrs);
	if (!count) {
		host_ifaces(there, sizeof(there), true);
		snprintf(err, err_len,
			 "RMCA_%s=%s leaves no interface that is up with an "
			 "address; those are: %s",
			 param, list, there[0] ? there : "none");
		return RMCA_ERR_INVALID;
	}
	return 0;
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

static const char *param(const struct rmca_core *core, const char *name)
{
	const char *s = core->ops->param_string(core, name);

	return s ? s : "";
}

int rmca_tcp_route_check(const struct rmca_core *core, const char *host,
			 char *why, size_t why_len)
{
	const char *inc = param(core, "tcp_if_include");
	const char *exc = param(core, "tcp_if_exclude");
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
	char ifname[IF_NAMESIZE] = "?", err[160];
	unsigned idx;
	bool by_inc;

	if (!core->ops->route || !host ||
	    (rmca_names_empty(inc) && rmca_names_empty(exc)))
		return RMCA_REACH_YES;
	if (inet_pton(AF_INET, host, &v4->sin_addr) == 1)
		ss.ss_family = AF_INET;
	else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1)
		ss.ss_family = AF_INET6;
	else
		return RMCA_REACH_YES;
	if (core->ops->route(core, (struct sockaddr *)&ss, NULL, &idx, err,
			     sizeof(err))) {
		snprintf(why, why_len, "%s", err);
		return RMCA_REACH_NO;
	}
	if_indextoname(idx, ifname);
	if (rmca_tcp_if_selected(core, inc, exc, ifname))
		return RMCA_REACH_YES;
	by_inc = !rmca_names_empty(inc);
	snprintf(why, why_len, "route to %s leaves through %s, %s tcp_if_%s=%s",
		 host, ifname, by_inc ? "outside" : "inside",
		 by_inc ? "include" : "exclude", by_inc ? inc : exc);
	return RMCA_REACH_NO;
}
