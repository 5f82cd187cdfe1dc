# Sourced by test_diff.sh and test_hang.sh for their cases on real NCCL
# (suite nccl): find the NCCL relinked for the fake cluster or skip (77),
# and record init_allreduce on 8 ranks of topo/2node_16gpu.xml (2 hosts
# x 4: P2P inside a host, NET/Socket across), with faults.
# Needs NCCLRR, SRCDIR, WL (the workloads dir), T (a scratch dir).
NCCL_HINT=${NCCL_HINT:-}
. "$SRCDIR/tests/integration/nccl_common.sh"
nccl_socket_only
ALLRED="$WL/init_allreduce"
[ -x "$ALLRED" ] || { echo "SKIP: $ALLRED not built"; exit 77; }

# nccl_rec DIR TIMEOUT [ncclrr run options...]: exit status in $rec_rc
nccl_rec() {
	d=$1 to=$2; shift 2
	env -u NCCLRR_FAULT NCCL_DEBUG=WARN "$NCCLRR" record -o "$T/$d" -q -- "$NCCLRR" run \
		--topo "$SRCDIR/topo/2node_16gpu.xml" -np 8 --timeout "$to" "$@" -- "$ALLRED" >"$T/$d.log" 2>&1
	rec_rc=$?
	ls "$T/$d"/*.nrt >/dev/null 2>&1 || { tail -20 "$T/$d.log"; echo "FAIL: no traces recorded in $d"; exit 1; }
}

# nccl_rec_killed DIR: rank 5 is SIGKILLed mid-connect, at its first
# cuMemImportFromShareableHandle (the fault switch's SIGKILL action: the
# same point in every run, where a kill from outside lands anywhere); the
# others hang or fail
nccl_rec_killed() {
	nccl_rec "$1" 25 --env NCCLRR_FAULT=cuMemImportFromShareableHandle:rank=5:nth=1:SIGKILL
}
IPC_FAULT="NCCLRR_FAULT=cudaIpcOpenMemHandle:rank=3:nth=1:cudaErrorInvalidValue"
