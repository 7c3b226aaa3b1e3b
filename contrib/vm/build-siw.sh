#!/bin/bash
# build-siw.sh - build siw.ko (soft-iWARP) for the guest kernel; print its path.
#
# Debian builds its kernels with CONFIG_RDMA_SIW unset, so linux-image-* has no
# siw.ko. We compile drivers/infiniband/sw/siw out of tree from Debian's own
# linux-source package of the same version, against linux-headers-$KVER. The
# module is unsigned; the stock kernel does not force signatures, it only
# taints itself ('OE') when loading it. The result is cached per kernel.
#
# Env: VM_CACHE (default /var/tmp/rmca-vm), KVER (default: newest *-amd64).
set -euo pipefail
CACHE=${VM_CACHE:-/var/tmp/rmca-vm}
KVER=${KVER:-$(cd /lib/modules && ls -d -- *-amd64 | sort -V | tail -1)}
SRCVER=${KVER%%.0-*}			# 6.1.0-57-amd64 -> 6.1
OUT=$CACHE/siw/siw-$KVER.ko

if [ -s "$OUT" ]; then
	echo "$OUT"
	exit 0
fi
[ -d "/lib/modules/$KVER/build" ] || {
	echo "build-siw.sh: no headers for $KVER (run contrib/vm/setup.sh)" >&2
	exit 1
}

mkdir -p "$CACHE/debs" "$CACHE/siw"
# The source must be the version the image was built from, not just the newest.
ver=$(dpkg-query -W -f='${Version}' "linux-image-$KVER")
fetch() {
	(cd "$CACHE/debs" && apt-get -q download "$1" >/dev/null 2>&1)
}
deb=$(ls "$CACHE/debs/linux-source-${SRCVER}_${ver}_"*.deb 2>/dev/null | head -1 || true)
if [ -z "$deb" ]; then
	# Stale package lists are the usual reason for a failed download. When
	# the archive has moved on from the installed image, the newest source
	# of the same series is the next best thing: siw sees little change
	# within a stable series, and the headers set the module's vermagic.
	fetch "linux-source-$SRCVER=$ver" ||
		{ apt-get -q update >/dev/null 2>&1; fetch "linux-source-$SRCVER=$ver"; } ||
		{ echo "build-siw.sh: linux-source-$SRCVER=$ver is gone, using the newest" >&2
		  fetch "linux-source-$SRCVER"; } || {
		echo "build-siw.sh: cannot download linux-source-$SRCVER" >&2
		exit 1
	}
	deb=$(ls -t "$CACHE/debs/linux-source-${SRCVER}_"*.deb | head -1)
fi

work=$(mktemp -d "$CACHE/siw/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
# Only the siw directory is unpacked from the ~140 MB source tarball.
dpkg-deb --fsys-tarfile "$deb" |
	tar -xO "./usr/src/linux-source-$SRCVER.tar.xz" |
	tar -xJ -C "$work" --strip-components=5 \
		--wildcards "linux-source-$SRCVER/drivers/infiniband/sw/siw/*"
sed -i 's/obj-$(CONFIG_RDMA_SIW)/obj-m/' "$work/Makefile"
make -s -C "/lib/modules/$KVER/build" M="$work" modules -j"$(nproc)" \
	>"$work/make.log" 2>&1 || {
	cat "$work/make.log" >&2
	echo "build-siw.sh: building siw.ko failed" >&2
	exit 1
}
strip --strip-debug "$work/siw.ko" -o "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo "$OUT"
