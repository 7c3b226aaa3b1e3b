/* SPDX-License-Identifier: BSD-3-Clause */
/* Allocations that fail on demand (nomem.h). */
#include <stddef.h>
#include <stdlib.h>

#include "nomem.h"

volatile int no_memory;

/* AddressSanitizer owns malloc: it cannot be interposed here as well. */
#ifndef __SANITIZE_ADDRESS__
/* glibc's own allocator, behind ours */
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);

void *malloc(size_t size)
{
	return no_memory ? NULL : __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
	return no_memory ? NULL : __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
	return no_memory ? NULL : __libc_realloc(p, size);
}
#endif
