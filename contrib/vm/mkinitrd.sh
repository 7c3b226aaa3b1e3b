#!/bin/bash
# mkinitrd.sh - build the guest's base initramfs and kernel into the cache:
#
#   $VM_CACHE/out/base-$KVER.cpio   busybox, the RDMA and 9p modules (with
#                                   siw.ko from build-siw.sh), ip, rdma and a
#                                   few verbs tools with their libraries
#   $VM_CACHE/out/vmlinux-$KVER     the kernel's ELF image, unpacked from
#                                   vmlinuz: qemu boots it through its PVH
#                                   entry, which skips the in-guest XZ
#                                   decompression (about 4 s under TCG)
#
# Prints the cpio's path. run-vm.sh calls this when the cpio is missing or
# older than this script or guest-init.
# Env: VM_CACHE (default /var/tmp/rmca-vm), KVER (default: newest *-amd64).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${VM_CACHE:-/var/tmp/rmca-vm}
KVER=${KVER:-$(cd /lib/modules && ls -d -- *-amd64 | sort -V | tail -1)}
OUT=$CACHE/out
IMG=$OUT/base-$KVER.cpio
LIBDIR=/usr/lib/x86_64-linux-gnu

SIW=$(VM_CACHE=$CACHE KVER=$KVER "$HERE/build-siw.sh")
mkdir -p "$OUT"
R=$(mktemp -d "$OUT/root.XXXXXX")
trap 'rm -rf "$R"' EXIT
mkdir -p "$R"/{usr/bin,usr/sbin,usr/lib64,etc,proc,sys,dev,tmp,run,root,host,cmd}
mkdir -p "$R$LIBDIR"
for d in bin sbin lib lib64; do
	ln -s "usr/$d" "$R/$d"
done

# busybox with its applets; the real ip and rdma are copied below and must
# not be shadowed (busybox ip cannot create dummy links the way we need).
cp /bin/busybox "$R/usr/bin/busybox"
for a in $(/bin/busybox --list); do
	[ -e "$R/usr/bin/$a" ] || ln -s busybox "$R/usr/bin/$a"
done
rm -f "$R/usr/bin/ip"

# Kernel modules: the dependency closure from the host's modules.dep.
top="rdma_rxe rdma_ucm ib_umad ib_uverbs dummy libcrc32c crc32c_generic
     crc32_generic 9p 9pnet_virtio virtio_pci"
for m in $top; do
	modprobe -S "$KVER" --show-depends "$m"
done | awk '$1 == "insmod" { print $2 }' | sort -u | while read -r ko; do
	mkdir -p "$R$(dirname "$ko")"
	cp "$ko" "$R$ko"
done
mkdir -p "$R/lib/modules/$KVER/extra"
cp "$SIW" "$R/lib/modules/$KVER/extra/siw.ko"
cp "/lib/modules/$KVER"/modules.{order,builtin,builtin.modinfo} \
	"$R/lib/modules/$KVER/"
depmod -b "$R" "$KVER"

# User space: the tools, every library ldd names, the loader. Enough to set
# up the devices, and to poke at them with VM_HOST=0 when the host is broken.
bins="/usr/bin/bash /usr/sbin/ip /usr/bin/rdma /usr/bin/ibv_devices
      /usr/bin/ibv_devinfo /usr/bin/rping"
provs="$LIBDIR/libibverbs/librxe-rdmav34.so $LIBDIR/libibverbs/libsiw-rdmav34.so"
for f in $bins $provs; do
	[ -f "$f" ] || { echo "mkinitrd.sh: missing $f" >&2; exit 1; }
	mkdir -p "$R$(dirname "$f")"
	rm -f "$R$f"		# never write through a busybox symlink
	cp -L "$f" "$R$f"
	ldd "$f" | awk '/=> \// { print $3 } /^\t\// { print $1 }'
done | sort -u | while read -r lib; do
	cp -L "$lib" "$R$LIBDIR/$(basename "$lib")"
done
cp -L /lib64/ld-linux-x86-64.so.2 "$R/usr/lib64/"
# glibc dlopen()s libgcc_s for thread exit and cancellation.
cp -L "$LIBDIR/libgcc_s.so.1" "$R$LIBDIR/"
mkdir -p "$R/etc/libibverbs.d"
cp /etc/libibverbs.d/{rxe,siw}.driver "$R/etc/libibverbs.d/"
ldconfig -r "$R"
echo 'root:x:0:0:root:/root:/bin/sh' >"$R/etc/passwd"
echo 'root:x:0:' >"$R/etc/group"
echo '127.0.0.1 localhost' >"$R/etc/hosts"
install -m 755 "$HERE/guest-init" "$R/init"

# Uncompressed: gunzip of ~20 MB costs about a second under TCG. Zero-padded
# so that the per-run cpio appended by run-vm.sh starts aligned.
(cd "$R" && find . -print0 | cpio --null -o -H newc --quiet) >"$IMG.tmp"
truncate -s %512 "$IMG.tmp"

vmlinux=$OUT/vmlinux-$KVER
if [ ! -s "$vmlinux" ]; then
	python3 - "/boot/vmlinuz-$KVER" "$vmlinux.tmp" <<'PY'
import lzma, sys
data = open(sys.argv[1], "rb").read()
at = data.find(b"\xfd7zXZ\x00")
if at < 0:
	sys.exit("mkinitrd.sh: no XZ payload in " + sys.argv[1])
dec = lzma.LZMADecompressor()
open(sys.argv[2], "wb").write(dec.decompress(data[at:]))
PY
	mv "$vmlinux.tmp" "$vmlinux"
fi
mv "$IMG.tmp" "$IMG"
echo "$IMG"
