#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# The whole public-contract suite over each software transport, named:
# local peers go to shm by default (api.am runs the programs that way), and
# tcp must keep giving the same results when it serves them. Shared memory
# and cross-memory attach must give exactly what tcp gives, and so must
# shared memory alone (shm-nocma: RMCA_shm_cma=no, every byte in the rings).
# test_api_connect checks that each endpoint really runs over
# RMCA_transports. TAP.

set -u

builddir=${RMCATEST_BUILDDIR:-.}
progs="test_api_connect test_api_sendrecv test_api_rma test_api_get_short test_api_flush test_api_atomic test_api_use_once test_api_errors test_api_wait_fd test_api_wire test_api_attack test_api_connect_errors"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rmca-shm.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM

out=$tmp/all
: >"$out"
for tr in tcp shm shm-nocma; do
	cma=yes
	[ "$tr" = shm-nocma ] && cma=no
	for prog in $progs; do
		RMCA_transports=${tr%-nocma} RMCA_shm_cma=$cma \
			CMOCKA_MESSAGE_OUTPUT=TAP \
			"$builddir/$prog" >"$tmp/one" 2>"$tmp/err"
		rc=$?
		sed -n "s/^\(not ok\|ok\) [0-9]* - \(.*\)$/\1 - [$tr] $prog: \2/p" \
			"$tmp/one" >>"$out"
		if ! grep -q '^ok\|^not ok' "$tmp/one" || [ $rc -gt 1 ]; then
			echo "not ok - [$tr] $prog: exit $rc, no verdicts" >>"$out"
			sed 's/^/# /' "$tmp/err" | head -20 >>"$out"
		fi
		if grep -q '^not ok' "$tmp/one"; then
			sed 's/^/# /' "$tmp/err" | head -20 >>"$out"
		fi
	done
done
total=$(grep -c '^\(ok\|not ok\)' "$out")
echo "1..$total"
n=0
failed=0
while IFS= read -r line; do
	case $line in
	"ok "* | "not ok "*)
		n=$((n + 1))
		case $line in "not ok"*) failed=$((failed + 1)) ;; esac
		echo "${line%% - *} $n - ${line#* - }"
		;;
	*) echo "$line" ;;
	esac
done <"$out"
[ "$failed" -eq 0 ]
