/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The bootstrap socket: addresses, deadlines, length-prefixed messages.
 */
#ifndef RMCA_BOOTSTRAP_H
#define RMCA_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* deadlines: rmca_now_ms() + timeout, rmca_ms_left() for poll() */
#include <rmca/support/clock.h>

/* Split "host:port" or "[v6]:port"; host may be empty (any). */
#define RMCA_HOST_PORT_HELP "HOST:PORT expected (IPv6 as [addr]:port)"
int rmca_parse_host_port(const char *hp, char *host, size_t host_len,
			 char *port, size_t port_len);

/* Connect to host:port (every address getaddrinfo gives, in order) by the
 * deadline. Returns a non-blocking socket, or a negative status with why
 * filled: RMCA_ERR_INVALID (the name does not resolve),
 * RMCA_ERR_CONNECTION (refused, nothing listening), RMCA_ERR_TIMEOUT. */
int rmca_tcp_connect(const char *host, const char *port, int64_t deadline,
		     char *why, size_t why_len);
/* Listen on host:port; returns the socket or a negative status. */
int rmca_tcp_listen(const char *host, const char *port, int *bound_port);

/* Send / receive one length-prefixed message by the deadline. recv: 0, or a
 * negative status with why filled. */
int rmca_msg_send(int fd, const void *body, size_t len, int64_t deadline);
int rmca_msg_recv(int fd, void *body, size_t cap, size_t *len,
		  int64_t deadline, char *why, size_t why_len);

/* Numeric address (host, and "host:port" or "[v6]:port") of a socket
 * address, or of the peer of a connected socket. Name a peer when it
 * arrives: once gone, it has no name. */
void rmca_sockaddr_name(const struct sockaddr *sa, socklen_t sl, char *host,
			size_t host_len, char *full, size_t full_len);
void rmca_peer_name(int fd, char *host, size_t host_len, char *full,
		    size_t full_len);

#endif
