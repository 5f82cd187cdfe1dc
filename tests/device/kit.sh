#!/usr/bin/env bash
# Assemble the kit that tests/device/run.sh takes to a machine with a real
# GPU: ncclrr, the tracer and bench_tracer built here, with the shared
# libraries they need beyond glibc (that machine has CUDA but not Debian's
# libzstd, libbabeltrace2, ...).
# usage: kit.sh BUILD_DIR KIT_DIR      (KIT_DIR: a folder git ignores)
set -euo pipefail
build=$(realpath "$1")
kit=$2
rm -rf "$kit"
mkdir -p "$kit/bin" "$kit/lib"
cp "$build/cli/ncclrr" "$build/tests/bench/bench_tracer" "$kit/bin/"
cp "$build/tracer/libncclrr-trace.so" "$build/tracer/plugins/libncclrr-profiler.so" "$kit/lib/"
for f in "$kit/bin/ncclrr" "$kit/lib/libncclrr-trace.so"; do
	ldd "$f" | awk '$3 ~ /^\// { print $3 }'
done | sort -u | grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' | while read -r l; do
	cp -L "$l" "$kit/lib/"
done
du -sh "$kit"
