/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The socket calls of a connection's data path. libc's recv(), send(),
 * recvmsg() and sendmsg() are cancellation points: in a process that ever
 * had a second thread, each one switches the thread's cancellation type on
 * and off around the system call, about 45 instructions of the 55 or so a
 * call costs in user space, four times per round trip. The sockets here
 * are non-blocking, so none of these calls waits: nothing is lost by
 * making the system call itself (rmca_sys, rmca/support/syscall.h), which
 * is no cancellation point. Only where those four names are libc's
 * (rmca_tcp_io_direct_ok):
 * a process that puts its own in their place (an LD_PRELOAD socket
 * library, a test that counts or cuts the calls) goes on getting the calls
 * through them.
 */
#ifndef RMCA_TCP_IO_H
#define RMCA_TCP_IO_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <rmca/support/syscall.h>

#if defined(SYS_recvfrom) && defined(SYS_sendto) && defined(SYS_recvmsg) &&    \
	defined(SYS_sendmsg)
#define TCP_IO_DIRECT 1
#else
#define TCP_IO_DIRECT 0
#endif

/* True when recv, send, recvmsg and sendmsg resolve to the C library's
 * own, which the direct calls then stand for (tcp_sock.c). */
bool rmca_tcp_io_direct_ok(void);

static inline ssize_t rmca_tcp_io_recv(bool direct, int fd, void *buf,
				       size_t len, int flags)
{
#if TCP_IO_DIRECT
	if (direct)
		return rmca_sys(SYS_recvfrom, fd, (long)buf, (long)len, flags,
				0, 0);
#endif
	(void)direct;
	return recv(fd, buf, len, flags);
}

static inline ssize_t rmca_tcp_io_send(bool direct, int fd, const void *buf,
				       size_t len, int flags)
{
#if TCP_IO_DIRECT
	if (direct)
		return rmca_sys(SYS_sendto, fd, (long)buf, (long)len, flags, 0,
				0);
#endif
	(void)direct;
	return send(fd, buf, len, flags);
}

static inline ssize_t rmca_tcp_io_recvmsg(bool direct, int fd,
					  struct msghdr *msg, int flags)
{
#if TCP_IO_DIRECT
	if (direct)
		return rmca_sys(SYS_recvmsg, fd, (long)msg, flags, 0, 0, 0);
#endif
	(void)direct;
	return recvmsg(fd, msg, flags);
}

static inline ssize_t rmca_tcp_io_sendmsg(bool direct, int fd,
					  const struct msghdr *msg, int flags)
{
#if TCP_IO_DIRECT
	if (direct)
		return rmca_sys(SYS_sendmsg, fd, (long)msg, flags, 0, 0, 0);
#endif
	(void)direct;
	return sendmsg(fd, msg, flags);
}

#endif
