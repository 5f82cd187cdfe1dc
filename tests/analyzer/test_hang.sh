#!/usr/bin/env bash
# `ncclrr hang` on hangs recorded live: conn_setup's 16 ranks on the fake
# 2-node cluster under `ncclrr record -- ncclrr run --timeout 3`, with one
# rank stalled before its bootstrap, one dying mid-connect, one trace
# removed; a clean run; damaged input.
# usage: test_hang.sh CASE NCCLRR SOURCE_ROOT WORKLOAD_DIR
# CASE: stall | died | clean | missing | json | dot | bad | cycle | scale | mixed | mpi | nocall | nocall_after | hostile
# (cycle, scale, mixed, mpi, nocall, nocall_after, hostile: jobs written by hang_gen, built next to this test)
# On real NCCL 2.22 (suite nccl, tests/analyzer/nccl_rec.sh):
#   nccl_ipc     rank 3's cudaIpcOpenMemHandle fails, it exits, the others
#                wait: rank 3 is the root cause with that failure; no
#                process waits on itself, proxy/UDS service polls are no waits
#   nccl_killed  rank 5 SIGKILLed mid-init: it is named (a hang's root
#                cause, or the first abnormal end when NCCL notices)
set -uo pipefail
case_=$1
ncclrr=$(realpath "$2")
root=$3
wl=$(realpath "$4")
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
topo=$root/topo/2node_16gpu.xml
unset NCCL_DEBUG NCCLRR_FAULT CONN_SETUP_STALL CONN_SETUP_DIE
. "$(dirname "${BASH_SOURCE[0]}")/../lib/skip_asan_tracer.sh"
skip_asan_tracer "$(dirname "$ncclrr")/../tracer/libncclrr-trace.so"

# record DIR [VAR=VALUE...]: the 16-rank job, killed after 3 s if it hangs
record() {
	local dir=$1; shift
	env "$@" "$ncclrr" record -q -o "$dir" -- "$ncclrr" run --topo "$topo" --timeout 3 -- "$wl/conn_setup" --no-nccl \
		>"$tmp/record.log" 2>&1
}

# the file of rank R in DIR
file_of_rank() {
	local f
	for f in "$2"/*.nrt; do
		"$ncclrr" dump --meta --api none "$f" 2>/dev/null | grep -cx "#   rank=$1" >/dev/null && { echo "$f"; return 0; }
	done
	return 1
}

meta() { "$ncclrr" dump --meta --api none "$1" | sed -n "s/^#   $2=//p" | tail -1; }

# hang DIR [options]: text in $tmp/out, exit status in $rc
hang() {
	"$ncclrr" hang "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

# gen_hang [--json] ARGS...: a job hang_gen (built next to this test)
# writes, then `hang [--json]` on it
gen_hang() {
	local opt=
	[ "$1" = --json ] && { opt=$1; shift; }
	mkdir "$tmp/t"
	"$(dirname "$wl")/analyzer/hang_gen" "$tmp/t" "$@" || fail "hang_gen $* failed"
	hang $opt "$tmp/t"
}

expect_rc() {
	[ "$rc" -eq "$1" ] || { fail "ncclrr hang exited $rc, want $1"; cat "$tmp/out" "$tmp/err" | head -30; }
}

expect() {
	grep -qF -- "$1" "$tmp/out" || { fail "no '$1' in the output"; head -20 "$tmp/out"; }
}

case $case_ in
nccl_*)
	NCCLRR=$ncclrr SRCDIR=$root WL=$wl T=$tmp
	. "$(dirname "${BASH_SOURCE[0]}")/nccl_rec.sh"
	;;
esac

# no edge "rank N -> rank N", no proxy/UDS service poll as a wait
no_self_waits() {
	if grep -E '^  (rank [0-9]+) -> \1:' "$tmp/out"; then fail "a process waits on itself"; fi
	if grep -E '^  rank [0-9]+ -> .*: poll on fd' "$tmp/out" | grep -q 'proxy'; then
		fail "a proxy service poll is shown as a wait"
	fi
	return 0
}

case $case_ in
nccl_ipc)
	nccl_rec ipc 25 --env NCCL_CUMEM_ENABLE=0 --env "$IPC_FAULT"
	grep -q '^\[3\] ncclrr-fake: injecting' "$tmp/ipc.log" || { tail -20 "$tmp/ipc.log"; fail "the fault was not injected"; }
	hang "$tmp/ipc"
	expect_rc 1
	expect "HANG, root cause: rank 3 (exited)"
	grep '^Chain: ' "$tmp/out" | grep -qE 'wait.* for rank 3; rank 3 ended \(exit 1\) at [0-9.]+ s while others wait on it: its first failure was cudaIpcOpenMemHandle\(.*= cudaErrorInvalidValue' ||
		{ fail "the chain does not lead to rank 3's cudaIpcOpenMemHandle"; grep '^Chain' "$tmp/out" | cut -c1-400; }
	no_self_waits
	;;
nccl_killed)
	nccl_rec_killed killed
	f5=$(file_of_rank 5 "$tmp/killed") || fail "no trace of rank 5"
	[ -z "$(meta "$f5" end)" ] || fail "rank 5's trace has an end ($(meta "$f5" end)): it was not killed"
	hang "$tmp/killed"
	if [ "$rc" -eq 1 ]; then
		expect "HANG, root cause: rank 5 (died)"
		grep -qE '^Chain: .*for rank 5; rank 5 died: its trace (stops|holds no call)' "$tmp/out" || fail "no chain to rank 5"
	else
		expect_rc 0
		grep -qE '^First abnormal end: rank 5 died: its trace (stops at|holds no call)' "$tmp/out" ||
			fail "no first abnormal end for rank 5: $(grep -E '^(First|No hang)' "$tmp/out")"
	fi
	no_self_waits
	;;
stall)
	# rank 5 never starts its bootstrap: rank 0 waits in accept for it, the others in recv for rank 0
	record "$tmp/t" CONN_SETUP_STALL=5
	port=$(meta "$(file_of_rank 0 "$tmp/t")" env.NCCL_COMM_ID)
	[ -n "$port" ] || fail "rank 0's trace has no NCCL_COMM_ID"
	hang "$tmp/t"
	expect_rc 1
	expect "HANG, root cause: rank 5 (stuck)"
	expect "Chain: ranks 1-4,6-15 wait in recv for rank 0; rank 0 waits in accept at $port for rank 5; rank 5 never connected"
	expect "and it has nothing in flight"
	grep -A3 '^  rank 0 (' "$tmp/out" | grep -q "in flight, thread .*: \[accept\] accept(sockfd=" ||
		fail "rank 0 is not shown in flight in accept"
	grep -A3 '^  rank 9 (' "$tmp/out" | grep -q "\[recv\] recv(sockfd=.* for " || fail "rank 9 is not shown in flight in recv"
	grep -q "^Processes without a rank" "$tmp/out" || fail "the launcher is not listed apart"
	;;
died)
	# rank 3 aborts after making its bootstrap socket
	record "$tmp/t" CONN_SETUP_DIE=3
	f3=$(file_of_rank 3 "$tmp/t") || fail "no trace of rank 3"
	[ "$(meta "$f3" end)" = "signal SIGABRT" ] || fail "rank 3's trace says end=$(meta "$f3" end), want signal SIGABRT"
	[ "$(meta "$(file_of_rank 0 "$tmp/t")" end)" = "signal SIGTERM" ] || fail "rank 0's trace does not end by the timeout's SIGTERM"
	[ -n "$(meta "$f3" end_ts)" ] || fail "rank 3's trace has no end_ts"
	hang "$tmp/t"
	expect_rc 1
	expect "HANG, root cause: rank 3 (died)"
	expect "ranks 1-2,4-15 wait in recv for rank 0; rank 0 waits in accept at"
	expect "for rank 3; rank 3 died: its trace ended by signal SIGABRT"
	;;
clean)
	record "$tmp/t"
	[ $? -eq 0 ] || { fail "the clean job failed"; tail "$tmp/record.log"; }
	for r in 0 7 15; do
		e=$(meta "$(file_of_rank $r "$tmp/t")" end)
		[ "$e" = "exit 0" ] || fail "rank $r's trace says end=$e, want exit 0"
	done
	hang "$tmp/t"
	expect_rc 0
	expect "No hang: no traced process waits at the end of its trace."
	grep -q "HANG" "$tmp/out" && fail "a hang reported on a clean run"
	;;
missing)
	# the same stall, but rank 5's trace is gone: it never started, as far as the traces tell
	record "$tmp/t" CONN_SETUP_STALL=5
	f5=$(file_of_rank 5 "$tmp/t") || fail "no trace of rank 5"
	rm -f "$f5"
	hang "$tmp/t"
	expect_rc 1
	expect "HANG, root cause: rank 5 (no trace)"
	expect "rank 0 waits in accept at"
	expect "for rank 5; rank 5 has no trace: it never started, or its trace file is missing (16 ranks expected"
	expect "No trace: rank 5"
	;;
json)
	record "$tmp/t" CONN_SETUP_STALL=7
	hang --json "$tmp/t"
	expect_rc 1
	python3 -m json.tool "$tmp/out" >/dev/null || fail "--json is not one JSON document"
	python3 - "$tmp/out" <<'EOF' || fail "the JSON does not name rank 7 and the chain"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["hang"] is True, "hang"
assert d["root_rank"] == 7, d["root_rank"]
c = d["root_causes"][0]
assert c["kind"] == "stuck" and c["who"]["rank"] == 7 and c["waiting"] == 15, c
assert any(e["from"]["rank"] == 0 and e["to"] and e["to"]["rank"] == 7 and e["wait"] == "accept" for e in d["edges"])
assert sum(1 for e in d["edges"] if e["to"] and e["to"]["rank"] == 0 and e["wait"] == "recv") == 14
r0 = [p for p in d["processes"] if p["rank"] == 0][0]
t = r0["threads"][0]["innermost"]
assert t["call"].startswith("accept(") and t["blocked_in"] == "accept", t
# in flight until the end of the trace, not until its last record
assert t["for_s"] >= r0["end"]["time_s"] - t["since_s"] - 0.01, (t, r0["end"])
assert r0["end"]["how"] == "signal SIGTERM", r0["end"]
EOF
	;;
dot)
	record "$tmp/t" CONN_SETUP_DIE=9
	hang --dot "$tmp/g.dot" "$tmp/t"
	expect_rc 1
	grep -q '^digraph ncclrr_hang' "$tmp/g.dot" || fail "no digraph in the --dot file"
	n9=$(grep -E '^  n[0-9]+ \[label="rank 9\\n' "$tmp/g.dot" | grep -o '^  n[0-9]*' | tr -d ' ')
	n0=$(grep -E '^  n[0-9]+ \[label="rank 0\\n' "$tmp/g.dot" | grep -o '^  n[0-9]*' | tr -d ' ')
	[ -n "$n9" ] && [ -n "$n0" ] || fail "no nodes for ranks 0 and 9"
	grep -E "^  $n9 \\[.*root cause: died.*color=red" "$tmp/g.dot" >/dev/null || fail "rank 9 is not marked as the root cause"
	grep -qE "^  $n0 -> $n9 \\[label=\"accept " "$tmp/g.dot" || fail "no accept edge from rank 0 to rank 9"
	if command -v dot >/dev/null; then
		grep -q '<svg' "$tmp/g.dot.svg" 2>/dev/null || fail "dot is installed but no SVG was written"
		grep -qF "wrote $tmp/g.dot and $tmp/g.dot.svg" "$tmp/err" || fail "the SVG is not reported"
	else
		grep -qF "no SVG: \`dot\` is not on PATH" "$tmp/err" || fail "a missing dot is not reported"
	fi
	;;
bad)
	record "$tmp/t"
	f=$(file_of_rank 4 "$tmp/t")
	mkdir "$tmp/trunc" "$tmp/corrupt"
	head -c 40 "$f" >"$tmp/trunc/r4.nrt"
	hang "$tmp/trunc"
	expect_rc 2
	grep -qF "ncclrr hang: Cannot read trace: file=$tmp/trunc/r4.nrt offset=0:" "$tmp/err" || { fail "no clear error for a truncated file"; cat "$tmp/err"; }
	# a changed byte inside the first data chunk's payload
	cp "$f" "$tmp/corrupt/r4.nrt"
	python3 - "$tmp/corrupt/r4.nrt" <<'EOF'
import sys
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
i = next(i for i in range(64, len(b) - 64) if b[i:i + 4] == b'NRC1' and b[i + 4] == 3)
b[i + 64 + 20] ^= 0xff
open(p, 'wb').write(b)
EOF
	# (the rest of that thread skipped: 3; --strict: 2)
	hang "$tmp/corrupt"
	expect_rc 3
	grep -qE "ncclrr hang: Cannot read trace: file=$tmp/corrupt/r4.nrt offset=[0-9]+: .*checksum" "$tmp/err" ||
		{ fail "no clear error for a damaged chunk"; cat "$tmp/err"; }
	hang --strict "$tmp/corrupt"
	expect_rc 2
	grep -qE "ncclrr hang: Cannot read trace: file=$tmp/corrupt/r4.nrt offset=[0-9]+: .*checksum" "$tmp/err" ||
		{ fail "--strict: no clear error for a damaged chunk"; cat "$tmp/err"; }
	hang
	expect_rc 2
	hang --bogus "$tmp/t"
	expect_rc 2
	grep -q "unknown option '--bogus'" "$tmp/err" || fail "no message for an unknown option"
	hang --dot "$tmp/nodir/x.dot" "$tmp/t"
	expect_rc 2
	grep -q "Cannot write --dot file=$tmp/nodir/x.dot" "$tmp/err" || fail "no message for an unwritable --dot file"
	;;
cycle)
	# ranks 0-4, each in recv on its connection to the next: nobody outside the cycle
	gen_hang cycle 5
	expect_rc 1
	expect "HANG, root cause: rank 0 (cycle)"
	expect "Chain: ranks 0-4 wait on each other: rank 0 waits in recv for rank 1, rank 1 waits in recv for rank 2, rank 2 waits in recv for rank 3, rank 3 waits in recv for rank 4, rank 4 waits in recv for rank 0 (a cycle"
	;;
scale)
	# 1024 ranks: rank 777 never connects to the bootstrap root
	gen_hang --json scale 1024 777
	expect_rc 1
	python3 - "$tmp/out" <<'EOF' || fail "the JSON does not name rank 777 with 1023 ranks waiting"
import json, sys
d = json.load(open(sys.argv[1]))
c = d["root_causes"][0]
assert d["root_rank"] == 777 and c["kind"] == "stuck" and c["waiting"] == 1023, c
assert d["summary"].startswith("ranks 1-776,778-1023 wait in recv for rank 0; rank 0 waits in accept at 127.0.0.1:29500 for rank 777; rank 777 never connected"), d["summary"]
assert len(d["edges"]) == 1023
EOF
	;;
mpi)
	# a job as mpirun launches it (hang_gen mpi 1): rank 3's trace stops
	# first with no end (SIGKILLed when mpirun stopped the job), rank 2
	# exits 1, then mpirun stops the job (SIGTERM) with rank 1 blocked in
	# recv from an address no trace has: rank 2 is the root cause, not the
	# rank waiting outside the traces nor the one the stop killed; a recv on
	# a rank's own socketpair is no wait
	gen_hang mpi 1
	expect_rc 1
	expect "HANG, root cause: rank 2 (exited)"
	expect "1. [exited, 0 waiting] rank 2 ended (exit 1) at"
	expect ", the first rank to end abnormally: its first failure was cuDeviceGetAttribute("
	grep -q "rank 3 died" "$tmp/out" && fail "rank 3, killed by the stop, is named as died"
	# rank 0's recv on its own socketpair is no wait on anyone
	grep -q "recv on fd 20" "$tmp/out" && fail "rank 0's socketpair recv is a wait: $(grep 'fd 20' "$tmp/out")"
	grep -q "^  rank 0 (.*): not waiting" "$tmp/out" || fail "rank 0 waits"
	;;
mixed)
	# an unanswered proxy request, a rank in cuStreamSynchronize, one polling ibv_poll_cq, one exited,
	# one spinning on a non-blocking recv
	gen_hang mixed
	expect_rc 1
	expect "HANG, root cause: rank 1 (waits outside the traces)"
	expect "Chain: rank 0 waits for a proxy answer from rank 1; rank 4 waits in recv for rank 1; rank 1 waits on nothing the traces show (in stream/event synchronize: cuStreamSynchronize(hStream=0x5000)"
	expect "1. [waits outside the traces, 3 waiting] rank 1"
	grep -qE "thread [0-9]+: polling recv since [0-9.]+ s, 500 times" "$tmp/out" || fail "the EAGAIN recv spin is not a polling run"
	expect "rank 4 -> rank 1: recv on fd 8 (127.0.0.1:22004 -> 127.0.0.1:31001, NET/Socket)"
	expect "2. [waits outside the traces, 1 waiting] rank 2 waits on nothing the traces show (polling ibv_poll_cq since"
	expect "polling ibv_poll_cq since"
	grep -qE "thread [0-9]+: polling ibv_poll_cq since [0-9.]+ s, 1000 times" "$tmp/out" || fail "the polling run is not counted"
	expect "proxy request ncclProxyMsgGetFd (opId 0x42) on fd 9 unanswered since"
	expect "rank 0 -> rank 1: an answer to proxy request ncclProxyMsgGetFd (opId 0x42) on fd 9"
	grep -q "^  rank 3 (.*): ended; trace ended at .* by exit 0" "$tmp/out" || fail "rank 3 is not shown as ended by exit 0"
	grep -q "rank 3 ->" "$tmp/out" && fail "rank 3 exited but is in the graph"
	;;
nocall)
	# a rank whose trace has no call and no end, only when it was last
	# written: said in words, with no negative or absurd time
	mkdir "$tmp/n"
	"$(dirname "$wl")/analyzer/hang_gen" "$tmp/n" nocall || fail "hang_gen nocall failed"
	hang "$tmp/n"
	expect_rc 0
	grep -qE "rank 1 died: its trace stops at [0-9]\.[0-9]{6} s with no end recorded and no complete call" "$tmp/out" ||
		fail "no words for a trace without a complete call: $(cat "$tmp/out")"
	grep -qE "rank 1 \(.*\): not waiting; trace stops at [0-9]\.[0-9]{6} s, no end recorded, no complete call" "$tmp/out" ||
		fail "rank 1's line does not say it has no complete call"
	grep -qE -e '-[0-9]+\.[0-9]+ s|[0-9]{5,}\.[0-9]+ s' "$tmp/out" && fail "a negative or absurd time: $(cat "$tmp/out")"
	;;
nocall_after)
	# rank 0 failed and exited 1; rank 1's trace holds nothing, not even
	# a tail (mpirun's SIGKILL cut short the one tail of a rank that
	# started last: CI, 2026-11-28): when rank 1 died is unknown, so the
	# first abnormal end is rank 0's, whose failure the trace holds
	mkdir "$tmp/na"
	"$(dirname "$wl")/analyzer/hang_gen" "$tmp/na" nocall_after || fail "hang_gen nocall_after failed"
	hang "$tmp/na"
	expect_rc 0
	grep -q "^First abnormal end: rank 0 ended (exit 1) .*its first failure was cuInit(Flags=0) = CUDA_ERROR_NO_DEVICE" "$tmp/out" ||
		fail "the first abnormal end is not rank 0's failure: $(grep '^First' "$tmp/out")"
	expect "rank 1 (gen:"
	;;
hostile)
	# metadata no real run has: nranks=1000000000 (took 5 GB and over 30 s,
	# ranks x processes), rank 2147483647 (a signed overflow: exit 2 with no
	# word), calls at 2^63 ns and after (time arithmetic saturates)
	mkdir "$tmp/h"
	"$(dirname "$wl")/analyzer/hang_gen" "$tmp/h" hostile || fail "hang_gen hostile failed"
	timeout 20 "$ncclrr" hang "$tmp/h/gen-0.nrt" "$tmp/h/gen-2.nrt" >"$tmp/out" 2>&1
	rc=$?
	[ $rc -eq 0 ] || fail "nranks=1000000000: exit $rc"
	expect "says nranks=1000000000, more than the 1048576 ranks this analysis takes: ignored"
	expect "2 ranks expected (highest traced rank)"
	timeout 20 "$ncclrr" hang "$tmp/h/gen-1.nrt" >"$tmp/out" 2>&1
	rc=$?
	[ $rc -eq 0 ] || fail "rank 2147483647: exit $rc"
	expect "rank 2147483647 (gen:"
	for f in "$tmp"/h/gen-*.nrt "$tmp/h"; do
		timeout 20 "$ncclrr" export --html "$tmp/r.html" $f >"$tmp/out" 2>&1
		rc=$?
		[ $rc -eq 0 ] && grep -q '</html>' "$tmp/r.html" || fail "export --html $f: exit $rc, $(tail -2 "$tmp/out")"
	done
	;;
*)
	echo "unknown case $case_"
	exit 2
	;;
esac
[ $fails -eq 0 ] && echo "PASS: hang $case_"
exit $((fails > 0))
