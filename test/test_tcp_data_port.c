/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tcp data port: not opened by rmca_init (nor so by rmca_info), opened
 * when a first hello needs it, and bound to the addresses of the
 * interfaces RMCA_tcp_if_include selects rather than to every address.
 */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <rmca.h>
#include <rmca/info.h>

#define MAX_SOCKS 64

/* Inodes of this process's sockets. */
static int my_sockets(unsigned long *ino, int max)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)) && n < max) {
		char path[300], link[64];
		ssize_t len;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		len = readlink(path, link, sizeof(link) - 1);
		if (len <= 0)
			continue;
		link[len] = '\0';
		if (sscanf(link, "socket:[%lu]", &ino[n]) == 1)
			n++;
	}
	closedir(d);
	return n;
}

/* Local addresses ("0100007F:1F90", kernel hex) of this process's
 * listening TCP sockets. */
static int listening(char addrs[][64], int max)
{
	static const char *const files[] = {"/proc/net/tcp", "/proc/net/tcp6"};
	unsigned long ino[MAX_SOCKS];
	int nino = my_sockets(ino, MAX_SOCKS), n = 0;

	for (int f = 0; f < 2; f++) {
		FILE *fp = fopen(files[f], "r");
		char line[512];

		if (!fp)
			continue;
		while (fgets(line, sizeof(line), fp) && n < max) {
			char local[64], remote[64];
			unsigned st;
			unsigned long inode;

			if (sscanf(line,
				   " %*d: %63s %63s %x %*s %*s %*s %*d %*d %lu",
				   local, remote, &st, &inode) != 4 ||
			    st != 0x0a)
				continue;
			for (int i = 0; i < nino; i++)
				if (ino[i] == inode)
					snprintf(addrs[n++], 64, "%s", local);
		}
		fclose(fp);
	}
	return n;
}

static bool loopback(const char *a)
{
	return !strncmp(a, "0100007F:", 9) ||
	       !strncmp(a, "00000000000000000000000001000000:", 33);
}

static void test_init_opens_no_port(void **state)
{
	char addrs[MAX_SOCKS][64];
	rmca_context_t *ctx;
	int n;

	(void)state;
	assert_int_equal(rmca_init(&ctx), 0);
	n = listening(addrs, MAX_SOCKS);
	if (n)
		fail_msg("rmca_init left %d listening socket(s), first %s", n,
			 addrs[0]);
	rmca_finalize(ctx);
}

static void test_port_bound_to_selected_interfaces(void **state)
{
	char addrs[MAX_SOCKS][64], text[4096];
	rmca_listener_t *l;
	rmca_context_t *ctx;
	char hp[64];
	int n, rc;

	(void)state;
	setenv("RMCA_tcp_if_include", "lo", 1);
	assert_int_equal(rmca_init(&ctx), 0);
	unsetenv("RMCA_tcp_if_include");
	assert_int_equal(rmca_listen(ctx, "127.0.0.1:0", &l), 0);
	snprintf(hp, sizeof(hp), "127.0.0.1:%d", rmca_listener_port(l));
	/* A probe of its own listener: both hellos need the data port. */
	rc = rmca_info_explain(ctx, hp, 5000, text, sizeof(text));
	if (rc)
		fail_msg("explain of its own listener: %d: %s", rc, text);
	n = listening(addrs, MAX_SOCKS);
	/* The listener and the data port (127.0.0.1, maybe ::1). */
	assert_true(n >= 2);
	for (int i = 0; i < n; i++)
		if (!loopback(addrs[i]))
			fail_msg("listening on %s with RMCA_tcp_if_include=lo",
				 addrs[i]);
	rmca_finalize(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_opens_no_port),
		cmocka_unit_test(test_port_bound_to_selected_interfaces),
	};

	setenv("RMCA_transports", "tcp", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
