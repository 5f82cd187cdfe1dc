#!/usr/bin/env bash
# The unmodified programs of Debian's ibverbs-utils on the fake libibverbs,
# across the two virtual hosts of topo/2node_8gpu_pcie.xml under `ncclrr run`
# (rank 0 on host 0, rank 1 on host 1): ibv_devices and ibv_devinfo show
# each host's NICs; ibv_rc_pingpong runs host 0 <-> host 1 with and without
# completion events, over RoCE with a GID index, ibv_srq_pingpong's 16 QPs
# share a receive queue (emptied, with RNR), RTR fails as an HCA does
# for a path MTU above the port's, and is recorded by `ncclrr record` with
# its data path (post_send/post_recv/poll_cq through the ops table).
# usage: test_verbs_tools.sh NCCLRR SOURCE_ROOT   (NCCLRR_FAKE_LIBDIR set by meson)
set -uo pipefail
ncclrr=$(realpath "$1")
root=$2
for p in ibv_devices ibv_devinfo ibv_rc_pingpong ibv_srq_pingpong; do
	command -v $p >/dev/null || { echo "SKIP: $p not found (Debian package ibverbs-utils; scripts/setup.sh installs it)"; exit 77; }
done
. "$root/tests/lib/check.sh"
unset RANK WORLD_SIZE OMPI_COMM_WORLD_RANK SLURM_PROCID LOCAL_RANK
topo=$root/topo/2node_8gpu_pcie.xml
mustnot() { ! grep -q -- "$2" "$3"; check "$1: no '$2' in $3" $?; }
run() { "$ncclrr" run --topo "$1" -np 2 --timeout 60 -- "${@:2}"; }

# ---- ibv_devices, ibv_devinfo: the host's NICs, names, GUIDs, speed, link layer
run "$topo" ibv_devices >"$tmp/devices" 2>&1
check "ibv_devices exits 0" $?
# 2node_8gpu_pcie: host 0's NICs have GUIDs 0xb83f00..., host 1's 0xb84000...
must devices '^\[0\][[:space:]]*mlx5_0[[:space:]]*b83f0000ec0e5d16' "$tmp/devices"
must devices '^\[0\][[:space:]]*mlx5_1[[:space:]]*b83f0100ec0e5d38' "$tmp/devices"
must devices '^\[1\][[:space:]]*mlx5_0[[:space:]]*b8400000ec0e5d16' "$tmp/devices"
mustnot devices 'mlx5_2' "$tmp/devices"
run "$topo" ibv_devinfo -v >"$tmp/devinfo" 2>&1
check "ibv_devinfo -v exits 0" $?
must devinfo '^\[0\] hca_id:	mlx5_0' "$tmp/devinfo"
must devinfo '^\[1\] 	node_guid:			b840:0100:ec0e:5d38' "$tmp/devinfo"
must devinfo '^\[0\] 			link_layer:		InfiniBand' "$tmp/devinfo"
must devinfo '^\[0\] 			active_mtu:		4096 (5)' "$tmp/devinfo"
# 400 Gb/s on 4X is 100 Gb/s a lane: NDR
must devinfo '^\[0\] 			active_width:		4X (2)' "$tmp/devinfo"
must devinfo '^\[0\] 			active_speed:		100.0 Gbps (128)' "$tmp/devinfo"
# LIDs are unique per (host, NIC): host 0 mlx5_0 is 1, host 1 mlx5_1 is 34
must devinfo '^\[0\] 			port_lid:		1$' "$tmp/devinfo"
must devinfo '^\[1\] 			port_lid:		34$' "$tmp/devinfo"

# ---- ibv_rc_pingpong, server on host 0, client on host 1
ppsh=$root/tests/verbs/rc_pingpong.sh
pp() { # NAME TOPO ARGS...
	local name=$1 t=$2
	shift 2
	port_run "$tmp/$name" run "$t" "$ppsh" "$@"
}
pp pp_plain "$topo" -d mlx5_0 -n 200
check "ibv_rc_pingpong exits 0" $?
must pp_plain '^\[0\] 1638400 bytes in' "$tmp/pp_plain"
must pp_plain '^\[1\] 200 iters in' "$tmp/pp_plain"
must pp_plain '^\[1\]   remote address: LID 0x0001' "$tmp/pp_plain"
must pp_plain '^\[0\]   remote address: LID 0x0021' "$tmp/pp_plain"
pp pp_events "$topo" -d mlx5_1 -n 200 -e
check "ibv_rc_pingpong -e exits 0" $?
must pp_events '^\[0\] 200 iters in' "$tmp/pp_events"
must pp_events '^\[1\] 200 iters in' "$tmp/pp_events"

# ibv_srq_pingpong: 16 QPs a side receiving from one shared receive queue;
# with -r 16 the SRQ runs dry, and the senders go through RNR retries
for r in 500 16; do
	PP_PROG=ibv_srq_pingpong pp "srq$r" "$topo" -d mlx5_0 -n 200 -r $r
	check "ibv_srq_pingpong -r $r exits 0" $?
	must "srq$r" '^\[0\] 200 iters in' "$tmp/srq$r"
	must "srq$r" '^\[1\] 200 iters in' "$tmp/srq$r"
done

# RoCE: 2node_8gpu_roce, the same cluster with Ethernet ports of MTU 1024;
# GID 1 is RoCE v2 ::ffff:10.H.H.(i+1)
roce=$root/topo/2node_8gpu_roce.xml
run "$roce" ibv_devinfo -v >"$tmp/devinfo_roce" 2>&1
must devinfo_roce '^\[1\] 			link_layer:		Ethernet' "$tmp/devinfo_roce"
must devinfo_roce '^\[1\] 			GID\[  1\]:		::ffff:10.0.1.1, RoCE v2' "$tmp/devinfo_roce"
pp pp_roce "$roce" -d mlx5_0 -g 1 -m 1024 -n 100
check "ibv_rc_pingpong -g 1 over RoCE exits 0" $?
must pp_roce '^\[1\]   remote address: LID 0x0000, QPN 0x[0-9a-f]*, PSN 0x[0-9a-f]*, GID ::ffff:10.0.0.1' "$tmp/pp_roce"
must pp_roce '^\[0\] 100 iters in' "$tmp/pp_roce"
# a path MTU above the port's (1024): RTR fails on both sides, as on an HCA
pp pp_mtu "$roce" -d mlx5_0 -g 1 -m 2048 -n 10
check "ibv_rc_pingpong -m 2048 on a 1024 port fails" $((! $?))
must pp_mtu '^\[0\] Failed to modify QP to RTR' "$tmp/pp_mtu"
# RoCE without a GID: no GRH, which a RoCE port refuses
pp pp_nogid "$roce" -d mlx5_0 -n 10
check "ibv_rc_pingpong without -g over RoCE fails" $((! $?))
must pp_nogid 'Failed to modify QP to RTR' "$tmp/pp_nogid"

# two NICs of the cluster with one GUID: said, naming the file and both NICs
sed 's/guid="0xb840/guid="0xb83f/' "$topo" >"$tmp/dupguid.xml"
pp pp_dupguid "$tmp/dupguid.xml" -d mlx5_0 -n 10
must pp_dupguid "libibverbs: $tmp/dupguid.xml: host 0 NIC 0 and host 1 NIC 0 have the same guid 0x" "$tmp/pp_dupguid"

# ---- NCCLRR_FAULT reaches verbs calls: rank 1's ibv_reg_mr fails with ENOMEM
cat >"$tmp/fault.sh" <<'E'
#!/bin/bash
[ "$NCCLRR_RANK" = 1 ] || exit 0
exec ibv_rc_pingpong -d mlx5_0 -p "$PP_PORT"
E
chmod +x "$tmp/fault.sh"
PP_PORT=$(free_port) "$ncclrr" run --topo "$topo" -np 2 --timeout 60 --env 'NCCLRR_FAULT=ibv_reg_mr:rank=1:ENOMEM' -- \
	"$tmp/fault.sh" >"$tmp/fault" 2>&1
check "a fault in ibv_reg_mr fails the program" $((! $?))
must fault '^\[1\] ncclrr-fake: injecting ENOMEM into ibv_reg_mr (rank 1, call 1)' "$tmp/fault"
must fault "^\[1\] Couldn't register MR" "$tmp/fault"

# ---- the tracer records the verbs calls, the data path included
PP_PORT=$(free_port) "$ncclrr" record -q -o "$tmp/rec" -- "$ncclrr" run --topo "$topo" -np 2 --timeout 60 -- \
	"$ppsh" -d mlx5_0 -n 20 >"$tmp/rec.log" 2>&1
check "ncclrr record of ibv_rc_pingpong exits 0" $?
for f in "$tmp"/rec/*.nrt; do "$ncclrr" dump "$f"; done >"$tmp/rec.dump" 2>&1
for fn in ibv_open_device ibv_reg_mr ibv_create_qp ibv_modify_qp ibv_post_recv ibv_post_send ibv_poll_cq; do
	must record "$fn(" "$tmp/rec.dump"
done
# the created QP's number and the MR's keys (fields of the returned structs):
# the QP numbers recorded are those the program printed as its own
rec_qpn=$(grep -oE 'ibv_create_qp.*qp_num=[0-9]+' "$tmp/rec.dump" | sed 's/.*qp_num=//' | sort -n | paste -sd' ')
log_qpn=$(grep -oE 'local address: .*QPN 0x[0-9a-f]+' "$tmp/rec.log" | sed 's/.*QPN //' |
	while read -r h; do echo $((h)); done | sort -n | paste -sd' ')
# (a client that found the server not listening yet ran again: its earlier
# processes made QPs too, so the printed ones are among those recorded)
ok=$([ -n "$log_qpn" ] && [ "$(wc -w <<<"$log_qpn")" = 2 ] && echo 1)
for q in $log_qpn; do [[ " $rec_qpn " == *" $q "* ]] || ok=; done
[ -n "$ok" ]
check "the QPNs ibv_rc_pingpong printed ($log_qpn) are recorded qp_nums ($rec_qpn)" $?
grep -qE 'ibv_reg_mr\(.*lkey=[0-9]+, rkey=[1-9][0-9]*\) = 0x' "$tmp/rec.dump"
check "ibv_reg_mr recorded with its lkey and rkey" $?
n=$(grep -c 'ibv_post_send(' "$tmp/rec.dump")
[ "$n" -ge 40 ]
check "ibv_post_send recorded 20 times on each rank (got $n)" $?
# its polls found completions, all with IBV_WC_SUCCESS: none is a failed call
# (failed= on ibv_poll_cq's wc fails only a poll returning an error status)
n=$(grep -cE 'ibv_poll_cq\(.*\) = [1-9][0-9]* ' "$tmp/rec.dump")
[ "$n" -ge 20 ] && ! grep -q 'ibv_poll_cq(.*\[wc\[' "$tmp/rec.dump"
check "ibv_poll_cq recorded with completions ($n) and no error status" $?
[ -z "$("$ncclrr" dump --errors --api ibv_poll_cq "$tmp/rec" 2>&1)" ]
check "no ibv_poll_cq of a clean ibv_rc_pingpong is a failure" $?

echo "$pass passed, $fails failed"
[ "$fails" -eq 0 ]
