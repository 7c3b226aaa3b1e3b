/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The components' support headers (rmca/support/): lists, container_of,
 * the monotonic clock, bounded socket I/O and the walk over a list's names.
 * Compiled as a component compiles them: only rmca.h and rmca/support/.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include <rmca/support/clock.h>
#include <rmca/support/container.h>
#include <rmca/support/list.h>
#include <rmca/support/names.h>
#include <rmca/support/range.h>
#include <rmca/support/sockio.h>

/* ---- lists and container_of ---- */

struct item {
	int value;
	struct rmca_list link;
	char pad[3];
};

static int values(struct rmca_list *h, int *out, int max)
{
	struct rmca_list *l;
	int n = 0;

	rmca_list_for_each(l, h)
	{
		if (n < max)
			out[n] = rmca_list_entry(l, struct item, link)->value;
		n++;
	}
	return n;
}

static void list_keeps_order_and_unlinks(void **state)
{
	struct rmca_list h = RMCA_LIST_INIT(h);
	struct item it[4] = {
		{.value = 0}, {.value = 1}, {.value = 2}, {.value = 3}};
	int v[4];

	assert_true(rmca_list_empty(&h));
	assert_null(rmca_list_first(&h, struct item, link));
	for (int i = 0; i < 4; i++)
		rmca_list_init(&it[i].link);
	assert_false(rmca_list_linked(&it[0].link));

	rmca_list_add_tail(&h, &it[1].link);
	rmca_list_add_tail(&h, &it[2].link);
	rmca_list_add(&h, &it[0].link); /* at the head */
	rmca_list_add_tail(&h, &it[3].link);
	assert_int_equal(rmca_list_count(&h), 4);
	assert_int_equal(values(&h, v, 4), 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(v[i], i);
	assert_ptr_equal(rmca_list_first(&h, struct item, link), &it[0]);
	assert_true(rmca_list_linked(&it[2].link));

	/* from the middle, then twice: harmless, and the list is intact */
	rmca_list_del(&it[2].link);
	assert_false(rmca_list_linked(&it[2].link));
	rmca_list_del(&it[2].link);
	assert_int_equal(values(&h, v, 4), 3);
	assert_int_equal(v[0], 0);
	assert_int_equal(v[1], 1);
	assert_int_equal(v[2], 3);
	/* the ends */
	rmca_list_del(&it[0].link);
	rmca_list_del(&it[3].link);
	assert_ptr_equal(rmca_list_first(&h, struct item, link), &it[1]);
	assert_ptr_equal(h.next, h.prev);
	rmca_list_del(&it[1].link);
	assert_true(rmca_list_empty(&h));
	assert_ptr_equal(h.next, &h);
	assert_ptr_equal(h.prev, &h);
}

static void list_for_each_safe_frees_as_it_goes(void **state)
{
	struct rmca_list h, *l, *tmp;
	int seen = 0;

	rmca_list_init(&h);
	for (int i = 0; i < 5; i++) {
		struct item *it = calloc(1, sizeof(*it));

		assert_non_null(it);
		it->value = i;
		rmca_list_add_tail(&h, &it->link);
	}
	rmca_list_for_each_safe(l, tmp, &h)
	{
		struct item *it = rmca_list_entry(l, struct item, link);

		assert_int_equal(it->value, seen++);
		rmca_list_del(l);
		free(it);
	}
	assert_int_equal(seen, 5);
	assert_true(rmca_list_empty(&h));
	assert_int_equal(rmca_list_count(&h), 0);
}

struct outer {
	long first;
	struct {
		char c;
		double d;
	} inner;
	int last;
};

static void container_of_finds_the_object(void **state)
{
	struct outer o;
	struct item it;

	assert_ptr_equal(rmca_container_of(&o.last, struct outer, last), &o);
	assert_ptr_equal(rmca_container_of(&o.inner, struct outer, inner), &o);
	assert_ptr_equal(rmca_container_of(&o.first, struct outer, first), &o);
	assert_ptr_equal(rmca_container_of(&it.link, struct item, link), &it);
}

/* ---- a peer's access inside a region ---- */

static void range_inside_refuses_what_wraps_or_overhangs(void **state)
{
	const uint64_t b = 0x1000, n = 0x100, top = UINT64_MAX;

	(void)state;
	assert_true(rmca_range_inside(b, n, b, n));	    /* all of it */
	assert_true(rmca_range_inside(b, n, b + n - 1, 1)); /* last byte */
	assert_true(rmca_range_inside(b, n, b + n, 0));	    /* empty, at end */
	assert_true(rmca_range_inside(b, n, b + 8, 8));
	assert_false(rmca_range_inside(b, n, b - 1, 1));     /* before */
	assert_false(rmca_range_inside(b, n, b + n, 1));     /* after */
	assert_false(rmca_range_inside(b, n, b + n - 1, 2)); /* overhangs */
	assert_false(rmca_range_inside(b, n, b + 1, n));
	assert_false(rmca_range_inside(b, n, b + n + 1, 0)); /* empty, beyond */
	/* an address and a length whose sum wraps past 2^64 */
	assert_false(rmca_range_inside(b, n, b + 8, top - 7));
	assert_false(rmca_range_inside(b, n, top - 3, 8));
	assert_false(rmca_range_inside(b, n, b, top));
	/* a region that ends at the top of the address space */
	assert_true(rmca_range_inside(top - 15, 16, top - 7, 8));
	assert_false(rmca_range_inside(top - 15, 16, top - 7, 9));
}

/* ---- the monotonic clock ---- */

static void clock_is_monotonic_and_consistent(void **state)
{
	int64_t ms0 = rmca_now_ms(), ns = rmca_now_ns(), ms1 = rmca_now_ms();
	int64_t prev = rmca_now_ns();

	/* read in that order from one clock: ms0 <= ns in ms <= ms1 */
	assert_true(ms0 <= ns / 1000000);
	assert_true(ns / 1000000 <= ms1);
	for (int i = 0; i < 1000; i++) {
		int64_t t = rmca_now_ns();

		assert_true(t >= prev);
		prev = t;
	}
}

static void ms_left_is_what_poll_takes(void **state)
{
	int64_t now = rmca_now_ms();
	int left;

	assert_int_equal(rmca_ms_left(-1), -1); /* no deadline: for ever */
	assert_int_equal(rmca_deadline_ms(-1), -1);
	assert_int_equal(rmca_ms_left(now - 10), 0); /* passed */
	assert_int_equal(rmca_ms_left(0), 0);
	assert_int_equal(rmca_ms_left(INT64_MAX), 1000000); /* no overflow */
	left = rmca_ms_left(now + 60000);
	assert_true(left > 0 && left <= 60000);
	assert_true(rmca_deadline_ms(60000) >= now + 60000);
}

/* ---- bounded socket I/O ---- */

#define BIG (8u << 20) /* more than both socket buffers hold */

struct peer {
	int fd;
	unsigned char *buf;
	size_t len;
	int rc;
	pthread_t interrupt; /* if set, signalled while the peer works */
};

static void on_usr1(int sig)
{
}

static void *reader(void *arg)
{
	struct peer *p = arg;

	p->rc = rmca_recv_full(p->fd, p->buf, p->len, rmca_now_ms() + 60000);
	return NULL;
}

static void *writer(void *arg)
{
	struct peer *p = arg;

	/* interrupt the other side's poll() a few times before writing */
	for (int i = 0; p->interrupt && i < 20; i++) {
		pthread_kill(p->interrupt, SIGUSR1);
		usleep(1000);
	}
	p->rc = rmca_send_full(p->fd, p->buf, p->len, rmca_now_ms() + 60000);
	return NULL;
}

static void pattern(unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)(i * 7 + (i >> 13));
}

static void sockpair(int sv[2], bool nonblocking)
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	if (nonblocking)
		for (int i = 0; i < 2; i++)
			assert_int_equal(fcntl(sv[i], F_SETFL, O_NONBLOCK), 0);
}

/* Both directions wait (full send buffer, empty receive buffer) and come
 * out whole, on blocking and non-blocking sockets alike. */
static void full_transfers_wait_and_arrive_whole(void **state)
{
	for (int nb = 0; nb < 2; nb++) {
		unsigned char *src = malloc(BIG), *dst = calloc(1, BIG);
		struct peer r = {.buf = dst, .len = BIG, .rc = 1};
		pthread_t t;
		int sv[2];

		assert_non_null(src);
		assert_non_null(dst);
		pattern(src, BIG);
		sockpair(sv, nb);
		r.fd = sv[1];
		assert_int_equal(pthread_create(&t, NULL, reader, &r), 0);
		assert_int_equal(
			rmca_send_full(sv[0], src, BIG, rmca_now_ms() + 60000),
			0);
		assert_int_equal(pthread_join(t, NULL), 0);
		assert_int_equal(r.rc, 0);
		assert_memory_equal(src, dst, BIG);
		close(sv[0]);
		close(sv[1]);
		free(src);
		free(dst);
	}
}

/* Signals (EINTR) do not end a wait: the bytes that follow arrive. */
static void interrupted_waits_go_on(void **state)
{
	struct sigaction sa = {.sa_handler = on_usr1}, old;
	unsigned char out[4096], in[4096];
	struct peer w = {.buf = out, .len = sizeof(out), .rc = 1};
	pthread_t t;
	int sv[2];

	/* no SA_RESTART: poll() returns EINTR */
	assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
	pattern(out, sizeof(out));
	sockpair(sv, false);
	w.fd = sv[0];
	w.interrupt = pthread_self();
	assert_int_equal(pthread_create(&t, NULL, writer, &w), 0);
	assert_int_equal(
		rmca_recv_full(sv[1], in, sizeof(in), rmca_now_ms() + 60000),
		0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(w.rc, 0);
	assert_memory_equal(out, in, sizeof(in));
	close(sv[0]);
	close(sv[1]);
	sigaction(SIGUSR1, &old, NULL);
}

/* The deadline bounds the wait, also on a blocking socket. */
static void deadline_ends_the_wait(void **state)
{
	for (int nb = 0; nb < 2; nb++) {
		unsigned char b[64] = {0}, *big = calloc(1, BIG);
		int sv[2];

		assert_non_null(big);
		sockpair(sv, nb);
		/* half of it comes, the rest never */
		assert_int_equal(write(sv[0], b, 32), 32);
		assert_int_equal(
			rmca_recv_full(sv[1], b, sizeof(b), rmca_now_ms() + 50),
			RMCA_ERR_TIMEOUT);
		assert_int_equal(rmca_fd_wait(sv[1], POLLIN, rmca_now_ms()),
				 RMCA_ERR_TIMEOUT);
		/* nobody reads: the send buffer fills */
		assert_int_equal(
			rmca_send_full(sv[0], big, BIG, rmca_now_ms() + 50),
			RMCA_ERR_TIMEOUT);
		assert_int_equal(rmca_fd_wait(sv[1], POLLIN, -1), 1);
		close(sv[0]);
		close(sv[1]);
		free(big);
	}
}

/* A peer that closes is RMCA_ERR_CONNECTION, and sending to it raises no
 * SIGPIPE (which would end this test). */
static void closed_peer_is_a_connection_error(void **state)
{
	unsigned char b[64] = {0};
	int sv[2];

	sockpair(sv, false);
	assert_int_equal(write(sv[0], b, 10), 10);
	close(sv[0]);
	/* what was sent is read; the end comes before the rest */
	assert_int_equal(rmca_recv_full(sv[1], b, sizeof(b), -1),
			 RMCA_ERR_CONNECTION);
	assert_int_equal(rmca_send_full(sv[1], b, sizeof(b), -1),
			 RMCA_ERR_CONNECTION);
	assert_int_equal(rmca_recv_full(-1, b, 1, -1), RMCA_ERR_CONNECTION);
	assert_int_equal(rmca_send_full(-1, b, 1, -1), RMCA_ERR_CONNECTION);
	/* nothing to move: done at once */
	assert_int_equal(rmca_recv_full(sv[1], b, 0, -1), 0);
	close(sv[1]);
}

/* ---- the names of a list ---- */

static int walk(const char *list, char names[][16], int max)
{
	const char *p = rmca_names_start(list), *q;
	size_t n;
	int k = 0;

	while ((n = rmca_names_next(&p, &q))) {
		if (k < max)
			snprintf(names[k], 16, "%.*s", (int)n, q);
		k++;
	}
	return k;
}

static void names_walk_as_the_core_reads_them(void **state)
{
	char nm[8][16];

	assert_int_equal(walk("eth0,lo", nm, 8), 2);
	assert_string_equal(nm[0], "eth0");
	assert_string_equal(nm[1], "lo");
	/* whitespace around names, empty elements, a trailing comma */
	assert_int_equal(walk("  eth0 , ,\tlo,", nm, 8), 2);
	assert_string_equal(nm[0], "eth0");
	assert_string_equal(nm[1], "lo");
	/* '^' opens an exclude list, whitespace before or after it aside */
	assert_false(rmca_names_exclude("eth0,lo"));
	assert_true(rmca_names_exclude("^eth0"));
	assert_true(rmca_names_exclude("  ^ eth0"));
	assert_int_equal(walk("  ^ eth0,lo", nm, 8), 2);
	assert_string_equal(nm[0], "eth0");
	/* a '^' inside is part of a name (the core refuses that list) */
	assert_int_equal(walk("a,^b", nm, 8), 2);
	assert_string_equal(nm[1], "^b");
	/* nothing to walk */
	assert_int_equal(walk("", nm, 8), 0);
	assert_int_equal(walk(" , ", nm, 8), 0);
	assert_int_equal(walk("^", nm, 8), 0);
	assert_int_equal(walk(NULL, nm, 8), 0);
	assert_false(rmca_names_exclude(NULL));
	assert_true(rmca_names_empty(NULL));
	assert_true(rmca_names_empty(""));
	assert_true(rmca_names_empty(" \t "));
	assert_false(rmca_names_empty(" lo"));
	assert_false(rmca_names_empty("^"));
}

static void names_has_matches_whole_names(void **state)
{
	assert_true(rmca_names_has("eth0,lo", "lo"));
	assert_true(rmca_names_has(" eth0 ,lo", "eth0"));
	assert_true(rmca_names_has("^lo", "lo"));
	assert_false(rmca_names_has("eth0,lo", "eth"));
	assert_false(rmca_names_has("eth0,lo", "eth01"));
	assert_false(rmca_names_has("eth0,lo", "LO"));
	assert_false(rmca_names_has("", "lo"));
	assert_false(rmca_names_has("eth0,lo", ""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(list_keeps_order_and_unlinks),
		cmocka_unit_test(list_for_each_safe_frees_as_it_goes),
		cmocka_unit_test(container_of_finds_the_object),
		cmocka_unit_test(range_inside_refuses_what_wraps_or_overhangs),
		cmocka_unit_test(clock_is_monotonic_and_consistent),
		cmocka_unit_test(ms_left_is_what_poll_takes),
		cmocka_unit_test(full_transfers_wait_and_arrive_whole),
		cmocka_unit_test(interrupted_waits_go_on),
		cmocka_unit_test(deadline_ends_the_wait),
		cmocka_unit_test(closed_peer_is_a_connection_error),
		cmocka_unit_test(names_walk_as_the_core_reads_them),
		cmocka_unit_test(names_has_matches_whole_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
