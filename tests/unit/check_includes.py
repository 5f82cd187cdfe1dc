#!/usr/bin/env python3
"""Components include one another one way only (README "Layout").

Reads every #include "..." of the C sources and fails, naming the file and
the line, when a component includes one it may not (the table below: an
edge missing from it is a new dependency to argue for, or a cycle), or
includes another component's private header (*_internal.h).  Tests
(tests/, traces/, */tests/, test_*.c) may include anything.

usage: check_includes.py SOURCE_ROOT
"""
import os
import re
import sys

# what each component may include, besides itself
ALLOWED = {
    'include': set(),
    'formats': {'include'},
    'topo': {'formats'},
    'tracer': {'formats'},
    'replayer/transport': {'formats'},
    'replayer/fake': {'formats', 'topo'},
    # (tracer: net_choose.h, which plugin a recorded job's wrapper stands in for)
    'replayer/launch': {'formats', 'topo', 'tracer'},
    'replayer/engine': {'formats', 'topo', 'replayer/launch'},
    'analyzer': {'formats'},
    # bisect: runs jobs (launch), reruns (engine) and diffs (analyzer)
    'tools': {'formats', 'replayer/launch', 'replayer/engine', 'analyzer'},
    'cli': {'include', 'formats', 'topo', 'tracer', 'replayer/launch', 'replayer/engine', 'analyzer', 'tools'},
    'scripts': set(),
}
# known edges against the rule, each with the issue that removes it
PENDING = {
}


def component(path):
    p = path.split('/')
    return '/'.join(p[:2]) if p[0] == 'replayer' and len(p) > 2 else p[0]


def is_test(path):
    p = path.split('/')
    return p[0] in ('tests', 'traces') or 'tests' in p[:-1] or p[-1].startswith('test_')


def main(root):
    files = {}
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith(('.', 'build')) and x != 'node_modules']
        for n in names:
            if n.endswith(('.c', '.h')):
                files.setdefault(n, []).append(os.path.relpath(os.path.join(d, n), root))
    bad, seen = [], set()
    for paths in files.values():
        for src in paths:
            if is_test(src):
                continue
            a = component(src)
            with open(os.path.join(root, src), errors='replace') as f:
                for lineno, line in enumerate(f, 1):
                    m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                    if not m:
                        continue
                    h = os.path.basename(m.group(1))
                    where = files.get(h)
                    if not where:
                        continue   # generated or a system header
                    same = [t for t in where if os.path.dirname(t) == os.path.dirname(src)]
                    own = [t for t in where if component(t) == a]
                    tgt = (same or own or where)[0]
                    b = component(tgt)
                    if a == b:
                        continue
                    why = PENDING.get((src, h))
                    if why:
                        seen.add((src, h))
                        continue
                    if a not in ALLOWED:
                        bad.append(f'{src}:{lineno}: component {a} is not in the table of {sys.argv[0]}')
                    elif b not in ALLOWED[a]:
                        bad.append(f'{src}:{lineno}: {a} includes {tgt} ({b}): not an allowed direction')
                    elif h.endswith('_internal.h'):
                        bad.append(f'{src}:{lineno}: {a} includes {tgt}, private to {b}')
    for k, why in PENDING.items():
        if k not in seen:
            bad.append(f'{k[0]} no longer includes {k[1]} ({why}): remove it from PENDING')
    for b in bad:
        print(b)
    print(f'check_includes: {sum(len(v) for v in files.values())} files, {len(bad)} problems')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else '.'))
