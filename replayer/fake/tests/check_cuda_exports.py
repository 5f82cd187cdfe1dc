#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_cuda_exports.py LIBCUDA TABLE MAP SOURCE... - the fake driver
exports exactly the entry points of its cuGetProcAddress table, and every
entry names a function it defines.

The table (nrr_fake_cuda_table.h) and the version script (libcuda.map) are
generated from formats/api/cuda_driver.api (fn ... since=, entry lines); the
exports are read from the built library with nm -D. A symbol exported but
not in the table is unreachable through cuGetProcAddress (NCCL would not
find it); a table entry the library does not define answers "not found" at
run time. Either one fails here, naming the symbol and what to change.
The version script hides a FAKE_EXPORT function the table lacks, so the
sources (SOURCE...: the generated nrr_fake_cuda_entry.c and the hand-written
cuda_*.c) are read for those too (the objects are LTO bytecode: no symbol
table to read)."""
import re
import subprocess
import sys


def main():
    if len(sys.argv) < 5:
        print('usage: check_cuda_exports.py LIBCUDA TABLE MAP SOURCE...', file=sys.stderr)
        return 2
    lib, table, vmap = sys.argv[1:4]
    defined = {}
    for src in sys.argv[4:]:
        with open(src, encoding='utf-8') as fh:
            text = fh.read()
        for m in re.finditer(r'^FAKE_EXPORT\s+[\w\s]*?\**\s*(\w+)\s*\(', text, re.M):
            defined[m.group(1)] = f'{src}:{text.count(chr(10), 0, m.start()) + 1}'
    if not defined:
        print(f'check_cuda_exports: no FAKE_EXPORT function in {" ".join(sys.argv[4:])}', file=sys.stderr)
        return 1
    try:
        nm = subprocess.run(['nm', '-D', '--defined-only', lib], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        print(f'check_cuda_exports: cannot run nm -D on {lib}: {e}', file=sys.stderr)
        return 1
    exported = {}
    for line in nm.splitlines():
        f = line.split()
        if len(f) == 3:
            exported[f[2].split('@')[0]] = f[1]
    rows = []
    with open(table, encoding='utf-8') as fh:
        for n, line in enumerate(fh, 1):
            if line.startswith('T('):
                m = re.match(r'^T\("(\w+)", (\d+), (\w+)\)$', line.strip())
                if not m:
                    print(f'{table}:{n}: cannot read table line "{line.strip()}"', file=sys.stderr)
                    return 1
                rows.append((m.group(1), int(m.group(2)), m.group(3)))
    with open(vmap, encoding='utf-8') as fh:
        mapped = set(re.findall(r'^\s+(cu\w+);$', fh.read(), re.M))
    bad = 0
    syms = {s for _, _, s in rows}
    for s in sorted(syms - set(exported)):
        print(f'{lib}: table entry {s} is not exported: define fake_{s}() in replayer/fake/cuda_*.c '
              f'or drop its since=/entry line from formats/api/cuda_driver.api', file=sys.stderr)
        bad += 1
    for s in sorted(set(exported) - syms):
        print(f'{lib}: exports {s} ({exported[s]}), which the cuGetProcAddress table lacks: add "entry {s} '
              f'since=VERSION" (or since= on its fn line) to formats/api/cuda_driver.api', file=sys.stderr)
        bad += 1
    for s in sorted(set(defined) - syms):
        print(f'{defined[s]}: {s} is FAKE_EXPORT but not in the cuGetProcAddress table, so the version script '
              f'hides it: add "entry {s} since=VERSION" (or since= on its fn line) to formats/api/cuda_driver.api',
              file=sys.stderr)
        bad += 1
    for s in sorted(s for s in syms if exported.get(s) not in (None, 'T', 'W', 'i')):
        print(f'{lib}: {s} is exported as nm type {exported[s]}, not a function', file=sys.stderr)
        bad += 1
    if mapped != syms:
        print(f'{vmap}: the version script and the table disagree on {sorted(mapped ^ syms)[:5]}', file=sys.stderr)
        bad += 1
    for base, ver, s in rows:
        if re.sub(r'_v\d+$', '', s) != base:
            print(f'{table}: {s} is listed under {base}, not its base name', file=sys.stderr)
            bad += 1
    if not rows:
        print(f'{table}: no entries', file=sys.stderr)
        bad += 1
    if bad:
        return 1
    print(f'{len(rows)} entry points: exported = table = version script')
    return 0


if __name__ == '__main__':
    sys.exit(main())
