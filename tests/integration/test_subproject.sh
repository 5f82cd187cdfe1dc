#!/usr/bin/env bash
# ncclrr as a meson subproject: a project that has it in subprojects/ gets
# libncclrr from dependency('ncclrr') (meson.override_dependency of
# ncclrr_dep) and builds examples/read_trace.c against it, building only
# what that needs; the program reads the golden trace.
# usage: test_subproject.sh SOURCE_ROOT MESON
set -uo pipefail
src=$1 meson=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/p/subprojects"
ln -s "$src" "$tmp/p/subprojects/ncclrr"
cp "$src/examples/read_trace.c" "$tmp/p/"
cat >"$tmp/p/meson.build" <<'M'
project('consumer', 'c')
subproject('ncclrr', default_options : ['nccl=disabled'])
executable('read_trace', 'read_trace.c', dependencies : dependency('ncclrr'))
M
"$meson" setup "$tmp/b" "$tmp/p" >"$tmp/setup.log" 2>&1 || { echo "FAIL: meson setup"; tail -20 "$tmp/setup.log"; exit 1; }
nice ninja -C "$tmp/b" read_trace >"$tmp/ninja.log" 2>&1 || { echo "FAIL: ninja read_trace"; tail -20 "$tmp/ninja.log"; exit 1; }
out=$("$tmp/b/read_trace" "$src/traces/sample_init.nrt" | tail -1)
want="86 calls, 3 errors, 1 in flight, 5 log lines in 1 files (host node0)"
[ "$out" = "$want" ] || { echo "FAIL: read_trace says '$out', want '$want'"; exit 1; }
echo "subproject: ok ($out)"
