#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# The suite's one counting rule, checked: a skip says why, a failure
# anywhere in a case fails it, and every runner (make check through
# tap-run.sh, the capability matrix, check-vm's tap-count.awk) counts the
# same program the same way. Runs tap_sample, whose cases have known
# verdicts. Speaks TAP.

set -u

srcdir=${RMCATEST_SRCDIR:-$(dirname "$0")}
builddir=${RMCATEST_BUILDDIR:-.}
awk=${AM_TAP_AWK:-awk}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rmca-tap-rule.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM

n=0
failed=0
echo "1..13"

# check NAME COMMAND...: one TAP line for whether COMMAND succeeds.
check() {
	name=$1
	shift
	n=$((n + 1))
	if "$@"; then
		echo "ok $n - $name"
	else
		failed=$((failed + 1))
		echo "not ok $n - $name"
		sed 's/^/# /' "$tmp/out"
	fi
}

has() {
	grep -q -- "$1" "$tmp/out"
}

counts() {
	[ "$("$awk" -f "$srcdir/tap-count.awk" "$tmp/out")" = "$1" ]
}

CMOCKA_MESSAGE_OUTPUT=TAP "$srcdir/tap-run.sh" "$builddir/tap_sample" \
	>"$tmp/out" 2>"$tmp/err"
rc=$?

check "a failing program keeps its exit status through tap-run.sh" \
	[ $rc -ne 0 ]
check "a pass stays a pass" has '^ok 1 - case_pass$'
check "a skip with a reason becomes ok, a SKIP directive, and keeps the reason" \
	has '^ok 2 - case_skip_with_reason # SKIP nothing to run here (42)$'
check "a skip without a reason is a failure" \
	has '^not ok 3 - case_skip_without_reason'
check "a failure stays a failure" has '^not ok 4 - case_fail$'
check "api_run: a client's skip skips the case, with the client's reason" \
	has '^ok 5 - case_api_client_skips # SKIP client0: the client cannot'
check "api_run: a server's skip does not hide a client's failure" \
	has '^not ok 6 - case_api_server_skips_client_fails$'
check "api_run: a child that skips without a reason fails the case" \
	has '^not ok 7 - case_api_skip_without_reason'
check "a reason may also be spelt as a SKIP comment line" \
	has '^ok 8 - case_skip_with_reason_spelt_skip # SKIP said the other way$'
check "tap-count.awk: 1 passed, 4 failed, 3 skipped (the VM counter)" \
	counts "1 4 3 "

printf '1..3\nok 1 - a # SKIP why\nnot ok 2 - b # SKIP why\nok 3 - c # TODO\n' \
	>"$tmp/out"
check "tap-count.awk: a not-ok SKIP and an ok TODO are failures, as in automake" \
	counts "0 2 1 "

# The matrix names each case with its mask and keeps skips and failures.
RMCATEST_MATRIX_PROGS=tap_sample RMCATEST_MATRIX_MASKS='^send_inv' \
	RMCATEST_SRCDIR=$srcdir RMCATEST_BUILDDIR=$builddir \
	sh "$srcdir/test_api_matrix.sh" >"$tmp/out" 2>"$tmp/err"
check "matrix: every case of the program is counted, skips with reasons" \
	has '^ok 2 - \[\^send_inv\] tap_sample: case_skip_with_reason # SKIP nothing'
check "matrix: the same counts as the program alone" counts "1 4 3 "

[ "$failed" -eq 0 ]
