#!/usr/bin/env bash
# The main job: build ncclrr, then record a fake multi-node run that fails
# at connect and diagnose it from the trace.
#  - `ncclrr run` starts conn_setup as 16 ranks on topo/2node_16gpu.xml (2
#    virtual hosts x 8 fake GPUs): driver discovery through
#    cuGetProcAddress, cuMem buffers, a bootstrap over TCP, a ring of proxy
#    connections whose same-host peers import each other's buffer, and the
#    real NCCL's own start-up;
#  - the fake runtime's fault switch makes rank 3's
#    cuMemImportFromShareableHandle fail, as a broken P2P/cuMem import does;
#  - `ncclrr record` traces every process; `ncclrr stats` and `ncclrr dump`
#    find the failing call, its rank, and what led to it.
#  - `ncclrr diff` against a clean run names the configuration difference and
#    rank 3's import as the first divergence; `ncclrr export` writes the
#    HTML report and the Chrome/Perfetto JSON.
#  - `ncclrr replay` re-executes the trace here (one worker per recorded
#    process, real loopback sockets, the fake runtime) ten times and
#    reproduces rank 3's failure at the same call each time, then again with
#    only ranks 2 and 3 (the others served from the trace).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/setup.sh
ncclrr=build/cli/ncclrr
out=build/main-job
rm -rf "$out"
mkdir -p "$out"
fault=cuMemImportFromShareableHandle:rank=3:nth=1:CUDA_ERROR_INVALID_VALUE

echo
echo "== ncclrr record -o $out/trace -- ncclrr run --topo topo/2node_16gpu.xml -- conn_setup"
echo "   (NCCLRR_FAULT=$fault)"
set +e
NCCLRR_FAULT=$fault "$ncclrr" record -o "$out/trace" -- \
	"$ncclrr" run --topo topo/2node_16gpu.xml --timeout 120 -- build/tests/workloads/conn_setup >"$out/run.log" 2>&1
rc=$?
set -e
grep -E '^\[3\] rank 3: (cuMemImport|proxy|[0-9]+ failure)|^\[4\] .*could not use|^ncclrr (run|record):' "$out/run.log" || true
echo "(job exit status $rc; full output in $out/run.log)"

echo
echo "== ncclrr stats --rank 3 --top 12 $out/trace"
"$ncclrr" stats --rank 3 --top 12 "$out/trace"

echo
echo "== ncclrr dump --errors --api 'cuMem*' $out/trace   (every rank)"
"$ncclrr" dump --errors --api 'cuMem*' "$out/trace" | tee "$out/errors.txt"

echo
echo "== ncclrr dump --errors --rank 3 --api 'cuGetExportTable,nccl*' $out/trace"
echo "   (the real NCCL's own start-up on this machine, in the same trace)"
"$ncclrr" dump --errors --rank 3 --api 'cuGetExportTable,nccl*' "$out/trace" | tee "$out/nccl-errors.txt"

echo
echo "== rank 3 around the failure: its proxy connection, its GetFd request and the answer, the fd, the import"
"$ncclrr" dump --rank 3 --api 'sock_info,ncclProxy*,recvmsg,cuMemImport*' "$out/trace" | tail -n 8

echo
echo "== ncclrr diff: a clean run of the same job against this one"
"$ncclrr" record -o "$out/clean" -q -- \
	"$ncclrr" run --topo topo/2node_16gpu.xml --timeout 120 -- build/tests/workloads/conn_setup >"$out/clean.log" 2>&1 || true
set +e
"$ncclrr" diff --context 1 "$out/clean" "$out/trace" | tee "$out/diff.txt" | grep -E '^(Configuration|  env|Earliest)'
set -e
"$ncclrr" export --html "$out/report.html" --chrome "$out/trace.json" "$out/trace"
echo "(full diff in $out/diff.txt; HTML report $out/report.html; Chrome/Perfetto JSON $out/trace.json)"

echo
echo "== ncclrr replay --repeat 10 $out/trace"
"$ncclrr" replay --repeat 10 "$out/trace" | tee "$out/replay.txt"
echo
echo "== ncclrr replay --ranks 2,3 $out/trace   (ranks 2 and 3 only; the other 14 served from the trace)"
"$ncclrr" replay --ranks 2,3 "$out/trace" | grep -E '^(ncclrr replay|  rank 3|result)'

echo
echo "== diagnosis"
line=$(grep -m1 'cuMemImportFromShareableHandle(.*) = CUDA_ERROR_INVALID_VALUE' "$out/errors.txt" || true)
if [ -z "$line" ] || [ "$rc" -eq 0 ]; then
	echo "main job: the injected failure is not in the trace (job exit $rc)" >&2
	exit 1
fi
host_pid=$(echo "$line" | awk '{print $2}')
echo "rank 3 ($host_pid): cuMemImportFromShareableHandle = CUDA_ERROR_INVALID_VALUE on the buffer rank 4 sent"
echo "over its proxy connection; rank 3 reported it to rank 4 and the job exited $rc."
if grep -q 'd4082055.*CUDA_ERROR_NOT_FOUND' "$out/nccl-errors.txt"; then
	echo "NCCL itself stops at start-up here: its statically linked CUDA runtime asked for the driver"
	echo "integrity table d4082055-..., which the fake driver does not provide (replayer/fake/README.md),"
	echo "and ncclCommInitRank returned ncclUnhandledCudaError."
fi
exit 0
