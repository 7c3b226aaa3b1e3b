/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shm module keeps at most SHM_MAX_PENDING accepted sockets whose
 * hello waits for its connect; at the bound one gives way to a new one.
 * It was the oldest, whoever sent it: one process that dialed and sent
 * whole hellos as fast as it could pushed out an honest peer's socket
 * before its connect came. Now the socket that gives way is the oldest of
 * the user, then of the process, that holds the most, as the kernel names
 * them (SO_PEERCRED): the flooder (a child process, the same user) pushes
 * out its own only, and the honest peer (this process, by hand) is
 * answered when its connect comes, its segment taken. A real module, its
 * core played by the test (shm_fake_core).
 */
#define _GNU_SOURCE /* memfd_create */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "shm.h"
#include "shm_fake_core.h"

#define TOKEN 0x8a00ull
#define FLOOD (SHM_MAX_PENDING + 8)

/* A connection to m's socket. */
static int dial(const struct shm_module *m)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1,
			 "rmca-shm-%016llx",
			 (unsigned long long)m->self.sock_id);
	socklen_t sl = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
				   (size_t)n);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sl))
		fail_msg("cannot dial the module: %s", strerror(errno));
	return fd;
}

/* A segment as an honest active side makes it: a sealed memfd. */
static int segment(void)
{
	int fd = memfd_create("test-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	struct shm_seg *s;

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, sizeof(*s)), 0);
	assert_int_equal(fcntl(fd, F_ADD_SEALS,
			       F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL),
			 0);
	s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(s != MAP_FAILED);
	s->magic = SHM_SEG_MAGIC;
	s->version = SHM_PROTO_VERSION;
	s->side[0].armed = 1;
	s->side[1].armed = 1;
	munmap(s, sizeof(*s));
	return fd;
}

/* A whole hello on fd carrying token, with seg (no key table). */
static void hello(int fd, uint64_t token, int seg)
{
	const struct shm_hello h = {.magic = SHM_HELLO_MAGIC,
				    .version = SHM_PROTO_VERSION,
				    .token = token};
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} cm;
	struct iovec iov = {.iov_base = (void *)&h, .iov_len = sizeof(h)};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = cm.b,
			     .msg_controllen = sizeof(cm.b)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	memset(cm.b, 0, sizeof(cm.b));
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &seg, sizeof(int));
	if (sendmsg(fd, &msg, MSG_NOSIGNAL) != (ssize_t)sizeof(h))
		fail_msg("hello not sent: %s", strerror(errno));
}

/* The module takes what waits on its socket, until nothing does. */
static void accept_everything(struct shm_module *m)
{
	struct shm_fake_fd *lis = NULL;

	for (int i = 0; i < SHM_FAKE_MAX_FDS; i++)
		if (shm_fake_fds[i].cb && shm_fake_fds[i].fd == m->lfd)
			lis = &shm_fake_fds[i];
	assert_non_null(lis);
	/* SHM_MAX_PENDING a call at most */
	for (int i = 0; i <= FLOOD / SHM_MAX_PENDING + 1; i++)
		lis->cb(lis->arg, EPOLLIN);
}

/*
 * The flooder: a process of its own, forked before the honest peer's
 * socket is accepted (a copy of that would keep it open), that dials
 * FLOOD sockets with whole hellos once told to, and holds them open until
 * the test is done with them.
 */
struct flooder {
	pid_t pid;
	int go, ready, done;
};

static struct flooder flooder_fork(const struct shm_module *m, int seg)
{
	int go[2], ready[2], done[2];
	struct flooder f;
	char b = 0;

	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(done), 0);
	f.pid = fork();
	assert_true(f.pid >= 0);
	if (!f.pid) {
		/* only its ends: the test's end gone, its reads end */
		close(go[1]);
		close(ready[0]);
		close(done[1]);
		if (read(go[0], &b, 1) != 1)
			_exit(1);
		for (int i = 0; i < FLOOD; i++)
			hello(dial(m), TOKEN + 1 + (uint64_t)i, seg);
		if (write(ready[1], &b, 1) != 1 || read(done[0], &b, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(go[0]);
	close(ready[1]);
	close(done[0]);
	f.go = go[1];
	f.ready = ready[0];
	f.done = done[1];
	return f;
}

/* The flooder dials; back once all its hellos are sent. */
static void flooder_go(const struct flooder *f)
{
	char b = 0;

	assert_int_equal(write(f->go, &b, 1), 1);
	assert_int_equal(read(f->ready, &b, 1), 1);
}

static void flooder_end(const struct flooder *f)
{
	int st;

	close(f->go);
	close(f->ready);
	close(f->done);
	assert_int_equal(waitpid(f->pid, &st, 0), f->pid);
	assert_true(WIFEXITED(st) && !WEXITSTATUS(st));
}

static void test_flood_of_hellos_spares_a_waiting_peer(void **state)
{
	struct shm_module *m = shm_fake_module();
	struct rmca_conn_args a = {.active = 0,
				   .peer_addr = &m->self,
				   .peer_addr_len = sizeof(m->self),
				   .token = 0x5eed,
				   .timeout_ms = -1};
	struct rmca_connecting *serve, *h;
	struct rmca_conn *c = NULL;
	struct shm_hello ack;
	struct pollfd pfd;
	int seg = segment(), honest;
	struct flooder f;

	(void)state;
	/* a connect for another token: the module's socket is served */
	assert_int_equal(rmca_shm_connect_start(&m->base, &a, &serve), 0);
	f = flooder_fork(m, seg);
	honest = dial(m);
	hello(honest, TOKEN, seg);
	accept_everything(m);
	assert_int_equal(m->npending, 1);
	flooder_go(&f);
	accept_everything(m);
	assert_int_equal(m->npending, SHM_MAX_PENDING);
	pfd = (struct pollfd){.fd = honest, .events = POLLIN};
	if (poll(&pfd, 1, 0))
		fail_msg("the honest peer's socket was closed for the "
			 "flooder's");
	/* its connect comes: answered, its segment taken */
	a.token = TOKEN;
	assert_int_equal(rmca_shm_connect_start(&m->base, &a, &h), 0);
	assert_int_equal(rmca_shm_connect_poll(h, &c), 0);
	assert_non_null(c);
	assert_int_equal(recv(honest, &ack, sizeof(ack), 0),
			 (ssize_t)sizeof(ack));
	assert_int_equal(ack.magic, SHM_ACK_MAGIC);
	assert_int_equal(ack.token, TOKEN);
	assert_int_equal(ack.status, 0);
	flooder_end(&f);
	rmca_shm_disconnect(c);
	rmca_shm_connect_abort(serve);
	close(honest);
	close(seg);
	rmca_shm_module_destroy(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flood_of_hellos_spares_a_waiting_peer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
