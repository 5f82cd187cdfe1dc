#!/bin/sh
# test_ctf.sh CASE NCCLRR SRCDIR WORKLOADS_DIR - the Babeltrace2 source
# component source.ncclrr.nrt (plugin module build/analyzer/
# babeltrace-plugin-ncclrr.so) and nrr_export_ctf() (`ncclrr export --ctf`).
#   print     babeltrace2 prints the native traces of a fault run: the events
#             match `ncclrr dump` stream by stream (see ctf_check.py), rank 3's
#             failing cuMemImportFromShareableHandle shows its error
#   convert   sink.ctf.fs and nrr_export_ctf() write CTF that babeltrace2's own
#             ctf source reads back unchanged, and that ncclrr's CTF reader
#             (formats/ctf.c) reads back into the same calls, per process
#   inflight  a stalled run: calls in flight at the end are _enter events with
#             inflight = 1 (or ncclrr:inflight) and read back as in flight
#   badinput  a damaged .nrt: a clear error naming file and offset, no crash
#   discover  `babeltrace2 RUN_DIR` and `babeltrace2 FILE.nrt` find the traces
#             themselves (babeltrace.support-info), printing what the
#             explicit source prints; a directory without .nrt is not taken
set -u
CASE=$1 NCCLRR=$2 SRCDIR=$3 WL=$4
BUILD=$(cd "$(dirname "$NCCLRR")/.." && pwd)
PLUGDIR=$BUILD/analyzer
CHECK="python3 $SRCDIR/tests/analyzer/ctf_check.py"

command -v babeltrace2 >/dev/null || { echo "SKIP: babeltrace2 is not installed"; exit 77; }
[ -f "$PLUGDIR/babeltrace-plugin-ncclrr.so" ] ||
	{ echo "SKIP: built without libbabeltrace2 (no $PLUGDIR/babeltrace-plugin-ncclrr.so)"; exit 77; }

T=$(mktemp -d "${TMPDIR:-/tmp}/ncclrr-ctf-test.XXXXXX")
[ -n "${KEEP:-}" ] || trap 'rm -rf "$T"' EXIT; echo "tmp=$T"
fail() { echo "FAIL ($CASE): $*"; exit 1; }
bt() { babeltrace2 --plugin-path="$PLUGDIR" "$@"; }

# record_run TIMEOUT: conn_setup on 16 fake ranks under the tracer
record_run() {
	"$NCCLRR" record -o "$T/run" -q -- "$NCCLRR" run --topo "$SRCDIR/topo/2node_16gpu.xml" \
		--timeout "$1" -- "$WL/conn_setup" --no-nccl >"$T/record.log" 2>&1
	# the injected failure or hang makes the job fail; the traces are what matter
	ls "$T"/run/*.nrt >/dev/null 2>&1 || { cat "$T/record.log"; fail "recording wrote no trace"; }
	"$NCCLRR" dump "$T/run" >"$T/dump.txt" || fail "ncclrr dump failed"
	"$NCCLRR" dump --errors "$T/run" >"$T/errors.txt" || fail "ncclrr dump --errors failed"
	RANK3_PID=$("$NCCLRR" dump --meta --rank 3 "$T/run" | sed -n 's/^#   pid=//p' | head -1)
	[ -n "$RANK3_PID" ] || fail "no trace of rank 3"
	NFILES=$(ls "$T"/run/*.nrt | wc -l)
}
record_fault() {
	NCCLRR_FAULT=cuMemImportFromShareableHandle:rank=3:nth=1:CUDA_ERROR_INVALID_VALUE record_run 60
}

# ncclrr's own CTF reader (formats/ctf.c) on each process's CTF trace in
# $1: the same calls as the .nrt, line for line. (On the whole directory it
# fails: it gives every trace to one source.ctf.fs, which wants one UUID;
# see README-ctf.md.)
roundtrip() {
	for f in "$T"/run/*.nrt; do
		pid=${f##*-}; pid=${pid%.nrt}
		d=$(ls -d "$1"/*-"$pid")
		# The CTF carries no trace end time (metadata end_ts), so a call in
		# flight at the end reads back as in flight for "0ns so far": its
		# time and duration so far are left out of the comparison.
		inflight_norm() { sed -E '/in flight at end of trace/{s/^[0-9.]+ //; s/, [^,>]* so far>/>/}'; }
		"$NCCLRR" dump "$f" | inflight_norm >"$T/a.txt"
		"$NCCLRR" dump "$d" >"$T/b.raw" 2>"$T/b.err" || { cat "$T/b.err"; fail "ncclrr dump cannot read $d"; }
		inflight_norm <"$T/b.raw" >"$T/b.txt"
		cmp -s "$T/a.txt" "$T/b.txt" || { diff "$T/a.txt" "$T/b.txt" | head; fail "ncclrr dump of $d differs from $f"; }
	done
}

case $CASE in
print)
	record_fault
	bt -c source.ncclrr.nrt -p "inputs=[\"$T/run\"]" -c sink.text.pretty -p clock-seconds=true \
		>"$T/pretty.txt" 2>"$T/bt.err" || { cat "$T/bt.err"; fail "babeltrace2 failed on the native traces"; }
	$CHECK "$T/dump.txt" "$T/pretty.txt" "$NFILES" "$T/errors.txt" "$RANK3_PID" || fail "events differ from ncclrr dump"
	# the same count from Babeltrace2's own counter sink
	n=$(bt -c source.ncclrr.nrt -p "inputs=[\"$T/run\"]" -c sink.utils.counter | awk '/ Event messages$/ {print $1}' | tr -d ,)
	[ "$n" = "$(wc -l <"$T/pretty.txt")" ] || fail "sink.utils.counter counts $n events, pretty printed $(wc -l <"$T/pretty.txt")"
	echo "ok: print ($n events)"
	;;
convert)
	record_fault
	bt -c source.ncclrr.nrt -p "inputs=[\"$T/run\"]" -c sink.text.pretty -p clock-seconds=true >"$T/pretty.txt" ||
		fail "babeltrace2 failed on the native traces"
	bt -c source.ncclrr.nrt -p "inputs=[\"$T/run\"]" -c sink.ctf.fs -p "path=\"$T/ctf1\"" -p quiet=true ||
		fail "babeltrace2 could not convert to CTF with sink.ctf.fs"
	"$NCCLRR" export --ctf "$T/ctf2" "$T/run" 2>"$T/export.err" || { cat "$T/export.err"; fail "nrr_export_ctf failed"; }
	[ "$(ls "$T/ctf2" | wc -l)" = "$NFILES" ] || fail "nrr_export_ctf wrote $(ls "$T/ctf2" | wc -l) traces for $NFILES files"
	norm() { sed 's/^\(\[[^]]*\]\) ([^)]*)/\1/' "$1" | LC_ALL=C sort; }
	norm "$T/pretty.txt" >"$T/want.txt"
	for o in ctf1 ctf2; do
		babeltrace2 "$T/$o" -c sink.text.pretty -p clock-seconds=true >"$T/$o.txt" 2>"$T/$o.err" ||
			{ cat "$T/$o.err"; fail "babeltrace2 cannot read the CTF in $o"; }
		$CHECK "$T/dump.txt" "$T/$o.txt" "$NFILES" "$T/errors.txt" "$RANK3_PID" || fail "CTF in $o differs from ncclrr dump"
		norm "$T/$o.txt" | cmp -s - "$T/want.txt" || fail "CTF in $o does not read back as the source printed it"
	done
	# an existing, non-empty directory is refused
	if "$NCCLRR" export --ctf "$T/ctf2" "$T/run" 2>"$T/again.err"; then fail "export into a non-empty directory succeeded"; fi
	grep -q "dir=$T/ctf2 is not empty" "$T/again.err" || { cat "$T/again.err"; fail "no clear message for a non-empty directory"; }
	[ "$(ls "$T/ctf2" | wc -l)" = "$NFILES" ] || fail "the refused export changed $T/ctf2"
	roundtrip "$T/ctf2"
	echo "ok: convert ($(wc -l <"$T/want.txt") events, $NFILES traces, read back by babeltrace2 and formats/ctf.c)"
	;;
inflight)
	# rank 5 stalls before its bootstrap; the others block in recv until
	# `ncclrr run --timeout` stops them: calls in flight at the end
	CONN_SETUP_STALL=5 record_run 3
	grep -q '<in flight at end of trace' "$T/dump.txt" || fail "the stalled run has no call in flight"
	bt -c source.ncclrr.nrt -p "inputs=[\"$T/run\"]" -c sink.text.pretty -p clock-seconds=true >"$T/pretty.txt" ||
		fail "babeltrace2 failed on the native traces"
	$CHECK "$T/dump.txt" "$T/pretty.txt" "$NFILES" "$T/errors.txt" - || fail "events differ from ncclrr dump"
	"$NCCLRR" export --ctf "$T/ctf" "$T/run" || fail "nrr_export_ctf failed"
	roundtrip "$T/ctf"
	echo "ok: inflight"
	;;
discover)
	record_fault
	bt -c source.ncclrr.nrt -p "inputs=[\"$T/run\"]" >"$T/explicit.txt" || fail "babeltrace2 with the explicit source failed"
	bt "$T/run" >"$T/auto.txt" 2>"$T/auto.err" || { cat "$T/auto.err"; fail "babeltrace2 RUN_DIR found no trace"; }
	cmp -s "$T/explicit.txt" "$T/auto.txt" || fail "babeltrace2 RUN_DIR prints other events than the explicit source"
	f=$(ls "$T"/run/*-"$RANK3_PID".nrt)
	bt -c source.ncclrr.nrt -p "inputs=[\"$f\"]" >"$T/explicit1.txt" || fail "the explicit source on one file failed"
	bt "$f" >"$T/auto1.txt" 2>"$T/auto1.err" || { cat "$T/auto1.err"; fail "babeltrace2 FILE.nrt found no trace"; }
	cmp -s "$T/explicit1.txt" "$T/auto1.txt" || fail "babeltrace2 FILE.nrt prints other events than the explicit source"
	w=$(bt query src.ncclrr.nrt babeltrace.support-info -p "input=\"$T\",type=\"directory\"")
	[ "$w" = "weight: 0.000000" ] || fail "a directory without .nrt files is claimed: $w"
	echo "ok: discover ($(wc -l <"$T/auto.txt") events)"
	;;
badinput)
	mkdir -p "$T/bad1" "$T/bad2"
	printf 'not a trace at all\n' >"$T/bad1/x.nrt"
	bt -c source.ncclrr.nrt -p "inputs=[\"$T/bad1\"]" >/dev/null 2>"$T/e1"
	rc=$?
	[ $rc -ne 0 ] && [ $rc -lt 128 ] || fail "babeltrace2 on a non-trace: exit $rc"
	tr '\n' ' ' <"$T/e1" | tr -s ' ' | grep -q "Cannot read trace: file=$T/bad1/x.nrt offset=0" || { cat "$T/e1"; fail "no file/offset in the error"; }

	record_fault
	f=$(ls "$T"/run/*-"$RANK3_PID".nrt)
	cp "$f" "$T/bad2/"
	b=$T/bad2/$(basename "$f")
	# damage the payload of the file's last data chunk (FORMAT.md: chunk header)
	off=$(python3 - "$b" <<'EOF'
import struct, sys
p = sys.argv[1]
data = bytearray(open(p, 'rb').read())
off, last = 64, None
while off + 64 <= len(data) and data[off:off + 4] == b'NRC1':
    typ, size = data[off + 4], struct.unpack_from('<I', data, off + 32)[0]
    if typ == 3:
        last = (off, size)
    off += 64 + size
assert last, 'no data chunk'
o, size = last
data[o + 64 + size // 2] ^= 0xff
open(p, 'wb').write(data)
print(o + 64)   # the reader names the payload's offset
EOF
) || fail "cannot damage the trace"
	bt -c source.ncclrr.nrt -p "inputs=[\"$b\"]" >/dev/null 2>"$T/e2"
	rc=$?
	[ $rc -ne 0 ] && [ $rc -lt 128 ] || fail "babeltrace2 on a damaged chunk: exit $rc"
	tr '\n' ' ' <"$T/e2" | tr -s ' ' | grep -q "Cannot read trace: file=$b offset=$off: chunk payload checksum" ||
		{ cat "$T/e2"; fail "no file/offset $off in the error"; }
	# --strict: the damaged input is an error, and no partial output
	"$NCCLRR" export --strict --ctf "$T/out" "$b" 2>"$T/e3"
	rc=$?
	[ $rc -eq 2 ] || fail "export --strict --ctf on a damaged chunk: exit $rc, want 2"
	grep -q "file=$b offset=$off" "$T/e3" || { cat "$T/e3"; fail "export --strict --ctf: no file/offset in the error"; }
	[ ! -e "$T/out" ] || fail "export --strict --ctf left a partial $T/out after failing"
	# without: what can be read of it is exported, the damage named, exit 3
	"$NCCLRR" export --ctf "$T/out" "$b" 2>"$T/e4"
	rc=$?
	[ $rc -eq 3 ] || { cat "$T/e4"; fail "export --ctf on a damaged chunk: exit $rc, want 3 (damaged input skipped)"; }
	grep -q "file=$b offset=$off" "$T/e4" || { cat "$T/e4"; fail "export --ctf: no file/offset in the warning"; }
	echo "ok: badinput"
	;;
*)
	echo "unknown case $CASE"; exit 2 ;;
esac
