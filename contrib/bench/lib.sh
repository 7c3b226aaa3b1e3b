# contrib/bench/lib.sh - shared by run.sh and run-vm.sh (sourced).
#
# Results are csv lines "test,size,iters,value,unit", the format of
# rmca_perf --parsable; the other tools' outputs are converted to it.

# The build tree to measure: the one given, else a build of this source in
# a scratch directory (configured and built the first time). Prints its path.
bench_build() { # [build dir]
	local b=$1
	if [ -z "$b" ]; then
		b=${TMPDIR:-/tmp}/rmca-bench-build
		mkdir -p "$b"
		(cd "$b" && { [ -f Makefile ] || "$top/configure" -q; } &&
			make -s -j2 >/dev/null) >&2
	fi
	(cd "$b" && pwd)
}

# Iterations for a size, as rmca_perf chooses them: at most a byte budget
# per (test, size), at least 16.
bench_iters_for() { # iters size lat|bw
	local n=$1 budget=$(( 256 << 20 ))
	[ "$3" = lat ] && budget=$(( 64 << 20 ))
	[ $(( n * $2 )) -gt $budget ] && n=$(( budget / $2 ))
	[ "$n" -lt 16 ] && n=16
	echo "$n"
}

# Ratio table of file $1 against file $2, on the rows both have for the
# units given. Message rates are shown only for the *_rate tests: elsewhere
# the latency or the bandwidth already says it.
bench_ratios() { # a.csv b.csv name_a name_b title units...
	local a=$1 b=$2 an=$3 bn=$4 title=$5
	shift 5
	echo
	echo "== $title"
	[ -s "$a" ] && [ -s "$b" ] || { echo "(no results to compare)"; return 0; }
	awk -F, -v units="$*" -v an="$an" -v bn="$bn" '
		BEGIN { n = split(units, u, " "); for (i = 1; i <= n; i++) want[u[i]] = 1 }
		FNR == NR { if (want[$5]) v[$1 "," $2 "," $5] = $4; next }
		$5 == "Mops" && $1 !~ /rate$/ { next }
		want[$5] && (($1 "," $2 "," $5) in v) {
			k = $1 "," $2 "," $5
			if (!hdr++) printf "%-12s %8s %-10s %12s %12s %8s\n", "test", "bytes", "unit", an, bn, "ratio"
			printf "%-12s %8s %-10s %12.4g %12.4g %8.2f\n", $1, $2, $5, v[k], $4, ($4 > 0 ? v[k] / $4 : 0)
		}
		END { if (!hdr) print "(no common rows)" }' "$a" "$b"
}
