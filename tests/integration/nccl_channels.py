#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""nccl_channels.py LOG WORLD LOCAL_SIZE INTRA [INTER [rail]]

Checks NCCL's "Channel ... via T" lines in an `ncclrr run` log (NCCL_DEBUG=INFO,
every line prefixed "[R] " by the launcher) against the cluster's topology:
a connection between two ranks of one virtual host must go over INTRA (a
regular expression: "P2P/CUMEM", "P2P/IPC", "SHM", "P2P|SHM"), one between
hosts over INTER (a regular expression matched at the start of the
transport, default "NET/"; "NET/IB/\\d+/GDRDMA$" for NET/IB with GPUDirect).
With "rail" (topologies whose NIC i shares GPU i's PCI switch, as
2node_16gpu), a NET/IB/N line must use NIC N = the GPU of the rank that
prints it (the sender of a [send] line, the receiver of a [receive] one).
Channel lines name communicator ranks; which global ranks
they are follows from the communicator each line belongs to, the last
"Init START" (nranks N) its process printed: N = WORLD is the world
communicator (host = rank / LOCAL_SIZE), N = LOCAL_SIZE a split inside one
host, N = WORLD / LOCAL_SIZE a split with one rank per host. So the lines
of a communicator must come inside its init (NCCL_RUNTIME_CONNECT=0, or a
job with one communicator). INTRA "-" checks the NET lines only (INTER,
rail), wherever they come: for a job connecting at its first collective,
whose NET connections are all between hosts. Prints one line per transport and every
mismatch; exit 1 on a mismatch or when no channel line was found.
"""
import re
import sys

START = re.compile(r'^\[(\d+)\] .* nranks (\d+) .*- Init START')
CHAN = re.compile(r'^\[(\d+)\] .* Channel \d+(?:/\d+)? : (\d+)\[(\d+)\] -> (\d+)\[(\d+)\] (?:\[(\w+)\] )?via (\S+)')
NIC = re.compile(r'NET/IB/(\d+)')


def main():
    if len(sys.argv) not in (5, 6, 7) or sys.argv[6:] not in ([], ['rail']):
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    path, world, local, intra = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), re.compile(sys.argv[4])
    inter = re.compile(sys.argv[5] if len(sys.argv) > 5 else 'NET/')
    net_only = sys.argv[4] == '-'
    rail = sys.argv[6:] == ['rail']
    comm_size = {}
    seen = {}
    bad = []
    with open(path, errors='replace') as f:
        for line in f:
            m = START.match(line)
            if m:
                comm_size[m.group(1)] = int(m.group(2))
                continue
            m = CHAN.match(line)
            if not m:
                continue
            rank, a, b, via = m.group(1), int(m.group(2)), int(m.group(4)), m.group(7)
            dev_a, dev_b, way = int(m.group(3)), int(m.group(5)), m.group(6)
            n = comm_size.get(rank, world)
            if net_only:
                if not via.startswith('NET/'):
                    continue
                same = False
            elif n == world:
                same = a // local == b // local
            elif n == local:
                same = True
            elif n * local == world:
                same = a == b
            else:
                bad.append(f'rank {rank}: communicator of {n} ranks has no known placement: {line.strip()}')
                continue
            kind = 'intra' if same else 'inter'
            seen[(kind, via)] = seen.get((kind, via), 0) + 1
            ok = intra.search(via) if same else inter.match(via)
            if not ok:
                bad.append(f'rank {rank}: {kind}-host connection over {via}: {line.strip()}')
            nic = NIC.match(via)
            if rail and nic and way in ('send', 'receive'):
                dev = dev_a if way == 'send' else dev_b
                if int(nic.group(1)) != dev:
                    bad.append(f'rank {rank}: GPU {dev} {way}s over NIC {nic.group(1)}, not its own: {line.strip()}')
    for (kind, via), count in sorted(seen.items()):
        print(f'channels: {count} {kind}-host via {via}')
    for b in bad[:10]:
        print('MISMATCH ' + b)
    if len(bad) > 10:
        print(f'... {len(bad) - 10} more mismatches')
    if not seen:
        print('no "Channel ... via" line in ' + path)
    return 1 if bad or not seen else 0


if __name__ == '__main__':
    sys.exit(main())
