#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_fake_exports.py API LIB TABLE|- MAP SOURCE... - a fake library
exports exactly the entry points its description (API: formats/api/
cuda_driver.api, nvml.api) declares, and every entry names a function it
defines. The fake driver's are its cuGetProcAddress table (TABLE); NVML has
no table (-): its entry points are those of its version script.

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
    if len(sys.argv) < 6:
        print('usage: check_fake_exports.py API LIB TABLE|- MAP SOURCE...', file=sys.stderr)
        return 2
    api, lib, table, vmap = sys.argv[1:5]
    api = 'formats/api/' + api.rsplit('/', 1)[-1]
    how = 'since=VERSION" (or since= on its fn line)' if table != '-' else '" (or `fake` on its fn line)'
    defined = {}
    for src in sys.argv[5:]:
        with open(src, encoding='utf-8') as fh:
            text = fh.read()
        for m in re.finditer(r'^FAKE_EXPORT\s+[\w\s]*?\**\s*(\w+)\s*\(', text, re.M):
            defined[m.group(1)] = f'{src}:{text.count(chr(10), 0, m.start()) + 1}'
    if not defined:
        print(f'check_fake_exports: no FAKE_EXPORT function in {" ".join(sys.argv[5:])}', file=sys.stderr)
        return 1
    try:
        nm = subprocess.run(['nm', '-D', '--defined-only', lib], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        print(f'check_fake_exports: cannot run nm -D on {lib}: {e}', file=sys.stderr)
        return 1
    exported = {}
    for line in nm.splitlines():
        f = line.split()
        if len(f) == 3:
            exported[f[2].split('@')[0]] = f[1]
    with open(vmap, encoding='utf-8') as fh:
        mapped = set(re.findall(r'^\s+(\w+);$', fh.read(), re.M))
    rows = []
    if table == '-':  # no lookup table: what the version script exports
        rows = [(re.sub(r'_v\d+$', '', s), 0, s) for s in sorted(mapped)]
    else:
        with open(table, encoding='utf-8') as fh:
            for n, line in enumerate(fh, 1):
                if line.startswith('T('):
                    m = re.match(r'^T\("(\w+)", (\d+), (\w+)\)$', line.strip())
                    if not m:
                        print(f'{table}:{n}: cannot read table line "{line.strip()}"', file=sys.stderr)
                        return 1
                    rows.append((m.group(1), int(m.group(2)), m.group(3)))
    bad = 0
    syms = {s for _, _, s in rows}
    for s in sorted(syms - set(exported)):
        print(f'{lib}: entry point {s} is not exported: define fake_{s}() in replayer/fake/ '
              f'or drop its entry line (or its fn line\'s since=/fake) from {api}', file=sys.stderr)
        bad += 1
    for s in sorted(set(exported) - syms):
        print(f'{lib}: exports {s} ({exported[s]}), which {api} does not declare: add "entry ... {s}(...)'
              f'{how} to it', file=sys.stderr)
        bad += 1
    for s in sorted(set(defined) - syms):
        print(f'{defined[s]}: {s} is FAKE_EXPORT but {api} does not declare it, so the version script '
              f'hides it: add "entry ... {s}(...){how} to it', file=sys.stderr)
        bad += 1
    for s in sorted(s for s in syms if exported.get(s) not in (None, 'T', 'W', 'i')):
        print(f'{lib}: {s} is exported as nm type {exported[s]}, not a function', file=sys.stderr)
        bad += 1
    if mapped != syms:
        print(f'{vmap}: the version script and the entry points disagree on {sorted(mapped ^ syms)[:5]}', file=sys.stderr)
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
    print(f'{len(rows)} entry points: exported = {"table = " if table != "-" else ""}version script')
    return 0


if __name__ == '__main__':
    sys.exit(main())
