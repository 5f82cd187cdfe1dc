#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""nccl_nics.py LOG NICS

Which NICs NCCL's NET/IB took in an `ncclrr run` log (NCCL_DEBUG=INFO, every
line prefixed "[R] "): each rank's "NET/IB : Using [0]mlx5_0:1/IB ..." line
must list exactly NICS (comma-separated device names, in order), and every
"via NET/IB/N" channel line of that rank must name one of them (N indexes
its Using line). Prints the NICs each channel went over; exit 1 on a
mismatch or when no NET/IB channel line was found.
"""
import re
import sys

USING = re.compile(r'^\[(\d+)\] .* NET/IB : Using((?: \[\d+\]\S+)+)')
DEV = re.compile(r'\[(\d+)\]([^:\s]+):\d+/\w+')
CHAN = re.compile(r'^\[(\d+)\] .* Channel .* via NET/IB/(\d+)')


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    want = sys.argv[2].split(',')
    using, seen, bad = {}, {}, []
    with open(sys.argv[1], errors='replace') as f:
        for line in f:
            m = USING.match(line)
            if m:
                devs = {int(i): name for i, name in DEV.findall(m.group(2))}
                names = [devs[i] for i in sorted(devs)]
                if names != want:
                    bad.append(f'rank {m.group(1)} uses {",".join(names)}, want {",".join(want)}')
                using[m.group(1)] = devs
                continue
            m = CHAN.match(line)
            if not m:
                continue
            name = using.get(m.group(1), {}).get(int(m.group(2)))
            if name not in want:
                bad.append(f'rank {m.group(1)}: NET/IB/{m.group(2)} is {name}, not one of {want}: {line.strip()}')
            seen[name] = seen.get(name, 0) + 1
    for name, count in sorted(seen.items(), key=lambda kv: str(kv[0])):
        print(f'nics: {count} channel lines over {name}')
    for b in bad[:10]:
        print('MISMATCH:', b)
    if not seen:
        print('no NET/IB channel line', file=sys.stderr)
        return 1
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
