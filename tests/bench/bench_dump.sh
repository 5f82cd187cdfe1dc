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
# With NCCLRR_BASELINE=path/to/an/older/ncclrr its dump runs in the same
# rounds and the ratio to it is printed (before/after a change).
# The "row:" line is issue 19's table row for dump: rate and ratio to stats.
# ROUNDS interleaved rounds (default 5), CPU seconds (user+sys; this VM's
# steal makes wall time noisy), medians.  Not a test: prints numbers.
# usage: bench_dump.sh NCCLRR SOURCE_ROOT [COPIES] [ROUNDS] [GEN_TRACE] [GEN_ITERS]
set -uo pipefail
ncclrr=$1 root=$2 copies=${3:-4} rounds=${4:-5} gen=${5:-} iters=${6:-20000}
base=${NCCLRR_BASELINE:-}
src=$root/traces/nccl/clean
[ -d "$src" ] || { echo "bench_dump: SKIP: no $src"; exit 77; }
t=$(mktemp -d "${TMPDIR:-/tmp}/ncclrr-bench-dump-XXXXXX")
trap 'rm -rf "$t"' EXIT
cpu() {   # CPU seconds of one run, output discarded
	/usr/bin/time -o "$t/time" -f '%U %S' "$@" >/dev/null 2>&1
	awk '{print $1 + $2}' "$t/time"
}
med() { sort -g "$1" | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

# bench NAME WHAT FILES...: the rows for one input
bench() {
	local name=$1 what=$2
	shift 2
	local lines mb
	lines=$("$ncclrr" dump "$@" | wc -l)
	mb=$(for f in "$@"; do du -sbL "$f"; done | awk '{b += $1} END {printf "%.1f", b / 1e6}')
	rm -f "$t/dump" "$t/stats" "$t/read" "$t/base"
	for _ in $(seq "$rounds"); do
		cpu "$ncclrr" dump "$@" >>"$t/dump"
		cpu "$ncclrr" stats "$@" >>"$t/stats"
		cpu "$ncclrr" dump --from 1e9 "$@" >>"$t/read"
		[ -z "$base" ] || cpu "$base" dump "$@" >>"$t/base"
	done
	local d s r b=0
	d=$(med "$t/dump") s=$(med "$t/stats") r=$(med "$t/read")
	[ -z "$base" ] || b=$(med "$t/base")
	echo "bench_dump: $name: $what, $mb MB, $lines lines, $rounds rounds, medians of CPU s"
	awk -v d="$d" -v s="$s" -v r="$r" -v b="$b" -v n="$lines" -v mb="$mb" 'BEGIN {
		printf "  dump   %.2f s  %.2f M calls/s  %.0f MB/s of trace (target >= 10 M calls/s)\n", d, n / d / 1e6, mb / d
		printf "  stats  %.2f s  %.2f M calls/s\n", s, n / s / 1e6
		printf "  read+merge %.2f s  %.2f M calls/s (dump formatting nothing)\n", r, n / r / 1e6
		printf "  dump/stats %.2f (target <= 3)\n", d / s
		printf "  row: dump %.2f M calls/s (%.0f MB/s), %.2fx stats (%.2f M calls/s) | target >= 10 M calls/s, <= 3x stats\n", n / d / 1e6, mb / d, d / s, n / s / 1e6
		if (b > 0)
			printf "  baseline dump %.2f s  %.2f M calls/s: after/before %.2f\n", b, n / b / 1e6, d / b
	}'
}

args=()
for _ in $(seq "$copies"); do args+=("$src"); done
bench golden "$copies copies of traces/nccl/clean" "${args[@]}"
if [ -n "$gen" ]; then
	"$gen" "$t/ga" "$t/gb" 16 "$iters" >/dev/null || { echo "bench_dump: $gen failed" >&2; exit 1; }
	bench generated "16 ranks x $iters iterations (gen_trace)" "$t/ga"
fi
