#!/bin/bash
# ibv_rc_pingpong ARGS... under `ncclrr run -np 2`: rank 0 serves on
# $PP_PORT; rank 1 connects, again while the server is not listening yet
# (up to 60 s: at a load of 35 on 2 cores, 10 s was not enough)
if [ "$NCCLRR_RANK" = 0 ]; then exec ibv_rc_pingpong -p "$PP_PORT" "$@"; fi
for i in $(seq 300); do
	out=$(ibv_rc_pingpong -p "$PP_PORT" "$@" 127.0.0.1 2>&1)
	rc=$?
	grep -q "^Couldn't connect" <<<"$out" || { echo "$out"; exit $rc; }
	sleep 0.2
done
echo "$out"
exit 1
