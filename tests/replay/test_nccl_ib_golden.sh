#!/usr/bin/env bash
# The golden traces of real NCCL 2.22.3 failing over NET/IB on the fake
# verbs fabric (traces/nccl_ib/, made by traces/nccl_ib/record.sh):
# what NCCL printed, replay, diff against the clean IB run, rerun.
# usage: test_nccl_ib_golden.sh CASE NCCLRR SOURCE_ROOT [WORKLOAD_DIR NCCL_HINT]
# CASE: logs | golden | diff | hang | rerun | remap | ibdev | repeat20 | repeat100
# ibdev: replay --rerun sees that clean_ib's processes opened a NIC
# (role=dev_open on ibv_open_device, formats/api/verbs.api), a socket-only
# recording's not (then it sets NCCL_IB_DISABLE=1); the program rerun is true.
# remap: the recorded QP numbers and MR keys fill replay's verbs remap
# table, and every RTR takes its peer's live QP number from it.
# logs, diff and hang need only the traces (registered, suite nccl). golden,
# repeat20/repeat100 (each failure replayed 20/100 times) replay clean_ib
# (golden) and the failures in $replayed, through the verbs replay of
# replayer/engine/rverbs.c. rerun (real init_allreduce again with the
# recorded answers, the verbs failures among them) needs the relinked
# NCCL (registered, suite slow).
set -uo pipefail
case_=$1
ncclrr=$(realpath "$2")
root=$3
wl=${4:-}
NCCL_HINT=${5:-}
g=$root/traces/nccl_ib
topo=$root/topo/2node_8gpu_roce.xml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
unset NCCLRR_FAULT NCCL_DEBUG
failures="gid_index memlock retry_exc killed"
replayed="gid_index memlock retry_exc killed"
# rerun of killed: rank 3's trace holds its whole init (the tracer's tail
# came as the records stopped changing, in the workload's 1 s pause), and
# the rerun kills rank 3 at its first call after its last counted one
# (fault action SIGKILL_AFTER): the same cuMemAlloc the recording killed
# it at, so every rank ends as recorded
rerun="gid_index memlock retry_exc killed"
has() { grep -qF -- "$2" "$1" || fail "$3: no '$2' in: $(head -c 3000 "$1")"; }

# what NCCL printed on the failing rank, the net_ib.cc / transport lines, as
# `[R] ...` lines of ncclrr run's output
declare -A warn=(
	[gid_index]="misc/ibvwrap.cc:206 NCCL WARN Call to ibv_modify_qp failed with error Network is unreachable errno 101"
	[memlock]="misc/ibvwrap.cc:153 NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory"
	[retry_exc]="transport/net_ib.cc:1984 NCCL WARN NET/IB: Got completion from peer"
	[killed]="transport/net_ib.cc:1984 NCCL WARN NET/IB: Got completion from peer"
)
# and on the same line (the peer's address and port vary): completion
# error 12, IBV_WC_RETRY_EXC_ERR, of the RDMA WRITE (opcode 1) of the CTS
declare -A warn2=([retry_exc]="with status=12 opcode=1 " [killed]="with status=12 opcode=1 ")
# the rank that prints it: for gid_index rank 3, a peer of rank 4 (its RTR
# to rank 4's GID 0 fails); for memlock rank 4 itself; for retry_exc rank
# 4, the NET receiver of rank 3, which died
declare -A rank=([gid_index]=3 [memlock]=4 [retry_exc]=4 [killed]=4)
# what the rerun must say beyond "rank R: reproduced:" (retry_exc: rank 4
# reproduced its end after rank 3's, with the same completion error)
declare -A rerun_says=(
	[retry_exc]="rank 3: reproduced: cuMemAlloc_v2 = CUDA_ERROR_OUT_OF_MEMORY, exit 1|rank 4: reproduced (after rank 3 failed): no failing call, exit 1|NCCL: transport/net_ib.cc:1984 WARN NET/IB: Got completion from peer <addr><port> with status=12 opcode=1 "
	[killed]="injecting SIGKILL into cuMemAlloc (rank 3, the call after a SIGKILL_AFTER rule's)|rank 3: reproduced: no failing call, killed from outside (no end recorded)|rank 4: reproduced (after rank 3 failed): no failing call, exit 1|NCCL: transport/net_ib.cc:1984 WARN NET/IB: Got completion from peer <addr><port> with status=12 opcode=1 |rerun: 8 of 8 ranks reproduced"
)
# the workload's options for the rerun: the recorded ones
# (traces/nccl_ib/record.sh). Their watch of 1 s holds the completion error
# only if the rerun gives back the recorded NCCLRR_VERBS_MIN_TIMEOUT_MS=50
# (a fabric setting, nrr_env.h): with the fabric's default 200 ms floor the
# retries take 1.6 s, not 0.54 s, and rank 4 prints no status=12 line
declare -A wl_args=([retry_exc]="--pause 1 --watch 1" [killed]="--pause 1 --watch 1")
# the failing rank and call, as replay and diff name them
declare -A failing=(
	[gid_index]="rank 3 thread 4, failure only in B: ibv_modify_qp = ENETUNREACH (Network is unreachable)"
	[memlock]="rank 4 thread 4, failure only in B: ibv_reg_mr = NULL ENOMEM"
	[retry_exc]="rank 3 thread 1, failure only in B: cuMemAlloc_v2 = CUDA_ERROR_OUT_OF_MEMORY (2)"
	[killed]="rank 3, abnormal end only in B: killed (its trace stops, no end recorded: SIGKILL"
)

case $case_ in
ibdev)
	note='no process of the recording opened an IB device'
	"$ncclrr" replay --rerun "$g/clean_ib" --timeout 10 -o "$tmp/ib" -- /bin/true >"$tmp/ib.out" 2>&1
	grep -q 'ranks exited 0' "$tmp/ib.out" || fail "rerun of clean_ib with true did not run: $(tail -3 "$tmp/ib.out")"
	grep -qF "$note" "$tmp/ib.out" && fail "rerun of clean_ib: its ibv_open_device calls were not seen: $(grep -F "$note" "$tmp/ib.out")"
	"$ncclrr" replay --rerun "$root/traces/nccl/clean" --topo "$root/topo/2node_16gpu.xml" --timeout 10 -o "$tmp/sock" \
		-- /bin/true >"$tmp/sock.out" 2>&1
	grep -q 'ranks exited 0' "$tmp/sock.out" || fail "rerun of traces/nccl/clean with true did not run: $(tail -3 "$tmp/sock.out")"
	grep -qF "$note" "$tmp/sock.out" || fail "rerun of a socket-only recording: no '$note'"
	grep -q 'NCCL_IB_DISABLE=1' "$tmp/sock.out" || fail "rerun of a socket-only recording does not set NCCL_IB_DISABLE=1"
	;;
logs)
	# the recorded failure is NCCL's, on the rank in the table, and every rank of the clean
	# run completed its AllReduce over NET/IB
	for t in $failures; do
		grep "^\[${rank[$t]}\] " "$g/$t.log" | grep -F -- "${warn[$t]}" | grep -qF -- "${warn2[$t]:-}" ||
			fail "$t.log: rank ${rank[$t]} did not print '${warn[$t]}' ${warn2[$t]:+... '${warn2[$t]}'}"
	done
	n=$(grep -c ': allreduce ok' "$g/clean_ib.log" || true)
	[ "$n" -eq 8 ] || fail "clean_ib.log: $n of 8 AllReduces"
	grep -q "8 of 8 ranks exited 0" "$g/clean_ib.log" || fail "clean_ib.log: not every rank exited 0"
	;;
golden)
	# each replays to exactly its expected output
	for t in clean_ib $replayed; do
		"$ncclrr" replay --topo "$topo" --timeout 60 "$g/$t" >"$tmp/$t.out" 2>&1
		"$root/traces/replay/normalize.sh" <"$tmp/$t.out" | grep -v '^ncclrr replay: warning: .*no index at the end' >"$tmp/$t.norm"
		diff -u "$g/$t.expected" "$tmp/$t.norm" || fail "$t: output differs from $t.expected"
	done
	;;
diff)
	# against the clean IB run, the headline names the failing rank and call
	for t in $failures; do
		"$ncclrr" diff "$g/clean_ib" "$g/$t" >"$tmp/$t.diff" 2>&1
		rc=$?
		[ $rc -eq 1 ] || fail "diff clean_ib $t: exit $rc, want 1"
		grep '^Earliest across ranks:' "$tmp/$t.diff" | grep -qF -- "${failing[$t]}" ||
			fail "diff clean_ib $t: headline does not name '${failing[$t]}': $(grep -E '^Earliest' "$tmp/$t.diff")"
	done
	# a call that returned an error wrote no out parameter: NCCL's
	# uninitialized capResult of each NOT_SUPPORTED
	# nvmlDeviceGetNvLinkCapability is no divergence (it was every rank's
	# first in all four)
	for t in $failures; do
		grep -E '^rank [0-9]+ thread' "$tmp/$t.diff" | grep -F '(capResult differs)' &&
			fail "diff clean_ib $t: an out value of a failed call made a first divergence"
	done
	# QP numbers, memory keys and iovas are each run's own (runid in
	# formats/api/verbs.api; the older traces take it by name): none is a
	# rank's first divergence, neither as a parameter nor as a field of a
	# custom-encoded struct (dest_qp_num in ibv_modify_qp's attr)
	for t in $failures; do
		grep -E '^rank [0-9]+ thread' "$tmp/$t.diff" | grep -E '\((qp_num|lkey|rkey|iova|attr|wc|wr) differs\)' &&
			fail "diff clean_ib $t: a per-run QP number or key made a first divergence"
	done
	# NCCL's dma-buf probe (the same call on both) is not a rank's first
	# divergence, also where clean_ib's schema has ibv_reg_*mr's lkey/rkey
	# results and the other (older) trace's not: a field one side lacks is
	# no divergence
	for t in $failures; do
		grep -E '^rank [0-9]+ thread' "$tmp/$t.diff" | grep -F 'ibv_reg_dmabuf_mr' &&
			fail "diff clean_ib $t: the dma-buf probe made a first divergence"
	done
	has "$tmp/gid_index.diff" "env.NCCL_IB_GID_INDEX (rank 4): A '1', B '0'" config
	has "$tmp/retry_exc.diff" "env.NCCLRR_FAULT (every rank): A absent, B 'cuMemAlloc:rank=3:nth=1:CUDA_ERROR_OUT_OF_MEMORY'" config
	has "$tmp/killed.diff" "env.NCCLRR_FAULT (every rank): A absent, B 'cuMemAlloc:rank=3:nth=1:SIGKILL'" config
	# and rank 4's failure: the poll that returned the RDMA WRITE's
	# completion error 12 (failed= on ibv_poll_cq's wc, formats/api/verbs.api)
	grep -A1 '^  first failure only in B, thread 6 (tid 22029)' "$tmp/retry_exc.diff" | grep -F '#97768 ibv_poll_cq(' |
		grep -qF '= 4 [wc[0] IBV_WC_RETRY_EXC_ERR (12), +3 failed]' ||
		fail "diff clean_ib retry_exc: rank 4's poll with IBV_WC_RETRY_EXC_ERR is not named: $(grep -A1 'tid 22029' "$tmp/retry_exc.diff" | head -3)"
	;;
hang)
	# no one waits at the end; the first abnormal end is rank 3's death, and
	# each rank's first failure is the injected one or what followed it
	"$ncclrr" hang "$g/killed" >"$tmp/killed.hang" 2>&1
	rc=$?
	[ $rc -eq 0 ] || fail "hang killed: exit $rc, want 0 (no hang): $(head -3 "$tmp/killed.hang")"
	has "$tmp/killed.hang" "No hang: no traced process waits at the end of its trace." hang
	has "$tmp/killed.hang" "First abnormal end: rank 3 died: its trace stops at" hang
	# NCCL's dma-buf probe (ibv_reg_dmabuf_mr of fd -1, EINVAL on every
	# rank) is benign (formats/api/verbs.api): never a rank's first failure
	! grep -qF 'first failure was ibv_reg_dmabuf_mr' "$tmp/killed.hang" ||
		fail "hang killed: NCCL's dma-buf probe named as rank 3's first failure"
	"$ncclrr" hang "$g/retry_exc" >"$tmp/retry_exc.hang" 2>&1
	has "$tmp/retry_exc.hang" "First abnormal end: rank 3 ended (exit 1) at 2.798979 s, the first rank to end abnormally: its first failure was cuMemAlloc_v2(dptr=NULL, bytesize=4194304) = CUDA_ERROR_OUT_OF_MEMORY (2)" hang
	for t in gid_index memlock; do
		"$ncclrr" hang "$g/$t" >"$tmp/$t.hang" 2>&1
		! grep -qF 'first failure was ibv_reg_dmabuf_mr' "$tmp/$t.hang" ||
			fail "hang $t: NCCL's dma-buf probe named as a rank's first failure"
	done
	has "$tmp/gid_index.hang" "rank 3 ended (exit 1) at 3.332756 s while others wait on it: its first failure was ibv_modify_qp(" hang
	has "$tmp/memlock.hang" "rank 4 ended (exit 1) at 1.258868 s while others wait on it: its first failure was ibv_reg_mr(" hang
	;;
rerun)
	# real NCCL again with the recorded answers: the rank fails the same way
	# and prints the same lines
	. "$root/tests/integration/nccl_common.sh"
	for t in $rerun; do
		# shellcheck disable=SC2086 # the recorded workload's options, split
		"$ncclrr" replay --rerun "$g/$t" --topo "$topo" -o "$tmp/re-$t" -- "$wl/init_allreduce" ${wl_args[$t]:-} \
			>"$tmp/$t.re" 2>&1
		rc=$?
		# (the whole verdict: which rank, and how)
		[ $rc -eq 0 ] || fail "rerun $t: exit $rc: $(grep -E '^(rank [0-9]|  NCCL|rerun:)' "$tmp/$t.re" | head -60)"
		if [ -n "${rerun_says[$t]:-}" ]; then
			IFS='|' read -ra says <<<"${rerun_says[$t]}"
			for w in "${says[@]}"; do has "$tmp/$t.re" "$w" "rerun $t"; done
		else
			has "$tmp/$t.re" "rank ${rank[$t]}: reproduced:" "rerun $t"
		fi
		has "$tmp/$t.re" "${warn[$t]}" "rerun $t"
	done
	;;
remap)
	# the tracer recorded each created QP's qp_num and each MR's keys, and
	# the replay filled the remap table from them: every RTR took its
	# peer's live QP number from the table (clean_ib: every QP pair
	# connects; memlock: the QPs and MRs made before rank 4's failure)
	for t in clean_ib memlock; do
		d=$("$ncclrr" dump "$g/$t" 2>&1)
		q=$(grep -cE 'ibv_create_qp( resumed>)? ?\(.*qp_num=[0-9]' <<<"$d")
		# (registrations that failed, NCCL's dma-buf probe among them, made no MR)
		m=$(grep -E 'ibv_reg(_dmabuf)?_mr(_iova2)?\(.*lkey=[0-9]+, rkey=[0-9]+' <<<"$d" | grep -cv ' = NULL ')
		[ "$q" -gt 0 ] || fail "dump $t: no ibv_create_qp with qp_num: $(grep -m2 "ibv_create_qp resumed" <<<"$d")"
		[ "$m" -gt 0 ] || fail "dump $t: no ibv_reg_mr with lkey/rkey: $(grep -m2 ibv_reg_ <<<"$d")"
		# RTRs with a destination QP number in the trace (attr_mask names IBV_QP_DEST_QPN)
		rtr=$(grep 'ibv_modify_qp(' <<<"$d" | grep -c 'IBV_QP_DEST_QPN')
		NCCLRR_DEBUG=verbs "$ncclrr" replay --topo "$topo" --timeout 60 "$g/$t" >"$tmp/remap.out" 2>&1 ||
			fail "replay $t: exit $?: $(tail -3 "$tmp/remap.out")"
		# the workers' summary lines, summed: field 3 qp_num, 6 rkey, 9 remapped, 13 not found
		sum() { awk -v k="$1" 'match($0, /remap table: [0-9]+ qp_num and [0-9]+ rkey published, [0-9]+ RTR dest_qp_num remapped, [0-9]+ not found/) { split(substr($0, RSTART, RLENGTH), w, " "); s += w[k] } END { print s + 0 }' "$tmp/remap.out"; }
		pq=$(sum 3) pm=$(sum 6) rr=$(sum 9) nf=$(sum 13)
		echo "$t: trace: $q QPs with qp_num, $m MRs with keys, $rtr RTRs; replay: $pq qp_num and $pm rkey published, $rr remapped, $nf not found"
		[ "${pq:-0}" -ge "$q" ] || fail "$t: replay published ${pq:-0} qp_num, the trace made $q QPs"
		[ "${pm:-0}" -ge "$m" ] || fail "$t: replay published ${pm:-0} rkeys, the trace made $m MRs"
		[ "$rtr" -gt 0 ] && [ "${rr:-0}" -eq "$rtr" ] || fail "$t: replay remapped ${rr:-0} RTR destinations of $rtr"
		[ "${nf:-0}" -eq 0 ] || fail "$t: $nf RTR destinations not in the table"
		# and the destinations RTR used are the peers' live QP numbers, as published
		grep -o 'published qp_num 0x[0-9a-f]* -> 0x[0-9a-f]*' "$tmp/remap.out" | sed 's/.*qp_num //' | sort -u >"$tmp/pub"
		grep -o 'dest_qp_num 0x[0-9a-f]* -> 0x[0-9a-f]* (remapped' "$tmp/remap.out" |
			sed 's/dest_qp_num //; s/ (remapped//' | sort -u >"$tmp/used"
		[ -s "$tmp/used" ] || fail "$t: no remapped RTR line: $(grep -m3 'verbs:' "$tmp/remap.out")"
		[ -z "$(comm -13 "$tmp/pub" "$tmp/used")" ] ||
			fail "$t: RTR destinations no peer published: $(comm -13 "$tmp/pub" "$tmp/used" | head -3)"
	done
	;;
repeat20 | repeat100)
	for t in $replayed; do
		n=${case_#repeat}
		"$ncclrr" replay --topo "$topo" --timeout 60 --repeat "$n" "$g/$t" >"$tmp/$t.rep" 2>&1
		rc=$?
		[ $rc -eq 0 ] || fail "$t: --repeat $n exit $rc: $(grep -E 'replay [0-9]|differs|hung|divergence|unsupported' "$tmp/$t.rep" | head -5)"
		has "$tmp/$t.rep" "$n of $n replays reproduced the failure, $n of $n identical to the first" "$t"
	done
	;;
*) echo "unknown case $case_"; exit 2 ;;
esac
[ $fails -eq 0 ] && echo "PASS: nccl_ib golden $case_" || echo "$fails failure(s)"
[ $fails -eq 0 ]
