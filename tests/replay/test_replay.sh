#!/usr/bin/env bash
# `ncclrr replay` on the golden traces of traces/replay/ (recorded from the
# fake 16-rank conn_setup job by traces/replay/record.sh).
# usage: test_replay.sh CASE NCCLRR SOURCE_ROOT HANG_GEN EXIT_ON_LOAD_LIB
# CASE: golden | repeat | load | chaos | inject | ranks | damaged | usage | inflight | summary | dead | hostile
set -uo pipefail
case_=$1
ncclrr=$(realpath "$2")
root=$3
hang_gen=${4:-}
g=$root/traces/replay
topo=$root/topo/2node_16gpu.xml
tmp=$(mktemp -d)
busy=()
trap 'for p in "${busy[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
unset NCCLRR_FAULT
traces="conn_clean conn_import_fail conn_bad_ifname conn_rank_killed"
replay() { "$ncclrr" replay --topo "$topo" --timeout 20 "$@"; }
has() { grep -qF -- "$2" "$1" || fail "$3: no '$2' in: $(cat "$1")"; }

case $case_ in
golden)
	# each replays to exactly its expected output (timings and pids masked)
	for t in $traces; do
		replay "$g/$t" >"$tmp/$t.out" 2>&1
		rc=$?
		[ $rc -eq 0 ] || fail "$t: exit $rc"
		"$g/normalize.sh" <"$tmp/$t.out" >"$tmp/$t.norm"
		diff -u "$g/$t.expected" "$tmp/$t.norm" || fail "$t: output differs from $t.expected"
	done
	has "$tmp/conn_import_fail.out" "rank 3: cuMemImportFromShareableHandle = CUDA_ERROR_INVALID_VALUE (1) (#202, answered from the trace) -> exit 1" import
	has "$tmp/conn_clean.out" "result: the replay matches the recording" clean
	;;
repeat|load)
	# 100 of 100 replays reproduce the failure, identically; `load`: while
	# two busy loops keep both cores busy
	if [ "$case_" = load ]; then
		for _ in 1 2; do (while :; do :; done) & busy+=($!); done
	fi
	for t in $traces; do
		replay --repeat 100 "$g/$t" >"$tmp/$t.out" 2>&1
		rc=$?
		[ $rc -eq 0 ] || fail "$t: --repeat 100 exit $rc: $(grep -E 'replay [0-9]|differs|hung|divergence' "$tmp/$t.out" | head -5)"
		if [ "$t" = conn_clean ]; then
			has "$tmp/$t.out" "100 of 100 replays matched the recording, 100 of 100 identical to the first" "$t"
		else
			has "$tmp/$t.out" "100 of 100 replays reproduced the failure, 100 of 100 identical to the first" "$t"
		fi
	done
	;;
chaos)
	for seed in 1 7 12345; do
		replay --repeat 10 --chaos $seed "$g/conn_import_fail" >"$tmp/c$seed" 2>&1 || fail "--chaos $seed: exit $?"
		has "$tmp/c$seed" "10 of 10 replays reproduced the failure, 10 of 10 identical" "chaos $seed"
	done
	;;
inject)
	# none: the fake runtime answers; the recorded import failure is the
	# first divergence, named exactly
	replay --inject none "$g/conn_import_fail" >"$tmp/none" 2>&1
	rc=$?
	[ $rc -eq 1 ] || fail "--inject none: exit $rc, expected 1"
	has "$tmp/none" "first divergence: rank 3 #202 cuMemImportFromShareableHandle: result: recorded CUDA_ERROR_INVALID_VALUE (1), replayed CUDA_SUCCESS (0)" none
	has "$tmp/none" "#202, NOT reached" none
	# all: every CUDA/NVML answer from the trace, even without a cluster file
	"$ncclrr" replay --inject all "$g/conn_import_fail" >"$tmp/all" 2>&1 || fail "--inject all: exit $?"
	has "$tmp/all" "failure reproduced" all
	# the clean trace: the fake runtime agrees with every recorded answer
	replay --inject none "$g/conn_clean" >"$tmp/cn" 2>&1 || fail "clean --inject none: exit $?: $(cat "$tmp/cn")"
	;;
ranks)
	# two ranks of sixteen: rank 3 fails importing rank 4's buffer, rank 2
	# imports rank 3's; the other ranks' side comes from the trace
	replay --ranks 2,3 "$g/conn_import_fail" >"$tmp/r23" 2>&1
	rc=$?
	[ $rc -eq 0 ] || fail "--ranks 2,3: exit $rc: $(cat "$tmp/r23")"
	has "$tmp/r23" "2 of 17 processes" ranks
	has "$tmp/r23" "rank 3: cuMemImportFromShareableHandle = CUDA_ERROR_INVALID_VALUE (1) (#202, answered from the trace) -> exit 1" ranks
	replay --ranks 3,4 --repeat 20 "$g/conn_import_fail" >"$tmp/r34" 2>&1 || fail "--ranks 3,4: exit $?: $(tail -3 "$tmp/r34")"
	replay --ranks 0,15 "$g/conn_clean" >"$tmp/r015" 2>&1 || fail "--ranks 0,15 clean: exit $?"
	replay --ranks 99 "$g/conn_clean" >"$tmp/r99" 2>&1
	[ $? -eq 2 ] || fail "--ranks 99: want exit 2"
	has "$tmp/r99" "no trace in" ranks99
	;;
damaged)
	# a changed byte and a cut file: exit 2 naming the file and the offset
	cp -r "$g/conn_import_fail" "$tmp/c"
	f=$(ls "$tmp"/c/*.nrt | sed -n 5p)
	sz=$(stat -c %s "$f")
	printf '\377\377\377\377' | dd of="$f" bs=1 seek=$((sz / 2)) conv=notrunc 2>/dev/null
	replay "$tmp/c" >"$tmp/cout" 2>&1
	rc=$?
	[ $rc -eq 2 ] || fail "corrupt: exit $rc, expected 2"
	has "$tmp/cout" "Cannot read trace: file=$f offset=" corrupt
	cp -r "$g/conn_import_fail" "$tmp/t"
	f=$(ls "$tmp"/t/*.nrt | sed -n 5p)
	# cut inside the metadata chunk (the header, the first schema chunk
	# and the start of the meta chunk are the first 300 bytes): no trace
	# to start from.  A cut among the calls is what a killed writer
	# leaves, replayed from its complete chunks (replay_dead)
	truncate -s 300 "$f"
	replay "$tmp/t" >"$tmp/tout" 2>&1
	rc=$?
	[ $rc -eq 2 ] || fail "truncated: exit $rc, expected 2"
	has "$tmp/tout" "file=$f offset=" truncated
	has "$tmp/tout" "truncated" truncated
	;;
hostile)
	# a trace is data, never code: under strace, replay, dump, hang,
	# export, diff and bisect of a run whose metadata names ../../etc/passwd
	# as its cluster, /dev/zero as its executable and NCCL topology file,
	# LD_AUDIT, LD_PRELOAD and net plugins, and that connected to 10.1.2.3,
	# exec nothing, open only the run directory, the output, ncclrr's own
	# files and the system's libraries, and connect to nothing but loopback
	command -v strace >/dev/null || { echo "SKIP: no strace (Debian: strace)"; exit 77; }
	mkdir "$tmp/h" "$tmp/o"
	"$4" "$tmp/h" hostile_env || fail "hang_gen hostile_env failed"
	own=$(realpath "$(dirname "$ncclrr")/..")
	# (@: the run)
	for cmd in "replay --timeout 10 @" "dump @" "hang @" "stats @" "export --html $tmp/o/r.html @" \
		"export --chrome $tmp/o/r.json @" "diff @ @" "bisect -n --good @ --bad @ -- true"; do
		cmd=${cmd//@/$tmp/h}
		timeout 60 strace -f -qq -e trace=execve,open,openat,connect -o "$tmp/st" "$ncclrr" $cmd >"$tmp/out" 2>&1
		rc=$?
		# (bisect: 2, the run keeps no copy of its cluster file)
		[ $rc -le 1 ] || { [ "${cmd%% *}" = bisect ] && [ $rc = 2 ] && grep -q 'holds no copy of its cluster file' "$tmp/out"; } ||
			fail "$cmd: exit $rc: $(tail -2 "$tmp/out")"
		n=$(grep -c ' execve(' "$tmp/st")
		[ "$n" = 1 ] || fail "$cmd: $n execve (ncclrr's own only): $(grep ' execve(' "$tmp/st" | sed -n 2p | cut -c1-200)"
		grep -oE 'open(at)?\([^"]*"[^"]*"' "$tmp/st" | sed -E 's/.*"([^"]*)"/\1/' | sort -u >"$tmp/files"
		# (/tmp itself: tmpfile()'s unnamed O_TMPFILE; /etc/localtime: dates)
		bad=$(grep -vE "^($tmp/h|$tmp/o|$own|/lib/|/usr/lib/|/lib64/|/etc/ld\.so\.|/etc/libnl/|/proc/|/sys/|/dev/|/tmp\$|/etc/localtime\$)" "$tmp/files")
		[ -z "$bad" ] || fail "$cmd opened files outside the run, the output and the libraries: $(echo $bad | cut -c1-300)"
		grep -E ' connect\(' "$tmp/st" | grep -vE 'AF_UNIX|inet_addr\("127\.0\.0\.1"\)|inet_pton\(AF_INET6, "::1"' | head -2 >"$tmp/conn"
		[ -s "$tmp/conn" ] && fail "$cmd connected beyond loopback: $(cat "$tmp/conn")"
		echo "hostile: $cmd: exit $rc, $(wc -l <"$tmp/files") files opened"
	done
	;;
dead)
	# a worker that exits without a signal before its end (a sanitizer's
	# report, an abort handler): the replay says it died, and how, at
	# once; it used to wait for it until --timeout and call that a hang
	lib=$(realpath "$5")
	mkdir "$tmp/fl"
	ln -s "$lib" "$tmp/fl/libcuda.so.1"
	ln -s "$lib" "$tmp/fl/libnvidia-ml.so.1"
	NCCLRR_FAKE_LIBDIR=$tmp/fl timeout 60 "$ncclrr" replay --topo "$topo" --timeout 30 "$g/conn_import_fail" >"$tmp/d" 2>&1
	rc=$?
	[ $rc -eq 1 ] || [ $rc -eq 2 ] || fail "dead worker: exit $rc"
	has "$tmp/d" "the replay worker died: it exited 3 before the end of its replay" dead
	grep -q "replay hung" "$tmp/d" && fail "a dead worker was called a hang"
	# one that dies of a signal (a crash in the fake runtime): dead, with
	# its signal
	EXIT_ON_LOAD_SIGNAL=11 NCCLRR_FAKE_LIBDIR=$tmp/fl timeout 60 "$ncclrr" replay --topo "$topo" --timeout 30 \
		"$g/conn_import_fail" >"$tmp/s" 2>&1
	rc=$?
	[ $rc -eq 1 ] || [ $rc -eq 2 ] || fail "worker dead of SIGSEGV: exit $rc"
	has "$tmp/s" "the replay worker died of signal 11 (Segmentation fault)" signal
	grep -q "replay hung" "$tmp/s" && fail "a worker dead of a signal was called a hang"
	# the other way round: a replay killed (kill -9, a closed terminal)
	# takes its workers with it, or they may block in their replay for ever.
	# All stopped first, so that none can end on its own: what still lives
	# after the coordinator's kill was left alive by it.  Only workers that
	# have named themselves (ncclrr-rR, ncclrr-wN) are judged: they asked
	# for the coordinator's death signal before that; one stopped before it
	# could ask would, once running, find its parent gone and exit
	# (replay.c; CI counted such a worker as left alive).
	"$ncclrr" replay --topo "$topo" --timeout 30 --repeat 1000 "$g/conn_clean" >/dev/null 2>&1 &
	coord=$!
	workers= all=
	for _ in $(seq 400); do
		kill -STOP $coord
		if all=$(pgrep -r R,S,D -d, -P $coord); then   # live ones, not those of the last --repeat round
			kill -STOP ${all//,/ } 2>/dev/null
			workers=$(pgrep -d, -P $coord '^ncclrr-[rw][0-9]+$') && break
			kill -CONT ${all//,/ } 2>/dev/null
		fi
		kill -CONT $coord
		sleep 0.01
	done
	[ -n "$workers" ] || fail "no replay worker started"
	kill -KILL $coord
	wait $coord 2>/dev/null
	# the kernel signals them at once; a loaded machine may take a while
	# to run their deaths (zombies: dead, not yet reaped)
	for _ in $(seq 100); do
		left=$(ps -o stat= -p "$workers" | grep -vc "^Z")
		[ "$left" -eq 0 ] && break
		sleep 0.05
	done
	[ "$left" -eq 0 ] || fail "$left replay workers outlived their killed coordinator"
	kill -KILL ${all//,/ } 2>/dev/null
	;;
usage)
	"$ncclrr" replay >/dev/null 2>&1; [ $? -eq 2 ] || fail "no args: want exit 2"
	"$ncclrr" replay --inject maybe "$g/conn_clean" >/dev/null 2>&1; [ $? -eq 2 ] || fail "--inject maybe: want 2"
	"$ncclrr" replay --until 3 "$g/conn_clean" >/dev/null 2>&1; [ $? -eq 2 ] || fail "--until 3: want 2"
	# no cluster file kept (the recorded path, even one that exists here,
	# is never opened): the device answers come from the trace, and the
	# replay says why; --inject none (run every call) cannot do without it
	rec_topo=$("$ncclrr" dump --meta "$g"/conn_clean/*.nrt | sed -n 's/^#   env.NCCLRR_TOPO=//p' | head -1)
	"$ncclrr" replay --timeout 20 "$g/conn_clean" >"$tmp/nt" 2>&1 || fail "no cluster: exit $?"
	has "$tmp/nt" "holds no copy of its cluster file (ncclrr-cluster.xml" topo
	has "$tmp/nt" "the path the recording names, $rec_topo (env NCCLRR_TOPO), is the recording machine's" topo
	has "$tmp/nt" "their CUDA, NVML and verbs calls are answered from the trace (as --inject all)" topo
	has "$tmp/nt" "result: the replay matches the recording" topo
	"$ncclrr" replay --inject none "$g/conn_clean" >"$tmp/nt" 2>&1
	[ $? -eq 2 ] || fail "--inject none without a cluster: want exit 2"
	has "$tmp/nt" "needs its cluster for --inject none" topo
	has "$tmp/nt" "pass --topo FILE" topo
	# a kept copy that is a link out of the run directory is not followed
	cp -r "$g/conn_clean" "$tmp/linked"
	ln -s "$root/topo/2node_16gpu.xml" "$tmp/linked/ncclrr-cluster.xml"
	"$ncclrr" replay --timeout 20 "$tmp/linked" >"$tmp/nt" 2>&1 || fail "linked cluster: exit $?"
	has "$tmp/nt" "holds no copy of its cluster file" linked
	# --until stops rank 3 before #202 and waits; SIGUSR1 lets it go on
	replay --until 3:#202 "$g/conn_import_fail" >"$tmp/u" 2>"$tmp/ue" &
	pid=$!
	for _ in $(seq 100); do grep -q "kill -USR1" "$tmp/ue" && break; sleep 0.1; done
	has "$tmp/ue" "rank 3 stopped before #202 cuMemImportFromShareableHandle (--until): attach with  gdb -p" until
	wpid=$(grep -o 'kill -USR1 [0-9]*' "$tmp/ue" | awk '{print $3}')
	[ -n "$wpid" ] && kill -USR1 "$wpid"
	wait $pid || fail "--until: exit $?"
	has "$tmp/u" "failure reproduced" until
	;;
inflight)
	# a call in flight when the trace ended must still block at the end of
	# the replay: hang_gen's rank 0 waits in recv; with SEND=1 its peer's
	# recorded bytes are there (a trace that cannot be true), with 0 not
	for snd in 0 1; do
		mkdir -p "$tmp/u$snd"
		"$hang_gen" "$tmp/u$snd" unseen $snd || fail "hang_gen unseen $snd"
		"$ncclrr" replay "$tmp/u$snd" >"$tmp/u$snd.out" 2>&1
		echo "$snd $?" >>"$tmp/rcs"
	done
	grep -qx "0 0" "$tmp/rcs" || fail "still blocked as recorded: want exit 0: $(cat "$tmp/u0.out")"
	grep -qx "1 1" "$tmp/rcs" || fail "data the recording never received: want exit 1: $(cat "$tmp/u1.out")"
	has "$tmp/u1.out" "first divergence: rank 0 #7 recv: blocked when the recording ended, but here data arrived (first byte 61)" inflight
	;;
summary)
	# the recorded failure of a job as mpirun launches it (hang_gen mpi 1):
	# no benign failure (verbs absent, a port probed, NVML NOT_SUPPORTED,
	# EAGAIN, the launcher's connect retried), the failing rank first (not
	# the rank the launcher's stop killed, whose trace stops earlier), and
	# its long chain never cut in an entry: the first entries, "… N more",
	# the decisive ncclCommInitRank and the end
	mkdir -p "$tmp/m"
	"$hang_gen" "$tmp/m" mpi 1 || fail "hang_gen mpi 1"
	"$ncclrr" replay --topo "$topo" --timeout 5 "$tmp/m" >"$tmp/m.out" 2>&1
	sed -n '/^recorded failure:/,/^[a-z]/p' "$tmp/m.out" | sed '1d;$d' >"$tmp/chain"
	grep -E 'ENOSYS|EADDRINUSE|NOT_SUPPORTED|EAGAIN|ENOENT' "$tmp/chain" && fail "a benign failure in the summary"
	head -1 "$tmp/chain" | grep -q '^  rank 2: cuDeviceGetAttribute = CUDA_ERROR_INVALID_VALUE (1) (#6) -> ' ||
		fail "rank 2 is not first: $(cat "$tmp/chain")"
	grep '^  rank 2: ' "$tmp/chain" | grep -qE ' -> … [0-9]+ more -> ncclCommInitRank = ncclInternalError \(3\) \(#20\) -> exit 1$' ||
		fail "rank 2's decisive call or its end is missing: $(cat "$tmp/chain")"
	# every entry whole: "fn = result (#seq...)", "… N more", or the end
	grep '^  rank 2: ' "$tmp/chain" | sed 's/^  rank 2: //; s/ -> /\n/g' |
		grep -vE '^[A-Za-z_0-9]+ = .+ \(#[0-9]+(\.\.#[0-9]+, [0-9]+ times)?\)$|^… [0-9]+ more$|^exit 1$' &&
		fail "an entry is cut"
	grep -qx '  rank 3: killed (no end recorded: SIGKILL?)' "$tmp/chain" || fail "rank 3's end is not listed"
	;;
*) echo "unknown case $case_"; exit 2 ;;
esac
[ $fails -eq 0 ] && echo "PASS: replay $case_" || echo "$fails failure(s)"
[ $fails -eq 0 ]
