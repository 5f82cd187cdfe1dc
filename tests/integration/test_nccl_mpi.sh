#!/usr/bin/env bash
# Jobs launched by Open MPI's mpirun on 8 ranks of topo/2node_16gpu.xml
# with real NCCL 2.22 (`ncclrr run` in wrapper mode as the per-rank
# command), rank 3's first cudaIpcOpenMemHandle failing (legacy IPC).
#
# summaries: init_allreduce, recorded from outside (`ncclrr record --
#   mpirun ... ncclrr run --topo T -- init_allreduce`), the unique id
#   shared through NCCLRR_ID_DIR (NCCL_COMM_ID would let a rank connect
#   before rank 0 listens: NCCL's bootstrap race).  Once clean, once
#   failing; mpirun stops the job when rank 3 exits 1, SIGTERMs and
#   SIGKILLs the others.  Every summary names rank 3 and that call:
#   `hang`'s root cause, `diff`'s headline, `replay`'s recorded failure
#   (first, whole, without the benign failures every rank and the
#   launcher have).
# outside | inside: an MPI program (tests/workloads/mpi_allreduce.c: the
#   NCCL id through MPI_Bcast, MPI_Abort on failure), recorded
#     outside: ncclrr record -- mpirun ... ncclrr run ... -- mpi_allreduce
#              (mpirun and its helpers traced too: served, not replayed)
#     inside:  mpirun ... ncclrr record -- ncclrr run ... -- mpi_allreduce
#              (only the ranks traced)
#   mpirun aborts the job: SIGTERM, then SIGKILL for the ranks still there
#   (their traces lose their last moments).  Replayed 20 of 20 with the
#   failure reproduced, also with --ranks 3, and without a cluster file
#   (as a job on real GPUs: CUDA and NVML answered from the trace);
#   `hang` and `diff` (against a clean run) name rank 3.
# usage: test_nccl_mpi.sh summaries|outside|inside NCCLRR SRCDIR WORKLOADS_DIR NCCL
set -uo pipefail
case_=$1
NCCLRR=$(realpath "$2") SRCDIR=$3 WL=$(realpath "$4") NCCL_HINT=${5:-}
command -v mpirun >/dev/null || { echo "SKIP: no mpirun (Debian: openmpi-bin)"; exit 77; }
. "$SRCDIR/tests/integration/nccl_common.sh"
nccl_socket_only
T=$(mktemp -d "${TMPDIR:-/tmp}/ncclrr-test-mpi.XXXXXX") || exit 1
fails=0
# a failing case keeps its recordings for a look (CI prints where)
trap '[ "$fails" = 0 ] && rm -rf "$T" || echo "kept: $T"' EXIT
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# the cluster file is a copy that is gone by the time of the replays: they
# take the one `ncclrr run` kept in the trace directory (no --topo)
TOPO=$T/cluster.xml
touch "$T/start"
cp "$SRCDIR/topo/2node_16gpu.xml" "$TOPO" || exit 1
unset NCCLRR_FAULT NCCL_COMM_ID

case $case_ in
summaries) PROG=init_allreduce ;;
outside | inside)
	PROG=mpi_allreduce
	[ -x "$WL/$PROG" ] || { echo "SKIP: $PROG not built (Debian: libopenmpi-dev)"; exit 77; }
	;;
*) echo "unknown case $case_"; exit 2 ;;
esac

# rec NAME [ncclrr run options...]: exit status in $rc.  The tracer around
# mpirun (summaries, outside) or inside it, per rank (inside).
rec() {
	local name=$1; shift
	mkdir -p "$T/id-$name"
	local mpi=(mpirun --allow-run-as-root --oversubscribe -np 8 -x NCCLRR_ID_DIR -x NCCL_DEBUG
		${NCCLRR_FAKE_LIBDIR:+-x NCCLRR_FAKE_LIBDIR})
	local run=("$NCCLRR" run --topo "$TOPO" --nccl "$NCCL" --env NCCL_CUMEM_ENABLE=0 "$@" -- "$WL/$PROG")
	if [ "$case_" = inside ]; then
		NCCLRR_ID_DIR=$T/id-$name NCCL_DEBUG=WARN timeout 180 "${mpi[@]}" "$NCCLRR" record -q -o "$T/$name" -- "${run[@]}"
	else
		NCCLRR_ID_DIR=$T/id-$name NCCL_DEBUG=WARN timeout 180 "$NCCLRR" record -q -o "$T/$name" -- "${mpi[@]}" "${run[@]}"
	fi >"$T/$name.log" 2>&1
	rc=$?
	ls "$T/$name"/*.nrt >/dev/null 2>&1 || { tail -20 "$T/$name.log"; echo "FAIL: no traces in $name"; exit 1; }
}

rec clean
[ "$rc" = 0 ] || { tail -20 "$T/clean.log"; fail "the clean job exited $rc"; }
rec ipc --env NCCLRR_FAULT=cudaIpcOpenMemHandle:rank=3:nth=1:cudaErrorInvalidValue
grep -q 'injecting cudaErrorInvalidValue into cudaIpcOpenMemHandle (rank 3' "$T/ipc.log" ||
	{ tail -20 "$T/ipc.log"; echo "FAIL: the fault was not injected"; exit 1; }
grep -q '^rank 3: ncclCommInitRank failed' "$T/ipc.log" || fail "rank 3 did not fail in ncclCommInitRank"
[ "$rc" != 0 ] || fail "the failing job exited 0"
# NCCL's /dev/shm segments of the failed job are gone once the recorded
# command has ended: ncclrr record around mpirun sweeps them as ncclrr run
# does (these tests run alone, so a segment made since the start is this
# job's).  Not inside: mpirun ends each rank's ncclrr record while the
# other ranks may still map the segments (ncclrr-record(1), FILES)
left=$(find /dev/shm -maxdepth 1 -name 'nccl-*' -user "$(id -u)" -cnewer "$T/start" 2>/dev/null)
[ "$case_" = inside ] || [ -z "$left" ] || fail "the failed job left NCCL segments in /dev/shm: $(echo $left)"
rm -f $left   # for the next test, in the case that cannot sweep
echo "$case_: $(ls "$T/ipc"/*.nrt | wc -l) traces, job exit $rc"
cmp -s "$TOPO" "$T/ipc/ncclrr-cluster.xml" || fail "ncclrr run kept no copy of the cluster file in the trace directory"
rm "$TOPO"

# hang: rank 3, the first rank to exit (1), is the root cause or the first abnormal end
"$NCCLRR" hang "$T/ipc" >"$T/hang" 2>&1
grep -qE '^HANG, root cause: rank 3 \(exited\)|^First abnormal end: rank 3 ' "$T/hang" ||
	fail "hang does not name rank 3: $(grep -E '^HANG|^First|^Chain|^No' "$T/hang" | cut -c1-300)"
grep -E '^Chain|^First' "$T/hang" | grep -q 'rank 3 ended (exit 1).*its first failure was cudaIpcOpenMemHandle(.*= cudaErrorInvalidValue' ||
	fail "hang's summary does not give rank 3's exit and failing call"
grep -qE 'rank ([0-9]+) waits [a-z ]* for rank \1[;: ]' "$T/hang" && fail "a rank waits on itself"

# diff: the headline is rank 3's failing call, not a killed rank or a helper
"$NCCLRR" diff "$T/clean" "$T/ipc" >"$T/diff" 2>&1
grep '^Earliest' "$T/diff" | grep -qE '^Earliest across ranks: rank 3 thread 1, (failure only in B: cudaIpcOpenMemHandle = cudaErrorInvalidValue|call: cudaIpcOpenMemHandle \(fails only in B\))' ||
	fail "diff's headline is not rank 3's cudaIpcOpenMemHandle: $(grep '^Earliest' "$T/diff")"

if [ "$case_" = summaries ]; then
	# replay: the recorded failure starts with rank 3's whole chain; no benign failure
	timeout 120 "$NCCLRR" replay --timeout 20 "$T/ipc" >"$T/replay" 2>&1
	sed -n '/^recorded failure:/,/^[a-z]/p' "$T/replay" | sed '1d;$d' >"$T/chain"
	head -1 "$T/chain" | grep -qE '^  rank 3: cudaIpcOpenMemHandle = cudaErrorInvalidValue \(1\) \(#[0-9]+\) -> ncclCommInitRank = ncclUnhandledCudaError \(1\) \(#[0-9]+\) -> exit 1$' ||
		fail "the recorded failure does not start with rank 3's chain: $(cat "$T/chain")"
	grep -E 'ENOSYS|EADDRINUSE|NOT_SUPPORTED|ENOENT' "$T/chain" && fail "a benign failure in the recorded failure"
else
	# every replay reproduces rank 3's failure at its call, 20 of 20, also
	# where mpirun's SIGKILL cut ranks' last moments
	chain='rank 3: cudaIpcOpenMemHandle = cudaErrorInvalidValue \(1\) \(#[0-9]+, answered from the trace\) -> ncclCommInitRank = ncclUnhandledCudaError \(1\) \(#[0-9]+, answered from the trace\) -> exit 1'
	timeout 300 "$NCCLRR" replay --timeout 10 --repeat 20 "$T/ipc" >"$T/replay" 2>&1
	grep -qE '^repeat: 20 of 20 replays reproduced the failure' "$T/replay" ||
		fail "not every replay reproduced the failure: $(grep -E '^(repeat|first divergence|replay hung)' "$T/replay" | cut -c1-400)"
	grep -qE "^  $chain\$" "$T/replay" ||
		fail "the reproduced failure is not rank 3's chain: $(sed -n '/^reproduced failure:/,/^replay:/p' "$T/replay" | head -5)"
	# the ranks are replayed; mpirun, orted and fork stubs (outside) are served
	grep -qE '^ncclrr replay: 8 of [0-9]+ processes from' "$T/replay" ||
		fail "not the 8 ranks replayed: $(grep '^ncclrr replay: [0-9]' "$T/replay")"
	echo "replay: $(grep '^ncclrr replay: [0-9]' "$T/replay" | cut -d, -f1); $(grep '^repeat' "$T/replay")"
	# only the failing rank
	timeout 300 "$NCCLRR" replay --timeout 10 --repeat 20 --ranks 3 "$T/ipc" >"$T/ranks" 2>&1
	grep -qE '^repeat: 20 of 20 replays reproduced the failure' "$T/ranks" ||
		fail "--ranks 3 did not reproduce the failure every time: $(grep -E '^(repeat|first divergence|replay hung)' "$T/ranks" | cut -c1-400)"
	grep -qE '^ncclrr replay: 1 of [0-9]+ processes' "$T/ranks" || fail "--ranks 3: $(grep '^ncclrr replay: [0-9]' "$T/ranks")"
	# a job not started by ncclrr run (real GPUs): no cluster file kept
	# (the recorded path is never opened); the ranks' device answers come
	# from the trace
	mkdir "$T/nocluster" && cp "$T/ipc"/*.nrt "$T/nocluster/" || exit 1
	timeout 300 "$NCCLRR" replay --timeout 10 --repeat 20 "$T/nocluster" >"$T/nocl" 2>&1
	grep -qE '^repeat: 20 of 20 replays reproduced the failure' "$T/nocl" ||
		fail "without a cluster file not every replay reproduced the failure: $(grep -E '^(repeat|first divergence|replay hung|ncclrr replay:)' "$T/nocl" | cut -c1-400)"
	grep -qE "^  $chain\$" "$T/nocl" || fail "without a cluster file the reproduced failure is not rank 3's chain"
	# (7 others, or fewer when mpirun's SIGKILL left a rank's trace empty)
	grep -qE '^cluster unknown for rank [0-9] and [1-7] other processes: .* holds no copy of its cluster file .*ncclrr opens no file a trace names; their CUDA, NVML and verbs calls are answered from the trace \(as --inject all\)' "$T/nocl" ||
		fail "the replay does not say that the ranks' cluster is unknown: $(grep -E '^cluster' "$T/nocl")"
	timeout 60 "$NCCLRR" replay --timeout 10 --inject none "$T/nocluster" >"$T/nocl-none" 2>&1
	rc=$?
	[ $rc = 2 ] && grep -qE '^ncclrr replay: rank [0-9] needs its cluster for --inject none: .*pass --topo FILE' "$T/nocl-none" ||
		fail "--inject none without a cluster: exit $rc, $(head -3 "$T/nocl-none")"
fi

[ $fails -eq 0 ] && echo "PASS: mpi $case_"
exit $((fails > 0))
