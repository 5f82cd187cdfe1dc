#!/usr/bin/env bash
# The main job: build ncclrr, then record a fake multi-node run of real NCCL
# that fails at connect, and replay, rerun and diagnose it.
#  - `ncclrr run` starts tests/workloads/tp_dp as 16 ranks on
#    topo/2node_16gpu.xml (2 virtual hosts x 8 fake GPUs) with real NCCL
#    2.22.3 (Debian's libnccl_static.a relinked against ncclrr's CUDA
#    runtime by scripts/nccl.sh) and legacy CUDA IPC for P2P
#    (NCCL_CUMEM_ENABLE=0), NET/Socket between the hosts (NCCL_IB_DISABLE=1:
#    ncclrr replays no trace of NCCL's own NET/IB yet, issue 15);
#  - the fake runtime's fault switch makes rank 3's first
#    cudaIpcOpenMemHandle fail, as a broken P2P/IPC path does; NCCL prints
#    its own transport/p2p.cc WARN and `transport.cc:N -> 1` chain, and the
#    other ranks wait for rank 3 until the launcher's timeout;
#  - `ncclrr record` traces every process; `ncclrr replay` re-executes the
#    trace here ten times, then with ranks 3 and 2 only, and reproduces
#    rank 3's failure at the same call each time; `ncclrr replay --rerun`
#    runs the real program again with the recorded answers;
#  - `ncclrr diff` against a clean recording names the fault and its rank;
#    `ncclrr export` writes the HTML report, the Chrome/Perfetto JSON and a
#    native Perfetto protobuf trace.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/setup.sh
ncclrr=build/cli/ncclrr
out=build/main-job
topo=topo/2node_16gpu.xml
wl=build/tests/workloads/tp_dp
rm -rf "$out"
mkdir -p "$out"
fault=cudaIpcOpenMemHandle:rank=3:nth=1:cudaErrorInvalidValue
# NCCL's WARN lines and its "file.cc:N -> R" chain (printed at INFO for
# every subsystem); ENV keeps the rest of INFO to a few lines per rank
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV

echo
echo "== ncclrr record -o $out/trace -- ncclrr run --topo $topo -- tp_dp   (16 ranks, real NCCL 2.22.3)"
echo "   NCCL_CUMEM_ENABLE=0 (P2P over legacy CUDA IPC), NCCL_IB_DISABLE=1 (NET/Socket), NCCLRR_FAULT=$fault"
set +e
"$ncclrr" record -q -o "$out/trace" -- "$ncclrr" run --topo "$topo" --timeout 15 \
	--env NCCL_CUMEM_ENABLE=0 --env NCCL_IB_DISABLE=1 --env "NCCLRR_FAULT=$fault" -- "$wl" >"$out/run.log" 2>&1
rc=$?
set -e
echo "-- what NCCL printed (rank 3, and the first line of each other rank that failed):"
grep -E '^\[3\] .*(NCCL WARN|-> [0-9]+$|ncclCommInitRank failed|injecting)' "$out/run.log" | head -n 14 || true
grep -E '^\[[0-9]+\] rank [0-9]+: ncclCommInitRank failed' "$out/run.log" | grep -v '^\[3\]' | head -n 3 || true
grep -E '^ncclrr run: .*(timeout|exited)' "$out/run.log" | head -n 2 || true
echo "(job exit status $rc; full output in $out/run.log)"

echo
echo "== ncclrr replay --repeat 10 $out/trace"
"$ncclrr" replay --repeat 10 "$out/trace" | tee "$out/replay.txt" | grep -E '^(ncclrr replay|recorded failure|  rank 3|reproduced failure|repeat|result)'
echo
echo "== ncclrr replay --ranks 3,2 $out/trace   (ranks 3 and 2 only; the other 14 served from the trace)"
"$ncclrr" replay --ranks 3,2 "$out/trace" | tee "$out/replay-ranks.txt" | grep -E '^(ncclrr replay|  rank 3: .*answered|result)'

echo
echo "== ncclrr replay --rerun $out/trace -- tp_dp   (the real program again, with the recorded answers)"
"$ncclrr" replay --rerun "$out/trace" -o "$out/rerun" -- "$wl" 2>"$out/rerun.err" | tee "$out/rerun.txt" |
	awk '/^rank 3:/ { p = 1; print; next } /^rank / { p = 0 } p && /NCCL: transport/ { print } /^rerun:/ { print }'


echo
echo "== ncclrr diff: a clean recording of the same job (default cuMem P2P) against this one"
"$ncclrr" record -q -o "$out/clean" -- "$ncclrr" run --topo "$topo" --timeout 120 --env NCCL_IB_DISABLE=1 -- "$wl" >"$out/clean.log" 2>&1 || true
set +e
"$ncclrr" diff "$out/clean" "$out/trace" >"$out/diff.txt"
set -e
grep -E '^(Configuration|  env|Earliest)' "$out/diff.txt"
"$ncclrr" export --html "$out/report.html" --chrome "$out/trace.json" --perfetto "$out/trace.pb" "$out/trace"
echo "(full diff in $out/diff.txt; HTML report $out/report.html; Chrome/Perfetto JSON $out/trace.json; Perfetto protobuf $out/trace.pb)"

echo
echo "== diagnosis"
first=$(sed -n '/^recorded failure:/{n;p;q}' "$out/replay.txt")
if [ "$rc" -eq 0 ] || ! grep -q "rank 3: cudaIpcOpenMemHandle = cudaErrorInvalidValue" <<<"$first"; then
	echo "main job: the injected failure is not the recorded failure (job exit $rc): $first" >&2
	exit 1
fi
if ! grep -q '^repeat: 10 of 10 replays reproduced the failure' "$out/replay.txt"; then
	echo "main job: the replay did not reproduce the failure every time: $(grep -E '^(repeat|result)' "$out/replay.txt")" >&2
	exit 1
fi
seq=$(sed -n 's/.*cudaIpcOpenMemHandle = cudaErrorInvalidValue (1) (#\([0-9]*\)).*/\1/p' <<<"$first")
echo "rank 3 failed first: its call #$seq cudaIpcOpenMemHandle = cudaErrorInvalidValue, while NCCL set up"
echo "P2P/IPC with its peers; NCCL printed transport/p2p.cc 'Cuda failure' and 'transport.cc:N -> 1', and"
echo "ncclCommInitRank returned ncclUnhandledCudaError; the ranks that opened rank 3's memory after it had"
echo "exited failed in turn, and the rest waited until the launcher's timeout (exit $rc)."
echo "The replay reproduced it at the same call 10 of 10 times, and with ranks 3 and 2 alone;"
echo "$(grep -E '^rerun:' "$out/rerun.txt" | head -1)"
echo "$(grep -E '^Earliest across ranks:' "$out/diff.txt" | cut -c1-160)"
exit 0
