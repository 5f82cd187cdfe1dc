# Sourced by the NCCL tests: find libnccl.so.2 or skip (exit 77).
# Order: $NCCLRR_NCCL, the -Dnccl_path hint ($NCCL_HINT), ldconfig,
# /usr/local/cuda*/lib*/libnccl.so.2.
find_nccl() {
	local c
	for c in "${NCCLRR_NCCL:-}" "${NCCL_HINT:-}"; do
		[ -n "$c" ] && [ -r "$c" ] && { echo "$c"; return 0; }
	done
	c=$(ldconfig -p 2>/dev/null | awk '/libnccl\.so\.2 /{print $NF; exit}')
	[ -n "$c" ] && [ -r "$c" ] && { echo "$c"; return 0; }
	for c in /usr/local/cuda*/lib*/libnccl.so.2; do
		[ -r "$c" ] && { echo "$c"; return 0; }
	done
	return 1
}
NCCL=$(find_nccl) || {
	echo "SKIP: no libnccl.so.2 found (set NCCLRR_NCCL=/path/libnccl.so.2 or meson -Dnccl_path=...)"
	exit 77
}
export NCCLRR_NCCL=$NCCL

# This NCCL must be able to start its CUDA runtime on the fake driver. The
# runtime linked into NCCL 2.28.9 (and other recent builds) asks the driver
# for an integrity check that the fake driver does not emulate (see
# replayer/fake/README.md); every test that needs NCCL past that point is
# skipped then, saying so. Needs NCCLRR_FAKE_LIBDIR and NCCLRR_NCCL_PROBE
# (replayer/fake/tests/nccl_init).
if [ -n "${NCCLRR_FAKE_LIBDIR:-}" ] && [ -x "${NCCLRR_NCCL_PROBE:-}" ]; then
	probe_out=$(env -u NCCLRR_TOPO -u NCCLRR_FAULT NCCL_DEBUG=WARN \
		LD_LIBRARY_PATH="$NCCLRR_FAKE_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		timeout 60 "$NCCLRR_NCCL_PROBE" 1 2>&1)
	if printf '%s\n' "$probe_out" | grep -q 'driver integrity check'; then
		echo "SKIP: $NCCL cannot run on the fake CUDA driver: its statically linked CUDA runtime requires the driver integrity check (export table d4082055-...), which ncclrr does not emulate. Point NCCLRR_NCCL at an NCCL whose runtime does not (see replayer/fake/README.md)."
		exit 77
	fi
fi
