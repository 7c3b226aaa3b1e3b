#!/bin/bash
# setup.sh - install what run-vm.sh needs on a Debian 12 host (run as root).
#
# Idempotent: when everything is already installed it does not touch apt.
# The kernel headers are installed for the newest *-amd64 kernel found after
# linux-image-amd64 is in, because siw.ko is built against exactly that kernel.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

# Kept in one place: contrib/install-deps.sh --vm asks for this list.
PKGS="qemu-system-x86 linux-image-amd64 busybox-static cpio kmod xz-utils
      python3 rdma-core ibverbs-providers ibverbs-utils rdmacm-utils perftest
      iproute2 libibverbs-dev librdmacm-dev make gcc"
if [ "${1:-}" = --list ]; then
	echo $PKGS
	exit 0
fi

# Wait for another apt (a colleague, unattended-upgrades) instead of failing.
APT="apt-get -q -y -o Dpkg::Use-Pty=0 -o DPkg::Lock::Timeout=600"
# install-deps.sh has just run apt-get update when it says so.
updated=${RMCA_APT_UPDATED:-0}

missing() {
	local p
	for p in "$@"; do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null |
			grep -q '^install ok installed$' || echo "$p"
	done
}

# apt's chatter goes to a log that is shown only when something fails.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
run_apt() {
	$APT "$@" >>"$log" 2>&1 && return 0
	cat "$log" >&2
	echo "setup.sh: apt-get $* failed" >&2
	exit 1
}

install() {
	local need
	need=$(missing "$@")
	[ -n "$need" ] || return 0
	if [ $updated = 0 ]; then
		run_apt update
		updated=1
	fi
	# shellcheck disable=SC2086
	run_apt install --no-install-recommends $need
}

# shellcheck disable=SC2086
install $PKGS

kver=$(cd /lib/modules && ls -d -- *-amd64 | sort -V | tail -1)
[ -n "$kver" ] || { echo "setup.sh: no *-amd64 kernel installed" >&2; exit 1; }
install "linux-headers-$kver"
