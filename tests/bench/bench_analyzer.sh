#!/usr/bin/env bash
# The analyzer's speed and memory on large traces (not a test: prints
# numbers and ratios against their targets).  gen_trace writes a pair of
# 16-rank runs (driver calls, socket send/recv with payloads, coalesced
# polling, a proxy thread) whose uncompressed events total about SIZE, B
# failing one call late on rank 8.  Measured, each best of ROUNDS:
#   `ncclrr diff A B`       wall time, MB/s of uncompressed events, peak RSS
#   `ncclrr stats A; stats B`  the baseline: a plain read of every event
#   `ncclrr hang A`         the same, when this build has `ncclrr hang`
# Targets: peak RSS < 200 MB, >= 200 MB/s.  The files go to a temporary
# directory (TMPDIR) and are deleted.
# usage: bench_analyzer.sh BUILD_DIR [SIZE_MB] [ROUNDS]
set -uo pipefail
build=$(realpath "$1")
size_mb=${2:-1024}
rounds=${3:-3}
ncclrr=$build/cli/ncclrr
gen=$build/tests/bench/gen_trace
for f in "$ncclrr" "$gen"; do
	[ -x "$f" ] || { echo "bench_analyzer: $f is not built; run: ninja -C $build" >&2; exit 2; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ncclrr-bench-analyzer-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
nranks=16

# Uncompressed bytes of the data chunks of every .nrt in a directory.
raw_bytes() {
	python3 - "$1" <<'PY'
import glob, struct, sys
t = 0
for f in glob.glob(sys.argv[1] + '/*.nrt'):
    with open(f, 'rb') as fh:
        fh.seek(64)
        while True:
            h = fh.read(64)
            if len(h) < 64 or h[:4] != b'NRC1':
                break
            hs = struct.unpack_from('<H', h, 6)[0]
            ps, rs = struct.unpack_from('<II', h, 32)
            if h[4] == 3:
                t += rs
            fh.seek(hs - 64 + ps, 1)
print(t)
PY
}

# Calibrate iterations per rank on a small pair, then write the real one.
"$gen" "$tmp/ca" "$tmp/cb" "$nranks" 500 || exit 1
per=$(( $(raw_bytes "$tmp/ca") / (nranks * 500) ))
rm -rf "$tmp/ca" "$tmp/cb"
iters=$(( size_mb * 1024 * 1024 / 2 / (nranks * per) ))
echo "== generating 2 runs x $nranks ranks x $iters iterations ($per bytes per rank-iteration)"
t0=$(date +%s.%N)
"$gen" "$tmp/a" "$tmp/b" "$nranks" "$iters" || exit 1
t1=$(date +%s.%N)
ra=$(raw_bytes "$tmp/a"); rb=$(raw_bytes "$tmp/b")
total=$((ra + rb))
printf '  %.1f MB uncompressed events (A %.1f, B %.1f), %.1f MB on disk, written in %.1f s\n' \
	"$(echo "$total / 1048576" | bc -l)" "$(echo "$ra / 1048576" | bc -l)" "$(echo "$rb / 1048576" | bc -l)" \
	"$(echo "$(du -sb "$tmp" | cut -f1) / 1048576" | bc -l)" "$(echo "$t1 - $t0" | bc -l)"

# measure NAME EXPECTED_RCS BYTES CMD...: best wall time and the peak RSS
# of that run; sets m_wall (s) and m_rss (KiB).
measure() {
	local name=$1 okrc=$2 bytes=$3
	shift 3
	m_wall=; m_rss=
	for ((i = 0; i < rounds; i++)); do
		local s e rc rss
		s=$(date +%s.%N)
		if [ -x /usr/bin/time ]; then
			/usr/bin/time -f %M -o "$tmp/rss" "$@" >"$tmp/out" 2>"$tmp/err"
			rc=$?
			rss=$(tail -1 "$tmp/rss")
		else
			"$@" >"$tmp/out" 2>"$tmp/err"
			rc=$?
			rss=0
		fi
		e=$(date +%s.%N)
		case " $okrc " in *" $rc "*) ;; *)
			echo "bench_analyzer: $name exited $rc" >&2; cat "$tmp/err" >&2; return 1 ;;
		esac
		local w; w=$(echo "$e - $s" | bc -l)
		if [ -z "$m_wall" ] || [ "$(echo "$w < $m_wall" | bc -l)" = 1 ]; then m_wall=$w; m_rss=$rss; fi
	done
	printf '  %-28s %7.2f s  %7.1f MB/s  peak RSS %6.1f MB\n' "$name" "$m_wall" \
		"$(echo "$bytes / 1048576 / $m_wall" | bc -l)" "$(echo "$m_rss / 1024" | bc -l)"
}

calls=0
for d in a b; do
	c=$("$ncclrr" stats "$tmp/$d" | sed -n 's/^TOTAL: \([0-9]*\) calls.*/\1/p')
	calls=$((calls + c))
done
printf '  %d calls (coalesced polls counted one by one), %.0f bytes per call\n' "$calls" "$(echo "$total / $calls" | bc -l)"
echo "== best of $rounds"
measure "stats A; stats B (baseline)" 0 "$total" sh -c "'$ncclrr' stats '$tmp/a' >/dev/null && '$ncclrr' stats '$tmp/b'" || exit 1
bw=$m_wall; brss=$m_rss
measure "diff A B" 1 "$total" "$ncclrr" diff "$tmp/a" "$tmp/b" || exit 1
dw=$m_wall; drss=$m_rss
grep -q '^Earliest across ranks: rank 8 thread 1, call: cuMemImportFromShareableHandle' "$tmp/out" ||
	{ echo "bench_analyzer: diff did not name rank 8's failing call:" >&2; cat "$tmp/out" >&2; exit 1; }
printf '  diff: %.1f MB/s, %.1f M calls/s (target >= 200 MB/s: ratio %.2f), peak RSS %.1f MB (target < 200: ratio %.2f), %.2fx the time of the baseline read\n' \
	"$(echo "$total / 1048576 / $dw" | bc -l)" "$(echo "$calls / 1000000 / $dw" | bc -l)" "$(echo "$total / 1048576 / $dw / 200" | bc -l)" \
	"$(echo "$drss / 1024" | bc -l)" "$(echo "$drss / 1024 / 200" | bc -l)" "$(echo "$dw / $bw" | bc -l)"
if "$ncclrr" hang --help 2>/dev/null | grep -q '^Usage: ncclrr hang .*DIR' && ! "$ncclrr" hang "$tmp/a" 2>&1 | grep -q 'not built'; then
	measure "hang A" "0 1" "$ra" "$ncclrr" hang "$tmp/a" || exit 1
	printf '  hang: %.1f MB/s (target >= 200: ratio %.2f), peak RSS %.1f MB (target < 200: ratio %.2f)\n' \
		"$(echo "$ra / 1048576 / $m_wall" | bc -l)" "$(echo "$ra / 1048576 / $m_wall / 200" | bc -l)" \
		"$(echo "$m_rss / 1024" | bc -l)" "$(echo "$m_rss / 1024 / 200" | bc -l)"
else
	echo "  hang: SKIP (this build has no 'ncclrr hang')"
fi
