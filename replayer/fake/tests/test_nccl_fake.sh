#!/bin/sh
# SPDX-License-Identifier: MIT
# test_nccl_fake.sh NCCL_INIT_EXE FAKE_LIBDIR TOPO_DIR
#
# The real NCCL on the fake CUDA driver: nranks=1; 8 ranks on 1node_8gpu
# over P2P/CUMEM, then legacy IPC (NCCL_CUMEM_ENABLE=0), then SHM
# (NCCL_P2P_DISABLE=1); 2 virtual hosts x 2 ranks (2node_8gpu_pcie) over
# NET/Socket. Exit 77 when no libnccl.so.2 is found.
set -u
exe=$1 libdir=$2 topodir=$3
# which NCCL, or skip saying why: one rule for every NCCL test
NCCL_HINT=${NCCLRR_NCCL_HINT:-}
. "$(dirname "$0")/../../../tests/integration/nccl_common.sh"
out=$(mktemp -d "${TMPDIR:-/tmp}/test_nccl_fake.XXXXXX")
trap 'rm -rf "$out"' EXIT INT TERM

export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_DEBUG=INFO NCCL_SOCKET_IFNAME=lo NCCL_INIT_TIMEOUT=${NCCL_INIT_TIMEOUT:-120}
# this test starts NCCL itself, without the sysfs view `ncclrr run` gives
# each rank (NCCLRR_SYSFS): NICs without /sys/class/infiniband are not
# merged (NCCL 2.22.3 would compare NULL PCI paths, replayer/fake/README.md)
export NCCL_IB_MERGE_NICS=${NCCL_IB_MERGE_NICS:-0}
# nccl_init runs no collective: connect at init (NCCL >= 2.22 connects at the
# first collective by default), so the channels this test looks for are made
export NCCL_RUNTIME_CONNECT=0
unset NCCLRR_TOPO NCCLRR_HOST NCCLRR_FAULT NCCL_TOPO_FILE NCCL_HOSTID NCCL_COMM_ID CUDA_VISIBLE_DEVICES
fails=0

# run NAME EXPECTED_COMPLETE PATTERN [ENV=V...] -- ARGS
run() {
	name=$1 want=$2 pattern=$3
	shift 3
	envs=
	while [ "$1" != "--" ]; do envs="$envs $1"; shift; done
	shift
	log="$out/$name.log"
	env $envs "$exe" "$@" >"$log" 2>&1
	rc=$?
	if [ $rc -eq 77 ]; then
		sed -n 's/^SKIP: //p' "$log"
		exit 77
	fi
	if grep -q 'driver integrity check' "$log"; then
		echo "SKIP: this NCCL's statically linked CUDA runtime requires the driver integrity check, which the fake driver does not emulate (replayer/fake/README.md)"
		exit 77
	fi
	n=$(grep -c 'Init COMPLETE' "$log")
	if [ $rc -ne 0 ] || [ "$n" -ne "$want" ] || { [ -n "$pattern" ] && ! grep -q "$pattern" "$log"; }; then
		echo "FAIL $name: exit $rc, $n of $want 'Init COMPLETE'${pattern:+, pattern '$pattern' $(grep -q "$pattern" "$log" && echo found || echo missing)}"
		grep -E 'WARN|Error|error|ncclrr-fake' "$log" | head -20 | sed 's/^/    /'
		fails=$((fails + 1))
		return 1
	fi
	echo "ok   $name: $n 'Init COMPLETE'${pattern:+, '$pattern'}"
	return 0
}

if ! run single 1 "" -- 1; then
	echo "nranks=1 fails: the multi-rank configurations would fail the same way; not run"
	exit 1
fi
run cumem 8 "via P2P/CUMEM" NCCLRR_TOPO="$topodir/1node_8gpu.xml" -- 8 1
run ipc 8 "via P2P/IPC" NCCLRR_TOPO="$topodir/1node_8gpu.xml" NCCL_CUMEM_ENABLE=0 -- 8 1
# NCCL_IB_DISABLE=1: with P2P off NCCL would loop GPU-NIC-GPU over NET/IB
# (and pass 8 MiB of RLIMIT_MEMLOCK here); the net case means NET/Socket
run shm 8 "via SHM" NCCLRR_TOPO="$topodir/1node_8gpu.xml" NCCL_P2P_DISABLE=1 NCCL_IB_DISABLE=1 -- 8 1
run net 4 "via NET/Socket" NCCLRR_TOPO="$topodir/2node_8gpu_pcie.xml" NCCL_IB_DISABLE=1 -- 4 2
[ $fails -eq 0 ]
