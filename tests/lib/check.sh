# Sourced by the shell tests that count checks: a temporary directory
# $tmp (removed at exit), and check NAME RESULT, which counts a pass when
# RESULT is 0 and prints "FAIL: NAME" otherwise; fail WHAT... prints
# "FAIL: WHAT..." and counts a failure; free_port prints a TCP
# port of 127.0.0.1 that the kernel just gave out as free; port_run OUT
# CMD... runs a pingpong pair with PP_PORT set to one (below); must NAME
# PATTERN FILE checks that FILE has a line matching PATTERN (a failure
# shows FILE's last 20 lines: CI keeps no $tmp).  At the end:
#   echo "$pass passed, $fails failed"; [ "$fails" -eq 0 ]
# usage: . check.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
pass=0
check() { # name, condition result
	if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else echo "FAIL: $1"; fails=$((fails + 1)); fi
}
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
must() {
	grep -q -- "$2" "$3"
	local rc=$?
	check "$1: '$2' in $3" $rc
	[ $rc -eq 0 ] || sed 's/^/    | /' "$3" | tail -n 20
}
free_port() { # a port no one listens on: one the kernel picks, not $$-derived
	# (a port derived from the pid collided with another test's listener,
	# and ibv_rc_pingpong's client then waited on that listener until killed)
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# port_run OUT CMD...: CMD (a pingpong pair under `ncclrr run`: rank 0
# serves on $PP_PORT, rank 1 connects there) with PP_PORT=$(free_port),
# its output in OUT; run again on another port, up to 3 times, only when
# the server could not bind it ("[0] Couldn't listen to port": another
# test's process took the port between free_port and the bind, and the
# client may have talked to that process instead).  Returns CMD's status.
port_run() {
	local out=$1 rc try
	shift
	for try in 1 2 3; do
		PP_PORT=$(free_port) "$@" >"$out" 2>&1
		rc=$?
		grep -q "^\[0\] Couldn't listen to port" "$out" || break
	done
	return $rc
}
