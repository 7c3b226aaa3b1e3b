#!/bin/sh
# second-device.sh add|del ib|iwarp - an opt-in second RDMA device in the
# check-vm guest, beside the two that guest-init makes (rxe0 on dummy0,
# 10.0.0.1; siw0 on dummy1, 10.0.1.1), each on its own netdev and subnet:
#
#   ib     rxe1 on dummy2, 10.0.2.1/24
#   iwarp  siw1 on dummy3, 10.0.3.1/24
#
# The routing tests add it for their own run and delete it after, so every
# other check-vm case sees the guest as guest-init left it. "add" first
# removes what an interrupted run may have left. Needs root, iproute2 and
# rdma (the guest has them). Prints "DEVICE ADDRESS" on success.
set -u
IP=${IP:-ip}
case ${2:-} in
ib) dev=rxe1 type=rxe nd=dummy2 addr=10.0.2.1 ;;
iwarp) dev=siw1 type=siw nd=dummy3 addr=10.0.3.1 ;;
*)
	echo "usage: $0 add|del ib|iwarp" >&2
	exit 2
	;;
esac

del() {
	rdma link delete "$dev" 2>/dev/null
	$IP link delete "$nd" 2>/dev/null
	return 0
}

case $1 in
add)
	del
	$IP link add "$nd" type dummy &&
		$IP addr add "$addr/24" dev "$nd" &&
		$IP link set "$nd" up &&
		rdma link add "$dev" type "$type" netdev "$nd" || {
		echo "$0: cannot add $dev on $nd ($addr)" >&2
		del
		exit 1
	}
	echo "$dev $addr"
	;;
del)
	del
	;;
*)
	echo "usage: $0 add|del ib|iwarp" >&2
	exit 2
	;;
esac
