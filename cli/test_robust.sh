#!/usr/bin/env bash
# Damaged inputs among good ones (skipped, named, exit 3; --strict stops),
# colours (--color, NO_COLOR, terminals and pipes) and exit statuses that
# agree between --help, the man pages and the code.
# usage: test_robust.sh CASE NCCLRR SOURCE_ROOT
# CASE: damaged | color | status
set -uo pipefail
case_=$1
ncclrr=$(realpath "$2")
root=$3
cd "$root" || exit 1
. tests/lib/check.sh
golden=traces/nccl/rank_killed   # 17 processes, rank 5 SIGKILLed, the others fail

# the offset of the middle of the payload of the first data chunk of FILE
data_chunk_middle() {
	python3 -c "
import struct, sys
b = open(sys.argv[1], 'rb').read(); o = 64
while o + 64 <= len(b) and b[o:o+4] == b'NRC1':
    t = b[o+4]; ps = struct.unpack_from('<I', b, o+32)[0]
    if t == 3:
        print(o + 64 + ps // 2); break
    o += 64 + ps
" "$1"
}

case $case_ in
damaged)
	cp -r "$golden" "$tmp/run"
	files=("$tmp"/run/*.nrt)
	[ ${#files[@]} -eq 17 ] || { echo "FAIL: $golden has ${#files[@]} files, want 17"; exit 1; }
	head=${files[3]}    # its file header damaged: cannot be opened
	chunk=${files[9]}   # a byte of a data chunk damaged in the middle of the file
	printf 'XXXX' | dd of="$head" bs=1 seek=0 conv=notrunc status=none
	off=$(data_chunk_middle "$chunk")
	[ -n "$off" ] || { echo "FAIL: no data chunk in $chunk"; exit 1; }
	printf '\377\377\377\377' | dd of="$chunk" bs=1 seek="$off" conv=notrunc status=none
	for cv in "stats" "dump" "hang" "export --chrome $tmp/out.json" "export --html $tmp/out.html" "diff $golden"; do
		cmd=${cv%% *}
		# shellcheck disable=SC2086
		"$ncclrr" $cv "$tmp/run" >"$tmp/out" 2>"$tmp/err"; r=$?
		[ $r -eq 3 ]; check "$cv: exit 3 with a damaged input skipped (got $r: $(head -3 "$tmp/err"))" $?
		grep -q "ncclrr $cmd: Cannot read trace: file=$head offset=0: .*not an ncclrr trace" "$tmp/err" &&
			grep -q "ncclrr $cmd: skipped file=$head" "$tmp/err"
		check "$cv: names the file that cannot be opened, at offset 0, and says it was skipped" $?
		grep -q "ncclrr $cmd: Cannot read trace: file=$chunk offset=[0-9]*: .*skipped the rest" "$tmp/err"
		check "$cv: names the damaged chunk's file and offset, and what was skipped" $?
		grep -q "ncclrr $cmd: 2 damaged inputs skipped (exit status 3)" "$tmp/err"; check "$cv: the count at the end" $?
		[ -s "$tmp/out" ] || [ -s "$tmp/out.json" ]; check "$cv: an output for the rest" $?
		# shellcheck disable=SC2086
		"$ncclrr" $cv --strict "$tmp/run" >/dev/null 2>"$tmp/err"; r=$?
		[ $r -eq 2 ] && [ "$(grep -c 'Cannot read trace' "$tmp/err")" -eq 1 ]
		check "$cv --strict: stops at the first damaged input with exit 2 (got $r)" $?
	done
	# what the others say is all there: stats of the 15 good files are the golden ones'
	"$ncclrr" stats "$golden" >"$tmp/stats.gold"
	"$ncclrr" stats "$tmp/run" >"$tmp/stats.run" 2>/dev/null
	n=$(grep -c '^rank .* threads)' "$tmp/stats.run")
	[ "$n" -eq 16 ]; check "stats: 16 of 17 processes (the unopenable one left out), got $n" $?
	for f in "${files[@]}"; do
		[ "$f" = "$head" ] || [ "$f" = "$chunk" ] || {
			b=$(basename "$f")
			# (the title names the file by its path: the copy's differs)
			diff <(sed -n "/$b/,/^\$/p" "$tmp/stats.gold" | sed "s|, [^ ]*$b,|, $b,|") \
				<(sed -n "/$b/,/^\$/p" "$tmp/stats.run" | sed "s|, [^ ]*$b,|, $b,|") >/dev/null ||
				{ echo "FAIL: stats of the undamaged $b differ"; fails=$((fails + 1)); }
		}
	done
	# hang still finds the killed rank
	"$ncclrr" hang "$tmp/run" >"$tmp/hang" 2>/dev/null
	grep -q 'rank 5' "$tmp/hang"; check "hang with a damaged input still names rank 5" $?
	# the global option goes before the command too; commands that run
	# something refuse it
	"$ncclrr" --strict stats "$tmp/run" >/dev/null 2>&1; [ $? -eq 2 ]; check "--strict before the command" $?
	"$ncclrr" replay --strict "$tmp/run" >/dev/null 2>"$tmp/err"; r=$?
	[ $r -eq 2 ] && grep -q -- "--strict is for the commands that skip" "$tmp/err"; check "replay --strict refused" $?
	# no readable input at all: 2
	: >"$tmp/zero.nrt"; cp "$head" "$tmp/head.nrt"
	"$ncclrr" stats "$tmp/zero.nrt" "$tmp/head.nrt" >/dev/null 2>"$tmp/err"; r=$?
	[ $r -eq 2 ] && grep -q 'none of the 2 trace files could be read' "$tmp/err"; check "no readable input: exit 2 (got $r)" $?
	;;
color)
	esc=$'\033['
	# errors: always, never, NO_COLOR, pipes
	"$ncclrr" --color=always dump /nonexistent 2>"$tmp/err"
	grep -qF "$esc" "$tmp/err"; check "--color=always colours an error into a pipe" $?
	NO_COLOR=1 "$ncclrr" dump --color=always /nonexistent 2>"$tmp/err"
	grep -qF "$esc" "$tmp/err"; check "--color=always wins over NO_COLOR" $?
	"$ncclrr" dump /nonexistent 2>"$tmp/err"
	grep -qF "$esc" "$tmp/err"; [ $? -ne 0 ]; check "no colour into a pipe (auto)" $?
	"$ncclrr" hang --color=always "$golden" >"$tmp/out" 2>/dev/null
	grep -qF "${esc}32mNo hang${esc}0m" "$tmp/out" &&
		grep -qF "${esc}1;31mFirst abnormal end:${esc}0m ${esc}1;35mrank 5${esc}0m died" "$tmp/out"
	check "hang --color=always: the verdict and the failing rank coloured" $?
	"$ncclrr" hang --color=always traces/mpi/inside_killed_cut >"$tmp/out" 2>/dev/null
	grep -qF "${esc}1;31mHANG${esc}0m, root cause: ${esc}1;35mrank 3${esc}0m" "$tmp/out"
	check "hang --color=always: HANG and the root-cause rank coloured" $?
	"$ncclrr" diff --color=always traces/nccl/clean "$golden" >"$tmp/out" 2>/dev/null
	grep -qF "${esc}1;31mEarliest across ranks:${esc}0m ${esc}1;35mrank" "$tmp/out"; check "diff --color=always: the headline and rank coloured" $?
	"$ncclrr" --color=bogus dump "$golden" >/dev/null 2>"$tmp/err"; r=$?
	[ $r -eq 2 ] && grep -q 'want --color=auto, --color=always or --color=never' "$tmp/err"; check "--color=bogus refused" $?
	# on a terminal (script(1) gives one): colours unless NO_COLOR or TERM=dumb, or --color=never
	if command -v script >/dev/null; then
		tty_run() { script -qec "$*" /dev/null </dev/null >"$tmp/tty" 2>&1; }
		TERM=xterm tty_run "$ncclrr" hang "$golden"
		grep -qF "$esc" "$tmp/tty"; check "a terminal gets colours (auto)" $?
		TERM=xterm NO_COLOR=1 tty_run "$ncclrr" --color=auto hang "$golden"
		grep -qF "$esc" "$tmp/tty"; [ $? -ne 0 ]; check "NO_COLOR=1 --color=auto: no colour on a terminal" $?
		TERM=dumb tty_run "$ncclrr" hang "$golden"
		grep -qF "$esc" "$tmp/tty"; [ $? -ne 0 ]; check "TERM=dumb: no colour on a terminal" $?
		TERM=xterm tty_run "$ncclrr" --color=never hang "$golden"
		grep -qF "$esc" "$tmp/tty"; [ $? -ne 0 ]; check "--color=never: no colour on a terminal" $?
	else
		echo "note: no script(1): the terminal cases are not run"
	fi
	;;
status)
	# the statuses each command's --help lists are those of its man page
	# (dump and stats: ncclrr(1)); then the code's for a few cases
	for cmd in dump stats record run diff bisect hang export replay nccl; do
		man=man/ncclrr-$cmd.1
		[ -f "$man" ] || man=man/ncclrr.1
		python3 - "$man" "$cmd" "$ncclrr" <<-'EOF'
			import re, subprocess, sys
			man, cmd, ncclrr = sys.argv[1:]
			help = subprocess.run([ncclrr, cmd, '--help'], capture_output=True, text=True).stdout
			para = [p for p in help.split('\n\n') if re.match(r'(The )?exit status', p, re.I)]
			assert para, f'{cmd} --help has no exit status paragraph'
			nums = lambda t: set(int(n) for n in re.findall(r'(?<![\w.+-])(\d{1,3})(?![\w.%])', t))
			h = nums(' '.join(para))
			text = open(man).read()
			m = re.search(r'^\.SH EXIT STATUS\n(.*?)(?=^\.SH )', text, re.S | re.M)
			assert m, f'{man} has no EXIT STATUS section'
			sec = re.sub(r'\\f[BIR]|\\-', '', m.group(1))
			mn = nums(sec)
			if man.endswith('ncclrr.1'):
			    assert h <= mn, f'{cmd} --help lists {sorted(h)}, {man} EXIT STATUS has {sorted(mn)}'
			else:
			    assert h == mn, f'{cmd} --help lists {sorted(h)}, {man} EXIT STATUS lists {sorted(mn)}'
			print(f'{cmd}: {sorted(h)} ({man})')
		EOF
		check "$cmd: --help and its man page list the same exit statuses" $?
	done
	# and the code returns them
	expect() { # status, what, command...
		local want=$1 what=$2; shift 2
		"$@" >/dev/null 2>&1; local r=$?
		[ $r -eq "$want" ]; check "$what: exit $want (got $r)" $?
	}
	expect 127 "record of a missing program" "$ncclrr" record -q -o "$tmp/rec" -- /nonexistent/prog
	expect 2 "record with a bad option" "$ncclrr" record --mode bogus -- true
	expect 2 "run without --topo" "$ncclrr" run -- true
	expect 0 "stats of a good trace" "$ncclrr" stats "$golden"
	expect 0 "hang of a failed run that does not hang" "$ncclrr" hang "$golden"
	expect 1 "hang of a hung run" "$ncclrr" hang traces/mpi/inside_killed_cut
	expect 2 "hang with an unknown option" "$ncclrr" hang --bogus "$golden"
	expect 0 "diff of a run with itself" "$ncclrr" diff "$golden" "$golden"
	expect 1 "diff of two runs that differ" "$ncclrr" diff traces/nccl/clean "$golden"
	expect 2 "dump of a missing file" "$ncclrr" dump /nonexistent
	cp -r "$golden" "$tmp/run"
	f=$(ls "$tmp"/run/*.nrt | head -1)
	printf 'XXXX' | dd of="$f" bs=1 seek=0 conv=notrunc status=none
	expect 3 "dump with a damaged input" "$ncclrr" dump "$tmp/run"
	expect 3 "hang with a damaged input (in place of 0)" "$ncclrr" hang "$tmp/run"
	expect 2 "hang --strict with a damaged input" "$ncclrr" hang --strict "$tmp/run"
	expect 2 "replay with a damaged input" "$ncclrr" replay "$tmp/run"
	;;
*)
	echo "unknown case $case_"
	exit 2
	;;
esac
echo "$case_: $pass passed, $fails failed"
[ $fails -eq 0 ]
