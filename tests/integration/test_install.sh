#!/usr/bin/env bash
# The installed ncclrr, as a user gets it: `meson install --destdir` of
# this build into a temporary directory, then
# - examples/read_trace.c built against the INSTALLED libncclrr with
#   `pkg-config --cflags --libs ncclrr` and run on a golden trace: its calls
#   must be those of traces/sample_init.dump and its counts those of
#   traces/sample_init.stats;
# - the library's SONAME and exports (only ncclrr_*);
# - the public libdir holds libncclrr and nothing else (the tracer, the
#   net-plugin wrappers, the fake runtime, the socket net plugin stay in
#   libdir/ncclrr); nothing lands outside the prefix (Babeltrace2 plugin);
# - the installed ncclrr finds its tracer, net wrapper, fake runtime and
#   topologies by name, and so does the build tree's.
# usage: test_install.sh BUILD_ROOT SOURCE_ROOT CC PREFIX BINDIR LIBDIR
set -uo pipefail
build=$1 src=$2 cc=$3 prefix=$4 bindir=$5 libdir=$6
# an ASan build's libraries cannot be loaded by the example or preloaded by
# the installed record (the ASan runtime must come first)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/skip_asan_tracer.sh"
skip_asan_tracer "$build/tracer/libncclrr-trace.so"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset NCCLRR_FAKE_LIBDIR NCCLRR_TOPO_DIR NCCLRR_TRACE_LIBDIR NCCLRR_NET_PLUGIN NCCL_NET_PLUGIN PKG_CONFIG_PATH
unset RANK WORLD_SIZE OMPI_COMM_WORLD_RANK SLURM_PROCID LOCAL_RANK
fails=0 pass=0
check() { if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else echo "FAIL: $1"; fails=$((fails + 1)); fi; }

dest=$tmp/dest
case $bindir in /*) ;; *) bindir=$prefix/$bindir ;; esac
case $libdir in /*) ;; *) libdir=$prefix/$libdir ;; esac
root=$dest$prefix
meson install -C "$build" --destdir "$dest" --no-rebuild --quiet >"$tmp/install.log" 2>&1
st=$?; check "meson install --destdir ($(tail -3 "$tmp/install.log"))" $st

# --- nothing outside the prefix, nothing private in the public libdir
out=$(cd "$dest" && find . -type f | grep -v "^\.$prefix/")
[ -z "$out" ]; check "files installed outside the prefix $prefix: $out" $?
pub=$(cd "$dest$libdir" && find . -maxdepth 1 \( -type f -o -type l \) -printf '%f\n' | sort | tr '\n' ' ')
[ "$pub" = "libncclrr.so libncclrr.so.0 libncclrr.so.0.1.0 " ]; check "public libdir holds libncclrr only (got: $pub)" $?
for f in libncclrr-trace.so libncclrr-profiler.so libncclrr-net-v6.so libncclrr-net-v11.so libnccl-net-ncclrr-socket.so fake/libcuda.so.1; do
	[ -f "$dest$libdir/ncclrr/$f" ]; check "private $f in libdir/ncclrr" $?
done
if [ -f "$build/analyzer/babeltrace-plugin-ncclrr.so" ]; then
	[ -f "$dest$libdir/babeltrace2/plugins/babeltrace-plugin-ncclrr.so" ]
	check "Babeltrace2 plugin under the prefix" $?
	# as the README says: babeltrace2 --plugin-path=PREFIX/LIBDIR/babeltrace2/plugins TRACE
	if command -v babeltrace2 >/dev/null; then
		babeltrace2 --plugin-path="$dest$libdir/babeltrace2/plugins" "$src/traces/sample_init.nrt" >"$tmp/bt2" 2>&1
		rc=$?
		[ $rc -eq 0 ] && [ "$(grep -c ' ncclrr_socket:connect_leave: .*ret = -1, err = 111' "$tmp/bt2")" -eq 1 ]
		st=$?; check "babeltrace2 reads a trace through the installed plugin: exit $rc, $(grep -m2 -v '^\[' "$tmp/bt2")" $st
	fi
fi
[ -f "$root/include/ncclrr/ncclrr.h" ]; check "header in include/ncclrr" $?

# --- the library: SONAME and exports
readelf -d "$dest$libdir/libncclrr.so.0" | grep -q 'SONAME.*\[libncclrr\.so\.0\]'; check "SONAME libncclrr.so.0" $?
syms=$(nm -D --defined-only "$dest$libdir/libncclrr.so.0" | awk '$2 ~ /^[TDBRVW]$/ {print $3}')
[ -n "$syms" ] && ! grep -v '^ncclrr_.*@@NCCLRR_0$' <<<"$syms" | grep -v '^NCCLRR_0$' | grep -q .
st=$?; check "exports only ncclrr_* in NCCLRR_0: $(grep -v '^ncclrr_' <<<"$syms" | grep -v NCCLRR_0 | head -5 | tr '\n' ' ')" $st

# --- an example reader built against the installed library
pc=$dest$libdir/pkgconfig
[ -f "$pc/ncclrr.pc" ]; check "ncclrr.pc installed" $?
flags=$(PKG_CONFIG_PATH=$pc pkg-config --define-variable=prefix="$root" --cflags --libs ncclrr 2>"$tmp/pc.err")
st=$?; check "pkg-config ncclrr ($(cat "$tmp/pc.err"))" $st
# shellcheck disable=SC2086 # flags are words
$cc "$src/examples/read_trace.c" -o "$tmp/read_trace" $flags 2>"$tmp/cc.err"
st=$?; check "example builds with pkg-config's flags ($(head -5 "$tmp/cc.err"))" $st
readelf -d "$tmp/read_trace" | grep -q 'NEEDED.*\[libncclrr\.so\.0\]'; check "example needs libncclrr.so.0" $?
LD_LIBRARY_PATH=$dest$libdir "$tmp/read_trace" "$src/traces/sample_init.nrt" >"$tmp/calls" 2>"$tmp/calls.err"
st=$?; check "example runs ($(head -3 "$tmp/calls.err"))" $st
# the counts of `ncclrr stats` (its golden output; its calls are the
# returned ones, coalesced repeats included, plus the log lines)
want=$(sed -n '1s/.*: \([0-9]*\) calls, \([0-9]*\) errors,.*/\1 \2/p' "$src/traces/sample_init.stats")
got=$(sed -n '$s/^\([0-9]*\) calls, \([0-9]*\) errors, [0-9]* in flight, \([0-9]*\) log lines in 1 files (host node0)$/\1 \3 \2/p' "$tmp/calls")
read -r gc gl ge <<<"$got"
[ -n "$want" ] && [ -n "$got" ] && [ "$((gc + gl)) $ge" = "$want" ]
st=$?; check "counts as ncclrr stats ($want; got: $(tail -1 "$tmp/calls"))" $st
# the calls of `ncclrr dump` (its golden output) less time, who and duration
grep -v ' log\[\| <unfinished \.\.\.>$' "$src/traces/sample_init.dump" |
	sed -E 's/^[0-9.]+ [^ ]+ #([0-9]+) +/0:#\1 /; s/ <in flight at end of trace, .* so far>$//;
		s/ [0-9.]+(ns|us|ms|s)( \[\+[0-9]+ identical, [0-9.]+(ns|us|ms|s)\])?$//' | sort >"$tmp/want"
sed '$d' "$tmp/calls" | sort >"$tmp/got"
n=$(wc -l <"$tmp/want")
[ "$n" -gt 25 ] && diff "$tmp/want" "$tmp/got" >"$tmp/diff"
st=$?; check "the example's $(wc -l <"$tmp/got") calls are dump's $n: $(head -6 "$tmp/diff")" $st
# a file that is no trace: an error naming it, exit 1
echo "not a trace" >"$tmp/bad.nrt"
LD_LIBRARY_PATH=$dest$libdir "$tmp/read_trace" "$tmp/bad.nrt" >/dev/null 2>"$tmp/bad.err"
rc=$?
[ $rc -eq 1 ] && grep -q "file=$tmp/bad.nrt offset=0" "$tmp/bad.err"; st=$?; check "bad file: exit $rc, $(cat "$tmp/bad.err")" $st

# --- the installed ncclrr: topologies by name, from a directory without topo/
ncclrr=$dest$bindir/ncclrr
cd "$tmp" || exit 1
for t in 1node_8gpu.xml 1node_8gpu; do
	"$ncclrr" run --topo "$t" -np 2 -- sh -c 'echo "topo=$NCCLRR_TOPO"' >"$tmp/run.out" 2>"$tmp/run.err"
	rc=$?
	[ $rc -eq 0 ] && grep -q "^\[1\] topo=$dest$prefix/.*/ncclrr/topo/1node_8gpu.xml\$" "$tmp/run.out"
	st=$?; check "installed run --topo $t: exit $rc, $(head -2 "$tmp/run.out" "$tmp/run.err")" $st
done
"$ncclrr" run --topo no_such_cluster -np 1 -- true >/dev/null 2>"$tmp/run.err"
rc=$?
[ $rc -eq 2 ] && grep -q "no_such_cluster.xml.*looked in .*/ncclrr/topo.*NCCLRR_TOPO_DIR" "$tmp/run.err"
st=$?; check "unknown cluster name: exit $rc, $(cat "$tmp/run.err")" $st
# the build tree's ncclrr finds the source's topologies (its copy) by name
"$build/cli/ncclrr" run --topo 2node_16gpu -np 2 -- sh -c 'echo "topo=$NCCLRR_TOPO"' >"$tmp/run.out" 2>"$tmp/run.err"
rc=$?
[ $rc -eq 0 ] && grep -q "^\[1\] topo=$(realpath "$build")/topo/2node_16gpu.xml\$" "$tmp/run.out"
st=$?; check "build tree run --topo 2node_16gpu: exit $rc, $(head -2 "$tmp/run.out" "$tmp/run.err")" $st

# --- the installed ncclrr record: its tracer and its net-plugin wrapper
NCCL_NET_PLUGIN=$dest$libdir/ncclrr/libnccl-net-ncclrr-socket.so \
	"$ncclrr" record -o "$tmp/rec" -- bash -c 'echo "net=$NCCL_NET_PLUGIN"; echo "pre=$LD_PRELOAD"
		exec 3<>/dev/tcp/127.0.0.1/1' >"$tmp/rec.out" 2>"$tmp/rec.err"
rc=$?
[ $rc -eq 1 ] && grep -q "^net=$dest$libdir/ncclrr/libncclrr-net-v[0-9]*\.so\$" "$tmp/rec.out" &&
	grep -q "^pre=$dest$libdir/ncclrr/libncclrr-trace\.so" "$tmp/rec.out"
st=$?; check "installed record: exit $rc, $(cat "$tmp/rec.out" "$tmp/rec.err" | head -4)" $st
set -- "$tmp"/rec/*.nrt
[ -f "$1" ] && LD_LIBRARY_PATH=$dest$libdir "$tmp/read_trace" "$@" >"$tmp/rec.calls" 2>&1 &&
	grep -q "^0:#[0-9]* connect(.*addr=127.0.0.1:1, .* = -1 ECONNREFUSED" "$tmp/rec.calls" &&
	grep -q "^[0-9]* calls, [1-9][0-9]* errors, [0-9]* in flight, [0-9]* log lines in $# files" "$tmp/rec.calls"
st=$?; check "the recorded run reads back through the installed library: $(tail -2 "$tmp/rec.calls" 2>/dev/null)" $st

echo "install: $pass passed, $fails failed"
[ "$fails" -eq 0 ]
