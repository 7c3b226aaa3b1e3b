#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# The tcp component's bounds are parameters that rmca_info shows, with
# their least values enforced. Speaks TAP.

set -u

top=${RMCATEST_TOP_BUILDDIR:-..}
info=$top/tools/rmca_info
out=$(mktemp "${TMPDIR:-/tmp}/rmca-tcp-params.XXXXXX") || exit 99
trap 'rm -f "$out"' EXIT INT TERM
n=0
failed=0
echo "1..3"

# check NAME EXPECTED-LINE [VAR=VALUE]: rmca_info --param tcp --parsable
# run with the assignment in its environment prints EXPECTED-LINE.
check() {
	name=$1
	want=$2
	shift 2
	n=$((n + 1))
	env "$@" "$info" --param tcp --parsable >"$out" 2>&1
	if grep -qxF "$want" "$out"; then
		echo "ok $n - $name"
	else
		failed=$((failed + 1))
		echo "not ok $n - $name"
		grep pending "$out" | sed 's/^/# /'
	fi
}

p=param:tcp_max_pending_responses
check "the bound on queued answers is shown" "$p:value:16384" X=1
check "it can be raised" "$p:value:100000" \
	RMCA_tcp_max_pending_responses=100000
check "not below what a peer may have outstanding" "$p:value:16384" \
	RMCA_tcp_max_pending_responses=100
[ $failed = 0 ]
