#!/bin/sh
# two-hosts.sh add|del - an opt-in pair of "hosts" in the check-vm guest:
# two network namespaces joined by two veth pairs on two subnets, each end
# with its own soft-iWARP device (siw works across namespaces; rxe's
# rdma_cm does not):
#
#   namespace rmca-a                namespace rmca-b
#   siwa0  va0  10.5.0.1/24  <--->  vb0  10.5.0.2/24  siwb0
#   siwa1  va1  10.5.1.1/24  <--->  vb1  10.5.1.2/24  siwb1
#
# A process joins one with `ip netns exec rmca-a ...` or setns() on
# /run/netns/rmca-a. The routing tests add it for their own run and delete
# it after; "add" first removes what an interrupted run may have left.
# Needs root, iproute2 and rdma (the guest has them).
set -u
IP=${IP:-ip}

del() {
	for d in siwa0 siwa1 siwb0 siwb1; do
		rdma link delete "$d" 2>/dev/null
	done
	# deleting a namespace deletes its veth ends, and so the pairs
	$IP netns delete rmca-a 2>/dev/null
	$IP netns delete rmca-b 2>/dev/null
	return 0
}

add() {
	# The guest's initramfs has no veth: load it from the host's modules
	# (the guest runs in a chroot of the host's root).
	grep -q '^veth ' /proc/modules || modprobe veth || return 1
	$IP netns add rmca-a && $IP netns add rmca-b || return 1
	for ns in rmca-a rmca-b; do
		$IP -n $ns link set lo up || return 1
	done
	for i in 0 1; do
		$IP link add va$i netns rmca-a type veth peer name vb$i \
			netns rmca-b &&
			$IP -n rmca-a addr add 10.5.$i.1/24 dev va$i &&
			$IP -n rmca-b addr add 10.5.$i.2/24 dev vb$i &&
			$IP -n rmca-a link set va$i up &&
			$IP -n rmca-b link set vb$i up &&
			$IP netns exec rmca-a rdma link add siwa$i type siw \
				netdev va$i &&
			$IP netns exec rmca-b rdma link add siwb$i type siw \
				netdev vb$i || return 1
	done
}

case ${1:-} in
add)
	del
	if ! add; then
		echo "$0: cannot set up the two hosts" >&2
		del
		exit 1
	fi
	;;
del)
	del
	;;
*)
	echo "usage: $0 add|del" >&2
	exit 2
	;;
esac
