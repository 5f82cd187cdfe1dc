#!/usr/bin/env bash
# `ncclrr replay --rerun`: the 16-rank conn_setup job is recorded failing, rerun from its
# trace alone and judged rank by rank.
# usage: test_rerun.sh NCCLRR SOURCE_ROOT WORKLOAD_DIR
set -uo pipefail
ncclrr=$(realpath "$1")
root=$2
wl=$(realpath "$3")
tmp=$(mktemp -d)
trap '[ -n "${RERUN_KEEP:-}" ] || rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
topo=$root/topo/2node_16gpu.xml
. "$(dirname "${BASH_SOURCE[0]}")/../lib/skip_asan_tracer.sh"
skip_asan_tracer "$(dirname "$ncclrr")/../tracer/libncclrr-trace.so"
unset NCCL_DEBUG NCCLRR_FAULT CONN_SETUP_STALL CONN_SETUP_DIE NCCL_SOCKET_IFNAME
export TMPDIR=$tmp

# record DIR TIMEOUT [ncclrr run options] -- the job, on a copy of the
# cluster file (case 4 removes it)
cp "$topo" "$tmp/cluster.xml"
record() {
	local dir=$1 t=$2; shift 2
	"$ncclrr" record -q -o "$dir" -- "$ncclrr" run --topo "$tmp/cluster.xml" --timeout "$t" "$@" -- "$wl/conn_setup" --no-nccl >"$dir.log" 2>&1
}

# 1. rank 3's import fails (the fault switch); the rerun has no NCCLRR_FAULT
#    of its own: the failure comes from the trace
NCCLRR_FAULT=cuMemImportFromShareableHandle:rank=3:nth=1:CUDA_ERROR_INVALID_VALUE record "$tmp/fault" 60
rc=$?
[ $rc -eq 1 ] || fail "fault recording: job exit $rc, want 1"
"$ncclrr" replay --rerun "$tmp/fault" --topo "$topo" --timeout 60 -o "$tmp/fault-re" -- "$wl/conn_setup" --no-nccl >"$tmp/v1" 2>"$tmp/e1"
rc=$?
[ $rc -eq 0 ] || { fail "fault rerun: exit $rc, want 0 (reproduced)"; cat "$tmp/v1"; tail -5 "$tmp/e1"; }
grep -qx 'rank 3: reproduced: cuMemImportFromShareableHandle = CUDA_ERROR_INVALID_VALUE, exit 1' "$tmp/v1" ||
	{ fail "no rank 3 verdict line"; grep 'rank 3' "$tmp/v1"; }
grep -qx 'rank 0: reproduced: no failing call, exit 0' "$tmp/v1" || fail "no rank 0 verdict line"
n=$(grep -c ': reproduced: ' "$tmp/v1")
[ "$n" -eq 16 ] || fail "$n ranks reproduced, want 16"
grep -q "NCCLRR_FAULT=cuMemImportFromShareableHandle:rank=3:nth=1:CUDA_ERROR_INVALID_VALUE" "$tmp/e1" ||
	{ fail "the rerun's fault rule is not the recorded failure's"; grep 'rerun:' "$tmp/e1"; }
grep -q "ncclrr-fake: injecting CUDA_ERROR_INVALID_VALUE into cuMemImportFromShareableHandle (rank 3, call 1)" "$tmp/v1" "$tmp/e1" ||
	fail "the fake runtime did not inject the failure in the rerun"
[ "$(ls "$tmp/fault-re"/*.nrt | wc -l)" -ge 16 ] || fail "the rerun was not recorded in -o DIR"
echo "fault: $(grep 'rank 3:' "$tmp/v1")"

# 2. rank 3 alone had a bad NCCL_SOCKET_IFNAME: it stops before the
#    bootstrap and the others wait until the timeout (rerun without --topo:
#    on the cluster file the recording names, env.NCCLRR_TOPO)
record "$tmp/ifname" 4 --rank-env 3:NCCL_SOCKET_IFNAME=nosuchif0
rc=$?
[ $rc -eq 124 ] || fail "ifname recording: job exit $rc, want 124 (timeout)"
grep -q '^\[3\] rank 3: Bootstrap : no socket interface found' "$tmp/ifname.log" || fail "ifname recording: rank 3 did not stop at the interface"
"$ncclrr" replay --rerun "$tmp/ifname" --timeout 4 -- "$wl/conn_setup" --no-nccl >"$tmp/v2" 2>"$tmp/e2"
rc=$?
[ $rc -eq 0 ] || { fail "ifname rerun: exit $rc, want 0"; cat "$tmp/v2"; tail -5 "$tmp/e2"; }
grep -q -- '--rank-env 3:NCCL_SOCKET_IFNAME=nosuchif0' "$tmp/e2" || { fail "rank 3's interface not given back to it alone"; grep 'rerun:' "$tmp/e2"; }
grep -q -- '--env NCCL_SOCKET_IFNAME' "$tmp/e2" && fail "the bad interface was given to every rank"
grep -qx 'rank 3: reproduced: no failing call, exit 1' "$tmp/v2" || { fail "no rank 3 verdict"; grep 'rank 3' "$tmp/v2"; }
grep -q "the rerun is recorded in $tmp/ncclrr-rerun\." "$tmp/e2" || fail "no default output directory under TMPDIR named"
grep -q -- "--topo $tmp/cluster.xml " "$tmp/e2" || { fail "the recorded cluster file was not used"; grep 'rerun:' "$tmp/e2"; }
echo "ifname: $(grep 'rank 3:' "$tmp/v2"); $(grep 'rank 0:' "$tmp/v2")"

# 3. not reproduced: the fault trace rerun with rank 5 dying mid-connect
#    (a different program run than the recorded one)
"$ncclrr" replay --rerun "$tmp/fault" --topo "$topo" --timeout 4 -- env CONN_SETUP_DIE=5 "$wl/conn_setup" --no-nccl >"$tmp/v3" 2>"$tmp/e3"
rc=$?
[ $rc -eq 1 ] || { fail "tampered rerun: exit $rc, want 1 (not reproduced)"; cat "$tmp/v3"; }
grep -q '^rank 5: NOT reproduced: recorded no failing call, exit 0, rerun .*signal SIGABRT' "$tmp/v3" ||
	{ fail "no rank 5 NOT reproduced line"; grep 'rank 5' "$tmp/v3"; }
# 4. usage and bad input: no trace, no cluster file
mkdir "$tmp/empty"
"$ncclrr" replay --rerun "$tmp/empty" -- "$wl/conn_setup" >/dev/null 2>"$tmp/e4"
rc=$?
[ $rc -eq 2 ] && grep -q 'holds no .nrt trace' "$tmp/e4" || fail "empty directory: exit $rc, want 2 with a reason"
# the recorded cluster file gone: a clear error asking for --topo
rm "$tmp/cluster.xml"
"$ncclrr" replay --rerun "$tmp/ifname" -- "$wl/conn_setup" --no-nccl >/dev/null 2>"$tmp/e6"
rc=$?
[ $rc -eq 2 ] && grep -q "env.NCCLRR_TOPO=$tmp/cluster.xml" "$tmp/e6" && grep -q 'pass the cluster to rerun on with --topo FILE' "$tmp/e6" ||
	{ fail "unreadable recorded cluster file: exit $rc, want 2 asking for --topo"; cat "$tmp/e6"; }

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "rerun: all cases passed"
