#!/bin/bash
# ibv_rc_pingpong ARGS... (or the pingpong $PP_PROG names: ibv_srq_pingpong)
# under `ncclrr run -np 2`: rank 0 serves on $PP_PORT; rank 1 connects,
# again while the server is not listening yet (up to 60 s: at a load of 35
# on 2 cores, 10 s was not enough)
prog=${PP_PROG:-ibv_rc_pingpong}
if [ "$NCCLRR_RANK" = 0 ]; then exec "$prog" -p "$PP_PORT" "$@"; fi
for i in $(seq 300); do
	out=$("$prog" -p "$PP_PORT" "$@" 127.0.0.1 2>&1)
	rc=$?
	grep -q "^Couldn't connect" <<<"$out" || { echo "$out"; exit $rc; }
	sleep 0.2
done
echo "$out"
exit 1
