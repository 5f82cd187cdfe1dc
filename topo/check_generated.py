#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Fail when a topo/*.xml file differs from what gen_topo.py writes."""
import filecmp
import os
import subprocess
import sys
import tempfile

src = sys.argv[1]
with tempfile.TemporaryDirectory() as d:
    subprocess.check_call([sys.executable, os.path.join(src, "gen_topo.py"), d])
    bad = [f for f in sorted(os.listdir(d))
           if not filecmp.cmp(os.path.join(d, f), os.path.join(src, f), shallow=False)]
    if bad:
        print("out of date (run python3 topo/gen_topo.py): " + ", ".join(bad))
        sys.exit(1)
print("topo files match gen_topo.py")
