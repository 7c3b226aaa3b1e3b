// SPDX-License-Identifier: BSD-3-Clause
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "api_util.h"
#include "attack_util.h"
#include "frame.h"
#include "wire_util.h"

int atk_connect(const char *host, int port)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV};
	struct addrinfo *ai;
	char ps[16];
	int fd;

	snprintf(ps, sizeof(ps), "%d", port);
	API_CHECK(getaddrinfo(host, ps, &hints, &ai) == 0);
	fd = socket(ai->ai_family, SOCK_STREAM, 0);
	API_CHECK(fd >= 0);
	API_CHECK_MSG(connect(fd, ai->ai_addr, ai->ai_addrlen) == 0,
		      "raw connect to port %d failed", port);
	freeaddrinfo(ai);
	return fd;
}

void atk_write(int fd, const void *buf, size_t len)
{
	API_CHECK(send(fd, buf, len, MSG_NOSIGNAL) == (ssize_t)len);
}

int atk_read(int fd, void *buf, size_t len)
{
	long end = api_now_ms() + API_TIMEOUT_MS;
	char *p = buf;

	while (len) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&pfd, 1, (int)(end - api_now_ms())) <= 0)
			return -1;
		n = recv(fd, p, len, 0);
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* An active hello offering one tcp module, fake data port 9. */
static const struct rmca_hello *tcp_hello(uint64_t token, uint8_t role,
					  uint8_t atomic_mode)
{
	static struct rmca_hello h;
	/* a tcp addr() blob of this version, port 9 */
	static const uint8_t blob[8] = {'R', 'T', 'C', 'P', TCP_PROTO_VERSION,
					0,   9,	  0};

	wu_hello(&h, token, role, atomic_mode, "attacker");
	h.nmods = 1;
	h.mods[0] = wu_mod("tcp", "lo", 0x3f, 10);
	wu_mod_addr(&h.mods[0], blob, sizeof(blob));
	return &h;
}

int atk_hello_encode(uint64_t token, uint8_t role, uint8_t atomic_mode,
		     uint8_t *buf, size_t cap)
{
	int n = rmca_hello_encode(tcp_hello(token, role, atomic_mode), buf,
				  cap);

	API_CHECK(n > 0);
	return n;
}

int atk_hello(int fd, uint64_t token, uint8_t role, uint8_t atomic_mode,
	      struct rmca_hello *answer)
{
	return atk_hello_send(fd, tcp_hello(token, role, atomic_mode), answer);
}

int atk_hello_send(int fd, const struct rmca_hello *h,
		   struct rmca_hello *answer)
{
	static uint8_t buf[4 + RMCA_HELLO_MAX];
	char why[256];
	int len = rmca_hello_encode(h, buf + 4, RMCA_HELLO_MAX);
	uint32_t n;

	API_CHECK(len > 0);
	n = (uint32_t)len;
	buf[0] = (uint8_t)n;
	buf[1] = (uint8_t)(n >> 8);
	buf[2] = (uint8_t)(n >> 16);
	buf[3] = (uint8_t)(n >> 24);
	atk_write(fd, buf, 4 + n);
	if (atk_read(fd, buf, 4))
		return -1;
	n = buf[0] | buf[1] << 8 | buf[2] << 16 | (uint32_t)buf[3] << 24;
	API_CHECK_MSG(n <= RMCA_HELLO_MAX, "answer of %u bytes", n);
	if (atk_read(fd, buf, n))
		return -1;
	API_CHECK_MSG(!rmca_hello_decode(buf, n, answer, why, sizeof(why)),
		      "listener's answer does not decode: %s", why);
	return 0;
}

/* The verbs module's address blob (components/verbs/verbs.h), by hand. */
struct atk_vaddr {
	uint8_t version;
	uint8_t family;
	uint16_t port; /* network order */
	uint8_t ip[4];
	char device[24];
} __attribute__((packed));

struct rmca_wire_mod atk_verbs_mod(const char *component, const char *dev,
				   const char *ip)
{
	struct atk_vaddr a = {.version = 1, .family = 4, .port = htons(9)};
	struct rmca_wire_mod m = wu_mod(component, dev, 0x3f, 10);

	API_CHECK(inet_pton(AF_INET, ip, a.ip) == 1);
	snprintf(a.device, sizeof(a.device), "%s", dev);
	wu_mod_addr(&m, &a, sizeof(a));
	return m;
}

void atk_verbs_addr(const struct rmca_wire_mod *m, struct sockaddr_in *sin)
{
	struct atk_vaddr a;

	API_CHECK(m->addr_len == sizeof(a));
	memcpy(&a, m->addr, sizeof(a));
	*sin = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = a.port};
	memcpy(&sin->sin_addr, a.ip, 4);
}

int atk_data_port(const struct rmca_hello *a)
{
	const struct rmca_wire_mod *m;

	API_CHECK_MSG(a->kind == RMCA_WIRE_HELLO, "refused: %s", a->reason);
	API_CHECK(a->choice_p < a->nmods);
	m = &a->mods[a->choice_p];
	API_CHECK(!strcmp(m->component, "tcp") && m->addr_len >= 8);
	return m->addr[6] | m->addr[7] << 8;
}

void atk_frame_write(int fd, const struct tcp_frame *f)
{
	uint8_t buf[TCP_HDR_LEN];

	rmca_tcp_frame_encode(f, buf);
	atk_write(fd, buf, sizeof(buf));
}

void atk_frame_hello(int fd, uint64_t token)
{
	const struct tcp_frame f = {
		.type = TCP_F_HELLO, .id = token, .operand = TCP_HELLO_WORD};

	atk_frame_write(fd, &f);
}

void atk_frame_counts(int fd, uint32_t acked, uint32_t credits)
{
	const struct tcp_frame f = {
		.type = TCP_F_ACK, .acked = acked, .credits = credits};

	atk_frame_write(fd, &f);
}

void atk_frame_ack(int fd, uint64_t token)
{
	uint8_t buf[TCP_HDR_LEN];
	struct tcp_frame f;
	const char *why;

	API_CHECK_MSG(!atk_read(fd, buf, sizeof(buf)),
		      "no HELLO_ACK on the data connection");
	API_CHECK(!rmca_tcp_frame_decode(buf, sizeof(buf), &f, &why));
	API_CHECK(f.type == TCP_F_HELLO_ACK && f.id == token);
}

int atk_closed(int fd, int ms)
{
	long end = api_now_ms() + ms;
	char buf[256];

	for (;;) {
		long left = end - api_now_ms();
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			return 0;
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return 1;
	}
}

void atk_real_client(struct api_peer *p, int port, const char *transport)
{
	struct rmca_ep_attr attr;
	char hp[128];

	API_CHECK_OK(rmca_init(&p->ctx));
	api_host_port(hp, sizeof(hp), api_host(), port);
	API_CHECK_OK(rmca_connect(p->ctx, hp, API_TIMEOUT_MS, &p->ep));
	if (transport) {
		API_CHECK_OK(rmca_ep_query(p->ep, &attr));
		API_CHECK_MSG(!strcmp(attr.transport, transport),
			      "the real client went over %s, not %s",
			      attr.transport, transport);
	}
	api_hello_world(p, p->ep);
	api_token(p, 0, ATK_DONE);
}

/* Whether an rmca_accept that ended rc may be passed over. */
static bool accept_passes(int rc, unsigned int pass)
{
	switch (rc) {
	case RMCA_ERR_TIMEOUT:
		return true; /* the real client is not there yet */
	case RMCA_ERR_PROTOCOL:
		return pass & ATK_PASS_REFUSED;
	case RMCA_ERR_CONNECTION:
		return pass & ATK_PASS_BROKEN;
	default:
		return false;
	}
}

void atk_serve_real(struct api_peer *p, unsigned int pass)
{
	long end = api_now_ms() + API_RUN_TIMEOUT_MS;
	rmca_ep_t *ep;

	for (;;) {
		int rc;

		ep = NULL;
		rc = rmca_accept(p->l, 200, &ep);
		API_CHECK_MSG(rc == RMCA_OK || accept_passes(rc, pass),
			      "rmca_accept returned %d (%s)", rc,
			      api_strerror(rc));
		API_CHECK_MSG(api_now_ms() < end,
			      "the real client was never served");
		if (rc)
			continue;
		/* An attacker's endpoints never send; the real one does. */
		if (!api_hello_world_answer(p, ep))
			break;
		API_CHECK_MSG(pass & ATK_PASS_MUTE,
			      "an endpoint ended before the real client's");
		rmca_ep_close(ep);
	}
	api_expect_token(p, 0, ATK_DONE);
	rmca_ep_close(ep);
}

void atk_run_connect_timeout(const struct api_test *t, const char *ms)
{
	setenv("RMCA_connect_timeout", ms, 1);
	api_run(t);
	unsetenv("RMCA_connect_timeout");
}

char *atk_run_log_connect_timeout(const struct api_test *t, const char *ms)
{
	char *log;

	setenv("RMCA_connect_timeout", ms, 1);
	log = api_run_log(t);
	unsetenv("RMCA_connect_timeout");
	return log;
}

char *atk_run_log_slots(const struct api_test *t, int slots)
{
	char max[16];
	char *log;

	snprintf(max, sizeof(max), "%d", slots);
	setenv("RMCA_handshake_max", max, 1);
	log = atk_run_log_connect_timeout(t, "600000");
	unsetenv("RMCA_handshake_max");
	return log;
}

static char proc_state(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	API_CHECK(f != NULL);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	API_CHECK(p && p[1] == ' ');
	return p[2];
}

void atk_stop(pid_t pid)
{
	API_CHECK(kill(pid, SIGSTOP) == 0);
	while (proc_state(pid) != 'T')
		api_sleep_ms(1);
}

void atk_cont(pid_t pid)
{
	API_CHECK(kill(pid, SIGCONT) == 0);
}

/* Whether some line of log says both a and b. */
bool atk_log_says(const char *log, const char *a, const char *b)
{
	for (const char *l = log; *l;) {
		const char *end = strchr(l, '\n');
		size_t n = end ? (size_t)(end - l) : strlen(l);
		const char *x = strstr(l, a), *y = strstr(l, b);

		if (x && y && x < l + n && y < l + n)
			return true;
		l += n + (end != NULL);
	}
	return false;
}
