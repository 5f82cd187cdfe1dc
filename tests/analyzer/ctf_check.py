#!/usr/bin/env python3
"""ctf_check.py DUMP PRETTY NFILES ERRORS RANK3_PID   (RANK3_PID '-': no injected error)

Check what babeltrace2 printed (sink.text.pretty, clock-seconds=true) from
source.ncclrr.nrt, or from the CTF written from it, against `ncclrr dump` of
the same traces.  Each dump line is one event, except a complete call
without nested calls, which is two (its _enter and its _leave):
  CALL     -> <fn>_enter, <fn>_leave (same seq)
  ENTER    -> <fn>_enter             RESUME -> <fn>_leave
  INFLIGHT -> <fn>_enter (inflight = 1), or ncclrr:inflight when its
              _enter came from an ENTER line
  log      -> ncclrr_log:line        plus one ncclrr_log:meta per file,
              first on its main thread
Compared stream (pid/tid) by stream, in order; enter/leave times against the
dump's times; `failed = 1` leaves against `ncclrr dump --errors`; socket
addresses against dump's; rank 3's injected error by name.
"""
import re
import sys
from collections import defaultdict

dump_path, pretty_path, nfiles, errors_path, rank3_pid = sys.argv[1:6]
nfiles = int(nfiles)
errs = []

DUMP = re.compile(r'^(\S+) [^ ]*:(\d+)/(\d+) (.*)$')
want = defaultdict(list)        # (pid, tid) -> [(key, t_or_None)]
addrs_want = set()
entered = set()
counts = defaultdict(int)
for line in open(dump_path, encoding='utf-8', errors='replace'):
    line = line.rstrip('\n')
    m = DUMP.match(line)
    if not m:
        errs.append('unparsed dump line: ' + line)
        continue
    t, pid, tid, rest = float(m.group(1)), m.group(2), m.group(3), m.group(4)
    st = want[(pid, tid)]
    lm = re.match(r'\s*log\[(\d+)\] ', rest)
    if lm:
        st.append((('log', lm.group(1)), t))
        counts['log'] += 1
        continue
    cm = re.match(r'#(\d+) \s*(?:<\.\.\. (\w+) resumed>|(\w+)\()', rest)
    if not cm:
        errs.append('unparsed dump line: ' + line)
        continue
    seq = cm.group(1)
    if cm.group(2):
        st.append(((cm.group(2), 'leave', seq), t))
        counts['resume'] += 1
    elif rest.endswith(' <unfinished ...>'):
        st.append(((cm.group(3), 'enter', seq), t))
        entered.add((pid, tid, seq))
        counts['enter'] += 1
    elif '<in flight at end of trace, ' in rest:
        if (pid, tid, seq) in entered:
            st.append((('inflight', cm.group(3), seq), None))
        else:
            st.append(((cm.group(3), 'enter', seq), None))
        counts['inflight'] += 1
    else:
        st.append(((cm.group(3), 'enter', seq), t))
        st.append(((cm.group(3), 'leave', seq), None))
        counts['call'] += 1
    for a in re.finditer(r'\baddr=([^,)]+)', rest):
        if a.group(1) not in ('NULL', '…', '?') and not a.group(1).startswith('0x'):   # sockaddrs, not pointers
            addrs_want.add((pid, tid, seq, a.group(1)))

PRETTY = re.compile(r'^\[(\d+)\.(\d+)\] (?:\(\S+\) )?\S+ (\S+): \{ vpid = (\d+), vtid = (\d+) \}, \{ (.*) \}$')
got = defaultdict(list)
addrs_got = set()
failed_leaves = 0
rank3_error = False
nmeta = 0
nevents = 0
for line in open(pretty_path, encoding='utf-8', errors='replace'):
    line = line.rstrip('\n')
    nevents += 1
    m = PRETTY.match(line)
    if not m:
        errs.append('unparsed babeltrace2 line: ' + line[:200])
        continue
    ns = int(m.group(1)) * 1000000000 + int(m.group(2))
    name, pid, tid, body = m.group(3), m.group(4), m.group(5), m.group(6)
    st = got[(pid, tid)]
    if name == 'ncclrr_log:meta':
        nmeta += 1
        if st:
            errs.append(f'{pid}/{tid}: ncclrr_log:meta is not the first event')
        if f'pid={pid}\\n' not in body:
            errs.append(f'{pid}/{tid}: ncclrr_log:meta does not hold the metadata')
        continue
    if name == 'ncclrr_log:line':
        st.append((('log', re.search(r'\blevel = (\d+)', body).group(1)), ns))
        continue
    seq = re.search(r'\bseq_* = (\d+), depth = ', body)
    if not seq:
        errs.append('no seq in: ' + line[:200])
        continue
    seq = seq.group(1)
    if name == 'ncclrr:inflight':
        st.append((('inflight', re.search(r'\bfn = "(\w+)"', body).group(1), seq), ns))
        continue
    em = re.match(r'ncclrr_\w+:(\w+)_(enter|leave)$', name)
    if not em:
        errs.append('unexpected event ' + name)
        continue
    st.append(((em.group(1), em.group(2), seq), ns))
    for a in re.finditer(r'\baddr_text = "((?:[^"\\]|\\.)*)"', body):
        addrs_got.add((pid, tid, seq, re.sub(r'\\(.)', r'\1', a.group(1))))
    if em.group(2) == 'leave' and re.search(r'\bfailed = 1\b', body):
        failed_leaves += 1
        if (pid == rank3_pid and em.group(1) == 'cuMemImportFromShareableHandle' and
                'ret = ( "CUDA_ERROR_INVALID_VALUE" : container = 1 )' in body):
            rank3_error = True

expected = 2 * counts['call'] + counts['enter'] + counts['resume'] + counts['inflight'] + counts['log'] + nfiles
if nevents != expected:
    errs.append(f'{nevents} events, want {expected} = 2*{counts["call"]} calls + {counts["enter"]} enters + '
                f'{counts["resume"]} resumes + {counts["inflight"]} in flight + {counts["log"]} logs + {nfiles} meta')
if nmeta != nfiles:
    errs.append(f'{nmeta} ncclrr_log:meta events for {nfiles} files')
if set(want) != set(got):
    errs.append(f'streams differ: only in dump {sorted(set(want) - set(got))[:5]}, only in CTF {sorted(set(got) - set(want))[:5]}')
offset = None
for s in sorted(want):
    w, g = want[s], got.get(s, [])
    if [k for k, _ in w] != [k for k, _ in g]:
        i = next((i for i, (a, b) in enumerate(zip(w, g)) if a[0] != b[0]), min(len(w), len(g)))
        errs.append(f'stream {s[0]}/{s[1]}: event {i} is {g[i][0] if i < len(g) else "missing"}, '
                    f'want {w[i][0] if i < len(w) else "none"} ({len(g)} events, want {len(w)})')
        continue
    last = 0
    for (k, t), (_, ns) in zip(w, g):
        if ns < last:
            errs.append(f'stream {s[0]}/{s[1]}: time goes back at {k}')
        last = ns
        if t is None:
            continue
        if offset is None:
            offset = ns - round(t * 1e9)
        if abs(ns - offset - t * 1e9) > 1500:
            errs.append(f'stream {s[0]}/{s[1]}: {k} at {ns} ns, dump says {t:.6f} s (offset {offset})')
            break
nerr = sum(1 for _ in open(errors_path))
if failed_leaves != nerr:
    errs.append(f'{failed_leaves} _leave events with failed = 1, ncclrr dump --errors has {nerr}')
if rank3_pid != '-' and not rank3_error:
    errs.append(f'no failing cuMemImportFromShareableHandle_leave with ret CUDA_ERROR_INVALID_VALUE for rank 3 (pid {rank3_pid})')
if not addrs_want or addrs_want != addrs_got:
    errs.append(f'socket addresses differ: only in dump {sorted(addrs_want - addrs_got)[:3]}, '
                f'only in CTF {sorted(addrs_got - addrs_want)[:3]}')
for e in errs[:20]:
    print(e)
if not errs:
    print(f'{nevents} events = 2*{counts["call"]} calls + {counts["enter"]} enters + {counts["resume"]} resumes + '
          f'{counts["inflight"]} in flight + {counts["log"]} logs + {nfiles} meta; {len(want)} streams; '
          f'{failed_leaves} failed; {len(addrs_want)} addresses')
sys.exit(1 if errs else 0)
