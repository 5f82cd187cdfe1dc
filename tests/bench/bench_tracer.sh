#!/usr/bin/env bash
# The tracer's cost, measured in one run (not a test: prints numbers and
# ratios against their targets).
#  1. one cheap driver call (cuDeviceGetAttribute on the fake driver, through
#     a cuGetProcAddress entry point): untraced, native backend, LTTng backend
#     (a private session, started here and stopped); overhead per call;
#  1a. a coalesced poll (recv = EAGAIN), untraced and traced;
#  1b. the cost of one rdtsc and one clock_gettime, and the overhead net
#     of the one clock read of an instant call;
#  1c. the fixed cost per process: a program that makes one driver call,
#     200 processes untraced, with an empty library preloaded (the floor)
#     and traced, medians of 5 alternating rounds: wall, CPU, page faults;
#     traced into TMPDIR (/tmp: here ext4, whose file creation costs 0.1-0.3
#     ms by itself) and into /dev/shm (tmpfs: the tracer's own cost); and,
#     in the same rounds, what creating a file of that trace's size costs on
#     each;
#  2. the conn_setup job on 2node_16gpu (16 ranks: driver discovery, cuMem,
#     bootstrap, proxy ring, NCCL's own start-up as far as it runs here)
#     with and without `ncclrr record`, alternating, best of ROUNDS;
#  3. the trace's bytes against NCCL_DEBUG=INFO output and against the
#     same calls printed as text (`ncclrr dump`).
# usage: bench_tracer.sh BUILD_DIR SOURCE_ROOT [CALLS] [ROUNDS]
set -uo pipefail
build=$(realpath "$1")
root=$(realpath "$2")
calls=${3:-2000000}
rounds=${4:-5}
ncclrr=$build/cli/ncclrr
fake=$build/replayer/fake
tlib=$build/tracer/libncclrr-trace.so
ltlib=$build/tracer/lttng/libncclrr-trace-lttng.so
bench=$build/tests/bench/bench_tracer
wl=$build/tests/workloads/conn_setup
for f in "$ncclrr" "$fake/libcuda.so.1" "$tlib" "$bench" "$wl"; do
	[ -e "$f" ] || { echo "bench_tracer: $f is not built; run: ninja -C $build" >&2; exit 2; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ncclrr-bench-tracer-XXXXXX")
started=
shm=
cleanup() {
	[ -n "$started" ] && pkill -x lttng-sessiond
	rm -rf "$tmp" ${shm:+"$shm"}
}
trap cleanup EXIT
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }

echo "== per call: cuDeviceGetAttribute on the fake driver, $calls calls, best of 3"
base=$(LD_LIBRARY_PATH=$fake "$bench" "$calls" 3) || exit 1
mkdir -p "$tmp/native"
native=$(NCCLRR_TRACE_DIR=$tmp/native LD_PRELOAD=$tlib LD_LIBRARY_PATH=$fake "$bench" "$calls" 3) || exit 1
b=$(echo "$base" | field wall_ns)
n=$(echo "$native" | field wall_ns)
bc_=$(echo "$base" | field cpu_ns)
nc_=$(echo "$native" | field cpu_ns)
nb=$(du -sb "$tmp/native" | cut -f1)
printf '  untraced          %6.1f ns/call\n' "$b"
printf '  native            %6.1f ns/call  overhead %5.1f ns (target <= 40: ratio %.2f), %.2f trace bytes/call\n' \
	"$n" "$(echo "$n - $b" | bc -l)" "$(echo "($n - $b) / 40" | bc -l)" "$(echo "$nb / ($calls * 3)" | bc -l)"
printf '                    (CPU of the calling thread: %.1f vs %.1f ns, overhead %.1f ns)\n' \
	"$nc_" "$bc_" "$(echo "$nc_ - $bc_" | bc -l)"
if [ -e "$ltlib" ] && command -v lttng >/dev/null; then
	if ! lttng list >/dev/null 2>&1; then
		lttng-sessiond --daemonize --no-kernel >/dev/null 2>&1 && started=1
	fi
	s=ncclrr-bench-$$
	lttng create "$s" --output="$tmp/lttng" >/dev/null &&
		lttng enable-channel -u --subbuf-size=4M --num-subbuf=8 --blocking-timeout=inf c >/dev/null &&
		lttng enable-event -u -c c 'ncclrr_*' >/dev/null &&
		lttng add-context -u -c c -t vpid -t vtid >/dev/null && lttng start >/dev/null
	lt=$(LTTNG_UST_ALLOW_BLOCKING=1 NCCLRR_TRACE_DIR=$tmp/lttng NCCLRR_BACKEND=lttng LD_PRELOAD=$tlib:$ltlib \
		LD_LIBRARY_PATH=$fake "$bench" "$calls" 3)
	lttng destroy "$s" >/dev/null
	l=$(echo "$lt" | field wall_ns)
	printf '  lttng             %6.1f ns/call  overhead %5.1f ns (native/lttng overhead ratio %.2f)\n' \
		"$l" "$(echo "$l - $b" | bc -l)" "$(echo "($n - $b) / ($l - $b)" | bc -l)"
else
	echo "  lttng             SKIP (lttng-tools or the LTTng provider not built)"
fi

echo "== a coalesced poll: recv() = EAGAIN on a socket, NCCL's commonest call (its proxies and bootstrap poll so), best of 3"
pu=$("$bench" poll 2000000 | field ns)
rm -rf "$tmp/poll"; mkdir -p "$tmp/poll"
pt=$(NCCLRR_TRACE_DIR=$tmp/poll LD_PRELOAD=$tlib "$bench" poll 2000000 | field ns)
printf '  untraced %.1f ns/poll, traced %.1f ns/poll: overhead %.1f ns (%.2fx)\n' "$pu" "$pt" "$(echo "$pt - $pu" | bc -l)" "$(echo "$pt / $pu" | bc -l)"

echo "== clock reads (the native backend reads the TSC once per instant call, twice per other call)"
clk=$("$bench" clock)
echo "  rdtsc $(echo "$clk" | field rdtsc_ns) ns, clock_gettime $(echo "$clk" | field clock_gettime_ns) ns"
printf '  native overhead net of one rdtsc: %.1f ns/call (target <= 25)\n' "$(echo "$n - $b - $(echo "$clk" | field rdtsc_ns)" | bc -l)"

echo "== fixed cost per process: one driver call (cuDriverGetVersion), 200 processes, median of 5 alternating rounds"
echo "   (per process: wall, CPU of all its threads, page faults; 'empty': an empty library preloaded, the floor"
echo "   of preloading anything)"
empty=$build/tests/bench/libnrr-bench-empty.so
[ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] && shm=$(mktemp -d /dev/shm/ncclrr-bench-tracer-XXXXXX)
for i in 1 2 3 4 5; do
	LD_LIBRARY_PATH=$fake "$bench" spawn 200 >>"$tmp/fix_u"
	[ -e "$empty" ] && LD_LIBRARY_PATH=$fake "$bench" spawn 200 "$empty" "$tmp/none" >>"$tmp/fix_e"
	rm -rf "$tmp/one"; mkdir -p "$tmp/one"
	LD_LIBRARY_PATH=$fake "$bench" spawn 200 "$tlib" "$tmp/one" >>"$tmp/fix_t"
	size=$(ls -S "$tmp"/one/*.nrt | head -1 | xargs stat -c %s)
	rm -rf "$tmp/create"; mkdir -p "$tmp/create"
	"$bench" create 200 "$tmp/create" "$size" >>"$tmp/fix_c"
	if [ -n "$shm" ]; then
		rm -rf "$shm/one" "$shm/create"; mkdir -p "$shm/one" "$shm/create"
		LD_LIBRARY_PATH=$fake "$bench" spawn 200 "$tlib" "$shm/one" >>"$tmp/fix_s"
		"$bench" create 200 "$shm/create" "$size" >>"$tmp/fix_sc"
	fi
done
med() { field "$2" <"$1" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
for k in median_ms cpu_ms faults; do
	eval "u_$k=\$(med \"\$tmp/fix_u\" $k) t_$k=\$(med \"\$tmp/fix_t\" $k)"
	[ -s "$tmp/fix_e" ] && eval "e_$k=\$(med \"\$tmp/fix_e\" $k)"
done
printf '  untraced %.3f ms (CPU %.3f ms, %d faults)  traced %.3f ms (CPU %.3f ms, %d faults)\n' \
	"$u_median_ms" "$u_cpu_ms" "$u_faults" "$t_median_ms" "$t_cpu_ms" "$t_faults"
printf '  fixed cost %.3f ms/process (target < 0.5: ratio %.2f), CPU %+.3f ms, %+d page faults; one-call trace %d bytes\n' \
	"$(echo "$t_median_ms - $u_median_ms" | bc -l)" "$(echo "($t_median_ms - $u_median_ms) / 0.5" | bc -l)" \
	"$(echo "$t_cpu_ms - $u_cpu_ms" | bc -l)" "$((t_faults - u_faults))" "$size"
printf '  creating a %d-byte file (open, write, close) in %s (%s): %.3f ms\n' "$size" "$tmp" "$(stat -f -c %T "$tmp")" \
	"$(med "$tmp/fix_c" median_ms)"
if [ -n "$shm" ]; then
	s_median_ms=$(med "$tmp/fix_s" median_ms) s_cpu_ms=$(med "$tmp/fix_s" cpu_ms)
	printf '  fixed cost, traces on tmpfs (%s): %.3f ms/process (target < 0.5: ratio %.2f), CPU %+.3f ms; creating the file there %.3f ms\n' \
		"$shm" "$(echo "$s_median_ms - $u_median_ms" | bc -l)" "$(echo "($s_median_ms - $u_median_ms) / 0.5" | bc -l)" \
		"$(echo "$s_cpu_ms - $u_cpu_ms" | bc -l)" "$(med "$tmp/fix_sc" median_ms)"
fi
[ -s "$tmp/fix_e" ] && printf '  empty library preloaded: %+.3f ms, CPU %+.3f ms, %+d page faults (the floor of preloading a library)\n' \
	"$(echo "$e_median_ms - $u_median_ms" | bc -l)" "$(echo "$e_cpu_ms - $u_cpu_ms" | bc -l)" "$((e_faults - u_faults))"
# what the dynamic linker does at load (its own counters: one run each)
ldstat() { env "$@" LD_DEBUG=statistics LD_LIBRARY_PATH="$fake" "$bench" one 2>&1 >/dev/null |
	awk '/number of relocations:/ && !n {n = $NF} /time needed for relocation:/ && !r {r = $(NF-2)} END {print n + 0, r + 0}'; }
read -r lu_n lu_c < <(ldstat)
rm -rf "$tmp/one"; mkdir -p "$tmp/one"
read -r lt_n lt_c < <(ldstat LD_PRELOAD="$tlib" NCCLRR_TRACE_DIR="$tmp/one")
printf '  dynamic linker at load (LD_DEBUG=statistics, one run): %d relocations traced, %d untraced; relocation %d k cycles, %d k untraced\n' \
	"$lt_n" "$lu_n" "$((lt_c / 1000))" "$((lu_c / 1000))"

echo "== job: conn_setup on 2node_16gpu (16 ranks on $(nproc) cores), best of $rounds, alternating"
job() { "$ncclrr" run --topo "$root/topo/2node_16gpu.xml" --timeout 120 -- "$wl" >/dev/null 2>&1; }
bu=; bt=
for i in $(seq 1 "$rounds"); do
	t0=$(date +%s%N); job; t1=$(date +%s%N)
	rm -rf "$tmp/rec"
	"$ncclrr" record -q -o "$tmp/rec" -- "$ncclrr" run --topo "$root/topo/2node_16gpu.xml" --timeout 120 -- "$wl" >/dev/null 2>&1
	t2=$(date +%s%N)
	u=$(( (t1 - t0) / 1000 )); t=$(( (t2 - t1) / 1000 ))
	[ -z "$bu" ] || [ "$u" -lt "$bu" ] && bu=$u
	[ -z "$bt" ] || [ "$t" -lt "$bt" ] && bt=$t
done
printf '  untraced %8.1f ms   recorded %8.1f ms   overhead %+.1f%% (target < 3%%)\n' \
	"$(echo "$bu / 1000" | bc -l)" "$(echo "$bt / 1000" | bc -l)" "$(echo "($bt - $bu) * 100 / $bu" | bc -l)"

echo "== bytes: the recorded job against text"
tb=$(du -cb "$tmp"/rec/*.nrt | tail -1 | cut -f1)
NCCL_DEBUG=INFO "$ncclrr" run --topo "$root/topo/2node_16gpu.xml" --timeout 120 -- "$wl" >"$tmp/info.log" 2>&1
ib=$(grep -c 'NCCL INFO' "$tmp/info.log")
ibytes=$(grep 'NCCL INFO\|NCCL WARN' "$tmp/info.log" | wc -c)
db=$("$ncclrr" dump "$tmp/rec" 2>/dev/null | wc -c)
nc=$("$ncclrr" stats "$tmp/rec" | awk '/^TOTAL/ { print $2 }')
printf '  trace %d bytes for %d calls (%.2f bytes/call)\n' "$tb" "$nc" "$(echo "$tb / $nc" | bc -l)"
printf '  as text (ncclrr dump) %d bytes: the trace is %.1fx smaller\n' "$db" "$(echo "$db / $tb" | bc -l)"
printf '  NCCL_DEBUG=INFO output %d bytes (%d INFO lines; NCCL stops at its runtime start-up here): ratio %.2f\n' \
	"$ibytes" "$ib" "$(echo "$ibytes / $tb" | bc -l)"
