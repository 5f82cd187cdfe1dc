#!/usr/bin/env bash
# Speed, memory and output size of `ncclrr export` against `ncclrr dump`
# (the reader's own cost) on many processes: one recorded 16-rank
# conn_setup run given COPIES times (default 60: 1020 processes, ~210 k
# calls).  Not a test: prints numbers.  Needs GNU time (/usr/bin/time).
# usage: bench_export.sh NCCLRR SOURCE_ROOT WORKLOAD_DIR [COPIES]
set -uo pipefail
ncclrr=$(realpath "$1") root=$2 wl=$(realpath "$3") copies=${4:-60}
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
NCCLRR_FAULT=cuMemImportFromShareableHandle:rank=3:nth=1:CUDA_ERROR_INVALID_VALUE \
	"$ncclrr" record -o "$t/run" -q -- "$ncclrr" run --topo "$root/topo/2node_16gpu.xml" --timeout 60 \
	-- "$wl/conn_setup" --no-nccl >/dev/null 2>&1
args=()
for i in $(seq "$copies"); do args+=("$t/run"); done
calls=$("$ncclrr" dump "${args[@]}" | wc -l)
echo "bench_export: $copies copies of a 16-rank run, $(ls "$t"/run/*.nrt | wc -l) files each, $calls dump lines"
/usr/bin/time -f "bench_export: dump          %e s, max RSS %M KB" "$ncclrr" dump "${args[@]}" >/dev/null
/usr/bin/time -f "bench_export: export chrome %e s, max RSS %M KB" "$ncclrr" export --chrome "$t/o.json" "${args[@]}"
/usr/bin/time -f "bench_export: export html   %e s, max RSS %M KB" "$ncclrr" export --html "$t/o.html" "${args[@]}"
/usr/bin/time -f "bench_export: export perfetto %e s, max RSS %M KB" "$ncclrr" export --perfetto "$t/o.pb" "${args[@]}"
/usr/bin/time -f "bench_export: export chrome --all %e s, max RSS %M KB" "$ncclrr" export --all --chrome "$t/a.json" "${args[@]}"
sj=$(stat -c %s "$t/o.json") sp=$(stat -c %s "$t/o.pb") sa=$(stat -c %s "$t/a.json")
echo "bench_export: chrome JSON $sj bytes (--all: $sa), HTML $(stat -c %s "$t/o.html") bytes, perfetto $sp bytes:" \
	"JSON/perfetto $(awk -v a="$sj" -v b="$sp" 'BEGIN { printf "%.1f", a / b }')x"
