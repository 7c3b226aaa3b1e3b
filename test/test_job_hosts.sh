#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# A job across two "hosts": two network namespaces joined by a veth pair,
# each with its own host name (UTS namespace). mpirun runs in the first and
# starts the second host's daemon through a stand-in for ssh that enters
# the namespace (plm_rsh_agent). Ranks alternate between the hosts, so
# every rank has peers on its own host and on the other one. TAP; without
# root, ip(8), unshare(1) or mpirun every case is skipped with the reason.

set -u

builddir=${RMCATEST_BUILDDIR:-.}
top=${RMCATEST_TOP_BUILDDIR:-$builddir/..}
mpirun=${MPIRUN:-mpirun}
limit=${RMCATEST_JOB_TIMEOUT:-120}
checks="join endpoints adopted sendrecv put get window fadd fence reconnect finalize"

set -- $checks
echo "1..$(($# + 1))"

skip=
if [ "$(id -u)" != 0 ]; then
	skip="needs root (network namespaces)"
elif ! command -v ip >/dev/null 2>&1 || ! command -v unshare >/dev/null 2>&1; then
	skip="no ip(8) or unshare(1)"
elif ! command -v "$mpirun" >/dev/null 2>&1; then
	skip="no mpirun (install openmpi-bin)"
elif ! "$builddir/test_job_nolauncher" --built 2>/dev/null; then
	skip="rmca built without PMIx (install libpmix-dev)"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rmca-jobhosts.XXXXXX") || exit 99
# names unique to this run: parallel runs never share a namespace
a=rmcajh$$a
b=rmcajh$$b
cleanup() {
	ip netns del "$a" 2>/dev/null
	ip netns del "$b" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

if [ -z "$skip" ]; then
	# Addresses live only inside these two namespaces.
	if ! { ip netns add "$a" && ip netns add "$b" &&
		ip link add "v$$a" type veth peer name "v$$b" &&
		ip link set "v$$a" netns "$a" && ip link set "v$$b" netns "$b" &&
		ip -n "$a" addr add 10.231.0.1/24 dev "v$$a" &&
		ip -n "$b" addr add 10.231.0.2/24 dev "v$$b" &&
		ip -n "$a" link set lo up && ip -n "$b" link set lo up &&
		ip -n "$a" link set "v$$a" up && ip -n "$b" link set "v$$b" up; } \
		>"$tmp/ip" 2>&1; then
		skip="cannot make network namespaces: $(head -1 "$tmp/ip")"
	fi
fi

n=0
if [ -n "$skip" ]; then
	for c in $checks; do
		n=$((n + 1))
		echo "ok $n - 2 hosts, 4 ranks: $c # SKIP $skip"
	done
	echo "ok $((n + 1)) - 2 hosts, examples/job_ring # SKIP $skip"
	exit 0
fi

# mpirun's ssh: the host name names the namespace.
cat >"$tmp/agent" <<'EOF'
#!/bin/sh
host=$1
shift
exec ip netns exec "$host" unshare --uts sh -c "hostname $host; $*"
EOF
chmod +x "$tmp/agent"
printf '%s slots=2\n%s slots=2\n' "$a" "$b" >"$tmp/hosts"

OMPI_ALLOW_RUN_AS_ROOT=1
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OMPI_MCA_hwloc_base_binding_policy=none
OMPI_MCA_btl_base_warn_component_unused=0
OMPI_MCA_plm_rsh_agent=$tmp/agent
export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM \
	OMPI_MCA_hwloc_base_binding_policy OMPI_MCA_btl_base_warn_component_unused \
	OMPI_MCA_plm_rsh_agent

# The remote daemon does not inherit this environment: -x carries what
# the ranks need (libtool's wrappers find the build tree's library), and
# the sanitizers' settings in an instrumented tree (test/Makefile.am).
xenv=
for v in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS; do
	eval "[ -n \"\${$v+set}\" ]" && xenv="$xenv -x $v"
done
job() {
	timeout -k 10 "$limit" ip netns exec "$a" unshare --uts sh -c \
		"hostname $a; exec \"$mpirun\" --hostfile \"$tmp/hosts\" -np 4 \
		--map-by node -x RMCA_component_path -x RMCATEST_JOBDIR -x PATH$xenv $*"
}

RMCATEST_JOBDIR=$tmp/out
export RMCATEST_JOBDIR
mkdir -p "$RMCATEST_JOBDIR"
job "\"$builddir/test_job\" all 4" >"$tmp/out.log" 2>&1
rc=$?
failed=0
for c in $checks; do
	n=$((n + 1))
	bad=
	for r in 0 1 2 3; do
		f=$RMCATEST_JOBDIR/rank.$r
		if ! grep -qx "ok $c" "$f" 2>/dev/null; then
			why=$(grep "^not ok" "$f" 2>/dev/null | head -1)
			bad="$bad rank $r: ${why:-no verdict (mpirun exit $rc)};"
		fi
	done
	if [ -z "$bad" ]; then
		echo "ok $n - 2 hosts, 4 ranks: $c"
	else
		failed=$((failed + 1))
		echo "not ok $n - 2 hosts, 4 ranks: $c"
		echo "#$bad"
	fi
done
[ $failed -eq 0 ] || sed 's/^/# mpirun: /' "$tmp/out.log" | head -40

n=$((n + 1))
job "\"$top/examples/job_ring\"" >"$tmp/ring" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q "token came back to rank 0 as 6 " "$tmp/ring" &&
	[ "$(grep -c "slot holds rank" "$tmp/ring")" -eq 4 ]; then
	echo "ok $n - 2 hosts, examples/job_ring"
else
	failed=$((failed + 1))
	echo "not ok $n - 2 hosts, examples/job_ring (exit $rc)"
	sed 's/^/# /' "$tmp/ring" | head -20
fi
[ $failed -eq 0 ]
