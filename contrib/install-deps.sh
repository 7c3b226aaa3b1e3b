#!/bin/bash
# install-deps.sh - install what building and testing rmca needs on Debian 12
# (as root). With --vm, also what `make check-vm` needs (contrib/vm/setup.sh).
#
# Idempotent and quiet: apt is not touched when everything is installed, and
# its output is shown only when it fails.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
HERE=$(cd "$(dirname "$0")" && pwd)

PKGS="build-essential autoconf automake libtool libltdl-dev pkg-config
      libibverbs-dev librdmacm-dev rdma-core ibverbs-providers libcmocka-dev
      python3 iproute2 clang scdoc mandoc"
# the job tests: PMIx, and mpirun to launch them
PKGS+=" libpmix-dev openmpi-bin"
vm=0
for a in "$@"; do
	case $a in
	--vm) vm=1 ;;
	*) echo "usage: install-deps.sh [--vm]" >&2; exit 2 ;;
	esac
done

# Wait for another apt (unattended-upgrades, say) instead of failing.
APT="apt-get -q -y -o Dpkg::Use-Pty=0 -o DPkg::Lock::Timeout=600"
log=$(mktemp)
trap 'rm -f "$log"' EXIT

run_apt() {
	$APT "$@" >>"$log" 2>&1 && return 0
	cat "$log" >&2
	echo "install-deps.sh: apt-get $* failed" >&2
	exit 1
}

# One apt-get update for both lists: setup.sh then has only the kernel
# headers left to install, and is told the package lists are fresh.
[ $vm = 0 ] || PKGS+=" $("$HERE/vm/setup.sh" --list)"
need=
for p in $PKGS; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null |
		grep -q '^install ok installed$' || need+=" $p"
done
if [ -n "$need" ]; then
	run_apt update
	export RMCA_APT_UPDATED=1
	# shellcheck disable=SC2086
	run_apt install --no-install-recommends $need
fi
[ $vm = 0 ] || "$HERE/vm/setup.sh"
