#!/usr/bin/env bash
# NCCL's profiler events under `ncclrr record` (suite nccl): real NCCL
# relinked for the fake cluster loads ncclrr's profiler plugin
# (NCCL_PROFILER_PLUGIN, set by record), whose events land in each rank's
# trace beside its other calls.
# usage: test_profiler.sh CASE NCCLRR SOURCE_ROOT WORKLOAD_DIR [NCCL_HINT]
# CASE:
#   record  init_allreduce on 2node_8gpu_pcie (P2P inside a node, NET/Socket
#           between the two) with every NCCL of the fake cluster that has a
#           profiler plugin API (2.23+; 2.22.3 has none and must record no
#           profiler event): on every rank `ncclrr dump --api 'ncclProfiler_*'`
#           shows the plugin's init (the API version NCCL took), the
#           AllReduce's GroupApi/CollApi (v5+) and Coll events with their
#           stops, and on some rank the NET proxy operations and their steps;
#           a profiler the user names in NCCL_PROFILER_PLUGIN that NCCL
#           would not find is named in record's warning and the events are
#           still recorded
#   hang    init_allreduce on 1node_8gpu, rank 3 stalls before its AllReduce
#           (--stall-rank 3) and the job is stopped at the timeout: `ncclrr
#           hang` names rank 3 and says, per rank, in text and JSON, that the
#           other 7 are in AllReduce
#   plugin  (suite integration, no NCCL) prof_drive loads the plugin as NCCL
#           does and makes one AllReduce's calls: each is in the trace, the
#           proxy operation names the Coll stopped before it as parent; with
#           a user's v4-only profiler in NCCL_PROFILER_PLUGIN, the driver
#           gets v4 under the user's name, the user profiler gets its event
#           types only, with its own handles as parents, and the trace has
#           the events too
# Skips (77) without an NCCL >= 2.23 relinked for the fake cluster.
# usage (plugin): test_profiler.sh plugin NCCLRR SOURCE_ROOT PROF_DRIVE PROF_USER_LIB
set -uo pipefail
case_=$1
ncclrr=$(realpath "$2")
root=$3
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
unset NCCLRR_FAULT NCCL_PROFILER_PLUGIN NCCLRR_PROFILER_PLUGIN NCCL_DEBUG
has() { grep -qF -- "$2" "$1" || fail "$3: no '$2' in: $(head -c 3000 "$1")"; }

if [ "$case_" = plugin ]; then
	drive=$(realpath "$4") user=$(realpath "$5")
	"$ncclrr" record -q -o "$tmp/a" -- "$drive" >"$tmp/a.out" 2>&1 || fail "prof_drive under record exited $?: $(cat "$tmp/a.out")"
	has "$tmp/a.out" "prof_drive: using v6" "the newest version"
	has "$tmp/a.out" "prof_drive: ncclrr mask=0x71f" "ncclrr's name and event types (Group..ProxyStep, GroupApi..P2pApi)"
	"$ncclrr" dump --api 'ncclProfiler_*' "$tmp/a" >"$tmp/a.dump" 2>&1 || fail "dump: exit $?"
	for want in 'ncclProfiler_init(version=6, commName="drive", commId=0x1234, nNodes=1, nranks=2, rank=0, mask=' 		'ncclProfiler_groupStart(event=1, parent=0, rank=0, type=ncclProfileGroupApi, depth=1)' 		'ncclProfiler_collStart(event=2, parent=1, rank=0, type=ncclProfileCollApi, seqNumber=0, func="AllReduce", count=1024, datatype="ncclFloat32"' 		'ncclProfiler_stop(event=2, type=ncclProfileCollApi)' 		'ncclProfiler_groupStart(event=3, parent=0, rank=0, type=ncclProfileGroup, depth=0)' 		'ncclProfiler_collStart(event=4, parent=3, rank=0, type=ncclProfileColl, seqNumber=7, func="AllReduce", count=1024, datatype="ncclFloat32", root=0, nChannels=2, algo="RING", proto="SIMPLE")' 		'ncclProfiler_stop(event=4, type=ncclProfileColl)' 		'ncclProfiler_proxyOpStart(event=5, parent=4, rank=0, pid=' 		'channel=1, peer=1, nSteps=2, chunkSize=4096, isSend=1)' 		'ncclProfiler_proxyStepStart(event=6, parent=5, rank=0, step=0)' 		'ncclProfiler_state(event=6, type=ncclProfileProxyStep, state=ncclProfilerProxyStepSendWait, value=4096)' 		'ncclProfiler_stop(event=5, type=ncclProfileProxyOp)' 		'ncclProfiler_finalize(version=6)'; do
		has "$tmp/a.dump" "$want" "ncclrr alone"
	done
	# a user's v4-only profiler: forwarded to, versions and names its own
	NCCL_PROFILER_PLUGIN=$user "$ncclrr" record -q -o "$tmp/u" -- "$drive" >"$tmp/u.out" 2>&1 ||
		fail "prof_drive with a user profiler exited $?: $(cat "$tmp/u.out")"
	has "$tmp/u.out" "prof_drive: using v4" "only the user profiler's version"
	has "$tmp/u.out" "prof_drive: user-v4 mask=0x1f" "the user profiler's name; its event types and ncclrr's"
	has "$tmp/u.out" "user: init comm=drive rank=0" "init forwarded"
	# Group, Coll (parent: its group), ProxyOp (parent: its Coll, stopped before)
	grep '^user: ' "$tmp/u.out" >"$tmp/u.calls"
	printf '%s\n' 'user: init comm=drive rank=0' 'user: start type=1 parent=none' 'user: start type=2 parent=mine' \
		'user: stop mine type=2' 'user: start type=8 parent=mine' 'user: stop mine type=8' 'user: stop mine type=1' \
		'user: finalize' >"$tmp/u.want"
	diff -u "$tmp/u.want" "$tmp/u.calls" || fail "the user profiler got other calls than its event types, or foreign parents"
	"$ncclrr" dump --api 'ncclProfiler_*' "$tmp/u" >"$tmp/u.dump" 2>&1 || fail "dump (user): exit $?"
	has "$tmp/u.dump" 'ncclProfiler_init(version=4, commName="drive", commId=0x1234' "recorded with a user profiler"
	has "$tmp/u.dump" 'ncclProfiler_proxyStepStart(event=4, parent=3, rank=0, step=0)' "a step the user profiler did not ask for"
	# a user profiler NCCL would not find either: record names it, ncclrr records alone
	NCCL_PROFILER_PLUGIN=$tmp/nope.so "$ncclrr" record -q -o "$tmp/n" -- "$drive" >"$tmp/n.out" 2>&1 ||
		fail "prof_drive with a missing user profiler exited $?"
	has "$tmp/n.out" "ncclrr record: warning: ncclrr: Cannot find the plugin: NCCL_PROFILER_PLUGIN=$tmp/nope.so" \
		"the missing profiler named by record"
	"$ncclrr" dump --api 'ncclProfiler_collStart' "$tmp/n" | grep -c 'ncclProfiler_collStart' >"$tmp/n.count"
	has "$tmp/n.count" "2" "both collective events recorded without the user profiler"
	# one the plugin itself cannot load (NCCLRR_PROFILER_PLUGIN given directly): named on stderr
	NCCLRR_PROFILER_PLUGIN=$tmp/nope2.so "$ncclrr" record -q -o "$tmp/m" -- "$drive" >"$tmp/m.out" 2>&1 ||
		fail "prof_drive with a missing NCCLRR_PROFILER_PLUGIN exited $?"
	has "$tmp/m.out" "ncclrr: Cannot load the profiler plugin to forward to: path=$tmp/nope2.so" "the plugin's warning"
	has "$tmp/m.out" "prof_drive: using v6" "all versions without a user profiler"
	[ $fails -eq 0 ] && echo "PASS $case_" || echo "$fails failure(s) in $case_"
	[ $fails -eq 0 ]
	exit
fi

wl=$(realpath "$4")
NCCL_HINT=${5:-}
here=$(dirname "$(realpath "$0")")
. "$here/nccl_common.sh"

# the versions beside $NCCL (BUILD/nccl/VERSION/libnccl.so.2), oldest first
ndir=$(dirname "$(dirname "$NCCL")")
mapfile -t vers < <(ls "$ndir" 2>/dev/null | grep -E '^[0-9]+\.[0-9]+\.[0-9]+$' | sort -V)
prof=()
for v in "${vers[@]}"; do
	[ -r "$ndir/$v/libnccl.so.2" ] || continue
	[ "$(printf '%s\n2.23\n' "$v" | sort -V | head -n 1)" = 2.23 ] && prof+=("$v")
done
if [ ${#prof[@]} -eq 0 ]; then
	echo "SKIP: no NCCL >= 2.23 (the first with a profiler plugin API) relinked for the fake cluster in $ndir" \
		"(have: ${vers[*]:-none}; scripts/nccl.sh setup fetches sid's)"
	exit 77
fi

# record VERSION DIR LOG TOPO ARGS... -> exit status of the recorded job
record() {
	local v=$1 dir=$2 log=$3 topo=$4; shift 4
	env NCCLRR_NCCL="$ndir/$v/libnccl.so.2" "$ncclrr" record -o "$dir" -- "$ncclrr" run --topo "$root/topo/$topo" \
		"$@" >"$log" 2>&1
}

case $case_ in
record)
	for v in "${vers[@]}"; do
		[ -r "$ndir/$v/libnccl.so.2" ] || continue
		d=$tmp/r$v
		record "$v" "$d" "$d.log" 2node_8gpu_pcie.xml --timeout 240 -- "$wl/init_allreduce"
		rc=$?
		[ $rc -eq 0 ] || { fail "NCCL $v: the recorded init_allreduce exited $rc"; tail -n 30 "$d.log"; continue; }
		if ! printf '%s\n' "${prof[@]}" | grep -qx "$v"; then
			# no profiler plugin API: NCCL never loads it, nothing is recorded
			n=$("$ncclrr" dump --api 'ncclProfiler_*' "$d" | grep -c 'ncclProfiler_')
			[ "$n" -eq 0 ] || fail "NCCL $v has no profiler API, yet $n profiler events were recorded"
			echo "NCCL $v: no profiler API, no profiler event (as expected)"
			continue
		fi
		nproxy=0 nstep=0
		for r in $(seq 0 7); do
			"$ncclrr" dump --rank "$r" --api 'ncclProfiler_*' "$d" >"$d.dump$r" 2>&1 || { fail "NCCL $v rank $r: dump failed"; continue; }
			# v6 for 2.29, else the version the release notes give (any 1..6)
			grep -Eq "ncclProfiler_init\(version=[1-6], .*rank=$r, mask=" "$d.dump$r" ||
				fail "NCCL $v rank $r: no ncclProfiler_init with the rank: $(head -c 600 "$d.dump$r")"
			grep -Eq 'ncclProfiler_collStart\(event=[0-9]+, .*type=ncclProfileColl, seqNumber=0, func="AllReduce", count=1048576, datatype="(ncclFloat32|ncclFloat|float32|float)"' "$d.dump$r" ||
				fail "NCCL $v rank $r: no Coll event of the AllReduce: $(grep -m3 collStart "$d.dump$r")"
			id=$(sed -n 's/.*ncclProfiler_collStart(event=\([0-9]*\), .*type=ncclProfileColl,.*/\1/p' "$d.dump$r" | head -n 1)
			[ -n "$id" ] && grep -q "ncclProfiler_stop(event=$id, type=ncclProfileColl)" "$d.dump$r" ||
				fail "NCCL $v rank $r: the Coll event ${id:-?} has no stop"
			grep -q 'ncclProfiler_groupStart(event=' "$d.dump$r" || fail "NCCL $v rank $r: no group event"
			nproxy=$((nproxy + $(grep -c 'ncclProfiler_proxyOpStart(' "$d.dump$r")))
			nstep=$((nstep + $(grep -c 'ncclProfiler_proxyStepStart(' "$d.dump$r")))
		done
		# NET between the nodes: proxy operations (and their steps) on the proxy threads
		[ "$nproxy" -gt 0 ] || fail "NCCL $v: no proxy operation event on any rank"
		echo "NCCL $v: $(grep -ho 'ncclProfiler_init(version=[0-9]*' "$d".dump* | sort | uniq -c | tr -s ' ' | tr '\n' ';')" \
			"$nproxy proxy operations, $nstep proxy steps on 8 ranks"
		# the same timeline: a profiler event between two calls of the rank's thread
		"$ncclrr" dump --rank 0 "$d" >"$d.all" 2>&1
		awk '/ ncclAllReduce\(/ { a = NR } / ncclProfiler_collStart\(/ && a && !c { c = NR } END { exit a && c > a ? 0 : 1 }' "$d.all" ||
			fail "NCCL $v rank 0: the Coll event is not after the ncclAllReduce call in the rank's trace"
	done
	# a user profiler that cannot load: named, and ncclrr still records
	v=${prof[${#prof[@]} - 1]}
	d=$tmp/user
	NCCL_PROFILER_PLUGIN=$tmp/no-such-profiler.so record "$v" "$d" "$d.log" 1node_8gpu.xml --timeout 240 -- \
		"$wl/init_allreduce" --end destroy
	rc=$?
	[ $rc -eq 0 ] || { fail "NCCL $v with a missing user profiler: exit $rc"; tail -n 20 "$d.log"; }
	"$ncclrr" dump --rank 0 "$d" >"$d.dump" 2>&1
	grep -q "ncclrr record: warning: ncclrr: Cannot find the plugin: NCCL_PROFILER_PLUGIN=$tmp/no-such-profiler.so" "$d.log" ||
		fail "NCCL $v: the missing user profiler is not named: $(grep -m3 -i profiler "$d.log")"
	grep -q 'ncclProfiler_collStart(' "$d.dump" || fail "NCCL $v: no Coll event with a missing user profiler"
	;;
hang)
	v=${prof[${#prof[@]} - 1]}
	d=$tmp/h
	record "$v" "$d" "$d.log" 1node_8gpu.xml --timeout 60 -- "$wl/init_allreduce" --stall-rank 3
	rc=$?
	[ $rc -ne 0 ] || fail "the stalled job exited 0"
	grep -q '^\[3\] rank 3: stalls before the AllReduce' "$d.log" || { fail "rank 3 did not stall"; tail -n 20 "$d.log"; }
	"$ncclrr" hang "$d" >"$d.hang" 2>&1
	grep -q 'HANG' "$d.hang" || fail "no hang found: $(head -c 2000 "$d.hang")"
	for r in 0 1 2 4 5 6 7; do
		awk -v r="$r" '$1 == "rank" && $2 == r { on = 1; next } /^  [a-z]/ { on = 0 }
		     on && /^    collective: in AllReduce count=1048576 / { ok = 1 } END { exit !ok }' "$d.hang" ||
			fail "rank $r: hang does not say it is in the AllReduce: $(grep -A8 "^  rank $r " "$d.hang" | head -n 9)"
	done
	awk '$1 == "rank" && $2 == 3 { on = 1; next } /^  [a-z]/ { on = 0 }
	     on && /^    collective: none started/ { ok = 1 } END { exit !ok }' "$d.hang" ||
		fail "rank 3: hang does not say it started no collective: $(grep -A8 '^  rank 3 ' "$d.hang" | head -n 9)"
	"$ncclrr" hang --json "$d" >"$d.json" 2>&1
	python3 - "$d.json" <<'PY' || fail "hang --json: the collectives are not right"
import json, sys
j = json.load(open(sys.argv[1]))
ps = {p["rank"]: p for p in j["processes"] if p.get("rank") is not None}
for r in range(8):
    c = ps[r].get("collective", "absent")
    if r == 3:
        assert c is None, (r, c)
    else:
        assert c and c["in"] and c["op"].startswith("AllReduce count=1048576"), (r, c)
PY
	grep -A12 '^  rank 0 ' "$d.hang" | grep 'collective:'
	;;
*) echo "unknown case $case_"; exit 2 ;;
esac
[ $fails -eq 0 ] && echo "PASS $case_" || echo "$fails failure(s) in $case_"
[ $fails -eq 0 ]
