#!/usr/bin/env bash
# What a recording of real NCCL holds (suite nccl): `ncclrr record -- ncclrr
# run --topo topo/2node_16gpu.xml -- tp_dp` on NCCL relinked against
# ncclrr's runtime, checked on every one of the 16 ranks:
#   - CUDA runtime, driver, NVML, socket, proxy and NCCL API calls (stats);
#   - runtime calls with the driver calls they made nested inside them;
#   - sockets told apart: bootstrap, proxy and NET/Socket (sock_info);
#   - proxy RPCs with their result codes (ncclProxyResponse = ncclSuccess);
#   - NCCL's own log lines on the rank's timeline (NCCL_DEBUG=INFO);
#   - per-rank metadata (rank, NCCL version, communicators, end);
# and, with NCCL_NET_PLUGIN set to an external plugin (ncclrr's socket
# transport), the ncclNet calls of every rank.
# usage: test_nccl_record.sh NCCLRR SOURCE_ROOT WORKLOAD_DIR NET_PLUGIN [NCCL_HINT]
set -uo pipefail
ncclrr=$(realpath "$1")
root=$2
wl=$(realpath "$3")
plugin=$(realpath "$4")
NCCL_HINT=${5:-}
here=$(dirname "$(realpath "$0")")
. "$here/nccl_common.sh"
nccl_socket_only
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"

record() { # DIR LOG [env...]
	local dir=$1 log=$2; shift 2
	env NCCL_DEBUG=INFO "$@" "$ncclrr" record -q -o "$dir" -- "$ncclrr" run --topo "$root/topo/2node_16gpu.xml" \
		--timeout 240 -- "$wl/tp_dp" >"$log" 2>&1
}

record "$tmp/t" "$tmp/log"
rc=$?
[ $rc -eq 0 ] || { fail "the recorded tp_dp exited $rc"; tail -n 30 "$tmp/log"; }
"$ncclrr" stats "$tmp/t" >"$tmp/stats" || fail "ncclrr stats failed"

# per rank: the calls of each domain, from `ncclrr stats`
domains() { # rank -> "domain calls" lines
	awk -v r="$1" '/^rank / { on = ($2 == r) } on && NF >= 7 && $3 ~ /^[0-9]+$/ { c[$2] += $3 } END { for (d in c) print d, c[d] }' "$tmp/stats"
}

for r in $(seq 0 15); do
	d=$(domains "$r")
	for dom in cuda_runtime cuda_driver nvml socket proxy nccl; do
		n=$(printf '%s\n' "$d" | awk -v k="$dom" '$1 == k { print $2 }')
		[ "${n:-0}" -gt 0 ] || fail "rank $r: no $dom calls in the trace"
	done
	"$ncclrr" dump --rank "$r" "$tmp/t" >"$tmp/dump" || { fail "rank $r: dump failed"; continue; }
	# a runtime call that made driver calls: '<unfinished ...>', then cu* one level deeper
	awk '/ cuda[A-Za-z_0-9]*\(.*<unfinished \.\.\.>$/ { open = 1; next }
	     open && / #[0-9]+   cu[A-Z][A-Za-z_0-9]*\(/ { n++ } { open = 0 } END { exit n > 0 ? 0 : 1 }' "$tmp/dump" ||
		fail "rank $r: no runtime call with a driver call nested inside it"
	for ty in bootstrap proxy net_socket; do
		grep -q "sock_info(.*type=$ty," "$tmp/dump" || fail "rank $r: no socket classified as $ty"
	done
	grep -q 'ncclProxyRequest(.*type=ncclProxyMsgSetup' "$tmp/dump" || fail "rank $r: no proxy Setup request decoded"
	grep -q 'ncclProxyResponse(.*type=ncclProxyMsgConnect.*) = ncclSuccess (0)' "$tmp/dump" ||
		fail "rank $r: no proxy Connect answer with its retcode"
	grep -q 'log\[3\] .* NCCL INFO .*Init COMPLETE' "$tmp/dump" || fail "rank $r: NCCL's 'Init COMPLETE' log line is not in the trace"
	"$ncclrr" dump --meta --api none --rank "$r" "$tmp/t" >"$tmp/meta"
	for k in "rank=$r" "nccl_rank=$r" 'nccl_version=2\.[0-9]+\.[0-9]+' 'nranks=16' \
		 'comm\.0x[0-9a-f]+=rank [0-9]+ of 8 \(split\)' 'comm\.0x[0-9a-f]+=rank [0-9]+ of 2 \(split\)' \
		 'end=exit 0' 'env\.NCCL_HOSTID=node[01]'; do
		grep -qE "^#   $k\$" "$tmp/meta" || fail "rank $r: no '$k' in the metadata"
	done
	[ "$r" = 5 ] && echo "rank 5: $(printf '%s\n' "$d" | sort | tr '\n' ' ')"
done

# an external net plugin: `ncclrr record` wraps it; every rank's NET
# connections go through ncclNet calls
record "$tmp/p" "$tmp/plog" NCCL_NET_PLUGIN="$plugin"
rc=$?
[ $rc -eq 0 ] || { fail "tp_dp with NCCL_NET_PLUGIN exited $rc"; tail -n 30 "$tmp/plog"; }
grep -q 'NET/Plugin: .*libncclrr-net-v[0-9]*\.so' "$tmp/plog" || fail "NCCL did not load ncclrr's recording net plugin"
"$ncclrr" stats "$tmp/p" >"$tmp/stats"
for r in $(seq 0 15); do
	for a in ncclNet_listen ncclNet_connect ncclNet_accept ncclNet_regMr; do
		awk -v r="$r" -v a="$a" '/^rank / { on = ($2 == r) } on && $1 == a && $3 > 0 { ok = 1 } END { exit !ok }' "$tmp/stats" ||
			fail "rank $r: no $a call recorded through the net plugin"
	done
done
echo "net plugin: $(awk '$1 ~ /^ncclNet_/ && $2 == "net" { c += $3 } END { print c + 0 }' "$tmp/stats") ncclNet calls on 16 ranks"

[ $fails -eq 0 ] && echo "PASS nccl_record" || echo "$fails failure(s) in nccl_record"
[ $fails -eq 0 ]
