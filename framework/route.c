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

/* Appends attribute type with len bytes of data to the request in h. */
static void put_attr(struct nlmsghdr *h, unsigned short type, const void *data,
		     size_t len)
{
	struct rtattr *ra =
		(struct rtattr *)((char *)h + NLMSG_ALIGN(h->nlmsg_len));

	ra->rta_type = type;
	ra->rta_len = (unsigned short)RTA_LENGTH(len);
	memcpy(RTA_DATA(ra), data, len);
	h->nlmsg_len = NLMSG_ALIGN(h->nlmsg_len) + RTA_ALIGN(ra->rta_len);
}

/* Ask about the route to a (from src, if given: policy rules may route by
 * source); the answer's route type and output interface. 0 or -errno. */
static int ask(int family, const void *a, const void *src, unsigned char *type,
	       unsigned *oif)
{
	union {
		struct nlmsghdr nh;
		unsigned char b[NLMSG_SPACE(sizeof(struct rtmsg)) +
				2 * RTA_SPACE(16)];
	} req;
	union {
		struct nlmsghdr nh;
		unsigned char b[8192];
	} ans;
	size_t alen = family == AF_INET ? 4 : 16;
	struct rtmsg *rtm;
	int fd, err = -EPROTO;
	ssize_t n;

	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(*rtm));
	req.nh.nlmsg_type = RTM_GETROUTE;
	req.nh.nlmsg_flags = NLM_F_REQUEST;
	req.nh.nlmsg_seq = 1;
	rtm = NLMSG_DATA(&req.nh);
	rtm->rtm_family = (unsigned char)family;
	rtm->rtm_dst_len = (unsigned char)(alen * 8);
	put_attr(&req.nh, RTA_DST, a, alen);
	if (src) {
		rtm->rtm_src_len = (unsigned char)(alen * 8);
		put_attr(&req.nh, RTA_SRC, src, alen);
	}

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	if (send(fd, &req.nh, req.nh.nlmsg_len, 0) < 0) {
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

/* The address of sa as family and bytes (an IPv4-mapped IPv6 address as
 * IPv4); -1 if it is neither. */
static int unpack(const struct sockaddr *sa, unsigned char *a)
{
	if (sa->sa_family == AF_INET) {
		memcpy(a, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return AF_INET;
	}
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a6 =
			&((const struct sockaddr_in6 *)sa)->sin6_addr;

		if (IN6_IS_ADDR_V4MAPPED(a6)) {
			memcpy(a, &a6->s6_addr[12], 4);
			return AF_INET;
		}
		memcpy(a, a6, 16);
		return AF_INET6;
	}
	return -1;
}

int rmca_route(const struct rmca_core *core, const struct sockaddr *dst,
	       const struct sockaddr *src, unsigned *ifindex, char *why,
	       size_t why_len)
{
	unsigned char a[16], s[16], type = 0;
	char name[INET6_ADDRSTRLEN] = "?";
	unsigned oif = 0;
	int family, err;

	(void)core;
	if (!dst || !ifindex)
		return RMCA_ERR_INVALID;
	family = unpack(dst, a);
	if (family < 0 || (src && unpack(src, s) != family))
		return RMCA_ERR_INVALID;
	inet_ntop(family, a, name, sizeof(name));
	err = ask(family, a, src ? s : NULL, &type, &oif);
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
