#!/usr/bin/env bash
# The main job: build ncclrr, then show what a trace holds.
#  - `ncclrr dump` and `ncclrr stats` on the golden trace in traces/;
#  - when a libnccl.so.2 is found: a fake 2-node NCCL run on the fake CUDA
#    runtime in which one rank fails to connect (fault switch), diagnosed
#    from NCCL's own log.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/setup.sh
ncclrr=build/cli/ncclrr

echo
echo "== ncclrr dump traces/sample_init.nrt (first 40 lines)"
"$ncclrr" dump traces/sample_init.nrt | head -n 40
echo
echo "== ncclrr dump --errors traces/sample_init.nrt"
"$ncclrr" dump --errors traces/sample_init.nrt
echo
echo "== ncclrr stats traces/sample_init.nrt"
"$ncclrr" stats --top 8 traces/sample_init.nrt

if [ -x scripts/fake-connect-failure.sh ]; then
	echo
	scripts/fake-connect-failure.sh
fi
