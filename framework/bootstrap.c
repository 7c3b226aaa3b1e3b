// SPDX-License-Identifier: BSD-3-Clause
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rmca.h>
#include <rmca/support/sockio.h>

#include "bootstrap.h"
#include "wire.h"

int rmca_parse_host_port(const char *hp, char *host, size_t host_len,
			 char *port, size_t port_len)
{
	const char *colon, *h = hp;
	size_t hl;

	if (!hp)
		return RMCA_ERR_INVALID;
	if (*hp == '[') {
		const char *end = strchr(hp, ']');

		if (!end || end[1] != ':')
			return RMCA_ERR_INVALID;
		h = hp + 1;
		hl = (size_t)(end - h);
		colon = end + 1;
	} else {
		colon = strrchr(hp, ':');
		if (!colon || memchr(hp, ':', (size_t)(colon - hp)))
			return RMCA_ERR_INVALID; /* IPv6 wants brackets */
		hl = (size_t)(colon - hp);
	}
	if (hl >= host_len || strlen(colon + 1) >= port_len || !colon[1])
		return RMCA_ERR_INVALID;
	for (const char *p = colon + 1; *p; p++)
		if (*p < '0' || *p > '9')
			return RMCA_ERR_INVALID;
	if (strtol(colon + 1, NULL, 10) > 65535)
		return RMCA_ERR_INVALID;
	memcpy(host, h, hl);
	host[hl] = '\0';
	snprintf(port, port_len, "%s", colon + 1);
	return 0;
}

static int set_flags(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

int rmca_tcp_connect(const char *host, const char *port, int64_t deadline,
		     char *why, size_t why_len)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV | AI_ADDRCONFIG };
	struct addrinfo *res, *ai;
	int rc = RMCA_ERR_CONNECTION, gai, err = ECONNREFUSED;

	gai = getaddrinfo(*host ? host : NULL, port, &hints, &res);
	if (gai) {
		snprintf(why, why_len, "'%s' does not resolve: %s", host,
			 gai == EAI_SYSTEM ? strerror(errno)
					   : gai_strerror(gai));
		return gai == EAI_MEMORY ? RMCA_ERR_NO_MEMORY
					 : RMCA_ERR_INVALID;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family,
				ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
				ai->ai_protocol);
		struct pollfd pfd = {.fd = fd, .events = POLLOUT};
		socklen_t el = sizeof(err);

		if (fd < 0) {
			err = errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) &&
		    errno != EINPROGRESS) {
			err = errno;
			close(fd);
			continue;
		}
		if (poll(&pfd, 1, rmca_ms_left(deadline)) != 1) {
			close(fd);
			snprintf(why, why_len, "no answer in time");
			rc = RMCA_ERR_TIMEOUT;
			break;
		}
		err = 0;
		getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
		if (err) {
			close(fd);
			continue;
		}
		set_flags(fd);
		freeaddrinfo(res);
		return fd;
	}
	freeaddrinfo(res);
	if (rc == RMCA_ERR_CONNECTION)
		snprintf(why, why_len, "%s (%s)",
			 err == ECONNREFUSED ? "nothing listening"
					     : "cannot connect",
			 strerror(err));
	return rc;
}

int rmca_tcp_listen(const char *host, const char *port, int *bound_port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV | AI_PASSIVE };
	struct addrinfo *res, *ai;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd = -1, one = 1;

	if (getaddrinfo(*host ? host : NULL, port, &hints, &res))
		return RMCA_ERR_NOT_FOUND;
	/* With no host, prefer the IPv6 wildcard: it takes IPv4 too. */
	for (ai = res; ai; ai = ai->ai_next)
		if (!*host && ai->ai_family == AF_INET6)
			break;
	if (!ai)
		ai = res;
	for (; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family,
			    ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
			    ai->ai_protocol);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (!bind(fd, ai->ai_addr, ai->ai_addrlen) && !listen(fd, 128))
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return errno == EADDRINUSE ? RMCA_ERR_AGAIN : RMCA_ERR_NOT_FOUND;
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	*bound_port = ss.ss_family == AF_INET6 ?
			      ntohs(((struct sockaddr_in6 *)&ss)->sin6_port) :
			      ntohs(((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}

int rmca_msg_send(int fd, const void *body, size_t len, int64_t deadline)
{
	uint8_t pfx[4] = { (uint8_t)len, (uint8_t)(len >> 8),
			   (uint8_t)(len >> 16), (uint8_t)(len >> 24) };
	int rc = rmca_send_full(fd, pfx, sizeof(pfx), deadline);

	return rc ? rc : rmca_send_full(fd, body, len, deadline);
}

int rmca_msg_recv(int fd, void *body, size_t cap, size_t *len,
		  int64_t deadline, char *why, size_t why_len)
{
	uint8_t pfx[4];
	size_t n;
	int rc = rmca_recv_full(fd, pfx, sizeof(pfx), deadline);

	if (rc) {
		snprintf(why, why_len, "%s before a message length",
			 rc == RMCA_ERR_TIMEOUT ? "timed out" : "closed");
		return rc == RMCA_ERR_TIMEOUT ? rc : RMCA_ERR_PROTOCOL;
	}
	n = pfx[0] | pfx[1] << 8 | pfx[2] << 16 | (size_t)pfx[3] << 24;
	if (n > cap || n > RMCA_HELLO_MAX) {
		snprintf(why, why_len, "message of %zu bytes, at most %d", n,
			 RMCA_HELLO_MAX);
		return RMCA_ERR_PROTOCOL;
	}
	rc = rmca_recv_full(fd, body, n, deadline);
	if (rc) {
		snprintf(why, why_len, "%s within a %zu-byte message",
			 rc == RMCA_ERR_TIMEOUT ? "timed out" : "closed", n);
		return rc == RMCA_ERR_TIMEOUT ? rc : RMCA_ERR_PROTOCOL;
	}
	*len = n;
	return 0;
}

void rmca_sockaddr_name(const struct sockaddr *sa, socklen_t sl, char *host,
			size_t host_len, char *full, size_t full_len)
{
	char port[8] = "?";

	if (getnameinfo(sa, sl, host, (socklen_t)host_len, port, sizeof(port),
			NI_NUMERICHOST | NI_NUMERICSERV))
		snprintf(host, host_len, "?");
	/* An IPv4 peer on a dual-stack socket: report it as IPv4. */
	if (!strncmp(host, "::ffff:", 7) && strchr(host + 7, '.'))
		memmove(host, host + 7, strlen(host + 7) + 1);
	snprintf(full, full_len, strchr(host, ':') ? "[%s]:%s" : "%s:%s", host,
		 port);
}

void rmca_peer_name(int fd, char *host, size_t host_len, char *full,
		    size_t full_len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (getpeername(fd, (struct sockaddr *)&ss, &sl)) {
		snprintf(host, host_len, "?");
		snprintf(full, full_len, "?:?");
		return;
	}
	rmca_sockaddr_name((struct sockaddr *)&ss, sl, host, host_len, full,
			   full_len);
}
