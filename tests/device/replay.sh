#!/usr/bin/env bash
# Replay and dump speed on a host with many CPUs (the device machine some
# sessions are lent: 16 cores; CI's VM has 2): tests/bench/bench_replay.sh
# at 16 and 64 ranks and the NET/IB goldens (no scale steps), and
# tests/bench/bench_dump.sh, each with its baseline in the same run, as on
# the VM.  No GPU is used: it tells how much of a figure measured on 2
# CPUs is the CPUs.
# usage: replay.sh KIT_DIR OUT_DIR      (KIT_DIR from tests/device/kit.sh)
set -uo pipefail
kit=$(realpath "$1")
out=$2
root=$(realpath "$(dirname "$0")/../..")
mkdir -p "$out"
t=$kit/tree
export LD_LIBRARY_PATH=$kit/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
echo "host: $(nproc) CPUs, $(awk '/^model name/ { sub(/.*: /, ""); print; exit }' /proc/cpuinfo)"
NCCLRR_BENCH_MAX_RANKS=64 "$root/tests/bench/bench_replay.sh" "$t/cli/ncclrr" "$root" "$t/tests/workloads" 2>&1 |
	tee "$out/bench_replay.txt"
"$root/tests/bench/bench_dump.sh" "$t/cli/ncclrr" "$root" 4 5 "$t/tests/bench/gen_trace" 2>&1 | tee "$out/bench_dump.txt"
