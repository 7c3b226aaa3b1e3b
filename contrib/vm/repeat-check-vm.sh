#!/bin/bash
# repeat-check-vm.sh [N] - run `make check-vm` N times (default 10) in a row
# from the build tree, one guest at a time. Each run's log is kept as
# check-vm.N.log (in $REPEAT_LOGDIR, default test/), each run's summary
# line is printed as it comes, and the script fails if any run failed or
# printed no summary. A flaky test shows here as one bad run in N; it is a
# bug to find (see README.md, "No reruns").
set -u
n=${1:-10}
dir=${REPEAT_LOGDIR:-test}
bad=0
mkdir -p "$dir"
for i in $(seq 1 "$n"); do
	start=$(date +%s)
	make check-vm >"$dir/check-vm.$i.make.log" 2>&1
	status=$?
	cp test/check-vm.log "$dir/check-vm.$i.log" 2>/dev/null
	line=$(grep '^check-vm: [0-9]' "$dir/check-vm.$i.log" 2>/dev/null |
		tail -1)
	echo "run $i/$n: ${line:-no summary} (exit $status, $(($(date +%s) - start)) s)"
	case $line in
	"check-vm: "*" passed, 0 failed, "*) [ $status = 0 ] || bad=$((bad + 1)) ;;
	*) bad=$((bad + 1)) ;;
	esac
done
echo "repeat-check-vm: $((n - bad)) of $n runs clean"
[ $bad = 0 ]
