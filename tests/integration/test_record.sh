#!/usr/bin/env bash
# `ncclrr record` on real components: the fake CUDA driver and NVML, real
# libibverbs, real sockets and, where found, the real NCCL.
# usage: test_record.sh CASE NCCLRR SOURCE_ROOT WORKLOAD_DIR FORKER
# CASE: counts | same | fault | proxy | kill | killearly | sigterm | ring | watchdog | fork | dlerror | secrets | nodir | diskfull | net | lttng | oldnccl | nvmllegacy
set -uo pipefail
case_=$1
ncclrr=$(realpath "$2")
root=$3
wl=$(realpath "$4")
forker=$(realpath "$5")
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
topo=$root/topo/2node_16gpu.xml
unset NCCL_DEBUG NCCLRR_FAULT CONN_SETUP_STALL
. "$(dirname "${BASH_SOURCE[0]}")/../lib/skip_asan_tracer.sh"
skip_asan_tracer "$(dirname "$forker")/../libncclrr-trace.so"

# record DIR LOG [record options] -- the 16-rank conn_setup job
record() {
	local dir=$1 log=$2; shift 2
	"$ncclrr" record -q -o "$dir" "$@" -- "$ncclrr" run --topo "$topo" --timeout 60 -- "$wl/conn_setup" >"$log" 2>&1
}

# the file of rank R in DIR
file_of_rank() {
	local f
	for f in "$2"/*.nrt; do
		"$ncclrr" dump --meta --api none "$f" 2>/dev/null | grep -cx "#   rank=$1" >/dev/null && { echo "$f"; return 0; }
	done
	return 1
}

# calls of API (exact name) for RANK in DIR, from ncclrr stats
calls() { "$ncclrr" stats --rank "$1" "$3" | awk -v a="$2" '$1 == a { print $3; exit }'; }

# normalize what differs between two runs of the same job
norm() { sed -E 's/ncclrr-fake\[[0-9]+\]/ncclrr-fake[PID]/; s/ in [0-9.]+ s$/ in T s/' "$1" | sort; }

case $case_ in
counts)
	# every rank's trace has the runtime, driver and NVML calls the fake runtime served, API by API
	mkdir -p "$tmp/stats"
	NCCL_DEBUG=WARN NCCLRR_FAKE_STATS="$tmp/stats/%r" record "$tmp/t" "$tmp/log"
	rc=$?
	[ $rc -eq 0 ] || { fail "the job exited $rc"; tail -20 "$tmp/log"; }
	n=$(ls "$tmp"/t/*.nrt | wc -l)
	[ "$n" -ge 16 ] || fail "$n trace files, want 16 ranks (+ the launcher)"
	for r in $(seq 0 15); do
		[ -s "$tmp/stats/$r" ] || { fail "rank $r: no fake runtime statistics"; continue; }
		# the trace's per-API counts, variants folded into base names as the fake counts them
		"$ncclrr" stats --rank "$r" "$tmp/t" | awk '$2 == "cuda_driver" || $2 == "cuda_runtime" || $2 == "nvml" || $2 == "verbs" { n = $1; sub(/_v[0-9]+$/, "", n); c[n] += $3 } END { for (k in c) print k, c[k] }' | sort >"$tmp/traced.$r"
		sort "$tmp/stats/$r" >"$tmp/served.$r"
		if ! diff "$tmp/served.$r" "$tmp/traced.$r" >"$tmp/diff.$r"; then
			fail "rank $r: traced driver/NVML calls differ from those the fake runtime served (< served, > traced):"
			head -20 "$tmp/diff.$r"
		fi
	done
	echo "rank 5: $(wc -l <"$tmp/served.5") driver/NVML APIs, $(awk '{ s += $2 } END { print s }' "$tmp/served.5") calls, traced alike"
	# the bootstrap and proxy connections are told apart; the ranks' own calls are there
	f=$(file_of_rank 5 "$tmp/t") || fail "no trace with rank=5 in its metadata"
	"$ncclrr" dump "$f" >"$tmp/dump5"
	grep -q 'sock_info(.*role=connect, type=bootstrap' "$tmp/dump5" || fail "rank 5: no bootstrap socket"
	grep -q 'sock_info(.*role=connect, type=proxy' "$tmp/dump5" || fail "rank 5: no outgoing proxy socket"
	grep -q 'sock_info(.*role=accept, type=proxy' "$tmp/dump5" || fail "rank 5: no incoming proxy socket"
	grep -q 'recvmsg(' "$tmp/dump5" || fail "rank 5: no recvmsg (the cuMem fd)"
	# the fd goes to an abstract UNIX name, as NCCL's does: the destination is recorded
	grep -q 'sendmsg(.*fds=\[[0-9]*\], name=unix:@"ncclrr-conn-setup-' "$tmp/dump5" || fail "rank 5: no sendmsg of an fd to @ncclrr-conn-setup-…"
	grep -q 'cuMemImportFromShareableHandle(.*) = CUDA_SUCCESS' "$tmp/dump5" || fail "rank 5: no import"
	grep -q 'ibv_get_device_list(' "$tmp/dump5" || fail "rank 5: no verbs call"
	grep -q 'cuGetProcAddress_v2(symbol="cuNoSuchFunction".*= CUDA_ERROR_NOT_FOUND' "$tmp/dump5" || fail "rank 5: no failed entry point lookup"
	if grep -q 'nccl .* found' "$tmp/log"; then
		for a in ncclGetVersion ncclGetUniqueId ncclCommInitRank; do
			grep -q "$a(" "$tmp/dump5" || fail "rank 5: no $a"
		done
		# NCCL's own WARN lines, as LOG events on the rank's timeline
		grep -c 'log\[2\] .* NCCL WARN ' "$tmp/dump5" >/dev/null || fail "rank 5: NCCL's WARN lines are not in the trace"
		# NCCL reached the driver through its runtime's cudaGetDriverEntryPoint
		# (ncclrr's libcudart), each lookup a cuGetProcAddress nested in it: recorded
		n_ep=$(calls 5 cudaGetDriverEntryPoint "$tmp/t")
		[ "${n_ep:-0}" -gt 20 ] || fail "rank 5: ${n_ep:-no} cudaGetDriverEntryPoint calls (NCCL resolves dozens of driver functions through ncclrr's libcudart; the NCCL loaded: $(grep -m1 'rank 5: nccl' "$tmp/log"); one not relinked for the fake cluster, e.g. /usr/local/cuda's with its static runtime, makes none: ncclrr run takes the relinked one from BUILD/nccl/)"
		n=$(calls 5 cuGetProcAddress_v2 "$tmp/t")
		[ "${n:-0}" -ge "${n_ep:-1}" ] || fail "rank 5: $n cuGetProcAddress_v2 calls (each entry point lookup makes one)"
	fi
	"$ncclrr" dump --meta --api none "$f" >"$tmp/meta5"
	for k in host pid ppid argv rank env.NCCLRR_RANK env.NCCL_COMM_ID clock.synced boot_id; do
		grep -q "^#   $k=" "$tmp/meta5" || fail "rank 5: no $k in the metadata"
	done
	echo "rank 5: $(grep -c . "$tmp/dump5") dump lines; sockets: $(grep -o 'sock_info(.*type=[a-z_]*' "$tmp/dump5" | grep -o 'type=[a-z_]*' | sort | uniq -c | tr -s ' \n' ' ')"
	;;
same)
	# the job's exit status and output are the same with and without the tracer, also when it fails
	for fault in "" "cuMemImportFromShareableHandle:rank=3:nth=1:CUDA_ERROR_INVALID_VALUE"; do
		export NCCLRR_FAULT=$fault
		"$ncclrr" run --topo "$topo" --timeout 60 -- "$wl/conn_setup" >"$tmp/plain" 2>&1
		rc0=$?
		record "$tmp/t$rc0" "$tmp/traced"
		rc1=$?
		[ $rc0 -eq $rc1 ] || fail "fault '${fault}': exit $rc0 untraced, $rc1 traced"
		if ! diff <(norm "$tmp/plain") <(norm "$tmp/traced") >"$tmp/d"; then
			fail "fault '${fault}': output differs (< untraced, > traced):"
			head -20 "$tmp/d"
		fi
		echo "fault '${fault}': exit $rc0 both, $(wc -l <"$tmp/plain") output lines alike"
	done
	;;
fault)
	# the fault switch's failing call is in the trace, in stats' errors and in dump --errors
	NCCLRR_FAULT=cuMemImportFromShareableHandle:rank=3:nth=1:CUDA_ERROR_INVALID_VALUE record "$tmp/t" "$tmp/log"
	rc=$?
	[ $rc -ne 0 ] || fail "the job exited 0 with a failing import on rank 3"
	line=$("$ncclrr" stats --rank 3 "$tmp/t" | awk '$1 == "cuMemImportFromShareableHandle"')
	[ "$(echo "$line" | awk '{print $4}')" = 1 ] || fail "stats --rank 3: import errors: '$line'"
	"$ncclrr" dump --errors --rank 3 "$tmp/t" >"$tmp/err3"
	grep -q 'cuMemImportFromShareableHandle(.*) = CUDA_ERROR_INVALID_VALUE (1)' "$tmp/err3" || { fail "dump --errors --rank 3 lacks the import"; cat "$tmp/err3"; }
	"$ncclrr" dump --errors --api 'cuMem*' "$tmp/t" >"$tmp/errall"
	n=$(grep -c CUDA_ERROR_INVALID_VALUE "$tmp/errall")
	[ "$n" -eq 1 ] || fail "$n failing cuMem calls across ranks, want 1 (rank 3's)"
	echo "rank 3: $(grep cuMemImport "$tmp/err3")"
	;;
kill | ring | watchdog)
	# a job that hangs (rank 3 never checks in): rank 0 waits in accept, the others in recv
	opts=()
	[ "$case_" = ring ] && opts=(--mode ring:4M)
	[ "$case_" = watchdog ] && opts=(--mode ring:4M --watchdog 1)
	CONN_SETUP_STALL=3 "$ncclrr" record -q -o "$tmp/t" "${opts[@]}" -- "$ncclrr" run --topo "$topo" --timeout 30 -- "$wl/conn_setup" >"$tmp/log" 2>&1 &
	job=$!
	# wait for 16 ranks' processes (the stalled one prints its pid)
	for i in $(seq 1 200); do grep -q 'pid [0-9]* stalls' "$tmp/log" && break; sleep 0.1; done
	sleep 2
	pids=$(pgrep -x conn_setup | sort -n)
	[ -n "$pids" ] || fail "no ranks running"
	if [ "$case_" = kill ]; then
		# full mode: SIGKILL one waiting rank; its file is readable up to its last second
		sleep 1.5
		for p in $pids; do
			f=$(ls "$tmp"/t/*-"$p".nrt 2>/dev/null) || continue
			"$ncclrr" dump --meta --api none "$f" 2>/dev/null | grep -cx '#   rank=1' >/dev/null && { victim=$p; vf=$f; }
		done
		[ -n "${victim:-}" ] || fail "no trace of rank 1 while it runs"
		kill -KILL "$victim"
	elif [ "$case_" = ring ]; then
		# ring mode: nothing on disk but the header until SIGUSR1
		victim=$(echo "$pids" | head -n 1)
		vf=$(ls "$tmp"/t/*-"$victim".nrt)
		n=$("$ncclrr" dump "$vf" 2>/dev/null | grep -c '#')
		[ "$n" -eq 0 ] || fail "ring mode: $n calls on disk before SIGUSR1"
		kill -USR1 "$victim"
		sleep 1
	else
		# the watchdog wrote every waiting rank's ring by now (1 s without a returning call)
		sleep 1
	fi
	if [ "$case_" != watchdog ]; then
		"$ncclrr" dump "$vf" >"$tmp/dump" 2>"$tmp/dumperr"
		rc=$?
		[ $rc -eq 0 ] || { fail "$case_: dump of $vf exited $rc"; cat "$tmp/dumperr"; }
		grep -q 'cuInit(' "$tmp/dump" || fail "$case_: the trace lacks the calls before the hang"
		grep -q 'in flight at end of trace' "$tmp/dump" || fail "$case_: no call in flight in the trace of a waiting rank"
		echo "$case_: $(grep -c '#' "$tmp/dump") calls readable; $(grep 'in flight' "$tmp/dump" | head -1)"
		[ "$case_" = kill ] && { grep -q 'dropped\|rebuilt\|index' "$tmp/dumperr" && echo "dump said: $(head -1 "$tmp/dumperr")"; }
	else
		n=0
		for f in "$tmp"/t/*.nrt; do
			"$ncclrr" dump "$f" 2>/dev/null | grep -c 'in flight at end of trace' >/dev/null && n=$((n + 1))
		done
		[ "$n" -ge 15 ] || fail "watchdog: $n ranks' traces show their waiting call, want 15"
		grep -q 'no traced call returned for' "$tmp/log" || fail "watchdog: no message"
		echo "watchdog: $n traces written by the watchdog; $(grep -m1 'no traced call returned' "$tmp/log")"
	fi
	kill -TERM $pids 2>/dev/null
	wait $job
	;;
killearly)
	# full mode: a process whose only call came early (one socket(), then
	# sleep) SIGKILLed from outside 3 s later keeps that call, and hang
	# says when its trace stops without a negative or absurd time
	# (Debian's python3 itself: not a wrapper script that runs more processes)
	py=/usr/bin/python3
	[ -x $py ] || py=python3
	"$ncclrr" record -q -o "$tmp/t" -- $py -S -c 'import os, socket, time
s = socket.socket()
print("ready", os.getpid(), flush=True)
time.sleep(60)' >"$tmp/log" 2>&1 &
	job=$!
	for i in $(seq 1 100); do grep -q ready "$tmp/log" && break; sleep 0.1; done
	sleep 3
	p=$(sed -n 's/^ready //p' "$tmp/log")
	f=$(ls "$tmp"/t/*-"$p".nrt)
	[ -n "$p" ] && kill -KILL "$p"
	wait $job
	"$ncclrr" dump "$f" >"$tmp/dump" 2>"$tmp/err"; rc=$?
	{ [ $rc -eq 0 ] || [ $rc -eq 3 ]; } || { fail "dump of the killed trace exited $rc"; cat "$tmp/err"; }
	grep -q ' socket(.*) = [0-9]' "$tmp/dump" || { fail "the socket() call made 3 s before SIGKILL is lost"; cat "$tmp/dump" "$tmp/err"; }
	"$ncclrr" hang "$tmp/t" >"$tmp/hang" 2>&1
	grep -q 'trace stops at [0-9]*\.[0-9]* s, no end recorded' "$tmp/hang" || fail "hang does not say when the killed trace stops: $(cat "$tmp/hang")"
	grep -E -e '-[0-9]+\.[0-9]+ s|[0-9]{5,}\.[0-9]+ s' "$tmp/hang" && fail "hang prints a negative or absurd time"
	echo "killearly: $(grep ' socket(' "$tmp/dump" | head -1)"
	echo "killearly: $(grep 'trace stops' "$tmp/hang" | head -1)"
	;;
sigterm)
	# SIGTERM at a random moment to a program whose threads come and go
	# (Debian's python3; each new thread's first call names it in the
	# trace's metadata): every trace says it ended by SIGTERM.  It did not
	# in 1 to 3 of 40 runs while a dump already under way answered the signal
	# handler's request, or the handler ran on a thread that held the
	# writer's lock and waited 5 s for a dump that needed it; and in 1 of
	# 100 on a loaded machine when the compression thread wrote another
	# tail as the process died, cut short (nrr_writer_dump_last).
	py=/usr/bin/python3
	[ -x $py ] || py=python3
	runs=${SIGTERM_RUNS:-40} lost=0
	for i in $(seq 1 "$runs"); do
		d=$tmp/s$i
		"$ncclrr" record -q -o "$d" -- $py -S -c 'import os, socket, threading
def f():
    for _ in range(20):
        socket.socket().close()
print("ready", os.getpid(), flush=True)
while True:
    ts = [threading.Thread(target=f) for _ in range(4)]
    [t.start() for t in ts]
    [t.join() for t in ts]' >"$d.log" 2>&1 &
		job=$!
		for k in $(seq 1 100); do grep -qs ready "$d.log" && break; sleep 0.05; done
		sleep "0.$((RANDOM % 30))"
		p=$(sed -n 's/^ready //p' "$d.log")
		[ -n "$p" ] && kill -TERM "$p"
		wait $job
		end=$("$ncclrr" dump --meta --api none "$d" 2>/dev/null | sed -n 's/^#   end=//p')
		[ "$end" = "signal SIGTERM" ] || { lost=$((lost + 1)); echo "run $i: end='$end'"; }
	done
	[ $lost -eq 0 ] || fail "$lost of $runs traces do not say they ended by SIGTERM"
	echo "sigterm: $((runs - lost)) of $runs traces end with 'signal SIGTERM'"
	;;
fork)
	# a forked child and an exec'd image get their own files; no trace fd leaks; errno kept
	(cd "$tmp" && "$ncclrr" record -q -o t -- "$forker" >out 2>&1)
	rc=$?
	cat "$tmp/out"
	[ $rc -eq 0 ] || fail "forker exited $rc"
	n=$(ls "$tmp"/t/*.nrt | wc -l)
	[ "$n" -eq 3 ] || { fail "$n trace files, want 3 (parent, child, child after exec)"; ls "$tmp/t"; }
	ls "$tmp"/t/*-[0-9]*-1.nrt >/dev/null 2>&1 || fail "no <host>-<pid>-1.nrt for the exec'd image"
	for f in "$tmp"/t/*.nrt; do
		"$ncclrr" dump "$f" >"$tmp/d" 2>"$tmp/e" || { fail "$f does not read"; cat "$tmp/e"; }
		[ -s "$tmp/e" ] && { fail "$f: dump warned (not completed at exit/exec?)"; cat "$tmp/e"; }
		echo "$(basename "$f"): $(grep -c 'socketpair(' "$tmp/d") socketpair, $(awk '{print $2}' "$tmp/d" | sort -u | wc -l) threads"
	done
	# the parent's 200 thread round trips and its own, all there
	p=$(ls "$tmp"/t/*.nrt | while read -r f; do echo "$("$ncclrr" dump "$f" | grep -c 'socketpair(') $f"; done | sort -n | tail -1)
	[ "${p%% *}" -eq 204 ] || fail "parent: ${p%% *} socketpair calls, want 204"
	# thread names (metadata thread.TID=NAME): set before the first call,
	# set by another thread after it (written when the trace completes),
	# the program's own for the others
	f=${p#* }
	"$ncclrr" dump --meta --api none "$f" >"$tmp/meta"
	grep -q '^#   thread\.[0-9]*=NCCL Service  3$' "$tmp/meta" || fail "no thread.TID=NCCL Service  3: $(grep thread "$tmp/meta")"
	grep -q '^#   thread\.[0-9]*=NCCL Progress 3$' "$tmp/meta" || fail "no thread.TID=NCCL Progress 3: $(grep thread "$tmp/meta")"
	main=$(sed -n 's/^#   pid=//p' "$tmp/meta")
	grep -q "^#   thread\.$main=forker$" "$tmp/meta" || fail "the main thread is not named forker: $(grep thread "$tmp/meta")"
	;;
dlerror)
	# the program's dlerror() after a failed dlopen / dlsym is what it is
	# untraced, although traced calls (each the first of its kind: the
	# tracer looks the real function up then) came in between
	dlerr=$(dirname "$forker")/dlerr
	"$dlerr" >"$tmp/plain" 2>&1 || fail "dlerr exited $? untraced"
	(cd "$tmp" && "$ncclrr" record -q -o t -- "$dlerr" >traced 2>&1) || fail "dlerr exited $? traced"
	grep -q 'cannot open shared object file' "$tmp/plain" || { fail "untraced: no dlopen error"; cat "$tmp/plain"; }
	diff "$tmp/plain" "$tmp/traced" || fail "dlerror() differs traced (+) from untraced (-)"
	"$ncclrr" dump "$tmp"/t/*.nrt >"$tmp/d" 2>&1
	for fn in socket getsockname close; do
		grep -q " $fn(" "$tmp/d" || fail "$fn was not recorded: the traced run proves nothing"
	done
	echo "dlerror: $(grep -c . "$tmp/plain") lines equal traced and untraced; $(head -1 "$tmp/plain")"
	;;
secrets)
	# secrets in the environment and on the command line stay out of the
	# trace, redacted=... says what was redacted, the files are 0600 (0640
	# with --group-read); what is no secret is kept as it was
	run_forker() {
		NCCL_PROXY_DSN=admin:s3cret@db MASTER_ADDR=user:pw0rd@host HF_TOKEN=hf_AbCdEfGh12345678 NCCL_AUTHX=1 \
			NCCL_SOCKET_IFNAME=eth0 "$ncclrr" record -q -o "$tmp/$1" "${@:2}" -- \
			env TRAIN_PASSWORD=hunter2 "$forker" --password=hunter2 --token tok3n >/dev/null 2>&1
	}
	run_forker t || fail "forker exited $?"
	cat "$tmp"/t/*.nrt >"$tmp/raw"
	"$ncclrr" dump --meta --api none "$tmp/t" >"$tmp/meta" 2>&1
	for s in s3cret pw0rd hf_AbCdEfGh12345678 hunter2 tok3n; do
		grep -q -- "$s" "$tmp/meta" && fail "'$s' is in the metadata: $(grep -- "$s" "$tmp/meta" | head -2)"
	done
	grep -q '^#   env.NCCL_PROXY_DSN=admin:<redacted>@db$' "$tmp/meta" || fail "NCCL_PROXY_DSN not redacted to its user and host"
	grep -q '^#   env.NCCL_AUTHX=1$' "$tmp/meta" || fail "NCCL_AUTHX=1 redacted or lost"
	grep -q '^#   env.NCCL_SOCKET_IFNAME=eth0$' "$tmp/meta" || fail "NCCL_SOCKET_IFNAME lost"
	grep -q -- '--password=<redacted> --token <redacted>' "$tmp/meta" || fail "argv not redacted: $(grep argv= "$tmp/meta" | head -1)"
	grep -q '^#   redacted=argv,.*env.NCCL_PROXY_DSN' "$tmp/meta" || fail "no redacted= line naming argv and the variables: $(grep redacted= "$tmp/meta" | head -1)"
	perms=$(stat -c %a "$tmp"/t/*.nrt | sort -u | tr '\n' ' ')
	[ "$perms" = "600 " ] || fail "trace files are $perms, not 600"
	run_forker g --group-read || fail "forker exited $? (--group-read)"
	perms=$(stat -c %a "$tmp"/g/*.nrt | sort -u | tr '\n' ' ')
	[ "$perms" = "640 " ] || [ "$(umask)" != 0022 ] || fail "--group-read: trace files are $perms, not 640"
	echo "secrets: $(grep -m1 '^#   redacted=' "$tmp/meta"); files $(stat -c %a "$tmp"/t/*.nrt | sort -u | tr '\n' ' ')"
	;;
nodir)
	# a trace directory that cannot be written: one message, the program runs as without tracing
	"$forker" >"$tmp/plain" 2>&1
	rc0=$?
	NCCLRR_TRACE_DIR=/nonexistent/ncclrr LD_PRELOAD=$(dirname "$forker")/../libncclrr-trace.so "$forker" >"$tmp/traced" 2>&1
	rc1=$?
	[ $rc0 -eq $rc1 ] || fail "exit $rc0 untraced, $rc1 with a bad trace directory"
	grep -q '^ncclrr: Cannot create trace file=/nonexistent/ncclrr/' "$tmp/traced" || fail "no message naming the file"
	n=$(grep -c '^ncclrr: ' "$tmp/traced")
	# one per process (parent, child, exec'd image)
	[ "$n" -le 3 ] || fail "$n messages, want one per process"
	diff <(grep -v '^ncclrr: ' "$tmp/traced") "$tmp/plain" >/dev/null || fail "output differs from the untraced run"
	echo "bad directory: exit $rc1 as untraced; $(head -1 "$tmp/traced")"
	;;
diskfull)
	# a full disk: one message, the program runs on untraced
	mkdir -p "$tmp/small"
	if ! mount -t tmpfs -o size=128k tmpfs "$tmp/small" 2>/dev/null; then
		echo "SKIP: cannot mount a small tmpfs here (needs root)"
		exit 77
	fi
	trap 'umount "$tmp/small" 2>/dev/null; rm -rf "$tmp"' EXIT
	"$ncclrr" record -q -o "$tmp/small" --payload 4096 -- "$ncclrr" run --topo "$topo" --timeout 60 -- "$wl/conn_setup" >"$tmp/log" 2>&1
	rc=$?
	[ $rc -eq 0 ] || { fail "the job exited $rc on a full disk"; tail "$tmp/log"; }
	n=$(grep -cE "ncclrr: Cannot (write trace: |create trace )file=.*: No space left on device; tracing of this process stops, the program continues" "$tmp/log")
	[ "$n" -ge 1 ] || { fail "no 'Cannot write trace' message"; grep ncclrr "$tmp/log" | head; }
	# once per process
	dup=$(grep -oE "ncclrr: Cannot [a-z ]*trace[a-z ]*: ?file=[^:]*" "$tmp/log" | sed 's/.*file=//' | sort | uniq -d)
	[ -z "$dup" ] || fail "said more than once for: $dup"
	echo "full disk: job exit $rc; $n processes said: $(grep -m1 'Cannot write trace' "$tmp/log")"
	;;
proxy)
	# NCCL's proxy RPCs decoded from the proxy sockets: requests, answers, and a failing one's retcode
	NCCLRR_FAULT=cuMemExportToShareableHandle:rank=4:nth=2:CUDA_ERROR_OUT_OF_MEMORY record "$tmp/t" "$tmp/log"
	rc=$?
	[ $rc -ne 0 ] || fail "the job exited 0 with rank 4's proxy failing"
	"$ncclrr" dump --api 'ncclProxy*' "$tmp/t" >"$tmp/d"
	n=$(grep -c 'ncclProxyRequest(.*type=ncclProxyMsgGetFd' "$tmp/d")
	[ "$n" -ge 28 ] || fail "$n GetFd requests decoded, want 14 same-host asks, each seen by both sides"
	n=$(grep -c 'ncclProxyRequest(.*type=ncclProxyMsgConnect' "$tmp/d")
	[ "$n" -ge 4 ] || fail "$n Connect requests decoded, want 2 cross-host asks, each seen by both sides"
	n=$(grep -c 'ncclProxyResponse(.*) = ncclSuccess' "$tmp/d")
	[ "$n" -ge 30 ] || fail "$n successful answers decoded"
	"$ncclrr" dump --errors --api 'ncclProxy*' "$tmp/t" >"$tmp/e"
	n=$(grep -c 'ncclProxyResponse(.*type=ncclProxyMsgGetFd, opId=0x2003.*= ncclInternalError (3)' "$tmp/e")
	[ "$n" -eq 2 ] || { fail "$n failed GetFd answers to rank 3, want 2 (rank 4's proxy, rank 3)"; cat "$tmp/e"; }
	f=$(file_of_rank 3 "$tmp/t")
	"$ncclrr" dump --errors "$f" | grep -c 'ncclProxyResponse(.*= ncclInternalError (3)' >/dev/null || fail "rank 3's own trace lacks the failed answer"
	echo "proxy: $(grep -c ncclProxyRequest "$tmp/d") requests, $(grep -c ncclProxyResponse "$tmp/d") answers; $(head -1 "$tmp/e")"
	;;
nvmllegacy)
	# the un-suffixed nvmlDeviceGetNvLinkRemotePciInfo fills NVML's legacy
	# 52-byte nvmlPciInfo: traced, only those 52 bytes are read (the next
	# page is PROT_NONE) and nothing past them is written; the program
	# prints what it prints untraced
	prog=$(dirname "$forker")/nvml_legacy
	[ -n "${NCCLRR_FAKE_LIBDIR:-}" ] || fail "NCCLRR_FAKE_LIBDIR is not set (meson test sets it)"
	export LD_LIBRARY_PATH=$NCCLRR_FAKE_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} NCCLRR_TOPO=$root/topo/1node_8gpu.xml
	"$prog" >"$tmp/plain" 2>&1 || fail "nvml_legacy exited $? untraced: $(cat "$tmp/plain")"
	(cd "$tmp" && "$ncclrr" record -q -o t -- "$prog" >traced 2>&1) || fail "nvml_legacy exited $? traced: $(cat "$tmp/traced")"
	grep -q '^legacy at the guard page: rc 0 busId 0000:ff:00.0$' "$tmp/plain" || fail "untraced: $(cat "$tmp/plain")"
	diff "$tmp/plain" "$tmp/traced" || fail "the program's output differs traced (+) from untraced (-)"
	"$ncclrr" dump "$tmp"/t/*.nrt >"$tmp/d" 2>&1
	n=$(grep -c ' nvmlDeviceGetNvLinkRemotePciInfo(' "$tmp/d")
	[ "$n" -eq 2 ] || fail "$n legacy calls recorded, want 2: the traced run proves nothing"
	grep ' nvmlDeviceGetNvLinkRemotePciInfo(' "$tmp/d" | grep -vq 'pci=[0-9a-f]*…(52 bytes))' &&
		fail "the legacy call's pci is not recorded as 52 bytes: $(grep ' nvmlDeviceGetNvLinkRemotePciInfo(' "$tmp/d" | head -1)"
	grep ' nvmlDeviceGetNvLinkRemotePciInfo_v2(' "$tmp/d" | grep -q 'pci=[0-9a-f]*…(68 bytes))' ||
		fail "the _v2 call's pci is not recorded as 68 bytes: $(grep ' nvmlDeviceGetNvLinkRemotePciInfo_v2(' "$tmp/d")"
	# and the replay calls the legacy entry with a 52-byte struct and
	# compares what it fills with the recording
	"$ncclrr" replay --topo "$NCCLRR_TOPO" "$tmp/t" >"$tmp/replay" 2>&1 ||
		fail "replay exited $?: $(tail -3 "$tmp/replay")"
	grep -qx 'result: the replay matches the recording' "$tmp/replay" || fail "replay: $(tail -3 "$tmp/replay")"
	echo "nvmllegacy: $(grep -c . "$tmp/plain") lines equal traced and untraced; legacy pci recorded as 52 bytes, _v2 as 68"
	;;
oldnccl)
	# an NCCL whose proxy RPC framing the tracer does not decode (2.18.6,
	# the stub of tracer/tests/nccl_stub.c): the metadata proxy_rpc says so
	# and dump says it in one line; 2.22.3's are decoded and dump is quiet
	old=$(dirname "$forker")/old_nccl
	for v in 21806 22203; do
		NCCL_STUB_VERSION=$v "$ncclrr" record -q -o "$tmp/o$v" -- "$old" >"$tmp/o$v.out" 2>&1 || fail "old_nccl exited $?"
		"$ncclrr" dump "$tmp/o$v" >"$tmp/d$v" 2>"$tmp/e$v" || fail "dump of $v exited $?"
	done
	"$ncclrr" dump --meta --api none "$tmp/o21806" | grep -x '#   proxy_rpc=not decoded: NCCL 2.18.6; decoded: NCCL 2.19-2.28' >/dev/null ||
		fail "no proxy_rpc=not decoded for 2.18.6: $("$ncclrr" dump --meta --api none "$tmp/o21806" | grep -E 'nccl_version|proxy')"
	grep -q "^ncclrr dump: note: NCCL's proxy RPCs are not decoded: NCCL 2.18.6; decoded: NCCL 2.19-2.28 (1 file, first " "$tmp/e21806" ||
		fail "dump does not say 2.18.6's proxy RPCs are not decoded: $(cat "$tmp/e21806")"
	grep -q 'ncclCommInitRank(.*= ncclSystemError' "$tmp/d21806" || fail "the stub's ncclCommInitRank is not recorded"
	"$ncclrr" dump --meta --api none "$tmp/o22203" | grep -x '#   proxy_rpc=decoded: NCCL 2.22.3; decoded: NCCL 2.19-2.28' >/dev/null ||
		fail "no proxy_rpc=decoded for 2.22.3"
	[ -s "$tmp/e22203" ] && fail "dump of 2.22.3 printed: $(cat "$tmp/e22203")"
	;;
net)
	# an external net plugin: record puts its wrapper in NCCL_NET_PLUGIN; every ncclNet call of both
	# processes is recorded (the plugin's own socket calls are not), identical polls coalesced
	pingpong=$(dirname "$forker")/../../replayer/transport/socket/net_pingpong
	plugin=$(dirname "$pingpong")/libnccl-net-ncclrr-socket.so
	NCCL_NET_PLUGIN=$plugin "$ncclrr" record -q -o "$tmp/t" -- "$pingpong" - >"$tmp/out" 2>&1
	rc=$?
	cat "$tmp/out"
	[ $rc -eq 0 ] || fail "net_pingpong exited $rc under the wrapper"
	n=$(ls "$tmp"/t/*.nrt | wc -l)
	[ "$n" -eq 2 ] || fail "$n trace files, want 2 (receiver and sender)"
	"$ncclrr" dump "$tmp/t" >"$tmp/d"
	for a in init devices getProperties listen connect accept regMr isend irecv test closeSend closeRecv closeListen; do
		grep -q "ncclNet_$a(" "$tmp/d" || fail "no ncclNet_$a in the trace"
	done
	grep -q 'ncclNet_test(.*done=0.*\[+[0-9]* identical' "$tmp/d" || fail "pending tests are not coalesced"
	grep -q 'ncclNet_isend(.*size=1048576' "$tmp/d" || fail "no 1 MiB isend"
	! grep -qE ' (accept4|recv|send)\(' "$tmp/d" || fail "the plugin's own socket calls were recorded"
	"$ncclrr" dump --meta --api none "$tmp/t" | grep -c "env.NCCLRR_NET_PLUGIN=$plugin" >/dev/null || fail "no NCCLRR_NET_PLUGIN in the metadata"
	"$ncclrr" dump --meta --api none "$tmp/t" | grep -c "env.NCCL_NET_PLUGIN=.*libncclrr-net-v8.so" >/dev/null || fail "NCCL_NET_PLUGIN is not the v8 wrapper"
	echo "net: $(grep -c 'ncclNet_' "$tmp/d") ncclNet lines; $(grep -m1 'ncclNet_test(.*identical' "$tmp/d" | sed 's/.*\(\[+.*\)/\1/')"
	;;
lttng)
	# the LTTng-UST backend: babeltrace2 prints it; ncclrr reads it with the same calls as a native trace
	command -v lttng-sessiond >/dev/null && command -v babeltrace2 >/dev/null || { echo "SKIP: lttng-tools or babeltrace2 not installed"; exit 77; }
	# the tracer reaches the provider through one table looked up under
	# --backend lttng only: no reference of its own to a provider symbol,
	# which the dynamic linker would look up (and fail to find) in every
	# natively traced process
	tlib=$(dirname "$forker")/../libncclrr-trace.so
	refs=$(nm -D --undefined-only "$tlib" | grep -c ' nrr_lt')
	[ "$refs" -eq 0 ] || fail "libncclrr-trace.so refers to $refs symbols of the LTTng provider: $(nm -D --undefined-only "$tlib" | grep -m3 ' nrr_lt' | tr '\n' ' ')"
	mkdir -p "$tmp/nolt"
	NCCLRR_TRACE_DIR=$tmp/nolt NCCLRR_BACKEND=lttng LD_PRELOAD=$tlib env true 2>"$tmp/nolt.err" || fail "a program traced with --backend lttng and no provider failed"
	grep -q 'Cannot trace with LTTng: libncclrr-trace-lttng.so is not preloaded' "$tmp/nolt.err" ||
		fail "no provider preloaded: want 'Cannot trace with LTTng: ... not preloaded', got: $(head -2 "$tmp/nolt.err")"
	NCCLRR_TRACE_DIR=$tmp/nolt NCCLRR_BACKEND=lttng LD_PRELOAD=$tlib:$(dirname "$forker")/libnrr-lt-otherbuild.so env true 2>"$tmp/nolt.err" ||
		fail "a program traced with a provider of another build failed"
	grep -q 'Cannot trace with LTTng: the preloaded libncclrr-trace-lttng.so is of another build' "$tmp/nolt.err" ||
		fail "provider of another build: want 'Cannot trace with LTTng: ... of another build', got: $(head -2 "$tmp/nolt.err")"
	[ -z "$(ls "$tmp/nolt")" ] || fail "a refused backend left trace files: $(ls "$tmp/nolt")"
	started=
	if ! lttng list >/dev/null 2>&1; then
		lttng-sessiond --daemonize --no-kernel >/dev/null 2>&1 || { fail "cannot start lttng-sessiond"; exit 1; }
		started=1
	fi
	trap '[ -n "$started" ] && pkill -x lttng-sessiond; rm -rf "$tmp"' EXIT
	record "$tmp/lt" "$tmp/log1" --backend lttng
	rc=$?
	[ $rc -eq 0 ] || { fail "the job exited $rc under --backend lttng"; tail "$tmp/log1"; }
	[ -d "$tmp/lt/lttng" ] || fail "no $tmp/lt/lttng"
	babeltrace2 "$tmp/lt/lttng" >"$tmp/bt" 2>"$tmp/bterr" || { fail "babeltrace2 cannot read it"; head "$tmp/bterr"; }
	n=$(grep -c 'ncclrr_cuda_driver:cuInit_enter' "$tmp/bt")
	[ "$n" -ge 32 ] || fail "babeltrace2 shows $n cuInit events, want 2 per rank (workload and NCCL's runtime)"
	echo "babeltrace2: $(wc -l <"$tmp/bt") events, e.g. $(grep -m1 'cuMemImportFromShareableHandle_leave' "$tmp/bt" | cut -c1-160)"
	record "$tmp/nat" "$tmp/log2"
	# per rank, the driver, NVML, verbs and NCCL calls and their results, in order
	calls_of() { "$ncclrr" dump --rank "$1" --api 'cu*,nvml*,ibv*,nccl*' "$2" | sed -E 's/^[0-9.]+ [^ ]+ #[0-9]+ +//; s/\(.*\)//; s/0x[0-9a-f]+/PTR/g; s/ [0-9.]+[mun]?s$//'; }
	for r in $(seq 0 15); do
		calls_of "$r" "$tmp/nat" >"$tmp/a.$r"
		calls_of "$r" "$tmp/lt" >"$tmp/b.$r"
		[ -s "$tmp/a.$r" ] || fail "rank $r: no calls in the native trace"
		diff "$tmp/a.$r" "$tmp/b.$r" >"$tmp/d" || { fail "rank $r: LTTng and native traces differ (< native, > lttng)"; head "$tmp/d"; }
	done
	echo "16 ranks: the same $(wc -l <"$tmp/a.5") driver/NVML/verbs/NCCL calls per rank (rank 5) in both backends"
	"$ncclrr" dump --meta --rank 5 --api none "$tmp/lt" | grep -c '^#   backend=lttng' >/dev/null || fail "no backend=lttng in the converted metadata"
	# and replays from the LTTng trace as from a native one
	"$ncclrr" replay "$tmp/lt" >"$tmp/rp" 2>&1 || { fail "ncclrr replay of the LTTng trace: exit $?"; tail -5 "$tmp/rp"; }
	grep -q "result: the replay matches the recording" "$tmp/rp" || fail "LTTng replay: $(tail -3 "$tmp/rp")"
	grep -q "recorded run: no failure" "$tmp/rp" || fail "LTTng replay sees a failure in a job that exited 0: $(head -5 "$tmp/rp")"
	echo "replay of the LTTng trace: $(grep '^replay:' "$tmp/rp")"
	;;
*) echo "unknown case $case_"; exit 2 ;;
esac
[ $fails -eq 0 ] && echo "PASS $case_" || echo "$fails failure(s) in $case_"
[ $fails -eq 0 ]
