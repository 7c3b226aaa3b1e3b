#!/bin/bash
# stress-iwarp-setup.sh - many processes open and close iwarp modules while
# others run jobs (connect, exchange, close), as users' jobs do. Run in the
# guest from a build tree:
#
#   cd _build && ../contrib/vm/run-vm.sh -f ../contrib/vm/stress-iwarp-setup.sh
#
# Knobs: STRESS_SECONDS (120), STRESS_OPENERS (4) processes looping
# rmca_info, STRESS_JOBS (2) processes looping test_api_connect, all with
# RMCA_transports=${STRESS_TRANSPORT:-iwarp} on ${STRESS_HOST:-10.0.1.1}.
# Prints how many opens and jobs ran, every set-up warning and failed case,
# and how many TCP ports of the host sat in TIME_WAIT; exits non-zero when
# a module failed to come up or a job failed.
set -u
top=${RMCATEST_TOP_BUILDDIR:-$PWD}
secs=${STRESS_SECONDS:-120}
export RMCA_transports=${STRESS_TRANSPORT:-iwarp}
export RMCATEST_HOST=${STRESS_HOST:-10.0.1.1}
export RMCA_component_path=$top/components/tcp/.libs:$top/components/ib/.libs:$top/components/iwarp/.libs
export CMOCKA_MESSAGE_OUTPUT=TAP RMCATEST_TOP_BUILDDIR=$top
out=$(mktemp -d)
end=$(($(date +%s) + secs))

opener() {
	local n=0
	while [ "$(date +%s)" -lt $end ]; do
		"$top/tools/rmca_info" >/dev/null 2>>"$out/open.$1.err"
		n=$((n + 1))
	done
	echo $n >"$out/open.$1.n"
}

job() {
	local n=0
	while [ "$(date +%s)" -lt $end ]; do
		(cd "$top/test" && ./test_api_connect) >>"$out/job.$1.out" 2>&1
		n=$((n + 1))
	done
	echo $n >"$out/job.$1.n"
}

tw_max=0
for i in $(seq 1 "${STRESS_OPENERS:-4}"); do opener "$i" & done
for i in $(seq 1 "${STRESS_JOBS:-2}"); do job "$i" & done
while [ "$(date +%s)" -lt $end ]; do
	tw=$(ss -Htan state time-wait src "$RMCATEST_HOST" | wc -l)
	[ "$tw" -gt $tw_max ] && tw_max=$tw
	sleep 5
done
wait
opens=$(cat "$out"/open.*.n | awk "{ s += \$1 } END { print s + 0 }")
jobs=$(cat "$out"/job.*.n | awk "{ s += \$1 } END { print s + 0 }")
warn=$(cat "$out"/open.*.err "$out"/job.*.out | grep -c '^rmca: ')
bad=$(cat "$out"/open.*.err "$out"/job.*.out | grep -v '# SKIP' |
	grep -c -E 'cannot set up|cannot listen|no enabled transport|^not ok')
cat "$out"/open.*.err "$out"/job.*.out | grep -v '# SKIP' |
	grep -E 'cannot|no enabled transport|^not ok' |
	sort | uniq -c | sort -rn | head -20
echo "stress: $opens opens, $jobs jobs, $warn warnings, $bad failures," \
	"at most $tw_max ports in TIME_WAIT on $RMCATEST_HOST"
rm -rf "$out"
[ "$bad" = 0 ]
