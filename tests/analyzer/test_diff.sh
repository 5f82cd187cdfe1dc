#!/bin/sh
# test_diff.sh CASE NCCLRR SRCDIR WORKLOADS_DIR - `ncclrr diff` on runs of
# conn_setup recorded live on the fake cluster.
#   same   two clean runs agree (ports, pids, pointers, fds differ)
#   fault  clean vs an injected cuMemImportFromShareableHandle failure on
#          rank 3: that call is the first and earliest divergence
#   env    clean vs a run with one more variable: reported as configuration
#   json   --json of the fault pair parses and says the same
#   bad    a truncated trace and bad usage: exit 2 with the file named
#   mpi    a job as mpirun launches it, healthy vs failing (hang_gen mpi):
#          the headline is the failing rank, not a rank the launcher's
#          stop killed (its trace stops early, no end) nor a fork stub
#   threads  one rank's NCCL thread and a helper (or two named NCCL
#          threads) created in another order with other first calls:
#          paired by class and name, not creation order (hang_gen threads)
#   align  generated runs (tests/bench/gen_trace) where B reorders calls,
#          retries a refused connection and polls a different number of
#          times: the same; with a failure late on rank 2: that call
# On real NCCL 2.22 (suite nccl, tests/analyzer/nccl_rec.sh):
#   nccl_ipc     clean vs rank 3's cudaIpcOpenMemHandle failing (legacy
#                IPC): the headline names rank 3 and that call, not the
#                many divergences of timing, threads and NCCL_CUMEM_ENABLE
#   nccl_ifname  clean vs NCCL_SOCKET_IFNAME=nosuchif0 on rank 5: the
#                headline is rank 5's failing ncclCommInitRank
set -u
CASE=$1 NCCLRR=$2 SRCDIR=$3 WL=$4
T=$(mktemp -d "${TMPDIR:-/tmp}/ncclrr-test-diff.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; [ -f "$T/out" ] && sed 's/^/  | /' "$T/out" | grep -v '^  |     = \|^  |   [AB] ' | head -60; exit 1; }
case $CASE in
nccl_*) . "$SRCDIR/tests/analyzer/nccl_rec.sh" ;;
*)
	CONN="$WL/conn_setup"
	[ -x "$CONN" ] || { echo "SKIP: $CONN not built"; exit 77; }
	;;
esac

# rec DIR [run options...]
rec() {
	d=$1; shift
	"$NCCLRR" record -o "$T/$d" -q -- "$NCCLRR" run --topo "$SRCDIR/topo/2node_16gpu.xml" --timeout 60 "$@" \
		-- "$CONN" --no-nccl >"$T/$d.log" 2>&1 || { cat "$T/$d.log"; fail "recording $d"; }
}
rec_fault() {
	NCCLRR_FAULT=cuMemImportFromShareableHandle:rank=3:nth=1:CUDA_ERROR_INVALID_VALUE \
		"$NCCLRR" record -o "$T/$1" -q -- "$NCCLRR" run --topo "$SRCDIR/topo/2node_16gpu.xml" --timeout 60 \
		-- "$CONN" --no-nccl >"$T/$1.log" 2>&1
	ls "$T/$1"/*.nrt >/dev/null 2>&1 || { cat "$T/$1.log"; fail "recording $1"; }
}
# diff EXPECTED-RC ARGS...
run_diff() {
	want=$1; shift
	"$NCCLRR" diff "$@" >"$T/out" 2>"$T/err"
	rc=$?
	cat "$T/err" >>"$T/out"
	[ "$want" = -1 ] || [ "$rc" = "$want" ] || fail "ncclrr diff $* exited $rc, wanted $want"
}

case $CASE in
same)
	rec a; rec b
	run_diff 0 "$T/a" "$T/b"
	grep -q '^Configuration: no difference' "$T/out" || fail "configuration differences between two clean runs"
	grep -q '^Calls: no divergence (17 processes in A, 17 in B, [1-9][0-9]* calls compared)' "$T/out" ||
		fail "no 'no divergence' line over 17 processes"
	run_diff 0 "$T/b" "$T/a"
	# one file against itself, and against another rank's file: differ
	f0=$(ls "$T/a"/*.nrt | sed -n 2p); f1=$(ls "$T/a"/*.nrt | sed -n 3p)
	run_diff 0 "$f0" "$f0"
	run_diff 1 "$f0" "$f1"
	;;
fault)
	rec a; rec_fault f
	run_diff 1 "$T/a" "$T/f"
	grep -q "^  env.NCCLRR_FAULT (every rank): A absent, B 'cuMemImportFromShareableHandle:rank=3" "$T/out" ||
		fail "the fault switch is not reported as a configuration difference"
	first=$(grep -m1 -E '^(rank|process|nccl rank) ' "$T/out")
	echo "$first" | grep -q '^rank 3 thread 1 .*: cuMemImportFromShareableHandle (.*result.* differs)' ||
		fail "first divergence is not rank 3's cuMemImportFromShareableHandle result: $first"
	grep -q '^  B> .* cuMemImportFromShareableHandle(.*= CUDA_ERROR_INVALID_VALUE (1)' "$T/out" ||
		fail "B's failing call is not shown"
	grep -q '^  A> .* cuMemImportFromShareableHandle(.*= CUDA_SUCCESS (0)' "$T/out" || fail "A's call is not shown"
	[ "$(grep -c '^    = ' "$T/out")" -ge 3 ] || fail "fewer than 3 calls of context before"
	grep -q '^Earliest across ranks: rank 3 thread 1, call: cuMemImportFromShareableHandle' "$T/out" ||
		fail "earliest across ranks is not rank 3's import"
	run_diff 1 --context 0 "$T/a" "$T/f"
	[ "$(grep -c '^    = ' "$T/out")" = 0 ] || fail "--context 0 still shows context"
	;;
env)
	rec a; rec e --env NCCL_DEBUG=INFO
	run_diff 1 "$T/a" "$T/e"
	sed -n 2p "$T/out" | grep -q "^  env.NCCL_DEBUG (every rank): A absent, B 'INFO'" ||
		fail "env.NCCL_DEBUG is not the configuration difference reported first"
	head -1 "$T/out" | grep -q '^Configuration: 1 difference$' || fail "not exactly one configuration difference"
	;;
json)
	rec a; rec_fault f
	run_diff 1 --json "$T/a" "$T/f"
	python3 - "$T/out" <<'PY' || fail "JSON does not say the same"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["same"] is False
assert any(c["key"] == "env.NCCLRR_FAULT" and c["a"] is None and c["b"].startswith("cuMemImport") for c in d["config"]), d["config"]
e = d["earliest"]
assert e["rank"] == 3 and e["kind"] == "call" and e["api"] == "cuMemImportFromShareableHandle", e
assert "result" in e["differs"] and "CUDA_ERROR_INVALID_VALUE" in e["call_b"] and "CUDA_SUCCESS" in e["call_a"], e
assert len(e["before"]) == 3, e
assert d["divergences"][0]["rank"] == 3, d["divergences"][0]
PY
	python3 -m json.tool "$T/out" >/dev/null || fail "python3 -m json.tool rejects the output"
	rec b
	run_diff 0 --json "$T/a" "$T/b"
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["same"] and not d["divergences"] and d["earliest"] is None' \
		"$T/out" || fail "JSON of two clean runs is not 'same'"
	;;
bad)
	rec a
	cp -r "$T/a" "$T/t"
	f=$(ls "$T/t"/*.nrt | sed -n 4p)
	head -c 40 "$f" >"$T/x" && mv "$T/x" "$f"
	# (skipped, the others compared: 3; --strict: 2)
	run_diff 3 "$T/a" "$T/t"
	grep -q "file=$f" "$T/out" || fail "the truncated file is not named"
	run_diff 2 --strict "$T/a" "$T/t"
	grep -q "file=$f" "$T/out" || fail "--strict: the truncated file is not named"
	# a changed byte in the middle of a file: the checksum names the file
	rm -rf "$T/t"; cp -r "$T/a" "$T/t"
	f=$(ls -S "$T/t"/*.nrt | head -1)
	# in the payload of its largest data chunk (type 3): a damaged meta
	# chunk is only skipped with a warning (FORMAT.md), so the middle of
	# the file, which may fall in one, made this case flaky
	python3 - "$f" <<-'PYEOF' || fail "no data chunk in $f"
	import struct, sys
	p = sys.argv[1]
	b = bytearray(open(p, "rb").read())
	off, best = 64, None
	while off + 64 <= len(b) and b[off:off + 4] == b"NRC1":
	    size = struct.unpack_from("<I", b, off + 32)[0]
	    if b[off + 4] == 3 and (best is None or size > best[1]):
	        best = (off + 64, size)
	    off += 64 + size
	if best is None or best[1] == 0:
	    sys.exit(1)
	b[best[0] + best[1] // 2] ^= 0xff
	open(p, "wb").write(b)
	PYEOF
	run_diff 3 "$T/a" "$T/t"
	grep -q "file=$f offset=[0-9]*: .*checksum" "$T/out" || fail "the damaged file and offset are not named"
	run_diff 2 --strict "$T/a" "$T/t"
	grep -q "file=$f offset=[0-9]*: .*checksum" "$T/out" || fail "--strict: the damaged file and offset are not named"
	run_diff 2 "$T/a"
	grep -q 'wants two runs' "$T/out" || fail "one argument: no usage message"
	run_diff 2 --context x "$T/a" "$T/a"
	grep -q -- '--context wants' "$T/out" || fail "bad --context not explained"
	run_diff 2 "$T/a" "$T/nonexistent"
	grep -q "nonexistent" "$T/out" || fail "missing run not named"
	;;
align)
	GEN="$WL/../bench/gen_trace"
	[ -x "$GEN" ] || { echo "SKIP: $GEN not built"; exit 77; }
	"$GEN" "$T/a" "$T/b" 4 300 same || fail "gen_trace"
	run_diff 0 "$T/a" "$T/b"
	grep -q '^Calls: no divergence (4 processes in A, 4 in B, [0-9]* calls compared)' "$T/out" || fail "no 'no divergence' line"
	run_diff 0 "$T/b" "$T/a"
	"$GEN" "$T/c" "$T/d" 4 300 late || fail "gen_trace"
	run_diff 1 "$T/c" "$T/d"
	grep -q '^Calls: 1 of 4 processes diverge' "$T/out" || fail "not exactly one diverging rank"
	grep -q '^rank 2 thread 1 .*: call #[0-9]* in A, #[0-9]* in B: cuMemImportFromShareableHandle (result differs)' \
		"$T/out" || fail "rank 2's late failure is not the divergence"
	;;
mpi)
	# a job as mpirun launches it (tests/analyzer/hang_gen.c mpi): rank 3's
	# trace stops first with no end (SIGKILLed when mpirun stopped the job),
	# a fork stub with rank 1's variables fails one more close (EBADF),
	# then rank 2 fails and exits 1: the headline is rank 2's first
	# failure, not the killed rank nor the stub
	GEN="$WL/../analyzer/hang_gen"
	mkdir -p "$T/m0" "$T/m1"
	"$GEN" "$T/m0" mpi 0 && "$GEN" "$T/m1" mpi 1 || fail "hang_gen mpi"
	run_diff 1 "$T/m0" "$T/m1"
	grep "^Earliest" "$T/out" | grep -q '^Earliest across ranks: rank 2 thread 1, .*cuDeviceGetAttribute.* in B' ||
		fail "the headline is not rank 2's first failure: $(grep "^Earliest" "$T/out")"
	# the stub with rank 1's variables is a helper (no CUDA, NVML, verbs
	# nor NCCL while rank 1's process has them), paired by executable
	grep -q '^process orterun#[0-9] thread 1 .*close' "$T/out" || fail "the fork stub's extra close is not a divergence"
	grep -q '^rank 1#' "$T/out" && fail "the fork stub is paired as a rank"
	# the benign failures every rank has (verbs absent, a port probed,
	# NVML NOT_SUPPORTED, EAGAIN) are no divergence (context lines show them)
	grep -E '^  [AB]> |^Earliest|only in [AB]' "$T/out" | grep -qE 'ENOSYS|EADDRINUSE|NOT_SUPPORTED|EAGAIN' &&
		fail "a benign failure is a divergence"
	;;
threads)
	# threads paired by role, not creation order (hang_gen threads): an
	# NCCL thread never with a launcher's helper thread (socket calls
	# only), and two NCCL threads by their names (metadata thread.TID)
	GEN="$WL/../analyzer/hang_gen"
	for named in 0 1; do
		mkdir -p "$T/a$named" "$T/b$named"
		"$GEN" "$T/a$named" threads 0 $named && "$GEN" "$T/b$named" threads 1 $named || fail "hang_gen threads"
		run_diff 1 "$T/a$named" "$T/b$named"
		grep -q '^rank 0 thread [0-9]* (tid 1102 in A, 2101 in B): .*cudaIpcOpenMemHandle (result differs)' "$T/out" ||
			fail "NAMED=$named: the NCCL threads (1102 in A, 2101 in B) are not paired"
		grep -q 'tid 1101 in A, 2101 in B\|tid 1102 in A, 2102 in B' "$T/out" && fail "NAMED=$named: a thread paired by creation order"
	done
	;;
nccl_ipc)
	nccl_rec clean 60
	[ "$rec_rc" = 0 ] || { tail -20 "$T/clean.log"; fail "the clean run exited $rec_rc"; }
	nccl_rec ipc 25 --env NCCL_CUMEM_ENABLE=0 --env "$IPC_FAULT"
	grep -q '^\[3\] ncclrr-fake: injecting' "$T/ipc.log" || { tail -20 "$T/ipc.log"; fail "the fault was not injected"; }
	run_diff 1 "$T/clean" "$T/ipc"
	grep -q "^  env.NCCLRR_FAULT (every rank): A absent, B 'cudaIpcOpenMemHandle:rank=3" "$T/out" ||
		fail "the fault switch is not a configuration difference"
	grep -q "^  env.NCCL_CUMEM_ENABLE (every rank): A absent, B '0'" "$T/out" || fail "NCCL_CUMEM_ENABLE not listed"
	grep "^Earliest" "$T/out" | grep -q '^Earliest across ranks: rank 3 thread 1, failure only in B: cudaIpcOpenMemHandle = cudaErrorInvalidValue (1) at ' ||
		fail "the headline is not rank 3's cudaIpcOpenMemHandle: $(grep "^Earliest" "$T/out")"
	grep -A1 '^  first failure only in B, thread 1' "$T/out" | grep -q 'B> .* cudaIpcOpenMemHandle(.*= cudaErrorInvalidValue' ||
		fail "rank 3's failing call is not shown"
	# the launcher's end (exit 124 at the timeout) is never the headline
	grep -q '^Earliest across ranks: process' "$T/out" && fail "the launcher is the headline"
	run_diff 1 --json "$T/clean" "$T/ipc"
	python3 - "$T/out" <<'PY' || fail "JSON does not name rank 3's failure"
import json, sys
d = json.load(open(sys.argv[1]))
e = d["earliest"]
assert e["rank"] == 3 and e["meaningful"]["kind"] == "failure_only_in_b", e
assert e["meaningful"]["failure"].startswith("cudaIpcOpenMemHandle = cudaErrorInvalidValue"), e["meaningful"]
assert d["headline"].startswith("Earliest across ranks: rank 3 thread 1, failure only in B"), d["headline"]
PY
	# two clean runs of real NCCL: benign failures (NVML NOT_SUPPORTED,
	# no IB devices, IPv6) and thread order are not divergences that matter
	nccl_rec clean2 60
	run_diff -1 "$T/clean" "$T/clean2"
	grep -q '^Earliest across ranks: .*failure only\|abnormal end only' "$T/out" && fail "two clean runs differ by a failure or an end"
	;;
nccl_ifname)
	nccl_rec clean 60
	[ "$rec_rc" = 0 ] || { tail -20 "$T/clean.log"; fail "the clean run exited $rec_rc"; }
	nccl_rec ifname 25 --rank-env 5:NCCL_SOCKET_IFNAME=nosuchif0
	run_diff 1 "$T/clean" "$T/ifname"
	grep -q "^  env.NCCL_SOCKET_IFNAME (rank 5): A 'lo', B 'nosuchif0'" "$T/out" ||
		fail "NCCL_SOCKET_IFNAME on rank 5 is not a configuration difference"
	grep "^Earliest" "$T/out" | grep -q '^Earliest across ranks: rank 5 thread 1, failure only in B: ncclCommInitRank = ncclInternalError (3) at ' ||
		fail "the headline is not rank 5's bootstrap failure: $(grep "^Earliest" "$T/out")"
	;;
*) echo "unknown case $CASE"; exit 2 ;;
esac
echo "PASS: diff $CASE"
