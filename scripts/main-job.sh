#!/usr/bin/env bash
# The main job: build ncclrr, then show what a trace holds: `ncclrr dump`
# and `ncclrr stats` on the golden trace in traces/ (an NCCL init whose
# cuMem import fails). The fake runtime, tracer and replayer issues extend
# it to record -> replay -> diagnosis of a fake multi-node run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/setup.sh
ncclrr=build/cli/ncclrr

echo
echo "== ncclrr dump traces/sample_init.nrt (first 40 lines)"
"$ncclrr" dump traces/sample_init.nrt >build/sample_init.dump
head -n 40 build/sample_init.dump
echo
echo "== ncclrr dump --errors traces/sample_init.nrt"
"$ncclrr" dump --errors traces/sample_init.nrt
echo
echo "== ncclrr stats traces/sample_init.nrt"
"$ncclrr" stats --top 8 traces/sample_init.nrt
