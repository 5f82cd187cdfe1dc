#!/usr/bin/env bash
# `ncclrr replay` of ncclNet plugin calls: net_pingpong (two processes, one
# connection each way, 7 messages 1 B .. 1 MiB and one back) recorded with
# ncclrr's socket transport as the external net plugin, then replayed
# against a live plugin: the calls must run (not be answered from the
# trace), the live plugin's failures must show as divergences, and 20
# replays must be identical.
# With TOPO and FAKE_LIBDIR (the IB case): recorded with ncclrr's IB
# transport between two virtual hosts of TOPO on the fake verbs, replay
# must pick ncclrr's IB transport by itself and run the calls through it.
# usage: test_replay_net.sh NCCLRR NET_PINGPONG NET_PLUGIN [TOPO FAKE_LIBDIR]
set -uo pipefail
ncclrr=$(realpath "$1")
pingpong=$(realpath "$2")
plugin=$(realpath "$3")
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/skip_asan_tracer.sh"
skip_asan_tracer "$(dirname "$ncclrr")/../tracer/libncclrr-trace.so"
unset NCCLRR_FAULT NCCLRR_NET_SOCKET_ADDR NCCLRR_NET_PLUGIN_REPLAY NCCL_DEBUG

if [ -n "${4:-}" ]; then
	topo=$(realpath "$4")
	# (NCCL_NET_PLUGIN by NCCL's short name, as users give it: the tracer's
	# wrapper finds libnccl-net-ncclrr-ib.so on LD_LIBRARY_PATH)
	LD_LIBRARY_PATH=$5:$(dirname "$plugin") NCCLRR_TOPO=$topo NCCLRR_HOST=0 NET_PINGPONG_CHILD_HOST=1 \
		NCCLRR_VERBS_DIR=$tmp/rdv NCCL_NET_PLUGIN=ncclrr-ib \
		"$ncclrr" record -q -o "$tmp/t" -- "$pingpong" - >"$tmp/rec.out" 2>&1 ||
		{ cat "$tmp/rec.out"; echo "FAIL: net_pingpong over ncclrr-ib did not record"; exit 1; }
	"$ncclrr" dump --meta --api none "$tmp/t" | grep -q '^#   env.NCCLRR_NET_PLUGIN=.*ncclrr-ib' ||
		fail "the traces do not name the IB plugin"
	# the fake fabric is the NIC: none of its own sockets (its rendezvous
	# under NCCLRR_VERBS_DIR) is in the trace
	n=$("$ncclrr" dump "$tmp/t" | grep -c "$tmp/rdv/")
	[ "$n" -eq 0 ] || fail "$n calls of the fake fabric's own in the trace: $("$ncclrr" dump "$tmp/t" | grep -m1 "$tmp/rdv/")"
	NCCLRR_DEBUG=net "$ncclrr" replay -v --timeout 60 --topo "$topo" "$tmp/t" >"$tmp/r1" 2>&1
	rc=$?
	[ $rc -eq 0 ] || { cat "$tmp/r1"; fail "replay exit $rc, want 0"; }
	grep -q "result: the replay matches the recording" "$tmp/r1" || fail "no match"
	n=$(grep -c 'ncclNet calls through .*/libnccl-net-ncclrr-ib.so' "$tmp/r1")
	[ "$n" -eq 2 ] || { grep 'ncclNet calls through' "$tmp/r1"; fail "$n of 2 processes replayed through ncclrr's IB transport"; }
	# the calls ran live: most of each process's, not answered from the trace
	while read -r done total inj; do
		[ "$done" -eq "$total" ] || fail "a process replayed $done of $total calls"
		[ $((done - inj)) -ge 10 ] || fail "a process ran only $((done - inj)) of $done calls live"
	done < <(sed -n 's/.*(net_pingpong): \([0-9]*\) of \([0-9]*\) calls, \([0-9]*\) answered from the trace.*/\1 \2 \3/p' "$tmp/r1")
	grep 'ncclNet calls through' "$tmp/r1" | head -1
	grep -E '^  .*\(net_pingpong\):' "$tmp/r1"
	[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
	echo PASS
	exit 0
fi

NCCL_NET_PLUGIN=$plugin "$ncclrr" record -q -o "$tmp/t" -- "$pingpong" - >"$tmp/rec.out" 2>&1 \
	|| { cat "$tmp/rec.out"; echo "FAIL: net_pingpong did not record"; exit 1; }
[ "$(ls "$tmp"/t/*.nrt | wc -l)" -eq 2 ] || fail "want 2 traces (receiver and sender)"
"$ncclrr" dump "$tmp/t" >"$tmp/d"
nrec=$(grep -c 'ncclNet_' "$tmp/d")

# 1. the replay matches, and the ncclNet calls ran: per process, at most
# the timing answers (devices, getProperties, not-ready polls) came from
# the trace
"$ncclrr" replay -v --timeout 20 "$tmp/t" >"$tmp/r1" 2>&1
rc=$?
cat "$tmp/r1"
[ $rc -eq 0 ] || fail "replay exit $rc, want 0"
grep -q "result: the replay matches the recording" "$tmp/r1" || fail "no match"
grep -q "cannot run\|not replayable" "$tmp/r1" && fail "calls the replayer cannot run"
live=0
while read -r done total inj; do
	[ "$done" -eq "$total" ] || fail "a process replayed $done of $total calls"
	[ $((done - inj)) -ge 10 ] || fail "a process ran only $((done - inj)) of $done ncclNet calls live"
	live=$((live + done - inj))
done < <(sed -n 's/.*(net_pingpong): \([0-9]*\) of \([0-9]*\) calls, \([0-9]*\) answered from the trace.*/\1 \2 \3/p' "$tmp/r1")
[ "$live" -ge 40 ] || fail "only $live ncclNet calls ran live (of $nrec recorded lines)"

# 2. the calls go through the live plugin: an init that fails there is a
# divergence (exit 1) named by call
NCCLRR_NET_SOCKET_ADDR=not-an-address "$ncclrr" replay --timeout 2 "$tmp/t" >"$tmp/r2" 2>&1
rc=$?
[ $rc -eq 1 ] || { cat "$tmp/r2"; fail "broken live plugin: exit $rc, want 1"; }
grep -q "first divergence: .* #[0-9]* ncclNet_init: result: recorded ncclSuccess (0), replayed ncclInvalidArgument (4)" "$tmp/r2" \
	|| { cat "$tmp/r2"; fail "no ncclNet_init divergence"; }

# 3. --net-plugin: the plugin given is the one used (the same .so by path
# works; a library without an ncclNet table is a set-up error, exit 2)
"$ncclrr" replay --net-plugin "$plugin" "$tmp/t" >"$tmp/r3" 2>&1 || { cat "$tmp/r3"; fail "--net-plugin PLUGIN: exit $?"; }
"$ncclrr" replay --net-plugin "$(dirname "$ncclrr")/ncclrr" "$tmp/t" >"$tmp/r4" 2>&1
rc=$?
[ $rc -eq 2 ] || fail "--net-plugin of a non-plugin: exit $rc, want 2"
grep -q "has no ncclNetPlugin_v6 .. _v11 table\|Cannot load the net plugin" "$tmp/r4" || { cat "$tmp/r4"; fail "no reason for the bad plugin"; }
"$ncclrr" replay --net-plugin "$tmp/none.so" "$tmp/t" >/dev/null 2>&1
[ $? -eq 2 ] || fail "--net-plugin of a missing file: want exit 2"

# 4. 20 replays, the same each time (also with --chaos)
"$ncclrr" replay --repeat 20 --timeout 20 "$tmp/t" >"$tmp/r5" 2>&1 || fail "--repeat 20: exit $?"
grep -q "repeat: 20 of 20 replays matched the recording, 20 of 20 identical to the first" "$tmp/r5" \
	|| { cat "$tmp/r5"; fail "--repeat 20 not identical"; }
"$ncclrr" replay --repeat 5 --chaos 3 --timeout 20 "$tmp/t" >"$tmp/r6" 2>&1 || { cat "$tmp/r6"; fail "--chaos: exit $?"; }
"$ncclrr" replay --inject all --timeout 20 "$tmp/t" >"$tmp/r7" 2>&1 || { cat "$tmp/r7"; fail "--inject all: exit $?"; }

echo "net replay: $nrec recorded ncclNet lines, $live calls ran live; $(grep '^repeat:' "$tmp/r5")"
[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo PASS
