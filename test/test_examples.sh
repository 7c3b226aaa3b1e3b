#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# The programs of examples/ against each other over tcp (issue 13, item 2):
# the service, a request/response client with receives posted ahead, a
# one-sided put/flush/get/atomic client and a use-once key client; then the
# same with tcp's capabilities masked, so the core's fallback paths (flush,
# emulated atomics, revoke message) carry them. Speaks TAP.

set -u
. "${RMCATEST_SRCDIR:-.}/tools_lib.sh"

ex=$top/examples
RMCA_transports=tcp
export RMCA_transports

echo "1..14"

round() { # LABEL: one service, five clients (two at once), all checked
	label=$1
	if ! serve "svc$label" "$ex/service" -c 5; then
		ok 1 "$label: the service starts and prints its port"
		for i in 1 2 3 4 5 6; do ok 1 "$label: (no service)"; done
		return
	fi
	ok 0 "$label: the service starts and prints its port"
	svc=$pid
	cfail=0 # a client that failed may leave the service waiting for it

	"$ex/rpc_client" "127.0.0.1:$port" 3000 >"$tmp/out" 2>"$tmp/err"
	rc=$?
	cfail=$((cfail + rc))
	[ "$rc" -eq 0 ] && has '^3000 requests answered and checked'
	ok $? "$label: rpc_client: 3000 requests, 16 in flight, every reply checked"

	"$ex/rma_client" "127.0.0.1:$port" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	cfail=$((cfail + rc))
	[ "$rc" -eq 0 ] && has '^put 8 x 4096 bytes, flushed, read back: equal$' &&
		has '^fetch-and-add: [0-9]* -> [0-9]*; compare-and-swap'
	ok $? "$label: rma_client: puts, flush, get and atomics checked"

	"$ex/use_once_client" "127.0.0.1:$port" 6 >"$tmp/out" 2>"$tmp/err"
	rc=$?
	cfail=$((cfail + rc))
	[ "$rc" -eq 0 ] && [ "$(grep -c 'revoked by the reply$' "$tmp/out")" -eq 6 ]
	ok $? "$label: use_once_client: 6 transactions, each key revoked by its reply"

	# two clients at once: one poll loop serves both
	"$ex/rpc_client" "127.0.0.1:$port" 2000 >"$tmp/a.out" 2>"$tmp/a.err" &
	a=$!
	"$ex/rpc_client" "127.0.0.1:$port" 2000 >"$tmp/out" 2>"$tmp/err"
	rc=$?
	wait "$a"
	arc=$?
	cfail=$((cfail + rc + arc))
	[ "$rc" -eq 0 ] && [ "$arc" -eq 0 ] && has '^2000 requests' &&
		grep -q '^2000 requests' "$tmp/a.out"
	ok $? "$label: two rpc_clients at once"

	pid=$svc
	reap "$cfail"
	rc=$src
	cp "$tmp/svc$label.out" "$tmp/out"
	cp "$tmp/svc$label.err" "$tmp/err"
	[ "$rc" -eq 0 ] && has '^served 5 clients$' &&
		[ "$(grep -c ': disconnected$' "$tmp/out")" -eq 5 ] &&
		! has 'failed' && [ ! -s "$tmp/err" ]
	ok $? "$label: the service saw 5 clients come and go, no failure"

	[ "$label" = masked ] || return 0
	"$ex/rma_client" "127.0.0.1:$port" >"$tmp/out" 2>"$tmp/err"
	[ $? -eq 1 ] && err_has "^rma_client: connecting, peer 127.0.0.1:$port: "
	ok $? "$label: a client of a service gone says what it did and to whom"
}

round plain
RMCA_tcp_caps=^send_inv,^remote_completion,^atomic,^masked_atomic
export RMCA_tcp_caps
round masked

"$ex/rpc_client" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] && err_has 'usage'
ok $? "rpc_client without an address prints its usage"

finish
