/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Allocations made to fail on demand (nomem.c): while no_memory is set,
 * malloc, calloc and realloc return NULL, in the library as in the test.
 * Not under AddressSanitizer, which owns malloc: a test that needs it
 * skips there.
 */
#ifndef RMCA_TEST_NOMEM_H
#define RMCA_TEST_NOMEM_H

extern volatile int no_memory;

#endif
