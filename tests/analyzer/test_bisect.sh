#!/usr/bin/env bash
# `ncclrr bisect` over runs of conn_setup on the fake 2-node cluster.
# usage: test_bisect.sh CASE NCCLRR SRCDIR WORKLOADS_DIR
#   find      a bad run with 10 differences, one of which
#             (NCCL_SOCKET_IFNAME=ib0) breaks the bootstrap: bisect names it
#   notfail   the bad run failed for a reason outside the environment: exit 0
#   goodfails good and bad swapped: the good configuration fails, exit 2
#   runinfo   which differences are searched (noise dropped, topology by
#             content), on real traces, without running anything
#   usage     bad options and unreadable traces
set -uo pipefail
case_=$1
ncclrr=$(realpath "$2")
root=$3
conn=$4/conn_setup
topo=$(realpath "$root/topo/2node_16gpu.xml")
tmp=$(mktemp -d)
[ -n "${KEEP_TMP:-}" ] || trap 'rm -rf "$tmp"' EXIT; echo "tmp=$tmp"
unset RANK WORLD_SIZE OMPI_COMM_WORLD_RANK SLURM_PROCID LOCAL_RANK
# the searched environment must not depend on the shell's
for v in $(env | sed -n 's/^\(NCCL_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
fails=0 pass=0
check() { if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else echo "FAIL: $1"; fails=$((fails + 1)); fi; }
must() { grep -q -- "$2" "$3"; check "$1" $?; }
mustnot() { ! grep -q -- "$2" "$3"; check "$1" $?; }
finish() {
	echo "bisect $case_: $pass passed, $fails failed"
	[ "$fails" -eq 0 ]
	exit $?
}
[ -x "$conn" ] || { echo "skip: $conn not built"; exit 77; }

# record DIR [ncclrr run options...]: conn_setup --no-nccl on 2 x 8 GPUs
record() {
	local dir=$1
	shift
	"$ncclrr" record -o "$dir" -q -- "$ncclrr" run --topo "$topo" --timeout 60 "$@" -- "$conn" --no-nccl \
		>"$dir.log" 2>&1
}
bad_env=(--env NCCL_DEBUG=INFO --env NCCL_ALGO=Tree --env NCCL_PROTO=LL --env NCCL_BUFFSIZE=1048576
	--env NCCL_NTHREADS=256 --env NCCL_IB_HCA=mlx5_0 --env NCCL_P2P_LEVEL=NVL --env NCCL_MIN_NCHANNELS=4
	--env NCCL_SOCKET_IFNAME=ib0)
good_env=(--env NCCL_CUMEM_ENABLE=1 --env NCCL_IB_DISABLE=1)

case $case_ in
find)
	record "$tmp/good" "${good_env[@]}"
	check "good run passes" $?
	# the bad run also lacks NCCL_CUMEM_ENABLE (bisect must --unset it)
	record "$tmp/bad" --env NCCL_IB_DISABLE=1 "${bad_env[@]}"
	[ $? -ne 0 ]; check "bad run fails" $?
	must "bad run fails in the bootstrap" "Bootstrap : no socket interface found" "$tmp/bad.log"
	"$ncclrr" bisect --good "$tmp/good" --bad "$tmp/bad" --workdir "$tmp/work" -- "$conn" --no-nccl \
		>"$tmp/out" 2>"$tmp/err"
	rc=$?
	cat "$tmp/out" "$tmp/err"
	[ $rc -eq 1 ]; check "exit 1 when a minimal set is found (got $rc)" $?
	must "10 differences searched" '^searching 10 differences:' "$tmp/out"
	must "the unset one is among them" '^  NCCL_CUMEM_ENABLE: 1 -> (unset)$' "$tmp/out"
	must "attempt 1 is the good configuration, passing" '^attempt  1: {} (the good configuration): pass, [0-9.]* s$' "$tmp/out"
	must "attempt 2 is the bad configuration, failing" '^attempt  2: {.*-NCCL_CUMEM_ENABLE.*NCCL_SOCKET_IFNAME=ib0} (the bad configuration): fail (exit 1), ' "$tmp/out"
	must "an attempt with the culprit alone" '^attempt *[0-9]*: {NCCL_SOCKET_IFNAME=ib0}: fail' "$tmp/out"
	set_=$(sed -n '/^minimal failing set (1 of 10 differences):$/,/^$/p' "$tmp/out" |  sed -n '2,$p' | sed '/^attempt /,$d' | grep -v '^$')
	[ "$set_" = "  NCCL_SOCKET_IFNAME: lo -> ib0" ]; check "the minimal set is exactly NCCL_SOCKET_IFNAME=ib0 (got '$set_')" $?
	must "what the failing attempt printed" '^  \[[0-9]*\] rank [0-9]*: Bootstrap : no socket interface found$' "$tmp/out"
	n=$(grep -c '^attempt *[0-9]*: ' "$tmp/out")
	[ "$n" -ge 3 ] && [ "$n" -le 20 ]; check "a bounded number of attempts ($n)" $?
	n=$(ls -d "$tmp/work"/attempt-?? | wc -l)
	[ "$n" -eq "$(grep -c '^attempt *[0-9]*: ' "$tmp/out")" ]; check "one kept trace dir per attempt ($n)" $?
	must "diff of the last passing against the first failing attempt" '^ncclrr diff of attempt [0-9]* (the last that passed) against attempt [0-9]* (the first that failed with the minimal set):' "$tmp/out"
	# the attempts reproduce the configurations they stand for
	"$ncclrr" bisect -n --good "$tmp/good" --bad "$tmp/work/attempt-01" -- "$conn" >"$tmp/n1"
	check "attempt 1 has the good run's configuration" $?
	"$ncclrr" bisect -n --good "$tmp/bad" --bad "$tmp/work/attempt-02" -- "$conn" >"$tmp/n2"
	check "attempt 2 has the bad run's configuration" $?
	# a second bisect into the same workdir is refused
	"$ncclrr" bisect --good "$tmp/good" --bad "$tmp/bad" --workdir "$tmp/work" -- "$conn" --no-nccl \
		>"$tmp/out2" 2>"$tmp/err2"
	[ $? -eq 2 ]; check "a used --workdir is refused" $?
	must "why" "already holds attempts" "$tmp/err2"
	;;
notfail)
	record "$tmp/good" "${good_env[@]}"
	check "good run passes" $?
	# rank 5 stalls: CONN_SETUP_STALL is not an environment variable the
	# tracer keeps, so nothing in the traces explains the failure
	CONN_SETUP_STALL=5 "$ncclrr" record -o "$tmp/bad" -q -- "$ncclrr" run --topo "$topo" --timeout 1 \
		"${good_env[@]}" --env NCCL_ALGO=Tree -- "$conn" --no-nccl >"$tmp/bad.log" 2>&1
	[ $? -ne 0 ]; check "bad run fails (times out)" $?
	"$ncclrr" bisect --good "$tmp/good" --bad "$tmp/bad" -- "$conn" --no-nccl >"$tmp/out" 2>"$tmp/err"
	rc=$?
	cat "$tmp/out" "$tmp/err"
	[ $rc -eq 0 ]; check "exit 0 when the bad configuration passes (got $rc)" $?
	must "searched" '^  NCCL_ALGO: (unset) -> Tree$' "$tmp/out"
	must "says so" "the bad configuration does not fail when re-run" "$tmp/out"
	mustnot "no minimal set" "minimal failing set" "$tmp/out"
	n=$(grep -c '^attempt *[0-9]*: ' "$tmp/out"); [ "$n" -eq 2 ]; check "two attempts ($n)" $?
	mustnot "no 'kept' line without --keep" "attempts kept in" "$tmp/out"
	;;
goodfails)
	record "$tmp/good" "${good_env[@]}"
	record "$tmp/bad" "${good_env[@]}" --env NCCL_SOCKET_IFNAME==lo0
	[ $? -ne 0 ]; check "exact-match interface that does not exist fails" $?
	"$ncclrr" bisect --good "$tmp/bad" --bad "$tmp/good" --keep -- "$conn" --no-nccl >"$tmp/out" 2>"$tmp/err"
	rc=$?
	cat "$tmp/out" "$tmp/err"
	[ $rc -eq 2 ]; check "exit 2 when the good configuration fails (got $rc)" $?
	must "says so" "the good configuration fails when re-run" "$tmp/out"
	n=$(grep -c '^attempt *[0-9]*: ' "$tmp/out"); [ "$n" -eq 1 ]; check "one attempt ($n)" $?
	must "what it printed" "no socket interface found" "$tmp/out"
	kept=$(sed -n 's/^attempts kept in \([^ ]*\) .*/\1/p' "$tmp/out")
	[ -n "$kept" ] && [ -d "$kept/attempt-01" ] && grep -q "no socket interface found" "$kept/attempt-01.log"
	check "--keep keeps the attempt and its output ($kept)" $?
	[ -n "$kept" ] && rm -rf "$kept"
	;;
runinfo)
	record "$tmp/good" "${good_env[@]}"
	record "$tmp/good2" "${good_env[@]}"
	# the same cluster file (name and content) in another directory: no
	# difference
	mkdir "$tmp/copydir" && cp "$topo" "$tmp/copydir/"
	record "$tmp/copy" "${good_env[@]}" --topo "$tmp/copydir/2node_16gpu.xml"
	# other content: a topology difference
	sed 's/<\/cluster>/<!-- changed --><\/cluster>/' "$topo" >"$tmp/other.xml"
	cmp -s "$topo" "$tmp/other.xml" && echo "warning: sed changed nothing"
	cmp -s "$topo" "$tmp/other.xml"; [ $? -eq 1 ]; check "the other cluster file differs" $?
	# with a fault rule that never fires: a launcher's variable (rerun does
	# not give it back) that ncclrr run does not set, so bisect searches it
	fault='cuMemAlloc:nth=1000000:CUDA_ERROR_OUT_OF_MEMORY'
	"$ncclrr" record -o "$tmp/other" -q -- "$ncclrr" run --topo "$tmp/other.xml" --timeout 60 "${good_env[@]}" \
		"${bad_env[@]}" --env "NCCLRR_FAULT=$fault" -- "$conn" --no-nccl >"$tmp/other.log" 2>&1
	# two runs of one configuration differ in ports, temp dirs, trace dirs
	# and pids only: nothing to search
	"$ncclrr" bisect -n --good "$tmp/good" --bad "$tmp/good2" -- "$conn" >"$tmp/o1" 2>&1
	check "two runs of one configuration: exit 0" $?
	must "no differences" '^searching 0 differences:$' "$tmp/o1"
	mustnot "nothing unsearched" '^not searched' "$tmp/o1"
	"$ncclrr" bisect -n --good "$tmp/good" --bad "$tmp/copy" -- "$conn" >"$tmp/o2" 2>&1
	check "a copied cluster file is the same topology" $?
	# the same content under another name is another topology
	cp "$topo" "$tmp/renamed.xml"
	record "$tmp/renamed" "${good_env[@]}" --topo "$tmp/renamed.xml"
	"$ncclrr" bisect -n --good "$tmp/good" --bad "$tmp/renamed" -- "$conn" >"$tmp/o5" 2>&1
	[ $? -eq 1 ]; check "a renamed cluster file is a difference" $?
	"$ncclrr" bisect -n --good "$tmp/good" --bad "$tmp/other" -- "$conn" >"$tmp/o3" 2>&1
	rc=$?
	cat "$tmp/o3"
	[ $rc -eq 1 ]; check "differences: exit 1 (got $rc)" $?
	must "11 differences" '^searching 11 differences:$' "$tmp/o3"
	must "NCCLRR_FAULT searched" "^  NCCLRR_FAULT: (unset) -> $fault\$" "$tmp/o3"
	for v in NCCL_DEBUG NCCL_ALGO NCCL_PROTO NCCL_BUFFSIZE NCCL_NTHREADS NCCL_IB_HCA NCCL_P2P_LEVEL \
		NCCL_MIN_NCHANNELS; do
		must "$v (unset before) searched" "^  $v: (unset) -> " "$tmp/o3"
	done
	must "NCCL_SOCKET_IFNAME searched" '^  NCCL_SOCKET_IFNAME: lo -> ib0$' "$tmp/o3"
	must "topology searched, by file" "^  topology: $topo -> $tmp/other.xml\$" "$tmp/o3"
	for v in NCCL_COMM_ID NCCL_TOPO_FILE NCCLRR_TRACE_DIR NCCL_TOPO_DUMP_FILE LD_PRELOAD RANK NCCLRR_RANK; do
		mustnot "$v is not a difference" "^  $v:" "$tmp/o3"
	done
	# the runinfo unit test covers folding and per-rank values; here a
	# per-rank difference shows as not searched: different rank counts
	"$ncclrr" record -o "$tmp/small" -q -- "$ncclrr" run --topo "$topo" -np 2 --timeout 60 "${good_env[@]}" \
		-- "$conn" --no-nccl >"$tmp/small.log" 2>&1
	"$ncclrr" bisect -n --good "$tmp/good" --bad "$tmp/small" -- "$conn" >"$tmp/o4" 2>&1
	cat "$tmp/o4"
	must "nranks not searched" '^  nranks: 16 -> 2 (not something a re-run can change)$' "$tmp/o4"
	;;
usage)
	u() { # name expected-rc message args...
		local name=$1 want=$2 msg=$3
		shift 3
		"$ncclrr" bisect "$@" >"$tmp/uo" 2>"$tmp/ue"
		local rc=$?
		[ $rc -eq "$want" ]; check "$name: exit $want (got $rc)" $?
		grep -q -- "$msg" "$tmp/ue"; check "$name: says '$msg'" $?
	}
	mkdir -p "$tmp/empty"
	u "no options" 2 "--bad B and either --good A or --nccl VERSIONS (or both) are required"
	u "no --bad" 2 "--bad B and either --good A or --nccl VERSIONS (or both) are required" --good "$tmp/empty" -- true
	u "--bad alone" 2 "--bad B and either --good A or --nccl VERSIONS (or both) are required" --bad "$tmp/empty" -- true
	u "--dry-run without --good" 2 "--dry-run lists the differences between --good and --bad" --nccl all --bad "$tmp/empty" -n -- true
	u "no program" 2 "no program given" --good "$tmp/empty" --bad "$tmp/empty"
	u "bad timeout" 2 "--timeout needs a positive number of seconds, not 'x'" --timeout x --good a --bad b -- true
	u "missing value" 2 "needs a value" --good
	u "unknown option" 2 "unknown option '--frob'" --frob --good a --bad b -- true
	u "missing trace" 2 "$tmp/nope" --good "$tmp/nope" --bad "$tmp/nope" -- true
	u "no traces in dir" 2 "$tmp/empty" --good "$tmp/empty" --bad "$tmp/empty" -- true
	printf 'not a trace' >"$tmp/junk.nrt"
	u "not a trace" 2 "junk.nrt" --good "$tmp/junk.nrt" --bad "$tmp/junk.nrt" -- true
	grep -q '^Usage: ncclrr bisect --good A --bad B' <<<"$("$ncclrr" bisect --help)"
	check "--help" $?
	grep -q ' bisect ' <<<"$("$ncclrr" --help)"
	check "bisect listed in ncclrr --help" $?
	# a run without NCCLRR_TOPO (not recorded under ncclrr run) needs --topo
	"$ncclrr" record -o "$tmp/plain" -q -- sh -c 'exec "$0" --no-nccl' "$conn" >/dev/null 2>&1
	if ls "$tmp/plain"/*.nrt >/dev/null 2>&1; then
		u "no cluster file" 2 "names no cluster file: it was not made under .ncclrr run.; give the good run's cluster file with --topo FILE" \
			--good "$tmp/plain" --bad "$tmp/plain" -- true
	fi
	# a run that keeps no copy of its cluster file: the path its trace
	# names is never opened, even when it is there (a trace chooses no file)
	"$ncclrr" record -o "$tmp/nocopy" -q -- "$ncclrr" run --topo "$topo" -np 2 --timeout 60 -- "$conn" --no-nccl >/dev/null 2>&1
	rm -f "$tmp/nocopy/ncclrr-cluster.xml"
	u "no copy kept" 2 "holds no copy of its cluster file (ncclrr-cluster.xml: .*), and the path the recording names, $topo (env NCCLRR_TOPO), is the recording machine's" \
		--good "$tmp/nocopy" --bad "$tmp/nocopy" -- true
	;;
*)
	echo "unknown case $case_"
	exit 2
	;;
esac
finish
