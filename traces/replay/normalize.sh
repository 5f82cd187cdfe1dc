#!/bin/sh
# What of `ncclrr replay`'s output is the same on every machine and run:
# the directory, pids of rank-less processes and timings are masked.
sed -e 's|processes from [^,]*,|processes from DIR,|' \
    -e 's|vm:[0-9]* |HOST:PID |; s|[A-Za-z0-9_.-]*:[0-9][0-9]* (ncclrr)|HOST:PID (ncclrr)|' \
    -e 's|calls in [0-9.]* s (recorded [0-9.]* s)|calls in T s (recorded T s)|' \
    -e 's|(mean [0-9.]* s, max [0-9.]* s)|(mean T s, max T s)|'
