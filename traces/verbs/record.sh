#!/usr/bin/env bash
# Record the golden traces of unmodified ibv_rc_pingpong (ibverbs-utils)
# across two virtual hosts on the fake verbs fabric (traces/verbs/) again,
# with what the job printed (NAME.log) and the expected `ncclrr replay`
# output (NAME.expected). Both run on topo/2node_8gpu_roce_mtu.xml, whose
# node0 NICs have an active MTU of 1024 and node1's 4096; rank 0 (node0)
# serves, rank 1 (node1) connects (tests/verbs/rc_pingpong.sh).
#   clean: path MTU 1024 (rc_pingpong's default), which both ports carry
#   mtu:   path MTU 4096 (-m 4096): node0's RTR is refused (EINVAL)
# usage: traces/verbs/record.sh [BUILD_DIR] [NAME...]
# shellcheck source=traces/record_common.sh
. "$(dirname "$0")/../record_common.sh"
topo=$root/topo/2node_8gpu_roce_mtu.xml
command -v ibv_rc_pingpong >/dev/null || { echo "record.sh: no ibv_rc_pingpong: apt-get install ibverbs-utils" >&2; exit 1; }
unset NCCLRR_FAULT
export PP_PORT=${PP_PORT:-18517}

rec() {
	local name=$1; shift
	rm -rf "${here:?}/$name"
	"$ncclrr" record -q -o "$here/$name" -- \
		"$ncclrr" run --topo "$topo" -np 2 --timeout 60 -- "$root/tests/verbs/rc_pingpong.sh" -d mlx5_0 -g 0 "$@" \
		>"$here/$name.log" 2>&1 || true
	"$ncclrr" replay --topo "$topo" "$here/$name" 2>&1 | "$root/traces/replay/normalize.sh" >"$here/$name.expected" || true
}

want() { local n=$1; shift; [ $# -eq 0 ] || [[ " $* " == *" $n "* ]]; }
want clean "$@" && rec clean -n 20
want mtu "$@" && rec mtu -m 4096 -n 20
exit 0
