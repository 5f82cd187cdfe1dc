#!/usr/bin/env bash
# Record the golden replay traces of traces/replay/ again (after a
# deliberate change of what the tracer records), and their expected
# `ncclrr replay` output.  Each is the 16-rank conn_setup job (our stand-in
# for NCCL init: bootstrap ring, proxy connections, cuMem fds passed over
# UNIX sockets) on topo/2node_16gpu.xml under the fake runtime.
# usage: traces/replay/record.sh BUILD_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
ncclrr=$build/cli/ncclrr
wl=$build/tests/workloads/conn_setup
topo=$root/topo/2node_16gpu.xml
unset NCCL_DEBUG NCCLRR_FAULT CONN_SETUP_STALL CONN_SETUP_DIE NCCL_SOCKET_IFNAME

rec() {   # NAME TIMEOUT [env K=V...] -- [ncclrr run options]
	local name=$1 t=$2; shift 2
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	rm -rf "${here:?}/$name"
	env "${envs[@]}" "$ncclrr" record -q -o "$here/$name" -- \
		"$ncclrr" run --topo "$topo" --timeout "$t" "$@" -- "$wl" --no-nccl >/dev/null 2>&1 || true
	# without the run's own copy of its cluster file: these are also the
	# case of a recording that has none (replay_usage's topo checks)
	rm -f "$here/$name/nccl-topo.xml" "$here/$name/ncclrr-cluster.xml"
	"$ncclrr" replay --topo "$topo" "$here/$name" | "$here/normalize.sh" >"$here/$name.expected" || true
}

rec conn_clean 60 --
rec conn_import_fail 60 NCCLRR_FAULT=cuMemImportFromShareableHandle:rank=3:nth=1:CUDA_ERROR_INVALID_VALUE --
rec conn_bad_ifname 3 -- --rank-env 5:NCCL_SOCKET_IFNAME=nosuchif0
rec conn_rank_killed 3 CONN_SETUP_DIE=5 --
du -sh "$here"/conn_*/
