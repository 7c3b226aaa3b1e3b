#!/bin/bash
# contrib/bench/rails-vm.sh - put bandwidth over two rails against one, in
# the same boot of the project's qemu guest (contrib/vm/run-vm.sh), runs
# interleaved. doc/bench.md ("Rails") has the numbers.
#
#   contrib/bench/rails-vm.sh BUILD_DIR [RUNS] [ITERS]
#
# Two set-ups: one host with rxe0 and rxe1 (contrib/vm/second-device.sh,
# listener addressed on rxe1's subnet), and two hosts, network namespaces
# joined by two veth pairs with two siw devices each (contrib/vm/
# two-hosts.sh, listener at 10.5.1.2). In each, rmca_perf put_bw at 1 MiB
# and 16 MiB (window 16, --spin) with RMCA_max_rails=2 and =1, one after
# the other, RUNS times (3); each cell is the median of the runs, and the
# ratio is two rails over one. ITERS: puts per size (64).
#
# The guest is usually emulated (TCG) on two vCPUs: rxe and siw copy every
# byte in software, so two rails add a second copying thread, not a second
# wire; compare the two columns of one run, never with a real machine.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/contrib/bench/lib.sh"
build=${1:?usage: rails-vm.sh BUILD_DIR [RUNS] [ITERS]}
build=$(cd "$build" && pwd)
runs=${2:-3}
iters=${3:-64}
[ -x "$build/tools/rmca_perf" ] || { echo "rails-vm.sh: no rmca_perf in $build" >&2; exit 1; }
out=$(mktemp -d "$build/rails-bench.XXXXXX")
cat >"$out/payload.sh" <<PAYLOAD
set -u
. $top/contrib/bench/lib.sh
perf=$build/tools/rmca_perf
comps=$build/components/ib/.libs:$build/components/iwarp/.libs
vm=$top/contrib/vm
sh \$vm/second-device.sh add ib >/dev/null || exit 1
sh \$vm/two-hosts.sh add || exit 1
# one measurement: setup rails -> out/setup.rails.run.csv
one() { # setup transport addr server_ns client_ns rails run
	local s=\$1 t=\$2 a=\$3 sns=\$4 cns=\$5 r=\$6 n=\$7
	local srv="$out/\$s.server" sx= cx=
	[ -n "\$sns" ] && sx="ip netns exec \$sns"
	[ -n "\$cns" ] && cx="ip netns exec \$cns"
	RMCA_component_path=\$comps RMCA_transports=\$t RMCA_max_rails=\$r \\
		bench_server "\$srv" timeout 300 \$sx "\$perf" -s --spin -l "\$a:0"
	RMCA_component_path=\$comps RMCA_transports=\$t RMCA_max_rails=\$r \\
		timeout 300 \$cx "\$perf" --spin --parsable -t put_bw -w 16 \\
		-n $iters -W 4 -S 1m,16m "\$a:\$server_port" \\
		>"$out/\$s.\$r.\$n.csv" 2>"$out/\$s.client" || {
		echo "rmca_perf failed (\$s, \$r rails):"
		cat "$out/\$s.client" "\$srv"
		kill \$server_pid 2>/dev/null
	}
	wait \$server_pid
}
for n in \$(seq $runs); do
	for r in 2 1; do
		one rxe ib 10.0.2.1 "" "" \$r \$n
		one siw iwarp 10.5.1.2 rmca-b rmca-a \$r \$n
	done
done
sh \$vm/two-hosts.sh del
sh \$vm/second-device.sh del ib
PAYLOAD
echo "# host: $(bench_host)"
echo "# rmca $(bench_rev); $runs runs, $iters puts per size"
VM_SHARE="$build" VM_TIMEOUT=${VM_TIMEOUT:-$((600 * runs))} \
	"$top/contrib/vm/run-vm.sh" -f "$out/payload.sh"
# median over the runs of put_bw's MB/s, per setup, size and rail count
median() { # setup rails size
	cat "$out/$1.$2".*.csv 2>/dev/null | awk -F, -v s="$3" '
		$1 == "put_bw" && $2 == s && $5 ~ /MB/ { print $4 }' |
		bench_median 1 | awk '{ print } END { if (!NR) print "-" }'
}
# every run's value, then the medians
runs_of() { # setup rails size
	cat "$out/$1.$2".*.csv 2>/dev/null | awk -F, -v s="$3" '
		$1 == "put_bw" && $2 == s && $5 ~ /MB/ { printf "%s ", $4 }'
}
for s in rxe siw; do
	for size in 1048576 16777216; do
		for r in 1 2; do
			echo "# $s $size B, $r rail(s), each run: $(runs_of $s $r $size)"
		done
	done
done
printf "%-28s %9s %12s %12s %7s\n" setup size "1 rail MB/s" "2 rails MB/s" ratio
for s in rxe siw; do
	name="rxe1+rxe0, one host"
	[ $s = siw ] && name="2x siw, two namespaces"
	for size in 1048576 16777216; do
		one=$(median $s 1 $size)
		two=$(median $s 2 $size)
		ratio=$(awk -v a="$one" -v b="$two" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", b / a; else print "-" }')
		printf "%-28s %9s %12s %12s %7s\n" "$name" "$size" "$one" "$two" "$ratio"
	done
done
echo "# the runs' files: $out"
