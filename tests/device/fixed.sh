#!/usr/bin/env bash
# Where a traced process's fixed cost goes on a real driver (issue 19: the
# H100/H200 hosts showed +1.0-1.5 ms per process, where this VM's page
# fault and system-call counts explain only about 0.1 ms at their cost
# there).  One driver call (bench_tracer one), untraced and traced:
#   1. bench_tracer spawn: 200 processes, trace directory on tmpfs and on
#      disk, two alternating rounds (the file system's share);
#   2. /bin/true with the tracer loaded (load only: no traced call, no
#      file unless the constructor makes one);
#   3. LD_DEBUG=statistics (the dynamic linker), strace -c and -r -T (the
#      system calls and where the time between them goes), perf stat
#      (task clock, page faults, context switches) when the host has them;
#   4. ncclrr stats of one traced process: which calls the real driver
#      made through the tracer (dlsym answers, cuGetProcAddress entries).
# Prints everything and leaves strace's files in OUT_DIR.  No GPU work
# beyond cuInit and one attribute query.
# usage: fixed.sh KIT_DIR OUT_DIR      (KIT_DIR from tests/device/kit.sh)
set -uo pipefail
kit=$(realpath "$1")
out=$(realpath -m "$2")
mkdir -p "$out"
export LD_LIBRARY_PATH=$kit/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
t=$kit/lib/libncclrr-trace.so
b=$kit/bin/bench_tracer
ncclrr=$kit/bin/ncclrr
echo "tools: $(for x in perf strace ltrace; do command -v "$x" >/dev/null && printf '%s ' "$x"; done)"
echo "driver: $(readlink -f "$(ldconfig -p | awk '/libcuda.so.1 / { print $NF; exit }')" 2>/dev/null)"
d=$(mktemp -d /dev/shm/nrrfix-XXXXXX) disk=$(mktemp -d /tmp/nrrfix-XXXXXX)
trap 'rm -rf "$d" "$disk"' EXIT

echo "== 1. 200 processes, one driver call each"
for r in 1 2; do
	echo "round $r untraced:     $("$b" spawn 200)"
	mkdir -p "$d/a"
	echo "round $r traced tmpfs: $("$b" spawn 200 "$t" "$d/a")"
	rm -rf "$d/a"
	echo "round $r traced disk:  $("$b" spawn 200 "$t" "$disk")"
	rm -rf "${disk:?}"/*
done

echo "== 2. /bin/true, 300 runs (us per run)"
per_run() {   # per_run ENV...: microseconds per /bin/true run
	local s e
	s=$(date +%s%N)
	for _ in $(seq 300); do env "$@" /bin/true; done
	e=$(date +%s%N)
	echo $(((e - s) / 300000))
}
mkdir -p "$d/b"
echo "untraced $(per_run) us; traced $(per_run NCCLRR_TRACE_DIR="$d/b" LD_PRELOAD="$t") us" \
	"($(find "$d/b" -type f | wc -l) files); untraced again $(per_run) us"

echo "== 3. one process: dynamic linker, system calls, perf"
mkdir -p "$d/c"
for v in untraced traced; do
	pre=()
	[ "$v" = traced ] && pre=(NCCLRR_TRACE_DIR="$d/c" LD_PRELOAD="$t")
	env "${pre[@]}" LD_DEBUG=statistics "$b" one 2>&1 |
		grep -E "total startup time|time needed for relocation|number of relocations" | sed "s/^/$v /" | head -6
	if command -v strace >/dev/null; then
		env "${pre[@]}" strace -f -c -o "$out/strace_$v.txt" "$b" one >/dev/null
		env "${pre[@]}" strace -f -r -T -o "$out/straceT_$v.txt" "$b" one >/dev/null
		echo "-- strace -c, $v"
		tail -25 "$out/strace_$v.txt"
	fi
	if command -v perf >/dev/null; then
		echo "-- perf stat -r 50, $v"
		env "${pre[@]}" perf stat -r 50 -e task-clock,page-faults,context-switches "$b" one 2>&1 | tail -8
	fi
done

echo "== 4. what one traced process recorded"
"$ncclrr" stats "$d/c" 2>&1 | head -60
