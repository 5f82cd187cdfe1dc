#!/usr/bin/env bash
# Set up and build (as scripts/main-job.sh), then run every test suite:
# the default run (unit, fuzz, integration, nccl) and then the slow suite,
# and print one closing line "tests: N passed, N failed, N skipped".
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Only the tests need these: headless Chromium loads the HTML report
# (export_html; export_browser drives it with playwright-core, which npm
# installs into build/node below: node and npm from Debian), Graphviz
# renders `ncclrr hang --dot` (hang_dot), Open MPI runs and builds the
# mpirun-launched jobs (nccl_mpi_*: installed before the build is
# configured, which looks for MPI), strace watches what replay and the
# analyzers do with a hostile trace (replay_hostile), protoc decodes
# `export --perfetto` (export_perfetto).
extra=()
for p in chromium nodejs npm graphviz openmpi-bin libopenmpi-dev strace protobuf-compiler; do
	# a node or npm from elsewhere (one bundles the other) will do
	case $p in nodejs) command -v node >/dev/null && continue ;; npm) command -v npm >/dev/null && continue ;; esac
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || extra+=("$p")
done
if ((${#extra[@]})) && [ "$(id -u)" -eq 0 ]; then
	echo "test-all: installing ${extra[*]} for the tests"
	{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${extra[@]}" >/dev/null; } ||
		echo "test-all: could not install ${extra[*]}; the tests that need them skip and say why" >&2
fi
source scripts/setup.sh
# playwright-core at the version tests/analyzer/package.json pins, for
# export_browser (which skips, saying why, when it is missing)
if command -v npm >/dev/null && { [ ! -d build/node/node_modules/playwright-core ] ||
	! cmp -s tests/analyzer/package.json build/node/package.json; }; then
	mkdir -p build/node && cp tests/analyzer/package.json build/node/ &&
		npm install --prefix build/node --no-audit --no-fund >/dev/null ||
		echo "test-all: could not install playwright-core; export_browser skips" >&2
fi
rc=0
meson test -C build --print-errorlogs --num-processes 2 || rc=1
cp build/meson-logs/testlog.json build/meson-logs/testlog-default.json
meson test -C build --print-errorlogs --num-processes 2 --setup full --suite slow || rc=1
cp build/meson-logs/testlog-full.json build/meson-logs/testlog-slow.json 2>/dev/null || true
python3 - build/meson-logs/testlog-default.json build/meson-logs/testlog-slow.json <<'PY'
import json, sys, os
passed = failed = skipped = 0
for path in sys.argv[1:]:
    if not os.path.exists(path):
        continue
    for line in open(path):
        r = json.loads(line).get("result")
        if r in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif r == "SKIP":
            skipped += 1
        else:
            failed += 1
print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
PY
exit $rc
