# contrib/bench/lib.sh - shared by the bench scripts (sourced), on the host
# and in the guest (vm-payload.sh).
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
# the latency or the bandwidth already says it. With bench_record set, each
# ratio is also appended to that file as
# "$bench_run,name_a/name_b,test,bytes,unit,ratio".
bench_ratios() { # a.csv b.csv name_a name_b title units...
	local a=$1 b=$2 an=$3 bn=$4 title=$5
	shift 5
	echo
	echo "== $title"
	[ -s "$a" ] && [ -s "$b" ] || { echo "(no results to compare)"; return 0; }
	awk -F, -v units="$*" -v an="$an" -v bn="$bn" \
		-v rec="${bench_record:-}" -v run="${bench_run:-1}" '
		BEGIN { n = split(units, u, " "); for (i = 1; i <= n; i++) want[u[i]] = 1 }
		FNR == NR { if (want[$5]) v[$1 "," $2 "," $5] = $4; next }
		$5 == "Mops" && $1 !~ /rate$/ { next }
		want[$5] && (($1 "," $2 "," $5) in v) {
			k = $1 "," $2 "," $5
			if (!hdr++) printf "%-12s %8s %-10s %12s %12s %8s\n", "test", "bytes", "unit", an, bn, "ratio"
			printf "%-12s %8s %-10s %12.4g %12.4g %8.2f\n", $1, $2, $5, v[k], $4, ($4 > 0 ? v[k] / $4 : 0)
			if (rec != "" && $4 > 0)
				printf "%s,%s/%s,%s,%s,%s,%.4f\n", run, an, bn, $1, $2, $5, v[k] / $4 >>rec
		}
		END { if (!hdr) print "(no common rows)" }' "$a" "$b"
}

# The ratios of repeated runs (run.sh --runs, the "run,comparison,test,
# bytes,unit,ratio" lines of each DIR/ratios.csv): for each comparison,
# test, size and unit, in the order they first came, the ratios in run
# order, their median and quartiles (linear between the two nearest of the
# sorted values: the median of an even count is the mean of the middle
# two). Runs are numbered on through the directories, in the order given.
bench_runs_summary() { # dir...
	local d
	for d in "$@"; do
		[ -f "$d/ratios.csv" ] || { echo "run.sh: no $d/ratios.csv" >&2; return 1; }
	done
	for d in "$@"; do cat "$d/ratios.csv"; echo "--"; done | awk -F, '
		function q(p,   x, i) { x = 1 + (m - 1) * p; i = int(x)
			return i >= m ? s[m] : s[i] + (x - i) * (s[i + 1] - s[i]) }
		$0 == "--" { base = last; next }
		NF == 6 {
			r = base + $1; if (r > last) last = r
			k = $2 "," $3 "," $4 "," $5
			if (!(k in v)) key[++n] = k
			v[k] = v[k] " " sprintf("%.2f", $6); x[k] = x[k] " " $6
		}
		END {
			printf "== ratios over %d runs: median, quartiles, then each run'"'"'s in run order\n", last
			for (j = 1; j <= n; j++) {
				split(key[j], f, ",")
				if (f[1] != cmp) {
					cmp = f[1]
					printf "\n-- %s\n%-12s %8s %-10s %3s %7s %7s %7s  %s\n", cmp,
						"test", "bytes", "unit", "n", "median", "q1", "q3", "per run"
				}
				m = split(substr(x[key[j]], 2), s, " ")
				for (a = 1; a <= m; a++) for (b = a + 1; b <= m; b++)
					if (s[b] + 0 < s[a] + 0) { t = s[a]; s[a] = s[b]; s[b] = t }
				printf "%-12s %8s %-10s %3d %7.2f %7.2f %7.2f %s\n", f[2], f[3], f[4], m,
					q(0.5), q(0.25), q(0.75), v[key[j]]
			}
		}'
}

# Medians over runs: csv lines that differ only in field $1 (the value of
# one measurement in each run's "test,size,iters,value,unit" line) become
# one line per distinct rest, in the order they first came, that field the
# median (the mean of the middle two of an even count).
bench_median() { # field
	awk -F, -v OFS=, -v c="$1" '
		NF >= c { x = $c; $c = ""; v[$0] = v[$0] " " x
			  if (!($0 in seen)) { seen[$0] = 1; keys[++n] = $0 } }
		END {
			for (j = 1; j <= n; j++) {
				m = split(substr(v[keys[j]], 2), a, " ")
				for (x = 1; x <= m; x++) for (y = x + 1; y <= m; y++)
					if (a[y] + 0 < a[x] + 0) { t = a[x]; a[x] = a[y]; a[y] = t }
				$0 = keys[j]
				$c = m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
				print
			}
		}'
}

# The load average now, "x y z".
bench_load() { cut -d' ' -f1-3 /proc/loadavg; }

# The machine and its load, for the head of a report.
bench_host() { echo "$(uname -srm); $(nproc) cpus; load average: $(bench_load)"; }

# This source tree's commit, as git describes it.
bench_rev() { git -C "$top" describe --always --dirty 2>/dev/null || echo '?'; }

# Server and client each on a CPU of their own: sets on_server and
# on_client, what to run each under. $1 is "A,B".
bench_pin() {
	on_server=(taskset -c "${1%,*}") on_client=(taskset -c "${1#*,}")
}

# Runs "$@" in the background with its output in $1, and waits until it
# says "listening on port N": sets server_pid, and server_port (empty when
# the server ended or did not say it within 30 s).
bench_server() { # log cmd...
	local log=$1
	shift
	: >"$log" # there before the server writes it: sed reads it at once
	"$@" >>"$log" 2>&1 &
	server_pid=$!
	server_port=
	# tenths of a second (BENCH_SERVER_WAIT: longer under valgrind)
	for _ in $(seq "${BENCH_SERVER_WAIT:-300}"); do
		server_port=$(sed -n 's/^listening on port \([0-9]*\).*$/\1/p' "$log")
		[ -n "$server_port" ] && return 0
		kill -0 "$server_pid" 2>/dev/null || return 0 # it ended
		sleep 0.1
	done
}

# rmca_perf ($perf) as a server on 127.0.0.1 and its client, each under a
# timeout of 300 s (and on_server, on_client): the options before "--" go
# to both, those after it to the client alone. The client's --parsable
# lines in $out/NAME.csv, its stderr in $out/NAME.head, the server's output
# in $out/NAME.server. A failure is a finding: it is shown on stderr and
# the caller carries on (returns 0).
bench_perf() { # name [option...] [-- client option...]
	local name=$1 rc=0 both=()
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		both+=("$1")
		shift
	done
	[ $# -gt 0 ] && shift
	: >"$out/$name.csv"
	bench_server "$out/$name.server" timeout 300 "${on_server[@]}" \
		"$perf" -s -l 127.0.0.1:0 "${both[@]}"
	if [ -z "$server_port" ]; then
		echo "${0##*/}: $name: the server did not start:" >&2
		cat "$out/$name.server" >&2
		kill "$server_pid" 2>/dev/null || true
		return 0
	fi
	timeout 300 "${on_client[@]}" "$perf" --parsable "${both[@]}" "$@" \
		"127.0.0.1:$server_port" >"$out/$name.csv" 2>"$out/$name.head" || rc=$?
	# a client that failed leaves its server waiting: do not wait for it
	[ "$rc" = 0 ] || kill "$server_pid" 2>/dev/null || true
	wait "$server_pid" || true
	if [ "$rc" != 0 ]; then
		echo "${0##*/}: $name: rmca_perf failed ($rc):" >&2
		cat "$out/$name.head" "$out/$name.server" >&2
	fi
}

# ucx_perftest as server and client on loopback (UCX_TLS and the like come
# from the caller's environment), the client's output in $1.err. Prints
# the client's last line: iters, latency 50%ile/avg/overall (us),
# bandwidth avg/overall (MiB/s), message rate avg/overall (msg/s).
bench_ucx() { # out_prefix test size iters
	local port=$(( 20000 + RANDOM % 20000 )) spid
	timeout 120 "${on_server[@]}" ucx_perftest -p "$port" \
		>"$1.server" 2>&1 &
	spid=$!
	sleep 0.5
	timeout 120 "${on_client[@]}" ucx_perftest 127.0.0.1 -p "$port" \
		-t "$2" -s "$3" -n "$4" -w $(( $4 / 10 + 1 )) -f 2>>"$1.err" |
		tail -1 || true
	wait "$spid" 2>/dev/null || true
}

# An strace -c summary: "name calls" for each system call, and the total.
bench_strace_calls() {
	awk '$1 ~ /^[0-9.]+$/ && $NF != "total" { print $NF, $4 }' "$1"
}
bench_strace_total() { awk '$NF == "total" { print $4 }' "$1"; }

# The instructions a callgrind output counted.
bench_callgrind_total() { awk '/^summary:/ { print $2 }' "$1"; }

# A callgrind output's self instructions by function: "function
# instructions" lines, a name found in several objects summed.
bench_callgrind_fns() { # file
	callgrind_annotate --tree=none --auto=no --threshold=100 \
		--show-percs=no "$1" 2>/dev/null |
		awk '$1 ~ /^[0-9,]+$/ && $2 ~ /:/ {
			v = $1; gsub(/,/, "", v); f = $2
			sub(/^.*:/, "", f); c[f] += v }
			END { for (k in c) print k, c[k] }'
}

# contrib/bench/tcp_pingpong.c built as $1 against build tree $2's librmca.
bench_pingpong_build() { # out build
	${CC:-cc} -O2 -I"$top/include" -o "$1" \
		"$top/contrib/bench/tcp_pingpong.c" \
		-L"$2/framework/.libs" -Wl,-rpath,"$2/framework/.libs" \
		-lrmca -lpthread
}

# The round trips between tcp_pingpong's runs at N and 2N: each warms up
# with N/10 + 1 more, so they differ by N + (2N/10 - N/10).
bench_pingpong_span() { echo $(( (2 * $1 + 2 * $1 / 10) - ($1 + $1 / 10) )); }

# The calls the program itself makes into the libraries, from a callgrind
# output: "object function calls instructions" for each function called
# from the program's own ELF object (the one whose name matches $2) in
# another object, the instructions inclusive (all that the call ran, in
# any library). The program's own work (its clock, its statistics) and its
# waiting fall out, and so does a spin of the program's between calls; the
# C library's, the loader's and valgrind's objects are left out too.
# Callgrind compresses names to "(id)" after their first use; a callee's
# object (cob=) is given for one call, the caller's when not given.
bench_callgrind_calls() { # file program-object-regex
	awk -v prog="$2" '
		function name(s, t,   id) {
			if (match(s, /^\([0-9]+\)/)) {
				id = t substr(s, 2, RLENGTH - 2)
				s = substr(s, RLENGTH + 1); sub(/^ /, "", s)
				if (s != "") nm[id] = s
				return nm[id]
			}
			return s
		}
		/^ob=/ { ob = cob = name(substr($0, 4), "o"); next }
		/^fn=/ { name(substr($0, 4), "f"); next }
		/^cob=/ { cob = name(substr($0, 5), "o"); next }
		/^cfn=/ { cfn = name(substr($0, 5), "f"); next }
		/^calls=/ { split($0, a, /[= ]/); n = a[2]; want = 1; next }
		want { want = 0; c = cob; cob = ob
		       if (ob ~ prog && c !~ prog &&
			   c !~ /\/(libc|libm|ld-linux[^\/]*)\.so|vgpreload/) {
			       k = c " " cfn; calls[k] += n; ir[k] += $2 } }
		END { for (k in calls) print k, calls[k], ir[k] }' "$1" | sort
}

# Per name, the calls in file $2 less those in file $1, sorted by name;
# each file holds "name calls" lines, a name repeated (say, server and
# client) is summed.
bench_calls_diff() { # a b
	awk -v a="$1" '{ c[$1] += FILENAME == a ? -$2 : $2 }
		END { for (k in c) print k, c[k] }' "$1" "$2" | sort
}
