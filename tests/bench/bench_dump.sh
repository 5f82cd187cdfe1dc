#!/usr/bin/env bash
# `ncclrr dump` against `ncclrr stats` on the same input: the golden real-
# NCCL trace (traces/nccl/clean, 2.22.3 on 2node_16gpu) given COPIES times
# (default 4).  stats reads and decodes every call and formats nothing, so
# dump/stats is the cost of merging and formatting over reading.  ROUNDS
# interleaved rounds (default 5), CPU seconds (user+sys; this VM's steal
# makes wall time noisy), medians.  Not a test: prints numbers.
# usage: bench_dump.sh NCCLRR SOURCE_ROOT [COPIES] [ROUNDS]
set -uo pipefail
ncclrr=$1 root=$2 copies=${3:-4} rounds=${4:-5}
src=$root/traces/nccl/clean
[ -d "$src" ] || { echo "bench_dump: SKIP: no $src"; exit 77; }
args=()
for _ in $(seq "$copies"); do args+=("$src"); done
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
lines=$("$ncclrr" dump "${args[@]}" | wc -l)
mb=$(du -sbL "$src" | awk -v c="$copies" '{printf "%.1f", $1 * c / 1e6}')
cpu() {   # CPU seconds of one run, output discarded
	/usr/bin/time -o "$t/time" -f '%U %S' "$@" >/dev/null 2>&1
	awk '{print $1 + $2}' "$t/time"
}
for _ in $(seq "$rounds"); do
	cpu "$ncclrr" dump "${args[@]}" >>"$t/dump"
	cpu "$ncclrr" stats "${args[@]}" >>"$t/stats"
done
med() { sort -g "$1" | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
d=$(med "$t/dump") s=$(med "$t/stats")
echo "bench_dump: $copies copies of traces/nccl/clean, $mb MB, $lines lines, $rounds rounds, medians of CPU s"
awk -v d="$d" -v s="$s" -v n="$lines" -v mb="$mb" 'BEGIN {
	printf "  dump   %.2f s  %.2f M calls/s  %.0f MB/s of trace\n", d, n / d / 1e6, mb / d
	printf "  stats  %.2f s  %.2f M calls/s\n", s, n / s / 1e6
	printf "  dump/stats %.2f (target <= 3)\n", d / s
}'
