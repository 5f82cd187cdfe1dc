#!/usr/bin/env bash
# `ncclrr dump` against `ncclrr stats` on the same input, two inputs:
#  - the golden real-NCCL trace (traces/nccl/clean, 2.22.3 on 2node_16gpu)
#    given COPIES times (default 4);
#  - a generated 16-rank run (GEN_TRACE, build/tests/bench/gen_trace:
#    driver calls, socket send/recv with payloads, coalesced polling) of
#    GEN_ITERS iterations per rank (default 20000: about 3.2 M lines).
# stats reads and decodes every call and formats nothing, so dump/stats is
# the cost of merging and formatting over reading.  "read+merge" is dump
# selecting nothing (--from 1e9: past the end): every call read, decoded and
# merged across files, nothing formatted, the floor of dump on one thread.
# With two CPUs dump formats on a second thread; "dump, 1 CPU" is dump
# under `taskset -c 0` (the single-thread loop), so the rows show what
# the second thread costs in CPU and gains in wall time.
# With NCCLRR_BASELINE=path/to/an/older/ncclrr its dump runs in the same
# rounds and the ratio to it is printed (before/after a change).
# The "row:" line is issue 19's table row for dump: rate and ratio to stats.
# ROUNDS interleaved rounds (default 5), medians of CPU seconds (user+sys)
# and of wall seconds (this VM's steal and other jobs make wall time
# noisy).  Rates are calls per second of wall time for dump (its two
# threads overlap) and of CPU time for the rest.  Not a test: prints numbers.
# usage: bench_dump.sh NCCLRR SOURCE_ROOT [COPIES] [ROUNDS] [GEN_TRACE] [GEN_ITERS]
set -uo pipefail
ncclrr=$1 root=$2 copies=${3:-4} rounds=${4:-5} gen=${5:-} iters=${6:-20000}
base=${NCCLRR_BASELINE:-}
src=$root/traces/nccl/clean
[ -d "$src" ] || { echo "bench_dump: SKIP: no $src"; exit 77; }
t=$(mktemp -d "${TMPDIR:-/tmp}/ncclrr-bench-dump-XXXXXX")
trap 'rm -rf "$t"' EXIT
cpu() {   # CPU seconds of one run, output discarded; wall seconds appended to FILE.wall
	local f=$1
	shift
	/usr/bin/time -o "$t/time" -f '%U %S %e' "$@" >/dev/null 2>&1
	awk '{print $1 + $2}' "$t/time" >>"$f"
	awk '{print $3}' "$t/time" >>"$f.wall"
}
med() { sort -g "$1" | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

# bench NAME WHAT FILES...: the rows for one input
bench() {
	local name=$1 what=$2
	shift 2
	local lines mb
	lines=$("$ncclrr" dump "$@" | wc -l)
	mb=$(for f in "$@"; do du -sbL "$f"; done | awk '{b += $1} END {printf "%.1f", b / 1e6}')
	rm -f "$t"/dump* "$t"/one* "$t"/stats* "$t"/read* "$t"/base*
	local one=()
	command -v taskset >/dev/null && one=(taskset -c 0)
	for _ in $(seq "$rounds"); do
		cpu "$t/dump" "$ncclrr" dump "$@"
		[ ${#one[@]} = 0 ] || cpu "$t/one" "${one[@]}" "$ncclrr" dump "$@"
		cpu "$t/stats" "$ncclrr" stats "$@"
		cpu "$t/read" "$ncclrr" dump --from 1e9 "$@"
		[ -z "$base" ] || cpu "$t/base" "$base" dump "$@"
	done
	local d dw o=0 ow=0 s sw r b=0 bw=0
	d=$(med "$t/dump") dw=$(med "$t/dump.wall") s=$(med "$t/stats") sw=$(med "$t/stats.wall") r=$(med "$t/read")
	[ ${#one[@]} = 0 ] || { o=$(med "$t/one"); ow=$(med "$t/one.wall"); }
	[ -z "$base" ] || { b=$(med "$t/base"); bw=$(med "$t/base.wall"); }
	echo "bench_dump: $name: $what, $mb MB, $lines lines, $rounds rounds, medians of CPU s (wall s), $(nproc) CPUs, load average $(cut -d' ' -f1 /proc/loadavg)"
	awk -v d="$d" -v dw="$dw" -v o="$o" -v ow="$ow" -v s="$s" -v sw="$sw" -v r="$r" -v b="$b" -v bw="$bw" -v n="$lines" -v mb="$mb" 'BEGIN {
		printf "  dump   %.2f s (wall %.2f s)  %.2f M calls/s of wall, %.2f of CPU  %.0f MB/s of trace (target >= 10 M calls/s)\n", d, dw, n / dw / 1e6, n / d / 1e6, mb / dw
		if (o > 0)
			printf "  dump, 1 CPU  %.2f s (wall %.2f s)  %.2f M calls/s of CPU: two threads take %.2fx the CPU, %.2fx the wall time\n", o, ow, n / o / 1e6, d / o, dw / ow
		printf "  stats  %.2f s (wall %.2f s)  %.2f M calls/s\n", s, sw, n / s / 1e6
		printf "  read+merge %.2f s  %.2f M calls/s (dump formatting nothing)\n", r, n / r / 1e6
		printf "  dump/stats %.2f of wall, %.2f of CPU (target <= 3)\n", dw / sw, d / s
		printf "  row: dump %.2f M calls/s of wall (%.0f MB/s), %.2f of CPU; %.2fx stats of wall, %.2fx of CPU (stats %.2f M calls/s) | target >= 10 M calls/s, <= 3x stats\n", n / dw / 1e6, mb / dw, n / d / 1e6, dw / sw, d / s, n / s / 1e6
		if (b > 0)
			printf "  baseline dump %.2f s (wall %.2f s)  %.2f M calls/s of wall: after/before %.2f of CPU, %.2f of wall\n", b, bw, n / bw / 1e6, d / b, dw / bw
	}'
}

args=()
for _ in $(seq "$copies"); do args+=("$src"); done
bench golden "$copies copies of traces/nccl/clean" "${args[@]}"
if [ -n "$gen" ]; then
	"$gen" "$t/ga" "$t/gb" 16 "$iters" >/dev/null || { echo "bench_dump: $gen failed" >&2; exit 1; }
	bench generated "16 ranks x $iters iterations (gen_trace)" "$t/ga"
fi
