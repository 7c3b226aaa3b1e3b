#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# The same semantic suite over every path: the public-contract programs run
# again over tcp with each capability masked (RMCA_tcp_caps), so the core's
# fallbacks (flush, CAS loop, emulated atomics, revoke messages, gets the
# target's core answers) must give exactly the results of the native paths.
# Speaks TAP: one line per case and mask.

set -u

# RMCATEST_TRANSPORT runs the matrix over another software transport (shm).
transport=${RMCATEST_TRANSPORT:-tcp}

builddir=${RMCATEST_BUILDDIR:-.}
srcdir=${RMCATEST_SRCDIR:-$(dirname "$0")}
# test_tap_rule.sh runs the matrix over its own sample program.
progs=${RMCATEST_MATRIX_PROGS:-"test_api_sendrecv test_api_rma test_api_get_short test_api_flush test_api_atomic test_api_use_once test_api_errors test_api_wait_fd"}
masks=${RMCATEST_MATRIX_MASKS:-"^atomic ^masked_atomic ^atomic,masked_atomic ^send_inv ^remote_completion ^atomic,masked_atomic,send_inv,remote_completion,short_read"}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rmca-matrix.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM

n=0
failed=0
out=$tmp/all
: >"$out"
for mask in $masks; do
	for prog in $progs; do
		# tap-run.sh: a skip is "ok - name # SKIP why" (the suite's rule)
		env RMCA_transports="$transport" "RMCA_${transport}_caps=$mask" \
			CMOCKA_MESSAGE_OUTPUT=TAP \
			"$srcdir/tap-run.sh" "$builddir/$prog" \
			>"$tmp/one" 2>"$tmp/err"
		rc=$?
		# keep every verdict line (directives too), named with the mask
		sed -n "s/^\(not ok\|ok\) [0-9]* - \(.*\)$/\1 - [$mask] $prog: \2/p" \
			"$tmp/one" >>"$out"
		# a program that fails shows a failing case, or is one
		if ! grep -q '^ok\|^not ok' "$tmp/one" ||
			{ [ $rc -ne 0 ] && ! grep -q '^not ok' "$tmp/one"; }; then
			echo "not ok - [$mask] $prog: exit $rc" >>"$out"
			sed 's/^/# /' "$tmp/err" | head -20 >>"$out"
		elif grep -q '^not ok' "$tmp/one"; then
			sed 's/^/# /' "$tmp/err" | head -20 >>"$out"
		fi
	done
done
total=$(grep -c '^\(ok\|not ok\)' "$out")
echo "1..$total"
while IFS= read -r line; do
	case $line in
	"ok "* | "not ok "*)
		n=$((n + 1))
		case $line in "not ok"*) failed=$((failed + 1)) ;; esac
		verdict=${line%% - *}
		echo "$verdict $n - ${line#* - }"
		;;
	*) echo "$line" ;;
	esac
done <"$out"
[ "$failed" -eq 0 ]
