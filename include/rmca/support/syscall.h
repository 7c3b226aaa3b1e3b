/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rmca/support/syscall.h - system calls made without the C library's
 * wrapper, for the calls of a data path that never wait.
 *
 * libc's recv(), send(), epoll_wait() and the like are cancellation
 * points: in a process that ever had a second thread, each switches the
 * thread's cancellation type on and off around the system call, most of
 * the user-space instructions such a call costs. A call that cannot wait
 * (a non-blocking socket, a look with timeout 0) cannot be where a thread
 * is cancelled, so nothing is lost by making the system call itself
 * (rmca_sys), but only where the name is the C library's own
 * (rmca_libc_own): a program or a preloaded library that defines its own
 * (a user-space socket stack, a test that counts the calls) must go on
 * getting every call through it.
 */
#ifndef RMCA_SUPPORT_SYSCALL_H
#define RMCA_SUPPORT_SYSCALL_H

#include <errno.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <unistd.h>

/* System call nr with up to six arguments, as syscall() makes it: its
 * result, or -1 and errno. On x86-64 inline: a handful of instructions,
 * not a call that moves every argument over by one register. */
static inline long rmca_sys(long nr, long a1, long a2, long a3, long a4,
			    long a5, long a6)
{
#if defined(__x86_64__)
	register long r10 __asm__("r10") = a4;
	register long r8 __asm__("r8") = a5;
	register long r9 __asm__("r9") = a6;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10),
			   "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	if ((unsigned long)ret > -4096ul) {
		errno = (int)-ret;
		return -1;
	}
	return ret;
#else
	return syscall(nr, a1, a2, a3, a4, a5, a6);
#endif
}

#ifdef _GNU_SOURCE
#include <dlfcn.h>

/* True when fn, taken through the name the caller links against (so an
 * earlier definition, the program's or a preloaded library's, is the one
 * seen), is defined in the object that holds the C library's syscall().
 * Needs _GNU_SOURCE (dladdr) before the first include. */
static inline bool rmca_libc_own(void *fn)
{
	Dl_info libc, own;

	return dladdr((void *)syscall, &libc) && dladdr(fn, &own) &&
	       libc.dli_fbase && own.dli_fbase == libc.dli_fbase;
}
#endif

#endif
