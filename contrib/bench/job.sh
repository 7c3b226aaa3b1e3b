#!/bin/bash
# contrib/bench/job.sh - what rmca_job_join and a job's endpoints cost with
# 2, 4, 8 and 16 ranks under mpirun on this machine (oversubscribed when
# there are more ranks than cores). doc/bench.md ("Jobs") has the numbers.
#
#   contrib/bench/job.sh BUILD_DIR [-r REPEATS] [-n "2 4 8 16"]
#
# Prints, per size, the median over REPEATS runs (default 5) of the slowest
# rank's time and of the mean over ranks, for the join, the endpoint to one
# neighbour, and all-to-all endpoints. Each mpirun runs under a timeout.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/contrib/bench/lib.sh"
build=${1:?usage: job.sh BUILD_DIR [-r REPEATS] [-n SIZES]}
build=$(bench_build "$build")
shift
repeats=5 sizes="2 4 8 16"
while [ $# -gt 0 ]; do
	case $1 in
	-r) repeats=$2; shift ;;
	-n) sizes=$2; shift ;;
	*) echo "job.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rmca-jobbench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cc -O2 -I"$top/include" -o "$tmp/job_setup" "$top/contrib/bench/job_setup.c" \
	-L"$build/framework/.libs" -Wl,-rpath,"$build/framework/.libs" -lrmca
export RMCA_component_path=$build/components/tcp/.libs:$build/components/shm/.libs
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
	OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none
echo "cores: $(nproc); transports: ${RMCA_transports:-all (shm for these same-host ranks)}"
printf '%5s  %-22s %-22s %-22s\n' ranks "join ms (max/mean)" "1 neighbour ms" "all-to-all ms (max/mean)"
for n in $sizes; do
	: >"$tmp/runs"
	for _ in $(seq "$repeats"); do
		# the neighbour alone, then (another job) all-to-all from none
		timeout -k 5 300 mpirun -np "$n" "$tmp/job_setup" ring >"$tmp/ring" 2>"$tmp/err" &&
			timeout -k 5 300 mpirun -np "$n" "$tmp/job_setup" all >"$tmp/all" 2>>"$tmp/err" ||
			{ cat "$tmp/err" >&2; exit 1; }
		awk '$1 == "job_setup" { $6 = 0; print }' "$tmp/ring" >"$tmp/out"
		awk '$1 == "job_setup" { $4 = 0; $5 = 0; print }' "$tmp/all" >>"$tmp/out"
		awk '$1 == "job_setup" {
			for (i = 4; i <= 6; i++) { s[i] += $i; if ($i > m[i]) m[i] = $i }
			r++ }
			END { r /= 2; printf "%.2f %.2f %.2f %.2f %.2f %.2f\n", m[4], s[4] / r,
				m[5], s[5] / r, m[6], s[6] / r }' "$tmp/out" >>"$tmp/runs"
	done
	# each column's median over the runs
	set -- $(awk '{ for (c = 1; c <= NF; c++) print c "," $c }' "$tmp/runs" |
		bench_median 2 | awk -F, '{ printf "%.2f ", $2 }')
	printf '%5s  %-22s %-22s %-22s\n' "$n" "$1 / $2" "$3 / $4" "$5 / $6"
done
