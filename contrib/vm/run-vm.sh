#!/bin/bash
# run-vm.sh - run a command in a throw-away qemu guest that has real kernel
# RDMA devices: soft-RoCE rxe0 on dummy0 (10.0.0.1/24) and soft-iWARP siw0 on
# dummy1 (10.0.1.1/24). The guest boots Debian's stock kernel.
#
#   run-vm.sh [-f script] [--] [command [args...]]
#
# The command runs as root under bash, chrooted into the host's / (mounted
# read-only over 9p), so binaries built on the host run unchanged with the
# host's libraries. The directories in $VM_SHARE are mounted read-write at
# their own paths; the working directory is the caller's. /tmp is an empty
# tmpfs, `ulimit -l` is unlimited. Guest output goes to stdout; the exit
# status is the command's, or 255 when the guest crashed or timed out.
#
# Env: VM_SHARE    directories shared read-write, space separated
#                  (default: $PWD; '' for none)
#      VM_ENV      names of variables to pass on to the command
#      VM_TIMEOUT  seconds before the guest is killed (600)
#      VM_MEM VM_CPUS (2G, 2)   VM_ACCEL (kvm|tcg, guessed)
#      VM_RDMA=0   no RDMA devices    VM_HOST=0  stay in the initramfs
#      VM_VERBOSE=1   VM_APPEND  extra kernel arguments
#      VM_CACHE    cache of kernel, siw.ko and initramfs (/var/tmp/rmca-vm)
#      KVER        guest kernel (newest installed *-amd64)
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${VM_CACHE:-/var/tmp/rmca-vm}
KVER=${KVER:-$(cd /lib/modules 2>/dev/null && ls -d -- *-amd64 | sort -V | tail -1)}
if [ -z "$KVER" ] || ! command -v qemu-system-x86_64 >/dev/null; then
	echo "run-vm.sh: no guest kernel or qemu: run contrib/vm/setup.sh" >&2
	exit 255
fi
mkdir -p "$CACHE" || exit 255
BASE=$CACHE/out/base-$KVER.cpio

# Two runs may race to build the cache; the lock makes the second one wait.
exec 9>"$CACHE/.lock"
flock 9
# Keyed on content, not mtime: a fresh clone must not rebuild for nothing.
key=$(cat "$HERE/mkinitrd.sh" "$HERE/guest-init" | sha1sum)
if [ ! -f "$BASE" ] || [ "$(cat "$BASE.key" 2>/dev/null)" != "$key" ]; then
	VM_CACHE=$CACHE KVER=$KVER "$HERE/mkinitrd.sh" >/dev/null || exit 255
	echo "$key" >"$BASE.key"
fi
flock -u 9

T=$(mktemp -d "$CACHE/run.XXXXXX") || exit 255
trap 'rm -rf "$T"' EXIT
mkdir "$T/cmd"
# The guest's init starts the command with an empty environment.
for v in ${VM_ENV:-}; do
	[ -n "${!v+set}" ] && printf 'export %s=%q\n' "$v" "${!v}"
done >"$T/cmd/run.sh"
if [ "${1:-}" = -f ]; then
	cat "$2" >>"$T/cmd/run.sh" || exit 255
	shift 2
else
	[ "${1:-}" = -- ] && shift
	[ $# -gt 0 ] || { echo "usage: run-vm.sh [-f script] [--] command..." >&2; exit 255; }
	printf '%q ' "$@" >>"$T/cmd/run.sh"
	echo >>"$T/cmd/run.sh"
fi
# The payload is a second cpio appended to the base one: the kernel unpacks
# concatenated archives, so the initramfs is not rebuilt for each run.
(cd "$T" && find cmd | cpio -o -H newc --quiet) >"$T/cmd.cpio"
cat "$BASE" "$T/cmd.cpio" >"$T/initrd"

append="console=ttyS0 quiet panic=-1 mitigations=off vm.cwd=$PWD"
[ "${VM_HOST:-1}" = 0 ] && append+=" vm.host=0"
[ "${VM_RDMA:-1}" = 0 ] && append+=" vm.rdma=0"
[ "${VM_VERBOSE:-0}" = 1 ] && append+=" vm.verbose=1"
fs=(-virtfs 'local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap')
# Parents before children: a directory shared inside another shared one
# must be mounted after it, or the outer mount hides it.
shares=$(for d in ${VM_SHARE-$PWD}; do realpath -e "$d" || exit 1; done |
	 awk '$0 != "/"' | sort -u | awk '{ print length, $0 }' | sort -n |
	 cut -d' ' -f2-) || { echo "run-vm.sh: bad VM_SHARE" >&2; exit 255; }
i=0
list=
for d in $shares; do
	fs+=(-virtfs "local,path=$d,mount_tag=share$i,security_model=none,multidevs=remap")
	list+=${list:+,}$d
	i=$((i + 1))
done
[ -n "$list" ] && append+=" vm.share=$list"

# kvm only where /dev/kvm is real KVM: under kvm_pvm (nested PVM) a stock
# kernel barely gets past its decompressor, so TCG it is there.
accel=${VM_ACCEL:-$([ -w /dev/kvm ] && [ ! -d /sys/module/kvm_pvm ] && echo kvm || echo tcg)}
if [ "$accel" = kvm ]; then
	acc=(-accel kvm -cpu 'host,-arch-capabilities')
else
	acc=(-accel 'tcg,thread=multi' -cpu max)
fi
kernel=$CACHE/out/vmlinux-$KVER
[ -s "$kernel" ] || kernel=/boot/vmlinuz-$KVER

timeout -k 5 "${VM_TIMEOUT:-600}" qemu-system-x86_64 "${acc[@]}" \
	-m "${VM_MEM:-2G}" -smp "${VM_CPUS:-2}" -nodefaults -no-user-config \
	-display none -monitor none -serial stdio -no-reboot \
	-kernel "$kernel" -initrd "$T/initrd" -append "$append ${VM_APPEND:-}" \
	"${fs[@]}" </dev/null 2>"$T/qemu.err" |
	tr -d '\r' | awk -v sf="$T/status" '
		/^@@VM-EXIT-STATUS=[0-9]+@@$/ {
			gsub(/[^0-9]/, ""); print > sf; next
		}
		/^\[ *[0-9.]+\] reboot: Power down$/ { next }
		{ print; fflush() }'
grep -v 'Multiple devices detected' "$T/qemu.err" >&2
[ -s "$T/status" ] && exit "$(cat "$T/status")"
echo "run-vm.sh: no exit status from the guest (crash or timeout)" >&2
exit 255
