#!/usr/bin/env bash
# The debug build with ASan and UBSan builds (issue 20: at -O0,
# formats/ctf.c's format truncation warnings stopped it). Every target is
# built in a fresh directory; the tests of that build are the README's
# `meson test -C build-asan --setup asan`, not run here.
# usage: build_debug_asan.sh SOURCE_ROOT
set -uo pipefail
src=$(realpath "$1")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
t0=$(date +%s)
if ! meson setup "$tmp/b" "$src" --buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false \
	-Dnccl=disabled >"$tmp/setup.log" 2>&1; then
	tail -30 "$tmp/setup.log"
	echo "FAIL: meson setup of the debug ASan/UBSan build"
	exit 1
fi
if ! ninja -C "$tmp/b" >"$tmp/build.log" 2>&1; then
	grep -E 'error|warning' "$tmp/build.log" | head -30
	tail -5 "$tmp/build.log"
	echo "FAIL: the debug ASan/UBSan build does not build"
	exit 1
fi
echo "PASS: debug ASan/UBSan build of every target in $(($(date +%s) - t0)) s"
