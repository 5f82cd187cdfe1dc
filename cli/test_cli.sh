#!/usr/bin/env bash
# CLI behaviour: help/version for every command, golden dump/stats output,
# filters, and the messages for killed, damaged and foreign files.
# usage: test_cli.sh NCCLRR SOURCE_ROOT
set -uo pipefail
ncclrr=$(realpath "$1")
root=$2
cd "$root" || exit 1
golden=traces/sample_init.nrt   # relative: stats prints the path
. tests/lib/check.sh

"$ncclrr" --help >"$tmp/out" 2>&1; check "ncclrr --help" $?
"$ncclrr" --version | grep -q '^ncclrr [0-9]'; check "ncclrr --version" $?
for cmd in dump stats record run diff bisect hang export replay nccl; do
	"$ncclrr" "$cmd" --help >"$tmp/help" 2>&1; grep -q "^Usage: ncclrr $cmd" "$tmp/help"; check "$cmd --help" $?   # (read whole: grep -q would leave ncclrr a SIGPIPE)
	"$ncclrr" "$cmd" --version | grep -q "^ncclrr $cmd "; check "$cmd --version" $?
done
"$ncclrr" frobnicate >/dev/null 2>&1; [ $? -eq 2 ]; check "unknown command exits 2" $?
"$ncclrr" dump >/dev/null 2>&1; [ $? -eq 2 ]; check "dump without input exits 2" $?
"$ncclrr" dump --bogus "$golden" >/dev/null 2>&1; [ $? -eq 2 ]; check "dump bad option exits 2" $?

# golden output: the committed trace must keep decoding to the committed text
"$ncclrr" dump "$golden" >"$tmp/dump.txt"; check "dump golden exit 0" $?
diff -u traces/sample_init.dump "$tmp/dump.txt" >"$tmp/diff" ; r=$?
[ $r -ne 0 ] && head -40 "$tmp/diff"
check "dump golden output unchanged" $r
"$ncclrr" stats "$golden" >"$tmp/stats.txt"; check "stats golden exit 0" $?
diff -u traces/sample_init.stats "$tmp/stats.txt" >"$tmp/diff"; r=$?
[ $r -ne 0 ] && head -40 "$tmp/diff"
check "stats golden output unchanged" $r

# filters
n_all=$(wc -l <"$tmp/dump.txt")
n_cu=$("$ncclrr" dump --api 'cuMem*' "$golden" | wc -l)
bad=$("$ncclrr" dump --api 'cuMem*' "$golden" | grep -vc ' cuMem\| <\.\.\. cuMem')
[ "$n_cu" -gt 0 ] && [ "$n_cu" -lt "$n_all" ] && [ "$bad" -eq 0 ]; check "--api selects only matching calls" $?
n_err=$("$ncclrr" dump --errors "$golden" | wc -l)
grep -c 'CUDA_ERROR_INVALID_VALUE\|ncclInternalError\|-1 E' "$tmp/dump.txt" >/dev/null
[ "$n_err" -gt 0 ] && [ "$n_err" -lt "$n_all" ]; check "--errors selects failed calls only" $?
"$ncclrr" dump --errors "$golden" | grep -q 'CUDA_ERROR_NOT_READY'; [ $? -ne 0 ]; check "--errors leaves out polling answers" $?
t_mid=$(sed -n "$((n_all / 2))p" "$tmp/dump.txt" | cut -d' ' -f1)
n_late=$("$ncclrr" dump --from "$t_mid" "$golden" | wc -l)
first=$("$ncclrr" dump --from "$t_mid" "$golden" | head -1 | cut -d' ' -f1)
[ "$n_late" -gt 0 ] && [ "$n_late" -lt "$n_all" ] && python3 -c "import sys; sys.exit(not float('$first') >= float('$t_mid'))"
check "--from drops earlier calls" $?
n_early=$("$ncclrr" dump --to "$t_mid" "$golden" | wc -l)
[ $((n_early + n_late)) -eq "$n_all" ]; check "--to keeps exactly the calls --from drops" $?
"$ncclrr" dump --from abc "$golden" >/dev/null 2>&1; [ $? -eq 2 ]; check "--from rejects non-numbers" $?
"$ncclrr" dump --rank 0 "$golden" | cmp -s - "$tmp/dump.txt"; check "--rank 0 keeps rank 0" $?
"$ncclrr" dump --rank 5 "$golden" >/dev/null 2>"$tmp/err"; [ $? -eq 2 ] && grep -q 'no trace of rank 5' "$tmp/err"; check "--rank of a missing rank" $?
mkdir "$tmp/run" && cp "$golden" "$tmp/run/a.nrt"
"$ncclrr" dump "$tmp/run" | cmp -s - "$tmp/dump.txt"; check "a directory reads its .nrt files" $?
mkdir "$tmp/empty"; "$ncclrr" dump "$tmp/empty" >/dev/null 2>"$tmp/err"; [ $? -eq 2 ] && grep -q 'no .nrt trace files' "$tmp/err"; check "empty directory message" $?

# a writer killed mid-run: no index, partial last chunk
size=$(stat -c %s "$golden")
head -c $((size - 40)) "$golden" >"$tmp/killed.nrt"
"$ncclrr" dump "$tmp/killed.nrt" >"$tmp/k.txt" 2>"$tmp/err"; r=$?
[ $r -eq 0 ] && grep -q "file=$tmp/killed.nrt" "$tmp/err" && grep -q 'offset' "$tmp/err"; check "truncated trace: warning with file and offset" $?
# damaged bytes inside a data chunk: error naming file and offset
cp "$golden" "$tmp/flip.nrt"
off=$(python3 -c "
import struct,sys
b=open('$golden','rb').read(); o=64
while o+64<=len(b):
    if b[o:o+4]!=b'NRC1': break
    t=b[o+4]; ps=struct.unpack_from('<I',b,o+32)[0]
    if t==3: print(o+64+ps//2); break
    o+=64+ps
")
printf '\xff' | dd of="$tmp/flip.nrt" bs=1 seek="$off" conv=notrunc status=none
"$ncclrr" dump --strict "$tmp/flip.nrt" >/dev/null 2>"$tmp/err"; r=$?
[ $r -eq 2 ] && grep -q "Cannot read trace: file=$tmp/flip.nrt offset=" "$tmp/err"; check "damaged chunk, --strict: error with file and offset, exit 2" $?
# without --strict: named, the rest of its thread skipped, exit 3 (the calls before it shown)
"$ncclrr" dump "$tmp/flip.nrt" >"$tmp/flip.txt" 2>"$tmp/err"; r=$?
[ $r -eq 3 ] && grep -q "Cannot read trace: file=$tmp/flip.nrt offset=.*skipped the rest" "$tmp/err" &&
	[ "$(wc -l <"$tmp/flip.txt")" -lt "$(wc -l <"$tmp/dump.txt")" ]; check "damaged chunk: named, skipped, exit 3 (got $r: $(head -1 "$tmp/err"))" $?
head -c 100 /bin/sh >"$tmp/foreign.nrt"
"$ncclrr" dump "$tmp/foreign.nrt" >/dev/null 2>"$tmp/err"; r=$?
[ $r -eq 2 ] && grep -q 'not an ncclrr trace' "$tmp/err"; check "foreign file: bad magic message" $?
: >"$tmp/zero.nrt"
"$ncclrr" stats "$tmp/zero.nrt" >/dev/null 2>"$tmp/err"; [ $? -eq 2 ] && grep -q 'shorter than' "$tmp/err"; check "empty file message" $?

# an option without its value says so, the same way in every command
# (dump --rank said "unknown option '--rank'")
for cv in "dump --rank" "dump --api" "stats --top" "export --chrome" "hang --dot" "diff --context" "replay --ranks" \
	"bisect --good" "run --topo" "record -o" "nccl list --bogus"; do
	# shellcheck disable=SC2086
	"$ncclrr" $cv >/dev/null 2>"$tmp/err"; r=$?
	opt=${cv##* }
	if [ "$opt" = --bogus ]; then want="unknown option '--bogus'"; else want="option '$opt' needs a value"; fi
	[ $r -eq 2 ] && grep -qF "ncclrr ${cv%% *}: $want" "$tmp/err"; ok=$?
	check "$cv: '$want' (got: $(head -1 "$tmp/err"))" $ok
done
# record's status when COMMAND cannot start is a shell's, as --help and the man page say
"$ncclrr" record -q -o "$tmp/rec" -- /nonexistent/prog 2>/dev/null; [ $? -eq 127 ]; check "record of a missing program exits 127" $?
: >"$tmp/noexec"; chmod -x "$tmp/noexec"
"$ncclrr" record -q -o "$tmp/rec2" -- "$tmp/noexec" 2>/dev/null; [ $? -eq 126 ]; check "record of a non-executable exits 126" $?
"$ncclrr" record --help >"$tmp/help"; grep -q '127 when COMMAND is not found and 126 when it cannot be' "$tmp/help"; check "record --help states 127/126" $?
grep -q '^is not found and 126 when it cannot be executed' man/ncclrr-record.1; check "the man page states 127/126" $?

# nccl: usage, and a list that is JSON and agrees with the text (with no
# NCCL relinked: exit 1 and how to get one)
"$ncclrr" nccl >/dev/null 2>&1; [ $? -eq 2 ]; check "nccl without an action exits 2" $?
"$ncclrr" nccl remove 2.22.3 >/dev/null 2>"$tmp/err"; [ $? -eq 2 ] && grep -q "unknown action 'remove'" "$tmp/err"; check "nccl unknown action" $?
"$ncclrr" nccl list >"$tmp/nl" 2>"$tmp/err"; r=$?
if [ $r -eq 0 ]; then
	"$ncclrr" nccl list --json >"$tmp/nl.json"
	python3 -c '
import json, sys
v = json.load(open(sys.argv[1]))
text = [l.split()[0] for l in open(sys.argv[2]) if l[:1].isdigit()]
assert [x["version"] for x in v] == text, (v, text)
for x in v:
    assert x["library"].endswith("/" + x["version"] + "/libnccl.so.2"), x
    assert x["runtime_missing"] == "", x   # ncclrr'"'"'s runtime has what each calls
' "$tmp/nl.json" "$tmp/nl"; check "nccl list --json agrees with the text, nothing missing" $?
else
	[ $r -eq 1 ] && grep -q 'scripts/nccl.sh setup' "$tmp/err"; check "nccl list with no NCCL: exit 1 and the fix" $?
fi
# bisect --nccl without two versions, and its usage rules
"$ncclrr" bisect --nccl 0.0.1,0.0.2 --bad "$golden" -- true >/dev/null 2>"$tmp/err"; [ $? -eq 2 ] && grep -q 'has no NCCL 0.0.1' "$tmp/err"; check "bisect --nccl with unknown versions" $?
"$ncclrr" bisect --bad "$golden" -- true >/dev/null 2>&1; [ $? -eq 2 ]; check "bisect needs --good or --nccl" $?
"$ncclrr" replay --nccl 2.22.3 "$golden" >/dev/null 2>"$tmp/err"; [ $? -eq 2 ] && grep -q -- '--nccl is for --rerun' "$tmp/err"; check "replay --nccl without --rerun" $?

# progress line: only on a terminal (or forced), on stderr, never in the output
NCCLRR_PROGRESS=1 "$ncclrr" stats "$golden" >"$tmp/stats2.txt" 2>"$tmp/err"
grep -q 'ncclrr stats: reading traces' "$tmp/err" && cmp -s "$tmp/stats.txt" "$tmp/stats2.txt"; check "forced progress line on stderr only" $?
"$ncclrr" dump "$golden" 2>"$tmp/err" >/dev/null; [ ! -s "$tmp/err" ]; check "no progress line when stderr is not a terminal" $?

# ... and only moves forward, named after the command that runs it, on a
# 16-rank real-NCCL run whose streams' chunks interleave (it went 57% ->
# 41% in dump; export --html said "ncclrr hang")
NCCLRR_PROGRESS=1 "$ncclrr" dump traces/nccl/clean >/dev/null 2>"$tmp/perr"
tr '\r' '\n' <"$tmp/perr" | sed -n 's/^ncclrr dump: reading traces *\([0-9.]*\)%.*/\1/p' >"$tmp/pct"
[ "$(wc -l <"$tmp/pct")" -ge 2 ] && sort -n -c "$tmp/pct" 2>/dev/null; check "dump's progress only moves forward ($(tr '\n' ' ' <"$tmp/pct"))" $?
NCCLRR_PROGRESS=1 "$ncclrr" export --html "$tmp/r.html" traces/nccl/clean >/dev/null 2>"$tmp/perr"
tr '\r' '\n' <"$tmp/perr" | grep -q '^ncclrr export: reading traces' && ! tr '\r' '\n' <"$tmp/perr" | grep -q '^ncclrr hang'
check "export --html's progress line says export" $?

echo "cli: $pass passed, $fails failed"
[ "$fails" -eq 0 ]
