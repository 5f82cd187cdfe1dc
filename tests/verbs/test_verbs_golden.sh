#!/usr/bin/env bash
# The golden traces of unmodified ibv_rc_pingpong on the fake verbs fabric
# (traces/verbs/, made by traces/verbs/record.sh): an MTU mismatch between
# two hosts' NICs (topo/2node_8gpu_roce_mtu.xml: node0 at 1024, node1 at
# 4096) refuses rank 0's RTR to path MTU 4096 with EINVAL, as an HCA does.
# usage: test_verbs_golden.sh CASE NCCLRR SOURCE_ROOT
# CASE: logs | golden | live | diff | rerun | repeat20 | repeat100
#   logs      what the recorded job printed
#   golden    each replays to exactly NAME.expected
#   live      --inject none: the RTR runs on the fake and fails the same
#             way, and on a topology whose node0 carries 4096 it diverges
#   diff      `ncclrr diff clean mtu` names the cause
#   rerun     ibv_rc_pingpong again with the recorded answers
#   repeatN   mtu replayed N times (--repeat), every one reproduced
set -uo pipefail
case_=$1
ncclrr=$(realpath "$2")
root=$3
g=$root/traces/verbs
topo=$root/topo/2node_8gpu_roce_mtu.xml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
has() { grep -qF -- "$2" "$1" || fail "$3: no '$2' in: $(head -c 3000 "$1")"; }
unset NCCLRR_FAULT
rtr="ibv_modify_qp = EINVAL (Invalid argument)"

case $case_ in
logs)
	has "$g/mtu.log" "[0] Failed to modify QP to RTR" "mtu.log"
	has "$g/mtu.log" "ncclrr run: 0 of 2 ranks exited 0" "mtu.log"
	has "$g/clean.log" "ncclrr run: 2 of 2 ranks exited 0" "clean.log"
	# the recording injected nothing: the topology alone made the failure
	grep -q NCCLRR_FAULT "$g/mtu.log" && fail "mtu.log: a fault was injected"
	;;
golden)
	for t in clean mtu; do
		"$ncclrr" replay --topo "$topo" --timeout 60 "$g/$t" >"$tmp/$t.out" 2>&1
		"$root/traces/replay/normalize.sh" <"$tmp/$t.out" >"$tmp/$t.norm"
		diff -u "$g/$t.expected" "$tmp/$t.norm" || fail "$t: output differs from $t.expected"
	done
	;;
live)
	"$ncclrr" replay --inject none --topo "$topo" "$g/mtu" >"$tmp/live" 2>&1 || fail "live: exit $?: $(tail -5 "$tmp/live")"
	has "$tmp/live" "rank 0: $rtr (#524, reproduced) -> exit 1" "live"
	# the answers come from the topology, not from the trace: with node0
	# at 4096 too, the replay diverges where rank 0 first asks its port
	sed 's/mtu="1024"/mtu="4096"/' "$topo" >"$tmp/jumbo.xml"
	"$ncclrr" replay --inject none --timeout 10 --topo "$tmp/jumbo.xml" "$g/mtu" >"$tmp/jumbo" 2>&1
	rc=$?
	[ $rc -eq 1 ] || fail "jumbo: exit $rc, want 1 (diverged): $(tail -5 "$tmp/jumbo")"
	has "$tmp/jumbo" "first divergence: rank 0 #512 ibv_query_port: out port_attr.active_mtu: recorded 3, replayed 5" "jumbo"
	# the clean run's data path runs live: every post and completion
	NCCLRR_DEBUG=verbs "$ncclrr" replay --topo "$topo" "$g/clean" >"$tmp/clean" 2>&1 || fail "clean: exit $?"
	[ "$(grep -c 'data path: 520 posts live, 0 answered from the trace; 40 completions live, 0 polls' "$tmp/clean")" = 2 ] ||
		fail "clean: not every post live: $(grep 'data path' "$tmp/clean")"
	;;
diff)
	"$ncclrr" diff "$g/clean" "$g/mtu" >"$tmp/d" 2>&1
	rc=$?
	[ $rc -eq 1 ] || fail "diff: exit $rc, want 1"
	has "$tmp/d" "Earliest across ranks: rank 0 thread 1, call: ibv_modify_qp (fails only in B)" "diff headline"
	has "$tmp/d" "-g 0 -m 4096 -n 20'" "diff configuration (argv)"
	# rank 0's first divergence is the RTR itself (path MTU in attr), not
	# a post whose buffers or keys are this run's own (runid)
	grep -E '^rank 0 thread' "$tmp/d" | grep -qF 'ibv_modify_qp (attr, result differs)' ||
		fail "diff: rank 0's first divergence: $(grep -E '^rank 0 thread' "$tmp/d")"
	grep -E '^rank [0-9]+ thread' "$tmp/d" | grep -F 'ibv_post' && fail "diff: a post is a first divergence"
	;;
rerun)
	command -v ibv_rc_pingpong >/dev/null || { echo "SKIP: no ibv_rc_pingpong (ibverbs-utils)"; exit 77; }
	PP_PORT=$((20000 + $$ % 20000)) "$ncclrr" replay --rerun "$g/mtu" --topo "$topo" -o "$tmp/re" -- \
		"$root/tests/verbs/rc_pingpong.sh" -d mlx5_0 -g 0 -m 4096 -n 20 >"$tmp/re.out" 2>&1
	rc=$?
	[ $rc -eq 0 ] || fail "rerun: exit $rc: $(tail -5 "$tmp/re.out")"
	has "$tmp/re.out" "rank 0: reproduced: $rtr, exit 1" "rerun"
	has "$tmp/re.out" "[0] Failed to modify QP to RTR" "rerun"
	grep -q "^rerun: .* 0 NOT reproduced" "$tmp/re.out" || fail "rerun: $(grep '^rerun:' "$tmp/re.out")"
	;;
repeat*)
	n=${case_#repeat}
	"$ncclrr" replay --repeat "$n" --topo "$topo" "$g/mtu" >"$tmp/r" 2>&1 || fail "repeat $n: exit $?"
	has "$tmp/r" "repeat: $n of $n replays reproduced the failure, $n of $n identical to the first" "repeat $n"
	;;
*)
	echo "usage: $0 logs|golden|live|diff|rerun|repeatN NCCLRR SOURCE_ROOT" >&2
	exit 2
	;;
esac
[ $fails -eq 0 ] && echo "verbs golden $case_: ok"
exit $((fails > 0))
