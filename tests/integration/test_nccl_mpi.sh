#!/usr/bin/env bash
# A job launched by Open MPI's mpirun, recorded from outside
# (`ncclrr record -- mpirun ... ncclrr run --topo T -- init_allreduce`,
# `ncclrr run` in wrapper mode as the per-rank command): real NCCL 2.22 on
# 8 ranks of topo/2node_16gpu.xml, the unique id shared through
# NCCLRR_ID_DIR (NCCL_COMM_ID would let a rank connect before rank 0
# listens: NCCL's bootstrap race).  Once clean, once with rank 3's first
# cudaIpcOpenMemHandle failing (legacy IPC); mpirun stops the job when
# rank 3 exits 1, SIGTERMs and SIGKILLs the others.  Then every summary
# names rank 3 and that call: `hang`'s root cause, `diff`'s headline,
# `replay`'s recorded failure (first, whole, without the benign failures
# every rank and the launcher have).
# usage: test_nccl_mpi.sh NCCLRR SRCDIR WORKLOADS_DIR NCCL
set -uo pipefail
NCCLRR=$(realpath "$1") SRCDIR=$2 WL=$(realpath "$3") NCCL_HINT=${4:-}
command -v mpirun >/dev/null || { echo "SKIP: no mpirun (Debian: openmpi-bin)"; exit 77; }
. "$SRCDIR/tests/integration/nccl_common.sh"
T=$(mktemp -d "${TMPDIR:-/tmp}/ncclrr-test-mpi.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
TOPO=$SRCDIR/topo/2node_16gpu.xml
unset NCCLRR_FAULT NCCL_COMM_ID

# rec NAME [ncclrr run options...]: exit status in $rc
rec() {
	local name=$1; shift
	mkdir -p "$T/id-$name"
	NCCLRR_ID_DIR=$T/id-$name NCCL_DEBUG=WARN timeout 180 "$NCCLRR" record -q -o "$T/$name" -- \
		mpirun --allow-run-as-root --oversubscribe -np 8 -x NCCLRR_ID_DIR -x NCCL_DEBUG \
		${NCCLRR_FAKE_LIBDIR:+-x NCCLRR_FAKE_LIBDIR} \
		"$NCCLRR" run --topo "$TOPO" --nccl "$NCCL" "$@" -- "$WL/init_allreduce" >"$T/$name.log" 2>&1
	rc=$?
	ls "$T/$name"/*.nrt >/dev/null 2>&1 || { tail -20 "$T/$name.log"; echo "FAIL: no traces in $name"; exit 1; }
}

rec clean --env NCCL_CUMEM_ENABLE=0
[ "$rc" = 0 ] || { tail -20 "$T/clean.log"; fail "the clean job exited $rc"; }
rec ipc --env NCCL_CUMEM_ENABLE=0 --env NCCLRR_FAULT=cudaIpcOpenMemHandle:rank=3:nth=1:cudaErrorInvalidValue
grep -q 'injecting cudaErrorInvalidValue into cudaIpcOpenMemHandle (rank 3' "$T/ipc.log" ||
	{ tail -20 "$T/ipc.log"; echo "FAIL: the fault was not injected"; exit 1; }
[ "$rc" != 0 ] || fail "the failing job exited 0"

# hang: rank 3, the first rank to exit (1), is the root cause or the first abnormal end
"$NCCLRR" hang "$T/ipc" >"$T/hang" 2>&1
grep -qE '^HANG, root cause: rank 3 \(exited\)|^First abnormal end: rank 3 ' "$T/hang" ||
	fail "hang does not name rank 3: $(grep -E '^HANG|^First|^Chain' "$T/hang" | cut -c1-300)"
grep -E '^Chain|^First' "$T/hang" | grep -q 'rank 3 ended (exit 1).*its first failure was cudaIpcOpenMemHandle(.*= cudaErrorInvalidValue' ||
	fail "hang's summary does not give rank 3's exit and failing call"
grep -qE 'rank ([0-9]+) waits [a-z ]* for rank \1[;: ]' "$T/hang" && fail "a rank waits on itself"

# diff: the headline is rank 3's failing call, not a killed rank or a helper
"$NCCLRR" diff "$T/clean" "$T/ipc" >"$T/diff" 2>&1
grep '^Earliest' "$T/diff" | grep -q '^Earliest across ranks: rank 3 thread 1, failure only in B: cudaIpcOpenMemHandle = cudaErrorInvalidValue (1) at ' ||
	fail "diff's headline is not rank 3's cudaIpcOpenMemHandle: $(grep '^Earliest' "$T/diff")"

# replay: the recorded failure starts with rank 3's whole chain; no benign failure
timeout 120 "$NCCLRR" replay --topo "$TOPO" --timeout 20 "$T/ipc" >"$T/replay" 2>&1
sed -n '/^recorded failure:/,/^[a-z]/p' "$T/replay" | sed '1d;$d' >"$T/chain"
head -1 "$T/chain" | grep -qE '^  rank 3: cudaIpcOpenMemHandle = cudaErrorInvalidValue \(1\) \(#[0-9]+\) -> ncclCommInitRank = ncclUnhandledCudaError \(1\) \(#[0-9]+\) -> exit 1$' ||
	fail "the recorded failure does not start with rank 3's chain: $(cat "$T/chain")"
grep -E 'ENOSYS|EADDRINUSE|NOT_SUPPORTED|ENOENT' "$T/chain" && fail "a benign failure in the recorded failure"

[ $fails -eq 0 ] && echo "PASS: nccl mpi"
exit $((fails > 0))
