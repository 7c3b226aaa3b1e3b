#!/bin/bash
# run-tests-in-vm.sh - the payload of `make check-vm`, run inside the guest by
# run-vm.sh from the build tree's test/ directory.
#
# Runs every program in $VM_TESTS (the verbs tests) and $API_TESTS (the API
# suite) once per device: rxe0 with RMCA_transports=ib RMCATEST_HOST=10.0.0.1,
# siw0 with RMCA_transports=iwarp RMCATEST_HOST=10.0.1.1. Each speaks TAP;
# its output is shown and its results counted. A program that exits non-zero
# without a failing case to show for it, or prints no plan, or fewer results
# than its plan, counts as one more failure. Ends with the line
#
#   check-vm: N passed, N failed, N skipped
#
# and exits non-zero when anything failed. Everything is also written to
# $CHECK_VM_LOG (check-vm.log) so the caller can find the summary.
#
# Env (set by test/vm.am): VM_TESTS, API_TESTS, RMCA_component_path,
# RMCATEST_TOP_BUILDDIR, RMCATEST_SRCDIR, CHECK_VM_TEST_TIMEOUT (600 s),
# CHECK_VM_BUILD (anything but "ok" counts as one failure),
# RMCATEST_TIMEOUT_SCALE (6).
set -u
export CMOCKA_MESSAGE_OUTPUT=TAP
# The API tests' waits are hang detectors; an emulated guest on a busy host
# runs many times slower than they assume (test/api_util.h).
export RMCATEST_TIMEOUT_SCALE=${RMCATEST_TIMEOUT_SCALE:-6}
timeout=${CHECK_VM_TEST_TIMEOUT:-600}
passed=0
failed=0
skipped=0

# TAP results of one program, under the suite's one rule (test/tap-count.awk:
# counted as automake's TAP driver counts; the programs ran through
# test/tap-run.sh, so a skip says why and a skip without a reason fails).
tapdir=${RMCATEST_SRCDIR:-.}
count() {
	awk -f "$tapdir/tap-count.awk"
}

# run_prog NAME [VAR=value...]: runs test NAME with the extra environment,
# prints its output, sets p f s (counts) and why (a failure TAP cannot show).
run_prog() {
	local name=$1 prog out status
	shift
	# Like automake: the build directory first, then the source directory.
	prog=./$name
	[ -e "$prog" ] || prog=${RMCATEST_SRCDIR:-.}/$name
	out=$(mktemp)
	if [ -x "$prog" ]; then
		env "$@" timeout -k 10 "$timeout" \
			sh "$tapdir/tap-run.sh" "$prog" >"$out" 2>&1
	elif [ -e "$prog" ]; then
		env "$@" timeout -k 10 "$timeout" \
			sh "$tapdir/tap-run.sh" sh "$prog" >"$out" 2>&1
	else
		echo "$name: not found" >"$out"
		false
	fi
	status=$?
	cat "$out"
	read -r p f s why <<<"$(count <"$out")"
	rm -f "$out"
	# The program's own word counts only when its TAP does not explain it.
	if [ -z "$why" ] && [ $status != 0 ] && [ "$f" = 0 ]; then
		why="exit status $status"
	fi
}

# run_one NAME [VAR=value...]: run_prog once, and count. Never a second
# run: a test that fails now and then is a bug to find, not to retry.
run_one() {
	local name=$1 label p f s why
	label="$name${2:+ (${*:2})}"
	echo "# --- $label"
	run_prog "$@"
	passed=$((passed + p))
	skipped=$((skipped + s))
	failed=$((failed + f))
	if [ -n "$why" ]; then
		echo "not ok - $label: $why"
		failed=$((failed + 1))
	fi
}

main() {
	echo "# check-vm: RDMA devices in the guest"
	rdma link show
	if [ -n "${RMCATEST_TOP_BUILDDIR:-}" ] &&
	   [ -x "$RMCATEST_TOP_BUILDDIR/tools/rmca_info" ]; then
		"$RMCATEST_TOP_BUILDDIR/tools/rmca_info" ||
			echo "# rmca_info: exit status $?"
	fi

	if [ "${CHECK_VM_BUILD:-ok}" != ok ]; then
		echo "not ok - the test programs build (make check-vm-programs)"
		failed=$((failed + 1))
	fi
	for t in ${VM_TESTS:-} ${API_TESTS:-}; do
		run_one "$t" RMCA_transports=ib RMCATEST_HOST=10.0.0.1
		run_one "$t" RMCA_transports=iwarp RMCATEST_HOST=10.0.1.1
	done
	echo "check-vm: $passed passed, $failed failed, $skipped skipped"
	[ $failed = 0 ]
}

# Not exec > >(tee): that tee could lose the last lines when the guest
# powers off right after this script returns.
main 2>&1 | tee "${CHECK_VM_LOG:-check-vm.log}"
exit "${PIPESTATUS[0]}"
