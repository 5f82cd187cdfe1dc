#!/usr/bin/env bash
# Real NCCL on the fake runtime under `ncclrr run` (suite nccl / slow).
# usage: test_nccl.sh CASE NCCLRR SOURCE_ROOT WORKLOAD_DIR [NCCL_HINT] [RUNS]
# CASE: cumem | ipc | shm | nonblocking | tp_dp | tp_dp_connect_at_init |
#       tp_dp_socket | roce | ib_hca | ib_gdr | 4node | ipc_fault | cumem_fault | net_connect |
#       tp_dp_ncclrr_ib (needs NCCLRR_NET_IB_PLUGIN: libnccl-net-ncclrr-ib.so)
# NCCLRR_TEST_NET (from meson): IB when the fake libibverbs is built (NCCL
# takes NET/IB between virtual hosts), else Socket
set -uo pipefail
case_=$1
ncclrr=$(realpath "$2")
root=$3
wl=$(realpath "$4")
NCCL_HINT=${5:-}
runs=${6:-3}
here=$(dirname "$(realpath "$0")")
. "$here/nccl_common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
echo "NCCL: $NCCL"
net=${NCCLRR_TEST_NET:-Socket}
# what every NET channel line of a default run says (nccl_channels.py INTER):
# NET/IB with GPUDirect (the fake driver's dma-buf), or NET/Socket
case $net in
IB) net_via='NET/IB/[0-9]+/GDRDMA$' ;;
*) net_via='NET/Socket/[0-9]+$' ;;
esac

# run TOPO TIMEOUT LOG ARGS... -> exit status of ncclrr run; prints wall time
run() {
	local topo=$1 to=$2 log=$3; shift 3
	local t0=$(date +%s.%N)
	NCCL_DEBUG=INFO "$ncclrr" run --topo "$root/topo/$topo" --timeout "$to" "$@" >"$log" 2>&1
	local rc=$?
	echo "wall: $(echo "$(date +%s.%N) - $t0" | bc) s ($topo ${*})"
	return $rc
}
count() { grep -c -- "$1" "$2" || true; }
show_tail() { echo "---- last lines of $1"; tail -n 40 "$1"; echo "----"; }

# every Channel line names the transport the topology implies (nccl_channels.py)
channels() { # log world local_size intra-pattern label [inter-pattern [rail]]
	python3 "$here/nccl_channels.py" "$1" "$2" "$3" "$4" "${@:6}" || fail "$5: channels do not follow the topology"
}

# 8 ranks on 1node_8gpu, each reaching Init COMPLETE, every channel via $1,
# then ncclCommFinalize + ncclCommDestroy (no NET proxy: destroy ends)
one_node() { # pattern label [extra ncclrr-run args]
	local pat=$1 label=$2; shift 2
	local log=$tmp/$label.log
	run 1node_8gpu.xml 240 "$log" "$@" -- "$wl/init_allreduce" --end destroy
	local rc=$?
	[ $rc -eq 0 ] || { fail "$label: ncclrr run exited $rc"; show_tail "$log"; }
	local n; n=$(grep -- '- Init COMPLETE' "$log" | sed -n 's/^\[\([0-9]*\)\].*/\1/p' | sort -u | wc -l)
	[ "$n" -eq 8 ] || fail "$label: $n of 8 ranks reached Init COMPLETE"
	channels "$log" 8 8 "$pat" "$label"
	n=$(count ': allreduce ok' "$log")
	[ "$n" -eq 8 ] || fail "$label: $n of 8 ranks finished the AllReduce"
	n=$(count ': world comm destroyed' "$log")
	[ "$n" -eq 8 ] || fail "$label: $n of 8 ranks destroyed their communicator"
}

# tp_dp on 2node_16gpu: three communicators per rank, a first collective on
# each, ncclCommAbort of all three, every rank exit 0; every NET channel line
# matches VIA (with "rail": over its GPU's own NIC)
tp_dp() { # label VIA [rail] [extra ncclrr-run args]
	local label=$1 via=$2; shift 2
	local rail=
	[ "${1:-}" = rail ] && { rail=rail; shift; }
	local log=$tmp/$label.log
	run 2node_16gpu.xml 290 "$log" "$@" -- "$wl/tp_dp" ${TP_DP_ARGS:-}
	local rc=$?
	[ $rc -eq 0 ] || { fail "$label: ncclrr run exited $rc"; show_tail "$log"; }
	for r in $(seq 0 15); do
		n=$(grep -c "^\[$r\] .*- Init COMPLETE" "$log")
		[ "$n" -eq 3 ] || fail "$label: rank $r has $n Init COMPLETE (want 3: global, tp, dp)"
	done
	n=$(grep -c -- 'splitCount .* color .* - Init COMPLETE\|ncclCommSplit .* color .* - Init COMPLETE' "$log")
	[ "$n" -eq 32 ] || fail "$label: $n split Init COMPLETE (want 32)"
	n=$(count 'via P2P/' "$log"); [ "$n" -gt 0 ] || fail "$label: no P2P channel"
	n=$(count 'via NET/' "$log"); [ "$n" -gt 0 ] || fail "$label: no NET channel"
	channels "$log" 16 8 - "$label" "$via" $rail
	n=$(count ': .* allreduce ok' "$log"); [ "$n" -eq 48 ] || fail "$label: $n of 48 AllReduces done"
	n=$(count ': done' "$log"); [ "$n" -eq 16 ] || fail "$label: $n of 16 ranks done"
	echo "$label: $(count '- Init COMPLETE' "$log") Init COMPLETE, $(count 'via P2P/' "$log") P2P and $(count 'via NET/' "$log") NET channel lines"
}

# A fault on rank 3 through the fake runtime: NCCL's own chain on rank 3
# (a transport/p2p.cc WARN, then transport.cc:N -> 1), the job ends at the
# timeout (the other ranks wait for rank 3). Extra greps: "RANK:REGEX" lines
# some rank must print.
# An expect that starts with '~' is a consequence whose order NCCL's
# threads decide (a peer that reports the failing rank before it blocks
# elsewhere): it must show in at least one of the runs, the others in each.
fault_chain() { # label fault-rule "extra-env..." expect...
	local label=$1 rule=$2 envs=$3; shift 3
	local fto=${NCCLRR_TEST_FAULT_TIMEOUT:-25}
	local -A seen=()
	for i in $(seq 1 "$runs"); do
		local log=$tmp/$label$i.log
		local t0=$(date +%s)
		# shellcheck disable=SC2086
		run 2node_16gpu.xml "$fto" "$log" $envs --env "NCCLRR_FAULT=$rule" -- "$wl/tp_dp"
		local rc=$? el=$(( $(date +%s) - t0 ))
		[ $rc -ne 0 ] || fail "$label run $i: ncclrr run exited 0"
		[ $el -le $((fto + 15)) ] || fail "$label run $i: took ${el}s (timeout $fto s)"
		grep -q '^\[3\] ncclrr-fake: injecting' "$log" || fail "$label run $i: the fault was not injected on rank 3"
		local want
		for want in '^\[3\] .*transport/p2p\.cc:[0-9]+ NCCL WARN Cuda failure' \
			    '^\[3\] .*transport\.cc:[0-9]+ -> 1$' "$@"; do
			if [ "${want:0:1}" = '~' ]; then
				grep -E -m1 -- "${want:1}" "$log" && seen[$want]=1
			elif ! grep -E -m1 -- "$want" "$log"; then
				fail "$label run $i: no line matching $want"
				show_tail "$log"
			fi
		done
	done
	for want in "$@"; do
		[ "${want:0:1}" != '~' ] || [ -n "${seen[$want]:-}" ] ||
			fail "$label: in none of $runs runs a line matching ${want:1}"
	done
}

case $case_ in
cumem) one_node "P2P/CUMEM" cumem ;;
ipc) one_node "P2P/IPC" ipc --env NCCL_CUMEM_ENABLE=0 ;;
# NCCL_IB_DISABLE=1: with P2P off NCCL would loop GPU-NIC-GPU over NET/IB
shm) one_node "SHM/" shm --env NCCL_P2P_DISABLE=1 --env NCCL_IB_DISABLE=1 ;;
nonblocking)
	log=$tmp/nb.log
	run 1node_8gpu.xml 240 "$log" -- "$wl/init_allreduce" --nonblocking --end destroy
	rc=$?
	[ $rc -eq 0 ] || { fail "nonblocking: exit $rc"; show_tail "$log"; }
	n=$(count ': init ok' "$log"); [ "$n" -eq 8 ] || fail "nonblocking: $n of 8 init ok"
	;;
tp_dp) tp_dp tp_dp "$net_via" rail ;;
tp_dp_connect_at_init)
	# NCCL_RUNTIME_CONNECT=0: every connection inside its communicator's
	# init, so each Channel line can be checked against the topology
	tp_dp tp_dp_rc0 "$net_via" rail --env NCCL_RUNTIME_CONNECT=0
	channels "$tmp/tp_dp_rc0.log" 16 8 'P2P|SHM' tp_dp_rc0 "$net_via"
	;;
tp_dp_socket)
	# NCCL_IB_DISABLE=1: NET/Socket between the hosts, fake verbs or not
	tp_dp tp_dp_socket 'NET/Socket/[0-9]+$' --env NCCL_IB_DISABLE=1
	;;
tp_dp_ncclrr_ib)
	# ncclrr's own verbs transport as NCCL's net plugin: every NET channel
	# over it, GPUDirect (the topology says gdr; dma-buf MRs), rail-aligned
	[ -r "${NCCLRR_NET_IB_PLUGIN:-}" ] || { echo "SKIP: NCCLRR_NET_IB_PLUGIN is not set (no libibverbs-dev?)"; exit 77; }
	tp_dp tp_dp_ncclrr_ib 'NET/ncclrr-ib/[0-9]+/GDRDMA$' rail --env "NCCL_NET_PLUGIN=$NCCLRR_NET_IB_PLUGIN"
	n=$(count 'NCCL INFO Using network ncclrr-ib$' "$tmp/tp_dp_ncclrr_ib.log")
	[ "$n" -eq 48 ] || fail "tp_dp_ncclrr_ib: $n communicators use network ncclrr-ib (want 48)"
	;;
roce)
	# NET/IB over RoCE NICs (link layer Ethernet): 8 ranks on two hosts,
	# connecting at init; NCCL chooses the GID itself (NCCL_IB_GID_INDEX
	# unset, the host's sysfs view): the RoCE v2 IPv4 one, index 1
	[ "$net" = IB ] || { echo "SKIP: built without the fake libibverbs (NCCL takes NET/Socket)"; exit 77; }
	log=$tmp/roce.log
	run 2node_8gpu_roce.xml 240 "$log" --unset NCCL_IB_GID_INDEX --env NCCL_DEBUG_SUBSYS=INIT,NET \
		--env NCCL_RUNTIME_CONNECT=0 -- "$wl/init_allreduce"
	rc=$?
	[ $rc -eq 0 ] || { fail "roce: ncclrr run exited $rc"; show_tail "$log"; }
	n=$(count '- Init COMPLETE' "$log"); [ "$n" -eq 8 ] || fail "roce: $n of 8 Init COMPLETE"
	n=$(count ': allreduce ok' "$log"); [ "$n" -eq 8 ] || fail "roce: $n of 8 AllReduces"
	n=$(grep -c '^\[[0-9]*\] .* NET/IB : Using \[0\]mlx5_0:1/RoCE \[1\]mlx5_1:1/RoCE ' "$log")
	[ "$n" -eq 8 ] || fail "roce: $n of 8 ranks use mlx5_0 and mlx5_1 over RoCE"
	n=$(grep -c 'NET/IB: NCCL Dev [0-9]* IbDev .* GID 1 (0/[0-9A-F]*AFFFF0000)' "$log")
	m=$(grep -c 'NET/IB: NCCL Dev [0-9]* IbDev .* GID ' "$log")
	[ "$n" -gt 0 ] && [ "$n" -eq "$m" ] || fail "roce: $n of $m connections on GID 1 (::ffff:10.x.x.x, RoCE v2)"
	# (inside a host too, NCCL goes GPU-NIC-GPU between the PCIe
	# switches of two CPUs, where P2P is off: NET/IB there as well)
	channels "$log" 8 4 'P2P|SHM|NET/IB' roce "$net_via"
	;;
ib_hca)
	# NCCL_IB_HCA as NCCL documents it, on 2node_8gpu_pcie (2 IB NICs per
	# host): exact name (=), exclusion (^), a port (:1); NCCL's Using line
	# lists the chosen NICs and every NET channel goes over one of them
	[ "$net" = IB ] || { echo "SKIP: built without the fake libibverbs (NCCL takes NET/Socket)"; exit 77; }
	for spec in '=mlx5_0:mlx5_0' '^mlx5_0:mlx5_1' '^=mlx5_1:mlx5_0' 'mlx5_1:1:mlx5_1' 'mlx5:mlx5_0,mlx5_1'; do
		hca=${spec%:*} nics=${spec##*:}
		log=$tmp/hca.log
		run 2node_8gpu_pcie.xml 120 "$log" --env "NCCL_IB_HCA=$hca" --env NCCL_RUNTIME_CONNECT=0 \
			-- "$wl/init_allreduce"
		rc=$?
		[ $rc -eq 0 ] || { fail "NCCL_IB_HCA=$hca: ncclrr run exited $rc"; show_tail "$log"; }
		n=$(count ': allreduce ok' "$log"); [ "$n" -eq 8 ] || fail "NCCL_IB_HCA=$hca: $n of 8 AllReduces"
		echo "NCCL_IB_HCA=$hca (want $nics):"
		python3 "$here/nccl_nics.py" "$log" "$nics" || fail "NCCL_IB_HCA=$hca: NCCL did not keep to $nics"
	done
	# 2 NICs for 8 GPUs a host (the previous SIGSEGV at the DP
	# communicator's first AllReduce: NULL PCI paths without the sysfs
	# view), connecting at the first collective
	log=$tmp/hca2.log
	run 2node_16gpu.xml 240 "$log" --env NCCL_IB_HCA==mlx5_0:1,mlx5_1:1 -- "$wl/tp_dp"
	rc=$?
	[ $rc -eq 0 ] || { fail "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1: ncclrr run exited $rc"; show_tail "$log"; }
	n=$(count ': .* allreduce ok' "$log"); [ "$n" -eq 48 ] || fail "tp_dp over 2 NICs: $n of 48 AllReduces"
	python3 "$here/nccl_nics.py" "$log" mlx5_0,mlx5_1 || fail "tp_dp: NCCL did not keep to mlx5_0,mlx5_1"
	;;
ib_gdr)
	# GPUDirect RDMA: a virtual host has no peer-memory client (its sysfs
	# view), so NCCL's GDR is dma-buf's: every NET channel /GDRDMA by
	# default, none with NCCL_DMABUF_ENABLE=0 (NET/IB through host memory)
	[ "$net" = IB ] || { echo "SKIP: built without the fake libibverbs (NCCL takes NET/Socket)"; exit 77; }
	for c in 'gdr:NET/IB/[0-9]+/GDRDMA$:' 'nogdr:NET/IB/[0-9]+$:--env NCCL_DMABUF_ENABLE=0'; do
		label=${c%%:*} rest=${c#*:}
		via=${rest%%:*} extra=${rest#*:}
		log=$tmp/$label.log
		# shellcheck disable=SC2086
		run 2node_8gpu_pcie.xml 120 "$log" --env NCCL_RUNTIME_CONNECT=0 --env NCCL_DEBUG_SUBSYS=INIT,NET $extra \
			-- "$wl/init_allreduce"
		rc=$?
		[ $rc -eq 0 ] || { fail "$label: ncclrr run exited $rc"; show_tail "$log"; }
		n=$(count ': allreduce ok' "$log"); [ "$n" -eq 8 ] || fail "$label: $n of 8 AllReduces"
		channels "$log" 8 4 'P2P|SHM|NET/IB' "$label" "$via"
	done
	n=$(grep -c 'NET/IB : GPU Direct RDMA Enabled for HCA' "$tmp/gdr.log")
	[ "$n" -gt 0 ] || fail "gdr: NCCL did not enable GPU Direct RDMA"
	n=$(grep -c 'NET/IB : GPU Direct RDMA Enabled for HCA' "$tmp/nogdr.log")
	[ "$n" -eq 0 ] || fail "nogdr: NCCL enabled GPU Direct RDMA $n times without dma-buf or peer memory"
	;;
4node)
	log=$tmp/4node.log
	run 4node_32gpu.xml 290 "$log" -- "$wl/init_allreduce"
	rc=$?
	[ $rc -eq 0 ] || { fail "4node: ncclrr run exited $rc"; show_tail "$log"; }
	n=$(count '- Init COMPLETE' "$log"); [ "$n" -eq 32 ] || fail "4node: $n of 32 Init COMPLETE"
	n=$(count ': allreduce ok' "$log"); [ "$n" -eq 32 ] || fail "4node: $n of 32 AllReduces"
	channels "$log" 32 8 'P2P|SHM' 4node "$net_via"
	;;
ipc_fault)
	# legacy IPC: rank 3's first cudaIpcOpenMemHandle fails in P2P setup
	fault_chain ipc_fault cudaIpcOpenMemHandle:rank=3:nth=1:cudaErrorInvalidValue \
		"--env NCCL_CUMEM_ENABLE=0" '^\[3\] rank 3: ncclCommInitRank failed: unhandled cuda error'
	;;
cumem_fault)
	# cuMem: rank 3's first import of a peer's buffer fails (connect at
	# init); the peer asking rank 3's proxy for the fd then fails too, in
	# at least one of the runs ('~'). Rank 3's local peers may first block
	# on a connection to the other host, whose rank 11 lost its own
	# connection to rank 3, and never make that proxy call before the
	# timeout: NCCL's order, not the fabric's (over NET/IB 4 of 19 runs on
	# 2.22.3, hence NET/Socket here; over NET/Socket 1 of 5 in a CI,
	# 2026-11-27)
	fault_chain cumem_fault cuMemImportFromShareableHandle:rank=3:nth=1:CUDA_ERROR_INVALID_VALUE \
		"--env NCCL_RUNTIME_CONNECT=0 --env NCCL_IB_DISABLE=1" '^\[3\] rank 3: ncclCommInitRank failed: unhandled cuda error' \
		'~^\[[0-9]+\] .*(call to tpRank 3 .*failed|Proxy Service 3\] Failed to execute operation)'
	;;
net_connect)
	# NET/Socket (NCCL_IB_DISABLE=1: the fake verbs would give NET/IB):
	# rank 8's first NET/Socket connect (to rank 0, on the other host, at
	# the world communicator's init) is refused by the
	# kernel (the fake cluster's socket fault switch points it at a loopback
	# port with no listener); NCCL 2.22 retries on the same socket, Linux
	# says ECONNABORTED, and NCCL's own chain follows on rank 8. Connect at
	# init (NCCL_RUNTIME_CONNECT=0): at the first collective NCCL 2.22.3
	# dies of SIGSEGV instead (replayer/fake/README.md). Run 1 untraced,
	# run 2 under `ncclrr record`: the same chain, and the trace has it.
	fto=${NCCLRR_TEST_FAULT_TIMEOUT:-25}
	rule='connect:thread=NCCL Service:nth=1:ECONNREFUSED'
	nruns=$runs; [ "$nruns" -ge 2 ] || nruns=2
	for i in $(seq 1 "$nruns"); do
		log=$tmp/net_connect$i.log
		rec=()
		[ $((i % 2)) -eq 0 ] && rec=("$ncclrr" record -o "$tmp/rec$i" -q --)
		t0=$(date +%s)
		NCCL_DEBUG=INFO "${rec[@]}" "$ncclrr" run --topo "$root/topo/2node_16gpu.xml" --timeout "$fto" \
			--env NCCL_RUNTIME_CONNECT=0 --env NCCL_IB_DISABLE=1 --rank-env 8:NCCL_SET_THREAD_NAME=1 \
			--rank-env "8:NCCLRR_FAULT=$rule" -- "$wl/tp_dp" >"$log" 2>&1
		rc=$? el=$(( $(date +%s) - t0 ))
		what="net_connect run $i${rec:+ (recorded)}"
		echo "wall: $el s ($what, exit $rc)"
		[ $rc -ne 0 ] || fail "$what: ncclrr run exited 0"
		[ $el -le $((fto + 15)) ] || fail "$what: took ${el}s (timeout $fto s)"
		n=$(grep -c "ncclrr-fake: injecting ECONNREFUSED into connect" "$log")
		[ "$n" -eq 1 ] || fail "$what: $n injections, want 1"
		grep -Eq "^\[8\] ncclrr-fake: injecting ECONNREFUSED into connect \(rank 8, thread 'NCCL Service *[0-9]+', call 1\)" "$log" ||
			fail "$what: the refusal was not on rank 8's proxy service thread"
		for want in \
		    '^\[8\] .*misc/socket\.cc:[0-9]+ NCCL WARN socketStartConnect: Connect to 127\.0\.0\.1<[0-9]+> failed : Software caused connection abort$' \
		    '^\[8\] .*misc/socket\.cc:[0-9]+ -> 2$' \
		    '^\[8\] .*transport/net_socket\.cc:[0-9]+ -> 2$' \
		    '^\[8\] .*transport/net\.cc:[0-9]+ -> 2$' \
		    '^\[8\] .*transport\.cc:[0-9]+ -> 2$' \
		    '^\[8\] rank 8: ncclCommInitRank failed: unhandled system error'; do
			grep -E -m1 -- "$want" "$log" || { fail "$what: no line matching $want"; show_tail "$log"; }
		done
		# (ranks may then fail their own connects to rank 8, which has
		# exited: a consequence, not a second injection)
		if [ ${#rec[@]} -gt 0 ]; then
			d=$("$ncclrr" dump --rank 8 --api connect,getsockopt "$tmp/rec$i" 2>&1)
			printf '%s\n' "$d" | grep -E -m1 'connect\(sockfd=[0-9]+, addr=127\.0\.0\.1:[0-9]+, .*= -1 EINPROGRESS' >/dev/null &&
			printf '%s\n' "$d" | grep -E -m1 'getsockopt\(.*optname=4, optval=6f000000' >/dev/null &&
			printf '%s\n' "$d" | grep -E -m1 'connect\(.*= -1 ECONNABORTED' ||
				fail "$what: rank 8's trace lacks connect EINPROGRESS, SO_ERROR 111, connect ECONNABORTED"
			"$ncclrr" dump --rank 8 --errors "$tmp/rec$i" 2>&1 | grep -E -m1 'ncclProxyResponse\(.*type=ncclProxyMsgConnect.*= ncclSystemError' ||
				fail "$what: rank 8's trace lacks the proxy's Connect answer ncclSystemError"
		fi
	done
	;;
*) echo "unknown case $case_"; exit 2 ;;
esac
[ $fails -eq 0 ] && echo "PASS $case_" || echo "$fails failure(s) in $case_"
[ $fails -eq 0 ]
