// SPDX-License-Identifier: BSD-3-Clause
/*
 * Separate contexts are independent: two threads of one process, each with
 * its own context, talk to each other; and contexts made and finalized in
 * parallel threads do not trip over each other (component loading is
 * shared process state).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <rmca.h>
#include <rmca/support/clock.h>

struct side {
	int port; /* server -> client */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int status; /* 0 ok, else the line that failed */
};

#define FAIL_IF(cond)                           \
	do {                                    \
		if (cond) {                     \
			s->status = __LINE__;   \
			goto out;               \
		}                               \
	} while (0)

static int wait_one(rmca_context_t *ctx, void *tag)
{
	long end = rmca_now_ms() + 5000;

	while (rmca_now_ms() < end) {
		struct rmca_completion c;

		if (rmca_poll(ctx, &c, 1) == 1)
			return c.user_ctx == tag ? c.status : RMCA_ERR_INVALID;
	}
	return RMCA_ERR_TIMEOUT;
}

static struct side link = { .lock = PTHREAD_MUTEX_INITIALIZER,
			    .cond = PTHREAD_COND_INITIALIZER };

static void *server(void *arg)
{
	struct side *s = arg;
	rmca_context_t *ctx = NULL;
	rmca_listener_t *l;
	rmca_ep_t *ep;
	rmca_mr_t *mr;
	char buf[64] = "";

	FAIL_IF(rmca_init(&ctx));
	FAIL_IF(rmca_listen(ctx, "127.0.0.1:0", &l));
	pthread_mutex_lock(&s->lock);
	s->port = rmca_listener_port(l);
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	FAIL_IF(rmca_accept(l, 5000, &ep));
	FAIL_IF(rmca_mr_reg(ctx, buf, sizeof(buf), RMCA_ACCESS_LOCAL, &mr));
	FAIL_IF(rmca_recv(ep, buf, sizeof(buf), mr, buf));
	FAIL_IF(wait_one(ctx, buf));
	FAIL_IF(strcmp(buf, "hello from the other thread"));
	FAIL_IF(rmca_send(ep, buf, 3, mr, buf + 1));
	FAIL_IF(wait_one(ctx, buf + 1));
out:
	rmca_finalize(ctx);
	return NULL;
}

static void two_threads_two_contexts_talk(void **state)
{
	static struct side c_side;
	struct side *s = &c_side;
	rmca_context_t *ctx = NULL;
	pthread_t t;
	rmca_ep_t *ep;
	rmca_mr_t *mr;
	char buf[64] = "hello from the other thread", hp[32];

	(void)state;
	pthread_create(&t, NULL, server, &link);
	pthread_mutex_lock(&link.lock);
	while (!link.port && !link.status)
		pthread_cond_wait(&link.cond, &link.lock);
	pthread_mutex_unlock(&link.lock);
	snprintf(hp, sizeof(hp), "127.0.0.1:%d", link.port);
	FAIL_IF(rmca_init(&ctx));
	FAIL_IF(rmca_connect(ctx, hp, 5000, &ep));
	FAIL_IF(rmca_mr_reg(ctx, buf, sizeof(buf), RMCA_ACCESS_LOCAL, &mr));
	FAIL_IF(rmca_send(ep, buf, strlen(buf) + 1, mr, buf));
	FAIL_IF(wait_one(ctx, buf));
	FAIL_IF(rmca_recv(ep, buf + 32, 32, mr, buf + 32));
	FAIL_IF(wait_one(ctx, buf + 32));
	FAIL_IF(memcmp(buf + 32, "hel", 3));
out:
	pthread_join(t, NULL);
	rmca_finalize(ctx);
	if (link.status)
		fail_msg("server thread failed at line %d", link.status);
	if (s->status)
		fail_msg("client failed at line %d", s->status);
}

static void *init_loop(void *arg)
{
	int *bad = arg;

	for (int i = 0; i < 20; i++) {
		rmca_context_t *ctx;

		if (rmca_init(&ctx)) {
			*bad = 1;
			return NULL;
		}
		rmca_finalize(ctx);
	}
	return NULL;
}

static void contexts_made_in_parallel_threads_are_independent(void **state)
{
	pthread_t t[4];
	int bad[4] = { 0 };

	(void)state;
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, init_loop, &bad[i]);
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(bad[i], 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(two_threads_two_contexts_talk),
		cmocka_unit_test(contexts_made_in_parallel_threads_are_independent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
