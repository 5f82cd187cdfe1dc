#!/usr/bin/env bash
# The verbs data path replayed live (replayer/engine/rverbs.c): an unmodified
# ibv_rc_pingpong recorded across the two virtual hosts of
# topo/2node_8gpu_pcie.xml replays its ibv_post_recv/ibv_post_send on the
# live QPs of the fake fabric and its ibv_poll_cq on the live CQs
# (NCCLRR_DEBUG=verbs counts them per worker: posts and completions live,
# none answered from the trace), and the replay matches. Replayed without
# its peer (--ranks 0), rank 0's first poll that recorded a completion
# must diverge: its peer never sends, so nothing completes live.
# rdma_write.c (an RDMA WRITE WITH IMM into the peer's registered buffer,
# NCCL's NET/IB data path) replays its write live through the peer's
# published (rkey, address); ibv_srq_pingpong's receives, posted to a
# shared receive queue, replay live on the live SRQ; recorded with the peer's MR deregistered
# first, its IBV_WC_REM_ACCESS_ERR is reproduced live, not answered from
# the trace; replayed without the peer (--ranks 1), no rkey is published
# and the write is answered from the trace, counted. Written past the end of
# the peer's region (oob), the write is refused live: reproduced too.
# Without a GRH (InfiniBand addressed by LID: ibv_rc_pingpong without -g,
# rdma_write.c's `lid` mode; the NICs of 2node_8gpu_pcie are InfiniBand) the
# same holds: each side publishes its QP and MR under the LID its recorded
# ibv_query_port told, the RTR takes the peer's live QP number by the LID it
# names, and every post, the RDMA WRITE and READ included, and every
# completion is live, none from the trace.
# usage: test_verbs_replay_data.sh NCCLRR SOURCE_ROOT RDMA_WRITE   (NCCLRR_FAKE_LIBDIR set by meson)
set -uo pipefail
ncclrr=$(realpath "$1")
root=$2
rdma_write=$(realpath "$3")
command -v ibv_rc_pingpong >/dev/null ||
	{ echo "SKIP: ibv_rc_pingpong not found (Debian package ibverbs-utils; scripts/setup.sh installs it)"; exit 77; }
. "$root/tests/lib/check.sh"
unset RANK WORLD_SIZE OMPI_COMM_WORLD_RANK SLURM_PROCID LOCAL_RANK NCCLRR_DEBUG
topo=$root/topo/2node_8gpu_pcie.xml

ppsh=$root/tests/verbs/rc_pingpong.sh
record_pp() { # DIR ARGS...: the pingpong pair recorded into DIR (afresh: port_run may run it again)
	rm -rf "$1"
	"$ncclrr" record -q -o "$1" -- "$ncclrr" run --topo "$topo" -np 2 --timeout 60 -- "$ppsh" "${@:2}"
}

# -g 0: a GRH, so each side publishes its QP and MR under its GID, the
# address its peer's RTR names it by (without -g: its LID, below)
port_run "$tmp/rec.log" record_pp "$tmp/rec" -d mlx5_0 -g 0 -n 50
check "ncclrr record of ibv_rc_pingpong -g 0 -n 50 exits 0" $?

# ---- the whole recording: every post and completion live
NCCLRR_DEBUG=verbs "$ncclrr" replay --topo "$topo" "$tmp/rec" >"$tmp/replay" 2>&1
check "replay of ibv_rc_pingpong exits 0" $?
must replay '^result: the replay matches the recording' "$tmp/replay"
grep 'data path:' "$tmp/replay"
# two workers (the pingpong processes), each: N posts live (N > 0), none
# from the trace, M completions live (M > 0), no poll from the trace
n=$(grep -cE 'data path: [1-9][0-9]* posts live, 0 answered from the trace; [1-9][0-9]* completions live, 0 polls answered' "$tmp/replay")
[ "$n" -ge 2 ]
check "two workers post and complete live, nothing of the data path from the trace (got $n)" $?
# rc_pingpong -n 50: each side posts 50 sends and its receives, polls 100 completions
posts=$(grep -oE 'data path: [0-9]+ posts live' "$tmp/replay" | grep -oE '[0-9]+' | awk '{s+=$1} END {print s+0}')
wcs=$(grep -oE '[0-9]+ completions live' "$tmp/replay" | grep -oE '[0-9]+' | awk '{s+=$1} END {print s+0}')
[ "${posts:-0}" -ge 200 ] && [ "${wcs:-0}" -ge 200 ]
check "at least 200 posts and 200 completions live in all (got ${posts:-0} and ${wcs:-0})" $?

# ---- without -g: no GRH, the peers name each other by LID (InfiniBand)
port_run "$tmp/lid.log" record_pp "$tmp/lid" -d mlx5_0 -n 50
check "ncclrr record of ibv_rc_pingpong -n 50 (no -g) exits 0" $?
must lid 'remote address: LID 0x0021, QPN 0x[0-9a-f]*, PSN 0x[0-9a-f]*, GID ::$' "$tmp/lid.log"
# the LID comes from ibv_query_port, which <infiniband/verbs.h> makes through
# the context's query_port op: the tracer records it there
n=$(for f in "$tmp"/lid/*.nrt; do "$ncclrr" dump "$f"; done 2>/dev/null | grep -c ' ibv_query_port(context=')
[ "$n" = 2 ]
check "each pingpong's ibv_query_port is in its trace (got $n)" $?
NCCLRR_DEBUG=verbs "$ncclrr" replay --topo "$topo" "$tmp/lid" >"$tmp/lid.replay" 2>&1
check "replay of ibv_rc_pingpong without -g exits 0" $?
must lid.replay '^result: the replay matches the recording$' "$tmp/lid.replay"
grep -E 'data path:|remapped' "$tmp/lid.replay"
n=$(grep -cE 'modify_qp dest_qp_num 0x[0-9a-f]+ -> 0x[0-9a-f]+ \(remapped, lid 0x(1|21)\)' "$tmp/lid.replay")
[ "$n" = 2 ]
check "both RTRs take the peer's live QP number by its LID (got $n)" $?
n=$(grep -cE 'data path: [1-9][0-9]* posts live, 0 answered from the trace; [1-9][0-9]* completions live, 0 polls answered' "$tmp/lid.replay")
[ "$n" = 2 ]
check "without -g, two workers post and complete live, nothing of the data path from the trace (got $n)" $?
posts=$(grep -oE 'data path: [0-9]+ posts live' "$tmp/lid.replay" | grep -oE '[0-9]+' | awk '{s+=$1} END {print s+0}')
wcs=$(grep -oE '[0-9]+ completions live' "$tmp/lid.replay" | grep -oE '[0-9]+' | awk '{s+=$1} END {print s+0}')
[ "${posts:-0}" -ge 200 ] && [ "${wcs:-0}" -ge 200 ]
check "without -g, at least 200 posts and 200 completions live in all (got ${posts:-0} and ${wcs:-0})" $?
! grep -q 'answered from the trace:' "$tmp/lid.replay"
check "without -g, no fallback reason said" $?

# ---- ibv_srq_pingpong: its 16 QPs a side receiving from a shared receive
# queue; its ibv_post_srq_recv calls (context->ops, like ibv_post_recv)
# replay live on the live SRQ, none answered from the trace. Every receive
# has wr_id 1 and every send 2 on all 16 QPs: a replayed poll takes the
# completion of the QP it recorded (its qp_num), not any with that wr_id
PP_PROG=ibv_srq_pingpong port_run "$tmp/srq.log" record_pp "$tmp/srq" -d mlx5_0 -n 50
check "ncclrr record of ibv_srq_pingpong -n 50 exits 0" $?
for f in "$tmp"/srq/*.nrt; do "$ncclrr" dump "$f"; done >"$tmp/srq.dump" 2>/dev/null
nsrq=$(grep -c ' ibv_post_srq_recv(srq=' "$tmp/srq.dump")
nsend=$(grep -c ' ibv_post_send(' "$tmp/srq.dump")
[ "$nsrq" -ge 2 ]
check "the SRQ receives are in the traces (got $nsrq)" $?
# every completion a poll returned is in its trace (custom:wc keeps 64): a
# poll here returns up to 32 (a send and a receive on each of 16 QPs); kept
# to 16, a replayed poll took the next round's completions for those not
# kept, and the replay hung in 1 run of 2
cut=0 big=0
while read -r h r; do
	[ "$((16#$h))" = "$r" ] || cut=$((cut + 1))
	[ "$r" -gt 16 ] && big=$((big + 1))
done < <(grep -oE ' ibv_poll_cq\(.*wc=[0-9a-f]{2}[^)]*\) = [0-9]+' "$tmp/srq.dump" | sed -E 's/.*wc=(..).*\) = ([0-9]+)$/\1 \2/')
[ "$cut" = 0 ]
check "each poll's completions are all in its trace ($big polls returned more than 16; $cut cut)" $?
NCCLRR_DEBUG=verbs "$ncclrr" replay --topo "$topo" "$tmp/srq" >"$tmp/srq.replay" 2>&1
check "replay of ibv_srq_pingpong exits 0" $?
must srq.replay '^result: the replay matches the recording$' "$tmp/srq.replay"
grep 'data path:' "$tmp/srq.replay"
n=$(grep -cE 'data path: [1-9][0-9]* posts live, 0 answered from the trace; [1-9][0-9]* completions live, 0 polls answered' "$tmp/srq.replay")
[ "$n" = 2 ]
check "ibv_srq_pingpong: two workers post and complete live, nothing of the data path from the trace (got $n)" $?
# every recorded SRQ receive and send among the live posts
posts=$(grep -oE 'data path: [0-9]+ posts live' "$tmp/srq.replay" | grep -oE '[0-9]+' | awk '{s+=$1} END {print s+0}')
[ "$nsend" -ge 40 ] && [ "${posts:-0}" -ge $((nsrq + nsend)) ]
check "ibv_srq_pingpong: the $nsrq SRQ receives and $nsend sends posted live (got ${posts:-0} posts live)" $?
! grep -q 'answered from the trace: ibv_post_srq_recv' "$tmp/srq.replay"
check "ibv_srq_pingpong: no SRQ receive answered from the trace" $?

# ---- without the peer: the first poll that recorded a completion diverges
# (a SEND the peer never makes cannot complete a receive live)
NCCLRR_DEBUG=verbs "$ncclrr" replay --topo "$topo" --ranks 0 "$tmp/rec" >"$tmp/alone" 2>&1
check "replay of rank 0 alone fails" $((! $?))
must alone 'ibv_poll_cq' "$tmp/alone"
must alone 'diverged' "$tmp/alone"
must alone 'did not complete within 10 s' "$tmp/alone"

# ---- RDMA WRITE WITH IMM: the remote (address, rkey) remapped live
run_w() { # NAME ARGS...
	PP_PORT=$(free_port)
	"$ncclrr" record -q -o "$tmp/$1" -- "$ncclrr" run --topo "$topo" -np 2 --timeout 60 -- "$rdma_write" "$PP_PORT" \
		"${@:2}" >"$tmp/$1.log" 2>&1
}
run_w w
check "rdma_write recorded, exits 0" $?
must w 'rank 0: received 4096 bytes, immediate 0x1234abcd: ok' "$tmp/w.log"
NCCLRR_DEBUG=verbs "$ncclrr" replay "$tmp/w" >"$tmp/w.replay" 2>&1
check "replay of rdma_write exits 0" $?
must w.replay '^result: the replay matches the recording$' "$tmp/w.replay"
n=$(grep -cE 'data path: 1 posts live, 0 answered from the trace; 1 completions live, 0 polls' "$tmp/w.replay")
[ "$n" = 2 ]
check "both ranks post and complete live (the write and the receive its immediate consumed; got $n)" $?

# the peer's MR deregistered before the write (dereg), or a write half past
# the end of the peer's region (oob, posted live outside the live region):
# the recorded completion error is reproduced by the fake fabric, live
for m in dereg oob; do
	run_w "w$m" $m
	check "rdma_write $m recorded, fails" $((! $?))
	must "w$m" 'rank 1: write completed: remote access error (10)' "$tmp/w$m.log"
	NCCLRR_DEBUG=verbs "$ncclrr" replay "$tmp/w$m" >"$tmp/w$m.replay" 2>&1
	must "w$m.replay" '^result: the replay matches the recording: failure reproduced' "$tmp/w$m.replay"
	must "w$m.replay" 'rank 1: ibv_poll_cq = 1 \[wc\[0\] IBV_WC_REM_ACCESS_ERR (10)\] (#[0-9]*, reproduced)' "$tmp/w$m.replay"
done

# RDMA WRITE WITH IMM and RDMA READ on QPs without a GRH: the RTR names the
# peer by LID, the remote (address, rkey) is found under that LID
for m in lid "lid read"; do
	n=w${m// /}
	run_w "$n" $m
	check "rdma_write $m recorded, exits 0" $?
	NCCLRR_DEBUG=verbs "$ncclrr" replay "$tmp/$n" >"$tmp/$n.replay" 2>&1
	check "replay of rdma_write $m exits 0" $?
	must "$n.replay" '^result: the replay matches the recording$' "$tmp/$n.replay"
	must "$n.replay" 'remapped, lid 0x' "$tmp/$n.replay"
	! grep -q 'answered from the trace:' "$tmp/$n.replay"
	check "rdma_write $m: no fallback reason said" $?
done
must wlid.log 'rank 0: received 4096 bytes, immediate 0x1234abcd: ok' "$tmp/wlid.log"
n=$(grep -cE 'data path: 1 posts live, 0 answered from the trace; 1 completions live, 0 polls' "$tmp/wlid.replay")
[ "$n" = 2 ]
check "without a GRH both ranks post and complete live (the write and the receive; got $n)" $?
must wlidread.log 'rank 1: read completed: success (0), 4096 bytes: ok' "$tmp/wlidread.log"
n=$(grep -cE 'data path: 1 posts live, 0 answered from the trace; 1 completions live, 0 polls' "$tmp/wlidread.replay")
[ "$n" = 1 ]
check "without a GRH the RDMA READ posts and completes live (got $n)" $?

# without the peer nothing publishes its QP (nor its rkey, which is looked up
# under the QP's owner): the write is answered from the trace, counted and
# said, and so is its CQ's poll
NCCLRR_DEBUG=verbs "$ncclrr" replay --ranks 1 "$tmp/w" >"$tmp/w1.replay" 2>&1
must w1.replay '^result: the replay matches the recording$' "$tmp/w1.replay"
must w1.replay 'data path: 0 posts live, 1 answered from the trace; 0 completions live, [1-9][0-9]* polls answered from the trace' "$tmp/w1.replay"
must w1.replay 'answered from the trace: ibv_post_send: work request 0 (wr_id 0x2a): remote 0x[0-9a-f]*+4096 rkey 0x[0-9a-f]*: no replayed process published the QP its RTR named' "$tmp/w1.replay"

echo "$pass passed, $fails failed"
[ "$fails" -eq 0 ]
