#!/bin/sh
# Build every fuzz target with clang + libFuzzer (+ ASan/UBSan) and run
# each for SECONDS (default 60) over a scratch copy of its corpus.
#   tests/fuzz/libfuzzer.sh [SECONDS] [OUTDIR]
# New crashes land in OUTDIR/art_<target>/; add them to corpus/<target>/
# once fixed. (Compiles the format sources directly: the meson static
# library is built with LTO, which clang cannot link.)
set -eu
secs=${1:-60}
out=${2:-/tmp/ncclrr-fuzz}
src=$(cd "$(dirname "$0")/../.." && pwd)
cc=${CC:-clang}
mkdir -p "$out"
# ncclrr_config.h: from any configured build dir, or an empty stand-in
cfg=$(ls -d "$src"/build*/ncclrr_config.h 2>/dev/null | head -1 || true)
[ -n "$cfg" ] && cfgdir=$(dirname "$cfg") || { cfgdir=$out/cfg; mkdir -p "$cfgdir"; : > "$cfgdir/ncclrr_config.h"; }
# the benign-failure table callfmt.c uses (generated from formats/api/)
ben=$cfgdir/formats/nrr_benign_gen.c
if [ ! -f "$ben" ]; then
	python3 "$src/formats/gen/ncclrr_gen.py" --out-dir "$out" --emit benign \
		$(for a in types cuda_driver cuda_runtime nvml verbs socket nccl net proxy; do echo "$src/formats/api/$a.api"; done)
	ben=$out/nrr_benign_gen.c
fi
for t in "$src"/tests/fuzz/fuzz_*.c; do
	n=$(basename "$t" .c); c=${n#fuzz_}
	$cc -std=gnu11 -D_GNU_SOURCE -g -O1 -DNCCLRR_LIBFUZZER \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		-I"$src/formats" -I"$src/analyzer" -I"$src/topo" -I"$cfgdir" "$t" "$src"/topo/nrr_topo.c \
		"$src"/formats/nrt_common.c "$src"/formats/schema.c "$src"/formats/writer.c \
		"$src"/formats/reader.c "$src"/formats/callfmt.c "$src"/formats/rundir.c \
		"$src"/analyzer/runinfo.c "$ben" -lzstd -lpthread -o "$out/$n"
	rm -rf "$out/corpus_$c"; mkdir -p "$out/corpus_$c" "$out/art_$c"
	cp "$src/tests/fuzz/corpus/$c/"* "$out/corpus_$c/"
	"$out/$n" -max_total_time="$secs" -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$out/art_$c/" "$out/corpus_$c" > "$out/$n.log" 2>&1 || echo "$n: CRASH, see $out/$n.log and $out/art_$c/"
	grep -E '^Done|number_of_executed_units' "$out/$n.log" | sed "s/^/$n: /"
done
