#!/usr/bin/env bash
# `ncclrr run` behaviour with shell programs (no NCCL, no fake runtime use):
# prefixes, environment, --env, exit summary, timeout kill + report, errors,
# wrapper mode.  usage: test_run.sh NCCLRR SOURCE_ROOT
set -uo pipefail
ncclrr=$(realpath "$1")
root=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the programs here never load libcuda: a stand-in directory is enough
mkdir -p "$tmp/fake" && : >"$tmp/fake/libcuda.so.1"
export NCCLRR_FAKE_LIBDIR=$tmp/fake
unset RANK WORLD_SIZE OMPI_COMM_WORLD_RANK SLURM_PROCID LOCAL_RANK
t1=$root/topo/1node_8gpu.xml
t2=$root/topo/2node_16gpu.xml
fails=0 pass=0
check() { if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else echo "FAIL: $1"; fails=$((fails + 1)); fi; }
must() { grep -q -- "$2" "$3"; check "$1" $?; }

# not `--help | grep -q`: grep stops reading, and a help text longer than a
# pipe's buffer then ends in SIGPIPE (exit 141 under pipefail)
grep -q '^Usage: ncclrr run' <<<"$("$ncclrr" run --help)"; check "run --help" $?
grep -q ' run ' <<<"$("$ncclrr" --help)"; check "run listed in ncclrr --help" $?

# prefixes, placement and environment on 2 hosts x 8 GPUs
cat >"$tmp/env.sh" <<'E'
#!/bin/sh
echo "r=$RANK ws=$WORLD_SIZE lr=$LOCAL_RANK lws=$LOCAL_WORLD_SIZE h=$NCCLRR_HOST nr=$NCCLRR_RANK id=$NCCL_HOSTID"
echo "comm=$NCCL_COMM_ID if=$NCCL_SOCKET_IFNAME topo=$NCCLRR_TOPO"
echo "err line" >&2
[ -s "$NCCL_TOPO_FILE" ] && echo topo-file-ok
case "$LD_LIBRARY_PATH" in "$NCCLRR_FAKE_LIBDIR"*) echo ldpath-ok;; esac
echo "foo=$FOO"
printf 'no newline'
E
chmod +x "$tmp/env.sh"
"$ncclrr" run --topo "$t2" --env FOO=bar -- "$tmp/env.sh" >"$tmp/out" 2>"$tmp/err"
check "2node env run exits 0" $?
n=$(grep -c '^\[[0-9]*\] r=' "$tmp/out"); [ "$n" -eq 16 ]; check "16 ranks by default (got $n)" $?
must "rank 9 placement" '^\[9\] r=9 ws=16 lr=1 lws=8 h=1 nr=9 ' "$tmp/out"
must "rank 0 placement" '^\[0\] r=0 ws=16 lr=0 lws=8 h=0 ' "$tmp/out"
h0=$(sed -n 's/^\[0\] .*id=\(.*\)$/\1/p' "$tmp/out"); h1=$(sed -n 's/^\[8\] .*id=\(.*\)$/\1/p' "$tmp/out")
[ -n "$h0" ] && [ -n "$h1" ] && [ "$h0" != "$h1" ]; check "distinct NCCL_HOSTID per host ($h0 $h1)" $?
must "NCCL_COMM_ID loopback" '^\[3\] comm=127.0.0.1:[0-9]* if=lo topo=/' "$tmp/out"
n=$(grep -c 'comm=127.0.0.1' "$tmp/out"); [ "$(grep 'comm=' "$tmp/out" | sed 's/^\[[0-9]*\] //' | sort -u | wc -l)" -eq 1 ]
check "one NCCL_COMM_ID for all ranks" $?
n=$(grep -c 'topo-file-ok' "$tmp/out"); [ "$n" -eq 16 ]; check "NCCL_TOPO_FILE written for every rank ($n)" $?
must "LD_LIBRARY_PATH has the fake dir first" '^\[15\] ldpath-ok' "$tmp/out"
must "--env" '^\[5\] foo=bar' "$tmp/out"
FOO=inherited "$ncclrr" run --topo "$t1" -np 2 --env FOO=bar --unset FOO --unset NCCL_SOCKET_IFNAME -- "$tmp/env.sh" \
	>"$tmp/out_unset" 2>/dev/null
must "--unset removes a variable set by --env or inherited" '^\[1\] foo=$' "$tmp/out_unset"
must "--unset removes a variable ncclrr run sets" '^\[0\] comm=127.0.0.1:[0-9]* if= topo=/' "$tmp/out_unset"
"$ncclrr" run --topo "$t1" --unset A=B -- true 2>"$tmp/err_unset"
[ $? -eq 2 ]; check "--unset K=V is a usage error" $?
must "--unset K=V says why" "--unset needs a variable name, not 'A=B'" "$tmp/err_unset"
must "stderr prefixed and kept on stderr" '^\[7\] err line' "$tmp/err"
! grep -q 'err line' "$tmp/out"; check "stderr not on stdout" $?
must "partial last line flushed" '^\[2\] no newline$' "$tmp/out"
must "summary" '16 of 16 ranks exited 0' "$tmp/err"
ls /tmp/ncclrr-run.* >/dev/null 2>&1 && [ -z "${TMPDIR:-}" ] && echo "note: /tmp/ncclrr-run.* exist (maybe from concurrent runs)"

# -np, --env overriding a launcher variable
"$ncclrr" run --topo "$t2" -np 4 --env NCCL_SOCKET_IFNAME=eth9 -- "$tmp/env.sh" >"$tmp/out" 2>&1
check "-np 4 exits 0" $?
n=$(grep -c '^\[[0-9]*\] r=' "$tmp/out"); [ "$n" -eq 4 ]; check "-np 4 starts 4 ranks" $?
must "-np 4: rank 2 on host 1" '^\[2\] r=2 ws=4 lr=0 lws=2 h=1 ' "$tmp/out"
must "--env overrides NCCL_SOCKET_IFNAME" 'if=eth9' "$tmp/out"
"$ncclrr" run --topo "$t2" -np 3 -- true >"$tmp/out" 2>&1; [ $? -eq 2 ]; check "-np 3 on 2 hosts exits 2" $?
must "-np 3 message" 'multiple of the 2 hosts' "$tmp/out"
"$ncclrr" run --topo "$t1" -np 9 -- true >"$tmp/out" 2>&1; [ $? -eq 2 ]; check "-np 9 on 8 GPUs exits 2" $?

# exit status summary
cat >"$tmp/fail.sh" <<'E'
#!/bin/sh
[ "$RANK" = 2 ] && { echo "rank two fails"; exit 5; }
[ "$RANK" = 5 ] && kill -ABRT $$
exit 0
E
chmod +x "$tmp/fail.sh"
"$ncclrr" run --topo "$t1" -- "$tmp/fail.sh" >"$tmp/out" 2>&1; rc=$?
[ $rc -eq 1 ]; check "failing rank -> exit 1 (got $rc)" $?
must "rank 2 status" 'rank 2: exit status 5' "$tmp/out"
must "rank 5 signal" 'rank 5: killed by signal 6 (SIGABRT' "$tmp/out"
must "failed summary" '6 of 8 ranks exited 0' "$tmp/out"

# timeout: kill the groups, report who was running and the last line
cat >"$tmp/hang.sh" <<'E'
#!/bin/sh
echo "rank $RANK starting"
[ "$RANK" = 0 ] && exit 0
echo "rank $RANK waiting in sleep"
sleep 60 &
wait
E
chmod +x "$tmp/hang.sh"
t0=$(date +%s)
"$ncclrr" run --topo "$t1" -np 4 --timeout 1.5 -- "$tmp/hang.sh" >"$tmp/out" 2>&1; rc=$?
el=$(( $(date +%s) - t0 ))
[ $rc -eq 124 ]; check "timeout exits 124 (got $rc)" $?
[ $el -le 10 ]; check "timeout ends in time (${el}s)" $?
must "timeout report" 'timeout after 1.5 s; 3 of 4 ranks still running' "$tmp/out"
must "last line of rank 2" 'rank 2 (pid [0-9]*) last printed: rank 2 waiting in sleep' "$tmp/out"
grep -q 'rank 0 (pid' "$tmp/out"; [ $? -ne 0 ]; check "finished rank 0 not reported as running" $?
must "where it waits" 'thread [0-9]* (hang.sh): in [a-z]' "$tmp/out"
must "killed ranks in summary" 'rank 1: killed by signal 15 (SIGTERM)' "$tmp/out"
sleep 0.2
! pgrep -f "$tmp/hang.sh" >/dev/null; check "no rank left running" $?
! pgrep -f "sleep 60" -P 1 >/dev/null 2>&1 || echo "note: a 'sleep 60' is still around (not necessarily ours)"

# SIGTERM to ncclrr run: report and kill like a timeout, exit 130
"$ncclrr" run --topo "$t1" -np 2 -- "$tmp/hang.sh" >"$tmp/out" 2>&1 &
pid=$!
for _ in $(seq 50); do grep -q 'waiting in sleep' "$tmp/out" && break; sleep 0.1; done
kill -TERM $pid
wait $pid; rc=$?
[ $rc -eq 130 ]; check "SIGTERM -> exit 130 (got $rc)" $?
must "interrupt report" 'interrupted by signal 15 after' "$tmp/out"

# errors: exit 2 and a clear message
"$ncclrr" run --topo "$tmp/none.xml" -- true >"$tmp/out" 2>&1; [ $? -eq 2 ]; check "missing topology exits 2" $?
must "missing topology message" 'none.xml' "$tmp/out"
printf '<system version="1">\n  <cpu>\n <broken\n' >"$tmp/bad.xml"
"$ncclrr" run --topo "$tmp/bad.xml" -- true >"$tmp/out" 2>&1; [ $? -eq 2 ]; check "bad topology exits 2" $?
must "bad topology names file:line" 'bad.xml:[0-9]' "$tmp/out"
"$ncclrr" run --topo "$t1" -- /no/such/program >"$tmp/out" 2>&1; [ $? -eq 2 ]; check "missing program exits 2" $?
must "missing program message" "cannot run program '/no/such/program'" "$tmp/out"
"$ncclrr" run --topo "$t1" >"$tmp/out" 2>&1; [ $? -eq 2 ]; check "no program exits 2" $?
"$ncclrr" run -- true >"$tmp/out" 2>&1; [ $? -eq 2 ]; check "no --topo exits 2" $?
"$ncclrr" run --topo "$t1" --bogus -- true >"$tmp/out" 2>&1; [ $? -eq 2 ]; check "unknown option exits 2" $?
"$ncclrr" run --topo "$t1" --env NOVALUE -- true >"$tmp/out" 2>&1; [ $? -eq 2 ]; check "--env without = exits 2" $?
NCCLRR_FAKE_LIBDIR=$tmp/nowhere "$ncclrr" run --topo "$t1" -- true >"$tmp/out" 2>&1; [ $? -eq 2 ]
check "no fake runtime exits 2" $?
must "no fake runtime message" 'libcuda.so.1' "$tmp/out"

# wrapper mode: RANK/WORLD_SIZE from an outer launcher, exec in place
RANK=11 WORLD_SIZE=16 NCCL_COMM_ID=127.0.0.1:29999 "$ncclrr" run --topo "$t2" -- "$tmp/env.sh" >"$tmp/out" 2>&1
check "wrapper mode exits 0" $?
must "wrapper: no prefix, rank 11 on host 1" '^r=11 ws=16 lr=3 lws=8 h=1 nr=11 ' "$tmp/out"
must "wrapper: user NCCL_COMM_ID kept" '^comm=127.0.0.1:29999 if=lo' "$tmp/out"
must "wrapper: topology written" '^topo-file-ok' "$tmp/out"
OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=8 "$ncclrr" run --topo "$t1" --comm-id 127.0.0.1:1234 -- "$tmp/env.sh" >"$tmp/out" 2>&1
must "wrapper: Open MPI rank and --comm-id" '^r=1 ws=8 lr=1 lws=8 h=0' "$tmp/out"
must "wrapper: --comm-id" '^comm=127.0.0.1:1234' "$tmp/out"
RANK=1 "$ncclrr" run --topo "$t1" -- true >"$tmp/out" 2>&1; [ $? -eq 2 ]; check "wrapper without WORLD_SIZE exits 2" $?
"$ncclrr" run --topo "$t1" --wrap -- true >"$tmp/out" 2>&1; [ $? -eq 2 ]; check "--wrap without a launcher exits 2" $?
RANK=3 WORLD_SIZE=8 "$ncclrr" run --topo "$t1" -np 2 -- "$tmp/env.sh" >"$tmp/out" 2>&1
must "-np wins over RANK (no wrapper mode)" '^\[1\] r=1 ws=2' "$tmp/out"

# the host's memlock= (default unlimited): the ranks' RLIMIT_MEMLOCK where
# this process may give it, else the most it may (the hard limit) with
# NCCLRR_MEMLOCK saying the host's for the fake libibverbs
sed 's|<host name="node0">|<host name="node0" memlock="4m">|' "$t2" >"$tmp/memlock.xml"
cat >"$tmp/ml.sh" <<'E'
#!/bin/sh
echo "ml r=$RANK $(ulimit -l) virt=${NCCLRR_MEMLOCK:-none} given=${NCCLRR_MEMLOCK_GIVEN:-none} sysfs=$(cd "$NCCLRR_SYSFS/class/infiniband" && ls | tr '\n' ' ')"
E
chmod +x "$tmp/ml.sh"
hard=$(ulimit -H -l)
"$ncclrr" run --topo "$tmp/memlock.xml" -np 16 -- "$tmp/ml.sh" >"$tmp/out" 2>&1; check "memlock run exits 0" $?
must "memlock=4m: 4096 KiB on host 0" '^\[0\] ml r=0 4096 virt=none given=none ' "$tmp/out"
must "each rank sees its host's NICs in NCCLRR_SYSFS" '^\[0\] ml .* sysfs=mlx5_0 mlx5_1 mlx5_2 mlx5_3 mlx5_4 mlx5_5 mlx5_6 mlx5_7 $' "$tmp/out"
if [ "$hard" = unlimited ]; then
	must "default memlock: unlimited on host 1" '^\[8\] ml r=8 unlimited virt=none ' "$tmp/out"
elif ( ulimit -H -l unlimited ) 2>/dev/null; then
	must "default memlock: raised to unlimited on host 1" '^\[8\] ml r=8 unlimited virt=none ' "$tmp/out"
else
	must "default memlock: hard limit $hard here, unlimited for the fake verbs" \
		"^\[8\] ml r=8 $hard virt=unlimited given=$((hard * 1024)) " "$tmp/out"
fi
RANK=9 WORLD_SIZE=16 "$ncclrr" run --topo "$tmp/memlock.xml" -- "$tmp/ml.sh" >"$tmp/out" 2>&1
must "wrapper: the host's sysfs view" '^ml r=9 .* sysfs=mlx5_0 .*mlx5_7 $' "$tmp/out"
RANK=1 WORLD_SIZE=16 "$ncclrr" run --topo "$tmp/memlock.xml" -- "$tmp/ml.sh" >"$tmp/out" 2>&1
must "wrapper: memlock=4m" '^ml r=1 4096 virt=none ' "$tmp/out"
sed 's|<host name="node0">|<host name="node0" memlock="lots">|' "$t2" >"$tmp/badml.xml"
"$ncclrr" run --topo "$tmp/badml.xml" -- true >"$tmp/out" 2>&1; [ $? -eq 2 ]; check "bad memlock= exits 2" $?
must "bad memlock= names file:line and the forms" 'badml.xml:5: .*memlock="lots".*unlimited' "$tmp/out"

echo "test_run: $pass passed, $fails failed"
[ $fails -eq 0 ]
