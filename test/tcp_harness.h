/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A tcp module driven in-process, with the test as its core and as a raw
 * peer that speaks the frames itself over a socketpair: the test decides
 * when the target runs, so races with the peer are replayed step by step.
 */
#ifndef RMCA_TCP_HARNESS_H
#define RMCA_TCP_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tcp.h"

#define TH_MAX_DONE 256

struct th_done {
	void *req;
	int status;
	size_t len;
	uint64_t revoked;
};

/* What the fake core saw: the first TH_MAX_DONE completions, and how many
 * there were. */
extern struct th_done th_done[TH_MAX_DONE];
extern int th_ndone;
extern int th_nfailed; /* conn_failed() calls */
/* The module's last log line. */
extern char th_last_log[512];
/* What the fake core's may_sleep answers (default true: the application
 * may sleep on the wait fd), and how many times it was asked. */
extern bool th_sleep_allowed;
extern long th_may_sleep_calls;
/* RMCA_tcp_max_pending_responses as the fake core answers it. */
extern long long th_max_pending;

/*
 * The module keeps its record of an op in the request it is handed
 * (component.h, req_size): the fake core gives every post one of its own,
 * and the test's cookie (any pointer, a tag) rides in it. Each post of a
 * test goes through the wrappers below, and a completion reports the tag
 * (th_done[].req).
 */
void *th_req(void *tag);
#define rmca_tcp_send(c, buf, len, mr, req)                                    \
	rmca_tcp_send(c, buf, len, mr, th_req(req))
#define rmca_tcp_send_inv(c, buf, len, mr, rkey, req)                          \
	rmca_tcp_send_inv(c, buf, len, mr, rkey, th_req(req))
#define rmca_tcp_recv(c, buf, len, mr, req)                                    \
	rmca_tcp_recv(c, buf, len, mr, th_req(req))
#define rmca_tcp_put(c, buf, len, mr, raddr, rkey, req)                        \
	rmca_tcp_put(c, buf, len, mr, raddr, rkey, th_req(req))
#define rmca_tcp_get(c, buf, len, mr, raddr, rkey, req)                        \
	rmca_tcp_get(c, buf, len, mr, raddr, rkey, th_req(req))
#define rmca_tcp_atomic(c, op, result, mr, req)                                \
	rmca_tcp_atomic(c, op, result, mr, th_req(req))
#define rmca_tcp_flush(c, req) rmca_tcp_flush(c, th_req(req))

struct tcp_module *th_module(void);
void th_module_free(struct tcp_module *m);

/* A connection of m; *peer is the raw peer's end (non-blocking). */
struct tcp_conn *th_conn(struct tcp_module *m, int *peer);

/* A module with one connection, whose other end is a raw peer. */
struct th_pair {
	struct tcp_module *m;
	struct tcp_conn *c;
	int peer;
};

struct th_pair th_pair_open(void);
/* The connection, the peer's end and the module, gone. */
void th_pair_close(struct th_pair *p);

/* Two modules connected to each other. */
void th_conn_pair(struct tcp_module *a, struct tcp_module *b,
		  struct tcp_conn **ca, struct tcp_conn **cb);

/* Run every connection callback that has an event now; true if any ran. */
bool th_pump(void);
/* Pump until nothing more happens (at most a large number of rounds). */
void th_pump_idle(void);

/* The peer writes all of buf, the target being pumped while it waits. */
void th_peer_write(int fd, const void *buf, size_t len);
/* As much as fits without waiting; returns the bytes written. */
size_t th_peer_write_some(int fd, const void *buf, size_t len);
void th_peer_frame(int fd, const struct tcp_frame *f);
/* Read n bytes, pumping the target; returns fewer only at end of stream. */
size_t th_peer_read(int fd, void *buf, size_t n);
/* Read one frame header: true, or false at end of stream. */
bool th_peer_read_frame(int fd, struct tcp_frame *f);
/* The target pumped until idle, what it sent the peer discarded: true if
 * it closed the connection (the peer's end reads end of stream). */
bool th_peer_closed(int fd);

#endif
