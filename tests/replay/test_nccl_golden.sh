#!/usr/bin/env bash
# The golden traces of real NCCL 2.22.3 failing (traces/nccl/, made by
# traces/nccl/record.sh): replay, determinism, diff, hang and rerun.
# usage: test_nccl_golden.sh CASE NCCLRR SOURCE_ROOT [WORKLOAD_DIR NCCL_HINT]
# CASE: golden | repeat20:TRACE | repeat100:TRACE | load | smallbuf | smallbuf_load | ranks | diff | hang | rerun
# Replay, diff and hang need no NCCL (the traces are enough); rerun runs
# the real tp_dp again and skips (77) without a relinked NCCL.
set -uo pipefail
case_=$1
ncclrr=$(realpath "$2")
root=$3
wl=${4:-}
NCCL_HINT=${5:-}
g=$root/traces/nccl
topo=$root/topo/2node_16gpu.xml
tmp=$(mktemp -d)
busy=()
trap 'for p in "${busy[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
unset NCCLRR_FAULT NCCL_DEBUG
failures="p2p_ipc_open cumem_import net_connect bad_ifname rank_killed"
replay() { "$ncclrr" replay --topo "$topo" --timeout 60 "$@"; }
has() { grep -qF -- "$2" "$1" || fail "$3: no '$2' in: $(head -c 3000 "$1")"; }

# the failing rank and the call NCCL failed in, as the replay must name them
declare -A failing=(
	[p2p_ipc_open]="rank 3: cudaIpcOpenMemHandle = cudaErrorInvalidValue (1)"
	[cumem_import]="rank 3: cuMemImportFromShareableHandle = CUDA_ERROR_INVALID_VALUE (1)"
	[net_connect]="rank 8: connect = -1 ECONNABORTED (Software caused connection abort)"
	[bad_ifname]="rank 5: ncclCommInitRank = ncclInternalError (3)"
	[rank_killed]="rank 5: killed (no end recorded: SIGKILL?)"
)

# repeat N TRACE...: every replay reproduces, identically
repeat() {
	local n=$1 t; shift
	for t in "$@"; do
		replay --repeat "$n" "$g/$t" >"$tmp/$t.rep" 2>&1
		local rc=$?
		[ $rc -eq 0 ] || fail "$t: --repeat $n exit $rc: $(grep -E 'replay [0-9]|differs|hung|divergence' "$tmp/$t.rep" | head -5)"
		if [ "$t" = clean ]; then
			has "$tmp/$t.rep" "$n of $n replays matched the recording, $n of $n identical to the first" "$t"
		else
			has "$tmp/$t.rep" "$n of $n replays reproduced the failure, $n of $n identical to the first" "$t"
		fi
	done
}

case $case_ in
golden)
	# each replays to exactly its expected output, and the failure is the
	# recorded one, on the same rank, at the same call
	for t in clean $failures; do
		replay "$g/$t" >"$tmp/$t.out" 2>&1
		rc=$?
		[ $rc -eq 0 ] || fail "$t: exit $rc"
		"$root/traces/replay/normalize.sh" <"$tmp/$t.out" | grep -v '^ncclrr replay: warning: .*no index at the end' >"$tmp/$t.norm"
		diff -u "$g/$t.expected" "$tmp/$t.norm" || fail "$t: output differs from $t.expected"
		[ "$t" = clean ] && continue
		has "$tmp/$t.out" "result: the replay matches the recording: failure reproduced" "$t"
		grep -A1 '^reproduced failure:' "$tmp/$t.out" | grep -qF -- "${failing[$t]}" ||
			fail "$t: the first reproduced failure is not '${failing[$t]}': $(grep -A2 '^reproduced failure:' "$tmp/$t.out")"
	done
	has "$tmp/clean.out" "result: the replay matches the recording" clean
	;;
repeat20:* | repeat100:*)
	# one trace a test, so that the two cores share them: the clean run
	# 3 times (20 in slow), a failure 20 times (100)
	n=${case_%%:*} t=${case_#*:}
	n=${n#repeat}
	[ "$t" = clean ] && { [ "$n" = 100 ] && n=20 || n=3; }
	repeat "$n" "$t"
	;;
load)
	# once with both cores kept busy
	for _ in 1 2; do (while :; do :; done) & busy+=($!); done
	repeat 5 $failures
	;;
smallbuf | smallbuf_load)
	# The replay must not need the socket buffers the recording's kernel
	# had grown to (a rank's bootstrap sends 2.5 MB to the next one before
	# reading from the previous one; a peer at its end no longer reads):
	# every trace again in a network namespace of its own whose TCP
	# buffers stop at 64 KB (the machine's are untouched); smallbuf_load
	# (slow): each failure 20 times with both cores kept busy.
	. "$root/tests/lib/smallbuf.sh"
	traces="clean $failures" n=5
	if [ "$case_" = smallbuf_load ]; then
		traces=$failures n=20
		for _ in 1 2; do (while :; do :; done) & busy+=($!); done
	fi
	for t in $traces; do
		m=$n
		[ "$t" = clean ] && m=1
		small_buffers "$ncclrr" replay --topo "$topo" --timeout 60 --repeat $m "$g/$t" >"$tmp/$t.small" 2>&1 ||
			fail "$t with 64 KB socket buffers: exit $?: $(grep -E 'replay [0-9]|differs|hung|divergence|unshare|ip:' "$tmp/$t.small" | head -5)"
		if [ "$t" = clean ]; then
			has "$tmp/$t.small" "result: the replay matches the recording" "$t (64 KB buffers)"
		else
			has "$tmp/$t.small" "$m of $m replays reproduced the failure, $m of $m identical to the first" "$t (64 KB buffers)"
		fi
	done
	;;
ranks)
	# the failing rank and the peer whose IPC handle it opened; the other
	# 14 ranks served from the trace
	replay --ranks 3,2 --repeat 5 "$g/p2p_ipc_open" >"$tmp/r" 2>&1 || fail "--ranks 3,2: exit $?: $(tail -5 "$tmp/r")"
	has "$tmp/r" "2 of 17 processes" ranks
	has "$tmp/r" "5 of 5 replays reproduced the failure" ranks
	has "$tmp/r" "rank 3: cudaIpcOpenMemHandle = cudaErrorInvalidValue (1) (#1284513, answered from the trace)" ranks
	replay --ranks 5 "$g/bad_ifname" >"$tmp/r5" 2>&1 || fail "--ranks 5 bad_ifname: exit $?: $(tail -5 "$tmp/r5")"
	# the failing rank alone, and with a peer, where the proxy's UNIX socket
	# gets datagrams from ranks served from the trace (cuMem fds: their
	# poll and recvmsg are the trace's; they used to wait for ever)
	for tr in cumem_import:3 cumem_import:3,2 net_connect:8 net_connect:8,9; do
		t=${tr%%:*} r=${tr#*:}
		replay --ranks "$r" --repeat 5 --timeout 20 "$g/$t" >"$tmp/r" 2>&1 || fail "$t --ranks $r: exit $?: $(grep -E 'hung|divergence|^repeat' "$tmp/r" | head -3)"
		has "$tmp/r" "5 of 5 replays reproduced the failure" "$t --ranks $r"
		has "$tmp/r" "${failing[$t]} (#" "$t --ranks $r"
	done
	;;
diff)
	# against the clean run, the headline names the failing rank and call
	declare -A headline=(
		[p2p_ipc_open]="rank 3 thread 1, failure only in B: cudaIpcOpenMemHandle = cudaErrorInvalidValue (1)"
		[cumem_import]="rank 3 thread 1, failure only in B: cuMemImportFromShareableHandle = CUDA_ERROR_INVALID_VALUE (1)"
		[net_connect]="rank 8 thread 2, failure only in B: connect = -1 ECONNABORTED"
		[bad_ifname]="rank 5 thread 1, failure only in B: ncclCommInitRank = ncclInternalError (3)"
		[rank_killed]="rank 5, abnormal end only in B: killed"
	)
	for t in $failures; do
		"$ncclrr" diff "$g/clean" "$g/$t" >"$tmp/$t.diff" 2>&1
		rc=$?
		[ $rc -eq 1 ] || fail "diff clean $t: exit $rc, want 1"
		grep '^Earliest across ranks:' "$tmp/$t.diff" | grep -qF -- "${headline[$t]}" ||
			fail "diff clean $t: headline is not '${headline[$t]}': $(grep -E '^Earliest' "$tmp/$t.diff")"
	done
	has "$tmp/p2p_ipc_open.diff" "env.NCCLRR_FAULT (every rank): A absent, B 'cudaIpcOpenMemHandle:rank=3:nth=1:cudaErrorInvalidValue'" config
	has "$tmp/bad_ifname.diff" "env.NCCL_SOCKET_IFNAME (rank 5): A 'lo', B 'nosuchif0'" config
	;;
hang)
	# the dead rank first; p2p_ipc_open: the peers wait on rank 3, who exited
	"$ncclrr" hang "$g/rank_killed" >"$tmp/k" 2>&1
	has "$tmp/k" "First abnormal end: rank 5 died: its trace stops at" killed
	"$ncclrr" hang "$g/p2p_ipc_open" >"$tmp/i" 2>&1
	[ $? -eq 1 ] || fail "hang p2p_ipc_open: want exit 1 (a hang)"
	has "$tmp/i" "HANG, root cause: rank 3 (exited)" ipc
	has "$tmp/i" "its first failure was cudaIpcOpenMemHandle" ipc
	;;
rerun)
	# the real tp_dp again with the recorded answers: the failing rank
	# fails the same way, and NCCL prints the same WARN lines there
	. "$root/tests/integration/nccl_common.sh"
	# (net_connect: rank 8's refused socket becomes a connect rule aimed at
	# its thread, `connect:thread=NCCL Service  0:nth=1:ECONNREFUSED`)
	declare -A rank=([p2p_ipc_open]=3 [cumem_import]=3 [bad_ifname]=5 [net_connect]=8)
	for t in p2p_ipc_open cumem_import bad_ifname net_connect; do
		"$ncclrr" replay --rerun "$g/$t" --topo "$topo" -o "$tmp/re-$t" -- "$wl/tp_dp" >"$tmp/$t.re" 2>&1
		rc=$?
		[ $rc -eq 0 ] || fail "rerun $t: exit $rc: $(tail -5 "$tmp/$t.re")"
		has "$tmp/$t.re" "rank ${rank[$t]}: reproduced:" "rerun $t"
		grep -q "^rerun: .* 0 NOT reproduced" "$tmp/$t.re" || fail "rerun $t: $(grep '^rerun:' "$tmp/$t.re")"
	done
	# rank_killed: rank 5 is killed again after its last counted call (an IP
	# connect early in its bootstrap), earlier than the recorded kill, so
	# how its peers end may differ; rank 5 itself must end as recorded
	"$ncclrr" replay --rerun "$g/rank_killed" --topo "$topo" -o "$tmp/re-rank_killed" -- "$wl/tp_dp" \
		>"$tmp/rank_killed.re" 2>&1
	has "$tmp/rank_killed.re" "rank 5 was killed outright (no end recorded): the rerun kills it at its first call after its last counted call" "rerun rank_killed"
	grep '^rank 5: reproduced: ' "$tmp/rank_killed.re" | grep -qF 'killed from outside (no end recorded)' ||
		fail "rerun rank_killed: rank 5 not killed again: $(grep '^rank 5' "$tmp/rank_killed.re")"
	has "$tmp/p2p_ipc_open.re" "NCCL: transport/p2p.cc:" "rerun p2p_ipc_open"
	has "$tmp/net_connect.re" "NCCLRR_FAULT=connect:rank=8:nth=1:thread=NCCL Service  0:ECONNREFUSED" "rerun net_connect"
	has "$tmp/net_connect.re" "injecting ECONNREFUSED into connect (rank 8, thread 'NCCL Service  0', call 1)" "rerun net_connect"
	;;
*) echo "unknown case $case_"; exit 2 ;;
esac
[ $fails -eq 0 ] && echo "PASS: nccl golden $case_" || echo "$fails failure(s)"
[ $fails -eq 0 ]
