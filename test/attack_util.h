/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A peer that speaks the wire by hand, for the attack tests: the bootstrap
 * hello (framework/wire.h) and the tcp data port's frames
 * (components/tcp/frame.h), over plain blocking sockets. Failures end the
 * child process like the API_CHECK macros do.
 */
#ifndef RMCA_ATTACK_UTIL_H
#define RMCA_ATTACK_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <netinet/in.h>

#include "wire.h"

struct api_peer;
struct api_test;
struct tcp_frame;

/* A blocking TCP connection to host:port; dies when refused. */
int atk_connect(const char *host, int port);
/* Write all of buf; dies on error. */
void atk_write(int fd, const void *buf, size_t len);
/* Read exactly len bytes within API_TIMEOUT_MS: 0, or -1 on EOF/error. */
int atk_read(int fd, void *buf, size_t len);

/* An active hello offering one tcp module (fake data port 9), with the
 * given token, role and atomic mode; returns the encoded length. */
int atk_hello_encode(uint64_t token, uint8_t role, uint8_t atomic_mode,
		     uint8_t *buf, size_t cap);
/* Send that hello (length-prefixed) and decode the answer into *answer:
 * 0, or -1 when the listener closed without one. */
int atk_hello(int fd, uint64_t token, uint8_t role, uint8_t atomic_mode,
	      struct rmca_hello *answer);
/* The same for any hello h. */
int atk_hello_send(int fd, const struct rmca_hello *h,
		   struct rmca_hello *answer);
/* A module of a verbs component (ib, iwarp) as a hello lists it: device
 * dev at the dotted IPv4 address ip (its address blob by hand, port 9). */
struct rmca_wire_mod atk_verbs_mod(const char *component, const char *dev,
				   const char *ip);
/* The IPv4 address and port in such a blob (a listener's answer names its
 * own module so), into *sin; dies when m's blob is not one. */
void atk_verbs_addr(const struct rmca_wire_mod *m, struct sockaddr_in *sin);
/* The tcp data port named in a passive hello's chosen module. */
int atk_data_port(const struct rmca_hello *answer);

/* Send the header of tcp frame f. */
void atk_frame_write(int fd, const struct tcp_frame *f);

/* Send a tcp HELLO frame carrying token; read the HELLO_ACK for token
 * (dies on anything else). */
void atk_frame_hello(int fd, uint64_t token);
void atk_frame_ack(int fd, uint64_t token);
/* Send a tcp ACK frame carrying these counts (wire version 2). */
void atk_frame_counts(int fd, uint32_t acked, uint32_t credits);

/* 1 when the other side closed fd (EOF or reset) within ms, else 0; data
 * that arrives meanwhile is discarded. */
int atk_closed(int fd, int ms);

/* The token a real client sends once it was served (api_token). */
#define ATK_DONE 0xd0e

/* The real client, after an attack: connects to port (over transport,
 * unless NULL), says hello, hears world, then sends ATK_DONE. */
void atk_real_client(struct api_peer *p, int port, const char *transport);

/* What atk_serve_real lets pass before the real client is served. */
enum {
	ATK_PASS_REFUSED = 1 << 0, /* accepts ended RMCA_ERR_PROTOCOL */
	ATK_PASS_BROKEN = 1 << 1,  /* accepts ended RMCA_ERR_CONNECTION */
	/* endpoints that end without a word (an attacker's, made by hand):
	 * each is closed */
	ATK_PASS_MUTE = 1 << 2,
	ATK_PASS_ANY = ATK_PASS_REFUSED | ATK_PASS_BROKEN | ATK_PASS_MUTE,
};

/* The server's side of atk_real_client: accepts on p->l until an
 * endpoint says hello, answers it, waits for ATK_DONE and closes it.
 * Anything else that comes first and pass does not name fails, as does
 * no real client within API_RUN_TIMEOUT_MS. */
void atk_serve_real(struct api_peer *p, unsigned int pass);

/* api_run(t) with RMCA_connect_timeout at ms (how long a listener waits
 * for a handshake to end) for both sides, unset after. */
void atk_run_connect_timeout(const struct api_test *t, const char *ms);
/* The same with the server's log, as api_run_log returns it. */
char *atk_run_log_connect_timeout(const struct api_test *t, const char *ms);
/* The same with RMCA_handshake_max at slots and a listener that waits
 * long (600 s), for the tests of what gives way at the bound. */
char *atk_run_log_slots(const struct api_test *t, int slots);

/* Whether some line of log says both a and b. */
bool atk_log_says(const char *log, const char *a, const char *b);

/* Stop and resume a process; stop returns once it is stopped, so that
 * whatever is sent meanwhile is seen by it in one go. */
void atk_stop(pid_t pid);
void atk_cont(pid_t pid);

#endif
