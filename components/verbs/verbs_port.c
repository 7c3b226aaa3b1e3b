/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which local port an rdma_cm id gets.
 *
 * An iWARP connection is a TCP connection of the host: siw binds a kernel
 * TCP socket (SO_REUSEADDR) to the address and port of the rdma_cm id, in
 * rdma_listen() for a listener and in rdma_connect() for the active side.
 * rdma_cm, asked for port 0, picks a port from its own table, which knows
 * other rdma_cm ids but not the host's TCP sockets. A port held there by an
 * ordinary socket without SO_REUSEADDR (most often the TIME_WAIT of a
 * connection that another process closed a moment ago: the bootstrap of a
 * job's previous step) makes siw's bind fail with EADDRINUSE, and with it
 * the listener (the module is lost) or the connection.
 *
 * So on iWARP the TCP stack chooses: a socket with SO_REUSEADDR bound to
 * port 0 gets a port no TCP socket of this address holds, and rdma_cm is
 * given exactly that port. Ours is not listening, so siw's socket (also
 * SO_REUSEADDR) binds and listens beside it, while ordinary sockets keep
 * away from it (connect() and bind(0) skip a bound port). The caller closes
 * ours once siw's socket is bound. rdma_cm may still refuse the port (an
 * IB id holds it in rdma_cm's table, which all devices share): then the
 * next port is tried, the refused one held until then so it is not given
 * again.
 */
#include <errno.h>
#include <unistd.h>
#include <sys/socket.h>

#include "verbs.h"

#define BIND_TRIES 16

/* A TCP port of a's address that no socket holds: fd (and a->sin_port),
 * or -1 with errno. */
static int tcp_port_hold(struct sockaddr_in *a)
{
	struct sockaddr_in b = *a;
	socklen_t len = sizeof(b);
	int one = 1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	b.sin_port = 0;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&b, sizeof(b)) ||
	    getsockname(fd, (struct sockaddr *)&b, &len)) {
		int err = errno;

		close(fd);
		errno = err;
		return -1;
	}
	a->sin_port = b.sin_port;
	return fd;
}

void rmca_verbs_port_release(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

int rmca_verbs_cm_bind(struct rmca_verbs_module *vm, struct rdma_cm_id *id,
		       int *hold)
{
	struct sockaddr_in a = vm->ip;
	int refused = -1, err = 0;

	*hold = -1;
	a.sin_port = 0;
	if (!rmca_verbs_flavour(vm)->tcp_ports) /* rdma_cm's own */
		return rdma_bind_addr(id, (struct sockaddr *)&a) ? -errno : 0;
	for (int i = 0; i < BIND_TRIES; i++) {
		int fd = tcp_port_hold(&a);

		if (fd < 0) {
			err = errno;
			break;
		}
		if (!rdma_bind_addr(id, (struct sockaddr *)&a)) {
			rmca_verbs_port_release(&refused);
			*hold = fd;
			return 0;
		}
		err = errno;
		rmca_verbs_port_release(&refused);
		refused = fd;
		if (err != EADDRINUSE)
			break;
	}
	rmca_verbs_port_release(&refused);
	return -err;
}
