#!/usr/bin/env bash
# Real NCCL's init on the fake cluster against the conn_setup stand-in, and
# what tracing it costs.  Not a test: prints numbers.  Skips (77) without a
# libnccl.so.2 relinked for the fake cluster (scripts/nccl.sh setup).
#
# usage: bench_nccl.sh NCCLRR SOURCE_ROOT WORKLOAD_DIR [NCCL_HINT] [ROUNDS]
#
# Each round runs, interleaved, on topo/2node_16gpu.xml (16 ranks, 2 hosts),
# every job with NCCL_DEBUG=INFO and each rank's stdout line-buffered
# (stdbuf -oL: NCCL's log lines then arrive when written, not at exit):
#   tp_dp          untraced: time from launch to the last "Init COMPLETE"
#                  (48: world, TP and DP communicators), and to the end
#   tp_dp traced   the same under `ncclrr record`, plus the bytes of its
#                  traces (*.nrt, the launcher's included) and of the same
#                  run's NCCL_DEBUG=INFO output (the whole log, and NCCL's
#                  own lines alone), and bytes per call (the calls the
#                  program made, as `ncclrr stats` counts them)
#   conn_setup     untraced, launch to end (it has no Init COMPLETE: its
#                  one-rank NCCL communicator fails under ncclrr run)
#   tp_dp, conn_setup once more, each rank wrapped by `bench_job.py rss`:
#                  peak RSS per rank (kept apart: the wrapper is a Python
#                  process per rank, which would weigh on the timings)
# and prints medians over the rounds, and the ratios.
set -uo pipefail
ncclrr=$(realpath "$1")
root=$(realpath "$2")
wl=$(realpath "$3")
NCCL_HINT=${4:-}
rounds=${5:-${NCCLRR_BENCH_ROUNDS:-3}}
. "$root/tests/integration/nccl_common.sh"
here=$(dirname "$(realpath "$0")")
bj=$here/bench_job.py
topo=$root/topo/2node_16gpu.xml
to=${NCCLRR_BENCH_TIMEOUT:-290}
# Debian's python3 first: a version manager's shim in PATH costs each of
# the 16 wrapped ranks a shell start
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3) || { echo "bench_nccl: SKIP: needs python3 (Debian: python3)"; exit 77; }
command -v stdbuf >/dev/null || { echo "bench_nccl: SKIP: needs stdbuf (Debian: coreutils)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export NCCL_DEBUG=INFO
unset NCCLRR_FAULT
echo "bench_nccl: NCCL $NCCL, topo/2node_16gpu.xml, 16 ranks on $(nproc) cores, $rounds rounds," \
	"load average $(cut -d' ' -f1-3 /proc/loadavg) at start"

run=("$ncclrr" run --topo "$topo" --timeout "$to" --)
# job NAME CMD...: run it, append "wall last matches cpu rc" to $tmp/NAME
job() {
	local name=$1; shift
	local out
	out=$("$py" "$bj" run "$tmp/$name.log" ' - Init COMPLETE' -- "$@")
	echo "  $name: $out"
	[ -n "$out" ] || { echo "bench_nccl: bench_job.py failed on $name"; exit 1; }
	# shellcheck disable=SC2086
	set -- $out
	local rc=${5#rc=}
	[ "$rc" = 0 ] || { echo "bench_nccl: $name exited $rc; last lines:"; tail -n 15 "$tmp/$name.log"; exit 1; }
	echo "${1#wall=} ${2#last=} ${3#matches=} ${4#cpu=}" >>"$tmp/$name.res"
}

for i in $(seq 1 "$rounds"); do
	echo "round $i:"
	job tp_dp "${run[@]}" stdbuf -oL "$wl/tp_dp"
	rm -rf "$tmp/rec"
	job traced "$ncclrr" record -o "$tmp/rec" -q -- "${run[@]}" stdbuf -oL "$wl/tp_dp"
	nrt=$(cat "$tmp"/rec/*.nrt | wc -c)
	logb=$(wc -c <"$tmp/traced.log")
	ncclb=$(grep -E '^\[[0-9]+\] [^ ]+ \[[0-9]+\] .*NCCL (INFO|WARN)' "$tmp/traced.log" | wc -c)
	# calls the program made, coalesced repeats included (stats' "N calls" per process)
	calls=$("$ncclrr" stats "$tmp/rec" 2>/dev/null | awk '/^rank / { for (i = 2; i <= NF; i++) if ($i == "calls,") s += $(i - 1) } END { print s + 0 }')
	echo "$nrt $logb $ncclb $calls" >>"$tmp/bytes.res"
	echo "  traced: $(ls "$tmp"/rec/*.nrt | wc -l) traces, $nrt bytes, $calls calls; log $logb bytes, NCCL's lines $ncclb bytes"
	job conn_setup "${run[@]}" stdbuf -oL "$wl/conn_setup"
	job tp_dp_rss "${run[@]}" "$py" "$bj" rss "$tmp/rss.tp_dp" -- stdbuf -oL "$wl/tp_dp"
	job conn_setup_rss "${run[@]}" "$py" "$bj" rss "$tmp/rss.conn_setup" -- stdbuf -oL "$wl/conn_setup"
done

"$py" - "$tmp" <<'EOF'
import statistics as st, sys
d = sys.argv[1]
def res(name):
    return [list(map(float, l.split())) for l in open(f'{d}/{name}.res')]
med = st.median
tp, tr, cs = res('tp_dp'), res('traced'), res('conn_setup')
by = res('bytes')
rss = {k: [int(x) for x in open(f'{d}/rss.{k}')] for k in ('tp_dp', 'conn_setup')}
tp_init, tr_init, cs_wall = med(r[1] for r in tp), med(r[1] for r in tr), med(r[0] for r in cs)
print(f'== medians of {len(tp)} rounds')
print(f'  tp_dp untraced: last Init COMPLETE {tp_init:.2f} s ({int(tp[0][2])} lines), end {med(r[0] for r in tp):.2f} s, CPU {med(r[3] for r in tp):.1f} s')
print(f'  tp_dp traced:   last Init COMPLETE {tr_init:.2f} s, end {med(r[0] for r in tr):.2f} s, CPU {med(r[3] for r in tr):.1f} s')
print(f'  conn_setup:     end {cs_wall:.2f} s, CPU {med(r[3] for r in cs):.1f} s')
ratios = [b[1] / a[1] for a, b in zip(tp, tr)]
print(f'  init traced/untraced: {tr_init / tp_init:.2f} (per round: {", ".join("%.2f" % r for r in ratios)})')
print(f'  CPU traced/untraced (all ranks, launch to end): {med(r[3] for r in tr) / med(r[3] for r in tp):.3f}'
      f' (per round: {", ".join("%.3f" % (b[3] / a[3]) for a, b in zip(tp, tr))})')
print(f'  init tp_dp / conn_setup: {tp_init / cs_wall:.1f}x')
for k in ('tp_dp', 'conn_setup'):
    v = rss[k]
    print(f'  peak RSS per rank, {k}: median {med(v) / 1024:.1f} MiB, max {max(v) / 1024:.1f} MiB ({len(v)} values: ranks x rounds)')
print(f'  peak RSS per rank tp_dp / conn_setup: {med(rss["tp_dp"]) / med(rss["conn_setup"]):.2f}')
nrt, logb, ncclb = (med(b[i] for b in by) for i in range(3))
bpc = [b[0] / b[3] for b in by if b[3]]
if bpc:
    print(f'  trace bytes per call (schema and metadata included): {med(bpc):.3f} (per round: {", ".join("%.3f" % x for x in bpc)};'
          f' {med(b[3] for b in by) / 1e6:.1f} M calls) (target <= 6: ratio {med(bpc) / 6:.4f})')
print(f'  trace {nrt / 1e6:.2f} MB vs NCCL_DEBUG=INFO log {logb / 1e6:.2f} MB (NCCL lines {ncclb / 1e6:.2f} MB) of the same run:'
      f' trace/log {nrt / logb:.2f}, trace/NCCL lines {nrt / ncclb:.2f}')
EOF
