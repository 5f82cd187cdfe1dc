# Sourced by the shell tests that count checks: a temporary directory
# $tmp (removed at exit), and check NAME RESULT, which counts a pass when
# RESULT is 0 and prints "FAIL: NAME" otherwise.  At the end:
#   echo "$pass passed, $fails failed"; [ "$fails" -eq 0 ]
# usage: . check.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
pass=0
check() { # name, condition result
	if [ "$2" -eq 0 ]; then pass=$((pass + 1)); else echo "FAIL: $1"; fails=$((fails + 1)); fi
}
