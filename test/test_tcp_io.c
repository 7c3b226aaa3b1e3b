/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tcp data path's socket calls (tcp_io.h): made straight to the kernel
 * only where recv, send, recvmsg and sendmsg are the C library's own, and
 * then with the C library's results. This program puts its own sendmsg()
 * in place of libc's, as a test that counts calls or a preloaded socket
 * library does: the module must then go through it.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cmocka.h>

#include "tcp_io.h"

static long own_sendmsgs;

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	own_sendmsgs++;
	return (ssize_t)syscall(SYS_sendmsg, fd, msg, flags);
}

static void pair(int sv[2])
{
	assert_int_equal(
		socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
}

/* One of the four is this program's: no direct calls. */
static void interposed_call_is_not_bypassed(void **state)
{
	(void)state;
	assert_false(rmca_tcp_io_direct_ok());
}

/* Direct or not, each call does what the C library's does: the bytes, the
 * flags, -1 with errno from the kernel; only the indirect sendmsg() goes
 * through this program's. */
static void direct_calls_match_the_library(void **state)
{
	for (int direct = 0; direct < 2; direct++) {
		char hdr[3] = "abc", pl[5] = "defgh", in[16];
		struct iovec iov[2] = {{hdr, sizeof(hdr)}, {pl, sizeof(pl)}};
		struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2};
		struct iovec riov[2] = {{in, 2}, {in + 2, 14}};
		struct msghdr rm = {.msg_iov = riov, .msg_iovlen = 2};
		long before = own_sendmsgs;
		int sv[2];

		(void)state;
		pair(sv);
		errno = 0;
		assert_int_equal(
			rmca_tcp_io_recv(direct, sv[1], in, sizeof(in), 0), -1);
		assert_int_equal(errno, EAGAIN);
		assert_int_equal(
			rmca_tcp_io_send(direct, sv[0], "xy", 2, MSG_NOSIGNAL),
			2);
		assert_int_equal(
			rmca_tcp_io_sendmsg(direct, sv[0], &m, MSG_NOSIGNAL),
			8);
		assert_int_equal(own_sendmsgs - before, direct ? 0 : 1);
		/* a peek leaves the bytes; a truncating read drops them */
		assert_int_equal(
			rmca_tcp_io_recv(direct, sv[1], in, 2, MSG_PEEK), 2);
		assert_int_equal(rmca_tcp_io_recv(direct, sv[1], in, 2,
						  MSG_TRUNC | MSG_DONTWAIT),
				 2);
		memset(in, 0, sizeof(in));
		assert_int_equal(rmca_tcp_io_recvmsg(direct, sv[1], &rm, 0), 8);
		assert_memory_equal(in, "abcdefgh", 8);
		close(sv[0]);
		assert_int_equal(
			rmca_tcp_io_recv(direct, sv[1], in, sizeof(in), 0), 0);
		close(sv[1]);
		errno = 0;
		assert_int_equal(
			rmca_tcp_io_send(direct, sv[1], "x", 1, MSG_NOSIGNAL),
			-1);
		assert_int_equal(errno, EBADF);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(interposed_call_is_not_bypassed),
		cmocka_unit_test(direct_calls_match_the_library),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
