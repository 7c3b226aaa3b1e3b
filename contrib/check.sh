#!/bin/bash
# contrib/check.sh - install, build and run every test (the CI job: .ci/run),
# as root, from a clone:
#
#   dependencies, autoreconf, an out-of-tree --enable-werror build in _build/,
#   make check, make check-fuzz (30 s per fuzz target), make distcheck,
#   make check-vm (rxe0 and siw0 in a qemu guest), and make check again in
#   _build-san/, built with -fsanitize=address,undefined
#
# A failing step does not stop the later ones, except that nothing can be
# tested when the build fails. Test cases are counted from automake's
# test/test-suite.log (the TAP driver counts each case) and from check-vm's
# summary; check-fuzz and distcheck count as one case each. A phase that
# ran fewer cases (passed + failed) than its floor in test/case-floor
# fails: tests cannot vanish unnoticed. Each phase's counts are printed as
#
#   ci: PHASE: N passed, N failed, N skipped; N cases ran (floor N)
#
# The last line is always
#
#   N passed, N failed, N skipped
#
# and the status is non-zero when anything failed. Budget: 30 minutes on two
# cores. Each phase says how long it took, and the line before the last the
# whole run's time with the load average it met at its start and end (a
# shared machine's run is slower: compare like with like). CI_VM_TIMEOUT
# (2400 s) only stops a guest that hangs.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
load_start=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)
build=$top/_build
vm_timeout=${CI_VM_TIMEOUT:-2400}
passed=0
failed=0
skipped=0

summary() {
	echo "ci: total $SECONDS s; load average at the start $load_start," \
		"at the end $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
	echo "$passed passed, $failed failed, $skipped skipped"
}

# counted PHASE PASSED FAILED SKIPPED: adds a phase's cases to the totals,
# and one failure more when fewer ran than the phase's floor.
counted() {
	local name=$1 p=$2 f=$3 s=$4 ran floor
	ran=$((p + f))
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + s))
	floor=$(awk -v phase="$name" '$1 == phase { print $2 }' \
		"$top/test/case-floor" 2>/dev/null || true)
	echo "ci: $name: $p passed, $f failed, $s skipped;" \
		"$ran cases ran (floor ${floor:-none})"
	if [ -z "$floor" ]; then
		echo "ci: $name: no floor in test/case-floor"
		failed=$((failed + 1))
	elif [ "$ran" -lt "$floor" ]; then
		echo "ci: $name: only $ran cases ran, fewer than the floor" \
			"of $floor: tests vanished"
		failed=$((failed + 1))
	elif [ "$ran" -gt "$floor" ]; then
		echo "ci: $name: $ran cases ran: raise its floor in" \
			"test/case-floor to $ran"
	fi
}

# phase NAME COMMAND...: runs COMMAND, says how long it took, returns its
# status without tripping set -e.
phase() {
	local name=$1 start=$SECONDS status=0
	shift
	echo "ci: === $name"
	"$@" || status=$?
	echo "ci: === $name: status $status, $((SECONDS - start)) s"
	return $status
}

# Without a build there is nothing to test: one failure, and stop.
broken() {
	echo "ci: $1 failed; nothing tested"
	failed=$((failed + 1))
	summary
	exit 1
}

phase deps contrib/install-deps.sh --vm || broken "installing dependencies"
phase autoreconf autoreconf -fi || broken autoreconf
rm -rf "$build"
mkdir "$build"
cd "$build"
phase configure "$top/configure" --enable-werror || broken configure
phase build make -j2 || broken "the build"

# Tests cannot vanish: configure without cmocka must stop and name the
# package, not build a tree whose make check runs nothing.
nocmocka() {
	local dir
	dir=$(mktemp -d "${TMPDIR:-/tmp}/rmca-nocmocka.XXXXXX")
	if (cd "$dir" && PKG_CONFIG_LIBDIR=/nonexistent \
		"$top/configure" >configure.out 2>&1); then
		echo "ci: configure without cmocka succeeded"
		rm -rf "$dir"
		return 1
	fi
	tail -1 "$dir/configure.out"
	grep -q 'libcmocka-dev' "$dir/configure.out"
	local status=$?
	rm -rf "$dir"
	return $status
}
if phase no-cmocka nocmocka; then
	counted setup 1 0 0
else
	counted setup 0 1 0
fi

# suite PHASE STATUS: counts test/test-suite.log of the build tree we are in
# as PHASE, whose make check ended with STATUS; failing logs are kept for
# the end.
failing_logs=""
suite() {
	local name=$1 status=$2 log=$PWD/test/test-suite.log bad=0
	local PASS=0 FAIL=0 SKIP=0 XFAIL=0 XPASS=0 ERROR=0
	if [ -f "$log" ]; then
		# The first of each "# KIND: N" lines is the suite's total;
		# failing tests' own logs follow.
		eval "$(awk '/^# (PASS|FAIL|SKIP|XFAIL|XPASS|ERROR): +[0-9]+$/ {
			k = substr($2, 1, length($2) - 1)
			if (!seen[k]++) print k "=" $3
		}' "$log")"
		bad=$((FAIL + ERROR + XPASS))
	fi
	counted "$name" $((PASS + XFAIL)) $bad $SKIP
	if [ $bad != 0 ]; then
		failing_logs="$failing_logs $log"
	elif [ "$status" != 0 ]; then
		# make check can fail before any test ran (one does not build).
		echo "ci: $name: make check failed with no failing test counted"
		failed=$((failed + 1))
	fi
}

check=0
phase check make -j2 check || check=$?
suite host $check

# The fuzz targets under libFuzzer, a bounded time each (test/fuzz.am):
# 30 s each here, for the budget.
if phase fuzz make -C test check-fuzz FUZZ_SECONDS=30; then
	passed=$((passed + 1))
else
	failed=$((failed + 1))
fi

if phase distcheck make -j2 distcheck DISTCHECK_CONFIGURE_FLAGS=--enable-werror; then
	passed=$((passed + 1))
else
	failed=$((failed + 1))
fi

# The guest's own timeout comes first, so that check-vm still reports what
# ran; timeout(1) is the backstop.
vm=0
phase check-vm timeout -k 30 $((vm_timeout + 120)) \
	make check-vm CHECK_VM_TIMEOUT="$vm_timeout" || vm=$?
line=$(grep '^check-vm: [0-9]' test/check-vm.log 2>/dev/null | tail -1 || true)
# programs that failed once and passed when run again: said, not hidden
grep '^check-vm: failed once' test/check-vm.log 2>/dev/null || true
if [ -n "$line" ]; then
	read -r vp vf vs <<<"$(echo "$line" |
		sed -E 's/^check-vm: ([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped.*/\1 \2 \3/')"
	counted vm "$vp" "$vf" "$vs"
	if [ $vm != 0 ] && [ "$vf" = 0 ]; then
		echo "ci: make check-vm failed (status $vm) with no failing test counted"
		failed=$((failed + 1))
	fi
else
	echo "ci: make check-vm gave no summary (status $vm)"
	failed=$((failed + 1))
	counted vm 0 0 0
fi

# The host tests again in a tree built with AddressSanitizer (leaks
# included) and UBSan, any undefined behaviour fatal: a memory error, a
# leak or UB fails the case it happens in. Not --enable-werror: the first
# tree is the warnings' judge, and instrumented builds warn falsely
# (-Wrestrict at -O1).
san="-fsanitize=address,undefined -fno-omit-frame-pointer"
san="$san -fno-sanitize-recover=undefined"
sbuild=$top/_build-san
rm -rf "$sbuild"
mkdir "$sbuild"
cd "$sbuild"
sancheck=0
if phase san-configure "$top/configure" CFLAGS="-O1 -g $san" \
	LDFLAGS="$san" && phase san-build make -j2; then
	ASAN_OPTIONS=detect_leaks=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		phase san-check make -j2 check || sancheck=$?
else
	sancheck=1
fi
suite san $sancheck
cd "$build"

if [ $failed != 0 ]; then
	echo "ci: === failing logs"
	for l in $failing_logs; do
		echo "ci: --- $l"
		cat "$l"
	done
	# What failed and why, once more where a reader of the log's tail
	# sees it: each failing program, each failing case and the comment
	# lines that follow it (TAP), cmocka's error lines.
	echo "ci: === failing cases"
	for l in $failing_logs; do
		awk '/^(FAIL|ERROR): / || /^\[  ERROR   \]/ { print; next }
			/^not ok / { n = 4; print; next }
			n && /^#/ { n--; print; next }
			{ n = 0 }' "$l" | head -40
	done
fi
summary
[ $failed = 0 ]
