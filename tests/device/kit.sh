#!/usr/bin/env bash
# Assemble the kit that tests/device/run.sh and replay.sh take to a machine
# with a real GPU: ncclrr, the tracer and bench_tracer built here, with the
# shared libraries they need beyond glibc (that machine has CUDA but not
# Debian's libzstd, libbabeltrace2, ...); and, under tree/, the parts of
# the build that replay needs where ncclrr looks for them (../tracer,
# ../replayer/fake, ... next to tree/cli/ncclrr): the fake runtime, the
# transports, the conn_setup workload and gen_trace.
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
(cd "$build" && find cli/ncclrr tracer/*.so tracer/plugins/*.so replayer/fake/*.so* replayer/transport/*/*.so \
	tests/workloads/conn_setup tests/bench/gen_trace -maxdepth 0 -type f) | while read -r f; do
	mkdir -p "$kit/tree/$(dirname "$f")"
	cp "$build/$f" "$kit/tree/$f"
done
du -sh "$kit"
