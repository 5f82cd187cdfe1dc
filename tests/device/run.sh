#!/usr/bin/env bash
# The tracer against a real CUDA driver and real NCCL, on a machine with a
# GPU (the device machine some sessions are lent; CI has none).  Checks
# that a traced program behaves exactly as untraced, that the trace reads
# back, and measures the per-call cost on the real driver.
#   1. cuda_smoke.cu (built here with nvcc): runtime + driver calls NCCL
#      makes at init; its output traced must equal its output untraced;
#      `ncclrr stats` / `dump` / `runinfo` read the trace.
#   2. PyTorch's NCCL: one rank, world size 1: init, all_reduce, destroy,
#      traced and untraced, same output; the NCCL API calls are in the trace.
#   3. PyTorch's NCCL failing at init: 2 ranks on one GPU, recorded with
#      `ncclrr record`; `ncclrr stats` and `hang` read the failed run.
# The recordings come back in OUT_DIR/traces.tar (to replay them on a
# machine without a GPU).
#   4. bench_tracer on the real driver: one rdtsc, one clock_gettime, and
#      one cuDeviceGetAttribute untraced and traced.
# usage: run.sh KIT_DIR OUT_DIR      (KIT_DIR from tests/device/kit.sh)
# (that machine has no bc: arithmetic is awk's)
set -uo pipefail
kit=$(realpath "$1")
out=$2
here=$(dirname "$(realpath "$0")")
mkdir -p "$out"
export LD_LIBRARY_PATH=$kit/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} NCCLRR_TRACE_LIBDIR=$kit/lib
ncclrr=$kit/bin/ncclrr
tlib=$kit/lib/libncclrr-trace.so
fails=0
check() { if [ "$2" -eq 0 ]; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }
nvidia-smi -L
echo "driver: $(nvidia-smi --query-gpu=driver_version --format=csv,noheader)"
work=$(mktemp -d)

echo "== 1. cuda_smoke, with the CUDA runtime linked statically (as NCCL has it) and shared"
# static: the tracer sees the runtime's driver calls (cuGetProcAddress
# entry points); shared: the runtime calls themselves too
for link in static shared; do
	nvcc -O2 -cudart "$link" -o "$work/bin_$link" "$here/cuda_smoke.cu" -lcuda
	"$work/bin_$link" >"$out/smoke_$link.untraced" 2>"$out/smoke_$link.untraced.err"
	check "cuda_smoke ($link) untraced exits 0" $?
	"$ncclrr" record -q -o "$work/smoke_$link" -- "$work/bin_$link" >"$out/smoke_$link.traced" 2>"$out/smoke_$link.traced.err"
	check "cuda_smoke ($link) traced exits 0" $?
	cmp -s "$out/smoke_$link.untraced" "$out/smoke_$link.traced"
	check "cuda_smoke ($link) prints the same traced and untraced" $?
	"$ncclrr" stats "$work/smoke_$link" >"$out/smoke_$link.stats" 2>&1
	check "ncclrr stats reads the $link trace" $?
	"$ncclrr" dump "$work/smoke_$link" >"$out/smoke_$link.dump" 2>&1
	check "ncclrr dump reads the $link trace" $?
done
cat "$out/smoke_static.traced" "$out/smoke_static.traced.err"
for f in cuGetProcAddress cuDeviceGetAttribute cuMemAlloc cuLaunchKernel cuMemCreate cuMemExportToShareableHandle cuIpcGetMemHandle; do
	grep -q "$f" "$out/smoke_static.dump"
	check "the static trace has $f" $?
done
# kernel<<<...>>> enters the CUDA 13 runtime as __cudaLaunchKernel
for f in cudaMalloc __cudaLaunchKernel cudaIpcGetMemHandle cuMemCreate; do
	grep -q "$f" "$out/smoke_shared.dump"
	check "the shared trace has $f" $?
done
grep -q 'cudaSetDevice.*cudaErrorInvalidDevice' "$out/smoke_shared.dump"
check "the shared trace has the failed cudaSetDevice" $?
head -c 3000 "$out/smoke_shared.stats"

echo "== 2. PyTorch NCCL, one rank"
python3 "$here/torch_nccl.py" ok >"$out/torch.untraced" 2>&1
check "torch_nccl untraced exits 0" $?
"$ncclrr" record -q -o "$work/torch" -- python3 "$here/torch_nccl.py" ok >"$out/torch.traced" 2>&1
check "torch_nccl traced exits 0" $?
grep -q 'all_reduce sum 1024' "$out/torch.traced"
check "torch_nccl traced prints the sum" $?
"$ncclrr" dump "$work/torch" >"$out/torch.dump" 2>&1
check "ncclrr dump reads the PyTorch trace" $?
for f in ncclCommInitRank ncclAllReduce cuMemCreate; do
	grep -q "$f" "$out/torch.dump"
	check "the PyTorch trace has $f" $?
done
"$ncclrr" stats "$work/torch" >"$out/torch.stats" 2>&1
head -c 3000 "$out/torch.stats"

calls=$(awk '/ calls, /{for(i=1;i<=NF;i++) if($(i+1)=="calls,") s+=$i} END{print s+0}' "$out/torch.stats")
bytes=$(du -sb "$work/torch" | cut -f1)
echo "torch trace: $bytes bytes, $calls calls: $(awk -v b="$bytes" -v c="$calls" 'BEGIN { printf "%.1f", b / c }') B/call"
echo "== 2b. record overhead on PyTorch NCCL init (wall s, alternating, 3 rounds)"
for i in 1 2 3; do
	t0=$(date +%s.%N); python3 "$here/torch_nccl.py" ok >/dev/null 2>&1; t1=$(date +%s.%N)
	NCCL_DEBUG=INFO python3 "$here/torch_nccl.py" ok >"$work/info.log" 2>&1; t2=$(date +%s.%N)
	"$ncclrr" record -q -o "$work/tr$i" -- python3 "$here/torch_nccl.py" ok >/dev/null 2>&1; t3=$(date +%s.%N)
	echo "round $i: untraced $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') traced $(awk -v a="$t2" -v b="$t3" 'BEGIN { printf "%.2f", b - a }') (NCCL_DEBUG=INFO log $(wc -c <"$work/info.log") bytes, trace $(du -sb "$work/tr$i" | cut -f1) bytes)" | tee -a "$out/bench.txt"
done

echo "== 3. PyTorch NCCL, two ranks on one GPU (a real init failure)"
cat >"$work/dup.sh" <<'S'
#!/bin/bash
python3 "$1" dup & a=$!
RANK=1 python3 "$1" dup & b=$!
wait $a; ra=$?; wait $b; rb=$?
echo "exit $ra $rb"
S
chmod +x "$work/dup.sh"
NCCL_DEBUG=WARN timeout 120 "$ncclrr" record -q -o "$work/dup" -- "$work/dup.sh" "$here/torch_nccl.py" >"$out/dup.log" 2>&1
tail -n 15 "$out/dup.log"
"$ncclrr" stats "$work/dup" >"$out/dup.stats" 2>&1
check "ncclrr stats reads the failed run" $?
"$ncclrr" hang "$work/dup" >"$out/dup.hang" 2>&1
echo "ncclrr hang: exit $?"
head -n 40 "$out/dup.stats" "$out/dup.hang"
tar -C "$work" -cf "$out/traces.tar" smoke_static smoke_shared torch dup

echo "== 4. bench_tracer on the real driver"
"$kit/bin/bench_tracer" clock | tee "$out/bench.txt"
for i in 1 2 3; do
	echo "untraced $("$kit/bin/bench_tracer" 2000000 3)" | tee -a "$out/bench.txt"
	mkdir -p "$work/b$i"
	echo "traced $(NCCLRR_TRACE_DIR=$work/b$i LD_PRELOAD=$tlib "$kit/bin/bench_tracer" 2000000 3)" | tee -a "$out/bench.txt"
done
echo "fixed cost: untraced $("$kit/bin/bench_tracer" spawn 200)" | tee -a "$out/bench.txt"
mkdir -p "$work/sp"
echo "fixed cost: traced $("$kit/bin/bench_tracer" spawn 200 "$tlib" "$work/sp")" | tee -a "$out/bench.txt"
# what comes back is at most 8 files: the outputs go in one archive
(cd "$out" && tar -cf outputs.tar smoke_* torch.* dup.* && rm -f smoke_* torch.* dup.*)
echo "device check: $fails failure(s)"
[ "$fails" -eq 0 ]
