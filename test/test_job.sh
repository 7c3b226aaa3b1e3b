#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# Jobs under a real launcher: test_job runs under Open MPI's mpirun (a PMIx
# server) with 1, 2, 4 and 8 ranks, oversubscribed on whatever cores there
# are. Each case is one verdict that every rank must reach; TAP, one line
# per case. Without mpirun or without PMIx in the build, every case is
# reported skipped with the reason, so the count does not change.
#
# Each mpirun runs under timeout(1): a hang fails its cases, never the run.
# The tcp case runs with RMCA_transports=tcp (every peer over tcp, the
# rank itself over its self endpoint). The kill case runs with
# --enable-recovery: by default mpirun ends the whole job as soon as one
# rank dies, before the survivors can see it.

set -u

builddir=${RMCATEST_BUILDDIR:-.}
prog=$builddir/test_job
mpirun=${MPIRUN:-mpirun}
limit=${RMCATEST_JOB_TIMEOUT:-120}

# "quiet": no rank of a healthy job logs anything (rmca logs errors by
# default): a handshake that failed and was made again still passes the
# other checks, and only its line tells.
all_checks="join endpoints self adopted sendrecv put get window fadd fence reconnect finalize quiet"
race_checks="join endpoints self sendrecv put get window fadd fence reconnect finalize quiet"
tcp_checks="join endpoints self adopted transport sendrecv put get window fadd fence reconnect finalize quiet"
two_checks="join second endpoints self adopted sendrecv put get window fadd fence finalize quiet"
kill_checks="join endpoints fence dies dead-ep dead-ops finalize"
# test_job_attack: rank 0 stalls a handshake with rank 1 while rank 2
# connects to it ("served-beside-it" is rank 2's verdict), attacks rank 1's
# job listener, then asks rank 1 itself past a flood that fills rank 1's
# queue of waiting connections (the attack cases are rank 0's verdicts,
# "logged" rank 1's), then the job must still work
attack_cases="garbage another-job posing-as-rank posing-as-itself wrong-rank old-version half-open log-flood flood served-past-flood oldest-give-way stalled-handshake"
attack_checks="join $attack_cases served-beside-it endpoints sendrecv fence logged finalize"
# test_job_attack_emfile: one rank's job listener out of descriptors
emfile_checks="join emfile-no-spin emfile-shed emfile-served finalize"
runs="all:1 all:2 all:4 all:8 race:2 race:4 race:8 tcp:4 two:4 kill:4 attack:3 emfile:1"

checks_of() {
	case $1 in
	all) echo "$all_checks" ;;
	race) echo "$race_checks" ;;
	tcp) echo "$tcp_checks" ;;
	two) echo "$two_checks" ;;
	kill) echo "$kill_checks" ;;
	attack) echo "$attack_checks" ;;
	emfile) echo "$emfile_checks" ;;
	esac
}

total=1 # the example
for run in $runs; do
	set -- $(checks_of "${run%%:*}")
	total=$((total + $#))
done
echo "1..$total"

skip=
if ! command -v "$mpirun" >/dev/null 2>&1; then
	skip="no mpirun (install openmpi-bin)"
elif ! "$builddir/test_job_nolauncher" --built 2>/dev/null; then
	skip="rmca built without PMIx (install libpmix-dev)"
fi

n=0
if [ -n "$skip" ]; then
	for run in $runs; do
		for c in $(checks_of "${run%%:*}"); do
			n=$((n + 1))
			echo "ok $n - ${run#*:} ranks, ${run%%:*}: $c # SKIP $skip"
		done
	done
	echo "ok $((n + 1)) - examples/job_ring, 4 ranks # SKIP $skip"
	exit 0
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rmca-job.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM

# mpirun as root (CI), more ranks than cores, no binding, nothing but
# the local host.
OMPI_ALLOW_RUN_AS_ROOT=1
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OMPI_MCA_rmaps_base_oversubscribe=1
OMPI_MCA_hwloc_base_binding_policy=none
OMPI_MCA_btl_base_warn_component_unused=0
export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM \
	OMPI_MCA_rmaps_base_oversubscribe OMPI_MCA_hwloc_base_binding_policy \
	OMPI_MCA_btl_base_warn_component_unused

failed=0
for run in $runs; do
	mode=${run%%:*}
	np=${run#*:}
	dir=$tmp/$mode.$np
	mkdir -p "$dir"
	extra=
	[ "$mode" = kill ] && extra=--enable-recovery
	# mpirun hands the ranks only the variables it is told to
	[ "$mode" = tcp ] && extra="-x RMCA_transports=tcp"
	args="$prog $mode $np"
	[ "$mode" = attack ] && args=$builddir/test_job_attack
	[ "$mode" = emfile ] && args=$builddir/test_job_attack_emfile
	RMCATEST_JOBDIR=$dir timeout -k 10 "$limit" \
		"$mpirun" $extra -np "$np" $args >"$dir/out" 2>&1
	rc=$?
	note=
	[ $rc -eq 124 ] || [ $rc -eq 137 ] && note=" (mpirun timed out after $limit s)"
	noisy=
	for c in $(checks_of "$mode"); do
		n=$((n + 1))
		bad=
		r=0
		if [ "$c" = quiet ]; then
			noisy=$(grep '^rmca:' "$dir/out" | head -3)
			[ -z "$noisy" ] || bad=" $(echo "$noisy" | tr '\n' ' ')$note"
			r=$np
		fi
		while [ $r -lt "$np" ]; do
			f=$dir/rank.$r
			want=1
			# the victim stops at "dies"; the survivors do not die
			if [ "$mode" = kill ]; then
				last=$((np - 1))
				case $c in
				dies) [ $r -eq $last ] || want=0 ;;
				dead-ep | dead-ops | finalize) [ $r -ne $last ] || want=0 ;;
				esac
			fi
			if [ "$mode" = attack ]; then
				case " $attack_cases " in
				*" $c "*) [ $r -eq 0 ] || want=0 ;;
				esac
				[ "$c" != logged ] || [ $r -eq 1 ] || want=0
				[ "$c" != served-beside-it ] || [ $r -eq 2 ] ||
					want=0
			fi
			if [ $want = 1 ] && ! grep -qx "ok $c" "$f" 2>/dev/null; then
				why=$(grep "^not ok" "$f" 2>/dev/null | head -1)
				bad="$bad rank $r: ${why:-no verdict}$note;"
			fi
			r=$((r + 1))
		done
		if [ -z "$bad" ]; then
			echo "ok $n - $np ranks, $mode: $c"
		else
			failed=$((failed + 1))
			echo "not ok $n - $np ranks, $mode: $c"
			echo "#$bad"
		fi
	done
	if grep -q "^not ok" "$dir"/rank.* 2>/dev/null || [ -n "$note" ] ||
		[ -n "$noisy" ]; then
		sed 's/^/# mpirun: /' "$dir/out" | head -40
	fi
done
# The example of the README, as a user runs it.
n=$((n + 1))
ring=${RMCATEST_TOP_BUILDDIR:-$builddir/..}/examples/job_ring
timeout -k 10 "$limit" "$mpirun" -np 4 "$ring" >"$tmp/ring" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q "token came back to rank 0 as 6 " "$tmp/ring" &&
	[ "$(grep -c "slot holds rank" "$tmp/ring")" -eq 4 ]; then
	echo "ok $n - examples/job_ring, 4 ranks"
else
	failed=$((failed + 1))
	echo "not ok $n - examples/job_ring, 4 ranks (exit $rc)"
	sed 's/^/# /' "$tmp/ring" | head -20
fi
[ "$failed" -eq 0 ]
