# Sourced by the NCCL tests: find the libnccl.so.2 to run, or skip (exit 77).
# Order: $NCCLRR_NCCL, then the NCCL that scripts/nccl.sh relinked against
# ncclrr's CUDA runtime ($NCCL_HINT, from meson's nccl_path: by default
# BUILD/nccl/2.22.3/libnccl.so.2).
NCCL=
for c in "${NCCLRR_NCCL:-}" "${NCCL_HINT:-}"; do
	[ -n "$c" ] && [ -r "$c" ] && { NCCL=$c; break; }
done
if [ -z "$NCCL" ]; then
	echo "SKIP: no NCCL relinked for the fake cluster at ${NCCL_HINT:-BUILD/nccl/2.22.3/libnccl.so.2}: run 'scripts/nccl.sh setup' (it downloads Debian's libnccl-dev and relinks it against ncclrr's CUDA runtime; the NCCL under /usr/local/cuda cannot run on a fake driver, see replayer/fake/README.md), or set NCCLRR_NCCL=/path/libnccl.so.2"
	exit 77
fi
export NCCLRR_NCCL=$NCCL

# An NCCL that links NVIDIA's CUDA runtime statically (the one under
# /usr/local/cuda) asks the driver for an integrity check that the fake
# driver does not emulate: skip, saying so. Needs NCCLRR_FAKE_LIBDIR and
# NCCLRR_NCCL_PROBE (replayer/fake/tests/nccl_init).
if [ -n "${NCCLRR_FAKE_LIBDIR:-}" ] && [ -x "${NCCLRR_NCCL_PROBE:-}" ]; then
	probe_out=$(env -u NCCLRR_TOPO -u NCCLRR_FAULT NCCL_DEBUG=WARN \
		LD_LIBRARY_PATH="$NCCLRR_FAKE_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		timeout 60 "$NCCLRR_NCCL_PROBE" 1 2>&1)
	if printf '%s\n' "$probe_out" | grep -q 'driver integrity check'; then
		echo "SKIP: $NCCL cannot run on the fake CUDA driver: its statically linked CUDA runtime requires the driver integrity check (export table d4082055-...), which ncclrr does not emulate. Use the NCCL relinked against ncclrr's runtime: scripts/nccl.sh setup, or scripts/nccl.sh relink YOUR/libnccl_static.a (replayer/fake/README.md)."
		exit 77
	fi
fi

# For the tests that record NCCL and replay or analyze the trace: NET/Socket
# between the hosts (ncclrr replays no NET/IB trace yet, issue 15 part 4;
# the fake verbs would give NET/IB, replayer/fake/README.md)
nccl_socket_only() { export NCCL_IB_DISABLE=1; }
