#!/usr/bin/env bash
# "Is it fixed in another NCCL?" on the golden trace of NCCL 2.22's
# bootstrap race (traces/nccl/bootstrap_race: 8 ranks of init_allreduce on
# 2node_8gpu_pcie, every rank on NCCL_COMM_ID, rank 0 started 3 s late).
# usage: test_nccl_versions.sh CASE NCCLRR SOURCE_ROOT [WORKLOAD_DIR NCCL_HINT]
# CASE:
#   golden   replay prints bootstrap_race.expected; 20 of 20 replays
#            reproduce the race identically (no NCCL needed)
#   rerun    --rerun with the recorded 2.22.3 reproduces every rank;
#            --rerun --nccl NEW (the newest version >= 2.24 the fake cluster
#            has: sid's) reports it gone on every rank; diff --api of the two
#            reruns shows the retry that differs
#   bisect   bisect --nccl all names 2.22.3 -> NEW as the boundary
#   combined bisect --good --bad --nccl: the env search and the version
#            search together, on two 8-rank recordings made here
# rerun, bisect and combined skip (77) without 2.22.3 or a version >= 2.24
# (sid's NCCL needs the network when scripts/nccl.sh setup runs).
set -uo pipefail
case_=$1
ncclrr=$(realpath "$2")
root=$3
wl=${4:-}
NCCL_HINT=${5:-}
g=$root/traces/nccl/bootstrap_race
topo=$root/topo/2node_8gpu_pcie.xml
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
has() { grep -qF -- "$2" "$1" || fail "$3: no '$2' in: $(head -c 3000 "$1")"; }
unset NCCLRR_FAULT NCCL_DEBUG
race="connect = -1 ECONNABORTED (Software caused connection abort) (#700"

# the versions the fake cluster has, oldest first; NEW: the newest >= 2.24
need_versions() {
	. "$root/tests/integration/nccl_common.sh"
	mapfile -t have < <("$ncclrr" nccl list | sed -n 's/^\([0-9][0-9.]*\)\( (default)\)\{0,1\}$/\1/p')
	new=
	for v in "${have[@]}"; do
		[ "$(printf '%s\n2.24\n' "$v" | sort -V | head -n 1)" = 2.24 ] && new=$v
	done
	if ! printf '%s\n' "${have[@]}" | grep -qx 2.22.3 || [ -z "$new" ]; then
		echo "SKIP: the fake cluster has NCCL ${have[*]:-none}; this needs 2.22.3 and one >= 2.24 (sid's: run" \
			"scripts/nccl.sh setup with network; it fetches both)"
		exit 77
	fi
	# the workload takes NCCL_COMM_ID, as the recording did
	export WL_USE_COMM_ID=1
}

case $case_ in
golden)
	"$ncclrr" replay --topo "$topo" --timeout 60 "$g" >"$tmp/out" 2>&1 || fail "replay: exit $?"
	"$root/traces/replay/normalize.sh" <"$tmp/out" >"$tmp/norm"
	diff -u "$root/traces/nccl/bootstrap_race.expected" "$tmp/norm" || fail "output differs from bootstrap_race.expected"
	grep -A1 '^reproduced failure:' "$tmp/out" | grep -qE "^  ranks [1-7,]+: $(printf '%s' "$race" | sed 's/[()]/\\&/g')" ||
		fail "the reproduced failure is not the 7 ranks' aborted connect: $(grep -A3 '^reproduced failure:' "$tmp/out")"
	"$ncclrr" replay --topo "$topo" --timeout 60 --repeat 20 "$g" >"$tmp/rep" 2>&1 || fail "--repeat 20: exit $?"
	has "$tmp/rep" "20 of 20 replays reproduced the failure, 20 of 20 identical to the first" repeat
	;;
rerun)
	need_versions
	"$ncclrr" replay --rerun "$g" -o "$tmp/re22" -- "$wl/init_allreduce" >"$tmp/re22.out" 2>&1
	rc=$?
	[ $rc -eq 0 ] || fail "rerun with the recorded NCCL: exit $rc: $(grep -E '^(rank|rerun)' "$tmp/re22.out")"
	has "$tmp/re22.out" "the rerun loads NCCL 2.22.3, as recorded" "rerun 2.22.3"
	has "$tmp/re22.out" "rerun: 8 of 8 ranks reproduced, 0 timing, 0 NOT reproduced with NCCL 2.22.3" "rerun 2.22.3"
	has "$tmp/re22.out" "NCCL: misc/socket.cc:484 WARN socketStartConnect: Connect to <addr><port> failed : Software caused connection abort" "rerun 2.22.3"
	# --timeout: the rerun's own (16 s, from the recorded job, which failed
	# at once) is too short for a job that does not fail: NCCL 2.29.7's 8
	# ranks took 11-18 s on a loaded 2-core machine
	"$ncclrr" replay --rerun "$g" --nccl "$new" --timeout 90 -o "$tmp/renew" -- "$wl/init_allreduce" >"$tmp/renew.out" 2>&1
	rc=$?
	[ $rc -eq 1 ] || fail "rerun with NCCL $new: exit $rc, want 1 (not reproduced): $(grep -E '^(rank|rerun)' "$tmp/renew.out")"
	has "$tmp/renew.out" "rerun: 0 of 8 ranks reproduced, 0 timing, 8 NOT reproduced with NCCL $new (recorded with 2.22.3)" "rerun $new"
	for r in 1 2 3 4 5 6 7; do
		has "$tmp/renew.out" "rank $r: NOT reproduced: recorded ncclCommInitRank = ncclSystemError, exit 1, rerun no failing call, exit 0" "rerun $new"
	done
	# what differs: 2.22 connects again on the refused socket (ECONNABORTED),
	# the newer NCCL makes a new socket for the retry
	"$ncclrr" diff --api 'socket,connect,dup*,close,getsockopt' "$tmp/re22" "$tmp/renew" >"$tmp/diff" 2>&1
	[ $? -eq 1 ] || fail "diff of the reruns: want exit 1"
	for r in 1 2 3 4 5 6 7; do
		sed -n "/^rank $r thread 1 /,/^rank [0-9]/p" "$tmp/diff" >"$tmp/d$r"
		grep -q '^  A> .* connect(sockfd=\([0-9]*\), .* = -1 ECONNABORTED' "$tmp/d$r" ||
			fail "diff rank $r: A's divergence is not the retried connect: $(head -8 "$tmp/d$r")"
		grep -qE '^  B[> ] .* socket\(domain=AF_INET' "$tmp/d$r" ||
			fail "diff rank $r: B makes no new socket for its retry: $(head -8 "$tmp/d$r")"
	done
	;;
bisect)
	need_versions
	"$ncclrr" bisect --nccl all --bad "$g" --workdir "$tmp/w" -- "$wl/init_allreduce" >"$tmp/b" 2>&1
	rc=$?
	[ $rc -eq 1 ] || fail "bisect --nccl all: exit $rc, want 1 (a boundary): $(head -20 "$tmp/b")"
	has "$tmp/b" "NCCL 2.22.3   the recorded failure again" bisect
	has "$tmp/b" "NCCL $new" bisect
	has "$tmp/b" "the recorded failure is GONE" bisect
	prev=$(printf '%s\n' "${have[@]}" | sort -V | awk -v n="$new" '$0 == n {print p} {p = $0}')
	has "$tmp/b" "boundary: NCCL $prev (the recorded failure) -> NCCL $new (gone)" bisect
	has "$tmp/b" "the recorded failure needs NCCL <= $prev (gone in $new)" bisect
	grep -q '^  A> .* = -1 ECONNABORTED' "$tmp/b" || fail "bisect: the diff of the two reruns does not show the aborted retry"
	[ -d "$tmp/w/nccl-2.22.3" ] && [ -d "$tmp/w/nccl-$new" ] || fail "bisect: the reruns are not kept in the workdir"
	# a version the fake cluster lacks, and a single version
	"$ncclrr" bisect --nccl 2.22.3,9.9.9 --bad "$g" -- "$wl/init_allreduce" >"$tmp/u" 2>&1
	[ $? -eq 2 ] || fail "bisect --nccl 9.9.9: want exit 2"
	has "$tmp/u" "the fake cluster has no NCCL 9.9.9" usage
	"$ncclrr" bisect --nccl 2.22.3 --bad "$g" -- "$wl/init_allreduce" >"$tmp/u" 2>&1
	[ $? -eq 2 ] || fail "bisect --nccl 2.22.3: want exit 2"
	has "$tmp/u" "a version bisect needs two" usage
	;;
combined)
	# good: 8 ranks, 2.22.3, clean; bad: the same with NCCL_NET=NoSuchNet (a
	# network no NCCL has: every rank fails at init, with either NCCL; IB is
	# no such network any more, the fake cluster has NICs)
	need_versions
	unset WL_USE_COMM_ID
	for r in good bad; do
		extra=()
		[ $r = bad ] && extra=(--env NCCL_NET=NoSuchNet)
		NCCL_DEBUG=WARN "$ncclrr" record -q -o "$tmp/$r" -- "$ncclrr" run --nccl 2.22.3 --topo "$topo" --timeout 30 \
			--env NCCL_ALGO=Ring "${extra[@]}" -- "$wl/init_allreduce" >"$tmp/$r.log" 2>&1
	done
	"$ncclrr" bisect --good "$tmp/good" --bad "$tmp/bad" --nccl all --timeout 60 --workdir "$tmp/w" -- \
		"$wl/init_allreduce" >"$tmp/b" 2>&1
	rc=$?
	[ $rc -eq 1 ] || fail "bisect --good --bad --nccl: exit $rc, want 1: $(tail -20 "$tmp/b")"
	has "$tmp/b" "  NCCL_NET: (unset) -> NoSuchNet" combined
	has "$tmp/b" "no boundary: the recorded failure happens again with NCCL 2.22.3 and with $new" combined
	has "$tmp/b" "the failure needs: NCCL_NET=NoSuchNet, any NCCL tried (2.22.3 to $new)" combined
	# the attempts ran on the bad run's NCCL
	"$ncclrr" dump --meta "$tmp/w/attempt-01" >"$tmp/meta" 2>&1
	grep -q 'nccl_version=2.22.3' "$tmp/meta" || fail "combined: attempt 1 did not run NCCL 2.22.3"
	;;
*)
	echo "unknown case $case_" >&2
	exit 2
	;;
esac
[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "PASS: $case_"
