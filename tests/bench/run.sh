#!/usr/bin/env bash
# Run the benchmarks of a build directory with a private LTTng-UST session
# active (the writer's baseline), then stop everything it started.
# usage: tests/bench/run.sh [BUILD_DIR] [CALLS]
set -euo pipefail
build=${1:-build}
calls=${2:-10000000}
bench=$build/tests/bench/bench_format
[ -x "$bench" ] || { echo "run.sh: $bench not built; run: ninja -C $build" >&2; exit 2; }
home=$(mktemp -d)
export LTTNG_HOME=$home
started=
cleanup() {
	lttng destroy -a >/dev/null 2>&1 || true
	[ -n "$started" ] && kill "$started" 2>/dev/null || true
	rm -rf "$home"
}
trap cleanup EXIT
if command -v lttng-sessiond >/dev/null && command -v lttng >/dev/null; then
	lttng-sessiond --no-kernel >/dev/null 2>&1 &
	started=$!
	for _ in $(seq 50); do lttng list >/dev/null 2>&1 && break; sleep 0.1; done
	lttng create ncclrr-bench --output="$home/trace" >/dev/null
	lttng enable-event -u 'ncclrr_bench:*' >/dev/null
	lttng start >/dev/null
	NCCLRR_BENCH_LTTNG_SESSION=1 "$bench" "$calls"
	lttng stop >/dev/null
	echo "lttng recorded $(du -sh "$home/trace" | cut -f1) of events"
else
	echo "run.sh: lttng-tools not installed: no LTTng baseline" >&2
	"$bench" "$calls"
fi
