/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm_copy - what copying SIZE bytes costs on this machine, the yardsticks
 * of shm's put_bw: memcpy in one process, and process_vm_writev (the copy
 * shm's initiator makes) into a child. The same two buffers every time, as
 * rmca_perf's put_bw uses one source and one region.
 *
 *   shm_copy SIZE ITERS    prints "memcpy,SIZE,ITERS,MB/s" and
 *                          "process_vm_writev,SIZE,ITERS,MB/s" (MB = 10^6)
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 0) : 1 << 20;
	int iters = argc > 2 ? atoi(argv[2]) : 1000, p[2];
	char *src = aligned_alloc(4096, (n + 4095) & ~(size_t)4095);
	char *dst = aligned_alloc(4096, (n + 4095) & ~(size_t)4095);
	struct iovec l = {src, n}, r = {dst, n};
	double t;
	pid_t pid;

	if (!src || !dst || pipe(p))
		return 1;
	memset(src, 1, n);
	memset(dst, 2, n);
	pid = fork();
	if (!pid) {
		char c;

		close(p[1]);
		_exit(read(p[0], &c, 1) < 0);
	}
	t = now();
	for (int i = 0; i < iters; i++) {
		memcpy(dst, src, n);
		__asm__ volatile("" ::: "memory");
	}
	printf("memcpy,%zu,%d,%.1f,MB/s\n", n, iters,
	       (double)n * iters / (now() - t) / 1e6);
	t = now();
	for (int i = 0; i < iters; i++)
		if (process_vm_writev(pid, &l, 1, &r, 1, 0) != (ssize_t)n) {
			perror("process_vm_writev");
			return 1;
		}
	printf("process_vm_writev,%zu,%d,%.1f,MB/s\n", n, iters,
	       (double)n * iters / (now() - t) / 1e6);
	close(p[1]);
	waitpid(pid, NULL, 0);
	return 0;
}
