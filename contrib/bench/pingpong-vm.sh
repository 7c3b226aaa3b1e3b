#!/bin/bash
# contrib/bench/pingpong-vm.sh - verbs_pingpong (a bare verbs SEND ping-pong,
# contrib/bench/verbs_pingpong.c) on rxe0 and siw0 in the project's guest,
# with rmca's choices switched on one at a time, the variants interleaved
# run by run: which of them does a device pay for?
#
#   contrib/bench/pingpong-vm.sh [--runs K] [-n ITERS] [--devices "siw0 rxe0"]
#                                [--out DIR] [VARIANT...]
#
# A VARIANT is a string of verbs_pingpong options ("-g 2 -h 1"); the
# default set is the bare ping-pong, then each of rmca's choices alone
# (the iWARP header's second SGE in each receive, the message 8 bytes
# longer, sends unsignalled, inline, a large CQ, a completion channel, 512
# receives posted, ORD/IRD 16, 24 bytes of private data, on rxe0 sends with
# an immediate), then all of them
# together, then the bare ping-pong with 100 and 1000 calls through a
# function pointer between a message's arrival and its answer (what
# user-space work costs the guest's emulated CPU). Prints, per device and
# variant, the median over the runs of each run's minimum and median half
# round trip, in µs. Both sides busy-poll; the guest is usually emulated
# (TCG): compare the rows with each other, not with other machines.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/contrib/bench/lib.sh"
runs=3 iters=5000 devices="siw0 rxe0" out=
while [ $# -gt 0 ]; do
	case $1 in
	--runs) runs=$2; shift ;;
	-n) iters=$2; shift ;;
	--devices) devices=$2; shift ;;
	--out) out=$2; shift ;;
	-h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "pingpong-vm.sh: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
	shift
done
variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(
	"" "-g 2" "-S 16" "-u 1" "-i 1" "-C 4096" "-e 1" "-r 512 -R 0"
	"-D 16" "-P 24" "-m 1"
	"-g 2 -h 1 -u 1 -i 1 -C 4096 -e 1 -r 512 -R 0 -D 16 -P 24"
	"-w 100" "-w 1000")
[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/rmca-pingpong.XXXXXX")
mkdir -p "$out"
out=$(cd "$out" && pwd)
${CC:-cc} -O2 -Wall -Wextra -o "$out/verbs_pingpong" \
	"$top/contrib/bench/verbs_pingpong.c" -lrdmacm -libverbs ||
	{ echo "pingpong-vm.sh: cannot build verbs_pingpong" >&2; exit 1; }
printf '%s\n' "${variants[@]}" >"$out/variants"
cat >"$out/guest.sh" <<GUEST
#!/bin/bash
# in the guest: every variant once per run, server and client on the
# device's own address
port=8700
for dev in $devices; do
	case \$dev in rxe0) ip=10.0.0.1 ;; siw0) ip=10.0.1.1 ;; *) continue ;; esac
	for r in \$(seq $runs); do
		while IFS= read -r v; do
			# an immediate is IB's alone (rmca's ib sends carry one)
			[[ \$dev == siw0 && " \$v " == *" -m "* ]] && continue
			port=\$((port + 1))
			timeout 120 $out/verbs_pingpong -s -a \$ip -p \$port -n $iters \$v &
			sleep 0.3
			line=\$(timeout 120 $out/verbs_pingpong -a \$ip -p \$port -n $iters \$v) ||
				line="failed"
			wait || true
			echo "\$dev|\$v|\$line"
		done <$out/variants
	done
done >$out/results.txt 2>$out/errors.txt
GUEST
echo "# host: $(bench_host)"
echo "# rmca $(bench_rev); results in $out"
VM_APPEND="${VM_APPEND:+$VM_APPEND }clocksource=tsc tsc=reliable" \
VM_SHARE="$out" VM_TIMEOUT=${VM_TIMEOUT:-1800} \
	"$top/contrib/vm/run-vm.sh" bash "$out/guest.sh" ||
	echo "pingpong-vm.sh: the guest run failed ($?)" >&2
[ -s "$out/results.txt" ] || { echo "pingpong-vm.sh: no results" >&2; exit 1; }
# median over the runs of each run's min and median
awk -F'|' '
function med(s,   a, n, i, j, t) {
	n = split(s, a, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
		if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{
	key = $1 "|" $2
	if (!(key in seen)) { seen[key] = 1; order[++nk] = key }
	if ($3 ~ / min [0-9.]+ med [0-9.]+$/) {
		n = split($3, f, " ")
		mins[key] = mins[key] " " f[n - 2]; meds[key] = meds[key] " " f[n]
		runs[key]++
	} else fails[key]++
}
END {
	printf "%-6s %-62s %5s %9s %9s\n", "device", "variant", "runs", "min_us", "med_us"
	for (k = 1; k <= nk; k++) {
		split(order[k], kv, "|")
		v = kv[2] == "" ? "(bare)" : kv[2]
		if (runs[order[k]])
			printf "%-6s %-62s %5d %9.2f %9.2f\n", kv[1], v, runs[order[k]], med(mins[order[k]]), med(meds[order[k]])
		else
			printf "%-6s %-62s %5d %9s %9s\n", kv[1], v, 0, "failed", "-"
	}
}' "$out/results.txt"
echo "# load average after: $(bench_load)"
