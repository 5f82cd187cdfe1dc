#!/bin/bash
# test_export.sh CASE NCCLRR SRCDIR WORKLOADS_DIR - `ncclrr export`.
#   chrome:   a fault run of conn_setup (rank 3's cuMem import fails) as
#             Chrome trace-event JSON, checked event by event in python
#   html:     the same run as an HTML report, loaded in headless Chromium
#             (screenshot decoded and looked at, DOM counted)
#   browser:  the report of the golden real-NCCL failure traces/nccl/p2p_ipc_open
#             used in Debian's chromium through playwright-core
#             (report_browser.js: zoom, pan, hover, the failure's chain);
#             the screenshot is kept in $NCCLRR_ARTIFACTS
#   badinput: missing / corrupt traces, missing options, unwritable output
#   hang:     a stalled run (rank 5 never reaches its bootstrap): --html
#             carries the hang analysis naming rank 5, --ctf reads back in
#             babeltrace2 with as many calls as dump shows
#   noise:    probes a healthy run makes too (hang_gen probes: thousands of
#             cuGetProcAddress NOT_FOUND, refused connects retried) are no
#             error markers and fold into one slice each; --all keeps them
#   select:   --rank, --api, --errors, --from/--to and --around-failure on
#             the main job's golden trace (traces/nccl/p2p_ipc_open): the
#             slices are the calls dump selects with the same options
#   perfetto: --perfetto of the main job's trace decoded with protoc against
#             analyzer/perfetto_trace.proto: tracks, names, the failing call,
#             as many slices as the JSON, >= 10 times smaller than it
#   sizes:    the main job's --perfetto and filtered --chrome stay under the
#             sizes README.md states
set -u
CASE=$1 NCCLRR=$2 SRC=$3 WL=$4
T=$(mktemp -d "${TMPDIR:-/tmp}/test_export.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL ($CASE): $*" >&2; exit 1; }

record_fault() {
	NCCLRR_FAULT=cuMemImportFromShareableHandle:rank=3:nth=1:CUDA_ERROR_INVALID_VALUE \
		"$NCCLRR" record -o "$T/run" -q -- "$NCCLRR" run --topo "$SRC/topo/2node_16gpu.xml" --timeout 60 \
		-- "$WL/conn_setup" --no-nccl >"$T/run.out" 2>&1
	ls "$T/run"/*.nrt >/dev/null 2>&1 || { cat "$T/run.out"; fail "recording produced no trace"; }
	grep -q "injecting CUDA_ERROR_INVALID_VALUE" "$T/run.out" || { cat "$T/run.out"; fail "fault was not injected"; }
}

case $CASE in
chrome)
	record_fault
	# --all: every call its own slice (by default retried connects fold)
	"$NCCLRR" export --all --chrome "$T/t.json" "$T/run" || fail "export --chrome exited $?"
	# the number of calls dump lists: every line but '<unfinished ...>'
	# halves of nested calls and log lines (a coalesced repeat is one call)
	ncalls=$("$NCCLRR" dump "$T/run" | grep -v ' <unfinished \.\.\.>$' | grep -vc ' log\[')
	"$NCCLRR" export --all --chrome "$T/s.json" "$SRC/traces/sample_init.nrt" || fail "export of the sample exited $?"
	nsample=$("$NCCLRR" dump "$SRC/traces/sample_init.nrt" | grep -v ' <unfinished \.\.\.>$' | grep -vc ' log\[')
	nlog=$("$NCCLRR" dump "$SRC/traces/sample_init.nrt" | grep -c ' log\[')
	python3 - "$T/t.json" "$ncalls" "$T/s.json" "$nsample" "$nlog" <<'PY' || fail "trace-event JSON check"
import json, sys, collections
def load(path):
    with open(path, encoding="utf-8") as f:
        d = json.load(f)
    assert isinstance(d, dict) and isinstance(d.get("traceEvents"), list), "not the JSON object format"
    assert d.get("displayTimeUnit") == "ns"
    need = {"X": ("name", "cat", "ts", "dur", "pid", "tid"), "i": ("name", "ts", "pid", "tid", "s"),
            "M": ("name", "pid", "args"), "s": ("id", "name", "cat", "ts", "pid", "tid"),
            "f": ("id", "name", "cat", "ts", "pid", "tid")}
    for e in d["traceEvents"]:
        assert e.get("ph") in need, "unexpected phase %r" % e
        for k in need[e["ph"]]:
            assert k in e, "%s event without %s: %r" % (e["ph"], k, e)
        if e["ph"] == "X":
            assert e["dur"] >= 0 and e["ts"] >= 0, e
    return d["traceEvents"]

def nested(ev):
    # slices of one thread nest properly (no partial overlap)
    by = collections.defaultdict(list)
    for e in ev:
        if e["ph"] == "X":
            by[(e["pid"], e["tid"])].append((round(e["ts"] * 1000), round(e["dur"] * 1000), e["name"]))
    for k, l in by.items():
        l.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for ts, dur, name in l:
            while stack and stack[-1] <= ts:
                stack.pop()
            assert not stack or ts + dur <= stack[-1], "slice %s at %d overlaps its parent on %r" % (name, ts, k)
            stack.append(ts + dur)
    return by

def enclosing(ev, pid, tid, ts):
    best = None
    for e in ev:
        if e["ph"] == "X" and e["pid"] == pid and e["tid"] == tid and e["ts"] <= ts <= e["ts"] + e["dur"]:
            if best is None or e["dur"] < best["dur"]:
                best = e
    return best

ev = load(sys.argv[1])
ncalls = int(sys.argv[2])
xs = [e for e in ev if e["ph"] == "X"]
assert len(xs) == ncalls, "%d slices, dump lists %d calls" % (len(xs), ncalls)
nested(ev)
pname = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
for r in range(16):
    assert pname.get(r, "").startswith("rank %d (" % r), "no process track named for rank %d: %r" % (r, pname.get(r))
others = [p for p in pname if p not in range(16)]
assert len(others) == 1 and "launcher" in pname[others[0]], "launcher track: %r" % pname
assert {e["pid"] for e in xs} <= set(pname), "slices on unnamed processes"
tname = {(e["pid"], e["tid"]) for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
assert {(e["pid"], e["tid"]) for e in xs} <= tname, "slices on unnamed threads"
# the injected failure, marked
bad = [e for e in xs if e["pid"] == 3 and e["name"] == "cuMemImportFromShareableHandle"]
assert bad and bad[0].get("cname") == "terrible" and "CUDA_ERROR_INVALID_VALUE" in bad[0]["args"].get("error", ""), bad
assert any(e["ph"] == "i" and e["pid"] == 3 and "cuMemImportFromShareableHandle" in e["name"] for e in ev)
ok = [e for e in xs if e["pid"] == 5 and e["name"] == "cuMemImportFromShareableHandle"]
assert ok and "cname" not in ok[0] and "error" not in ok[0]["args"], ok
# flows: pairs by id, bound to the right slices
fl = collections.defaultdict(dict)
for e in ev:
    if e["ph"] in "sf":
        assert e["ph"] not in fl[e["id"]], "flow id %r used twice" % e["id"]
        fl[e["id"]][e["ph"]] = e
kinds = collections.Counter()
for i, p in fl.items():
    assert set(p) == {"s", "f"}, "flow %r not paired" % i
    a = enclosing(ev, p["s"]["pid"], p["s"]["tid"], p["s"]["ts"])
    b = enclosing(ev, p["f"]["pid"], p["f"]["tid"], p["f"]["ts"])
    assert a and b, "flow %r not inside slices" % i
    if p["s"]["name"] == "connect":
        assert a["name"] == "connect" and b["name"] in ("accept", "accept4"), (a["name"], b["name"])
        assert a["pid"] != b["pid"]
        kinds["conn"] += 1
    else:
        assert a["name"] == "cuMemExportToShareableHandle" and b["name"] == "cuMemImportFromShareableHandle", (a, b)
        kinds["ipc"] += 1
        if b["pid"] == 3:
            assert a["pid"] == 4, "rank 3 imported rank 4's buffer (conn_setup prints so), flow says %r" % a["pid"]
            kinds["ipc3"] += 1
assert kinds["conn"] >= 16 and kinds["ipc"] >= 14 and kinds["ipc3"] == 1, kinds

# the golden sample: log lines as instants, nesting, in-flight slice to the end
ev = load(sys.argv[3])
xs = [e for e in ev if e["ph"] == "X"]
assert len(xs) == int(sys.argv[4]), "%d slices, dump lists %s calls" % (len(xs), sys.argv[4])
logs = [e for e in ev if e["ph"] == "i" and e["cat"] == "log"]
assert len(logs) == int(sys.argv[5]), "%d log instants, dump lists %s" % (len(logs), sys.argv[5])
assert any("NCCL WARN" in e["args"]["text"] for e in logs)
nested(ev)
inf = [e for e in xs if e["args"].get("inflight")]
end = max(e["ts"] + e.get("dur", 0) for e in ev if "ts" in e)
assert inf and all(abs(e["ts"] + e["dur"] - end) < 0.002 for e in inf), "in-flight slices must reach the end"
rep = [e for e in xs if e["args"].get("repeat")]
assert rep, "no coalesced call with args.repeat"
print("chrome ok: %d flows %r" % (len(fl), dict(kinds)))
PY
	;;
html)
	# the golden sample: the chain in the order the failures were returned
	# (the nested import before the init it broke), the WARN line after
	# it, the recv in flight hatched to the end, the retried connect apart
	"$NCCLRR" export --html "$T/s.html" "$SRC/traces/sample_init.nrt" || fail "export --html of the sample exited $?"
	python3 - "$T/s.html" <<'PY' || fail "sample report"
import re, sys
t = open(sys.argv[1], encoding="utf-8").read()
d = t[t.index('class="diagnosis"'):]
chain = re.search(r'<ol class="chain">(.*?)</ol>', d, re.S).group(1)
items = re.findall(r'<li[^>]*>(.*?)</li>', chain, re.S)
assert len(items) == 2, items
assert "cuMemImportFromShareableHandle = CUDA_ERROR_INVALID_VALUE" in items[0] and "NCCL WARN Cuda failure 1" in items[0], items[0]
assert "ncclCommInitRank = ncclInternalError" in items[1], items[1]
assert re.search(r'<ul class="inflight">\s*<li[^>]*><b>rank 0 [^<]*</b>: <code>recv \(since', d), "in-flight recv"
assert re.search(r'<ul class="common">\s*<li><code>connect = -1 ECONNREFUSED', d), "retried connect"
assert re.search(r'<rect class="inflight" [^>]*fill="url\(#hatch\)"', t), "hatched in-flight mark"
PY
	# counts per failure kind are of distinct processes, on a 16-rank real
	# NCCL run whose calls interleave ("connect ... on 7360 of 17
	# processes" counted a rank again after each other rank)
	"$NCCLRR" export --html "$T/i.html" "$SRC/traces/nccl/p2p_ipc_open" || fail "export --html of p2p_ipc_open exited $?"
	python3 - "$T/i.html" <<'PY' || fail "p2p_ipc_open report counts"
import re, sys
t = open(sys.argv[1], encoding="utf-8").read()
counts = [(int(a), int(b)) for a, b in re.findall(r'on (\d+) of (\d+) processes', t)]
assert all(0 < a <= b for a, b in counts), counts
# the failures a healthy run has too (benign= rules: socket's
# EPROTONOSUPPORT, ibv_get_device_list's ENOSYS, NVML's NOT_SUPPORTED on
# 16 of 17 processes) are not listed as failures
assert not re.search(r'EPROTONOSUPPORT|ENOSYS|NVML_ERROR_NOT_SUPPORTED', t), re.findall(r'<li>[^\n]*(?:EPROTONOSUPPORT|ENOSYS|NOT_SUPPORTED)[^\n]*', t)[:3]
m = re.search(r'Failing calls, earliest first \((\d+) processes of 17\)', t)
assert m and int(m.group(1)) <= 17, m
chain = re.search(r'<ol class="chain">(.*?)</ol>', t, re.S).group(1)
assert "rank 3 (" in re.findall(r'<li[^>]*>(.*?)</li>', chain, re.S)[0], "rank 3's failure leads"
# row labels are whole words (the launcher's read "ncclrr run launcher (v")
labels = re.findall(r'<text x="4" y="[0-9.]+">([^<]*)</text>', t)
assert "ncclrr run launcher" in labels, labels
# hosts as the virtual cluster names them (two virtual hosts read "vm (1)")
assert re.search(r'<dt>hosts</dt><dd>node0, node1 \(2 virtual hosts on [^<]+\)</dd>', t), re.search(r'<dt>hosts</dt><dd>[^<]*', t)
assert all(l.startswith("rank ") or not l.endswith("(v") for l in labels), labels
# the script's data: the chain of each listed failure, rank 3's first,
# with the peer its thread last received from (rank 4) and its WARN line
import json
m = re.search(r'<script type="application/json" id="nrr-data">(.*?)</script>', t, re.S)
assert m and "</" not in m.group(1), "no script data, or data that ends the script early"
data = json.loads(m.group(1))
lis = re.findall(r'<li data-chain="(\d+)">', t)
assert lis == [str(i) for i in range(len(data["chain"]))], (lis, len(data["chain"]))
c0 = data["chain"][0]
assert data["rows"][c0["row"]].startswith("rank 3 (") and data["rows"][c0["peer"]].startswith("rank 4 ("), c0
call = data["calls"][c0["c"]]
assert call[7] == "cudaIpcOpenMemHandle" and call[9].startswith("cudaErrorInvalidValue") and call[0] == c0["row"], call
assert call[2] + call[3] == c0["t"] and c0["pt"] <= call[2], (call, c0)
assert any("NCCL WARN Cuda failure" in w[1] and w[0] >= c0["t"] for w in c0["warn"]), c0["warn"]
assert re.search(r'<rect class="error" data-c="%d" ' % c0["c"], t), "the failing call's mark carries its details"
assert 1000 < len(data["calls"]) <= 24 * 200 + 200, len(data["calls"])
PY
	command -v chromium >/dev/null || { echo "SKIP: Debian chromium is not installed (apt-get install chromium)"; exit 77; }
	record_fault
	"$NCCLRR" export --html "$T/r.html" "$T/run" || fail "export --html exited $?"
	if grep -qiE '(src|href|xlink:href)[[:space:]]*=[[:space:]]*["'"'"']?[a-z]+://|url\([[:space:]]*["'"'"']?[a-z]+://|@import|<script[^>]* src' "$T/r.html"; then
		fail "the report is not self-contained"
	fi
	grep -qi 'https\?://' "$T/r.html" && fail "the report names an http(s) URL"
	cd "$T" || exit 1
	# chromium wants a writable home and no sandbox as root in a container
	export HOME="$T"
	timeout 120 chromium --headless=new --no-sandbox --disable-gpu --user-data-dir="$T/prof" \
		--screenshot="$T/shot.png" --window-size=1400,1000 "file://$T/r.html" >"$T/chr.log" 2>&1
	[ -s "$T/shot.png" ] || { tail -5 "$T/chr.log"; echo "SKIP: headless chromium could not take a screenshot here"; exit 77; }
	timeout 120 chromium --headless=new --no-sandbox --disable-gpu --user-data-dir="$T/prof" \
		--dump-dom "file://$T/r.html" >"$T/dom.html" 2>"$T/chr2.log"
	[ -s "$T/dom.html" ] || { tail -5 "$T/chr2.log"; fail "chromium --dump-dom gave nothing"; }
	python3 - "$T/shot.png" "$T/dom.html" <<'PY' || fail "screenshot / DOM check"
import sys, zlib, struct, re
def png(path):
    b = open(path, "rb").read()
    assert b[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    while pos < len(b):
        n, t = struct.unpack(">I4s", b[pos:pos + 8])
        c = b[pos + 8:pos + 8 + n]
        if t == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", c[:10])
        elif t == b"IDAT":
            idat += c
        pos += 12 + n
    assert depth == 8 and ctype in (2, 6), (depth, ctype)
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev, i = [], bytearray(stride), 0
    for y in range(h):
        f = raw[i]; line = bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            up = prev[x]; c = prev[x - bpp] if x >= bpp else 0
            if f == 1: line[x] = (line[x] + a) & 255
            elif f == 2: line[x] = (line[x] + up) & 255
            elif f == 3: line[x] = (line[x] + (a + up) // 2) & 255
            elif f == 4:
                p = a + up - c; pa, pb, pc = abs(p - a), abs(p - up), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else up if pb <= pc else c)) & 255
        rows.append(bytes(line)); prev = line
    return w, h, bpp, rows
w, h, bpp, rows = png(sys.argv[1])
colors, red = set(), 0
for r in rows:
    for x in range(0, len(r), bpp):
        px = r[x:x + 3]
        colors.add(px)
        if px[0] >= 200 and px[1] <= 40 and px[2] <= 40:
            red += 1
assert len(colors) > 20, "screenshot nearly blank: %d colours" % len(colors)
assert red >= 10, "no red error mark in the screenshot (%d red pixels)" % red
dom = open(sys.argv[2], encoding="utf-8").read()
ranks = re.findall(r'<g class="tl-row" data-rank="(\d+)"', dom)
assert sorted(map(int, ranks)) == list(range(16)), "timeline rows: %r" % ranks
assert len(re.findall(r'<tr class="rank-row', dom)) == 17, "status table rows"
m = re.search(r'<tr class="rank-row err" id="row-3">(.*?)</tr>', dom, re.S)
assert m and "cuMemImportFromShareableHandle = CUDA_ERROR_INVALID_VALUE" in m.group(1), "rank 3's row"
assert len(re.findall(r'<tr class="rank-row err"', dom)) == 1, "only rank 3 failed in a way the others did not"
d = dom[dom.index('class="diagnosis"'):]
m = re.search(r'<ol class="chain">\s*<li[^>]*>[^<]*<b>rank 3 \(', d)
assert m and "cuMemImportFromShareableHandle = CUDA_ERROR_INVALID_VALUE" in d[:2000], "diagnosis leads with rank 3"
assert re.search(r'<rect class="error" [^>]*><title>rank 3 \(', dom), "error mark on rank 3's row"
print("html ok: %dx%d screenshot, %d colours, %d red pixels" % (w, h, len(colors), red))
PY
	;;
browser)
	command -v node >/dev/null || { echo "SKIP: node is not installed (apt-get install nodejs npm)"; exit 77; }
	[ -x /usr/bin/chromium ] || { echo "SKIP: Debian chromium is not installed (apt-get install chromium)"; exit 77; }
	"$NCCLRR" export --html "$T/r.html" "$SRC/traces/nccl/p2p_ipc_open" || fail "export --html exited $?"
	# the page carries its script and data, bounded (details around the
	# failures, not every call: the 17 traces hold 1.3 MB and 159k calls)
	size=$(stat -c %s "$T/r.html")
	[ "$size" -lt 2000000 ] || fail "the report is $size bytes"
	ART=${NCCLRR_ARTIFACTS:-$T}
	mkdir -p "$ART" || fail "cannot create $ART"
	# rank 3's cudaIpcOpenMemHandle fails first; its thread last received
	# on a socket whose other end is rank 4's (rows 3 and 4: rows go by rank)
	HOME=$T timeout 240 node "$SRC/tests/analyzer/report_browser.js" "$T/r.html" "$ART/export_browser.png" 3 4 \
		cudaIpcOpenMemHandle "cudaErrorInvalidValue (1)"
	rc=$?
	[ $rc = 0 ] || [ $rc = 77 ] || fail "report_browser.js exited $rc"
	[ $rc = 77 ] && exit 77
	# a killed rank (calls in flight, several failures) and the golden
	# sample: no script error, each listed failure brought into view
	for g in nccl/rank_killed sample_init.nrt; do
		n=$(basename "$g" .nrt)
		"$NCCLRR" export --html "$T/$n.html" "$SRC/traces/$g" || fail "export --html of $g exited $?"
		HOME=$T timeout 240 node "$SRC/tests/analyzer/report_browser.js" "$T/$n.html" "$ART/export_browser_$n.png" - ||
			fail "report_browser.js on $g exited $?"
	done
	;;
badinput)
	out=$("$NCCLRR" export --chrome "$T/x.json" "$T/missing.nrt" 2>&1); rc=$?
	[ $rc = 2 ] && grep -q "missing.nrt" <<<"$out" || fail "missing trace: rc=$rc: $out"
	head -c 5000 /dev/urandom >"$T/junk.nrt"
	out=$("$NCCLRR" export --html "$T/x.html" "$T/junk.nrt" 2>&1); rc=$?
	[ $rc = 2 ] && grep -q "junk.nrt" <<<"$out" && grep -qi "not an ncclrr trace\|cannot read" <<<"$out" ||
		fail "corrupt trace: rc=$rc: $out"
	# a sample trace whose data chunk is damaged in the middle
	cp "$SRC/traces/sample_init.nrt" "$T/dmg.nrt"
	printf '\377\377\377\377\377\377\377\377' | dd of="$T/dmg.nrt" bs=1 seek=400 conv=notrunc 2>/dev/null
	out=$("$NCCLRR" export --chrome "$T/d.json" "$T/dmg.nrt" 2>&1); rc=$?
	{ [ $rc = 2 ] && grep -q "dmg.nrt" <<<"$out"; } || { [ $rc = 0 ] && python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$T/d.json"; } ||
		fail "damaged trace: rc=$rc: $out"
	out=$("$NCCLRR" export "$SRC/traces/sample_init.nrt" 2>&1); rc=$?
	[ $rc = 2 ] && grep -q -- "--chrome" <<<"$out" || fail "no output option: rc=$rc: $out"
	out=$("$NCCLRR" export --chrome "$T/x.json" 2>&1); rc=$?
	[ $rc = 2 ] && grep -qi "no trace" <<<"$out" || fail "no input: rc=$rc: $out"
	out=$("$NCCLRR" export --bogus "$SRC/traces/sample_init.nrt" 2>&1); rc=$?
	[ $rc = 2 ] && grep -q -- "--bogus" <<<"$out" || fail "unknown option: rc=$rc: $out"
	out=$("$NCCLRR" export --chrome 2>&1); rc=$?
	[ $rc = 2 ] || fail "option without its argument: rc=$rc: $out"
	out=$("$NCCLRR" export --chrome "$T/no/such/dir/x.json" "$SRC/traces/sample_init.nrt" 2>&1); rc=$?
	[ $rc = 2 ] && grep -q "no/such/dir" <<<"$out" || fail "unwritable output: rc=$rc: $out"
	out=$("$NCCLRR" export --help 2>&1); rc=$?
	[ $rc = 0 ] && grep -q -- "--html" <<<"$out" && grep -q -- "--ctf" <<<"$out" || fail "--help: rc=$rc"
	echo "badinput ok"
	;;
hang)
	CONN_SETUP_STALL=5 "$NCCLRR" record -o "$T/run" -q -- "$NCCLRR" run --topo "$SRC/topo/2node_16gpu.xml" \
		--timeout 3 -- "$WL/conn_setup" --no-nccl >"$T/run.out" 2>&1
	ls "$T/run"/*.nrt >/dev/null 2>&1 || { cat "$T/run.out"; fail "recording produced no trace"; }
	"$NCCLRR" export --html "$T/r.html" --ctf "$T/ctf" "$T/run" || fail "export exit $?"
	grep -q 'Hang analysis' "$T/r.html" && grep -q 'rank 5 never connected' "$T/r.html" ||
		fail "the report lacks the hang analysis naming rank 5"
	# the calls in flight that wait on a socket peer are chains too: the
	# ranks that wait in recv wait on rank 0 (the hang analysis says so)
	python3 - "$T/r.html" <<'PY' || fail "the waits' chains"
import re, sys, json
t = open(sys.argv[1], encoding="utf-8").read()
d = json.loads(re.search(r'<script type="application/json" id="nrr-data">(.*?)</script>', t, re.S).group(1))
waits = re.findall(r'<li data-chain="(\d+)"><b>(rank \d+) [^<]*</b>: <code>[^<]*</code><div class="peer">waits in: (\w+) on fd \d+ at [^,]*, peer <b>(rank \d+) ', t)
recv = [w for w in waits if w[2] == "recv"]
assert len(recv) >= 10 and all(w[3] == "rank 0" for w in recv), waits
for i, who, fn, peer in recv:
    ch = d["chain"][int(i)]
    assert d["rows"][ch["row"]].startswith(who + " (") and d["rows"][ch["peer"]].startswith("rank 0 ("), ch
    assert d["calls"][ch["c"]][7] == "recv" and d["calls"][ch["c"]][9] == "(in flight at the end)", d["calls"][ch["c"]]
print("hang: %d ranks wait in recv on rank 0" % len(recv))
PY
	if command -v babeltrace2 >/dev/null; then
		n_ctf=$(babeltrace2 "$T/ctf" 2>"$T/bt.err" | grep -c '_leave: ') || { cat "$T/bt.err"; fail "babeltrace2 cannot read the CTF"; }
		n_dump=$("$NCCLRR" dump "$T/run" | grep -vc 'unfinished\|in flight at end\|^[0-9.]* [^ ]* LOG')
		[ "$n_ctf" -gt 1000 ] && [ "$n_ctf" = "$n_dump" ] || fail "$n_ctf completed calls in the CTF, $n_dump in dump"
		echo "hang ok: $n_ctf completed calls in CTF, $n_dump dump lines"
	fi
	;;
noise)
	GEN="$(dirname "$WL")/analyzer/hang_gen"
	mkdir -p "$T/p"
	"$GEN" "$T/p" probes 4000 || fail "hang_gen probes failed"
	"$NCCLRR" export --chrome "$T/d.json" --perfetto "$T/d.pb" "$T/p" || fail "export exited $?"
	"$NCCLRR" export --all --chrome "$T/a.json" "$T/p" || fail "export --all exited $?"
	python3 - "$T/d.json" "$T/a.json" <<'PY' || fail "noise check"
import json, sys
def load(p):
    return json.load(open(p, encoding="utf-8"))["traceEvents"]
d, a = load(sys.argv[1]), load(sys.argv[2])
# by default: the one real failure is the only error marker
red = [e for e in d if e.get("cname") == "terrible"]
errs = [e for e in d if e["ph"] == "i" and e.get("cat") == "error"]
assert [e["name"] for e in errs] == ["error: cuMemAlloc_v2 = CUDA_ERROR_OUT_OF_MEMORY (2)"], [e["name"] for e in errs][:5]
assert [e["name"] for e in red if e["ph"] == "X"] == ["cuMemAlloc_v2"], [e["name"] for e in red][:5]
assert errs[0]["pid"] == 1
# the probes: one slice per rank, grey, with the counts
fold = [e for e in d if e["ph"] == "X" and e["name"].startswith("cuGetProcAddress \u00d7")]
assert len(fold) == 2, [e["name"] for e in d if e["ph"] == "X"][:10]
for e in fold:
    assert e["name"] == "cuGetProcAddress \u00d74000 (2000 CUDA_ERROR_NOT_FOUND (500): probe)", e["name"]
    assert e.get("cname") == "grey" and e["args"]["folded"] == 4000 and e["args"]["failed"] == 2000, e
    assert e["args"]["first_seq"] == 1 and e["args"]["last_seq"] == 4000, e["args"]
    assert "probe" in e["args"]["benign"] or e["args"]["benign"], e["args"]
# rank 0's refused connects got through: folded, not red; rank 1's one connect is itself
conn = [e for e in d if e["ph"] == "X" and e["name"].startswith("connect")]
assert sorted(e["name"] for e in conn) == ["connect", "connect \u00d74 (3 -1 ECONNREFUSED (Connection refused): retried)"], conn
assert all(e.get("cname") != "terrible" for e in conn)
# --all: every call its own slice, the NOT_FOUND probes grey with their reason, still no error marker
xa = [e for e in a if e["ph"] == "X"]
probes = [e for e in xa if e["name"] == "cuGetProcAddress"]
assert len(probes) == 8000, len(probes)
nf = [e for e in probes if "CUDA_ERROR_NOT_FOUND" in e["args"].get("result", "")]
assert len(nf) == 4000 and all(e.get("cname") == "grey" and e["args"].get("benign") and "error" not in e["args"] for e in nf), nf[:2]
assert [e["name"] for e in a if e["ph"] == "i" and e.get("cat") == "error"] == ["error: cuMemAlloc_v2 = CUDA_ERROR_OUT_OF_MEMORY (2)"]
print("noise ok: %d events by default, %d with --all" % (len(d), len(a)))
PY
	# the report: the probes are drawn as calls, not as failures (red, or
	# pink as common); the one failure marked is rank 1's cuMemAlloc_v2
	"$NCCLRR" export --html "$T/p.html" "$T/p" || fail "export --html exited $?"
	grep -o '<rect class="error[^>]*>[^<]*<title>[^<]*' "$T/p.html" >"$T/p.red"
	grep -q 'cuMemAlloc_v2' "$T/p.red" || fail "the report has no red mark for cuMemAlloc_v2"
	! grep -q 'cuGetProcAddress' "$T/p.red" || fail "the report marks a NOT_FOUND probe as a failure: $(grep -m1 cuGetProcAddress "$T/p.red")"
	;;
select)
	G="$SRC/traces/nccl/p2p_ipc_open"
	# the slices --all writes are the calls dump selects with the same
	# options (one selection rule): dump's complete calls, log lines and
	# in-flight calls are counted as export writes them
	count_dump() {   # dump lines that are slices: not '<unfinished ...>', not log lines
		"$NCCLRR" dump "$@" "$G" | grep -v ' <unfinished \.\.\.>$' | grep -vc ' log\['
	}
	count_x() {
		python3 -c 'import json,sys; print(sum(1 for e in json.load(open(sys.argv[1]))["traceEvents"] if e["ph"] == "X"))' "$1"
	}
	i=0
	for opts in "--rank 3" "--api cuMem*,cudaIpc*" "--errors" "--from 2.5 --to 3" "--around-failure 0.2" "--rank 2,3 --errors --api cuda*"; do
		i=$((i + 1))
		# shellcheck disable=SC2086
		"$NCCLRR" export --all --chrome "$T/s$i.json" $opts "$G" 2>"$T/s$i.err" || { cat "$T/s$i.err"; fail "export $opts exited $?"; }
		# shellcheck disable=SC2086
		n_dump=$(count_dump $opts)
		n_x=$(count_x "$T/s$i.json")
		[ "$n_dump" -gt 0 ] && [ "$n_dump" = "$n_x" ] || fail "export $opts: $n_x slices, dump $opts lists $n_dump calls"
		echo "  $opts: $n_x slices"
	done
	grep -q "around-failure: rank 3 cudaIpcOpenMemHandle #" "$T/s5.err" || { cat "$T/s5.err"; fail "--around-failure names the failure it centred on"; }
	python3 - "$T" <<'PY' || fail "selection check"
import json, sys, fnmatch
T = sys.argv[1]
def xs(i):
    d = json.load(open("%s/s%d.json" % (T, i)))
    return [e for e in d["traceEvents"] if e["ph"] == "X"], d["metadata"]
x, _ = xs(1)
assert {e["pid"] for e in x} == {3}, {e["pid"] for e in x}
x, _ = xs(2)
assert all(fnmatch.fnmatch(e["name"], "cuMem*") or fnmatch.fnmatch(e["name"], "cudaIpc*") for e in x)
assert any(e["name"] == "cudaIpcOpenMemHandle" and e["pid"] == 3 and e.get("cname") == "terrible" for e in x)
x, _ = xs(3)
assert x and all("error" in e["args"] or "benign" in e["args"] for e in x), [e for e in x if "error" not in e["args"]][:2]
def within(e, a, b):   # a call is selected by its time: enter, or leave for one with nested calls
    return a <= e["ts"] < b or a <= e["ts"] + e["dur"] < b + 1
x, _ = xs(4)
assert x and all(within(e, 2.5e6, 3e6) for e in x if "inflight" not in e["args"]), "a slice outside --from/--to"
x, m = xs(5)
fail = [e for e in x if e["pid"] == 3 and e["name"] == "cudaIpcOpenMemHandle" and e.get("cname") == "terrible"]
assert len(fail) == 1 and m["around_failure"].startswith("rank 3 cudaIpcOpenMemHandle"), m.get("around_failure")
t0 = fail[0]["ts"]
assert all(within(e, t0 - 0.2e6 - 1, t0 + 0.2e6 + 1) for e in x if "inflight" not in e["args"]), "a slice outside the window"
x, _ = xs(6)
assert x and {e["pid"] for e in x} <= {2, 3} and all(e["name"].startswith("cuda") and "error" in e["args"] for e in x)
print("select ok")
PY
	out=$("$NCCLRR" export --chrome "$T/x.json" --around-failure 1 "$SRC/traces/nccl/clean" 2>&1); rc=$?
	[ $rc = 2 ] && grep -q "no call failed" <<<"$out" || fail "--around-failure on a clean run: rc=$rc: $out"
	out=$("$NCCLRR" export --chrome "$T/x.json" --from soon "$G" 2>&1); rc=$?
	[ $rc = 2 ] && grep -q -- "--from wants seconds" <<<"$out" || fail "bad --from: rc=$rc: $out"
	out=$("$NCCLRR" export --ctf "$T/ctf" --errors "$G" 2>&1); rc=$?
	[ $rc = 2 ] && grep -q -- "--ctf" <<<"$out" || fail "--ctf with --errors: rc=$rc: $out"
	;;
perfetto|sizes)
	command -v protoc >/dev/null || { echo "SKIP: protoc is not installed (apt-get install protobuf-compiler; scripts/test-all.sh does)"; exit 77; }
	G="$SRC/traces/nccl/p2p_ipc_open"
	# sizes: the whole job; perfetto: ranks 0, 1 (its refused connects
	# folded) and 3 (the failure), to keep the text decoding quick
	sel=""
	[ "$CASE" = perfetto ] && sel="--rank 0,1,3"
	# shellcheck disable=SC2086
	out=$("$NCCLRR" export --perfetto "$T/p.pb" $sel "$G" 2>&1); rc=$?
	grep -q "built without protobuf-c" <<<"$out" && { echo "SKIP: $out"; exit 77; }
	[ $rc = 0 ] || fail "export --perfetto exited $rc: $out"
	# shellcheck disable=SC2086
	"$NCCLRR" export --chrome "$T/p.json" $sel "$G" || fail "export --chrome exited $?"
	if [ "$CASE" = sizes ]; then
		# README.md, "Exports that scale": the sizes it states
		line=$(grep -o 'main-job export sizes: perfetto [0-9]* bytes, chrome [0-9]* bytes, chrome --around-failure 1 [0-9]* bytes' "$SRC/README.md") ||
			fail "README.md states no export sizes"
		read -r lp lc la <<<"$(sed -E 's/.*perfetto ([0-9]+) bytes, chrome ([0-9]+) bytes, chrome --around-failure 1 ([0-9]+) bytes/\1 \2 \3/' <<<"$line")"
		"$NCCLRR" export --chrome "$T/a.json" --around-failure 1 "$G" 2>/dev/null || fail "export --around-failure exited $?"
		sp=$(stat -c %s "$T/p.pb") sc=$(stat -c %s "$T/p.json") sa=$(stat -c %s "$T/a.json")
		echo "perfetto $sp <= $lp, chrome $sc <= $lc, chrome --around-failure 1 $sa <= $la"
		[ "$sp" -le "$lp" ] && [ "$sc" -le "$lc" ] && [ "$sa" -le "$la" ] || fail "an export grew past the size README.md states"
		exit 0
	fi
	python3 - "$T/p.pb" "$T/raw.pb" <<'PY' || fail "cannot unpack the bundles"
# the file is Trace.packet fields; each holds compressed_packets (field 50):
# zlib, inside Trace.packet fields again. Write those out for protoc.
import sys, zlib
def varint(b, i):
    v = s = 0
    while True:
        c = b[i]; i += 1; v |= (c & 0x7f) << s; s += 7
        if c < 0x80: return v, i
def fields(b):
    i = 0
    while i < len(b):
        k, i = varint(b, i)
        assert k & 7 == 2, "field %d of wire type %d" % (k >> 3, k & 7)
        n, i = varint(b, i)
        yield k >> 3, b[i:i + n]; i += n
b = open(sys.argv[1], "rb").read()
out = bytearray()
nb = 0
for f, p in fields(b):
    assert f == 1, f
    inner = list(fields(p))
    assert [x[0] for x in inner] == [50], [x[0] for x in inner]
    raw = zlib.decompress(inner[0][1])
    assert len(raw) <= 512 * 1024
    out += raw
    nb += 1
open(sys.argv[2], "wb").write(out)
print("%d bundles, %d bytes of packets" % (nb, len(out)))
PY
	protoc --decode=perfetto.protos.Trace -I "$SRC/analyzer" "$SRC/analyzer/perfetto_trace.proto" <"$T/p.pb" >"$T/outer.txt" ||
		fail "protoc cannot decode the file"
	grep -q 'compressed_packets:' "$T/outer.txt" || fail "no compressed_packets in the file"
	protoc --decode=perfetto.protos.Trace -I "$SRC/analyzer" "$SRC/analyzer/perfetto_trace.proto" <"$T/raw.pb" >"$T/p.txt" ||
		fail "protoc cannot decode the packets"
	python3 - "$T/p.txt" "$T/p.json" "$T/p.pb" <<'PY' || fail "perfetto content check"
import json, os, re, sys, collections
txt = open(sys.argv[1]).read()
# a small reader of protoc's text format: nested dicts, repeated keys as lists
tok = re.compile(r'\s*(?:(\w+)\s*\{|(\w+):\s*("(?:[^"\\]|\\.)*"|\S+)|(\}))')
def parse(s):
    stack = [collections.defaultdict(list)]
    for m in tok.finditer(s):
        if m.group(1):
            d = collections.defaultdict(list); stack[-1][m.group(1)].append(d); stack.append(d)
        elif m.group(2):
            v = m.group(3)
            if v.startswith('"'):
                v = v[1:-1].encode("latin-1").decode("unicode_escape").encode("latin-1").decode("utf-8", "replace")
            elif re.match(r"^-?\d+$", v):
                v = int(v)
            stack[-1][m.group(2)].append(v)
        else:
            stack.pop()
    return stack[0]
pk = parse(txt)["packet"]
names, anames, strs = {}, {}, {}
procs, threads = {}, {}
begins, ends, insts = collections.Counter(), collections.Counter(), []
open_ = collections.defaultdict(list)
slices = []
for p in pk:
    for idata in p.get("interned_data", []):
        for e in idata.get("event_names", []): names[e["iid"][0]] = e["name"][0]
        for e in idata.get("debug_annotation_names", []): anames[e["iid"][0]] = e["name"][0]
        for e in idata.get("debug_annotation_string_values", []): strs[e["iid"][0]] = e["str"][0]
    for td in p.get("track_descriptor", []):
        if "process" in td: procs[td["uuid"][0]] = td["process"][0]["process_name"][0]
        if "thread" in td: threads[td["uuid"][0]] = (td["parent_uuid"][0], td["thread"][0]["thread_name"][0])
    for te in p.get("track_event", []):
        tr = te["track_uuid"][0]
        assert tr in threads, "event on an undescribed track"
        ann = {}
        for a in te.get("debug_annotations", []):
            n = anames[a["name_iid"][0]] if "name_iid" in a else a["name"][0]
            ann[n] = strs[a["string_value_iid"][0]] if "string_value_iid" in a else (a.get("string_value") or a.get("uint_value"))[0]
        name = names[te["name_iid"][0]] if "name_iid" in te else te.get("name", [None])[0]
        if te["type"][0] == "TYPE_SLICE_BEGIN":
            open_[tr].append([name, p["timestamp"][0], ann]); begins[tr] += 1
        elif te["type"][0] == "TYPE_SLICE_END":
            s = open_[tr].pop(); s[2].update(ann); slices.append((tr, s[0], s[1], p["timestamp"][0], s[2])); ends[tr] += 1
        else:
            insts.append((tr, name, ann))
assert not any(open_.values()), "slices begun and never ended"
# tracks: a process per rank and the launcher, threads under them
assert sorted(procs.values()) == ["rank 0 (vm:16784)", "rank 1 (vm:16785)", "rank 3 (vm:16787)"], sorted(procs.values())
assert all(par in procs for par, _ in threads.values())
assert any(n.startswith("main ") for _, n in threads.values())
# the failing call of the main job: rank 3's cudaIpcOpenMemHandle, with its error and args
r3 = [u for u, n in procs.items() if n.startswith("rank 3 (")][0]
bad = [s for s in slices if threads[s[0]][0] == r3 and s[1] == "cudaIpcOpenMemHandle" and "error" in s[4]]
assert len(bad) == 1 and bad[0][4]["error"] == "cudaErrorInvalidValue (1)" and "handle" in bad[0][4], bad
assert any(threads[t][0] == r3 and n == "error: cudaIpcOpenMemHandle = cudaErrorInvalidValue (1)" for t, n, a in insts)
assert any(n and "NCCL WARN" in n for t, n, a in insts), "log lines"
# as many slices as the JSON of the same selection, the same errors
j = json.load(open(sys.argv[2]))
jx = [e for e in j["traceEvents"] if e["ph"] == "X"]
jerr = [e for e in j["traceEvents"] if e["ph"] == "i" and e.get("cat") == "error"]
assert len(slices) == len(jx), (len(slices), len(jx))
assert len([i for i in insts if i[1] and i[1].startswith("error: ")]) == len(jerr)
folded = [s for s in slices if "\u00d7" in s[1]]
assert len(folded) == len([e for e in jx if "\u00d7" in e["name"]]) and folded
sp, sj = os.path.getsize(sys.argv[3]), os.path.getsize(sys.argv[2])
print("perfetto ok: %d packets, %d slices, %d processes, %d threads; %d bytes, JSON %d bytes (%.1fx)" %
      (len(pk), len(slices), len(procs), len(threads), sp, sj, sj / sp))
assert sj >= 10 * sp, "the protobuf is not 10 times smaller than the JSON"
PY
	;;
*)
	fail "unknown case"
	;;
esac
