#!/usr/bin/env bash
# Run every benchmark of a build directory and print a summary.
# Builds nothing: run `ninja -C BUILD_DIR` first.
# usage: tests/bench/run.sh [BUILD_DIR] [CALLS]
#   CALLS: calls per writer/reader run (default 10000000)
# bench_writer starts a private LTTng-UST session (and lttng-sessiond when
# none runs) for its baseline and stops what it started; without
# lttng-tools it prints a SKIP line and the ncclrr numbers alone.
# For stable numbers run on an otherwise idle machine.
set -uo pipefail
build=${1:-build}
calls=${2:-10000000}
dir=$build/tests/bench
for b in bench_writer bench_size bench_reader; do
	[ -x "$dir/$b" ] || { echo "run.sh: $dir/$b not built; run: ninja -C $build" >&2; exit 2; }
done
log=$(mktemp "${TMPDIR:-/tmp}/ncclrr-bench-XXXXXX.log")
trap 'rm -f "$log"' EXIT
rc=0
run() {
	echo "+ $*"
	"$@" 2>&1 | tee -a "$log"
	local s=${PIPESTATUS[0]}
	[ "$s" = 0 ] || [ "$s" = 77 ] || { echo "run.sh: $1 failed (exit $s)" >&2; rc=1; }  # 77: skipped, said why
	echo
}
run "$dir/bench_writer" "$calls"
run "$dir/bench_size"
run "$dir/bench_reader" "$calls"
run "$(dirname "$0")/bench_tracer.sh" "$build" "$(dirname "$0")/../.." 2000000 5
run "$(dirname "$0")/bench_analyzer.sh" "$build" 1024 3
run "$(dirname "$0")/bench_dump.sh" "$build/cli/ncclrr" "$(dirname "$0")/../.." 4 5 "$dir/gen_trace"
run "$(dirname "$0")/bench_export.sh" "$build/cli/ncclrr" "$(dirname "$0")/../.." "$build/tests/workloads" 60
run "$(dirname "$0")/bench_replay.sh" "$build/cli/ncclrr" "$(dirname "$0")/../.." "$build/tests/workloads"
run "$(dirname "$0")/bench_nccl.sh" "$build/cli/ncclrr" "$(dirname "$0")/../.." "$build/tests/workloads" "$build/nccl/2.22.3/libnccl.so.2" 3
echo "== summary ($(uname -n), $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ))"
grep -E '^(writer/lttng|  lttng-ust|  ncclrr writer \(per record\)|bytes/event|  cursor|  merge|  native|  lttng  |  own CPU .*default|  2 loops on 2 CPUs .*default|  untraced|  rdtsc |  native overhead net|  trace |  as text|  NCCL_DEBUG|  diff:|  hang:|bench_dump: |  dump  |  dump, 1 CPU |  stats  |  read\+merge|  dump/stats|  row: dump |  baseline dump|bench_export: |== [0-9]* ranks|  replay  |  repeat 5| +[0-9]+ ranks: |bench_replay: (largest|memory bound)|  init traced/untraced|  CPU traced/untraced|  fixed cost|  creating a|  empty library|  init tp_dp / conn_setup|  peak RSS per rank|  trace [0-9.]* MB vs|  [0-9.]* MB uncompressed)' "$log" | sed 's/^ *//'
exit $rc
