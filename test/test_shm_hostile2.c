/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A listener whose shm module is under attack from a local peer that
 * speaks the bootstrap hello and the shm socket by hand. The rule is the
 * tcp data port's (test_api_attack.c): what one peer does or fails to do
 * ends its own handshake, and a real client is served meanwhile, within
 * its own timeout, while the listener waits RMCA_connect_timeout (a
 * minute here) for the attacker.
 * - a hello that picks shm, whose shm socket never comes;
 * - sockets on the shm module's socket that say nothing, or one byte of
 *   their hello, or a whole hello with a token nobody awaits;
 * - a peer of another user whose address says it is the listener's user
 *   (root, which may attach to it): the kernel says otherwise, and the
 *   listener's key table (every published key, handed out to whom ever)
 *   does not go to it;
 * - on the connecting side, a listener whose answer picks shm and whose
 *   shm socket never answers the hello: the context goes on meanwhile
 *   (a message from another peer arrives inside that rmca_connect), and
 *   the connect ends when that listener goes; the same when its shm
 *   socket's backlog is full and stays full.
 */
#define _GNU_SOURCE /* memfd_create */
#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "api_util.h"
#include "attack_util.h"
#include "shm.h"
#include "wire_util.h"

#define ATOMIC_CPU 2 /* RMCA_atomic_mode=cpu, set for both sides below */
#define REGION	   65536
#define SILENT	   24 /* sockets that stall on the shm socket */

/* Accepts until a real client (an endpoint that says hello) was served. */
static void serve(struct api_peer *p)
{
	api_server_listen(p, api_host());
	api_put_u64(p, 0, (uint64_t)rmca_listener_port(p->l));
	atk_serve_real(p, ATK_PASS_ANY);
}

/* The listener's shm module, as its answer to a probe lists it. */
static struct rmca_wire_mod listener_shm(int port, struct rmca_hello *answer)
{
	int fd = atk_connect(api_host(), port);

	API_CHECK(!atk_hello(fd, 0x5e0be, RMCA_ROLE_PROBE, ATOMIC_CPU, answer));
	close(fd);
	for (int i = 0; i < answer->nmods; i++)
		if (!strcmp(answer->mods[i].component, "shm"))
			return answer->mods[i];
	api_die(__FILE__, __LINE__, "the listener offers no shm module");
}

static struct shm_addr_blob blob_of(const struct rmca_wire_mod *m)
{
	struct shm_addr_blob b;

	API_CHECK(m->addr_len == sizeof(b));
	memcpy(&b, m->addr, sizeof(b));
	return b;
}

/* A unix socket connected to the shm module's socket of blob b. */
static int shm_dial(const struct shm_addr_blob *b)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int n;

	API_CHECK(fd >= 0);
	n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1,
		     "rmca-shm-%016llx", (unsigned long long)b->sock_id);
	API_CHECK_MSG(
		!connect(fd, (struct sockaddr *)&sa,
			 (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
				     1 + (size_t)n)),
		"cannot reach the listener's shm socket");
	return fd;
}

/*
 * A hello that offers shm as this process (the listener's host, its
 * namespaces, our pid): the listener picks shm, answers, and waits for
 * our shm socket, which never comes.
 */
static void half_open_client(struct api_peer *p)
{
	int port = api_client_read_port(p);
	static struct rmca_hello probe, h, answer;
	struct rmca_wire_mod shm = listener_shm(port, &probe);
	struct shm_addr_blob b = blob_of(&shm);
	int fds[3];

	b.pid = (uint32_t)getpid();
	b.sock_id ^= 0x5a5a5a5a;
	wu_mod_addr(&shm, &b, sizeof(b));
	for (int i = 0; i < 3; i++) {
		wu_hello(&h, 0x4a1f5000 + (uint64_t)i, RMCA_ROLE_ACTIVE,
			 ATOMIC_CPU, probe.boot_id);
		h.netns = probe.netns;
		h.nmods = 1;
		h.mods[0] = shm;
		fds[i] = atk_connect(api_host(), port);
		API_CHECK(!atk_hello_send(fds[i], &h, &answer));
		API_CHECK_MSG(
			answer.kind == RMCA_WIRE_HELLO &&
				answer.choice_p < answer.nmods &&
				!strcmp(answer.mods[answer.choice_p].component,
					"shm"),
			"the listener did not pick shm");
	}
	atk_real_client(p, port, "shm");
	for (int i = 0; i < 3; i++)
		close(fds[i]);
}

static void test_half_open_shm_handshake_does_not_block(void **state)
{
	const struct api_test t = {
		.server = serve, .client = half_open_client, .manual = true};

	(void)state;
	atk_run_connect_timeout(&t, "60000");
}

/*
 * Sockets that stall on the shm socket before a real client dials it:
 * silent ones, one that sent a byte of its hello, one with a whole hello
 * (but no segment) and one with a token nobody awaits.
 */
static void silent_client(struct api_peer *p)
{
	int port = api_client_read_port(p);
	static struct rmca_hello probe;
	struct rmca_wire_mod shm = listener_shm(port, &probe);
	struct shm_addr_blob b = blob_of(&shm);
	struct shm_hello sh = {.magic = SHM_HELLO_MAGIC,
			       .version = SHM_PROTO_VERSION,
			       .token = 0x70c3};
	int fds[SILENT + 2];

	for (int i = 0; i < SILENT; i++)
		fds[i] = shm_dial(&b);
	fds[SILENT] = shm_dial(&b);
	atk_write(fds[SILENT], &sh, 1);
	fds[SILENT + 1] = shm_dial(&b);
	atk_write(fds[SILENT + 1], &sh, sizeof(sh));
	atk_real_client(p, port, "shm");
	for (int i = 0; i < SILENT + 2; i++)
		close(fds[i]);
}

static void test_silent_shm_sockets_do_not_block(void **state)
{
	const struct api_test t = {
		.server = serve, .client = silent_client, .manual = true};

	(void)state;
	atk_run_connect_timeout(&t, "60000");
}

/* The listener, with a region published to its peers, until the liar is
 * done. */
static void publishing_server(struct api_peer *p)
{
	char *buf = api_alloc(REGION);
	rmca_mr_t *mr;

	api_server_listen(p, api_host());
	API_CHECK_OK(rmca_mr_reg(
		p->ctx, buf, REGION,
		RMCA_ACCESS_REMOTE_READ | RMCA_ACCESS_REMOTE_WRITE, &mr));
	api_put_u64(p, 0, (uint64_t)rmca_listener_port(p->l));
	api_expect_token(p, 0, ATK_DONE);
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(buf);
}

/* A connection's segment, as the active side makes it: a sealed memfd. */
static int segment(void)
{
	int fd = memfd_create("atk-seg", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	struct shm_seg *s;

	API_CHECK(fd >= 0 && !ftruncate(fd, sizeof(*s)));
	API_CHECK(!fcntl(fd, F_ADD_SEALS,
			 F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL));
	s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	API_CHECK(s != MAP_FAILED);
	s->magic = SHM_SEG_MAGIC;
	s->version = SHM_PROTO_VERSION;
	s->side[0].armed = s->side[1].armed = 1;
	munmap(s, sizeof(*s));
	return fd;
}

/* Read the answer to a shm hello; *nfds: how many descriptors came. */
static void shm_answer(int fd, struct shm_hello *h, int *nfds)
{
	size_t got = 0;

	*nfds = 0;
	while (got < sizeof(*h)) {
		union {
			struct cmsghdr h;
			char b[CMSG_SPACE(4 * sizeof(int))];
		} cm;
		struct iovec iov = {.iov_base = (char *)h + got,
				    .iov_len = sizeof(*h) - got};
		struct msghdr msg = {.msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = cm.b,
				     .msg_controllen = sizeof(cm.b)};
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		ssize_t n;

		API_CHECK_MSG(poll(&pfd, 1, API_TIMEOUT_MS) == 1,
			      "no answer to the shm hello");
		n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
		API_CHECK_MSG(n > 0, "the shm socket closed before answering");
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c;
		     c = CMSG_NXTHDR(&msg, c))
			if (c->cmsg_level == SOL_SOCKET &&
			    c->cmsg_type == SCM_RIGHTS)
				*nfds += (int)((c->cmsg_len - CMSG_LEN(0)) /
					       sizeof(int));
		got += (size_t)n;
	}
}

static void other_user_client(struct api_peer *p)
{
	static volatile uint64_t word = 0x9e3779b97f4a7c15ull;
	int port = api_client_read_port(p);
	static struct rmca_hello probe, h, answer;
	struct rmca_wire_mod shm = listener_shm(port, &probe);
	struct shm_addr_blob lb = blob_of(&shm), b = lb;
	struct shm_hello sh = {.magic = SHM_HELLO_MAGIC,
			       .version = SHM_PROTO_VERSION,
			       .token = 0x07e40001,
			       .flags = SHM_HF_CMA}; /* it may attach to us */
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} cm;
	struct iovec iov = {.iov_base = &sh, .iov_len = sizeof(sh)};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = cm.b,
			     .msg_controllen = sizeof(cm.b)};
	struct cmsghdr *c;
	int bfd, s, seg, nfds;

	if (geteuid() != 0 || lb.uid != 0)
		api_skip(p, "needs root, to become another user");
	/* nobody, and attachable by root as a process of nobody is */
	API_CHECK(!setgid(65534) && !setuid(65534));
	API_CHECK(!prctl(PR_SET_DUMPABLE, 1));
	b.pid = (uint32_t)getpid();
	b.dumpable = 1;
	b.sock_id ^= 0x5a5a5a5a;
	b.probe_addr = (uint64_t)(uintptr_t)&word;
	b.probe_val = word;
	/* b.uid and b.gid stay the listener's: the lie */
	wu_mod_addr(&shm, &b, sizeof(b));
	wu_hello(&h, sh.token, RMCA_ROLE_ACTIVE, ATOMIC_CPU, probe.boot_id);
	h.netns = probe.netns;
	h.nmods = 1;
	h.mods[0] = shm;
	bfd = atk_connect(api_host(), port);
	API_CHECK(!atk_hello_send(bfd, &h, &answer));
	API_CHECK_MSG(
		answer.kind == RMCA_WIRE_HELLO &&
			answer.choice_p < answer.nmods &&
			!strcmp(answer.mods[answer.choice_p].component, "shm"),
		"the listener did not pick shm");
	seg = segment();
	s = shm_dial(&lb);
	memset(cm.b, 0, sizeof(cm.b));
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &seg, sizeof(int));
	API_CHECK(sendmsg(s, &msg, MSG_NOSIGNAL) == (ssize_t)sizeof(sh));
	close(seg);
	memset(&sh, 0, sizeof(sh));
	shm_answer(s, &sh, &nfds);
	API_CHECK_MSG(sh.magic == SHM_ACK_MAGIC && sh.token == 0x07e40001,
		      "not an answer to the hello");
	API_CHECK_MSG(!(sh.flags & SHM_HF_KEYS) && !nfds,
		      "a peer of uid 65534 that said it is uid 0 got the "
		      "listener's key table (flags 0x%x, %d descriptors)",
		      sh.flags, nfds);
	close(s);
	close(bfd);
	api_token(p, 0, ATK_DONE);
}

static void test_peer_of_another_user_gets_no_key_table(void **state)
{
	const struct api_test t = {.server = publishing_server,
				   .client = other_user_client,
				   .manual = true};

	(void)state;
	api_run(&t);
}

/* ---- a listener that never answers on its shm socket ---- */

#define TOKEN_GO 0x60

/* A listening socket, TCP on the test host or abstract unix. */
static int tcp_listener(int *port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	API_CHECK(fd >= 0);
	API_CHECK(inet_pton(AF_INET, api_host(), &sa.sin_addr) == 1);
	API_CHECK(!bind(fd, (struct sockaddr *)&sa, sizeof(sa)) &&
		  !listen(fd, 4));
	API_CHECK(!getsockname(fd, (struct sockaddr *)&sa, &sl));
	*port = ntohs(sa.sin_port);
	return fd;
}

static int unix_listener(uint64_t id, int backlog)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1,
			 "rmca-shm-%016llx", (unsigned long long)id);

	API_CHECK(fd >= 0);
	API_CHECK(!bind(fd, (struct sockaddr *)&sa,
			(socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
				    (size_t)n)) &&
		  !listen(fd, backlog));
	return fd;
}

static int accept_in_time(int lfd)
{
	struct pollfd pfd = {.fd = lfd, .events = POLLIN};
	int fd;

	API_CHECK_MSG(poll(&pfd, 1, API_TIMEOUT_MS) == 1, "nobody connected");
	fd = accept(lfd, NULL, NULL);
	API_CHECK(fd >= 0);
	return fd;
}

/*
 * The connecting side's bootstrap hello, answered as a listener would
 * that picks shm, at a socket of this process; then its shm hello is read
 * and left unanswered, or (full) it is never accepted.
 */
static int silent_listener(int lfd, int ufd, uint64_t id, bool full)
{
	static uint64_t word = 0x5eed5eed5eedull;
	static uint8_t buf[4 + RMCA_HELLO_MAX];
	static struct rmca_hello in, out;
	struct shm_addr_blob b;
	char why[256];
	int fd = accept_in_time(lfd), s, ai = -1, n;
	uint32_t len;

	API_CHECK(!atk_read(fd, buf, 4));
	len = buf[0] | buf[1] << 8 | buf[2] << 16 | (uint32_t)buf[3] << 24;
	API_CHECK(len <= RMCA_HELLO_MAX && !atk_read(fd, buf, len));
	API_CHECK_MSG(!rmca_hello_decode(buf, len, &in, why, sizeof(why)), "%s",
		      why);
	for (int i = 0; i < in.nmods; i++)
		if (!strcmp(in.mods[i].component, "shm"))
			ai = i;
	API_CHECK_MSG(ai >= 0, "the connecting side offers no shm");
	b = blob_of(&in.mods[ai]);
	b.pid = (uint32_t)getpid();
	b.sock_id = id;
	b.probe_addr = (uint64_t)(uintptr_t)&word;
	b.probe_val = word;
	wu_hello(&out, in.token, RMCA_ROLE_PASSIVE, in.atomic_mode, in.boot_id);
	out.netns = in.netns;
	out.nmods = 1;
	out.mods[0] = in.mods[ai];
	wu_mod_addr(&out.mods[0], &b, sizeof(b));
	out.choice_a = (uint8_t)ai;
	out.choice_p = 0;
	n = rmca_hello_encode(&out, buf + 4, RMCA_HELLO_MAX);
	API_CHECK(n > 0);
	buf[0] = (uint8_t)n;
	buf[1] = (uint8_t)(n >> 8);
	buf[2] = (uint8_t)(n >> 16);
	buf[3] = (uint8_t)(n >> 24);
	atk_write(fd, buf, 4 + (size_t)n);
	if (full) {
		/* Nothing tells when its connect meets the full backlog:
		 * give it the time to get there, so that the message below
		 * comes while it is inside (on a fixed side it makes no
		 * difference when). */
		api_sleep_ms(300);
		close(fd);
		return -1;
	}
	/* Its shm hello comes (and the descriptors with it go). */
	s = accept_in_time(ufd);
	API_CHECK(!atk_read(s, buf, sizeof(struct shm_hello)));
	close(fd);
	return s;
}

static void silent_then_ping(struct api_peer *p)
{
	static char msg[8] = "ping";
	bool full = *(bool *)p->arg;
	rmca_mr_t *mr;
	uint64_t id = 0x517e0000ull ^ (uint64_t)getpid();
	int lfd, ufd, hport, s, filler = -1;

	api_server_listen(p, api_host());
	api_put_u64(p, 0, (uint64_t)rmca_listener_port(p->l));
	API_CHECK_OK(rmca_accept(p->l, API_TIMEOUT_MS, &p->ep));
	API_CHECK_OK(
		rmca_mr_reg(p->ctx, msg, sizeof(msg), RMCA_ACCESS_LOCAL, &mr));
	lfd = tcp_listener(&hport);
	/* A backlog of 0 holds one connection: ours, never accepted. */
	ufd = unix_listener(id, full ? 0 : 4);
	if (full) {
		struct shm_addr_blob b = {.sock_id = id};

		filler = shm_dial(&b);
	}
	api_put_u64(p, 0, (uint64_t)hport);
	api_expect_token(p, 0, TOKEN_GO);
	s = silent_listener(lfd, ufd, id, full);
	/* The client is inside rmca_connect, waiting for our answer: its
	 * context must take this message all the same. */
	API_CHECK_OK(rmca_send(p->ep, msg, sizeof(msg), mr, API_CTX(1)));
	api_wait_status(p, API_CTX(1), RMCA_OK);
	if (s >= 0)
		close(s);
	if (filler >= 0)
		close(filler);
	close(ufd);
	close(lfd);
	api_expect_token(p, 0, ATK_DONE);
	API_CHECK_OK(rmca_mr_dereg(mr));
}

static void connects_to_silence(struct api_peer *p)
{
	static char buf[8];
	struct rmca_completion c;
	rmca_ep_t *ep = NULL;
	rmca_mr_t *mr;
	char hp[128];
	int hport, rc;

	API_CHECK_OK(rmca_init(&p->ctx));
	api_host_port(hp, sizeof(hp), api_host(), api_client_read_port(p));
	API_CHECK_OK(rmca_connect(p->ctx, hp, API_TIMEOUT_MS, &p->ep));
	API_CHECK_OK(
		rmca_mr_reg(p->ctx, buf, sizeof(buf), RMCA_ACCESS_LOCAL, &mr));
	API_CHECK_OK(rmca_recv(p->ep, buf, sizeof(buf), mr, API_CTX(2)));
	hport = (int)api_get_u64(p, 0);
	api_token(p, 0, TOKEN_GO);
	api_host_port(hp, sizeof(hp), api_host(), hport);
	/* Longer than the whole test may take: only the listener's going
	 * ends it. */
	rc = rmca_connect(p->ctx, hp, 60000, &ep);
	API_CHECK_MSG(rc == RMCA_ERR_CONNECTION || rc == RMCA_ERR_PROTOCOL,
		      "rmca_connect to a listener that never answered: %d "
		      "(%s)",
		      rc, api_strerror(rc));
	api_wait(p, API_CTX(2), &c);
	API_CHECK_MSG(!c.status && !strcmp(buf, "ping"),
		      "the message: %s, \"%s\"", api_strerror(c.status), buf);
	api_token(p, 0, ATK_DONE);
	API_CHECK_OK(rmca_mr_dereg(mr));
}

static void test_connect_to_a_silent_shm_socket_keeps_progress(void **state)
{
	bool full = false;
	const struct api_test t = {.server = silent_then_ping,
				   .client = connects_to_silence,
				   .manual = true,
				   .arg = &full};

	(void)state;
	api_run(&t);
}

static void test_connect_to_a_full_shm_backlog_keeps_progress(void **state)
{
	bool full = true;
	const struct api_test t = {.server = silent_then_ping,
				   .client = connects_to_silence,
				   .manual = true,
				   .arg = &full};

	(void)state;
	api_run(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_half_open_shm_handshake_does_not_block),
		cmocka_unit_test(test_silent_shm_sockets_do_not_block),
		cmocka_unit_test(test_peer_of_another_user_gets_no_key_table),
		cmocka_unit_test(
			test_connect_to_a_silent_shm_socket_keeps_progress),
		cmocka_unit_test(
			test_connect_to_a_full_shm_backlog_keeps_progress),
	};

	setenv("RMCA_transports", "shm,tcp", 1);
	setenv("RMCA_atomic_mode", "cpu", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
