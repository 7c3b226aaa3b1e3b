// SPDX-License-Identifier: BSD-3-Clause
/*
 * Which interface the route to an address leaves through: one RTM_GETROUTE
 * question to the kernel over rtnetlink, the lookup rdma_cm and connect()
 * make themselves. Components ask it (core op route) to tell which of their
 * devices a peer's address is reached through.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include "route.h"

/* The interface holding the local address a (4 or 16 bytes of family). */
static unsigned owner_of(int family, const void *a)
{
	struct ifaddrs *ifs, *i;
	unsigned idx = 0;

	if (getifaddrs(&ifs))
		return 0;
	for (i = ifs; i && !idx; i = i->ifa_next) {
		const struct sockaddr *sa = i->ifa_addr;

		if (!sa || sa->sa_family != family)
			continue;
		if (family == AF_INET
			    ? !memcmp(&((const struct sockaddr_in *)sa)
					       ->sin_addr,
				      a, 4)
			    : !memcmp(&((const struct sockaddr_in6 *)sa)
					       ->sin6_addr,
				      a, 16))
			idx = if_nametoindex(i->ifa_name);
	}
	freeifaddrs(ifs);
	return idx;
}

/* Ask; the answer's route type and output interface. 0 or -errno. */
static int ask(int family, const void *a, unsigned char *type, unsigned *oif)
{
	struct {
		struct nlmsghdr nh;
		struct rtmsg rt;
		struct rtattr ra;
		unsigned char addr[16];
	} req;
	union {
		struct nlmsghdr nh;
		unsigned char b[8192];
	} ans;
	size_t alen = family == AF_INET ? 4 : 16;
	int fd, err = -EPROTO;
	ssize_t n;

	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(req.rt)) + RTA_LENGTH(alen);
	req.nh.nlmsg_type = RTM_GETROUTE;
	req.nh.nlmsg_flags = NLM_F_REQUEST;
	req.nh.nlmsg_seq = 1;
	req.rt.rtm_family = (unsigned char)family;
	req.rt.rtm_dst_len = (unsigned char)(alen * 8);
	req.ra.rta_type = RTA_DST;
	req.ra.rta_len = (unsigned short)RTA_LENGTH(alen);
	memcpy(req.addr, a, alen);

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	if (send(fd, &req, req.nh.nlmsg_len, 0) < 0) {
		err = -errno;
		goto out;
	}
	/* rtnetlink answers before send() returns: the reply is queued. */
	n = recv(fd, &ans, sizeof(ans), MSG_TRUNC);
	if (n < 0) {
		err = -errno;
		goto out;
	}
	if ((size_t)n > sizeof(ans))
		goto out;
	for (struct nlmsghdr *h = &ans.nh; NLMSG_OK(h, (unsigned)n);
	     h = NLMSG_NEXT(h, n)) {
		if (h->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(h);

			if (h->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)))
				err = e->error ? e->error : -EPROTO;
			break;
		}
		if (h->nlmsg_type != RTM_NEWROUTE ||
		    h->nlmsg_len < NLMSG_LENGTH(sizeof(struct rtmsg)))
			continue;
		{
			const struct rtmsg *rt = NLMSG_DATA(h);
			int left = (int)RTM_PAYLOAD(h);

			*type = rt->rtm_type;
			*oif = 0;
			for (const struct rtattr *ra = RTM_RTA(rt);
			     RTA_OK(ra, left); ra = RTA_NEXT(ra, left))
				if (ra->rta_type == RTA_OIF &&
				    RTA_PAYLOAD(ra) >= sizeof(int))
					memcpy(oif, RTA_DATA(ra), sizeof(int));
			err = 0;
		}
		break;
	}
out:
	close(fd);
	return err;
}

int rmca_route(const struct rmca_core *core, const struct sockaddr *dst,
	       unsigned *ifindex, char *why, size_t why_len)
{
	unsigned char a[16], type = 0;
	char name[INET6_ADDRSTRLEN] = "?";
	unsigned oif = 0;
	int family, err;

	(void)core;
	if (!dst || !ifindex)
		return RMCA_ERR_INVALID;
	family = dst->sa_family;
	if (family == AF_INET) {
		memcpy(a, &((const struct sockaddr_in *)dst)->sin_addr, 4);
	} else if (family == AF_INET6) {
		const struct in6_addr *a6 =
			&((const struct sockaddr_in6 *)dst)->sin6_addr;

		/* an IPv4 peer on a dual-stack socket */
		if (IN6_IS_ADDR_V4MAPPED(a6)) {
			family = AF_INET;
			memcpy(a, &a6->s6_addr[12], 4);
		} else {
			memcpy(a, a6, 16);
		}
	} else {
		return RMCA_ERR_INVALID;
	}
	inet_ntop(family, a, name, sizeof(name));
	err = ask(family, a, &type, &oif);
	if (err) {
		if (why)
			snprintf(why, why_len, "no route to %s: %s", name,
				 strerror(-err));
		return RMCA_ERR_UNREACHABLE;
	}
	if (type == RTN_LOCAL) {
		/* the kernel says "lo"; the address is the device's own */
		oif = owner_of(family, a);
	} else if (type != RTN_UNICAST) {
		if (why)
			snprintf(why, why_len, "no route to %s (route type %u)",
				 name, type);
		return RMCA_ERR_UNREACHABLE;
	}
	if (!oif) {
		if (why)
			snprintf(why, why_len,
				 "the route to %s names no interface", name);
		return RMCA_ERR_UNREACHABLE;
	}
	*ifindex = oif;
	return 0;
}
