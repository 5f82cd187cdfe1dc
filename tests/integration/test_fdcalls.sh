#!/usr/bin/env bash
# The descriptor calls launchers and runtimes make (Open MPI's mpirun and
# orted, libevent, PMIx: formats/api/socket.api), recorded and replayed:
# tracer/tests/fdcalls.c exchanges messages between a parent and a forked
# child over TCP with writev/readv, sendmmsg/recvmmsg, epoll, select,
# pselect, ppoll, pipes, an eventfd and copies of the socket (dup, dup2,
# dup3, fcntl F_DUPFD), and with `undescribed` also a sendfile, a splice
# and a raw syscall(SYS_sendto).
# usage: test_fdcalls.sh NCCLRR FDCALLS
set -uo pipefail
ncclrr=$(realpath "$1")
fdcalls=$(realpath "$2")
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/skip_asan_tracer.sh"
skip_asan_tracer "$(dirname "$fdcalls")/../libncclrr-trace.so"

"$ncclrr" record -q -o "$tmp/t" -- "$fdcalls" >"$tmp/out" 2>&1 || { fail "fdcalls exited $? traced"; cat "$tmp/out"; }
"$ncclrr" dump "$tmp/t" >"$tmp/d" 2>"$tmp/e" || { fail "dump failed"; cat "$tmp/e"; }
# the child closed every descriptor it inherited, the trace file's too:
# that close failed (EBADF, as it would untraced) and the file completed
grep -q 'Cannot write trace' "$tmp/out" && fail "the child's trace was lost: $(grep 'Cannot write' "$tmp/out")"
[ -s "$tmp/e" ] && { fail "dump warned (a trace not completed)"; cat "$tmp/e"; }
for fn in writev readv sendmmsg recvmmsg epoll_create1 epoll_ctl epoll_wait epoll_pwait select pselect ppoll \
	pipe pipe2 eventfd dup dup2 dup3 fcntl64; do
	grep -q " $fn(" "$tmp/d" || fail "$fn was not recorded"
done
# the bytes of the vectors, gathered
grep -q 'writev(fd=3, iov=4844523a68656c6c6f2d777269746576, iovcnt=2) = 16' "$tmp/d" || fail "writev's bytes"
grep -q 'readv(fd=5, iov=4844523a68656c6c6f2d777269746576, iovcnt=2) = 16' "$tmp/d" || fail "readv's bytes"
grep -q 'sendmmsg(sockfd=100, msgvec=\[{len=3, head=6d6d31}, {len=5, head=6d6d322d32}\], vlen=2' "$tmp/d" ||
	fail "sendmmsg's messages (on the dup2 copy, fd 100)"
# epoll_wait answered with the connection (fd 5 in the event's data)
grep -q 'epoll_wait(epfd=8, events=010000000500000000000000' "$tmp/d" || fail "epoll_wait's event"
# pipes and eventfds are made, not traced: their reads and writes (and
# the fork stub's dup2 of one) are not recorded
efd=$(sed -n 's/.* eventfd(initval=0, flags=[0-9]*) = \([0-9]*\) .*/\1/p' "$tmp/d")
[ -n "$efd" ] || fail "no eventfd"
grep -q "write(fd=$efd, " "$tmp/d" && fail "the eventfd's (fd $efd) write was recorded"
grep -q "read(fd=4, buf=44" "$tmp/d" && fail "the pipe's read was recorded"
# a copy of the socket closed is recorded as a socket's close
grep -Eq 'close\(fd=fd:11[0-9]\) = 0' "$tmp/d" || fail "the fcntl(F_DUPFD) copy is not a traced descriptor"
grep -c . "$tmp/d" | sed 's/^/calls recorded: /'

# replay: the child re-executes the calls it made on its socket
"$ncclrr" replay -v --timeout 20 "$tmp/t" >"$tmp/r" 2>&1
rc=$?
cat "$tmp/r"
[ $rc -eq 0 ] || fail "replay exited $rc"
grep -q '^result: the replay matches the recording$' "$tmp/r" || fail "replay did not match"
# (all but its select and pselect, which are answered from the trace)
grep -Eq ': ([0-9]+) of \1 calls, 2 answered from the trace' "$tmp/r" || fail "the child's calls were not all re-executed"

# a call the API does not describe: named in the trace and by replay
"$ncclrr" record -q -o "$tmp/u" -- "$fdcalls" undescribed >"$tmp/out" 2>&1 || { fail "fdcalls undescribed exited $?"; cat "$tmp/out"; }
"$ncclrr" dump "$tmp/u" >"$tmp/d" 2>&1
for call in sendfile splice 'syscall(SYS_sendto)'; do
	grep -qF "fd_undescribed(call=\"$call\", fd=fd:3)" "$tmp/d" || fail "$call on a traced socket was not recorded"
done
"$ncclrr" replay --timeout 20 "$tmp/u" >"$tmp/r" 2>&1
rc=$?
cat "$tmp/r"
[ $rc -eq 0 ] || fail "replay with an undescribed call exited $rc (hung?)"
grep -Eq "^undescribed call: .* \($tmp/u/[^)]*\.nrt\) #[0-9]+ sendfile on fd 3: " "$tmp/r" ||
	fail "replay did not say which undescribed call, in which file, at which call"
grep -Eq "^undescribed call: .* #[0-9]+ syscall\(SYS_sendto\) on fd 3: " "$tmp/r" || fail "replay did not name the raw syscall"
[ $fails -eq 0 ] || exit 1
echo "fdcalls: every call recorded and replayed; the undescribed sendfile named"
