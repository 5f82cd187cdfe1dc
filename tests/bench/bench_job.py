#!/usr/bin/env python3
"""Run one job and measure it (used by bench_nccl.sh; not a test).

  bench_job.py run LOG REGEX -- CMD...
      runs CMD with stdout and stderr into LOG, and prints one line
      "wall=S last=S matches=N cpu=S rc=N": the wall time, the time from
      launch to the last output line matching REGEX (e.g. NCCL's
      "Init COMPLETE"), how many lines matched, and the CPU time (user +
      system) of CMD and everything it started.
  bench_job.py rss FILE -- CMD...
      runs CMD (one rank) and appends its peak RSS in KiB (that of CMD and
      its children) as one line to FILE; exits with CMD's status.
"""
import re
import resource
import subprocess
import sys
import time


def run(log, regex, cmd):
    pat = re.compile(regex)
    last, matches = 0.0, 0
    t0 = time.monotonic()
    with open(log, 'wb') as out:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        for line in p.stdout:
            out.write(line)
            if pat.search(line.decode('utf-8', 'replace')):
                last = time.monotonic() - t0
                matches += 1
        rc = p.wait()
    wall = time.monotonic() - t0
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    print('wall=%.3f last=%.3f matches=%d cpu=%.3f rc=%d' % (wall, last, matches, ru.ru_utime + ru.ru_stime, rc))
    return 0


def rss(path, cmd):
    rc = subprocess.call(cmd)
    with open(path, 'a') as f:
        f.write('%d\n' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    return rc if rc >= 0 else 128 - rc


def main(a):
    if len(a) >= 6 and a[1] == 'run' and a[4] == '--':
        return run(a[2], a[3], a[5:])
    if len(a) >= 5 and a[1] == 'rss' and a[3] == '--':
        return rss(a[2], a[4:])
    sys.stderr.write(__doc__)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
